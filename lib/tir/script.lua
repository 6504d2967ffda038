--- tir.script (T): write TensorIR directly in Lua, as TVMScript does in Python.
--
--   local T = tir.script
--   local mm = T.prim_func("mm", {A = T.Buffer({128, 128}, "float16"), B = ..., C = ...}, function(A, B, C)
--     for i, j, k in T.grid(128, 128, 128) do
--       T.block("C", function()
--         local vi, vj, vk = T.axis.remap("SSR", {i, j, k})
--         T.init(function() C[{vi, vj}] = 0 end)
--         C[{vi, vj}] = C[{vi, vj}] + T.cast("float32", A[{vi, vk}]) * T.cast("float32", B[{vk, vj}])
--       end)
--     end
--   end)
--
-- The printer emits exactly this form, so print(func) is a script that rebuilds func
-- (structurally equal).  Parameter order is the order of the body function's parameters.
-- Names of loop variables, iteration variables and buffers are taken from the Lua locals
-- they are assigned to (found on the stack), so printed names survive a round trip.
-- Lua 5.4 turns comparisons into booleans: use T.lt/le/gt/ge/eq/ne, T.And/Or/Not; `if`
-- on an expression does not work, use T.If(cond, function() ... end [, else_fn]).
local core = require("tir.core")
local util = require("tir.util")
local annotations = require("tir.annotations")
local T = {}

-- ---------------------------------------------------------------------------------------
-- builder state
local B = {frames = nil, pending = nil, names = nil}

-- A ValueError "in T script", positioned at the user's line (core.raise skips lib/tir).
local function err(msg, level) local _ = level core.raise("ValueError", "T script", msg) end

local function lanes_of(dtype) return tonumber(dtype:match("x(%d+)$")) or 1 end

-- An integer bound (loop extent/min, store index): a Lua integer or an integer expression.
local function check_int_arg(x, what, level)
  if math.type(x) == "integer" then return end
  if core.is_node(x, "Expr") and x.dtype:match("^u?int%d+") then return end
  local got = math.type(x) == "float" and (tostring(x) .. ", not an integer") or
              core.is_node(x, "Expr") and ("an expression of dtype " .. x.dtype) or type(x)
  err(("%s must be an integer or an integer expression, got %s"):format(what, got), level + 1)
end

-- A condition (T.where, T.If): a Lua boolean or a boolean expression.
local function check_cond(c, what, level)
  if type(c) == "boolean" or (core.is_node(c, "Expr") and c.dtype == "bool") then return end
  local got = core.is_node(c, "Expr") and ("an expression of dtype " .. c.dtype) or
              (type(c) == "number" and tostring(c) or type(c))
  err(("%s needs a boolean condition (e.g. T.lt(i, n)), got %s"):format(what, got), level + 1)
end

