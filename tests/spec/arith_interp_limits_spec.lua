-- arith_interp_limits_spec.lua -- the simplifier stays polynomial, float -> int constant
-- folding agrees with the interpreter, the interpreter's allocations are capped, math
-- builtins need float dtypes (regressions from a fresh-user review).
local tir = require("tir")
local te = tir.te
local T = tir.script
local U = require("spec_util")

local function timed(f)
  local t0 = os.clock()
  local r = f()
  return r, os.clock() - t0
end

describe("simplifier work", function()
  local x, y, z = tir.var("x"), tir.var("y"), tir.var("z")
  it("is polynomial on nested min/max of linear terms", function()
    local e = x
    for n = 1, 64 do e = tir.max(e + 1, y + n) end
    local _, dt = timed(function() return tir.arith.simplify(e) end)
    assert.is_true(dt < 1, ("took %.2f s"):format(dt))
    e = x
    for n = 1, 64 do e = tir.max(e // 2 + 1, y % 4 + n) end
    _, dt = timed(function() return tir.arith.simplify(e) end)
    assert.is_true(dt < 1, ("floordiv chain took %.2f s"):format(dt))
  end)
  it("still simplifies nested min/max by bounds", function()
    local e = x
    for n = 1, 24 do e = tir.max(e + 1, y + n) end
    -- x in [0, 10), y in [100, 200): every max picks its y side, the last y + 24
    assert.are.equal("y + 24", tostring(tir.arith.simplify(e, {[x] = {0, 10}, [y] = {100, 200}})))
    assert.are.equal("x + 24", tostring(tir.arith.simplify(e, {[x] = {1000, 1010}, [y] = {0, 10}})))
  end)
  it("gives up (unsimplified, still correct) on an exponential expression DAG", function()
    local e = x
    for _ = 1, 40 do e = tir.max(e, y) + tir.min(e, z) end -- a tree of 2^40 nodes
    local _, dt = timed(function() return tir.arith.simplify(e) end)
    assert.is_true(dt < 2, ("took %.2f s"):format(dt))
    local s = tir.select(tir.lt(x, y), x + 1, y)
    for n = 1, 40 do s = tir.select(tir.lt(s, y + n), s + 1, y) end
    _, dt = timed(function() return tir.arith.can_prove(tir.ge(s, 0)) end)
    assert.is_true(dt < 2, ("took %.2f s"):format(dt))
  end)
  it("lowers the library GEMM schedules quickly, also after passes run by hand", function()
    local simt = require("tir.schedules.simt_gemm")
    local f = U.matmul(64, 64, 64)
    local sch = simt.schedule(f, {stages = 2, BM = 64, BN = 64, TY = 8, TX = 8})
    local _, dt = timed(function() return tir.lower(sch.mod) end)
    assert.is_true(dt < 5, ("lower took %.2f s"):format(dt))
    local cur = simt.schedule(f, {stages = 2}).mod
    _, dt = timed(function()
      for _, p in ipairs({"unroll_loop", "lower_thread_binding", "vectorize_loop", "compact_buffer_allocation"}) do
        cur = tir.run_pass(p, cur)
      end
      return pcall(tir.lower, cur)
    end)
    assert.is_true(dt < 5, ("passes + lower took %.2f s"):format(dt))
  end)
end)

describe("float -> int casts", function()
  local values = {1e20, -1e20, 0 / 0, 300.7, -300.7, 2 ^ 31, -2 ^ 31 - 1, 1.5e19, -0.9, 0.0, 2.5}
  local dtypes = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "bool"}
  it("fold as the interpreter computes them (truncate, saturate, NaN -> 0)", function()
    assert.are.equal("2147483647", tostring(tir.arith.simplify(tir.cast("int32", tir.const(1e20, "float32")))))
    for _, dt in ipairs(dtypes) do
      local f = T.prim_func("f", {A = T.Buffer({1}, dt), x = T.float64()}, function(A, x) A[{0}] = T.cast(dt, x) end)
      local a = tir.nd.empty({1}, dt)
      for _, v in ipairs(values) do
        tir.interpret(f, a, v)
        local folded = tir.cast(dt, tir.const(v, "float64"))
        assert.is_true(tir.is_node(folded, "IntImm"), dt)
        local want = folded.value
        if dt == "bool" then want = want ~= 0 and 1 or 0 end
        local got = a:get(0)
        if dt == "bool" then got = got and 1 or 0 end
        assert.are.equal(want, got, ("%s(%s): folded %s, interpreted %s"):format(dt, tostring(v), tostring(want), tostring(got)))
      end
    end
  end)
end)

