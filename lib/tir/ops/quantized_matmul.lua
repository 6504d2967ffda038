--- tir.ops.quantized_matmul{...}: a quantized GEMM as one PrimFunc (TVM relay's qnn.dense
-- followed by qnn.requantize, python/tvm/relay/qnn/op/qnn.py; the 4-term expansion is the one
-- TVM's QNN canonicalization (src/relay/qnn/op/dense.cc) uses).
--
--   out[i, j] = clamp(round(scale_j * (acc[i, j] + bias[j])) + zo, lo, hi)
--   acc[i, j] = sum_k (A[i, k] - za_i) * (B[k, j] - zb_j)        (int32)
--
-- Rounding: round half to even (the "round" builtin: nearbyint / rintf / cvt.rni), in float32:
-- scale_j * float32(acc + bias) is one float32 multiplication of float32(acc + bias) (itself
-- rounded to nearest even when |acc + bias| > 2^24).  The rounded value is clamped to
-- [lo - zo, hi - zo] before the (exact) conversion to int32, so no float->int conversion
-- saturates.  lo, hi: the output dtype's range; ReLU raises lo to zo.
-- out_dtype "int32": acc + bias (no requantization); "float16"/"float32": the dequantized
-- scale_j * float32(acc + bias) (no zero point, no clamp).
--
-- With four_term (the default) the compute is rewritten so that the inner loop is a pure int8
-- GEMM (the rewrite is visible in the printed PrimFunc: blocks "C", "a_row_sum", "b_col_sum"):
--   sum_k (a - za)(b - zb) = sum_k a*b - zb * sum_k a - za * sum_k b + K * za * zb
-- Each term that a zero point of 0 makes vanish is left out; with a per-column zb (and za ~= 0)
-- the two zb terms are one, zb_j * (K * za - sum_k a), so zb[j] is read once.  The column sums of B are
-- computed in the PrimFunc ("b_col_sum"), or taken as an int32 parameter `b_col_sums` [N]
-- when b_sums = "input" (B a constant weight: precompute them once, e.g. with
-- quantized_matmul.col_sums).  four_term = false gives the direct compute (the reference),
-- with accum_dtype = "int64" available for an overflow-free oracle.
--
-- Options (defaults):
--   M, N, K        positive integers
--   a_dtype        "int8" | "uint8" ("int8")        b_dtype "int8" | "uint8" ("int8")
--   b_layout       "NK" (B[N, K], a weight as qnn.dense takes it) | "KN" ("NK")
--   a_zero_point   integer constant, or "per_row" (int32 parameter za[M]) (0)
--   b_zero_point   integer constant, or "per_column" (int32 parameter zb[N]) (0)
--   bias           true: int32 parameter bias[N] (false)
--   scale          a number (a constant), "per_tensor" (float32 parameter scale[1]) or
--                  "per_channel" (float32 parameter scale[N]) (1.0)
--   out_zero_point integer (0)      out_dtype "int8" | "uint8" | "int32" | "float16" | "float32" ("int8")
--   relu           false            four_term true     b_sums, a_sums "compute" | "input" ("compute")
--   accum_dtype    "int32" | "int64" ("int32"; int64 only with four_term = false)
--   name           "qmatmul"
-- a_sums = "input" likewise takes the row sums of A as an int32 parameter `a_row_sums` [M] (for
-- zb != 0 when a schedule needs the GEMM as the epilogue's only producer; computed per call,
-- e.g. with quantized_matmul.row_sums_func, a separate kernel).  a_sums = "ones" computes them in
-- the PrimFunc as a product with a matrix of ones: block "a_ones" (int8 [8, 32] = 1) and block
-- "a_row_sum" [M, 8] = sum_k A[i, k] * a_ones[j, k % 32] (eight equal columns; output column j
-- reads column j % 8), the form tc_gemm intrin = "wgmma" runs as one more wgmma m64n8k32 per 32 columns of A
-- (tc_gemm_row_sums.lua) instead of summing on the CUDA cores; exact (int32, the same sums).
-- Parameters, in order: A, B, [za], [zb], [bias], [scale], [b_col_sums], [a_row_sums], out.
-- Errors (tir.Error, primitive "quantized_matmul"): unknown options, non-positive or
-- non-integer extents, dtypes outside the lists (e.g. float inputs), zero points that are not
-- integers (a float zero point of an int8 op) or outside the input dtype's range, an output
-- zero point outside the output range, a constant scale that is not positive and finite, and
-- (accum_dtype int32) a K for which sum_k (a - za)(b - zb) can leave int32: K * ma * mb >
-- 2^31 - 1 with ma = max |a - za| over A's range (255 for a per-row za), mb likewise (int8 x
-- int8 with zero points 0: K <= 131071; the worst case, 255 x 255: K <= 33025).  Runtime inputs
-- are not checked: scale parameters must be positive, per-row/per-column zero points inside the
-- input dtype's range, and acc + bias must fit int32.
local tir = require("tir")
local util = require("tir.util")
local te = tir.te

