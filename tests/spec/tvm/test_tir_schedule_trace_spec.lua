-- Port of TVM tests/python/s_tir/schedule/test_tir_schedule_trace.py.  TVM's trace is a list
-- of Instruction objects with JSON (de)serialization, decisions and simplification; tirlua's
-- trace is the Lua script of the steps (sch:trace()), replayed by sch:apply_trace.  Ported:
-- the printed form, replay, and annotation strings surviving the round trip.  Not ported
-- (no counterpart): get_decision/append/pop, as_json/apply_json, simplified (dead-step
-- removal), sample_categorical.
local tir = require("tir")
local V = require("tvm.tvm_util")
local T = V.T
local F32 = "float32"

local function elementwise()
  return T.prim_func("main", {A = T.Buffer({16, 16}, F32), C = T.Buffer({16, 16}, F32)}, function(A, C)
    local B = T.alloc_buffer({16, 16}, F32)
    for i, j in T.grid(16, 16) do
      T.block("B", function() local vi, vj = T.axis.remap("SS", {i, j}) B[{vi, vj}] = A[{vi, vj}] * 2.0 end)
    end
    for i, j in T.grid(16, 16) do
      T.block("C", function() local vi, vj = T.axis.remap("SS", {i, j}) C[{vi, vj}] = B[{vi, vj}] + 1.0 end)
    end
  end)
end

local function elementwise_inlined()
  return T.prim_func("main", {A = T.Buffer({16, 16}, F32), C = T.Buffer({16, 16}, F32)}, function(A, C)
    for i, j in T.grid(16, 16) do
      T.block("C", function() local vi, vj = T.axis.remap("SS", {i, j}) C[{vi, vj}] = A[{vi, vj}] * 2.0 + 1.0 end)
    end
  end)
end

describe("test_tir_schedule_trace", function()
  it("test_trace_construct_1", function()
    local sch = tir.Schedule(elementwise())
    sch:get_loops(sch:get_block("B"))
    assert.are.equal('local b0 = sch:get_block("B")\nlocal l1, l2 = sch:get_loops(b0)\n', sch:trace())
  end)

  it("test_trace_apply_to_schedule", function()
    local sch = tir.Schedule(elementwise())
    sch:apply_trace('local b0 = sch:get_block("B")\nsch:compute_inline(b0)\n')
    assert.is_true(tir.structural_equal(elementwise_inlined(), sch.mod))
  end)

  it("test_apply_annotation_from_json", function()
    -- TVM round-trips annotation strings through JSON; here through the trace text
    for _, value in ipairs({"SSRSSR", "", '""', '"', "a\nb", "]]"}) do
      local before = elementwise()
      local sch = tir.Schedule(before)
      sch:annotate(sch:get_block("B"), "meta_schedule.auto_tensorize", value)
      local s2 = tir.Schedule(before)
      s2:apply_trace(sch:trace())
      assert.is_true(tir.structural_equal(sch.mod, s2.mod))
      local b = s2:get(s2:get_block("B"))
      assert.are.equal(value, b.annotations[1].value.value)
    end
  end)
end)
