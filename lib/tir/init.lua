--- tir: the Lua face of tirlua, a TensorIR-style tensor compiler for NVIDIA GPUs.
-- require("tir") returns this table; inside the tirlua binary it is also the global `tir`.
--
--   tir.te            tensor expressions (placeholder, compute, reduce_axis, sum, create_prim_func)
--   tir.script        TIR script builder (T.prim_func, T.block, ...)  [lib/tir/script.lua]
--   tir.Schedule(f)   schedule primitives with handles and a replayable trace
--   tir.build(f, target [, opts])  lower + CUDA codegen + NVRTC -> a module you can call
--   tir.interpret(f, args)         run any PrimFunc on host arrays (the CPU oracle)
--   tir.device, tir.nd             devices and arrays;  tir.testing: references, assert_allclose
-- Expression helpers from the C core: tir.var, tir.const, tir.eq/ne/lt/le/gt/ge (Lua 5.4
-- turns < and == into booleans, so comparisons are functions), tir.all/any, tir.select /
-- tir.Select (both sides evaluated), tir.if_then_else (only the side taken), tir.cast,
-- tir.min/max, tir.floordiv/floormod, tir.structural_equal; math shorthands tir.exp, tir.sqrt,
-- tir.round, ... (lib/tir/math.lua).
local core = require("tir.core")
local util = require("tir.util")

local tir = {}
for k, v in pairs(core) do -- a binding's bad argument is a TypeError naming tir.<k> (util.guarded)
  if type(v) == "function" and not k:match("^te_") and not k:match("^nd_") then tir[k] = util.guarded(k, v) end
end
tir.core = core
require("tir.math").install(tir) -- tir.exp, tir.sqrt, tir.round, tir.abs, tir.sigmoid, ... (docs/BUILTINS.md)
tir.arith = {} -- simplify, can_prove, const_int_bound, detect_iter_map, subspace_divide, ...
for name, f in pairs(core.arith) do -- bad arguments raise a TypeError naming the function
  tir.arith[name] = function(...) return util.guard("arith." .. name, f, ...) end
end
tir.version = core.version
tir.config = tir.config or {}

local nd = require("tir.nd")
tir.nd = nd
tir.device = nd.device
tir.cpu = nd.cpu
tir.cuda = nd.cuda

