-- gpu_tma_store_wait_spec.lua -- on a real sm_90 GPU (#gpu): persistent wgmma kernels with the
-- TMA-store epilogue and no warp specialization, whose wait for the store's read precedes the next
-- tile's wgmma_store (inject_tma_store, tma_store_wait = "reuse"), equal cuBLASLt exactly (int8 ->
-- int32) and cuBLAS within fp16 rounding (fp16), as the old order (tma_store_wait = "store") does.
-- The simulator's view of the same order: tma_store_wait_spec.
local tir = require("tir")
local tc = require("tir.schedules.tc_gemm")

local dev = tir.device("cuda", 0)
local has_gpu, why = dev:exists()
if has_gpu and dev:info().arch ~= "sm_90" then has_gpu, why = false, "the GPU is " .. dev:info().arch .. ", wgmma needs sm_90" end

describe("#gpu persistent wgmma + TMA-store epilogue without warp specialization (sm_90a)", function()
  if not has_gpu then
    it("is skipped: " .. tostring(why), function() pending("no sm_90 GPU: " .. tostring(why)) end)
    return
  end
  local m = 2048
  for _, c in ipairs({
    {"int8", "int32", {BM = 128, BN = 128, BK = 128, stages = 3, tma = true, persistent = true, epilogue_store = "tma"}},
    {"float16", "float16", {BM = 128, BN = 256, BK = 64, stages = 3, tma = true, persistent = true, epilogue = "D", epilogue_store = "tma"}},
  }) do
    for _, w in ipairs({"reuse", "store"}) do
      it(("%s 2048^3 %dx%dx%d s%d persistent tma_store_wait = %q equals the vendor library"):format(c[1], c[3].BM, c[3].BN, c[3].BK,
         c[3].stages, w), function()
        if c[1] == "int8" then
          local ok, lw = tir.core.cublaslt_available()
          if not ok then return pending("cuBLASLt: " .. tostring(lw)) end
        end
        local f = tc.workload(m, m, m, c[1], c[2], nil, "NT")
        local o = {intrin = "wgmma", tma_store_wait = w}
        for k, v in pairs(c[3]) do o[k] = v end
        local mod = tir.build(tc.schedule(f, o).mod, "cuda -arch=sm_90a")
        local lo, hi = c[1] == "int8" and -128 or -1, c[1] == "int8" and 127 or 1
        local a = tir.nd.random({m, m}, c[1], dev, {seed = 5, low = lo, high = hi})
        local b = tir.nd.random({m, m}, c[1], dev, {seed = 6, low = lo, high = hi})
        local d, ref = tir.nd.empty({m, m}, c[2], dev), tir.nd.empty({m, m}, c[2], dev)
        mod(a, b, d)
        if c[1] == "int8" then tir.core.cublaslt_gemm_int8(a, b, ref) else tir.core.cublas_gemm(a, b, ref, false, true, 1.0, 0.0) end
        tir.core.cuda_sync(0)
        tir.testing.assert_allclose(d, ref, c[1] == "int8" and {rtol = 0, atol = 0} or {rtol = 2e-2, atol = 2e-2 * math.sqrt(m / 64)})
      end)
    end
  end
end)
