#!/bin/sh
# Runs on the GPU machine (device tool) from the repository root, with .carry holding the
# tirlua binary (.carry/bin/tirlua) and busted's modules (.carry/lua):
#   sh scripts/gpu/run_all.sh [what ...]     what: main specs bench (default: all three)
# Logs go to $OUT (or ./out).
OUT=${OUT:-out}
mkdir -p "$OUT"
export TIRLUA_PATH="$PWD/lib" TIRLUA_LUA_MODULES="$PWD/.carry/lua"
T="$PWD/.carry/bin/tirlua"
what=${*:-main specs bench}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$OUT/nvidia-smi.txt" 2>&1
cat "$OUT/nvidia-smi.txt"
status=0
for w in $what; do
  case $w in
    main) "$T" scripts/examples/matmul.lua > "$OUT/main.log" 2>&1 || status=1; tail -3 "$OUT/main.log" ;;
    specs) "$T" tests/run_busted.lua --run=gpu -o utfTerminal > "$OUT/gpu_specs.log" 2>&1 || status=1; tail -15 "$OUT/gpu_specs.log" ;;
    bench) TIRLUA_BENCH_OUT="$OUT/bench_results.md" "$T" bench/gemm.lua ${BENCH_SIZES:-} > "$OUT/bench.log" 2>&1 || status=1; cat "$OUT/bench.log" ;;
    *) "$T" $w > "$OUT/$(basename $w .lua).log" 2>&1 || status=1; tail -20 "$OUT/$(basename $w .lua).log" ;;
  esac
done
exit $status
