# On the GPU machine: GPU specs (incl. tensor cores) and the fp16 benchmark; logs in $OUT.
export TIRLUA_PATH=$PWD/lib TIRLUA_LUA_MODULES=$PWD/.carry/lua
T=$PWD/.carry/bin/tirlua
which ncu cuobjdump nvdisasm 2>&1 | head -3
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv
$T tests/run_busted.lua --run=gpu -o utfTerminal > $OUT/gpu_specs.log 2>&1; tail -12 $OUT/gpu_specs.log
TIRLUA_BENCH_OUT=$OUT/bench_fp16.md TIRLUA_BENCH_VARIANTS=${VARIANTS:-mma,mma_s3,mma_s4,wmma,wmma_s3} $T bench/gemm_fp16.lua $SHAPES 2>&1 | tee $OUT/fp16.log