describe("interpreter allocation limit", function()
  local function blown_up()
    local A = te.placeholder({64, 64}, "float32", "A")
    local B = te.compute({64, 64}, function(i, j) return A[{j, i}] + 1 end, "B")
    local f = te.create_prim_func({A, B})
    local sch = tir.Schedule(f)
    local As = sch:cache_read("B", 0, "global")
    sch:transform_layout(As, "A_global", function(i, j) return i * 1000000, j end) -- 4e9 elements
    return f, sch.mod
  end
  it("refuses an allocation over the limit, naming the buffer and its size", function()
    local f, g = blown_up()
    local args = tir.testing.random_args(f, 1)
    U.expect_error(function() tir.interpret(g, args) end, "RuntimeError in interpret",
                   "buffer A_global needs 4032000064 elements (16128000256 bytes)", "allocation limit of 4294967296 bytes")
  end)
  it("is configurable", function()
    local f = U.matmul(16, 16, 16)
    local sch = tir.Schedule(f)
    sch:cache_read(sch:get_block("C"), 0, "global") -- A
    local args = tir.testing.random_args(f, 1)
    local old = tir.interpret_alloc_limit(256) -- the 16x16 float copy needs 1024 bytes
    local ok, e = pcall(tir.interpret, sch.mod, args)
    tir.interpret_alloc_limit(old)
    assert.is_false(ok)
    assert.is_truthy(tostring(e):find("needs 256 elements (1024 bytes), over the interpreter's allocation limit of 256", 1, true))
    assert.are.equal(old, tir.interpret_alloc_limit())
    tir.interpret(sch.mod, args) -- fits again
    U.expect_error(function() tir.interpret_alloc_limit(-1) end, "must be a positive number of bytes")
  end)
end)

describe("math builtins", function()
  it("need a float dtype", function()
    U.expect_error(function() tir.call("int32", "exp", tir.var("i")) end, "TypeError in call",
                   "math builtin 'exp' computes in floating point, but the dtype given is int32")
    U.expect_error(function() T.call("int32", "sqrt", tir.var("i")) end, "'sqrt'")
    U.expect_error(function() tir.make("Call", {op = "log", args = {tir.const(1.0, "float32")}}, "int32") end,
                   "math builtin 'log' computes in floating point")
    -- abs takes integers; float builtins take integer arguments (converted)
    local f = T.prim_func("f", {A = T.Buffer({4}, "int32"), B = T.Buffer({4}, "float32")}, function(A, B)
      for i in T.serial(4) do
        A[{i}] = T.call("int32", "abs", A[{i}])
        B[{i}] = T.call("float32", "sqrt", A[{i}]) + T.call("float32", "pow", A[{i}], 2)
      end
    end)
    local a, b = tir.nd.array({-4, 9, -16, 0}, "int32"), tir.nd.empty({4})
    tir.interpret(f, a, b)
    assert.are.same({4, 9, 16, 0}, a:to_table())
    assert.are.same({18, 84, 260, 0}, b:to_table())
    -- abs of the most negative int64 wraps (as CUDA's llabs) instead of overflowing
    local g = T.prim_func("g", {C = T.Buffer({1}, "int64")}, function(C) C[{0}] = T.call("int64", "abs", C[{0}]) end)
    local c = tir.nd.array({math.mininteger}, "int64")
    tir.interpret(g, c)
    assert.are.equal(math.mininteger, c:get(0))
  end)
end)
