--- tir.ops convolutions: conv1d / conv2d / conv3d in channels-last and channels-first layouts
-- with stride, padding, dilation and groups, as te computes (TVM's topi.nn.conv,
-- python/tvm/topi/nn/conv2d.py), with optional epilogue stages (bias, activation, output cast).
--
--   out[n, y.., f] = sum_{ry.., rc} cast(acc, pad[n, y*stride + ry*dilation.., g*Cg + rc])
--                                   * cast(acc, W[ry.., rc, f])          (NHWC / HWIO)
--   g = f // (F / groups), Cg = C / groups;  P = (H + pad_lo + pad_hi - dilation*(R-1) - 1) // stride + 1
--
-- Accumulation dtype: float32 for float16 / bfloat16 / float32 inputs, int32 for int8 / uint8
-- (int8 x uint8 mixes allowed).  out_dtype (default the accumulation dtype) is reached by a cast
-- in the epilogue stage.
--
-- Stages (blocks) and their names: "pad_temp" (only when some padding is > 0: the input with
-- zeros around it, TVM's topi.nn.pad; "<name>_pad_temp" when opts.name is given), the convolution (name, default the op's: "conv2d_nhwc",
-- "conv2d_nchw", "conv1d_nwc", "conv3d_ncdhw", ...), and "<name>_epilogue" when a bias, an
-- activation, a requantization or an out_dtype other than the accumulator's asks for one:
--   epilogue = cast(out_dtype, act(acc + bias[f]))
--   requantize = {scale, out_zero_point, out_dtype}: int8 inputs only; the requantization of
--     tir.ops.quantized_matmul (round half to even in float32, clamp, zero point; ReLU raises
--     the lower bound) replaces the cast: scale a number or "per_channel" (a float32 parameter
--     [F] that the caller passes as opts.scale_tensor).
--
-- Layouts: data_layout is a string of N, C and the spatial letters (W; H W; D H W) in any
-- order ("NHWC", "NCHW", "NWC", "NCW", "NDHWC", "NCDHW"); kernel_layout a string of O, I and the
-- same spatial letters (default: spatial..IO for channels-last data, as TVM's HWIO; OI..spatial
-- for channels-first, OIHW).  "OHWI" (cuDNN's / CUTLASS's NHWC filter, KRSC) is accepted too.
-- Kernel shape: O = F (the output channels), I = C / groups.
--
-- padding: an integer (all sides), a list with one entry per spatial dimension (both sides of
-- it), or 2 * dims entries (the lows then the highs: {top, left, bottom, right} as TVM's
-- get_pad_tuple), or "VALID" / "SAME" (TVM's: SAME pads (K-1)*dilation in total, the larger
-- half after).  stride and dilation: an integer or one per spatial dimension.
--
-- Errors: tir.Errors of kind ValueError / TypeError naming the op (e.g. "conv2d_nhwc"): tensors
-- of the wrong rank, channel counts that do not match, groups that do not divide C or F,
-- negative padding, non-positive stride / dilation, an empty output, symbolic shapes, unsupported
-- dtypes, unknown options.
local tir = require("tir")
local util = require("tir.util")
local te = tir.te

local C = {}

local ACC = {float16 = "float32", bfloat16 = "float32", float32 = "float32", int8 = "int32", uint8 = "int32"}
local INT8 = {int8 = true, uint8 = true}
local SPATIAL = {{"W"}, {"H", "W"}, {"D", "H", "W"}}
-- index names as TVM's topi (nn, yy, xx, ff; reduce axes ry, rx, rc)
local OUT_NAME = {N = "nn", D = "zz", H = "yy", W = "xx", C = "ff"}
local RED_NAME = {D = "rz", H = "ry", W = "rx", C = "rc"}

local function raise(P, kind, fmt, ...) util.raise(kind, P, fmt, ...) end

--- Accumulation dtype of an input dtype (float32 for 16/32-bit floats, int32 for 8-bit ints).
function C.accum_dtype(dtype) return ACC[dtype] end

