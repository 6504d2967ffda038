-- call_extern_spec.lua -- T.call_extern / T.call_pure_extern (TVM's tir.call_extern): a named
-- device function passed through to the CUDA C; the interpreter and the simulator refuse it
-- unless a CPU model is registered (tir.register_extern_model / tir.register_extern).
local tir = require("tir")
local T = tir.script
local U = require("spec_util")

local function nvrtc() return (tir.core.nvrtc_available and tir.core.nvrtc_available()) ~= false end

-- B[i] = spec_popc(A[i]) + spec_mul(A[i], 3), bound to threads when `gpu`
local function func(gpu, pop, mul)
  local f = T.prim_func("f", {A = T.Buffer({64}, "int32"), B = T.Buffer({64}, "int32")}, function(A, B)
    for i in T.grid(64) do
      T.block("b", function()
        local vi = T.axis.remap("S", {i})
        B[{vi}] = T.call_pure_extern("int32", pop or "spec_popc", A[{vi}]) + T.call_extern("int32", mul or "spec_mul", A[{vi}], 3)
      end)
    end
  end)
  if not gpu then return f end
  local sch = tir.Schedule(f)
  local i = sch:get_loops(sch:get_block("b"))
  local bx, tx = sch:split(i, {nil, 32})
  sch:bind(bx, "blockIdx.x")
  sch:bind(tx, "threadIdx.x")
  return sch.mod
end

local function popc(x)
  local n = 0
  x = x & 0xffffffff
  while x ~= 0 do n, x = n + (x & 1), x >> 1 end
  return n
end

describe("call_extern", function()
  it("prints as T.call_extern / T.call_pure_extern and loads back", function()
    local f = func()
    local s = tostring(f)
    assert.matches('T.call_pure_extern%("int32", "spec_popc", A%[{vi}%]%)', s)
    assert.matches('T.call_extern%("int32", "spec_mul", A%[{vi}%], 3%)', s)
    U.assert_roundtrip(f)
    local c = tir.call_extern("float32", "__expf", 1.5)
    assert.are.equal("call_extern", c.op)
  end)

  it("the interpreter and the simulator refuse a call without a CPU model, naming it", function()
    local f = func(false, "spec_nomodel_popc", "spec_nomodel_mul")
    local args = tir.testing.random_args(f, 1)
    U.expect_error(function() tir.interpret(f, args) end, "RuntimeError in interpret",
                   "call_pure_extern 'spec_nomodel_popc' is device code that runs on the GPU only",
                   'tir.register_extern_model("spec_nomodel_popc"')
    local mod = tir.build(func(true, "spec_nomodel_popc", "spec_nomodel_mul"), "cuda", {compile = false})
    U.expect_error(function() tir.simulate(mod, args) end, "spec_nomodel_popc", "register a CPU model")
  end)

  it("runs registered CPU models in the interpreter and the simulator, bit-exact", function()
    tir.register_extern_model("spec_popc", popc)
    tir.register_extern("spec_mul", {cuda = "__device__ int spec_mul(int a, int b) { return a * b; }",
                                     model = function(a, b) return a * b end})
    local f = func()
    local args = tir.testing.random_args(f, 3)
    tir.interpret(f, args)
    local a, b = args[1]:to_table(), args[2]:to_table()
    for i = 1, 64 do assert.are.equal(popc(a[i]) + ((a[i] * 3 + 2 ^ 31) % 2 ^ 32 - 2 ^ 31), b[i]) end
    local mod = tir.build(func(true), "cuda", {compile = false})
    local rep = tir.simulate(mod, tir.testing.random_args(f, 3), {reference = f})
    assert.are.equal(0, rep.n_issues)
  end)

  it("passes the call through to the CUDA C (a CUDA built-in, a registered source emitted once)", function()
    tir.register_extern("spec_mul", {cuda = "__device__ int spec_mul(int a, int b) { return a * b; }",
                                     model = function(a, b) return a * b end})
    local mod = tir.build(func(true, "__popc"), "cuda -arch=sm_80", {compile = nvrtc()})
    local src = mod:get_source("cuda")
    assert.matches("__popc%(A%[", src)
    if nvrtc() then assert.matches("popc.b32", mod:get_source("ptx")) end
    assert.matches("spec_mul%(A%[[^%]]+%], 3%)", src)
    local _, n = src:gsub("__device__ int spec_mul", "")
    assert.are.equal(1, n)
    -- registering a model only keeps the CUDA source
    tir.register_extern_model("spec_mul", function(a, b) return a * b end)
    assert.matches("__device__ int spec_mul", tir.build(func(true), "cuda", {compile = false}):get_source("cuda"))
  end)

  it("refuses bad names, options, model results and arguments with tir.Errors", function()
    U.expect_error(function() tir.call_extern("int32", "1bad", 1) end, "call_extern", "C identifier")
    U.expect_error(function() T.call_pure_extern("int32", 5) end, "call_pure_extern", "C identifier")
    U.expect_error(function() T.call_extern("floaty", "__expf", 1.0) end, "TypeError in call_extern", "unknown dtype 'floaty'")
    -- the third argument is argument #3 (the binding inserts the op name: it said #4)
    U.expect_error(function() T.call_pure_extern("float32", "__expf", {}) end, "TypeError in call_pure_extern",
                   "bad argument #3", "expression, buffer, number or string expected")
    U.expect_error(function() tir.register_extern("a-b", {}) end, "'a-b' is not a C function name")
    U.expect_error(function() tir.register_extern("ok_name", {modle = print}) end, "unknown option 'modle' (did you mean 'model'?)")
    U.expect_error(function() tir.register_extern("ok_name", {cuda = 3}) end, "cuda must be a string")
    tir.register_extern_model("spec_popc", function() return 1.5 end)
    tir.register_extern_model("spec_mul", function() error("model exploded") end)
    local f = func()
    local args = tir.testing.random_args(f, 1)
    U.expect_error(function() tir.interpret(f, args) end, "the CPU model of call_pure_extern 'spec_popc' failed",
                   "returned number 1.5", "dtype is int32")
    tir.register_extern_model("spec_popc", popc)
    U.expect_error(function() tir.interpret(f, args) end, "model exploded")
    -- vector arguments have no scalar model
    local g = T.prim_func("g", {A = T.Buffer({4}, "int32"), B = T.Buffer({4}, "int32")}, function(A, B)
      T.block("root", function()
        B[{T.Ramp(0, 1, 4)}] = T.call_pure_extern("int32x4", "spec_popc", A[{T.Ramp(0, 1, 4)}])
      end)
    end)
    U.expect_error(function() tir.interpret(g, tir.testing.random_args(g, 1)) end, "argument 1 of call_pure_extern 'spec_popc' is int32x4",
                   "scalar numbers only")
  end)
end)
