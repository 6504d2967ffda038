-- schedule_compute_spec.lua -- compute_inline, reverse_compute_inline, compute_at,
-- reverse_compute_at: the IR after each (compared with the function TVM's documented
-- semantics give, written as a T script; cases from TVM's test_tir_schedule_compute_inline.py
-- and test_tir_schedule_compute_at.py), interpreter equivalence on random inputs (bit-exact,
-- float32 and int32), one test per precondition with its error text, and trace replay.
local tir = require("tir")
local T = tir.script
local U = require("spec_util")

-- The schedule's function is structurally equal to `expected`.
local function assert_ir(sch, expected)
  local eq, diff = tir.structural_equal(sch.mod, expected)
  if not eq then
    error(("not the expected IR: %s\n--- got:\n%s\n--- expected:\n%s"):format(tostring(diff), tostring(sch.mod),
                                                                             tostring(expected)), 2)
  end
end

-- The trace replays on the original function to the same function.
local function assert_replay(sch)
  local replay = tir.Schedule(sch:original()):apply_trace(sch:trace())
  local eq, diff = tir.structural_equal(sch.mod, replay.mod)
  if not eq then error("trace replay differs: " .. tostring(diff) .. "\n" .. sch:trace(), 2) end
end

-- All three checks of a finished schedule.
local function check(sch, expected)
  if expected then assert_ir(sch, expected) end
  U.assert_equiv(sch:original(), sch.mod)
  assert_replay(sch)
end

-- B = A * 2 (or + 2 for integers), C = B + 1: the two-stage elementwise chain of TVM's tests.
local function two_stage(n, m, dtype)
  dtype = dtype or "float32"
  local two, one = T[dtype](2), T[dtype](1)
  return T.prim_func("main", {A = T.Buffer({n, m}, dtype), C = T.Buffer({n, m}, dtype)}, function(A, C)
    local B = T.alloc_buffer({n, m}, dtype)
    for i, j in T.grid(n, m) do
      T.block("B", function()
        local vi, vj = T.axis.remap("SS", {i, j})
        B[{vi, vj}] = A[{vi, vj}] * two
      end)
    end
    for i, j in T.grid(n, m) do
      T.block("C", function()
        local vi, vj = T.axis.remap("SS", {i, j})
        C[{vi, vj}] = B[{vi, vj}] + one
      end)
    end
  end)
end

local function two_stage_inlined(n, m, dtype)
  dtype = dtype or "float32"
  local two, one = T[dtype](2), T[dtype](1)
  return T.prim_func("main", {A = T.Buffer({n, m}, dtype), C = T.Buffer({n, m}, dtype)}, function(A, C)
    for i, j in T.grid(n, m) do
      T.block("C", function()
        local vi, vj = T.axis.remap("SS", {i, j})
        C[{vi, vj}] = A[{vi, vj}] * two + one
      end)
    end
  end)
end

