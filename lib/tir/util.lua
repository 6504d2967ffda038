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
--- util.count(n, noun[, plural]) -> "1 CTA", "4 CTAs", "0 barriers": n and the noun in the number
-- n takes (plural defaults to noun .. "s"; n an integer, or a float with an integer value).
function util.count(n, noun, plural)
  n = math.tointeger(n) or n
  return ("%s %s"):format(tostring(n), n == 1 and noun or (plural or noun .. "s"))
end

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
    e = e:gsub("^[^:\n]+:%d+: ", ""):gsub("bad argument (#%d+) to '[^']*'", "bad argument %1")
    core.raise("TypeError", prim, e)
  end
  error(e, 0)
end

-- The second half of util.guarded: results pass through, a binding's string error becomes a
-- tir.Error.  A string with a "file:line:" prefix comes from Lua code the C function called
-- back (a user's te.compute body, an extern model) and is the caller's own error: left as is.
local function guarded_finish(prim, ok, ...)
  if ok then return ... end
  local e = ...
  if type(e) == "string" and not e:match("^[^:\n]+:%d+: ") then
    local kind = e:match("^bad argument") and "TypeError" or "ValueError"
    e = e:gsub("bad argument (#%d+) to '[^']*'", "bad argument %1")
    core.raise(kind, prim, e)
  end
  error(e, 0)
end

--- util.guarded(prim, f) -> a function calling the C binding f, whose argument errors (luaL's
-- "bad argument #1 to 'cast' (string expected, got nil)" strings) become a tir.Error naming
-- prim (TypeError; other binding strings ValueError), positioned at the user's line.
-- No table is made per call (the results pass through varargs); help(x) sees f's docs.
function util.guarded(prim, f)
  if type(f) ~= "function" then return f end
  local w = function(...) return guarded_finish(prim, pcall(f, ...)) end
  util.wrapped[w] = f
  return w
end

--- Checks a dtype string.
function util.check_dtype(dt, prim, what)
  if dt == nil then return end
  if not core.valid_dtype(dt) then
    util.raise("TypeError", prim, "%s: unknown dtype %s (expected e.g. float32, float16, bfloat16, int8, int32, bool)",
               what or "dtype", type(dt) == "string" and ("'" .. dt .. "'") or describe(dt))
  end
end

--- Levenshtein distance between two strings (for "did you mean").
function util.edit_distance(a, b)
  local la, lb = #a, #b
  local prev = {}
  for j = 0, lb do prev[j] = j end
  for i = 1, la do
    local cur = {[0] = i}
    local ai = a:byte(i)
    for j = 1, lb do
      local cost = ai == b:byte(j) and 0 or 1
      cur[j] = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
    end
    prev = cur
  end
  return prev[lb]
end

--- The name in `names` (a list) closest to s when it is a likely typo of it (distance <= 2,
-- or <= 1 for names of at most 4 characters), else nil.
function util.closest(s, names)
  if type(s) ~= "string" then return nil end
  local best, bd
  for _, n in ipairs(names) do
    local d = util.edit_distance(s, n)
    if d > 0 and d <= (#n <= 4 and 1 or 2) and (not bd or d < bd) then best, bd = n, d end
  end
  return best
end

local function sorted_keys(t)
  local ks = {}
  for k in pairs(t) do ks[#ks + 1] = k end
  table.sort(ks)
  return ks
end
util.sorted_keys = sorted_keys

-- type descriptors of check_opts: a Lua type, "integer", "nonneg" (integer >= 0), "positive"
-- (integer >= 1), "dtype", "node" (a tir expression), "any", or several joined with "|"
local function type_ok(v, t)
  for alt in t:gmatch("[^|]+") do
    -- "number" first: NaN is a Lua number but no option's value (rtol = 0/0 passes every check)
    if alt == "number" then
      if type(v) == "number" and v == v then return true end
    elseif alt == "any" or type(v) == alt then return true end
    if alt == "integer" and math.type(v) == "integer" then return true end
    if alt == "nonneg" and math.type(v) == "integer" and v >= 0 then return true end
    if alt == "positive" and math.type(v) == "integer" and v >= 1 then return true end
    if alt == "number" and type(v) == "number" and v == v then return true end
    if alt == "dtype" and type(v) == "string" and core.valid_dtype(v) then return true end
    if alt == "node" and core.is_node(v) then return true end
  end
  return false
end

local TYPE_WORDS = {nonneg = "a non-negative integer", positive = "a positive integer", number = "a number (not NaN)",
                    integer = "an integer", boolean = "a boolean", string = "a string", table = "a table",
                    ["function"] = "a function", dtype = "a dtype name", node = "an expression"}

--- Checks an options table: util.check_opts(prim, opts, {seed = "integer", low = "number"}).
-- opts may be nil (returns {}); otherwise it must be a table whose keys are all in spec
-- (an unknown key raises a ValueError naming prim and the key, with "did you mean" when it
-- is close to a valid one, and listing the valid keys) and whose values have the spec's
-- type (a TypeError naming the option).  A spec value that is a function is called with
-- the value and returns nil or what was expected ("a list of integers").  Returns opts.
function util.check_opts(prim, opts, spec)
  if opts == nil then return {} end
  local valid = sorted_keys(spec)
  if type(opts) ~= "table" or getmetatable(opts) ~= nil then
    util.raise("TypeError", prim, "options must be a table with keys among %s, got %s", table.concat(valid, ", "), describe(opts))
  end
  for k, v in pairs(opts) do
    local t = spec[k]
    if t == nil then
      local near = util.closest(k, valid)
      util.raise("ValueError", prim, "unknown option %s%s; valid options: %s", util.show(k),
                 near and (" (did you mean '" .. near .. "'?)") or "", table.concat(valid, ", "))
    end
    local want
    if type(t) == "function" then want = t(v)
    elseif not type_ok(v, t) then
      local words = {}
      for alt in t:gmatch("[^|]+") do words[#words + 1] = TYPE_WORDS[alt] or alt end
      want = table.concat(words, " or ")
    end
    if want then util.raise("TypeError", prim, "option %s must be %s, got %s", tostring(k), want, util.show(v)) end
  end
  return opts
end

--- The first checks of a schedule's helper (a function another schedule calls with resolved
-- options, e.g. tc_gemm_wgmma.schedule from tc_gemm.schedule): sch must be a tir.Schedule and
-- each of the tables given (the options) a table; else a TypeError from prim that names the
-- entry point to call instead.
function util.check_helper(prim, entry, sch, ...)
  if getmetatable(sch) ~= require("tir").Schedule then
    util.raise("TypeError", prim, "sch must be a tir.Schedule, got %s (this is a helper of %s: call that instead)", describe(sch), entry)
  end
  for i = 1, select("#", ...) do
    local t = select(i, ...)
    if type(t) ~= "table" then
      util.raise("TypeError", prim, "argument %d must be the options table %s passes, got %s (call %s instead)", i + 1, entry,
                 describe(t), entry)
    end
  end
end

--- Refuses arguments beyond a function's signature: call as util.no_extra(prim, sig, ...)
-- from `function f(a, b, ...)`, sig being the signature to show ("T.where(cond)").
-- Any extra argument counts, nil included (select('#', ...)).
function util.no_extra(prim, sig, ...)
  local n = select("#", ...)
  if n > 0 then
    util.raise("TypeError", prim, "too many arguments: %d more than %s takes", n, sig)
  end
end

--- The function each util.strict wrapper calls (help(x) shows the wrapped function's docs).
util.wrapped = setmetatable({}, {__mode = "k"})

--- Wraps a Lua function of fixed arity so that a call with more arguments than its
-- parameters raises a TypeError naming prim and the signature (an extra argument is never
-- ignored).  Vararg and C functions are returned as they are.  method: the first
-- parameter is self (not shown; the count in the message leaves it out).
function util.strict(prim, f, method)
  if type(f) ~= "function" then return f end
  local info = debug.getinfo(f, "u")
  if info.isvararg or info.what == "C" then return f end
  local n = info.nparams
  local names = {}
  for i = method and 2 or 1, n do names[#names + 1] = debug.getlocal(f, i) end
  local sig = ("%s(%s)"):format(prim, table.concat(names, ", "))
  local shown = method and n - 1 or n
  local wrapper
  wrapper = function(...)
    local got = select("#", ...)
    if got > n then
      util.raise("TypeError", prim, "too many arguments: %s takes %d, got %d (extra arguments are refused, not ignored; " ..
                 "a call returning several values, such as get_loops, passes them all: wrap it in parentheses to pass the first)",
                 sig, shown, method and got - 1 or got)
    end
    return f(...)
  end
  util.wrapped[wrapper] = f
  return wrapper
end

--- util.strict for every function field of t whose name does not start with "_":
-- util.strict_all(t, "te.") names them "te.placeholder" etc.; method: they take self.
function util.strict_all(t, prefix, method)
  for _, k in ipairs(sorted_keys(t)) do
    local v = rawget(t, k)
    if type(k) == "string" and not k:match("^_") and type(v) == "function" then t[k] = util.strict(prefix .. k, v, method) end
  end
  return t
end

return util
