-- schedule_rfactor_spec.lua -- rfactor: the IR after it equals a T script (cases from TVM
-- tests/python/tir-schedule/test_tir_schedule_rfactor.py, written anew), interpreter
-- equivalence (float with rtol: the summation order changes; int32 bit-exact; also after
-- lowering), trace replay, and one test per precondition.
local tir = require("tir")
local T = tir.script
local U = require("spec_util")

local function assert_ir(got, want)
  local eq, diff = tir.structural_equal(got, want)
  assert(eq, ("IR differs: %s\n-- got:\n%s\n-- want:\n%s"):format(tostring(diff), tostring(got), tostring(want)))
end

local function assert_lowered_close(f, g, rtol)
  local args = tir.testing.random_args(f, 5)
  local a2 = tir.testing.copy_args(args)
  tir.interpret(f, args)
  tir.interpret(tir.lower(g), a2)
  for i = 1, #args do
    if rtol then tir.testing.assert_allclose(a2[i], args[i], {rtol = rtol, atol = rtol})
    else assert.are.same(args[i]:to_table(), a2[i]:to_table()) end
  end
end

local function assert_replay(f, sch)
  local s2 = tir.Schedule(f)
  s2:apply_trace(sch:trace())
  assert_ir(s2.mod, sch.mod)
end

local F32 = "float32"

local function transformed_matmul()
  return T.prim_func("main", {A = T.Buffer({128, 128}, F32), B = T.Buffer({128, 128}, F32), C = T.Buffer({128, 128}, F32)},
                     function(A, B, C)
    for i0, i1, i2_outer, i2_inner_outer, i2_inner_inner in T.grid(128, 128, 4, 8, 4) do
      T.block("update", function()
        local vi, vj = T.axis.remap("SS", {i0, i1})
        local vk = T.axis.reduce(128, i2_outer * 32 + i2_inner_outer * 4 + i2_inner_inner)
        T.init(function() C[{vi, vj}] = 0.0 end)
        C[{vi, vj}] = C[{vi, vj}] + A[{vi, vk}] * B[{vj, vk}]
      end)
    end
  end)
end

local function matmul_rfactor()
  return T.prim_func("main", {A = T.Buffer({128, 128}, F32), B = T.Buffer({128, 128}, F32), C = T.Buffer({128, 128}, F32)},
                     function(A, B, C)
    local C_rf = T.alloc_buffer({4, 128, 128}, F32)
    for i0, i1, i2_outer, i2_inner_outer, i2_inner_inner in T.grid(128, 128, 4, 8, 4) do
      T.block("update_rf", function()
        local vi2_inner_inner = T.axis.spatial(4, i2_inner_inner)
        local vi = T.axis.spatial(128, i0)
        local vj = T.axis.spatial(128, i1)
        local vi2_outer = T.axis.reduce(4, i2_outer)
        local vi2_inner_outer = T.axis.reduce(8, i2_inner_outer)
        T.init(function() C_rf[{vi2_inner_inner, vi, vj}] = 0.0 end)
        C_rf[{vi2_inner_inner, vi, vj}] = C_rf[{vi2_inner_inner, vi, vj}] +
            A[{vi, vi2_outer * 32 + vi2_inner_outer * 4 + vi2_inner_inner}] *
            B[{vj, vi2_outer * 32 + vi2_inner_outer * 4 + vi2_inner_inner}]
      end)
    end
    for i0, i1, i2_inner_inner in T.grid(128, 128, 4) do
      T.block("update", function()
        local vi2_inner_inner, vi, vj = T.axis.remap("RSS", {i2_inner_inner, i0, i1})
        T.init(function() C[{vi, vj}] = 0.0 end)
        C[{vi, vj}] = C[{vi, vj}] + C_rf[{vi2_inner_inner, vi, vj}]
      end)
    end
  end)
end

local function rowsum_like(name, body)
  return T.prim_func(name, {A = T.Buffer({128, 128}, F32), B = T.Buffer({128}, F32)}, body)
end

