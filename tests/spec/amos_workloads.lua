-- amos_workloads.lua -- te definitions of the computations the AMOS mapping specs map
-- (matmul in every layout, batched matmul, convolutions).  Each returns a PrimFunc whose
-- multiply-accumulate block is named in the second return value.
local tir = require("tir")
local te = tir.te
local W = {}

local function acc_of(dtype) return (dtype == "int8" or dtype == "uint8") and "int32" or "float32" end

--- C = A B with A stored M x K ("N") or K x M ("T"), B K x N ("N") or N x K ("T").
function W.matmul(M, N, K, layout, dtype)
  dtype = dtype or "float16"
  local acc = acc_of(dtype)
  local ta, tb = layout:sub(1, 1) == "T", layout:sub(2, 2) == "T"
  local A = te.placeholder(ta and {K, M} or {M, K}, dtype, "A")
  local B = te.placeholder(tb and {N, K} or {K, N}, dtype, "B")
  local k = te.reduce_axis({0, K}, "k")
  local C = te.compute({M, N}, function(i, j)
    local a = ta and A[{k, i}] or A[{i, k}]
    local b = tb and B[{j, k}] or B[{k, j}]
    return te.sum(te.cast(acc, a) * te.cast(acc, b), {k})
  end, "C")
  return te.create_prim_func({A, B, C}), "C"
end

--- C[b] = A[b] B[b] (shared_b: B without the batch dimension).
function W.batch_matmul(Bt, M, N, K, shared_b, dtype)
  dtype = dtype or "float16"
  local acc = acc_of(dtype)
  local A = te.placeholder({Bt, M, K}, dtype, "A")
  local B = te.placeholder(shared_b and {K, N} or {Bt, K, N}, dtype, "B")
  local k = te.reduce_axis({0, K}, "k")
  local C = te.compute({Bt, M, N}, function(b, i, j)
    local bv = shared_b and B[{k, j}] or B[{b, k, j}]
    return te.sum(te.cast(acc, A[{b, i, k}]) * te.cast(acc, bv), {k})
  end, "C")
  return te.create_prim_func({A, B, C}), "C"
end

-- Convolutions: tir.ops.conv (lib/tir/ops/conv.lua), the convolution block named "conv".
local function conv_func(dshape, kshape, opts, dtype)
  dtype = dtype or "float16"
  local I = te.placeholder(dshape, dtype, "I")
  local Wt = te.placeholder(kshape, dtype, "W")
  opts.name = "conv"
  local out = tir.ops.conv(I, Wt, opts)
  return te.create_prim_func({I, Wt, out}), "conv"
end

--- 2-D convolution.  o: {layout = "NHWC" | "NCHW", stride, pad, dilation, groups, dtype, out_dtype}.
-- NHWC: input N x H x W x C, weight R x S x C/g x O (HWIO); NCHW: N x C x H x W, weight O x C/g x R x S.
function W.conv2d(N, H, Wd, C, O, R, S, o)
  o = o or {}
  local nhwc = (o.layout or "NHWC") == "NHWC"
  return conv_func(nhwc and {N, H, Wd, C} or {N, C, H, Wd}, nhwc and {R, S, C // (o.groups or 1), O} or {O, C // (o.groups or 1), R, S},
                   {data_layout = nhwc and "NHWC" or "NCHW", stride = o.stride, padding = o.pad, dilation = o.dilation, groups = o.groups,
                    out_dtype = o.out_dtype}, o.dtype)
end

--- Depthwise convolution (NHWC, multiplier 1: groups = C).
function W.depthwise(N, H, Wd, C, R, S, dtype)
  return conv_func({N, H, Wd, C}, {R, S, 1, C}, {groups = C}, dtype)
end

--- 1-D convolution NWC x (R, C, O).
function W.conv1d(N, L, C, O, R, o)
  o = o or {}
  return conv_func({N, L, C}, {R, C, O}, {stride = o.stride, dilation = o.dilation}, o.dtype)
end

--- 3-D convolution NDHWC x (T, R, S, C, O), no padding.
function W.conv3d(N, D, H, Wd, C, O, T, R, S, dtype)
  return conv_func({N, D, H, Wd, C}, {T, R, S, C, O}, {}, dtype)
end

return W
