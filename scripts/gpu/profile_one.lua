-- profile_one.lua -- builds one tensor-core GEMM configuration, writes its CUDA C and PTX to $OUT,
-- runs it a few times (for ncu).  tirlua scripts/gpu/profile_one.lua M N K key=value ...
local tir = require("tir")
local tc = require("tir.schedules.tc_gemm")
local m, n, k = tonumber(arg[1]), tonumber(arg[2]), tonumber(arg[3])
local o = {intrin = "mma", epilogue = "D"}
for i = 4, #arg do
  local a, b = arg[i]:match("([%w_]+)=([%w_]+)")
  if b == "true" or b == "false" then o[a] = b == "true" else o[a] = math.tointeger(tonumber(b)) or b end
end
local mod = tir.build(tc.schedule(tc.workload(m, n, k, "float16", "float16"), o).mod, "cuda")
local out = os.getenv("OUT") or "."
io.open(out .. "/kernel.cu", "w"):write(mod:get_source("cuda"))
io.open(out .. "/kernel.ptx", "w"):write(mod:get_source("ptx"))
local dev = tir.device("cuda", 0)
local a = tir.nd.random({m, k}, "float16", dev, {seed = 1})
local b = tir.nd.random({k, n}, "float16", dev, {seed = 2})
local c = tir.nd.empty({m, n}, "float16", dev)
for _ = 1, 3 do mod(a, b, c) end
print("ran", mod:time_evaluator({number = 5, repeat_ = 3})(a, b, c))
