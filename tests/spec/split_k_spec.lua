-- split_k_spec.lua -- tc_gemm's split_k option (lib/tir/schedules/tc_gemm_split_k.lua): the k loop
-- split and rfactor'ed into a block of partial sums over blockIdx.z plus a second kernel adding
-- them (with the fp16 cast or the padded workload's D).  Every schedule is checked through the
-- interpreter before/after on random inputs (fp16 within rounding: the slices add in another
-- order; int8 exactly) and its lowered kernels on the warp-accurate simulator against the
-- interpreter of the scheduled function, bit for bit.  Odd shapes go through the padded
-- workload.  The #gpu cases compare with cuBLAS at the small-M LLM shapes.
local tir = require("tir")
local U = require("spec_util")
local tc = require("tir.schedules.tc_gemm")

-- small-M tiles (what bench/gemm_fp16.lua and the tuner use for M <= 64); o overrides them
local SMALL = {BM = 16, BN = 64, BK = 32, warp_m = 16, warp_n = 32, stages = 2}
local function opts(o) return U.merge(SMALL, o) end

local int_args = U.full_range_args

-- the kernels of sch on the simulator against the interpreter of sch.mod, exactly (f: the
-- workload, whose parameters sch.mod keeps)
local function sim(f, sch, args) return (U.sim_scheduled(sch, args or tir.testing.random_args(f, 3))) end
local kernels = U.kernel_count

describe("tc_gemm split_k", function()
  it("fp16 -> fp16: rfactor'ed partial sums on blockIdx.z, then one kernel summing and casting (interpreter, simulator)", function()
    for _, S in ipairs({2, 4}) do
      local f = tc.workload(32, 128, 256, "float16", "float16")
      local sch = tc.schedule(f, opts({split_k = S, epilogue = "D"}))
      -- visible in the IR and the trace: the rf block, its workspace, the slices on blockIdx.z
      local text = tostring(sch.mod)
      assert.truthy(text:find('T.block("C_rf_update_o"', 1, true))
      assert.truthy(text:find(("C_rf = T.alloc_buffer({%d, 32, 128}, \"float32\")"):format(S), 1, true))
      assert.truthy(sch:trace():find("rfactor", 1, true))
      U.assert_equiv(f, sch.mod, {rtol = 1e-3, atol = 1e-3})
      local mod = sim(f, sch)
      local src = mod:get_source("cuda")
      assert.are.equal(2, kernels(mod))
      assert.truthy(src:find("blockIdx.z", 1, true))
      assert.truthy(src:find("__float2half_rn", 1, true))
    end
  end)

  it("the summing kernel: VEC adjacent outputs a thread (16-byte loads), PER_THREAD groups, ks unrolled; a tail is predicated", function()
    local sk = require("tir.schedules.tc_gemm_split_k")
    assert.are.same({2, 4}, {sk.PER_THREAD, sk.VEC})
    -- before: 4 scalar outputs a thread 256 apart (ncu on the H200: 6.66 us at 128 x 11008, S = 3,
    -- latency-bound); now 32 x 128 = 4096 outputs: 2 blocks of 256 threads x 2 groups x 4 columns,
    -- each thread's 2 x S loads 16 bytes wide at 4 * threadIdx.x (+ 1024 for the second group)
    local f = tc.workload(32, 128, 256, "float16", "float16")
    local sch = tc.schedule(f, opts({split_k = 2, epilogue = "D"}))
    local src = tir.build(sch.mod, "cuda -arch=sm_80", {compile = false}):get_source("cuda")
    local k1 = src:match("main_kernel1.*$")
    assert.is_nil(k1:find("for (", 1, true))
    local n = 0
    for _ in k1:gmatch("%*%(uint4%*%)%(ld%d+_ %+ 0%) = %*%(uint4%*%)%(C_rf") do n = n + 1 end
    assert.are.equal(2 * 2, n, k1)
    assert.truthy(k1:find("(((int)blockIdx.x) * 2048) + (((int)threadIdx.x) * 4)", 1, true), k1)
    assert.truthy(k1:find("__align__(16) float C[4];", 1, true), k1) -- the register sums, read as one vector
    U.assert_equiv(f, sch.mod, {rtol = 1e-3, atol = 1e-3, trials = 1})
    sim(f, sch)
    -- 16 x 48 outputs: 192 groups of 4 columns < 256 threads, so one group a thread and a predicated
    -- block; the result is the same (interpreter and simulator)
    local g = tc.workload(16, 48, 128, "float16", "float16")
    local sch2 = tc.schedule(g, opts({split_k = 2, BN = 16, warp_n = 16, epilogue = "D"}))
    local k2 = tir.build(sch2.mod, "cuda -arch=sm_80", {compile = false}):get_source("cuda"):match("main_kernel1.*$")
    assert.truthy(k2:find("if (", 1, true))
    U.assert_equiv(g, sch2.mod, {rtol = 1e-3, atol = 1e-3})
    sim(g, sch2)
  end)

  it("fp16 and bf16 with an fp32 output (no epilogue): the second kernel writes C", function()
    for _, dt in ipairs({"float16", "bfloat16"}) do
      local f = tc.workload(16, 64, 128, dt)
      local sch = tc.schedule(f, opts({split_k = 2}))
      U.assert_equiv(f, sch.mod, {rtol = 1e-5, atol = 1e-5})
      assert.are.equal(2, kernels(sim(f, sch)))
    end
  end)

  it("int8 and u8 x s8 -> int32: partial sums in int32, exact (full-range inputs, interpreter and simulator)", function()
    for _, dt in ipairs({"int8", {"uint8", "int8"}}) do
      local f = tc.workload(32, 64, 512, dt)
      local sch = tc.schedule(f, opts({split_k = 4, BK = 64}))
      assert.truthy(tostring(sch.mod):find('C_rf = T.alloc_buffer({4, 32, 64}, "int32")', 1, true))
      local args = int_args(f, 1)
      local r1 = U.run(f, 1, args)
      local r2 = U.run(sch.mod, 1, args)
      assert.are.same(r1[3]:to_table(), r2[3]:to_table())
      sim(f, sch, int_args(f, 2))
    end
  end)

  it("odd shapes (M = 1, 5, 33; N and K not multiples of the tiles) run on the padded workload", function()
    for _, s in ipairs({{1, 64, 128}, {5, 100, 200}, {33, 72, 96}}) do
      local m, n, k = s[1], s[2], s[3]
      local S = 2
      local f = tc.workload(m, n, k, "float16", "float16", {16, 64, 32 * S})
      local sch = tc.schedule(f, opts({split_k = S}))
      U.assert_equiv(f, sch.mod, {rtol = 1e-3, atol = 1e-3, trials = 1})
      sim(f, sch)
    end
    local f = tc.workload(5, 100, 200, "int8", nil, {16, 64, 128})
    local sch = tc.schedule(f, opts({split_k = 2, BK = 64}))
    local args = int_args(f, 4)
    assert.are.same(U.run(f, 1, args)[3]:to_table(), U.run(sch.mod, 1, args)[3]:to_table())
    sim(f, sch, int_args(f, 5))
  end)

  it("with wmma, a pipeline and 4 warps (BM = 32, warp 16 x 32)", function()
    local f = tc.workload(32, 64, 256, "float16", "float16")
    for _, intrin in ipairs({"mma", "wmma"}) do
      local sch = tc.schedule(f, opts({intrin = intrin, BM = 32, split_k = 2, stages = 3, BK = 32, epilogue = "D"}))
      U.assert_equiv(f, sch.mod, {rtol = 1e-3, atol = 1e-3, trials = 1})
      sim(f, sch)
    end
  end)

  it("auto_tensorize's own small-M pick: M x 128 tiles, BK 64, split-K up to 2 CTAs per SM", function()
    -- M = 16: tc_gemm.split_k_for's 3 slices too (K padded to 4224; H200 stop 12: 1.020x cuBLAS vs 0.968x for 4)
    local _, o = tc.auto_tensorize(tc.workload(16, 11008, 4096, "float16", "float16"), "mma.m16n8k16", nil, {sm_count = 132})
    assert.are.same({16, 128, 16, 32, 64, 3, 3, 258}, {o.BM, o.BN, o.warp_m, o.warp_n, o.BK, o.stages, o.split_k, o.ctas})
    assert.is_true(o.frag_prefetch) -- CUTLASS's main loop (H200 stop 12: 0.992x vs 0.974x without)
    local _, o2 = tc.auto_tensorize(tc.workload(64, 11008, 4096, "float16", "float16"), "mma.m16n8k16", nil, {sm_count = 132})
    assert.is_nil(o2.split_k) -- M = 64: not memory-bound enough to split (measured at M = 128)
    -- M = 128 (issue 12, measured on the H200): 128 x 128 x 64 tiles of 4 warps of 64 x 64, 3 stages,
    -- tc_gemm.split_k_for's 3 slices (K = 4096 padded to 4224: the CUDA of the padded workload's)
    local _, o128 = tc.auto_tensorize(tc.workload(128, 11008, 4096, "float16", "float16"), "mma.m16n8k16", nil, {sm_count = 132, tuned = false})
    assert.are.same({128, 128, 64, 64, 64, 3, 3, 258}, {o128.BM, o128.BN, o128.warp_m, o128.warp_n, o128.BK, o128.stages, o128.split_k, o128.ctas})
    assert.is_true(o128.frag_prefetch)
    assert.is_nil(o128.split_k_mode) -- the parallel mode: atomic sums measured slower (tc_gemm.SMALL_M_ATOMIC)
    -- a pipeline of the caller's: no frag_prefetch of ours
    local _, o16s = tc.auto_tensorize(tc.workload(16, 11008, 4096, "float16", "float16"), "mma.m16n8k16", nil, {sm_count = 132, stages = 2})
    assert.is_falsy(o16s.frag_prefetch)
    -- split_k_for: the busiest SM's k steps, ceil(tiles * S / SMs) x (ceil(K / (S * BK)) + SLICE_COST), least
    -- at S = 3 for 86 tiles (2 x 24; none: 66, S = 2: 2 x 34, S = 4: 3 x 18, S = 6: 4 x 13)
    assert.are.equal(3, tc.split_k_for(86, 4096, 64, 132))
    assert.are.equal(4, tc.split_k_for(32, 4096, 64, 132))   -- 128 x 4096: 1 x 18 (S = 8: 2 x 10)
    assert.are.equal(1, tc.split_k_for(1024, 4096, 64, 132)) -- 8 x 64 (S = 8: 63 x 10)
    U.expect_error(function() tc.split_k_for(0, 4096, 64, 132) end, "tc_gemm.split_k_for", "tiles must be a positive integer")
    -- given tiles are the caller's: no pick of ours is added to them
    local _, o128b = tc.auto_tensorize(tc.workload(128, 11008, 4096, "float16", "float16"), "mma.m16n8k16", nil,
                                       {sm_count = 132, tuned = false, BK = 32})
    assert.is_nil(o128b.split_k)
    -- on 4 SMs, 16 x 128 x 1024 is one tile: split 3 (K padded to 1152: 6 BK steps a slice; split 4
    -- would leave 4)
    local f = tc.workload(16, 128, 1024, "float16", "float16")
    local sch, o3 = tc.auto_tensorize(f, "mma.m16n8k16", nil, {sm_count = 4, epilogue = "D"})
    assert.are.same({3, 3}, {o3.split_k, o3.ctas})
    U.assert_equiv(f, sch.mod, {rtol = 1e-3, atol = 1e-3, trials = 1})
    sim(f, sch) -- K padded by pad_einsum under frag_prefetch's nested pipeline
  end)

  it("a batched matmul with B transposed: ks fused with the batch on blockIdx.z", function()
    local te = tir.te
    local A = te.placeholder({3, 32, 128}, "float16", "A")
    local B = te.placeholder({3, 64, 128}, "float16", "B")
    local k = te.reduce_axis({0, 128}, "k")
    local C = te.compute({3, 32, 64}, function(bb, i, j)
      return te.sum(te.cast("float32", A[{bb, i, k}]) * te.cast("float32", B[{bb, j, k}]), {k})
    end, "bmm")
    local f = te.create_prim_func({A, B, C})
    local sch = tc.schedule(f, opts({block = "bmm", BM = 32, split_k = 2}))
    assert.truthy(tostring(sch.mod):find('bmm_rf = T.alloc_buffer({2, 3, 32, 64}, "float32")', 1, true))
    U.assert_equiv(f, sch.mod, {rtol = 1e-5, atol = 1e-5, trials = 1})
    sim(f, sch)
  end)

  it("split_k = 1 is the plain schedule", function()
    local f = tc.workload(32, 64, 64, "float16", "float16")
    local a = tc.schedule(f, opts({epilogue = "D"}))
    local b = tc.schedule(f, opts({epilogue = "D", split_k = 1}))
    assert.is_true((tir.structural_equal(a.mod, b.mod)))
  end)

  it("a K that split_k * BK does not divide is padded with zeros (pad_einsum): parallel and serial (interpreter, simulator)", function()
    -- K = 96 in 2 slices of BK 32 -> 128; K = 256 in 3 -> 288 (the copies into shared memory zero-fill)
    for _, c in ipairs({{96, 2, "parallel"}, {256, 3, "parallel"}, {256, 3, "serial"}}) do
      local f = tc.workload(32, 64, c[1], "float16", "float16")
      local sch = tc.schedule(f, opts({split_k = c[2], split_k_mode = c[3], epilogue = "D"}))
      assert.truthy(sch:trace():find("pad_einsum", 1, true))
      local text = tostring(sch.mod)
      assert.truthy(text:find(("C_rf = T.alloc_buffer({%d, 32, 64}, \"float32\")"):format(c[2]), 1, true))
      assert.truthy(text:find(("T.lt(v1, %d)"):format(c[1]), 1, true) or text:find(("T.lt(v0_1, %d)"):format(c[1]), 1, true), text)
      U.assert_equiv(f, sch.mod, {rtol = 1e-3, atol = 1e-3})
      sim(f, sch)
    end
    -- the same kernel as the padded workload's (tc_gemm.workload(..., pad)): the CUDA is identical
    local a = tc.schedule(tc.workload(32, 64, 96, "float16", "float16"), opts({split_k = 2, epilogue = "D"}))
    local b = tc.schedule(tc.workload(32, 64, 96, "float16", "float16", {32, 64, 64}), opts({split_k = 2}))
    assert.are.equal(tir.build(b.mod, "cuda -arch=sm_80", {compile = false}):get_source("cuda"),
                     tir.build(a.mod, "cuda -arch=sm_80", {compile = false}):get_source("cuda"))
  end)

  it("bad split_k: clear errors naming the option", function()
    -- operands staged already (the padded workload's A_pad / B_pad): K is not padded a second time
    local f = tc.workload(30, 64, 96, "float16", "float16", {32, 64, 32})
    U.expect_error(function() tc.schedule(f, opts({split_k = 2})) end, "tc_gemm.schedule", "split_k = 2: K = 96 must be a multiple of split_k * BK = 64",
                   "the operands are staged blocks already")
    U.expect_error(function() tc.schedule(f, opts({split_k = 0})) end, "split_k")
    U.expect_error(function() tc.schedule(f, opts({split_k = 1.5})) end, "split_k")
    U.expect_error(function() tc.schedule(tc.workload(32, 64, 128, "float16", "float16"), opts({split_k = 2, epilogue = "E"})) end,
      "epilogue block 'E' does not exist")
  end)
end)

describe("#gpu tc_gemm split_k", function()
  local dev = U.gpu_or_pending(it, function(why) pending(why) end)
  if not dev then return end
  local function check(m, n, k, o)
    local BM, BN, BK = o.BM, o.BN, o.BK * o.split_k
    local divides = m % BM == 0 and n % BN == 0 and k % BK == 0
    local f = tc.workload(m, n, k, "float16", "float16", not divides and {BM, BN, BK} or nil)
    if divides then o.epilogue = "D" end
    U.check_vs_cublas(tir.build(tc.schedule(f, o).mod, "cuda"), m, n, k, dev)
  end
  for _, s in ipairs({{16, 11008, 4096, 16, 4}, {128, 11008, 4096, 64, 2}, {1, 4096, 4096, 16, 8}, {37, 1000, 1000, 16, 2}}) do
    it(("%dx%dx%d, BM = %d, split_k = %d matches cuBLAS"):format(s[1], s[2], s[3], s[4], s[5]), function()
      check(s[1], s[2], s[3], {BM = s[4], warp_m = math.min(s[4], 64), BN = 128, warp_n = s[4] >= 64 and 64 or 32, BK = 32, stages = 3,
                               split_k = s[5]})
    end)
  end
  it("int8 16x11008x4096, split_k = 4: exact against the one-kernel schedule", function()
    local f = tc.workload(16, 11008, 4096, "int8")
    local a = tir.nd.random({16, 4096}, "int8", dev, {seed = 1, low = -128, high = 127})
    local b = tir.nd.random({4096, 11008}, "int8", dev, {seed = 2, low = -128, high = 127})
    local o = {BM = 16, warp_m = 16, BN = 128, warp_n = 32, BK = 64, stages = 3}
    local c1, c2 = tir.nd.empty({16, 11008}, "int32", dev), tir.nd.empty({16, 11008}, "int32", dev)
    tir.build(tc.schedule(f, o).mod, "cuda")(a, b, c1)
    o.split_k = 4
    tir.build(tc.schedule(f, o).mod, "cuda")(a, b, c2)
    assert.are.same(c1:to("cpu"):to_table(), c2:to("cpu"):to_table())
  end)
end)
