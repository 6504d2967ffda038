-- tensorize_commute_spec.lua -- tensorize matches C = C + x * y against a desc C = C + A * B
-- with the factors exchanged (multiplication commutes exactly): the block with B first
-- tensorizes, runs like the original on the interpreter, and a real mismatch still reports the
-- block as written.
local tir = require("tir")
local te = tir.te
local U = require("spec_util")
require("tir.intrin.cuda")

-- C[i, j] = sum_k f32(B[k, j]) * f32(A[i, k]): the product in the other order than the intrinsic's
local function bfirst()
  local A = te.placeholder({16, 16}, "float16", "A")
  local B = te.placeholder({16, 16}, "float16", "B")
  local k = te.reduce_axis({0, 16}, "k")
  local C = te.compute({16, 16}, function(i, j) return te.sum(te.cast("float32", B[{k, j}]) * te.cast("float32", A[{i, k}]), {k}) end, "C")
  return te.create_prim_func({A, B, C})
end

local function staged(f)
  local sch = tir.Schedule(f)
  local C = sch:get_block("C")
  -- reads: B (position 0), A (position 1)
  sch:cache_read(C, 0, "wmma.matrix_b")
  sch:cache_read(C, 1, "wmma.matrix_a")
  sch:cache_write(C, 0, "wmma.accumulator")
  local i = sch:get_loops(C)
  sch:decompose_reduction(C, i)
  return sch, C
end

describe("tensorize with the factors exchanged", function()
  it("matches the desc's A * B, keeps the results", function()
    local f = bfirst()
    local sch, C = staged(f)
    local i = sch:get_loops(sch:get_block("C_update"))
    sch:tensorize(i, "wmma_sync_16x16x16_f16f16f32")
    assert.truthy(tostring(sch.mod):find('T.block_attr({["tensor_intrin"] = "wmma_sync_16x16x16_f16f16f32"})', 1, true))
    U.assert_equiv(f, sch.mod, {rtol = 1e-6, atol = 1e-6})
  end)

  it("a real mismatch reports the block as written", function()
    local f = bfirst()
    local sch = staged(f)
    local i = sch:get_loops(sch:get_block("C_update"))
    local e = U.expect_error(function() sch:tensorize(i, "mma_sync_16x16x16_f16f32") end, "ScheduleError", "tensorize")
    -- the schedule is unchanged: the block still multiplies B by A
    local before = tostring(staged(f).mod)
    assert.are.equal(before, tostring(sch.mod))
    assert.truthy(before:find('T.cast("float32", B_wmma_matrix_b[{v_k, v_j}]) * T.cast("float32", A_wmma_matrix_a', 1, true))
    assert.truthy(tostring(e):find("scope", 1, true))
  end)
end)
