-- user_errors_sweep.lua TARGET -- calls every public function of TARGET with wrong arguments
-- (nil, numbers of every kind, strings, tables, functions, and valid handles mixed with junk) and
-- prints one line "BARE <fn> args#<i>: <error>" for each error that is not a tir.Error (a bare Lua
-- "attempt to index a nil value" / "bad argument #1 to '?'"), then "done <n> <bare>".  A crash
-- is the child's exit status.  Run by user_errors_spec.lua in a child tirlua: the calls change
-- process state (limits, registries) that other specs must not see.
local target = arg[1]
local te = tir.te

local function matmul(n)
  local A = te.placeholder({n, n}, "float16", "A")
  local B = te.placeholder({n, n}, "float16", "B")
  local k = te.reduce_axis({0, n}, "k")
  local C = te.compute({n, n}, function(i, j) return te.sum(te.cast("float32", A[{i, k}] * B[{k, j}]), {k}) end, "C")
  return te.create_prim_func({A, B, C})
end

local junk = {
  {}, {nil}, {1}, {-1}, {0}, {"x"}, {{}}, {true}, {1.5}, {math.maxinteger}, {math.mininteger}, {{foo = 1}}, {"x", "y"},
  {1, 2, 3}, {{}, {}}, {nil, {}}, {"x", {foo = 1}}, {1, "x"}, {function() end}, {"float32"}, {{1, 2}}, {{1, 2}, "float32"},
  {0 / 0}, {1e308}, {{-1}}, {{nil, 0}},
}

-- fn(args...) for every junk argument list; make() gives a fresh receiver per call (methods)
local names, call = {}, nil
local skip = {cache_clear = true, kernel_cache_clear = true, set = true, kernel_cache_set_dir = true, set_dir = true,
  set_store_hook = true, print_capture_begin = true, print_capture_end = true, interpret_alloc_limit = true, raise = true,
  help = true, bench = true, measure = true, run = true, time = true, time_evaluator = true, __call = true, __index = true,
  __gc = true, __close = true, repl = true, main = true, compile_start = true}

local function functions_of(t)
  local out = {}
  for k, v in pairs(t) do
    if type(k) == "string" and type(v) == "function" and not k:match("^_") and not skip[k] then out[#out + 1] = k end
  end
  table.sort(out)
  return out
end

if target == "Schedule" then
  local S = getmetatable(tir.Schedule(matmul(16)))
  names = functions_of(S)
  local extra = {}
  call = function(name, args)
    local sch = tir.Schedule(matmul(16))
    local blk = sch:get_block("C")
    local loops = {sch:get_loops(blk)}
    extra = {{blk, "x"}, {loops[1], {nil, 3.5}}, {loops[1], {0, -1}}, {blk, 99}, {blk, -1, "shared"}, {loops[1], loops[1]},
             {blk, loops[3]}, {loops[3], blk}, {blk, 0, "sharde"}, {loops[1], "threadIdx.w"}, {blk, {foo = 1}}}
    for _, a in ipairs(extra) do
      local ok, e = pcall(sch[name], sch, table.unpack(a, 1, 3))
      if not ok then coroutine.yield(e) end
    end
    return sch[name](sch, table.unpack(args, 1, 3))
  end
elseif target == "NDArray" then
  local a = tir.nd.random({4, 4}, "float32", "cpu", {seed = 1})
  names = functions_of(getmetatable(a).__index)
  call = function(name, args)
    local x = tir.nd.random({4, 4}, "float32", "cpu", {seed = 1})
    return x[name](x, table.unpack(args, 1, 3))
  end
elseif target == "PrimFunc" then
  names = functions_of(tir.core.node_methods("PrimFunc"))
  call = function(name, args) local f = matmul(16); return f[name](f, table.unpack(args, 1, 3)) end
elseif target == "Buffer" then
  names = functions_of(tir.core.node_methods("Buffer"))
  call = function(name, args) local b = matmul(16).params[1]; return b[name](b, table.unpack(args, 1, 3)) end
elseif target == "Module" then
  local sch = tir.Schedule(matmul(16))
  local i, j = sch:get_loops("C")
  sch:bind(i, "blockIdx.x"); sch:bind(j, "threadIdx.x")
  local mod = tir.build(sch, "cuda", {compile = false, cache = false})
  names = functions_of(tir.core.module_methods)
  call = function(name, args) return mod[name](mod, table.unpack(args, 1, 3)) end
elseif target == "Dispatcher" then
  local M = te.var("M")
  local A = te.placeholder({M, 8}, "float32", "A")
  local B = te.compute({M, 8}, function(i, j) return A[{i, j}] + 1 end, "B")
  local fam = tir.dispatch.family(te.create_prim_func({A, B}), "add1")
  fam:fallback(function(f) local s = tir.Schedule(f); local i, j = s:get_loops("B"); s:bind(i, "blockIdx.x"); s:bind(j, "threadIdx.x"); return s end)
  local d = fam:dispatcher()
  names = functions_of(getmetatable(d).__index)
  call = function(name, args) return d[name](d, table.unpack(args, 1, 3)) end
elseif target == "family" then
  local function fam()
    local M = te.var("M")
    local A = te.placeholder({M, 8}, "float32", "A")
    local B = te.compute({M, 8}, function(i, j) return A[{i, j}] + 1 end, "B")
    return tir.dispatch.family(te.create_prim_func({A, B}), "add1")
  end
  names = functions_of(getmetatable(fam()).__index)
  call = function(name, args) local f = fam(); return f[name](f, table.unpack(args, 1, 3)) end
else
  local mod
  if target == "tir" then mod = tir elseif target == "T" then mod = tir.script else mod = require(target) end
  names = functions_of(mod)
  call = function(name, args) return mod[name](table.unpack(args, 1, 3)) end
end

local bare = 0
local function check(name, i, ok, e)
  if ok then return end
  local mt = type(e) == "table" and getmetatable(e)
  if not (mt and mt.__name == "tir.Error") then
    bare = bare + 1
    print(("BARE %s.%s args#%d: %s"):format(target, name, i, (tostring(e):gsub("\n.*", ""))))
  end
end
for _, name in ipairs(names) do
  for i, args in ipairs(junk) do
    local co = coroutine.wrap(function() return "done", pcall(call, name, args) end)
    local n = 0
    while true do
      local r = table.pack(co())
      if r[1] == "done" then check(name, i, r[2], r[3]) break end
      n = n + 1
      check(name, 100 * i + n, false, r[1])
    end
  end
end
print(("done %d %d"):format(#names, bare))
