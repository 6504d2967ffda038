--- tir.schedules.conv2d_tc: convolution on tensor cores as a GEMM, two lowerings built from
-- public schedule primitives (docs/CONVOLUTION.md has the index algebra):
--
--   GEMM view (NHWC data, groups = 1; the others below):  out[m, f] = epi(sum_k A[m, k] * Wm[k, f])
--     m = (n * P + p) * Q + q  (M = N * P * Q rows: output pixels; out [M, F] is the NHWC output's memory)
--     k = (r * S + s) * C + c  (K = R * S * C, padded to Kp, a multiple of pad_k)
--     A[m, k] = X[n, p*sh - pt + r*dh, q*sw - pl + s*dw, c], 0 in the padding and for k >= K
--     Wm[k, f] = the kernel packed as a [Kp, F] matrix (rows k >= K zero): pack_weight, once per weight
--
--   variant "im2col" (a): block "A_im2col" is a kernel of its own writing the [M, Kp] matrix to
--     global memory (16-byte vector stores, the bounds check uniform per vector), then
--     tir.schedules.tc_gemm multiplies it (mma.sync / WMMA, cp.async pipeline) -- two kernels.
--   variant "implicit" (b): "A_im2col" is tc_gemm's A operand stage (tc_gemm's a_stage): per k
--     step each thread gathers its 16 bytes of the A tile straight from X into shared memory
--     (cp.async with zero-fill, src-size 0, where the pixel is in the padding or k >= K), so no
--     im2col matrix exists in global memory -- one kernel.
--   Both fuse the epilogue "D" (bias, relu, cast) into the GEMM's write-back.
--   intrin = "wgmma" (sm_90a; tc_gemm_wgmma.lua): either variant on Hopper's wgmma.mma_async, the
--     workload built with weight_layout = "FK" (Wm [F, Kp]: both operands K-major, wgmma's layout);
--     the implicit variant's im2col block is the 128-byte-swizzled A tile itself (its zero-filling
--     cp.async gather writes the swizzled layout the descriptors read).  The epilogue (cast, + bias,
--     relu) runs from the accumulators staged through a shared tile per warpgroup and stores 16
--     bytes a thread (tc_gemm_wgmma's epilogue_store = "staged", the default here; "direct": the
--     plain cast fused into the fragments' 4-byte stores).
--
-- Vector copies need 16 contiguous bytes of one pixel: C a multiple of 8 (fp16) / 16 (int8).  A
-- smaller C (3 of a first layer) is padded to 8-byte pixels (padded_channels: a kernel writes
-- X_pad, the packed weight has zero rows there) and copied one 8-byte cp.async per pixel (on mma.sync
-- and on wgmma: an 8-byte piece stays inside one 16-byte swizzle chunk); other channel counts are
-- correct but copied element by element.
--
-- Groups (groups = G, NHWC): the group is a batch dimension of the GEMM (blockIdx.z), Wm [G, Kgp,
-- F/G], a kernel of its own writes the NHWC output; F/G must be a multiple of 16 (depthwise: refused,
-- with the reason).
-- NCHW (data_layout = "NCHW"): kernels of their own transpose X into the NHWC copy "X_nhwc" and
-- the [M, F] result into out [N, F, P, Q] ("out_nchw"); the GEMM between them is the NHWC one.
--
-- Functions: workload(o) -> PrimFunc, info; schedule(func, opts) -> Schedule;
-- pack_weight(o) -> PrimFunc (W -> Wm), pack_weight_schedule(func) -> Schedule (a GPU kernel),
-- unpack_weight(o, wm); layer_options(info [, override]) -> tiles, how (tc_gemm's tuned GEMM for
-- a 1x1 stride-1 layer: is_gemm; this layer's tuning record: workload_key, tune, space; else
-- default_tiles; wgmma_tiles for an "FK" workload); wgmma_space(info), wgmma_tiles(info [, sms]);
-- wgmma_gemm(info [, opts]), wgmma_gemm_space(info [, level]), wgmma_gemm_tiles(info) (a 1x1 stride-1 layer
-- as tc_gemm's NT GEMM on wgmma with TMA);
-- padded_channels(C, dtype [, pad_c]); check_points (sampled float64 checks).
-- Tests: tests/spec/conv_tc_spec.lua (simulator), gpu_conv_spec.lua (#gpu).
local tir = require("tir")
local util = require("tir.util")

-- info must be the second result of M.workload (errors name prim)
local function check_info(P, info)
  if type(info) ~= "table" or type(info.plan) ~= "table" or math.type(info.M) ~= "integer" or math.type(info.F) ~= "integer" then
    util.raise("TypeError", P, "info must be the layer description conv2d_tc.workload returns second, got %s", util.describe(info))
  end
end

local te = tir.te
local tc = require("tir.schedules.tc_gemm")
local ops_im2col = require("tir.ops.im2col")

local M = {}

local WORKLOAD_OPTS = {N = "positive", H = "positive", W = "positive", C = "positive", F = "positive", R = "positive", S = "positive",
                       stride = "any", padding = "any", dilation = "any", dtype = "dtype", out_dtype = "dtype", bias = "boolean",
                       activation = "string", pad_k = "positive", pad_m = "positive", pad_c = "positive", kernel_layout = "string",
                       requantize = "table", data_layout = "string", groups = "positive", weight_layout = "string"}
M.WORKLOAD_OPTS = WORKLOAD_OPTS

local ACC = {float16 = "float32", bfloat16 = "float32", int8 = "int32", uint8 = "int32"}

-- The packed weight's layout from o.weight_layout (workload's and pack_weight's option): "KF"
-- (default: Wm [Kp, F], the GEMM's B stored k x n) or "FK" (Wm [F, Kp], K-major: B stored n x k,
-- what wgmma reads; for an OHWI kernel it is the kernel itself with K padded).  Errors name prim.
local function weight_layout(P, o)
  local wl = o.weight_layout or "KF"
  if wl ~= "KF" and wl ~= "FK" then
    util.raise("ValueError", P, "weight_layout must be \"KF\" (Wm [Kp, F]) or \"FK\" (Wm [F, Kp], K-major: intrin = \"wgmma\"), got %s",
               util.show(wl))
  end
  if wl == "FK" and (o.groups or 1) > 1 then util.raise("ValueError", P, "weight_layout = \"FK\" is not supported with groups > 1") end
  return wl
end

local function checked(P, o)
  util.check_opts(P, o, WORKLOAD_OPTS)
  for _, k in ipairs({"N", "H", "W", "C", "F", "R", "S"}) do
    if o[k] == nil then util.raise("ValueError", P, "option %s is required (N, H, W, C, F, R, S: the layer's sizes)", k) end
  end
  local dt = o.dtype or "float16"
  if not ACC[dt] then util.raise("TypeError", P, "dtype must be float16, bfloat16, int8 or uint8 (tensor-core inputs), got %s", util.show(dt)) end
  if o.activation ~= nil and o.activation ~= "relu" then util.raise("ValueError", P, "activation must be \"relu\" or nil, got %s", util.show(o.activation)) end
  weight_layout(P, o)
  return dt
end


local ESIZE = {float16 = 2, bfloat16 = 2, int8 = 1, uint8 = 1}

--- The channel count the im2col gather works on: C itself when a pixel's channels fill whole
-- 16-byte vectors (C * element bytes a multiple of 16), or when C is at least 16 bytes; a smaller C
-- (the RGB input's C = 3) rounded up to 8 bytes (fp16: 4, int8: 8 channels), so that each pixel
-- is one 8-byte cp.async instead of C element copies.  pad_c (a multiple to round C up to; 1: none)
-- overrides.  workload and pack_weight both use it (the zero channels meet zero weights).
function M.padded_channels(C, dtype, pad_c)
  if math.type(C) ~= "integer" or C < 1 then util.raise("TypeError", "conv2d_tc.padded_channels", "C must be a positive integer, got %s", util.show(C)) end
  if pad_c ~= nil and (math.type(pad_c) ~= "integer" or pad_c < 1) then
    util.raise("TypeError", "conv2d_tc.padded_channels", "pad_c must be a positive integer, got %s", util.show(pad_c))
  end
  local e = ESIZE[dtype or "float16"] or 2
  if pad_c then return (C + pad_c - 1) // pad_c * pad_c end
  if (C * e) % 16 == 0 or C * e >= 16 then return C end
  local q = 8 // e
  return (C + q - 1) // q * q
end

--- The workload: PrimFunc (X [N, H, W, C], Wm [Kp, F] (or [F, Kp]: weight_layout), [bias [F] of the accumulator dtype], [scale [F]], out [Mp, F])
-- with blocks "A_im2col", "C" (the GEMM, accumulating in float32 / int32) and "D" (the epilogue:
-- + bias, relu, cast to out_dtype: default float16 for 16-bit inputs, int32 for int8).
-- o: N, H, W, C, F, R, S, stride, padding, dilation (tir.ops.conv's forms), dtype ("float16"),
-- out_dtype, bias (false), activation (nil | "relu"), data_layout ("NHWC" | "NCHW"), pad_c (see
-- padded_channels), pad_k (K padded to a multiple of it: 32), weight_layout ("KF" | "FK": see M.weight_layout),
-- pad_m (M = N*P*Q padded to a multiple of it: rows of zeros in A, scratch rows in out; default none),
-- requantize = {scale = number | "per_channel", out_zero_point, out_dtype = "int8" | "uint8"} (int8
-- inputs: tir.ops.quantized_matmul's requantization replaces the cast; "per_channel" adds a float32
-- parameter scale [F] after bias; relu raises the low end to the zero point).
-- info: {M, Mp, K, Kp, P, Q, F, plan (tir.ops.conv_plan's), flops (2 M F K), dtype, out_dtype, epilogue ("cast":
-- D only casts; "fused": + bias, relu or requantize)}.
-- Grouped convolution (groups = G > 1, NHWC): G GEMMs of M x F/G x R*S*C/G, the group a batch
-- dimension (blockIdx.z): A_im2col [G, Mp, Kgp] gathers channels g*Cg + c, Wm [G, Kgp, Fg]
-- (pack_weight with groups), C and D [G, Mp, Fg]; a kernel of its own ("out_nhwc") writes the
-- NHWC output out[m, g*Fg + fg] from D.
local function grouped_workload(P, o, dt)
  local G, acc = o.groups, ACC[dt]
  if o.C % G ~= 0 or o.F % G ~= 0 then util.raise("ValueError", P, "groups = %d must divide C = %d and F = %d", G, o.C, o.F) end
  local Cg, Fg = o.C // G, o.F // G
  if Fg % 16 ~= 0 then
    util.raise("ValueError", P, "F / groups = %d output channels per group: tensor-core tiles need a multiple of 16 (a depthwise or " ..
               "narrow grouped convolution has no profitable tensor-core mapping: use tir.ops.conv with a SIMT schedule)", Fg)
  end
  for _, k in ipairs({"data_layout", "pad_c", "requantize"}) do
    if o[k] ~= nil and not (k == "data_layout" and o[k] == "NHWC") then util.raise("ValueError", P, "%s is not supported with groups > 1", k) end
  end
  local out_dtype = o.out_dtype or (acc == "int32" and "int32" or "float16")
  local X = te.placeholder({o.N, o.H, o.W, o.C}, dt, "X")
  -- the geometry of one group (tir.ops.im2col's plan over a stand-in with Cg channels)
  local _, plan = ops_im2col.im2col_for(P, te.placeholder({o.N, o.H, o.W, Cg}, dt, "X_group"), {kernel = {o.R, o.S}, stride = o.stride,
                                    padding = o.padding, dilation = o.dilation, data_layout = "NHWC"})
  local Pq, Qq = plan.osz[1], plan.osz[2]
  local Mr, Kg = o.N * Pq * Qq, o.R * o.S * Cg
  local up = function(x, q) return (x + q - 1) // q * q end
  local Mp, Kgp = up(Mr, o.pad_m or 1), up(Kg, o.pad_k or 32)
  local A = te.compute({G, Mp, Kgp}, function(g, m, k)
    local n, pq = ops_im2col.split_m(m, plan.osz)
    local c, r = ops_im2col.split_k(k, true, Cg, plan.ksz)
    local h = pq[1] * plan.stride[1] - plan.lo[1] + r[1] * plan.dil[1]
    local w = pq[2] * plan.stride[2] - plan.lo[2] + r[2] * plan.dil[2]
    local conds = {tir.ge(h, 0), tir.lt(h, o.H), tir.ge(w, 0), tir.lt(w, o.W)}
    if Kgp ~= Kg then conds[#conds + 1] = tir.lt(k, Kg) end
    if Mp ~= Mr then conds[#conds + 1] = tir.lt(m, Mr) end
    return tir.if_then_else(tir.all(table.unpack(conds)), X[{n, h, w, g * Cg + c}], tir.const(0, dt))
  end, "A_im2col")
  local Wm = te.placeholder({G, Kgp, Fg}, dt, "Wm")
  local k = te.reduce_axis({0, Kgp}, "k")
  local Cb = te.compute({G, Mp, Fg}, function(g, i, j) return te.sum(te.cast(acc, A[{g, i, k}]) * te.cast(acc, Wm[{g, k, j}]), {k}) end, "C")
  local params = {X, Wm}
  local bias
  if o.bias then bias = te.placeholder({o.F}, acc, "bias"); params[#params + 1] = bias end
  local D = te.compute({G, Mp, Fg}, function(g, i, j)
    local v = Cb[{g, i, j}]
    if bias then v = v + bias[{g * Fg + j}] end
    if o.activation == "relu" then v = tir.max(v, tir.const(0, acc)) end
    return te.cast(out_dtype, v)
  end, "D")
  local out = te.compute({Mp, o.F}, function(m, f) return D[{f // Fg, m, f % Fg}] end, "out_nhwc")
  params[#params + 1] = out
  local f = te.create_prim_func(params, "conv2d_tc")
  return f, {M = Mr, Mp = Mp, K = Kg * G, Kp = Kgp, Kg = Kg, C = o.C, Cp = o.C, groups = G, Fg = Fg, data_layout = "NHWC",
             out_shape = {Mp, o.F}, P = Pq, Q = Qq, F = o.F, plan = plan, flops = 2 * Mr * o.F * Kg, dtype = dt, out_dtype = out_dtype}
end

function M.workload(o)
  local P = "conv2d_tc.workload"
  if type(o) ~= "table" then util.raise("TypeError", P, "expects a table of options, got %s", util.show(o)) end
  local dt = checked(P, o)
  if (o.groups or 1) > 1 then return grouped_workload(P, o, dt) end
  local acc = ACC[dt]
  local out_dtype = o.out_dtype or (acc == "int32" and "int32" or "float16")
  local pad_k = o.pad_k or 32
  local layout = o.data_layout or "NHWC"
  if layout ~= "NHWC" and layout ~= "NCHW" then util.raise("ValueError", P, "data_layout must be \"NHWC\" or \"NCHW\", got %s", util.show(layout)) end
  local nchw = layout == "NCHW"
  local X = te.placeholder(nchw and {o.N, o.C, o.H, o.W} or {o.N, o.H, o.W, o.C}, dt, "X")
  local Cp = M.padded_channels(o.C, dt, o.pad_c)
  local Xg = X
  if nchw then
    -- NCHW data: a kernel of its own writes the NHWC copy the gather reads (channels padded too)
    Xg = te.compute({o.N, o.H, o.W, Cp}, function(n, h, w, c)
      if Cp == o.C then return X[{n, c, h, w}] end
      return tir.if_then_else(tir.lt(c, o.C), X[{n, c, h, w}], tir.const(0, dt))
    end, "X_nhwc")
  elseif Cp ~= o.C then
    -- the input with zero channels up to Cp (a kernel of its own; its pixels are 8-byte vectors)
    Xg = te.compute({o.N, o.H, o.W, Cp}, function(n, h, w, c)
      return tir.if_then_else(tir.lt(c, o.C), X[{n, h, w, c}], tir.const(0, dt))
    end, "X_pad")
  end
  local A, plan = ops_im2col.im2col_for(P, Xg, {kernel = {o.R, o.S}, stride = o.stride, padding = o.padding, dilation = o.dilation,
                                        data_layout = "NHWC", pad_k = pad_k, pad_m = o.pad_m, name = "A_im2col"})
  local Mp, Kp = A.shape[1], A.shape[2]
  local Mr = o.N * plan.osz[1] * plan.osz[2]
  local K = o.R * o.S * o.C -- (the useful work; the GEMM's K is R * S * Cp, padded to Kp)
  local F = o.F
  local fk = weight_layout(P, o) == "FK"
  local Wm = te.placeholder(fk and {F, Kp} or {Kp, F}, dt, "Wm")
  local k = te.reduce_axis({0, Kp}, "k")
  local Cb = te.compute({Mp, F}, function(i, j)
    return te.sum(te.cast(acc, A[{i, k}]) * te.cast(acc, fk and Wm[{j, k}] or Wm[{k, j}]), {k})
  end, "C")
  local params = {X, Wm}
  local bias
  if o.bias then bias = te.placeholder({F}, acc, "bias"); params[#params + 1] = bias end
  -- D covers the padded rows too (so that it fuses into the GEMM's write-back): out [Mp, F],
  -- rows >= M are scratch (epi(0))
  local req, scale
  if o.requantize then
    -- tir.ops.quantized_matmul's requantization (round half to even in float32, clamp, zero point)
    local r = util.check_opts(P .. " requantize", o.requantize, {scale = "number|string", out_zero_point = "integer", out_dtype = "string"})
    if acc ~= "int32" then util.raise("TypeError", P, "requantize is for int8 / uint8 inputs (dtype %s)", dt) end
    req = {scale = r.scale == nil and 1.0 or r.scale, zo = r.out_zero_point or 0, out_dtype = r.out_dtype or "int8"}
    local range = ({int8 = {-128, 127}, uint8 = {0, 255}})[req.out_dtype]
    if not range then util.raise("TypeError", P, "requantize.out_dtype must be int8 or uint8, got %s", util.show(req.out_dtype)) end
    if req.zo < range[1] or req.zo > range[2] then
      util.raise("ValueError", P, "requantize.out_zero_point = %d is outside %s", req.zo, req.out_dtype)
    end
    if o.out_dtype ~= nil and o.out_dtype ~= req.out_dtype then
      util.raise("ValueError", P, "out_dtype %s contradicts requantize.out_dtype %s", o.out_dtype, req.out_dtype)
    end
    if req.scale == "per_channel" then
      scale = te.placeholder({F}, "float32", "scale"); params[#params + 1] = scale
    elseif type(req.scale) ~= "number" or req.scale ~= req.scale or math.abs(req.scale) == math.huge then
      util.raise("TypeError", P, "requantize.scale must be a finite number or \"per_channel\", got %s", util.show(req.scale))
    end
    out_dtype = req.out_dtype
  end
  local requantize_expr = require("tir.ops.quantized_matmul").requantize_expr
  local D = te.compute({Mp, F}, function(i, j)
    local v = Cb[{i, j}]
    if bias then v = v + bias[{j}] end
    if req then
      local sc = scale and scale[{j}] or tir.const(req.scale, "float32")
      return requantize_expr(te.cast("float32", v) * sc, req.zo, req.out_dtype, o.activation == "relu")
    end
    if o.activation == "relu" then v = tir.max(v, tir.const(0, acc)) end
    return te.cast(out_dtype, v)
  end, "D")
  local out = D
  local P_, Q_ = plan.osz[1], plan.osz[2]
  if nchw then
    -- NCHW output: a kernel of its own reads the GEMM's [M, F] result (D, now a workspace)
    out = te.compute({o.N, F, P_, Q_}, function(n, f, p, q) return D[{(n * P_ + p) * Q_ + q, f}] end, "out_nchw")
  end
  params[#params + 1] = out
  local f = te.create_prim_func(params, "conv2d_tc")
  return f, {M = Mr, Mp = Mp, K = K, Kp = Kp, C = o.C, Cp = Cp, data_layout = layout,
             out_shape = nchw and {o.N, F, P_, Q_} or {Mp, F}, P = plan.osz[1], Q = plan.osz[2], F = F, plan = plan, flops = 2 * Mr * F * K, dtype = dt,
             out_dtype = out_dtype, weight_layout = fk and "FK" or "KF",
             epilogue = (bias or o.activation or req) and "fused" or "cast"}
end

--- The packing of a kernel into Wm: PrimFunc (W, Wm); W is HWIO [R, S, C, F] (TVM's), OHWI
-- [F, R, S, C] (cuDNN's NHWC filter, KRSC) or OIHW [F, C, R, S] (NCHW's) by o.kernel_layout.  o: R, S, C, F, dtype, pad_k, kernel_layout,
-- weight_layout ("KF": Wm [Kp, F], or "FK": Wm [F, Kp]; the workload's).
function M.pack_weight(o)
  local P = "conv2d_tc.pack_weight"
  util.check_opts(P, o, {R = "positive", S = "positive", C = "positive", F = "positive", dtype = "dtype", pad_k = "positive",
                         pad_c = "positive", kernel_layout = "string", groups = "positive", weight_layout = "string"})
  for _, k in ipairs({"R", "S", "C", "F"}) do
    if o[k] == nil then util.raise("ValueError", P, "option %s is required", k) end
  end
  local fk = weight_layout(P, o) == "FK"
  if (o.groups or 1) > 1 then
    -- C is the channels per group here (the kernel's I); Wm [G, Kgp, Fg], k = (r S + s) Cg + c
    local G = o.groups
    if o.F % G ~= 0 then util.raise("ValueError", P, "groups = %d does not divide F = %d", G, o.F) end
    if (o.kernel_layout or "HWIO") ~= "HWIO" then util.raise("ValueError", P, "grouped kernels are packed from HWIO [R, S, C/groups, F]") end
    local dt = o.dtype or "float16"
    local W = te.placeholder({o.R, o.S, o.C, o.F}, dt, "W")
    local Fg, Kg = o.F // G, o.R * o.S * o.C
    local Kgp = (Kg + (o.pad_k or 32) - 1) // (o.pad_k or 32) * (o.pad_k or 32)
    local Wm = te.compute({G, Kgp, Fg}, function(g, k, f)
      local c, r = ops_im2col.split_k(k, true, o.C, {o.R, o.S})
      local v = W[{r[1], r[2], c, g * Fg + f}]
      if Kgp == Kg then return v end
      return tir.if_then_else(tir.lt(k, Kg), v, tir.const(0, dt))
    end, "Wm")
    return te.create_prim_func({W, Wm}, "pack_weight")
  end
  local kl = o.kernel_layout or "HWIO"
  local shape = kl == "HWIO" and {o.R, o.S, o.C, o.F} or kl == "OHWI" and {o.F, o.R, o.S, o.C} or kl == "OIHW" and {o.F, o.C, o.R, o.S} or nil
  if not shape then util.raise("ValueError", P, "kernel_layout must be \"HWIO\", \"OHWI\" or \"OIHW\", got %s", util.show(kl)) end
  local dt = o.dtype or "float16"
  local W = te.placeholder(shape, dt, "W")
  local Cp = M.padded_channels(o.C, dt, o.pad_c)
  local Wm
  if Cp == o.C then
    Wm = ops_im2col.conv_weight_matrix(W, {data_layout = "NHWC", kernel_layout = kl, pad_k = o.pad_k or 32, name = "Wm", transpose = fk})
  else
    -- rows k = (r S + s) Cp + c, zero for the padding channels c >= C and for k >= R S Cp
    local Kc = o.R * o.S * Cp
    local q = o.pad_k or 32
    local Kp = (Kc + q - 1) // q * q
    local function at(k, f)
      local c, rs = k % Cp, k // Cp
      local r, s_ = rs // o.S, rs % o.S
      local v = kl == "HWIO" and W[{r, s_, c, f}] or kl == "OHWI" and W[{f, r, s_, c}] or W[{f, c, r, s_}]
      return tir.if_then_else(tir.all(tir.lt(k, Kc), tir.lt(c, o.C)), v, tir.const(0, dt))
    end
    Wm = fk and te.compute({o.F, Kp}, function(f, k) return at(k, f) end, "Wm") or te.compute({Kp, o.F}, at, "Wm")
  end
  return te.create_prim_func({W, Wm}, "pack_weight")
end

--- The HWIO kernel [R, S, C, F] whose packing is wm (a host NDArray [Kp, F]; its rows k < K):
-- pack_weight's inverse, for references fed with a random packed weight.  o: R, S, C, F (the
-- workload's: C all input channels), pad_c, weight_layout (wm [F, Kp] for "FK"), groups (wm [G, Kgp, F/G] -> [R, S, C/G, F]).
function M.unpack_weight(o, wm)
  local P = "conv2d_tc.unpack_weight"
  if type(o) ~= "table" then util.raise("TypeError", P, "o must be pack_weight's options {R, S, C, F, ...}, got %s", util.show(o)) end
  for _, k in ipairs({"R", "S", "C", "F"}) do
    if math.type(o[k]) ~= "integer" or o[k] < 1 then util.raise("TypeError", P, "o.%s must be a positive integer, got %s", k, util.show(o[k])) end
  end
  if not (type(wm) == "userdata" and getmetatable(wm) and getmetatable(wm).__name == "tir.NDArray") then
    util.raise("TypeError", P, "wm must be the packed weight (a tir.NDArray), got %s", util.describe(wm))
  end
  local G = o.groups or 1
  if G > 1 then
    -- wm [G, Kgp, Fg] -> HWIO [R, S, C / G, F]
    local Cg, Fg = o.C // G, o.F // G
    local t = {}
    for r = 1, o.R do
      t[r] = {}
      for s = 1, o.S do
        t[r][s] = {}
        for c = 1, Cg do
          t[r][s][c] = {}
          for f = 1, o.F do t[r][s][c][f] = wm:get((f - 1) // Fg, ((r - 1) * o.S + s - 1) * Cg + c - 1, (f - 1) % Fg) end
        end
      end
    end
    return tir.nd.array(t, wm:dtype())
  end
  local Cp = M.padded_channels(o.C, wm:dtype(), o.pad_c)
  local fk = weight_layout(P, o) == "FK"
  local t = {}
  for r = 1, o.R do
    t[r] = {}
    for s = 1, o.S do
      t[r][s] = {}
      for c = 1, o.C do
        t[r][s][c] = {}
        for f = 1, o.F do
          local k = ((r - 1) * o.S + s - 1) * Cp + c - 1
          t[r][s][c][f] = fk and wm:get(f - 1, k) or wm:get(k, f - 1)
        end
      end
    end
  end
  return tir.nd.array(t, wm:dtype())
end

--- Checks a layer's output (out [Mp, F], any device) at n sampled outputs (rows < M, and the
-- last row's last column) against tir.testing.ref_conv of x and the HWIO kernel w (any device).
-- ref_opts: stride, padding, dilation, bias (an NDArray), activation.  exact: equality (int8),
-- else |got - want| <= tol * (1 + |want|) (tol default 1e-2: fp16 outputs).  Raises a
-- ValueError naming the first output that differs; returns the max abs error.
function M.check_points(out, x, w, ref_opts, info, n, exact, tol)
  check_info("conv2d_tc.check_points", info)
  if math.type(n) ~= "integer" or n < 1 then util.raise("TypeError", "conv2d_tc.check_points", "n (the number of samples) must be a positive integer, got %s", util.show(n)) end
  if not (type(out) == "userdata" and getmetatable(out) and getmetatable(out).__name == "tir.NDArray") then
    util.raise("TypeError", "conv2d_tc.check_points", "out must be a tir.NDArray, got %s", util.describe(out))
  end
  local pts, rc = {}, {}
  local seed = 777
  for i = 1, n do
    seed = (seed * 1103515245 + 12345) % 2147483648
    rc[i] = {seed % info.M, (seed // 13) % info.F}
  end
  rc[#rc + 1] = {info.M - 1, info.F - 1}
  -- flat indices of the output (ref_conv's shape: NHWC = [M, F]'s memory, or NCHW)
  local PQ = info.P * info.Q
  for i, mf in ipairs(rc) do
    local m, f = mf[1], mf[2]
    pts[i] = info.data_layout == "NCHW" and ((m // PQ) * info.F + f) * PQ + m % PQ or m * info.F + f
  end
  local ro = {}
  for k, v in pairs(ref_opts) do ro[k] = v end
  if info.data_layout == "NCHW" then ro.data_layout, ro.kernel_layout = "NCHW", "HWIO" end
  local want = tir.testing.ref_conv(x, w, ro, pts)
  local host = out:to("cpu")
  local worst = 0
  tol = tol or 1e-2
  for i = 1, #pts do
    local got = host:get(pts[i])
    local err = math.abs(got - want[i])
    worst = math.max(worst, err)
    if (exact and err ~= 0) or (not exact and err > tol * (1 + math.abs(want[i]))) then
      util.raise("ValueError", "conv2d_tc.check_points", "out[%d, %d] = %s, float64 reference %s (%d sampled outputs)", rc[i][1], rc[i][2],
                 tostring(got), tostring(want[i]), #pts)
    end
  end
  return worst
end

-- an elementwise block as a kernel: its loops fused, `vec` elements per thread (vectorized),
-- `threads` threads per CTA
local function elementwise_kernel(sch, blk, threads, vec)
  local l = {sch:get_loops(blk)}
  local f = sch:fuse(table.unpack(l))
  if vec > 1 then
    local bx, tx, v = sch:split(f, {nil, threads, vec})
    sch:bind(bx, "blockIdx.x"); sch:bind(tx, "threadIdx.x")
    sch:vectorize(v)
  else
    local bx, tx = sch:split(f, {nil, threads})
    sch:bind(bx, "blockIdx.x"); sch:bind(tx, "threadIdx.x")
  end
end

--- pack_weight's PrimFunc as a GPU kernel (one thread per element of Wm): the one-time packing
-- of a constant weight on the device.
function M.pack_weight_schedule(func)
  local sch = tir.Schedule(func)
  elementwise_kernel(sch, sch:get_block("Wm"), 256, 1)
  return sch
end

-- the options of schedule: tc_gemm's tile parameters and the variant
local SCHED_OPTS = {variant = "string", im2col_threads = "positive", im2col_vec = "positive"}
local WG = require("tir.schedules.tc_gemm_wgmma")
for _, t in ipairs({tc.SCHEDULE_OPTS, WG.OPTS}) do
  for k, v in pairs(t) do if k ~= "a_stage" and k ~= "b_stage" and k ~= "epilogue" and k ~= "block" and k ~= "writeback" then SCHED_OPTS[k] = v end end
end
M.SCHEDULE_OPTS = SCHED_OPTS

--- The default tiles for a layer of M x F x Kp (CUTLASS's sm80 conv shapes: CTA tiles of 4 or 8
-- warps with 64 x 64 or 64 x 32 warp tiles; a smaller tile when the grid would not fill the
-- SMs), as options of schedule.  When BM does not divide M, build the workload with pad_m = BM.
--   F >= 256 (a multiple of 128), M a multiple of 256: 256 x 128 x 64 (8 warps, 2 stages; the
--     tuned 4096^3 GEMM's tile);  F a multiple of 128: 128 x 128 x 32 (4 warps, 4 stages);
--   F a multiple of 64: 128 x 64 x 32 (4 warps of 64 x 32);  else 64 x 32 (or 32 x 16).
function M.default_tiles(info, sm_count)
  local P = "conv2d_tc.default_tiles"
  check_info(P, info)
  local Fn, G = info.Fg or info.F, info.groups or 1 -- the GEMM's N (per group) and the batch
  if Fn % 16 ~= 0 then
    util.raise("ValueError", P, "F = %d output channels: the tensor-core tiles need a multiple of 16", Fn)
  end
  local sms = sm_count or tc.device_sm_count()
  local int8 = ACC[info.dtype] == "int32"
  local tk = int8 and 32 or 16
  local m = info.Mp
  local function ctas(o) return G * ((m + o.BM - 1) // o.BM) * (Fn // o.BN) end
  local cands = {}
  if Fn % 128 == 0 and Fn >= 256 and m % 256 == 0 then
    cands[#cands + 1] = {BM = 256, BN = 128, warp_m = 64, warp_n = 64, BK = 64, stages = 2}
  end
  if Fn % 128 == 0 then cands[#cands + 1] = {BM = 128, BN = 128, warp_m = 64, warp_n = 64, BK = 32, stages = 4} end
  if Fn % 64 == 0 then cands[#cands + 1] = {BM = 128, BN = 64, warp_m = 64, warp_n = 32, BK = 32, stages = 4} end
  if Fn % 32 == 0 then cands[#cands + 1] = {BM = 64, BN = 32, warp_m = 32, warp_n = 16, BK = 32, stages = 4} end
  cands[#cands + 1] = {BM = 32, BN = 16, warp_m = 16, warp_n = 16, BK = 32, stages = 4}
  local o
  for _, c in ipairs(cands) do
    if not o and ctas(c) >= sms then o = c end
  end
  o = o or cands[#cands]
  if int8 then o.BK = 64 end -- IMMA's k is 32: two instructions per 64-deep step, 64 bytes a row
  while info.Kp % o.BK ~= 0 do o.BK = o.BK // 2 end
  if o.BK < tk then
    util.raise("ValueError", P, "Kp = %d is not a multiple of the instruction's k = %d (build the workload with pad_k = %d)", info.Kp, tk, tk)
  end
  o.stages = math.max(1, math.min(o.stages, info.Kp // o.BK))
  return o
end

--- The wgmma tilings of a layer (info from a workload built with weight_layout = "FK"): every BM
-- in {64, 128, 256} (1, 2 or 4 consumer warpgroups) x BN in {64, 128, 256} (the wgmma N) that
-- divides Mp and F, BK = 64 (128-byte swizzled rows; 32 when Kp is not a multiple of 64), 256 x
-- 256 left out (128 accumulators a thread over 512 threads do not fit the register file), each at
-- two depths: the deepest cp.async pipeline (<= 4 stages, <= Kp / BK) whose tiles, one version
-- more for the wgmma group left in flight, fit in 227 KB (one CTA an SM), and, where two CTAs fit
-- an SM (shared memory <= 113 KB each; registers estimated at BN / 2 + 48 a thread), the deepest
-- that fits twice (then one CTA's prologue and write-back overlap the other's main loop:
-- wgmma_ctas_per_sm).  Returns a list of conv2d_tc.schedule options.
-- CTAs of a wgmma tiling (schedule options) that fit an SM: 2 when its shared memory takes at most
-- half of 227 KB and its registers (estimated at BN / 2 + 48 a thread) half of the 64 K, else 1.
-- Shared memory: the tile versions, or the staged epilogue's float32 accumulators (BM rows of BN
-- + 8: the padded staged rows), which reuse the tiles' bytes -- the larger of the two
local function wgmma_ctas_per_sm(o, esize)
  local smem = math.max((o.stages + (o.stages > 1 and o.wgmma_pending or 0)) * (o.BM + o.BN) * o.BK * esize, o.BM * (o.BN + 8) * 4)
  return (2 * smem <= 227 * 1024 and 2 * (o.BM // 64 * 128) * (o.BN // 2 + 48) <= 65536) and 2 or 1
end

function M.wgmma_space(info)
  check_info("conv2d_tc.wgmma_space", info)
  local out = {}
  local es = ESIZE[info.dtype]
  local BK = info.Kp % (128 // es) == 0 and 128 // es or 64 // es
  if info.Kp % BK ~= 0 then return out end
  local steps = info.Kp // BK
  -- the deepest (stages, wgmma_pending) whose tiles fit in `limit` bytes: a group in flight when
  -- there is a pipeline (stages >= 2) and room for its extra tile version, else none
  local function depth(bytes, limit)
    for st = math.min(4, steps), 2, -1 do
      if (st + 1) * bytes <= limit then return st, 1 end
    end
    if steps >= 2 and 2 * bytes <= limit then return 2, 0 end
    if bytes <= limit then return 1, 0 end
  end
  for _, BM in ipairs({64, 128, 256}) do
    for _, BN in ipairs({64, 128, 256}) do
      if info.Mp % BM == 0 and info.F % BN == 0 and BM * BN < 256 * 256 then
        local bytes = (BM + BN) * BK * es
        local s1, p1 = depth(bytes, 227 * 1024)
        if s1 then out[#out + 1] = {intrin = "wgmma", BM = BM, BN = BN, BK = BK, stages = s1, wgmma_pending = p1} end
        local s2, p2 = depth(bytes, 227 * 1024 // 2)
        local o2 = s2 and {intrin = "wgmma", BM = BM, BN = BN, BK = BK, stages = s2, wgmma_pending = p2}
        if o2 and (s2 ~= s1 or p2 ~= p1) and wgmma_ctas_per_sm(o2, es) == 2 then out[#out + 1] = o2 end
      end
    end
  end
  return out
end

--- The warp-specialized wgmma tilings of a layer (info from a workload built with weight_layout =
-- "FK"): a producer warpgroup of its own gathers the A tile (the im2col block, 16-byte zero-filling
-- cp.async copies by its 128 threads, each arriving on the stage's full mbarrier with
-- cp.async.mbarrier.arrive.noinc) while its lane 0 brings the weights' B tile by TMA; the BM / 64
-- consumer warpgroups only wait, issue wgmma and release the stage (tc_gemm_wgmma with a_stage +
-- tma + warp_specialize; inject_tma_pipeline's cp_async_gather copies).  No CTA-wide barrier in
-- the main loop.  Candidates, BK 64 (Kp a multiple of 64), M and F multiples of the tiles:
--   BM 128, BN = min(F, 128), the staged epilogue (its fp32 tile does not reuse the stages here:
--     both roles keep the pipeline's buffers), the deepest pipeline (<= 6) that fits 227 KB;
--   BM 128, BN = min(F, 256) and min(F, 128), the TMA-store epilogue (fp16 tile of BM x BN), the same depth rule;
--   BM 128, BN = min(F, 256), TMA-store, with 88 producer registers (ws_regs {88, 208}; the default 56);
--   BM 256 (4 consumer warpgroups, 104 registers each), BN = min(F, 128), the TMA-store epilogue.
-- (Persistent grids were 15-400 % slower on every 3x3 layer (H200, bench/RESULTS.md): not listed.)
-- Returns a list of conv2d_tc.schedule options (empty when no tiling fits).
function M.wgmma_ws_space(info)
  check_info("conv2d_tc.wgmma_ws_space", info)
  local out = {}
  local es = ESIZE[info.dtype]
  if es ~= 2 or info.Kp % 64 ~= 0 or (info.groups or 1) > 1 then return out end
  local steps = info.Kp // 64
  local function add(BM, BN, store, ws_regs)
    if info.Mp % BM ~= 0 or info.F % BN ~= 0 then return end
    if store == "tma" and info.Mp ~= info.M then return end
    local epi = store == "tma" and BM * BN * 2 or BM * (BN + 8) * 4
    local st
    for s = math.min(6, steps), 2, -1 do
      if s * (BM + BN) * 64 * es + epi + 1024 <= 227 * 1024 then st = s; break end
    end
    if not st then return end
    out[#out + 1] = {intrin = "wgmma", BM = BM, BN = BN, BK = 64, stages = st, wgmma_pending = 1, tma = true, warp_specialize = true,
                     epilogue_store = store, ws_regs = ws_regs}
  end
  add(128, math.min(info.F, 128), "staged")
  add(128, math.min(info.F, 256), "tma")
  if info.F >= 256 then add(128, 128, "tma") end
  add(128, math.min(info.F, 256), "tma", {88, 208})
  add(256, math.min(info.F, 128), "tma")
  return out
end

--- The convolution of an "FK" workload as tc_gemm_wgmma's a_im2col ({pt, pl, sh, sw, dh, dw, P, Q,
-- R, S}: its A tile by one TMA copy in im2col mode, include/tir/tma.h), or nil and the reason when
-- TMA's im2col cannot bring it: NHWC 2-d convolution, 16-bit elements, groups 1, C a multiple of 64
-- (one k tile of 64 channels lies in one filter tap), no pad_m, Kp = R S C (no padded k tail).
function M.im2col_geometry(info)
  check_info("conv2d_tc.im2col_geometry", info)
  local q = info.plan
  if q.nd ~= 2 or info.data_layout ~= "NHWC" or (info.groups or 1) > 1 then return nil, "not a 2-d NHWC convolution of one group" end
  if ESIZE[info.dtype] ~= 2 then return nil, "TMA im2col is used for 16-bit elements here (dtype " .. info.dtype .. ")" end
  if info.Cp ~= info.C or info.C % 64 ~= 0 then return nil, ("C = %d is not a multiple of 64"):format(info.C) end
  if info.Mp ~= info.M then return nil, "the workload pads M (pad_m): TMA im2col copies whole tiles of real pixels" end
  if info.Kp ~= q.ksz[1] * q.ksz[2] * info.C then return nil, ("Kp = %d is padded past R S C = %d"):format(info.Kp, q.ksz[1] * q.ksz[2] * info.C) end
  return {q.lo[1], q.lo[2], q.stride[1], q.stride[2], q.dil[1], q.dil[2], q.osz[1], q.osz[2], q.ksz[1], q.ksz[2]}
end

--- The wgmma tilings whose A tile comes by TMA in im2col mode (im2col_geometry; empty when it does
-- not apply): the weights' B tile by TMA too, so the main loop is the TMA GEMM's -- the producer
-- warpgroup's lane 0 issues both copies per stage (warp_specialize) or the leader thread does
-- (no producer warpgroup).  Candidates, BK 64, M and F multiples of the tiles, the deepest pipeline
-- (<= 6) that fits 227 KB beside the epilogue's tile:
--   warp-specialized BM 128, BN = min(F, 256) and min(F, 128), TMA-store epilogue; BM 128, BN =
--   min(F, 128), staged; BM 256 (4 consumer warpgroups), BN = min(F, 128), TMA-store;
--   not warp-specialized BM 128, BN = min(F, 128), staged;
--   where F <= 128 (the layers of many short tiles): warp-specialized persistent grids of one CTA an
--   SM (persistent_tail: the last round's spare CTAs repeat the last tile), BM 128 and 256, BN = F,
--   TMA-store (the producer loads the next tile's stages during this one's store).
-- level "extra" adds, where F <= 128: the persistent grids of tc_gemm's divisor rule (no tail) and
-- BM 64 (one consumer warpgroup, small enough for several CTAs an SM).
function M.wgmma_im2col_space(info, level)
  check_info("conv2d_tc.wgmma_im2col_space", info)
  if level ~= nil and level ~= "extra" then
    util.raise("ValueError", "conv2d_tc.wgmma_im2col_space", "level must be nil or \"extra\", got %s", util.show(level))
  end
  local out = {}
  local geo = M.im2col_geometry(info)
  if not geo then return out end
  local steps = info.Kp // 64
  -- (persistent: "tail" = a grid of one CTA an SM, persistent_tail; true = tc_gemm's grid dividing the tiles)
  local function add(BM, BN, store, ws, persistent, max_stages)
    if info.Mp % BM ~= 0 or info.F % BN ~= 0 then return end
    local epi = store == "tma" and BM * BN * 2 or BM * (BN + 8) * 4
    for s = math.min(max_stages or 6, steps), 2, -1 do
      if s * (BM + BN) * 128 + epi + 1024 <= 227 * 1024 then
        out[#out + 1] = {intrin = "wgmma", BM = BM, BN = BN, BK = 64, stages = s, wgmma_pending = 1, tma = true, warp_specialize = ws or nil,
                         epilogue_store = store, a_im2col = geo, persistent = persistent and true or nil,
                         persistent_tail = persistent == "tail" or nil}
        return
      end
    end
  end
  add(128, math.min(info.F, 256), "tma", true)
  if info.F >= 256 then add(128, 128, "tma", true) end
  add(128, math.min(info.F, 128), "staged", true)
  add(256, math.min(info.F, 128), "tma", true)
  add(128, math.min(info.F, 128), "staged", false)
  if info.F <= 128 then
    add(128, info.F, "tma", true, "tail")
    add(256, info.F, "tma", true, "tail")
  end
  if level == "extra" and info.F <= 128 then
    add(128, info.F, "tma", true, true)
    add(256, info.F, "tma", true, true)
    add(64, info.F, "tma", true, nil, 4)
  end
  return out
end

--- The wgmma tiles for a layer (the rule conv2d_tc uses without a tuning record): among
-- wgmma_space, the one with the least predicted time: waves = ceil(CTAs / (ctas_per_sm SMs))
-- times a tile's time BM BN Kp / rate / ctas_per_sm, where the rate grows with the tile's operand
-- reuse BM BN / (BM + BN) up to 128 x 256's (a smaller tile moves more shared bytes per flop);
-- a CTA sharing its SM gets half of it but hides its prologue and write-back (one k step and the
-- store: counted as a step of each tile's time).  Returns schedule options.
-- Raises a ValueError when no tiling divides the layer.
function M.wgmma_tiles(info, sm_count)
  local P = "conv2d_tc.wgmma_tiles"
  check_info(P, info)
  local sms = sm_count or tc.device_sm_count()
  local best, bt
  for _, o in ipairs(M.wgmma_space(info)) do
    local per = wgmma_ctas_per_sm(o, ESIZE[info.dtype])
    local ctas = (info.Mp // o.BM) * (info.F // o.BN)
    local reuse = math.min(1, (o.BM * o.BN / (o.BM + o.BN)) / (128 * 256 / 384))
    local steps = info.Kp // o.BK + (per == 1 and 2 or 0) -- the prologue and write-back, exposed with one CTA an SM
    local t = ((ctas + per * sms - 1) // (per * sms)) * o.BM * o.BN * steps * per / reuse
    if not bt or t < bt then best, bt = o, t end
  end
  if not best then
    util.raise("ValueError", P, "no wgmma tiling (BM, BN in 64, 128, 256; BK 64) divides Mp = %d, F = %d, Kp = %d", info.Mp, info.F, info.Kp)
  end
  return best
end

--- The rule for the implicit GEMM on wgmma (what layer_options returns for an "FK" workload that is
-- not a plain GEMM), from bench/conv2d.lua's timings of wgmma_space, wgmma_ws_space and their
-- epilogues on ResNet-50's seven 3x3 layers (H200, bench/RESULTS.md "3x3 layers: the warp-specialized
-- gathering producer"): when the layer's 128 x 256 tiles are fewer than the SMs (conv5's 7x7 layers:
-- 98 tiles on 132 SMs) and D only casts to fp16 (info.epilogue "cast", no pad_m), the warp-specialized
-- kernel of wgmma_ws_space with 128 x 256 tiles and the TMA-store epilogue (6-10 % faster there);
-- otherwise wgmma_tiles' cp.async tile with the staged epilogue (the gathering producer was 5-35 %
-- slower on the layers of several waves, most at F = 64 where the cp.async tile runs two CTAs an SM).
-- Stop 12 (bench/RESULTS.md "Stop 12 (hC3)"): where TMA's im2col mode brings the A tile
-- (im2col_geometry) and F >= 128, the warp-specialized kernel of wgmma_im2col_space with the
-- TMA-store epilogue (D a plain fp16 cast; else the staged one) among 128 x 256, 128 x 128 and
-- 256 x 128 tiles, the least waves x tile area (ceil(tiles / SMs) BM BN), ties to the larger tile
-- then the wider BN: 8-24 % faster than the kernels above on ResNet-50's F >= 128 3x3 layers
-- (conv4 128 x 128, conv5 128 x 256); where F <= 128 and D only casts (conv2, conv3: 9-18 k steps a
-- tile), before that the persistent kernel of tiles of 128 x 128 elements (256 x 64 at F = 64) on
-- one CTA an SM (persistent_tail): conv2 0.0758 ms (the cp.async tile 0.085, the divisor grid
-- 0.077), conv3 0.0445 / conv3_s2 0.0507 (one CTA a tile of 256 x 128: 0.052 / 0.061; the divisor
-- grid 0.048) -- 0.91 and 1.03-1.08x cuDNN's best engine (batch 3).
-- Returns schedule options; errors as wgmma_tiles.
function M.wgmma_implicit_tiles(info, sm_count)
  local P = "conv2d_tc.wgmma_implicit_tiles"
  check_info(P, info)
  local sms = sm_count or tc.device_sm_count()
  local cast = info.epilogue == "cast" and info.out_dtype == "float16"
  if info.F <= 128 and cast and M.im2col_geometry(info) then
    -- many short tiles (K = 9 C, 9-18 k steps): the persistent grid of one CTA an SM, tiles of
    -- 128 x 128 elements (256 x 64 at F = 64)
    for _, o in ipairs(M.wgmma_im2col_space(info)) do
      if o.persistent_tail and o.BM * o.BN == 128 * 128 then return o end
    end
  end
  if info.F >= 128 and M.im2col_geometry(info) then
    local store = cast and "tma" or "staged"
    local best, bc
    for _, o in ipairs(M.wgmma_im2col_space(info)) do
      if o.warp_specialize and o.epilogue_store == store and not o.persistent then
        local tiles = (info.Mp // o.BM) * (info.F // o.BN)
        local cost = {-((tiles + sms - 1) // sms) * o.BM * o.BN, o.BM * o.BN, o.BN}
        local better = not best
        for q = 1, 3 do
          if better or cost[q] ~= bc[q] then better = better or cost[q] > bc[q]; break end
        end
        if better then best, bc = o, cost end
      end
    end
    -- a strided 1x1 projection (R = S = 1: a short k loop, the output 2-4x the input read) with the
    -- TMA-store epilogue: on the SM-count persistent grid (persistent_tail), the producer loading the
    -- next tile while the consumers store this one (H200, bench/RESULTS.md "Stop 12 (hC1)": conv3's
    -- projection 0.0806 -> 0.0629 ms, conv4's 0.0557 -> 0.0477, conv5's 0.0434 -> 0.0401)
    local q = info.plan
    if best and q.ksz[1] == 1 and q.ksz[2] == 1 and best.epilogue_store == "tma" then
      local o = {}
      for k, v in pairs(best) do o[k] = v end
      o.persistent, o.persistent_tail = true, true
      return o
    end
    if best then return best end
  end
  if info.epilogue == "cast" and info.out_dtype == "float16" and info.Mp == info.M and info.F % 256 == 0 and
     (info.Mp // 128) * (info.F // 256) < sms then
    for _, o in ipairs(M.wgmma_ws_space(info)) do
      if o.BM == 128 and o.BN == 256 and o.epilogue_store == "tma" and not o.ws_regs then return o end
    end
  end
  return M.wgmma_tiles(info, sms)
end

--- The tuning space of a layer (info from workload): tc_gemm_tune's CTA / warp tilings and (BK,
-- stages) depths, those whose tiles divide F and Kp (M is padded to BM: pad_m), that fit in
-- smem_limit bytes of shared memory (227 KB) and whose k loop holds the pipeline.
function M.space(info, smem_limit)
  check_info("conv2d_tc.space", info)
  local Fn = info.Fg or info.F
  local tt = require("tir.schedules.tc_gemm_tune")
  local out = {}
  local esize = ACC[info.dtype] == "int32" and 1 or 2
  smem_limit = smem_limit or 227 * 1024
  -- tc_gemm's depths, and shallower pipelines for short k loops (1x1 layers with C = 64)
  local depths = {{32, 2}, {64, 1}}
  for _, d in ipairs(tt.DEPTHS) do depths[#depths + 1] = d end
  for _, t in ipairs(tt.TILES) do
    for _, d in ipairs(depths) do
      local p = {BM = t[1], BN = t[2], warp_m = t[3], warp_n = t[4], BK = d[1], stages = d[2]}
      local pad = 16 // esize
      local smem = p.stages * (p.BM * (p.BK + pad) + p.BK * (p.BN + pad)) * esize
      if Fn % p.BN == 0 and info.Kp % p.BK == 0 and info.Kp // p.BK >= p.stages and smem <= smem_limit and
         p.BM <= (info.Mp + 63) // 64 * 64 then
        out[#out + 1] = p
      end
    end
  end
  return out
end

--- Tunes a layer on the GPU with tir.tune over M.space (records under M.workload_key, which
-- layer_options then reads): layer = workload's options (M = N*P*Q must be a multiple of the
-- candidates' BM: those that do not divide it are left out); o: variant ("implicit"), trials,
-- jobs, db, progress.  Every candidate's output is compared with the default tiles' output, itself
-- checked against the float64 reference at 1024 sampled outputs.  Returns tir.tune's result.
function M.tune(layer, o)
  local P = "conv2d_tc.tune"
  o = util.check_opts(P, o, {variant = "string", trials = "positive", jobs = "positive", db = "string", progress = "boolean"})
  local dev = tir.device("cuda", 0)
  local func, info = M.workload(layer)
  if (info.groups or 1) > 1 then util.raise("ValueError", P, "grouped layers are not tuned (give the tiles to schedule)") end
  local space = {}
  for _, p in ipairs(M.space(info)) do if info.M % p.BM == 0 then space[#space + 1] = p end end
  if #space == 0 then util.raise("ValueError", P, "no tile of the space divides M = %d", info.M) end
  local function build(p)
    local so = {variant = o.variant or "implicit"}
    for k, v in pairs(p) do so[k] = v end
    return M.schedule(func, so)
  end
  local dt, acc = info.dtype, ACC[info.dtype]
  local int = acc == "int32"
  local x = tir.nd.random({layer.N, layer.H, layer.W, layer.C}, dt, dev, {seed = 1, low = int and -128 or -1, high = int and 127 or 1})
  local w = tir.nd.random({layer.R, layer.S, layer.C, layer.F}, dt, dev, {seed = 2, low = int and -128 or -1, high = int and 127 or 1})
  local bias = layer.bias and tir.nd.random({layer.F}, acc, dev, {seed = 3, low = int and -1000 or -1, high = int and 1000 or 1}) or nil
  local wm = tir.nd.empty({info.Kp, info.F}, dt, dev)
  tir.build(M.pack_weight_schedule(M.pack_weight({R = layer.R, S = layer.S, C = layer.C, F = layer.F, dtype = dt, pad_k = layer.pad_k})).mod,
            "cuda")(w, wm)
  local function args(out)
    local a = {x, wm}
    if bias then a[#a + 1] = bias end
    a[#a + 1] = out
    return a
  end
  local ref = tir.nd.empty({info.Mp, info.F}, info.out_dtype, dev)
  tir.build(build(space[1]).mod, "cuda")(table.unpack(args(ref)))
  M.check_points(ref, x, w, {stride = layer.stride, padding = layer.padding, dilation = layer.dilation, bias = bias,
                             activation = layer.activation}, info, 1024, int)
  return tir.tune{
    workload = M.workload_key(info), target = "cuda", space = space, trials = o.trials, jobs = o.jobs, db = o.db, progress = o.progress,
    build = build,
    args = function() return args(tir.nd.empty({info.Mp, info.F}, info.out_dtype, dev)) end,
    check = function(mod, a)
      mod(table.unpack(a))
      local ok, err = pcall(tir.testing.assert_allclose, a[#a], ref, {rtol = int and 0 or 1e-2, atol = int and 0 or 1e-2})
      return ok, not ok and tostring(err):match("[^\n]*") or nil
    end,
  }
end

--- Whether a layer is a plain GEMM: a 1x1 kernel, stride 1, no padding (A[m, k] = X[m * C + k],
-- the im2col stage a copy of X viewed as an M x C matrix).
function M.is_gemm(info)
  check_info("conv2d_tc.is_gemm", info)
  if (info.groups or 1) > 1 then return false end
  local q = info.plan
  return q.ksz[1] == 1 and q.ksz[2] == 1 and q.stride[1] == 1 and q.stride[2] == 1 and q.lo[1] == 0 and q.lo[2] == 0 and
         q.hi[1] == 0 and q.hi[2] == 0 and info.K == info.Kp
end

--- A 1x1 stride-1 layer (is_gemm, NHWC, fp16 / bf16) as a GEMM on wgmma: x viewed as [M, C] times the
-- OHWI kernel viewed as [F, C] -- already wgmma's K-major B, no packing -- i.e. tc_gemm.workload(M, F, C,
-- dtype, out_dtype, nil, "NT") with its epilogue "D" (the cast) fused into the store.  Unlike the implicit
-- GEMM (whose A tile is computed by the gather), both operands are plain global tensors here, so
-- tc_gemm_wgmma's TMA pipelines apply.  These layers have short k loops (C = 64 is one BK = 64 step),
-- so what a tile costs around its main loop decides:
--   wgmma_gemm_space(info): candidates {intrin = "wgmma", BM, BN, BK = 64, stages, tma = true, ...}:
--     warp-specialized + persistent (the producer warpgroup loads the next tile's operands while the
--     consumers store this one's) and persistent with the TMA-store epilogue, BM 128 and BN = min(F, 256)
--     (one wgmma N) and 128 for F >= 256; level "near" adds the TMA-store epilogue with warp specialization,
--     without the persistent grid and with BM 64 (level "store": only those three), "all" also BM 256 at
--     F = 64 and the plain TMA pipeline.  Every persistent candidate has persistent_tail = true (a grid of
--     as many CTAs as SMs, the last round's spare CTAs repeating the last tile: tc_gemm_wgmma).
--   wgmma_gemm_tiles(info): the rule's pick: one of them, or wgmma_tiles' cp.async tiles (see below).
--   wgmma_gemm(info [, opts]): the Schedule (opts: tc_gemm_wgmma options, default wgmma_gemm_tiles') and
--     the shapes of its arguments {{M, C}, {F, C}, {M, F}} (x:reshape, w_ohwi:reshape, out).
-- Errors: a ValueError for a layer that is not a plain GEMM or whose M, F, C the tiles do not divide.
local function gemm_info(P, info)
  check_info(P, info)
  if not M.is_gemm(info) or info.data_layout ~= "NHWC" or (info.dtype ~= "float16" and info.dtype ~= "bfloat16") then
    util.raise("ValueError", P, "the layer is not a plain fp16 / bf16 NHWC GEMM (1x1 kernel, stride 1, no padding, groups 1): " ..
               "use the implicit GEMM (conv2d_tc.schedule with intrin = \"wgmma\")")
  end
  if info.Mp ~= info.M then util.raise("ValueError", P, "build the workload without pad_m (the GEMM reads x itself: M rows)") end
  return info.M, info.F, info.C
end

function M.wgmma_gemm_space(info, level)
  local P = "conv2d_tc.wgmma_gemm_space"
  local Mg, F, C = gemm_info(P, info)
  if level ~= nil and level ~= "near" and level ~= "all" and level ~= "store" then
    util.raise("ValueError", P, "level must be \"near\", \"all\" or \"store\", got %s", util.show(level))
  end
  local out, steps = {}, C // 64
  local function add(o)
    o.intrin, o.BK, o.tma = "wgmma", 64, true
    if o.wgmma_pending == nil then o.wgmma_pending = (o.warp_specialize or steps > 1) and 1 or 0 end
    if o.persistent then o.persistent_tail = true end -- all the SMs, whatever the tile count's divisors
    if Mg % o.BM == 0 and F % o.BN == 0 and C % 64 == 0 then out[#out + 1] = o end
  end
  local bns = {math.min(F, 256)}
  if F >= 256 then bns[2] = 128 end
  local st = math.max(1, math.min(3, steps))
  -- "store": only the TMA-store variants for output-bound layers beyond the rule's: warp-specialized +
  -- persistent (the producer loads the next tiles while the consumers store this one; 3 stages + the
  -- store tile fit 227 KB at BN 256), no persistent grid (a CTA a tile: the hardware overlaps one CTA's
  -- store with another's loads), BM 64 (one warpgroup, half the registers, more CTAs an SM)
  local store = {{BM = 128, BN = math.min(F, 256), stages = 3, warp_specialize = true, persistent = true, epilogue_store = "tma"},
                 {BM = 128, BN = math.min(F, 256), stages = st, epilogue_store = "tma"},
                 {BM = 64, BN = math.min(F, 256), stages = st, persistent = true, epilogue_store = "tma"}}
  if level == "store" then
    for _, o in ipairs(store) do add(o) end
    return out
  end
  for _, BN in ipairs(bns) do
    add{BM = 128, BN = BN, stages = 4, warp_specialize = true, persistent = true}
    add{BM = 128, BN = BN, stages = st, persistent = true, epilogue_store = "tma"}
  end
  if level ~= nil then for _, o in ipairs(store) do add(o) end end
  if level == "all" then
    if F == 64 then add{BM = 256, BN = 64, stages = 4, warp_specialize = true, persistent = true} end
    add{BM = 128, BN = math.min(F, 256), stages = math.max(1, math.min(4, steps))}
  end
  return out
end

-- The rule, from bench/conv2d.lua's and scripts/gpu/conv_gemm_variants.lua's timings of the candidates on
-- ResNet-50's 1x1 layers (H200, bench/RESULTS.md "ResNet-50's 1x1 layers on wgmma", "Stop 11: the TMA-store
-- tile in 128-byte boxes" and "Stop 12 (hC1)"): F >= 256 -> warp-specialized + persistent with the TMA-store
-- epilogue, BN = 256, 3 stages, on an SM-count grid (persistent_tail: 392 tiles in 3 rounds on 132 CTAs
-- where the divisor grid took 4 on 98: conv5's expand 0.0445 -> 0.0237 ms, conv5's first reduce 0.0598 ms
-- (cp.async) -> 0.0415, the expands of conv2-4 3-11 % faster than the divisor grid); F = 128 -> the same
-- with BN 128; F = 64 with C = 64 (one k step) -> one CTA a tile with the TMA load and the TMA-store
-- epilogue, 1 stage (401408x64x64: 0.0284 ms against 0.0524 for the cp.async tiles and 0.0324 for the
-- warp-specialized persistent kernel: the hardware overlaps one CTA's store with another's loads); other
-- F = 64 layers -> the cp.async tiles of wgmma_tiles.  Not the same kernel with a k loop (3 stages,
-- wgmma_pending 1): on the H200 (stop-12 closing round, 401408x64x256) it wrote 52 of 25.7 M outputs wrong
-- (26 NaN) -- an open bug, see bench/RESULTS.md "Stop 12 closing round".
function M.wgmma_gemm_tiles(info)
  local P = "conv2d_tc.wgmma_gemm_tiles"
  local Mg, F, C = gemm_info(P, info)
  local want
  if F >= 256 then want = function(o) return o.epilogue_store == "tma" and o.warp_specialize and o.persistent and o.BN == 256 end
  elseif F == 128 then want = function(o) return o.epilogue_store == "tma" and o.warp_specialize and o.persistent and o.BN == 128 end
  elseif F == 64 and C == 64 then want = function(o) return o.epilogue_store == "tma" and not o.persistent and not o.warp_specialize and o.BM == 128 end
  end
  if want then
    for _, o in ipairs(M.wgmma_gemm_space(info, "near")) do if want(o) then return o end end
  end
  local ok, o = pcall(M.wgmma_tiles, info)
  if not ok then
    util.raise("ValueError", P, "no wgmma tiling (BM, BN in 64, 128, 256; BK 64) divides M = %d, F = %d, C = %d", Mg, F, C)
  end
  return o
end

function M.wgmma_gemm(info, opts)
  local P = "conv2d_tc.wgmma_gemm"
  local Mg, F, C = gemm_info(P, info)
  if opts ~= nil and type(opts) ~= "table" then util.raise("TypeError", P, "opts must be a table of tc_gemm_wgmma options, got %s", util.show(opts)) end
  local o = {epilogue = "D"}
  for k, v in pairs(opts or M.wgmma_gemm_tiles(info)) do o[k] = v end
  o.intrin = "wgmma"
  local sch = tc.schedule(tc.workload(Mg, F, C, info.dtype, info.out_dtype, nil, "NT"), o)
  return sch, {{Mg, C}, {F, C}, {Mg, F}}
end

--- The tile options for a layer (info from workload): override when given (copied), else for a
-- workload built with weight_layout = "FK" (the wgmma one) wgmma_tiles' rule (intrin = "wgmma"), else for a
-- plain GEMM (is_gemm) tc_gemm's tuned options of the M x F x K GEMM (tc_gemm_tune.options: the
-- tuning database's record or the nearest shape's), else the conv tuning record of this layer
-- (tune), else default_tiles.  Returns the options and how they were chosen.
function M.layer_options(info, override)
  check_info("conv2d_tc.layer_options", info)
  if override ~= nil and type(override) ~= "table" then
    util.raise("TypeError", "conv2d_tc.layer_options", "override must be a table of conv2d_tc.schedule options, got %s", util.show(override))
  end
  local Fn = info.Fg or info.F
  local o = {}
  if override then
    for k, v in pairs(override) do o[k] = v end
    return o, "given"
  end
  if info.weight_layout == "FK" then
    if M.is_gemm(info) then return M.wgmma_tiles(info), "wgmma_tiles rule" end
    return M.wgmma_implicit_tiles(info), "wgmma_implicit_tiles rule"
  end
  local tt = require("tir.schedules.tc_gemm_tune")
  local function fits(p) return info.Mp % (p.BM or tc.defaults.BM) == 0 and Fn % (p.BN or tc.defaults.BN) == 0 and
                                info.Kp % (p.BK or tc.defaults.BK) == 0 end
  if M.is_gemm(info) and info.dtype == "float16" then
    local p, how = tt.options(info.M, info.F, info.K, {dtype = "float16", out_dtype = "float16"})
    if how ~= "defaults" and fits(p) then return p, "tc_gemm " .. how end
  end
  local rec, how = tir.tune.lookup(M.workload_key(info), "cuda")
  if rec and fits(rec.params) then
    for k, v in pairs(rec.params) do o[k] = v end
    return o, how
  end
  return M.default_tiles(info), "default tiles"
end

--- The tuning-database key of a layer: "conv2d_tc:<dtype>:N,H,W,C,F,R,S,stride,pad,dilation".
function M.workload_key(info)
  check_info("conv2d_tc.workload_key", info)
  local q = info.plan
  return ("conv2d_tc:%s:%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d"):format(info.dtype, q.N, q.isz[1], q.isz[2], q.C, info.F, q.ksz[1], q.ksz[2],
    q.stride[1], q.stride[2], q.lo[1], q.lo[2], q.hi[1], q.hi[2], q.dil[1])
end

--- Schedules a workload's PrimFunc.  opts: variant ("implicit" | "im2col"), tc_gemm's tile
-- parameters (BM, BN, BK, warp_m, warp_n, stages, vec, pad, intrin, ...: what layer_options
-- returns; omitted ones are tc_gemm's defaults), im2col_threads (256) and im2col_vec (8) for the
-- explicit variant's im2col kernel.  Errors: tc_gemm's (tiles that do not divide Mp, F, Kp).
function M.schedule(func, opts)
  local P = "conv2d_tc.schedule"
  util.check_opts(P, opts, SCHED_OPTS)
  local o = {}
  for k, v in pairs(opts or {}) do o[k] = v end
  local variant = o.variant or "implicit"
  if variant ~= "implicit" and variant ~= "im2col" then
    util.raise("ValueError", P, "variant must be \"implicit\" (implicit GEMM) or \"im2col\" (explicit im2col + GEMM), got %s", util.show(variant))
  end
  if not tir.core.is_node(func, "PrimFunc") then
    util.raise("TypeError", P, "expected the PrimFunc of conv2d_tc.workload, got %s", util.describe(func))
  end
  local wgmma = o.intrin == "wgmma"
  local to = {epilogue = "D"}
  for k, v in pairs(o) do if (wgmma and WG.OPTS or tc.SCHEDULE_OPTS)[k] then to[k] = v end end
  for k in pairs(o) do
    if wgmma and not WG.OPTS[k] and tc.SCHEDULE_OPTS[k] then
      local names = {}
      for n in pairs(WG.OPTS) do if SCHED_OPTS[n] then names[#names + 1] = n end end
      table.sort(names)
      util.raise("ValueError", P, "option %s is an mma.sync / WMMA option; with intrin = \"wgmma\" the tile options are %s", k,
                 table.concat(names, ", "))
    end
  end
  local sch = tir.Schedule(func)
  local ok = pcall(function() return sch:get_block("A_im2col") end)
  if not ok then util.raise("ValueError", P, "the function has no block A_im2col: build it with conv2d_tc.workload") end
  -- the tiles must divide the GEMM (checked here so that the advice names this file's workload
  -- options: tc_gemm's names tc_gemm.workload's pad): Mp (pad_m), F (no padding), Kp (pad_k)
  local ext = tc.analyze(sch, sch:get_block("C"), P).extents
  local dflt = tc.defaults
  local what = {{"M = N*P*Q (after pad_m)", "BM", "build the workload with conv2d_tc.workload{..., pad_m = %d} (zero rows, sliced off by the caller)"},
                {"F (output channels per group)", "BN", "output channels are not padded"},
                {"Kp = R*S*C padded", "BK", "build the workload (and pack_weight) with pad_k = %d"}}
  for q = 1, 3 do
    local e, w = ext[#ext - 3 + q], what[q]
    -- (wgmma without tile options takes tc_gemm_wgmma.pick's tiles: only given ones are checked here)
    local t = o[w[2]] or (not wgmma and dflt[w[2]]) or nil
    if e and t and e % t ~= 0 then
      util.raise("ValueError", P, "%s = %d is not a multiple of %s = %d: %s, or pick a %s that divides %d", w[1], e, w[2], t,
                 w[3]:format(t), w[2], e)
    end
  end
  local function has(name) return (pcall(function() return sch:get_block(name) end)) end
  local xname = has("X_pad") and "X_pad" or has("X_nhwc") and "X_nhwc" or nil
  local threads, vec = o.im2col_threads or 256, o.im2col_vec or 8
  local xbuf = xname and sch:get(sch:get_block(xname)).writes[1].buffer
  local e = xbuf and ESIZE[xbuf.dtype]
  if xbuf and (xbuf.shape[4].value * e) % 16 ~= 0 then
    -- padded channels: each pixel of X_pad is 8 bytes, the copies move one pixel each
    if to.vec == nil then to.vec = 8 // e end
    if o.im2col_vec == nil then vec = 8 // e end
  end
  if wgmma then
    -- wgmma (tc_gemm_wgmma.lua): both operands K-major in 32/64/128-byte swizzled shared rows; the
    -- im2col block itself is the A tile (implicit) or the GEMM reads its global matrix (im2col)
    local gi = tc.analyze(sch, sch:get_block("C"), P)
    if gi.layout ~= "NT" then
      util.raise("ValueError", P, "intrin = \"wgmma\" reads the weight K-major: build the workload and pack_weight with " ..
                 "weight_layout = \"FK\" (Wm [F, Kp]); this workload's Wm is [Kp, F]")
    end
    if gi.batch > 0 then util.raise("ValueError", P, "intrin = \"wgmma\" has no batch dimension: grouped convolutions run on mma.sync") end
    -- the epilogue D (the fp16 cast, bias, relu, requantize, int8's int32 copy) runs from a staged
    -- shared tile (tc_gemm_wgmma_epilogue), the plain cast too: stored 16 bytes a thread, measured
    -- 9-22 % faster than the fragments' own 4-byte stores on ResNet-50's 3x3 layers (bench/RESULTS.md);
    -- epilogue_store = "direct" fuses a plain cast into the fragment store instead
    if to.epilogue_store == nil then to.epilogue_store = "staged" end
    if to.epilogue_store == "staged" and to.epilogue_vec == nil then
      -- (16-bit outputs: 8 a thread, one 16-byte store; the others keep the staged path's default)
      local odt = sch:get(sch:get_block("D")).writes[1].buffer.dtype
      if tonumber(odt:match("%d+$")) == 16 then to.epilogue_vec = 8 end
    end
    if variant == "implicit" then to.a_stage = "A_im2col" end
    sch = tc.schedule(sch, to)
    if variant == "im2col" then elementwise_kernel(sch, sch:get_block("A_im2col"), threads, vec) end
  elseif variant == "implicit" then
    to.a_stage = "A_im2col"
    sch = tc.schedule(sch, to)
  else
    sch = tc.schedule(sch, to)
    elementwise_kernel(sch, sch:get_block("A_im2col"), threads, vec)
  end
  -- X_pad: one pixel (its 8 or 16 padded bytes) a thread, one vector store; X_nhwc element by element
  if xname then elementwise_kernel(sch, sch:get_block(xname), 256, xname == "X_pad" and (xbuf.shape[4].value * e == 8 or xbuf.shape[4].value * e == 16) and xbuf.shape[4].value or 1) end
  if has("out_nchw") then elementwise_kernel(sch, sch:get_block("out_nchw"), 256, 1) end
  if has("out_nhwc") then elementwise_kernel(sch, sch:get_block("out_nhwc"), 256, 1) end
  return sch
end

M.workload = util.strict("conv2d_tc.workload", M.workload)
M.pack_weight = util.strict("conv2d_tc.pack_weight", M.pack_weight)
M.schedule = util.strict("conv2d_tc.schedule", M.schedule)
M.tune = util.strict("conv2d_tc.tune", M.tune)
M.space = util.strict("conv2d_tc.space", M.space)
M.default_tiles = util.strict("conv2d_tc.default_tiles", M.default_tiles)
M.layer_options = util.strict("conv2d_tc.layer_options", M.layer_options)
M.wgmma_ws_space = util.strict("conv2d_tc.wgmma_ws_space", M.wgmma_ws_space)
M.wgmma_im2col_space = util.strict("conv2d_tc.wgmma_im2col_space", M.wgmma_im2col_space)
M.im2col_geometry = util.strict("conv2d_tc.im2col_geometry", M.im2col_geometry)
M.wgmma_implicit_tiles = util.strict("conv2d_tc.wgmma_implicit_tiles", M.wgmma_implicit_tiles)
M.wgmma_gemm_space = util.strict("conv2d_tc.wgmma_gemm_space", M.wgmma_gemm_space)
M.wgmma_gemm_tiles = util.strict("conv2d_tc.wgmma_gemm_tiles", M.wgmma_gemm_tiles)
M.wgmma_gemm = util.strict("conv2d_tc.wgmma_gemm", M.wgmma_gemm)
M.padded_channels = util.strict("conv2d_tc.padded_channels", M.padded_channels)
return M
