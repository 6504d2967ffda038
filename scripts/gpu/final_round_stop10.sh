#!/bin/sh
# final_round_stop10.sh COMMIT -- the lead's closing GPU round of stop 10 on the H200 (README: GPU tests).
# From the repository root with the tirlua binary in .carry/bin and busted in .carry/lua; carry
# [".carry/bin", ".carry/lua"].  Logs go to /tmp/w and come back as $OUT/logs.tgz + $OUT/results.jsonl,
# refreshed after every step.  Steps (time limits add up to ~560 s): examples; the wgmma fp16/bf16
# defaults per shape (scripts/gpu/wgmma_defaults.sh square llm smallm); int8 wgmma defaults + the fused
# qgemm; mma.sync 4096^3 / M = 128; the 23 ResNet-50 layers in one process vs cuDNN's best; every #gpu spec.
R=$OUT; W=/tmp/w; mkdir -p $W; export OUT=$W
T=$PWD/.carry/bin/tirlua; export T TIRLUA_PATH=$PWD/lib TIRLUA_LUA_MODULES=$PWD/.carry/lua TIRLUA_COMMIT=$1
pack() { tar czf $R/logs.tgz -C $W . 2>/dev/null; cp $W/results.jsonl $R/ 2>/dev/null; echo "== $1 done at $(( $(date +%s) - t0 )) s"; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader
timeout 60 sh scripts/gpu/round.sh examples > $W/r_examples.txt 2>&1; grep -E "^--|^==" $W/r_examples.txt | tail -22; pack examples
timeout 70 sh scripts/gpu/wgmma_defaults.sh square:25 llm:22 smallm:18 > $W/r_wgmma.txt 2>&1; grep -hE "^wgmma|^auto" $W/*.log | tail -20; pack wgmma
TIRLUA_BENCH_OUT=$W/int8.md timeout 40 $T bench/gemm_int8.lua --only=wgmma_default,wgmma_tma_128x256_s4_ws_p,qgemm,wgmma_fused,wgmma_fused_zb 4096 8192 > $W/int8.log 2>&1; grep -E "^gemm_int8|^qgemm" $W/int8.log | tail -14; pack int8
TIRLUA_BENCH_OUT=$W/mma.md TIRLUA_BENCH_VARIANTS=mma_256x128_bk64_s3_fpf,auto,mma_b64_s3_sk3,mma_b64_s3_sk3_ser timeout 35 $T bench/gemm_fp16.lua 4096 128x11008x4096 > $W/mma.log 2>&1; grep -E "^mma|^auto" $W/mma.log | tail -10; pack mma
TIRLUA_BENCH_OUT=$W/conv2d.md timeout 110 $T bench/conv2d.lua --variants=wgmma --layer_variants=1:implicit > $W/conv2d.log 2>&1; grep -iE "total|geomean" $W/conv2d.log | tail -4; pack conv
timeout 270 sh scripts/gpu/round.sh specs > $W/r_specs.txt 2>&1; tail -6 $W/r_specs.txt; pack specs
