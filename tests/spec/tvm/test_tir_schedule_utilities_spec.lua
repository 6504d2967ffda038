-- Port of TVM tests/python/s_tir/schedule/test_tir_schedule_utilities.py (schedule creation,
-- get_block, get_loops, copy, get_child_blocks, get_producers/consumers, annotate/unannotate).
-- Sizes 128/1024 -> 16.  Not ported: get_sref/remove_rv (tirlua has no such calls; a handle
-- is checked when used).
local tir = require("tir")
local V = require("tvm.tvm_util")
local T = V.T
local F32 = "float32"
local N = 16

local function matmul()
  return T.prim_func("main", {A = T.Buffer({N, N}, F32), B = T.Buffer({N, N}, F32), C = T.Buffer({N, N}, F32)}, function(A, B, C)
    for i, j in T.grid(N, N) do
      T.block("init", function()
        local vi, vj = T.axis.remap("SS", {i, j})
        C[{vi, vj}] = T.float32(0)
      end)
      for k in T.serial(N) do
        T.block("update", function()
          local vi, vj, vk = T.axis.remap("SSR", {i, j, k})
          C[{vi, vj}] = C[{vi, vj}] + A[{vi, vk}] * B[{vj, vk}]
        end)
      end
    end
  end)
end

local function matmul_relu(loop_ann, block_ann)
  return T.prim_func("main", {A = T.Buffer({N, N}, F32), B = T.Buffer({N, N}, F32), D = T.Buffer({N, N}, F32)}, function(A, B, D)
    local C = T.alloc_buffer({N, N}, F32)
    loop_ann = loop_ann or {}
    block_ann = block_ann or {}
    for i in T.serial(N, loop_ann[1] and {annotations = loop_ann[1]} or nil) do
      for j in T.serial(N, loop_ann[2] and {annotations = loop_ann[2]} or nil) do
        for k in T.serial(N) do
          T.block("matmul", function()
            local vi, vj, vk = T.axis.remap("SSR", {i, j, k})
            if block_ann.matmul then T.block_attr(block_ann.matmul) end
            T.init(function() C[{vi, vj}] = T.float32(0) end)
            C[{vi, vj}] = C[{vi, vj}] + A[{vi, vk}] * B[{vk, vj}]
          end)
        end
      end
    end
    for i, j in T.grid(N, N) do
      T.block("relu", function()
        local vi, vj = T.axis.remap("SS", {i, j})
        if block_ann.relu then T.block_attr(block_ann.relu) end
        D[{vi, vj}] = T.max(C[{vi, vj}], T.float32(0))
      end)
    end
  end)
end

