-- matmul_tma.lua -- the fp16 GEMM of matmul_mma.lua with its shared tiles filled by TMA (Hopper,
-- sm_90): one cp.async.bulk.tensor per tile issued by thread 0, a 3-stage pipeline of full/empty
-- mbarriers and no __syncthreads in the main loop (tc_gemm tma = true; docs/TENSOR_CORES.md).
-- Prints the scheduled IR, the trace and the PTX lines (TMA, mbarrier, ldmatrix, mma.sync); runs
-- on a GPU against cuBLAS (default 4096^3), else on the interpreter and the simulator, which
-- models the TMA copies and mbarrier phases.
--   tirlua scripts/examples/matmul_tma.lua [M N K]
local run = dofile((debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./") .. "matmul_tc_common.lua")
run("mma", arg, {tma = true, stages = 3}, "tma")
