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
-- turns < and == into booleans, so comparisons are functions), tir.all/any, tir.select,
-- tir.cast, tir.min/max, tir.floordiv/floormod, tir.structural_equal.
local core = require("tir.core")

local tir = {}
for k, v in pairs(core) do
  if type(v) == "function" and not k:match("^te_") and not k:match("^nd_") then tir[k] = v end
end
tir.core = core
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

--- Builds a PrimFunc (or a schedule's module) for a target.
-- target: "cuda" (default), optionally with "-arch=sm_80" etc.  opts: {dump = true} keeps the
-- IR after each pass (mod:dumps()); {compile = false} stops after emitting CUDA C.
-- Returns a tir.Module: mod(a, b, c) launches on CUDA arrays (checked first),
-- mod:get_source("cuda"|"ptx"|"ir"|"host"), mod:time_evaluator{...}(args) -> seconds.
-- Raises LoweringError / CodegenError / NvrtcError (with NVRTC's log) on failure.
function tir.build(func, target, opts)
  if type(func) == "table" and func.func then func = func.func end -- a Schedule
  target = target or "cuda"
  if type(target) ~= "string" then error("tir.build: target must be a string like \"cuda\" or \"cuda -arch=sm_90\"", 2) end
  local kind, rest = target:match("^%s*(%S+)%s*(.*)$")
  if kind ~= "cuda" and kind ~= "nvptx" then
    error(("tir.build: unknown target '%s' (tirlua builds for \"cuda\")"):format(tostring(kind)), 2)
  end
  local o = {}
  for k, v in pairs(opts or {}) do o[k] = v end
  local arch = rest:match("%-arch=(%S+)")
  if arch then
    if not arch:match("^sm_%d+a?$") then error(("tir.build: bad -arch '%s' (expected sm_80, sm_90, sm_90a)"):format(arch), 2) end
    o.arch = arch
  end
  if tir.config.dump then o.dump = true end
  local mod = core.build(func, o)
  local dump = tir.config.dump
  if dump == "ir" then
    for _, d in ipairs(mod:dumps()) do io.write("-- after ", d.pass, "\n", d.ir, "\n") end
  elseif dump == "cuda" then
    io.write(mod:get_source("cuda"), "\n")
  elseif dump == "ptx" then
    io.write(mod:get_source("ptx") or "", "\n")
  end
  return mod
end

--- Lowers a PrimFunc through the pipeline without codegen: returns the lowered function
-- and, with {dump = true}, a list of {pass = name, ir = text} after each pass.
function tir.lower(func, opts)
  if type(func) == "table" and func.func then func = func.func end
  return core.lower(func, opts)
end

--- Runs func on host arrays: tir.interpret(func, {a, b, c}) (or a, b, c).  Raises
-- RuntimeError on out-of-bounds accesses, bad bindings, shape/dtype mismatches.
function tir.interpret(func, ...)
  if type(func) == "table" and func.func then func = func.func end
  return core.interpret(func, ...)
end

-- Module methods written in Lua.
local M = core.module_methods
--- mod:time_evaluator{number = 20, repeat_ = 3, warmup = 2} returns f(args...) -> median
-- seconds per call (CUDA events around `number` launches, median over `repeat_` samples),
-- plus the list of samples as a second value.
function M.time_evaluator(mod, opts)
  opts = opts or {}
  local number = opts.number or 10
  local rep = opts.repeat_ or opts["repeat"] or 3
  local warmup = opts.warmup or 2
  return function(...) return mod:time(warmup, number, rep, ...) end
end

return tir
