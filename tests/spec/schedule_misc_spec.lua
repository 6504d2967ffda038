-- schedule_misc_spec.lua -- decompose_reduction, set_scope, storage_align,
-- annotate/unannotate, add_unit_loop, get_child_blocks, get_producers, get_consumers: the IR
-- after each (compared with the function TVM's documented semantics give, written as a T
-- script; cases from TVM's test_tir_schedule_reduction.py, _set_scope.py, _storage_align.py,
-- _utilities.py), interpreter equivalence on random inputs (bit-exact, float32 and int32),
-- one test per precondition with its error text, trace replay of every primitive, and a chain
-- of them (the SIMT GEMM schedule) staying equivalent.
local tir = require("tir")
local T = tir.script
local U = require("spec_util")

local function assert_ir(sch, expected)
  local eq, diff = tir.structural_equal(sch.mod, expected)
  if not eq then
    error(("not the expected IR: %s\n--- got:\n%s\n--- expected:\n%s"):format(tostring(diff), tostring(sch.mod),
                                                                             tostring(expected)), 2)
  end
end

local function assert_replay(sch)
  local replay = tir.Schedule(sch:original()):apply_trace(sch:trace())
  local eq, diff = tir.structural_equal(sch.mod, replay.mod)
  if not eq then error("trace replay differs: " .. tostring(diff) .. "\n" .. sch:trace(), 2) end
end

-- Interpreter results only (lowered functions do not all print and load back yet).
local function same_results(f, g, opts)
  opts = opts or {}
  for seed = 1, 2 do
    local args = tir.testing.random_args(f, seed)
    local r1, r2 = U.run(f, seed, args), U.run(g, seed, args)
    for i = 1, #r1 do
      if opts.rtol then tir.testing.assert_allclose(r2[i], r1[i], {rtol = opts.rtol, atol = opts.atol or 0})
      else assert.are.same(r1[i]:to_table(), r2[i]:to_table()) end
    end
  end
end

local function check(sch, expected, opts)
  if expected then assert_ir(sch, expected) end
  U.assert_equiv(sch:original(), sch.mod, opts)
  assert_replay(sch)
end

-- TVM's matmul with an "update" block (C = A * B^T), in int32 so results are exact.
local function matmul_tvm(n, ann)
  return T.prim_func("main", {A = T.Buffer({n, n}, "int32"), B = T.Buffer({n, n}, "int32"),
                              C = T.Buffer({n, n}, "int32")}, function(A, B, C)
    for i, j, k in T.grid(n, n, n) do
      T.block("update", function()
        local vi, vj, vk = T.axis.remap("SSR", {i, j, k})
        if ann then T.block_attr(ann) end
        T.init(function() C[{vi, vj}] = 0 end)
        C[{vi, vj}] = C[{vi, vj}] + A[{vi, vk}] * B[{vj, vk}]
      end)
    end
  end)
end

local function elementwise(n, dtype)
  dtype = dtype or "float32"
  return T.prim_func("main", {A = T.Buffer({n, n}, dtype), C = T.Buffer({n, n}, dtype)}, function(A, C)
    local B = T.alloc_buffer({n, n}, dtype)
    for i, j in T.grid(n, n) do
      T.block("B", function()
        local vi, vj = T.axis.remap("SS", {i, j})
        B[{vi, vj}] = A[{vi, vj}] * T[dtype](2)
      end)
    end
    for i, j in T.grid(n, n) do
      T.block("C", function()
        local vi, vj = T.axis.remap("SS", {i, j})
        C[{vi, vj}] = B[{vi, vj}] + T[dtype](1)
      end)
    end
  end)
end

