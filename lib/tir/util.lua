--- tir.util: error helpers for the Lua side of tirlua.  Every error a user can cause is a
-- tir.Error (kind, primitive, message) positioned at the user's line, like those raised
-- by the C core.
local core = require("tir.core")
local util = {}

--- Raises a tir.Error: util.raise("TypeError", "split", "factor %d must be ...", 2)
function util.raise(kind, prim, fmt, ...)
  core.raise(kind, prim, select("#", ...) > 0 and fmt:format(...) or fmt)
end

local function describe(x)
  if core.is_node(x) then return "tir." .. x.kind end
  local mt = getmetatable(x)
  if type(mt) == "table" and mt.__name then return mt.__name end
  return type(x)
end
util.describe = describe

--- The number of entries of a table (all keys); equal to #t exactly when t is a list.
function util.count_keys(t)
  local n = 0
  for _ in pairs(t) do n = n + 1 end
  return n
end

--- A value for an error message: numbers are shown, a float says so (2^31 is a float in Lua).
function util.show(x)
  if x ~= x then return "NaN" end
  if math.type(x) == "float" then return ("%s (a float)"):format(tostring(x)) end
  if type(x) == "number" then return tostring(x) end
  if type(x) == "string" then return ("'%s'"):format(x) end
  return describe(x)
end

--- Calls f(...); a plain string error from the bindings (a bad argument) becomes a
-- tir.Error of kind TypeError for `prim`, positioned at the user's line.
function util.guard(prim, f, ...)
  local r = table.pack(pcall(f, ...))
  if r[1] then return table.unpack(r, 2, r.n) end
  local e = r[2]
  if type(e) == "string" then
    -- drop the binding's own position prefix ("file:line: ")
    e = e:gsub("^[^:\n]+:%d+: ", ""):gsub("bad argument (#%d+) to '%?'", "bad argument %1")
    core.raise("TypeError", prim, e)
  end
  error(e, 0)
end

--- Checks a dtype string.
function util.check_dtype(dt, prim, what)
  if dt == nil then return end
  if not core.valid_dtype(dt) then
    util.raise("TypeError", prim, "%s: unknown dtype %s (expected e.g. float32, float16, bfloat16, int8, int32, bool)",
               what or "dtype", type(dt) == "string" and ("'" .. dt .. "'") or describe(dt))
  end
end

return util
