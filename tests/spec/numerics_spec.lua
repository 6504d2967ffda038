-- numerics_spec.lua -- the oracle means what the GPU does (docs/ARCHITECTURE.md "Numerics"):
-- the rules themselves (round half to even, saturating float -> int casts, one rounding into
-- float16/bfloat16, wrapping narrow integers, shifts, min/max with NaN), the interpreter and
-- the simulator agreeing bit for bit on every case of numerics_cases.lua, the CUDA C and PTX
-- using the instructions that give those results, tir.if_then_else being lazy and tir.Select
-- eager, and the math shorthands (tir.exp, T.exp, ...).  gpu_numerics_spec.lua runs the same
-- cases on the GPU.
local tir = require("tir")
local T = tir.script
local te = tir.te
local U = require("spec_util")
local C = require("numerics_cases")

-- out[i] = fn(A[i]) (and B[i]) interpreted on the given values; returns the output array
local function run1(in_dt, out_dt, values, fn, in2)
  local n = #values
  local A = te.placeholder({n}, in_dt, "A")
  local B = in2 and te.placeholder({n}, in2.dtype, "B")
  local Out = te.compute({n}, function(i) return fn(A[{i}], B and B[{i}]) end, "C")
  assert.are.equal(out_dt, Out.dtype)
  local f = te.create_prim_func(B and {A, B, Out} or {A, Out})
  local a = tir.nd.array(values, in_dt)
  local o = tir.nd.empty({n}, out_dt)
  local args = B and {a, tir.nd.array(in2.values, in2.dtype), o} or {a, o}
  tir.interpret(f, args)
  return o, f
end

