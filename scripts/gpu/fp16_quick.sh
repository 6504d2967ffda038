export TIRLUA_PATH=$PWD/lib TIRLUA_LUA_MODULES=$PWD/.carry/lua
T=$PWD/.carry/bin/tirlua
nvidia-smi --query-gpu=clocks.sm,power.draw --format=csv
TIRLUA_BENCH_VARIANTS=mma,wmma,mma_256 $T bench/gemm_fp16.lua 1024 2048 4096 16x11008x4096 2>&1 | tee $OUT/fp16.log
