-- input_checks_spec.lua -- user input that used to be truncated, wrapped, overflowed or
-- silently dropped is refused with a clear tir.Error (regressions from a fresh-user review).
local tir = require("tir")
local te = tir.te
local T = tir.script
local U = require("spec_util")

local function elementwise(shape, dtype)
  local A = te.placeholder(shape, dtype or "float32", "A")
  local B = te.compute(shape, function(...) return A[{...}] + 1 end, "B")
  return te.create_prim_func({A, B})
end

describe("integer overflow in shapes and loop primitives", function()
  it("refuses shapes whose element count overflows int64", function()
    U.expect_error(function() te.placeholder({math.maxinteger, math.maxinteger}, "float32", "A") end,
                   "ValueError", "buffer A has more elements than a 64-bit integer can count")
    U.expect_error(function() te.placeholder({1 << 32, 1 << 32}, "float32", "A") end, "64-bit integer")
    U.expect_error(function()
      T.prim_func("f", {A = T.Buffer({1 << 40, 1 << 40}, "float32")}, function(A) end)
    end, "64-bit integer")
  end)

  it("split: huge factors give clear messages, no overflow", function()
    local sch = tir.Schedule(U.matmul(64, 64, 64))
    local i = sch:get_loops(sch:get_block("C"))
    U.expect_error(function() sch:split(i, {math.maxinteger, -1}) end, "ScheduleError in split",
                   "factor 1 is 9223372036854775807, which does not fit the 32-bit loop variable i")
    U.expect_error(function() sch:split(i, {1 << 40, 1 << 40}) end, "the product of the factors overflows a 64-bit integer")
    U.expect_error(function() sch:split(i, {1 << 20, 1 << 20}) end, "does not fit the 32-bit loop variable i")
    -- an inferred factor on a maximal extent: the product would overflow
    local sch2 = tir.Schedule(elementwise({math.maxinteger}))
    local j = sch2:get_loops(sch2:get_block("B"))
    U.expect_error(function() sch2:split(j, {nil, 256}) end,
                   "the inferred factor 1 is 36028797018963968; times the other factors (256) it overflows")
    -- a dividing inferred factor still works at that size
    local a, b = sch2:split(j, {nil, 7})
    assert.are.equal(1317624576693539401, sch2:get(a).extent.value)
  end)

  it("fuse refuses an extent product that does not fit the loop variable", function()
    local sch = tir.Schedule(elementwise({65536, 65536}))
    local i, j = sch:get_loops(sch:get_block("B"))
    U.expect_error(function() sch:fuse(i, j) end, "ScheduleError in fuse",
                   "the fused extent (the product of the loop extents) does not fit the 32-bit loop variable")
    U.expect_error(function() sch:fuse(i, i) end, "loop i is given twice")
  end)
end)

describe("schedule argument messages", function()
  local function sched()
    local sch = tir.Schedule(U.matmul(64, 64, 64))
    return sch, sch:get_block("C"), sch:get_loops(sch:get_block("C"))
  end
  it("say the offending factor", function()
    local sch, _, i = sched()
    U.expect_error(function() sch:split(i, {2.5, nil}) end, "factor 1 must be an integer or nil, got 2.5 (a float)")
    U.expect_error(function() sch:split(i, {2 ^ 31, 2}) end, "got 2147483648.0 (a float)")
    U.expect_error(function() sch:split(i, {0, nil}) end, "factor 1 is 0; factors must be positive")
    local many = {64}
    for n = 2, 70 do many[n] = 1 end
    U.expect_error(function() sch:split(i, many) end, "got 70 factors; split takes at most 64")
  end)
  it("refuse integers outside the 32-bit range instead of truncating them", function()
    local sch, blk, _, _, k = sched()
    local c = sch:cache_read(blk, 0, "shared")
    U.expect_error(function() sch:storage_align(c, 0, 0, math.maxinteger, 8) end,
                   "ValueError in storage_align", "factor is 9223372036854775807, outside the 32-bit integer range")
    local _ = k
  end)
  it("refuse forged handles", function()
    local sch = sched()
    U.expect_error(function() sch:get_loops(setmetatable({uid = "abc"}, tir.Schedule.BlockRV)) end,
                   "TypeError in get_loops", "not a valid BlockRV")
    U.expect_error(function() sch:split(setmetatable({var = "zz"}, tir.Schedule.LoopRV), {nil, 4}) end,
                   "TypeError in split", "not a valid LoopRV")
    U.expect_error(function() sch:split(setmetatable({}, tir.Schedule.LoopRV), {nil, 4}) end, "not a valid LoopRV")
  end)
  it("te.placeholder shows a float extent", function()
    U.expect_error(function() te.placeholder({2 ^ 31}) end, "shape[1] must be an integer", "2147483648.0 (a float)")
    U.expect_error(function() te.placeholder({1.5}) end, "got 1.5 (a float)")
  end)
end)

