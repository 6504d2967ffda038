-- Port of TVM tests/python/s_tir/schedule/test_tir_schedule_blockize.py.  128 -> 16 (tiles
-- 8x8 of 16x16 -> 2x2 of 8x8).  TVM names the new block "blockized_B" in its expected
-- functions (its structural equality ignores block names); tirlua's blockize names it
-- "<block>_o", as TVM's blockize does.
local tir = require("tir")
local V = require("tvm.tvm_util")
local T = V.T
local F32 = "float32"
local N = 16
local function awaits(topic, fn) return function() V.awaits(function(m) pending(m) end, topic, fn) end end

local function params() return {A = T.Buffer({N, N}, F32), B = T.Buffer({N, N}, F32)} end

local function single_elementwise()
  return T.prim_func("main", params(), function(A, B)
    for i, j in T.grid(N, N) do
      T.block("B", function() local vi, vj = T.axis.remap("SS", {i, j}) B[{vi, vj}] = A[{vi, vj}] * 2.0 end)
    end
  end)
end

describe("test_tir_schedule_blockize", function()
  it("test_blockize_outer", function()
    local before = single_elementwise()
    local s = tir.Schedule(before)
    local x = s:get_loops(s:get_block("B"))
    s:blockize(x)
    local expected = T.prim_func("main", params(), function(A, B)
      T.block("B_o", function()
        local _ = T.axis.spatial(1, 0)
        local _ = T.axis.spatial(1, 0)
        for i, j in T.grid(N, N) do
          T.block("B", function() local vi, vj = T.axis.remap("SS", {i, j}) B[{vi, vj}] = A[{vi, vj}] * 2.0 end)
        end
      end)
    end)
    V.check(s, before, expected)
  end)

  it("test_blockize_inner", function()
    local before = single_elementwise()
    local s = tir.Schedule(before)
    local _, y = s:get_loops(s:get_block("B"))
    s:blockize(y)
    local expected = T.prim_func("main", params(), function(A, B)
      for i in T.serial(N) do
        T.block("B_o", function()
          local vi = T.axis.spatial(N, i)
          local _ = T.axis.spatial(1, 0)
          for j in T.serial(N) do
            T.block("B", function() local vj = T.axis.remap("S", {j}) B[{vi, vj}] = A[{vi, vj}] * 2.0 end)
          end
        end)
      end
    end)
    V.check(s, before, expected)
  end)

  local function b_o(A, B, i, j)
    T.block("B_o", function()
      local vi, vj = T.axis.remap("SS", {i, j})
      for i1, j1 in T.grid(8, 8) do
        T.block("B", function()
          local vii, vji = T.axis.remap("SS", {i1, j1})
          B[{vi * 8 + vii, vj * 8 + vji}] = A[{vi * 8 + vii, vj * 8 + vji}] * 2.0
        end)
      end
    end)
  end
  local function c_o(B, C, i, j)
    T.block("C_o", function()
      local vi, vj = T.axis.remap("SS", {i, j})
      for i1, j1 in T.grid(8, 8) do
        T.block("C", function()
          local vii, vji = T.axis.remap("SS", {i1, j1})
          C[{vi * 8 + vii, vj * 8 + vji}] = B[{vi * 8 + vii, vj * 8 + vji}] + 1.0
        end)
      end
    end)
  end
  local function two_params() return {A = T.Buffer({N, N}, F32), C = T.Buffer({N, N}, F32)} end

  it("test_two_elementwise_blockize_reverse_compute_at", function()
    local before = T.prim_func("main", two_params(), function(A, C)
      local B = T.alloc_buffer({N, N}, F32)
      for i, j in T.grid(2, 2) do
        b_o(A, B, i, j)
        for ax0, ax1 in T.grid(8, 8) do
          T.block("C", function()
            local vi = T.axis.spatial(N, i * 8 + ax0)
            local vj = T.axis.spatial(N, j * 8 + ax1)
            C[{vi, vj}] = B[{vi, vj}] + 1.0
          end)
        end
      end
    end)
    local expected = T.prim_func("main", two_params(), function(A, C)
      local B = T.alloc_buffer({N, N}, F32)
      for i, j in T.grid(2, 2) do
        b_o(A, B, i, j)
        c_o(B, C, i, j)
      end
    end)
    local s = tir.Schedule(before)
    local x = select(3, s:get_loops(s:get_block("C")))
    s:blockize(x)
    V.check(s, before, expected)
  end)

  it("test_two_elementwise_blockize_compute_at", function()
    local before = T.prim_func("main", two_params(), function(A, C)
      local B = T.alloc_buffer({N, N}, F32)
      for i, j in T.grid(2, 2) do
        for ax0, ax1 in T.grid(8, 8) do
          T.block("B", function()
            local vi = T.axis.spatial(N, i * 8 + ax0)
            local vj = T.axis.spatial(N, j * 8 + ax1)
            B[{vi, vj}] = A[{vi, vj}] * 2.0
          end)
        end
        c_o(B, C, i, j)
      end
    end)
    local expected = T.prim_func("main", two_params(), function(A, C)
      local B = T.alloc_buffer({N, N}, F32)
      for i, j in T.grid(2, 2) do
        b_o(A, B, i, j)
        c_o(B, C, i, j)
      end
    end)
    local s = tir.Schedule(before)
    local x = select(3, s:get_loops(s:get_block("B")))
    s:blockize(x)
    V.check(s, before, expected)
  end)

  it("test_blockize_init_loops", function()
    local p = {A = T.Buffer({N, N}, F32), B = T.Buffer({N}, F32)}
    local before = T.prim_func("main", p, function(A, B)
      for k, i in T.grid(N, N) do
        T.block("B", function()
          local vk, vi = T.axis.remap("RS", {k, i})
          T.init(function() B[{vi}] = T.float32(0) end)
          B[{vi}] = B[{vi}] + A[{vi, vk}]
        end)
      end
    end)
    local expected = T.prim_func("main", p, function(A, B)
      T.block("B_o", function()
        local _ = T.axis.reduce(1, 0)
        local _ = T.axis.spatial(1, 0)
        T.init(function()
          for i1 in T.serial(N) do
            T.block("B_init", function() local vi = T.axis.spatial(N, i1) B[{vi}] = T.float32(0) end)
          end
        end)
        for i0, i1 in T.grid(N, N) do
          T.block("B", function()
            local vk, vi = T.axis.remap("RS", {i0, i1})
            B[{vi}] = B[{vi}] + A[{vi, vk}]
          end)
        end
      end)
    end)
    local s = tir.Schedule(before)
    local k = s:get_loops(s:get_block("B"))
    s:blockize(k)
    V.check(s, before, expected)
  end)

  it("test_blockize_outer_int64_shape", function()
    local i64 = function(v) return tir.const(v, "int64") end
    local p = function() return {A = T.Buffer({i64(16), i64(32)}, F32), B = T.Buffer({i64(16), i64(32)}, F32)} end
    local before = T.prim_func("main", p(), function(A, B)
      for i0, j0, i1, j1 in T.grid(i64(1), i64(2), i64(16), i64(16)) do
        T.block("B", function()
          local vi = T.axis.spatial(i64(16), i0 * i64(16) + i1)
          local vj = T.axis.spatial(i64(32), j0 * i64(16) + j1)
          B[{vi, vj}] = A[{vi, vj}] + 1.0
        end)
      end
    end)
    for _, preserve in ipairs({true, false}) do
      local expected = T.prim_func("main", p(), function(A, B)
        for i0, j0 in T.grid(i64(1), i64(2)) do
          T.block("B_o", function()
            local _ = T.axis.spatial(i64(1), preserve and i0 or i64(0))
            local vjo = T.axis.spatial(i64(2), j0)
            for i1, j1 in T.grid(i64(16), i64(16)) do
              T.block("B", function()
                local vii, vji = T.axis.remap("SS", {i1, j1})
                B[{vii, vjo * i64(16) + vji}] = A[{vii, vjo * i64(16) + vji}] + T.float32(1)
              end)
            end
          end)
        end
      end)
      local s = tir.Schedule(before)
      local i1 = select(3, s:get_loops(s:get_block("B")))
      s:blockize(i1, preserve)
      V.check(s, before, expected)
    end
  end)

  it("test_blockize_blocks", function()
    local before = T.prim_func("main", params(), function(A, B)
      for _ in T.serial(6) do
        for i, j in T.grid(3, 1) do
          T.block("B", function() local vi, vj = T.axis.remap("SS", {i, j}) B[{vi, vj}] = A[{vi, vj}] * 2.0 end)
        end
        for i, j in T.grid(N, 8) do
          T.block("C", function() local vi, vj = T.axis.remap("SS", {i, j}) B[{vi, vj + 8}] = A[{vi, vj + 8}] * 3.0 end)
        end
      end
    end)
    local s = tir.Schedule(before)
    local out = s:blockize({s:get_block("B"), s:get_block("C")}, false)
    assert.is_not_nil(out)
    V.check(s, before)
  end)
end)
