-- profile_many.lua -- builds several fp16 tc_gemm configurations of one shape first, then runs each
-- once (the launch ncu profiles), in the order given; "cublas" / "cublas_nt" run cuBLAS on the same
-- operands (B K x N, or N x K).  For ncu: every kernel of a configuration (split-K's summing kernel
-- too) is one launch, in order, so ncu's IDs map to the lines this prints.
--   tirlua scripts/gpu/profile_many.lua MxNxK name:key=value,key=value ... [cublas] [cublas_nt]
-- Keys are tc_gemm.schedule options (intrin = "mma" and epilogue = "D" by default); layout=NT
-- makes B N x K.  A K that split_k * BK does not divide is padded (tc_gemm.workload's pad).
local tir = require("tir")
local tc = require("tir.schedules.tc_gemm")
local core = tir.core
local m, n, k = arg[1]:match("^(%d+)x(%d+)x(%d+)$")
m, n, k = tonumber(m), tonumber(n), tonumber(k)
local dev = tir.device("cuda", 0)
local runs = {}
for i = 2, #arg do
  local name, kv = arg[i]:match("^([%w_]+):?(.*)$")
  local o, layout = {intrin = "mma", epilogue = "D"}, "NN"
  for key, v in kv:gmatch("([%w_]+)=([%w_]+)") do
    local x = v
    if v == "true" or v == "false" then x = v == "true" else x = math.tointeger(tonumber(v)) or v end
    if key == "layout" then layout = x else o[key] = x end
  end
  local r = {name = name, layout = (name == "cublas_nt") and "NT" or layout}
  if name ~= "cublas" and name ~= "cublas_nt" then
    local BM, BN, BK = o.BM or 128, o.BN or 128, (o.BK or 32) * (o.split_k or 1)
    local pad = (m % BM ~= 0 or n % BN ~= 0 or k % BK ~= 0) and {BM, BN, BK} or nil
    if pad then o.epilogue = nil end
    local ok, mod = pcall(function() return tir.build(tc.schedule(tc.workload(m, n, k, "float16", "float16", pad, layout), o).mod, "cuda") end)
    if ok then r.mod = mod else print(name .. ": not built: " .. tostring(mod):match("[^\n]*")) r = nil end
  end
  runs[#runs + 1] = r
end
local ops = {}
local function operands(layout)
  if not ops[layout] then
    ops[layout] = {tir.nd.random({m, k}, "float16", dev, {seed = 1}),
                   tir.nd.random(layout == "NT" and {n, k} or {k, n}, "float16", dev, {seed = 2}), tir.nd.empty({m, n}, "float16", dev)}
  end
  return table.unpack(ops[layout])
end
for _, r in pairs(runs) do operands(r.layout) end
core.cuda_sync(0)
for i, r in pairs(runs) do
  local a, b, c = operands(r.layout)
  if r.mod then r.mod(a, b, c) else core.cublas_gemm(a, b, c, false, r.layout == "NT", 1.0, 0.0) end
  core.cuda_sync(0)
  print(("%d %s %s"):format(i, r.name, r.mod and "tirlua" or "cuBLAS"))
end
