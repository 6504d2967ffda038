-- conv2d_im2col.lua -- a conv2d layer on tensor cores through an explicit im2col
-- (tir.schedules.conv2d_tc variant "im2col"): a vectorized kernel writes the [N*P*Q, R*S*C] matrix
-- to global memory, then tc_gemm's mma.sync GEMM multiplies it with the packed weight.  On a
-- GPU: a ResNet-50 layer at N = 128 (default 56x56x64 -> 64, 3x3), checked against float64 at
-- sampled outputs and timed; else a small layer on the simulator.
--   tirlua scripts/examples/conv2d_im2col.lua [N H W C F R S stride pad]
local run = dofile((debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./") .. "conv2d_common.lua")
run("im2col", arg)
