#!/bin/sh
# scripts/gpu/wgmma_defaults.sh STEP... -- issue 9 (stop 10, hA): the wgmma fp16/bf16 GEMM's per-shape
# defaults (tc_gemm_wgmma.pick), the leave-one-out rows and the cuBLAS kernel names, in short steps
# (each under `timeout`; logs and results.jsonl rows under $OUT).  Run from the repository root with
# the tirlua binary at $T.  Steps:
#   smallm   128x11008x4096 fp16 + bf16: the default pick, 64x128 s8, 128x64 s8 (warp-specialized)
#   exp4096  4096^3 fp16: wgmma_ws_p against 256x128 tiles and ws_regs = {24, 240}
#   looexp4096  loo4096 and exp4096 in one process
#   loo4096  4096^3 fp16 leave-one-out: ws_p (TMA + WS + persistent), ws (- persistent), tma_p (- WS), wgmma (- TMA)
#   loo8192  the same at 8192^3
#   llm      4096x11008x4096 and 4096x4096x11008, fp16 + bf16: the default pick and auto_tensorize(func, "wgmma")
#   square   4096^3 and 8192^3, fp16 + bf16: the default pick
#   sq4096   4096^3: the default pick fp16 + bf16, wgmma_ws_p, wgmma_tma (TMA alone, for the leave-one-out table),
#            wgmma_ws_p_bk32_s8
#   sqloo8192  8192^3: the default pick fp16 + bf16 and the leave-one-out rows (+ wgmma_tma)
#   llm2     4096x4096x11008: the default pick fp16 + bf16, auto_tensorize(func, "wgmma") bf16
#   example  scripts/examples/matmul_wgmma.lua (the defaults at 4096^3 on a GPU)
#   names    ncu: the cuBLAS kernels of the shapes above (scripts/gpu/cublas_kernels.lua) -> $OUT/cublas_kernels.txt
# A step may carry its timeout in seconds as STEP:S (default $STEP_S, 12), e.g. `smallm:10 loo4096:12`.
set -u
OUT=${OUT:-out}
T=${T:-$PWD/build/tirlua}
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
mkdir -p "$OUT"
export TIRLUA_BENCH_JSONL=${TIRLUA_BENCH_JSONL:-$OUT/results.jsonl}
# the cuBLAS kernel names: this run's (step names), else the H200's list in the tree
[ -s bench/cublas_kernels_h200.txt ] && export TIRLUA_REF_KERNELS=$PWD/bench/cublas_kernels_h200.txt
[ -s "$OUT/cublas_kernels.txt" ] && export TIRLUA_REF_KERNELS=$OUT/cublas_kernels.txt
bench() { # name variants shapes...
  n=$1 v=$2
  shift 2
  t0=$(date +%s)
  TIRLUA_BENCH_OUT="$OUT/bench.md" TIRLUA_BENCH_VARIANTS=$v timeout "$S" "$T" bench/gemm_fp16.lua "$@" > "$OUT/$n.log" 2>&1
  echo "rc=$? wall $(( $(date +%s) - t0 )) s" >> "$OUT/$n.log"
}
for spec in "$@"; do
  step=${spec%%:*}
  S=${STEP_S:-12}
  [ "$step" != "$spec" ] && S=${spec#*:}
  case $step in
    smallm) bench smallm wgmma_default,wgmma_default_bf16,wgmma_ws_64x128_s8,wgmma_ws_64x128_s8_bf16,wgmma_ws_128x64_s8,wgmma_ws_128x64_s8_bf16 128x11008x4096 ;;
    exp4096) bench exp4096 wgmma_ws_p,wgmma_ws_p_256x128,wgmma_ws_p_r24 4096 ;;
    looexp4096) bench looexp4096 wgmma_ws_p,wgmma_ws,wgmma_tma_p,wgmma,wgmma_ws_p_256x128,wgmma_ws_p_r24 4096 ;;
    loo4096) bench loo4096 wgmma_ws_p,wgmma_ws,wgmma_tma_p,wgmma 4096 ;;
    loo8192) bench loo8192 wgmma_ws_p,wgmma_ws,wgmma_tma_p,wgmma 8192 ;;
    llm) bench llm wgmma_default,wgmma_default_bf16,auto_wgmma 4096x11008x4096 4096x4096x11008 ;;
    square) bench square wgmma_default,wgmma_default_bf16 4096 8192 ;;
    sq4096) bench sq4096 wgmma_default,wgmma_default_bf16,wgmma_ws_p,wgmma_tma,wgmma_ws_p_bk32_s8 4096 ;;
    sqloo8192) bench sqloo8192 wgmma_default,wgmma_default_bf16,wgmma_ws_p,wgmma_ws,wgmma_tma_p,wgmma_tma,wgmma 8192 ;;
    llm2) bench llm2 wgmma_default,wgmma_default_bf16,auto_wgmma_bf16 4096x4096x11008 ;;
    example)
      t0=$(date +%s)
      timeout "$S" "$T" scripts/examples/matmul_wgmma.lua > "$OUT/example.log" 2>&1
      echo "rc=$? wall $(( $(date +%s) - t0 )) s" >> "$OUT/example.log" ;;
    names)
      t0=$(date +%s)
      (ldconfig -p | grep -i cublas; for l in $(ldconfig -p | awk '/libcublas/ {print $NF}'); do readlink -f "$l"; done) > "$OUT/cublas_lib.txt" 2>&1
      timeout "$S" "$NCU" --csv --metrics gpu__time_duration.sum "$T" scripts/gpu/cublas_kernels.lua run \
        "$OUT/cublas_calls.txt" 128x11008x4096 4096 4096x11008x4096 4096x4096x11008 8192 > "$OUT/cublas_ncu.csv" 2> "$OUT/cublas_ncu.err"
      echo "ncu rc=$? wall $(( $(date +%s) - t0 )) s" >> "$OUT/cublas_ncu.err"
      "$T" scripts/gpu/cublas_kernels.lua parse "$OUT/cublas_calls.txt" "$OUT/cublas_ncu.csv" > "$OUT/cublas_kernels.txt" 2>> "$OUT/cublas_ncu.err"
      [ -s "$OUT/cublas_kernels.txt" ] && export TIRLUA_REF_KERNELS=$OUT/cublas_kernels.txt ;;
    *) echo "wgmma_defaults.sh: unknown step $step" >&2 ;;
  esac
done
exit 0
