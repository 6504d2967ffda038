--- tir.Schedule: TensorIR schedule primitives with loop/block handles and a trace.
--
--   local sch = tir.Schedule(func)
--   local blk = sch:get_block("C")
--   local i, j, k = sch:get_loops(blk)
--   local io, ii = sch:split(i, {nil, 16})       -- nil (or -1): inferred factor
--   sch:reorder(io, ii, j, k); sch:bind(io, "blockIdx.x")
--   print(sch.mod); print(sch:trace())
--
-- Handles (LoopRV, BlockRV) stay valid across unrelated steps; a loop replaced by a later
-- step (split, fuse, ...) fails with a clear message.  Every failure raises a tir.Error
-- (kind ScheduleError) that names the primitive and shows the IR with the loop/block marked.
local core = require("tir.core")

local Schedule = {}
local LoopRV = {__name = "tir.LoopRV"}
local BlockRV = {__name = "tir.BlockRV"}
LoopRV.__tostring = function(l) return ("LoopRV(%s)"):format(l.var.name) end
BlockRV.__tostring = function(b) return ("BlockRV(%s)"):format(b.name) end
LoopRV.__index = LoopRV
BlockRV.__index = BlockRV

local function loop_rv(var) return setmetatable({var = var}, LoopRV) end
local function block_rv(uid, name) return setmetatable({uid = uid, name = name}, BlockRV) end
Schedule.LoopRV, Schedule.BlockRV = LoopRV, BlockRV

local function describe(x)
  local mt = getmetatable(x)
  if mt == LoopRV then return "LoopRV" elseif mt == BlockRV then return "BlockRV" end
  if core.is_node(x) then return "tir." .. x.kind end
  return type(x)
end

local function check_loop(x, prim, i)
  if getmetatable(x) ~= LoopRV then
    error(("%s: argument %d must be a loop (LoopRV from get_loops/split/fuse), got %s"):format(prim, i, describe(x)), 3)
  end
  return x.var
end

local function check_block(self, x, prim, i)
  if type(x) == "string" then return self:get_block(x) end
  if getmetatable(x) ~= BlockRV then
    error(("%s: argument %d must be a block (BlockRV from get_block, or a block name), got %s"):format(prim, i, describe(x)), 3)
  end
  return x
end

