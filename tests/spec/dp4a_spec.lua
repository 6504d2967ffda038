-- dp4a_spec.lua -- DP4A and prmt: the builtins (interpreter and simulator against a Lua model of
-- the PTX ISA's definitions, lane by lane), the int8x4 packing with prmt, the tensor intrinsics
-- (tir.intrin.dp4a) in the quantized GEMM schedule (interpreter-equivalent, simulated bit-exact),
-- a planted wrong k-pack order caught by the simulator, the sm_61 gate, the PTX instructions.
local tir = require("tir")
local T = tir.script
local U = require("spec_util")
local dp4a = require("tir.intrin.dp4a")
local qm = tir.ops.quantized_matmul
local qg = require("tir.schedules.qgemm")

local function nvrtc() return (tir.core.nvrtc_available and tir.core.nvrtc_available()) ~= false end

-- the PTX ISA's definitions, in Lua
local function byte(x, i) return (x >> (8 * i)) & 0xff end
local function s8(v) return v >= 128 and v - 256 or v end
local function wrap32(v) v = v & 0xffffffff; return v >= 2 ^ 31 and v - (1 << 32) or v end
local function ref_dp4a(a, b, c, as, bs)
  local acc = c
  for i = 0, 3 do
    local x, y = byte(a, i), byte(b, i)
    if as then x = s8(x) end
    if bs then y = s8(y) end
    acc = acc + x * y
  end
  return wrap32(acc)
end
local function ref_prmt(a, b, sel)
  local bytes = (a & 0xffffffff) | ((b & 0xffffffff) << 32)
  local d = 0
  for i = 0, 3 do
    local nib = (sel >> (4 * i)) & 0xf
    local v = (bytes >> (8 * (nib & 7))) & 0xff
    if nib & 8 ~= 0 then v = (v & 0x80) ~= 0 and 0xff or 0 end
    d = d | (v << (8 * i))
  end
  return wrap32(d)
end

-- out[i] = ptx_dp4a(a[i], b[i], c[i]) (or prmt(a, b, c)) over 64 threads
local function elementwise(op, as, bs)
  local f = T.prim_func("f", {A = T.Buffer({64}, "int32"), B = T.Buffer({64}, "int32"), C = T.Buffer({64}, "int32"),
                              D = T.Buffer({64}, "int32")}, function(A, B, C, D)
    for i in T.grid(64) do
      T.block("d", function()
        local vi = T.axis.remap("S", {i})
        if op == "dp4a" then
          D[{vi}] = T.call("int32", "ptx_dp4a", A[{vi}], B[{vi}], C[{vi}], as and "s32" or "u32", bs and "s32" or "u32")
        else
          D[{vi}] = T.call("int32", "ptx_prmt", A[{vi}], B[{vi}], C[{vi}])
        end
      end)
    end
  end)
  local sch = tir.Schedule(f)
  local bx, tx = sch:split(sch:get_loops(sch:get_block("d")), {nil, 32})
  sch:bind(bx, "blockIdx.x"); sch:bind(tx, "threadIdx.x")
  return f, sch.mod
end

local EXTREMES = {0, -1, 0x7f7f7f7f, -0x7f7f7f80, 0x80808080 - (1 << 32), 0x01ff80ff, 0x7fffffff, -0x80000000}

describe("ptx_dp4a and ptx_prmt", function()
  for _, v in ipairs({{"dp4a", true, true}, {"dp4a", false, true}, {"dp4a", true, false}, {"dp4a", false, false}, {"prmt"}}) do
    local op, as, bs = v[1], v[2], v[3]
    it(("%s%s: interpreter and simulator equal the PTX ISA's definition"):format(op, op == "dp4a" and
       ((as and ".s32" or ".u32") .. (bs and ".s32" or ".u32")) or ".b32"), function()
      local f, g = elementwise(op, as, bs)
      local args = tir.testing.random_args(f, 5)
      local a, b, c = args[1]:to_table(), args[2]:to_table(), args[3]:to_table()
      for i, x in ipairs(EXTREMES) do a[i], b[#EXTREMES + 1 - i], c[i + 8] = x, x, x end
      if op == "prmt" then for i = 1, 64 do c[i] = (i * 0x9e3779b1) & 0xffff end end
      args = {tir.nd.array(a, "int32"), tir.nd.array(b, "int32"), tir.nd.array(c, "int32"), tir.nd.empty({64}, "int32")}
      tir.interpret(f, args)
      local d = args[4]:to_table()
      for i = 1, 64 do
        local want = op == "dp4a" and ref_dp4a(a[i], b[i], c[i], as, bs) or ref_prmt(a[i], b[i], c[i])
        assert.are.equal(want, d[i])
      end
      local mod = tir.build(g, "cuda -arch=sm_80", {compile = false})
      local rep = tir.simulate(mod, {args[1], args[2], args[3], tir.nd.empty({64}, "int32")}, {reference = f})
      assert.are.equal(0, rep.n_issues)
    end)
  end

  it("pack4 puts four bytes in k order with three prmt", function()
    local f = T.prim_func("p", {X = T.Buffer({4}, "int8"), P = T.Buffer({1}, "int32")}, function(X, P)
      T.block("root", function() P[{0}] = dp4a.pack4(X[{0}], X[{1}], X[{2}], X[{3}]) end)
    end)
    local p = tir.nd.empty({1}, "int32")
    tir.interpret(f, {tir.nd.array({-128, 127, -1, 5}, "int8"), p})
    assert.are.equal(wrap32(0x80 | (0x7f << 8) | (0xff << 16) | (0x05 << 24)), p:to_table()[1])
    local _, n = tostring(f):gsub('"ptx_prmt"', "")
    assert.are.equal(3, n)
  end)

  it("refuses a bad operand type; builds for the oldest target (sm_75, above dp4a's sm_61)", function()
    local _, g = elementwise("dp4a", true, true)
    assert.matches("tir_dp4a_s32_s32", tir.build(g, "cuda -arch=sm_75", {compile = false}):get_source("cuda"))
    local h = T.prim_func("h", {A = T.Buffer({1}, "int32")}, function(A)
      T.block("root", function() A[{0}] = T.call("int32", "ptx_dp4a", A[{0}], A[{0}], A[{0}], "s8", "s32") end)
    end)
    U.expect_error(function() tir.interpret(h, {tir.nd.array({1}, "int32")}) end, 'must be "s32" or "u32"')
  end)
end)

describe("DP4A tensor intrinsics in the quantized GEMM", function()
  local function case(a_dt, b_dt)
    -- int32 out (no saturation hides a wrong product); the int8 requantization is covered by
    -- quantized_matmul_spec
    local o = {M = 64, N = 64, K = 64, a_dtype = a_dt, b_dtype = b_dt, a_zero_point = a_dt == "uint8" and 255 or -128,
               b_sums = "input", bias = true, out_dtype = "int32"}
    return qm(o), o
  end

  for _, ab in ipairs({{"int8", "int8"}, {"uint8", "int8"}, {"int8", "uint8"}}) do
    for _, load in ipairs({"word", "prmt"}) do
      it(("%s x %s, %s operands: tensorized with dp4a, interpreter-equivalent and simulated bit-exact"):format(ab[1], ab[2], load),
         function()
        local f = case(ab[1], ab[2])
        local sch = qg.schedule(f, {intrin = "dp4a", dp4a_load = load})
        local s = tostring(sch.mod)
        assert.matches(dp4a.name(ab[1], ab[2], load == "prmt", "shared", load), s, 1, true)
        U.assert_equiv(f, sch.mod)
        local mod = tir.build(sch.mod, "cuda -arch=sm_80", {compile = nvrtc()})
        local rep = tir.simulate(mod, tir.testing.random_args(f, 9), {reference = f})
        assert.are.equal(0, rep.n_issues)
        if nvrtc() then
          local ptx = mod:get_source("ptx")
          local want = ("dp4a.%s.%s"):format(ab[1] == "int8" and "s32" or "u32", ab[2] == "int8" and "s32" or "u32")
          assert.is_truthy(ptx:find(want, 1, true), want)
          -- words: one 32-bit shared load per operand, no byte packing
          assert.are.equal(load == "prmt", ptx:find("prmt.b32", 1, true) ~= nil)
          if load == "word" then assert.is_truthy(ptx:find("ld.shared.u32", 1, true) or ptx:find("ld.shared.b32", 1, true)) end
        end
      end)
    end
  end

  it("reinterpret: an int8x4 load as one int32 (lane 0 lowest), misaligned words caught by the simulator", function()
    local f = T.prim_func("r", {X = T.Buffer({8}, "int8"), P = T.Buffer({2}, "int32")}, function(X, P)
      for i in T.grid(2) do
        T.block("p", function()
          local vi = T.axis.remap("S", {i})
          P[{vi}] = T.call("int32", "reinterpret", X[{T.Ramp(vi * 4, 1, 4)}])
        end)
      end
    end)
    local p = tir.nd.empty({2}, "int32")
    tir.interpret(f, {tir.nd.array({-128, 127, -1, 5, 1, 2, 3, 4}, "int8"), p})
    assert.are.same({wrap32(0x80 | (0x7f << 8) | (0xff << 16) | (0x05 << 24)), 0x04030201}, p:to_table())
    U.expect_error(function()
      local g = T.prim_func("bad", {X = T.Buffer({8}, "int8"), P = T.Buffer({1}, "int16")}, function(X, P)
        T.block("root", function() P[{0}] = T.call("int16", "reinterpret", X[{T.Ramp(0, 1, 4)}]) end)
      end)
      tir.interpret(g, {tir.nd.empty({8}, "int8"), tir.nd.empty({1}, "int16")})
    end, "reinterpret from int8x4 to int16")
    -- a word at element 1: misaligned
    local h = T.prim_func("h", {X = T.Buffer({64}, "int8"), P = T.Buffer({32}, "int32")}, function(X, P)
      for i in T.grid(32) do
        T.block("p", function()
          local vi = T.axis.remap("S", {i})
          P[{vi}] = T.call("int32", "reinterpret", X[{T.Ramp(vi + 1, 1, 4)}])
        end)
      end
    end)
    local sch = tir.Schedule(h)
    sch:bind(sch:get_loops(sch:get_block("p")), "threadIdx.x")
    local mod = tir.build(sch.mod, "cuda", {compile = false})
    U.expect_error(function() tir.simulate(mod, {tir.nd.empty({64}, "int8"), tir.nd.empty({32}, "int32")}) end,
                   "not a multiple of 4", "misaligned")
  end)

  it("a planted wrong k-pack order is caught by the simulator against the interpreter", function()
    local f = case("uint8", "int8")
    local bad = function(x0, x1, x2, x3) return dp4a.pack4(x1, x0, x2, x3) end
    dp4a.register("uint8", "int8", true, "shared", {pack_a = bad})
    local ok, err = pcall(function()
      local mod = tir.build(qg.schedule(f, {intrin = "dp4a", dp4a_load = "prmt"}).mod, "cuda", {compile = false})
      return tir.simulate(mod, tir.testing.random_args(f, 9), {reference = f})
    end)
    dp4a.register("uint8", "int8", true, "shared") -- restore
    assert.is_false(ok)
    assert.matches("SimulationError", tostring(err), 1, true)
    assert.matches("differ", tostring(err))
  end)
end)
