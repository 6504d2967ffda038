-- profile_one.lua -- builds one tensor-core GEMM configuration, writes its CUDA C and PTX to $OUT,
-- runs it a few times (for ncu).  tirlua scripts/gpu/profile_one.lua M N K key=value ...
-- layout=NT and arch=sm_90a pick the workload's layout and the target (wgmma); a value AxB is the
-- list {A, B} (cluster=2x1).
local tir = require("tir")
local tc = require("tir.schedules.tc_gemm")
local m, n, k = tonumber(arg[1]), tonumber(arg[2]), tonumber(arg[3])
local o = {intrin = "mma", epilogue = "D"}
local layout, target = nil, "cuda"
for i = 4, #arg do
  local a, b = arg[i]:match("([%w_]+)=([%w_]+)")
  local x, y = b:match("^(%d+)x(%d+)$")
  if a == "layout" then layout = b
  elseif a == "arch" then target = "cuda -arch=" .. b
  elseif x then o[a] = {math.tointeger(tonumber(x)), math.tointeger(tonumber(y))}
  elseif b == "true" or b == "false" then o[a] = b == "true" else o[a] = math.tointeger(tonumber(b)) or b end
end
local mod = tir.build(tc.schedule(tc.workload(m, n, k, "float16", "float16", nil, layout), o).mod, target)
local out = os.getenv("OUT") or "."
io.open(out .. "/kernel.cu", "w"):write(mod:get_source("cuda"))
io.open(out .. "/kernel.ptx", "w"):write(mod:get_source("ptx"))
local dev = tir.device("cuda", 0)
local a = tir.nd.random({m, k}, "float16", dev, {seed = 1})
local b = tir.nd.random(layout == "NT" and {n, k} or {k, n}, "float16", dev, {seed = 2})
local c = tir.nd.empty({m, n}, "float16", dev)
for _ = 1, 3 do mod(a, b, c) end
print("ran", mod:time_evaluator({number = 5, repeat_ = 3})(a, b, c))
