-- conv2d_common.lua -- shared by conv2d_im2col.lua and conv2d_implicit_gemm.lua: a conv2d layer
-- (NHWC, fp16 in, fp32 accumulate, bias + relu, fp16 out) on tensor cores through
-- tir.schedules.conv2d_tc with the given variant.  On a GPU: a ResNet-50 layer at N = 128
-- (default 56x56x64 -> 64, 3x3, pad 1), checked at sampled outputs against the float64
-- reference (tir.testing.ref_conv), timed (TFLOP/s).  Without one: a small layer on the
-- warp-level simulator against the interpreter and against the float64 reference.
--   argv: [N H W C F R S stride pad]
local tir = require("tir")
local util = require("tir.util")
local ct = require("tir.schedules.conv2d_tc")

return function(variant, argv)
  local dev = tir.device("cuda", 0)
  local has_gpu, why = dev:exists()
  local defaults = has_gpu and {128, 56, 56, 64, 64, 3, 3, 1, 1} or {2, 8, 8, 16, 32, 3, 3, 1, 1}
  local v = {}
  for i = 1, 9 do
    local a = argv and argv[i]
    v[i] = a == nil and defaults[i] or (math.tointeger(tonumber(a)) or -1)
    if v[i] < (i == 9 and 0 or 1) then
      io.stderr:write("usage: tirlua scripts/examples/conv2d_" .. variant .. ".lua [N H W C F R S stride pad]\n")
      os.exit(1)
    end
  end
  local layer = {N = v[1], H = v[2], W = v[3], C = v[4], F = v[5], R = v[6], S = v[7], stride = v[8], padding = v[9],
                 bias = true, activation = "relu"}
  local probe = select(2, ct.workload(layer))
  -- a GPU: the layer's tiles (tuned or default); the simulator: small tiles for a small layer
  local small = {BM = 32, BN = 32, BK = 32, warp_m = 16, warp_n = 16, stages = 2}
  local opts, how = ct.layer_options(probe, (not has_gpu) and small or nil)
  if opts.BM and probe.M % opts.BM ~= 0 then layer.pad_m = opts.BM end
  local func, info = ct.workload(layer)
  opts.variant = (variant == "implicit_gemm") and "implicit" or "im2col"
  local sch = ct.schedule(func, opts)
  local json = require("tir.json")
  print(("-- conv2d %s: N=%d %dx%dx%d -> %d, %dx%d stride %d pad %d; GEMM M=%d (rows %d) N=%d K=%d (padded %d); tiles %s (%s)"):format(
    opts.variant, layer.N, layer.H, layer.W, layer.C, layer.F, layer.R, layer.S, layer.stride, layer.padding, info.M, info.Mp, info.F,
    info.K, info.Kp, json.encode(opts), how))
  local mod = tir.build(sch.mod, "cuda")
  local src = mod:get_source("cuda")
  local kernels = select(2, src:gsub("__global__", ""))
  print(("-- %d kernel(s); %s"):format(kernels, opts.variant == "implicit" and
        "the im2col indexing is inside the cp.async stage (no im2col matrix in global memory)" or
        ("the im2col matrix is a global workspace of %d x %d fp16 (%.1f MB)"):format(info.Mp, info.Kp, info.Mp * info.Kp * 2 / 1e6)))
  local ptx = mod:get_source("ptx") or ""
  for _, x in ipairs(tir.testing.ptx_instructions(ptx, {"mma%.sync%.aligned[%w%.]*", "ldmatrix%.sync%.aligned[%w%.]*",
      "cp%.async%.c[ga]%.shared%.global[^;]*"})) do
    print(("  %4d x  %s"):format(x.count, x.first))
  end
  local ref_opts = {stride = layer.stride, padding = layer.padding}
  if has_gpu then
    local x = tir.nd.random({layer.N, layer.H, layer.W, layer.C}, "float16", dev, {seed = 1})
    local w = tir.nd.random({layer.R, layer.S, layer.C, layer.F}, "float16", dev, {seed = 2})
    local bias = tir.nd.random({layer.F}, "float32", dev, {seed = 3})
    local wm = tir.nd.empty({info.Kp, info.F}, "float16", dev)
    tir.build(ct.pack_weight_schedule(ct.pack_weight({R = layer.R, S = layer.S, C = layer.C, F = layer.F})).mod, "cuda")(w, wm)
    local out = tir.nd.empty({info.Mp, info.F}, "float16", dev)
    mod(x, wm, bias, out)
    -- sampled outputs (rows < M) against the float64 reference: 4096, fewer for deep K (the
    -- float64 loops run in Lua)
    ref_opts.bias, ref_opts.activation = bias, "relu"
    local npts = math.max(256, math.min(4096, 1200000 // info.K))
    local worst = ct.check_points(out, x, w, ref_opts, info, npts)
    local t = mod:time_evaluator({number = 10, repeat_ = 5})(x, wm, bias, out)
    print(("-- %s: %.3f ms, %.1f TFLOP/s (2*M*F*K = %.2f GFLOP); %d sampled outputs vs float64: max abs error %.3g"):format(
      dev:info().name, t * 1e3, info.flops / t / 1e12, info.flops / 1e9, npts, worst))
  else
    print(("-- no GPU (%s): the lowered kernels on the simulator, against the interpreter and the float64 reference"):format(why))
    local args = tir.testing.random_args(func, 1)
    local rep = tir.simulate(mod, args, {reference = func, rtol = 1e-3, atol = 1e-3})
    -- the HWIO kernel behind the random packed weight (rows k < K) for the reference
    local w = ct.unpack_weight(layer, args[2])
    ref_opts.bias, ref_opts.activation = args[3], "relu"
    local ref = tir.testing.ref_conv(args[1], w, ref_opts)
    local worst = 0
    for m = 0, info.M - 1 do
      for f = 0, info.F - 1 do worst = math.max(worst, math.abs(args[4]:get(m, f) - ref:get(m * info.F + f))) end
    end
    if worst > 1e-2 then error(("the simulated result differs from the float64 reference by %.3g"):format(worst)) end
    print(("simulator: %s, %s, %d cp.async, %s, no races; equal to the interpreter; max abs error vs float64 %.3g"):format(
      util.count(rep.kernels, "kernel"), util.count(rep.ctas, "CTA"), rep.cp_async, util.count(rep.barriers, "barrier"), worst))
  end
end
