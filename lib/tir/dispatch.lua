--- tir.dispatch: kernel families dispatched by shape at call time (include/tir/dispatch.h).
--
--   local M = te.var("M")                                   -- a symbolic dimension
--   local A = te.placeholder({M, K}, "float16", "A") ...    -- one te program for every M
--   local fam = tir.dispatch.family(te.create_prim_func({A, B, C}), "matmul")
--   fam:add({M = 1}, gemv_rule, "SIMT, one warp per column block")  -- specialized: M fixed to 1
--   fam:add({M = 4096}, function(f) return tc_gemm.auto_tensorize(f) end)
--   fam:add({M = {17, 128}}, simt_rule)                    -- the symbolic kernel, for 17 <= M <= 128
--   fam:fallback(simt_rule)                                  -- the symbolic kernel, any M
--   print(fam:module())                                      -- the IRModule of the scheduled PrimFuncs
--   local disp = fam:build("cuda")                           -- every kernel built (NVRTC in parallel)
--   disp(a, b, c)                                            -- picks, checks, launches
--   print(disp)                                              -- its table (conditions, kernels, calls)
--
-- A rule is function(func, info) -> Schedule | PrimFunc [, note]: func is the family's function,
-- specialized to the entry's values when it has some (tir.specialize; loops over M then have
-- constant extents, which the tensor-core schedules need), info = {label, values = {M = 16},
-- ranges = {M = {17, 128}}}.  The note (or the one given to add) is shown in the table.
-- The first entry (in the order added) whose condition holds is taken, the fallback last; with
-- no fallback, values no entry takes are a RuntimeError listing every entry's condition.
local core = require("tir.core")
local util = require("tir.util")
local raise = util.raise

local D = {}

-- The family function's variables by name (shape variables of its parameters and integer
-- scalar parameters), in the order the C dispatcher numbers them.
local function signature_vars(func)
  local probe = core.dispatcher_new("probe", func)
  local vars, by_name = probe:vars(), {}
  for i, v in ipairs(vars) do by_name[v.name] = {var = v, index = i} end
  return vars, by_name
end

