--- Math shorthands, as TVM's tir.exp, tir.sqrt, tir.round, ... (docs/BUILTINS.md "Math
-- builtins"): one function per row of the C table of math builtins (core.math_builtins), put
-- into tir (tir.exp) and the T script (T.exp) alike.
--   tir.exp(x), tir.pow(x, y) (tir.power), ...  Call(x's dtype, "exp", x); x must be a float
--       expression or a Lua number (a float32 constant); an integer x is a TypeError (cast it).
--   tir.floor/ceil/trunc/round/nearbyint(x)  an integer x is returned as is (TVM).
--   tir.abs(x)   integers: Call("abs") (the minimum wraps; unsigned: x itself); floats: fabs.
--   tir.isnan/isinf/isfinite(x)   bool; for an integer x the constant answer.
--   tir.bitwise_and/or/xor(x, y), tir.bitwise_not(x), tir.shift_left/right(x, y)   integers.
--   tir.max_value(dtype) / tir.min_value(dtype)   (C, tir.core) the dtype's limits as constants.
local core = require("tir.core")
local util = require("tir.util")

local M = {}

local function is_float(dt) return dt:match("^b?float") ~= nil end

-- x as an expression: nodes as they are, Lua numbers as constants (of `dt` when given).
local function expr(x, dt, name)
  if core.is_node(x) then return x end
  if type(x) == "number" then return core.const(x, dt or (math.type(x) == "integer" and "int32" or "float32")) end
  if type(x) == "boolean" then
    util.raise("TypeError", name, "the argument is a Lua boolean (did you write a == b? use tir.eq(a, b), ...)")
  end
  util.raise("TypeError", name, "expected an expression or a number, got %s", util.describe(x))
end

local function make(b)
  local name = "tir." .. b.name
  if b.kind == "bits" then
    return function(x, y)
      x = expr(x, nil, name)
      if not x.dtype:match("^u?int") then util.raise("TypeError", name, "needs integer operands, got %s", x.dtype) end
      if b.arity == 1 then return core.call(x.dtype, b.name, x) end
      return core.call(x.dtype, b.name, x, expr(y, x.dtype, name))
    end
  end
  return function(...)
    local n = select("#", ...)
    if n ~= b.arity then util.raise("TypeError", name, "takes %d argument(s), got %d", b.arity, n) end
    local args = {...}
    args[1] = expr(args[1], nil, name)
    local dt = args[1].dtype
    for i = 2, n do args[i] = expr(args[i], dt, name) end
    if is_float(dt) then
      if b.kind == "predicate" then return core.call("bool", b.name, table.unpack(args, 1, n)) end
      return core.call(dt, b.name == "abs" and "fabs" or b.name, table.unpack(args, 1, n))
    end
    local x = args[1]
    if b.kind == "rounding" then return x end -- TVM: rounding an integer gives it back
    if b.kind == "abs" then return dt:match("^uint") and x or core.call(dt, "abs", x) end
    if b.kind == "predicate" then return core.const(b.name == "isfinite", "bool") end
    util.raise("TypeError", name, "computes in floating point, but the argument is %s: cast it first, e.g. %s(tir.cast(\"float32\", x))",
               dt, name)
  end
end

--- Puts the shorthands into table t (tir or T); names t already has are kept.
function M.install(t)
  for _, b in ipairs(core.math_builtins()) do
    if t[b.name] == nil then t[b.name] = make(b) end
  end
  if t.power == nil then t.power = t.pow end
  t.max_value = t.max_value or util.guarded("max_value", core.max_value)
  t.min_value = t.min_value or util.guarded("min_value", core.min_value)
  return t
end

return M
