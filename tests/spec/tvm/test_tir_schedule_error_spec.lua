-- Port of TVM tests/python/s_tir/schedule/test_tir_schedule_error.py.  TVM has three error
-- render levels; tirlua's errors always carry the detail (kind, primitive, message, the IR
-- with the block or loop marked).
local tir = require("tir")
local V = require("tvm.tvm_util")
local T = V.T
local F32 = "float32"

local function matmul()
  local U = V.U
  return U.matmul(16, 16, 16)
end

describe("test_tir_schedule_error", function()
  it("test_tir_schedule_error_detail", function()
    local sch = tir.Schedule(matmul())
    local e = V.schedule_error(function() sch:get_block("wrong_name") end, "wrong_name")
    assert.are.equal("get_block", e.primitive)
    assert.matches("T.prim_func", tostring(e)) -- the IR comes with it
  end)

  it("test_tir_schedule_error_fast", function()
    local sch = tir.Schedule(matmul())
    local e = V.schedule_error(function() sch:get_block("wrong_name") end)
    assert.matches("no block named 'wrong_name'", e.message)
  end)

  it("test_tir_schedule_error_none", function()
    -- TVM's render level "none" prints "(not rendered)"; tirlua has no render levels: the
    -- message alone is e.message, the rendering tostring(e)
    local sch = tir.Schedule(matmul())
    local e = V.schedule_error(function() sch:get_block("wrong_name") end)
    assert.is_true(#tostring(e) > #e.message)
  end)

  it("test_tir_schedule_attribute_error", function()
    local sch = tir.Schedule(matmul())
    assert.has_error(function() sch:non_existent_field() end)
    assert.is_nil(sch.non_existent_field)
  end)

  it("test_tir_schedule_two_kernels", function()
    -- a function holding already lowered code (launch_thread, let, if) can be scheduled
    local seq = tir.var("seq_len")
    local f = T.prim_func("main", {A = T.Buffer({1, seq * 8}, "int32"), B = T.Buffer({1, seq * 8}, "int32"), seq_len = seq},
      function(A, B, seq_len)
        T.block("exclusive_scan", function()
          T.reads()
          T.writes()
          local s8 = T.let("s8", seq_len * 8)
          T.If(T.eq(s8, 0), function()
            T.launch_thread("blockIdx.x", 1)
          end, function()
            local tx = T.launch_thread("threadIdx.x", 1024)
            local bx = T.launch_thread("blockIdx.x", (s8 + 1023) // 1024)
            local i = T.let("i", bx * 1024 + tx)
            T.If(T.lt(i, s8), function() B[{i // s8, i % s8}] = A[{i // s8, i % s8}] end)
          end)
        end)
      end)
    local sch = tir.Schedule(f)
    assert.are.equal("exclusive_scan", sch:get(sch:get_block("exclusive_scan")).name)
  end)
end)
