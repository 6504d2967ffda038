--- tir.te: tensor expressions (TVM's te), lowered to TensorIR by create_prim_func.
--
--   local A = te.placeholder({M, K}, "float32", "A")
--   local k = te.reduce_axis({0, K}, "k")
--   local C = te.compute({M, N}, function(i, j) return te.sum(A[{i, k}] * B[{k, j}], {k}) end, "C")
--   local f = te.create_prim_func({A, B, C})
--
-- A tensor indexes like a buffer: A[{i, j}] (or A(i, j)).  Index variables are named after
-- the parameters of the compute function.  Comparisons need tir.lt(a, b) etc. (Lua 5.4 turns
-- < into booleans).
local core = require("tir.core")
local util = require("tir.util")
local raise = util.raise
local te = {}

local Tensor = {}
local recording = {} -- stack of input lists while compute functions run

local function is_tensor(x) return getmetatable(x) == Tensor end
te.is_tensor = is_tensor

local function record(t)
  local top = recording[#recording]
  if top and not top.seen[t] then
    top.seen[t] = true
    top.list[#top.list + 1] = t
  end
end

Tensor.__index = function(t, k)
  if type(k) == "string" then
    if k == "shape" then
      local s = {}
      for i = 1, #t.buffer.shape do
        local e = t.buffer.shape[i]
        s[i] = e.kind == "IntImm" and e.value or e
      end
      return s
    elseif k == "dtype" then return t.buffer.dtype
    elseif k == "name" then return t.buffer.name
    elseif k == "ndim" then return #t.buffer.shape
    end
    return rawget(Tensor, k)
  end
  record(t)
  return util.guard("index", function() return t.buffer[k] end)
end
Tensor.__newindex = function() raise("TypeError", "te", "te tensors are immutable (write stores in a T script instead)") end
Tensor.__call = function(t, ...)
  record(t)
  local args = table.pack(...)
  return util.guard("index", function() return t.buffer(table.unpack(args, 1, args.n)) end)
end
Tensor.__tostring = function(t)
  local dims = {}
  for i, d in ipairs(t.shape) do dims[i] = tostring(d) end
  return ("te.Tensor(%s, shape=(%s), dtype=%s%s)"):format(t.name, table.concat(dims, ", "), t.dtype, t.op and "" or ", placeholder")
end
Tensor.__len = function(t) return #t.buffer.shape end

local function new_tensor(buffer, op, inputs)
  return setmetatable({buffer = buffer, op = op, inputs = inputs or {}}, Tensor)
end

local function check_shape(shape, fname)
  if type(shape) ~= "table" then raise("TypeError", fname, "shape must be a table of extents, e.g. {128, 64}") end
  local n = 0
  for k in pairs(shape) do
    if math.type(k) ~= "integer" or k < 1 then raise("TypeError", fname, "shape must be a list") end
    if k > n then n = k end
  end
  for i = 1, n do
    local d = shape[i]
    if d == nil then raise("ValueError", fname, "shape[%d] is nil", i) end
    if math.type(d) == "integer" then
      if d <= 0 then raise("ValueError", fname, "shape[%d] must be positive, got %d", i, d) end
    elseif not (core.is_node(d, "Expr")) or not d.dtype:match("^u?int") then
      raise("TypeError", fname, "shape[%d] must be an integer or an integer expression, got %s", i, util.show(d))
    end
  end
  return n
end

--- A placeholder (input) tensor.  shape: list of extents; dtype default "float32".
function te.placeholder(shape, dtype, name)
  check_shape(shape, "te.placeholder")
  util.check_dtype(dtype, "te.placeholder")
  if dtype == "void" or dtype == "handle" then raise("TypeError", "te.placeholder", "a tensor cannot hold %s values", dtype) end
  if name ~= nil and type(name) ~= "string" then raise("TypeError", "te.placeholder", "name must be a string") end
  local t = new_tensor(core.buffer(name or "placeholder", shape, dtype or "float32"))
  rawset(t, "named", name ~= nil)
  return t
end

--- A symbolic extent for shapes (TVM's te.var): te.var("M") is an int32 variable (dtype: "int64"
-- for 64-bit extents).  A placeholder with it builds one kernel taking M at run time (the
-- arguments' shapes give it and are checked); tir.specialize fixes it to chosen values.
function te.var(name, dtype)
  if name ~= nil and type(name) ~= "string" then raise("TypeError", "te.var", "name must be a string, got %s", util.show(name)) end
  if dtype ~= nil and dtype ~= "int32" and dtype ~= "int64" then
    raise("TypeError", "te.var", "a shape variable is int32 or int64, got %s", util.show(dtype))
  end
  return core.var(name or "n", dtype or "int32")
end

--- A reduction axis over dom = {min, max} (max exclusive) or an extent.
function te.reduce_axis(dom, name)
  if type(dom) ~= "table" and math.type(dom) ~= "integer" and not core.is_node(dom, "Expr") then
    raise("TypeError", "te.reduce_axis", "domain must be {min, max} or an extent")
  end
  if type(dom) == "table" and not core.is_node(dom) and (#dom ~= 2 or util.count_keys(dom) ~= 2) then
    raise("TypeError", "te.reduce_axis", "domain must be {min, max} (two bounds) or an extent, got a table of %d entries", util.count_keys(dom))
  end
  return util.guard("te.reduce_axis", core.te_iter_var, name or "rv", dom, "R")
end

--- A spatial axis (rarely needed: compute makes its own).
function te.thread_axis(dom, name) return core.te_iter_var(name or "v", dom, "S") end

local function axes_list(axis, fname)
  if type(axis) ~= "table" then axis = {axis} end
  if #axis == 0 then raise("ValueError", fname, "needs at least one reduce axis (from te.reduce_axis)") end
  return axis
end

local function reduce(comb, expr, axis, where)
  local fname = "te." .. comb
  if type(where) == "boolean" then
    raise("TypeError", fname, "the condition is a Lua boolean (Lua evaluates a == b itself): use tir.eq / tir.lt ...")
  end
  return util.guard(fname, core.te_reduce, comb, expr, axes_list(axis, fname), where)
end

--- Reductions: te.sum(expr, axes [, where]), te.max, te.min.  axes: a reduce axis or a list.
function te.sum(expr, axis, where) return reduce("sum", expr, axis, where) end
function te.max(expr, axis, where) return reduce("max", expr, axis, where) end
function te.min(expr, axis, where) return reduce("min", expr, axis, where) end
te.cast = util.guarded("te.cast", core.cast)

local function param_names(f, n)
  local names = {}
  for i = 1, n do
    local nm = debug.getlocal(f, i)
    names[i] = nm or ({"i", "j", "k", "l", "m", "n"})[i] or ("ax" .. (i - 1))
  end
  return names
end

--- A computed tensor: out[i, j, ...] = fcompute(i, j, ...).  The body may be an
-- expression or a reduction (te.sum / te.max / te.min) as its whole value.  name default
-- "compute".
function te.compute(shape, fcompute, name)
  local n = check_shape(shape, "te.compute")
  if type(fcompute) ~= "function" then raise("TypeError", "te.compute", "the second argument must be a function of the indices") end
  local info = debug.getinfo(fcompute, "u")
  if not info.isvararg and info.nparams ~= n then
    raise("ValueError", "te.compute", "the shape has %d dimensions but the function takes %d parameters", n, info.nparams)
  end
  if name ~= nil and type(name) ~= "string" then raise("TypeError", "te.compute", "name must be a string") end
  local explicit = name ~= nil
  name = name or "compute"
  local names = param_names(fcompute, n)
  local axis, vars = {}, {}
  for i = 1, n do
    axis[i] = core.te_iter_var(names[i], shape[i], "S")
    vars[i] = axis[i].var
  end
  local rec = {list = {}, seen = {}}
  recording[#recording + 1] = rec
  local body
  do
    -- pop the recording even when fcompute raises, without catching its error
    local _ <close> = setmetatable({}, {__close = function() recording[#recording] = nil end})
    body = fcompute(table.unpack(vars, 1, n))
  end
  if type(body) == "number" or type(body) == "boolean" then body = core.const(body) end
  if is_tensor(body) then raise("TypeError", "te.compute", "the function returned a tensor; index it, e.g. A[{i, j}]") end
  if not core.is_node(body, "Expr") then
    raise("TypeError", "te.compute", "the function must return an expression, got %s", util.describe(body))
  end
  local out = core.buffer(name, shape, body.dtype)
  local op = core.te_compute_op(name, axis, body, out)
  local t = new_tensor(out, op, rec.list)
  rawset(t, "named", explicit)
  return t
end

--- Builds a PrimFunc "main" whose parameters are args (tensors, in order).  Computed
-- tensors that args need but do not list become intermediate buffers.
function te.create_prim_func(args, name)
  if type(args) ~= "table" then raise("TypeError", "te.create_prim_func", "expected a list of tensors") end
  local n = 0
  for k in pairs(args) do
    if math.type(k) ~= "integer" or k < 1 then raise("TypeError", "te.create_prim_func", "expected a list of tensors") end
    if k > n then n = k end
  end
  local params, ops, visited, any_op = {}, {}, {}, false
  local function visit(t)
    if visited[t] then return end
    visited[t] = true
    for _, inp in ipairs(t.inputs) do visit(inp) end
    if t.op then ops[#ops + 1] = t.op end
  end
  for i = 1, n do
    local t = args[i]
    if t == nil then raise("ValueError", "te.create_prim_func", "argument %d is nil", i) end
    if is_tensor(t) then
      params[i] = t.buffer
      any_op = any_op or t.op ~= nil
      visit(t)
    elseif core.is_node(t, "Var") or core.is_node(t, "Buffer") then
      params[i] = t
    else
      raise("TypeError", "te.create_prim_func", "argument %d is not a tensor (got %s)", i, util.describe(t))
    end
  end
  if not any_op then
    raise("ValueError", "te.create_prim_func", "none of the arguments is computed by te.compute: list the outputs too")
  end
  -- names given explicitly become block and buffer names that get_block / cache_read look up:
  -- two tensors given one name would be renamed (C, C_1) and "C" would silently mean the first,
  -- so that is an error; default names ("compute", "placeholder") are made unique as in TVM
  local by_name = {}
  local function check_name(t)
    if not t.named then return end
    local prev = by_name[t.name]
    if prev and prev ~= t then
      raise("ValueError", "te.create_prim_func",
            "two tensors are named '%s' (%s and %s): names become block and buffer names (get_block, cache_read), " ..
            "so give each te.compute / te.placeholder its own name", t.name, tostring(prev), tostring(t))
    end
    by_name[t.name] = t
  end
  local seen = {}
  local function walk(t)
    if seen[t] then return end
    seen[t] = true
    check_name(t)
    for _, inp in ipairs(t.inputs) do walk(inp) end
  end
  for i = 1, n do if is_tensor(args[i]) then walk(args[i]) end end
  return core.te_create_prim_func(params, ops, name or "main")
end

-- a call with more arguments than a function's parameters is an error (util.strict)
util.strict_all(te, "te.")

return te
