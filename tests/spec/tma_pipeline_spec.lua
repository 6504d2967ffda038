-- tma_pipeline_spec.lua -- inject_tma_pipeline (src/core/transform/inject_tma_pipeline.c) and
-- tc_gemm's tma = true: shared tiles filled by one TMA copy each, N stages of full/empty
-- mbarriers, no __syncthreads in the main loop.  The lowered kernels run on the simulator
-- (TMA copies and mbarrier phases modelled) bit-exactly against the interpreter on the
-- unscheduled workload; planted bugs (a missing wait, a wrong byte count, a wrong arrival
-- count) are caught; malformed inputs are refused with the loop and the copy named.
local tir = require("tir")
local U = require("spec_util")
local T = tir.script
local tc = require("tir.schedules.tc_gemm")

local asan = os.getenv("ASAN_OPTIONS") ~= nil

local function gemm(M, N, K, layout, o)
  local f = tc.workload(M, N, K, "float16", "float32", nil, layout or "NT")
  local opts = {BM = 64, BN = 64, BK = 32, warp_m = 32, warp_n = 32, tma = true, stages = 2}
  for k, v in pairs(o or {}) do opts[k] = v end
  return f, tc.schedule(f, opts)
end

describe("inject_tma_pipeline (tc_gemm tma = true)", function()
  it("runs on the simulator bit-exactly against the interpreter: layouts, stages, more stages than iterations", function()
    local cases = {{128, 128, 128, "NT", 2}, {128, 64, 96, "NN", 3}, {64, 128, 64, "TN", 1}, {64, 64, 64, "TT", 4}}
    if asan then cases = {cases[1], cases[4]} end
    for _, c in ipairs(cases) do
      local f, sch = gemm(c[1], c[2], c[3], c[4], {stages = c[5]})
      local mod = tir.build(sch.mod, "cuda -arch=sm_90a", {compile = false})
      local rep = tir.simulate(mod, tir.testing.random_args(f, 3), {reference = f})
      assert.are.equal(0, rep.n_issues)
      local ctas = (c[1] // 64) * (c[2] // 64)
      assert.are.equal(ctas * 2 * (c[3] // 32), rep.tma_copies) -- one copy per tile and k step
      assert.are.equal(ctas, rep.barriers) -- the one after the mbarrier inits: none in the main loop
    end
  end)

  it("persistent = G: G CTAs walk the tiles in grouped order, re-arming the mbarriers per tile; bit-exact on the simulator", function()
    for _, c in ipairs(asan and {{256, 256, 128, "NT", 3, 2}} or {{256, 256, 128, "NT", 3, 2}, {256, 128, 96, "NN", 2, 2}, {512, 256, 64, "TN", 4, 4}}) do
      local f, sch = gemm(c[1], c[2], c[3], c[4], {stages = c[5], persistent = c[6]})
      local mod = tir.build(sch.mod, "cuda -arch=sm_90a", {compile = false})
      local rep = tir.simulate(mod, tir.testing.random_args(f, 3), {reference = f})
      local tiles = (c[1] // 64) * (c[2] // 64)
      local G = 1
      for g = 1, c[6] do if tiles % g == 0 then G = g end end
      assert.are.equal(0, rep.n_issues)
      assert.are.equal(G, rep.ctas)
      assert.are.equal(2 * tiles, rep.barriers) -- per tile: before the re-init and after it
      assert.are.equal(tiles * 2 * (c[3] // 32), rep.tma_copies)
    end
    U.expect_error(function() gemm(128, 128, 64, "NT", {tma = false, persistent = true}) end, "persistent = true needs tma = true")
    -- a CTA count that cannot walk the tiles evenly is refused (it used to shrink silently: 3 -> 2)
    U.expect_error(function() gemm(256, 256, 128, "NT", {stages = 3, persistent = 3}) end, "ValueError in tc_gemm.schedule",
                   "persistent = 3: the 4 x 4 = 16 output tiles have no persistent grid of 3 CTAs", "counts that work: 1, 2, 4, 8, 16")
  end)

  it("feeds wgmma (tc_gemm intrin = \"wgmma\", tma = true): 128-lane leader loop, swizzled boxes, bit-exact on the simulator", function()
    local cases = {{128, 128, 128, 64, 128, 64, 2}, {128, 256, 192, 128, 128, 64, 3}, {256, 128, 64, 128, 64, 32, 4}}
    if asan then cases = {cases[1]} end
    for _, c in ipairs(cases) do
      local f = tc.workload(c[1], c[2], c[3], "float16", "float32", nil, "NT")
      local sch = tc.schedule(f, {intrin = "wgmma", BM = c[4], BN = c[5], BK = c[6], stages = c[7], tma = true})
      local mod = tir.build(sch.mod, "cuda -arch=sm_90a", {compile = false})
      local rep = tir.simulate(mod, tir.testing.random_args(f, 3), {reference = f})
      assert.are.equal(0, rep.n_issues)
      assert.are.equal(rep.ctas, rep.barriers)
      local text = tostring(mod:lowered())
      assert.is_truthy(text:find(('"tma_descriptor", A_1, "float16", %d, 2'):format(c[6] * 2), 1, true)) -- the tiles' swizzle
    end
  end)

  it("swizzles the mma.sync path's tiles whose rows are 32 / 64 / 128 bytes (NT: both), bit-exact on the simulator", function()
    local f, sch = gemm(128, 128, 64, "NT", {stages = 2})
    local mod = tir.build(sch.mod, "cuda -arch=sm_90a", {compile = false})
    local text = tostring(mod:lowered())
    for _, b in ipairs({"A", "B"}) do
      assert.is_truthy(text:find(('"tma_descriptor", %s_1, "float16", 64, 2,'):format(b), 1, true)) -- rows of 32 fp16: 64B
    end
    assert.is_truthy(text:find('swizzle = "64B"', 1, true)) -- the tiles' Buffer.swizzle
    assert.are.equal(0, tir.simulate(mod, tir.testing.random_args(f, 2), {reference = f}).n_issues)
    -- swizzle = false: dense TMA tiles (mode 0 in the tensor maps), still bit-exact
    local g, dense = gemm(128, 128, 64, "NT", {stages = 2, swizzle = false})
    local dm = tir.build(dense.mod, "cuda -arch=sm_90a", {compile = false})
    assert.is_truthy(tostring(dm:lowered()):find('"tma_descriptor", A_1, "float16", 0, 2,', 1, true))
    assert.are.equal(0, tir.simulate(dm, tir.testing.random_args(g, 2), {reference = g}).n_issues)
  end)

  it("lowers to one TMA copy per tile by thread 0, full/empty waits and no __syncthreads in the loop", function()
    local f, sch = gemm(128, 128, 128, "NT", {stages = 3})
    local low = tir.lower(sch.mod)
    local text = tostring(low)
    assert.are.equal(2, U.count_calls(text, "ptx_mbarrier_init"))
    assert.are.equal(1, U.count_calls(text, "tvm_storage_sync"))
    assert.are.equal(4, U.count_calls(text, "ptx_tma_load")) -- prologue and refill, A and B
    assert.are.equal(2, U.count_calls(text, "ptx_mbarrier_wait")) -- full (all threads), empty (the leader)
    assert.is_truthy(text:find('T.call("handle", "tma_descriptor", A_1, "float16", 64, 2, 128, 128, 64, 32)', 1, true))
    local src = tir.build(sch.mod, "cuda -arch=sm_90a", {compile = false}):get_source("cuda")
    local loop = src:sub(src:find("for (int k_0 = 0", 1, true), -1)
    assert.is_nil(loop:find("__syncthreads", 1, true))
    -- the swizzle-aware TMA copy gets the tile's logical address (its origin); the stage index
    -- (k_0 % 3) is a register the loop advances (strength_reduce_modulo)
    assert.is_truthy(src:find("tir_tma_load_2d((A_shared + (k_0_stage[0] * 2048)), (&tir_tmap_0)", 1, true), src)
    assert.is_truthy(src:find("k_0_stage[0] = ((k_0_stage[0] == 2) ? 0 : (k_0_stage[0] + 1));", 1, true))
    assert.is_truthy(src:find("const __grid_constant__ tir_CUtensorMap tir_tmap_1", 1, true))
  end)

  it("catches planted bugs: no full wait, a wrong expect_tx count, no proxy fence, a wrong arrival count", function()
    local f, sch = gemm(64, 64, 96, "NT", {stages = 2})
    local low = tir.lower(sch.mod)
    local args = function() return tir.testing.random_args(f, 1) end
    U.expect_error(function() tir.simulate(U.drop_call(low, "ptx_mbarrier_wait", 1), args()) end,
      "the destination of a TMA copy issued by thread (0, 0, 0)", "before the mbarrier phase the copy completes on has completed")
    local g = U.rewrite_func(low, function(s)
      if U.is_call(s, "ptx_mbarrier_arrive_expect_tx") then
        return tir.core.make("Evaluate", {value = tir.call("void", "ptx_mbarrier_arrive_expect_tx", s.value.args[1], 4096)})
      end
    end)
    U.expect_error(function() tir.simulate(g, args()) end, "wrong expect_tx byte count on tma_full[0] (phase 0)",
      "bring 4096 bytes more than ptx_mbarrier_arrive_expect_tx announced (4096)")
    -- the refill's proxy fence: the TMA would overwrite what ldmatrix read through the generic proxy
    U.expect_error(function() tir.simulate(U.drop_call(low, "ptx_fence_proxy_async", 2), args()) end,
      "a TMA copy by thread (0, 0, 0) [warp 0, lane 0] uses A_shared[", "accessed through the generic proxy with no fence.proxy.async since")
    local first = true
    local h = U.rewrite_func(low, function(s)
      if U.is_call(s, "ptx_mbarrier_init") and first then
        first = false
        return tir.core.make("Evaluate", {value = tir.call("void", "ptx_mbarrier_init", s.value.args[1], 2)})
      end
    end)
    U.expect_error(function() tir.simulate(h, args()) end, "deadlock: every thread of the CTA waits on phase 0 of tma_full[0]",
      "still needs 1 of its 2 arrivals")
  end)

  it("refuses what it cannot lower, naming the loop and the copy", function()
    U.expect_error(function() gemm(128, 128, 128, "NT", {pad = true}) end, "tma = true and pad = true")
    U.expect_error(function() gemm(128, 128, 128, "NT", {intrin = "wmma"}) end, "tma = true runs with intrin = \"mma\"")
    -- a copy whose loops are bound to threads (the cooperative copy) is not one box copy
    local f = tc.workload(128, 128, 128, "float16", "float32", nil, "NT")
    local sch = tc.schedule(f, {BM = 64, BN = 64, BK = 32, warp_m = 32, warp_n = 32, stages = 2, group_m = 1})
    local ko = select(5, sch:get_loops(sch:get_block("A_shared")))
    sch:unannotate(ko, "software_pipeline_stage"); sch:unannotate(ko, "software_pipeline_order")
    sch:unannotate(ko, "software_pipeline_async_stages"); sch:unannotate(ko, "software_pipeline_early_wait")
    sch:annotate(ko, "tma_pipeline_stages", 2)
    sch:annotate(sch:get_block("A_shared"), "tma_copy", 1)
    U.expect_error(function() tir.lower(sch.mod) end, "LoweringError in inject_tma_pipeline", "the TMA copy's loops must be serial")
    -- the annotation without marked copies
    local g = tc.workload(64, 64, 64, "float16", "float32", nil, "NT")
    local s2 = tc.schedule(g, {BM = 64, BN = 64, BK = 32, warp_m = 32, warp_n = 32, stages = 1})
    local k2 = select(5, s2:get_loops(s2:get_block("A_shared")))
    s2:annotate(k2, "tma_pipeline_stages", 2)
    U.expect_error(function() tir.lower(s2.mod) end, "does not start with copies marked tma_copy")
    U.expect_error(function() s2:annotate(k2, "tma_pipeline_stage", 2) end, "did you mean 'tma_pipeline_stages'")
  end)
end)

describe("#gpu TMA pipelines on the device", function()
  local dev = U.gpu_or_pending(it, function(w) pending(w) end)
  if not dev then return end
  it("tc_gemm tma = true (and persistent) matches cuBLAS (fp16 out) at 1024^3 and 4096^3, stages 2-4, layouts NT / NN / TN", function()
    -- 4096^3 runs two CTAs per SM (where a missing proxy fence showed as rare wrong tiles)
    for _, c in ipairs({{1024, "NT", 3}, {1024, "NN", 2}, {1024, "TN", 4}, {4096, "NT", 4}, {4096, "NN", 3}, {4096, "NN", 4, true}}) do
      local n, lay, st = c[1], c[2], c[3]
      local ta, tb = lay:sub(1, 1) == "T", lay:sub(2, 2) == "T"
      local f = tc.workload(n, n, n, "float16", "float16", nil, lay)
      local mod = tir.build(tc.schedule(f, {tma = true, stages = st, epilogue = "D", persistent = c[4]}).mod, "cuda -arch=sm_90a")
      local a = tir.nd.random({n, n}, "float16", dev, {seed = n + st})
      local b = tir.nd.random({n, n}, "float16", dev, {seed = n + 7})
      local out = tir.nd.empty({n, n}, "float16", dev)
      local ref = tir.nd.empty({n, n}, "float16", dev)
      mod(a, b, out)
      tir.core.cublas_gemm(a, b, ref, ta, tb, 1.0, 0.0)
      tir.testing.assert_allclose(out, ref, {rtol = 2e-2, atol = 2e-2 * math.sqrt(n / 64)})
    end
  end)

  it("wgmma + TMA (128x256x64, 4 stages) matches cuBLAS at 4096^3 and 2048x4096x1024, layout NT", function()
    for _, s3 in ipairs({{4096, 4096, 4096}, {2048, 4096, 1024}}) do
      local m, n, k = s3[1], s3[2], s3[3]
      local f = tc.workload(m, n, k, "float16", "float16", nil, "NT")
      local mod = tir.build(tc.schedule(f, {intrin = "wgmma", BM = 128, BN = 256, BK = 64, stages = 4, tma = true, epilogue = "D"}).mod,
        "cuda -arch=sm_90a")
      local a = tir.nd.random({m, k}, "float16", dev, {seed = 11})
      local b = tir.nd.random({n, k}, "float16", dev, {seed = 12})
      local out, ref = tir.nd.empty({m, n}, "float16", dev), tir.nd.empty({m, n}, "float16", dev)
      mod(a, b, out)
      tir.core.cublas_gemm(a, b, ref, false, true, 1.0, 0.0)
      tir.testing.assert_allclose(out, ref, {rtol = 2e-2, atol = 2e-2 * math.sqrt(k / 64)})
    end
  end)
end)
