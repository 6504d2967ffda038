-- conv_ops_spec.lua -- tir.ops.conv & co (conv1d/2d/3d, layouts, stride, padding, dilation, groups,
-- bias / activation / requantize epilogues) and tir.ops.im2col / conv_weight_matrix: the
-- interpreter against tir.testing.ref_conv (float64 direct loops) on random inputs; int8 exact;
-- bad input as tir.Errors naming the op.
local tir = require("tir")
local U = require("spec_util")
local te, ops = tir.te, tir.ops

-- runs the te function on random args and returns them
local function run(params, seed)
  local f = te.create_prim_func(params)
  U.assert_roundtrip(f)
  local args = tir.testing.random_args(f, seed or 1)
  tir.interpret(f, args)
  return args, f
end

local function close(got, ref, tol)
  tir.testing.assert_allclose(got, ref, {rtol = tol or 1e-5, atol = tol or 1e-5})
end

local CASES = {
  {name = "conv2d NHWC stride 2 pad 1", ds = {2, 7, 6, 3}, ks = {3, 3, 3, 4}, o = {stride = 2, padding = 1}},
  {name = "conv2d NHWC dilation 2, asymmetric padding", ds = {1, 8, 9, 2}, ks = {3, 2, 2, 3}, o = {dilation = 2, padding = {1, 0, 2, 1}}},
  {name = "conv2d NCHW pad SAME", ds = {2, 3, 6, 5}, ks = {4, 3, 3, 3}, o = {data_layout = "NCHW", padding = "SAME"}},
  {name = "conv2d NCHW stride {2, 1} dilation {1, 2}", ds = {1, 2, 9, 8}, ks = {3, 2, 3, 3}, o = {data_layout = "NCHW", stride = {2, 1}, dilation = {1, 2}, padding = 1}},
  {name = "grouped conv2d NHWC", ds = {1, 5, 5, 6}, ks = {3, 3, 2, 9}, o = {groups = 3, padding = 1}},
  {name = "depthwise conv2d NCHW", ds = {1, 4, 6, 6}, ks = {4, 1, 3, 3}, o = {groups = 4, data_layout = "NCHW", padding = 1}},
  {name = "conv2d NHWC with OHWI kernel", ds = {2, 5, 5, 3}, ks = {4, 3, 3, 3}, o = {kernel_layout = "OHWI", padding = 1}},
  {name = "conv1d NWC", ds = {2, 11, 3}, ks = {3, 3, 5}, o = {stride = 2, padding = 1}},
  {name = "conv1d NCW dilation 3", ds = {1, 2, 12}, ks = {4, 2, 3}, o = {data_layout = "NCW", dilation = 3, padding = {2, 1}}},
  {name = "conv3d NDHWC", ds = {1, 4, 5, 4, 2}, ks = {2, 3, 2, 2, 3}, o = {padding = 1, stride = {1, 2, 1}}},
  {name = "conv3d NCDHW grouped", ds = {1, 4, 4, 4, 3}, ks = {4, 2, 3, 3, 2}, o = {data_layout = "NCDHW", groups = 2, padding = {1, 1, 0}}},
}

