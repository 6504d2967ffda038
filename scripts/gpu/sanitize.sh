#!/bin/sh
# sanitize.sh -- compute-sanitizer over the Hopper GEMM kernels of issue 9, on the lent H200, from a
# tree holding the tirlua binary at $T (default ./tirlua); logs under $OUT:
#   1. memcheck on scripts/gpu/sanitize.lua: the example's kernel and its warp-specialized, persistent
#      (plain and WS), TMA-store-epilogue, cp.async, A-from-registers and int8 wgmma variants
#      (VARIANTS, default all), each launched once and checked against cuBLAS / cuBLASLt
#   2. memcheck on scripts/examples/matmul_wgmma.lua at 1024^3 (the example as shipped: TMA +
#      mbarrier pipeline, 128 x 256 x 64 CTA, checked against cuBLAS, then timed)
#   3. synccheck and 4. initcheck on scripts/gpu/sanitize.lua
# racecheck is not run: it models __syncthreads / shared-memory hazards and does not understand the
# asynchronous proxy (TMA writes completing on an mbarrier, wgmma reading shared memory).
# Only our kernels are instrumented (--kernel-name kns=main_kernel: tirlua names a function main's kernels main_kernel*);
# cuBLAS runs unchecked.  --error-exitcode 3 makes a reported error visible in the step's rc.
#   OUT=... [T=./tirlua] [STEP_S=12] [STEPS="memcheck example synccheck initcheck"] [VARIANTS="tma ws ..."]
#     [INIT_S=seconds] [INIT_VARIANTS=...] sh scripts/gpu/sanitize.sh
set -u
OUT=${OUT:-out}
mkdir -p "$OUT"
T=${T:-$PWD/tirlua}
S=${STEP_S:-12} # seconds a step (memcheck of the variants gets 4 more, the example 4 less)
export TIRLUA_PATH=${TIRLUA_PATH:-$PWD/lib}
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
t0=$(date +%s)
log() { echo "$*" | tee -a "$OUT/sanitize.log"; }
log "compute-sanitizer: $CS ($("$CS" --version 2>&1 | grep -i version | head -1))"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> "$OUT/sanitize.log" 2>&1
run() { # run TOOL LOGNAME SECONDS SCRIPT ARGS...
  tool=$1; name=$2; s=$3; shift 3
  timeout "$s" "$CS" --tool "$tool" --kernel-name kns=main_kernel --error-exitcode 3 --print-limit 20 "$T" "$@" > "$OUT/$name.log" 2>&1
  rc=$?
  log "$tool $* rc=$rc ($(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$name.log" | tail -1)) at $(( $(date +%s) - t0 )) s"
  grep -E '^sanitize |^-- .*TFLOP|Error|FAILED' "$OUT/$name.log" | head -12 >> "$OUT/sanitize.log"
}
for step in ${STEPS:-memcheck example synccheck initcheck}; do
  case $step in
    memcheck) run memcheck memcheck_variants $((S + 4)) scripts/gpu/sanitize.lua ${VARIANTS:-} ;;
    example) run memcheck memcheck_example $((S - 4)) scripts/examples/matmul_wgmma.lua 1024 1024 1024 ;;
    synccheck) run synccheck synccheck_variants $((S - 2)) scripts/gpu/sanitize.lua ${VARIANTS:-} ;;
    initcheck) run initcheck initcheck_variants ${INIT_S:-$((S - 2))} scripts/gpu/sanitize.lua ${INIT_VARIANTS:-${VARIANTS:-}} ;;
    *) log "unknown step $step (memcheck, example, synccheck, initcheck)" ;;
  esac
done
cat "$OUT/sanitize.log"
