-- te_spec.lua -- tensor expressions to TensorIR.
local tir = require("tir")
local te = tir.te
local U = require("spec_util")
local function f32(x) return (string.unpack("f", string.pack("f", x))) end

describe("te", function()
  it("creates the matmul block TVM users expect", function()
    local f = U.matmul(64, 48, 32)
    local s = tostring(f)
    assert.matches('T.prim_func%("main", {A = T.Buffer%({64, 32}, "float32"%), B = T.Buffer%({32, 48}, "float32"%), C = T.Buffer%({64, 48}, "float32"%)}, function%(A, B, C%)', s)
    assert.matches("for i, j, k in T.grid%(64, 48, 32%) do", s)
    assert.matches('local v_i, v_j, v_k = T.axis.remap%("SSR", {i, j, k}%)', s)
    assert.matches("T.reads%(A%[{v_i, v_k}%], B%[{v_k, v_j}%]%)", s) -- TVM: with an init, C is no read
    assert.matches("C%[{v_i, v_j}%] = T.float32%(0.0%)", s)
    assert.matches("C%[{v_i, v_j}%] = C%[{v_i, v_j}%] %+ A%[{v_i, v_k}%] %* B%[{v_k, v_j}%]", s)
  end)

  it("computes the right values (interpreter vs float64 reference)", function()
    local f = U.matmul(9, 7, 5)
    local args = tir.testing.random_args(f, 3)
    tir.interpret(f, args)
    tir.testing.assert_allclose(args[3], tir.testing.ref_matmul(args[1], args[2]), {rtol = 1e-5, atol = 1e-6})
  end)

  it("chains computes through an intermediate buffer", function()
    local A = te.placeholder({8, 8}, "float32", "A")
    local B = te.compute({8, 8}, function(i, j) return A[{i, j}] + 1.0 end, "B")
    local C = te.compute({8, 8}, function(i, j) return B[{j, i}] * 2.0 end, "C")
    local f = te.create_prim_func({A, C})
    local s = tostring(f)
    assert.matches('local B = T.alloc_buffer%({8, 8}, "float32"%)', s)
    local args = tir.testing.random_args(f, 1)
    tir.interpret(f, args)
    local a, c = args[1], args[2]
    for x = 0, 7 do
      for y = 0, 7 do assert.are.equal(f32(f32(a:get({y, x}) + 1.0) * 2.0), c:get({x, y})) end
    end
  end)

  it("supports max/min reductions, casts and reduction conditions", function()
    local A = te.placeholder({4, 6}, "float16", "A")
    local k = te.reduce_axis({0, 6}, "k")
    local M = te.compute({4}, function(i) return te.max(tir.cast("float32", A[{i, k}]), k) end, "M")
    local k2 = te.reduce_axis({0, 6}, "k2")
    local S = te.compute({4}, function(i) return te.sum(tir.cast("float32", A[{i, k2}]), k2, tir.lt(k2, 3)) end, "S")
    local f = te.create_prim_func({A, M, S})
    local args = tir.testing.random_args(f, 7)
    tir.interpret(f, args)
    local a = args[1]
    for r = 0, 3 do
      local mx, sm = -math.huge, 0
      for c = 0, 5 do
        mx = math.max(mx, a:get({r, c}))
        if c < 3 then sm = sm + a:get({r, c}) end
      end
      assert.are.equal(mx, args[2]:get({r}))
      assert.is_true(math.abs(sm - args[3]:get({r})) < 1e-6)
    end
  end)

  it("names loops after the compute function's parameters", function()
    local A = te.placeholder({4, 4}, "float32", "A")
    local B = te.compute({4, 4}, function(row, col) return A[{row, col}] end, "B")
    assert.matches("for row, col in T.grid", tostring(te.create_prim_func({A, B})))
  end)

  it("reports bad uses clearly", function()
    local A = te.placeholder({4, 4}, "float32", "A")
    U.expect_error(function() te.compute({4, 4}, function(i) return A[{i, i}] end) end,
      "shape has 2 dimensions but the function takes 1 parameters")
    U.expect_error(function() te.placeholder({4, 0}) end, "shape[2] must be positive")
    U.expect_error(function() te.compute({4}, function(i) return A end) end, "returned a tensor")
    local B = te.compute({4, 4}, function(i, j) return A[{i, j}] end, "B")
    local Z = te.placeholder({4, 4}, "float32", "Z")
    local C = te.compute({4, 4}, function(i, j) return B[{i, j}] + Z[{i, j}] end, "C")
    U.expect_error(function() te.create_prim_func({A, C}) end, "reads tensor 'Z', which is neither an argument")
    local k = te.reduce_axis({0, 4}, "k")
    local D = te.compute({4}, function(i) return te.sum(A[{i, k}], k) + 1.0 end, "D")
    U.expect_error(function() te.create_prim_func({A, D}) end, "must be the whole body")
  end)
end)