describe("tir.ops.conv against the float64 reference", function()
  for _, c in ipairs(CASES) do
    it(c.name, function()
      local X = te.placeholder(c.ds, "float32", "X")
      local W = te.placeholder(c.ks, "float32", "W")
      local Y = ops.conv(X, W, c.o)
      local args = run({X, W, Y}, 3)
      close(args[3], tir.testing.ref_conv(args[1], args[2], c.o))
    end)
  end

  it("bias and relu as an epilogue stage (block <name>_epilogue)", function()
    local X = te.placeholder({2, 6, 6, 3}, "float32", "X")
    local W = te.placeholder({3, 3, 3, 5}, "float32", "W")
    local B = te.placeholder({5}, "float32", "bias")
    local Y = ops.conv(X, W, {padding = 1, bias = B, activation = "relu", name = "conv"})
    assert.are.equal("conv_epilogue", Y.name)
    local args, f = run({X, W, B, Y}, 5)
    assert.truthy(tostring(f):find('T.block("conv"', 1, true))
    local ref = tir.testing.ref_conv(args[1], args[2], {padding = 1, bias = args[3], activation = "relu"})
    close(args[4], ref)
    local zeros = 0
    for p = 0, args[4]:numel() - 1 do if args[4]:get(p) == 0 then zeros = zeros + 1 end end
    assert.is_true(zeros > 0) -- relu clipped something
  end)

  it("float16 inputs accumulate in float32 (out_dtype float16 rounds once, at the end)", function()
    local X = te.placeholder({1, 6, 6, 16}, "float16", "X")
    local W = te.placeholder({3, 3, 16, 8}, "float16", "W")
    local Y32 = ops.conv2d_nhwc(X, W, 1, 1, 1)
    assert.are.equal("float32", Y32.dtype)
    local Y16 = ops.conv(X, W, {padding = 1, out_dtype = "float16", name = "conv16"})
    assert.are.equal("float16", Y16.dtype)
    local args = run({X, W, Y32, Y16}, 7)
    close(args[3], tir.testing.ref_conv(args[1], args[2], {padding = 1}), 1e-5)
    -- the fp16 output is the fp32 result rounded to fp16
    for p = 0, args[4]:numel() - 1, 7 do
      local r = tir.nd.array({args[3]:get(p)}, "float16"):get(0)
      assert.are.equal(r, args[4]:get(p))
    end
  end)

  it("int8 accumulates in int32, bit-exact (int8 x uint8 mixes allowed)", function()
    for _, dts in ipairs({{"int8", "int8"}, {"uint8", "int8"}}) do
      local X = te.placeholder({2, 5, 5, 8}, dts[1], "X")
      local W = te.placeholder({3, 3, 8, 4}, dts[2], "W")
      local Y = ops.conv(X, W, {padding = 1, stride = 2})
      assert.are.equal("int32", Y.dtype)
      local args = run({X, W, Y}, 11)
      local ref = tir.testing.ref_conv(args[1], args[2], {padding = 1, stride = 2})
      for p = 0, ref:numel() - 1 do assert.are.equal(ref:get(p), args[3]:get(p)) end
    end
  end)

  it("requantize: int8 output through quantized_matmul's rounding, per-channel scale", function()
    local X = te.placeholder({1, 4, 4, 8}, "int8", "X")
    local W = te.placeholder({3, 3, 8, 4}, "int8", "W")
    local B = te.placeholder({4}, "int32", "bias")
    local S = te.placeholder({4}, "float32", "scale")
    local Y = ops.conv(X, W, {padding = 1, bias = B, requantize = {scale = "per_channel", out_zero_point = -3}, scale_tensor = S,
                              activation = "relu"})
    assert.are.equal("int8", Y.dtype)
    local f = te.create_prim_func({X, W, B, S, Y})
    local args = tir.testing.random_args(f, 2)
    args[4] = tir.nd.array({0.01, 0.02, 0.5, 0.003}, "float32")
    tir.interpret(f, args)
    local ref = tir.testing.ref_conv(args[1], args[2], {padding = 1, bias = args[3]})
    for p = 0, ref:numel() - 1 do
      local ch = p % 4
      local x = tir.nd.array({ref:get(p)}, "float32"):get(0) * args[4]:get(ch)
      x = tir.nd.array({x}, "float32"):get(0)
      local r = math.floor(x + 0.5)
      if x + 0.5 == r and r % 2 == 1 then r = r - 1 end -- half to even
      r = math.max(math.min(r, 127 + 3), -3 + 3) - 3  -- relu raises the low end to the zero point
      assert.are.equal(r, args[5]:get(p))
    end
  end)

  it("the positional topi forms", function()
    local X = te.placeholder({1, 3, 7, 7}, "float32", "X")
    local W = te.placeholder({6, 1, 3, 3}, "float32", "W")
    local Y = ops.group_conv2d_nchw(X, W, 2, 1, 1, 3)
    local args = run({X, W, Y}, 4)
    close(args[3], tir.testing.ref_conv(args[1], args[2], {data_layout = "NCHW", stride = 2, padding = 1, groups = 3}))
    local X1 = te.placeholder({2, 3, 9}, "float32", "X1")
    local W1 = te.placeholder({4, 3, 3}, "float32", "W1")
    local Y1 = ops.conv1d_ncw(X1, W1, 1, 0, 2)
    assert.are.same({2, 4, 5}, Y1.shape)
  end)
end)