-- ======================================================================================
describe("decompose_reduction", function()
  it("hoists the init before the outermost loop (TVM decompose0)", function()
    local expected = T.prim_func("main", {A = T.Buffer({8, 8}, "int32"), B = T.Buffer({8, 8}, "int32"),
                                          C = T.Buffer({8, 8}, "int32")}, function(A, B, C)
      for i, j in T.grid(8, 8) do
        T.block("update_init", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          C[{vi, vj}] = 0
        end)
      end
      for i, j, k in T.grid(8, 8, 8) do
        T.block("update_update", function()
          local vi, vj, vk = T.axis.remap("SSR", {i, j, k})
          C[{vi, vj}] = C[{vi, vj}] + A[{vi, vk}] * B[{vj, vk}]
        end)
      end
    end)
    local sch = tir.Schedule(matmul_tvm(8))
    local c = sch:get_block("update")
    local i = sch:get_loops(c)
    local init = sch:decompose_reduction(c, i)
    assert.are.equal("update_init", sch:get(init).name)
    assert.are.equal("update_update", sch:get(c).name) -- the handle follows the renamed update
    check(sch, expected)
  end)

  it("puts the init inside the spatial loops at the reduction loop (TVM decompose2)", function()
    local expected = T.prim_func("main", {A = T.Buffer({8, 8}, "int32"), B = T.Buffer({8, 8}, "int32"),
                                          C = T.Buffer({8, 8}, "int32")}, function(A, B, C)
      for i, j in T.grid(8, 8) do
        T.block("update_init", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          C[{vi, vj}] = 0
        end)
        for k in T.serial(8) do
          T.block("update_update", function()
            local vi, vj, vk = T.axis.remap("SSR", {i, j, k})
            C[{vi, vj}] = C[{vi, vj}] + A[{vi, vk}] * B[{vj, vk}]
          end)
        end
      end
    end)
    local sch = tir.Schedule(matmul_tvm(8))
    local _, _, k = sch:get_loops("update")
    sch:decompose_reduction("update", k)
    check(sch, expected)
  end)

  it("drops split guards on reduction loops from the init (TVM decompose4)", function()
    local expected = T.prim_func("main", {A = T.Buffer({16, 16}, "int32"), B = T.Buffer({16, 16}, "int32"),
                                          C = T.Buffer({16, 16}, "int32")}, function(A, B, C)
      for i_0 in T.serial(2) do
        for i_1_init, j_init in T.grid(8, 16) do
          T.block("update_init", function()
            local vi = T.axis.spatial(16, i_0 * 8 + i_1_init)
            local vj = T.axis.spatial(16, j_init)
            C[{vi, vj}] = 0
          end)
        end
        for i_1, j, k_0, k_1 in T.grid(8, 16, 3, 7) do
          T.block("update_update", function()
            local vi = T.axis.spatial(16, i_0 * 8 + i_1)
            local vj = T.axis.spatial(16, j)
            local vk = T.axis.reduce(16, k_0 * 7 + k_1)
            T.where(T.lt(k_0 * 7 + k_1, 16))
            C[{vi, vj}] = C[{vi, vj}] + A[{vi, vk}] * B[{vj, vk}]
          end)
        end
      end
    end)
    local sch = tir.Schedule(matmul_tvm(16))
    local c = sch:get_block("update")
    local i, _, k = sch:get_loops(c)
    local _, ii = sch:split(i, {2, 8})
    sch:split(k, {3, 7})
    sch:decompose_reduction(c, ii)
    check(sch, expected)
  end)

  it("moves a blockized init with its inner loop (TVM decompose1, rowsum_blockized)", function()
    local f = T.prim_func("main", {A = T.Buffer({8, 4, 32}, "float32"), B = T.Buffer({8, 4}, "float32")}, function(A, B)
      for i0, i2_0 in T.grid(8, 4) do
        T.block("blockized_B", function()
          local io, ko = T.axis.remap("SR", {i0, i2_0})
          T.init(function()
            for i1 in T.serial(4) do
              T.block("B_init", function()
                local ii_init = T.axis.spatial(4, i1)
                B[{io, ii_init}] = 0.0
              end)
            end
          end)
          for i1_1, i2_1 in T.grid(4, 8) do
            T.block("B", function()
              local ii = T.axis.spatial(4, i1_1)
              local k = T.axis.reduce(32, ko * 8 + i2_1)
              B[{io, ii}] = B[{io, ii}] + A[{io, ii, k}]
            end)
          end
        end)
      end
    end)
    local expected = T.prim_func("main", {A = T.Buffer({8, 4, 32}, "float32"), B = T.Buffer({8, 4}, "float32")}, function(A, B)
      for i0 in T.serial(8) do
        T.block("blockized_B_init", function()
          local io = T.axis.spatial(8, i0)
          for i1 in T.serial(4) do
            T.block("B_init", function()
              local ii = T.axis.spatial(4, i1)
              B[{io, ii}] = 0.0
            end)
          end
        end)
      end
      for i0, i2_o in T.grid(8, 4) do
        T.block("blockized_B_update", function()
          local io, ko = T.axis.remap("SR", {i0, i2_o})
          T.reads(B[{io, {0, 4}}], A[{io, {0, 4}, {ko * 8, ko * 8 + 8}}])
          T.writes(B[{io, {0, 4}}])
          for i1, i2_i in T.grid(4, 8) do
            T.block("B", function()
              local ii = T.axis.spatial(4, i1)
              local k = T.axis.reduce(32, ko * 8 + i2_i)
              B[{io, ii}] = B[{io, ii}] + A[{io, ii, k}]
            end)
          end
        end)
      end
    end)
    local sch = tir.Schedule(f)
    local io = sch:get_loops("blockized_B")
    sch:decompose_reduction("blockized_B", io)
    check(sch, expected, {rtol = 1e-6})
  end)

  it("copies block annotations, loop kinds and thread bindings (TVM with_annotation, different_for_kind, thread_binding)", function()
    local sch = tir.Schedule(matmul_tvm(8, {test_annotation = 1}))
    sch:decompose_reduction("update", (sch:get_loops("update")))
    assert.are.equal(2, U.count(tostring(sch.mod), 'T.block_attr%({%["test_annotation"%] = 1}%)'))
    check(sch)
    local f = T.prim_func("main", {A = T.Buffer({16, 8}, "float32"), B = T.Buffer({8}, "float32")}, function(A, B)
      for k in T.serial(16) do
        for i in T.vectorized(8) do
          T.block("B", function()
            local vk, vi = T.axis.remap("RS", {k, i})
            T.init(function() B[{vi}] = 0.0 end)
            B[{vi}] = B[{vi}] + A[{vk, vi}]
          end)
        end
      end
    end)
    local expected = T.prim_func("main", {A = T.Buffer({16, 8}, "float32"), B = T.Buffer({8}, "float32")}, function(A, B)
      for i in T.vectorized(8) do
        T.block("B_init", function()
          local vi = T.axis.spatial(8, i)
          B[{vi}] = 0.0
        end)
      end
      for k in T.serial(16) do
        for i in T.vectorized(8) do
          T.block("B_update", function()
            local vk, vi = T.axis.remap("RS", {k, i})
            B[{vi}] = B[{vi}] + A[{vk, vi}]
          end)
        end
      end
    end)
    local sch2 = tir.Schedule(f)
    local b = sch2:get_block("B")
    local init = sch2:decompose_reduction(b, (sch2:get_loops(b)))
    assert.are.equal("B_init", sch2:get(init).name)
    check(sch2, expected)
    local g = T.prim_func("main", {A = T.Buffer({32, 16}, "float32"), B = T.Buffer({32}, "float32")}, function(A, B)
      for t in T.thread_binding(32, "threadIdx.x") do
        for r in T.serial(16) do
          T.block("B", function()
            local vi, vr = T.axis.remap("SR", {t, r})
            T.init(function() B[{vi}] = 0.0 end)
            B[{vi}] = B[{vi}] + A[{vi, vr}]
          end)
        end
      end
    end)
    local sch3 = tir.Schedule(g)
    sch3:decompose_reduction("B", (sch3:get_loops("B")))
    assert.matches('for t_init in T.thread_binding%(32, "threadIdx.x"%) do', tostring(sch3.mod))
    check(sch3)
  end)

  it("decomposes an outer block holding a nested reduction (TVM nested_block)", function()
    local f = T.prim_func("main", {A = T.Buffer({1, 64}, "float32"), B = T.Buffer({1}, "float32")}, function(A, B)
      for i, ko in T.grid(1, 2) do
        T.block("outer", function()
          local vi, vko = T.axis.remap("SR", {i, ko})
          local C = T.alloc_buffer({32}, "float32")
          T.init(function() B[{vi}] = 0.0 end)
          for ki in T.serial(32) do
            T.block("inner_1", function()
              local vki = T.axis.spatial(32, ki)
              C[{vki}] = A[{vi, vko * 32 + vki}]
            end)
          end
          for ki in T.serial(32) do
            T.block("inner_2", function()
              local vki = T.axis.reduce(32, ki)
              B[{vi}] = B[{vi}] + C[{vki}]
            end)
          end
        end)
      end
    end)
    local sch = tir.Schedule(f)
    local _, ko = sch:get_loops("outer")
    sch:decompose_reduction("outer", ko)
    local s = tostring(sch.mod)
    assert.matches('T.block%("outer_init"', s)
    assert.matches('T.block%("outer_update"', s)
    assert.is_nil(s:find("T.init", 1, true))
    check(sch, nil, {rtol = 1e-6})
  end)

  it("is the last step of a tiled matmul schedule", function()
    local f = U.matmul(32, 32, 32, "int32")
    local sch = tir.Schedule(f)
    local c = sch:get_block("C")
    local i, j, k = sch:get_loops(c)
    local io, ii = sch:split(i, {nil, 8})
    local jo, ji = sch:split(j, {nil, 8})
    local ko, ki = sch:split(k, {nil, 8})
    sch:reorder(io, jo, ko, ki, ii, ji)
    sch:decompose_reduction(c, ko)
    assert.matches("for i_1_init, j_1_init in T.grid%(8, 8%) do", tostring(sch.mod))
    check(sch)
  end)

  -- ---- preconditions ----
  it("refuses a block that is not a reduction", function()
    local sch = tir.Schedule(elementwise(8))
    U.expect_error(function() sch:decompose_reduction("B", (sch:get_loops("B"))) end, "ScheduleError in decompose_reduction",
                   "block 'B' has no init: it is not a reduction block")
  end)

  it("refuses a loop that is not an ancestor of the block (TVM LoopPositionError)", function()
    local f = T.prim_func("main", {A = T.Buffer({8, 8}, "float32"), C = T.Buffer({8}, "float32"),
                                   D = T.Buffer({8}, "float32")}, function(A, C, D)
      for i, k in T.grid(8, 8) do
        T.block("C", function()
          local vi, vk = T.axis.remap("SR", {i, k})
          T.init(function() C[{vi}] = 0.0 end)
          C[{vi}] = C[{vi}] + A[{vi, vk}]
        end)
      end
      for i in T.serial(8) do
        T.block("D", function()
          local vi = T.axis.spatial(8, i)
          D[{vi}] = C[{vi}]
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:decompose_reduction("C", (sch:get_loops("D"))) end, "decompose_reduction",
                   "loop i is not an ancestor of block 'C'")
  end)

  it("refuses a loop outside the block's scope", function()
    local f = T.prim_func("main", {A = T.Buffer({2, 8}, "float32"), B = T.Buffer({2}, "float32")}, function(A, B)
      for i in T.serial(2) do
        T.block("outer", function()
          local vi = T.axis.spatial(2, i)
          for k in T.serial(8) do
            T.block("inner", function()
              local vk = T.axis.reduce(8, k)
              T.init(function() B[{vi}] = 0.0 end)
              B[{vi}] = B[{vi}] + A[{vi, vk}]
            end)
          end
        end)
      end
    end)
    local sch = tir.Schedule(f)
    local i = sch:get_loops("outer")
    U.expect_error(function() sch:decompose_reduction("inner", i) end, "decompose_reduction", "loop i is outside the block's scope")
  end)

  it("refuses a loop below a loop of a reduction variable (TVM LoopHeightError)", function()
    local f = T.prim_func("main", {A = T.Buffer({8, 8}, "int32"), B = T.Buffer({8, 8}, "int32"),
                                   C = T.Buffer({8, 8}, "int32")}, function(A, B, C)
      for i, k, j in T.grid(8, 8, 8) do
        T.block("update", function()
          local vi, vj, vk = T.axis.remap("SSR", {i, j, k})
          T.init(function() C[{vi, vj}] = 0 end)
          C[{vi, vj}] = C[{vi, vj}] + A[{vi, vk}] * B[{vj, vk}]
        end)
      end
    end)
    local sch = tir.Schedule(f)
    local _, _, j = sch:get_loops("update")
    U.expect_error(function() sch:decompose_reduction("update", j) end, "decompose_reduction",
                   "reduction variable vk of block 'update' is bound to loop k, which is above loop j; decompose at k or higher")
  end)

  it("refuses a reduction variable that indexes the output", function()
    local f = T.prim_func("main", {A = T.Buffer({8, 8}, "float32"), C = T.Buffer({8, 8}, "float32")}, function(A, C)
      for i, k in T.grid(8, 8) do
        T.block("C", function()
          local vi, vk = T.axis.remap("SR", {i, k})
          T.init(function() C[{vi, vk}] = 0.0 end)
          C[{vi, vk}] = C[{vi, vk}] + A[{vi, vk}]
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:decompose_reduction("C", (sch:get_loops("C"))) end, "decompose_reduction",
                   "reduction variable vk of block 'C' indexes the written buffer C, so it is not a reduction block")
  end)

  it("refuses a predicate on the reduction loops that fails where the reduction starts", function()
    local f = T.prim_func("main", {A = T.Buffer({8, 8}, "float32"), C = T.Buffer({8}, "float32")}, function(A, C)
      for i, k in T.grid(8, 8) do
        T.block("C", function()
          local vi, vk = T.axis.remap("SR", {i, k})
          T.where(T.ge(k, 2))
          T.init(function() C[{vi}] = 0.0 end)
          C[{vi}] = C[{vi}] + A[{vi, vk}]
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:decompose_reduction("C", (sch:get_loops("C"))) end, "decompose_reduction",
                   "the predicate of block 'C' restricts a reduction loop where the reduction starts; the init block cannot keep it")
  end)
end)

-- ======================================================================================
describe("set_scope", function()
  it("changes the scope of an allocated buffer everywhere (TVM set_scope)", function()
    local expected = T.prim_func("main", {A = T.Buffer({16, 16}, "int32"), C = T.Buffer({16, 16}, "int32")}, function(A, C)
      local B = T.alloc_buffer({16, 16}, "int32", {scope = "shared"})
      for i, j in T.grid(16, 16) do
        T.block("B", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          B[{vi, vj}] = A[{vi, vj}] * 2
        end)
      end
      for i, j in T.grid(16, 16) do
        T.block("C", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          C[{vi, vj}] = B[{vi, vj}] + 1
        end)
      end
    end)
    local sch = tir.Schedule(elementwise(16, "int32"))
    sch:set_scope("B", 0, "shared")
    check(sch, expected)
  end)

  it("re-scopes views matched from the buffer (TVM set_scope_subregion)", function()
    local f = T.prim_func("main", {A = T.Buffer({8, 8}, "float32"), C = T.Buffer({8, 8}, "float32")}, function(A, C)
      local B = T.alloc_buffer({8, 8}, "float32")
      for i, j in T.grid(8, 4) do
        T.block("B", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          local Bs = T.match_buffer(B[{vi, {vj * 2, vj * 2 + 2}}], {2}, "float32")
          Bs[{0}] = A[{vi, vj * 2}] * 2.0
          Bs[{1}] = A[{vi, vj * 2 + 1}] * 3.0
        end)
      end
      for i, j in T.grid(8, 8) do
        T.block("C", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          C[{vi, vj}] = B[{vi, vj}] + 1.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    sch:set_scope("B", 0, "shared")
    local s = tostring(sch.mod)
    assert.matches('local B = T.alloc_buffer%({8, 8}, "float32", {scope = "shared"}%)', s)
    assert.matches('T.match_buffer%(B%[{vi, {vj %* 2, vj %* 2 %+ 2}}%], {2}, "float32", {scope = "shared"}%)', s)
    check(sch)
  end)

  it("refuses a function parameter (TVM fail_on_output_buffer)", function()
    local sch = tir.Schedule(elementwise(8))
    U.expect_error(function() sch:set_scope("C", 0, "shared") end, "ScheduleError in set_scope",
                   "C is a function parameter; only buffers allocated in the function can change scope")
  end)

  it("refuses an index outside the block's writes (TVM fail_on_index_out_of_bound)", function()
    local sch = tir.Schedule(elementwise(8))
    U.expect_error(function() sch:set_scope("B", 1, "shared") end, "set_scope",
                   "write_buffer_index 1 is out of range: block 'B' writes 1 buffer(s)")
    U.expect_error(function() sch:set_scope("B", -1, "shared") end, "write_buffer_index -1 is out of range")
    U.expect_error(function() sch:set_scope("B", "A", "shared") end, "block 'B' writes no buffer named 'A' (it writes B)")
    U.expect_error(function() sch:set_scope("B", 0.5, "shared") end, "write_buffer_index must be an integer")
  end)

  it("refuses an unknown scope (TVM fail_on_invalid_scope)", function()
    local sch = tir.Schedule(elementwise(8))
    U.expect_error(function() sch:set_scope("B", 0, "test_scope") end, "set_scope", "invalid storage scope 'test_scope'")
  end)

  it("refuses a match_buffer view", function()
    local f = T.prim_func("main", {A = T.Buffer({8}, "float32"), C = T.Buffer({8}, "float32")}, function(A, C)
      local B = T.alloc_buffer({8}, "float32")
      for i in T.serial(2) do
        T.block("outer", function()
          local vo = T.axis.spatial(2, i)
          local V = T.match_buffer(B[{{vo * 4, vo * 4 + 4}}], {4}, "float32")
          for ii in T.serial(4) do
            T.block("W", function()
              local v = T.axis.spatial(4, ii)
              V[{v}] = A[{vo * 4 + v}]
            end)
          end
        end)
      end
      for i in T.serial(8) do
        T.block("C", function()
          local vi = T.axis.spatial(8, i)
          C[{vi}] = B[{vi}]
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:set_scope("W", 0, "shared") end, "set_scope",
                   "V is not allocated by a block (it is a match_buffer view); set the scope of the buffer it views")
  end)
end)

-- ======================================================================================
describe("storage_align", function()
  local function aligned(entries)
    return T.prim_func("main", {A = T.Buffer({16, 16}, "float32"), C = T.Buffer({16, 16}, "float32")}, function(A, C)
      local B = T.alloc_buffer({16, 16}, "float32")
      for i, j in T.grid(16, 16) do
        T.block("B", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          T.block_attr({buffer_dim_align = entries})
          B[{vi, vj}] = A[{vi, vj}] * 2.0
        end)
      end
      for i, j in T.grid(16, 16) do
        T.block("C", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          C[{vi, vj}] = B[{vi, vj}] + 1.0
        end)
      end
    end)
  end

  it("records (buffer, axis, factor, offset) on the block (TVM storage_align)", function()
    local sch = tir.Schedule(elementwise(16))
    local b = sch:get_block("B")
    sch:storage_align(b, 0, 0, 16, 15)
    check(sch, aligned({{0, 0, 16, 15}}))
  end)

  it("replaces the entry of the same buffer and axis (TVM storage_align_update)", function()
    local sch = tir.Schedule(elementwise(16))
    local b = sch:get_block("B")
    sch:storage_align(b, 0, 0, 16, 0)
    sch:storage_align(b, 0, 1, 8, 1)
    sch:storage_align(b, 0, 0, 16, 15)
    check(sch, aligned({{0, 1, 8, 1}, {0, 0, 16, 15}}))
  end)

  it("pads the allocation's stride when lowered, and results stay the same", function()
    local sch = tir.Schedule(elementwise(16, "int32"))
    sch:set_scope("B", 0, "shared")
    sch:storage_align("B", 0, 0, 32, 8)
    local lowered = tir.lower(sch.mod)
    local s = tostring(lowered)
    assert.matches("T.allocate%({616}, \"int32\", \"shared\"%)", s) -- 16 rows of stride 40: 15 * 40 + 16
    assert.matches("%* 40", s)
    same_results(sch:original(), lowered)
    check(sch)
  end)

  it("accepts a negative axis counted from the end", function()
    local sch = tir.Schedule(elementwise(8))
    sch:storage_align("B", 0, -2, 4, 1)
    assert.matches('{{0, 0, 4, 1}}', tostring(sch.mod))
  end)

  -- ---- preconditions ----
  it("refuses a non-positive factor (TVM invalid_factor1/2)", function()
    local sch = tir.Schedule(elementwise(8))
    U.expect_error(function() sch:storage_align("B", 0, 0, 0, 0) end, "ScheduleError in storage_align", "factor must be positive, got 0")
    U.expect_error(function() sch:storage_align("B", 0, 0, -1, 0) end, "factor must be positive, got -1")
  end)

  it("refuses an offset outside [0, factor)", function()
    local sch = tir.Schedule(elementwise(8))
    U.expect_error(function() sch:storage_align("B", 0, 0, 8, 8) end, "storage_align", "offset must be in [0, factor), got 8")
    U.expect_error(function() sch:storage_align("B", 0, 0, 8, -1) end, "offset must be in [0, factor), got -1")
  end)

  it("refuses a parameter buffer (TVM invalid_buffer)", function()
    local sch = tir.Schedule(elementwise(8))
    U.expect_error(function() sch:storage_align("C", 0, 0, 8, 1) end, "storage_align",
                   "C is a function parameter; only buffers allocated in the function can be aligned")
  end)

  it("refuses an index outside the block's writes (TVM invalid_buffer_index)", function()
    local sch = tir.Schedule(elementwise(8))
    U.expect_error(function() sch:storage_align("B", 2, 0, 8, 1) end, "storage_align",
                   "write_buffer_index 2 is out of range: block 'B' writes 1 buffer(s)")
  end)

  it("refuses an axis outside [-ndim, ndim) (TVM invalid_axis)", function()
    local sch = tir.Schedule(elementwise(8))
    U.expect_error(function() sch:storage_align("B", 0, 2, 8, 1) end, "storage_align",
                   "axis 2 is out of range for B, which has 2 dimensions")
    U.expect_error(function() sch:storage_align("B", 0, -3, 8, 1) end, "axis -3 is out of range")
  end)

  it("refuses a malformed existing annotation (TVM invalid_annotation)", function()
    local sch = tir.Schedule(elementwise(8))
    sch:annotate("B", "buffer_dim_align", {0})
    U.expect_error(function() sch:storage_align("B", 0, 0, 8, 1) end, "storage_align",
                   "block 'B' has a malformed buffer_dim_align annotation: expected a list of {buffer_index, axis, factor, offset}")
  end)
end)

-- ======================================================================================
describe("annotate / unannotate", function()
  it("attach and remove values on blocks and loops (TVM annotate_unannotate)", function()
    local f = U.matmul(8, 8, 8)
    local sch = tir.Schedule(f)
    local c = sch:get_block("C")
    local i, j = sch:get_loops(c)
    sch:annotate(i, "test1", "aaa")
    sch:annotate(j, "test2", 612)
    sch:annotate(j, "test3", {1, 2})
    sch:annotate(c, "test4", 0.25)
    sch:annotate(c, "pragma_x", 1)
    local expected = T.prim_func("main", {A = T.Buffer({8, 8}, "float32"), B = T.Buffer({8, 8}, "float32"),
                                          C = T.Buffer({8, 8}, "float32")}, function(A, B, C)
      for i in T.serial(8, {annotations = {test1 = "aaa"}}) do
        for j in T.serial(8, {annotations = {test2 = 612, test3 = {1, 2}}}) do
          for k in T.serial(8) do
            T.block("C", function()
              local v_i, v_j, v_k = T.axis.remap("SSR", {i, j, k})
              T.block_attr({test4 = T.float32(0.25), pragma_x = 1})
              T.init(function() C[{v_i, v_j}] = 0.0 end)
              C[{v_i, v_j}] = C[{v_i, v_j}] + A[{v_i, v_k}] * B[{v_k, v_j}]
            end)
          end
        end
      end
    end)
    check(sch, expected)
    sch:annotate(c, "pragma_x", 2) -- replaces
    assert.matches('%["pragma_x"%] = 2', tostring(sch.mod))
    sch:unannotate(i, "test1")
    sch:unannotate(j, "test2")
    sch:unannotate(j, "test3")
    sch:unannotate(c, "test4")
    sch:unannotate(c, "pragma_x")
    assert.is_true(tir.structural_equal(f, sch.mod))
    assert_replay(sch)
  end)

  it("takes block names", function()
    local sch = tir.Schedule(elementwise(8))
    sch:annotate("B", "k", "v")
    assert.matches('T.block_attr%({%["k"%] = "v"}%)', tostring(sch.mod))
    sch:unannotate("B", "k")
    assert_replay(sch)
  end)

  it("refuse NaN and infinite values, naming the block or loop, and leave the schedule unchanged", function()
    local sch = tir.Schedule(elementwise(8))
    local before = tostring(sch.mod)
    local i = sch:get_loops(sch:get_block("B"))
    U.expect_error(function() sch:annotate("B", "k", 0 / 0) end, "ScheduleError in annotate", "block B:", "annotation k holds NaN",
                   "this block")
    U.expect_error(function() sch:annotate(i, "k", math.huge) end, "ScheduleError in annotate", "loop i:", "holds inf", "this loop")
    U.expect_error(function() sch:annotate("B", "k", {1, -math.huge}) end, "holds -inf")
    U.expect_error(function() sch:annotate(i, "k", tir.const(0 / 0, "float32")) end, "holds NaN")
    assert.are.equal(before, tostring(sch.mod))
    sch:annotate("B", "k", 0.5) -- finite floats stay fine
    assert_replay(sch)
  end)

  it("refuse bad arguments and missing keys", function()
    local sch = tir.Schedule(elementwise(8))
    U.expect_error(function() sch:unannotate("B", "nope") end, "ScheduleError in unannotate", "there is no annotation 'nope' to remove")
    U.expect_error(function() sch:annotate("B", 3, 1) end, "annotate", "key must be a string")
    U.expect_error(function() sch:annotate(3, "k", 1) end, "annotate", "argument 1 must be a block")
    U.expect_error(function() sch:annotate("B", "k", {1, {2}}) end, "TypeError in annotate",
                   "element 2 of the value must be a number or an expression, got table")
    U.expect_error(function() sch:annotate("B", "k", print) end, "TypeError in annotate",
                   "the value must be a number, boolean, string, expression or list, got function")
  end)
end)

-- ======================================================================================
describe("add_unit_loop", function()
  it("wraps a block in a loop of extent 1 (TVM add_unit_loop)", function()
    local expected = T.prim_func("main", {A = T.Buffer({8}, "int32"), C = T.Buffer({8}, "int32")}, function(A, C)
      for u in T.serial(1) do
        T.block("C", function()
          local vi = T.axis.spatial(8, 0)
          C[{vi}] = A[{vi}] + 1
        end)
      end
    end)
    local f = T.prim_func("main", {A = T.Buffer({8}, "int32"), C = T.Buffer({8}, "int32")}, function(A, C)
      T.block("C", function()
        local vi = T.axis.spatial(8, 0)
        C[{vi}] = A[{vi}] + 1
      end)
    end)
    local sch = tir.Schedule(f)
    local u = sch:add_unit_loop("C")
    assert.are.equal("u", u.var.name)
    check(sch, expected)
  end)

  it("wraps a loop, and the new loop is a place to compute_at", function()
    local sch = tir.Schedule(elementwise(8, "int32"))
    local i = sch:get_loops("C")
    local u = sch:add_unit_loop(i)
    assert.matches("for u, i_1, j_1 in T.grid%(1, 8, 8%) do", tostring(sch.mod))
    sch:compute_at("B", u)
    assert.matches("for u in T.serial%(1%) do\n%s*for ax0, ax1 in T.grid%(8, 8%) do", tostring(sch.mod))
    check(sch)
  end)

  it("refuses the root block and stale handles", function()
    local sch = tir.Schedule(elementwise(8))
    U.expect_error(function() sch:add_unit_loop(sch:get_block("root")) end, "ScheduleError in add_unit_loop",
                   "cannot add a loop on top of the root block")
    local i = sch:get_loops("B")
    sch:fuse(sch:get_loops("B"))
    U.expect_error(function() sch:add_unit_loop(i) end, "add_unit_loop", "loop 'i' is no longer in the function")
  end)
end)

-- ======================================================================================
describe("get_child_blocks / get_producers / get_consumers", function()
  -- TVM's matmul of test_tir_schedule_utilities.py: init and update under the same i, j loops
  local function matmul_split()
    return T.prim_func("main", {A = T.Buffer({8, 8}, "float32"), B = T.Buffer({8, 8}, "float32"),
                                C = T.Buffer({8, 8}, "float32")}, function(A, B, C)
      for i, j in T.grid(8, 8) do
        T.block("init", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          C[{vi, vj}] = 0.0
        end)
        for k in T.serial(8) do
          T.block("update", function()
            local vi, vj, vk = T.axis.remap("SSR", {i, j, k})
            C[{vi, vj}] = C[{vi, vj}] + A[{vi, vk}] * B[{vj, vk}]
          end)
        end
      end
    end)
  end

  local function matmul_relu()
    local te = tir.te
    local A = te.placeholder({8, 8}, "float32", "A")
    local B = te.placeholder({8, 8}, "float32", "B")
    local k = te.reduce_axis({0, 8}, "k")
    local C = te.compute({8, 8}, function(i, j) return te.sum(A[{i, k}] * B[{k, j}], {k}) end, "matmul")
    local D = te.compute({8, 8}, function(i, j) return tir.max(C[{i, j}], tir.const(0, "float32")) end, "relu")
    return te.create_prim_func({A, B, D})
  end

  it("list the child blocks of a loop and of a block (TVM get_child_blocks)", function()
    local sch = tir.Schedule(matmul_split())
    local init, update = sch:get_block("init"), sch:get_block("update")
    local i = sch:get_loops(init)
    local blocks = sch:get_child_blocks(i)
    assert.are.equal(2, #blocks)
    assert.are.equal(init.uid, blocks[1].uid)
    assert.are.equal(update.uid, blocks[2].uid)
    local root = sch:get_block("root")
    blocks = sch:get_child_blocks(root)
    assert.are.equal(2, #blocks)
    assert.are.equal("update", blocks[2].name)
    -- nested blocks are not children of the root
    local sch2 = tir.Schedule(elementwise(8))
    sch2:annotate("B", "x", 1)
    assert.are.equal(2, #sch2:get_child_blocks("root"))
    assert.are.equal(0, #sch2:get_child_blocks("B"))
    assert_replay(sch)
  end)

  it("find producers and consumers in the scope (TVM get_producers / get_consumers)", function()
    local sch = tir.Schedule(matmul_relu())
    local producers = sch:get_producers("relu")
    assert.are.equal(1, #producers)
    assert.are.equal("matmul", producers[1].name)
    local consumers = sch:get_consumers("matmul")
    assert.are.equal(1, #consumers)
    assert.are.equal("relu", consumers[1].name)
    assert.are.equal(0, #sch:get_producers("matmul"))
    assert.are.equal(0, #sch:get_consumers("relu"))
    -- the results are usable handles
    sch:compute_at(producers[1], (sch:get_loops(consumers[1])))
    check(sch, nil, {rtol = 1e-6})
  end)

  it("list a block once when it shares several buffers (TVM multiple_buffer_dependencies)", function()
    local f = T.prim_func("main", {data = T.Buffer({4, 8}, "float32"), T_add = T.Buffer({4}, "float32")}, function(data, T_add)
      local v0 = T.alloc_buffer({4}, "float32")
      local v1 = T.alloc_buffer({4}, "float32")
      for i0, i1 in T.grid(4, 8) do
        T.block("red", function()
          local ax0, k1 = T.axis.remap("SR", {i0, i1})
          T.init(function()
            v0[{ax0}] = 0.0
            v1[{ax0}] = 0.0
          end)
          v0[{ax0}] = v0[{ax0}] + data[{ax0, k1}]
          v1[{ax0}] = v1[{ax0}] + data[{ax0, k1}] * data[{ax0, k1}]
        end)
      end
      for i0 in T.serial(4) do
        T.block("T_add", function()
          local ax0 = T.axis.spatial(4, i0)
          T_add[{ax0}] = v0[{ax0}] + v1[{ax0}]
        end)
      end
    end)
    local sch = tir.Schedule(f)
    local p = sch:get_producers("T_add")
    assert.are.equal(1, #p)
    assert.are.equal("red", p[1].name)
    local c = sch:get_consumers("red")
    assert.are.equal(1, #c)
    assert.are.equal("T_add", c[1].name)
    assert_replay(sch)
  end)

  it("fail clearly on stale handles", function()
    local sch = tir.Schedule(elementwise(8))
    local b = sch:get_block("B")
    sch:compute_inline(b)
    U.expect_error(function() sch:get_producers(b) end, "ScheduleError in get_producers", "the block handle no longer refers to a block")
    U.expect_error(function() sch:get_consumers(b) end, "ScheduleError in get_consumers", "the block handle no longer refers to a block")
    U.expect_error(function() sch:get_child_blocks(b) end, "ScheduleError in get_child_blocks",
                   "the block handle no longer refers to a block")
  end)
end)

-- ======================================================================================
describe("trace", function()
  it("records every primitive so that replay gives the same function", function()
    local f = U.matmul(32, 32, 16, "int32")
    local sch = tir.Schedule(f)
    local c = sch:get_block("C")
    local as = sch:cache_read(c, 0, "shared") -- A
    local cl = sch:cache_write(c, 0, "local")
    local i, j, k = sch:get_loops(c)
    local io, ii = sch:split(i, {nil, 8})
    local jo, ji = sch:split(j, {nil, 8})
    local ko, ki = sch:split(k, {nil, 4})
    sch:reorder(io, jo, ko, ki, ii, ji)
    sch:compute_at(as, ko)
    sch:reverse_compute_at(cl, jo)
    sch:storage_align(as, 0, 0, 8, 1)
    sch:annotate(c, "note", "x")
    sch:annotate(ki, "pragma_unroll_explicit", 1)
    sch:unannotate(c, "note")
    local u = sch:add_unit_loop(ii)
    sch:get_child_blocks(u)
    sch:get_producers(c)
    sch:get_consumers(c)
    sch:decompose_reduction(c, ko)
    sch:set_scope(c, 0, "shared")
    local text = sch:trace()
    for _, name in ipairs({"cache_read", "cache_write", "compute_at", "reverse_compute_at", "storage_align", "annotate",
                           "unannotate", "add_unit_loop", "get_child_blocks", "get_producers", "get_consumers",
                           "decompose_reduction", "set_scope"}) do
      assert.matches("sch:" .. name .. "%(", text)
    end
    check(sch)
    -- compute_inline / reverse_compute_inline / cache_read with consumers
    local g = elementwise(8, "int32")
    local sch2 = tir.Schedule(g)
    sch2:cache_read("C", 0, "local", {"C"})
    sch2:reverse_compute_inline("C")
    assert.matches("sch:reverse_compute_inline%(", sch2:trace())
    check(sch2)
    local sch3 = tir.Schedule(g)
    sch3:compute_inline("B")
    assert.matches("sch:compute_inline%(", sch3:trace())
    check(sch3)
  end)
end)

-- ======================================================================================
describe("a chain of primitives: the SIMT GEMM schedule", function()
  local simt = require("tir.schedules.simt_gemm")
  local small = {BM = 32, BN = 32, BK = 8, TY = 4, TX = 4, vec = 4}

  it("stays interpreter-equivalent on a 64x64x32 matmul and replays from its trace", function()
    local f = U.matmul(64, 64, 32)
    local sch = simt.schedule(f, small)
    U.assert_equiv(f, sch.mod, {rtol = 1e-5, atol = 1e-5})
    assert_replay(sch)
  end)

  it("stays equivalent with padding instead of layouts, and on int32", function()
    local opts = {}
    for k, v in pairs(small) do opts[k] = v end
    opts.a_transpose, opts.b_swizzle, opts.pad_a = false, false, {8, 1}
    local f = U.matmul(64, 64, 32, "int32")
    local sch = simt.schedule(f, opts)
    assert.matches("buffer_dim_align", tostring(sch.mod))
    U.assert_equiv(f, sch.mod)
    assert_replay(sch)
  end)

  it("stays equivalent when the tiles do not divide the matrix", function()
    local f = U.matmul(48, 40, 20)
    local opts = {}
    for k, v in pairs(small) do opts[k] = v end
    opts.local_vec, opts.store_vec = false, false
    local sch = simt.schedule(f, opts)
    U.assert_equiv(f, sch.mod, {rtol = 1e-5, atol = 1e-5})
    assert_replay(sch)
  end)
end)