tir.te = require("tir.te")
tir.script = require("tir.script")
tir.Schedule = require("tir.schedule")
tir.testing = require("tir.testing")
-- kernel families dispatched by shape (lib/tir/dispatch.lua): tir.dispatch.family(func), and
-- tir.specialize(func, {M = 16}) / func:specialize{M = 16} (TVM's PrimFunc.specialize)
tir.dispatch = require("tir.dispatch")
tir.specialize = tir.dispatch.specialize
core.node_methods("PrimFunc").specialize = function(f, values, name) return tir.dispatch.specialize(f, values, name) end
tir.cudnn = require("tir.cudnn") -- cuDNN's conv2d as a reference (lib/tir/cudnn.lua)
-- tir.ops (ready-made operators, lib/tir/ops): loaded on first use (it requires tir itself)
tir.ops = setmetatable({}, {__module = "tir.ops", __index = function(t, k)
  setmetatable(t, {__module = "tir.ops"}) -- loaded: fields of its own now; help(tir.ops) still finds the module
  for name, v in pairs(require("tir.ops")) do t[name] = v end
  return rawget(t, k)
end})
-- tir.schedules.<name> (the ready-made schedules, lib/tir/schedules/<name>.lua, as the README names
-- them: tir.schedules.tc_gemm, ...): require("tir.schedules.<name>") on first use; nil for a name
-- that is no such file
tir.schedules = setmetatable({}, {__module = "tir.schedules", __index = function(t, k)
  if type(k) ~= "string" or not k:match("^[%w_]+$") then return nil end
  local ok, m = pcall(require, "tir.schedules." .. k)
  if not ok then
    if tostring(m):find("module 'tir.schedules." .. k .. "' not found", 1, true) then return nil end
    error(m, 2) -- the module exists but failed to load: say why
  end
  rawset(t, k, m)
  return m
end})
-- tir.amos (automatic mapping onto tensor intrinsics, lib/tir/amos.lua): loaded on first use
tir.amos = setmetatable({}, {__module = "tir.amos", __index = function(t, k)
  setmetatable(t, {__module = "tir.amos"})
  for name, v in pairs(require("tir.amos")) do t[name] = v end
  return rawget(t, k)
end})

--- tir.TensorIntrin: the registry of tensor intrinsics (TVM's tir.TensorIntrin).
--   tir.TensorIntrin.register(name, desc, impl [, override])   desc/impl: PrimFuncs (T script) with the
--       same buffer parameters; desc gives the semantics (loops around one block), impl the builtin calls.
--   tir.TensorIntrin.get(name) -> desc, impl (nil when unknown);  tir.TensorIntrin.list() -> names
-- The CUDA library (WMMA, mma.sync, ldmatrix) registers itself on require("tir.intrin.cuda").
tir.TensorIntrin = {
  register = function(name, desc, impl, override)
    if type(name) ~= "string" then util.raise("TypeError", "TensorIntrin.register", "the name must be a string") end
    for i, f in ipairs({desc, impl}) do
      if not core.is_node(f, "PrimFunc") then
        util.raise("TypeError", "TensorIntrin.register", "%s must be a PrimFunc (T.prim_func), got %s", i == 1 and "desc" or "impl", type(f))
      end
    end
    util.guard("TensorIntrin.register", core.tensor_intrin_register, name, desc, impl, override and true or false)
  end,
  get = function(name)
    if type(name) ~= "string" then util.raise("TypeError", "TensorIntrin.get", "the name must be a string, got %s", util.describe(name)) end
    return util.guard("TensorIntrin.get", core.tensor_intrin_get, name)
  end,
  list = function() return core.tensor_intrin_list() end,
}

--- Builds a PrimFunc (or a schedule's module) for a target.
-- target: "cuda" (default), optionally with "-arch=sm_80" etc.  opts: {dump = true} keeps the
-- IR after each pass that changed it (mod:dumps()); {compile = false} stops after emitting CUDA C.
-- Returns a tir.Module: mod(a, b, c) launches on CUDA arrays (checked first),
-- mod:get_source("cuda"|"ptx"|"ir"|"host"), mod:time_evaluator{...}(args) -> seconds.
-- Raises LoweringError / CodegenError / NvrtcError (with NVRTC's log) on failure.
local BUILD_OPTS = {dump = "boolean", compile = "boolean", unroll_max_extent = "nonneg", arch = "string", cache = "boolean"}

local function as_func(func, prim)
  if type(func) == "table" and func.func then func = func.func end
  if not (core.is_node(func, "PrimFunc") or core.is_node(func, "IRModule")) then
    util.raise("TypeError", prim, "expected a PrimFunc (or a Schedule), got %s", util.describe(func))
  end
  return func
end

-- The target string and options of a build, checked (errors name prim): a copy of opts with
-- the target's -arch folded in.  extra: more option types (build_many's jobs).
local function build_options(prim, target, opts, extra)
  target = target or "cuda"
  if type(target) ~= "string" then util.raise("TypeError", prim, "target must be a string like \"cuda\" or \"cuda -arch=sm_90\"") end
  local words = {}
  for w in target:gmatch("%S+") do words[#words + 1] = w end
  if #words == 0 then util.raise("ValueError", prim, "the target is empty (use \"cuda\")") end
  if words[1] ~= "cuda" and words[1] ~= "nvptx" then
    util.raise("ValueError", prim, "unknown target '%s' (tirlua builds for \"cuda\")", words[1])
  end
  local spec = BUILD_OPTS
  if extra then
    spec = {}
    for k, v in pairs(BUILD_OPTS) do spec[k] = v end
    for k, v in pairs(extra) do spec[k] = v end
  end
  local o = {}
  for k, v in pairs(util.check_opts(prim, opts, spec)) do o[k] = v end
  local u = o.unroll_max_extent
  if u ~= nil and (math.type(u) ~= "integer" or u < 0 or u > 0x7fffffff) then
    util.raise("ValueError", prim, "option unroll_max_extent must be a non-negative integer, got %s", util.show(u))
  end
  for i = 2, #words do
    local arch = words[i]:match("^%-arch=(.+)$")
    if not arch then util.raise("ValueError", prim, "unknown target option '%s' (only -arch=sm_XX)", words[i]) end
    if o.arch ~= nil and o.arch ~= arch then
      util.raise("ValueError", prim, "the target says -arch=%s but opts.arch is %s: give the architecture once", arch, util.show(o.arch))
    end
    o.arch = arch
  end
  if o.arch ~= nil then
    local num = type(o.arch) == "string" and tonumber(o.arch:match("^sm_(%d+)a?$"))
    if not num or num < 75 or num > 120 then
      util.raise("ValueError", prim, "bad architecture '%s': expected sm_75 .. sm_120 (e.g. sm_80, sm_90, sm_90a)", tostring(o.arch))
    end
  end
  return o
end

-- tirlua --dump=ir|cuda|ptx (tir.config.dump) and --debug=N (tir.config.debug): what a build
-- prints.  dump: the IR after each pass / the CUDA C / the PTX on stdout.  debug >= 1: one line
-- per build on stderr (function, kernels with grid, block and dynamic shared memory, cache
-- status); debug >= 2: also the IR after each pass, as --dump=ir.
local function debug_level()
  local d = tir.config.debug
  return math.type(d) == "integer" and d or 0
end

local function report_build(mod, func, prim)
  local dump = tir.config.dump
  if debug_level() >= 2 and dump ~= "ir" then dump = "ir" end
  if dump == "ir" then
    for _, d in ipairs(mod:dumps()) do io.write("-- after ", d.pass, "\n", d.ir, "\n") end
  elseif dump == "cuda" then
    io.write(mod:get_source("cuda"), "\n")
  elseif dump == "ptx" then
    local ok, ptx = pcall(mod.get_source, mod, "ptx")
    io.write(ok and ptx or "-- no PTX: built with compile = false", "\n")
  end
  if debug_level() >= 1 then
    local ks = {}
    for _, k in ipairs(mod:kernels()) do
      ks[#ks + 1] = ("%s grid(%s) block(%s) smem %d"):format(k.name, table.concat(k.grid, ", "), table.concat(k.block, ", "),
                                                             k.dyn_smem_bytes or 0)
    end
    local name = core.is_node(func, "PrimFunc") and func.name or "module"
    io.stderr:write(("[tirlua debug] %s %s -> %s: %s; cache %s\n"):format(prim, name, mod:arch(),
      #ks > 0 and table.concat(ks, "; ") or "no kernels", mod:cache_status()))
  end
end

-- tir.build without the reporting (build_many reports after compiling, so that PTX exists)
local function build_quiet(func, target, opts, prim)
  func = as_func(func, prim)
  local o = build_options(prim, target, opts)
  if tir.config.dump or debug_level() >= 2 then o.dump = true end
  return core.build(func, o), func
end

function tir.build(func, target, opts)
  local mod, f = build_quiet(func, target, opts, "build")
  report_build(mod, f, "build")
  return mod
end

--- Builds several functions at once, as tir.build does each: lowering and codegen one after
-- another here, then NVRTC (the slow part, ~60-300 ms a kernel) on up to opts.jobs threads
-- (default: the CPU cores).  funcs: a list of PrimFuncs or Schedules; target and the other
-- options as tir.build's (compile must not be false).  Returns a list in the order of funcs of
-- {mod = Module} or {err = tir.Error}: a function that fails does not stop the others.
function tir.build_many(funcs, target, opts)
  if type(funcs) ~= "table" or util.count_keys(funcs) ~= #funcs then
    util.raise("TypeError", "build_many", "funcs must be a list (keys 1..n, no holes) of PrimFuncs or Schedules, got %s",
      type(funcs) == "table" and "a table that is not a list" or util.describe(funcs))
  end
  -- the target and options are the same for every function: checked once, here (a misspelled
  -- option or a bad target is one error, not one per function in the results)
  local o = build_options("build_many", target, opts, {jobs = "positive"})
  if o.jobs and o.jobs > 64 then util.raise("ValueError", "build_many", "option jobs must be an integer in 1..64, got %s", util.show(o.jobs)) end
  local jobs = o.jobs or core.cpu_count()
  if o.compile == false then util.raise("ValueError", "build_many", "compile = false makes no sense here: use tir.build") end
  o.jobs = nil
  o.compile = false
  local results, mods, idx, fns = {}, {}, {}, {}
  for i, f in ipairs(funcs) do
    local ok, mod, fn = pcall(build_quiet, f, target, o, "build_many")
    if ok then
      results[i] = {mod = mod}
      mods[#mods + 1], idx[#mods + 1], fns[#mods + 1] = mod, i, fn
    else
      results[i] = {err = mod}
    end
  end
  if #mods > 0 then
    core.compile_many(mods, jobs)
    for j, mod in ipairs(mods) do
      local ok, err = pcall(mod.compile_error, mod)
      if not ok then results[idx[j]] = {err = err} else report_build(mod, fns[j], "build_many") end
    end
  end
  return results
end

--- tir.tune{...}: the tuner (lib/tir/tune.lua; loaded on first use): tir.tune(spec),
-- tir.tune.best(workload, target), tir.tune.lookup(...), tir.tune.records(db).
-- (__module: the module a lazy proxy stands for, for help(x) and TAB completion in tir.repl)
tir.tune = setmetatable({}, {
  __module = "tir.tune",
  __index = function(_, k) return require("tir.tune")[k] end,
  __call = function(_, spec) return require("tir.tune").run(spec) end,
})

--- tir.layout: pictures of fragment lane maps and shared-memory banks (lib/tir/layout.lua;
-- loaded on first use): tir.layout.fragment(row, operand), tir.layout.shared{...}.
tir.layout = setmetatable({}, {__module = "tir.layout", __index = function(_, k) return require("tir.layout")[k] end})

--- tir.print(fmt, v1, ..., [filter]): printf from inside a kernel, as a Call expression (use
-- it as a statement: T.evaluate(tir.print(...)), or T.print(...) in the T script).  The format
-- takes printf conversions (d i u x X o c for integer values, f e g a for floats, flags, width,
-- precision; no length modifiers: values print as 64-bit integers or doubles); the values are
-- expressions (loop variables, buffer elements, fragment elements of a lane).  filter, a table:
-- thread = {x, y, z} (threadIdx; default {0, 0, 0}) and block = {x, y, z} (blockIdx; default
-- {0, 0, 0}); "all" (or -1 for one coordinate) prints from every thread/block.  The interpreter
-- and tir.simulate print the same text as the GPU (include/tir/device_print.h); several printing
-- threads come in an unspecified order on the GPU.  Raises ValueError for a format that does not
-- fit the values, TypeError for bad filters.
function tir.print(fmt, ...)
  if type(fmt) ~= "string" then util.raise("TypeError", "print", "the format must be a string, got %s", util.show(fmt)) end
  local vals = table.pack(...)
  local filter = {}
  if vals.n > 0 and type(vals[vals.n]) == "table" and not core.is_node(vals[vals.n]) then
    filter = util.check_opts("print", vals[vals.n], {thread = "any", block = "any"})
    vals[vals.n] = nil
    vals.n = vals.n - 1
  end
  local coords = {}
  for _, which in ipairs({"thread", "block"}) do
    local f = filter[which]
    if f == "all" then f = {-1, -1, -1} end
    if f == nil then f = {0, 0, 0} end
    if type(f) ~= "table" or #f > 3 then
      util.raise("TypeError", "print", "filter %s must be {x, y, z} (missing ones are 0, -1 for any) or \"all\", got %s", which,
        util.show(f))
    end
    for d = 1, 3 do
      local v = f[d] or 0
      if math.type(v) ~= "integer" or v < -1 then
        util.raise("TypeError", "print", "filter %s[%d] must be an integer >= -1, got %s", which, d, util.show(v))
      end
      coords[#coords + 1] = v
    end
  end
  return util.guard("print", core.call, "int32", "tir_print", fmt, coords[1], coords[2], coords[3], coords[4], coords[5],
    coords[6], table.unpack(vals, 1, vals.n))
end

--- tir.capture_prints(f, ...): runs f(...) and returns what tir.print calls printed on the CPU
-- (interpreter, simulator) meanwhile, as a string (instead of writing it to stdout).
function tir.capture_prints(f, ...)
  if type(f) ~= "function" then util.raise("TypeError", "capture_prints", "f must be a function, got %s", util.show(f)) end
  core.print_capture_begin()
  local ok, err = pcall(f, ...)
  local text = core.print_capture_end()
  if not ok then error(err, 0) end
  return text
end

--- tir.help(x): what x is and its documentation (the --- comments of lib/tir, a module's header,
-- an object's methods, an IR node's fields).  The tirlua program also defines a global `help`.
function tir.help(x) return require("tir.repl").help(x) end

--- tir.register_extern(name, {cuda = "device source", model = function(...) end}): an external
-- device function for T.call_extern (include/tir/extern.h); tir.register_extern_model(name, fn):
-- its CPU model alone (a CUDA built-in).  Raises TypeError/ValueError naming the function.
do
  local reg, reg_model = core.register_extern, core.register_extern_model
  local function check_name(prim, name)
    if type(name) ~= "string" then util.raise("TypeError", prim, "the name must be a string, got %s", util.show(name)) end
  end
  function tir.register_extern(name, opts)
    check_name("register_extern", name)
    if opts == nil then util.raise("TypeError", "register_extern", "expected a table {cuda = source, model = fn} after the name") end
    opts = util.check_opts("register_extern", opts, {cuda = "string", model = "function"})
    return util.guard("register_extern", reg, name, opts)
  end
  function tir.register_extern_model(name, fn)
    check_name("register_extern_model", name)
    if type(fn) ~= "function" then util.raise("TypeError", "register_extern_model", "the model must be a function, got %s", util.show(fn)) end
    return util.guard("register_extern_model", reg_model, name, fn)
  end
end

--- The on-disk kernel cache (include/tir/kernel_cache.h): tir.build looks each module's PTX and
-- CUBIN up there before calling NVRTC and stores what NVRTC made.  Keyed by the generated CUDA C,
-- the lowered function's structural hash, arch, NVRTC/driver versions and compile options.
-- Directory: $TIRLUA_CACHE_DIR, else $XDG_CACHE_HOME/tirlua, else ~/.cache/tirlua; TIRLUA_CACHE=0
-- turns it off (tir.build's {cache = false} for one build).  mod:cache_status() says "hit",
-- "miss" (compiled and stored), "off" or "none" (not compiled).
tir.cache = {}

--- {dir = path or nil, enabled = bool, entries = n, bytes = n, limit = bytes}: limit is
-- $TIRLUA_CACHE_MAX_MB MiB (default 1024); a store past it evicts the least recently used entries.
function tir.cache.info()
  local dir, enabled, entries, bytes, limit = core.kernel_cache_info()
  return {dir = dir, enabled = enabled, entries = entries, bytes = bytes, limit = limit}
end

--- tir.cache.set(dir, enabled): this process's cache directory (nil: back to the environment's)
-- and whether the cache is used (false: off, whatever TIRLUA_CACHE says).
function tir.cache.set(dir, enabled)
  if dir ~= nil and (type(dir) ~= "string" or dir == "") then
    util.raise("TypeError", "cache.set", "dir must be a non-empty string or nil, got %s", util.show(dir))
  end
  if enabled == nil then enabled = true end
  if type(enabled) ~= "boolean" then util.raise("TypeError", "cache.set", "enabled must be a boolean, got %s", util.show(enabled)) end
  core.kernel_cache_set_dir(dir, enabled)
end

--- Removes every entry; returns the number of files removed.  Raises RuntimeError when the
-- directory cannot be read.
function tir.cache.clear()
  local n, why = core.kernel_cache_clear()
  if not n then util.raise("RuntimeError", "cache.clear", "%s", why) end
  return n
end

--- Lowers a PrimFunc through the pipeline without codegen: returns the lowered function
-- and, with {dump = true}, a list of {pass = name, ir = text} after each pass.
function tir.lower(func, opts)
  func = as_func(func, "lower")
  util.check_opts("lower", opts, {dump = "boolean", unroll_max_extent = "nonneg"})
  if opts and opts.unroll_max_extent and opts.unroll_max_extent > 0x7fffffff then
    util.raise("ValueError", "lower", "option unroll_max_extent must be a non-negative integer, got %s", util.show(opts.unroll_max_extent))
  end
  return core.lower(func, opts)
end

--- Runs func on host arrays: tir.interpret(func, {a, b, c}) (or a, b, c).  Raises
-- RuntimeError on out-of-bounds accesses, bad bindings, shape/dtype mismatches.
function tir.interpret(func, ...)
  return core.interpret(as_func(func, "interpret"), ...)
end

--- The most bytes the interpreter's own buffers (alloc_buffer, allocate) may hold at once,
-- 4 GiB by default; a run that needs more fails with a RuntimeError naming the buffer.
-- tir.interpret_alloc_limit(bytes) sets it and returns the previous limit; () returns it.
function tir.interpret_alloc_limit(bytes)
  return util.guard("interpret_alloc_limit", core.interpret_alloc_limit, bytes)
end

--- Runs the lowered device code on the CPU with GPU semantics (docs/SIMULATOR.md): every CTA
-- (or opts.ctas) runs its threads in lockstep; shared memory per CTA, races, out-of-bounds
-- accesses, divergent barriers, cp.async waits and warp-level builtins (ldmatrix, mma.sync,
-- wmma) are modeled lane by lane.  target: a tir.Module (tir.build(f, "cuda", {compile = false})
-- is enough), a PrimFunc (lowered first unless it already is) or a Schedule.  args: a table of
-- CPU arrays / numbers, updated in place as by tir.interpret.  opts:
--   check = false      report issues instead of raising on the first (a SimulationError)
--   ctas = {{x, y, z}, ...} or {[kernel name] = {...}}   which CTAs to run (default: all)
--   reference = true | f   also run the interpreter on copies of args -- on f, else on the
--                      module's function or the target itself -- and report differing elements
--                      with the thread and statement that wrote them; exact unless rtol / atol
--   max_issues = n     issues kept in the report (default 100)
-- Returns a report (print(report) shows its counts and first issues): {issues = {{kind, message, kernel, cta, thread, other_thread, statement,
-- other_statement, buffer, index, extent}...}, races, n_issues, hints (likely causes, e.g. an mma
-- operand that is not a 16x16 tile), kernels, ctas, statements, thread_statements, barriers,
-- warp_ops, cp_async, shared_reads, shared_writes}.  Errors: SimulationError (an issue, naming the
-- kernel, CTA, thread, statement and address), RuntimeError (a program it cannot run).
-- print(report): one line of counts, then the issues (the REPL shows reports so)
local SIM_REPORT = {__name = "tir.SimulationReport", __tostring = function(r)
  local function n(x) return math.tointeger(x) or x or 0 end
  local lines = {("simulation: %s kernel(s), %s CTA(s), %s barrier(s), %s warp-level op(s), %s cp.async, %s race(s), %s issue(s)"):format(
    n(r.kernels), n(r.ctas), n(r.barriers), n(r.warp_ops), n(r.cp_async), n(r.races), n(r.n_issues))}
  for i, is in ipairs(r.issues or {}) do
    if i > 10 then lines[#lines + 1] = ("  ... %d more"):format(#r.issues - 10) break end
    lines[#lines + 1] = "  " .. tostring(is.message or is.kind)
  end
  for _, h in ipairs(r.hints or {}) do lines[#lines + 1] = "  hint: " .. tostring(h) end
  return table.concat(lines, "\n")
end}
local SIM_OPTS = {check = "boolean", ctas = "table", reference = "any", rtol = "number", atol = "number",
                  max_issues = "positive"}
function tir.simulate(target, args, opts)
  if type(target) == "table" and target.func then target = target.func end
  local is_mod = type(target) == "userdata" and (getmetatable(target) or {}).__name == "tir.Module"
  if not is_mod and not (core.is_node(target, "PrimFunc") or core.is_node(target, "IRModule")) then
    util.raise("TypeError", "simulate", "expected a tir.Module, a PrimFunc or a Schedule, got %s", util.describe(target))
  end
  if type(args) ~= "table" then util.raise("TypeError", "simulate", "args must be a table of arrays, got %s", util.describe(args)) end
  local o = {}
  for k, v in pairs(util.check_opts("simulate", opts, SIM_OPTS)) do o[k] = v end
  if o.ctas ~= nil and type(o.ctas) ~= "table" then util.raise("TypeError", "simulate", "ctas must be a table of {x, y, z}") end
  if o.reference then
    -- the oracle: the function given, else the module's (scheduled, unlowered) function
    local oracle = o.reference
    if oracle == true then oracle = is_mod and target:func() or target end
    if type(oracle) == "table" and oracle.func then oracle = oracle.func end
    if not (core.is_node(oracle, "PrimFunc") or core.is_node(oracle, "IRModule")) then
      util.raise("TypeError", "simulate", "reference must be true or a PrimFunc (the oracle), got %s", util.describe(oracle))
    end
    o.expected = tir.testing.copy_args(args)
    tir.interpret(oracle, o.expected)
  end
  o.reference = nil
  local rep = core.simulate(target, args, o)
  if type(rep) == "table" and getmetatable(rep) == nil then setmetatable(rep, SIM_REPORT) end
  return rep
end

-- Module methods written in Lua.
local M = core.module_methods
--- mod:time_evaluator{number = 20, repeat_ = 3, warmup = 2} returns f(args...) -> median
-- seconds per call (CUDA events around `number` launches, median over `repeat_` samples),
-- plus the list of samples as a second value.
function M.time_evaluator(mod, opts)
  local count = function(lo) return function(v)
    if math.type(v) ~= "integer" or v < lo or v > 100000 then return ("an integer in [%d, 100000]"):format(lo) end
  end end
  opts = util.check_opts("time_evaluator", opts, {number = count(1), repeat_ = count(1), ["repeat"] = count(1), warmup = count(0)})
  if opts.repeat_ ~= nil and opts["repeat"] ~= nil then
    util.raise("ValueError", "time_evaluator", "give repeat_ or repeat, not both")
  end
  local number = opts.number or 10
  local rep = opts.repeat_ or opts["repeat"] or 3
  local warmup = opts.warmup or 2
  return function(...) return mod:time(warmup, number, rep, ...) end
end

-- a call with more arguments than a function's parameters is an error (util.strict)
for _, k in ipairs({"build", "build_many", "lower", "simulate", "interpret_alloc_limit", "help", "register_extern",
                    "register_extern_model"}) do tir[k] = util.strict(k, tir[k]) end
util.strict_all(tir.cache, "cache.")
for _, k in ipairs({"register", "get", "list"}) do
  tir.TensorIntrin[k] = util.strict("TensorIntrin." .. k, tir.TensorIntrin[k])
end
M.time_evaluator = util.strict("time_evaluator", M.time_evaluator, true)
-- C methods whose bad arguments would be bare Lua strings (mod:resources(kernel, ...))
for _, k in ipairs({"resources", "compile", "time"}) do
  if debug.getinfo(M[k], "S").what == "C" then M[k] = util.guarded("Module:" .. k, M[k]) end
end
-- the module's C methods of fixed arity refuse extra arguments too
for name, n in pairs({get_source = 1, arch = 0, func = 0, lowered = 0, dumps = 0, kernels = 0, cache_status = 0}) do
  local f = rawget(M, name)
  if f then
    M[name] = function(...)
      if select("#", ...) - 1 > n then
        util.raise("TypeError", "Module:" .. name, "too many arguments: mod:%s takes %d, got %d (extra arguments are refused, not ignored)",
                   name, n, select("#", ...) - 1)
      end
      if name == "get_source" then
        -- the C method's bad kind / missing source are plain Lua errors: make them tir.Errors
        local mod, kind = ...
        local kinds = {cuda = true, ptx = true, ir = true, tir = true, host = true}
        if kind ~= nil and not kinds[kind] then
          util.raise("ValueError", "Module:get_source", "kind must be \"cuda\" (default), \"ptx\", \"ir\" or \"host\", got %s", util.show(kind))
        end
        local ok, src = pcall(f, mod, kind)
        if not ok then util.raise("ValueError", "Module:get_source", "%s", (tostring(src):gsub("^[^:]*:%d+: ", ""))) end
        return src
      end
      return f(...)
    end
  end
end

return tir
