#!/bin/sh
# Runs on the GPU machine (device tool) from a tree holding the tirlua binary ($T, default
# ./tirlua or .carry/bin/tirlua) and busted's modules (.carry/lua): issue 10's convolution
# benchmark and kernel families, logs and bench rows under $OUT:
#   sh scripts/gpu/conv_dispatch.sh [what ...]    what: specs dispatch conv (default: all three)
#     specs     the #gpu specs of dispatch_spec and cudnn_spec
#     dispatch  scripts/examples/dispatch.lua at N = K = 4096 (every entry vs cuBLAS, dispatch overhead)
#     conv      bench/conv2d.lua (ResNet-50's 23 conv layers at N = 128 vs cuDNN; rows -> $OUT/results.jsonl)
OUT=${OUT:-out}
mkdir -p "$OUT"
export TIRLUA_PATH="$PWD/lib" TIRLUA_LUA_MODULES="$PWD/.carry/lua"
T=${T:-$PWD/tirlua}
[ -x "$T" ] || T="$PWD/.carry/bin/tirlua"
what=${*:-specs dispatch conv}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$OUT/nvidia-smi.txt" 2>&1
status=0
for w in $what; do
  start=$(date +%s)
  case $w in
    specs)
      specs="tests/spec/dispatch_spec.lua tests/spec/cudnn_spec.lua"
      "$T" tests/run_busted.lua --run=gpu -o utfTerminal $specs > "$OUT/gpu_specs.log" 2>&1 || status=1
      tail -15 "$OUT/gpu_specs.log" ;;
    dispatch) "$T" scripts/examples/dispatch.lua > "$OUT/dispatch.log" 2>&1 || status=1; tail -30 "$OUT/dispatch.log" ;;
    conv) TIRLUA_BENCH_OUT="$OUT/conv2d.md" "$T" bench/conv2d.lua ${CONV_ARGS:-} > "$OUT/conv2d.log" 2>&1 || status=1; cat "$OUT/conv2d.log" ;;
    *) echo "conv_dispatch.sh: unknown part '$w' (specs dispatch conv)"; status=1 ;;
  esac
  echo "-- $w: $(( $(date +%s) - start )) s"
done
exit $status
