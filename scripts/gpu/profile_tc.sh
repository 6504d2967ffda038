#!/bin/sh
# profile_tc.sh M N K CONFIG... -- ncu counters of tc_gemm configurations, one line each (issue
# 12: where L2 traffic and sectors go).  CONFIG is name:key=value,key=value (tc_gemm options,
# e.g. s4_swz:stages=4,swizzle=true); run from the repository root with the tirlua binary at
# $T (default .carry/bin/tirlua).  ncu runs with --clock-control none on the 4th launch of
# scripts/gpu/profile_one.lua; per configuration the CUDA C goes to $OUT/<name>/kernel.cu and
# ncu's CSV to $OUT/<name>/ncu.csv.
set -u
OUT=${OUT:-out}
T=${T:-$PWD/.carry/bin/tirlua}
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
M=$1 N=$2 K=$3
shift 3
METRICS=gpu__time_duration.sum,smsp__inst_executed.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,\
l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,\
l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,\
lts__t_sector_hit_rate.pct,dram__bytes_read.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,\
l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,sm__warps_active.avg.pct_of_peak_sustained_active,\
launch__registers_per_thread,launch__shared_mem_per_block_dynamic
for cfg in "$@"; do
  name=${cfg%%:*}
  opts=$(echo "${cfg#*:}" | tr ',' ' ')
  mkdir -p "$OUT/$name"
  OUT="$OUT/$name" "$NCU" --clock-control none --csv --metrics "$METRICS" -k regex:main_kernel --launch-skip 3 --launch-count 1 \
    "$T" scripts/gpu/profile_one.lua "$M" "$N" "$K" $opts > "$OUT/$name/ncu.csv" 2> "$OUT/$name/ncu.err" || echo "$name: ncu failed"
  printf '%s' "$name"
  grep '^"' "$OUT/$name/ncu.csv" | awk -F'","' 'NR > 1 { v = $NF; gsub(/"/, "", v); printf " %s=%s", $(NF-2), v }'
  echo
done
