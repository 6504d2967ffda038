-- bench/cublas_calls.lua -- calls cublasGemmEx once per (dtype, layout) at M x N x K so that a
-- profiler run (ncu / nsys) names the kernel cuBLAS picks for each; bench/gemm_fp16.lua records
-- that name beside its ratios (TIRLUA_REF_KERNEL_<DTYPE>_<LAYOUT>).
--   ncu --clock-control none --metrics gpu__time_duration.sum tirlua bench/cublas_calls.lua [MxNxK] [dtype:layout ...]
-- Default: 4096^3, float16:NN float16:NT bfloat16:NT.  Prints one line per call, in order.
local tir = require("tir")
local common = dofile("bench/common.lua")
local dev = common.device("bench/cublas_calls.lua")
if not dev then return end
local m, n, k = 4096, 4096, 4096
local combos = {}
for _, a in ipairs(arg) do
  local mm, nn, kk = a:match("^(%d+)x(%d+)x(%d+)$")
  if mm then m, n, k = tonumber(mm), tonumber(nn), tonumber(kk)
  else
    local dt, layout = a:match("^(%w+):(%u%u)$")
    if not dt then error("bench/cublas_calls.lua: arguments are MxNxK and dtype:layout (float16:NT)") end
    combos[#combos + 1] = {dt, layout}
  end
end
if #combos == 0 then combos = {{"float16", "NN"}, {"float16", "NT"}, {"bfloat16", "NT"}} end
for _, c in ipairs(combos) do
  local dt, layout = c[1], c[2]
  local a = tir.nd.random({m, k}, dt, dev, {seed = 1})
  local b = tir.nd.random(layout == "NT" and {n, k} or {k, n}, dt, dev, {seed = 2})
  local r = tir.nd.empty({m, n}, dt == "float16" and "float16" or "float32", dev)
  tir.core.cublas_gemm(a, b, r, false, layout == "NT", 1.0, 0.0)
  tir.core.cuda_sync(0)
  print(("cublas_calls: %s %s %dx%dx%d"):format(dt, layout, m, n, k))
end
