-- Port of TVM tests/python/s_tir/schedule/test_tir_schedule_set_scope.py.  128 -> 16.
local tir = require("tir")
local V = require("tvm.tvm_util")
local T = V.T
local F32 = "float32"
local function awaits(topic, fn) return function() V.awaits(function(m) pending(m) end, topic, fn) end end

local function element_wise(scope, name)
  return T.prim_func("main", {A = T.Buffer({16, 16}, F32), C = T.Buffer({16, 16}, F32)}, function(A, C)
    local B = T.alloc_buffer({16, 16}, F32, {scope = scope, name = name})
    for i, j in T.grid(16, 16) do
      T.block("B", function() local vi, vj = T.axis.remap("SS", {i, j}) B[{vi, vj}] = A[{vi, vj}] * 2.0 end)
    end
    for i, j in T.grid(16, 16) do
      T.block("C", function() local vi, vj = T.axis.remap("SS", {i, j}) C[{vi, vj}] = B[{vi, vj}] + 1.0 end)
    end
  end)
end

local function subregion(scope)
  return T.prim_func("main", {A = T.Buffer({16, 16}, F32), C = T.Buffer({16, 16}, F32)}, function(A, C)
    local B = T.alloc_buffer({16, 16}, F32, {scope = scope})
    for i, j in T.grid(16, 16) do
      T.block("B", function()
        local vi, vj = T.axis.remap("SS", {i, j})
        local B0 = T.match_buffer(B[{vi, vj}], {}, F32, {scope = scope})
        B0[{}] = A[{vi, vj}] * 2.0
      end)
    end
    for i, j in T.grid(16, 16) do
      T.block("C", function()
        local vi, vj = T.axis.remap("SS", {i, j})
        local B1 = T.match_buffer(B[{vi, vj}], {}, F32, {scope = scope})
        C[{vi, vj}] = B1[{}] + 1.0
      end)
    end
  end)
end

local function buffer_of(sch, block)
  return sch:get(sch:get_block(block)).writes[1].buffer
end

describe("test_tir_schedule_set_scope", function()
  it("test_set_scope", function()
    for _, by_name in ipairs({false, true}) do
      local before = element_wise()
      local s = tir.Schedule(before)
      s:set_scope(by_name and "B" or s:get_block("B"), 0, "shared")
      local b = buffer_of(s, "B")
      assert.are.equal("shared", b.scope)
      V.check(s, before)
      -- TVM renames the buffer B_shared; the structure (one shared allocation, both blocks
      -- on it) is the same
      assert.are.equal(b, s:get(s:get_block("C")).reads[1].buffer)
    end
  end)

  it("test_set_scope (the buffer given by name)", function()
    local before = element_wise()
    local s = tir.Schedule(before)
    s:set_scope("B", "B", "shared")
    assert.are.equal("shared", buffer_of(s, "B").scope)
  end)

  it("test_set_scope_fail_on_output_buffer", function()
    local s = tir.Schedule(element_wise())
    V.schedule_error(function() s:set_scope(s:get_block("C"), 0, "shared") end, "set_scope")
    V.schedule_error(function() s:set_scope("C", 0, "shared") end, "set_scope")
  end)

  it("test_set_scope_fail_on_index_out_of_bound", function()
    local s = tir.Schedule(element_wise())
    V.schedule_error(function() s:set_scope(s:get_block("B"), 1, "shared") end, "set_scope")
    V.schedule_error(function() s:set_scope(s:get_block("B"), -1, "shared") end, "set_scope")
  end)

  it("test_set_scope_fail_on_invalid_scope", function()
    local s = tir.Schedule(element_wise())
    V.schedule_error(function() s:set_scope(s:get_block("B"), 0, "test_scope") end, "set_scope", "test_scope")
  end)

  it("test_set_scope_subregion", function()
    local before = subregion()
    local s = tir.Schedule(before)
    s:set_scope(s:get_block("B"), 0, "shared")
    V.check(s, before)
    local blk = s:get(s:get_block("B"))
    assert.are.equal("shared", blk.match_buffers[1].source.buffer.scope)
    assert.are.equal("shared", blk.match_buffers[1].buffer.scope)
    assert.are.equal("shared", s:get(s:get_block("C")).match_buffers[1].buffer.scope)
  end)
end)
