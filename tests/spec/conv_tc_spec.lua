-- conv_tc_spec.lua -- tir.schedules.conv2d_tc: convolution on tensor cores, explicit im2col + GEMM
-- and implicit GEMM, on the simulator (warp by warp, cp.async, ldmatrix, mma lane maps) against
-- the interpreter of the unscheduled workload, and against tir.testing.ref_conv (float64) on the
-- same inputs: padding, stride, dilation, C = 3 (padded to 4 channels, or element copies), K = 72,
-- bias + relu, fp16 (mma.sync m16n8k16, WMMA) and int8 (IMMA m16n8k32, exact; requantized); the structure of the two lowerings
-- (one kernel and no im2col matrix in global memory vs two kernels); the 1x1 GEMM route; errors.
local tir = require("tir")
local U = require("spec_util")
local ct = require("tir.schedules.conv2d_tc")

-- random inputs: fp16 in [-1, 1), int8 over its whole range, int32 biases in [-5000, 5000]
local function args_for(f, seed)
  local args = tir.testing.random_args(f, seed)
  for i, a in ipairs(args) do
    local dt = a:dtype()
    if dt == "int8" then a:fill_random(seed * 7 + i, -128, 127)
    elseif dt == "int32" then a:fill_random(seed * 7 + i, -5000, 5000)
    else a:fill_random(seed * 7 + i, -1, 1) end
  end
  return args
end