-- A variable given as a key: its name or the Var itself.
local function var_of(prim, by_name, key, func)
  local name = type(key) == "string" and key or (core.is_node(key, "Var") and key.name)
  local e = name and by_name[name]
  if not e or (type(key) ~= "string" and e.var ~= key) then
    local names = {}
    for n in pairs(by_name) do names[#names + 1] = n end
    table.sort(names)
    raise("ValueError", prim, "%s is not a symbolic dimension of %s (its variables: %s)", util.show(key), func.name,
          #names > 0 and table.concat(names, ", ") or "none")
  end
  return e
end

--- tir.specialize(func, {M = 16, ...} [, name]) -> PrimFunc: func with the variables fixed
-- (TVM's PrimFunc.specialize).  Keys: variables (tir.var / te.var) or their names; values:
-- integers (a buffer dimension at least 1).  Buffers whose shapes name them are rebuilt,
-- integer scalar parameters that are fixed leave the parameter list, the body is simplified.
-- Raises TypeError / ValueError naming the function and the variable.
function D.specialize(func, values, name)
  local P = "specialize"
  if type(func) == "table" and func.mod then func = func.mod end
  if not core.is_node(func, "PrimFunc") then raise("TypeError", P, "expected a PrimFunc, got %s", util.describe(func)) end
  if type(values) ~= "table" then raise("TypeError", P, "values must be a table {M = 16, ...}, got %s", util.show(values)) end
  if name ~= nil and type(name) ~= "string" then raise("TypeError", P, "name must be a string, got %s", util.show(name)) end
  local _, by_name = signature_vars(func)
  local list, keys = {}, {}
  for k in pairs(values) do keys[#keys + 1] = k end
  local function key_name(k) return tostring(core.is_node(k) and k.name or k) end
  table.sort(keys, function(a, b) return key_name(a) < key_name(b) end)
  for _, k in ipairs(keys) do
    local v = values[k]
    local e = var_of(P, by_name, k, func)
    if math.type(v) ~= "integer" then raise("TypeError", P, "the value of %s must be an integer, got %s", e.var.name, util.show(v)) end
    list[#list + 1] = e.var
    list[#list + 1] = v
  end
  return core.specialize(func, list, name)
end

-- The variables of func that are buffer dimensions (name -> "dimension d of buffer B"): they
-- take values >= 1 only (tir.specialize refuses 0; a range of the family reaching below 1 is refused).
local function dimension_vars(func)
  local out = {}
  local params = func.params
  for i = 1, #params do
    local b = params[i]
    if core.is_node(b, "Buffer") then
      for d = 1, #b.shape do
        local e = b.shape[d]
        if core.is_node(e, "Var") and not out[e.name] then out[e.name] = ("dimension %d of buffer %s"):format(d, b.name) end
      end
    end
  end
  return out
end

local Family = {}
Family.__index = Family

--- tir.dispatch.family(func [, name]) -> Family: a kernel family over func's symbolic dimensions.
-- func: a PrimFunc (e.g. te.create_prim_func of tensors with te.var dimensions).
function D.family(func, name)
  local P = "dispatch.family"
  if type(func) == "table" and func.mod then func = func.mod end
  if not core.is_node(func, "PrimFunc") then raise("TypeError", P, "expected a PrimFunc with symbolic dimensions, got %s", util.describe(func)) end
  if name ~= nil and type(name) ~= "string" then raise("TypeError", P, "name must be a string, got %s", util.show(name)) end
  local vars, by_name = signature_vars(func)
  if #vars == 0 then
    raise("ValueError", P, "%s has no symbolic dimensions (build its placeholders with te.var extents) -- there is nothing to dispatch on", func.name)
  end
  return setmetatable({func = func, name = name or func.name, vars = vars, by_name = by_name, entries = {}}, Family)
end

-- An independent copy of func (its own buffers and variables, through print -> load), so that the
-- functions of a family's IRModule share no objects (as a module's functions in TVM); func itself
-- when its text does not load back.
local function fresh_copy(func)
  local ok, g = pcall(function() return require("tir.script").parse(tostring(func)) end)
  if ok and core.is_node(g, "PrimFunc") and core.structural_equal(g, func) then return g end
  return func
end

local function value_text(v) return math.type(v) == "integer" and tostring(v) or ("%s_%s"):format(v[1] or "", v[2] or "") end

local function run_rule(P, rule, f, info)
  local r, note = rule(f, info)
  if type(r) == "table" and r.mod then r = r.mod end
  if not core.is_node(r, "PrimFunc") then
    raise("TypeError", P, "the rule of %s must return a Schedule or a PrimFunc, got %s", info.label, util.describe(r))
  end
  if note ~= nil and type(note) ~= "string" then raise("TypeError", P, "the rule of %s returned a note that is not a string: %s", info.label, util.show(note)) end
  return r, note
end

--- fam:add(when, rule [, note]): an entry.  when: {M = 16} (M fixed: the rule gets func
-- specialized to 16), {M = {17, 128}} (lo <= M <= hi; the rule gets the symbolic func; {17,
-- math.maxinteger} for M >= 17), or both for different variables; a variable that is a buffer
-- dimension takes values >= 1 (a range from 0 or an inverted one is a ValueError).  Returns the entry's index.
function Family:add(when, rule, note)
  local P = "dispatch.add"
  if type(when) ~= "table" or next(when) == nil then raise("TypeError", P, "when must be a table such as {M = 16} or {M = {17, 128}}, got %s", util.show(when)) end
  if type(rule) ~= "function" then raise("TypeError", P, "rule must be a function(func, info) returning a Schedule or PrimFunc, got %s", util.show(rule)) end
  if note ~= nil and type(note) ~= "string" then raise("TypeError", P, "note must be a string, got %s", util.show(note)) end
  local values, ranges, label_parts = {}, {}, {}
  local keys = {}
  for k in pairs(when) do keys[#keys + 1] = k end
  local function key_name(k) return tostring(core.is_node(k) and k.name or k) end
  table.sort(keys, function(a, b) return key_name(a) < key_name(b) end)
  for _, k in ipairs(keys) do
    local v = when[k]
    local e = var_of(P, self.by_name, k, self.func)
    local n = e.var.name
    if math.type(v) == "integer" then
      local dim = dimension_vars(self.func)[n]
      if dim and v < 1 then raise("ValueError", P, "%s = %d: %s is %s and must be at least 1", n, v, n, dim) end
      values[n] = v
    elseif type(v) == "table" and #v == 2 and util.count_keys(v) == 2 and math.type(v[1]) == "integer" and math.type(v[2]) == "integer" then
      if v[1] > v[2] then raise("ValueError", P, "the range {%d, %d} of %s is empty (lo > hi)", v[1], v[2], n) end
      local dim = dimension_vars(self.func)[n]
      if dim and v[1] < 1 then
        raise("ValueError", P, "the range {%d, %d} of %s starts below 1: %s is %s (a buffer extent is at least 1); start it at 1",
              v[1], v[2], n, n, dim)
      end
      ranges[n] = {v[1], v[2]}
    else
      raise("TypeError", P, "%s must be an integer (a specialization) or {lo, hi} (a range of the symbolic kernel), got %s", n, util.show(v))
    end
    label_parts[#label_parts + 1] = n .. value_text(v)
  end
  local label = self.name .. "_" .. table.concat(label_parts, "_")
  for _, e in ipairs(self.entries) do
    if e.label == label then raise("ValueError", P, "%s has an entry for %s already (%s)", self.name, table.concat(label_parts, ", "), label) end
  end
  local f = fresh_copy(self.func)
  if next(values) then f = D.specialize(f, values, label) end
  local info = {label = label, values = values, ranges = ranges}
  local sched, rnote = run_rule(P, rule, f, info)
  self.entries[#self.entries + 1] = {label = label, func = core.specialize(sched, {}, label), values = values, ranges = ranges,
                                     note = note or rnote}
  return #self.entries
end

--- fam:fallback(rule [, note]): the entry for values no other entry takes (the symbolic
-- kernel; at most one).
function Family:fallback(rule, note)
  local P = "dispatch.fallback"
  if type(rule) ~= "function" then raise("TypeError", P, "rule must be a function(func, info) returning a Schedule or PrimFunc, got %s", util.show(rule)) end
  if note ~= nil and type(note) ~= "string" then raise("TypeError", P, "note must be a string, got %s", util.show(note)) end
  for _, e in ipairs(self.entries) do
    if e.fallback then raise("ValueError", P, "%s has a fallback already (%s)", self.name, e.label) end
  end
  local label = self.name .. "_any"
  local sched, rnote = run_rule(P, rule, fresh_copy(self.func), {label = label, values = {}, ranges = {}})
  self.entries[#self.entries + 1] = {label = label, func = core.specialize(sched, {}, label), values = {}, ranges = {},
                                     note = note or rnote, fallback = true}
  return #self.entries
end

--- fam:module() -> IRModule holding the scheduled PrimFuncs (named after their entries).
function Family:module()
  local fs = {}
  for i, e in ipairs(self.entries) do fs[i] = e.func end
  return core.make("IRModule", {functions = fs})
end

local function new_dispatcher(self, mods)
  local d = core.dispatcher_new(self.name, self.func)
  for i, e in ipairs(self.entries) do
    local r = {}
    for n, lohi in pairs(e.ranges) do r[#r + 1] = {self.by_name[n].index, lohi[1], lohi[2]} end
    d:add(e.label, e.note, e.func, mods and mods[i] or nil, r, e.fallback or false)
  end
  return d
end

--- fam:dispatcher() -> Dispatcher whose entries are not built (interpret / simulate them).
function Family:dispatcher() return new_dispatcher(self, nil) end

--- fam:build(target [, opts]) -> Dispatcher: every entry built as tir.build would (NVRTC on
-- several threads, tir.build_many); opts as tir.build's ({compile = false}: CUDA C only, for
-- tir.simulate).  The first entry that fails to build raises its error, naming the entry.
function Family:build(target, opts)
  local tir = require("tir")
  if #self.entries == 0 then raise("ValueError", "dispatch.build", "%s has no entries (fam:add / fam:fallback)", self.name) end
  local fs = {}
  for i, e in ipairs(self.entries) do fs[i] = e.func end
  local mods = {}
  if opts and opts.compile == false then
    for i, f in ipairs(fs) do mods[i] = tir.build(f, target, opts) end
  else
    for i, r in ipairs(tir.build_many(fs, target, opts)) do
      if r.err then
        if type(r.err) == "table" then r.err.message = ("entry %s: %s"):format(self.entries[i].label, tostring(r.err.message)) end
        error(r.err, 0)
      end
      mods[i] = r.mod
    end
  end
  return new_dispatcher(self, mods)
end

function Family:__tostring()
  local t = {("tir.dispatch.family %s over %s: %d entr%s"):format(self.name, self.func.name, #self.entries, #self.entries == 1 and "y" or "ies")}
  for i, e in ipairs(self.entries) do t[#t + 1] = ("  %d  %s  %s"):format(i, e.label, e.note or "") end
  return table.concat(t, "\n")
end

-- Dispatcher methods written in Lua.
local DM = core.dispatcher_methods
-- C methods whose argument errors would be bare Lua strings (select/check/launch, the hot
-- path, raise tir.Errors themselves and stay unwrapped)
for _, k in ipairs({"add", "entry"}) do DM[k] = util.guarded("Dispatcher:" .. k, DM[k]) end

local function arg_list(prim, ...)
  local n = select("#", ...)
  local first = ...
  if n == 1 and type(first) == "table" and getmetatable(first) == nil then return first end
  return table.pack(...)
end

--- disp:interpret({a, b, c}) (or a, b, c): runs the entry these host arrays select on the CPU
-- interpreter (the oracle); returns the entry's index.
function DM.interpret(d, ...)
  local args = arg_list("Dispatcher:interpret", ...)
  local i = d:check(table.unpack(args, 1, args.n or #args))
  require("tir").interpret(d:entry(i).func, args)
  return i
end

--- disp:simulate({a, b, c} [, opts]): runs the selected entry's lowered kernels on the warp
-- simulator (tir.simulate; the entry's module when built, else its function); returns the
-- report and the entry's index.
function DM.simulate(d, args, opts)
  if type(args) ~= "table" then raise("TypeError", "Dispatcher:simulate", "args must be a table of arrays, got %s", util.show(args)) end
  local i = d:check(table.unpack(args))
  local e = d:entry(i)
  return require("tir").simulate(e.module or e.func, args, opts), i
end

--- disp:entries() -> list of {label, note, func, module, calls, when}
function DM.entries(d)
  local t = {}
  for i = 1, d:num_entries() do t[i] = d:entry(i) end
  return t
end

--- disp:time_evaluator(opts) -> f(args...) -> median seconds of the entry the arguments select
-- (the module's time_evaluator: CUDA events, no per-call synchronization, no dispatch cost).
function DM.time_evaluator(d, opts)
  return function(...)
    local i = d:check(...)
    local m = d:entry(i).module
    if not m then raise("RuntimeError", "Dispatcher:time_evaluator", "entry %s was not built", d:entry(i).label) end
    return m:time_evaluator(opts)(...)
  end
end

for _, k in ipairs({"specialize", "family"}) do D[k] = util.strict("dispatch." .. k, D[k]) end
for _, k in ipairs({"add", "fallback", "module", "dispatcher", "build"}) do Family[k] = util.strict("dispatch." .. k, Family[k], true) end

return D