describe("NDArray and scalar arguments refuse values their dtype cannot hold", function()
  it("nd.array", function()
    U.expect_error(function() tir.nd.array({1000, -1000}, "int8") end, "ValueError in nd.array",
                   "element [1] is 1000, outside int8's range [-128, 127]")
    U.expect_error(function() tir.nd.array({1, 127.9}, "int8") end, "element [2] is 127.90000000000001, not an integer")
    U.expect_error(function() tir.nd.array({0 / 0}, "int32") end, "element [1] is NaN")
    U.expect_error(function() tir.nd.array({{1, 2}, {3, math.huge}}, "int32") end, "element [2][2] is inf")
    U.expect_error(function() tir.nd.array({2 ^ 40}, "int32") end, "outside int32's range")
    U.expect_error(function() tir.nd.array({-1}, "uint8") end, "outside uint8's range [0, 255]")
    U.expect_error(function() tir.nd.array({a = 1}) end, "a table has the key 'a'")
    U.expect_error(function() tir.nd.array({1, nil, 3}) end, "element [2] is nil")
    U.expect_error(function() tir.nd.array({"1"}) end, "element [1] is a string")
    -- exact: integral floats and int64 values beyond 2^53 survive
    assert.are.same({127, -128, 3}, tir.nd.array({127, -128, 3.0}, "int8"):to_table())
    assert.are.equal(math.maxinteger, tir.nd.array({math.maxinteger}, "int64"):get(0))
    assert.are.same({1, 0}, tir.nd.array({true, false}, "int32"):to_table())
  end)
  it("get/set report the index and the value", function()
    local a = tir.nd.array({1, 2, 3}, "int8")
    U.expect_error(function() a:get(3) end, "ValueError in NDArray:get", "flat index 3 is outside [0, 3)")
    U.expect_error(function() a:set(1, 2.5) end, "NDArray:set", "2.5, not an integer")
    U.expect_error(function() a:get("x") end, "TypeError in NDArray:get")
    local b = tir.nd.array({{1, 2}, {3, 4}})
    U.expect_error(function() b:get(0, 2) end, "index 2 is 2, outside [0, 2)")
    U.expect_error(function() b:copyfrom({1}) end, "TypeError in NDArray:copyfrom", "bad argument #1 (tir.NDArray expected")
    U.expect_error(function() b:copyfrom(tir.nd.array({1, 2})) end, "the shapes differ")
    U.expect_error(function() tir.nd.array({1, 2}):copyfrom(tir.nd.array({1, 2}, "int32")) end,
                   "the arrays differ in dtype: the destination is float32, the source int32")
  end)
  it("integer scalar parameters", function()
    local g = T.prim_func("g", {A = T.Buffer({4}, "float32"), n = T.int8()}, function(A, n)
      for i in T.serial(4) do A[{i}] = T.cast("float32", n) end
    end)
    local a = tir.nd.empty({4})
    tir.interpret(g, a, 7)
    assert.are.equal(7, a:get(0))
    tir.interpret(g, a, -3.0)
    assert.are.equal(-3, a:get(0))
    U.expect_error(function() tir.interpret(g, a, 7.5) end, "argument 2 (n) is 7.5, not an integer")
    U.expect_error(function() tir.interpret(g, a, 300) end, "argument 2 (n) is 300, outside int8's range")
    U.expect_error(function() tir.interpret(g, a, 0 / 0) end, "argument 2 (n) is NaN")
    U.expect_error(function() tir.interpret(g, a, "7") end, "argument 2 (n) must be a number, got string")
  end)
  it("assert_allclose reports a NaN mismatch and checks its options", function()
    U.expect_error(function() tir.testing.assert_allclose(tir.nd.array({1, 0 / 0}), tir.nd.array({1, 2})) end,
                   "actual NaN, desired 2", "1 element(s) are NaN in one array and a number in the other")
    U.expect_error(function() tir.testing.assert_allclose({1}, {1}, {rtol = "x"}) end, "option rtol must be a non-negative number")
  end)
  it("random_args and nd.random check their arguments", function()
    U.expect_error(function() tir.testing.random_args("x") end, "TypeError in random_args", "expected a PrimFunc")
    U.expect_error(function() tir.nd.random({4}, "float32", nil, {seed = "x"}) end, "option seed must be an integer")
  end)
  it("nd.random refuses integer bounds outside the dtype (they wrapped: int8 200 stored as -56)", function()
    U.expect_error(function() tir.nd.random({4}, "int8", nil, {low = -200, high = 100}) end, "ValueError in nd.random",
                   "low = -200, high = 100: the range of int8 values is [-128, 127]")
    U.expect_error(function() tir.nd.random({4}, "int8", nil, {low = 0, high = 128}) end, "the range of int8 values is [-128, 127]")
    U.expect_error(function() tir.nd.random({4}, "uint8", nil, {low = -1, high = 255}) end, "the range of uint8 values is [0, 255]")
    U.expect_error(function() tir.nd.random({4}, "int16", nil, {low = 0, high = 40000}) end, "the range of int16 values")
    U.expect_error(function() tir.nd.random({4}, "int32", nil, {low = 0.25, high = 0.75}) end, "holds no int32 value")
    -- the ends themselves are drawn
    local a = tir.nd.random({4096}, "int8", nil, {seed = 7, low = -128, high = 127})
    local lo, hi = 0, 0
    for e = 0, 4095 do lo, hi = math.min(lo, a:get(e)), math.max(hi, a:get(e)) end
    assert.are.same({-128, 127}, {lo, hi})
    local u = tir.nd.random({4096}, "uint8", nil, {seed = 7, low = 0, high = 255})
    hi = 0
    for e = 0, 4095 do hi = math.max(hi, u:get(e)) end
    assert.are.equal(255, hi)
  end)
end)