local P = "quantized_matmul"
local function raise(kind, fmt, ...) util.raise(kind, P, fmt, ...) end

local RANGE = {int8 = {-128, 127}, uint8 = {0, 255}, int32 = {-2147483648, 2147483647}}

local DEFAULTS = {M = false, N = false, K = false, a_dtype = "int8", b_dtype = "int8", b_layout = "NK", a_zero_point = 0,
                  b_zero_point = 0, bias = false, scale = 1.0, out_zero_point = 0, out_dtype = "int8", relu = false,
                  four_term = true, b_sums = "compute", a_sums = "compute", accum_dtype = "int32", name = "qmatmul"}

-- every option's type (util.check_opts: unknown keys and wrong types are errors naming the option);
-- the values are checked further below (ranges, one-of lists)
local OPT_TYPES = {M = "any", N = "any", K = "any", a_dtype = "string", b_dtype = "string", b_layout = "string",
                   a_zero_point = "integer|string", b_zero_point = "integer|string", bias = "boolean", scale = "number|string",
                   out_zero_point = "integer", out_dtype = "string", relu = "boolean", four_term = "boolean", b_sums = "string",
                   a_sums = "string", accum_dtype = "string",
                   name = function(v)
                     if type(v) ~= "string" or not v:match("^[%a_][%w_]*$") then return "an identifier string ([A-Za-z_][A-Za-z0-9_]*)" end
                   end}

