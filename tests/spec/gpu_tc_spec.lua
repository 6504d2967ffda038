-- gpu_tc_spec.lua -- tensor-core GEMMs on a real GPU (#gpu): the mma.sync and WMMA schedules
-- (tir.schedules.tc_gemm), pipelined or not, against cuBLAS (fp16 in/out, fp32 accumulate) at
-- a real size, odd sizes the tiles do not divide (padded stages, predicated cp.async), M = 1,
-- an LLM shape, and the SIMT GEMM (fp32) against float64.  Without a GPU: pending.
local tir = require("tir")
local tc = require("tir.schedules.tc_gemm")
local simt = require("tir.schedules.simt_gemm")

local dev = tir.device("cuda", 0)
local has_gpu, why = dev:exists()

-- the tile configuration bench/gemm_fp16.lua uses for a shape
local function config(intrin, stages, m)
  local o = {intrin = intrin, stages = stages, epilogue = "D"}
  if m < 128 then o.BM = m >= 64 and 64 or (m >= 32 and 32 or 16); o.warp_m = o.BM; o.BN, o.warp_n = 128, 32 end
  return o
end

local function check(m, n, k, intrin, stages)
  local o = config(intrin, stages, m)
  local BM, BN, BK = o.BM or 128, o.BN or 128, o.BK or 32
  local divides = m % BM == 0 and n % BN == 0 and k % BK == 0
  local f = tc.workload(m, n, k, "float16", "float16", not divides and {BM, BN, BK} or nil)
  local mod = tir.build(tc.schedule(f, o).mod, "cuda")
  local a = tir.nd.random({m, k}, "float16", dev, {seed = m + 1})
  local b = tir.nd.random({k, n}, "float16", dev, {seed = n + 2})
  local c = tir.nd.empty({m, n}, "float16", dev)
  local ref = tir.nd.empty({m, n}, "float16", dev)
  mod(a, b, c)
  tir.core.cublas_gemm(a, b, ref, false, false, 1.0, 0.0)
  return tir.testing.assert_allclose(c, ref, {rtol = 2e-2, atol = 2e-2 * math.sqrt(k / 64)})
end

describe("#gpu tensor-core GEMM", function()
  if not has_gpu then
    it("is skipped: " .. tostring(why), function() pending("no GPU: " .. tostring(why)) end)
    return
  end
  local cases = {{1024, 1024, 1024}, {1000, 1000, 1000}, {1, 4096, 4096}, {16, 11008, 4096}, {100, 130, 70}, {4096, 4096, 4096}}
  for _, v in ipairs({{"mma", 1}, {"mma", 3}, {"wmma", 1}, {"wmma", 3}}) do
    for _, s in ipairs(cases) do
      it(("%s, %d stage(s), %dx%dx%d matches cuBLAS"):format(v[1], v[2], s[1], s[2], s[3]), function()
        check(s[1], s[2], s[3], v[1], v[2])
      end)
    end
  end
  it("the SIMT GEMM (fp32) matches float64 at 1000^3 (predicated tiles)", function()
    local A = tir.te.placeholder({1000, 1000}, "float32", "A")
    local B = tir.te.placeholder({1000, 1000}, "float32", "B")
    local k = tir.te.reduce_axis({0, 1000}, "k")
    local C = tir.te.compute({1000, 1000}, function(i, j) return tir.te.sum(A[{i, k}] * B[{k, j}], {k}) end, "C")
    local mod = tir.build(simt.schedule(tir.te.create_prim_func({A, B, C})).mod, "cuda")
    local a = tir.nd.random({1000, 1000}, "float32", dev, {seed = 5})
    local b = tir.nd.random({1000, 1000}, "float32", dev, {seed = 6})
    local c = tir.nd.empty({1000, 1000}, "float32", dev)
    mod(a, b, c)
    tir.testing.assert_allclose(c, tir.testing.ref_matmul(a, b), {rtol = 1e-4, atol = 2e-6 * math.sqrt(1000)})
  end)
end)