-- a te.compute whose index variables carry the given names (te.compute names them after the
-- parameters of fcompute; a generated function of that arity passes them on as a list)
local function compute(shape, names, body, name)
  local src = ("local f = ...; return function(%s) return f({%s}) end"):format(table.concat(names, ", "), table.concat(names, ", "))
  local fn = assert(load(src, "=conv_index", "t"))(body)
  return te.compute(shape, fn, name)
end
C._compute = compute

local function const_shape(P, t, what)
  if not te.is_tensor(t) then raise(P, "TypeError", "%s must be a te tensor (te.placeholder / te.compute), got %s", what, util.describe(t)) end
  local s = t.shape
  for i, d in ipairs(s) do
    if math.type(d) ~= "integer" then
      raise(P, "ValueError", "%s %s has a symbolic extent in dimension %d; convolutions need constant shapes", what, t.name, i)
    end
  end
  return s
end

local function dims_of(P, layout, letters, what)
  if type(layout) ~= "string" then raise(P, "TypeError", "%s must be a string such as \"NHWC\", got %s", what, util.show(layout)) end
  local pos = {}
  for i = 1, #layout do
    local ch = layout:sub(i, i)
    if pos[ch] then raise(P, "ValueError", "%s %s names %s twice", what, util.show(layout), ch) end
    pos[ch] = i
  end
  for _, ch in ipairs(letters) do
    if not pos[ch] then raise(P, "ValueError", "%s %s lacks %s (it must hold %s)", what, util.show(layout), ch, table.concat(letters)) end
  end
  if #layout ~= #letters then
    raise(P, "ValueError", "%s %s must hold exactly the letters %s", what, util.show(layout), table.concat(letters))
  end
  return pos
end

-- per-spatial-dimension integers from an integer or a list
local function per_dim(P, v, nd, what, min)
  local out = {}
  if math.type(v) == "integer" then
    for i = 1, nd do out[i] = v end
  elseif type(v) == "table" and #v == nd and util.count_keys(v) == nd then
    for i = 1, nd do out[i] = v[i] end
  else
    raise(P, "TypeError", "%s must be an integer or a list of %d integers, got %s", what, nd, util.show(v))
  end
  for i = 1, nd do
    if math.type(out[i]) ~= "integer" or out[i] < min then
      raise(P, "ValueError", "%s[%d] must be an integer >= %d, got %s", what, i, min, util.show(out[i]))
    end
  end
  return out
end

