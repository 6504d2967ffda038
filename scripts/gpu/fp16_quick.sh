# GPU quick check of the tensor-core GEMMs (run by the device tool from the repo root; logs in $OUT)
export TIRLUA_PATH=$PWD/lib TIRLUA_LUA_MODULES=$PWD/.carry/lua
T=$PWD/.carry/bin/tirlua
nvidia-smi --query-gpu=clocks.sm,power.draw --format=csv
TIRLUA_BENCH_VARIANTS=${VARIANTS:-mma,mma_s3,mma_s4,mma_256_s3,wmma,wmma_s3} $T bench/gemm_fp16.lua ${SHAPES:-1024 4096 16x11008x4096} 2>&1 | tee $OUT/fp16.log