local function top()
  if not B.frames then err("this must be called inside T.prim_func", 3) end
  return B.frames[#B.frames]
end

local function push(frame)
  frame.stmts = frame.stmts or {}
  B.frames[#B.frames + 1] = frame
  return frame
end

local function pop(frame)
  if B.frames[#B.frames] ~= frame then
    err("a scope was left early (break, goto or return out of a T.grid/T.serial loop?)", 3)
  end
  B.frames[#B.frames] = nil
end

local function emit(stmt)
  local f = top()
  f.stmts[#f.stmts + 1] = stmt
end

-- Names of objects created without one are discovered from the locals they were assigned
-- to: scan the Lua stack (locals of active functions) for pending objects.
local function discover()
  if not B.frames then err("this must be called inside T.prim_func", 3) end
  if B.n_pending == 0 then return end
  local level = 3
  while true do
    local info = debug.getinfo(level, "f")
    if not info then break end
    local i = 1
    while true do
      local name, value = debug.getlocal(level, i)
      if not name then break end
      if B.pending[value] and not B.names[value] and name:match("^[%a_][%w_]*$") then
        B.names[value] = name
        B.n_pending = B.n_pending - 1
      end
      i = i + 1
    end
    level = level + 1
  end
end

local function pending(obj)
  B.pending[obj] = true
  B.n_pending = B.n_pending + 1
  return obj
end

-- Folds "rest of scope" markers (let, launch_thread, allocate) into nested statements.
local function seq(stmts)
  local out = {}
  for idx = #stmts, 1, -1 do
    local s = stmts[idx]
    if type(s) == "table" and s.scope_marker then
      local body = #out == 0 and core.make("Evaluate", {value = 0}) or (#out == 1 and out[1] or core.make("SeqStmt", {seq = out}))
      out = {s.wrap(body)}
    else
      table.insert(out, 1, s)
    end
  end
  if #out == 0 then return core.make("Evaluate", {value = 0}) end
  if #out == 1 then return out[1] end
  return core.make("SeqStmt", {seq = out})
end

-- ---------------------------------------------------------------------------------------
-- expressions and types
local function dtype_ctor(dt)
  return function(v)
    if v == nil then
      -- T.int32() in a parameter table declares a scalar parameter
      return {scalar_param = dt}
    end
    if core.is_node(v) then return core.cast(dt, v) end
    return core.const(v, dt)
  end
end
for _, dt in ipairs({"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32",
                     "float64", "bfloat16", "bool"}) do
  T[dt] = dtype_ctor(dt)
end
T.handle = function() return {scalar_param = "handle"} end

-- the C bindings below raise a tir.Error naming T.<name> on a bad argument (util.guarded)
local G = util.guarded
T.cast = G("T.cast", core.cast)
T.Cast = T.cast
T.Select = G("T.Select", core.select)                 -- both sides evaluated (TVM's T.Select)
T.if_then_else = G("T.if_then_else", core.if_then_else) -- only the side the condition picks (TVM's T.if_then_else)
require("tir.math").install(T)     -- T.exp, T.sqrt, T.round, T.abs, T.max_value, ... (docs/BUILTINS.md)
for _, k in ipairs({"min", "max", "floordiv", "floormod", "truncdiv", "truncmod", "eq", "ne", "lt", "le", "gt", "ge",
                    "And", "Or", "Not", "Ramp", "Broadcast", "call"}) do
  T[k] = G("T." .. k, core[k])
end
--- T.call_extern(dtype, name, args...): a call of the device function `name` (a CUDA built-in such
-- as "__dp4a", or one registered with tir.register_extern), passed through to the CUDA C; the
-- interpreter and the simulator need a CPU model (tir.register_extern_model).  T.call_pure_extern:
-- the same for a function without side effects.  (TVM: T.call_extern / T.call_pure_extern.)
-- (a bad dtype or argument is a TypeError naming the function, at the caller's line)
T.call_extern = function(dtype, name, ...) return util.guard("call_extern", core.call_extern, dtype, name, ...) end
--- T.print(fmt, values..., [filter]): printf from the kernel as a statement (tir.print's doc).
T.print = function(...) T.evaluate(require("tir").print(...)) end
T.call_pure_extern = function(dtype, name, ...) return util.guard("call_pure_extern", core.call_pure_extern, dtype, name, ...) end
--- T.address_of(A[{i, j}]): the address of an element (a handle), for builtins that take pointers.
T.address_of = function(load) return core.call("handle", "address_of", load) end
--- T.var(dtype): a fresh symbolic variable (e.g. a buffer's stride in a tensor intrinsic);
-- named after the local it is assigned to.
function T.var(dtype) local v = core.var("v", dtype or "int32") if B.pending then pending(v) end return v end
--- T.Let(name, value, fn): the expression fn(v) with v bound to value (TVM's tir.Let).
function T.Let(name, value, fn)
  if type(name) ~= "string" then util.raise("TypeError", "T.Let", "name must be a string, got %s", util.show(name)) end
  if type(fn) ~= "function" then util.raise("TypeError", "T.Let", "fn must be a function(v) returning the body, got %s", util.show(fn)) end
  if not core.is_node(value) and math.type(value) ~= "integer" then
    util.raise("TypeError", "T.Let", "value must be an expression or an integer, got %s", util.show(value))
  end
  local v = core.var(name, core.is_node(value) and value.dtype or "int32")
  return core.make("Let", {var = v, value = value, body = fn(v)})
end
local te_reduce = G("T.reduce", core.te_reduce)
function T.reduce(combiner, source, axes) return te_reduce(combiner, source, axes) end

-- ---------------------------------------------------------------------------------------
-- buffers
local BUFFER_OPTS = {scope = "string", strides = "table", elem_offset = "integer|node", align = "positive",
                     offset_factor = "positive", data = "node", name = "string", swizzle = "string|table"}
local function buffer_opts(opts, prim)
  return util.check_opts(prim, opts, BUFFER_OPTS)
end

--- T.Buffer(shape, dtype, {scope=, strides=, elem_offset=, data=, name=}).  In a parameter
-- table it declares a buffer parameter; in a body it declares a view (e.g. of param.data).
function T.Buffer(shape, dtype, opts)
  opts = buffer_opts(opts, "T.Buffer")
  if opts.scope ~= nil and not core.scope_valid(opts.scope) then
    util.raise("ValueError", "T.Buffer", "unknown storage scope '%s'; valid scopes: %s", opts.scope, core.scope_list())
  end
  if not B.frames then return {buffer_param = true, shape = shape, dtype = dtype or "float32", opts = opts} end
  local b = core.buffer(opts.name or "buffer", shape, dtype or "float32", opts)
  if not opts.name then pending(b) end
  return b
end

--- Allocates a buffer in the enclosing block (the root block at function level).
function T.alloc_buffer(shape, dtype, opts)
  discover()
  opts = buffer_opts(opts, "T.alloc_buffer")
  local f
  for i = #B.frames, 1, -1 do
    if B.frames[i].kind == "block" or B.frames[i].kind == "func" then f = B.frames[i] break end
  end
  if not f then err("alloc_buffer outside a block", 2) end
  local b = core.buffer(opts.name or "buffer", shape, dtype or "float32", opts)
  if not opts.name then pending(b) end
  f.allocs[#f.allocs + 1] = b
  B.owners[#B.owners + 1] = b
  return b
end

-- A scoped statement: with a body function it wraps that function's statements, else the
-- rest of the enclosing scope.
local function scoped(fn, arg, make)
  if fn then
    local f = push({kind = "scope"})
    fn(arg)
    discover()
    pop(f)
    emit(make(seq(f.stmts)))
  else
    emit({scope_marker = true, wrap = make})
  end
  return arg
end

--- A flat allocation: local buf = T.allocate(shape, dtype, scope) for the rest of the scope,
-- or T.allocate(shape, dtype, scope, function(buf) ... end).
-- scope: a storage scope, or {scope = ..., swizzle = ...} for a swizzled allocation (what
-- lowering prints for a storage_swizzle'd buffer).
function T.allocate(shape, dtype, scope, fn)
  discover()
  local opts = {scope = scope or "global"}
  if type(scope) == "table" then
    opts = util.check_opts("T.allocate", scope, {scope = "string", swizzle = "string|table"})
    opts = {scope = opts.scope or "global", swizzle = opts.swizzle}
  elseif scope ~= nil and type(scope) ~= "string" then
    util.raise("TypeError", "T.allocate", "scope must be a string or {scope =, swizzle =}, got %s", util.show(scope))
  end
  local b = pending(core.buffer("buffer", shape, dtype or "float32", opts))
  B.owners[#B.owners + 1] = b
  return scoped(fn, b, function(body) return core.make("Allocate", {buffer = b, body = body}) end)
end

-- The number of elements a buffer spans (strides and elem_offset included), or nil when not
-- constant; second result: the lowest element it reaches (below elem_offset with negative strides).
local function span_elems(b)
  local function c(e) return core.is_node(e, "IntImm") and e.value or (type(e) == "number" and e or nil) end
  local off = c(b.elem_offset)
  if not off then return nil end
  local n = 1
  if #b.strides == #b.shape and #b.shape > 0 then
    n = 1
    local low = 0
    for d = 1, #b.shape do
      local e, s = c(b.shape[d]), c(b.strides[d])
      if not e or not s then return nil end
      -- a negative stride walks down from elem_offset: it adds to the low end, not the span's top
      if s >= 0 then n = n + (e - 1) * s else low = low + (e - 1) * s end
    end
    return n + off, low + off
  else
    for d = 1, #b.shape do
      local e = c(b.shape[d])
      if not e then return nil end
      n = n * e
    end
  end
  return n + off, off
end

local DTYPE_BYTES = {int8 = 1, uint8 = 1, int16 = 2, uint16 = 2, float16 = 2, bfloat16 = 2, int32 = 4, uint32 = 4,
                     float32 = 4, int64 = 8, uint64 = 8, float64 = 8, bool = 1}

--- local V = T.decl_buffer(shape, dtype, {data = X.data, strides =, elem_offset =, scope =}) for the
-- rest of the scope, or T.decl_buffer(shape, dtype, opts, function(V) ... end): TVM's
-- DeclBuffer, a buffer with its own shape, strides and elem_offset over the memory of an
-- allocation or a parameter (X.data).  Without data it allocates (as T.allocate).  A view that
-- does not fit in X (elem_offset + its span > X's elements, in bytes) is a ValueError.
function T.decl_buffer(shape, dtype, opts, fn)
  discover()
  if fn ~= nil and type(fn) ~= "function" then util.raise("TypeError", "T.decl_buffer", "the body must be a function, got %s", util.show(fn)) end
  opts = buffer_opts(opts, "T.decl_buffer")
  if opts.scope ~= nil and not core.scope_valid(opts.scope) then
    util.raise("ValueError", "T.decl_buffer", "unknown storage scope '%s'; valid scopes: %s", opts.scope, core.scope_list())
  end
  if opts.data == nil then return T.allocate(shape, dtype, opts.scope, fn) end
  if not core.is_node(opts.data, "Var") or tostring(opts.data.dtype) ~= "handle" then
    util.raise("TypeError", "T.decl_buffer", "data must be a buffer's data variable (X.data), got %s", util.show(opts.data))
  end
  local src
  for _, cand in ipairs(B.owners or {}) do
    if cand.data:same_as(opts.data) then src = cand end
  end
  util.check_dtype(dtype, "T.decl_buffer")
  local b = core.buffer(opts.name or "buffer", shape, dtype or "float32", opts)
  if not opts.name then pending(b) end
  for d = 1, #b.shape do
    local e = b.shape[d]
    if core.is_node(e, "IntImm") and e.value <= 0 then
      util.raise("ValueError", "T.decl_buffer", "dimension %d of the view has extent %d; extents must be positive", d, e.value)
    end
  end
  if core.is_node(b.elem_offset, "IntImm") and b.elem_offset.value < 0 then
    util.raise("ValueError", "T.decl_buffer", "elem_offset %d is negative", b.elem_offset.value)
  end
  if src then
    local need, low = span_elems(b)
    if low and low < 0 then
      util.raise("ValueError", "T.decl_buffer", "the view reaches element %d, before the start of %s's data (negative strides " ..
                 "walk down from elem_offset %s: give an elem_offset of at least %d)", low, src.name, tostring(b.elem_offset),
                 tonumber(tostring(b.elem_offset)) - low)
    end
    local have = span_elems(src)
    local nb, hb = DTYPE_BYTES[b.dtype], DTYPE_BYTES[src.dtype]
    if need and have and nb and hb and need * nb > have * hb then
      local function list(a)
        local t = {}
        for d = 1, #a do t[d] = tostring(a[d]) end
        return "{" .. table.concat(t, ", ") .. "}"
      end
      util.raise("ValueError", "T.decl_buffer",
                 "the view (%s %s, elem_offset %s%s) spans %d elements (%d bytes) but %s holds %d elements of %s (%d bytes)",
                 list(b.shape), b.dtype, tostring(b.elem_offset), #b.strides > 0 and (", strides " .. list(b.strides)) or "",
                 need, need * nb, src.name, have, src.dtype, have * hb)
    end
    if src.scope ~= b.scope then
      util.raise("ValueError", "T.decl_buffer", "the view has scope '%s' but %s is '%s'", b.scope, src.name, src.scope)
    end
  end
  return scoped(fn, b, function(body) return core.make("DeclBuffer", {buffer = b, body = body}) end)
end

--- A view of a region of another buffer (in a block).
function T.match_buffer(region, shape, dtype, opts)
  discover()
  local f = top()
  if f.kind ~= "block" then err("match_buffer must be called directly in a block", 2) end
  if core.is_node(region, "BufferLoad") then
    -- a point (how the printer shows a region of single elements): extent 1 in every dimension
    local slices = {}
    for d = 1, #region.indices do slices[d] = {region.indices[d], region.indices[d] + 1} end
    region = region.buffer[slices]
  end
  if not core.is_node(region, "BufferRegion") then err("match_buffer: the first argument must be a buffer region", 2) end
  opts = buffer_opts(opts, "T.match_buffer")
  local b = core.buffer(opts.name or "buffer", shape, dtype or region.buffer.dtype, opts)
  if not opts.name then pending(b) end
  f.match[#f.match + 1] = core.make("MatchBufferRegion", {buffer = b, source = region})
  return b
end

-- stores: C[{i, j}] = value
local function store_hook(buf, idx, value)
  if not B.frames then err(("buffer store %s[...] = value is only valid inside a T script function"):format(buf.name), 2) end
  discover()
  local indices = {}
  if type(idx) == "table" then
    local n = 0
    for k in pairs(idx) do if math.type(k) == "integer" and k > n then n = k end end
    for i = 1, n do
      if idx[i] == nil then err(("store to %s: index %d is nil"):format(buf.name, i), 2) end
      indices[i] = idx[i]
    end
  else
    indices = {idx}
  end
  if #indices ~= #buf then
    err(("store to %s: %s has %d dimension(s) but was indexed with %d index(es)"):format(buf.name, buf.name, #buf, #indices), 3)
  end
  for i, x in ipairs(indices) do check_int_arg(x, ("store to %s: index %d"):format(buf.name, i), 3) end
  for i = 1, #indices - 1 do
    if core.is_node(indices[i]) and lanes_of(indices[i].dtype) ~= 1 then
      err(("store to %s: only the last index may be a vector (index %d is %s)"):format(buf.name, i, indices[i].dtype), 3)
    end
  end
  local dt = buf.dtype
  if math.type(value) == "float" and not dt:match("^float") and not dt:match("^bfloat") and
     (value ~= value or value ~= math.floor(value)) then
    err(("store to %s: %s is not an integer, but %s holds %s; cast it, e.g. T.cast(%q, T.float32(x))"):format(
        buf.name, tostring(value), buf.name, dt, dt), 3)
  end
  if type(value) == "number" or type(value) == "boolean" then value = core.const(value, dt) end
  if not core.is_node(value, "Expr") then err(("store to %s: the value must be an expression"):format(buf.name), 2) end
  -- a vector store writes as many elements as its last index has lanes
  local last = indices[#indices]
  local want = (core.is_node(last) and lanes_of(last.dtype) or 1) * lanes_of(dt)
  if lanes_of(value.dtype) ~= want then
    err(("store to %s: the value has %d lane(s) but the index addresses %d element(s)"):format(buf.name,
        lanes_of(value.dtype), want), 3)
  end
  local elem = value.dtype:gsub("x%d+$", "") -- vector stores keep their lanes
  if elem ~= dt then value = core.cast(dt, value) end
  emit(core.make("BufferStore", {buffer = buf, value = value, indices = indices}))
end

-- ---------------------------------------------------------------------------------------
-- loops
local function loop_iter(specs)
  -- specs: list of {min, extent, kind, tag, annotations}; returns a for-in iterator
  local state = 0
  local frames = {}
  return function()
    state = state + 1
    if state == 1 then
      discover()
      local vars = {}
      for i, s in ipairs(specs) do
        local dt = core.is_node(s.extent) and s.extent.dtype or (core.is_node(s.min) and s.min.dtype) or "int32"
        if not core.is_node(s.min) then s.min = core.const(s.min, dt) end
        if not core.is_node(s.extent) then s.extent = core.const(s.extent, dt) end
        local v = pending(core.var("v", dt))
        vars[i] = v
        frames[i] = push({kind = "for", var = v, spec = s})
      end
      return table.unpack(vars)
    end
    -- the body ran: close the loops innermost first
    for i = #specs, 1, -1 do
      local f = frames[i]
      pop(f)
      local s = f.spec
      emit(core.make("For", {loop_var = f.var, min = s.min, extent = s.extent, kind = s.kind, thread_tag = s.tag or "",
                             annotations = s.annotations, body = seq(f.stmts)}))
    end
    return nil
  end
end

local KIND = {serial = 0, parallel = 1, vectorized = 2, unroll = 3, thread_binding = 4}

local function range_args(a, b, c)
  -- (extent) | (min, stop) with an optional options table / tag after
  local lo, hi, rest
  if b == nil or type(b) == "table" or type(b) == "string" then lo, hi, rest = 0, a, b
  else lo, hi, rest = a, b, c end
  check_int_arg(lo, "a loop bound", 3)
  check_int_arg(hi, "a loop bound", 3)
  if type(lo) == "number" and type(hi) == "number" and hi < lo then
    if b == nil or type(b) == "table" or type(b) == "string" then err(("the loop extent is negative (%d)"):format(hi), 3) end
    err(("the loop range [%d, %d) is reversed (T.serial(min, stop) or T.serial(extent))"):format(lo, hi), 3)
  end
  -- (extent) keeps the extent as written, so that a printed loop loads back equal
  local extent
  if type(lo) == "number" and type(hi) == "number" then extent = hi - lo
  elseif lo == 0 then extent = hi
  else extent = core.simplify(core.sub(hi, lo)) end
  return lo, extent, rest
end

local function make_loop(kind)
  return function(a, b, c, d)
    local lo, extent, rest, tag, opts
    if kind == "thread_binding" then
      -- (extent, tag [, opts]) or (min, stop, tag [, opts])
      if type(b) == "string" then lo, extent, tag, opts = 0, a, b, c
      else lo, extent, tag, opts = a, b, c, d end
      if type(tag) ~= "string" then err("T.thread_binding needs a thread tag such as \"threadIdx.x\"", 2) end
      local bounds = {lo, extent}
      for i = 1, 2 do
        local x = bounds[i]
        if not core.is_node(x) and math.type(x) ~= "integer" then
          err(("T.thread_binding(extent, tag) / (min, stop, tag): bounds must be integers or expressions, got %s"):format(util.show(x)), 2)
        end
      end
      if type(b) ~= "string" then extent = b - a end
    else
      lo, extent, rest = range_args(a, b, c)
      opts = rest
    end
    if math.type(extent) == "integer" and extent < 0 then err(("the loop extent is negative (%d)"):format(extent), 2) end
    local prim = "T." .. kind
    if kind ~= "thread_binding" and (type(b) == "table" or type(b) == "string" or b == nil) and (c ~= nil or d ~= nil) then
      util.raise("TypeError", prim, "too many arguments: T.%s(extent [, opts]) or T.%s(min, stop [, opts])", kind, kind)
    elseif d ~= nil and not (kind == "thread_binding" and type(b) ~= "string") then
      util.raise("TypeError", prim, "too many arguments")
    end
    if type(opts) == "string" then util.raise("TypeError", prim, "unexpected string argument %s", util.show(opts)) end
    util.check_opts(prim, opts, {annotations = "table"})
    local anns = opts and opts.annotations
    annotations.check_table(prim, anns)
    local annlist = {}
    if anns then
      local keys = {}
      for k in pairs(anns) do keys[#keys + 1] = k end
      table.sort(keys)
      for _, k in ipairs(keys) do annlist[#annlist + 1] = core.make("Ann", {key = k, value = anns[k]}) end
    end
    return loop_iter({{min = lo, extent = extent, kind = KIND[kind], tag = tag, annotations = annlist}})
  end
end
for name in pairs(KIND) do T[name] = make_loop(name) end

--- for i, j, k in T.grid(M, N, K) do ... end: nested serial loops from 0.
function T.grid(...)
  local ext = table.pack(...)
  if ext.n == 0 then err("T.grid needs at least one extent, e.g. T.grid(16, 16)", 2) end
  for i = 1, ext.n do
    check_int_arg(ext[i], ("T.grid: extent %d"):format(i), 2)
    if math.type(ext[i]) == "integer" and ext[i] < 0 then err(("T.grid: extent %d is negative (%d)"):format(i, ext[i]), 2) end
  end
  local specs = {}
  for i = 1, ext.n do specs[i] = {min = 0, extent = ext[i], kind = 0, annotations = {}} end
  return loop_iter(specs)
end

-- ---------------------------------------------------------------------------------------
-- blocks
local function enclosing_loop(var)
  for i = #B.frames, 1, -1 do
    local f = B.frames[i]
    if f.kind == "for" and f.var == var then return f end
  end
end

local function block_frame(name)
  for i = #B.frames, 1, -1 do
    local f = B.frames[i]
    if f.kind == "block" then return f end
    if f.kind ~= "init" then break end
  end
  err(name .. " must be called directly inside T.block", 3)
end

local ITER = {S = 0, R = 2, spatial = 0, reduce = 2, scan = 3, opaque = 4}

local function add_axis(kind, dom, binding, dtype)
  local f = block_frame("T.axis." .. kind)
  local lo, extent
  if type(dom) == "table" and not core.is_node(dom) then lo, extent = dom[1], core.simplify(core.sub(dom[2], dom[1]))
  else lo, extent = 0, dom end
  dtype = dtype or (core.is_node(binding) and binding.dtype) or (core.is_node(extent) and extent.dtype) or "int32"
  local v = pending(core.var("v", dtype))
  local dom_range = core.make("Range", {min = core.is_node(lo) and lo or core.const(lo, dtype),
                                        extent = core.is_node(extent) and extent or core.const(extent, dtype)})
  f.iter_vars[#f.iter_vars + 1] = core.make("IterVar", {var = v, dom = dom_range, iter_type = ITER[kind], thread_tag = ""})
  f.bindings[#f.bindings + 1] = binding
  return v
end

T.axis = {}
function T.axis.spatial(dom, binding, dtype) discover() return add_axis("spatial", dom, binding, dtype) end
function T.axis.reduce(dom, binding, dtype) discover() return add_axis("reduce", dom, binding, dtype) end
function T.axis.scan(dom, binding, dtype) discover() return add_axis("scan", dom, binding, dtype) end
function T.axis.opaque(dom, binding, dtype) discover() return add_axis("opaque", dom, binding, dtype) end
--- T.axis.remap("SSR", {i, j, k}): iteration variables bound to enclosing loops over their ranges.
function T.axis.remap(kinds, loops)
  discover()
  if type(kinds) ~= "string" or type(loops) ~= "table" or #kinds ~= #loops then
    err('T.axis.remap("SSR", {i, j, k}) needs one kind letter per loop variable', 2)
  end
  local out = {}
  for n = 1, #kinds do
    local c = kinds:sub(n, n)
    if c ~= "S" and c ~= "R" then err("T.axis.remap: kinds are S (spatial) or R (reduce), got " .. c, 2) end
    local lp = enclosing_loop(loops[n])
    if not lp then err(("T.axis.remap: argument %d is not the variable of an enclosing loop"):format(n), 2) end
    out[n] = add_axis(c == "S" and "spatial" or "reduce", lp.spec.extent, loops[n])
  end
  return table.unpack(out)
end

function T.where(cond)
  discover()
  check_cond(cond, "T.where", 2)
  block_frame("T.where").predicate = cond
end

local function regions(list, what)
  local out = {}
  for i, r in ipairs(list) do
    if core.is_node(r, "BufferLoad") then
      local idx = {}
      for d = 1, #r.indices do idx[d] = r.indices[d] end
      local b = r.buffer
      local ranges = {}
      for d, e in ipairs(idx) do ranges[d] = core.make("Range", {min = e, extent = core.const(1, e.dtype)}) end
      out[i] = core.make("BufferRegion", {buffer = b, region = ranges})
    elseif core.is_node(r, "BufferRegion") then
      out[i] = r
    else
      err(("%s: argument %d must be a buffer access such as A[{vi, vk}] or a region A[{{0, 16}, vk}]"):format(what, i), 3)
    end
  end
  return out
end

-- A block's reads, writes and attributes are given once: a second call would replace the first
-- (T.reads(A[...]); T.reads(B[...]) declared only B).
local function set_once(f, key, value, prim)
  if f[key] ~= nil then
    err(("%s is given twice in block '%s': list everything in one call"):format(prim, tostring(f.name)), 3)
  end
  f[key] = value
end
function T.reads(...) discover() set_once(block_frame("T.reads"), "reads", regions({...}, "T.reads"), "T.reads") end
function T.writes(...) discover() set_once(block_frame("T.writes"), "writes", regions({...}, "T.writes"), "T.writes") end
function T.block_attr(tbl)
  discover()
  annotations.check_table("T.block_attr", tbl)
  set_once(block_frame("T.block_attr"), "annotations", tbl, "T.block_attr")
end

--- T.init(function() ... end): the reduction's initialization.
function T.init(fn)
  discover()
  local bf = block_frame("T.init")
  local f = push({kind = "init"})
  fn()
  pop(f)
  bf.init = seq(f.stmts)
end

local function ann_list(tbl)
  local out = {}
  if not tbl then return out end
  local keys = {}
  for k in pairs(tbl) do keys[#keys + 1] = k end
  table.sort(keys)
  for _, k in ipairs(keys) do out[#out + 1] = core.make("Ann", {key = k, value = tbl[k]}) end
  return out
end

local rename_pending -- defined below (T.prim_func applies it to the whole function)

--- T.block(name, function() ... end)
function T.block(name, fn)
  discover()
  if type(name) ~= "string" then err("T.block needs a name", 2) end
  if type(fn) ~= "function" then err("T.block needs a function body", 2) end
  local f = push({kind = "block", name = name, iter_vars = {}, bindings = {}, allocs = {}, match = {}})
  fn()
  discover()
  pop(f)
  local body = seq(f.stmts)
  local blk = core.make("Block", {name = name, iter_vars = f.iter_vars, reads = f.reads or {}, writes = f.writes or {},
                                  init = f.init, alloc_buffers = f.allocs, match_buffers = f.match,
                                  annotations = ann_list(f.annotations), body = body})
  -- declared regions must cover the body (a wrong T.reads/T.writes would mislead every
  -- primitive); an omitted list is inferred, TVM's way.  The root block's lists stay empty
  -- (TVM's ScriptComplete leaves the root block alone).
  local is_root = name == "root" and #f.iter_vars == 0 and top().kind == "func"
  -- the loops around the block: an opaque block's regions may use their variables
  local outer = {}
  for i = 1, #B.frames do
    local fr = B.frames[i]
    if fr.kind == "for" then outer[#outer + 1] = {fr.var, fr.spec.min, fr.spec.extent} end
  end
  if not is_root and not core.block_check_access(blk, f.reads ~= nil, f.writes ~= nil, false, outer) then
    -- raise with the block's realize, its variables and buffers named as in the script
    local realize = rename_pending(core.make("BlockRealize", {iter_values = f.bindings,
                                                             predicate = f.predicate or core.const(true, "bool"), block = blk}))
    core.block_check_access(realize.block, f.reads ~= nil, f.writes ~= nil, realize, outer)
  end
  if not f.reads or not f.writes then
    local r, w = core.block_access(blk)
    blk = core.make("Block", {name = name, iter_vars = f.iter_vars, reads = f.reads or r, writes = f.writes or w,
                              init = f.init, alloc_buffers = f.allocs, match_buffers = f.match,
                              annotations = ann_list(f.annotations), body = body})
  end
  emit(core.make("BlockRealize", {iter_values = f.bindings, predicate = f.predicate or core.const(true, "bool"), block = blk}))
end

-- ---------------------------------------------------------------------------------------
-- other statements
function T.If(cond, then_fn, else_fn)
  discover()
  check_cond(cond, "T.If", 2)
  if type(then_fn) ~= "function" then err("T.If(cond, then_fn [, else_fn]): then_fn must be a function", 2) end
  if else_fn ~= nil and type(else_fn) ~= "function" then err("T.If: else_fn must be a function", 2) end
  local f = push({kind = "if"})
  then_fn()
  pop(f)
  local else_stmt
  if else_fn then
    local g = push({kind = "else"})
    else_fn()
    pop(g)
    else_stmt = seq(g.stmts)
  end
  emit(core.make("IfThenElse", {cond = cond, then_case = seq(f.stmts), else_case = else_stmt}))
end

function T.evaluate(e) discover() emit(core.make("Evaluate", {value = e})) end

--- local x = T.let("x", value): x == value for the rest of the scope.
-- (or T.let("x", value, function(x) ... end))
function T.let(name, value, fn)
  discover()
  local v = core.var(name, core.is_node(value) and value.dtype or "int32")
  return scoped(fn, v, function(body) return core.make("LetStmt", {var = v, value = value, body = body}) end)
end

--- local tx = T.launch_thread("threadIdx.x", 128): a launch dimension for the rest of the scope
-- (or T.launch_thread(tag, extent, function(tx) ... end)).
function T.launch_thread(tag, extent, fn)
  discover()
  local v = core.var((tag:gsub("%.", "_")), "int32")
  local iv = core.make("IterVar", {var = v, dom = core.make("Range", {min = 0, extent = extent}), iter_type = 1, thread_tag = tag})
  return scoped(fn, v, function(body)
    return core.make("AttrStmt", {node = iv, key = "thread_extent", value = extent, body = body})
  end)
end

function T.attr(node, key, value, fn)
  discover()
  local f = push({kind = "attr"})
  fn()
  pop(f)
  emit(core.make("AttrStmt", {node = node, key = key, value = value, body = seq(f.stmts)}))
end

function T.func_attr(tbl) discover() B.frames[1].attrs = tbl end

-- ---------------------------------------------------------------------------------------
-- functions

function rename_pending(func)
  -- new names for pending vars/buffers, applied by substitution
  local vpairs, bpairs, renamed = {}, {}, {}
  for obj, name in pairs(B.names) do
    if core.is_node(obj, "Var") and obj.name ~= name then
      local nv = core.var_with_name(obj, name)
      vpairs[#vpairs + 1] = obj
      vpairs[#vpairs + 1] = nv
      renamed[obj] = nv
    end
  end
  for obj, name in pairs(B.names) do
    if core.is_node(obj, "Buffer") then
      -- a buffer whose strides / elem_offset use a renamed var (T.var) is rebuilt with it:
      -- substitution keeps buffers as they are (their identity matters)
      local strides, changed = {}, false
      for k = 1, #obj.strides do
        local st = obj.strides[k]
        strides[k] = renamed[st] or st
        changed = changed or renamed[st] ~= nil
      end
      local eo = obj.elem_offset
      if renamed[eo] then eo, changed = renamed[eo], true end
      if changed then
        bpairs[#bpairs + 1] = obj
        bpairs[#bpairs + 1] = core.make("Buffer", {name = name, data = obj.data, shape = obj.shape, strides = strides,
                                                   elem_offset = eo, scope = obj.scope, align = obj.align,
                                                   offset_factor = obj.offset_factor, swizzle = obj.swizzle}, obj.dtype)
      elseif obj.name ~= name then
        bpairs[#bpairs + 1] = obj
        bpairs[#bpairs + 1] = core.buffer_with_name(obj, name)
      end
    end
  end
  if #bpairs > 0 then func = core.substitute_buffers(func, bpairs) end
  if #vpairs > 0 then func = core.substitute(func, vpairs) end
  return func
end

local function has_block(stmts)
  for _, s in ipairs(stmts) do
    if core.is_node(s) and core.contains(s, "BlockRealize") then return true end
  end
  return false
end

--- T.prim_func(name, params, body): params maps names to T.Buffer(...) or T.int32() etc.;
-- the body function's parameter order is the function's parameter order.
function T.prim_func(name, params, body)
  if type(name) ~= "string" then err("T.prim_func(name, params, body): name must be a string", 2) end
  if type(params) ~= "table" then err("T.prim_func: params must be a table {A = T.Buffer(...), ...}", 2) end
  if type(body) ~= "function" then err("T.prim_func: the body must be a function", 2) end
  local info = debug.getinfo(body, "u")
  local order = {}
  for i = 1, info.nparams do order[i] = debug.getlocal(body, i) end
  local n_params = 0
  for _ in pairs(params) do n_params = n_params + 1 end
  if n_params ~= info.nparams then
    err(("T.prim_func: %d parameter declarations but the body takes %d parameters"):format(n_params, info.nparams), 2)
  end
  local saved = {B.frames, B.pending, B.names, B.n_pending, B.owners}
  B.frames, B.pending, B.names, B.n_pending, B.owners = {}, {}, {}, 0, {}
  local ok, result = pcall(function()
    local args = {}
    for i, pname in ipairs(order) do
      local spec = params[pname]
      if spec == nil then err(("T.prim_func: parameter '%s' has no declaration in the params table"):format(pname), 3) end
      if type(spec) == "table" and spec.buffer_param then
        args[i] = core.buffer(pname, spec.shape, spec.dtype, spec.opts)
        B.owners[#B.owners + 1] = args[i]
      elseif type(spec) == "table" and spec.scalar_param then
        args[i] = core.var(pname, spec.scalar_param)
      elseif core.is_node(spec, "Buffer") or core.is_node(spec, "Var") then
        args[i] = spec
      else
        err(("T.prim_func: parameter '%s' must be T.Buffer(...) or a scalar type such as T.int32()"):format(pname), 3)
      end
    end
    local root = push({kind = "func", allocs = {}})
    body(table.unpack(args, 1, #order))
    discover()
    pop(root)
    local stmts = root.stmts
    local fbody
    local single_root = #stmts == 1 and core.is_node(stmts[1], "BlockRealize") and stmts[1].block.name == "root" and
                        #stmts[1].block.iter_vars == 0
    if single_root or not (has_block(stmts) or #root.allocs > 0) then
      fbody = seq(stmts)
    else
      local blk = core.make("Block", {name = "root", iter_vars = {}, reads = {}, writes = {}, alloc_buffers = root.allocs,
                                      body = seq(stmts)})
      fbody = core.make("BlockRealize", {iter_values = {}, predicate = core.const(true, "bool"), block = blk})
    end
    local func = core.make("PrimFunc", {name = name, params = args, body = fbody, attrs = ann_list(root.attrs)})
    return rename_pending(func)
  end)
  B.frames, B.pending, B.names, B.n_pending, B.owners = saved[1], saved[2], saved[3], saved[4], saved[5]
  if not ok then error(result, 0) end
  return result
end

--- T.ir_module({f1, f2, ...})
function T.ir_module(funcs) return core.make("IRModule", {functions = funcs}) end

--- Loads T script text (e.g. print(func)'s output) and returns the function it defines.
function T.parse(text, chunkname)
  local env = setmetatable({T = T, tir = package.loaded.tir, math = math}, {__index = _G})
  local chunk, e = load("return " .. text, chunkname or "=T script", "t", env)
  if not chunk then chunk, e = load(text, chunkname or "=T script", "t", env) end
  if not chunk then error(e, 2) end
  return chunk()
end

-- a call with more arguments than a function's parameters is an error (util.strict)
util.strict_all(T, "T.")
util.strict_all(T.axis, "T.axis.")

-- route buffer stores (A[{i}] = v) here while a function is being built
local prev_hook = core.set_store_hook(function(buf, idx, value) return store_hook(buf, idx, value) end)
if prev_hook then core.set_store_hook(prev_hook) core.set_store_hook(function(b, i, v) return store_hook(b, i, v) end) end

return T