describe("tir.ops.im2col", function()
  for _, layout in ipairs({"NHWC", "NCHW"}) do
    it("im2col x conv_weight_matrix is the convolution (" .. layout .. ", stride, padding, dilation, K padded)", function()
      local nhwc = layout == "NHWC"
      local ds = nhwc and {2, 7, 6, 3} or {2, 3, 7, 6}
      local ks = nhwc and {3, 3, 3, 5} or {5, 3, 3, 3}
      local X = te.placeholder(ds, "float32", "X")
      local W = te.placeholder(ks, "float32", "W")
      local o = {stride = {2, 1}, padding = {1, 2, 0, 1}, dilation = {1, 2}, data_layout = layout}
      local A, plan = ops.im2col(X, {kernel = {3, 3}, stride = o.stride, padding = o.padding, dilation = o.dilation, data_layout = layout, pad_k = 32, pad_m = 16})
      local Mr = 2 * plan.osz[1] * plan.osz[2]
      assert.are.same({(Mr + 15) // 16 * 16, 32}, A.shape)
      local Wm = ops.conv_weight_matrix(W, {data_layout = layout, pad_k = 32})
      assert.are.same({32, 5}, Wm.shape)
      local k = te.reduce_axis({0, 32}, "k")
      local Cm = te.compute({A.shape[1], 5}, function(i, j) return te.sum(A[{i, k}] * Wm[{k, j}], {k}) end, "C")
      local args = run({X, W, Cm}, 9)
      local ref = tir.testing.ref_conv(args[1], args[2], o)
      -- ref is N, P, Q, F (NHWC) or N, F, P, Q: row m = (n, p, q), column f
      local P, Q = plan.osz[1], plan.osz[2]
      for m = 0, A.shape[1] - 1 do
        for f = 0, 4 do
          local got = args[3]:get(m, f)
          if m >= Mr then
            assert.are.equal(0, got) -- padded rows are zero
          else
            local n, p, q = m // (P * Q), m // Q % P, m % Q
            local want = nhwc and ref:get(n, p, q, f) or ref:get(n, f, p, q)
            assert.is_true(math.abs(got - want) <= 1e-5 * (1 + math.abs(want)), ("m=%d f=%d: %g vs %g"):format(m, f, got, want))
          end
        end
      end
    end)
  end

  it("the k order: NHWC is (r, s, c) with c fastest, NCHW (c, r, s)", function()
    local X = te.placeholder({1, 3, 3, 2}, "float32", "X")
    local A = ops.im2col(X, {kernel = {2, 2}})
    local f = te.create_prim_func({X, A})
    local x = {}
    for h = 1, 3 do x[h] = {} for w = 1, 3 do x[h][w] = {h * 10 + w, -(h * 10 + w)} end end
    local args = {tir.nd.array({x}, "float32"), tir.nd.empty({4, 8}, "float32")}
    tir.interpret(f, args)
    -- row 0 (p = q = 0): (r, s) = (0,0), (0,1), (1,0), (1,1), two channels each
    assert.are.same({11, -11, 12, -12, 21, -21, 22, -22}, args[2]:to_table()[1])
    local Xc = te.placeholder({1, 2, 3, 3}, "float32", "Xc")
    local Ac = ops.im2col(Xc, {kernel = {2, 2}, data_layout = "NCHW"})
    local g = te.create_prim_func({Xc, Ac})
    local xc = {{}, {}}
    for h = 1, 3 do xc[1][h], xc[2][h] = {}, {} for w = 1, 3 do xc[1][h][w] = h * 10 + w; xc[2][h][w] = -(h * 10 + w) end end
    local a2 = {tir.nd.array({xc}, "float32"), tir.nd.empty({4, 8}, "float32")}
    tir.interpret(g, a2)
    assert.are.same({11, 12, 21, 22, -11, -12, -21, -22}, a2[2]:to_table()[1])
  end)
end)

describe("convolution errors name the op", function()
  local X = te.placeholder({1, 8, 8, 6}, "float16", "X")
  local W = te.placeholder({3, 3, 6, 4}, "float16", "W")
  it("shape mismatch", function()
    U.expect_error(function() ops.conv2d_nhwc(X, te.placeholder({3, 3, 5, 4}, "float16", "W5"), 1, 1, 1) end,
                   "conv2d_nhwc", "I = 5 input channels", "C = 6")
    U.expect_error(function() ops.conv2d_nchw(X, W, 1, 1, 1) end, "conv2d_nchw", "I = 3", "C = 8")
    U.expect_error(function() ops.conv(te.placeholder({8, 8, 6}, "float16", "X3"), W, {data_layout = "NHWC"}) end,
                   "conv", "has 3 dimensions, but data_layout NHWC has 4")
  end)
  it("groups that do not divide the channels", function()
    U.expect_error(function() ops.group_conv2d_nhwc(X, te.placeholder({3, 3, 2, 4}, "float16", "Wg"), 1, 1, 1, 4) end,
                   "group_conv2d_nhwc", "groups = 4 does not divide the 6 input channels")
    U.expect_error(function() ops.group_conv2d_nhwc(X, te.placeholder({3, 3, 2, 4}, "float16", "Wg"), 1, 1, 1, 3) end,
                   "groups = 3 does not divide the 4 output channels")
  end)
  it("negative padding, bad stride, empty output", function()
    U.expect_error(function() ops.conv2d_nhwc(X, W, 1, -1, 1) end, "conv2d_nhwc", "padding must not be negative")
    U.expect_error(function() ops.conv2d_nhwc(X, W, 0, 1, 1) end, "conv2d_nhwc", "stride[1] must be an integer >= 1")
    U.expect_error(function() ops.conv2d_nhwc(X, W, 1, 0, 5) end, "conv2d_nhwc", "the output is empty along H")
    U.expect_error(function() ops.conv2d_nhwc(X, W, 1, {1, 2, 3}, 1) end, "conv2d_nhwc", "padding must be an integer, a list of 2 or 4")
  end)
  it("dtypes, layouts, options", function()
    U.expect_error(function() ops.conv2d_nhwc(X, te.placeholder({3, 3, 6, 4}, "float32", "Wf"), 1, 1, 1) end,
                   "conv2d_nhwc", "data is float16 but kernel is float32")
    U.expect_error(function() ops.conv(te.placeholder({1, 4, 4, 2}, "int32", "Xi"), te.placeholder({1, 1, 2, 2}, "int32", "Wi")) end,
                   "conv", "data dtype int32 is not supported")
    U.expect_error(function() ops.conv(X, W, {data_layout = "NHWW"}) end, "conv", "names W twice")
    U.expect_error(function() ops.conv(X, W, {paddng = 1}) end, "conv", "unknown option 'paddng'", "did you mean 'padding'")
    U.expect_error(function() ops.conv(X, W, {bias = te.placeholder({3}, "float32", "b3")}) end, "bias b3 must have shape {4}")
    U.expect_error(function() ops.conv(X, W, {activation = "gelu"}) end, "activation must be")
    U.expect_error(function() ops.conv(X, W, {requantize = {scale = 0.5}}) end, "requantize is for 8-bit integer convolutions")
    U.expect_error(function() ops.conv2d_nhwc(X, W, 1, 1, 1, "float32", "extra") end, "too many arguments")
  end)
  it("im2col and conv_weight_matrix", function()
    U.expect_error(function() ops.im2col(X, {stride = 1}) end, "im2col", "opts.kernel")
    U.expect_error(function() ops.im2col(X, {kernel = {3}}) end, "im2col", "kernel must be a list of 2 spatial extents")
    U.expect_error(function() ops.im2col(X, {kernel = {3, 3}, padding = -1}) end, "im2col", "padding must not be negative")
    U.expect_error(function() ops.im2col(X, {kernel = {3, 3}, pad_k = 0}) end, "im2col", "pad_k must be a positive integer")
    U.expect_error(function() ops.conv_weight_matrix(W, {kernel_layout = "OIHWX"}) end, "conv_weight_matrix", "does not fit")
  end)
end)
