-- gpu_wgmma_epilogue_spec.lua -- the wgmma GEMM with a fused bias + relu epilogue on a real sm_90 GPU
-- (#gpu): D = cast(out, max(A B^T + bias, 0)), the staged epilogue stored by one TMA store per
-- warpgroup tile (epilogue_store = "tma") or by direct stores, warp-specialized / persistent,
-- against a float64 reference (OpenBLAS dgemm of the same fp16/bf16 operands, bias and relu in
-- float64) at 512 x 768 x 512, and against cuBLASLt's CUBLASLT_EPILOGUE_RELU_BIAS at 4096^3.
local tir = require("tir")
local tc = require("tir.schedules.tc_gemm")

local dev = tir.device("cuda", 0)
local has_gpu, why = dev:exists()
if has_gpu and dev:info().arch ~= "sm_90" then has_gpu, why = false, "the GPU is " .. dev:info().arch .. ", wgmma needs sm_90" end

local workload = require("tir.schedules.tc_gemm_wgmma_epilogue").workload -- D = cast(relu(A B^T + bias))

local function build(m, n, k, dt, o)
  local opts = {intrin = "wgmma", epilogue = "D"}
  for key, v in pairs(o) do opts[key] = v end
  return tir.build(tc.schedule(workload(m, n, k, dt), opts).mod, "cuda -arch=sm_90a")
end

local function operands(m, n, k, dt)
  return tir.nd.random({m, k}, dt, dev, {seed = m + 7}), tir.nd.random({n, k}, dt, dev, {seed = n + 8}),
         tir.nd.random({n}, dt, dev, {seed = 9})
end

-- Runs mod(A, B, bias, D) on seeded operands and requires every output within 2 ulp of dt (relative
-- to 1 + |v|) of act(A B^T + bias) in float64 (OpenBLAS dgemm of the same operands).
local function assert_vs_float64(mod, m, n, k, dt, act)
  local a, b, bias = operands(m, n, k, dt)
  local d = tir.nd.empty({m, n}, dt, dev)
  mod(a, b, bias, d)
  tir.core.cuda_sync(0)
  local cpu = tir.nd.cpu()
  local ah, bh, biash, dh = a:to(cpu), b:to(cpu), bias:to(cpu), d:to(cpu)
  local ref = tir.nd.empty({m, n}, "float64", cpu)
  tir.core.ref_gemm(ah, bh, ref, false, true)
  local tol = 2 * (dt == "float16" and 2 ^ -10 or 2 ^ -7)
  local bad, worst = 0, 0
  for i = 0, m - 1 do
    for j = 0, n - 1 do
      local v = act(ref:get({i, j}) + biash:get({j}))
      local e = math.abs(dh:get({i, j}) - v) / (math.abs(v) + 1)
      if e > worst then worst = e end
      if e > tol then bad = bad + 1 end
    end
  end
  assert.are.equal(0, bad, ("%d outputs off by more than 2 ulp of %s (worst relative %.3g)"):format(bad, dt, worst))
end

describe("#gpu wgmma GEMM + bias + relu (sm_90a)", function()
  if not has_gpu then
    it("is skipped: " .. tostring(why), function() pending("no sm_90 GPU: " .. tostring(why)) end)
    return
  end
  local cases = {
    {"float16", {BM = 128, BN = 128, BK = 64, stages = 3, tma = true, warp_specialize = true, persistent = true, epilogue_store = "tma"}},
    {"bfloat16", {BM = 128, BN = 128, BK = 64, stages = 3, tma = true, warp_specialize = true, persistent = true, epilogue_store = "tma"}},
    {"float16", {BM = 128, BN = 256, BK = 64, stages = 4, tma = true, epilogue_store = "tma"}},
    {"float16", {BM = 128, BN = 128, BK = 64, stages = 4, tma = true, warp_specialize = true, persistent = true}},
    {"bfloat16", {BM = 128, BN = 256, BK = 64, stages = 3, tma = true, epilogue_store = "tma"}},
  }
  for _, c in ipairs(cases) do
    local o = c[2]
    it(("%s 512x768x512 %dx%dx%d s%d%s%s%s equals a float64 reference within rounding"):format(c[1], o.BM, o.BN, o.BK, o.stages,
       o.warp_specialize and " ws" or "", o.persistent and " persistent" or "", o.epilogue_store == "tma" and " tma-store" or " direct"),
       function()
      local m, n, k = 512, 768, 512
      local mod = build(m, n, k, c[1], o)
      -- one TMA store per warpgroup tile, or none with direct stores
      assert.are.equal(o.epilogue_store == "tma", mod:get_source("cuda"):find("\n%s*tir_tma_store_2d%(") ~= nil)
      assert_vs_float64(mod, m, n, k, c[1], function(v) return v < 0 and 0 or v end)
    end)
  end

  it("float16 gelu (tanh form) 512x768x512 128x256x64 s4 tma-store equals a float64 reference within rounding", function()
    local m, n, k = 512, 768, 512
    local o = {intrin = "wgmma", epilogue = "D", BM = 128, BN = 256, BK = 64, stages = 4, tma = true, epilogue_store = "tma"}
    local mod = tir.build(tc.schedule(workload(m, n, k, "float16", "gelu"), o).mod, "cuda -arch=sm_90a")
    local function tanh(x)
      if math.abs(x) > 20 then return x > 0 and 1 or -1 end
      local e = math.exp(2 * x)
      return (e - 1) / (e + 1)
    end
    assert_vs_float64(mod, m, n, k, "float16", function(v) return 0.5 * v * (1 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))) end)
  end)

  it("tc_gemm.workload's bfloat16 D = cast(A B^T) (staged epilogue, TMA store) 1024^3 matches cuBLAS's float32 result within bf16 rounding", function()
    local m = 1024
    local f = tc.workload(m, m, m, "bfloat16", "bfloat16", nil, "NT")
    local mod = tir.build(tc.schedule(f, {intrin = "wgmma", BM = 128, BN = 256, BK = 64, stages = 4, tma = true, epilogue = "D",
                                          epilogue_store = "tma"}).mod, "cuda -arch=sm_90a")
    local a, b = tir.nd.random({m, m}, "bfloat16", dev, {seed = 21}), tir.nd.random({m, m}, "bfloat16", dev, {seed = 22})
    local d, ref = tir.nd.empty({m, m}, "bfloat16", dev), tir.nd.empty({m, m}, "float32", dev)
    mod(a, b, d)
    tir.core.cublas_gemm(a, b, ref, false, true, 1.0, 0.0)
    tir.core.cuda_sync(0)
    tir.testing.assert_allclose(d, ref, {rtol = 2 ^ -7, atol = 2e-2 * math.sqrt(m / 64)})
  end)

  it("float16 4096^3 with the pick's configuration (no tile options) matches cuBLASLt's RELU_BIAS epilogue", function()
    if not tir.core.cublaslt_available() then pending("no cuBLASLt"); return end
    local m, n, k = 4096, 4096, 4096
    local mod = build(m, n, k, "float16", {})
    local a, b, bias = operands(m, n, k, "float16")
    local d, ref = tir.nd.empty({m, n}, "float16", dev), tir.nd.empty({m, n}, "float16", dev)
    mod(a, b, bias, d)
    tir.core.cublaslt_gemm_epilogue(a, b, bias, ref, true)
    tir.core.cuda_sync(0)
    tir.testing.assert_allclose(d, ref, {rtol = 2e-2, atol = 2e-2 * math.sqrt(k / 64)})
  end)
end)