describe("numerics rules", function()
  it("round is half to even (TVM's tir.round; PTX cvt.rni), floor/ceil/trunc exact", function()
    local v = {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, 0.49999997, 2.5000002}
    for _, dt in ipairs({"float32", "float16", "float64", "bfloat16"}) do
      local o = run1(dt, dt, v, function(x) return tir.round(x) end)
      local want = {0, 2, 2, -0.0, -2, -2, 4, 0, 3}
      if dt == "bfloat16" or dt == "float16" then want[9] = 2 end -- 2.5000002 is 2.5 there
      for i = 1, #v do assert.are.equal(want[i], o:get(i - 1), dt .. " round " .. v[i]) end
      assert.are.equal(-1, 1 / o:get(3) < 0 and -1 or 1, "round(-0.5) is -0.0")
    end
    local o = run1("float32", "float32", {-2.5, 2.5, -0.3}, function(x) return tir.nearbyint(x) end)
    assert.are.same({-2, 2, -0.0}, o:to_table())
    o = run1("float32", "float32", {-2.5, 2.7, -0.3}, function(x) return tir.floor(x) end)
    assert.are.same({-3, 2, -1}, o:to_table())
  end)

  it("float -> int casts truncate toward zero and saturate, NaN gives 0 (PTX cvt.rzi)", function()
    local nan, inf = 0 / 0, math.huge
    local v = {300.0, -300.0, 127.9, -128.9, nan, inf, -inf, 3.99, -3.99, -0.0}
    assert.are.same({127, -128, 127, -128, 0, 127, -128, 3, -3, 0}, run1("float32", "int8", v, function(x) return tir.cast("int8", x) end):to_table())
    assert.are.same({255, 0, 127, 0, 0, 255, 0, 3, 0, 0}, run1("float32", "uint8", v, function(x) return tir.cast("uint8", x) end):to_table())
    assert.are.same({300, -300, 127, -128, 0, 32767, -32768, 3, -3, 0}, run1("float64", "int16", v, function(x) return tir.cast("int16", x) end):to_table())
    local o = run1("float64", "int64", {1e19, -1e19, nan, 2 ^ 63}, function(x) return tir.cast("int64", x) end)
    assert.are.same({math.maxinteger, math.mininteger, 0, math.maxinteger}, o:to_table())
    o = run1("float64", "uint64", {2e19, -1, 1.8446744073709550e19}, function(x) return tir.cast("uint64", x) end)
    assert.are.same({-1, 0, -2048}, {o:get_bits(0), o:get_bits(1), o:get_bits(2)}) -- UINT64_MAX, 0, 2^64 - 2048
    o = run1("float16", "int32", {65504, -65504, 1 / 0}, function(x) return tir.cast("int32", x) end)
    assert.are.same({65504, -65504, 2147483647}, o:to_table())
    -- float -> bool: x != 0 and not NaN
    o = run1("float32", "bool", {nan, -0.0, 0.1, -inf}, function(x) return tir.cast("bool", x) end)
    assert.are.same({false, false, true, true}, {o:get(0), o:get(1), o:get(2), o:get(3)})
    -- the constant folder follows the same rule
    assert.are.equal(127, tir.cast("int8", tir.const(300.0, "float32")).value)
    assert.are.equal(0, tir.cast("int32", tir.const(0 / 0, "float32")).value)
  end)

  it("float64 / int64 -> float16 / bfloat16 round once (not through float32)", function()
    -- 1 + 2^-11 + 2^-40: float32 makes it 1 + 2^-11, a tie that goes to 1.0; one rounding gives 1 + 2^-10
    local x = 1 + 2 ^ -11 + 2 ^ -40
    assert.are.equal(0x3c01, run1("float64", "float16", {x}, function(v) return tir.cast("float16", v) end):get_bits(0))
    assert.are.equal(0x3f81, run1("float64", "bfloat16", {1 + 2 ^ -8 + 2 ^ -40}, function(v) return tir.cast("bfloat16", v) end):get_bits(0))
    -- int64 2^25 + 2^17 + 1 -> bfloat16: float32 rounds the + 1 away and then ties to even (2^25)
    local o = run1("int64", "bfloat16", {(1 << 25) + (1 << 17) + 1}, function(v) return tir.cast("bfloat16", v) end)
    assert.are.equal((1 << 25) + (1 << 18), o:get(0))
    -- overflow to infinity only past the largest finite value plus half an ulp; subnormals kept
    o = run1("float32", "float16", {65519, 65520, -65520, 2 ^ -25, 1.5 * 2 ^ -25, 2 ^ -24, 0 / 0}, function(v) return tir.cast("float16", v) end)
    assert.are.same({0x7bff, 0x7c00, 0xfc00, 0x0000, 0x0001, 0x0001}, {o:get_bits(0), o:get_bits(1), o:get_bits(2), o:get_bits(3), o:get_bits(4), o:get_bits(5)})
    assert.is_true(C.is_nan_bits("float16", o:get_bits(6)))
    -- int -> float32 / float64: one rounding to nearest even
    o = run1("int64", "float32", {16777217, 16777219, math.maxinteger}, function(v) return tir.cast("float32", v) end)
    assert.are.same({16777216, 16777220, 2 ^ 63}, o:to_table())
    -- the NDArray stores floats the same way (one rounding)
    assert.are.equal(0x3c01, tir.nd.array({x}, "float16"):get_bits(0))
  end)

  it("narrow integers wrap inside expressions; division, modulo and abs at the limits", function()
    local o = run1("int8", "bool", {100, -100, 1}, function(a, b) return tir.lt(a + b, tir.const(0, "int8")) end,
                   {dtype = "int8", values = {100, -100, 1}})
    assert.are.same({true, false, false}, {o:get(0), o:get(1), o:get(2)}) -- 100 + 100 = -56
    o = run1("uint16", "uint16", {65535, 3}, function(a, b) return a * b end, {dtype = "uint16", values = {65535, 5}})
    assert.are.same({65535 * 65535 % 65536, 15}, o:to_table())
    local mn = -2147483648
    o = run1("int32", "int32", {mn, mn, -7, 7}, function(a, b) return tir.truncdiv(a, b) end, {dtype = "int32", values = {-1, 1, 2, -2}})
    assert.are.same({mn, mn, -3, -3}, o:to_table())
    o = run1("int32", "int32", {mn, -7, 7, -7}, function(a, b) return tir.floormod(a, b) end, {dtype = "int32", values = {-1, 2, -2, -2}})
    assert.are.same({0, 1, -1, -1}, o:to_table())
    o = run1("int32", "int32", {mn, -7, 7}, function(a, b) return tir.truncmod(a, b) end, {dtype = "int32", values = {-1, 2, -2}})
    assert.are.same({0, -1, 1}, o:to_table())
    o = run1("int8", "int8", {-128, -5, 5}, function(a) return tir.abs(a) end)
    assert.are.same({-128, 5, 5}, o:to_table())
    o = run1("uint32", "uint32", {4294967295, 7}, function(a) return tir.call("uint32", "abs", a) end)
    assert.are.same({4294967295, 7}, o:to_table())
    U.expect_error(function()
      run1("int32", "int32", {1}, function(a, b) return tir.truncdiv(a, b) end, {dtype = "int32", values = {0}})
    end, "integer division by zero")
  end)

  it("shift amounts are unsigned and shift everything out at the width or more (PTX shl/shr)", function()
    local amounts = {1, 31, 32, 40, 63, 64, 70, -1}
    local function sh(dt, x, op)
      local xs, am = {}, {}
      for i = 1, #amounts do
        xs[i] = x
        am[i] = dt:match("^uint") and amounts[i] < 0 and (1 << C.bits_of(dt)) + amounts[i] or amounts[i]
      end
      return run1(dt, dt, xs, function(a, b) return tir.call(dt, op, a, b) end, {dtype = dt, values = am}):to_table()
    end
    assert.are.same({2, -2147483648, 0, 0, 0, 0, 0, 0}, sh("int32", 1, "shift_left"))
    assert.are.same({-4, -1, -1, -1, -1, -1, -1, -1}, sh("int32", -8, "shift_right"))
    assert.are.same({0x40000000, 1, 0, 0, 0, 0, 0, 0}, sh("uint32", 0x80000000, "shift_right"))
    assert.are.same({-4, -1, -1, -1, -1, -1, -1, -1}, sh("int64", -8, "shift_right"))
    assert.are.same({0, 0, 0, 0, 0, 0, 0, 0}, sh("uint8", 0x80, "shift_left")) -- 0x100 wraps to 0 in uint8
  end)

  it("float min/max ignore a NaN operand and order -0.0 below +0.0 (fminf, PTX min.f32)", function()
    local nan = 0 / 0
    local o = run1("float32", "float32", {nan, 1, -0.0, 0.0, nan}, function(a, b) return tir.min(a, b) end,
                   {dtype = "float32", values = {1, nan, 0.0, -0.0, nan}})
    assert.are.same({1, 1}, {o:get(0), o:get(1)})
    assert.are.same({0x80000000, 0x80000000}, {o:get_bits(2), o:get_bits(3)})
    assert.is_true(o:get(4) ~= o:get(4))
    o = run1("float32", "float32", {-0.0, 0.0}, function(a, b) return tir.max(a, b) end, {dtype = "float32", values = {0.0, -0.0}})
    assert.are.same({0, 0}, {o:get_bits(0), o:get_bits(1)})
    -- the constant folder agrees
    assert.are.equal(1, tir.min(tir.const(nan, "float32"), tir.const(1.0, "float32")).value)
  end)

  it("sigmoid is 1 / (1 + exp(-x)) rounded step by step in the computing type", function()
    local o = run1("float32", "float32", {-89, 0, 89, -200}, function(x) return tir.sigmoid(x) end)
    assert.are.same({0, 0.5, 1, 0}, o:to_table()) -- exp(89) overflows float32 as on the GPU
  end)

  it("NDArray get_bits / set_bits give exact element bits", function()
    local a = tir.nd.empty({3}, "float16")
    a:set_bits(0, 0x7e01) -- a NaN with a payload
    a:set_bits(1, 0x8000)
    a:set(2, 1.5)
    assert.are.same({0x7e01, 0x8000, 0x3e00}, {a:get_bits(0), a:get_bits(1), a:get_bits(2)})
    local b = tir.nd.empty({1}, "uint64")
    b:set_bits(0, -1)
    assert.are.equal(-1, b:get_bits(0))
    U.expect_error(function() a:set_bits(0, 1.5) end, "NDArray:set_bits", "must be an integer")
  end)
end)

