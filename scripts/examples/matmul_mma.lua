-- matmul_mma.lua -- an fp16 GEMM on tensor cores through mma.sync.m16n8k16 with ldmatrix,
-- with a 3-stage cp.async pipeline: prints the scheduled IR, the trace and the PTX instructions;
-- runs on a GPU against cuBLAS (default 4096^3), else on the interpreter (64^3).
--   tirlua scripts/examples/matmul_mma.lua [M N K]
local run = dofile((debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./") .. "matmul_tc_common.lua")
run("mma", arg)
