#!/bin/sh
# round.sh STAGE... -- a GPU round on the lent machine, from the repository root, with the
# tirlua binary in .carry/bin/tirlua and busted in .carry/lua (README: GPU tests and
# benchmarks).  Logs go to $OUT (at most 8 files come back: each stage writes one log; the
# benchmarks append their markdown to $OUT/bench.md and their rows to $OUT/results.jsonl).
#   specs      the main job and every #gpu spec             -> main.log, gpu_specs.log
#   examples   the tensor-core and int8 examples at 4096^3, the conv2d examples (a ResNet-50 layer
#              at N = 128)                                   -> examples.log
#   convtiles  bench/conv2d_tiles.lua: conv2d_tc's default tiles vs other tilings vs cuDNN on
#              ResNet-50's 3x3 layers                        -> convtiles.log
#   bench      fp32, fp16, int8 GEMM benchmarks             -> bench.log
#   tune       tir.tune over tc_gemm at 4096^3              -> tune.log
#   smallm     tir.tune over tc_gemm at M = 16 and 128 (N = 11008, K = 4096; split-K, small tiles;
#              database $TIRLUA_TUNE_DB, default $OUT/tuning.jsonl), then bench/gemm_fp16.lua's
#              split-K, tuned and auto_tensorize rows at M = 1, 16, 64, 128  -> smallm.log
# Exit status: non-zero when any stage failed (the others still run).
set -u
OUT=${OUT:-out}
mkdir -p "$OUT"
export TIRLUA_PATH="$PWD/lib" TIRLUA_LUA_MODULES="$PWD/.carry/lua" TIRLUA_BENCH_OUT="$OUT/bench.md"
export TIRLUA_COMMIT="${TIRLUA_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
T="$PWD/.carry/bin/tirlua"
status=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader
for stage in "$@"; do
  case $stage in
    specs)
      "$T" scripts/examples/matmul.lua > "$OUT/main.log" 2>&1 || status=1
      tail -2 "$OUT/main.log"
      "$T" tests/run_busted.lua --run=gpu -o utfTerminal > "$OUT/gpu_specs.log" 2>&1 || status=1
      grep -E "successes|^(Error|Failure) " "$OUT/gpu_specs.log" | tail -20 ;;
    examples)
      for ex in matmul_mma matmul_tma matmul_wgmma gemm_int8 gemm_dp4a qgemm conv2d_implicit_gemm conv2d_im2col; do
        echo "== $ex" >> "$OUT/examples.log"
        "$T" "scripts/examples/$ex.lua" >> "$OUT/examples.log" 2>&1 || { status=1; echo "$ex FAILED" >> "$OUT/examples.log"; }
      done
      grep -E "^== |TOP/s|TFLOP/s|bit-exact|FAILED|rror" "$OUT/examples.log" | head -40 ;;
    bench)
      for b in gemm gemm_fp16 gemm_int8; do
        echo "== bench/$b.lua" >> "$OUT/bench.log"
        "$T" "bench/$b.lua" >> "$OUT/bench.log" 2>&1 || { status=1; echo "bench/$b.lua FAILED" >> "$OUT/bench.log"; }
      done
      cat "$OUT/bench.log" ;;
    tune)
      "$T" bench/tune_gemm.lua > "$OUT/tune.log" 2>&1 || status=1
      cat "$OUT/tune.log" ;;
    convtiles)
      "$T" bench/conv2d_tiles.lua --max=4 > "$OUT/convtiles.log" 2>&1 || status=1
      cat "$OUT/convtiles.log" ;;
    smallm)
      export TIRLUA_TUNE_DB="${TIRLUA_TUNE_DB:-$OUT/tuning.jsonl}"
      "$T" bench/tune_gemm.lua 16x11008x4096 128x11008x4096 > "$OUT/smallm.log" 2>&1 || status=1
      TIRLUA_BENCH_VARIANTS=mma_s4,mma_s4_sk2,mma_s4_sk4,mma_s4_sk8,mma_b64_s3_sk4,tuned,auto "$T" bench/gemm_fp16.lua 1x11008x4096 \
        16x11008x4096 64x11008x4096 128x11008x4096 >> "$OUT/smallm.log" 2>&1 || status=1
      cat "$OUT/smallm.log" ;;
    *) echo "round.sh: unknown stage $stage"; status=1 ;;
  esac
done
exit $status
