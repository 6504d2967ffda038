#!/bin/sh
# wgmma_round.sh -- the Hopper wgmma checks and benchmarks in one go on the lent H200, from a tree
# holding the tirlua binary at ./tirlua and busted in .carry/lua (scripts/gpu/pack_busted.sh):
#   the example at 4096^3 against cuBLAS, the #gpu wgmma specs, the cuBLAS kernel names (ncu),
#   bench/gemm_fp16.lua's wgmma variants (and mma_s4 as the mma.sync baseline).  Logs to $OUT.
#   sh scripts/gpu/wgmma_round.sh [bench shapes...]      (default 4096 8192)
set -u
OUT=${OUT:-out}
mkdir -p "$OUT"
export TIRLUA_PATH="$PWD/lib" TIRLUA_LUA_MODULES="$PWD/.carry/lua" TIRLUA_BENCH_OUT="$OUT/bench.md"
T="$PWD/tirlua"
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader > "$OUT/round.log"
"$T" scripts/examples/matmul_wgmma.lua > "$OUT/example.log" 2>&1; echo "example rc=$?" >> "$OUT/round.log"
"$T" tests/run_busted.lua --run=gpu -o utfTerminal tests/spec/gpu_wgmma_spec.lua > "$OUT/spec.log" 2>&1; echo "spec rc=$?" >> "$OUT/round.log"
# the kernel cuBLAS runs for each (dtype, layout) at 4096^3
if command -v ncu >/dev/null; then
  ncu --clock-control none --metrics gpu__time_duration.sum "$T" bench/cublas_calls.lua > "$OUT/ncu.log" 2>&1
  # kernel lines: "  <name> (grid)x(block), Context ..."; cuBLAS's are the gemm ones, in call order
  grep -E '^  [A-Za-z_].*\([0-9]+, [0-9]+, [0-9]+\)x\(' "$OUT/ncu.log" | grep -Ei 'gemm|nvjet|xmma|cutlass|sm90' | sed 's/^ *//; s/ (.*//' > "$OUT/kernels.txt"
  k16nt=$(sed -n 2p "$OUT/kernels.txt"); kbfnt=$(sed -n 3p "$OUT/kernels.txt")
  export TIRLUA_REF_KERNEL_FLOAT16_NT="$k16nt" TIRLUA_REF_KERNEL_BFLOAT16_NT="$kbfnt"
  echo "cuBLAS kernels: fp16 NT $k16nt; bf16 NT $kbfnt" >> "$OUT/round.log"
fi
[ $# -gt 0 ] || set -- 4096 8192
TIRLUA_BENCH_VARIANTS=${TIRLUA_BENCH_VARIANTS:-wgmma,wgmma_128,wgmma_bf16,mma_s4} "$T" bench/gemm_fp16.lua "$@" > "$OUT/bench.log" 2>&1
echo "bench rc=$?" >> "$OUT/round.log"
cat "$OUT/round.log"; tail -12 "$OUT/bench.log"; grep -E "successes|^(Error|Failure)" "$OUT/spec.log"; tail -2 "$OUT/example.log"