local function check(o)
  local r = {}
  for k, v in pairs(util.check_opts(P, o, OPT_TYPES)) do r[k] = v end
  for k, v in pairs(DEFAULTS) do if r[k] == nil then r[k] = v end end
  for _, k in ipairs({"M", "N", "K"}) do
    local v = r[k]
    if math.type(v) ~= "integer" or v < 1 then raise("ValueError", "%s must be a positive integer, got %s", k, util.show(v)) end
  end
  local function one_of(k, list)
    for _, x in ipairs(list) do if r[k] == x then return end end
    raise("TypeError", "%s must be one of %s, got %s", k, table.concat(list, ", "), util.show(r[k]))
  end
  one_of("a_dtype", {"int8", "uint8"})
  one_of("b_dtype", {"int8", "uint8"})
  one_of("b_layout", {"NK", "KN"})
  one_of("out_dtype", {"int8", "uint8", "int32", "float16", "float32"})
  one_of("b_sums", {"compute", "input"})
  one_of("a_sums", {"compute", "input", "ones"})
  one_of("accum_dtype", {"int32", "int64"})
  for _, k in ipairs({"bias", "relu", "four_term"}) do
    if type(r[k]) ~= "boolean" then raise("TypeError", "%s must be a boolean, got %s", k, util.show(r[k])) end
  end
  local function zp(k, dt, per)
    local v = r[k]
    if v == per then return end
    if math.type(v) ~= "integer" then
      raise("TypeError", "%s must be an integer of %s's range (or %q), got %s: zero points of an integer op are integers",
            k, dt, per, util.show(v))
    end
    if v < RANGE[dt][1] or v > RANGE[dt][2] then
      raise("ValueError", "%s = %d is outside the range of %s [%d, %d]", k, v, dt, RANGE[dt][1], RANGE[dt][2])
    end
  end
  zp("a_zero_point", r.a_dtype, "per_row")
  zp("b_zero_point", r.b_dtype, "per_column")
  if math.type(r.out_zero_point) ~= "integer" then
    raise("TypeError", "out_zero_point must be an integer, got %s", util.show(r.out_zero_point))
  end
  if RANGE[r.out_dtype] and r.out_dtype ~= "int32" then
    local lo, hi = RANGE[r.out_dtype][1], RANGE[r.out_dtype][2]
    if r.out_zero_point < lo or r.out_zero_point > hi then
      raise("ValueError", "out_zero_point = %d is outside the range of %s [%d, %d]", r.out_zero_point, r.out_dtype, lo, hi)
    end
  elseif r.out_zero_point ~= 0 then
    raise("ValueError", "out_zero_point applies to int8/uint8 outputs only (out_dtype %s)", r.out_dtype)
  end
  if type(r.scale) == "number" then
    if r.scale ~= r.scale or r.scale == math.huge or r.scale == -math.huge then raise("ValueError", "scale must be finite") end
    -- requantization scales are s_a * s_b / s_out of positive quantization steps (TVM QNN)
    if r.scale <= 0 then raise("ValueError", "scale must be positive, got %s", util.show(r.scale)) end
  elseif r.scale ~= "per_tensor" and r.scale ~= "per_channel" then
    raise("TypeError", "scale must be a number, \"per_tensor\" or \"per_channel\", got %s", util.show(r.scale))
  end
  -- the int32 accumulator must hold sum_k (a - za)(b - zb) exactly: |a - za| <= ma, |b - zb| <= mb
  -- (a per-row / per-column zero point is any value of the input dtype's range: ma = hi - lo)
  if r.accum_dtype == "int32" then
    local function most(dt, z)
      local lo, hi = RANGE[dt][1], RANGE[dt][2]
      if math.type(z) ~= "integer" then return hi - lo end
      return math.max(hi - z, z - lo)
    end
    local ma, mb = most(r.a_dtype, r.a_zero_point), most(r.b_dtype, r.b_zero_point)
    if r.K * ma * mb > RANGE.int32[2] then
      raise("ValueError", "K = %d can overflow the int32 accumulator: |sum_k (a - za)(b - zb)| reaches K * %d * %d = %d > 2^31 - 1 "
            .. "(%s x %s, zero points %s, %s); the largest K is %d (split K, or the int64 direct form: four_term = false, "
            .. "accum_dtype = \"int64\")", r.K, ma, mb, r.K * ma * mb, r.a_dtype, r.b_dtype, tostring(r.a_zero_point),
            tostring(r.b_zero_point), RANGE.int32[2] // (ma * mb))
    end
  end
  if r.accum_dtype == "int64" and r.four_term then raise("ValueError", "accum_dtype int64 is for the direct compute (four_term = false)") end
  if r.b_sums == "input" and not r.four_term then raise("ValueError", "b_sums = \"input\" needs four_term") end
  if r.a_sums == "ones" and r.K % 32 ~= 0 then
    raise("ValueError", "a_sums = \"ones\" sums A against a 32-column ones matrix: K = %d must be a multiple of 32", r.K)
  end
  if r.a_sums ~= "compute" and not r.four_term then raise("ValueError", "a_sums = %q needs four_term", r.a_sums) end
  if r.relu and not (r.out_dtype == "int8" or r.out_dtype == "uint8") then
    raise("ValueError", "relu applies to requantized int8/uint8 outputs (out_dtype %s)", r.out_dtype)
  end
  return r
end

--- The requantization of a float32 value x (the scaled accumulator) to int8 / uint8:
-- clamp(round_half_even(x), lo - zo, hi - zo) + zo, with lo raised to zo by relu.  Shared with
-- tir.ops.conv's requantize epilogue.
local function requantize_expr(x, zo, out_dtype, relu)
  local lo, hi = RANGE[out_dtype][1], RANGE[out_dtype][2]
  if relu then lo = math.max(lo, zo) end
  local r = tir.call("float32", "round", x)
  r = tir.min(tir.max(r, tir.const(lo - zo, "float32")), tir.const(hi - zo, "float32"))
  return te.cast(out_dtype, te.cast("int32", r) + tir.const(zo, "int32"))
end

-- a_sums = "ones": the columns of the ones operand (one int8 MMA instruction's k)
local ONES_K = 32

local function build(o)
  o = check(o)
  local M, N, K = o.M, o.N, o.K
  local acc_t = o.accum_dtype
  local A = te.placeholder({M, K}, o.a_dtype, "A")
  local B = o.b_layout == "NK" and te.placeholder({N, K}, o.b_dtype, "B") or te.placeholder({K, N}, o.b_dtype, "B")
  local function b_at(k, j)
    if o.b_layout == "NK" then return B[{j, k}] end
    return B[{k, j}]
  end
  local params = {A, B}
  local ZA, ZB, BIAS, SCALE, BSUM
  if o.a_zero_point == "per_row" then ZA = te.placeholder({M}, "int32", "za"); params[#params + 1] = ZA end
  if o.b_zero_point == "per_column" then ZB = te.placeholder({N}, "int32", "zb"); params[#params + 1] = ZB end
  if o.bias then BIAS = te.placeholder({N}, "int32", "bias"); params[#params + 1] = BIAS end
  if o.scale == "per_tensor" then SCALE = te.placeholder({1}, "float32", "scale"); params[#params + 1] = SCALE end
  if o.scale == "per_channel" then SCALE = te.placeholder({N}, "float32", "scale"); params[#params + 1] = SCALE end
  if o.b_sums == "input" then BSUM = te.placeholder({N}, "int32", "b_col_sums"); params[#params + 1] = BSUM end
  local ASUM
  if o.a_sums == "input" then ASUM = te.placeholder({M}, "int32", "a_row_sums"); params[#params + 1] = ASUM end
  local function c(v, dt) return tir.const(v, dt or acc_t) end
  local function za(i) return ZA and te.cast(acc_t, ZA[{i}]) or c(o.a_zero_point) end
  local function zb(j) return ZB and te.cast(acc_t, ZB[{j}]) or c(o.b_zero_point) end
  local za_zero = o.a_zero_point == 0
  local zb_zero = o.b_zero_point == 0
  local acc
  if not o.four_term then
    -- the direct form: sum_k (a - za)(b - zb)
    local k = te.reduce_axis({0, K}, "k")
    acc = te.compute({M, N}, function(i, j)
      local a = te.cast(acc_t, A[{i, k}])
      local b = te.cast(acc_t, b_at(k, j))
      if not za_zero then a = a - za(i) end
      if not zb_zero then b = b - zb(j) end
      return te.sum(a * b, {k})
    end, "C")
  else
    -- the 4-term form: sum ab - zb * sum a - za * sum b + K za zb
    local k = te.reduce_axis({0, K}, "k")
    local C = te.compute({M, N}, function(i, j)
      return te.sum(te.cast(acc_t, A[{i, k}]) * te.cast(acc_t, b_at(k, j)), {k})
    end, "C")
    local RA, CB
    if not zb_zero then
      if ASUM then
        RA = ASUM
      elseif o.a_sums == "ones" then
        -- the row sums as a GEMM against ones: a_row_sum[i, j] = sum_k A[i, k] * a_ones[j, k % 32]
        -- (k = 32 kao + kai: two reduction axes, K a multiple of 32)
        -- (8 equal columns; j < 8 and k % 32: the smallest B tile of an int8 MMA, n = 8, k = 32),
        -- so that a tensor-core schedule runs them on its MMA instructions (tc_gemm_row_sums.lua)
        local ones = te.compute({8, ONES_K}, function(_, _) return tir.const(1, "int8") end, "a_ones")
        local kao, kai = te.reduce_axis({0, K // ONES_K}, "kao"), te.reduce_axis({0, ONES_K}, "kai")
        local R8 = te.compute({M, 8}, function(i, j)
          return te.sum(te.cast(acc_t, A[{i, kao * ONES_K + kai}]) * te.cast(acc_t, ones[{j, kai}]), {kao, kai})
        end, "a_row_sum")
        RA = {R8 = R8}
      else
        local ka = te.reduce_axis({0, K}, "ka")
        RA = te.compute({M}, function(i) return te.sum(te.cast(acc_t, A[{i, ka}]), {ka}) end, "a_row_sum")
      end
    end
    if not za_zero then
      if BSUM then
        CB = BSUM
      else
        local kb = te.reduce_axis({0, K}, "kb")
        CB = te.compute({N}, function(j) return te.sum(te.cast(acc_t, b_at(kb, j)), {kb}) end, "b_col_sum")
      end
    end
    acc = {C = C, RA = RA, CB = CB}
  end
  local function scale_at(j)
    if type(o.scale) == "number" then return tir.const(o.scale, "float32") end
    return o.scale == "per_tensor" and SCALE[{0}] or SCALE[{j}]
  end
  local out = te.compute({M, N}, function(i, j)
    local v
    if o.four_term then
      -- the sums are indexed first so that their blocks come before the GEMM's (a schedule
      -- can then move the epilogue into the GEMM's nest with the sums computed ahead of it)
      -- (a_sums = "ones": column j % 8 of the eight equal ones, so that a tile of outputs reads
      -- all eight -- the n = 8 MMA's whole accumulator -- and a schedule's compute_at keeps them)
      local ra = acc.RA and (acc.RA.R8 and acc.RA.R8[{i, tir.floormod(j, 8)}] or acc.RA[{i}])
      local cb = acc.CB and acc.CB[{j}]
      v = acc.C[{i, j}]
      if ra and ZB and not za_zero then
        -- a per-column zb: - zb * sum a + K za zb = zb * (K za - sum a), so the epilogue reads zb[j]
        -- once (|K za - sum a| <= K ma: the product stays inside the int32 bound checked above)
        v = v + zb(j) * (c(K) * za(i) - ra)
        if cb then v = v - za(i) * cb end
      else
        if ra then v = v - zb(j) * ra end
        if cb then v = v - za(i) * cb end
        if not za_zero and not zb_zero then v = v + c(K) * za(i) * zb(j) end
      end
    else
      v = acc[{i, j}]
    end
    if BIAS then v = v + te.cast(acc_t, BIAS[{j}]) end
    if o.out_dtype == "int32" then return te.cast("int32", v) end
    local x = scale_at(j) * te.cast("float32", v)
    if o.out_dtype == "float16" or o.out_dtype == "float32" then return te.cast(o.out_dtype, x) end
    return requantize_expr(x, o.out_zero_point, o.out_dtype, o.relu)
  end, "out")
  params[#params + 1] = out
  return te.create_prim_func(params, o.name)
end

local qm = setmetatable({}, {__call = function(_, o)
  if type(o) ~= "table" then raise("TypeError", "expects a table of options, got %s", util.show(o)) end
  return build(o)
end})

--- quantized_matmul.col_sums(B, layout): the int32 column sums of an int8 weight B (an NDArray
-- on the host; "NK" or "KN"), for b_sums = "input".  Returns an NDArray [N] int32.
function qm.col_sums(B, layout)
  local sh = B:shape()
  local N, K = sh[1], sh[2]
  if layout == "KN" then N, K = sh[2], sh[1] end
  local t = B:to_table()
  local s = {}
  for j = 1, N do
    local acc = 0
    for k = 1, K do acc = acc + (layout == "KN" and t[k][j] or t[j][k]) end
    s[j] = acc
  end
  return tir.nd.array(s, "int32")
end

--- quantized_matmul.row_sums_func(M, K, a_dtype): the PrimFunc (A, a_row_sums) computing the
-- int32 row sums of A (for a_sums = "input": a separate kernel before the GEMM, per call).
function qm.row_sums_func(M, K, a_dtype)
  local A = te.placeholder({M, K}, a_dtype or "int8", "A")
  local ka = te.reduce_axis({0, K}, "ka")
  local S = te.compute({M}, function(i) return te.sum(te.cast("int32", A[{i, ka}]), {ka}) end, "a_row_sum")
  return te.create_prim_func({A, S}, "a_row_sums")
end

--- quantized_matmul.col_sums_func(N, K, layout, b_dtype): the PrimFunc (B, b_col_sums) computing
-- the column sums on any target (the one-time pre-pass of a constant weight on the GPU).
function qm.col_sums_func(N, K, layout, b_dtype)
  local B = (layout or "NK") == "NK" and te.placeholder({N, K}, b_dtype or "int8", "B") or te.placeholder({K, N}, b_dtype or "int8", "B")
  local kb = te.reduce_axis({0, K}, "kb")
  local S = te.compute({N}, function(j)
    return te.sum(te.cast("int32", (layout or "NK") == "NK" and B[{j, kb}] or B[{kb, j}]), {kb})
  end, "b_col_sum")
  return te.create_prim_func({B, S}, "b_col_sums")
end

qm.defaults = DEFAULTS
qm.requantize_expr = requantize_expr
-- a call with more arguments than a function's parameters is an error (util.strict)
qm.col_sums = util.strict("quantized_matmul.col_sums", qm.col_sums)
qm.col_sums_func = util.strict("quantized_matmul.col_sums_func", qm.col_sums_func)
return qm