describe("T script validates stores, loops and conditions", function()
  local function fn(body, shape, dtype)
    return function() T.prim_func("f", {A = T.Buffer(shape or {4}, dtype or "float32")}, body) end
  end
  it("stores", function()
    U.expect_error(fn(function(A) A[{0}] = 1 end, {4, 4}), "store to A: A has 2 dimension(s) but was indexed with 1 index(es)")
    U.expect_error(fn(function(A) A[{nil}] = 1 end), "indexed with 0 index(es)")
    U.expect_error(fn(function(A) A[{1.5}] = 1 end), "index 1 must be an integer", "1.5, not an integer")
    U.expect_error(fn(function(A) A[{T.float32(1)}] = 1 end), "index 1 must be an integer", "float32")
    U.expect_error(fn(function(A) A[{T.Ramp(0, 1, 4)}] = T.Broadcast(T.float32(1), 8) end, {8}),
                   "the value has 8 lane(s) but the index addresses 4 element(s)")
    U.expect_error(fn(function(A) A[{0}] = 1.7 end, {4}, "int32"), "1.7 is not an integer, but A holds int32")
    -- the valid forms still build
    fn(function(A) A[{T.Ramp(0, 1, 4)}] = T.Broadcast(T.float32(1), 4) end, {8})()
    fn(function(A) A[{1}] = 2.0 end, {4}, "int32")()
  end)
  it("loops", function()
    U.expect_error(fn(function(A) for _ in T.grid() do A[{0}] = 1 end end), "T.grid needs at least one extent")
    U.expect_error(fn(function(A) for i in T.grid(-5) do A[{i}] = 1 end end), "extent 1 is negative (-5)")
    U.expect_error(fn(function(A) for i in T.grid(2.5) do A[{i}] = 1 end end), "2.5, not an integer")
    U.expect_error(fn(function(A) for i in T.grid("4") do A[{i}] = 1 end end), "got string")
    U.expect_error(fn(function(A) for i in T.serial(4, 0) do A[{i}] = 1 end end), "the loop range [4, 0) is reversed")
    U.expect_error(fn(function(A) for i in T.serial(-2) do A[{i}] = 1 end end), "the loop extent is negative (-2)")
    fn(function(A) for i in T.grid(0) do A[{i}] = 1 end end)() -- empty loops are fine
  end)
  it("conditions", function()
    U.expect_error(fn(function(A)
      for i in T.serial(4) do
        T.block("b", function() local vi = T.axis.remap("S", {i}) T.where(3.5) A[{vi}] = 1 end)
      end
    end), "T.where needs a boolean condition", "got 3.5")
    U.expect_error(fn(function(A) for i in T.serial(4) do T.If(A[{i}], function() A[{i}] = 1 end) end end),
                   "T.If needs a boolean condition", "dtype float32")
    local A = te.placeholder({4}, "float32", "A")
    local k = te.reduce_axis({0, 4}, "k")
    U.expect_error(function() te.compute({1}, function(_) return te.sum(A[{k}], {k}, A[{k}]) end, "B") end,
                   "TypeError in te.sum", "the where condition must be a boolean expression", "float32")
  end)
  it("tir.make checks stores and conditions", function()
    local A = tir.buffer("A", {4, 4}, "float32")
    U.expect_error(function() tir.make("BufferStore", {buffer = A, value = tir.const(1, "float32"), indices = {0}}) end,
                   "A has 2 dimension(s) but was indexed with 1 index(es)")
    U.expect_error(function() tir.make("BufferStore", {buffer = A, value = tir.const(1, "int32"), indices = {0, 0}}) end,
                   "the value is int32 but A holds float32")
    U.expect_error(function()
      tir.make("IfThenElse", {cond = tir.const(1, "int32"), then_case = tir.make("Evaluate", {value = 0})})
    end, "IfThenElse.cond must be a boolean expression")
  end)
end)

