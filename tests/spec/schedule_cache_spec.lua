-- schedule_cache_spec.lua -- cache_read and cache_write: the IR after each (compared with
-- the function TVM's documented semantics give, written as a T script; cases from TVM's
-- test_tir_schedule_cache_read_write.py), interpreter equivalence on random inputs
-- (bit-exact, float32 and int32), one test per precondition with its error text, trace
-- replay, and their use in tiled schedules.
--
-- Where tirlua differs from TVM on purpose: a stage inserted in a nested block scope keeps
-- the buffer's full shape (TVM allocates the region's shape there); compact_buffer_allocation
-- shrinks it when lowering.
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

local function check(sch, expected, opts)
  if expected then assert_ir(sch, expected) end
  U.assert_equiv(sch:original(), sch.mod, opts)
  assert_replay(sch)
end

-- TVM's elementwise: B = A * 2, C = B + 1 (or + 7 / * 3 for int32).
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

-- TVM's func_multi_consumer, with an input D and an output E so that results can be compared:
-- A is written in 8 chunks, each read right away by B; C reads all of A after the loop.
local function multi_consumer()
  return T.prim_func("main", {D = T.Buffer({128}, "int32"), E = T.Buffer({128}, "int32")}, function(D, E)
    local A = T.alloc_buffer({128}, "int32")
    for i in T.serial(8) do
      for j in T.serial(16) do
        T.block("A", function()
          local vi = T.axis.spatial(128, i * 16 + j)
          A[{vi}] = D[{vi}] + 1
        end)
      end
      for j in T.serial(16) do
        T.block("B", function()
          local vi = T.axis.spatial(128, i * 16 + j)
          E[{vi}] = A[{vi}] * 3
        end)
      end
    end
    for i in T.serial(128) do
      T.block("C", function()
        local vi = T.axis.spatial(128, i)
        E[{vi}] = E[{vi}] + A[{vi}]
      end)
    end
  end)
end

-- TVM's func_with_block_predicate (120 elements in 16 x 8 loops), with an input and output.
local function with_predicate()
  return T.prim_func("main", {X = T.Buffer({120}, "float32"), B = T.Buffer({120}, "float32")}, function(X, B)
    local A = T.alloc_buffer({120}, "float32")
    for i, j in T.grid(16, 8) do
      T.block("producer", function()
        local ax = T.axis.spatial(120, i * 8 + j)
        T.where(T.lt(i * 8 + j, 120))
        A[{ax}] = X[{ax}] * 2.0
      end)
    end
    for i, j in T.grid(16, 8) do
      T.block("consumer", function()
        local ax = T.axis.spatial(120, i * 8 + j)
        T.where(T.lt(i * 8 + j, 120))
        B[{ax}] = A[{ax}] + 1.0
      end)
    end
  end)
end

