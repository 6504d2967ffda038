-- profile_conv.lua -- builds one implicit-GEMM convolution on wgmma (conv2d_tc intrin = "wgmma",
-- weight packed [F, Kp]), writes its CUDA C and PTX to $OUT, runs it a few times (for ncu).
--   tirlua scripts/gpu/profile_conv.lua H C F R stride [key=value ...]   (N = 128, padding R // 2;
--   key=value: conv2d_tc.schedule options, default conv2d_tc.wgmma_tiles' rule; bias=true adds the
--   bias + relu epilogue)
local tir = require("tir")
local ct = require("tir.schedules.conv2d_tc")
local H, C, F, R, stride = tonumber(arg[1]), tonumber(arg[2]), tonumber(arg[3]), tonumber(arg[4]), tonumber(arg[5])
local wl = {N = 128, H = H, W = H, C = C, F = F, R = R, S = R, stride = stride, padding = R // 2, weight_layout = "FK"}
local so = {}
for i = 6, #arg do
  local a, b = arg[i]:match("([%w_]+)=([%w_]+)")
  if a == "bias" then wl.bias, wl.activation = true, "relu"
  elseif b == "true" or b == "false" then so[a] = b == "true" else so[a] = math.tointeger(tonumber(b)) or b end
end
local f, info = ct.workload(wl)
local o = so.BM and {} or ct.wgmma_tiles(info)
for k, v in pairs(so) do o[k] = v end
o.intrin, o.variant = "wgmma", "implicit"
local mod = tir.build(ct.schedule(f, o).mod, "cuda -arch=sm_90a")
local out = os.getenv("OUT") or "."
io.open(out .. "/kernel.cu", "w"):write(mod:get_source("cuda"))
io.open(out .. "/kernel.ptx", "w"):write(mod:get_source("ptx"))
local dev = tir.device("cuda", 0)
local args = {tir.nd.random({128, H, H, C}, "float16", dev, {seed = 1}), tir.nd.random({F, info.Kp}, "float16", dev, {seed = 2})}
if wl.bias then args[#args + 1] = tir.nd.random({F}, "float32", dev, {seed = 3}) end
args[#args + 1] = tir.nd.empty({info.Mp, F}, "float16", dev)
for _ = 1, 3 do mod(table.unpack(args)) end
local t = mod:time_evaluator({number = 5, repeat_ = 3})(table.unpack(args))
print(("ran: %.4f ms (%.1f TFLOP/s), tiles BM%d BN%d BK%d stages %d"):format(t * 1e3, info.flops / t / 1e12, o.BM, o.BN, o.BK, o.stages))
