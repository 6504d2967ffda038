-- gpu_tc_spec.lua -- tensor-core GEMMs on a real GPU (#gpu): the mma.sync and WMMA schedules
-- (tir.schedules.tc_gemm), pipelined or not, against cuBLAS (fp16 in/out, fp32 accumulate) at
-- a real size, odd sizes the tiles do not divide (padded stages, predicated cp.async), M = 1,
-- an LLM shape, and the SIMT GEMM (fp32) against float64.  Without a GPU: pending.
local tir = require("tir")
local tc = require("tir.schedules.tc_gemm")
local simt = require("tir.schedules.simt_gemm")
local U = require("spec_util")

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
  return U.check_vs_cublas(tir.build(tc.schedule(f, o).mod, "cuda"), m, n, k, dev)
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
  for _, v in ipairs({{"mma", 3}, {"wmma", 1}}) do
    for _, lay in ipairs({"NT", "TN", "TT"}) do
      it(("%s, layout %s (operands stored transposed) matches cuBLAS at 512x384x256"):format(v[1], lay), function()
        local m, n, k = 512, 384, 256
        local ta, tb = lay:sub(1, 1) == "T", lay:sub(2, 2) == "T"
        local f = tc.workload(m, n, k, "float16", "float16", nil, lay)
        local mod = tir.build(tc.schedule(f, {intrin = v[1], stages = v[2], epilogue = "D"}).mod, "cuda")
        local a = tir.nd.random(ta and {k, m} or {m, k}, "float16", dev, {seed = 3})
        local b = tir.nd.random(tb and {n, k} or {k, n}, "float16", dev, {seed = 4})
        local c = tir.nd.empty({m, n}, "float16", dev)
        local ref = tir.nd.empty({m, n}, "float16", dev)
        mod(a, b, c)
        tir.core.cublas_gemm(a, b, ref, ta, tb, 1.0, 0.0)
        tir.testing.assert_allclose(c, ref, {rtol = 2e-2, atol = 4e-2})
      end)
    end
  end
  -- issue 12: CUTLASS's main loop (frag_prefetch) on the tiles it is for, split_k 3 on K padded
  -- to whole slices, and auto_tensorize's picks (256x128 at 4096^3; 128x128x64 in 3 slices at M = 128, K padded by pad_einsum)
  for _, c in ipairs({{4096, 4096, 4096, {BM = 256, BN = 128, BK = 32, stages = 3, frag_prefetch = true}},
                      {4096, 4096, 4096, {BK = 64, stages = 3, frag_prefetch = true}},
                      {1000, 1000, 1000, {BN = 256, BK = 32, stages = 4, frag_prefetch = true}},
                      {128, 11008, 4096, {BK = 64, stages = 3, split_k = 3, frag_prefetch = true}},
                      -- stop 12: the copies between the k steps' fragment loads (copy_order), the stages unrolled
                      {4096, 4096, 4096, {BM = 256, BN = 128, BK = 64, stages = 3, frag_prefetch = true, copy_order = "spread"}},
                      {1024, 1024, 1152, {BM = 256, BN = 128, BK = 64, stages = 3, frag_prefetch = true, unroll_stages = true}}}) do
    it(("frag_prefetch %dx%dx%d %s matches cuBLAS"):format(c[1], c[2], c[3], require("tir.json").encode(c[4])), function()
      local m, n, k, o = c[1], c[2], c[3], U.merge({intrin = "mma", epilogue = "D"}, c[4])
      local BM, BN, BK = o.BM or 128, o.BN or 128, o.BK * (o.split_k or 1)
      local pad = (m % BM ~= 0 or n % BN ~= 0 or k % BK ~= 0) and {BM, BN, BK} or nil
      if pad then o.epilogue = nil end
      U.check_vs_cublas(tir.build(tc.schedule(tc.workload(m, n, k, "float16", "float16", pad), o).mod, "cuda"), m, n, k, dev)
    end)
  end
  for _, s in ipairs({{4096, 4096, 4096}, {128, 11008, 4096}}) do
    it(("auto_tensorize's pick at %dx%dx%d matches cuBLAS"):format(s[1], s[2], s[3]), function()
      local sch = tc.auto_tensorize(tc.workload(s[1], s[2], s[3], "float16", "float16"), "mma.m16n8k16", nil, {epilogue = "D", tuned = false})
      U.check_vs_cublas(tir.build(sch.mod, "cuda"), s[1], s[2], s[3], dev)
    end)
  end

  it("auto_tensorize: a batched matmul with B transposed matches the interpreter", function()
    local te = tir.te
    local A = te.placeholder({3, 128, 64}, "float16", "A")
    local B = te.placeholder({3, 96, 64}, "float16", "B")
    local k = te.reduce_axis({0, 64}, "k")
    local C = te.compute({3, 128, 96}, function(bb, i, j)
      return te.sum(te.cast("float32", A[{bb, i, k}]) * te.cast("float32", B[{bb, j, k}]), {k})
    end, "bmm")
    local f = te.create_prim_func({A, B, C})
    for _, ins in ipairs({"mma.m16n8k16", "wmma.m16n16k16"}) do
      local mod = tir.build(tc.auto_tensorize(f, ins, "bmm").mod, "cuda")
      local args = tir.testing.random_args(f, 9)
      local want = tir.testing.copy_args(args)
      tir.interpret(f, want)
      local da, db = args[1]:to(dev), args[2]:to(dev)
      local dc = tir.nd.empty({3, 128, 96}, "float32", dev)
      mod(da, db, dc)
      tir.testing.assert_allclose(dc, want[3], {rtol = 1e-3, atol = 1e-3})
    end
  end)
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