-- a two-output reduction (TVM's tuple_reduction: sum and sum of squares in one block)
local function tuple_reduction()
  return T.prim_func("main", {data = T.Buffer({4, 8}, F32), T_add = T.Buffer({4}, F32)}, function(data, T_add)
    local v0 = T.alloc_buffer({4}, F32, {name = "data_red_temp_v0"})
    local v1 = T.alloc_buffer({4}, F32, {name = "data_red_temp_v1"})
    for i0, i1 in T.grid(4, 8) do
      T.block("data_red_temp", function()
        local ax0, k1 = T.axis.remap("SR", {i0, i1})
        T.init(function()
          v0[{ax0}] = T.float32(0)
          v1[{ax0}] = T.float32(0)
        end)
        v0[{ax0}] = v0[{ax0}] + data[{ax0, k1}]
        v1[{ax0}] = v1[{ax0}] + data[{ax0, k1}] * data[{ax0, k1}]
      end)
    end
    for i0 in T.serial(4) do
      T.block("T_add", function()
        local ax0 = T.axis.remap("S", {i0})
        T_add[{ax0}] = v0[{ax0}] + v1[{ax0}]
      end)
    end
  end)
end

local function names(list)
  local out = {}
  for i, b in ipairs(list) do out[i] = b.name end
  return out
end

describe("test_tir_schedule_utilities", function()
  it("test_tir_schedule_creation", function()
    local f = matmul()
    local s1 = tir.Schedule(f)
    local s2 = tir.Schedule(T.ir_module({f}))
    assert.is_true(tir.structural_equal(s1.mod, s2.mod))
  end)

  it("test_tir_schedule_get_sblock", function()
    local f = matmul()
    local sch = tir.Schedule(f)
    local b = sch:get(sch:get_block("update"))
    assert.are.equal("update", b.name)
    -- the same block as in the function: root -> loop i -> loop j -> {init, loop k -> update}
    local in_f = f.body.block.body.body.body.seq[2].body.block
    assert.is_true(tir.structural_equal(b, in_f))
  end)

  it("test_tir_schedule_work_on", function()
    -- TVM: a module of several functions needs work_on(name); tirlua schedules one function
    local m = T.ir_module({matmul(), matmul_relu()})
    local ok, e = pcall(tir.Schedule, m)
    assert.is_false(ok)
    assert.are.equal("ValueError", e.kind)
    assert.matches("holds 2 functions", e.message)
  end)

  it("test_tir_schedule_get_loops", function()
    for _, by_name in ipairs({false, true}) do
      local sch = tir.Schedule(matmul())
      local i, j, k = sch:get_loops(by_name and "update" or sch:get_block("update"))
      assert.are.equal("i", sch:get(i).loop_var.name)
      assert.are.equal("j", sch:get(j).loop_var.name)
      assert.are.equal("k", sch:get(k).loop_var.name)
    end
  end)

  it("test_tir_schedule_copy_1", function()
    local s1 = tir.Schedule(matmul())
    local b = s1:get_block("update")
    local i, j, k = s1:get_loops("update")
    local s2 = s1:copy()
    assert.are.equal("update", s2:get(b).name)
    assert.are.equal("i", s2:get(i).loop_var.name)
    assert.are.equal("j", s2:get(j).loop_var.name)
    assert.are.equal("k", s2:get(k).loop_var.name)
  end)

  it("test_tir_schedule_copy_2", function()
    local f = matmul()
    local sch = tir.Schedule(f)
    local i, j = sch:get_loops(sch:get_block("update"))
    local copy = sch:copy()
    local i0, i1 = sch:split(i, {nil, 8})
    local j0, j1 = copy:split(j, {nil, 4})
    assert.are.equal(2, sch:get(i0).extent.value)
    assert.are.equal(8, sch:get(i1).extent.value)
    -- a loop made in one schedule does not exist in the other (TVM: IndexError)
    assert.has_error(function() copy:get(i0) end)
    assert.has_error(function() copy:get(i1) end)
    assert.has_error(function() sch:get(j0) end)
    assert.has_error(function() sch:get(j1) end)
    assert.are.equal(4, copy:get(j0).extent.value)
    assert.are.equal(4, copy:get(j1).extent.value)
    V.check(sch, f)
    V.check(copy, f)
  end)

  it("test_get_child_blocks", function()
    local s = tir.Schedule(matmul())
    local init, update = s:get_block("init"), s:get_block("update")
    local blocks = s:get_child_blocks((s:get_loops(init)))
    assert.are.equal(2, #blocks)
    assert.are.equal(s:get(init), s:get(blocks[1]))
    assert.are.equal(s:get(update), s:get(blocks[2]))
    blocks = s:get_child_blocks(s:get_block("root"))
    assert.are.same({"init", "update"}, names(blocks))
  end)

  it("test_get_producers", function()
    for _, by_name in ipairs({false, true}) do
      local f = matmul_relu()
      local sch = tir.Schedule(f)
      local ps = sch:get_producers(by_name and "relu" or sch:get_block("relu"))
      assert.are.same({"matmul"}, names(ps))
      assert.are.equal(sch:get(sch:get_block("matmul")), sch:get(ps[1]))
      V.check_trace(sch, f)
    end
  end)

  it("test_get_producers_multiple_buffer_depdencies", function()
    local sch = tir.Schedule(tuple_reduction())
    assert.are.same({"data_red_temp"}, names(sch:get_producers("T_add")))
  end)

  it("test_get_consumers", function()
    local f = matmul_relu()
    local sch = tir.Schedule(f)
    local cs = sch:get_consumers(sch:get_block("matmul"))
    assert.are.same({"relu"}, names(cs))
    V.check_trace(sch, f)
  end)

  it("test_get_consumers_multiple_buffer_depdencies", function()
    local sch = tir.Schedule(tuple_reduction())
    assert.are.same({"T_add"}, names(sch:get_consumers("data_red_temp")))
  end)

  -- TVM also annotates with a list holding a string (["aa", 1]) and a dict
  -- ({"arr": [0, 0], "key": 3}): tirlua's annotation values are numbers, booleans, strings,
  -- expressions and lists of numbers/expressions (a deliberate subset; see README.md)
  it("test_annotate_unannotate_loop", function()
    local before = matmul_relu()
    local sch = tir.Schedule(before)
    local matmul = sch:get_block("matmul")
    sch:annotate((sch:get_loops(matmul)), "test1", "aaa")
    sch:annotate((select(2, sch:get_loops(matmul))), "test2", 612)
    sch:annotate((select(2, sch:get_loops(matmul))), "test3", {1, 2})
    sch:annotate((sch:get_loops(matmul)), "test4", {0, 0, 3})
    local expected = matmul_relu({{test1 = "aaa", test4 = {0, 0, 3}}, {test2 = 612, test3 = {1, 2}}})
    V.check(sch, before, expected)
    for _, key in ipairs({"test1", "test4"}) do sch:unannotate((sch:get_loops(matmul)), key) end
    for _, key in ipairs({"test2", "test3"}) do sch:unannotate((select(2, sch:get_loops(matmul))), key) end
    V.check(sch, before, matmul_relu(), {exact = true})
  end)

  it("test_get_output_blocks_single_output", function()
    local sch = tir.Schedule(matmul_relu())
    local outs = sch:get_output_blocks("root")
    assert.are.same({"relu"}, names(outs))
    assert.are.equal(sch:get(sch:get_block("relu")), sch:get(outs[1]))
  end)

  it("test_get_output_blocks_multiple_outputs", function()
    local sch = tir.Schedule(matmul())
    local outs = sch:get_output_blocks("root")
    assert.are.same({"init", "update"}, names(outs))
    assert.are.equal(sch:get(sch:get_block("init")), sch:get(outs[1]))
    assert.are.equal(sch:get(sch:get_block("update")), sch:get(outs[2]))
  end)

  it("test_get_output_blocks_nested", function()
    local f = T.prim_func("main", {A = T.Buffer({N, N}, F32), B = T.Buffer({N, N}, F32)}, function(A, B)
      T.block("blockized_B", function()
        local _ = T.axis.spatial(1, 0)
        local _ = T.axis.spatial(1, 0)
        for i, j in T.grid(N, N) do
          T.block("B", function() local vi, vj = T.axis.remap("SS", {i, j}) B[{vi, vj}] = A[{vi, vj}] * 2.0 end)
        end
      end)
    end)
    local sch = tir.Schedule(f)
    assert.are.same({"blockized_B", "B"}, names(sch:get_output_blocks("root")))
    sch = tir.Schedule(f)
    local outs = sch:get_output_blocks("blockized_B")
    assert.are.same({"B"}, names(outs))
    assert.are.equal(sch:get(sch:get_block("B")), sch:get(outs[1]))
    V.check_trace(sch, f)
  end)

  it("test_annotate_unannotate_block", function()
    local before = matmul_relu()
    local sch = tir.Schedule(before)
    local matmul, relu = sch:get_block("matmul"), sch:get_block("relu")
    sch:annotate(matmul, "test1", "aaa")
    sch:annotate(relu, "test2", 0.22)
    sch:annotate(relu, "test3", {1, 2})
    sch:annotate(matmul, "test4", {0, 0, 3})
    local expected = matmul_relu(nil, {matmul = {test1 = "aaa", test4 = {0, 0, 3}}, relu = {test2 = 0.22, test3 = {1, 2}}})
    V.check(sch, before, expected)
    sch:unannotate(matmul, "test1")
    sch:unannotate(relu, "test2")
    sch:unannotate(relu, "test3")
    sch:unannotate(matmul, "test4")
    V.check(sch, before, matmul_relu(), {exact = true})
  end)
end)
