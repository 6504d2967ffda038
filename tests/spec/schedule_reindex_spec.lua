-- schedule_reindex_spec.lua -- reindex: the IR after it equals a T script (cases from TVM
-- tests/python/tir-schedule/test_tir_schedule_reindex.py, written anew, at smaller sizes),
-- interpreter equivalence (exact: only copies are added; also after lowering), trace
-- replay, and one test per precondition.
local tir = require("tir")
local T = tir.script
local U = require("spec_util")

local F32 = "float32"

local function assert_ir(got, want)
  local eq, diff = tir.structural_equal(got, want)
  assert(eq, ("IR differs: %s\n-- got:\n%s\n-- want:\n%s"):format(tostring(diff), tostring(got), tostring(want)))
end

local function assert_all(f, sch, want)
  if want then assert_ir(sch.mod, want) end
  U.assert_equiv(f, sch.mod)
  U.assert_lowered_and_replayed(f, sch)
end

local function transpose()
  return T.prim_func("main", {A = T.Buffer({16, 16}, F32), B = T.Buffer({16, 16}, F32)}, function(A, B)
    for i, j in T.grid(16, 16) do
      T.block("B", function()
        local vi, vj = T.axis.remap("SS", {i, j})
        B[{vi, vj}] = A[{vj, vi}] * 2.0
      end)
    end
  end)
end

