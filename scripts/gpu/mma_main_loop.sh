#!/bin/sh
# mma_main_loop.sh -- issue 12's mma.sync measurements (bench/RESULTS.md "Issue 12, the mma.sync main
# loop and M = 128"): M = 128 and 16 with split-K (3 on K padded to whole slices), the large shapes
# with and without frag_prefetch, and ncu of the 128x128x32 kernel with and without it.  Run from the
# repository root with the tirlua binary at $T (default .carry/bin/tirlua); logs and results.jsonl go
# to $OUT (default out).  About 70 s on an H200.
set -u
OUT=${OUT:-out}
T=${T:-$PWD/.carry/bin/tirlua}
mkdir -p "$OUT"
export TIRLUA_BENCH_JSONL=$OUT/results.jsonl
E="c64x128_b32s4_k3:BM=64,BN=128,warp_m=64,warp_n=32,BK=32,stages=4,split_k=3"
E="$E;c64x128_b64s3_k2:BM=64,BN=128,warp_m=64,warp_n=32,BK=64,stages=3,split_k=2"
E="$E;c128_b64s3_k2:BM=128,BN=128,warp_m=64,warp_n=64,BK=64,stages=3,split_k=2"
TIRLUA_BENCH_EXTRA="$E" TIRLUA_BENCH_VARIANTS=mma_b32_s3_sk3,mma_b64_s3_sk3,mma_b32_s4_sk3,c64x128_b32s4_k3,c64x128_b64s3_k2,c128_b64s3_k2,auto \
  "$T" bench/gemm_fp16.lua 128x11008x4096 > "$OUT/m128.log" 2>&1
TIRLUA_BENCH_VARIANTS=auto "$T" bench/gemm_fp16.lua 16x11008x4096 >> "$OUT/m128.log" 2>&1
TIRLUA_BENCH_VARIANTS=mma_s3,mma_s3_fpf,mma_bk64_s3_fpf,mma_256x128_s3_b32,mma_256x128_s3_fpf,mma_256_s3_fpf,mma_256x128_bk64_s3_fpf,mma_256_bk64_s3_fpf,mma_256_s4_fpf,auto \
  "$T" bench/gemm_fp16.lua 4096 > "$OUT/big.log" 2>&1
TIRLUA_BENCH_VARIANTS=mma_s3,mma_256x128_s3_fpf,auto "$T" bench/gemm_fp16.lua 8192 4096x11008x4096 4096x4096x11008 >> "$OUT/big.log" 2>&1
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
M=gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active
for r in barrier long_scoreboard short_scoreboard wait math_pipe_throttle mio_throttle not_selected; do
  M=$M,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio
done
for o in "" "frag_prefetch=true"; do
  OUT=/tmp timeout 60 "$NCU" --clock-control none --metrics "$M" -k regex:main_kernel --launch-skip 3 --launch-count 1 \
    "$T" scripts/gpu/profile_one.lua 4096 4096 4096 BK=32 stages=3 $o >> "$OUT/ncu_4096.txt" 2>&1
done
grep -h "WRONG\|not built" "$OUT/m128.log" "$OUT/big.log" && exit 1
exit 0