-- ======================================================================================
describe("compute_inline", function()
  it("inlines a producer into its consumer (TVM elementwise)", function()
    local sch = tir.Schedule(two_stage(16, 12))
    local c = sch:get_block("C")
    sch:compute_inline(sch:get_block("B"))
    check(sch, two_stage_inlined(16, 12))
    assert.are.equal("C", sch:get(c).name) -- the consumer's handle survives
  end)

  it("is bit-exact on int32", function()
    local sch = tir.Schedule(two_stage(8, 8, "int32"))
    sch:compute_inline("B")
    check(sch, two_stage_inlined(8, 8, "int32"))
  end)

  it("inlines under a shared loop (TVM elementwise_under_loop)", function()
    local f = T.prim_func("main", {A = T.Buffer({16, 16}, "float32"), C = T.Buffer({16, 16}, "float32")}, function(A, C)
      local B = T.alloc_buffer({16, 16}, "float32")
      for i in T.serial(16) do
        for j in T.serial(16) do
          T.block("B", function()
            local vi, vj = T.axis.remap("SS", {i, j})
            B[{vi, vj}] = A[{vi, vj}] * 2.0
          end)
        end
        for j in T.serial(16) do
          T.block("C", function()
            local vi, vj = T.axis.remap("SS", {i, j})
            C[{vi, vj}] = B[{vi, vj}] + 1.0
          end)
        end
      end
    end)
    local sch = tir.Schedule(f)
    sch:compute_inline("B")
    check(sch, two_stage_inlined(16, 16))
  end)

  it("removes a producer nobody reads (TVM as_dce)", function()
    local f = T.prim_func("main", {A = T.Buffer({8, 8}, "float32"), C = T.Buffer({8, 8}, "float32")}, function(A, C)
      local B = T.alloc_buffer({8, 8}, "float32")
      for i, j in T.grid(8, 8) do
        T.block("B", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          B[{vi, vj}] = A[{vi, vj}] * 2.0
        end)
      end
      for i, j in T.grid(8, 8) do
        T.block("C", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          C[{vi, vj}] = A[{vi, vj}] + 1.0
        end)
      end
    end)
    local expected = T.prim_func("main", {A = T.Buffer({8, 8}, "float32"), C = T.Buffer({8, 8}, "float32")}, function(A, C)
      for i, j in T.grid(8, 8) do
        T.block("C", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          C[{vi, vj}] = A[{vi, vj}] + 1.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    sch:compute_inline("B")
    check(sch, expected)
  end)

  it("inlines into every consumer (TVM multi_consumer)", function()
    local f = T.prim_func("main", {A = T.Buffer({8, 8}, "float32"), C = T.Buffer({8, 8}, "float32"),
                                   D = T.Buffer({8, 8}, "float32")}, function(A, C, D)
      local B = T.alloc_buffer({8, 8}, "float32")
      for i, j in T.grid(8, 8) do
        T.block("B", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          B[{vi, vj}] = A[{vi, vj}] * 2.0
        end)
      end
      for i, j in T.grid(8, 8) do
        T.block("C", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          C[{vi, vj}] = B[{vi, vj}] + 1.0
        end)
      end
      for i, j in T.grid(8, 8) do
        T.block("D", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          D[{vi, vj}] = B[{vi, vj}] + 2.0 + C[{vi, vj}]
        end)
      end
    end)
    local expected = T.prim_func("main", {A = T.Buffer({8, 8}, "float32"), C = T.Buffer({8, 8}, "float32"),
                                          D = T.Buffer({8, 8}, "float32")}, function(A, C, D)
      for i, j in T.grid(8, 8) do
        T.block("C", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          C[{vi, vj}] = A[{vi, vj}] * 2.0 + 1.0
        end)
      end
      for i, j in T.grid(8, 8) do
        T.block("D", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          D[{vi, vj}] = A[{vi, vj}] * 2.0 + 2.0 + C[{vi, vj}]
        end)
      end
    end)
    local sch = tir.Schedule(f)
    sch:compute_inline("B")
    check(sch, expected)
  end)

  it("substitutes the load's indices (TVM multi_loads)", function()
    local f = T.prim_func("main", {A = T.Buffer({8, 10}, "int32"), C = T.Buffer({8, 8}, "int32")}, function(A, C)
      local B = T.alloc_buffer({8, 10}, "int32")
      for i, j in T.grid(8, 10) do
        T.block("B", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          B[{vi, vj}] = A[{vi, vj}] * 2
        end)
      end
      for i, j in T.grid(8, 8) do
        T.block("C", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          C[{vi, vj}] = B[{vi, vj}] + B[{vi, vj + 1}] + B[{vi, vj + 2}]
        end)
      end
    end)
    local expected = T.prim_func("main", {A = T.Buffer({8, 10}, "int32"), C = T.Buffer({8, 8}, "int32")}, function(A, C)
      for i, j in T.grid(8, 8) do
        T.block("C", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          C[{vi, vj}] = A[{vi, vj}] * 2 + A[{vi, vj + 1}] * 2 + A[{vi, vj + 2}] * 2
        end)
      end
    end)
    local sch = tir.Schedule(f)
    sch:compute_inline("B")
    check(sch, expected)
  end)

  it("inlines into a consumer's predicate too (TVM elementwise_predicate)", function()
    local f = T.prim_func("main", {A = T.Buffer({8, 8}, "int32"), C = T.Buffer({8, 8}, "int32")}, function(A, C)
      local B = T.alloc_buffer({8, 8}, "int32")
      for i, j in T.grid(8, 8) do
        T.block("B", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          B[{vi, vj}] = A[{vi, vj}] * 2
        end)
      end
      for i, j in T.grid(8, 8) do
        T.block("C", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          T.where(T.lt(B[{i, j}], 10))
          C[{vi, vj}] = B[{vi, vj}] + 1
        end)
      end
    end)
    local expected = T.prim_func("main", {A = T.Buffer({8, 8}, "int32"), C = T.Buffer({8, 8}, "int32")}, function(A, C)
      for i, j in T.grid(8, 8) do
        T.block("C", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          T.where(T.lt(A[{i, j}] * 2, 10))
          C[{vi, vj}] = A[{vi, vj}] * 2 + 1
        end)
      end
    end)
    local sch = tir.Schedule(f)
    sch:compute_inline("B")
    check(sch, expected)
  end)

  it("inlines a unit iteration variable stored at index 0", function()
    local f = T.prim_func("main", {A = T.Buffer({1, 8}, "float32"), C = T.Buffer({8}, "float32")}, function(A, C)
      local B = T.alloc_buffer({1, 8}, "float32")
      for i, j in T.grid(1, 8) do
        T.block("B", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          B[{0, vj}] = A[{vi, vj}] + 1.0
        end)
      end
      for j in T.serial(8) do
        T.block("C", function()
          local vj = T.axis.spatial(8, j)
          C[{vj}] = B[{0, vj}] * 3.0
        end)
      end
    end)
    local expected = T.prim_func("main", {A = T.Buffer({1, 8}, "float32"), C = T.Buffer({8}, "float32")}, function(A, C)
      for j in T.serial(8) do
        T.block("C", function()
          local vj = T.axis.spatial(8, j)
          C[{vj}] = (A[{0, vj}] + 1.0) * 3.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    sch:compute_inline("B")
    check(sch, expected)
  end)

  it("chains through te stages (pad -> relu -> output)", function()
    local te = tir.te
    local A = te.placeholder({6, 6}, "int32", "A")
    local P = te.compute({8, 8}, function(i, j)
      return T.if_then_else(tir.all(tir.ge(i, 1), tir.lt(i, 7), tir.ge(j, 1), tir.lt(j, 7)), A[{i - 1, j - 1}], tir.const(0, "int32"))
    end, "P")
    local R = te.compute({8, 8}, function(i, j) return tir.max(P[{i, j}], tir.const(3, "int32")) end, "R")
    local O = te.compute({7, 7}, function(i, j) return R[{i, j}] + R[{i + 1, j + 1}] end, "O")
    local f = te.create_prim_func({A, O})
    local sch = tir.Schedule(f)
    sch:compute_inline("P")
    sch:compute_inline("R")
    check(sch)
    assert.are.equal(0, U.count(tostring(sch.mod), "alloc_buffer"))
  end)

  it("inlines into blocks nested in a consumer and recomputes their regions", function()
    local f = T.prim_func("main", {A = T.Buffer({32, 32}, "float32"), C = T.Buffer({32, 32}, "float32")}, function(A, C)
      local B = T.alloc_buffer({32, 32}, "float32")
      for i, j in T.grid(32, 32) do
        T.block("B", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          B[{vi, vj}] = A[{vi, vj}] * 2.0
        end)
      end
      for i, j in T.grid(2, 2) do
        T.block("C_outer", function()
          local vi_o, vj_o = T.axis.remap("SS", {i, j})
          T.reads(B[{{vi_o * 16, vi_o * 16 + 16}, {vj_o * 16, vj_o * 16 + 16}}])
          T.writes(C[{{vi_o * 16, vi_o * 16 + 16}, {vj_o * 16, vj_o * 16 + 16}}])
          for i_i, j_i in T.grid(16, 16) do
            T.block("C_inner", function()
              local vi = T.axis.spatial(32, vi_o * 16 + i_i)
              local vj = T.axis.spatial(32, vj_o * 16 + j_i)
              C[{vi, vj}] = B[{vi, vj}] + 1.0
            end)
          end
        end)
      end
    end)
    local expected = T.prim_func("main", {A = T.Buffer({32, 32}, "float32"), C = T.Buffer({32, 32}, "float32")}, function(A, C)
      for i, j in T.grid(2, 2) do
        T.block("C_outer", function()
          local vi_o, vj_o = T.axis.remap("SS", {i, j})
          T.reads(A[{{vi_o * 16, vi_o * 16 + 16}, {vj_o * 16, vj_o * 16 + 16}}])
          T.writes(C[{{vi_o * 16, vi_o * 16 + 16}, {vj_o * 16, vj_o * 16 + 16}}])
          for i_i, j_i in T.grid(16, 16) do
            T.block("C_inner", function()
              local vi = T.axis.spatial(32, vi_o * 16 + i_i)
              local vj = T.axis.spatial(32, vj_o * 16 + j_i)
              C[{vi, vj}] = A[{vi, vj}] * 2.0 + 1.0
            end)
          end
        end)
      end
    end)
    local sch = tir.Schedule(f)
    sch:compute_inline("B")
    check(sch, expected)
  end)

  it("refuses a buffer used other than through loads (TVM buffer_matched / opaque_access)", function()
    local f = T.prim_func("main", {A = T.Buffer({8, 8}, "float32"), C = T.Buffer({8, 8}, "float32")}, function(A, C)
      local B = T.alloc_buffer({8, 8}, "float32")
      for i, j in T.grid(8, 8) do
        T.block("B", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          B[{vi, vj}] = A[{vi, vj}] * 2.0
        end)
      end
      for i, j in T.grid(8, 4) do
        T.block("C", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          local Bb = T.match_buffer(B[{vi, {vj * 2, vj * 2 + 2}}], {2}, "float32")
          C[{vi, vj * 2}] = Bb[{0}] + 1.0
          C[{vi, vj * 2 + 1}] = Bb[{1}] + 1.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    -- a view may be written through, so the viewing block counts as a writer
    U.expect_error(function() sch:compute_inline("B") end, "compute_inline",
                   "block 'C' also writes B; block 'B' must be the only writer of B in its scope")
    assert.is_true(tir.structural_equal(sch.mod, f))
    local g = T.prim_func("main", {A = T.Buffer({8}, "float32"), C = T.Buffer({8}, "float32")}, function(A, C)
      local B = T.alloc_buffer({8}, "float32")
      for i in T.serial(8) do
        T.block("B", function()
          local vi = T.axis.spatial(8, i)
          B[{vi}] = A[{vi}] * 2.0
        end)
      end
      for i in T.serial(8) do
        T.block("C", function()
          local vi = T.axis.spatial(8, i)
          T.evaluate(T.call("int32", "opaque_use", B.data))
          C[{vi}] = B[{vi}] + 1.0
        end)
      end
    end)
    local sch2 = tir.Schedule(g)
    U.expect_error(function() sch2:compute_inline("B") end, "compute_inline",
                   "B is used other than through loads B[...] by blocks of this scope")
    assert.is_true(tir.structural_equal(sch2.mod, g))
  end)

  it("checks its preconditions", function()
    -- a reduction (has an init)
    local sch = tir.Schedule(U.matmul(4, 4, 4))
    U.expect_error(function() sch:compute_inline("C") end, "ScheduleError in compute_inline",
                   "block 'C' is a reduction (it has an init)")
  end)

  it("refuses a block that writes two buffers (TVM fail_multi_reader_writer)", function()
    local f = T.prim_func("main", {A = T.Buffer({8, 8}, "float32"), D = T.Buffer({8, 8}, "float32")}, function(A, D)
      local B = T.alloc_buffer({8, 8}, "float32")
      local C = T.alloc_buffer({8, 8}, "float32")
      for i, j in T.grid(8, 8) do
        T.block("B", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          B[{vi, vj}] = A[{vi, vj}] * 2.0
          C[{vi, vj}] = A[{vi, vj}] + 2.0
        end)
      end
      for i, j in T.grid(8, 8) do
        T.block("C", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          D[{vi, vj}] = B[{vi, vj}] + C[{vi, vj}]
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:compute_inline("B") end, "compute_inline", "block 'B' writes 2 buffers; compute_inline needs exactly one")
    assert.is_true(tir.structural_equal(sch.mod, f)) -- unchanged
  end)

  it("refuses a block that writes a function output (TVM elementwise_output)", function()
    local f = T.prim_func("main", {A = T.Buffer({8}, "float32"), B = T.Buffer({8}, "float32"),
                                   C = T.Buffer({8}, "float32")}, function(A, B, C)
      for i in T.serial(8) do
        T.block("B", function()
          local vi = T.axis.spatial(8, i)
          B[{vi}] = A[{vi}] * 2.0
        end)
      end
      for i in T.serial(8) do
        T.block("C", function()
          local vi = T.axis.spatial(8, i)
          C[{vi}] = B[{vi}] + 1.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:compute_inline("B") end, "compute_inline",
                   "block 'B' writes the function's output B; it cannot be inlined")
  end)

  it("refuses a block with a non-spatial iteration variable", function()
    local f = T.prim_func("main", {A = T.Buffer({8}, "float32"), C = T.Buffer({8}, "float32")}, function(A, C)
      local B = T.alloc_buffer({8}, "float32")
      for i in T.serial(8) do
        T.block("B", function()
          local vi = T.axis.opaque(8, i)
          B[{vi}] = A[{vi}] * 2.0
        end)
      end
      for i in T.serial(8) do
        T.block("C", function()
          local vi = T.axis.spatial(8, i)
          C[{vi}] = B[{vi}] + 1.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:compute_inline("B") end, "compute_inline",
                   "block 'B' has a non-spatial iteration variable (vi)")
  end)

  it("refuses a block that is not the only writer of its buffer (TVM fail_subtree_compact_dataflow)", function()
    local f = T.prim_func("main", {A = T.Buffer({8}, "float32"), C = T.Buffer({8}, "float32")}, function(A, C)
      local B = T.alloc_buffer({8}, "float32")
      for i in T.serial(4) do
        T.block("B_0", function()
          local vi = T.axis.spatial(8, i)
          B[{vi}] = A[{vi}] * 2.0
        end)
      end
      for i in T.serial(4) do
        T.block("B_1", function()
          local vi = T.axis.spatial(8, i + 4)
          B[{vi}] = A[{vi}] * 3.0
        end)
      end
      for i in T.serial(8) do
        T.block("C", function()
          local vi = T.axis.spatial(8, i)
          C[{vi}] = B[{vi}] + 1.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:compute_inline("B_0") end, "compute_inline",
                   "block 'B_1' also writes B; block 'B_0' must be the only writer of B in its scope")
  end)

  it("refuses a block that reads what it writes", function()
    local f = T.prim_func("main", {A = T.Buffer({8}, "float32"), C = T.Buffer({8}, "float32")}, function(A, C)
      local B = T.alloc_buffer({8}, "float32")
      for i in T.serial(8) do
        T.block("B", function()
          local vi = T.axis.spatial(8, i)
          B[{vi}] = B[{vi}] + A[{vi}]
        end)
      end
      for i in T.serial(8) do
        T.block("C", function()
          local vi = T.axis.spatial(8, i)
          C[{vi}] = B[{vi}] + 1.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:compute_inline("B") end, "compute_inline",
                   "block 'B' reads B, which it writes, so it is not a complete block")
  end)

  it("refuses a block with a predicate", function()
    local f = T.prim_func("main", {A = T.Buffer({8}, "float32"), C = T.Buffer({8}, "float32")}, function(A, C)
      local B = T.alloc_buffer({8}, "float32")
      for i in T.serial(8) do
        T.block("B", function()
          local vi = T.axis.spatial(8, i)
          T.where(T.lt(i, 6))
          B[{vi}] = A[{vi}] * 2.0
        end)
      end
      for i in T.serial(8) do
        T.block("C", function()
          local vi = T.axis.spatial(8, i)
          C[{vi}] = B[{vi}] + 1.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:compute_inline("B") end, "compute_inline", "block 'B' has a predicate; inlining would drop it")
  end)

  it("refuses a body that is not a single store", function()
    local f = T.prim_func("main", {A = T.Buffer({8}, "float32"), C = T.Buffer({8}, "float32")}, function(A, C)
      local B = T.alloc_buffer({8}, "float32")
      for i in T.serial(8) do
        T.block("B", function()
          local vi = T.axis.spatial(8, i)
          T.If(T.lt(vi, 4), function() B[{vi}] = A[{vi}] end, function() B[{vi}] = A[{vi}] * 2.0 end)
        end)
      end
      for i in T.serial(8) do
        T.block("C", function()
          local vi = T.axis.spatial(8, i)
          C[{vi}] = B[{vi}] + 1.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:compute_inline("B") end, "compute_inline",
                   "the body of block 'B' is not a single store B[v...] = expr")
  end)

  it("refuses store indices that are not the iteration variables", function()
    local f = T.prim_func("main", {A = T.Buffer({8}, "float32"), C = T.Buffer({8}, "float32")}, function(A, C)
      local B = T.alloc_buffer({8}, "float32")
      for i in T.serial(8) do
        T.block("B", function()
          local vi = T.axis.spatial(8, i)
          B[{7 - vi}] = A[{vi}] * 2.0
        end)
      end
      for i in T.serial(8) do
        T.block("C", function()
          local vi = T.axis.spatial(8, i)
          C[{vi}] = B[{vi}] + 1.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:compute_inline("B") end, "compute_inline",
                   "the store's indices must be distinct iteration variables of block 'B' (index 1 is not)")
  end)

  it("refuses iteration variables that do not index the store", function()
    local f = T.prim_func("main", {A = T.Buffer({8, 2}, "float32"), C = T.Buffer({8}, "float32")}, function(A, C)
      local B = T.alloc_buffer({8}, "float32")
      for i, j in T.grid(8, 2) do
        T.block("B", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          B[{vi}] = A[{vi, vj}]
        end)
      end
      for i in T.serial(8) do
        T.block("C", function()
          local vi = T.axis.spatial(8, i)
          C[{vi}] = B[{vi}] + 1.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:compute_inline("B") end, "compute_inline",
                   "block 'B' has iteration variables that do not index the store")
  end)

  it("refuses when a later block overwrites what the producer reads", function()
    local f = T.prim_func("main", {A = T.Buffer({8}, "float32"), C = T.Buffer({8}, "float32")}, function(A, C)
      local X = T.alloc_buffer({8}, "float32")
      local B = T.alloc_buffer({8}, "float32")
      for i in T.serial(8) do
        T.block("X", function()
          local vi = T.axis.spatial(8, i)
          X[{vi}] = A[{vi}]
        end)
      end
      for i in T.serial(8) do
        T.block("B", function()
          local vi = T.axis.spatial(8, i)
          B[{vi}] = X[{vi}] * 2.0
        end)
      end
      for i in T.serial(8) do
        T.block("X2", function()
          local vi = T.axis.spatial(8, i)
          X[{vi}] = A[{vi}] + 5.0
        end)
      end
      for i in T.serial(8) do
        T.block("C", function()
          local vi = T.axis.spatial(8, i)
          C[{vi}] = B[{vi}] + X[{vi}]
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:compute_inline("B") end, "compute_inline",
                   "block 'X2' writes X, which block 'B' reads, before a consumer of B runs")
  end)

  it("refuses the only block of its scope", function()
    local f = T.prim_func("main", {A = T.Buffer({8}, "float32")}, function(A)
      T.block("root", function()
        local B = T.alloc_buffer({8}, "float32")
        for i in T.serial(8) do
          T.block("B", function()
            local vi = T.axis.spatial(8, i)
            B[{vi}] = A[{vi}] * 2.0
          end)
        end
      end)
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:compute_inline("B") end, "compute_inline",
                   "block 'B' is the only statement of its scope and cannot be removed")
  end)

  it("refuses the root block and a consumer running before the producer", function()
    local sch = tir.Schedule(two_stage(4, 4))
    U.expect_error(function() sch:compute_inline("root") end, "compute_inline", "block 'root' is the root block; it cannot be inlined")
    U.expect_error(function() sch:reverse_compute_inline("root") end, "reverse_compute_inline",
                   "block 'root' is the root block; it cannot be inlined")
    local f = T.prim_func("main", {A = T.Buffer({8}, "float32"), C = T.Buffer({8}, "float32"),
                                   D = T.Buffer({8}, "float32")}, function(A, C, D)
      local B = T.alloc_buffer({8}, "float32")
      for i in T.serial(8) do
        T.block("D", function()
          local vi = T.axis.spatial(8, i)
          D[{vi}] = B[{vi}]
        end)
      end
      for i in T.serial(8) do
        T.block("B", function()
          local vi = T.axis.spatial(8, i)
          B[{vi}] = A[{vi}] * 2.0
        end)
      end
      for i in T.serial(8) do
        T.block("C", function()
          local vi = T.axis.spatial(8, i)
          C[{vi}] = B[{vi}] + 1.0
        end)
      end
    end)
    local sch2 = tir.Schedule(f)
    U.expect_error(function() sch2:compute_inline("B") end, "compute_inline", "block 'D' reads B before block 'B' writes it")
  end)

  it("fails clearly on a stale handle", function()
    local sch = tir.Schedule(two_stage(4, 4))
    local b = sch:get_block("B")
    sch:compute_inline(b)
    U.expect_error(function() sch:compute_inline(b) end, "compute_inline", "the block handle no longer refers to a block")
  end)
end)

-- ======================================================================================
describe("reverse_compute_inline", function()
  local function inlined_into_b(n, m, dtype)
    dtype = dtype or "float32"
    local two, one = T[dtype](2), T[dtype](1)
    return T.prim_func("main", {A = T.Buffer({n, m}, dtype), C = T.Buffer({n, m}, dtype)}, function(A, C)
      for i, j in T.grid(n, m) do
        T.block("B", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          C[{vi, vj}] = A[{vi, vj}] * two + one
        end)
      end
    end)
  end

  it("folds a consumer into its producer (TVM elementwise)", function()
    local sch = tir.Schedule(two_stage(16, 12))
    local b = sch:get_block("B")
    sch:reverse_compute_inline(sch:get_block("C"))
    check(sch, inlined_into_b(16, 12))
    assert.are.equal("B", sch:get(b).name)
  end)

  it("is bit-exact on int32", function()
    local sch = tir.Schedule(two_stage(8, 8, "int32"))
    sch:reverse_compute_inline("C")
    check(sch, inlined_into_b(8, 8, "int32"))
  end)

  it("replaces every load of the buffer (TVM multi_reverse_loads)", function()
    local f = T.prim_func("main", {A = T.Buffer({8, 8}, "float32"), C = T.Buffer({8, 8}, "float32")}, function(A, C)
      local B = T.alloc_buffer({8, 8}, "float32")
      for i, j in T.grid(8, 8) do
        T.block("B", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          B[{vi, vj}] = A[{vi, vj}] * 2.0
        end)
      end
      for i, j in T.grid(8, 8) do
        T.block("C", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          C[{vi, vj}] = (B[{vi, vj}] + 1.0) * (B[{vi, vj}] * 2.0) + 3.0
        end)
      end
    end)
    local expected = T.prim_func("main", {A = T.Buffer({8, 8}, "float32"), C = T.Buffer({8, 8}, "float32")}, function(A, C)
      for i, j in T.grid(8, 8) do
        T.block("B", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          C[{vi, vj}] = (A[{vi, vj}] * 2.0 + 1.0) * (A[{vi, vj}] * 2.0 * 2.0) + 3.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    sch:reverse_compute_inline("C")
    check(sch, expected)
  end)

  it("maps a transposed read and other inputs (the consumer's indices follow the producer's)", function()
    local f = T.prim_func("main", {A = T.Buffer({4, 6}, "int32"), X = T.Buffer({6, 4}, "int32"),
                                   D = T.Buffer({6, 4}, "int32")}, function(A, X, D)
      local B = T.alloc_buffer({4, 6}, "int32")
      for i, j in T.grid(4, 6) do
        T.block("B", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          B[{vi, vj}] = A[{vi, vj}] + 7
        end)
      end
      for i, j in T.grid(6, 4) do
        T.block("D", function()
          local vj, vi = T.axis.remap("SS", {i, j})
          D[{vj, vi}] = B[{vi, vj}] * X[{vj, vi}]
        end)
      end
    end)
    local expected = T.prim_func("main", {A = T.Buffer({4, 6}, "int32"), X = T.Buffer({6, 4}, "int32"),
                                          D = T.Buffer({6, 4}, "int32")}, function(A, X, D)
      for i, j in T.grid(4, 6) do
        T.block("B", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          D[{vj, vi}] = (A[{vi, vj}] + 7) * X[{vj, vi}]
        end)
      end
    end)
    local sch = tir.Schedule(f)
    sch:reverse_compute_inline("D")
    check(sch, expected)
  end)

  it("restricts an overcomputing producer with a predicate (TVM overcomputed_producer)", function()
    local f = T.prim_func("main", {A = T.Buffer({16, 16}, "float32"), C = T.Buffer({15, 15}, "float32")}, function(A, C)
      local B = T.alloc_buffer({16, 16}, "float32")
      for i, j in T.grid(16, 16) do
        T.block("B", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          B[{vi, vj}] = A[{vi, vj}] * 2.0
        end)
      end
      for i, j in T.grid(15, 15) do
        T.block("C", function()
          local cvi, cvj = T.axis.remap("SS", {i, j})
          C[{cvi, cvj}] = B[{cvi, cvj}] + 1.0
        end)
      end
    end)
    local expected = T.prim_func("main", {A = T.Buffer({16, 16}, "float32"), C = T.Buffer({15, 15}, "float32")}, function(A, C)
      for i, j in T.grid(16, 16) do
        T.block("B", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          T.where(T.And(T.lt(i, 15), T.lt(j, 15)))
          C[{vi, vj}] = A[{vi, vj}] * 2.0 + 1.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    sch:reverse_compute_inline("C")
    check(sch, expected)
  end)

  it("folds an epilogue into a cache_write copy after reverse_compute_at", function()
    local te = tir.te
    local A = te.placeholder({32, 32}, "int32", "A")
    local B = te.placeholder({32, 32}, "int32", "B")
    local k = te.reduce_axis({0, 32}, "k")
    local C = te.compute({32, 32}, function(i, j) return te.sum(A[{i, k}] * B[{k, j}], {k}) end, "C")
    local D = te.compute({32, 32}, function(i, j) return tir.max(C[{i, j}], tir.const(0, "int32")) end, "D")
    local sch = tir.Schedule(te.create_prim_func({A, B, D}))
    local blk = sch:get_block("C")
    local cl = sch:cache_write(blk, 0, "local")
    local i, j = sch:get_loops(blk)
    local io, ii = sch:split(i, {nil, 8})
    local jo, ji = sch:split(j, {nil, 8})
    sch:reorder(io, jo, ii, ji)
    sch:reverse_compute_at(cl, jo)
    sch:reverse_compute_inline("D")
    check(sch)
    assert.are.equal(0, U.count(tostring(sch.mod), 'T.block%("D"'))
  end)

  it("refuses a reduction consumer", function()
    local f = T.prim_func("main", {A = T.Buffer({8, 8}, "float32"), C = T.Buffer({8}, "float32")}, function(A, C)
      local B = T.alloc_buffer({8, 8}, "float32")
      for i, j in T.grid(8, 8) do
        T.block("B", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          B[{vi, vj}] = A[{vi, vj}] * 2.0
        end)
      end
      for i, j in T.grid(8, 8) do
        T.block("C", function()
          local vi, vj = T.axis.remap("SR", {i, j})
          T.init(function() C[{vi}] = 0.0 end)
          C[{vi}] = C[{vi}] + B[{vi, vj}]
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:reverse_compute_inline("C") end, "ScheduleError in reverse_compute_inline",
                   "block 'C' is a reduction; it cannot be inlined")
  end)

  it("refuses a consumer with no producer (TVM fail_as_dce)", function()
    local f = T.prim_func("main", {A = T.Buffer({8}, "float32"), C = T.Buffer({8}, "float32")}, function(A, C)
      local B = T.alloc_buffer({8}, "float32")
      for i in T.serial(8) do
        T.block("B", function()
          local vi = T.axis.spatial(8, i)
          B[{vi}] = A[{vi}] * 2.0
        end)
      end
      for i in T.serial(8) do
        T.block("C", function()
          local vi = T.axis.spatial(8, i)
          C[{vi}] = A[{vi}] + 1.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:reverse_compute_inline("C") end, "reverse_compute_inline", "block 'C' has no producer in its scope")
  end)

  local function multi_producer()
    return T.prim_func("main", {A = T.Buffer({8}, "float32"), C = T.Buffer({8}, "float32"),
                                D = T.Buffer({8}, "float32")}, function(A, C, D)
      local B = T.alloc_buffer({8}, "float32")
      for i in T.serial(8) do
        T.block("B", function()
          local vi = T.axis.spatial(8, i)
          B[{vi}] = A[{vi}] * 2.0
        end)
      end
      for i in T.serial(8) do
        T.block("C", function()
          local vi = T.axis.spatial(8, i)
          C[{vi}] = B[{vi}] + 1.0
        end)
      end
      for i in T.serial(8) do
        T.block("D", function()
          local vi = T.axis.spatial(8, i)
          D[{vi}] = B[{vi}] + 2.0 + C[{vi}]
        end)
      end
    end)
  end

  it("refuses a consumer with two producers (TVM fail_multi_producer)", function()
    local sch = tir.Schedule(multi_producer())
    U.expect_error(function() sch:reverse_compute_inline("D") end, "reverse_compute_inline",
                   "block 'D' has more than one producer in its scope ('B' and 'C')")
  end)

  it("refuses when the producer's buffer has another consumer (TVM fail_multi_reader)", function()
    local sch = tir.Schedule(multi_producer())
    U.expect_error(function() sch:reverse_compute_inline("C") end, "reverse_compute_inline", "B has another consumer, 'D'")
  end)

  it("refuses a producer that writes a function output (TVM elementwise_output)", function()
    local f = T.prim_func("main", {A = T.Buffer({8}, "float32"), B = T.Buffer({8}, "float32"),
                                   C = T.Buffer({8}, "float32")}, function(A, B, C)
      for i in T.serial(8) do
        T.block("B", function()
          local vi = T.axis.spatial(8, i)
          B[{vi}] = A[{vi}] * 2.0
        end)
      end
      for i in T.serial(8) do
        T.block("C", function()
          local vi = T.axis.spatial(8, i)
          C[{vi}] = B[{vi}] + 1.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:reverse_compute_inline("C") end, "reverse_compute_inline",
                   "B is a function output; folding the consumer in would drop it")
  end)

  it("refuses a reduction producer (TVM producer_is_reduction)", function()
    local f = T.prim_func("main", {A = T.Buffer({8, 8}, "float32"), D = T.Buffer({8}, "float32")}, function(A, D)
      local B = T.alloc_buffer({8}, "float32")
      for i, j in T.grid(8, 8) do
        T.block("B", function()
          local vi, vj = T.axis.remap("SR", {i, j})
          T.init(function() B[{vi}] = 0.0 end)
          B[{vi}] = B[{vi}] + A[{vi, vj}]
        end)
      end
      for i in T.serial(8) do
        T.block("C", function()
          local vi = T.axis.spatial(8, i)
          D[{vi}] = B[{vi}] + 1.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:reverse_compute_inline("C") end, "reverse_compute_inline",
                   "producer 'B' must be a complete block with a single store")
  end)

  it("refuses loads at different indices (TVM fail_multi_reverse_loads)", function()
    local f = T.prim_func("main", {A = T.Buffer({8, 10}, "float32"), C = T.Buffer({8, 8}, "float32")}, function(A, C)
      local B = T.alloc_buffer({8, 10}, "float32")
      for i, j in T.grid(8, 10) do
        T.block("B", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          B[{vi, vj}] = A[{vi, vj}] * 2.0
        end)
      end
      for i, j in T.grid(8, 8) do
        T.block("C", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          C[{vi, vj}] = B[{vi, vj}] + B[{vi, vj + 1}]
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:reverse_compute_inline("C") end, "reverse_compute_inline",
                   "block 'C' must read B at one index tuple (every load the same indices)")
  end)

  it("refuses a load that is not at distinct iteration variables (TVM non_affine_load)", function()
    local f = T.prim_func("main", {A = T.Buffer({8, 8}, "float32"), C = T.Buffer({8, 8}, "float32")}, function(A, C)
      local B = T.alloc_buffer({8, 8}, "float32")
      for i, j in T.grid(8, 8) do
        T.block("B", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          B[{vi, vj}] = A[{vi, vj}] * 2.0
        end)
      end
      for i, j in T.grid(8, 8) do
        T.block("C", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          C[{vi, vj}] = B[{vi, vi}]
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:reverse_compute_inline("C") end, "reverse_compute_inline",
                   "block 'C' must read B at its iteration variables or a one-to-one affine map of them", "not a bijection")
  end)

  it("refuses a producer that does not cover the consumer (TVM producer_not_cover_consumer)", function()
    local f = T.prim_func("main", {A = T.Buffer({16}, "float32"), D = T.Buffer({16}, "float32")}, function(A, D)
      local B = T.alloc_buffer({16}, "float32")
      for i in T.serial(8) do
        T.block("B", function()
          local vi = T.axis.spatial(8, i)
          B[{vi}] = A[{vi}] * 2.0
        end)
      end
      for i in T.serial(16) do
        T.block("C", function()
          local vi = T.axis.spatial(16, i)
          D[{vi}] = B[{vi}] + 1.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:reverse_compute_inline("C") end, "reverse_compute_inline",
                   "producer 'B' does not write all of B that block 'C' reads")
  end)

  it("refuses a producer whose store indices are not iteration variables", function()
    local f = T.prim_func("main", {A = T.Buffer({8}, "float32"), D = T.Buffer({8}, "float32")}, function(A, D)
      local B = T.alloc_buffer({8}, "float32")
      for i in T.serial(8) do
        T.block("B", function()
          local vi = T.axis.spatial(8, i)
          B[{7 - vi}] = A[{vi}] * 2.0
        end)
      end
      for i in T.serial(8) do
        T.block("C", function()
          local vi = T.axis.spatial(8, i)
          D[{vi}] = B[{vi}] + 1.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:reverse_compute_inline("C") end, "reverse_compute_inline",
                   "the store of producer 'B' must use its iteration variables or constants as indices", "(index 1 does not)")
  end)

  it("refuses a consumer with a predicate", function()
    local f = T.prim_func("main", {A = T.Buffer({8}, "float32"), D = T.Buffer({8}, "float32")}, function(A, D)
      local B = T.alloc_buffer({8}, "float32")
      for i in T.serial(8) do
        T.block("B", function()
          local vi = T.axis.spatial(8, i)
          B[{vi}] = A[{vi}] * 2.0
        end)
      end
      for i in T.serial(8) do
        T.block("C", function()
          local vi = T.axis.spatial(8, i)
          T.where(T.lt(i, 4))
          D[{vi}] = B[{vi}] + 1.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:reverse_compute_inline("C") end, "reverse_compute_inline",
                   "the body of block 'C' must be a single store without a predicate")
  end)

  it("refuses a consumer that reads what it writes", function()
    local f = T.prim_func("main", {A = T.Buffer({8}, "float32"), D = T.Buffer({8}, "float32")}, function(A, D)
      local B = T.alloc_buffer({8}, "float32")
      for i in T.serial(8) do
        T.block("B", function()
          local vi = T.axis.spatial(8, i)
          B[{vi}] = A[{vi}] * 2.0
        end)
      end
      for i in T.serial(8) do
        T.block("C", function()
          local vi = T.axis.spatial(8, i)
          D[{vi}] = D[{vi}] + B[{vi}]
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:reverse_compute_inline("C") end, "reverse_compute_inline",
                   "block 'C' reads D, which it writes, so it is not a complete block")
  end)

  it("refuses a consumer that is not complete: not the only writer, a reduction variable without init", function()
    local f = T.prim_func("main", {A = T.Buffer({8}, "float32"), D = T.Buffer({8}, "float32")}, function(A, D)
      local B = T.alloc_buffer({8}, "float32")
      for i in T.serial(8) do
        T.block("B", function()
          local vi = T.axis.spatial(8, i)
          B[{vi}] = A[{vi}] * 2.0
        end)
      end
      for i in T.serial(8) do
        T.block("C", function()
          local vi = T.axis.spatial(8, i)
          D[{vi}] = B[{vi}] + 1.0
        end)
      end
      for i in T.serial(8) do
        T.block("C2", function()
          local vi = T.axis.spatial(8, i)
          D[{vi}] = A[{vi}]
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:reverse_compute_inline("C") end, "reverse_compute_inline",
                   "block 'C2' also writes D; block 'C' must be the only writer of D in its scope")
    local g = T.prim_func("main", {A = T.Buffer({8}, "float32"), D = T.Buffer({1}, "float32")}, function(A, D)
      local B = T.alloc_buffer({8}, "float32")
      for i in T.serial(8) do
        T.block("B", function()
          local vi = T.axis.spatial(8, i)
          B[{vi}] = A[{vi}] * 2.0
        end)
      end
      for i in T.serial(8) do
        T.block("C", function()
          local vi = T.axis.reduce(8, i)
          D[{0}] = B[{vi}]
        end)
      end
    end)
    local sch2 = tir.Schedule(g)
    U.expect_error(function() sch2:reverse_compute_inline("C") end, "reverse_compute_inline",
                   "block 'C' has a non-spatial iteration variable (vi)")
  end)

  it("refuses a consumer running before its producer", function()
    local f = T.prim_func("main", {A = T.Buffer({8}, "float32"), D = T.Buffer({8}, "float32")}, function(A, D)
      local B = T.alloc_buffer({8}, "float32")
      for i in T.serial(8) do
        T.block("C", function()
          local vi = T.axis.spatial(8, i)
          D[{vi}] = B[{vi}] + 1.0
        end)
      end
      for i in T.serial(8) do
        T.block("B", function()
          local vi = T.axis.spatial(8, i)
          B[{vi}] = A[{vi}] * 2.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:reverse_compute_inline("C") end, "reverse_compute_inline",
                   "block 'C' reads B before its producer 'B' writes it")
  end)

  it("refuses when a block between producer and consumer uses what the consumer writes", function()
    local f = T.prim_func("main", {A = T.Buffer({8}, "float32"), D = T.Buffer({8}, "float32"),
                                   E = T.Buffer({8}, "float32")}, function(A, D, E)
      local B = T.alloc_buffer({8}, "float32")
      for i in T.serial(8) do
        T.block("B", function()
          local vi = T.axis.spatial(8, i)
          B[{vi}] = A[{vi}] * 2.0
        end)
      end
      for i in T.serial(8) do
        T.block("E", function()
          local vi = T.axis.spatial(8, i)
          E[{vi}] = D[{vi}] + 1.0
        end)
      end
      for i in T.serial(8) do
        T.block("C", function()
          local vi = T.axis.spatial(8, i)
          D[{vi}] = B[{vi}] + 1.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:reverse_compute_inline("C") end, "reverse_compute_inline",
                   "block 'E' uses D between the producer 'B' and block 'C', which writes it; the write cannot move up")
  end)
end)

-- ======================================================================================
describe("compute_at", function()
  it("moves a producer under a consumer loop (TVM two_elementwise, preserve_unit_loops)", function()
    local expected = T.prim_func("main", {A = T.Buffer({16, 12}, "float32"), C = T.Buffer({16, 12}, "float32")}, function(A, C)
      local B = T.alloc_buffer({16, 12}, "float32")
      for i in T.serial(16) do
        for ax0, ax1 in T.grid(1, 12) do
          T.block("B", function()
            local vi = T.axis.spatial(16, i + ax0)
            local vj = T.axis.spatial(12, ax1)
            B[{vi, vj}] = A[{vi, vj}] * 2.0
          end)
        end
        for j in T.serial(12) do
          T.block("C", function()
            local vi, vj = T.axis.remap("SS", {i, j})
            C[{vi, vj}] = B[{vi, vj}] + 1.0
          end)
        end
      end
    end)
    local sch = tir.Schedule(two_stage(16, 12))
    local i = sch:get_loops("C")
    sch:compute_at("B", i, true)
    check(sch, expected)
  end)

  it("drops unit loops by default, and is bit-exact on int32", function()
    local expected = T.prim_func("main", {A = T.Buffer({8, 8}, "int32"), C = T.Buffer({8, 8}, "int32")}, function(A, C)
      local B = T.alloc_buffer({8, 8}, "int32")
      for i in T.serial(8) do
        for ax0 in T.serial(8) do
          T.block("B", function()
            local vi = T.axis.spatial(8, i)
            local vj = T.axis.spatial(8, ax0)
            B[{vi, vj}] = A[{vi, vj}] * 2
          end)
        end
        for j in T.serial(8) do
          T.block("C", function()
            local vi, vj = T.axis.remap("SS", {i, j})
            C[{vi, vj}] = B[{vi, vj}] + 1
          end)
        end
      end
    end)
    local sch = tir.Schedule(two_stage(8, 8, "int32"))
    local i = sch:get_loops("C")
    sch:compute_at("B", i)
    check(sch, expected)
  end)

  it("produces a tile for a blockized consumer (TVM blockized_1)", function()
    local f = T.prim_func("main", {A = T.Buffer({32, 32}, "float32"), C = T.Buffer({32, 32}, "float32")}, function(A, C)
      local B = T.alloc_buffer({32, 32}, "float32")
      for i, j in T.grid(32, 32) do
        T.block("B", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          B[{vi, vj}] = A[{vi, vj}] * 2.0
        end)
      end
      for i, j in T.grid(2, 2) do
        T.block("C_outer", function()
          local vi_o, vj_o = T.axis.remap("SS", {i, j})
          T.reads(B[{{vi_o * 16, vi_o * 16 + 16}, {vj_o * 16, vj_o * 16 + 16}}])
          T.writes(C[{{vi_o * 16, vi_o * 16 + 16}, {vj_o * 16, vj_o * 16 + 16}}])
          for i_i, j_i in T.grid(16, 16) do
            T.block("C_inner", function()
              local vi = T.axis.spatial(32, vi_o * 16 + i_i)
              local vj = T.axis.spatial(32, vj_o * 16 + j_i)
              C[{vi, vj}] = B[{vi, vj}] + 1.0
            end)
          end
        end)
      end
    end)
    local expected = T.prim_func("main", {A = T.Buffer({32, 32}, "float32"), C = T.Buffer({32, 32}, "float32")}, function(A, C)
      local B = T.alloc_buffer({32, 32}, "float32")
      for i0_0, i1_0 in T.grid(2, 2) do
        for ax0, ax1 in T.grid(16, 16) do
          T.block("B", function()
            local vi = T.axis.spatial(32, i0_0 * 16 + ax0)
            local vj = T.axis.spatial(32, i1_0 * 16 + ax1)
            B[{vi, vj}] = A[{vi, vj}] * 2.0
          end)
        end
        T.block("C_outer", function()
          local vi_o, vj_o = T.axis.remap("SS", {i0_0, i1_0})
          T.reads(B[{{vi_o * 16, vi_o * 16 + 16}, {vj_o * 16, vj_o * 16 + 16}}])
          T.writes(C[{{vi_o * 16, vi_o * 16 + 16}, {vj_o * 16, vj_o * 16 + 16}}])
          for i0_1, i1_1 in T.grid(16, 16) do
            T.block("C_inner", function()
              local vi = T.axis.spatial(32, vi_o * 16 + i0_1)
              local vj = T.axis.spatial(32, vj_o * 16 + i1_1)
              C[{vi, vj}] = B[{vi, vj}] + 1.0
            end)
          end
        end)
      end
    end)
    local sch = tir.Schedule(f)
    local _, j = sch:get_loops("C_outer")
    sch:compute_at("B", j, true)
    check(sch, expected)
  end)

  it("moves a blockized producer by whole tiles (TVM blockized_2)", function()
    local f = T.prim_func("main", {A = T.Buffer({32, 32}, "float32"), C = T.Buffer({32, 32}, "float32")}, function(A, C)
      local B = T.alloc_buffer({32, 32}, "float32")
      for i_o, j_o in T.grid(4, 4) do
        T.block("B_outer", function()
          local vio, vjo = T.axis.remap("SS", {i_o, j_o})
          T.reads(A[{{vio * 8, vio * 8 + 8}, {vjo * 8, vjo * 8 + 8}}])
          T.writes(B[{{vio * 8, vio * 8 + 8}, {vjo * 8, vjo * 8 + 8}}])
          for i_i, j_i in T.grid(8, 8) do
            T.block("B_inner", function()
              local vi = T.axis.spatial(32, vio * 8 + i_i)
              local vj = T.axis.spatial(32, vjo * 8 + j_i)
              B[{vi, vj}] = A[{vi, vj}] * 2.0
            end)
          end
        end)
      end
      for i_o, j_o, i_i, j_i in T.grid(2, 2, 16, 16) do
        T.block("C", function()
          local vi = T.axis.spatial(32, i_o * 16 + i_i)
          local vj = T.axis.spatial(32, j_o * 16 + j_i)
          C[{vi, vj}] = B[{vi, vj}] + 1.0
        end)
      end
    end)
    local expected = T.prim_func("main", {A = T.Buffer({32, 32}, "float32"), C = T.Buffer({32, 32}, "float32")}, function(A, C)
      local B = T.alloc_buffer({32, 32}, "float32")
      for i_o, j_o in T.grid(2, 2) do
        for ax0, ax1 in T.grid(2, 2) do
          T.block("B_outer", function()
            local vio = T.axis.spatial(4, i_o * 2 + ax0)
            local vjo = T.axis.spatial(4, j_o * 2 + ax1)
            T.reads(A[{{vio * 8, vio * 8 + 8}, {vjo * 8, vjo * 8 + 8}}])
            T.writes(B[{{vio * 8, vio * 8 + 8}, {vjo * 8, vjo * 8 + 8}}])
            for i_i, j_i in T.grid(8, 8) do
              T.block("B_inner", function()
                local vi = T.axis.spatial(32, vio * 8 + i_i)
                local vj = T.axis.spatial(32, vjo * 8 + j_i)
                B[{vi, vj}] = A[{vi, vj}] * 2.0
              end)
            end
          end)
        end
        for i_i, j_i in T.grid(16, 16) do
          T.block("C", function()
            local vi = T.axis.spatial(32, i_o * 16 + i_i)
            local vj = T.axis.spatial(32, j_o * 16 + j_i)
            C[{vi, vj}] = B[{vi, vj}] + 1.0
          end)
        end
      end
    end)
    local sch = tir.Schedule(f)
    local _, j_o = sch:get_loops("C")
    sch:compute_at("B_outer", j_o, true)
    check(sch, expected)
  end)

  it("moves a reduction producer (TVM multi_reduction)", function()
    local f = T.prim_func("main", {A = T.Buffer({16, 16}, "float32"), C = T.Buffer({1}, "float32")}, function(A, C)
      local B = T.alloc_buffer({16}, "float32")
      for i, k in T.grid(16, 16) do
        T.block("B", function()
          local vi, vk = T.axis.remap("SR", {i, k})
          T.init(function() B[{vi}] = 0.0 end)
          B[{vi}] = B[{vi}] + A[{vi, vk}]
        end)
      end
      for k in T.serial(16) do
        T.block("C", function()
          local vk = T.axis.reduce(16, k)
          T.init(function() C[{0}] = 0.0 end)
          C[{0}] = C[{0}] + B[{vk}]
        end)
      end
    end)
    local expected = T.prim_func("main", {A = T.Buffer({16, 16}, "float32"), C = T.Buffer({1}, "float32")}, function(A, C)
      local B = T.alloc_buffer({16}, "float32")
      for k in T.serial(16) do
        for kk in T.serial(16) do
          T.block("B", function()
            local vi, vk = T.axis.remap("SR", {k, kk})
            T.init(function() B[{vi}] = 0.0 end)
            B[{vi}] = B[{vi}] + A[{vi, vk}]
          end)
        end
        T.block("C", function()
          local vk = T.axis.reduce(16, k)
          T.init(function() C[{0}] = 0.0 end)
          C[{0}] = C[{0}] + B[{vk}]
        end)
      end
    end)
    local sch = tir.Schedule(f)
    local k = sch:get_loops("C")
    sch:compute_at("B", k)
    check(sch, expected)
  end)

  it("adds a predicate where the needed region leaves the domain (TVM read_out_of_bound)", function()
    local f = T.prim_func("main", {A = T.Buffer({16}, "int32"), C = T.Buffer({16}, "int32")}, function(A, C)
      local B = T.alloc_buffer({16}, "int32")
      for i in T.serial(16) do
        T.block("B", function()
          local v = T.axis.spatial(16, i)
          B[{v}] = A[{v}]
        end)
      end
      for j in T.serial(16) do
        T.block("C", function()
          local v = T.axis.spatial(16, j)
          T.reads(B[{{v, v + 2}}])
          C[{v}] = T.if_then_else(T.lt(v, 15), T.max(B[{v}], B[{v + 1}]), B[{v}])
        end)
      end
    end)
    local expected = T.prim_func("main", {A = T.Buffer({16}, "int32"), C = T.Buffer({16}, "int32")}, function(A, C)
      local B = T.alloc_buffer({16}, "int32")
      for j in T.serial(16) do
        for i in T.serial(2) do
          T.block("B", function()
            local v = T.axis.spatial(16, j + i)
            T.where(T.lt(j + i, 16))
            B[{v}] = A[{v}]
          end)
        end
        T.block("C", function()
          local v = T.axis.spatial(16, j)
          T.reads(B[{{v, v + 2}}])
          C[{v}] = T.if_then_else(T.lt(v, 15), T.max(B[{v}], B[{v + 1}]), B[{v}])
        end)
      end
    end)
    local sch = tir.Schedule(f)
    local j = sch:get_loops("C")
    sch:compute_at("B", j)
    check(sch, expected)
  end)

  it("solves reversed indices (TVM compute_at_rev_iter)", function()
    local f = T.prim_func("main", {X = T.Buffer({10, 10}, "float32"), Z = T.Buffer({10, 10}, "float32")}, function(X, Z)
      local Y = T.alloc_buffer({10, 10}, "float32")
      for i, j in T.grid(10, 10) do
        T.block("b0", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          Y[{9 - vi, 9 - vj}] = X[{vi, vj}] + 1.0
        end)
      end
      for i, j in T.grid(10, 10) do
        T.block("b1", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          Z[{vi, vj}] = Y[{vj, vi}] + 2.0
        end)
      end
    end)
    local expected = T.prim_func("main", {X = T.Buffer({10, 10}, "float32"), Z = T.Buffer({10, 10}, "float32")}, function(X, Z)
      local Y = T.alloc_buffer({10, 10}, "float32")
      for i in T.serial(10) do
        for j in T.serial(10) do
          T.block("b0", function()
            local vi = T.axis.spatial(10, j)
            local vj = T.axis.spatial(10, 9 - i)
            Y[{9 - vi, 9 - vj}] = X[{vi, vj}] + 1.0
          end)
        end
        for j in T.serial(10) do
          T.block("b1", function()
            local vi, vj = T.axis.remap("SS", {i, j})
            Z[{vi, vj}] = Y[{vj, vi}] + 2.0
          end)
        end
      end
    end)
    local sch = tir.Schedule(f)
    local i = sch:get_loops("b1")
    sch:compute_at("b0", i)
    check(sch, expected)
  end)

  it("places two producers under one loop with predicates (TVM concat)", function()
    local f = T.prim_func("main", {x = T.Buffer({16}, "float32"), y = T.Buffer({8}, "float32"),
                                   T_concat = T.Buffer({24}, "float32")}, function(x, y, T_concat)
      local T_add_1 = T.alloc_buffer({16}, "float32")
      local T_add_2 = T.alloc_buffer({8}, "float32")
      for i in T.serial(16) do
        T.block("T_add_1", function()
          local ax = T.axis.spatial(16, i)
          T_add_1[{ax}] = x[{ax}] + 1.0
        end)
      end
      for i in T.serial(8) do
        T.block("T_add_2", function()
          local ax = T.axis.spatial(8, i)
          T_add_2[{ax}] = y[{ax}] + 2.0
        end)
      end
      for i in T.serial(24) do
        T.block("T_concat", function()
          local ax = T.axis.spatial(24, i)
          T_concat[{ax}] = T.if_then_else(T.le(16, ax), T_add_2[{ax - 16}], T_add_1[{ax}])
        end)
      end
    end)
    local sch = tir.Schedule(f)
    local i = sch:get_loops("T_concat")
    sch:compute_at("T_add_1", i)
    sch:compute_at("T_add_2", i)
    local s = tostring(sch.mod)
    assert.matches("T.where%(T.lt%(i, 16%)%)", s)
    assert.matches("local ax_1 = T.axis.spatial%(8, i %- 16%)", s)
    check(sch)
  end)

  it("computes a tile of a split consumer with a stencil read (tiled pooling, TVM)", function()
    local f = T.prim_func("main", {X = T.Buffer({16, 16}, "float32"), Y = T.Buffer({16, 16}, "float32")}, function(X, Y)
      local cache = T.alloc_buffer({16, 16}, "float32")
      for hh, ww in T.grid(16, 16) do
        T.block("cache", function()
          local h, w = T.axis.remap("SS", {hh, ww})
          cache[{h, w}] = X[{h, w}]
        end)
      end
      for hh_0, ww_0, hh_1, ww_1, khh, kww in T.grid(4, 4, 4, 4, 3, 3) do
        T.block("compute", function()
          local h = T.axis.spatial(16, hh_0 * 4 + hh_1)
          local w = T.axis.spatial(16, ww_0 * 4 + ww_1)
          local kh, kw = T.axis.remap("RR", {khh, kww})
          T.init(function() Y[{h, w}] = 0.0 end)
          Y[{h, w}] = T.max(Y[{h, w}], T.if_then_else(T.And(T.And(T.le(1, h + kh), T.lt(h + kh, 17)),
                                                             T.And(T.le(1, w + kw), T.lt(w + kw, 17))),
                                                       cache[{h + kh - 1, w + kw - 1}], T.float32(0)))
        end)
      end
    end)
    local sch = tir.Schedule(f)
    local _, w_o = sch:get_loops("compute")
    sch:compute_at("cache", w_o)
    local s = tostring(sch.mod)
    assert.matches("for ax0, ax1 in T.grid%(6, 6%) do", s)
    assert.matches("local h = T.axis.spatial%(16, hh_0 %* 4 %+ ax0 %- 1%)", s)
    check(sch)
  end)

  it("inserts at a given index, -2 = right after the last producer (TVM compute_at_to_index)", function()
    local f = T.prim_func("main", {A = T.Buffer({8}, "int32"), W = T.Buffer({8}, "int32"), C = T.Buffer({8}, "int32")},
      function(A, W, C)
        local P = T.alloc_buffer({8}, "int32")
        local WB = T.alloc_buffer({8}, "int32")
        for i in T.serial(8) do
          T.block("P", function()
            local v = T.axis.spatial(8, i)
            P[{v}] = A[{v}] + 1
          end)
        end
        for o in T.serial(1) do
          for i in T.serial(8) do
            T.block("WB", function()
              local v = T.axis.spatial(8, i)
              WB[{v}] = W[{v}] * 3
            end)
          end
          for i in T.serial(8) do
            T.block("C", function()
              local v = T.axis.spatial(8, o * 8 + i)
              C[{v}] = P[{v}] + WB[{v}]
            end)
          end
        end
      end)
    local sch = tir.Schedule(f)
    local o = sch:get_loops("C")
    sch:compute_at("P", o, false, -2)
    local s = tostring(sch.mod)
    assert.is_true(s:find('T.block("P"', 1, true) < s:find('T.block("WB"', 1, true))
    check(sch)
    local sch2 = tir.Schedule(f)
    sch2:compute_at("P", sch2:get_loops("C"), false, 1)
    assert.is_true(tostring(sch2.mod):find('T.block("WB"', 1, true) < tostring(sch2.mod):find('T.block("P"', 1, true))
    check(sch2)
    local sch3 = tir.Schedule(f)
    U.expect_error(function() sch3:compute_at("P", sch3:get_loops("C"), false, 2) end, "compute_at",
                   "index 2 is not a valid position: valid positions are 0..1")
    U.expect_error(function() sch3:compute_at("P", sch3:get_loops("C"), false, -3) end, "compute_at",
                   "index -3 is not valid: use -1, -2 or a position >= 0")
  end)

  it("tiles a te chain and keeps results exact", function()
    local te = tir.te
    local A = te.placeholder({32, 24}, "int32", "A")
    local B = te.compute({32, 24}, function(i, j) return A[{i, j}] * 3 end, "B")
    local C = te.compute({32, 24}, function(i, j) return B[{i, j}] + 7 end, "C")
    local sch = tir.Schedule(te.create_prim_func({A, C}))
    local i, j = sch:get_loops("C")
    local io, ii = sch:split(i, {nil, 8})
    local jo, ji = sch:split(j, {nil, 5})  -- does not divide: the consumer has a predicate
    sch:reorder(io, jo, ii, ji)
    sch:compute_at("B", jo)
    check(sch)
    assert.matches("for ax0, ax1 in T.grid%(8, 5%) do", tostring(sch.mod))
  end)

  -- ---- preconditions ----
  it("refuses a loop that is an ancestor of the block (TVM fail_loop_is_ancestor_of_block)", function()
    local sch = tir.Schedule(two_stage(8, 8))
    local i = sch:get_loops("B")
    U.expect_error(function() sch:compute_at("B", i) end, "ScheduleError in compute_at",
                   "loop i is an ancestor of block 'B'; the block can only move under a loop outside its own nest")
  end)

  it("refuses a loop of another scope (TVM fail_not_in_same_scope)", function()
    local f = T.prim_func("main", {A = T.Buffer({32}, "float32"), C = T.Buffer({32}, "float32")}, function(A, C)
      local B = T.alloc_buffer({32}, "float32")
      for i in T.serial(32) do
        T.block("B", function()
          local vi = T.axis.spatial(32, i)
          B[{vi}] = A[{vi}] * 2.0
        end)
      end
      for i in T.serial(2) do
        T.block("C_outer", function()
          local vo = T.axis.spatial(2, i)
          T.reads(B[{{vo * 16, vo * 16 + 16}}])
          T.writes(C[{{vo * 16, vo * 16 + 16}}])
          for ii in T.serial(16) do
            T.block("C_inner", function()
              local vi = T.axis.spatial(32, vo * 16 + ii)
              C[{vi}] = B[{vi}] + 1.0
            end)
          end
        end)
      end
    end)
    local sch = tir.Schedule(f)
    local ii = sch:get_loops("C_inner")
    U.expect_error(function() sch:compute_at("B", ii) end, "compute_at",
                   "block 'B' and loop ii are not in the same scope (block)")
  end)

  it("refuses a block writing a function output (TVM fail_output_block)", function()
    local f = T.prim_func("main", {A = T.Buffer({8}, "float32"), B = T.Buffer({8}, "float32"),
                                   C = T.Buffer({8}, "float32")}, function(A, B, C)
      for i in T.serial(8) do
        T.block("B", function()
          local vi = T.axis.spatial(8, i)
          B[{vi}] = A[{vi}] * 2.0
        end)
      end
      for i in T.serial(8) do
        T.block("C", function()
          local vi = T.axis.spatial(8, i)
          C[{vi}] = B[{vi}] + 1.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:compute_at("B", (sch:get_loops("C"))) end, "compute_at",
                   "block 'B' writes the function's output B; use reverse_compute_at to move consumers instead")
  end)

  it("refuses when a consumer is not under the loop (TVM fail_all_consumers_under_loop)", function()
    local f = T.prim_func("main", {A = T.Buffer({8}, "float32"), C = T.Buffer({8}, "float32"),
                                   D = T.Buffer({8}, "float32")}, function(A, C, D)
      local B = T.alloc_buffer({8}, "float32")
      for i in T.serial(8) do
        T.block("B", function()
          local vi = T.axis.spatial(8, i)
          B[{vi}] = A[{vi}] * 2.0
        end)
      end
      for i in T.serial(8) do
        T.block("C", function()
          local vi = T.axis.spatial(8, i)
          C[{vi}] = B[{vi}] + 1.0
        end)
      end
      for i in T.serial(8) do
        T.block("D", function()
          local vi = T.axis.spatial(8, i)
          D[{vi}] = B[{vi}] + 1.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:compute_at("B", (sch:get_loops("C"))) end, "compute_at",
                   "block 'D' reads what block 'B' writes but is not under loop i; compute_at needs every consumer of the block under the loop")
  end)

  it("refuses a block that is not the only writer (TVM fail_subtree_complete_block)", function()
    local f = T.prim_func("main", {A = T.Buffer({8, 8}, "float32"), C = T.Buffer({8, 8}, "float32")}, function(A, C)
      local B = T.alloc_buffer({8, 8}, "float32")
      for i in T.serial(8) do
        for j in T.serial(4) do
          T.block("B_0", function()
            local vi = T.axis.spatial(8, i)
            local vj = T.axis.spatial(8, j)
            B[{vi, vj}] = A[{vi, vj}] * 2.0
          end)
        end
        for j in T.serial(4) do
          T.block("B_1", function()
            local vi = T.axis.spatial(8, i)
            local vj = T.axis.spatial(8, j + 4)
            B[{vi, vj}] = A[{vi, vj}] * 2.0
          end)
        end
      end
      for i, j in T.grid(8, 8) do
        T.block("C", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          C[{vi, vj}] = B[{vi, vj}] + 1.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:compute_at("B_0", (sch:get_loops("C"))) end, "compute_at",
                   "block 'B_1' also writes B; block 'B_0' must be the only writer of B in its scope")
  end)

  it("refuses a block that is neither complete nor a reduction", function()
    local f = T.prim_func("main", {A = T.Buffer({8}, "float32"), C = T.Buffer({8}, "float32")}, function(A, C)
      local B = T.alloc_buffer({8}, "float32")
      for i in T.serial(8) do
        T.block("B", function()
          local vi = T.axis.spatial(8, i)
          B[{vi}] = B[{vi}] + A[{vi}]
        end)
      end
      for i in T.serial(8) do
        T.block("C", function()
          local vi = T.axis.spatial(8, i)
          C[{vi}] = B[{vi}] + 1.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:compute_at("B", (sch:get_loops("C"))) end, "compute_at",
                   "block 'B' reads B, which it writes, so it is not a complete block")
    local g = T.prim_func("main", {A = T.Buffer({8, 4}, "float32"), C = T.Buffer({8}, "float32")}, function(A, C)
      local B = T.alloc_buffer({8, 4}, "float32")
      for i, k in T.grid(8, 4) do
        T.block("B", function()
          local vi, vk = T.axis.remap("SR", {i, k})
          T.init(function() B[{vi, vk}] = 0.0 end)
          B[{vi, vk}] = B[{vi, vk}] + A[{vi, vk}]
        end)
      end
      for i in T.serial(8) do
        T.block("C", function()
          local vi = T.axis.spatial(8, i)
          C[{vi}] = B[{vi, 0}] + 1.0
        end)
      end
    end)
    local sch2 = tir.Schedule(g)
    U.expect_error(function() sch2:compute_at("B", (sch2:get_loops("C"))) end, "compute_at",
                   "reduction variable vk of block 'B' indexes the written buffer B, so it is not a reduction block")
  end)

  it("refuses a predicate that says more than the iteration domain", function()
    local f = T.prim_func("main", {A = T.Buffer({8}, "float32"), C = T.Buffer({8}, "float32")}, function(A, C)
      local B = T.alloc_buffer({8}, "float32")
      for i in T.serial(8) do
        T.block("B", function()
          local vi = T.axis.spatial(8, i)
          T.where(T.lt(i, 6))
          B[{vi}] = A[{vi}] * 2.0
        end)
      end
      for i in T.serial(8) do
        T.block("C", function()
          local vi = T.axis.spatial(8, i)
          C[{vi}] = B[{vi}] + 1.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:compute_at("B", (sch:get_loops("C"))) end, "compute_at",
                   "block 'B' has a predicate that is not implied by its iteration domain; compute_at would drop it")
    -- a split's predicate only restates the domain and is fine
    local sch2 = tir.Schedule(two_stage(10, 4))
    sch2:split(sch2:get_loops("B"), {nil, 4})
    sch2:compute_at("B", (sch2:get_loops("C")))
    check(sch2)
  end)

  it("refuses when a later block overwrites what the producer reads", function()
    local f = T.prim_func("main", {A = T.Buffer({8}, "float32"), C = T.Buffer({8}, "float32")}, function(A, C)
      local X = T.alloc_buffer({8}, "float32")
      local B = T.alloc_buffer({8}, "float32")
      for i in T.serial(8) do
        T.block("X", function()
          local vi = T.axis.spatial(8, i)
          X[{vi}] = A[{vi}]
        end)
      end
      for i in T.serial(8) do
        T.block("B", function()
          local vi = T.axis.spatial(8, i)
          B[{vi}] = X[{vi}] * 2.0
        end)
      end
      for i in T.serial(8) do
        T.block("X2", function()
          local vi = T.axis.spatial(8, i)
          X[{vi}] = A[{vi}] + 5.0
        end)
        T.block("C", function()
          local vi = T.axis.spatial(8, i)
          C[{vi}] = B[{vi}] + X[{vi}]
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:compute_at("B", (sch:get_loops("C"))) end, "compute_at",
                   "block 'X2' writes X, which block 'B' reads, after the block's old place; under loop i the block would read the new values")
  end)

  it("refuses a loop of consumers that runs before the block", function()
    local f = T.prim_func("main", {A = T.Buffer({8}, "float32"), C = T.Buffer({8}, "float32")}, function(A, C)
      local B = T.alloc_buffer({8}, "float32")
      for i in T.serial(8) do
        T.block("C", function()
          local vi = T.axis.spatial(8, i)
          C[{vi}] = B[{vi}] + 1.0
        end)
      end
      for i in T.serial(8) do
        T.block("B", function()
          local vi = T.axis.spatial(8, i)
          B[{vi}] = A[{vi}] * 2.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:compute_at("B", (sch:get_loops("C"))) end, "compute_at",
                   "loop i runs before block 'B'; compute_at moves a producer into a loop of its consumers that runs after it")
  end)

  it("refuses iteration variables that are neither spatial nor reduction, and a reduction without init", function()
    local function with_axis(kind, init)
      return T.prim_func("main", {A = T.Buffer({8}, "float32"), C = T.Buffer({8}, "float32")}, function(A, C)
        local B = T.alloc_buffer({8}, "float32")
        for i in T.serial(8) do
          T.block("B", function()
            local vi = T.axis[kind](8, i)
            if init then T.init(function() B[{0}] = 0.0 end) end
            B[{0}] = A[{vi}]
          end)
        end
        for i in T.serial(8) do
          T.block("C", function()
            local vi = T.axis.spatial(8, i)
            C[{vi}] = B[{0}] + 1.0
          end)
        end
      end)
    end
    local sch = tir.Schedule(with_axis("opaque"))
    U.expect_error(function() sch:compute_at("B", (sch:get_loops("C"))) end, "compute_at",
                   "block 'B' has an iteration variable (vi) that is neither spatial nor reduction")
    local sch2 = tir.Schedule(with_axis("reduce"))
    U.expect_error(function() sch2:compute_at("B", (sch2:get_loops("C"))) end, "compute_at",
                   "block 'B' has reduction variables but no init, so it is neither a complete nor a reduction block")
  end)

  it("refuses a loop that runs before the block", function()
    local f = T.prim_func("main", {A = T.Buffer({8}, "float32"), C = T.Buffer({8}, "float32")}, function(A, C)
      local B = T.alloc_buffer({8}, "float32")
      for i in T.serial(8) do
        T.block("C", function()
          local vi = T.axis.spatial(8, i)
          C[{vi}] = A[{vi}] + 1.0
        end)
      end
      for i in T.serial(8) do
        T.block("B", function()
          local vi = T.axis.spatial(8, i)
          B[{vi}] = A[{vi}] * 2.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:compute_at("B", (sch:get_loops("C"))) end, "compute_at", "block 'B' has no consumer under loop i")
  end)
end)

-- ======================================================================================
describe("reverse_compute_at", function()
  local function tiled(dims3)
    local shape = dims3 and {1, 32, 32} or {32, 32}
    local function at(vi, vj) if dims3 then return {0, vi, vj} end return {vi, vj} end
    return T.prim_func("main", {A = T.Buffer(shape, "float32"), C = T.Buffer(shape, "float32")}, function(A, C)
      local B = T.alloc_buffer(shape, "float32")
      for i_0, j_0, i_1, j_1 in T.grid(4, 4, 8, 8) do
        T.block("B", function()
          local vi = T.axis.spatial(32, i_0 * 8 + i_1)
          local vj = T.axis.spatial(32, j_0 * 8 + j_1)
          B[at(vi, vj)] = A[at(vi, vj)] * 2.0
        end)
      end
      for i, j in T.grid(32, 32) do
        T.block("C", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          C[at(vi, vj)] = B[at(vi, vj)] + 1.0
        end)
      end
    end)
  end
  local function tiled_after(dims3)
    local shape = dims3 and {1, 32, 32} or {32, 32}
    local function at(vi, vj) if dims3 then return {0, vi, vj} end return {vi, vj} end
    return T.prim_func("main", {A = T.Buffer(shape, "float32"), C = T.Buffer(shape, "float32")}, function(A, C)
      local B = T.alloc_buffer(shape, "float32")
      for i_0, j_0, i_1 in T.grid(4, 4, 8) do
        for j_1 in T.serial(8) do
          T.block("B", function()
            local vi = T.axis.spatial(32, i_0 * 8 + i_1)
            local vj = T.axis.spatial(32, j_0 * 8 + j_1)
            B[at(vi, vj)] = A[at(vi, vj)] * 2.0
          end)
        end
        for ax0 in T.serial(8) do
          T.block("C", function()
            local vi = T.axis.spatial(32, i_0 * 8 + i_1)
            local vj = T.axis.spatial(32, j_0 * 8 + ax0)
            C[at(vi, vj)] = B[at(vi, vj)] + 1.0
          end)
        end
      end
    end)
  end

  it("moves a consumer under a producer loop (TVM tiled)", function()
    local sch = tir.Schedule(tiled())
    local _, _, i_1 = sch:get_loops("B")
    sch:reverse_compute_at("C", i_1)
    check(sch, tiled_after())
  end)

  it("handles constant indices (TVM tiled_trivial_binding)", function()
    local sch = tir.Schedule(tiled(true))
    local _, _, i_1 = sch:get_loops("B")
    sch:reverse_compute_at("C", i_1)
    check(sch, tiled_after(true))
  end)

  it("splits a reduction into whole tiles, one per iteration (TVM factorized)", function()
    local f = T.prim_func("main", {A = T.Buffer({16, 16, 16}, "float32"), B = T.Buffer({16}, "float32")}, function(A, B)
      local B_rf = T.alloc_buffer({16, 16}, "float32")
      for j in T.serial(16) do
        for i_o in T.serial(4) do
          for i_i, k in T.grid(4, 16) do
            T.block("B_rf", function()
              local vi = T.axis.spatial(16, i_o * 4 + i_i)
              local vj, vk = T.axis.remap("SR", {j, k})
              T.init(function() B_rf[{vi, vj}] = 0.0 end)
              B_rf[{vi, vj}] = B_rf[{vi, vj}] + A[{vj, vi, vk}]
            end)
          end
        end
      end
      for i, k in T.grid(16, 16) do
        T.block("B", function()
          local vi, vk = T.axis.remap("SR", {i, k})
          T.init(function() B[{vi}] = 0.0 end)
          B[{vi}] = B[{vi}] + B_rf[{vk, vi}]
        end)
      end
    end)
    local expected = T.prim_func("main", {A = T.Buffer({16, 16, 16}, "float32"), B = T.Buffer({16}, "float32")}, function(A, B)
      local B_rf = T.alloc_buffer({16, 16}, "float32")
      for j in T.serial(16) do
        for i_o in T.serial(4) do
          for i_i, k in T.grid(4, 16) do
            T.block("B_rf", function()
              local vi = T.axis.spatial(16, i_o * 4 + i_i)
              local vj, vk = T.axis.remap("SR", {j, k})
              T.init(function() B_rf[{vi, vj}] = 0.0 end)
              B_rf[{vi, vj}] = B_rf[{vi, vj}] + A[{vj, vi, vk}]
            end)
          end
          for k in T.serial(4) do
            T.block("B", function()
              local vi = T.axis.spatial(16, j)
              local vk = T.axis.reduce(16, i_o * 4 + k)
              T.init(function() B[{vi}] = 0.0 end)
              B[{vi}] = B[{vi}] + B_rf[{vk, vi}]
            end)
          end
        end
      end
    end)
    local sch = tir.Schedule(f)
    local _, i_o = sch:get_loops("B_rf")
    sch:reverse_compute_at("B", i_o)
    check(sch, expected)
    U.assert_equiv(f, sch.mod, {rtol = 1e-6})
  end)

  it("solves floordiv indices (TVM floordiv_and_floormod_indices)", function()
    local f = T.prim_func("main", {X = T.Buffer({16, 16}, "int32"), Y = T.Buffer({256}, "int32")}, function(X, Y)
      local temp = T.alloc_buffer({16, 16}, "int32")
      for i, j in T.grid(16, 16) do
        T.block("A", function()
          local v_i, v_j = T.axis.remap("SS", {i, j})
          temp[{v_i, v_j}] = X[{v_j, v_i}] + 1
        end)
      end
      for i in T.serial(256) do
        T.block("B", function()
          local v_i = T.axis.spatial(256, i)
          Y[{v_i}] = temp[{v_i // 16, v_i % 16}]
        end)
      end
    end)
    local expected = T.prim_func("main", {X = T.Buffer({16, 16}, "int32"), Y = T.Buffer({256}, "int32")}, function(X, Y)
      local temp = T.alloc_buffer({16, 16}, "int32")
      for i in T.serial(16) do
        for j in T.serial(16) do
          T.block("A", function()
            local v_i, v_j = T.axis.remap("SS", {i, j})
            temp[{v_i, v_j}] = X[{v_j, v_i}] + 1
          end)
        end
        for ax0 in T.serial(16) do
          T.block("B", function()
            local v_i = T.axis.spatial(256, i * 16 + ax0)
            Y[{v_i}] = temp[{v_i // 16, v_i % 16}]
          end)
        end
      end
    end)
    local sch = tir.Schedule(f)
    sch:reverse_compute_at("B", (sch:get_loops("A")))
    check(sch, expected)
  end)

  it("inserts at a given index (TVM reverse_compute_at_to_index)", function()
    local f = T.prim_func("main", {A = T.Buffer({16, 16}, "float32"), D = T.Buffer({16, 16}, "float32")}, function(A, D)
      local B = T.alloc_buffer({16, 16}, "float32")
      local C = T.alloc_buffer({16, 16}, "float32")
      for i_0, j_0, i_1 in T.grid(2, 2, 8) do
        for j_1 in T.serial(8) do
          T.block("B", function()
            local vi = T.axis.spatial(16, i_0 * 8 + i_1)
            local vj = T.axis.spatial(16, j_0 * 8 + j_1)
            B[{vi, vj}] = A[{vi, vj}] * 2.0
          end)
        end
        for ax0 in T.serial(8) do
          T.block("C", function()
            local vi = T.axis.spatial(16, i_0 * 8 + i_1)
            local vj = T.axis.spatial(16, j_0 * 8 + ax0)
            C[{vi, vj}] = B[{vi, vj}] + 1.0
          end)
        end
      end
      for i, j in T.grid(16, 16) do
        T.block("D", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          D[{vi, vj}] = B[{vi, vj}] + 1.0
        end)
      end
    end)
    local expected = T.prim_func("main", {A = T.Buffer({16, 16}, "float32"), D = T.Buffer({16, 16}, "float32")}, function(A, D)
      local B = T.alloc_buffer({16, 16}, "float32")
      local C = T.alloc_buffer({16, 16}, "float32")
      for i_0, j_0, i_1 in T.grid(2, 2, 8) do
        for j_1 in T.serial(8) do
          T.block("B", function()
            local vi = T.axis.spatial(16, i_0 * 8 + i_1)
            local vj = T.axis.spatial(16, j_0 * 8 + j_1)
            B[{vi, vj}] = A[{vi, vj}] * 2.0
          end)
        end
        for ax0 in T.serial(8) do
          T.block("D", function()
            local vi = T.axis.spatial(16, i_0 * 8 + i_1)
            local vj = T.axis.spatial(16, j_0 * 8 + ax0)
            D[{vi, vj}] = B[{vi, vj}] + 1.0
          end)
        end
        for ax0 in T.serial(8) do
          T.block("C", function()
            local vi = T.axis.spatial(16, i_0 * 8 + i_1)
            local vj = T.axis.spatial(16, j_0 * 8 + ax0)
            C[{vi, vj}] = B[{vi, vj}] + 1.0
          end)
        end
      end
    end)
    local sch = tir.Schedule(f)
    local _, _, i_1 = sch:get_loops("B")
    sch:reverse_compute_at("D", i_1, false, 1)
    check(sch, expected)
    -- -1 (the default) puts it before the first consumer of D (none: at the end)
    local sch2 = tir.Schedule(f)
    local _, _, i_1b = sch2:get_loops("B")
    sch2:reverse_compute_at("D", i_1b)
    local s = tostring(sch2.mod)
    assert.is_true(s:find('T.block("C"', 1, true) < s:find('T.block("D"', 1, true))
    check(sch2)
  end)

  it("keeps a consumer smaller than the tile in bounds (TVM with_unit_loop)", function()
    local f = T.prim_func("main", {A = T.Buffer({16, 16}, "float32"), D = T.Buffer({1, 2, 1}, "float32")}, function(A, D)
      local B = T.alloc_buffer({16, 16}, "float32")
      for i_0, j_0, i_1 in T.grid(2, 2, 8) do
        for j_1 in T.serial(8) do
          T.block("B", function()
            local vi = T.axis.spatial(16, i_0 * 8 + i_1)
            local vj = T.axis.spatial(16, j_0 * 8 + j_1)
            B[{vi, vj}] = A[{vi, vj}] * 2.0
          end)
        end
      end
      for ax0, ax1, ax2 in T.grid(1, 2, 1) do
        T.block("D", function()
          local v0, v1, v2 = T.axis.remap("SSS", {ax0, ax1, ax2})
          D[{v0, v1, v2}] = B[{v0, v1}] + 1.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    local _, _, i_1 = sch:get_loops("B")
    sch:reverse_compute_at("D", i_1, true, 1)
    local s = tostring(sch.mod)
    assert.matches("for ax0, ax1, ax2 in T.grid%(1, 8, 1%) do", s)
    assert.matches("T.where%(T.And%(T.lt%(i_0 %* 8 %+ i_1 %+ ax0, 1%), T.lt%(j_0 %* 8 %+ ax1, 2%)%)%)", s)
    check(sch)
  end)

  it("places a cache_write copy under the thread tile of a matmul", function()
    local f = U.matmul(32, 32, 16, "int32")
    local sch = tir.Schedule(f)
    local c = sch:get_block("C")
    local cl = sch:cache_write(c, 0, "local")
    local i, j = sch:get_loops(c)
    local io, ii = sch:split(i, {nil, 4})
    local jo, ji = sch:split(j, {nil, 4})
    sch:reorder(io, jo, ii, ji)
    sch:reverse_compute_at(cl, jo)
    assert.matches("for ax0, ax1 in T.grid%(4, 4%) do", tostring(sch.mod))
    check(sch)
  end)

  -- ---- preconditions ----
  it("refuses when a producer is not under the loop (TVM fail_all_producers_under_loop)", function()
    local f = T.prim_func("main", {A = T.Buffer({8, 8}, "float32"), D = T.Buffer({8, 8}, "float32")}, function(A, D)
      local B = T.alloc_buffer({8, 8}, "float32")
      local C = T.alloc_buffer({8, 8}, "float32")
      for i, j in T.grid(8, 8) do
        T.block("B", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          B[{vi, vj}] = A[{vi, vj}] * 2.0
        end)
      end
      for i, j in T.grid(8, 8) do
        T.block("C", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          C[{vi, vj}] = A[{vi, vj}] + 1.0
        end)
      end
      for i, j in T.grid(8, 8) do
        T.block("D", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          D[{vi, vj}] = B[{vi, vj}] + C[{vi, vj}]
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:reverse_compute_at("D", (sch:get_loops("C"))) end, "ScheduleError in reverse_compute_at",
                   "block 'B' writes what block 'D' reads but is not under loop i; reverse_compute_at needs every producer of the block under the loop")
  end)

  it("refuses a loop that runs after the block", function()
    local f = T.prim_func("main", {A = T.Buffer({8}, "float32"), C = T.Buffer({8}, "float32"),
                                   D = T.Buffer({8}, "float32")}, function(A, C, D)
      local B = T.alloc_buffer({8}, "float32")
      for i in T.serial(8) do
        T.block("B", function()
          local vi = T.axis.spatial(8, i)
          B[{vi}] = A[{vi}] * 2.0
        end)
      end
      for i in T.serial(8) do
        T.block("C", function()
          local vi = T.axis.spatial(8, i)
          C[{vi}] = B[{vi}] + 1.0
        end)
      end
      for i in T.serial(8) do
        T.block("D", function()
          local vi = T.axis.spatial(8, i)
          D[{vi}] = A[{vi}] + 1.0
        end)
        T.block("B2", function()
          local vi = T.axis.spatial(8, i)
          B[{vi}] = A[{vi}] + 3.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:reverse_compute_at("C", (sch:get_loops("D"))) end, "reverse_compute_at",
                   "block 'B' writes what block 'C' reads but is not under loop i")
    local g = T.prim_func("main", {A = T.Buffer({8}, "float32"), C = T.Buffer({8}, "float32")}, function(A, C)
      local B = T.alloc_buffer({8}, "float32")
      for i in T.serial(8) do
        T.block("C", function()
          local vi = T.axis.spatial(8, i)
          C[{vi}] = B[{vi}] + 1.0
        end)
      end
      for i in T.serial(8) do
        T.block("B", function()
          local vi = T.axis.spatial(8, i)
          B[{vi}] = A[{vi}] * 2.0
        end)
      end
    end)
    local sch2 = tir.Schedule(g)
    U.expect_error(function() sch2:reverse_compute_at("C", (sch2:get_loops("B"))) end, "reverse_compute_at",
                   "loop i runs after block 'C'; reverse_compute_at moves a consumer into a loop of its producers that runs before it")
  end)

  it("refuses when a block between uses what the consumer writes", function()
    local f = T.prim_func("main", {A = T.Buffer({8}, "float32"), D = T.Buffer({8}, "float32"),
                                   E = T.Buffer({8}, "float32")}, function(A, D, E)
      local B = T.alloc_buffer({8}, "float32")
      for i in T.serial(8) do
        T.block("B", function()
          local vi = T.axis.spatial(8, i)
          B[{vi}] = A[{vi}] * 2.0
        end)
        T.block("E", function()
          local vi = T.axis.spatial(8, i)
          E[{vi}] = D[{vi}] + 1.0
        end)
      end
      for i in T.serial(8) do
        T.block("C", function()
          local vi = T.axis.spatial(8, i)
          D[{vi}] = B[{vi}] + 1.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:reverse_compute_at("C", (sch:get_loops("B"))) end, "reverse_compute_at",
                   "block 'E' uses D, which block 'C' writes, before the block's old place; moving the write up under loop i would change what it sees")
  end)

  it("refuses when the producers write only part of what the consumer reads", function()
    local f = T.prim_func("main", {A = T.Buffer({16}, "float32"), B = T.Buffer({16}, "float32"),
                                   C = T.Buffer({16}, "float32")}, function(A, B, C)
      for i in T.serial(8) do
        T.block("B", function()
          local vi = T.axis.spatial(16, i)
          B[{vi}] = A[{vi}] * 2.0
        end)
      end
      for i in T.serial(16) do
        T.block("C", function()
          local vi = T.axis.spatial(16, i)
          C[{vi}] = B[{vi}] + 1.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:reverse_compute_at("C", (sch:get_loops("B"))) end, "reverse_compute_at",
                   "block 'C' reads parts of a buffer that its producers do not write; under loop i those reads would never happen")
  end)

  it("refuses to split a reduction into pieces that may repeat", function()
    local f = T.prim_func("main", {A = T.Buffer({16}, "float32"), C = T.Buffer({1}, "float32")}, function(A, C)
      local B = T.alloc_buffer({16}, "float32")
      for o, i in T.grid(2, 8) do
        T.block("B", function()
          local vi = T.axis.spatial(16, o * 8 + i)
          B[{vi}] = A[{vi}] * 2.0
        end)
      end
      for k in T.serial(16) do
        T.block("C", function()
          local vk = T.axis.reduce(16, k)
          T.init(function() C[{0}] = 0.0 end)
          C[{0}] = C[{0}] + B[{vk}] + B[{15 - vk}]
        end)
      end
    end)
    local sch = tir.Schedule(f)
    local o = sch:get_loops("B")
    -- reads B[vk] and B[15 - vk]: vk is not narrowed, so C would read in iteration o = 0 what
    -- o = 1 writes (and once lowered, B lives inside loop o: the values of o = 0 are gone)
    U.expect_error(function() sch:reverse_compute_at("C", o) end, "reverse_compute_at",
                   "block 'C' would read B beyond what its producers write in one iteration")
    local g = T.prim_func("main", {A = T.Buffer({16}, "float32"), C = T.Buffer({1}, "float32")}, function(A, C)
      local B = T.alloc_buffer({16}, "float32")
      for o, i in T.grid(4, 4) do
        T.block("B", function()
          local vi = T.axis.spatial(16, o * 4 + i)
          B[{vi}] = A[{vi}] * 2.0
        end)
      end
      for k in T.serial(8) do
        T.block("C", function()
          local vk = T.axis.reduce(8, k)
          T.init(function() C[{0}] = 0.0 end)
          C[{0}] = C[{0}] + B[{vk * 2}]
        end)
      end
    end)
    local sch2 = tir.Schedule(g)
    U.expect_error(function() sch2:reverse_compute_at("C", (sch2:get_loops("B"))) end, "reverse_compute_at",
                   "block 'C' is a reduction that would be split over the iterations of the loops down to o in pieces that may overlap or leave gaps")
  end)
end)
