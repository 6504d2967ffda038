-- gpu_amos_spec.lua -- AMOS-style mappings on a real GPU (#gpu): candidates of convolutions at
-- real sizes measured (tir.amos.measure), the fastest applied, run and checked against a float64
-- reference on sampled outputs (fp16) or exactly (int8); matmul layouts against cuBLAS.
-- Without a GPU: pending.
local tir = require("tir")
local U = require("spec_util")
local W = require("amos_workloads")

local function sampled_check(f, sch, conv_opts, tol)
  local dev = tir.device("cuda", 0)
  local mod = tir.build(sch.mod, "cuda")
  local args = {}
  for i, a in ipairs(tir.testing.random_args(f, 1)) do args[i] = a:to(dev) end
  mod(table.unpack(args))
  local n = args[3]:numel()
  local points = {}
  for i = 1, 1500 do points[i] = (i * 7919 * 104729) % n end
  local ref = tir.testing.ref_conv(args[1], args[2], conv_opts, points)
  local got = args[3]:to(tir.cpu())
  for i, pt in ipairs(points) do
    local d = math.abs(got:get(pt) - ref[i])
    if tol == 0 then assert(d == 0, ("output %d: %s vs %s"):format(pt, tostring(got:get(pt)), tostring(ref[i])))
    else assert(d <= tol * (1 + math.abs(ref[i])), ("output %d: %s vs %s"):format(pt, tostring(got:get(pt)), tostring(ref[i]))) end
  end
  return mod:time_evaluator({number = 10, repeat_ = 3})(table.unpack(args))
end

describe("#gpu amos mappings", function()
  local dev = U.gpu_or_pending(it, function(...) pending(...) end)
  if not dev then return end

  it("conv2d 3x3 56x56x64 -> 64, N = 8: measured candidates, best applied, vs float64", function()
    local f = W.conv2d(8, 56, 56, 64, 64, 3, 3, {pad = 1})
    local cands = tir.amos.measure(tir.amos.mappings(f, "conv", "mma.m16n8k16"), {top = 3})
    print(cands:table(3))
    assert.is_truthy(cands:best().measured)
    local sch = cands:apply()
    print(("conv2d 3x3: %.3f ms"):format(1e3 * sampled_check(f, sch, {padding = 1}, 2e-2)))
  end)

  it("dilated conv2d and a first layer (C = 3, padded K)", function()
    local f = W.conv2d(8, 28, 28, 128, 128, 3, 3, {pad = 2, dilation = 2})
    local sch = tir.amos.apply(f, "conv", "mma.m16n8k16")
    print(("dilated: %.3f ms"):format(1e3 * sampled_check(f, sch, {padding = 2, dilation = 2}, 2e-2)))
    local g = W.conv2d(8, 112, 112, 3, 64, 7, 7, {pad = 3, stride = 2})
    local s2 = tir.amos.apply(g, "conv", "mma.m16n8k16")
    print(("7x7/2 first layer: %.3f ms"):format(1e3 * sampled_check(g, s2, {padding = 3, stride = 2}, 2e-2)))
  end)

  it("int8 conv on IMMA and on dp4a: exact", function()
    local f = W.conv2d(4, 28, 28, 64, 64, 3, 3, {pad = 1, dtype = "int8"})
    local sch = tir.amos.apply(f, "conv", "mma.m16n8k32")
    print(("int8 conv IMMA: %.3f ms"):format(1e3 * sampled_check(f, sch, {padding = 1}, 0)))
    local s2 = tir.amos.apply(f, "conv", "dp4a")
    print(("int8 conv dp4a: %.3f ms"):format(1e3 * sampled_check(f, s2, {padding = 1}, 0)))
  end)

  it("matmul in every layout against cuBLAS-free float64 (odd sizes padded)", function()
    for _, layout in ipairs({"NN", "NT", "TN", "TT"}) do
      local f = W.matmul(1000, 520, 300, layout)
      local sch = tir.amos.apply(f, "C", "mma.m16n8k16")
      local mod = tir.build(sch.mod, "cuda")
      local a = tir.nd.random(layout:sub(1, 1) == "T" and {300, 1000} or {1000, 300}, "float16", dev, {seed = 1})
      local b = tir.nd.random(layout:sub(2, 2) == "T" and {520, 300} or {300, 520}, "float16", dev, {seed = 2})
      local c = tir.nd.empty({1000, 520}, "float32", dev)
      mod(a, b, c)
      tir.testing.assert_allclose(c, tir.testing.ref_matmul(a, b, layout:sub(1, 1) == "T", layout:sub(2, 2) == "T"), {rtol = 1e-2, atol = 1e-2})
    end
  end)
end)