describe("arguments of the Lua library are checked (tir.Error naming the function)", function()
  local function sched()
    local sch = tir.Schedule(U.matmul(16, 16, 16))
    return sch, sch:get_block("C"), sch:get_loops(sch:get_block("C"))
  end
  it("schedule methods", function()
    local sch, blk, i = sched()
    U.expect_error(function() sch:apply_trace(nil) end, "TypeError in apply_trace", "got nil")
    U.expect_error(function() sch:cache_read(blk, 0, "shared", "C") end, "TypeError in cache_read",
                   "consumer_blocks must be a list of blocks")
    U.expect_error(function() sch:annotate(i, "x", {a = 1}) end, "TypeError in annotate", "must be a list")
    sch:cache_read(blk, 0, "shared", {"C"}) -- the list form works
  end)
  it("TensorIntrin.get, arith functions", function()
    U.expect_error(function() tir.TensorIntrin.get(nil) end, "TypeError in TensorIntrin.get", "must be a string")
    U.expect_error(function() tir.arith.detect_iter_map() end, "TypeError in arith.detect_iter_map", "bad argument #1 (")
  end)
  it("build and lower options", function()
    local f = U.matmul(16, 16, 16)
    local sch = tir.Schedule(f)
    local i, j = sch:get_loops(sch:get_block("C"))
    sch:bind(i, "blockIdx.x")
    sch:bind(j, "threadIdx.x")
    U.expect_error(function() tir.build(sch, "cuda", {dump = "yes"}) end, "TypeError in build", "option dump must be a boolean")
    U.expect_error(function() tir.build(sch, "cuda", {compile = 0}) end, "option compile must be a boolean")
    U.expect_error(function() tir.build(sch, "cuda", {unroll_max_extent = "x"}) end, "unroll_max_extent must be a non-negative integer")
    U.expect_error(function() tir.build(sch, "cuda", {unroll_max_extent = -5}) end, "got -5")
    U.expect_error(function() tir.build(sch, "cuda -arch=sm_80", {arch = "sm_90"}) end,
                   "the target says -arch=sm_80 but opts.arch is 'sm_90'")
    U.expect_error(function() tir.lower(sch, {dump = 1}) end, "TypeError in lower", "option dump must be a boolean")
    U.expect_error(function() tir.lower(sch, {dumpp = true}) end, "unknown option 'dumpp'")
    assert.is_truthy(tir.build(sch, "cuda -arch=sm_80", {arch = "sm_80", compile = false}))
  end)
  it("T script errors are tir.Errors at the user's line", function()
    local ok, e = pcall(function() T.prim_func("f", {A = T.Buffer({4})}, function(A) for i in T.grid(2.5) do A[{i}] = 1 end end) end)
    assert.is_false(ok)
    assert.are.equal("table", type(e))
    assert.are.equal("ValueError", e.kind)
    assert.is_truthy(tostring(e):find("input_checks_spec.lua:%d+: ValueError in T script"))
  end)
end)
