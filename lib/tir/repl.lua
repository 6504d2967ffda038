--- tir.repl: what the tirlua REPL's line editor and `help` use.
--   complete(word) -> sorted list of completions of a word at the cursor: a global name
--     ("tir.sch" -> "tir.schedules", "tir.Schedule"), a field path ("tir.te.pl" ->
--     "tir.te.placeholder"), or a method after a colon ("sch:spl" -> "sch:split"); fields of
--     tables, of their metatables' __index tables, methods of tirlua objects (__methods) and the
--     fields of IR nodes.  The REPL calls it on TAB (readline's completion hook; libedit too).
--   help(x) -> prints what x is and its documentation: the `---` comment above a Lua
--     function's definition in lib/tir (the library's docstrings), a module's header comment and
--     its functions, an object's methods, an IR node's kind and fields.  Also the global `help`.
local M = {}

local KEYWORDS = {"and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto", "if", "in",
                  "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while"}

local function core() return package.loaded["tir.core"] end

-- The module a lazy proxy table stands for (tir.tune, tir.layout: a metatable __module), loaded;
-- v itself otherwise.
local function unproxy(v)
  local mt = type(v) == "table" and getmetatable(v)
  local name = type(mt) == "table" and rawget(mt, "__module")
  if type(name) == "string" then
    local ok, m = pcall(require, name)
    if ok and type(m) == "table" then return m end
  end
  return v
end

