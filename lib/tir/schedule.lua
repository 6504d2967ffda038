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
local util = require("tir.util")
local raise = util.raise
local annotations = require("tir.annotations")

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

-- A value for an error message: numbers are shown (a float says so: 2^31 is a float).
local function show(x)
  if type(x) == "number" then return util.show(x) end
  return describe(x)
end

local function check_loop(x, prim, i)
  if getmetatable(x) ~= LoopRV then
    raise("TypeError", prim, "argument %d must be a loop (LoopRV from get_loops/split/fuse), got %s", i, describe(x))
  end
  if not core.is_node(x.var, "Var") then -- a handle built by hand
    raise("TypeError", prim, "argument %d is not a valid LoopRV (its loop variable is %s); use the handles get_loops/split/fuse return",
          i, describe(x.var))
  end
  return x.var
end

local function check_block(self, x, prim, i)
  if type(x) == "string" then return self:get_block(x) end
  if getmetatable(x) ~= BlockRV then
    raise("TypeError", prim, "argument %d must be a block (BlockRV from get_block, or a block name), got %s", i, describe(x))
  end
  if math.type(x.uid) ~= "integer" then -- a handle built by hand
    raise("TypeError", prim, "argument %d is not a valid BlockRV (its uid is %s); use the handles get_block returns", i, describe(x.uid))
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
    raise("TypeError", "Schedule", "expected a PrimFunc (from te.create_prim_func or T.prim_func), got %s", describe(func))
  end
  if core.is_node(func, "IRModule") and #func.functions ~= 1 then
    -- TVM schedules one function of a module at a time (work_on); so does tirlua
    raise("ValueError", "Schedule", "the module holds %d functions; schedule one of them: tir.Schedule(func)", #func.functions)
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
  if type(name) ~= "string" then raise("TypeError", "get_block", "expected a block name (string), got %s", describe(name)) end
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

--- The output blocks under a scope block (TVM get_output_blocks): the blocks below it, in
-- program order, that write a buffer not allocated within the scope (for "root": the blocks
-- writing the function's outputs).  scope: a BlockRV or a block name.
function Schedule:get_output_blocks(scope)
  scope = check_block(self, scope, "get_output_blocks", 1)
  local top = self:get(scope)
  local allocated, found = {}, {}
  local function walk(s, collect)
    if s == nil then return end
    local k = s.kind
    if k == "SeqStmt" then for i = 1, #s.seq do walk(s.seq[i], collect) end
    elseif k == "For" or k == "LetStmt" or k == "AttrStmt" or k == "Allocate" then walk(s.body, collect)
    elseif k == "IfThenElse" then walk(s.then_case, collect); walk(s.else_case, collect)
    elseif k == "BlockRealize" then
      local b = s.block
      if collect then
        for i = 1, #b.writes do
          if not allocated[b.writes[i].buffer] then found[#found + 1] = b break end
        end
      else
        for i = 1, #b.alloc_buffers do allocated[b.alloc_buffers[i]] = true end
      end
      walk(b.body, collect)
    end
  end
  for i = 1, #top.alloc_buffers do allocated[top.alloc_buffers[i]] = true end
  walk(top.body, false)
  walk(top.body, true)
  local out = {}
  for i, b in ipairs(found) do out[i] = block_rv(b.uid, b.name) end
  record(self, "get_output_blocks", {scope}, out)
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
  if type(factors) ~= "table" then raise("TypeError", "split", "factors must be a list like {nil, 16}, got %s", describe(factors)) end
  local n = 0
  for k in pairs(factors) do
    if math.type(k) ~= "integer" or k < 1 then raise("TypeError", "split", "factors must be a list like {nil, 16}") end
    if k > n then n = k end
  end
  -- each factor is checked first: {0, nil} has one entry, but the problem is the 0
  for i = 1, n do
    local x = factors[i]
    if core.is_node(x, "IntImm") then x = x.value end
    if x ~= nil and x ~= false then
      if math.type(x) ~= "integer" then
        raise("TypeError", "split", "factor %d must be an integer or nil, got %s", i, show(x))
      elseif x <= 0 and x ~= -1 then
        -- a ScheduleError, as TVM's split (NonPositiveFactorError)
        raise("ScheduleError", "split", "factor %d is %d; factors must be positive (nil or -1 marks the inferred one)", i, x)
      end
    end
  end
  if n > 64 then raise("ValueError", "split", "got %d factors; split takes at most 64", n) end
  if n < 2 then
    raise("ValueError", "split",
          "got %d factor(s); at least 2 are needed. Lua drops trailing nils, so {16, nil} has one entry: write {16, -1} " ..
          "(-1 or nil marks the inferred factor; {nil, 16} works as it stands)", n)
  end
  local f = {}
  for i = 1, n do
    local x = factors[i]
    if x == nil or x == false then f[i] = -1
    elseif math.type(x) == "integer" then f[i] = x
    elseif core.is_node(x, "IntImm") then f[i] = x.value
    else raise("TypeError", "split", "factor %d must be an integer or nil, got %s", i, show(x)) end
  end
  local vars = self._state:split(v, f)
  local out = {}
  for i, nv in ipairs(vars) do out[i] = loop_rv(nv) end
  record(self, "split", {loop, f}, out)
  return table.unpack(out)
end

-- fuse / merge: loops in, one loop out (the core primitive of that name), recorded
local function loops_to_loop(self, prim, ...)
  local loops = table.pack(...)
  local vars = {}
  for i = 1, loops.n do vars[i] = check_loop(loops[i], prim, i) end
  local v = self._state[prim](self._state, table.unpack(vars, 1, loops.n))
  local out = loop_rv(v)
  record(self, prim, {table.unpack(loops, 1, loops.n)}, {out})
  return out
end

--- Merges sibling loops of one extent (items of one sequence, given in order) into one loop
-- standing where the last one stood, their bodies in order (TVM's merge); returns it.  Refused
-- when blocks of two of the loops (or of an earlier loop and the statements it moves past)
-- use a buffer one of them writes.
function Schedule:merge(...) return loops_to_loop(self, "merge", ...) end

--- Fuses perfectly nested loops (outer to inner) into one; returns it.
function Schedule:fuse(...) return loops_to_loop(self, "fuse", ...) end

--- Reorders loops on one chain into the given order (outer to inner).
function Schedule:reorder(...)
  local loops = table.pack(...)
  if loops.n < 2 then raise("ValueError", "reorder", "give at least two loops (outer to inner in the new order), got %d", loops.n) end
  local vars = {}
  for i = 1, loops.n do vars[i] = check_loop(loops[i], "reorder", i) end
  self._state:reorder(table.unpack(vars, 1, loops.n))
  record(self, "reorder", {table.unpack(loops, 1, loops.n)})
end

--- Binds a loop to a thread axis: blockIdx.x/y/z, threadIdx.x/y/z.
function Schedule:bind(loop, tag)
  local v = check_loop(loop, "bind", 1)
  if type(tag) ~= "string" then raise("TypeError", "bind", "thread tag must be a string like \"threadIdx.x\", got %s", describe(tag)) end
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

local function block_list(self, uids)
  local out = {}
  for i, uid in ipairs(uids) do out[i] = block_rv(uid, self._state:block_realize(uid).block.name) end
  return out
end

local function check_bool(x, prim, what)
  if x ~= nil and type(x) ~= "boolean" then raise("TypeError", prim, "%s must be a boolean, got %s", what, describe(x)) end
  return x or false
end

local function check_int(x, prim, what)
  if math.type(x) ~= "integer" then raise("TypeError", prim, "%s must be an integer, got %s", what, show(x)) end
  if x < -0x80000000 or x > 0x7fffffff then
    raise("ValueError", prim, "%s is %d, outside the 32-bit integer range", what, x)
  end
  return x
end

--- Blocks of the same scope that write what `block` reads or writes before it runs / read or
-- write what it writes after it (TVM GetProducers/GetConsumers: RAW and WAW dependences; a
-- later writer of what it reads is no producer).
function Schedule:get_producers(block)
  block = check_block(self, block, "get_producers", 1)
  local out = block_list(self, self._state:get_producers(block.uid))
  record(self, "get_producers", {block}, out)
  return out
end
function Schedule:get_consumers(block)
  block = check_block(self, block, "get_consumers", 1)
  local out = block_list(self, self._state:get_consumers(block.uid))
  record(self, "get_consumers", {block}, out)
  return out
end

--- Moves a producer block under `loop`, regenerating its loops to produce exactly what the
-- consumers under the loop need.  preserve_unit_loops keeps extent-1 loops; index picks the
-- position among the loop body's statements (-1: before the first consumer, -2: after the
-- last producer, as TVM).
function Schedule:compute_at(block, loop, preserve_unit_loops, index)
  block = check_block(self, block, "compute_at", 1)
  local v = check_loop(loop, "compute_at", 2)
  self._state:compute_at(block.uid, v, check_bool(preserve_unit_loops, "compute_at", "preserve_unit_loops"),
                         index and check_int(index, "compute_at", "index") or -1)
  record(self, "compute_at", {block, loop, preserve_unit_loops or false, index or -1})
end

--- Moves a consumer block under `loop`, consuming exactly what the producers under it write;
-- preserve_unit_loops and index as compute_at.  prior_producers (default false; beyond TVM,
-- which refuses): producers that run entirely before the loop are allowed too, read like inputs.
function Schedule:reverse_compute_at(block, loop, preserve_unit_loops, index, prior_producers)
  block = check_block(self, block, "reverse_compute_at", 1)
  local v = check_loop(loop, "reverse_compute_at", 2)
  self._state:reverse_compute_at(block.uid, v, check_bool(preserve_unit_loops, "reverse_compute_at", "preserve_unit_loops"),
                                 index and check_int(index, "reverse_compute_at", "index") or -1,
                                 check_bool(prior_producers, "reverse_compute_at", "prior_producers"))
  local a = {block, loop, preserve_unit_loops or false, index or -1}
  if prior_producers then a[5] = true end
  record(self, "reverse_compute_at", a)
end

--- Inlines a producer's expression into its consumers (and removes it).
function Schedule:compute_inline(block)
  block = check_block(self, block, "compute_inline", 1)
  self._state:compute_inline(block.uid)
  record(self, "compute_inline", {block})
end

--- Folds a consumer (e.g. an epilogue) into its single producer (and removes it).
-- prior_producers (default false; beyond TVM, which refuses): a consumer with several producers
-- is folded into the last one, the others running before it.
function Schedule:reverse_compute_inline(block, prior_producers)
  block = check_block(self, block, "reverse_compute_inline", 1)
  self._state:reverse_compute_inline(block.uid, check_bool(prior_producers, "reverse_compute_inline", "prior_producers"))
  record(self, "reverse_compute_inline", prior_producers and {block, true} or {block})
end

-- consumer_blocks of cache_read/cache_write: nil or a list of blocks (BlockRVs or names).
-- Returns their uids and handles.
local function consumer_list(self, consumer_blocks, prim)
  local uids, rvs = {}, {}
  if consumer_blocks ~= nil and (type(consumer_blocks) ~= "table" or getmetatable(consumer_blocks) ~= nil or
                                 #consumer_blocks ~= util.count_keys(consumer_blocks)) then
    raise("TypeError", prim, "consumer_blocks must be a list of blocks (BlockRVs or names), e.g. {\"C\"}, got %s",
          describe(consumer_blocks))
  end
  for i, c in ipairs(consumer_blocks or {}) do
    rvs[i] = check_block(self, c, prim, 4)
    uids[i] = rvs[i].uid
  end
  return uids, rvs
end

-- A buffer index of cache_read/cache_write: an integer into the block's reads/writes
-- (0-based), or the buffer's name (TVM accepts int | str | Buffer).
local function buffer_index(self, block, index, kind, prim)
  if type(index) == "string" then
    local blk = self._state:block_realize(block.uid, prim).block
    local regions = kind == "read" and blk.reads or blk.writes
    local names = {}
    for i = 1, #regions do
      if regions[i].buffer.name == index then return i - 1 end
      names[i] = regions[i].buffer.name
    end
    raise("ValueError", prim, "block '%s' %s no buffer named '%s' (it %s %s)", blk.name, kind == "read" and "reads" or "writes",
          index, kind == "read" and "reads" or "writes", #names > 0 and table.concat(names, ", ") or "nothing")
  end
  return check_int(index, prim, kind .. "_buffer_index")
end

-- cache_read (kind "read") / cache_write (kind "write"): the arguments checked, the core
-- called, the step recorded; returns the new block.
local function cache_stage(self, kind, block, index, scope, consumer_blocks)
  local prim = "cache_" .. kind
  block = check_block(self, block, prim, 1)
  local idx = buffer_index(self, block, index, kind, prim)
  if type(scope) ~= "string" then
    raise("TypeError", prim, "storage scope must be a string such as \"%s\"", kind == "read" and "shared" or "local")
  end
  local uids, rvs = consumer_list(self, consumer_blocks, prim)
  local uid = self._state[prim](self._state, block.uid, idx, scope, uids)
  local out = block_rv(uid, self._state:block_realize(uid).block.name)
  record(self, prim, #rvs > 0 and {block, index, scope, rvs} or {block, index, scope}, {out})
  return out
end

--- Copies the block's read buffer `index` (0-based, into its reads, or the buffer's name)
-- into `scope`; readers (or just consumer_blocks) read the copy.  Returns the copy block.
-- As in TVM, a block with an init does not read what it writes: a matmul block's reads are
-- A, B.
function Schedule:cache_read(block, index, scope, consumer_blocks)
  return cache_stage(self, "read", block, index, scope, consumer_blocks)
end

--- The block writes a cache in `scope` (write buffer `index`, 0-based, or its name), copied
-- back by a new block (returned).  consumer_blocks (TVM): those consumers read the cache,
-- the others the original buffer; the copy goes before the first of the others.
function Schedule:cache_write(block, index, scope, consumer_blocks)
  return cache_stage(self, "write", block, index, scope, consumer_blocks)
end

--- Changes the scope of the block's write buffer `index` (0-based, or its name).
function Schedule:set_scope(block, index, scope)
  block = check_block(self, block, "set_scope", 1)
  if type(scope) ~= "string" then
    raise("TypeError", "set_scope", "scope must be a storage scope name such as \"shared\" or \"local\", got %s", util.show(scope))
  end
  self._state:set_scope(block.uid, buffer_index(self, block, index, "write", "set_scope"), scope)
  record(self, "set_scope", {block, index, scope})
end

--- Pads the stride of `axis` of the block's write buffer `index` so that
-- stride % factor == offset (applied when the buffer is allocated).
function Schedule:storage_align(block, index, axis, factor, offset)
  block = check_block(self, block, "storage_align", 1)
  self._state:storage_align(block.uid, check_int(index, "storage_align", "buffer_index"), check_int(axis, "storage_align", "axis"),
                            check_int(factor, "storage_align", "factor"), check_int(offset, "storage_align", "offset"))
  record(self, "storage_align", {block, index, axis, factor, offset})
end

--- Gives the block's written shared buffer `index` an XOR-swizzled physical layout instead of
-- padding: mode "32B", "64B", "128B" (the PTX ISA's shared-memory swizzling modes of TMA and
-- wgmma), {B, M, S} (CuTe's Swizzle<B, M, S> on byte offsets: the B bits from bit M + S are
-- XORed into bits M..M+B-1) or "none".  The buffer keeps its shape and indices (the
-- interpreter and tensorized views are unaffected); lowering applies the swizzle to the
-- addresses of the CUDA C and the simulator (include/tir/swizzle.h, docs/TENSOR_CORES.md).
-- tir.layout.swizzle_for_rows(row_bytes) gives the mode that makes ldmatrix conflict-free.
function Schedule:storage_swizzle(block, index, mode)
  block = check_block(self, block, "storage_swizzle", 1)
  self._state:storage_swizzle(block.uid, check_int(index, "storage_swizzle", "buffer_index"), mode)
  record(self, "storage_swizzle", {block, index, mode})
end

-- An index map given as a Lua function of the buffer's indices, returning the new indices
-- (several returns or one list).  Returns vars, exprs and its text (a Lua function, for traces).
-- opts (optional): dtype of the inputs (default int32); arity_in_core: a function taking
-- other than ndim parameters gets as many inputs, for the core to report (as a ScheduleError).
local function index_map(fn, ndim, prim, opts)
  opts = opts or {}
  if type(fn) ~= "function" then
    raise("TypeError", prim, "the index map must be a Lua function of the %d indices, e.g. function(i, j) return j, i end", ndim)
  end
  local info = debug.getinfo(fn, "u")
  if not info.isvararg and info.nparams ~= ndim then
    if opts.arity_in_core then
      ndim = info.nparams
    else
      raise("ValueError", prim, "the index map takes %d parameter(s), but the buffer has %d dimension(s)", info.nparams, ndim)
    end
  end
  local vars, names = {}, {}
  for d = 1, ndim do
    local name = debug.getlocal(fn, d)
    if not name or name:sub(1, 1) == "(" then name = "i" .. (d - 1) end
    names[d] = name
    vars[d] = core.var(name, opts.dtype or "int32")
  end
  local ok, r = pcall(function() return table.pack(fn(table.unpack(vars, 1, ndim))) end)
  if not ok then raise("ValueError", prim, "the index map raised an error: %s", tostring(r)) end
  local outs = r
  if r.n == 1 and type(r[1]) == "table" and not core.is_node(r[1]) then outs = r[1]; outs.n = #outs end
  local exprs, texts = {}, {}
  for o = 1, outs.n do
    local e = outs[o]
    if math.type(e) == "integer" then e = core.const(e, "int32") end
    if not core.is_node(e) then
      raise("TypeError", prim, "the index map's output %d must be an integer expression, got %s", o, describe(e))
    end
    exprs[o] = e
    texts[o] = tostring(e)
  end
  if #exprs == 0 then raise("ValueError", prim, "the index map returns no indices") end
  local text = ("function(%s) return %s end"):format(table.concat(names, ", "), table.concat(texts, ", "))
  return vars, exprs, text
end

-- A buffer of a block named as {"read", i} / {"write", i} (0-based, as in TVM) or by name.
local function block_buffer(self, block, buffer, prim)
  local blk = self._state:block_realize(block.uid, prim).block
  if type(buffer) == "string" then
    for _, kind in ipairs({"write", "read"}) do
      local regions = kind == "write" and blk.writes or blk.reads
      for i = 1, #regions do
        if regions[i].buffer.name == buffer then return kind == "write", i - 1, blk, regions[i].buffer end
      end
    end
    raise("ValueError", prim, "block '%s' neither reads nor writes a buffer named '%s'", blk.name, buffer)
  end
  if type(buffer) ~= "table" or (buffer[1] ~= "read" and buffer[1] ~= "write") or math.type(buffer[2]) ~= "integer" then
    raise("TypeError", prim, "the buffer must be {\"read\", index}, {\"write\", index} or a buffer name, got %s", describe(buffer))
  end
  local regions = buffer[1] == "write" and blk.writes or blk.reads
  local r = regions[buffer[2] + 1]
  return buffer[1] == "write", buffer[2], blk, r and r.buffer
end

--- Changes the layout of a buffer the block reads or writes (TVM transform_layout):
--   sch:transform_layout(block, {"write", 0}, function(i, j) return j, i end)           -- transpose
--   sch:transform_layout(block, "A_shared", function(i, j) return i, j // 8, (j % 8) ~ (i % 8) end)  -- XOR swizzle
-- buffer: {"read", i}, {"write", i} (0-based) or the buffer's name.  The map must be one-to-one
-- and non-negative over the buffer's shape (checked exactly); the new shape is the map's range.
-- A function parameter takes the new shape in the signature (as TVM): the function, and the
-- module built from it, then expect that argument in the new layout.
function Schedule:transform_layout(block, buffer, fn)
  block = check_block(self, block, "transform_layout", 1)
  local is_write, index, blk, buf = block_buffer(self, block, buffer, "transform_layout")
  local ndim = buf and #buf.shape or 0
  if not buf then
    raise("ValueError", "transform_layout", "block '%s' has no %s buffer %d", blk.name, is_write and "write" or "read", index)
  end
  local vars, exprs, text = index_map(fn, ndim, "transform_layout")
  self._state:transform_layout(block.uid, is_write, index, vars, exprs)
  record(self, "transform_layout", {block, {is_write and "write" or "read", index}, setmetatable({text = text}, {__tostring = function(t) return t.text end})})
end

--- Remaps a block's iteration space (TVM transform_block_layout):
--   sch:transform_block_layout(block, function(i, j) return i * 128 + j end)   -- fuse
--   sch:transform_block_layout(block, function(i, j) return j, i end)          -- permute
--   sch:transform_block_layout("conv", function(n, h, w, co, rh, rw, rc)       -- implicit GEMM
--     return n * 49 + h * 7 + w, co, rh * 21 + rw * 3 + rc end)
-- fn takes the block's iteration variables and returns the new ones (v0, v1, ...), each
-- over [0, extent), bound to new serial loops ax0, ax1, ...; the block's body uses the
-- map's inverse.  The map must be a bijective affine map of the iteration domain (sums of
-- splits of the inputs, e.g. fusions, permutations, i // 4 and i % 4), each output of one
-- kind (spatial or reduction).  The block must be the only block under perfectly nested
-- serial loops from 0 that are its iteration variables' bindings, in order.  Errors are
-- ScheduleErrors naming the rule (src/core/schedule/primitive/transform_block_layout.c).
function Schedule:transform_block_layout(block, fn)
  block = check_block(self, block, "transform_block_layout", 1)
  local blk = self._state:block_realize(block.uid, "transform_block_layout").block
  local ivs = blk.iter_vars
  local dtype = #ivs > 0 and ivs[1].var.dtype or "int32"
  local vars, exprs, text = index_map(fn, #ivs, "transform_block_layout", {dtype = dtype, arity_in_core = true})
  self._state:transform_block_layout(block.uid, vars, exprs)
  record(self, "transform_block_layout", {block, setmetatable({text = text}, {__tostring = function(t) return t.text end})})
end

--- Replaces a loop nest by a registered tensor intrinsic (tir.TensorIntrin); returns the new
-- block (named "<block>_o", annotated tensor_intrin = name).  x: the nest's outermost loop, or
-- a block (then its innermost loops, as many as desc has).  The nest must match desc exactly
-- (loop extents, iteration kinds, body, buffer dtypes and scopes, covered regions); a mismatch
-- raises a ScheduleError saying what differs.  Reductions: decompose_reduction first.
function Schedule:tensorize(x, name)
  if type(name) ~= "string" then raise("TypeError", "tensorize", "argument 2 must be the intrinsic's name (a string), got %s", describe(name)) end
  local uid
  if getmetatable(x) == LoopRV then
    uid = self._state:tensorize(x.var, nil, name)
  else
    local b = check_block(self, x, "tensorize", 1)
    uid = self._state:tensorize(nil, b.uid, name)
  end
  local out = block_rv(uid, self._state:block_realize(uid).block.name)
  record(self, "tensorize", {x, name}, {out})
  return out
end

--- Splits a reduction block's init into a block placed before `loop`; returns the init block.
function Schedule:decompose_reduction(block, loop)
  block = check_block(self, block, "decompose_reduction", 1)
  local v = check_loop(loop, "decompose_reduction", 2)
  local uid = self._state:decompose_reduction(block.uid, v)
  local out = block_rv(uid, self._state:block_realize(uid).block.name)
  -- the original block was renamed <name>_update
  block.name = self._state:block_realize(block.uid).block.name
  record(self, "decompose_reduction", {block, loop}, {out})
  return out
end

--- Makes the subtree under `loop` (one block through perfectly nested loops) a new block
-- "<name>_o" (TVM blockize): its iteration variables are the outer part of the block's
-- bindings (over the loops outside `loop`), the block keeps the inner part and its handle.
-- A reduction's init moves to the new block.  preserve_unit_iters (default true) keeps
-- iteration variables bound to loops of extent 1.  Returns the new block.
-- target may also be a list of blocks (BlockRVs or names; TVM blockize(List[BlockRV])):
-- consecutive statements under their lowest common ancestor, each a loop nest around one
-- of them, become the body of a new block "outer_<names>_" binding the loops above.
function Schedule:blockize(target, preserve_unit_iters)
  if preserve_unit_iters == nil then preserve_unit_iters = true end
  if type(preserve_unit_iters) ~= "boolean" then
    raise("TypeError", "blockize", "preserve_unit_iters must be a boolean, got %s", describe(preserve_unit_iters))
  end
  local uid
  if type(target) == "table" and getmetatable(target) == nil then
    if #target == 0 or #target ~= util.count_keys(target) then
      raise("TypeError", "blockize", "a list of blocks must be a non-empty list of BlockRVs or names, got %s", describe(target))
    end
    local uids, rvs = {}, {}
    for i, b in ipairs(target) do
      rvs[i] = check_block(self, b, "blockize", 1)
      uids[i] = rvs[i].uid
    end
    uid = self._state:blockize_blocks(uids, preserve_unit_iters)
    target = rvs
  else
    uid = self._state:blockize(check_loop(target, "blockize", 1), preserve_unit_iters)
  end
  local out = block_rv(uid, self._state:block_realize(uid).block.name)
  record(self, "blockize", preserve_unit_iters and {target} or {target, false}, {out})
  return out
end

--- Factorizes the reduction over `loop` (TVM rfactor): a new block "<name>_rf" reduces all
-- but `loop` into a buffer "<buf>_rf" that has one more dimension, of the loop's extent, at
-- factor_axis (0..ndim; negative counts from the end); the original block (same handle)
-- then reduces that buffer over `loop`.  Returns the rf block.
function Schedule:rfactor(loop, factor_axis)
  local v = check_loop(loop, "rfactor", 1)
  check_int(factor_axis, "rfactor", "factor_axis")
  local uid = self._state:rfactor(v, factor_axis)
  local out = block_rv(uid, self._state:block_realize(uid).block.name)
  record(self, "rfactor", {loop, factor_axis}, {out})
  return out
end

--- A new stage between the block and one of its buffers (TVM reindex): buffer is {"read", i}
-- or {"write", i} (0-based, as cache_read's index) or the buffer's name.  The stage copies
-- the buffer to (read) or from (write) a buffer "<buf>_reindex" indexed by the block's
-- iteration variables, which the block then accesses at exactly those variables.
-- Returns the new stage's block.
function Schedule:reindex(block, buffer)
  block = check_block(self, block, "reindex", 1)
  local is_write, index = block_buffer(self, block, buffer, "reindex")
  local uid = self._state:reindex(block.uid, is_write, index)
  local out = block_rv(uid, self._state:block_realize(uid).block.name)
  record(self, "reindex", {block, {is_write and "write" or "read", index}}, {out})
  return out
end

--- Pads a block's iteration domain to multiples of the factors (TVM pad_einsum), one per
-- iteration variable (1: unchanged), e.g. sch:pad_einsum(C, {16, 16, 16}) on 127^3 gives 128^3.
-- Buffers the block accesses at padded variables get "<buf>_pad" copies: inputs filled with
-- zeros outside the original domain by new blocks before the block, the output copied back
-- over the original domain by a block "<buf>_pad_unpad" after it.  The block must be an
-- einsum (indices are iteration variables or constants) under trivially bound loops; a padded
-- reduction variable needs C = C + a product with a factor indexed by it (zeros add nothing).
-- Returns the new blocks (input copies in access order, then the output's).
function Schedule:pad_einsum(block, padding)
  block = check_block(self, block, "pad_einsum", 1)
  if type(padding) ~= "table" or getmetatable(padding) ~= nil or #padding ~= util.count_keys(padding) then
    raise("TypeError", "pad_einsum", "padding must be a list of integers (one factor per iteration variable), got %s", describe(padding))
  end
  for i, f in ipairs(padding) do check_int(f, "pad_einsum", ("padding[%d]"):format(i)) end
  local outs = block_list(self, self._state:pad_einsum(block.uid, padding))
  record(self, "pad_einsum", {block, {table.unpack(padding)}}, outs)
  return table.unpack(outs)
end

local function target(self, x, prim)
  if getmetatable(x) == LoopRV then return x.var end
  return check_block(self, x, prim, 1).uid
end

--- Attaches key = value (number, string, expression, or a list of numbers/expressions) to a
-- block or loop.
function Schedule:annotate(x, key, value)
  if type(key) ~= "string" then raise("TypeError", "annotate", "key must be a string") end
  annotations.check_key("annotate", key)
  if type(value) == "table" and not core.is_node(value) then
    if #value ~= util.count_keys(value) then
      raise("TypeError", "annotate", "a table value must be a list (e.g. {0, 1, 2}); this one has other keys")
    end
    for i, v in ipairs(value) do
      if type(v) ~= "number" and not core.is_node(v) then
        raise("TypeError", "annotate", "element %d of the value must be a number or an expression, got %s", i, describe(v))
      end
    end
  elseif type(value) ~= "number" and type(value) ~= "string" and type(value) ~= "boolean" and not core.is_node(value) then
    raise("TypeError", "annotate", "the value must be a number, boolean, string, expression or list, got %s", describe(value))
  end
  self._state:annotate(target(self, x, "annotate"), key, value)
  record(self, "annotate", {x, key, value})
end

function Schedule:unannotate(x, key)
  if type(key) ~= "string" then raise("TypeError", "unannotate", "key must be a string, got %s", describe(key)) end
  self._state:unannotate(target(self, x, "unannotate"), key)
  record(self, "unannotate", {x, key})
end

--- Wraps a block or loop in a loop of extent 1; returns the new loop.
function Schedule:add_unit_loop(x)
  local v = self._state:add_unit_loop(target(self, x, "add_unit_loop"))
  local out = loop_rv(v)
  record(self, "add_unit_loop", {x}, {out})
  return out
end

--- A new schedule with the same current function and trace (handles stay valid in both).
function Schedule:copy()
  local s = setmetatable({_state = self._state:copy(), _orig = self._orig, _trace = {}}, Schedule)
  for i, step in ipairs(self._trace) do s._trace[i] = step end
  return s
end

-- split_factors: -1 (an inferred split factor) prints as nil, except in the last place,
-- where Lua would drop a trailing nil from the list.
local function lua_value(v, split_factors)
  if type(v) == "string" then return ("%q"):format(v) end
  if type(v) == "table" and rawget(v, "text") then return v.text end
  if type(v) == "table" and getmetatable(v) == nil then
    local parts, n = {}, 0
    for k in pairs(v) do if k > n then n = k end end
    for i = 1, n do parts[i] = (split_factors and v[i] == -1 and i < n) and "nil" or lua_value(v[i]) end
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
  local lines, n_locals = {}, 0
  for _, step in ipairs(self._trace) do
    local function arg_text(a)
      local mt = getmetatable(a)
      if mt == LoopRV or mt == BlockRV then return names[a] or ("--[[unknown]] " .. tostring(a)) end
      local m1 = type(a) == "table" and mt == nil and getmetatable(a[1])
      if m1 == LoopRV or m1 == BlockRV then -- a list of handles (cache_read's consumer_blocks)
        local parts = {}
        for i, x in ipairs(a) do parts[i] = arg_text(x) end
        return "{" .. table.concat(parts, ", ") .. "}"
      end
      return lua_value(a, step.name == "split")
    end
    local args = {}
    for i, a in ipairs(step.inputs) do args[i] = arg_text(a) end
    local call = ("sch:%s(%s)"):format(step.name, table.concat(args, ", "))
    if #step.outputs > 0 then
      local outs = {}
      for i, o in ipairs(step.outputs) do outs[i] = name_of(o) end
      -- Lua allows 200 locals in a chunk: later handles are plain names (of apply_trace's
      -- environment, or globals in a script)
      n_locals = n_locals + #outs
      local decl = n_locals <= 180 and "local " or ""
      if step.name == "get_child_blocks" or step.name == "get_producers" or step.name == "get_consumers" or
         step.name == "get_output_blocks" then
        lines[#lines + 1] = ("%s%s = table.unpack(%s)"):format(decl, table.concat(outs, ", "), call)
      else
        lines[#lines + 1] = ("%s%s = %s"):format(decl, table.concat(outs, ", "), call)
      end
    else
      lines[#lines + 1] = call
    end
  end
  return table.concat(lines, "\n") .. (#lines > 0 and "\n" or "")
end

--- Replays a trace script (from :trace()) on this schedule.
function Schedule:apply_trace(text)
  if type(text) ~= "string" then raise("TypeError", "apply_trace", "expected the trace's text (a string from sch:trace()), got %s", describe(text)) end
  local env = setmetatable({sch = self, T = require("tir.script"), tir = require("tir")}, {__index = _G})
  local chunk, err = load(text, "=trace", "t", env)
  if not chunk then raise("ValueError", "apply_trace", "the trace does not load: %s", err) end
  -- a primitive's tir.Error passes through; a Lua error of the text itself (a misspelled
  -- primitive, an undefined handle) is a ValueError naming the trace's line
  local ok, e = pcall(chunk)
  if not ok then
    if type(e) == "string" then raise("ValueError", "apply_trace", "the trace fails at %s", e) end
    error(e, 0)
  end
  return self
end

--- The function the schedule started from.
function Schedule:original() return self._orig end

function Schedule:show() print(tostring(self._state:func())) end

-- a call with more arguments than a primitive's parameters is an error (util.strict)
util.strict_all(Schedule, "", true)
Schedule.new = util.strict("Schedule", rawget(Schedule, "new"))

return setmetatable(Schedule, {__call = function(_, func) return Schedule.new(func) end})
