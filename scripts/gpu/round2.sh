export TIRLUA_PATH=$PWD/lib TIRLUA_LUA_MODULES=$PWD/.carry/lua
T=$PWD/.carry/bin/tirlua
$T tests/run_busted.lua -o utfTerminal tests/spec/gpu_tc_spec.lua > $OUT/gpu_tc.log 2>&1; tail -4 $OUT/gpu_tc.log
TIRLUA_BENCH_VARIANTS=mma_s3,mma_s4,mma_256_s3,wmma_s3 TIRLUA_BENCH_EXTRA="b64s3:BK=64,stages=3" $T bench/gemm_fp16.lua 4096 8192 2>&1 | tee $OUT/fp16.log
TIRLUA_BENCH_VARIANTS=simt,simt_s2 $T bench/gemm.lua 4096 2>&1 | tee $OUT/simt.log
