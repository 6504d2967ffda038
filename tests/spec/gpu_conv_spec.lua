-- gpu_conv_spec.lua -- convolution on tensor cores on a real GPU (#gpu): tir.schedules.conv2d_tc's
-- implicit GEMM and explicit im2col + GEMM on ResNet-50 v1.5 layers at N = 128 (fp16 NHWC, bias +
-- relu, fp16 out; an NCHW and a grouped layer too), each checked at sampled outputs (2048, fewer for deep K) against the float64 reference
-- (tir.testing.ref_conv), the two variants against each other on the whole output, and an int8
-- layer (IMMA) exactly at sampled points; the implicit GEMM on wgmma (sm_90a, weight packed [F, Kp],
-- fp16 out, without and with bias + relu) on the 3x3 layers against float64 and against the mma.sync
-- implicit GEMM on the whole output; int8 on wgmma (int32 out + bias, staged, exact).  Without a GPU: pending.
local tir = require("tir")
local ct = require("tir.schedules.conv2d_tc")

local dev = tir.device("cuda", 0)
local has_gpu, why = dev:exists()

local packs = {}
local function packed(L, w, info, dtype)
  local G = L.groups or 1
  local fk = info.weight_layout == "FK"
  local key = ("%d,%d,%d,%d,%s,%d,%d,%s"):format(L.R, L.S, L.C, L.F, dtype, info.Kp, G, tostring(info.weight_layout))
  if not packs[key] then
    packs[key] = tir.build(ct.pack_weight_schedule(ct.pack_weight({R = L.R, S = L.S, C = L.C // G, F = L.F, dtype = dtype,
                                                                    pad_k = L.pad_k, groups = G > 1 and G or nil,
                                                                    weight_layout = fk and "FK" or nil})).mod, "cuda")
  end
  local wm = tir.nd.empty(G > 1 and {G, info.Kp, info.F // G} or fk and {info.F, info.Kp} or {info.Kp, info.F}, dtype, dev)
  packs[key](w, wm)
  return wm
end

-- runs a layer (bias; relu for fp16) on mma.sync, or on wgmma (intrin = "wgmma": the weight packed
-- [F, Kp], the bias / relu epilogue staged through shared memory); returns the output (device),
-- the inputs and info
local function run(L, variant, dtype, intrin)
  dtype = dtype or "float16"
  local int8 = dtype == "int8"
  local layer = {}
  for k, v in pairs(L) do if k ~= "name" then layer[k] = v end end
  layer.dtype, layer.bias = dtype, true
  if intrin == "wgmma" then layer.weight_layout = "FK" end
  if not int8 then layer.activation = "relu" end
  local probe = select(2, ct.workload(layer))
  local opts = ct.layer_options(probe)
  if probe.M % opts.BM ~= 0 then layer.pad_m = opts.BM end
  local func, info = ct.workload(layer)
  opts.variant = variant
  local mod = tir.build(ct.schedule(func, opts).mod, intrin == "wgmma" and "cuda -arch=sm_90a" or "cuda")
  local lo, hi = -1, 1
  if int8 then lo, hi = -128, 127 end
  local G = L.groups or 1
  local xshape = L.data_layout == "NCHW" and {L.N, L.C, L.H, L.W} or {L.N, L.H, L.W, L.C}
  local x = tir.nd.random(xshape, dtype, dev, {seed = 1, low = lo, high = hi})
  local w = tir.nd.random({L.R, L.S, L.C // G, L.F}, dtype, dev, {seed = 2, low = lo, high = hi})
  local bias = tir.nd.random({L.F}, int8 and "int32" or "float32", dev, {seed = 3, low = int8 and -1000 or -1, high = int8 and 1000 or 1})
  local out = tir.nd.empty(info.out_shape, info.out_dtype, dev)
  mod(x, packed(L, w, info, dtype), bias, out)
  return out, x, w, bias, info
end

-- 2048 sampled outputs, fewer for deep K (the float64 loops run in Lua: ~0.4 us per term)
local function sampled_check(L, out, x, w, bias, info, exact)
  local n = math.max(128, math.min(2048, 600000 // info.K))
  ct.check_points(out, x, w, {stride = L.stride, padding = L.padding, groups = L.groups, bias = bias, activation = not exact and "relu" or nil},
                  info, n, exact)
end

-- ResNet-50 v1.5 layers at N = 128 (NHWC): the stem, a 3x3 of each stage, the strided 3x3
-- (v1.5 puts the stride there), a 1x1 plain GEMM, a strided 1x1 shortcut
local LAYERS = {
  {name = "conv1 7x7/2, C = 3 (K = 147 -> 160)", N = 128, H = 224, W = 224, C = 3, F = 64, R = 7, S = 7, stride = 2, padding = 3},
  {name = "conv2_x 3x3 64", N = 128, H = 56, W = 56, C = 64, F = 64, R = 3, S = 3, stride = 1, padding = 1},
  {name = "conv3_1 3x3/2 128", N = 128, H = 56, W = 56, C = 128, F = 128, R = 3, S = 3, stride = 2, padding = 1},
  {name = "conv5_x 3x3 512", N = 128, H = 7, W = 7, C = 512, F = 512, R = 3, S = 3, stride = 1, padding = 1},
  {name = "conv2_x 1x1 64 -> 256 (a plain GEMM)", N = 128, H = 56, W = 56, C = 64, F = 256, R = 1, S = 1, stride = 1, padding = 0},
  {name = "conv3 shortcut 1x1/2 256 -> 512", N = 128, H = 56, W = 56, C = 256, F = 512, R = 1, S = 1, stride = 2, padding = 0},
  {name = "NCHW conv3_x 3x3 128 (layout kernels around the GEMM)", N = 128, H = 28, W = 28, C = 128, F = 128, R = 3, S = 3, stride = 1,
   padding = 1, data_layout = "NCHW"},
  {name = "grouped 3x3 256, groups = 4 (ResNeXt-like)", N = 128, H = 28, W = 28, C = 256, F = 256, R = 3, S = 3, stride = 1, padding = 1,
   groups = 4},
}

-- the implicit GEMM on wgmma (conv2d_tc.wgmma_implicit_tiles' rule, or given tiles) and on mma.sync
-- (layer_options), no bias, fp16 out: returns both outputs and what check_points needs
local function run_wgmma(L, tiles)
  local layer = {}
  for k, v in pairs(L) do if k ~= "name" then layer[k] = v end end
  layer.weight_layout = "FK"
  local func, info = ct.workload(layer)
  local opts = {variant = "implicit"}
  for k, v in pairs(tiles or ct.wgmma_implicit_tiles(info)) do opts[k] = v end
  opts.intrin = "wgmma"
  -- (im2col = true: the A tile by TMA in im2col mode, the layer's conv2d_tc.im2col_geometry)
  if opts.im2col then opts.im2col, opts.a_im2col = nil, assert(ct.im2col_geometry(info)) end
  local mod = tir.build(ct.schedule(func, opts).mod, "cuda -arch=sm_90a")
  local x = tir.nd.random({L.N, L.H, L.W, L.C}, "float16", dev, {seed = 1, low = -1, high = 1})
  local w = tir.nd.random({L.R, L.S, L.C, L.F}, "float16", dev, {seed = 2, low = -1, high = 1})
  local wm = tir.nd.empty({info.F, info.Kp}, "float16", dev)
  tir.build(ct.pack_weight_schedule(ct.pack_weight({R = L.R, S = L.S, C = L.C, F = L.F, weight_layout = "FK"})).mod, "cuda")(w, wm)
  local out = tir.nd.empty(info.out_shape, "float16", dev)
  mod(x, wm, out)
  -- the mma.sync implicit GEMM on the same inputs (weight packed [Kp, F]; 64 x 64 tiles divide
  -- every layer's M here, so both outputs have the same rows)
  layer.weight_layout = nil
  local f2, i2 = ct.workload(layer)
  local o2 = {variant = "implicit", BM = 64, BN = 64, warp_m = 32, warp_n = 32, BK = 32, stages = 3}
  local wk = tir.nd.empty({i2.Kp, i2.F}, "float16", dev)
  tir.build(ct.pack_weight_schedule(ct.pack_weight({R = L.R, S = L.S, C = L.C, F = L.F})).mod, "cuda")(w, wk)
  local ref = tir.nd.empty(i2.out_shape, "float16", dev)
  tir.build(ct.schedule(f2, o2).mod, "cuda")(x, wk, ref)
  return out, ref, x, w, info
end

describe("#gpu conv2d on tensor cores", function()
  if not has_gpu then
    it("is skipped: " .. tostring(why), function() pending("no GPU: " .. tostring(why)) end)
    return
  end
  for _, L in ipairs(LAYERS) do
    it(L.name .. ": implicit GEMM matches float64 at sampled outputs", function()
      local out, x, w, bias, info = run(L, "implicit")
      sampled_check(L, out, x, w, bias, info)
    end)
  end

  it("conv2_x 3x3: explicit im2col + GEMM equals the implicit GEMM on the whole output", function()
    local L = LAYERS[2]
    local a, x, w, bias, info = run(L, "im2col")
    sampled_check(L, a, x, w, bias, info)
    local b = run(L, "implicit")
    tir.testing.assert_allclose(a, b, {rtol = 1e-3, atol = 1e-3})
  end)

  -- wgmma: the rule's tiles on the 3x3 layers of every stage, and 1 / 4 warpgroups, BK 32
  local WG = {
    {LAYERS[2]}, {LAYERS[3]}, {LAYERS[4]},
    {{name = "conv4_x 3x3 256", N = 128, H = 14, W = 14, C = 256, F = 256, R = 3, S = 3, stride = 1, padding = 1}},
    {LAYERS[2], {intrin = "wgmma", BM = 256, BN = 64, BK = 64, stages = 4}},
    {LAYERS[4], {intrin = "wgmma", BM = 64, BN = 128, BK = 32, stages = 4, wgmma_pending = 0}},
    -- warp-specialized (conv2d_tc.wgmma_ws_space): a producer warpgroup gathers A by cp.async
    -- (cp.async.mbarrier.arrive.noinc on the stage's full barrier), B by TMA; staged, TMA-store and
    -- persistent + TMA-store epilogues
    {LAYERS[3], {intrin = "wgmma", BM = 128, BN = 128, BK = 64, stages = 4, tma = true, warp_specialize = true, epilogue_store = "staged"}},
    {LAYERS[2], {intrin = "wgmma", BM = 128, BN = 64, BK = 64, stages = 6, tma = true, warp_specialize = true, epilogue_store = "tma",
                 persistent = true}},
    {LAYERS[4], {intrin = "wgmma", BM = 128, BN = 256, BK = 64, stages = 3, tma = true, warp_specialize = true, epilogue_store = "tma"}},
    -- the A tile by TMA in im2col mode (conv2d_tc.wgmma_im2col_space: cuTensorMapEncodeIm2col,
    -- cp.async.bulk.tensor .im2col): the hardware's pixel walk, corners, traversal stride and
    -- offsets against float64 -- stride 2, C = 64 one tap a k tile, conv5's 7x7 images (a tile
    -- spans images), dilation 2, with and without the producer warpgroup, persistent
    {LAYERS[3], {intrin = "wgmma", BM = 128, BN = 128, BK = 64, stages = 6, tma = true, warp_specialize = true, epilogue_store = "tma",
                 im2col = true}},
    {LAYERS[2], {intrin = "wgmma", BM = 128, BN = 64, BK = 64, stages = 6, tma = true, epilogue_store = "staged", im2col = true}},
    {LAYERS[4], {intrin = "wgmma", BM = 128, BN = 256, BK = 64, stages = 3, tma = true, warp_specialize = true, epilogue_store = "tma",
                 im2col = true}},
    {{name = "3x3 dilation 2 128", N = 32, H = 28, W = 28, C = 128, F = 128, R = 3, S = 3, stride = 1, padding = 2, dilation = 2},
     {intrin = "wgmma", BM = 128, BN = 128, BK = 64, stages = 4, tma = true, warp_specialize = true, epilogue_store = "staged", im2col = true}},
    {LAYERS[3], {intrin = "wgmma", BM = 128, BN = 128, BK = 64, stages = 4, tma = true, warp_specialize = true, epilogue_store = "tma",
                 persistent = true, im2col = true}},
  }
  for _, t in ipairs(WG) do
    local L = t[1]
    it(("%s: implicit GEMM on wgmma (%s) matches float64 and the mma.sync implicit GEMM"):format(L.name,
       t[2] and ("BM %d BN %d BK %d%s"):format(t[2].BM, t[2].BN, t[2].BK, (t[2].warp_specialize or t[2].im2col) and
       ((t[2].im2col and ", A by TMA im2col, " or ", ") .. (t[2].warp_specialize and "warp-specialized" .. (t[2].im2col and "" or " gather")
        .. ", " or "") .. (t[2].persistent and "persistent, " or "") .. t[2].epilogue_store .. " epilogue") or "") or "wgmma_tiles"), function()
      local out, ref, x, w, info = run_wgmma(L, t[2])
      local n = math.max(128, math.min(2048, 600000 // info.K))
      ct.check_points(out, x, w, {stride = L.stride, padding = L.padding, dilation = L.dilation}, info, n)
      tir.testing.assert_allclose(out, ref, {rtol = 1e-2, atol = 1e-2})
    end)
  end

  -- wgmma with + bias and relu fused (the staged epilogue, 16-byte stores): against float64 at
  -- sampled outputs and against the mma.sync implicit GEMM with the same bias and relu (run) on the
  -- whole output
  for _, t in ipairs({{LAYERS[3]}, {LAYERS[4]}, {LAYERS[2], {BM = 128, BN = 64, BK = 64, stages = 3, wgmma_pending = 1}}}) do
    local L = t[1]
    it(("%s: implicit GEMM on wgmma + bias + relu (%s) matches float64 and the mma.sync one"):format(L.name,
       t[2] and ("BM %d BN %d"):format(t[2].BM, t[2].BN) or "wgmma_tiles"), function()
      local layer = {}
      for k, v in pairs(L) do if k ~= "name" then layer[k] = v end end
      layer.weight_layout, layer.bias, layer.activation = "FK", true, "relu"
      local func, info = ct.workload(layer)
      local opts = {variant = "implicit", epilogue_vec = 8}
      for k, v in pairs(t[2] or ct.wgmma_tiles(info)) do opts[k] = v end
      opts.intrin = "wgmma"
      local mod = tir.build(ct.schedule(func, opts).mod, "cuda -arch=sm_90a")
      local ref, x, w, bias, i2 = run(L, "implicit") -- (the same seeds: x 1, w 2, bias 3)
      assert.are.equal(i2.Mp, info.Mp)
      local wm = tir.nd.empty({info.F, info.Kp}, "float16", dev)
      tir.build(ct.pack_weight_schedule(ct.pack_weight({R = L.R, S = L.S, C = L.C, F = L.F, weight_layout = "FK"})).mod, "cuda")(w, wm)
      local out = tir.nd.empty(info.out_shape, "float16", dev)
      mod(x, wm, bias, out)
      sampled_check(L, out, x, w, bias, info)
      tir.testing.assert_allclose(out, ref, {rtol = 1e-2, atol = 1e-2})
    end)
  end

  it("wgmma with the staged epilogue: int8 conv2_x 3x3 (int32 out + bias), exact at sampled outputs", function()
    local L8 = {N = 128, H = 56, W = 56, C = 64, F = 64, R = 3, S = 3, stride = 1, padding = 1, pad_k = 64}
    local out, x, w, bias, info = run(L8, "implicit", "int8", "wgmma")
    sampled_check(L8, out, x, w, bias, info, true)
  end)

  it("int8 conv2_x 3x3 (IMMA, int32 out + bias): exact at sampled outputs, both variants", function()
    local L = {N = 128, H = 56, W = 56, C = 64, F = 64, R = 3, S = 3, stride = 1, padding = 1, pad_k = 64}
    for _, variant in ipairs({"implicit", "im2col"}) do
      local out, x, w, bias, info = run(L, variant, "int8")
      sampled_check(L, out, x, w, bias, info, true)
    end
  end)
end)
