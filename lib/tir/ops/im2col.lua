--- tir.ops.im2col(data, opts) and tir.ops.conv_weight_matrix(kernel, opts): a convolution as a
-- GEMM (im2col; TVM's topi/nn/conv2d.py conv2d_gemm and the im2col_compute of the seed).
--
--   out[n, p.., f] = sum_k A[m, k] * Wm[k, f]      (groups = 1)
--   m = ((n * P0 + p0) * P1 + p1) ...              (row: output pixel, N and spatial row-major)
--   channels-last data (NHWC):  k = ((r0 * R1 + r1) ...) * C + c     (c fastest: C contiguous values)
--   channels-first data (NCHW): k = ((c * R0 + r0) * R1 + r1) ...    (the OIHW kernel's own order)
--   A[m, k] = data[n, y.., c] with y_i = p_i * stride_i - pad_lo_i + r_i * dilation_i, and 0 where
--   some y_i falls outside [0, H_i) (the padding) or where k >= K = C * R0 * R1 ... (pad_k)
--   Wm[k, f] = kernel[r.., c, f] (HWIO), kernel[f, r.., c] (OHWI) or kernel[f, c, r..] (OIHW)
--
-- im2col opts: kernel (required: the spatial extents {R, S}, {R} or {T, R, S}), stride, padding,
-- dilation (as tir.ops.conv), data_layout (default by rank: "NWC", "NHWC", "NDHWC"), pad_k / pad_m
-- (pad K / M up to a multiple of this: extra columns / rows of zeros, for GEMM tiles), name
-- ("im2col").  Returns the te tensor A [M (padded), K (padded)] of data's dtype, one block.
-- conv_weight_matrix opts: data_layout (which k order), kernel_layout (default as tir.ops.conv),
-- pad_k, pad_n (zeros beyond K / F), name ("weight_matrix").  Returns Wm [K, F] (padded).
-- Errors: tir.Errors naming "im2col" / "conv_weight_matrix" (shapes, layouts, pads as tir.ops.conv).
local tir = require("tir")
local util = require("tir.util")
local te = tir.te
local conv = require("tir.ops.conv")

local M = {}

local function up(x, m) return (x + m - 1) // m * m end

local function check_mult(P, v, what)
  if v ~= nil and (math.type(v) ~= "integer" or v < 1) then util.raise("ValueError", P, "%s must be a positive integer, got %s", what, util.show(v)) end
  return v or 1
end

-- Geometry of data (a tensor) convolved with a kernel of spatial extents ksz, through conv's plan:
-- a stand-in kernel tensor of the right shape carries the extents.
local function geometry(P, data, o, ksz)
  local nd = #o.data_layout - 2
  if type(ksz) ~= "table" or #ksz ~= nd or util.count_keys(ksz) ~= nd then
    util.raise("TypeError", P, "kernel must be a list of %d spatial extents (data_layout %s), got %s", nd, o.data_layout, util.show(ksz))
  end
  for i = 1, nd do
    if math.type(ksz[i]) ~= "integer" or ksz[i] < 1 then util.raise("ValueError", P, "kernel[%d] must be a positive integer, got %s", i, util.show(ksz[i])) end
  end
  if not te.is_tensor(data) then util.raise("TypeError", P, "data must be a te tensor, got %s", util.describe(data)) end
  local cpos = o.data_layout:find("C", 1, true)
  if not cpos or data.ndim ~= #o.data_layout then
    util.raise("ValueError", P, "data %s has %d dimensions, but data_layout %s has %d", data.name, data.ndim, util.show(o.data_layout), #o.data_layout)
  end
  local Cin = data.shape[cpos]
  if math.type(Cin) ~= "integer" then util.raise("ValueError", P, "data %s has a symbolic channel count", data.name) end
  local sp = ({{"W"}, {"H", "W"}, {"D", "H", "W"}})[nd]
  local kshape = {}
  local kl = table.concat(sp) .. "IO"
  for i, s in ipairs(sp) do kshape[i] = ksz[i] end
  kshape[nd + 1], kshape[nd + 2] = Cin, 1
  local fake = te.placeholder(kshape, data.dtype, "im2col_kernel_extents")
  local q = conv._plan(P, data, fake, {data_layout = o.data_layout, kernel_layout = kl, stride = o.stride, padding = o.padding, dilation = o.dilation})
  q.F, q.kl, q.kpos, q.ks = nil, nil, nil, nil -- (the stand-in kernel's; im2col has no output channels)
  return q
end

local function default_layout(t)
  return ({[3] = "NWC", [4] = "NHWC", [5] = "NDHWC"})[te.is_tensor(t) and t.ndim or 4] or "NHWC"
end

local IM2COL_OPTS = {kernel = "table", stride = "any", padding = "any", dilation = "any", data_layout = "string", pad_k = "any", pad_m = "any",
                     name = "string"}

--- The k -> (c, r..) decomposition of tir.ops.im2col's column index (see the header); returns
-- c and the list of r's (tir expressions).
function M.split_k(k, channels_last, Cin, ksz)
  local nd = #ksz
  local r = {}
  if channels_last then
    local c = k % Cin
    local rest = k // Cin
    for i = nd, 1, -1 do
      r[i] = i == 1 and rest or rest % ksz[i]
      rest = rest // ksz[i]
    end
    return c, r
  end
  local rest = k
  for i = nd, 1, -1 do
    r[i] = rest % ksz[i]
    rest = rest // ksz[i]
  end
  return rest, r
end

--- The m -> (n, p..) decomposition of the row index; returns n and the list of p's.
function M.split_m(m, osz)
  local p = {}
  local rest = m
  for i = #osz, 1, -1 do
    p[i] = rest % osz[i]
    rest = rest // osz[i]
  end
  return rest, p
end

--- The value of the im2col matrix at (m, k) for a plan q (conv's) and the data tensor: the
-- guarded load of the header's algebra (0 in the padding and for k >= K, m >= M).
function M.gather(q, data, m, k, guard_k, guard_m)
  local channels_last = q.dpos.C == #q.dl
  local n, p = M.split_m(m, q.osz)
  local c, r = M.split_k(k, channels_last, q.C, q.ksz)
  local idx, conds = {}, {}
  idx[q.dpos.N] = n
  idx[q.dpos.C] = c
  for i, s in ipairs(q.sp) do
    local y = p[i] * q.stride[i] - q.lo[i] + r[i] * q.dil[i]
    idx[q.dpos[s]] = y
    if q.lo[i] > 0 then conds[#conds + 1] = tir.ge(y, 0) end
    -- the last row reaches (P-1)*stride - lo + (R-1)*dilation, past H - 1 only with padding at the end
    if (q.osz[i] - 1) * q.stride[i] - q.lo[i] + (q.ksz[i] - 1) * q.dil[i] > q.isz[i] - 1 then conds[#conds + 1] = tir.lt(y, q.isz[i]) end
  end
  if guard_k then conds[#conds + 1] = tir.lt(k, guard_k) end
  if guard_m then conds[#conds + 1] = tir.lt(m, guard_m) end
  if #conds == 0 then return data[idx] end
  return tir.if_then_else(tir.all(table.unpack(conds)), data[idx], tir.const(0, data.dtype))
end

-- im2col under the caller's name P (conv2d_tc.workload's errors name it, not im2col)
function M.im2col_for(P, data, opts)
  local o = {}
  for k, v in pairs(util.check_opts(P, opts, IM2COL_OPTS)) do o[k] = v end
  if o.kernel == nil then util.raise("ValueError", P, "opts.kernel (the spatial extents of the kernel, e.g. {3, 3}) is required") end
  o.data_layout = o.data_layout or default_layout(data)
  local q = geometry(P, data, o, o.kernel)
  local Mr, Kr = q.N, q.C
  for i = 1, q.nd do Mr = Mr * q.osz[i]; Kr = Kr * q.ksz[i] end
  local Mp, Kp = up(Mr, check_mult(P, o.pad_m, "pad_m")), up(Kr, check_mult(P, o.pad_k, "pad_k"))
  return te.compute({Mp, Kp}, function(m, k)
    return M.gather(q, data, m, k, Kp ~= Kr and Kr or nil, Mp ~= Mr and Mr or nil)
  end, o.name or "im2col"), q
end

local WM_OPTS = {data_layout = "string", kernel_layout = "string", pad_k = "any", pad_n = "any", name = "string", transpose = "boolean"}

--- The kernel as the GEMM's B operand: [K, F] (or [F, K] with transpose = true), k in im2col's order.
function M.conv_weight_matrix(kernel, opts)
  local P = "conv_weight_matrix"
  local o = util.check_opts(P, opts, WM_OPTS)
  if not te.is_tensor(kernel) then util.raise("TypeError", P, "kernel must be a te tensor, got %s", util.describe(kernel)) end
  local nd = kernel.ndim - 2
  if nd < 1 or nd > 3 then util.raise("ValueError", P, "kernel %s must have 3, 4 or 5 dimensions, got %d", kernel.name, kernel.ndim) end
  local sp = ({{"W"}, {"H", "W"}, {"D", "H", "W"}})[nd]
  local dl = o.data_layout or default_layout(kernel)
  local channels_last = dl:sub(-1) == "C"
  local kl = o.kernel_layout or (channels_last and (table.concat(sp) .. "IO") or ("OI" .. table.concat(sp)))
  if type(kl) ~= "string" or #kl ~= nd + 2 then util.raise("ValueError", P, "kernel_layout %s does not fit a %d-D kernel", util.show(kl), kernel.ndim) end
  local pos = {}
  for i = 1, #kl do pos[kl:sub(i, i)] = i end
  for _, ch in ipairs({"O", "I", table.unpack(sp)}) do
    if not pos[ch] then util.raise("ValueError", P, "kernel_layout %s lacks %s", util.show(kl), ch) end
  end
  local ks = kernel.shape
  for i, d in ipairs(ks) do
    if math.type(d) ~= "integer" then util.raise("ValueError", P, "kernel %s has a symbolic extent in dimension %d", kernel.name, i) end
  end
  local F, Cin = ks[pos.O], ks[pos.I]
  local ksz = {}
  for i, s in ipairs(sp) do ksz[i] = ks[pos[s]] end
  local Kr = Cin
  for i = 1, nd do Kr = Kr * ksz[i] end
  local Kp, Fp = up(Kr, check_mult(P, o.pad_k, "pad_k")), up(F, check_mult(P, o.pad_n, "pad_n"))
  local function at(k, f)
    local c, r = M.split_k(k, channels_last, Cin, ksz)
    local idx = {}
    idx[pos.O], idx[pos.I] = f, c
    for i, s in ipairs(sp) do idx[pos[s]] = r[i] end
    local conds = {}
    if Kp ~= Kr then conds[#conds + 1] = tir.lt(k, Kr) end
    if Fp ~= F then conds[#conds + 1] = tir.lt(f, F) end
    if #conds == 0 then return kernel[idx] end
    return tir.if_then_else(tir.all(table.unpack(conds)), kernel[idx], tir.const(0, kernel.dtype))
  end
  if o.transpose then return te.compute({Fp, Kp}, function(f, k) return at(k, f) end, o.name or "weight_matrix") end
  return te.compute({Kp, Fp}, function(k, f) return at(k, f) end, o.name or "weight_matrix")
end

function M.im2col(data, opts) return M.im2col_for("im2col", data, opts) end

M.im2col = util.strict("im2col", M.im2col)
M.conv_weight_matrix = util.strict("conv_weight_matrix", M.conv_weight_matrix)
return M
