#!/bin/sh
# Runs on the GPU machine (device tool) from a tree holding the tirlua binary ($T, default
# ./tirlua or .carry/bin/tirlua) and busted's modules (.carry/lua): issue 8 part 5, the int8
# wgmma GEMM against cuBLASLt, logs under $OUT:
#   sh scripts/gpu/wgmma_int8.sh [shapes ...]   (default 4096 8192)
#     tests/spec/gpu_wgmma_int8_spec.lua + gpu_wgmma_spec.lua (#gpu), then bench/gemm_int8.lua's
#     imma and wgmma_* rows (bit-exact vs cuBLASLt first; rows to $OUT/results.jsonl)
OUT=${OUT:-out}
mkdir -p "$OUT"
export TIRLUA_PATH="$PWD/lib" TIRLUA_LUA_MODULES="$PWD/.carry/lua"
T=${T:-$PWD/tirlua}
[ -x "$T" ] || T="$PWD/.carry/bin/tirlua"
shapes=${*:-4096 8192}
status=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$OUT/nvidia-smi.txt" 2>&1
start=$(date +%s)
"$T" tests/run_busted.lua --run=gpu -o utfTerminal tests/spec/gpu_wgmma_int8_spec.lua tests/spec/gpu_wgmma_spec.lua \
  > "$OUT/gpu_wgmma_specs.log" 2>&1 || status=1
tail -30 "$OUT/gpu_wgmma_specs.log"
echo "-- specs: $(( $(date +%s) - start )) s"
start=$(date +%s)
TIRLUA_BENCH_OUT="$OUT/gemm_int8.md" "$T" bench/gemm_int8.lua \
  --only=imma,wgmma_128x256_s4,wgmma_128x256_s3_w1,wgmma_tma_128x256_s4,wgmma_tma_128x256_s3,wgmma_tma_128x128_s4 $shapes \
  > "$OUT/gemm_int8.log" 2>&1 || status=1
cat "$OUT/gemm_int8.log"
# the rows are in $OUT/results.jsonl (bench/common.lua); append them here with scripts/gpu/collect_results.sh
echo "-- bench: $(( $(date +%s) - start )) s"
exit $status
