--- tir.testing: references and comparisons for tests and benchmarks.
local core = require("tir.core")
local nd = require("tir.nd")
local util = require("tir.util")
local testing = {}

local function to_host(a, prim)
  if type(a) == "table" and not getmetatable(a) then return nd.array(a, "float64", nd.cpu()) end
  if not (type(a) == "userdata" and getmetatable(a) and getmetatable(a).__name == "tir.NDArray") then
    util.raise("TypeError", prim, "expected a tir.NDArray or a table of numbers, got %s", util.describe(a))
  end
  if a:device() ~= "cpu" then return a:to(nd.cpu()) end
  return a
end

local function unravel(flat, shape)
  local idx = {}
  for d = #shape, 1, -1 do
    idx[d] = flat % shape[d]
    flat = flat // shape[d]
  end
  return "[" .. table.concat(idx, ", ") .. "]"
end

--- Raises when actual and desired differ beyond atol + rtol * |desired| anywhere
-- (NaN counts as a difference unless both are NaN).  Arrays may be on any device, or
-- Lua tables.  The message gives the number of mismatches, the worst element with its
-- index and both values, and the max absolute / relative errors.  Returns the stats.
function testing.assert_allclose(actual, desired, opts)
  local nonneg = function(v) if type(v) ~= "number" or not (v >= 0) then return "a non-negative number" end end
  opts = util.check_opts("assert_allclose", opts, {rtol = nonneg, atol = nonneg})
  local rtol, atol = opts.rtol or 1e-7, opts.atol or 0
  local a, d = to_host(actual, "assert_allclose"), to_host(desired, "assert_allclose")
  local sa, sd = a:shape(), d:shape()
  if #sa ~= #sd then util.raise("ValueError", "assert_allclose", "shapes differ (%d vs %d dimensions)", #sa, #sd) end
  for i = 1, #sa do
    if sa[i] ~= sd[i] then
      util.raise("ValueError", "assert_allclose", "shapes differ: (%s) vs (%s)", table.concat(sa, ", "), table.concat(sd, ", "))
    end
  end
  local ok, st = core.nd_allclose(a, d, rtol, atol)
  if not ok then
    local function num(v) return v ~= v and "NaN" or ("%.9g"):format(v) end
    -- the error statistics skip NaN pairs: with NaN mismatches they describe only the rest
    local errs = ("max abs error %.6g, max rel error %.6g, rel L2 error %.6g"):format(st.max_abs, st.max_rel, st.rel_l2)
    if st.n_nan > 0 then
      errs = ("%d element(s) are NaN in one array and a number in the other; among the other elements: %s"):format(st.n_nan, errs)
    end
    local msg = ("Not equal to tolerance rtol=%g, atol=%g\n%d of %d elements differ%s\nworst at %s: actual %s, desired %s\n%s"):format(
      rtol, atol, st.n_bad, st.n, st.n_nan > 0 and (" (" .. st.n_nan .. " NaN)") or "",
      unravel(st.worst, sa), num(st.worst_actual), num(st.worst_desired), errs)
    error(msg, 2)
  end
  return st
end

--- Float64 reference C = A @ B on the host (OpenBLAS when available).  A: [m, k] (or
-- [k, m] with trans_a), B: [k, n] (or [n, k] with trans_b).  Inputs on any device.
function testing.ref_matmul(a, b, trans_a, trans_b)
  local ha, hb = to_host(a, "ref_matmul"), to_host(b, "ref_matmul")
  local m = trans_a and ha:shape()[2] or ha:shape()[1]
  local n = trans_b and hb:shape()[1] or hb:shape()[2]
  local c = core.nd_empty({m, n}, "float64", nd.cpu())
  core.ref_gemm(ha, hb, c, trans_a, trans_b)
  return c
end

--- Float64 reference convolution on the host (direct loops): lib/tir/ops/conv_ref.lua.
-- data, kernel: NDArrays; opts as tir.ops.conv (+ bias NDArray, activation "relu"); points:
-- nil (returns the whole float64 output) or a list of flat output indices (returns values).
function testing.ref_conv(data, kernel, opts, points)
  return require("tir.ops.conv_ref")(data, kernel, opts, points)
end

--- Random host arrays for every buffer parameter of func (seeded), for interpreter tests.
function testing.random_args(func, seed)
  if type(func) == "table" and func.func then func = func.func end
  if core.is_node(func, "IRModule") and #func.functions == 1 then func = func.functions[1] end
  if not core.is_node(func, "PrimFunc") then
    util.raise("TypeError", "random_args", "expected a PrimFunc (or a Schedule), got %s", util.describe(func))
  end
  if seed ~= nil and math.type(seed) ~= "integer" then
    util.raise("TypeError", "random_args", "seed must be an integer, got %s", util.show(seed))
  end
  local args = {}
  for i = 1, #func.params do
    local p = func.params[i]
    if p.kind ~= "Buffer" then util.raise("ValueError", "random_args", "scalar parameters need explicit values") end
    local shape = {}
    for d = 1, #p.shape do
      local e = p.shape[d]
      if e.kind ~= "IntImm" then util.raise("ValueError", "random_args", "buffer %s has a symbolic shape", p.name) end
      shape[d] = e.value
    end
    args[i] = nd.random(shape, p.dtype, nd.cpu(), {seed = (seed or 0) * 131 + i})
  end
  return args
end

--- Copies of host arrays (so a function can run twice on the same inputs).
function testing.copy_args(args)
  local out = {}
  for i, a in ipairs(args) do out[i] = type(a) == "userdata" and a:to(nd.cpu()) or a end
  return out
end

--- Whether OpenBLAS backs ref_matmul; whether a CUDA device is usable (and why not).
testing.openblas_available = core.openblas_available
function testing.cuda_available() return core.cuda_available() end

--- The PTX instructions matching each Lua pattern at the start of a line (so "mma%.sync"
-- does not count wmma.mma.sync): a list of {pattern, count, first match}, patterns not found
-- left out.  The examples print these lines.
function testing.ptx_instructions(ptx, patterns)
  if type(ptx) ~= "string" or type(patterns) ~= "table" then
    util.raise("TypeError", "testing.ptx_instructions", "takes (ptx text, list of Lua patterns)")
  end
  local out = {}
  for _, pat in ipairs(patterns) do
    local lpat = "\n%s*(" .. pat .. ")"
    local first = ptx:match(lpat)
    local _, n = ptx:gsub(lpat, "")
    if n > 0 then out[#out + 1] = {pattern = pat, count = n, first = first} end
  end
  return out
end

-- a call with more arguments than a function's parameters is an error (util.strict)
util.strict_all(testing, "testing.")

return testing