-- ======================================================================================
describe("cache_read", function()
  it("stages an input at the start and an intermediate after its writer (TVM elementwise)", function()
    local expected = T.prim_func("main", {A = T.Buffer({16, 16}, "float32"), C = T.Buffer({16, 16}, "float32")}, function(A, C)
      local B = T.alloc_buffer({16, 16}, "float32")
      local A_global = T.alloc_buffer({16, 16}, "float32")
      local B_local = T.alloc_buffer({16, 16}, "float32", {scope = "local"})
      for ax0, ax1 in T.grid(16, 16) do
        T.block("A_global", function()
          local v0, v1 = T.axis.remap("SS", {ax0, ax1})
          A_global[{v0, v1}] = A[{v0, v1}]
        end)
      end
      for i, j in T.grid(16, 16) do
        T.block("B", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          B[{vi, vj}] = A_global[{vi, vj}] * 2.0
        end)
      end
      for ax0, ax1 in T.grid(16, 16) do
        T.block("B_local", function()
          local v0, v1 = T.axis.remap("SS", {ax0, ax1})
          B_local[{v0, v1}] = B[{v0, v1}]
        end)
      end
      for i, j in T.grid(16, 16) do
        T.block("C", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          C[{vi, vj}] = B_local[{vi, vj}] + 1.0
        end)
      end
    end)
    local sch = tir.Schedule(elementwise(16))
    local b, c = sch:get_block("B"), sch:get_block("C")
    local a_global = sch:cache_read(b, 0, "global")
    local b_local = sch:cache_read(c, 0, "local")
    assert.are.equal("BlockRV(A_global)", tostring(a_global))
    assert.are.equal("B_local", sch:get(b_local).name)
    assert.are.equal("B", sch:get(b).name) -- handles of the readers survive
    check(sch, expected)
  end)

  it("is bit-exact on int32", function()
    local sch = tir.Schedule(elementwise(8, "int32"))
    sch:cache_read("B", 0, "shared")
    sch:cache_read("C", 0, "local")
    check(sch)
  end)

  it("goes inside the loop where the writer and its first reader meet (TVM cache_read_location)", function()
    local expected = T.prim_func("main", {D = T.Buffer({128}, "int32"), E = T.Buffer({128}, "int32")}, function(D, E)
      local A = T.alloc_buffer({128}, "int32")
      local A_global = T.alloc_buffer({128}, "int32")
      for i in T.serial(8) do
        for j in T.serial(16) do
          T.block("A", function()
            local vi = T.axis.spatial(128, i * 16 + j)
            A[{vi}] = D[{vi}] + 1
          end)
        end
        for ax0 in T.serial(16) do
          T.block("A_global", function()
            local v0 = T.axis.spatial(128, i * 16 + ax0)
            A_global[{v0}] = A[{v0}]
          end)
        end
        for j in T.serial(16) do
          T.block("B", function()
            local vi = T.axis.spatial(128, i * 16 + j)
            E[{vi}] = A_global[{vi}] * 3
          end)
        end
      end
      for i in T.serial(128) do
        T.block("C", function()
          local vi = T.axis.spatial(128, i)
          E[{vi}] = E[{vi}] + A_global[{vi}]
        end)
      end
    end)
    local sch = tir.Schedule(multi_consumer())
    sch:cache_read("B", 0, "global")
    check(sch, expected)
    -- naming every reader gives the same
    local sch2 = tir.Schedule(multi_consumer())
    sch2:cache_read("B", 0, "global", {"B", "C"})
    check(sch2, expected)
  end)

  it("serves only the given consumers (TVM cache_read_multi_consumer_target)", function()
    local expected = T.prim_func("main", {D = T.Buffer({128}, "int32"), E = T.Buffer({128}, "int32")}, function(D, E)
      local A = T.alloc_buffer({128}, "int32")
      local A_global = T.alloc_buffer({128}, "int32")
      for i in T.serial(8) do
        for j in T.serial(16) do
          T.block("A", function()
            local vi = T.axis.spatial(128, i * 16 + j)
            A[{vi}] = D[{vi}] + 1
          end)
        end
        for j in T.serial(16) do
          T.block("B", function()
            local vi = T.axis.spatial(128, i * 16 + j)
            E[{vi}] = A[{vi}] * 3
          end)
        end
      end
      for ax0 in T.serial(128) do
        T.block("A_global", function()
          local v0 = T.axis.spatial(128, ax0)
          A_global[{v0}] = A[{v0}]
        end)
      end
      for i in T.serial(128) do
        T.block("C", function()
          local vi = T.axis.spatial(128, i)
          E[{vi}] = E[{vi}] + A_global[{vi}]
        end)
      end
    end)
    local sch = tir.Schedule(multi_consumer())
    sch:cache_read("C", 1, "global", {sch:get_block("C")})
    check(sch, expected)
  end)

  it("chains caches (TVM continuous_cache_read)", function()
    local expected = T.prim_func("main", {A = T.Buffer({16, 16}, "float32"), C = T.Buffer({16, 16}, "float32")}, function(A, C)
      local B = T.alloc_buffer({16, 16}, "float32")
      local B_shared = T.alloc_buffer({16, 16}, "float32", {scope = "shared"})
      local B_shared_local = T.alloc_buffer({16, 16}, "float32", {scope = "local"})
      for i, j in T.grid(16, 16) do
        T.block("B", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          B[{vi, vj}] = A[{vi, vj}] * 2.0
        end)
      end
      for ax0, ax1 in T.grid(16, 16) do
        T.block("B_shared", function()
          local v0, v1 = T.axis.remap("SS", {ax0, ax1})
          B_shared[{v0, v1}] = B[{v0, v1}]
        end)
      end
      for ax0, ax1 in T.grid(16, 16) do
        T.block("B_shared_local", function()
          local v0, v1 = T.axis.remap("SS", {ax0, ax1})
          B_shared_local[{v0, v1}] = B_shared[{v0, v1}]
        end)
      end
      for i, j in T.grid(16, 16) do
        T.block("C", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          C[{vi, vj}] = B_shared_local[{vi, vj}] + 1.0
        end)
      end
    end)
    local sch = tir.Schedule(elementwise(16))
    local c = sch:get_block("C")
    sch:cache_read(c, 0, "shared")
    sch:cache_read(c, 0, "local")
    check(sch, expected)
  end)

  it("copies the writer's predicated region (TVM cache_read_with_block_predicate)", function()
    local expected = T.prim_func("main", {X = T.Buffer({120}, "float32"), B = T.Buffer({120}, "float32")}, function(X, B)
      local A = T.alloc_buffer({120}, "float32")
      local A_shared = T.alloc_buffer({120}, "float32", {scope = "shared"})
      for i, j in T.grid(16, 8) do
        T.block("producer", function()
          local ax = T.axis.spatial(120, i * 8 + j)
          T.where(T.lt(i * 8 + j, 120))
          A[{ax}] = X[{ax}] * 2.0
        end)
      end
      for ax0 in T.serial(120) do
        T.block("A_shared", function()
          local v0 = T.axis.spatial(120, ax0)
          A_shared[{v0}] = A[{v0}]
        end)
      end
      for i, j in T.grid(16, 8) do
        T.block("consumer", function()
          local ax = T.axis.spatial(120, i * 8 + j)
          T.where(T.lt(i * 8 + j, 120))
          B[{ax}] = A_shared[{ax}] + 1.0
        end)
      end
    end)
    local sch = tir.Schedule(with_predicate())
    sch:cache_read("consumer", 0, "shared")
    check(sch, expected)
  end)

  it("keeps int64 shapes (TVM cache_read_non_int32_shape)", function()
    local f = T.prim_func("main", {A = T.Buffer({T.int64(8), T.int64(8)}, "float32"),
                                   C = T.Buffer({T.int64(8), T.int64(8)}, "float32")}, function(A, C)
      for i, j in T.grid(T.int64(8), T.int64(8)) do
        T.block("C", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          C[{vi, vj}] = A[{vi, vj}] * 2.0
        end)
      end
    end)
    local expected = T.prim_func("main", {A = T.Buffer({T.int64(8), T.int64(8)}, "float32"),
                                          C = T.Buffer({T.int64(8), T.int64(8)}, "float32")}, function(A, C)
      local A_global = T.alloc_buffer({T.int64(8), T.int64(8)}, "float32")
      for ax0, ax1 in T.grid(T.int64(8), T.int64(8)) do
        T.block("A_global", function()
          local v0, v1 = T.axis.remap("SS", {ax0, ax1})
          A_global[{v0, v1}] = A[{v0, v1}]
        end)
      end
      for i, j in T.grid(T.int64(8), T.int64(8)) do
        T.block("C", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          C[{vi, vj}] = A_global[{vi, vj}] * 2.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    sch:cache_read("C", 0, "global")
    check(sch, expected)
  end)

  it("works inside a block scope (TVM cache_read_under_scope)", function()
    local f = T.prim_func("main", {B = T.Buffer({32, 32}, "float32"), C = T.Buffer({32, 32}, "float32")}, function(B, C)
      local A = T.alloc_buffer({32, 32}, "float32")
      for i0, j0 in T.grid(2, 2) do
        T.block("scope", function()
          local i, j = T.axis.remap("SS", {i0, j0})
          for x, y in T.grid(16, 16) do
            T.block("A", function()
              local vi = T.axis.spatial(32, i * 16 + x)
              local vj = T.axis.spatial(32, j * 16 + y)
              A[{vi, vj}] = T.cast("float32", vi * 32 + vj)
            end)
          end
          for x, y in T.grid(16, 16) do
            T.block("B", function()
              local vi = T.axis.spatial(32, i * 16 + x)
              local vj = T.axis.spatial(32, j * 16 + y)
              B[{vi, vj}] = A[{vi, vj}] + 1.0
            end)
          end
        end)
      end
      for i, j in T.grid(32, 32) do
        T.block("C", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          C[{vi, vj}] = A[{vi, vj}] * 2.0
        end)
      end
    end)
    local expected = T.prim_func("main", {B = T.Buffer({32, 32}, "float32"), C = T.Buffer({32, 32}, "float32")}, function(B, C)
      local A = T.alloc_buffer({32, 32}, "float32")
      local A_global = T.alloc_buffer({32, 32}, "float32")
      for i0, j0 in T.grid(2, 2) do
        T.block("scope", function()
          local i, j = T.axis.remap("SS", {i0, j0})
          local A_local = T.alloc_buffer({32, 32}, "float32", {scope = "local"})
          for x, y in T.grid(16, 16) do
            T.block("A", function()
              local vi = T.axis.spatial(32, i * 16 + x)
              local vj = T.axis.spatial(32, j * 16 + y)
              A[{vi, vj}] = T.cast("float32", vi * 32 + vj)
            end)
          end
          for ax0, ax1 in T.grid(16, 16) do
            T.block("A_local", function()
              local v0 = T.axis.spatial(32, i * 16 + ax0)
              local v1 = T.axis.spatial(32, j * 16 + ax1)
              A_local[{v0, v1}] = A[{v0, v1}]
            end)
          end
          for x, y in T.grid(16, 16) do
            T.block("B", function()
              local vi = T.axis.spatial(32, i * 16 + x)
              local vj = T.axis.spatial(32, j * 16 + y)
              B[{vi, vj}] = A_local[{vi, vj}] + 1.0
            end)
          end
        end)
      end
      for ax0, ax1 in T.grid(32, 32) do
        T.block("A_global", function()
          local v0, v1 = T.axis.remap("SS", {ax0, ax1})
          A_global[{v0, v1}] = A[{v0, v1}]
        end)
      end
      for i, j in T.grid(32, 32) do
        T.block("C", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          C[{vi, vj}] = A_global[{vi, vj}] * 2.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    sch:cache_read("B", 0, "local")
    sch:cache_read("C", 0, "global")
    check(sch, expected)
  end)

  it("copies only what an inner scope reads of its input", function()
    local f = T.prim_func("main", {A = T.Buffer({32, 32}, "float32"), C = T.Buffer({32, 32}, "float32")}, function(A, C)
      for i, j in T.grid(2, 2) do
        T.block("C_outer", function()
          local vi_o, vj_o = T.axis.remap("SS", {i, j})
          T.reads(A[{{vi_o * 16, vi_o * 16 + 16}, {vj_o * 16, vj_o * 16 + 16}}])
          T.writes(C[{{vi_o * 16, vi_o * 16 + 16}, {vj_o * 16, vj_o * 16 + 16}}])
          for i_i, j_i in T.grid(16, 16) do
            T.block("C_inner", function()
              local vi = T.axis.spatial(32, vi_o * 16 + i_i)
              local vj = T.axis.spatial(32, vj_o * 16 + j_i)
              C[{vi, vj}] = A[{vi, vj}] + 1.0
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
          local A_local = T.alloc_buffer({32, 32}, "float32", {scope = "local"})
          for ax0, ax1 in T.grid(16, 16) do
            T.block("A_local", function()
              local v0 = T.axis.spatial(32, vi_o * 16 + ax0)
              local v1 = T.axis.spatial(32, vj_o * 16 + ax1)
              A_local[{v0, v1}] = A[{v0, v1}]
            end)
          end
          for i_i, j_i in T.grid(16, 16) do
            T.block("C_inner", function()
              local vi = T.axis.spatial(32, vi_o * 16 + i_i)
              local vj = T.axis.spatial(32, vj_o * 16 + j_i)
              C[{vi, vj}] = A_local[{vi, vj}] + 1.0
            end)
          end
        end)
      end
    end)
    local sch = tir.Schedule(f)
    sch:cache_read("C_inner", 0, "local")
    check(sch, expected)
  end)

  it("rewrites loads in a reader's predicate", function()
    local f = T.prim_func("main", {A = T.Buffer({8}, "int32"), C = T.Buffer({8}, "int32")}, function(A, C)
      for i in T.serial(8) do
        T.block("C", function()
          local vi = T.axis.spatial(8, i)
          T.where(T.lt(A[{i}], 5))
          C[{vi}] = A[{vi}] + 1
        end)
      end
    end)
    local sch = tir.Schedule(f)
    sch:cache_read("C", 0, "local")
    assert.matches("T.where%(T.lt%(A_local%[{i}%], 5%)%)", tostring(sch.mod))
    check(sch)
  end)

  it("stages a matmul's inputs in shared memory per K step, then in registers", function()
    local f = U.matmul(32, 32, 32, "int32")
    local sch = tir.Schedule(f)
    local c = sch:get_block("C")
    local as = sch:cache_read(c, 0, "shared") -- reads A, B (TVM's rule: the init means C is not read)
    local bs = sch:cache_read(c, 1, "shared")
    local i, j, k = sch:get_loops(c)
    local io, ii = sch:split(i, {nil, 8})
    local jo, ji = sch:split(j, {nil, 8})
    local ko, ki = sch:split(k, {nil, 4})
    sch:reorder(io, jo, ko, ki, ii, ji)
    sch:compute_at(as, ko)
    sch:compute_at(bs, ko)
    local al = sch:cache_read(c, 0, "local")
    sch:compute_at(al, ki)
    local s = tostring(sch.mod)
    assert.matches("for ax0, ax1 in T.grid%(8, 4%) do", s) -- the A tile per K step
    assert.matches("for ax0_%d in T.serial%(8%) do", s)   -- A's column per k
    check(sch)
  end)

  -- ---- preconditions ----
  it("refuses an index outside the block's reads (TVM fail_index_out_of_bound)", function()
    local sch = tir.Schedule(elementwise(8))
    U.expect_error(function() sch:cache_read("B", 1, "global") end, "ScheduleError in cache_read",
                   "read_buffer_index 1 is out of range: block 'B' reads 0: A")
    U.expect_error(function() sch:cache_read("B", -1, "global") end, "read_buffer_index -1 is out of range")
    U.expect_error(function() sch:cache_read("B", 0.5, "global") end, "read_buffer_index must be an integer")
  end)

  it("refuses an unknown storage scope (TVM fail_invalid_storage_scope)", function()
    local sch = tir.Schedule(elementwise(8))
    U.expect_error(function() sch:cache_read("B", 0, "test_scope") end, "cache_read",
                   "invalid storage scope 'test_scope' (global, shared, shared.dyn, local, warp, wmma.matrix_a, wmma.matrix_b, wmma.accumulator, " ..
                   "m16n8k<k>.matrixA|B|C, wgmma.accumulator, wgmma.matrix_a)")
    U.expect_error(function() sch:cache_read("B", 0, 3) end, "storage scope must be a string")
  end)

  it("refuses a buffer with two writers (TVM fail_multi_producer)", function()
    local f = T.prim_func("main", {X = T.Buffer({8}, "float32"), B = T.Buffer({8}, "float32")}, function(X, B)
      local A = T.alloc_buffer({8}, "float32")
      for i in T.serial(8) do
        T.block("A0", function()
          local vi = T.axis.spatial(8, i)
          A[{vi}] = X[{vi}]
        end)
      end
      for i in T.serial(8) do
        T.block("A1", function()
          local vi = T.axis.spatial(8, i)
          A[{vi}] = X[{vi}] * 2.0
        end)
      end
      for i in T.serial(8) do
        T.block("B", function()
          local vi = T.axis.spatial(8, i)
          B[{vi}] = A[{vi}]
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:cache_read("B", 0, "global") end, "cache_read",
                   "A has more than one writer in the scope ('A0' and 'A1'); cache_read needs one")
  end)

  it("refuses a reader that also writes the buffer", function()
    local f = T.prim_func("main", {A = T.Buffer({8}, "float32")}, function(A)
      for i in T.serial(8) do
        T.block("inc", function()
          local vi = T.axis.spatial(8, i)
          A[{vi}] = A[{vi}] + 1.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:cache_read("inc", 0, "local") end, "cache_read",
                   "block 'inc' both reads and writes A; a read cache would not see its writes")
  end)

  it("refuses a consumer that does not read the buffer", function()
    local sch = tir.Schedule(elementwise(8))
    U.expect_error(function() sch:cache_read("C", 0, "global", {"B"}) end, "cache_read", "consumer block 'B' does not read B")
  end)

  it("refuses consumers outside the block's scope", function()
    local f = T.prim_func("main", {A = T.Buffer({32}, "float32"), C = T.Buffer({32}, "float32"),
                                   D = T.Buffer({32}, "float32")}, function(A, C, D)
      for i in T.serial(32) do
        T.block("D", function()
          local vi = T.axis.spatial(32, i)
          D[{vi}] = A[{vi}]
        end)
      end
      for i in T.serial(2) do
        T.block("C_outer", function()
          local vo = T.axis.spatial(2, i)
          for ii in T.serial(16) do
            T.block("C_inner", function()
              local vi = T.axis.spatial(32, vo * 16 + ii)
              C[{vi}] = A[{vi}] + 1.0
            end)
          end
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:cache_read("D", 0, "shared", {"C_inner"}) end, "cache_read",
                   "some consumer blocks given are not in the scope of block 'D'")
  end)

  it("refuses a reader that runs before the writer", function()
    local f = T.prim_func("main", {X = T.Buffer({8}, "float32"), Y = T.Buffer({8}, "float32"),
                                   Z = T.Buffer({8}, "float32")}, function(X, Y, Z)
      local A = T.alloc_buffer({8}, "float32")
      for i in T.serial(8) do
        T.block("R", function()
          local vi = T.axis.spatial(8, i)
          Y[{vi}] = A[{vi}]
        end)
      end
      for i in T.serial(8) do
        T.block("W", function()
          local vi = T.axis.spatial(8, i)
          A[{vi}] = X[{vi}]
        end)
      end
      for i in T.serial(8) do
        T.block("Z", function()
          local vi = T.axis.spatial(8, i)
          Z[{vi}] = A[{vi}]
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:cache_read("Z", 0, "global") end, "cache_read",
                   "block 'R' reads A before its writer 'W' runs; the cache is filled after it")
  end)
end)

-- ======================================================================================
describe("cache_write", function()
  it("writes through a cache copied back after the block (TVM elementwise)", function()
    local expected = T.prim_func("main", {A = T.Buffer({16, 16}, "float32"), C = T.Buffer({16, 16}, "float32")}, function(A, C)
      local B = T.alloc_buffer({16, 16}, "float32")
      local B_local = T.alloc_buffer({16, 16}, "float32", {scope = "local"})
      local C_global = T.alloc_buffer({16, 16}, "float32")
      for i, j in T.grid(16, 16) do
        T.block("B", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          B_local[{vi, vj}] = A[{vi, vj}] * 2.0
        end)
      end
      for ax0, ax1 in T.grid(16, 16) do
        T.block("B_local", function()
          local v0, v1 = T.axis.remap("SS", {ax0, ax1})
          B[{v0, v1}] = B_local[{v0, v1}]
        end)
      end
      for i, j in T.grid(16, 16) do
        T.block("C", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          C_global[{vi, vj}] = B[{vi, vj}] + 1.0
        end)
      end
      for ax0, ax1 in T.grid(16, 16) do
        T.block("C_global", function()
          local v0, v1 = T.axis.remap("SS", {ax0, ax1})
          C[{v0, v1}] = C_global[{v0, v1}]
        end)
      end
    end)
    local sch = tir.Schedule(elementwise(16))
    local b, c = sch:get_block("B"), sch:get_block("C")
    local b_local = sch:cache_write(b, 0, "local")
    local c_global = sch:cache_write(c, 0, "global")
    assert.are.equal("B_local", sch:get(b_local).name)
    assert.are.equal("C_global", sch:get(c_global).name)
    assert.are.equal("B", sch:get(b).name)
    check(sch, expected)
  end)

  it("is bit-exact on int32 reductions", function()
    local sch = tir.Schedule(U.matmul(16, 8, 8, "int32"))
    local cl = sch:cache_write("C", 0, "local")
    assert.matches("C_local%[{v_i, v_j}%] = C_local%[{v_i, v_j}%] %+ A%[{v_i, v_k}%] %* B%[{v_k, v_j}%]", tostring(sch.mod))
    assert.are.equal("C_local", sch:get(cl).name)
    check(sch)
  end)

  it("copies back inside the loop before the first consumer (TVM cache_write_location)", function()
    local expected = T.prim_func("main", {D = T.Buffer({128}, "int32"), E = T.Buffer({128}, "int32")}, function(D, E)
      local A = T.alloc_buffer({128}, "int32")
      local A_global = T.alloc_buffer({128}, "int32")
      for i in T.serial(8) do
        for j in T.serial(16) do
          T.block("A", function()
            local vi = T.axis.spatial(128, i * 16 + j)
            A_global[{vi}] = D[{vi}] + 1
          end)
        end
        for ax0 in T.serial(16) do
          T.block("A_global", function()
            local v0 = T.axis.spatial(128, i * 16 + ax0)
            A[{v0}] = A_global[{v0}]
          end)
        end
        for j in T.serial(16) do
          T.block("B", function()
            local vi = T.axis.spatial(128, i * 16 + j)
            E[{vi}] = A[{vi}] * 3
          end)
        end
      end
      for i in T.serial(128) do
        T.block("C", function()
          local vi = T.axis.spatial(128, i)
          E[{vi}] = E[{vi}] + A[{vi}]
        end)
      end
    end)
    local sch = tir.Schedule(multi_consumer())
    sch:cache_write("A", 0, "global")
    check(sch, expected)
  end)

  -- TVM test_cache_write_location with consumer_blocks: the given consumers read the cache,
  -- the others the original buffer; the copy-back goes before the first of the others.
  local function consume_cache(b_reads, c_reads, copy_at_end)
    return T.prim_func("main", {D = T.Buffer({128}, "int32"), E = T.Buffer({128}, "int32")}, function(D, E)
      local A = T.alloc_buffer({128}, "int32")
      local A_global = T.alloc_buffer({128}, "int32")
      local bufs = {A = A, A_global = A_global}
      local function copy()
        for ax0 in T.serial(128) do
          T.block("A_global", function()
            local v0 = T.axis.spatial(128, ax0)
            A[{v0}] = A_global[{v0}]
          end)
        end
      end
      for i in T.serial(8) do
        for j in T.serial(16) do
          T.block("A", function()
            local vi = T.axis.spatial(128, i * 16 + j)
            A_global[{vi}] = D[{vi}] + 1
          end)
        end
        for j in T.serial(16) do
          T.block("B", function()
            local vi = T.axis.spatial(128, i * 16 + j)
            E[{vi}] = bufs[b_reads][{vi}] * 3
          end)
        end
      end
      if not copy_at_end then copy() end
      for i in T.serial(128) do
        T.block("C", function()
          local vi = T.axis.spatial(128, i)
          E[{vi}] = E[{vi}] + bufs[c_reads][{vi}]
        end)
      end
      if copy_at_end then copy() end
    end)
  end

  it("serves the given consumers from the cache (TVM cache_write_multi_consumer_*_consume_cache)", function()
    -- B reads the cache, C the original buffer (TVM ..._B_consume_cache)
    local sch = tir.Schedule(multi_consumer())
    sch:cache_write("A", 0, "global", {"B"})
    check(sch, consume_cache("A_global", "A"))
    -- C reads the cache: the copy goes inside the loop, before B (TVM ..._C_consume_cache)
    local sch2 = tir.Schedule(multi_consumer())
    sch2:cache_write("A", 0, "global", {sch2:get_block("C")})
    local s2 = tostring(sch2.mod)
    assert.matches("%] %+ A_global%[{vi[_%d]*}%]", s2)   -- C reads the cache
    assert.matches("%] = A%[{vi[_%d]*}%] %* 3", s2)       -- B reads A
    local copy_in_loop = s2:find('T.block("A_global"', 1, true) < s2:find('T.block("B"', 1, true)
    assert.is_true(copy_in_loop)
    check(sch2)
    -- every consumer reads the cache: the copy goes to the end of the scope (TVM ..._all_consume_cache)
    local sch3 = tir.Schedule(multi_consumer())
    sch3:cache_write("A", "A", "global", {"B", "C"})
    check(sch3, consume_cache("A_global", "A_global", true))
  end)

  it("refuses consumer blocks that cannot read the cache", function()
    local sch = tir.Schedule(multi_consumer())
    U.expect_error(function() sch:cache_write("A", 0, "global", {"A"}) end, "ScheduleError in cache_write",
                   "consumer block 1 is block 'A' itself")
    local f2 = elementwise(8)
    local s2 = tir.Schedule(f2)
    U.expect_error(function() s2:cache_write("C", 0, "global", {"B"}) end, "ScheduleError in cache_write",
                   "consumer block 'B' does not read C")
    U.expect_error(function() s2:cache_write("C", 0, "global", "B") end, "TypeError in cache_write",
                   "consumer_blocks must be a list of blocks")
    U.expect_error(function() s2:cache_write("C", 0, "global", {"nope"}) end, "no block named 'nope'")
    -- a reader before the writer
    local f3 = T.prim_func("main", {A = T.Buffer({8}, "int32"), B = T.Buffer({8}, "int32"), C = T.Buffer({8}, "int32")},
      function(A, B, C)
        for i in T.serial(8) do
          T.block("early", function() local vi = T.axis.spatial(8, i); C[{vi}] = B[{vi}] end)
        end
        for i in T.serial(8) do
          T.block("W", function() local vi = T.axis.spatial(8, i); B[{vi}] = A[{vi}] + 1 end)
        end
      end)
    local s3 = tir.Schedule(f3)
    U.expect_error(function() s3:cache_write("W", 0, "local", {"early"}) end,
                   "consumer block 'early' runs before block 'W' writes the cache")
    assert.is_true(tir.structural_equal(f3, s3.mod))
  end)

  it("chains caches (TVM continuous_cache_write)", function()
    local sch = tir.Schedule(elementwise(16))
    local b = sch:get_block("B")
    sch:cache_write(b, 0, "shared")
    sch:cache_write(b, 0, "local")
    local s = tostring(sch.mod)
    assert.matches("B_shared_local%[{vi, vj}%] = A%[{vi, vj}%]", s)
    assert.matches('T.block%("B_shared_local"', s)
    assert.matches("B%[{v0_1, v1_1}%] = B_shared%[{v0_1, v1_1}%]", s)
    check(sch)
  end)

  it("copies back the predicated region, for an intermediate and an output (TVM with_block_predicate)", function()
    local expected_mid = T.prim_func("main", {X = T.Buffer({120}, "float32"), B = T.Buffer({120}, "float32")}, function(X, B)
      local A = T.alloc_buffer({120}, "float32")
      local A_shared = T.alloc_buffer({120}, "float32", {scope = "shared"})
      for i, j in T.grid(16, 8) do
        T.block("producer", function()
          local ax = T.axis.spatial(120, i * 8 + j)
          T.where(T.lt(i * 8 + j, 120))
          A_shared[{ax}] = X[{ax}] * 2.0
        end)
      end
      for ax0 in T.serial(120) do
        T.block("A_shared", function()
          local v0 = T.axis.spatial(120, ax0)
          A[{v0}] = A_shared[{v0}]
        end)
      end
      for i, j in T.grid(16, 8) do
        T.block("consumer", function()
          local ax = T.axis.spatial(120, i * 8 + j)
          T.where(T.lt(i * 8 + j, 120))
          B[{ax}] = A[{ax}] + 1.0
        end)
      end
    end)
    local sch = tir.Schedule(with_predicate())
    sch:cache_write("producer", 0, "shared")
    check(sch, expected_mid)
    local expected_out = T.prim_func("main", {X = T.Buffer({120}, "float32"), B = T.Buffer({120}, "float32")}, function(X, B)
      local A = T.alloc_buffer({120}, "float32")
      local B_shared = T.alloc_buffer({120}, "float32", {scope = "shared"})
      for i, j in T.grid(16, 8) do
        T.block("producer", function()
          local ax = T.axis.spatial(120, i * 8 + j)
          T.where(T.lt(i * 8 + j, 120))
          A[{ax}] = X[{ax}] * 2.0
        end)
      end
      for i, j in T.grid(16, 8) do
        T.block("consumer", function()
          local ax = T.axis.spatial(120, i * 8 + j)
          T.where(T.lt(i * 8 + j, 120))
          B_shared[{ax}] = A[{ax}] + 1.0
        end)
      end
      for ax0 in T.serial(120) do
        T.block("B_shared", function()
          local v0 = T.axis.spatial(120, ax0)
          B[{v0}] = B_shared[{v0}]
        end)
      end
    end)
    local sch2 = tir.Schedule(with_predicate())
    sch2:cache_write("consumer", 0, "shared")
    check(sch2, expected_out)
  end)

  it("copies back only what the block writes of an output", function()
    local f = T.prim_func("main", {X = T.Buffer({16}, "int32"), Y = T.Buffer({16}, "int32")}, function(X, Y)
      for i in T.serial(8) do
        T.block("W", function()
          local vi = T.axis.spatial(16, i + 4)
          Y[{vi}] = X[{vi}] * 5
        end)
      end
    end)
    local expected = T.prim_func("main", {X = T.Buffer({16}, "int32"), Y = T.Buffer({16}, "int32")}, function(X, Y)
      local Y_local = T.alloc_buffer({16}, "int32", {scope = "local"})
      for i in T.serial(8) do
        T.block("W", function()
          local vi = T.axis.spatial(16, i + 4)
          Y_local[{vi}] = X[{vi}] * 5
        end)
      end
      for ax0 in T.serial(8) do
        T.block("Y_local", function()
          local v0 = T.axis.spatial(16, ax0 + 4)
          Y[{v0}] = Y_local[{v0}]
        end)
      end
    end)
    local sch = tir.Schedule(f)
    sch:cache_write("W", 0, "local")
    check(sch, expected)
  end)

  it("works inside a block scope (TVM cache_write_under_scope)", function()
    local f = T.prim_func("main", {B = T.Buffer({32, 32}, "float32"), C = T.Buffer({32, 32}, "float32")}, function(B, C)
      local A = T.alloc_buffer({32, 32}, "float32")
      for i0, j0 in T.grid(2, 2) do
        T.block("scope", function()
          local i, j = T.axis.remap("SS", {i0, j0})
          for x, y in T.grid(16, 16) do
            T.block("A", function()
              local vi = T.axis.spatial(32, i * 16 + x)
              local vj = T.axis.spatial(32, j * 16 + y)
              A[{vi, vj}] = T.cast("float32", vi - vj)
            end)
          end
          for x, y in T.grid(16, 16) do
            T.block("B", function()
              local vi = T.axis.spatial(32, i * 16 + x)
              local vj = T.axis.spatial(32, j * 16 + y)
              B[{vi, vj}] = A[{vi, vj}] + 1.0
            end)
          end
        end)
      end
      for i, j in T.grid(32, 32) do
        T.block("C", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          C[{vi, vj}] = A[{vi, vj}] * 2.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    sch:cache_write("A", 0, "local")
    sch:cache_write("B", 0, "global")
    sch:cache_write("scope", 0, "global")
    local s = tostring(sch.mod)
    assert.matches('T.block%("A_local"', s)
    assert.matches('T.block%("B_global"', s)
    assert.matches('T.block%("A_global"', s)
    check(sch)
  end)

  it("places a register tile under the thread loops of a matmul", function()
    local f = U.matmul(32, 32, 16)
    local sch = tir.Schedule(f)
    local c = sch:get_block("C")
    local cl = sch:cache_write(c, 0, "local")
    local i, j, k = sch:get_loops(c)
    local io, ii = sch:split(i, {nil, 4})
    local jo, ji = sch:split(j, {nil, 4})
    sch:reorder(io, jo, k, ii, ji)
    sch:bind(io, "blockIdx.x")
    sch:bind(jo, "threadIdx.x")
    sch:reverse_compute_at(cl, jo)
    assert.matches("for ax0, ax1 in T.grid%(4, 4%) do", tostring(sch.mod))
    check(sch)
  end)

  -- ---- preconditions ----
  it("refuses a buffer with another writer (TVM fail_multi_producer)", function()
    local f = T.prim_func("main", {X = T.Buffer({8}, "float32"), B = T.Buffer({8}, "float32")}, function(X, B)
      local A = T.alloc_buffer({8}, "float32")
      for i in T.serial(8) do
        T.block("A0", function()
          local vi = T.axis.spatial(8, i)
          A[{vi}] = X[{vi}]
        end)
      end
      for i in T.serial(8) do
        T.block("A1", function()
          local vi = T.axis.spatial(8, i)
          A[{vi}] = X[{vi}] * 2.0
        end)
      end
      for i in T.serial(8) do
        T.block("B", function()
          local vi = T.axis.spatial(8, i)
          B[{vi}] = A[{vi}]
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:cache_write("A0", 0, "global") end, "ScheduleError in cache_write",
                   "block 'A1' also writes A; cache_write needs a single writer")
    U.expect_error(function() sch:cache_write("A1", 0, "global") end, "block 'A0' also writes A; cache_write needs a single writer")
  end)

  it("refuses an index outside the block's writes (TVM fail_index_out_of_bound)", function()
    local sch = tir.Schedule(elementwise(8))
    U.expect_error(function() sch:cache_write("B", 1, "global") end, "cache_write",
                   "write_buffer_index 1 is out of range: block 'B' writes 1 buffer(s)")
    U.expect_error(function() sch:cache_write("B", "0", "global") end, "block 'B' writes no buffer named '0' (it writes B)")
    U.expect_error(function() sch:cache_write("B", 0.5, "global") end, "write_buffer_index must be an integer")
  end)

  it("refuses an unknown storage scope (TVM fail_invalid_storage_scope)", function()
    local sch = tir.Schedule(elementwise(8))
    U.expect_error(function() sch:cache_write("B", 0, "test_scope") end, "cache_write", "invalid storage scope 'test_scope'")
    U.expect_error(function() sch:cache_write("B", 0, nil) end, "storage scope must be a string")
  end)

  it("fails clearly on a stale handle and leaves the function unchanged", function()
    local f = elementwise(8)
    local sch = tir.Schedule(f)
    local b = sch:get_block("B")
    sch:compute_inline(b)
    U.expect_error(function() sch:cache_write(b, 0, "local") end, "cache_write", "the block handle no longer refers to a block")
    local before = sch.mod
    U.expect_error(function() sch:cache_write("C", 3, "local") end, "out of range")
    assert.is_true(tir.structural_equal(before, sch.mod))
  end)
end)