local function simulate(c, sopts, exact)
  local f, info = ct.workload(c)
  local sch = ct.schedule(f, sopts)
  local mod = tir.build(sch.mod, sopts.intrin == "wgmma" and "cuda -arch=sm_90a" or "cuda -arch=sm_80", {compile = false})
  local args = args_for(f, 1)
  local rep = tir.simulate(mod, args, exact and {reference = f} or {reference = f, rtol = 1e-3, atol = 1e-3})
  assert.are.equal(0, rep.n_issues)
  assert.are.equal(0, rep.races)
  -- and the float64 reference of the convolution itself (rows < M; the output in fp16 rounds)
  local ref = tir.testing.ref_conv(args[1], ct.unpack_weight(c, args[2]),
                                   {stride = c.stride, padding = c.padding, dilation = c.dilation, bias = c.bias and args[3] or nil,
                                    activation = c.activation})
  local out = args[#args]
  for m = 0, info.M - 1 do
    for j = 0, c.F - 1 do
      local want, got = ref:get(m * c.F + j), out:get(m, j)
      if exact then
        if want ~= got then error(("out[%d, %d] = %s, reference %s"):format(m, j, got, want)) end
      elseif math.abs(got - want) > 2e-3 * (1 + math.abs(want)) then
        error(("out[%d, %d] = %g, reference %g"):format(m, j, got, want))
      end
    end
  end
  return mod, info, rep
end

-- the schedule of f (sopts) prints and parses back, and means f on the interpreter (before lowering)
local function assert_means(f, sopts, seed)
  local sch = ct.schedule(f, sopts)
  U.assert_roundtrip(sch.mod)
  local a1 = args_for(f, seed)
  local a2 = tir.testing.copy_args(a1)
  tir.interpret(f, a1)
  tir.interpret(sch.mod, a2)
  tir.testing.assert_allclose(a2[#a2], a1[#a1], {rtol = 1e-3, atol = 1e-3})
end

local SMALL = {BM = 64, BN = 32, BK = 32, warp_m = 32, warp_n = 16, stages = 2}
local function with(o, extra)
  local r = {}
  for k, v in pairs(o) do r[k] = v end
  for k, v in pairs(extra or {}) do r[k] = v end
  return r
end

local LAYERS = {
  {name = "3x3 pad 1, bias + relu", c = {N = 2, H = 8, W = 8, C = 16, F = 32, R = 3, S = 3, padding = 1, bias = true, activation = "relu"}},
  {name = "C = 3 (a first layer: channels padded to 4, K = 36 -> 64), stride 2", c = {N = 2, H = 9, W = 9, C = 3, F = 32, R = 3, S = 3, padding = 1, stride = 2, pad_m = 64}},
  {name = "C = 3 unpadded (pad_c = 1: element copies, K = 27 -> 32)", c = {N = 2, H = 9, W = 9, C = 3, F = 32, R = 3, S = 3, padding = 1, pad_c = 1, pad_m = 64}},
  {name = "C = 8, dilation 2 (K = 72 -> 96)", c = {N = 1, H = 10, W = 10, C = 8, F = 32, R = 3, S = 3, padding = 2, dilation = 2, pad_m = 64}},
  {name = "1x1 stride 2 (the downsampling shortcut)", c = {N = 2, H = 16, W = 16, C = 32, F = 32, R = 1, S = 1, stride = 2}},
}

describe("conv2d_tc on the simulator", function()
  for _, L in ipairs(LAYERS) do
    for _, variant in ipairs({"implicit", "im2col"}) do
      it(("%s, %s, fp16 mma.sync"):format(L.name, variant), function()
        simulate(L.c, with(SMALL, {variant = variant}))
      end)
    end
  end

  it("fp16 on WMMA (wmma.m16n16k16 fragments), both variants, with and without the bias epilogue", function()
    for _, bias in ipairs({true, false}) do
      local c = {N = 2, H = 8, W = 8, C = 16, F = 32, R = 3, S = 3, padding = 1, bias = bias, activation = bias and "relu" or nil}
      for _, variant in ipairs({"implicit", "im2col"}) do simulate(c, with(SMALL, {variant = variant, intrin = "wmma"})) end
    end
  end)

  it("NCHW data and output: layout kernels around the NHWC GEMM (X_nhwc, out_nchw), both variants, C = 16 and C = 3", function()
    for _, c in ipairs({{N = 2, H = 8, W = 8, C = 16, F = 32, R = 3, S = 3, padding = 1, bias = true, activation = "relu", data_layout = "NCHW"},
                        {N = 2, H = 9, W = 9, C = 3, F = 32, R = 3, S = 3, padding = 1, stride = 2, pad_m = 64, data_layout = "NCHW"}}) do
      local f, info = ct.workload(c)
      assert.are.same({2, 32, info.P, info.Q}, info.out_shape)
      for _, variant in ipairs({"implicit", "im2col"}) do
        local mod = tir.build(ct.schedule(f, with(SMALL, {variant = variant})).mod, "cuda -arch=sm_80", {compile = false})
        local args = args_for(f, 5)
        local rep = tir.simulate(mod, args, {reference = f, rtol = 1e-3, atol = 1e-3})
        assert.are.equal(0, rep.n_issues)
        assert.are.equal(variant == "implicit" and 3 or 4, rep.kernels)
        ct.check_points(args[#args], args[1], ct.unpack_weight(c, args[2]),
                        {stride = c.stride, padding = c.padding, bias = c.bias and args[3] or nil, activation = c.activation}, info, 400, false, 2e-3)
      end
    end
  end)

  it("grouped convolution (groups = 2 and 4): the group a batch dimension, both variants, against float64", function()
    for _, G in ipairs({2, 4}) do
      local c = {N = 2, H = 8, W = 8, C = 32, F = 64 * G // 2, R = 3, S = 3, padding = 1, groups = G, bias = true, activation = "relu"}
      local f, info = ct.workload(c)
      for _, variant in ipairs({"implicit", "im2col"}) do
        local mod = tir.build(ct.schedule(f, with(SMALL, {variant = variant})).mod, "cuda -arch=sm_80", {compile = false})
        local args = args_for(f, 6)
        local rep = tir.simulate(mod, args, {reference = f, rtol = 1e-3, atol = 1e-3})
        assert.are.equal(0, rep.n_issues)
        ct.check_points(args[#args], args[1], ct.unpack_weight(c, args[2]),
                        {padding = 1, groups = G, bias = args[3], activation = "relu"}, info, 400, false, 2e-3)
      end
      -- pack_weight with groups is unpack_weight's inverse
      local pf = ct.pack_weight({R = 3, S = 3, C = 32 // G, F = c.F, groups = G})
      local w = tir.nd.random({3, 3, 32 // G, c.F}, "float16", tir.cpu(), {seed = 9, low = -1, high = 1})
      local wm = tir.nd.empty({G, info.Kp, c.F // G}, "float16")
      tir.interpret(pf, {w, wm})
      assert.are.same(w:to_table(), ct.unpack_weight(c, wm):to_table())
    end
    U.expect_error(function() ct.workload({N = 1, H = 8, W = 8, C = 32, F = 32, R = 3, S = 3, groups = 32}) end,
                   "conv2d_tc.workload", "no profitable tensor-core mapping")
  end)

  it("pack_weight: OIHW, OHWI and HWIO kernels pack to the same Wm (channels padded or not)", function()
    for _, C in ipairs({16, 3}) do
      local o = {R = 3, S = 3, C = C, F = 32}
      local hwio = tir.nd.random({3, 3, C, 32}, "float16", tir.cpu(), {seed = C, low = -1, high = 1})
      local t, ohwi, oihw = hwio:to_table(), {}, {}
      for f = 1, 32 do
        ohwi[f], oihw[f] = {}, {}
        for r = 1, 3 do ohwi[f][r] = {} for s = 1, 3 do ohwi[f][r][s] = {} for c = 1, C do ohwi[f][r][s][c] = t[r][s][c][f] end end end
        for c = 1, C do oihw[f][c] = {} for r = 1, 3 do oihw[f][c][r] = {} for s = 1, 3 do oihw[f][c][r][s] = t[r][s][c][f] end end end
      end
      local outs = {}
      for _, kl in ipairs({{"HWIO", hwio}, {"OHWI", tir.nd.array(ohwi, "float16")}, {"OIHW", tir.nd.array(oihw, "float16")}}) do
        local pf = ct.pack_weight({R = 3, S = 3, C = C, F = 32, kernel_layout = kl[1]})
        local wm = tir.nd.empty({pf.params[2].shape[1].value, 32}, "float16")
        tir.interpret(pf, {kl[2], wm})
        outs[#outs + 1] = wm:to_table()
      end
      assert.are.same(outs[1], outs[2]); assert.are.same(outs[1], outs[3])
      assert.are.same(t, ct.unpack_weight(o, tir.nd.array(outs[1], "float16")):to_table())
    end
  end)

  it("int8 (IMMA m16n8k32, int32 bias), both variants, bit-exact", function()
    local c = {N = 2, H = 8, W = 8, C = 32, F = 32, R = 3, S = 3, padding = 1, dtype = "int8", bias = true, pad_k = 64}
    for _, variant in ipairs({"implicit", "im2col"}) do
      simulate(c, {variant = variant, BM = 64, BN = 32, BK = 64, warp_m = 32, warp_n = 16, stages = 2, im2col_vec = 16}, true)
    end
  end)

  it("int8 with the quantized epilogue (bias, per-channel scale, zero point, relu): bit-exact, and equal to tir.ops.conv's requantize", function()
    local c = {N = 2, H = 8, W = 8, C = 32, F = 32, R = 3, S = 3, padding = 1, dtype = "int8", bias = true, pad_k = 64, activation = "relu",
               requantize = {scale = "per_channel", out_zero_point = -5}}
    local f, info = ct.workload(c)
    assert.are.equal("int8", info.out_dtype)
    -- the same layer as a te op, for the meaning of the numbers
    local te = tir.te
    local X = te.placeholder({2, 8, 8, 32}, "int8", "X")
    local W = te.placeholder({3, 3, 32, 32}, "int8", "W")
    local B = te.placeholder({32}, "int32", "bias")
    local S = te.placeholder({32}, "float32", "scale")
    local Y = tir.ops.conv(X, W, {padding = 1, bias = B, activation = "relu", requantize = {scale = "per_channel", out_zero_point = -5},
                                  scale_tensor = S})
    local g = te.create_prim_func({X, W, B, S, Y})
    for _, variant in ipairs({"implicit", "im2col"}) do
      local sch = ct.schedule(f, {variant = variant, BM = 64, BN = 32, BK = 64, warp_m = 32, warp_n = 16, stages = 2, im2col_vec = 16})
      local mod = tir.build(sch.mod, "cuda -arch=sm_80", {compile = false})
      local args = args_for(f, 4)
      local sc = {}
      for i = 1, 32 do sc[i] = (i % 3 == 0) and 0.5 or (i / 32) * 1e-4 end -- exact halves: ties of the rounding
      args[4] = tir.nd.array(sc, "float32")
      local rep = tir.simulate(mod, args, {reference = f})
      assert.are.equal(0, rep.n_issues)
      local ga = {args[1], ct.unpack_weight(c, args[2]), args[3], args[4], tir.nd.empty({2, 8, 8, 32}, "int8")}
      tir.interpret(g, ga)
      for m = 0, info.M - 1 do
        for j = 0, 31 do assert.are.equal(ga[5]:get(m * 32 + j), args[5]:get(m, j)) end
      end
    end
  end)

  -- wgmma (sm_90a): the weight packed K-major (weight_layout = "FK"), the im2col block the
  -- swizzled A tile; 1 and 2 consumer warpgroups, 64- and 128-byte rows, 1-3 stages, a group in
  -- flight or not
  local WG = {
    {"3x3 pad 1, K = 144 -> 192, BM 64 BN 32 BK 64, 2 stages + a group in flight", {N = 2, H = 8, W = 8, C = 16, F = 32, R = 3, S = 3, padding = 1, pad_k = 64},
     {BM = 64, BN = 32, BK = 64, stages = 2}},
    {"stride 2, dilation 2, C = 8 (K = 72 -> 96), pad_m, BM 128 BN 64 BK 32, 3 stages, wgmma_pending 0",
     {N = 2, H = 11, W = 11, C = 8, F = 64, R = 3, S = 3, padding = 2, stride = 2, dilation = 2, pad_m = 128},
     {BM = 128, BN = 64, BK = 32, stages = 3, wgmma_pending = 0}},
    {"1x1 stride 2 (the shortcut), one stage", {N = 2, H = 16, W = 16, C = 64, F = 64, R = 1, S = 1, stride = 2, pad_k = 64},
     {BM = 64, BN = 64, BK = 64, stages = 1}},
  }
  for _, t in ipairs(WG) do
    it("wgmma implicit GEMM: " .. t[1], function()
      local c = with(t[2], {weight_layout = "FK"})
      local mod, _, rep = simulate(c, with(t[3], {intrin = "wgmma", variant = "implicit"}))
      assert.are.equal(1, rep.kernels)
      local src = mod:get_source("cuda")
      -- the im2col block is the swizzled shared tile itself (zero-filling cp.async with a pipeline)
      -- (a static array, or a part of the dynamic shared memory that the staged epilogue's tile reuses)
      assert.truthy(src:match("__shared__ __align__%(%d+%) half A_im2col%[") or src:find("half* A_im2col = (half*)(tir_dyn_smem", 1, true), src)
      -- the gather's stores into it carry the XOR swizzle (Buffer.swizzle applied to the index)
      local swizzled = false
      for line in src:gmatch("[^\n]+") do
        if (line:find("tir_smem_addr(A_im2col)", 1, true) or line:find("*(uint4*)(A_im2col +", 1, true)) and line:find(" ^ ", 1, true) then swizzled = true end
      end
      assert.is_true(swizzled)
      if t[3].stages > 1 then assert.truthy(src:find("tir_cp_async_zfill<16>((tir_smem_addr(A_im2col", 1, true), src) end
      assert.truthy(src:find("tir_wgmma_m64n" .. t[3].BN .. "k16_f16_f16_f32", 1, true), src)
    end)
  end

  -- + bias and relu fused on wgmma: the accumulators staged through a shared tile per warpgroup
  -- (tc_gemm_wgmma_epilogue's staged path), the bias added and relu applied as it is written back
  local WGE = {
    {"bias + relu, 3x3 pad 1, BM 64 BN 64, 2 stages, 16-byte stores", {N = 2, H = 8, W = 8, C = 16, F = 64, R = 3, S = 3, padding = 1, pad_k = 64},
     {BM = 64, BN = 64, BK = 64, stages = 2, epilogue_vec = 8}},
    {"bias only, stride 2, 2 warpgroups, 3 stages, wgmma_pending 0", {N = 2, H = 11, W = 11, C = 8, F = 64, R = 3, S = 3, padding = 1, stride = 2,
     pad_m = 128, activation = false}, {BM = 128, BN = 64, BK = 32, stages = 3, wgmma_pending = 0}},
    {"relu only (no bias), one stage", {N = 2, H = 8, W = 8, C = 16, F = 32, R = 3, S = 3, padding = 1, pad_k = 64, bias = false},
     {BM = 64, BN = 32, BK = 64, stages = 1}},
  }
  for _, t in ipairs(WGE) do
    it("wgmma implicit GEMM with a fused epilogue: " .. t[1], function()
      local c = with({weight_layout = "FK", bias = true, activation = "relu"}, t[2])
      if c.activation == false then c.activation = nil end
      if c.bias == false then c.bias = nil end
      local mod, _, rep = simulate(c, with(t[3], {intrin = "wgmma", variant = "implicit"}))
      assert.are.equal(1, rep.kernels)
      local src = mod:get_source("cuda")
      assert.truthy(src:find("C_wgmma_accumulator_shared", 1, true), src) -- the staged tile
      if c.activation then assert.truthy(src:find("fmaxf(", 1, true), src) end
      if c.bias then assert.truthy(src:find("(bias +", 1, true), src) end
      if t[3].epilogue_vec == 8 then assert.truthy(src:find("*(uint4*)(D +", 1, true), src) end
    end)
  end
  it("wgmma: the plain cast is stored from the staged accumulators, 16 bytes a thread (the default), or fused into the fragments' stores (epilogue_store = \"direct\")", function()
    local c = with(WG[1][2], {weight_layout = "FK"})
    local mod = simulate(c, with(WG[1][3], {intrin = "wgmma", variant = "implicit"}))
    local src = mod:get_source("cuda")
    assert.truthy(src:find("C_wgmma_accumulator_shared", 1, true) and src:find("*(uint4*)(D +", 1, true), src)
    mod = simulate(c, with(WG[1][3], {intrin = "wgmma", variant = "implicit", epilogue_store = "direct"}))
    src = mod:get_source("cuda")
    assert.falsy(src:find("C_wgmma_accumulator_shared", 1, true), src)
    assert.truthy(src:find("__floats2half2_rn", 1, true), src)
    U.expect_error(function() ct.schedule(ct.workload(c), with(WG[1][3], {intrin = "wgmma", epilogue_store = "smem"})) end, "tc_gemm.schedule",
                   "epilogue_store must be")
  end)
  it("the wgmma schedule with bias + relu means the workload (interpreter, before lowering)", function()
    assert_means(ct.workload(with(WGE[1][2], {weight_layout = "FK", bias = true, activation = "relu"})),
                 with(WGE[1][3], {intrin = "wgmma"}), 4)
  end)

  -- warp-specialized (conv2d_tc.wgmma_ws_space's shape): a producer warpgroup of its own gathers the
  -- A tile (zero-filling cp.async by its 128 threads, each arriving on the stage's full mbarrier with
  -- cp.async.mbarrier.arrive.noinc) while its lane 0 issues the weights' TMA copy; the consumers wait,
  -- fence the proxies, issue wgmma and release the stage.  On the simulator (the roles as tasks,
  -- happens-before through the mbarriers) against the workload and float64
  local WS = {
    {"staged epilogue, 3 stages, pad 1 (zero fill), 2 consumer warpgroups",
     {N = 2, H = 8, W = 8, C = 64, F = 128, R = 3, S = 3, padding = 1}, {BM = 128, BN = 128, stages = 3, epilogue_store = "staged"}},
    {"TMA-store epilogue, stride 2, 1 consumer warpgroup, K = 576 in 9 steps over 2 stages",
     {N = 4, H = 16, W = 16, C = 64, F = 64, R = 3, S = 3, padding = 1, stride = 2}, {BM = 64, BN = 64, stages = 2, epilogue_store = "tma"}},
    {"persistent (2 CTAs walking 8 tiles: the producer gathers the next tile's stages during this one's store), TMA-store",
     {N = 8, H = 8, W = 8, C = 64, F = 128, R = 3, S = 3, padding = 1}, {BM = 128, BN = 64, stages = 4, epilogue_store = "tma", persistent = 2}},
  }
  for _, t in ipairs(WS) do
    it("wgmma implicit GEMM, warp-specialized gathering producer: " .. t[1], function()
      local c = with(t[2], {weight_layout = "FK"})
      local mod, _, rep = simulate(c, with(t[3], {intrin = "wgmma", variant = "implicit", BK = 64, tma = true, warp_specialize = true}))
      assert.are.equal(1, rep.kernels)
      assert.are.equal(0, rep.races)
      local src = mod:get_source("cuda")
      -- the producer's branch: its threads gather (zfill cp.async) and arrive with .noinc; lane 0 the TMA
      local prod = src:match("setmaxnreg%.dec.-} else {") or src:match("if %(+int%)threadIdx%.y%) == %d%)+ {.-} else {")
      assert.truthy(prod, src)
      assert.truthy(prod:find("tir_cp_async_zfill<16>((tir_smem_addr(A_im2col)", 1, true), prod)
      assert.truthy(prod:find("tir_cp_async_mbarrier_arrive_noinc((tma_full", 1, true), prod)
      assert.truthy(prod:find("tir_tma_load_2d((Wm_shared", 1, true), prod)
      assert.falsy(prod:find("__syncthreads", 1, true), prod)
      -- full[s] expects the producer's 128 gathering threads + lane 0's expect_tx
      assert.truthy(src:find("tir_mbarrier_init((tma_full + s), (unsigned)(129))", 1, true), src)
    end)
  end
  it("warp-specialized gathering producer: planted bugs are caught, a gather without warp_specialize is refused", function()
    local c = with(WS[2][2], {weight_layout = "FK"})
    local f = ct.workload(c)
    local so = with(WS[2][3], {intrin = "wgmma", variant = "implicit", BK = 64, tma = true, warp_specialize = true})
    local low = tir.lower(ct.schedule(f, so).mod)
    local args = function() return args_for(f, 2) end
    -- no arrival after the gather: the consumers wait on full[0] forever
    U.expect_error(function() tir.simulate(U.drop_call(low, "ptx_cp_async_mbarrier_arrive_noinc", 1), args()) end,
      "deadlock: every thread still running waits")
    -- the producer refilling a stage without waiting for its release: a write after the consumers' wgmma read
    U.expect_error(function() tir.simulate(U.drop_call(low, "ptx_mbarrier_wait", 1), args()) end, "shared-memory race (write after read)",
      "refills it")
    local sch = ct.schedule(f, so)
    local ko = select(4, sch:get_loops(sch:get_block("A_im2col")))
    sch:unannotate(ko, "warp_specialize")
    U.expect_error(function() tir.lower(sch.mod) end, "LoweringError in inject_tma_pipeline",
      "cp_async_gather copies are gathered by a producer warpgroup: the loop needs warp_specialize too")
  end)
  it("a gathering producer in a thread-block cluster is refused, naming the loop and why", function()
    local f = ct.workload(with(WS[2][2], {weight_layout = "FK"}))
    local sch = ct.schedule(f, with(WS[2][3], {intrin = "wgmma", variant = "implicit", BK = 64, tma = true, warp_specialize = true}))
    local ko = select(4, sch:get_loops(sch:get_block("A_im2col")))
    sch:annotate(ko, "tma_cluster", {2, 1, 1})
    U.expect_error(function() tir.lower(sch.mod) end, "LoweringError in inject_tma_pipeline", "loop k_0: cp_async_gather copies with tma_cluster",
                   "lands in its own CTA's shared memory only", "^^^")
  end)
  it("the warp-specialized gathering schedule means the workload (interpreter, before lowering)", function()
    assert_means(ct.workload(with(WS[1][2], {weight_layout = "FK"})), with(WS[1][3], {intrin = "wgmma", BK = 64, tma = true,
                 warp_specialize = true}), 5)
  end)
  -- the A tile by TMA in im2col mode (conv2d_tc.im2col_geometry / wgmma_im2col_space): one
  -- ptx_tma_load_im2col per stage (the im2col tensor map's pixel walk, corners, traversal stride,
  -- filter-tap offsets; include/tir/tma.h) issued beside B's TMA copy -- by the producer
  -- warpgroup's lane 0 or, without warp specialization, by the leader thread.  On the simulator
  -- against the workload and float64
  -- a TMA-pipelined candidate list (wgmma_ws_space, wgmma_im2col_space): at least n, each with
  -- kind(o), BK 64, dividing the layer, its stages and epilogue tile within 227 KB
  local function assert_space_fits(sp, info, n, kind)
    assert.is_true(#sp >= n)
    for _, o in ipairs(sp) do
      assert.is_true(o.tma and kind(o) and o.BK == 64 and info.Mp % o.BM == 0 and info.F % o.BN == 0)
      local epi = o.epilogue_store == "tma" and o.BM * o.BN * 2 or o.BM * (o.BN + 8) * 4
      assert.is_true(o.stages * (o.BM + o.BN) * 128 + epi <= 227 * 1024)
    end
  end
  local function sp_n(info) return ct.wgmma_im2col_space(info) end
  local IM = {
    {"warp-specialized, stride 2, TMA-store epilogue, one image a tile", {N = 4, H = 16, W = 16, C = 64, F = 64, R = 3, S = 3, padding = 1,
     stride = 2}, {BM = 64, BN = 64, stages = 2, epilogue_store = "tma", warp_specialize = true}},
    {"not warp-specialized, stride 1, staged epilogue, tiles across rows", {N = 2, H = 8, W = 8, C = 64, F = 64, R = 3, S = 3, padding = 1},
     {BM = 64, BN = 64, stages = 3, epilogue_store = "staged"}},
    {"dilation 2, padding 2, two channel tiles a tap, 2 consumer warpgroups", {N = 2, H = 8, W = 8, C = 128, F = 64, R = 3, S = 3,
     padding = 2, dilation = 2}, {BM = 128, BN = 64, stages = 3, epilogue_store = "staged", warp_specialize = true}},
    {"5x5 valid (no padding) 6x6 outputs: a tile spans images", {N = 16, H = 10, W = 10, C = 64, F = 64, R = 5, S = 5, padding = 0},
     {BM = 64, BN = 64, stages = 2, epilogue_store = "tma", warp_specialize = true}},
    {"+ bias + relu, warp-specialized, staged epilogue (the rule's pick for a fused epilogue)", {N = 2, H = 8, W = 8, C = 64, F = 128, R = 3,
     S = 3, padding = 1, bias = true, activation = "relu"}, {BM = 128, BN = 128, stages = 4, epilogue_store = "staged", warp_specialize = true}},
    {"persistent_tail: 7 tiles on 3 CTAs (the last round's spare CTAs repeat the last tile)", {N = 7, H = 8, W = 8, C = 64, F = 64, R = 3,
     S = 3, padding = 1}, {BM = 64, BN = 64, stages = 2, epilogue_store = "tma", warp_specialize = true, persistent = 3, persistent_tail = true}},
    {"persistent (2 CTAs over 8 tiles: the producer loads the next tile's stages)", {N = 8, H = 8, W = 8, C = 64, F = 128, R = 3, S = 3,
     padding = 1}, {BM = 128, BN = 64, stages = 4, epilogue_store = "tma", warp_specialize = true, persistent = 2}},
  }
  for _, t in ipairs(IM) do
    it("wgmma implicit GEMM, A by TMA im2col: " .. t[1], function()
      local c = with(t[2], {weight_layout = "FK"})
      local _, info = ct.workload(c)
      local geo = assert(ct.im2col_geometry(info))
      local mod, _, rep = simulate(c, with(t[3], {intrin = "wgmma", variant = "implicit", BK = 64, tma = true, a_im2col = geo}))
      assert.are.equal(1, rep.kernels)
      local src = mod:get_source("cuda")
      assert.truthy(src:find("cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes", 1, true), src)
      assert.truthy(src:find("tir_tma_load_im2col_4d((A_im2col", 1, true), src)
      assert.falsy(src:find("tir_cp_async_zfill<", 1, true), src) -- (no gather left)
    end)
  end
  it("TMA im2col: a geometry that is not the block's is refused, naming the first sample that differs; ineligible layers say why", function()
    local c = with(IM[1][2], {weight_layout = "FK"})
    local f, info = ct.workload(c)
    local geo = ct.im2col_geometry(info)
    for i, bad in ipairs({{1, 0}, {3, 1}, {5, 2}, {7, 4}}) do
      local g = {table.unpack(geo)}
      g[bad[1]] = bad[2]
      local sch = ct.schedule(f, with(IM[1][3], {intrin = "wgmma", variant = "implicit", BK = 64, tma = true, a_im2col = g}))
      U.expect_error(function() tir.lower(sch.mod) end, "LoweringError in inject_tma_pipeline", "is not the im2col of X that tma_im2col states")
      assert(i)
    end
    -- a gathered copy and a TMA im2col one are not the same copy; a_im2col needs a_stage + tma
    U.expect_error(function() ct.schedule(f, {intrin = "wgmma", variant = "implicit", BM = 64, BN = 64, BK = 64, stages = 2, a_im2col = geo}) end,
      "tc_gemm.schedule", "a_im2col is the convolution of an a_stage im2col block copied by TMA")
    U.expect_error(function() ct.schedule(f, {intrin = "wgmma", variant = "implicit", BM = 64, BN = 64, BK = 64, stages = 2, tma = true,
      a_im2col = {1, 2, 3}}) end, "a_im2col", "a list of 10 integers")
    local _, i2 = ct.workload{N = 2, H = 8, W = 8, C = 32, F = 64, R = 3, S = 3, padding = 1, weight_layout = "FK"}
    local g2, why = ct.im2col_geometry(i2)
    assert.is_nil(g2)
    assert.truthy(why:find("C = 32 is not a multiple of 64", 1, true), why)
    assert.are.same({}, ct.wgmma_im2col_space(i2))
    local _, i3 = ct.workload{N = 2, H = 8, W = 8, C = 64, F = 64, R = 3, S = 3, padding = 1, weight_layout = "FK", pad_m = 256}
    assert.truthy(select(2, ct.im2col_geometry(i3)):find("pads M", 1, true))
  end)
  it("the TMA im2col schedule means the workload (interpreter, before lowering); wgmma_im2col_space fits and divides", function()
    local c = with(IM[3][2], {weight_layout = "FK"})
    local f, info = ct.workload(c)
    assert_means(f, with(IM[3][3], {intrin = "wgmma", BK = 64, tma = true, a_im2col = ct.im2col_geometry(info)}), 6)
    local _, big = ct.workload{N = 128, H = 28, W = 28, C = 128, F = 128, R = 3, S = 3, padding = 1, weight_layout = "FK"}
    assert_space_fits(ct.wgmma_im2col_space(big), big, 4, function(o) return o.a_im2col end)
    -- level "extra" (F <= 128): + persistent grids and BM 64
    local ex = ct.wgmma_im2col_space(big, "extra")
    assert_space_fits(ex, big, #sp_n(big) + 3, function(o) return o.a_im2col end)
    local kinds = {}
    for _, o in ipairs(ex) do if o.persistent then kinds[#kinds + 1] = o.BM .. (o.persistent_tail and " tail" or "") end end
    assert.are.same({"128 tail", "256 tail", "128", "256"}, kinds)
    U.expect_error(function() ct.wgmma_im2col_space(big, "all") end, "conv2d_tc.wgmma_im2col_space", "level must be nil or \"extra\"")
  end)
  it("wgmma_ws_space: the candidates fit shared memory and divide the layer; none for a K that is not a multiple of 64", function()
    local _, info = ct.workload{N = 128, H = 28, W = 28, C = 128, F = 128, R = 3, S = 3, padding = 1, weight_layout = "FK"}
    assert_space_fits(ct.wgmma_ws_space(info), info, 3, function(o) return o.warp_specialize end)
    local _, i2 = ct.workload{N = 2, H = 8, W = 8, C = 8, F = 64, R = 3, S = 3, padding = 1, weight_layout = "FK"}
    assert.are.same({}, ct.wgmma_ws_space(i2))
  end)

  it("wgmma on the explicit im2col matrix (two kernels)", function()
    local c = with(WG[1][2], {weight_layout = "FK"})
    local _, _, rep = simulate(c, with(WG[1][3], {intrin = "wgmma", variant = "im2col"}))
    assert.are.equal(2, rep.kernels)
  end)

  -- epilogues other than the plain fp16 cast run from the accumulators staged in shared memory
  -- (tc_gemm_wgmma_epilogue): int8 with an int32 bias (exact), int8 requantized (fp16 bias / relu: WGE above)
  local EPI = {
    {"int8, int32 out + bias (exact)", {dtype = "int8", bias = true}, {BM = 64, BN = 32, BK = 64, stages = 2}, true},
    {"int8 requantized to int8 + relu (exact)", {dtype = "int8", bias = true, activation = "relu", requantize = {scale = 0.01, out_zero_point = 3}},
     {BM = 64, BN = 64, BK = 64, stages = 2, wgmma_pending = 0}, true},
  }
  for _, t in ipairs(EPI) do
    it("wgmma implicit GEMM with a staged epilogue: " .. t[1], function()
      local c = with(with(WG[1][2], {weight_layout = "FK", F = 64}), t[2])
      local f = ct.workload(c)
      local mod = tir.build(ct.schedule(f, with(t[3], {intrin = "wgmma"})).mod, "cuda -arch=sm_90a", {compile = false})
      local args = args_for(f, 2)
      local rep = tir.simulate(mod, args, t[4] and {reference = f} or {reference = f, rtol = 1e-3, atol = 1e-3})
      assert.are.equal(0, rep.n_issues)
      assert.are.equal(1, rep.kernels)
      -- the accumulators go through a shared tile (the staged store), not the fused fp16 store
      assert.truthy(mod:get_source("cuda"):find("__shared__ __align__(128) float C_wgmma_accumulator_shared[", 1, true) or
                    mod:get_source("cuda"):find("int C_wgmma_accumulator_shared[", 1, true))
    end)
  end

  it("the wgmma schedule means the workload (interpreter, before lowering); FK packing equals KF packing transposed", function()
    local c = with(WG[2][2], {weight_layout = "FK"})
    assert_means(ct.workload(c), with(WG[2][3], {intrin = "wgmma"}), 3)
    local w = tir.nd.random({3, 3, 8, 64}, "float16", tir.cpu(), {seed = 5})
    local kf = tir.nd.empty({96, 64}, "float16")
    local fk = tir.nd.empty({64, 96}, "float16")
    tir.interpret(ct.pack_weight{R = 3, S = 3, C = 8, F = 64}, {w, kf})
    tir.interpret(ct.pack_weight{R = 3, S = 3, C = 8, F = 64, weight_layout = "FK"}, {w, fk})
    for k = 0, 95 do for j = 0, 63 do assert.are.equal(kf:get(k, j), fk:get(j, k)) end end
    tir.testing.assert_allclose(ct.unpack_weight({R = 3, S = 3, C = 8, F = 64, weight_layout = "FK"}, fk), w, {rtol = 0, atol = 0})
  end)

  it("implicit GEMM: one kernel, A gathered by zero-filling cp.async, no im2col matrix in global memory", function()
    local mod, _, rep = simulate(LAYERS[1].c, with(SMALL, {variant = "implicit"}))
    assert.are.equal(1, rep.kernels)
    local src = mod:get_source("cuda")
    assert.truthy(src:find("tir_cp_async_zfill<16>((tir_smem_addr(A_im2col", 1, true), src)
    assert.falsy(src:find("half* __restrict__ A_im2col", 1, true), src)
  end)

  it("C = 3 is padded to 4 channels (X_pad, a kernel of its own): one 8-byte zero-filling cp.async per pixel", function()
    assert.are.equal(4, ct.padded_channels(3, "float16"))
    assert.are.equal(8, ct.padded_channels(3, "int8"))
    assert.are.equal(64, ct.padded_channels(64, "float16"))
    assert.are.equal(12, ct.padded_channels(12, "float16")) -- 24 bytes: element copies, no padding
    assert.are.equal(3, ct.padded_channels(3, "float16", 1))
    local mod, info, rep = simulate(LAYERS[2].c, with(SMALL, {variant = "implicit"}))
    assert.are.equal(4, info.Cp)
    assert.are.equal(2, rep.kernels)
    assert.truthy(mod:get_source("cuda"):find("tir_cp_async_zfill<8>((tir_smem_addr(A_im2col", 1, true))
  end)

  it("explicit im2col: a vectorized im2col kernel writing the matrix, then the GEMM", function()
    local mod, _, rep = simulate(LAYERS[1].c, with(SMALL, {variant = "im2col"}))
    assert.are.equal(2, rep.kernels)
    local src = mod:get_source("cuda")
    assert.truthy(src:find("*(uint4*)(A_im2col + ", 1, true), src)
    assert.truthy(src:find("tir_cp_async<16>((tir_smem_addr(A_im2col_shared", 1, true), src)
  end)

  it("the scheduled function means the workload (interpreter, before lowering)", function()
    local f = ct.workload(LAYERS[3].c)
    for _, variant in ipairs({"implicit", "im2col"}) do assert_means(f, with(SMALL, {variant = variant}), 2) end
  end)
end)

describe("conv2d_tc tile choices", function()
  -- ResNet-50 v1.5's distinct layers at N = 128 (H, W, C, F, R, S, stride, pad)
  local RESNET = {{224, 224, 3, 64, 7, 7, 2, 3}, {56, 56, 64, 64, 1, 1, 1, 0}, {56, 56, 64, 64, 3, 3, 1, 1}, {56, 56, 64, 256, 1, 1, 1, 0},
                  {56, 56, 128, 128, 3, 3, 2, 1}, {28, 28, 512, 256, 1, 1, 1, 0}, {14, 14, 256, 256, 3, 3, 1, 1}, {7, 7, 512, 512, 3, 3, 1, 1},
                  {14, 14, 1024, 2048, 1, 1, 2, 0}}
  it("default tiles divide every ResNet-50 layer, with 4 or 8 warps and a full grid of 132 SMs", function()
    for _, l in ipairs(RESNET) do
      local _, info = ct.workload({N = 128, H = l[1], W = l[2], C = l[3], F = l[4], R = l[5], S = l[6], stride = l[7], padding = l[8]})
      local o, how = ct.layer_options(info)
      assert.are.equal("default tiles", how) -- (the specs run with an empty tuning database)
      assert.are.equal(0, info.M % o.BM); assert.are.equal(0, info.F % o.BN); assert.are.equal(0, info.Kp % o.BK)
      local warps = (o.BM // o.warp_m) * (o.BN // o.warp_n)
      assert.is_true(warps == 4 or warps == 8)
      assert.is_true((info.M // o.BM) * (info.F // o.BN) >= 132)
      assert.is_true(o.stages >= 1 and o.stages <= info.Kp // o.BK)
      assert.are.equal(l[5] == 1 and l[7] == 1, ct.is_gemm(info))
      local sp = ct.space(info)
      assert.is_true(#sp > 0)
      for _, p in ipairs(sp) do assert.are.equal(0, info.F % p.BN); assert.are.equal(0, info.Kp % p.BK) end
    end
  end)
  it("wgmma tiles: every tiling of wgmma_space divides the layer and fits; the rule picks one of them", function()
    for _, l in ipairs(RESNET) do
      if l[5] == 3 then
        local _, info = ct.workload({N = 128, H = l[1], W = l[2], C = l[3], F = l[4], R = 3, S = 3, stride = l[7], padding = l[8], weight_layout = "FK"})
        local sp = ct.wgmma_space(info)
        assert.is_true(#sp > 0)
        for _, p in ipairs(sp) do
          assert.are.equal(0, info.Mp % p.BM); assert.are.equal(0, info.F % p.BN); assert.are.equal(0, info.Kp % p.BK)
          assert.is_true((p.stages + 1) * (p.BM + p.BN) * p.BK * 2 <= 227 * 1024)
        end
        local r = ct.wgmma_tiles(info, 132)
        local found = false
        for _, p in ipairs(sp) do found = found or (p.BM == r.BM and p.BN == r.BN and p.BK == r.BK and p.stages == r.stages) end
        assert.is_true(found)
      end
    end
  end)
  it("wgmma_implicit_tiles: TMA im2col (F <= 128 persistent, F >= 128 least waves x tile area), else the WS gather where 128 x 256 tiles are fewer than the SMs, else wgmma_tiles", function()
    -- ResNet-50's 3x3 layers on 132 SMs: conv2 (F 64) 256 x 64 and conv3 (F 128) 128 x 128 persistent on one CTA an SM,
    -- conv4 (F 256) 128 x 128 (6 stages), conv5 (F 512) 128 x 256, all warp-specialized with the TMA-store epilogue;
    -- + bias + relu the staged one at 128 x 128 (conv2: wgmma_tiles' cp.async tile)
    local want = {[64] = {256, 64, 4, true}, [128] = {128, 128, 6, true}, [256] = {128, 128, 6}, [512] = {128, 256, 3}}
    for _, l in ipairs(RESNET) do
      if l[5] == 3 then
        local c = {N = 128, H = l[1], W = l[2], C = l[3], F = l[4], R = 3, S = 3, stride = l[7], padding = l[8], weight_layout = "FK"}
        local _, info = ct.workload(c)
        local r = ct.wgmma_implicit_tiles(info, 132)
        local w = want[l[4]]
        if w then
          assert.are.same({intrin = "wgmma", BM = w[1], BN = w[2], BK = 64, stages = w[3], wgmma_pending = 1, tma = true, warp_specialize = true,
                           epilogue_store = "tma", a_im2col = ct.im2col_geometry(info), persistent = w[4], persistent_tail = w[4]}, r)
          c.bias, c.activation = true, "relu"
          local _, i2 = ct.workload(c)
          local r2 = ct.wgmma_implicit_tiles(i2, 132)
          if l[4] == 64 then assert.are.same(ct.wgmma_tiles(i2, 132), r2)
          else assert.are.same({128, 128, "staged", true}, {r2.BM, r2.BN, r2.epilogue_store, r2.a_im2col ~= nil}) end
        else
          assert.are.same(ct.wgmma_tiles(info, 132), r)
        end
        local o, how = ct.layer_options(info)
        assert.are.equal("wgmma_implicit_tiles rule", how)
      end
    end
    -- no TMA im2col (NCHW data: im2col_geometry takes NHWC layers only): conv5's 7x7 layer keeps the gathering producer's 128 x 256 kernel
    local _, g = ct.workload{N = 128, H = 7, W = 7, C = 512, F = 512, R = 3, S = 3, padding = 1, weight_layout = "FK", data_layout = "NCHW"}
    assert.is_nil(ct.im2col_geometry(g))
    local r = ct.wgmma_implicit_tiles(g, 132)
    assert.are.same({128, 256, "tma", true, nil}, {r.BM, r.BN, r.epilogue_store, r.warp_specialize, r.a_im2col})
  end)
  it("the tuning key names the layer; given options are used as they are", function()
    local _, info = ct.workload({N = 128, H = 56, W = 56, C = 64, F = 64, R = 3, S = 3, padding = 1})
    assert.are.equal("conv2d_tc:float16:128,56,56,64,64,3,3,1,1,1,1,1,1,1", ct.workload_key(info))
    local o, how = ct.layer_options(info, {BM = 64, BN = 64})
    assert.are.same({BM = 64, BN = 64}, o)
    assert.are.equal("given", how)
  end)
end)

describe("conv2d_tc errors", function()
  local c = {N = 2, H = 8, W = 8, C = 16, F = 32, R = 3, S = 3, padding = 1}
  it("workload options", function()
    U.expect_error(function() ct.workload({N = 2, H = 8, W = 8, C = 16, F = 32, R = 3}) end, "conv2d_tc.workload", "option S is required")
    U.expect_error(function() ct.workload(with(c, {dtype = "float32"})) end, "conv2d_tc.workload", "dtype must be float16")
    U.expect_error(function() ct.workload(with(c, {padding = -1})) end, "conv2d_tc.workload", "padding must not be negative")
    -- the geometry is checked under conv2d_tc.workload's name (was im2col's)
    U.expect_error(function() ct.workload(with(c, {stride = 0})) end, "ValueError in conv2d_tc.workload", "stride[1] must be an integer >= 1, got 0")
    U.expect_error(function() ct.workload(with(c, {dilation = {1, 0}})) end, "conv2d_tc.workload", "dilation[2] must be an integer >= 1")
    U.expect_error(function() ct.workload(with(c, {groups = 2, stride = 0})) end, "conv2d_tc.workload", "stride[1]")
    U.expect_error(function() ct.workload(with(c, {activation = "tanh"})) end, "activation must be \"relu\"")
    U.expect_error(function() ct.workload(with(c, {strid = 2})) end, "unknown option 'strid'", "did you mean 'stride'")
    U.expect_error(function() ct.workload(with(c, {requantize = {scale = 0.5}})) end, "requantize is for int8")
    U.expect_error(function() ct.workload(with(c, {data_layout = "NWHC"})) end, "data_layout must be \"NHWC\" or \"NCHW\"")
    U.expect_error(function() ct.pack_weight({R = 3, S = 3, C = 16, F = 32, kernel_layout = "IOHW"}) end, "kernel_layout must be")
    U.expect_error(function() ct.workload(with(c, {dtype = "int8", requantize = {out_zero_point = 300}})) end, "outside int8")
  end)
  it("schedule options", function()
    local f = ct.workload(c)
    U.expect_error(function() ct.schedule(f, with(SMALL, {variant = "implicit_gemm"})) end, "conv2d_tc.schedule", "variant must be")
    U.expect_error(function() ct.schedule(f, with(SMALL, {BM = 96})) end, "conv2d_tc.schedule", "M = N*P*Q (after pad_m) = 128 is not a multiple of BM = 96")
    U.expect_error(function() ct.schedule(nil, SMALL) end, "conv2d_tc.schedule", "expected the PrimFunc of conv2d_tc.workload")
    local W = {intrin = "wgmma", BM = 64, BN = 32, BK = 32, stages = 1}
    U.expect_error(function() ct.schedule(f, W) end, "conv2d_tc.schedule", "weight_layout = \"FK\"")
    U.expect_error(function() ct.workload(with(c, {weight_layout = "KC"})) end, "conv2d_tc.workload", "weight_layout must be")
    U.expect_error(function() ct.workload(with(c, {weight_layout = "FK", groups = 2})) end, "not supported with groups")
    U.expect_error(function() ct.schedule(ct.workload(with(c, {weight_layout = "FK", bias = true})), with(W, {epilogue_vec = 3})) end,
                   "tc_gemm.schedule", "epilogue_vec = 3")
    -- tiles that do not divide the layer: the advice names conv2d_tc's options (pad_m, pad_k), not tc_gemm's
    local f25 = ct.workload({N = 1, H = 5, W = 5, C = 16, F = 32, R = 3, S = 3, padding = 1})
    for _, variant in ipairs({"implicit", "im2col"}) do
      U.expect_error(function() ct.schedule(f25, with(SMALL, {variant = variant})) end, "conv2d_tc.schedule",
                     "M = N*P*Q (after pad_m) = 25 is not a multiple of BM = 64", "conv2d_tc.workload{..., pad_m = 64}")
    end
    local f25p = ct.workload({N = 1, H = 5, W = 5, C = 16, F = 32, R = 3, S = 3, padding = 1, pad_m = 64})
    U.expect_error(function() ct.schedule(f25p, with(SMALL, {BK = 64})) end, "conv2d_tc.schedule", "Kp = R*S*C padded = 160",
                   "BK = 64", "pad_k = 64")
    U.expect_error(function() ct.schedule(f25p, with(SMALL, {BN = 64, warp_n = 32})) end, "conv2d_tc.schedule", "F (output channels per group) = 32",
                   "BN = 64")
    local ok, e = pcall(ct.schedule, f25, with(SMALL, {variant = "implicit"}))
    assert.is_false(ok); assert.is_nil(tostring(e):find("tc_gemm.workload", 1, true))
    U.expect_error(function() ct.schedule(ct.workload(with(c, {weight_layout = "FK"})), with(W, {BK = 64})) end, "conv2d_tc.schedule",
                   "Kp = R*S*C padded = 160 is not a multiple of BK = 64", "pad_k = 64")
    -- (C = 3: its 8-byte pixels are 8-byte cp.async copies on wgmma too; conv_resnet_wgmma_spec simulates conv1's shape)
    assert.truthy(ct.schedule(ct.workload(with(c, {weight_layout = "FK", C = 3, pad_m = 64})), W))
    U.expect_error(function() ct.schedule(ct.workload(with(c, {weight_layout = "FK"})), with(W, {warp_m = 32})) end,
                   "warp_m is an mma.sync / WMMA option")
    U.expect_error(function() ct.schedule(ct.workload(with(c, {weight_layout = "FK", F = 48})), with(W, {BN = 12})) end, "BN = 12 is not a valid wgmma N")
  end)
end)
