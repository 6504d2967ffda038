--- tir.json: the small JSON reader/writer tirlua's record files use (the tuning database,
-- bench/results.jsonl).  encode: nil/booleans/numbers/strings, tables with string keys
-- (objects, keys sorted so that lines are stable) and sequences (arrays); NaN and infinities
-- become null.  decode: any JSON text (RFC 8259), null as json.null.  Errors are Lua errors
-- naming the position.
local json = {}

json.null = setmetatable({}, {__tostring = function() return "null" end})

local ESC = {['"'] = '\\"', ['\\'] = '\\\\', ['\b'] = '\\b', ['\f'] = '\\f', ['\n'] = '\\n', ['\r'] = '\\r', ['\t'] = '\\t'}

local function quote(s)
  return '"' .. s:gsub('[%c"\\]', function(c) return ESC[c] or ("\\u%04x"):format(c:byte()) end) .. '"'
end

local function is_array(t)
  local n = #t
  if n == 0 then return next(t) == nil end
  for k in pairs(t) do
    if math.type(k) ~= "integer" or k < 1 or k > n then return false end
  end
  return true
end

local function enc(v, out, depth, o)
  local t = type(v)
  if v == nil or v == json.null then
    out[#out + 1] = "null"
  elseif t == "boolean" then
    out[#out + 1] = tostring(v)
  elseif t == "number" then
    if v ~= v or v == math.huge or v == -math.huge then
      out[#out + 1] = "null"
    elseif math.type(v) == "integer" then
      out[#out + 1] = tostring(v)
    else
      out[#out + 1] = (o.float_format or "%.17g"):format(v)
    end
  elseif t == "string" then
    out[#out + 1] = quote(v)
  elseif t == "table" then
    if depth > 64 then error("json.encode: nested too deeply (a cycle?)", 0) end
    if is_array(v) and next(v) ~= nil then
      out[#out + 1] = "["
      for i = 1, #v do
        if i > 1 then out[#out + 1] = ", " end
        enc(v[i], out, depth + 1, o)
      end
      out[#out + 1] = "]"
    else
      local keys, first = {}, depth == 0 and o.key_order or {}
      local listed = {}
      for _, k in ipairs(first) do listed[k] = true end
      for k in pairs(v) do
        if type(k) ~= "string" then error("json.encode: object keys must be strings, got " .. type(k), 0) end
        if not listed[k] then keys[#keys + 1] = k end
      end
      table.sort(keys)
      for i = #first, 1, -1 do table.insert(keys, 1, first[i]) end
      out[#out + 1] = "{"
      for i, k in ipairs(keys) do
        if i > 1 then out[#out + 1] = ", " end
        out[#out + 1] = quote(k) .. ": "
        enc(v[k], out, depth + 1, o)
      end
      out[#out + 1] = "}"
    end
  else
    error("json.encode: cannot encode a " .. t, 0)
  end
end

--- JSON text for v (one line).  opts: float_format (default "%.17g": round-trips doubles),
-- key_order (for a top-level object: these keys first, in this order, null when absent; the
-- others follow sorted).
function json.encode(v, opts)
  if opts ~= nil and type(opts) ~= "table" then error("json.encode: options must be a table, got " .. type(opts), 2) end
  for k, x in pairs(opts or {}) do
    local want = ({float_format = "string", key_order = "table"})[k]
    if not want then error("json.encode: unknown option " .. tostring(k) .. " (float_format, key_order)", 2) end
    if type(x) ~= want then error(("json.encode: option %s must be a %s, got %s"):format(k, want, type(x)), 2) end
  end
  local out = {}
  enc(v, out, 0, opts or {})
  return table.concat(out)
end

local function perr(s, i, what) error(("json.decode: %s at position %d"):format(what, i), 0) end

local function skip(s, i)
  return s:find("[^ \t\r\n]", i) or #s + 1
end

local dec

local function dec_string(s, i)
  local out, j = {}, i + 1
  while true do
    local c = s:sub(j, j)
    if c == "" then perr(s, i, "unterminated string") end
    if c == '"' then return table.concat(out), j + 1 end
    if c == "\\" then
      local e = s:sub(j + 1, j + 1)
      local simple = {['"'] = '"', ["\\"] = "\\", ["/"] = "/", b = "\b", f = "\f", n = "\n", r = "\r", t = "\t"}
      if simple[e] then
        out[#out + 1] = simple[e]
        j = j + 2
      elseif e == "u" then
        local hex = s:sub(j + 2, j + 5)
        if not hex:match("^%x%x%x%x$") then perr(s, j, "bad \\u escape") end
        local cp = tonumber(hex, 16)
        j = j + 6
        if cp >= 0xD800 and cp <= 0xDBFF and s:sub(j, j + 1) == "\\u" then -- a surrogate pair
          local lo = tonumber(s:sub(j + 2, j + 5), 16)
          if lo and lo >= 0xDC00 and lo <= 0xDFFF then
            cp = 0x10000 + (cp - 0xD800) * 0x400 + (lo - 0xDC00)
            j = j + 6
          end
        end
        out[#out + 1] = utf8.char(cp)
      else
        perr(s, j, "bad escape")
      end
    else
      out[#out + 1] = c
      j = j + 1
    end
  end
end

local MAX_DEPTH = 512 -- arrays/objects nested deeper are refused (a deep text overflowed the Lua stack)

dec = function(s, i, depth)
  depth = (depth or 0) + 1
  i = skip(s, i)
  local c = s:sub(i, i)
  if (c == "{" or c == "[") and depth > MAX_DEPTH then perr(s, i, ("nested deeper than %d levels"):format(MAX_DEPTH)) end
  if c == "{" then
    local obj = {}
    i = skip(s, i + 1)
    if s:sub(i, i) == "}" then return obj, i + 1 end
    while true do
      if s:sub(i, i) ~= '"' then perr(s, i, "expected a string key") end
      local k
      k, i = dec_string(s, i)
      i = skip(s, i)
      if s:sub(i, i) ~= ":" then perr(s, i, "expected ':'") end
      local v
      v, i = dec(s, i + 1, depth)
      obj[k] = v
      i = skip(s, i)
      local d = s:sub(i, i)
      if d == "}" then return obj, i + 1 end
      if d ~= "," then perr(s, i, "expected ',' or '}'") end
      i = skip(s, i + 1)
    end
  elseif c == "[" then
    local arr = {}
    i = skip(s, i + 1)
    if s:sub(i, i) == "]" then return arr, i + 1 end
    while true do
      local v
      v, i = dec(s, i, depth)
      arr[#arr + 1] = v
      i = skip(s, i)
      local d = s:sub(i, i)
      if d == "]" then return arr, i + 1 end
      if d ~= "," then perr(s, i, "expected ',' or ']'") end
      i = i + 1
    end
  elseif c == '"' then
    return dec_string(s, i)
  elseif s:sub(i, i + 3) == "true" then
    return true, i + 4
  elseif s:sub(i, i + 4) == "false" then
    return false, i + 5
  elseif s:sub(i, i + 3) == "null" then
    return json.null, i + 4
  else
    local num = s:match("^-?%d+%.?%d*[eE]?[-+]?%d*", i)
    if not num or num == "" or num == "-" then perr(s, i, "unexpected character") end
    local v = math.tointeger(tonumber(num)) or tonumber(num)
    if v == nil then perr(s, i, "bad number") end
    return v, i + #num
  end
end

--- The value of a JSON text; raises on malformed text or trailing characters.
function json.decode(s)
  if type(s) ~= "string" then error("json.decode: expected a string, got " .. type(s), 0) end
  local v, i = dec(s, 1)
  i = skip(s, i)
  if i <= #s then perr(s, i, "trailing characters") end
  return v
end

-- a call with more arguments than a function's parameters is an error (util.strict)
require("tir.util").strict_all(json, "json.")

return json
