-- conv_resnet_wgmma_spec.lua -- the ResNet-50 layers that are not 3x3 on wgmma (bench/conv2d.lua's
-- mappings, issue 10): the first layer's C = 3 padded to 8-byte pixels (8-byte cp.async copies into
-- the swizzled tile) or to 16-byte ones (pad_c = 8) on the implicit GEMM, and the 1x1 stride-1 layers as
-- NT GEMMs with the TMA pipelines of the short k loops (K = 64: one BK step a tile) -- warp-specialized
-- + persistent, and persistent with the TMA-store epilogue.  Simulator against the interpreter of the
-- unscheduled workload (and float64 for the convolution); #gpu: the same on the H200 at ResNet sizes.
local tir = require("tir")
local ct = require("tir.schedules.conv2d_tc")
local tc = require("tir.schedules.tc_gemm")
local U = require("spec_util")

local function rand_args(f, seed)
  local args = tir.testing.random_args(f, seed)
  for i, a in ipairs(args) do a:fill_random(seed * 7 + i, -1, 1) end
  return args
end

describe("ResNet-50's non-3x3 layers on wgmma", function()
  for _, t in ipairs({{8, 416, 16}, {nil, 224, 8}}) do
  it(("conv1's shape (7x7, stride 2, pad 3, C = 3), C padded to %d channels: implicit GEMM on wgmma, %d-byte copies"):format(t[1] or 4, t[3]), function()
    local c = {N = 1, H = 16, W = 16, C = 3, F = 64, R = 7, S = 7, stride = 2, padding = 3, pad_c = t[1], weight_layout = "FK"}
    local f, info = ct.workload(c)
    assert.are.equal(t[1] or 4, info.Cp)
    assert.are.equal(t[2], info.Kp) -- 7 * 7 * Cp -> a multiple of 32
    local sch = ct.schedule(f, {intrin = "wgmma", variant = "implicit", BM = 64, BN = 64, BK = 32, stages = 3})
    local mod = tir.build(sch.mod, "cuda -arch=sm_90a", {compile = false})
    local args = rand_args(f, 2)
    local rep = tir.simulate(mod, args, {reference = f, rtol = 1e-3, atol = 1e-3})
    assert.are.equal(0, rep.n_issues)
    assert.are.equal(2, rep.kernels) -- X_pad, then the GEMM
    local src = mod:get_source("cuda")
    assert.truthy(src:find(("tir_cp_async_zfill<%d>((tir_smem_addr(A_im2col"):format(t[3]), 1, true), src)
    -- and against float64: the packed weight unpacked to the 3 real channels
    local ref = tir.testing.ref_conv(args[1], ct.unpack_weight(c, args[2]), {stride = 2, padding = 3})
    local out = args[#args]
    for m = 0, info.M - 1 do
      for j = 0, c.F - 1 do
        local want, got = ref:get(m * c.F + j), out:get(m, j)
        if math.abs(got - want) > 2e-3 * (1 + math.abs(want)) then error(("out[%d, %d] = %g, float64 %g"):format(m, j, got, want)) end
      end
    end
  end)
  end

  it("conv2d_tc.wgmma_gemm: a 1x1 layer as the NT GEMM on wgmma with the rule's TMA tiles; its space; errors", function()
    local c = {N = 2, H = 16, W = 16, C = 64, F = 64, R = 1, S = 1, weight_layout = "FK"}
    local _, info = ct.workload(c)
    local sp = ct.wgmma_gemm_space(info)
    assert.is_true(#sp >= 2)
    for _, o in ipairs(sp) do assert.is_true(o.tma and o.persistent and o.BK == 64 and info.M % o.BM == 0 and c.F % o.BN == 0) end
    assert.is_true(#ct.wgmma_gemm_space(info, "all") > #ct.wgmma_gemm_space(info, "near"))
    assert.is_true(#ct.wgmma_gemm_space(info, "near") > #sp)
    for _, o in ipairs(ct.wgmma_gemm_space(info, "store")) do assert.are.equal("tma", o.epilogue_store) end
    local sch, shapes = ct.wgmma_gemm(info)
    assert.are.same({{512, 64}, {64, 64}, {512, 64}}, shapes)
    local f = tc.workload(512, 64, 64, "float16", "float16", nil, "NT")
    local mod = tir.build(sch.mod, "cuda -arch=sm_90a", {compile = false})
    local rep = tir.simulate(mod, rand_args(f, 4), {reference = f})
    assert.are.equal(0, rep.n_issues)
    U.expect_error(function() ct.wgmma_gemm_space(select(2, ct.workload{N = 2, H = 8, W = 8, C = 64, F = 64, R = 3, S = 3, padding = 1})) end,
                   "conv2d_tc.wgmma_gemm_space", "not a plain fp16 / bf16 NHWC GEMM")
    U.expect_error(function() ct.wgmma_gemm_space(info, "far") end, "conv2d_tc.wgmma_gemm_space", "level must be")
    U.expect_error(function() ct.wgmma_gemm(select(2, ct.workload{N = 1, H = 10, W = 10, C = 64, F = 64, R = 1, S = 1, pad_m = 128})) end,
                   "conv2d_tc.wgmma_gemm", "without pad_m")
    U.expect_error(function() ct.wgmma_gemm_tiles(select(2, ct.workload{N = 1, H = 10, W = 10, C = 64, F = 64, R = 1, S = 1})) end,
                   "conv2d_tc.wgmma_gemm_tiles", "no wgmma tiling")
    U.expect_error(function() ct.wgmma_gemm(info, 5) end, "conv2d_tc.wgmma_gemm", "opts must be a table")
  end)

  it("conv2d_tc.wgmma_gemm_tiles on ResNet-50's 1x1 layers (N = 128, 132 SMs): the SM-count persistent grid, one CTA a tile at C = F = 64", function()
    local function rule(H, C, F)
      local _, info = ct.workload{N = 128, H = H, W = H, C = C, F = F, R = 1, S = 1, weight_layout = "FK"}
      return ct.wgmma_gemm_tiles(info), info
    end
    for _, l in ipairs({{7, 512, 2048}, {14, 1024, 512}, {28, 128, 512}, {56, 64, 256}, {14, 1024, 256}}) do
      local o = rule(l[1], l[2], l[3])
      assert.are.same({true, true, true, "tma", 256, 3}, {o.warp_specialize, o.persistent, o.persistent_tail, o.epilogue_store, o.BN, o.stages})
    end
    local o = rule(28, 512, 128)
    assert.are.same({true, true, true, "tma", 128}, {o.warp_specialize, o.persistent, o.persistent_tail, o.epilogue_store, o.BN})
    o = rule(56, 64, 64)
    assert.are.same({true, nil, nil, "tma", 128, 64, 1, 0}, {o.tma, o.persistent, o.warp_specialize, o.epilogue_store, o.BM, o.BN, o.stages,
                                                           o.wgmma_pending})
    o = rule(56, 256, 64) -- F = 64 with a k loop: wgmma_tiles' cp.async tiles (the TMA-store kernel with a k
    -- loop wrote wrong outputs on the H200: conv2d_tc.wgmma_gemm_tiles says so)
    assert.are.same({nil, 64}, {o.tma, o.BN})
    -- the strided 1x1 projections (implicit GEMM): TMA im2col, WS, TMA store, on the SM-count persistent grid
    for _, l in ipairs({{56, 256, 512}, {28, 512, 1024}, {14, 1024, 2048}}) do
      local _, info = ct.workload{N = 128, H = l[1], W = l[1], C = l[2], F = l[3], R = 1, S = 1, stride = 2, weight_layout = "FK"}
      local p = ct.wgmma_implicit_tiles(info, 132)
      assert.are.same({128, 256, 3, true, true, true, "tma", true}, {p.BM, p.BN, p.stages, p.warp_specialize, p.persistent, p.persistent_tail,
                                                                   p.epilogue_store, p.a_im2col ~= nil})
    end
    -- conv5's expand: 392 tiles of 128 x 256 -> a divisor grid (G CTAs x 392 / G rounds, G <= 98) re-gridded to 132 x 3
    local sch = ct.wgmma_gemm(select(2, rule(7, 512, 2048)))
    local ir = tostring(sch.mod)
    local g, r = ir:match('T.thread_binding%((%d+), "blockIdx.x"%) do\n%s*for [%w_]+ in T.serial%((%d+), {annotations = {%["persistent_tail"%] = (%d+)}}')
    assert.are.equal(392, tonumber(g) * tonumber(r))
    assert.truthy(ir:find('"persistent_tail"%] = ' .. tc.device_sm_count()))
  end)

  -- the 1x1 layers' GEMMs: M x F x C with the OHWI kernel [F, C] as B
  local GEMM = {
    {"K = 64 (one k step), F = 64, BM 128 BN 64, warp-specialized + persistent, 4 stages", 512, 64, 64,
     {BM = 128, BN = 64, BK = 64, stages = 4, tma = true, warp_specialize = true, persistent = 2}},
    {"K = 64, F = 128, persistent with the TMA-store epilogue, 1 stage", 512, 128, 64,
     {BM = 128, BN = 128, BK = 64, stages = 1, wgmma_pending = 0, tma = true, persistent = 2, epilogue_store = "tma"}},
    {"K = 128, F = 256, BN 256, persistent + TMA-store epilogue, 2 stages", 256, 256, 128,
     {BM = 128, BN = 256, BK = 64, stages = 2, tma = true, persistent = true, epilogue_store = "tma"}},
    {"K = 128, F = 256, 7 tiles on 3 CTAs (persistent_tail), warp-specialized + TMA-store epilogue, 2 stages", 896, 256, 128,
     {BM = 128, BN = 256, BK = 64, stages = 2, tma = true, warp_specialize = true, persistent = 3, persistent_tail = true, epilogue_store = "tma"}},
  }
  for _, t in ipairs(GEMM) do
    it("1x1 GEMM on wgmma: " .. t[1], function()
      local f = tc.workload(t[2], t[3], t[4], "float16", "float16", nil, "NT")
      local o = {intrin = "wgmma", epilogue = "D"}
      for k, v in pairs(t[5]) do o[k] = v end
      local sch = tc.schedule(f, o)
      local mod = tir.build(sch.mod, "cuda -arch=sm_90a", {compile = false})
      local rep = tir.simulate(mod, rand_args(f, 3), {reference = f})
      assert.are.equal(0, rep.n_issues)
    end)
  end
end)