describe("numerics: interpreter and simulator", function()
  it("agree bit for bit on every case (casts, math builtins, operators; edge and random values)", function()
    local fails, n_cases = {}, 0
    for ci, case in ipairs(C.cases()) do
      local f, ins = C.build_case(case, 128, ci)
      local o1, o2 = tir.nd.empty({128}, case.out), tir.nd.empty({128}, case.out)
      local a1, a2 = {}, {}
      for k = 1, #ins do a1[k], a2[k] = ins[k], ins[k] end
      a1[#a1 + 1], a2[#a2 + 1] = o1, o2
      tir.interpret(f, a1)
      tir.simulate(f, a2)
      local st = C.compare(case.out, o1, o2) -- exact, NaN payloads too (one implementation)
      if st.mismatches > 0 or st.nan_payload > 0 then
        local e = st.examples[1] or {0, 0, 0}
        fails[#fails + 1] = ("%s: %d differ, e.g. [%d] interpreter %s simulator %s"):format(case.name, st.mismatches + st.nan_payload,
                                                                                           e[1], C.hex(case.out, e[2]), C.hex(case.out, e[3]))
      end
      n_cases = n_cases + 1
    end
    assert.is_true(n_cases > 500, "cases: " .. n_cases)
    assert.are.same({}, fails)
  end)
end)

describe("numerics: the CUDA C uses the instructions that give the interpreter's results", function()
  local function src_of(in_dt, out_dt, fn, in2, compile)
    local A = te.placeholder({64}, in_dt, "A")
    local B = in2 and te.placeholder({64}, in2, "B")
    local Out = te.compute({64}, function(i) return fn(A[{i}], B and B[{i}]) end, "C")
    local sch = tir.Schedule(te.create_prim_func(B and {A, B, Out} or {A, Out}))
    sch:bind(sch:get_loops(sch:get_block("C")), "threadIdx.x")
    local mod = tir.build(sch.mod, "cuda", {compile = compile or false})
    return mod:get_source("cuda"), compile and mod:get_source("ptx")
  end

  it("emits saturating cvt.rzi for float -> int, rint for round, one-rounding conversions", function()
    local s = src_of("float32", "int8", function(x) return tir.cast("int8", x) end)
    assert.is_truthy(s:find("tir_cvt_s8(A[", 1, true))
    assert.is_truthy(s:find('asm("cvt.rzi.s8.f32 %0, %1;"', 1, true))
    s = src_of("float16", "uint16", function(x) return tir.cast("uint16", x) end)
    assert.is_truthy(s:find("tir_cvt_u16(__half2float(A[", 1, true))
    s = src_of("float32", "bool", function(x) return tir.cast("bool", x) end)
    assert.is_truthy(s:find("tir_cvt_bool(A[", 1, true))
    s = src_of("float32", "float32", function(x) return tir.round(x) end)
    assert.is_truthy(s:find("rintf(", 1, true))
    assert.is_falsy(s:find("roundf(", 1, true))
    s = src_of("float64", "float16", function(x) return tir.cast("float16", x) end)
    assert.is_truthy(s:find("__double2half(A[", 1, true))
    s = src_of("int64", "bfloat16", function(x) return tir.cast("bfloat16", x) end)
    assert.is_truthy(s:find("__ll2bfloat16_rn((long long)(A[", 1, true))
    s = src_of("float16", "float16", function(x) return tir.exp(x) end)
    assert.is_truthy(s:find("__float2half_rn(expf(((float)__half2float(A[", 1, true))
    s = src_of("float32", "float32", function(a, b) return tir.min(a, b) end, "float32")
    assert.is_truthy(s:find("fminf(A[", 1, true))
  end)

  it("wraps narrow integer arithmetic and clamps shifts", function()
    local s = src_of("int8", "int8", function(a, b) return a + b end, "int8")
    assert.is_truthy(s:find("tir_sext8((A[((int)threadIdx.x)] + B[", 1, true))
    assert.is_truthy(s:find('asm("cvt.s32.s8 %0, %1;"', 1, true))
    s = src_of("uint16", "uint16", function(a, b) return a * b end, "uint16")
    assert.is_truthy(s:find("(((unsigned int)A[((int)threadIdx.x)] * (unsigned int)B[((int)threadIdx.x)]) & 0xffffu)", 1, true))
    s = src_of("int32", "int32", function(a, b) return tir.call("int32", "shift_left", a, b) end, "int32")
    assert.is_truthy(s:find("tir_shl32((unsigned int)(A", 1, true))
    s = src_of("int32", "int32", function(a) return tir.call("int32", "shift_right", a, tir.const(3, "int32")) end)
    assert.is_truthy(s:find("((int)((int)(A[((int)threadIdx.x)]) >> 3))", 1, true))
    s = src_of("int64", "int64", function(a) return tir.abs(a) end)
    assert.is_truthy(s:find("tir_iabs((long long)(A", 1, true))
  end)

  it("compiles every case and puts the chosen instructions into the PTX", function()
    if not tir.core.nvrtc_available() then
      pending("NVRTC is not installed: the CUDA C checks above ran, the PTX ones need it")
      return
    end
    local _, ptx = src_of("float32", "int8", function(x) return tir.cast("int8", x) end, nil, true)
    assert.is_truthy(ptx:find("cvt.rzi.s8.f32", 1, true))
    _, ptx = src_of("float32", "float32", function(x) return tir.round(x) end, nil, true)
    assert.is_truthy(ptx:find("cvt.rni.f32.f32", 1, true))
    _, ptx = src_of("float64", "float16", function(x) return tir.cast("float16", x) end, nil, true)
    assert.is_truthy(ptx:find("cvt.rn.f16.f64", 1, true))
    _, ptx = src_of("float32", "uint64", function(x) return tir.cast("uint64", x) end, nil, true)
    assert.is_truthy(ptx:find("cvt.rzi.u64.f32", 1, true))
  end)
end)

describe("tir.if_then_else is lazy, tir.Select eager (TVM)", function()
  -- a padding stage: B[i] = A[i - 1] inside, 0 on the border; A[-1] and A[n] exist on no side
  local function pad(builder, n)
    local A = te.placeholder({n}, "float32", "A")
    local B = te.compute({n + 2}, function(i)
      return builder(tir.And(tir.ge(i, 1), tir.lt(i, n + 1)), A[{i - 1}], tir.const(0, "float32"))
    end, "B")
    local sch = tir.Schedule(te.create_prim_func({A, B}))
    sch:bind(sch:get_loops(sch:get_block("B")), "threadIdx.x")
    return sch.mod
  end

  it("builds a Call that only evaluates the taken side (interpreter, simulator, codegen)", function()
    local x = tir.var("x", "float32")
    local c = tir.if_then_else(tir.lt(x, 1.0), x, 2)
    assert.are.equal("Call", c.kind)
    assert.are.equal("float32", c.dtype)
    assert.is_true(tir.structural_equal(c, T.if_then_else(tir.lt(x, 1.0), x, 2)))
    assert.are.equal("Select", tir.Select(tir.lt(x, 1.0), x, 2).kind)
    assert.are.equal("Select", tir.select(tir.lt(x, 1.0), x, 2).kind)
    assert.are.equal(x, tir.if_then_else(tir.const(true), x, 2.0)) -- a constant condition picks its side
    U.expect_error(function() tir.if_then_else(tir.Broadcast(tir.const(true), 4), x, x) end, "TypeError in if_then_else", "scalar bool")
    U.expect_error(function() tir.if_then_else(x == x, x, x) end, "Lua boolean")

    local f = pad(tir.if_then_else, 8)
    U.assert_roundtrip(f)
    assert.is_truthy(tostring(f):find("T.if_then_else(", 1, true))
    local a = tir.nd.array({1, 2, 3, 4, 5, 6, 7, 8})
    local b = tir.nd.empty({10})
    tir.interpret(f, {a, b})
    assert.are.same({0, 1, 2, 3, 4, 5, 6, 7, 8, 0}, b:to_table())
    local b2 = tir.nd.empty({10})
    tir.simulate(f, {a, b2})
    assert.are.same(b:to_table(), b2:to_table())
    local src = tir.build(f, "cuda", {compile = false}):get_source("cuda")
    assert.is_truthy(src:find(" ? A[", 1, true))
  end)

  it("Select evaluates both sides: the same padding stage reads out of bounds", function()
    U.expect_error(function() tir.interpret(pad(tir.Select, 8), {tir.nd.array({1, 2, 3, 4, 5, 6, 7, 8}), tir.nd.empty({10})}) end,
                   "out-of-bounds access A[-1]")
  end)
end)

describe("math shorthands (tir.exp, T.exp, ...) as TVM's", function()
  it("exist for every math builtin in tir and T and build the builtin's call", function()
    local x, y = tir.var("x", "float16"), tir.var("y", "float16")
    for _, b in ipairs(tir.core.math_builtins()) do
      assert.is_function(tir[b.name], b.name)
      assert.is_function(T[b.name], b.name)
      if b.kind == "float" or b.kind == "rounding" then
        local e = b.arity == 1 and tir[b.name](x) or tir[b.name](x, y)
        local want = b.arity == 1 and tir.call("float16", b.name, x) or tir.call("float16", b.name, x, y)
        assert.is_true(tir.structural_equal(e, want), b.name)
        assert.is_true(tir.structural_equal(e, b.arity == 1 and T[b.name](x) or T[b.name](x, y)), b.name)
      end
    end
    assert.are.equal(tir.pow, tir.power)
  end)

  it("follow TVM on integers and constants", function()
    local i, u = tir.var("i"), tir.var("u", "uint32")
    assert.are.equal(i, tir.round(i))
    assert.are.equal(i, T.floor(i))
    assert.are.equal(u, tir.abs(u))
    assert.are.equal("abs", tir.abs(i).op)
    assert.are.equal("fabs", tir.abs(tir.var("f", "float32")).op)
    assert.is_false(tir.isnan(i).value ~= 0)
    assert.are.equal("bool", tir.isnan(tir.var("f", "float32")).dtype)
    assert.are.equal("float32", tir.exp(1.5).dtype)
    assert.are.equal(127, tir.max_value("int8").value)
    assert.are.equal(math.mininteger, tir.min_value("int64").value)
    assert.are.equal(65504, tir.max_value("float16").value)
    assert.are.equal(-3.4028234663852886e38, T.min_value("float32").value)
    assert.are.equal(0, tir.min_value("uint8").value)
    assert.are.equal(-1, tir.max_value("uint64").value) -- 2^64 - 1 as Lua's integer pattern
    local f = T.prim_func("u", {A = T.Buffer({1}, "uint64")}, function(A) A[{0}] = T.max_value("uint64") end)
    assert.is_truthy(tostring(f):find('T.cast("uint64", T.int64(-1))', 1, true))
    U.assert_roundtrip(f)
    U.expect_error(function() tir.exp(i) end, "TypeError in tir.exp", "cast it first")
    U.expect_error(function() tir.pow(tir.var("f", "float32")) end, "TypeError in tir.pow", "takes 2 argument(s), got 1")
    U.expect_error(function() tir.call("float32", "exp", tir.var("f", "float32"), 1.0) end, "TypeError in call", "takes 1 argument(s), got 2")
    U.expect_error(function() tir.call("float32", "isnan", tir.var("f", "float32")) end, "gives a bool")
    U.expect_error(function() tir.call("float32", "shift_left", 1, 2) end, "needs an integer dtype")
  end)

  it("print as T.<name>(...) and load back", function()
    local f = T.prim_func("m", {A = T.Buffer({4}, "float32"), B = T.Buffer({4}, "float32"), M = T.Buffer({4}, "bool")},
      function(A, B, M)
        for i in T.serial(4) do
          B[{i}] = T.exp(A[{i}]) + T.pow(A[{i}], T.float32(2)) + T.round(A[{i}]) + T.sigmoid(A[{i}])
          M[{i}] = T.isnan(A[{i}])
        end
      end)
    local text = tostring(f)
    for _, name in ipairs({"T.exp(", "T.pow(", "T.round(", "T.sigmoid(", "T.isnan("}) do
      assert.is_truthy(text:find(name, 1, true), name)
    end
    U.assert_roundtrip(f)
  end)
end)