-- conv2d NHWC with padding (TVM's conv2d_nhwc at 14x14, 8 output channels)
local function conv_params() return {Input = T.Buffer({1, 14, 14, 3}, F32), Weight = T.Buffer({7, 7, 3, 8}, F32),
                                     Conv = T.Buffer({1, 7, 7, 8}, F32)} end

local function pad_stage(Input, PadInput)
  for i0, i1, i2, i3 in T.grid(1, 20, 20, 3) do
    T.block("PadInput", function()
      local a, b, c, d = T.axis.remap("SSSS", {i0, i1, i2, i3})
      PadInput[{a, b, c, d}] = T.if_then_else(T.And(T.And(T.ge(b, 3), T.lt(b, 17)), T.And(T.ge(c, 3), T.lt(c, 17))),
                                              Input[{a, b - 3, c - 3, d}], T.float32(0))
    end)
  end
end

local function conv2d()
  return T.prim_func("main", conv_params(), function(Input, Weight, Conv)
    local PadInput = T.alloc_buffer({1, 20, 20, 3}, F32)
    pad_stage(Input, PadInput)
    for i0, i1, i2, i3, i4, i5, i6 in T.grid(1, 7, 7, 8, 7, 7, 3) do
      T.block("conv2d_nhwc", function()
        local n, h, w, co, rh, rw, rc = T.axis.remap("SSSSRRR", {i0, i1, i2, i3, i4, i5, i6})
        T.init(function() Conv[{n, h, w, co}] = 0.0 end)
        Conv[{n, h, w, co}] = Conv[{n, h, w, co}] + PadInput[{n, h * 2 + rh, w * 2 + rw, co // 64 * 3 + rc}] * Weight[{rh, rw, rc, co}]
      end)
    end
  end)
end

describe("reindex", function()
  it("reads a transposed buffer through a stage indexed by the block's variables", function()
    local want = T.prim_func("main", {A = T.Buffer({16, 16}, F32), B = T.Buffer({16, 16}, F32)}, function(A, B)
      local A_reindex = T.alloc_buffer({16, 16}, F32)
      for i, j in T.grid(16, 16) do
        T.block("A_reindex", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          A_reindex[{vi, vj}] = A[{vj, vi}]
        end)
      end
      for i, j in T.grid(16, 16) do
        T.block("B", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          B[{vi, vj}] = A_reindex[{vi, vj}] * 2.0
        end)
      end
    end)
    for _, form in ipairs({"index", "name"}) do
      local f = transpose()
      local sch = tir.Schedule(f)
      local rv = sch:reindex(form == "index" and sch:get_block("B") or "B", form == "index" and {"read", 0} or "A")
      assert.are.equal("BlockRV(A_reindex)", tostring(rv))
      assert_all(f, sch, want)
    end
  end)

  it("reindexes conv2d's data (dropping a variable the indices do not use) and weight", function()
    local want_data = T.prim_func("main", conv_params(), function(Input, Weight, Conv)
      local PadInput = T.alloc_buffer({1, 20, 20, 3}, F32)
      local R = T.alloc_buffer({1, 7, 7, 7, 7, 3}, F32)
      pad_stage(Input, PadInput)
      for i0, i1, i2, i3, i4, i5 in T.grid(1, 7, 7, 7, 7, 3) do
        T.block("PadInput_reindex", function()
          local n, h, w, rh, rw, rc = T.axis.remap("SSSSSS", {i0, i1, i2, i3, i4, i5})
          R[{n, h, w, rh, rw, rc}] = PadInput[{n, h * 2 + rh, w * 2 + rw, rc}]
        end)
      end
      for i0, i1, i2, i3, i4, i5, i6 in T.grid(1, 7, 7, 8, 7, 7, 3) do
        T.block("conv2d_nhwc", function()
          local n, h, w, co, rh, rw, rc = T.axis.remap("SSSSRRR", {i0, i1, i2, i3, i4, i5, i6})
          T.init(function() Conv[{n, h, w, co}] = 0.0 end)
          Conv[{n, h, w, co}] = Conv[{n, h, w, co}] + R[{n, h, w, rh, rw, rc}] * Weight[{rh, rw, rc, co}]
        end)
      end
    end)
    local f = conv2d()
    local sch = tir.Schedule(f)
    sch:reindex("conv2d_nhwc", "PadInput")
    assert_all(f, sch, want_data)
    local want_weight = T.prim_func("main", conv_params(), function(Input, Weight, Conv)
      local PadInput = T.alloc_buffer({1, 20, 20, 3}, F32)
      local W = T.alloc_buffer({8, 7, 7, 3}, F32)
      pad_stage(Input, PadInput)
      for ax3, ax4, ax5, ax6 in T.grid(8, 7, 7, 3) do
        T.block("Weight_reindex", function()
          local v3, v4, v5, v6 = T.axis.remap("SSSS", {ax3, ax4, ax5, ax6})
          W[{v3, v4, v5, v6}] = Weight[{v4, v5, v6, v3}]
        end)
      end
      for i0, i1, i2, i3, i4, i5, i6 in T.grid(1, 7, 7, 8, 7, 7, 3) do
        T.block("conv2d_nhwc", function()
          local n, h, w, co, rh, rw, rc = T.axis.remap("SSSSRRR", {i0, i1, i2, i3, i4, i5, i6})
          T.init(function() Conv[{n, h, w, co}] = 0.0 end)
          Conv[{n, h, w, co}] = Conv[{n, h, w, co}] + PadInput[{n, h * 2 + rh, w * 2 + rw, co // 64 * 3 + rc}] * W[{co, rh, rw, rc}]
        end)
      end
    end)
    local f2 = conv2d()
    local s2 = tir.Schedule(f2)
    -- reads of the block: PadInput, Weight (TVM's rule: with an init, Conv is not a read)
    s2:reindex(s2:get_block("conv2d_nhwc"), {"read", 1})
    assert_all(f2, s2, want_weight)
  end)

  it("writes a reduction's output through a stage placed after it (also int64 and unit loops)", function()
    local function mm(M, N, K, dt_i)
      local ext = dt_i and T.int64(M) or M
      return T.prim_func("main", {A = T.Buffer({ext, K}, F32), B = T.Buffer({K, N}, F32), C = T.Buffer({ext, N}, F32)},
                         function(A, B, C)
        for i0, i1, i2 in T.grid(ext, N, K) do
          T.block("matmul", function()
            local i = T.axis.spatial(ext, i0)
            local j, k = T.axis.remap("SR", {i1, i2})
            T.init(function() C[{i, j}] = 0.0 end)
            C[{i, j}] = C[{i, j}] + A[{i, k}] * B[{k, j}]
          end)
        end
      end)
    end
    local function mm_reindex(M, N, K, dt_i)
      local ext = dt_i and T.int64(M) or M
      return T.prim_func("main", {A = T.Buffer({ext, K}, F32), B = T.Buffer({K, N}, F32), C = T.Buffer({ext, N}, F32)},
                         function(A, B, C)
        local C_reindex = T.alloc_buffer({ext, N}, F32)
        for i0, i1, i2 in T.grid(ext, N, K) do
          T.block("matmul", function()
            local i = T.axis.spatial(ext, i0)
            local j, k = T.axis.remap("SR", {i1, i2})
            T.init(function() C_reindex[{i, j}] = 0.0 end)
            C_reindex[{i, j}] = C_reindex[{i, j}] + A[{i, k}] * B[{k, j}]
          end)
        end
        for ax0, ax1 in T.grid(ext, N) do
          T.block("C_reindex", function()
            local v0 = T.axis.spatial(ext, ax0)
            local v1 = T.axis.remap("S", {ax1})
            C[{v0, v1}] = C_reindex[{v0, v1}]
          end)
        end
      end)
    end
    for _, case in ipairs({{16, 8, 12, false}, {2, 16, 16, true}, {1, 1, 32, false}}) do
      local f = mm(table.unpack(case))
      local sch = tir.Schedule(f)
      sch:reindex(sch:get_block("matmul"), {"write", 0})
      assert_all(f, sch, mm_reindex(table.unpack(case)))
    end
    -- int32, after tiling (the stage still follows the whole nest)
    local g = U.matmul(16, 12, 8, "int32")
    local s2 = tir.Schedule(g)
    local i = s2:get_loops(s2:get_block("C"))
    s2:split(i, {nil, 4})
    s2:reindex("C", "C")
    s2:reindex("C", "A")
    assert_all(g, s2)
  end)

  it("checks its preconditions", function()
    -- two accesses with different indices
    local f1 = T.prim_func("main", {A = T.Buffer({16, 16}, F32), B = T.Buffer({16, 16}, F32)}, function(A, B)
      for i, j in T.grid(16, 16) do
        T.block("B", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          B[{vi, vj}] = A[{vj, vi}] + A[{vi, vj}]
        end)
      end
    end)
    local s1 = tir.Schedule(f1)
    U.expect_error(function() s1:reindex("B", "A") end, "ScheduleError in reindex",
                   "A must be accessed in block 'B' only by loads and stores with the same indices: the accesses use different indices",
                   "^^^")
    -- an opaque use of the buffer
    local f2 = T.prim_func("main", {A = T.Buffer({16}, F32), B = T.Buffer({16}, F32)}, function(A, B)
      for i in T.serial(16) do
        T.block("B", function()
          local vi = T.axis.spatial(16, i)
          B[{vi}] = A[{vi}]
          T.evaluate(T.call("int32", "use_pointer", A.data))
        end)
      end
    end)
    local s2 = tir.Schedule(f2)
    U.expect_error(function() s2:reindex("B", {"read", 0}) end, "it is used opaquely")
    -- not a leaf block
    local s3 = tir.Schedule(transpose())
    local i3 = s3:get_loops(s3:get_block("B"))
    local outer = s3:blockize(i3)
    U.expect_error(function() s3:reindex(outer, {"write", 0}) end, "block 'B_o' is not a leaf block (it holds 1 block(s))")
    -- a read of a buffer the block writes: the update block of a decomposed reduction reads
    -- C, A, B (a block with an init reads only A, B)
    local s4 = tir.Schedule(U.matmul(8, 8, 8))
    s4:decompose_reduction("C", (s4:get_loops(s4:get_block("C"))))
    assert.are.equal("C", s4:get(s4:get_block("C_update")).reads[1].buffer.name)
    U.expect_error(function() s4:reindex("C_update", {"read", 0}) end,
                   "block 'C_update' also writes C: reindex it as a write buffer")
    -- a write reindex of a block that accumulates into old values (no init)
    local f5 = T.prim_func("main", {A = T.Buffer({16}, F32), B = T.Buffer({16}, F32)}, function(A, B)
      for i in T.serial(16) do
        T.block("B", function()
          local vi = T.axis.spatial(16, i)
          B[{vi}] = B[{vi}] + A[{vi}]
        end)
      end
    end)
    local s5 = tir.Schedule(f5)
    U.expect_error(function() s5:reindex("B", {"write", 0}) end, "reads B before writing it and has no init")
    -- a write reindex of a block that does not write its whole domain
    local f6 = T.prim_func("main", {A = T.Buffer({16}, F32), B = T.Buffer({16}, F32)}, function(A, B)
      for i in T.serial(8) do
        T.block("B", function()
          local vi = T.axis.spatial(16, i)
          B[{vi}] = A[{vi}]
        end)
      end
    end)
    local s6 = tir.Schedule(f6)
    U.expect_error(function() s6:reindex("B", {"write", 0}) end, "must write its whole iteration domain", "covers 8 values")
    -- not under a chain of loops
    local A7 = tir.te.placeholder({16}, F32, "A")
    local B7 = tir.te.compute({16}, function(i) return A7[{i}] * 2.0 end, "B")
    local C7 = tir.te.compute({16}, function(i) return B7[{i}] + 1.0 end, "C")
    local s7 = tir.Schedule(tir.te.create_prim_func({A7, C7}))
    s7:compute_at(s7:get_block("B"), s7:get_loops(s7:get_block("C")))
    U.expect_error(function() s7:reindex("C", {"write", 0}) end, "must sit under perfectly nested loops in its scope; found a SeqStmt")
    -- indices and arguments
    local s8 = tir.Schedule(transpose())
    U.expect_error(function() s8:reindex("B", {"read", 3}) end, "read buffer index 3 is out of range: block 'B' reads 0: A")
    U.expect_error(function() s8:reindex("B", "Z") end, "block 'B' neither reads nor writes a buffer named 'Z'")
    U.expect_error(function() s8:reindex("B", {"load", 0}) end, "the buffer must be {\"read\", index}")
    assert_ir(s8.mod, transpose())
  end)
end)
