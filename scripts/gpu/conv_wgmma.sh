#!/bin/sh
# Runs on the GPU machine (device tool) from a tree holding the tirlua binary ($T, default ./tirlua
# or .carry/bin/tirlua) and busted's modules (.carry/lua): the 3x3 layers of ResNet-50 v1.5 at
# N = 128 with the implicit GEMM on mma.sync and on wgmma vs cuDNN (bench/conv2d.lua; rows ->
# $OUT/results.jsonl, table -> $OUT/conv2d.md), then gpu_conv_spec (#gpu, incl. the wgmma cases).
#   sh scripts/gpu/conv_wgmma.sh [rule|all]     all: every tiling of conv2d_tc.wgmma_space timed
#   BENCH_S / SPEC_S: time limits of the two parts in seconds (default 100 / 60)
OUT=${OUT:-out}
mkdir -p "$OUT"
export TIRLUA_PATH="$PWD/lib" TIRLUA_LUA_MODULES="$PWD/.carry/lua"
T=${T:-$PWD/tirlua}
[ -x "$T" ] || T="$PWD/.carry/bin/tirlua"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$OUT/nvidia-smi.txt" 2>&1
status=0
start=$(date +%s)
TIRLUA_BENCH_OUT="$OUT/conv2d.md" timeout "${BENCH_S:-100}" "$T" bench/conv2d.lua --layers=3,7,11,13,17,19,23 --variants=implicit,wgmma \
  --wgmma_tiles="${1:-rule}" > "$OUT/conv2d.log" 2>&1 || status=1
cat "$OUT/conv2d.log"
echo "-- bench: $(( $(date +%s) - start )) s"
start=$(date +%s)
timeout "${SPEC_S:-60}" "$T" tests/run_busted.lua --run=gpu -o utfTerminal tests/spec/gpu_conv_spec.lua > "$OUT/gpu_conv_spec.log" 2>&1 || status=1
tail -30 "$OUT/gpu_conv_spec.log"
echo "-- gpu_conv_spec: $(( $(date +%s) - start )) s"
exit $status
