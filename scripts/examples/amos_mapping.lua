-- amos_mapping.lua -- AMOS-style automatic mapping of convolutions onto tensor cores
-- (tir.amos, docs/AMOS.md).  For a 3x3 conv2d and a dilated 3x3 conv2d (NHWC, fp16 in, fp32
-- accumulate, tir.ops.conv) it prints the table of candidate mappings of the convolution's
-- iteration space onto mma.sync m16n8k16 (which loops are fused into the intrinsic's M, N, K,
-- the padding, the predicted cost), applies the best one with schedule primitives and checks it:
--   without a GPU: small sizes, the scheduled function on the interpreter and the lowered
--     kernels on the simulator, both against the unscheduled function;
--   with a GPU: ResNet-50-like sizes, the top candidates built and timed (tir.amos.measure),
--     the fastest applied, run, checked against a float64 reference (tir.testing.ref_conv) on
--     sampled outputs and timed.
-- Usage: tirlua scripts/examples/amos_mapping.lua [--small]   (--small: the CPU sizes on a GPU too)
local tir = require("tir")
local te = tir.te

local small = false
for _, a in ipairs(arg or {}) do
  if a == "--small" then small = true else error("usage: amos_mapping.lua [--small]", 0) end
end
local dev = tir.device("cuda", 0)
local gpu = dev:exists() and not small

local function conv2d(N, H, W, C, F, R, opts)
  local I = te.placeholder({N, H, W, C}, "float16", "I")
  local K = te.placeholder({R, R, C, F}, "float16", "W")
  local o = {name = "conv"}
  for k, v in pairs(opts) do o[k] = v end
  local out = tir.ops.conv(I, K, o)
  return te.create_prim_func({I, K, out}), o
end

local cases = gpu and {
  {"conv2d 3x3, 56x56x64 -> 64, N = 32 (ResNet-50 stage 1)", {32, 56, 56, 64, 64, 3, {padding = 1}}},
  {"dilated conv2d 3x3 (dilation 2), 28x28x128 -> 128, N = 32", {32, 28, 28, 128, 128, 3, {padding = 2, dilation = 2}}},
} or {
  {"conv2d 3x3, 8x8x16 -> 16, N = 1", {1, 8, 8, 16, 16, 3, {padding = 1}}},
  {"dilated conv2d 3x3 (dilation 2), 9x9x8 -> 24, N = 1 (padded: M = 81, N = 24, K = 72)", {1, 9, 9, 8, 24, 3, {padding = 2, dilation = 2}}},
}

for _, case in ipairs(cases) do
  local title, a = case[1], case[2]
  local f, copts = conv2d(a[1], a[2], a[3], a[4], a[5], a[6], a[7])
  print(("== %s"):format(title))
  local cands = tir.amos.mappings(f, "conv", "mma.m16n8k16")
  print(cands)
  if gpu then
    tir.amos.measure(cands, {top = 4})
    print("\nmeasured (H200 or whatever device 0 is):")
    print(cands:table(4))
  end
  local sch, c, o = cands:apply() -- the best: measured when measured, else predicted
  print(("\napplied #%d: %s  (tc_gemm tiles BM=%d BN=%d BK=%d, %d stage(s))"):format(c.index, c:describe(), o.BM, o.BN, o.BK, o.stages))
  local steps = {}
  for line in sch:trace():gmatch("[^\n]+") do
    local p = line:match("sch:([%w_]+)%(")
    if p and not steps[p] then steps[p] = true steps[#steps + 1] = p end
  end
  print("primitives in the trace: " .. table.concat(steps, ", "))
  if gpu then
    local mod = tir.build(sch.mod, "cuda")
    local args = {}
    for i, a in ipairs(tir.testing.random_args(f, 1)) do args[i] = a:to(dev) end
    mod(table.unpack(args))
    local n_out = args[3]:numel()
    local points = {}
    for i = 1, 2000 do points[i] = (i * 7919 * 104729) % n_out end
    local ref = tir.testing.ref_conv(args[1], args[2], {padding = copts.padding, dilation = copts.dilation}, points)
    local got = args[3]:to(tir.cpu())
    local worst = 0
    for i, pt in ipairs(points) do
      local err = math.abs(got:get(pt) - ref[i]) / (1 + math.abs(ref[i]))
      if err > worst then worst = err end
    end
    local sec = mod:time_evaluator({number = 20, repeat_ = 3})(table.unpack(args))
    local flops = 2 * c.batch_ext * c.ext[1] * c.ext[2] * c.ext[3]
    print(("GPU: %.3f ms, %.1f TFLOP/s, max rel error %.2e on 2000 sampled outputs vs float64"):format(sec * 1e3, flops / sec / 1e12, worst))
    if worst > 2e-2 then error("amos_mapping: WRONG result", 0) end
  else
    local ins = tir.testing.random_args(f, 1)
    local ref = tir.testing.copy_args(ins)
    tir.interpret(f, ref)
    tir.interpret(sch.mod, ins)
    local st = tir.testing.assert_allclose(ins[3], ref[3], {rtol = 1e-3, atol = 1e-3})
    print(("interpreter: the mapped schedule vs the unscheduled conv, max abs error %.3g"):format(st.max_abs))
    local mod = tir.build(sch.mod, "cuda -arch=sm_80", {compile = false})
    tir.simulate(mod, tir.testing.random_args(f, 2), {reference = f, rtol = 1e-3, atol = 1e-3})
    print("simulator: the lowered kernels (ldmatrix, mma.sync, cp.async) agree with the unscheduled conv")
  end
  print()
end
print("amos_mapping: ok")
