-- tma_store_wait_ab.lua -- the TMA-store epilogue's wait for the store's read in a persistent kernel
-- without warp specialization: deferred before the next tile's wgmma_store (inject_tma_store's rule
-- since stop 12, tma_store_wait = "reuse", the default) against right after the store
-- (tma_store_wait = "store", the order before).  Same binary, same process; each kernel checked
-- first (int8 against cuBLASLt exactly, fp16 against cuBLAS within fp16 rounding), then timed.
--   tirlua scripts/gpu/tma_store_wait_ab.lua [M]      (M = N = K, default 4096)
-- Rows: bench "tma_store_wait_ab" (bench/common.lua), ref = the "store" order of the same kernel.
local tir = require("tir")
local core = tir.core
local tc = require("tir.schedules.tc_gemm")
local common = dofile("bench/common.lua")
local dev = common.device("scripts/gpu/tma_store_wait_ab.lua")
if not dev then return end
local m = math.tointeger(tonumber(arg and arg[1] or "")) or 4096
local shape = ("%dx%dx%d"):format(m, m, m)

local CASES = {
  {"int8", "int32", {BM = 128, BN = 128, BK = 128, stages = 3, tma = true, persistent = true, epilogue_store = "tma"}},
  {"float16", "float16", {BM = 128, BN = 256, BK = 64, stages = 3, tma = true, persistent = true, epilogue = "D", epilogue_store = "tma"}},
  {"float16", "float16", {BM = 128, BN = 128, BK = 64, stages = 4, tma = true, persistent = true, epilogue = "D", epilogue_store = "tma"}},
}
for _, c in ipairs(CASES) do
  local dt, out, o = c[1], c[2], c[3]
  local f = tc.workload(m, m, m, dt, out, nil, "NT")
  local mods, t = {}, {}
  for _, w in ipairs({"reuse", "store"}) do
    local opts = {intrin = "wgmma", tma_store_wait = w}
    for k, v in pairs(o) do opts[k] = v end
    mods[w] = tir.build(tc.schedule(f, opts).mod, "cuda -arch=sm_90a")
  end
  local lo, hi = dt == "int8" and -128 or -1, dt == "int8" and 127 or 1
  local a = tir.nd.random({m, m}, dt, dev, {seed = 1, low = lo, high = hi})
  local b = tir.nd.random({m, m}, dt, dev, {seed = 2, low = lo, high = hi})
  local d, ref = tir.nd.empty({m, m}, out, dev), tir.nd.empty({m, m}, out, dev)
  if dt == "int8" then core.cublaslt_gemm_int8(a, b, ref) else core.cublas_gemm(a, b, ref, false, true, 1.0, 0.0) end
  for _, w in ipairs({"reuse", "store"}) do
    mods[w](a, b, d)
    core.cuda_sync(0)
    local ok, err = pcall(tir.testing.assert_allclose, d, ref, dt == "int8" and {rtol = 0, atol = 0} or {rtol = 2e-2, atol = 2e-2 * math.sqrt(m / 64)})
    if not ok then print(("%s %s %s: WRONG: %s"):format(dt, w, shape, tostring(err):match("[^\n]*"))) end
    t[w] = mods[w]:time_evaluator({number = 10, repeat_ = 5, warmup = 3})(a, b, d)
  end
  local name = ("%s_%dx%dx%d_s%d_persistent_tma_store"):format(dt, o.BM, o.BN, o.BK, o.stages)
  print(("%-44s %s: deferred wait %.4f ms, wait after the store %.4f ms -> %.3fx"):format(name, shape, t.reuse * 1e3, t.store * 1e3,
                                                                                          t.store / t.reuse))
  local flops = 2.0 * m * m * m
  common.record{bench = "tma_store_wait_ab", variant = name .. "_deferred", shape = shape, dtype = dt, layout = "NT", ms = t.reuse * 1e3,
                tflops = flops / t.reuse / 1e12, ref = "the same kernel, wait after the store", ref_ms = t.store * 1e3,
                ref_tflops = flops / t.store / 1e12}
end
print("tma_store_wait_ab: done")
