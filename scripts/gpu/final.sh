# The final GPU round of a session: main job, every #gpu spec, both benchmarks (tables to $OUT).
export TIRLUA_PATH=$PWD/lib TIRLUA_LUA_MODULES=$PWD/.carry/lua
T=$PWD/.carry/bin/tirlua
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv
$T scripts/examples/matmul.lua > $OUT/main.log 2>&1; tail -2 $OUT/main.log
$T tests/run_busted.lua --run=gpu -o utfTerminal > $OUT/gpu_specs.log 2>&1; tail -3 $OUT/gpu_specs.log
TIRLUA_BENCH_OUT=$OUT/bench_fp32.md TIRLUA_BENCH_VARIANTS=naive,simt,simt_s1 $T bench/gemm.lua 2048 4096 8192 2>&1 | tee $OUT/bench_fp32.log
TIRLUA_BENCH_OUT=$OUT/bench_fp16.md TIRLUA_BENCH_VARIANTS=mma_s4,mma_s3,wmma_s3 $T bench/gemm_fp16.lua 2>&1 | tee $OUT/bench_fp16.log
