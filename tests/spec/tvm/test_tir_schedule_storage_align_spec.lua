-- Port of TVM tests/python/s_tir/schedule/test_tir_schedule_storage_align.py.  128 -> 16.
-- The alignment is recorded, as in TVM, as the writing block's "buffer_dim_align"
-- annotation {{buffer_index, axis, factor, offset}}.
local tir = require("tir")
local V = require("tvm.tvm_util")
local T = V.T
local F32 = "float32"

local function element_wise(anno)
  return T.prim_func("main", {A = T.Buffer({16, 16}, F32), C = T.Buffer({16, 16}, F32)}, function(A, C)
    local B = T.alloc_buffer({16, 16}, F32)
    for i0 in T.serial(16) do
      for ax1 in T.serial(16) do
        T.block("B", function()
          local vi, vj = T.axis.remap("SS", {i0, ax1})
          if anno then T.block_attr({buffer_dim_align = anno}) end
          B[{vi, vj}] = A[{vi, vj}] * T.float32(2)
        end)
      end
      for i1 in T.serial(16) do
        T.block("C", function()
          local vi, vj = T.axis.remap("SS", {i0, i1})
          C[{vi, vj}] = B[{vi, vj}] + T.float32(1)
        end)
      end
    end
  end)
end

local function dim_align(sch)
  local b = sch:get(sch:get_block("B"))
  for i = 1, #b.annotations do
    if b.annotations[i].key == "buffer_dim_align" then return tostring(b.annotations[i].value) end
  end
end

describe("test_tir_schedule_storage_align", function()
  it("test_storage_align", function()
    for _, by_name in ipairs({false, true}) do
      local before = element_wise()
      local s = tir.Schedule(before)
      s:storage_align(by_name and "B" or s:get_block("B"), 0, 0, 16, 15)
      V.check(s, before)
      assert.are.equal("{{0, 0, 16, 15}}", dim_align(s))
    end
  end)

  it("test_storage_align_update", function()
    local before = element_wise()
    local s = tir.Schedule(before)
    local B = s:get_block("B")
    s:storage_align(B, 0, 0, 16, 0)
    s:storage_align(B, 0, 0, 16, 15)
    V.check(s, before)
    assert.are.equal("{{0, 0, 16, 15}}", dim_align(s))
  end)

  it("test_storage_align_invalid_factor1", function()
    local s = tir.Schedule(element_wise())
    V.schedule_error(function() s:storage_align(s:get_block("B"), 0, 0, 0, 15) end, "storage_align", "factor")
  end)

  it("test_storage_align_invalid_factor2", function()
    local s = tir.Schedule(element_wise())
    V.schedule_error(function() s:storage_align(s:get_block("B"), 0, 0, -1, 15) end, "storage_align", "factor")
  end)

  it("test_storage_align_invalid_buffer", function()
    -- C writes the function's output: only allocated buffers can be aligned
    local s = tir.Schedule(element_wise())
    V.schedule_error(function() s:storage_align(s:get_block("C"), 0, 0, 16, 15) end, "storage_align")
  end)

  it("test_storage_align_invalid_buffer_index", function()
    local s = tir.Schedule(element_wise())
    V.schedule_error(function() s:storage_align(s:get_block("B"), 2, 0, 16, 15) end, "storage_align")
  end)

  it("test_storage_align_invalid_axis", function()
    local s = tir.Schedule(element_wise())
    V.schedule_error(function() s:storage_align(s:get_block("B"), 0, 2, 16, 15) end, "storage_align", "axis")
  end)

  it("test_storage_align_invalid_annotation", function()
    local s = tir.Schedule(element_wise({0}))
    V.schedule_error(function() s:storage_align(s:get_block("B"), 0, 2, 16, 15) end, "storage_align")
  end)
end)
