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

-- a zero-padding stage of an input (or the input itself when pads are all 0)
local function padded(X, shape, pads, dtype)
  local any = false
  for _, p in ipairs(pads) do any = any or p > 0 end
  if not any then return X end
  local pshape = {}
  for d = 1, #shape do pshape[d] = shape[d] + 2 * pads[d] end
  return te.compute(pshape, function(...)
    local idx, conds, src = {...}, {}, {}
    for d = 1, #shape do
      src[d] = idx[d] - pads[d]
      if pads[d] > 0 then
        conds[#conds + 1] = tir.ge(idx[d], pads[d])
        conds[#conds + 1] = tir.lt(idx[d], shape[d] + pads[d])
      end
    end
    return tir.if_then_else(tir.all(table.unpack(conds)), X[src], tir.const(0, dtype))
  end, "pad")
end

--- 2-D convolution.  o: {layout = "NHWC" | "NCHW", stride, pad, dilation, groups, dtype}.
-- NHWC: input N x H x W x C, weight R x S x C/g x O; NCHW: N x C x H x W, weight O x C/g x R x S.
function W.conv2d(N, H, Wd, C, O, R, S, o)
  o = o or {}
  local layout, st, pd, dl, g = o.layout or "NHWC", o.stride or 1, o.pad or 0, o.dilation or 1, o.groups or 1
  local dtype = o.dtype or "float16"
  local acc = acc_of(dtype)
  local cg, og = C // g, O // g
  local OH = (H + 2 * pd - dl * (R - 1) - 1) // st + 1
  local OW = (Wd + 2 * pd - dl * (S - 1) - 1) // st + 1
  local nhwc = layout == "NHWC"
  local I = te.placeholder(nhwc and {N, H, Wd, C} or {N, C, H, Wd}, dtype, "I")
  local Wt = te.placeholder(nhwc and {R, S, cg, O} or {O, cg, R, S}, dtype, "W")
  local P = padded(I, nhwc and {N, H, Wd, C} or {N, C, H, Wd}, nhwc and {0, pd, pd, 0} or {0, 0, pd, pd}, dtype)
  local rh, rw, rc = te.reduce_axis({0, R}, "rh"), te.reduce_axis({0, S}, "rw"), te.reduce_axis({0, cg}, "rc")
  local out
  local function body(n, h, w, oc)
    local x = nhwc and P[{n, h * st + rh * dl, w * st + rw * dl, rc}] or P[{n, rc, h * st + rh * dl, w * st + rw * dl}]
    local wv = nhwc and Wt[{rh, rw, rc, oc}] or Wt[{oc, rc, rh, rw}]
    return te.sum(te.cast(acc, x) * te.cast(acc, wv), {rh, rw, rc})
  end
  if g == 1 then
    out = te.compute(nhwc and {N, OH, OW, O} or {N, O, OH, OW}, nhwc and function(n, h, w, oc) return body(n, h, w, oc) end
                     or function(n, oc, h, w) return body(n, h, w, oc) end, "conv")
  else

    -- grouped: the output channel is (group, channel in group); the group is a batch index
    -- both operands use
    assert(nhwc, "grouped conv: NHWC only here")
    local out5 = te.compute({N, OH, OW, g, og}, function(n, h, w, gi, oc)
      return te.sum(te.cast(acc, P[{n, h * st + rh * dl, w * st + rw * dl, gi * cg + rc}]) * te.cast(acc, Wt[{rh, rw, rc, gi * og + oc}]),
                    {rh, rw, rc})
    end, "conv")
    return te.create_prim_func({I, Wt, out5}), "conv"
  end
  return te.create_prim_func({I, Wt, out}), "conv"
end

--- Depthwise convolution (NHWC, multiplier 1): out[n, h, w, c] = sum_{rh, rw} I[n, h + rh, w + rw, c] W[rh, rw, c].
function W.depthwise(N, H, Wd, C, R, S, dtype)
  dtype = dtype or "float16"
  local acc = acc_of(dtype)
  local I = te.placeholder({N, H + R - 1, Wd + S - 1, C}, dtype, "I")
  local Wt = te.placeholder({R, S, C}, dtype, "W")
  local rh, rw = te.reduce_axis({0, R}, "rh"), te.reduce_axis({0, S}, "rw")
  local out = te.compute({N, H, Wd, C}, function(n, h, w, c)
    return te.sum(te.cast(acc, I[{n, h + rh, w + rw, c}]) * te.cast(acc, Wt[{rh, rw, c}]), {rh, rw})
  end, "conv")
  return te.create_prim_func({I, Wt, out}), "conv"
end

--- 1-D convolution (N, L, C) x (R, C, O).
function W.conv1d(N, L, C, O, R, o)
  o = o or {}
  local st, dl, dtype = o.stride or 1, o.dilation or 1, o.dtype or "float16"
  local acc = acc_of(dtype)
  local OL = (L - dl * (R - 1) - 1) // st + 1
  local I = te.placeholder({N, L, C}, dtype, "I")
  local Wt = te.placeholder({R, C, O}, dtype, "W")
  local r, rc = te.reduce_axis({0, R}, "r"), te.reduce_axis({0, C}, "rc")
  local out = te.compute({N, OL, O}, function(n, l, oc)
    return te.sum(te.cast(acc, I[{n, l * st + r * dl, rc}]) * te.cast(acc, Wt[{r, rc, oc}]), {r, rc})
  end, "conv")
  return te.create_prim_func({I, Wt, out}), "conv"
end

--- 3-D convolution NDHWC x (T, R, S, C, O), no padding.
function W.conv3d(N, D, H, Wd, C, O, T, R, S, dtype)
  dtype = dtype or "float16"
  local acc = acc_of(dtype)
  local I = te.placeholder({N, D, H, Wd, C}, dtype, "I")
  local Wt = te.placeholder({T, R, S, C, O}, dtype, "W")
  local rt, rh, rw, rc = te.reduce_axis({0, T}, "rt"), te.reduce_axis({0, R}, "rh"), te.reduce_axis({0, S}, "rw"), te.reduce_axis({0, C}, "rc")
  local out = te.compute({N, D - T + 1, H - R + 1, Wd - S + 1, O}, function(n, d, h, w, oc)
    return te.sum(te.cast(acc, I[{n, d + rt, h + rh, w + rw, rc}]) * te.cast(acc, Wt[{rt, rh, rw, rc, oc}]), {rt, rh, rw, rc})
  end, "conv")
  return te.create_prim_func({I, Wt, out}), "conv"
end

return W
