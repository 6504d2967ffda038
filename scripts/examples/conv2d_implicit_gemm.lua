-- conv2d_implicit_gemm.lua -- a conv2d layer on tensor cores as an implicit GEMM
-- (tir.schedules.conv2d_tc variant "implicit"): the im2col indexing folded into the cp.async stage
-- that fills the shared A tile, zero-filled copies for the padding, one kernel, no im2col matrix
-- in global memory.  On a GPU: a ResNet-50 layer at N = 128 (default 56x56x64 -> 64, 3x3), checked
-- against float64 at sampled outputs and timed; else a small layer on the simulator.
--   tirlua scripts/examples/conv2d_implicit_gemm.lua [N H W C F R S stride pad]
local run = dofile((debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./") .. "conv2d_common.lua")
run("implicit_gemm", arg)
