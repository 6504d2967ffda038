--- tir.testing.ref_conv(data, kernel, opts [, points]): a float64 reference convolution on the
-- host (direct loops in Lua; the oracle of the conv specs and of the GPU checks at real sizes).
--   data, kernel: NDArrays (any device; copied to the host); opts as tir.ops.conv: stride,
--   padding, dilation, groups, data_layout, kernel_layout, bias (an NDArray [F]), activation
--   ("relu" or nil).  points: nil (every output: returns a float64 NDArray of the output's
--   shape) or a list of 0-based flat output indices (returns a list of float64 values; what the
--   GPU checks at real sizes use, a few thousand points of a large output).
-- The geometry (padding forms, layouts, checks) is tir.ops.conv's plan, so the reference and the
-- op cannot disagree on what the options mean.
local tir = require("tir")
local util = require("tir.util")
local conv = require("tir.ops.conv")

local function flat(a)
  local t, out = a:to_table(), {}
  local function walk(x)
    if type(x) == "table" then for _, v in ipairs(x) do walk(v) end else out[#out + 1] = x end
  end
  walk(t)
  return out
end

local function strides(shape)
  local s, acc = {}, 1
  for i = #shape, 1, -1 do s[i] = acc; acc = acc * shape[i] end
  return s, acc
end

return util.strict("tir.testing.ref_conv", function(data, kernel, opts, points)
  local P = "tir.testing.ref_conv"
  local args = {data, kernel}
  for i = 1, 2 do
    local x = args[i]
    if not (type(x) == "userdata" and getmetatable(x) and getmetatable(x).__name == "tir.NDArray") then
      util.raise("TypeError", P, "%s must be a tir.NDArray, got %s", i == 1 and "data" or "kernel", util.describe(x))
    end
  end
  if opts ~= nil and type(opts) ~= "table" then util.raise("TypeError", P, "opts must be a table, got %s", util.show(opts)) end
  local o = {}
  for k, v in pairs(opts or {}) do o[k] = v end
  local bias, act = o.bias, o.activation
  if bias ~= nil and not (type(bias) == "userdata" and getmetatable(bias) and getmetatable(bias).__name == "tir.NDArray") then
    util.raise("TypeError", P, "opts.bias must be a tir.NDArray (one value per output channel), got %s", util.describe(bias))
  end
  o.bias, o.activation = nil, nil
  if act ~= nil and act ~= "relu" then util.raise("ValueError", P, "activation must be \"relu\" or nil, got %s", util.show(act)) end
  local te = tir.te
  local ds, ks = data:shape(), kernel:shape()
  local q = conv.conv_plan(te.placeholder(ds, data:dtype(), "data"), te.placeholder(ks, kernel:dtype(), "kernel"), o)
  -- whole outputs read every element: flat Lua tables; a few points of a large output read
  -- few: element reads of host copies (no table of the whole input)
  local D, K, Bv
  if points ~= nil then
    -- (host arrays read in place: the benchmarks' 12-200 MB inputs are checked once per candidate)
    local function host(a) return tostring(a:device()) == "cpu" and a or a:to("cpu") end
    local hd, hk, hb = host(data), host(kernel), bias and host(bias)
    D = setmetatable({}, {__index = function(_, i) return hd:get(i - 1) end})
    K = setmetatable({}, {__index = function(_, i) return hk:get(i - 1) end})
    Bv = hb and setmetatable({}, {__index = function(_, i) return hb:get(i - 1) end})
  else
    D, K = flat(data), flat(kernel)
    Bv = bias and flat(bias)
  end
  local dstr = strides(ds)
  local kstr = strides(ks)
  local oshape = {}
  for i = 1, #q.dl do oshape[i] = ds[i] end
  oshape[q.dpos.C] = q.F
  for k, s in ipairs(q.sp) do oshape[q.dpos[s]] = q.osz[k] end
  local ostr, total = strides(oshape)
  local Fg, Cg = q.F // q.groups, q.C // q.groups
  local nd = q.nd
  local function at(flat_index)
    local x, rest = {}, flat_index
    for i = 1, #oshape do x[i] = rest // ostr[i]; rest = rest % ostr[i] end
    local n, f = x[q.dpos.N], x[q.dpos.C]
    local g = f // Fg
    local acc = 0.0
    local r = {}
    local function loop(d)
      if d > nd then
        local base = n * dstr[q.dpos.N]
        for k, s in ipairs(q.sp) do
          local y = x[q.dpos[s]] * q.stride[k] - q.lo[k] + r[k] * q.dil[k]
          if y < 0 or y >= q.isz[k] then return end
          base = base + y * dstr[q.dpos[s]]
        end
        local kb = f * kstr[q.kpos.O]
        for k, s in ipairs(q.sp) do kb = kb + r[k] * kstr[q.kpos[s]] end
        local dc, kc = dstr[q.dpos.C], kstr[q.kpos.I]
        local c0 = g * Cg
        for c = 0, Cg - 1 do acc = acc + D[base + (c0 + c) * dc + 1] * K[kb + c * kc + 1] end
        return
      end
      for v = 0, q.ksz[d] - 1 do r[d] = v; loop(d + 1) end
    end
    loop(1)
    if Bv then acc = acc + Bv[f + 1] end
    if act == "relu" and acc < 0 then acc = 0.0 end
    return acc
  end
  if points ~= nil then
    if type(points) ~= "table" then util.raise("TypeError", P, "points must be a list of flat output indices, got %s", util.describe(points)) end
    local out = {}
    for i, p in ipairs(points) do
      if math.type(p) ~= "integer" or p < 0 or p >= total then util.raise("ValueError", P, "points[%d] = %s is outside [0, %d)", i, util.show(p), total) end
      out[i] = at(p)
    end
    return out
  end
  local res = tir.nd.empty(oshape, "float64")
  for p = 0, total - 1 do res:set(p, at(p)) end
  return res
end)
