#!/bin/sh
# Runs on the GPU machine (device tool) from a tree holding the tirlua binary ($T, default
# ./tirlua or .carry/bin/tirlua) and busted's modules (.carry/lua): issue 8 parts 3 and 5 on
# Hopper, logs under $OUT:
#   sh scripts/gpu/qgemm_wgmma.sh [bench|specs|search|ncu] ...   (default: bench specs search)
#     bench:  bench/gemm_int8.lua at 4096^3: the fused quantized GEMM on wgmma (wgmma_fused*, one
#             kernel; _zb: row sums of A in the kernel) and on IMMA against "tirlua plain int8"
#             (the plain wgmma GEMM of the same tiles) and "cuBLASLt + requant"
#     specs:  the #gpu qgemm case of tests/spec/gpu_wgmma_int8_spec.lua (= the int64 oracle)
#     search: the plain int8 wgmma configurations at 8192^3 (and 4096^3 in bench)
#     ncu:    Nsight Compute counters of the plain and the fused 4096^3 kernels (ncu on PATH)
# Rows go to $OUT/results.jsonl (bench/common.lua); append them with scripts/gpu/collect_results.sh.
OUT=${OUT:-out}
mkdir -p "$OUT"
export TIRLUA_PATH="$PWD/lib" TIRLUA_LUA_MODULES="$PWD/.carry/lua"
T=${T:-$PWD/tirlua}
[ -x "$T" ] || T="$PWD/.carry/bin/tirlua"
steps=${*:-bench specs search}
SEARCH=wgmma_tma_128x256_s4,wgmma_tma_256x128_s4,wgmma_tma_256x128_k64_s6,wgmma_tma_128x256_k64_s6,wgmma_tma_128x256_k64_s8
status=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$OUT/nvidia-smi.txt" 2>&1
for s in $steps; do
  start=$(date +%s)
  case $s in
    bench)
      TIRLUA_BENCH_OUT="$OUT/gemm_int8.md" timeout ${TB:-100} "$T" bench/gemm_int8.lua \
        --only=qgemm,wgmma_fused,wgmma_fused_s3,wgmma_fused_zb,qgemm_imma,imma_fused_zb,$SEARCH 4096 \
        > "$OUT/bench_4096.log" 2>&1 || status=1
      cat "$OUT/bench_4096.log" ;;
    specs)
      timeout ${TS:-60} "$T" tests/run_busted.lua --run=gpu -o utfTerminal --filter="fused quantized" tests/spec/gpu_wgmma_int8_spec.lua \
        > "$OUT/gpu_qgemm_spec.log" 2>&1 || status=1
      tail -8 "$OUT/gpu_qgemm_spec.log" ;;
    search)
      TIRLUA_BENCH_OUT="$OUT/gemm_int8.md" timeout ${TQ:-100} "$T" bench/gemm_int8.lua --only=$SEARCH 8192 \
        > "$OUT/bench_8192.log" 2>&1 || status=1
      cat "$OUT/bench_8192.log" ;;
    ncu)
      # the first launch of each: the plain wgmma GEMM (main_kernel) and the fused one (qgemm_kernel)
      for k in main_kernel qgemm_kernel; do
        timeout 60 ncu --kernel-name "$k" --launch-count 1 \
          --metrics gpu__time_duration.sum,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,smsp__inst_executed.sum,dram__bytes_write.sum \
          "$T" bench/gemm_int8.lua --only=qgemm,wgmma_fused 4096 > "$OUT/ncu_$k.log" 2>&1 || status=1
        grep -E "$k|gmma|bank|duration|dram|inst_executed" "$OUT/ncu_$k.log" | head -12
      done ;;
    *) echo "unknown step $s"; status=1 ;;
  esac
  echo "-- $s: $(( $(date +%s) - start )) s"
done
exit $status