-- The trace: each step is {name, inputs, outputs}; inputs hold handles and plain values.
local function record(self, name, inputs, outputs)
  self._trace[#self._trace + 1] = {name = name, inputs = inputs, outputs = outputs or {}}
end

function Schedule.new(func)
  if type(func) == "table" and getmetatable(func) == Schedule then func = func.func end
  if not (core.is_node(func, "PrimFunc") or core.is_node(func, "IRModule")) then
    error(("tir.Schedule: expected a PrimFunc (from te.create_prim_func or T.prim_func), got %s"):format(describe(func)), 2)
  end
  local state = core.ScheduleState(func)
  return setmetatable({_state = state, _orig = state:func(), _trace = {}}, Schedule)
end

Schedule.__index = function(self, k)
  if k == "mod" or k == "func" then return self._state:func() end
  return Schedule[k]
end
Schedule.__tostring = function(self) return tostring(self._state:func()) end

--- The block named `name` (a BlockRV).  Raises when there is none or several.
function Schedule:get_block(name)
  if type(name) ~= "string" then error(("get_block: expected a block name (string), got %s"):format(describe(name)), 2) end
  local uid = self._state:get_block(name)
  local b = block_rv(uid, name)
  record(self, "get_block", {name}, {b})
  return b
end

--- The loops above a block, outer to inner (multiple returns).
function Schedule:get_loops(block)
  block = check_block(self, block, "get_loops", 1)
  local vars = self._state:get_loops(block.uid)
  local out = {}
  for i, v in ipairs(vars) do out[i] = loop_rv(v) end
  record(self, "get_loops", {block}, out)
  return table.unpack(out)
end

--- Child blocks of a block or loop (a list of BlockRV).
function Schedule:get_child_blocks(x)
  local arg
  if getmetatable(x) == LoopRV then arg = x.var else arg = check_block(self, x, "get_child_blocks", 1).uid end
  local uids = self._state:get_child_blocks(arg)
  local out = {}
  for i, uid in ipairs(uids) do
    local br = self._state:block_realize(uid)
    out[i] = block_rv(uid, br.block.name)
  end
  record(self, "get_child_blocks", {x}, out)
  return out
end

--- The IR of a block or loop handle.
function Schedule:get(x)
  if getmetatable(x) == LoopRV then return self._state:loop(x.var, "get") end
  return self._state:block_realize(check_block(self, x, "get", 1).uid, "get").block
end

--- Splits a loop: factors is a list; one entry may be nil (or -1) and is inferred.
-- Returns the new loops outer to inner.
function Schedule:split(loop, factors)
  local v = check_loop(loop, "split", 1)
  if type(factors) ~= "table" then error(("split: factors must be a list like {nil, 16}, got %s"):format(describe(factors)), 2) end
  local n = 0
  for k in pairs(factors) do
    if math.type(k) ~= "integer" or k < 1 then error("split: factors must be a list", 2) end
    if k > n then n = k end
  end
  local f = {}
  for i = 1, n do
    local x = factors[i]
    if x == nil or x == false then f[i] = -1
    elseif math.type(x) == "integer" then f[i] = x
    elseif core.is_node(x, "IntImm") then f[i] = x.value
    else error(("split: factor %d must be an integer or nil, got %s"):format(i, describe(x)), 2) end
  end
  local vars = self._state:split(v, f)
  local out = {}
  for i, nv in ipairs(vars) do out[i] = loop_rv(nv) end
  record(self, "split", {loop, f}, out)
  return table.unpack(out)
end

--- Fuses perfectly nested loops (outer to inner) into one; returns it.
function Schedule:fuse(...)
  local loops = table.pack(...)
  local vars = {}
  for i = 1, loops.n do vars[i] = check_loop(loops[i], "fuse", i) end
  local v = self._state:fuse(table.unpack(vars, 1, loops.n))
  local out = loop_rv(v)
  record(self, "fuse", {table.unpack(loops, 1, loops.n)}, {out})
  return out
end

--- Reorders loops on one chain into the given order (outer to inner).
function Schedule:reorder(...)
  local loops = table.pack(...)
  local vars = {}
  for i = 1, loops.n do vars[i] = check_loop(loops[i], "reorder", i) end
  self._state:reorder(table.unpack(vars, 1, loops.n))
  record(self, "reorder", {table.unpack(loops, 1, loops.n)})
end

--- Binds a loop to a thread axis: blockIdx.x/y/z, threadIdx.x/y/z.
function Schedule:bind(loop, tag)
  local v = check_loop(loop, "bind", 1)
  if type(tag) ~= "string" then error(("bind: thread tag must be a string like \"threadIdx.x\", got %s"):format(describe(tag)), 2) end
  self._state:bind(v, tag)
  record(self, "bind", {loop, tag})
end

for _, name in ipairs({"unroll", "parallel", "vectorize"}) do
  Schedule[name] = function(self, loop)
    local v = check_loop(loop, name, 1)
    self._state[name](self._state, v)
    record(self, name, {loop})
  end
end

--- A new schedule with the same current function and trace (handles stay valid in both).
function Schedule:copy()
  local s = setmetatable({_state = self._state:copy(), _orig = self._orig, _trace = {}}, Schedule)
  for i, step in ipairs(self._trace) do s._trace[i] = step end
  return s
end

local function lua_value(v)
  if type(v) == "string" then return ("%q"):format(v) end
  if type(v) == "table" and getmetatable(v) == nil then
    local parts, n = {}, 0
    for k in pairs(v) do if k > n then n = k end end
    for i = 1, n do parts[i] = v[i] == -1 and "nil" or lua_value(v[i]) end
    return "{" .. table.concat(parts, ", ") .. "}"
  end
  return tostring(v)
end

--- The steps taken, as a Lua script over `sch` that replays them on the original function.
function Schedule:trace()
  local names, counter = {}, 0
  local function name_of(rv)
    if not names[rv] then
      names[rv] = (getmetatable(rv) == BlockRV and "b" or "l") .. counter
      counter = counter + 1
    end
    return names[rv]
  end
  local lines = {}
  for _, step in ipairs(self._trace) do
    local args = {}
    for i, a in ipairs(step.inputs) do
      local mt = getmetatable(a)
      args[i] = (mt == LoopRV or mt == BlockRV) and (names[a] or ("--[[unknown]] " .. tostring(a))) or lua_value(a)
    end
    local call = ("sch:%s(%s)"):format(step.name, table.concat(args, ", "))
    if #step.outputs > 0 then
      local outs = {}
      for i, o in ipairs(step.outputs) do outs[i] = name_of(o) end
      if step.name == "get_child_blocks" then
        lines[#lines + 1] = ("local %s = table.unpack(%s)"):format(table.concat(outs, ", "), call)
      else
        lines[#lines + 1] = ("local %s = %s"):format(table.concat(outs, ", "), call)
      end
    else
      lines[#lines + 1] = call
    end
  end
  return table.concat(lines, "\n") .. (#lines > 0 and "\n" or "")
end

--- Replays a trace script (from :trace()) on this schedule.
function Schedule:apply_trace(text)
  local env = setmetatable({sch = self}, {__index = _G})
  local chunk, err = load(text, "=trace", "t", env)
  if not chunk then error("apply_trace: " .. err, 2) end
  chunk()
  return self
end

--- The function the schedule started from.
function Schedule:original() return self._orig end

function Schedule:show() print(tostring(self._state:func())) end

return setmetatable(Schedule, {__call = function(_, func) return Schedule.new(func) end})