-- Names reachable from value v with '.' (fields), or ':' (methods).
local function names_of(v, colon)
  v = unproxy(v)
  local out, seen = {}, {}
  local function add(k, val)
    if type(k) == "string" and k:match("^[%a_][%w_]*$") and not seen[k] then
      if colon and type(val) ~= "function" then return end
      seen[k] = true
      out[#out + 1] = k
    end
  end
  local function add_table(t, depth)
    if type(t) ~= "table" or depth > 4 then return end
    for k, val in pairs(t) do add(k, val) end
    local mt = getmetatable(t)
    if type(mt) == "table" and type(rawget(mt, "__index")) == "table" and rawget(mt, "__index") ~= t then
      add_table(rawget(mt, "__index"), depth + 1)
    end
  end
  if type(v) == "table" then
    if not colon then add_table(v, 0) end
    local mt = getmetatable(v)
    if type(mt) == "table" then
      local idx = rawget(mt, "__index")
      if type(idx) == "table" then add_table(idx, 0) end
      if type(idx) == "function" then -- classes whose __index is a function over a method table
        for k, val in pairs(mt) do if type(k) == "string" and not k:match("^__") then add(k, val) end end
      end
    end
    if colon then for k, val in pairs(v) do add(k, val) end end
  elseif type(v) == "userdata" then
    local mt = getmetatable(v)
    if type(mt) == "table" then
      if type(rawget(mt, "__methods")) == "table" then add_table(rawget(mt, "__methods"), 0) end
      if type(rawget(mt, "__index")) == "table" then add_table(rawget(mt, "__index"), 0) end
    end
    local c = core()
    if not colon and c and c.node_fields then
      for _, f in ipairs(c.node_fields(v) or {}) do add(f, nil) end
    end
    if c and c.is_node and c.is_node(v) and c.node_methods then
      local ok, ms = pcall(c.node_methods, v)
      if ok and type(ms) == "table" then for k, val in pairs(ms) do add(k, val) end end
    end
  elseif type(v) == "string" then
    for k, val in pairs(string) do add(k, val) end
  end
  table.sort(out)
  return out
end

-- The value at a dotted path from the globals, or nil (no metamethods with effects are run:
-- only rawget and __index tables/functions of tirlua's own objects).
local function resolve(path)
  local v = _G
  for part in path:gmatch("[^%.]+") do
    if type(v) ~= "table" and type(v) ~= "userdata" then return nil end
    local ok, nv = pcall(function() return v[part] end)
    if not ok then return nil end
    v = nv
    if v == nil then return nil end
  end
  return v
end

--- Completions of word (see the header).
function M.complete(word)
  word = word or ""
  local base, sep, prefix = word:match("^(.-)([%.:])([%w_]*)$")
  local out = {}
  if not base then -- a bare name: globals and keywords
    local cands = {}
    for k in pairs(_G) do if type(k) == "string" then cands[#cands + 1] = k end end
    for _, k in ipairs(KEYWORDS) do cands[#cands + 1] = k end
    for _, k in ipairs(cands) do if k:sub(1, #word) == word then out[#out + 1] = k end end
    table.sort(out)
    return out
  end
  if base == "" or not base:match("^[%a_][%w_%.]*$") then return out end
  local v = resolve(base)
  if v == nil then return out end
  for _, k in ipairs(names_of(v, sep == ":")) do
    if k:sub(1, #prefix) == prefix then out[#out + 1] = base .. sep .. k end
  end
  return out
end

-- The `--` comment block right above line `line` of file `path` (the docstring of a function
-- defined there), or nil.
local header_mentions
local function comment_above(path, line)
  local f = io.open(path, "r")
  if not f then return nil end
  local lines = {}
  for l in f:lines() do lines[#lines + 1] = l end
  f:close()
  local doc = {}
  local i = line - 1
  while i >= 1 and lines[i]:match("^%s*%-%-") do
    table.insert(doc, 1, (lines[i]:gsub("^%s*%-%-%-?%s?", "")))
    i = i - 1
  end
  if #doc == 0 then return nil end
  return table.concat(doc, "\n")
end

-- The header comment of a module file (its first comment block).
local function file_header(path)
  local f = io.open(path, "r")
  if not f then return nil end
  local doc = {}
  for l in f:lines() do
    if l:match("^%-%-") then doc[#doc + 1] = (l:gsub("^%-%-%-?%s?", "")) elseif #doc > 0 or l:match("%S") then break end
  end
  f:close()
  return #doc > 0 and table.concat(doc, "\n") or nil
end

-- For a function without a comment of its own: the lines of its file's header comment that
-- show its name being called (init.lua documents tir.build(...) in its header).
header_mentions = function(path, line)
  local f = io.open(path, "r")
  if not f then return nil end
  local src, n, def = {}, 0, nil
  for l in f:lines() do
    n = n + 1
    src[n] = l
    if n == line then def = l end
  end
  f:close()
  local name = def and def:match("function%s+([%w_%.:]+)%s*%(")
  if not name then return nil end
  local short = name:gsub(":", ".")
  local hits = {}
  for i = 1, n do
    local l = src[i]
    if not l:match("^%-%-") then break end
    if l:find(short .. "(", 1, true) then hits[#hits + 1] = (l:gsub("^%-%-%-?%s?", "")) end
  end
  return #hits > 0 and table.concat(hits, "\n") or nil
end

-- The file a module table was loaded from (searching package.loaded by identity).
local function module_file(t)
  for name, mod in pairs(package.loaded) do
    if mod == t and type(name) == "string" then
      local path = package.searchpath(name, package.path)
      if path then return name, path end
    end
  end
  return nil
end

--- The documentation text of x (see the header).
local function a_or_an(word) return (tostring(word):match("^[aeiouAEIOU]") and "an " or "a ") .. tostring(word) end

function M.doc(x)
  x = unproxy(x)
  local t = type(x)
  if t == "function" then
    local util = package.loaded["tir.util"]
    while util and util.wrapped and util.wrapped[x] do x = util.wrapped[x] end -- argument-checking wrappers
    local info = debug.getinfo(x, "S")
    if info.what == "C" then
      return "a function written in C (tir.core, src/lua_bindings/); the header of lib/tir/init.lua, the README and " ..
             "docs/BUILTINS.md describe the tir.* expression helpers"
    end
    local path = info.source:match("^@(.*)$")
    local text = path and comment_above(path, info.linedefined)
    if not text and path then text = header_mentions(path, info.linedefined) end
    local where = ("%s:%d"):format(path or info.short_src, info.linedefined)
    return (text or "no documentation comment") .. "\n(defined at " .. where .. ")"
  elseif t == "table" then
    local name, path = module_file(x)
    local parts = {}
    local mt = getmetatable(x)
    local function public(list)
      local out = {}
      for _, k in ipairs(list) do if not k:match("^_") then out[#out + 1] = k end end
      return out
    end
    if path then
      parts[#parts + 1] = file_header(path) or ("module " .. name)
      local fns = public(names_of(x, false))
      if #fns > 0 then parts[#parts + 1] = "fields: " .. table.concat(fns, ", ") end
    elseif mt then -- an object: its class and methods
      local cname = rawget(mt, "__name")
      if not cname then
        local cls_name, cls_path = module_file(mt)
        cname = cls_name or "object"
        if cls_path then parts[#parts + 1] = file_header(cls_path) end
      end
      table.insert(parts, 1, a_or_an(cname))
      local ms = public(names_of(x, true))
      if #ms > 0 then parts[#parts + 1] = "methods: " .. table.concat(ms, ", ") end
    else
      local fns = public(names_of(x, false))
      parts[#parts + 1] = "a table" .. (#fns > 0 and (" with fields: " .. table.concat(fns, ", ")) or "")
    end
    return table.concat(parts, "\n")
  elseif t == "userdata" then
    local c = core()
    local parts = {}
    if c and c.is_node and c.is_node(x) then
      parts[#parts + 1] = ("an IR node of kind %s"):format(tostring(x.kind or "?"))
      local f = c.node_fields(x)
      if f and #f > 0 then parts[#parts + 1] = "fields: " .. table.concat(f, ", ") end
    else
      local mt = getmetatable(x)
      parts[#parts + 1] = a_or_an(mt and rawget(mt, "__name") or "userdata")
    end
    local ms = names_of(x, true)
    if #ms > 0 then parts[#parts + 1] = "methods: " .. table.concat(ms, ", ") end
    return table.concat(parts, "\n")
  end
  return ("%s: %s"):format(a_or_an(t), tostring(x))
end

--- Prints M.doc(x).  x may also be a name: help("tir.build") documents tir.build (a name that
-- names nothing says so).
function M.help(x)
  if type(x) == "string" and x:match("^[%a_][%w_]*[%w_.:]*$") then
    local v = resolve((x:gsub(":", ".")))
    if v == nil then
      print(("help: '%s' names nothing (a misspelled name?)"):format(x))
      return
    end
    x = v
  end
  if x == nil then
    print("help(x) shows the documentation of a tirlua function, module or object, e.g. help(tir.build), help(tir.te),\n" ..
          "help(sch).  TAB completes names (tir.<TAB>, sch:<TAB>).  The README and docs/ describe the rest.")
    return
  end
  print(M.doc(x))
end

return M
