#!/bin/sh
# ws_round.sh -- issue 9 (warp specialization) on the lent H200, in one command, from a tree holding the
# tirlua binary at ./tirlua and busted in .carry/lua (scripts/gpu/pack_busted.sh); logs under $OUT:
#   1. tests/spec/gpu_warp_specialization_spec.lua (#gpu: the warp-specialized wgmma + TMA GEMMs vs cuBLAS)
#   2. the cuBLAS kernel of each NT shape (ncu over bench/cublas_calls.lua; NCU_SHAPES, default 4096^3)
#   3. bench/gemm_fp16.lua's wgmma variants with and without warp specialization (TIRLUA_BENCH_VARIANTS)
#      per shape, each shape with its cuBLAS kernel name recorded (rows to $OUT/results.jsonl)
#   OUT=... sh scripts/gpu/ws_round.sh [shapes ...]   (default 4096 8192 128x11008x4096 4096x11008x4096 4096x4096x11008)
# Every step runs under `timeout` (STEP_S, default 150 s) so that a hang leaves the others' logs.
set -u
OUT=${OUT:-out}
mkdir -p "$OUT"
export TIRLUA_PATH="$PWD/lib" TIRLUA_LUA_MODULES="$PWD/.carry/lua" TIRLUA_BENCH_OUT="$OUT/bench.md"
T=${T:-$PWD/tirlua}
S=${STEP_S:-150}
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader >> "$OUT/round.log" 2>&1
if [ "${SKIP_SPECS:-0}" != 1 ]; then
  timeout "$S" "$T" tests/run_busted.lua --run=gpu -o utfTerminal ${SPEC_FILTER:+--filter=$SPEC_FILTER} tests/spec/gpu_warp_specialization_spec.lua ${EXTRA_SPECS:-} \
    > "$OUT/spec.log" 2>&1
  echo "specs rc=$? at $(( $(date +%s) - t0 )) s" >> "$OUT/round.log"
fi
[ $# -gt 0 ] || set -- 4096 8192 128x11008x4096 4096x11008x4096 4096x4096x11008
for shape in "$@"; do
  case "$shape" in *x*) full=$shape ;; *) full=${shape}x${shape}x${shape} ;; esac
  k16=""; kbf=""
  case " ${NCU_SHAPES:-4096} " in
    *" $shape "*)
      if command -v ncu >/dev/null; then
        timeout 60 ncu --clock-control none --metrics gpu__time_duration.sum "$T" bench/cublas_calls.lua "$full" float16:NT bfloat16:NT \
          > "$OUT/ncu_$full.log" 2>&1
        grep -E '^  [A-Za-z_].*\([0-9]+, [0-9]+, [0-9]+\)x\(' "$OUT/ncu_$full.log" | grep -Ei 'gemm|nvjet|xmma|cutlass|sm90' |
          sed 's/^ *//; s/ (.*//' > "$OUT/kernels_$full.txt"
        k16=$(sed -n 1p "$OUT/kernels_$full.txt"); kbf=$(sed -n 2p "$OUT/kernels_$full.txt")
        echo "cuBLAS $full: fp16 NT $k16; bf16 NT $kbf" >> "$OUT/round.log"
      fi ;;
  esac
  TIRLUA_REF_KERNEL_FLOAT16_NT="$k16" TIRLUA_REF_KERNEL_BFLOAT16_NT="$kbf" \
  TIRLUA_BENCH_VARIANTS=${TIRLUA_BENCH_VARIANTS:-wgmma_tma_w0,wgmma_tma,wgmma_ws,wgmma_ws_w0,wgmma_ws_128,wgmma_ws_64x128,wgmma_tma_bf16,wgmma_ws_bf16} \
    timeout "$S" "$T" bench/gemm_fp16.lua "$full" >> "$OUT/bench.log" 2>&1
  echo "bench $full rc=$? at $(( $(date +%s) - t0 )) s" >> "$OUT/round.log"
done
cat "$OUT/round.log"; grep -E "successes|^(Error|Failure)" "$OUT/spec.log" 2>/dev/null; grep -v "^variant" "$OUT/bench.log"
