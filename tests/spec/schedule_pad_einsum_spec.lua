-- schedule_pad_einsum_spec.lua -- pad_einsum: the IR after it (padded copies in, the padded
-- einsum, the copy back), interpreter equivalence before/after on random inputs (exact for
-- integers, also after lowering), print/load, trace replay, and one test per precondition.
local tir = require("tir")
local T = tir.script
local U = require("spec_util")
local W = require("amos_workloads")

local function assert_all(f, sch, exact)
  U.assert_equiv(f, sch.mod, not exact and {rtol = 1e-6, atol = 1e-6} or nil)
  U.assert_lowered_and_replayed(f, sch)
end

describe("pad_einsum", function()
  it("pads a matmul's M, N, K to multiples of 16 (zeros in, copy back)", function()
    local f = W.matmul(30, 20, 27, "NN")
    local sch = tir.Schedule(f)
    local ap, bp, cu = sch:pad_einsum("C", {16, 16, 16})
    assert.are.equal("A_pad", sch:get(ap).name)
    assert.are.equal("B_pad", sch:get(bp).name)
    assert.are.equal("C_pad_unpad", sch:get(cu).name)
    local text = tostring(sch.mod)
    assert.truthy(text:find('local A_pad = T.alloc_buffer({32, 32}, "float16")', 1, true))
    assert.truthy(text:find("for i, j, k in T.grid(32, 32, 32) do", 1, true))
    assert.truthy(text:find("T.if_then_else(T.And(T.lt(v0, 30), T.lt(v1, 27)), A[{v0, v1}], T.float16(0.0))", 1, true))
    assert.truthy(text:find("for ax0_2, ax1_2 in T.grid(30, 20) do", 1, true))
    assert.truthy(sch:trace():find("local b1, b2, b3 = sch:pad_einsum(b0, {16, 16, 16})", 1, true))
    assert_all(f, sch)
  end)

  it("int8: exact; a factor of 1 leaves that extent; only the reduction padded needs no copy back", function()
    local f = W.matmul(16, 16, 20, "NT", "int8")
    local sch = tir.Schedule(f)
    local outs = {sch:pad_einsum("C", {1, 1, 32})}
    assert.are.equal(2, #outs) -- A_pad, B_pad: the output keeps its shape
    assert.truthy(tostring(sch.mod):find("for i, j, k in T.grid(16, 16, 32) do", 1, true))
    assert_all(f, sch, true)
    local g = W.matmul(20, 16, 16, "NN", "int8")
    local s2 = tir.Schedule(g)
    local o2 = {s2:pad_einsum("C", {8, 1, 1})}
    assert.are.equal(2, #o2) -- A_pad and the copy back (B is not indexed by i)
    assert.are.equal("C_pad_unpad", s2:get(o2[2]).name)
    assert_all(g, s2, true)
  end)

  it("batched, with a constant index and a buffer read at two variables", function()
    local f = W.batch_matmul(3, 10, 12, 9)
    local sch = tir.Schedule(f)
    sch:pad_einsum("C", {1, 16, 16, 16})
    assert_all(f, sch)
    local g = T.prim_func("main", {A = T.Buffer({2, 5, 7}, "float32"), B = T.Buffer({7, 6}, "float32"), C = T.Buffer({5, 6}, "float32")},
      function(A, B, C)
        for i, j, k in T.grid(5, 6, 7) do
          T.block("C", function()
            local vi, vj, vk = T.axis.remap("SSR", {i, j, k})
            T.init(function() C[{vi, vj}] = T.float32(0) end)
            C[{vi, vj}] = C[{vi, vj}] + A[{1, vi, vk}] * B[{vk, vj}]
          end)
        end
      end)
    local s2 = tir.Schedule(g)
    s2:pad_einsum("C", {4, 4, 4})
    assert.truthy(tostring(s2.mod):find("A_pad = T.alloc_buffer({2, 8, 8}", 1, true))
    assert_all(g, s2)
  end)

  it("errors name the rule", function()
    local f = W.matmul(30, 20, 27, "NN")
    U.expect_error(function() tir.Schedule(f):pad_einsum("C", {16, 16}) end, "pad_einsum", "3 iteration variable(s), but 2 padding factor(s)")
    U.expect_error(function() tir.Schedule(f):pad_einsum("C", {16, 0, 16}) end, "pad_einsum", "must be positive")
    U.expect_error(function() tir.Schedule(f):pad_einsum("C", {1, 1, 1}) end, "pad_einsum", "nothing to pad")
    U.expect_error(function() tir.Schedule(f):pad_einsum("C", {16, "x", 16}) end, "pad_einsum", "padding[2]")
    local s = tir.Schedule(f)
    local i = s:get_loops(s:get_block("C"))
    s:split(i, {nil, 2})
    U.expect_error(function() s:pad_einsum("C", {16, 16, 16}) end, "pad_einsum", "one loop per iteration variable")
    -- not an einsum: an index that is an expression
    local conv = W.conv1d(1, 18, 16, 16, 3)
    U.expect_error(function() tir.Schedule(conv):pad_einsum("conv", {1, 16, 16, 16, 16}) end, "pad_einsum", "not an einsum")
    -- a padded reduction that would add terms: C += A + B
    local g = T.prim_func("main", {A = T.Buffer({4, 5}, "float32"), B = T.Buffer({5, 4}, "float32"), C = T.Buffer({4, 4}, "float32")},
      function(A, B, C)
        for i, j, k in T.grid(4, 4, 5) do
          T.block("C", function()
            local vi, vj, vk = T.axis.remap("SSR", {i, j, k})
            T.init(function() C[{vi, vj}] = T.float32(0) end)
            C[{vi, vj}] = C[{vi, vj}] + (A[{vi, vk}] + B[{vk, vj}])
          end)
        end
      end)
    U.expect_error(function() tir.Schedule(g):pad_einsum("C", {1, 1, 8}) end, "pad_einsum", "adds terms to the sum")
    -- padding only its spatial variables is fine there
    local sg = tir.Schedule(g)
    sg:pad_einsum("C", {8, 8, 1})
    assert_all(g, sg)
  end)
end)

describe("simplify: nested zero fills", function()
  it("if_then_else(c1, if_then_else(c2, x, 0), 0) is one if_then_else", function()
    local x = tir.var("x")
    local e = tir.if_then_else(tir.lt(x, 3), tir.if_then_else(tir.gt(x, 1), x * 2, tir.const(0)), tir.const(0))
    assert.are.equal("T.if_then_else(T.And(T.lt(x, 3), T.gt(x, 1)), x * 2, 0)", tostring(tir.simplify(e)))
    -- different else values stay nested
    local e2 = tir.if_then_else(tir.lt(x, 3), tir.if_then_else(tir.gt(x, 1), x * 2, tir.const(1)), tir.const(0))
    assert.truthy(tostring(tir.simplify(e2)):find("T.if_then_else(T.lt(x, 3), T.if_then_else", 1, true))
  end)
end)