describe("rfactor", function()
  it("factorizes a split matmul reduction over its innermost loop (factor_axis 0 and -3)", function()
    for _, axis in ipairs({0, -3}) do
      local f = transformed_matmul()
      local sch = tir.Schedule(f)
      local update = sch:get_block("update")
      local _, _, _, _, kii = sch:get_loops(update)
      local rf = sch:rfactor(kii, axis)
      assert_ir(sch.mod, matmul_rfactor())
      assert.are.equal("update_rf", sch:get(rf).name)
      assert.are.equal("update", sch:get(update).name) -- the handle follows the write-back block
      assert.are.equal(sch:get(sch:get_block("update_rf")), sch:get(rf))
      assert_replay(f, sch)
    end
    -- interpreter equivalence on a small instance
    local f = U.matmul(16, 8, 32)
    local sch = tir.Schedule(f)
    local _, _, k = sch:get_loops(sch:get_block("C"))
    local _, ki = sch:split(k, {nil, 4})
    sch:rfactor(ki, 0)
    U.assert_equiv(f, sch.mod, {rtol = 1e-5, atol = 1e-5})
    assert_lowered_close(f, sch.mod, 1e-5)
  end)

  it("factorizes over a loop of an unsplit reduction (square sum, factor_axis 1)", function()
    local function square_sum()
      return T.prim_func("main", {A = T.Buffer({16, 256, 256}, F32), C = T.Buffer({16}, F32)}, function(A, C)
        for b0, i0, j0 in T.grid(16, 256, 256) do
          T.block("C", function()
            local b, i, j = T.axis.remap("SRR", {b0, i0, j0})
            T.init(function() C[{b}] = 0.0 end)
            C[{b}] = C[{b}] + A[{b, i, j}] * A[{b, i, j}]
          end)
        end
      end)
    end
    local want = T.prim_func("main", {A = T.Buffer({16, 256, 256}, F32), C = T.Buffer({16}, F32)}, function(A, C)
      local C_rf = T.alloc_buffer({16, 256}, F32)
      for i0, i1, i2 in T.grid(16, 256, 256) do
        T.block("C_rf", function()
          local vi2, b, i = T.axis.remap("SSR", {i2, i0, i1})
          T.init(function() C_rf[{b, vi2}] = 0.0 end)
          C_rf[{b, vi2}] = C_rf[{b, vi2}] + A[{b, i, vi2}] * A[{b, i, vi2}]
        end)
      end
      for i0, i2 in T.grid(16, 256) do
        T.block("C", function()
          local vi2, b = T.axis.remap("RS", {i2, i0})
          T.init(function() C[{b}] = 0.0 end)
          C[{b}] = C[{b}] + C_rf[{b, vi2}]
        end)
      end
    end)
    local f = square_sum()
    local sch = tir.Schedule(f)
    local _, _, j = sch:get_loops(sch:get_block("C"))
    sch:rfactor(j, 1)
    assert_ir(sch.mod, want)
  end)

  it("factorizes a reduction into a zero-dimensional buffer", function()
    local f = T.prim_func("main", {A = T.Buffer({128}, F32), B = T.Buffer({}, F32)}, function(A, B)
      for k0 in T.serial(128) do
        T.block("B", function()
          local k = T.axis.reduce(128, k0)
          T.init(function() B[{}] = 0.0 end)
          B[{}] = B[{}] + A[{k}]
        end)
      end
    end)
    local want = T.prim_func("main", {A = T.Buffer({128}, F32), B = T.Buffer({}, F32)}, function(A, B)
      local B_rf = T.alloc_buffer({128}, F32)
      for k0 in T.serial(128) do
        T.block("B_rf", function()
          -- every reduction iteration is in the rf loop: no init, a plain store (TVM rowsum_zero_dim_rfactor)
          local vk0 = T.axis.spatial(128, k0)
          B_rf[{vk0}] = A[{vk0}]
        end)
      end
      for k0 in T.serial(128) do
        T.block("B", function()
          local vk0 = T.axis.reduce(128, k0)
          T.init(function() B[{}] = 0.0 end)
          B[{}] = B[{}] + B_rf[{vk0}]
        end)
      end
    end)
    local sch = tir.Schedule(f)
    sch:rfactor(sch:get_loops(sch:get_block("B")), 0)
    assert_ir(sch.mod, want)
    U.assert_equiv(f, sch.mod, {rtol = 1e-5, atol = 1e-5})
    assert_lowered_close(f, sch.mod, 1e-5)
  end)

  it("makes a plain spatial block when the loop carries every reduction iteration (no init left)", function()
    local f = T.prim_func("main", {A = T.Buffer({8, 16}, F32), B = T.Buffer({8}, F32)}, function(A, B)
      for i, k in T.grid(8, 16) do
        T.block("B", function()
          local vi, vk = T.axis.remap("SR", {i, k})
          T.init(function() B[{vi}] = 0.0 end)
          B[{vi}] = B[{vi}] + A[{vi, vk}] * 2.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    local _, k = sch:get_loops("B")
    local rf = sch:rfactor(k, 1)
    local blk = sch:get(rf)
    assert.is_nil(blk.init)
    for _, iv in ipairs(blk.iter_vars) do assert.are.equal(0, iv.iter_type) end -- all data-parallel
    assert.matches("B_rf%[{vi, vk}%] = A%[{vi, vk}%] %* T.float32%(2.0%)", tostring(sch.mod))
    -- a complete block now: its loops can run in parallel
    local ri, rk = sch:get_loops(rf)
    sch:parallel(ri); sch:vectorize(rk)
    U.assert_equiv(f, sch.mod, {rtol = 1e-5, atol = 1e-5})
    assert_lowered_close(f, sch.mod, 1e-5)
    assert_replay(f, sch)
  end)

  local function multiple_reduction_blocks()
    return T.prim_func("main", {A = T.Buffer({16, 16, 16}, F32), F = T.Buffer({16, 16}, F32)}, function(A, F)
      local C = T.alloc_buffer({16, 16}, F32)
      local D = T.alloc_buffer({16, 16}, F32)
      local E = T.alloc_buffer({16, 16}, F32)
      for i in T.serial(16) do
        for j1 in T.serial(16) do
          for k1o, k1i in T.grid(4, 4) do
            T.block("C", function()
              local ci, cj = T.axis.remap("SS", {i, j1})
              local ck = T.axis.reduce(16, k1o * 4 + k1i)
              T.init(function() C[{ci, cj}] = 0.0 end)
              C[{ci, cj}] = C[{ci, cj}] + A[{ci, cj, ck}]
            end)
          end
          for k2o, k2i in T.grid(4, 4) do
            T.block("D", function()
              local di, dj = T.axis.remap("SS", {i, j1})
              local dk = T.axis.reduce(16, k2o * 4 + k2i)
              T.init(function() D[{di, dj}] = 0.0 end)
              D[{di, dj}] = D[{di, dj}] + A[{di, dj, dk}] + C[{di, dj}]
            end)
          end
        end
        for j2 in T.serial(16) do
          for k3o, k3i in T.grid(4, 4) do
            T.block("E", function()
              local ei, ej = T.axis.remap("SS", {i, j2})
              local ek = T.axis.reduce(16, k3o * 4 + k3i)
              T.init(function() E[{ei, ej}] = 0.0 end)
              E[{ei, ej}] = E[{ei, ej}] + A[{ei, ej, ek}] + D[{ei, ej}]
            end)
          end
          for k4o, k4i in T.grid(4, 4) do
            T.block("F", function()
              local fi, fj = T.axis.remap("SS", {i, j2})
              local fk = T.axis.reduce(16, k4o * 4 + k4i)
              T.init(function() F[{fi, fj}] = 0.0 end)
              F[{fi, fj}] = F[{fi, fj}] + A[{fi, fj, fk}] + E[{fi, fj}]
            end)
          end
        end
      end
    end)
  end

  it("factorizes the first of several reduction blocks under one loop (factor_axis 2)", function()
    local want = T.prim_func("main", {A = T.Buffer({16, 16, 16}, F32), F = T.Buffer({16, 16}, F32)}, function(A, F)
      local C = T.alloc_buffer({16, 16}, F32)
      local D = T.alloc_buffer({16, 16}, F32)
      local E = T.alloc_buffer({16, 16}, F32)
      local C_rf = T.alloc_buffer({16, 16, 4}, F32)
      for i, j1, k1o, k1i in T.grid(16, 16, 4, 4) do
        T.block("C_rf", function()
          local vk1o, ci, cj, vk1i = T.axis.remap("SSSR", {k1o, i, j1, k1i})
          T.init(function() C_rf[{ci, cj, vk1o}] = 0.0 end)
          C_rf[{ci, cj, vk1o}] = C_rf[{ci, cj, vk1o}] + A[{ci, cj, vk1o * 4 + vk1i}]
        end)
      end
      for i in T.serial(16) do
        for j1 in T.serial(16) do
          for k1o in T.serial(4) do
            T.block("C", function()
              local vk1o, ci, cj = T.axis.remap("RSS", {k1o, i, j1})
              T.init(function() C[{ci, cj}] = 0.0 end)
              C[{ci, cj}] = C[{ci, cj}] + C_rf[{ci, cj, vk1o}]
            end)
          end
          for k2o, k2i in T.grid(4, 4) do
            T.block("D", function()
              local di, dj = T.axis.remap("SS", {i, j1})
              local dk = T.axis.reduce(16, k2o * 4 + k2i)
              T.init(function() D[{di, dj}] = 0.0 end)
              D[{di, dj}] = D[{di, dj}] + A[{di, dj, dk}] + C[{di, dj}]
            end)
          end
        end
        for j2 in T.serial(16) do
          for k3o, k3i in T.grid(4, 4) do
            T.block("E", function()
              local ei, ej = T.axis.remap("SS", {i, j2})
              local ek = T.axis.reduce(16, k3o * 4 + k3i)
              T.init(function() E[{ei, ej}] = 0.0 end)
              E[{ei, ej}] = E[{ei, ej}] + A[{ei, ej, ek}] + D[{ei, ej}]
            end)
          end
          for k4o, k4i in T.grid(4, 4) do
            T.block("F", function()
              local fi, fj = T.axis.remap("SS", {i, j2})
              local fk = T.axis.reduce(16, k4o * 4 + k4i)
              T.init(function() F[{fi, fj}] = 0.0 end)
              F[{fi, fj}] = F[{fi, fj}] + A[{fi, fj, fk}] + E[{fi, fj}]
            end)
          end
        end
      end
    end)
    local f = multiple_reduction_blocks()
    local sch = tir.Schedule(f)
    local _, _, k1o = sch:get_loops(sch:get_block("C"))
    sch:rfactor(k1o, 2)
    assert_ir(sch.mod, want)
    U.assert_equiv(f, sch.mod, {rtol = 1e-4, atol = 1e-4})
    assert_lowered_close(f, sch.mod, 1e-4)
    assert_replay(f, sch)
  end)

  it("accepts updates whose terms are regrouped (D = D + A + C)", function()
    local f = T.prim_func("main", {A = T.Buffer({8, 16}, "int32"), C = T.Buffer({8}, "int32"), D = T.Buffer({8}, "int32")},
                          function(A, C, D)
      for i, k in T.grid(8, 16) do
        T.block("D", function()
          local vi, vk = T.axis.remap("SR", {i, k})
          T.init(function() D[{vi}] = 0 end)
          D[{vi}] = D[{vi}] + A[{vi, vk}] + C[{vi}]
        end)
      end
    end)
    local sch = tir.Schedule(f)
    local _, k = sch:get_loops(sch:get_block("D"))
    local _, ki = sch:split(k, {nil, 4})
    local rf = sch:rfactor(ki, 1)
    assert.matches("D_rf%[{vi, vk_1}%] = D_rf%[{vi, vk_1}%] %+ %(A%[{vi, vk_0 %* 4 %+ vk_1}%] %+ C%[{vi}%]%)",
                   tostring(sch.mod))
    assert.are.equal("D_rf", sch:get(rf).name)
    U.assert_equiv(f, sch.mod)
  end)

  it("handles max reductions and int32 bit-exactly", function()
    local A = tir.te.placeholder({8, 24}, "float32", "A")
    local k = tir.te.reduce_axis({0, 24}, "k")
    local M = tir.te.compute({8}, function(i) return tir.te.max(A[{i, k}], {k}) end, "M")
    local f = tir.te.create_prim_func({A, M})
    local sch = tir.Schedule(f)
    local _, kk = sch:get_loops(sch:get_block("M"))
    local _, ki = sch:split(kk, {nil, 6})
    sch:rfactor(ki, 1)
    U.assert_equiv(f, sch.mod) -- max does not depend on the order: exact
    assert_lowered_close(f, sch.mod)
    local g = U.matmul(12, 8, 20, "int32")
    local s2 = tir.Schedule(g)
    local _, _, k2 = s2:get_loops(s2:get_block("C"))
    local ko = s2:split(k2, {nil, 5})
    s2:rfactor(ko, -1)
    U.assert_equiv(g, s2.mod)
    assert_lowered_close(g, s2.mod)
  end)

  it("checks its preconditions", function()
    -- several blocks under the loop
    local f1 = T.prim_func("main", {A = T.Buffer({16, 16}, F32), B = T.Buffer({16, 16}, F32), C = T.Buffer({16, 16}, F32),
                                    D = T.Buffer({16, 16}, F32)}, function(A, B, C, D)
      for k, i, j in T.grid(16, 16, 16) do
        T.block("C", function()
          local ck, ci, cj = T.axis.remap("RSS", {k, i, j})
          T.init(function() C[{ci, cj}] = 0.0 end)
          C[{ci, cj}] = C[{ci, cj}] + A[{ci, ck}] * B[{ck, cj}]
        end)
        T.block("D", function()
          local dk, di, dj = T.axis.remap("RSS", {k, i, j})
          T.init(function() D[{di, dj}] = 0.0 end)
          D[{di, dj}] = D[{di, dj}] + B[{di, dk}] * A[{dk, dj}]
        end)
      end
    end)
    local s1 = tir.Schedule(f1)
    local k1 = s1:get_loops(s1:get_block("C"))
    U.expect_error(function() s1:rfactor(k1, 0) end, "ScheduleError in rfactor", "loop k must contain exactly one block", "^^^")
    -- not a reduction block
    local s2 = tir.Schedule(U.elementwise(8, 8))
    U.expect_error(function() s2:rfactor(s2:get_loops(s2:get_block("B")), 0) end, "has no init: it is not a reduction block")
    -- bindings that are not affine
    local s3 = tir.Schedule(rowsum_like("main", function(A, B)
      for i, k in T.grid(128, 16) do
        T.block("B", function()
          local vi = T.axis.spatial(128, i)
          local vk = T.axis.reduce(128, T.floordiv(k * k, 2))
          T.init(function() B[{vi}] = 0.0 end)
          B[{vi}] = B[{vi}] + A[{vi, vk}]
        end)
      end
    end))
    local _, k3 = s3:get_loops(s3:get_block("B"))
    U.expect_error(function() s3:rfactor(k3, 0) end, "are not affine in its loops", "product of two loop variables")
    -- a reduction variable indexes the output
    local s4 = tir.Schedule(T.prim_func("main", {A = T.Buffer({16, 16}, F32), B = T.Buffer({16, 16}, F32)}, function(A, B)
      for i, k in T.grid(16, 16) do
        T.block("B", function()
          local vi, vk = T.axis.remap("SR", {i, k})
          T.init(function() B[{vi, vk}] = 0.0 end)
          B[{vi, vk}] = B[{vi, vk}] + A[{vi, vk}]
        end)
      end
    end))
    local _, k4 = s4:get_loops(s4:get_block("B"))
    U.expect_error(function() s4:rfactor(k4, 0) end, "the reduction variable vk of block 'B' indexes its output B")
    -- another writer of the output in the scope
    local s5 = tir.Schedule(rowsum_like("main", function(A, B)
      for i in T.serial(128) do
        T.block("Z", function()
          local vi = T.axis.spatial(128, i)
          B[{vi}] = 1.0
        end)
      end
      for i, k in T.grid(128, 128) do
        T.block("B", function()
          local vi, vk = T.axis.remap("SR", {i, k})
          T.init(function() B[{vi}] = 0.0 end)
          B[{vi}] = B[{vi}] + A[{vi, vk}]
        end)
      end
    end))
    local _, k5 = s5:get_loops(s5:get_block("B"))
    U.expect_error(function() s5:rfactor(k5, 0) end, "is not the only writer of B in its scope")
    -- the loop is not serial
    local s6 = tir.Schedule(rowsum_like("main", function(A, B)
      for i in T.serial(128) do
        for k in T.parallel(128) do
          T.block("B", function()
            local vi, vk = T.axis.remap("SR", {i, k})
            T.init(function() B[{vi}] = 0.0 end)
            B[{vi}] = B[{vi}] + A[{vi, vk}]
          end)
        end
      end
    end))
    local _, k6 = s6:get_loops(s6:get_block("B"))
    U.expect_error(function() s6:rfactor(k6, 0) end, "loop k must be serial to rfactor (it is parallel)")
    -- update and init store to different elements
    local s7 = tir.Schedule(T.prim_func("main", {A = T.Buffer({16, 16}, F32), B = T.Buffer({16, 16}, F32),
                                                 C = T.Buffer({16, 16}, F32)}, function(A, B, C)
      for i, j, k in T.grid(16, 16, 16) do
        T.block("C", function()
          local vi, vj, vk = T.axis.remap("SSR", {i, j, k})
          T.init(function() C[{vi, vj}] = 0.0 end)
          C[{vj, vi}] = C[{vj, vi}] + A[{vi, vk}] * B[{vk, vj}]
        end)
      end
    end))
    local _, _, k7 = s7:get_loops(s7:get_block("C"))
    U.expect_error(function() s7:rfactor(k7, 0) end, "with its init storing to the same element")
    -- factor_axis out of range
    local s8 = tir.Schedule(transformed_matmul())
    local _, _, _, _, kii = s8:get_loops(s8:get_block("update"))
    U.expect_error(function() s8:rfactor(kii, 3) end, "factor_axis 3 is out of range: C has 2 dimension(s), so it must be in [-3, 2]")
    U.expect_error(function() s8:rfactor(kii, -4) end, "factor_axis -4 is out of range")
    U.expect_error(function() s8:rfactor(kii, 1.5) end, "factor_axis must be an integer")
    -- init that is not the identity; update that is not a known reduction; init not one store
    local function rowsum(init_fn, update_fn)
      return tir.Schedule(rowsum_like("main", function(A, B)
        for i, k in T.grid(128, 128) do
          T.block("B", function()
            local vi, vk = T.axis.remap("SR", {i, k})
            T.init(function() init_fn(B, vi) end)
            update_fn(A, B, vi, vk)
          end)
        end
      end))
    end
    local add = function(A, B, vi, vk) B[{vi}] = B[{vi}] + A[{vi, vk}] end
    local s9 = rowsum(function(B, vi) B[{vi}] = 1.0 end, add)
    local _, k9 = s9:get_loops(s9:get_block("B"))
    U.expect_error(function() s9:rfactor(k9, 0) end, "the init value T.float32(1.0) of block 'B' is not the identity of its reduction")
    local s10 = rowsum(function(B, vi) B[{vi}] = 0.0 end, function(A, B, vi, vk) B[{vi}] = B[{vi}] - A[{vi, vk}] end)
    local _, k10 = s10:get_loops(s10:get_block("B"))
    U.expect_error(function() s10:rfactor(k10, 0) end, "op one of +, *, min, max")
    local s11 = rowsum(function(B, vi) B[{vi}] = 0.0; B[{vi}] = B[{vi}] * 1.0 end, add)
    local _, k11 = s11:get_loops(s11:get_block("B"))
    U.expect_error(function() s11:rfactor(k11, 0) end, "must each be one store to its single output")
    local s11b = rowsum(function(B, vi) B[{vi}] = 0.0 end, function(A, B, vi, vk) B[{vi}] = B[{vi}] + B[{vi}] * A[{vi, vk}] end)
    local _, k11b = s11b:get_loops(s11b:get_block("B"))
    U.expect_error(function() s11b:rfactor(k11b, 0) end, "the update of block 'B' reads its output B outside the reduction")
    -- the loop is spatial; a loop bound to both kinds; the loop is bound to nothing
    local s12 = rowsum(function(B, vi) B[{vi}] = 0.0 end, add)
    local i12 = s12:get_loops(s12:get_block("B"))
    U.expect_error(function() s12:rfactor(i12, 0) end, "loop i is bound to a spatial variable of block 'B'")
    local s13 = tir.Schedule(rowsum_like("main", function(A, B)
      for io, ii_ko_fused, ki in T.grid(32, 128, 4) do
        T.block("B", function()
          local vi = T.axis.spatial(128, io * 4 + T.floordiv(ii_ko_fused, 32))
          local vk = T.axis.reduce(128, T.floormod(ii_ko_fused, 32) * 4 + ki)
          T.init(function() B[{vi}] = 0.0 end)
          B[{vi}] = B[{vi}] + A[{vi, vk}]
        end)
      end
    end))
    local _, _, ki13 = s13:get_loops(s13:get_block("B"))
    U.expect_error(function() s13:rfactor(ki13, 0) end, "loop ii_ko_fused is bound to both spatial and reduction variables")
    local s14 = tir.Schedule(rowsum_like("main", function(A, B)
      for r, i, k in T.grid(4, 128, 128) do
        T.block("B", function()
          local vi, vk = T.axis.remap("SR", {i, k})
          T.init(function() B[{vi}] = 0.0 end)
          B[{vi}] = B[{vi}] + A[{vi, vk}]
        end)
      end
    end))
    local r14 = s14:get_loops(s14:get_block("B"))
    U.expect_error(function() s14:rfactor(r14, 0) end, "loop r is not bound to any reduction variable of block 'B'")
    -- an unbound loop under a reduction loop
    local s15 = tir.Schedule(rowsum_like("main", function(A, B)
      for i, k, r in T.grid(128, 128, 2) do
        T.block("B", function()
          local vi, vk = T.axis.remap("SR", {i, k})
          T.init(function() B[{vi}] = 0.0 end)
          B[{vi}] = B[{vi}] + A[{vi, vk}]
        end)
      end
    end))
    local _, k15 = s15:get_loops(s15:get_block("B"))
    U.expect_error(function() s15:rfactor(k15, 0) end, "loop r is bound to no variable of block 'B' but lies under a reduction loop")
    -- not the first block under its outermost loop; the first reduction loop holds more
    local s16 = tir.Schedule(multiple_reduction_blocks())
    local _, _, k2o, k2i = s16:get_loops(s16:get_block("D"))
    U.expect_error(function() s16:rfactor(k2o, 0) end, "block 'D' must be the first block under its outermost loop i")
    U.expect_error(function() s16:rfactor(k2i, 0) end, "block 'D' must be the first block under its outermost loop i")
    -- a predicate (non-dividing split)
    local s17 = tir.Schedule(U.matmul(8, 8, 10))
    local _, _, k17 = s17:get_loops(s17:get_block("C"))
    local ko17 = s17:split(k17, {nil, 4})
    U.expect_error(function() s17:rfactor(ko17, 0) end, "block 'C' has a predicate")
    -- the failures left the functions unchanged
    assert_ir(s8.mod, transformed_matmul())
    assert.is_nil(tostring(s16.mod):find("_rf", 1, true))
  end)
end)
