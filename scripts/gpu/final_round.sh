#!/bin/sh
# final_round.sh COMMIT -- the GPU round planned for the end of stop 9 (no device was lent then: it has
# never run). From the repository root on the lent H200, with the tirlua binary in .carry/bin and busted
# in .carry/lua (README: GPU tests); carry [".carry/bin", ".carry/lua"]. At most 8 files come back from
# $OUT, so the logs go to /tmp/w and come back as $OUT/logs.tgz (+ $OUT/results.jsonl), refreshed after
# every step; the step time limits add up to 580 s: examples, the wgmma fp16 headline variants (WS +
# persistent, persistent + TMA-store epilogue), int8 wgmma + the fused qgemm, the 3x3 conv layers vs
# cuDNN best engine, then every #gpu spec.
R=$OUT; W=/tmp/w; mkdir -p $W; export OUT=$W
T=$PWD/.carry/bin/tirlua; export T TIRLUA_PATH=$PWD/lib TIRLUA_LUA_MODULES=$PWD/.carry/lua TIRLUA_COMMIT=$1
pack() { tar czf $R/logs.tgz -C $W . 2>/dev/null; cp $W/results.jsonl $R/ 2>/dev/null; echo "== $1 done at $(( $(date +%s) - t0 )) s"; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader
timeout 80 sh scripts/gpu/round.sh examples > $W/r_examples.txt 2>&1; tail -25 $W/r_examples.txt; pack examples
SKIP_SPECS=1 STEP_S=40 NCU_SHAPES=none TIRLUA_BENCH_VARIANTS=wgmma_tma_s3_p_es,wgmma_ws_p,wgmma_ws_p_bf16 timeout 85 sh scripts/gpu/ws_round.sh 4096 8192 > $W/r_ws.txt 2>&1; grep -v "^variant" $W/r_ws.txt | tail -12; pack ws
TIRLUA_BENCH_OUT=$W/int8.md timeout 60 $T bench/gemm_int8.lua --only=wgmma_tma_128x256_s4,wgmma_tma_128x256_s4_ws_p,wgmma_tma_128x256_s3_p,qgemm,wgmma_fused,wgmma_fused_zb 4096 > $W/int8.log 2>&1; tail -12 $W/int8.log; pack int8
BENCH_S=80 SPEC_S=1 timeout 85 sh scripts/gpu/conv_wgmma.sh rule > $W/r_conv.txt 2>&1; grep -iE "geomean|total|3x3" $W/r_conv.txt | tail -12; pack conv
timeout 270 sh scripts/gpu/round.sh specs > $W/r_specs.txt 2>&1; cat $W/r_specs.txt | tail -25; pack specs