-- {lo.., hi..} from the padding forms (see the header)
local function pads_of(P, padding, nd, ksz, dil)
  local lo, hi = {}, {}
  if padding == "VALID" then
    for i = 1, nd do lo[i], hi[i] = 0, 0 end
  elseif padding == "SAME" then
    for i = 1, nd do
      local total = (ksz[i] - 1) * dil[i]
      lo[i] = total // 2; hi[i] = total - lo[i]
    end
  elseif math.type(padding) == "integer" then
    for i = 1, nd do lo[i], hi[i] = padding, padding end
  elseif type(padding) == "table" and (#padding == nd or #padding == 2 * nd) and util.count_keys(padding) == #padding then
    for i = 1, nd do
      lo[i] = padding[i]
      hi[i] = #padding == nd and padding[i] or padding[nd + i]
    end
  else
    raise(P, "TypeError", "padding must be an integer, a list of %d or %d integers, \"VALID\" or \"SAME\", got %s", nd, 2 * nd, util.show(padding))
  end
  for i = 1, nd do
    for _, v in ipairs({lo[i], hi[i]}) do
      if math.type(v) ~= "integer" then raise(P, "TypeError", "padding entries must be integers, got %s", util.show(v)) end
      if v < 0 then raise(P, "ValueError", "padding must not be negative, got %d (spatial dimension %d)", v, i) end
    end
  end
  return lo, hi
end

--- Output extent of one spatial dimension: (x + lo + hi - dilation*(k-1) - 1) // stride + 1.
-- tir.ops.conv_out_size(x, k [, stride [, lo [, hi [, dilation]]]]): defaults 1, 0, lo, 1.
function C.out_size(x, k, stride, lo, hi, dilation)
  stride, lo, dilation = stride or 1, lo or 0, dilation or 1
  hi = hi or lo
  local names = {"x", "k", "stride", "lo", "hi", "dilation"}
  local vals = {x, k, stride, lo, hi, dilation}
  for i = 1, 6 do
    local v = vals[i]
    if math.type(v) ~= "integer" then
      raise("conv_out_size", "TypeError", "conv_out_size(x, k, stride, lo, hi, dilation): %s must be an integer, got %s",
            names[i], util.show(v))
    end
    local least = (i == 4 or i == 5) and 0 or 1
    if v < least then raise("conv_out_size", "ValueError", "%s must be at least %d, got %d", names[i], least, v) end
  end
  return (x + lo + hi - dilation * (k - 1) - 1) // stride + 1
end

local OPTS = {stride = "any", padding = "any", dilation = "any", groups = "positive", data_layout = "string", kernel_layout = "string",
              out_dtype = "dtype", bias = "any", activation = "any", requantize = "table", scale_tensor = "any", name = "string"}
C.CONV_OPTS = OPTS

-- Everything about a convolution, checked: dims, positions, sizes, pads.
local function plan(P, data, kernel, o)
  local ds = const_shape(P, data, "data")
  local ks = const_shape(P, kernel, "kernel")
  local dl = o.data_layout
  if type(dl) ~= "string" then raise(P, "TypeError", "data_layout must be a string such as \"NHWC\", got %s", util.show(dl)) end
  local nd = #dl - 2
  if nd < 1 or nd > 3 then raise(P, "ValueError", "data_layout %s must have 3, 4 or 5 letters (N, C and 1-3 spatial dimensions)", util.show(dl)) end
  local sp = SPATIAL[nd]
  local dletters = {"N", "C"}
  for _, s in ipairs(sp) do dletters[#dletters + 1] = s end
  local dpos = dims_of(P, dl, dletters, "data_layout")
  local kl = o.kernel_layout
  if kl == nil then
    if dpos.C == #dl then kl = table.concat(sp) .. "IO" else kl = "OI" .. table.concat(sp) end
  end
  local kletters = {"O", "I"}
  for _, s in ipairs(sp) do kletters[#kletters + 1] = s end
  local kpos = dims_of(P, kl, kletters, "kernel_layout")
  if #ds ~= #dl then
    raise(P, "ValueError", "data %s has %d dimensions, but data_layout %s has %d", data.name, #ds, dl, #dl)
  end
  if #ks ~= #kl then
    raise(P, "ValueError", "kernel %s has %d dimensions, but kernel_layout %s has %d", kernel.name, #ks, kl, #kl)
  end
  local dt, kt = data.dtype, kernel.dtype
  if not ACC[dt] then raise(P, "TypeError", "data dtype %s is not supported (float16, bfloat16, float32, int8, uint8)", dt) end
  if not ACC[kt] then raise(P, "TypeError", "kernel dtype %s is not supported (float16, bfloat16, float32, int8, uint8)", kt) end
  if dt ~= kt and not (INT8[dt] and INT8[kt]) then
    raise(P, "TypeError", "data is %s but kernel is %s: the dtypes must match (or both be 8-bit integers)", dt, kt)
  end
  local groups = o.groups or 1
  if math.type(groups) ~= "integer" or groups < 1 then raise(P, "ValueError", "groups must be a positive integer, got %s", util.show(groups)) end
  local Cin, F = ds[dpos.C], ks[kpos.O]
  if Cin % groups ~= 0 then raise(P, "ValueError", "groups = %d does not divide the %d input channels", groups, Cin) end
  if F % groups ~= 0 then raise(P, "ValueError", "groups = %d does not divide the %d output channels (kernel's O)", groups, F) end
  if ks[kpos.I] ~= Cin // groups then
    raise(P, "ValueError", "kernel %s has I = %d input channels, but data %s has C = %d%s (I must be C / groups = %d)", kernel.name,
          ks[kpos.I], data.name, Cin, groups > 1 and (" in " .. groups .. " groups") or "", Cin // groups)
  end
  local ksz, isz = {}, {}
  for i, s in ipairs(sp) do ksz[i] = ks[kpos[s]]; isz[i] = ds[dpos[s]] end
  local stride = per_dim(P, o.stride == nil and 1 or o.stride, nd, "stride", 1)
  local dil = per_dim(P, o.dilation == nil and 1 or o.dilation, nd, "dilation", 1)
  local lo, hi = pads_of(P, o.padding == nil and 0 or o.padding, nd, ksz, dil)
  local osz = {}
  for i, s in ipairs(sp) do
    osz[i] = C.out_size(isz[i], ksz[i], stride[i], lo[i], hi[i], dil[i])
    if osz[i] < 1 then
      raise(P, "ValueError", "the output is empty along %s: input %d, padding %d + %d, kernel %d with dilation %d (spans %d)", s, isz[i],
            lo[i], hi[i], ksz[i], dil[i], dil[i] * (ksz[i] - 1) + 1)
    end
  end
  local acc = (INT8[dt] and INT8[kt]) and "int32" or ACC[dt]
  return {nd = nd, sp = sp, dl = dl, kl = kl, dpos = dpos, kpos = kpos, ds = ds, ks = ks, N = ds[dpos.N], C = Cin, F = F,
          groups = groups, ksz = ksz, isz = isz, osz = osz, stride = stride, dil = dil, lo = lo, hi = hi, acc = acc,
          any_pad = (function() for i = 1, nd do if lo[i] > 0 or hi[i] > 0 then return true end end return false end)()}
end
C._plan = plan

-- the padded input stage (only when some padding is > 0)
local function padded_input(q, data, name)
  if not q.any_pad then return data end
  local shape, names = {}, {}
  for i = 1, #q.dl do
    shape[i] = q.ds[i]
    names[i] = "i" .. (i - 1)
  end
  for k, s in ipairs(q.sp) do shape[q.dpos[s]] = q.isz[k] + q.lo[k] + q.hi[k] end
  return compute(shape, names, function(x)
    local conds, idx = {}, {}
    for i = 1, #q.dl do idx[i] = x[i] end
    for k, s in ipairs(q.sp) do
      local p = q.dpos[s]
      if q.lo[k] > 0 then conds[#conds + 1] = tir.ge(x[p], q.lo[k]) end
      if q.hi[k] > 0 then conds[#conds + 1] = tir.lt(x[p], q.isz[k] + q.lo[k]) end
      idx[p] = x[p] - q.lo[k]
    end
    return tir.if_then_else(tir.all(table.unpack(conds)), data[idx], tir.const(0, data.dtype))
  end, name)
end

local ACTIVATIONS = {
  relu = function(v) return tir.max(v, tir.const(0, v.dtype)) end,
  sigmoid = function(v) return tir.sigmoid(v) end,
}

local REQ_OPTS = {scale = "number|string", out_zero_point = "integer", out_dtype = "string"}
local QRANGE = {int8 = {-128, 127}, uint8 = {0, 255}}

-- the epilogue value from the accumulator value v at output channel f
local function epilogue_fn(P, q, o, params)
  local bias, act, req = o.bias, o.activation, o.requantize
  local out_dtype = o.out_dtype or q.acc
  if bias ~= nil then
    local bs = const_shape(P, bias, "bias")
    if #bs ~= 1 or bs[1] ~= q.F then
      raise(P, "ValueError", "bias %s must have shape {%d} (one value per output channel), got {%s}", bias.name, q.F, table.concat(bs, ", "))
    end
    if req and bias.dtype ~= "int32" then raise(P, "TypeError", "the bias of a requantized convolution is int32, got %s", bias.dtype) end
  end
  local actf
  if act ~= nil then
    actf = type(act) == "function" and act or ACTIVATIONS[act]
    if not actf then raise(P, "ValueError", "activation must be \"relu\", \"sigmoid\" or a function of the value, got %s", util.show(act)) end
  end
  local scale_t
  if req then
    util.check_opts(P .. " requantize", req, REQ_OPTS)
    if q.acc ~= "int32" then raise(P, "TypeError", "requantize is for 8-bit integer convolutions (this one accumulates in %s)", q.acc) end
    local odt = req.out_dtype or "int8"
    if not QRANGE[odt] then raise(P, "TypeError", "requantize.out_dtype must be int8 or uint8, got %s", util.show(odt)) end
    if o.out_dtype ~= nil and o.out_dtype ~= odt then raise(P, "ValueError", "out_dtype %s contradicts requantize.out_dtype %s", o.out_dtype, odt) end
    out_dtype = odt
    local zo = req.out_zero_point or 0
    if zo < QRANGE[odt][1] or zo > QRANGE[odt][2] then raise(P, "ValueError", "requantize.out_zero_point = %d is outside %s", zo, odt) end
    local sc = req.scale == nil and 1.0 or req.scale
    if sc == "per_channel" then
      scale_t = o.scale_tensor
      local ss = scale_t ~= nil and const_shape(P, scale_t, "scale_tensor")
      if not ss or #ss ~= 1 or ss[1] ~= q.F or scale_t.dtype ~= "float32" then
        raise(P, "ValueError", "requantize.scale = \"per_channel\" needs opts.scale_tensor, a float32 tensor of shape {%d}", q.F)
      end
    elseif type(sc) ~= "number" or sc ~= sc or sc == math.huge or sc == -math.huge then
      raise(P, "TypeError", "requantize.scale must be a finite number or \"per_channel\", got %s", util.show(sc))
    end
    if act ~= nil and act ~= "relu" then raise(P, "ValueError", "a requantized convolution takes activation \"relu\" only") end
    req = {scale = sc, zo = zo, out_dtype = odt, relu = act == "relu"}
  elseif o.scale_tensor ~= nil then
    raise(P, "ValueError", "scale_tensor is the per-channel scale of requantize; there is no requantize option")
  end
  if bias == nil and actf == nil and req == nil and out_dtype == q.acc then return nil end
  if bias then params[#params + 1] = bias end
  if scale_t then params[#params + 1] = scale_t end
  return function(v, f)
    if bias then v = v + te.cast(q.acc, bias[{f}]) end
    if req then
      local s = req.scale == "per_channel" and scale_t[{f}] or tir.const(req.scale, "float32")
      return require("tir.ops.quantized_matmul").requantize_expr(te.cast("float32", v) * s, req.zo, req.out_dtype, req.relu)
    end
    if actf then v = actf(v) end
    if out_dtype ~= q.acc then v = te.cast(out_dtype, v) end
    return v
  end, out_dtype
end

--- tir.ops.conv(data, kernel, opts): the generic convolution (TVM's topi.nn.conv).  opts:
-- stride, padding, dilation, groups, data_layout (default "NHWC" for 4-D data, "NWC" / "NDHWC"
-- for 3-D / 5-D), kernel_layout, out_dtype, bias (a te tensor [F]), activation ("relu",
-- "sigmoid" or a function), requantize (see the header), scale_tensor, name.
-- Returns the output tensor (the epilogue's when there is one); its shape is data's with C
-- replaced by F and each spatial extent by the output's.
function C.conv(data, kernel, opts)
  local P = type(opts) == "table" and opts._op or "conv"
  if opts ~= nil and type(opts) ~= "table" then util.check_opts(P, opts, OPTS) end
  local o = {}
  for k, v in pairs(opts or {}) do if k ~= "_op" then o[k] = v end end
  util.check_opts(P, o, OPTS)
  if o.data_layout == nil then
    local nd = te.is_tensor(data) and data.ndim or 4
    o.data_layout = ({[3] = "NWC", [4] = "NHWC", [5] = "NDHWC"})[nd] or "NHWC"
  end
  local q = plan(P, data, kernel, o)
  local name = o.name or P
  local X = padded_input(q, data, name == P and "pad_temp" or (name .. "_pad_temp"))
  local Fg, Cg = q.F // q.groups, q.C // q.groups
  -- reduce axes: spatial then channels
  local raxes, rlist = {}, {}
  for k, s in ipairs(q.sp) do
    raxes[s] = te.reduce_axis({0, q.ksz[k]}, RED_NAME[s]); rlist[#rlist + 1] = raxes[s]
  end
  raxes.C = te.reduce_axis({0, Cg}, "rc"); rlist[#rlist + 1] = raxes.C
  local oshape, onames = {}, {}
  for i = 1, #q.dl do
    local ch = q.dl:sub(i, i)
    onames[i] = OUT_NAME[ch]
    if ch == "N" then oshape[i] = q.N elseif ch == "C" then oshape[i] = q.F end
  end
  for k, s in ipairs(q.sp) do oshape[q.dpos[s]] = q.osz[k] end
  local acc = q.acc
  local conv = compute(oshape, onames, function(x)
    local f = x[q.dpos.C]
    local di, ki = {}, {}
    di[q.dpos.N] = x[q.dpos.N]
    di[q.dpos.C] = q.groups > 1 and (f // Fg * Cg + raxes.C) or raxes.C
    for k, s in ipairs(q.sp) do
      local y = x[q.dpos[s]]
      di[q.dpos[s]] = (q.stride[k] == 1 and y or y * q.stride[k]) + (q.dil[k] == 1 and raxes[s] or raxes[s] * q.dil[k])
      ki[q.kpos[s]] = raxes[s]
    end
    ki[q.kpos.O] = f
    ki[q.kpos.I] = raxes.C
    return te.sum(te.cast(acc, X[di]) * te.cast(acc, kernel[ki]), rlist)
  end, name)
  local params = {}
  local epi, out_dtype = epilogue_fn(P, q, o, params)
  if not epi then return conv end
  return compute(oshape, onames, function(x) return epi(conv[x], x[q.dpos.C]) end, name .. "_epilogue")
end

--- The convolution's plan (sizes, pads, layouts) without building it: what the tensor-core
-- workloads and the benchmarks need (fields nd, N, C, F, groups, ksz, isz, osz, stride, dil,
-- lo, hi, acc, dl, kl).
function C.conv_plan(data, kernel, opts)
  if opts ~= nil and type(opts) ~= "table" then util.check_opts("conv_plan", opts, OPTS) end
  local o = {}
  for k, v in pairs(opts or {}) do o[k] = v end
  util.check_opts("conv_plan", o, OPTS)
  o.data_layout = o.data_layout or ({[3] = "NWC", [4] = "NHWC", [5] = "NDHWC"})[te.is_tensor(data) and data.ndim or 4] or "NHWC"
  return plan("conv_plan", data, kernel, o)
end

-- topi's positional forms
local function positional(op, layout, kernel_layout, grouped)
  if grouped then
    return function(data, kernel, stride, padding, dilation, groups, out_dtype)
      return C.conv(data, kernel, {_op = op, stride = stride, padding = padding, dilation = dilation, groups = groups, out_dtype = out_dtype,
                                   data_layout = layout, kernel_layout = kernel_layout})
    end
  end
  return function(data, kernel, stride, padding, dilation, out_dtype)
    return C.conv(data, kernel, {_op = op, stride = stride, padding = padding, dilation = dilation, out_dtype = out_dtype,
                                 data_layout = layout, kernel_layout = kernel_layout})
  end
end

--- tir.ops.conv2d_nhwc(data, kernel, stride, padding, dilation, out_dtype): TVM's
-- topi.nn.conv2d_nhwc (data NHWC, kernel HWIO); conv2d_nchw (NCHW, OIHW); group_conv2d_nhwc /
-- group_conv2d_nchw(data, kernel, stride, padding, dilation, groups, out_dtype); conv1d_nwc (WIO),
-- conv1d_ncw (OIW), conv3d_ndhwc (DHWIO), conv3d_ncdhw (OIDHW).  stride / padding / dilation as
-- tir.ops.conv (nil: 1, 0, 1).  For bias and activation stages use tir.ops.conv.
C.conv2d_nhwc = positional("conv2d_nhwc", "NHWC", "HWIO")
C.conv2d_nchw = positional("conv2d_nchw", "NCHW", "OIHW")
C.group_conv2d_nhwc = positional("group_conv2d_nhwc", "NHWC", "HWIO", true)
C.group_conv2d_nchw = positional("group_conv2d_nchw", "NCHW", "OIHW", true)
C.conv1d_nwc = positional("conv1d_nwc", "NWC", "WIO")
C.conv1d_ncw = positional("conv1d_ncw", "NCW", "OIW")
C.conv3d_ndhwc = positional("conv3d_ndhwc", "NDHWC", "DHWIO")
C.conv3d_ncdhw = positional("conv3d_ncdhw", "NCDHW", "OIDHW")

return C
