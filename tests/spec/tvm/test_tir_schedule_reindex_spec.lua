-- Port of TVM tests/python/s_tir/schedule/test_tir_schedule_reindex.py.  128/512 -> 16;
-- conv2d NHWC 224 -> 8 (as in the transform_layout port); the fp16 mixed-dtype matmul 1280
-- -> 16.  Reduction blocks list reads in TVM's order (h1): {"read", 0} of conv2d is PadInput.
local tir = require("tir")
local V = require("tvm.tvm_util")
local T = V.T
local F32 = "float32"
local N = 16

local function transpose_elementwise(reindexed)
  return T.prim_func("main", {A = T.Buffer({N, N}, F32), B = T.Buffer({N, N}, F32)}, function(A, B)
    if reindexed then
      local R = T.alloc_buffer({N, N}, F32, {name = "A_reindex"})
      for i, j in T.grid(N, N) do
        T.block("A_reindex", function() local vi, vj = T.axis.remap("SS", {i, j}) R[{vi, vj}] = A[{vj, vi}] end)
      end
      for i, j in T.grid(N, N) do
        T.block("B", function() local vi, vj = T.axis.remap("SS", {i, j}) B[{vi, vj}] = R[{vi, vj}] * 2.0 end)
      end
    else
      for i, j in T.grid(N, N) do
        T.block("B", function() local vi, vj = T.axis.remap("SS", {i, j}) B[{vi, vj}] = A[{vj, vi}] * 2.0 end)
      end
    end
  end)
end

-- variant: nil, "data" (PadInput reindexed) or "weight"
local function conv2d_nhwc(variant)
  return T.prim_func("main", {Input = T.Buffer({1, 8, 8, 3}, F32), Weight = T.Buffer({3, 3, 3, 4}, F32), Conv = T.Buffer({1, 4, 4, 4}, F32)},
    function(Input, Weight, Conv)
      local Pad = T.alloc_buffer({1, 10, 10, 3}, F32, {name = "PadInput"})
      local RI = variant == "data" and T.alloc_buffer({1, 4, 4, 3, 3, 3}, F32, {name = "PadInput_reindex"})
      local RW = variant == "weight" and T.alloc_buffer({4, 3, 3, 3}, F32, {name = "Weight_reindex"})
      for i0, i1, i2, i3 in T.grid(1, 10, 10, 3) do
        T.block("PadInput", function()
          local a, b, c, d = T.axis.remap("SSSS", {i0, i1, i2, i3})
          Pad[{a, b, c, d}] = T.if_then_else(T.And(T.And(T.ge(b, 1), T.lt(b, 9)), T.And(T.ge(c, 1), T.lt(c, 9))),
            Input[{a, b - 1, c - 1, d}], T.float32(0))
        end)
      end
      if RI then
        for i0, i1, i2, i3, i4, i5 in T.grid(1, 4, 4, 3, 3, 3) do
          T.block("PadInput_reindex", function()
            local n, h, w, rh, rw, rc = T.axis.remap("SSSSSS", {i0, i1, i2, i3, i4, i5})
            RI[{n, h, w, rh, rw, rc}] = Pad[{n, h * 2 + rh, w * 2 + rw, rc}]
          end)
        end
      end
      if RW then
        for a3, a4, a5, a6 in T.grid(4, 3, 3, 3) do
          T.block("Weight_reindex", function()
            local v3, v4, v5, v6 = T.axis.remap("SSSS", {a3, a4, a5, a6})
            RW[{v3, v4, v5, v6}] = Weight[{v4, v5, v6, v3}]
          end)
        end
      end
      for i0, i1, i2, i3, i4, i5, i6 in T.grid(1, 4, 4, 4, 3, 3, 3) do
        T.block("conv2d_nhwc", function()
          local n, h, w, co, rh, rw, rc = T.axis.remap("SSSSRRR", {i0, i1, i2, i3, i4, i5, i6})
          T.init(function() Conv[{n, h, w, co}] = T.float32(0) end)
          local x = RI and RI[{n, h, w, rh, rw, rc}] or Pad[{n, h * 2 + rh, w * 2 + rw, co // 4 * 3 + rc}]
          local y = RW and RW[{co, rh, rw, rc}] or Weight[{rh, rw, rc, co}]
          Conv[{n, h, w, co}] = Conv[{n, h, w, co}] + x * y
        end)
      end
    end)
end

local function matmul(shape_a, shape_b, shape_c, dt, reindexed, extents, names)
  names = names or {"matmul", "C"}
  local p = {A = T.Buffer(shape_a, dt), B = T.Buffer(shape_b, dt), C = T.Buffer(shape_c, dt)}
  return T.prim_func("main", p, function(A, B, C)
    local out = C
    if reindexed then out = T.alloc_buffer(shape_c, dt, {name = "C_reindex"}) end
    for i0, i1, i2 in T.grid(extents[1], extents[2], extents[3]) do
      T.block(names[1], function()
        local i, j, k = T.axis.remap("SSR", {i0, i1, i2})
        T.init(function() out[{i, j}] = T.cast(dt, 0) end)
        out[{i, j}] = out[{i, j}] + A[{i, k}] * B[{k, j}]
      end)
    end
    if reindexed then
      for i0, i1 in T.grid(extents[1], extents[2]) do
        T.block("C_reindex", function() local v0, v1 = T.axis.remap("SS", {i0, i1}) C[{v0, v1}] = out[{v0, v1}] end)
      end
    end
  end)
end

describe("test_tir_schedule_reindex", function()
  it("test_reindex_read_basic", function()
    for _, by_name in ipairs({false, true}) do
      local before = transpose_elementwise()
      local sch = tir.Schedule(before)
      sch:reindex(by_name and "B" or sch:get_block("B"), by_name and "A" or {"read", 0})
      assert.is_true(V.check(sch, before, transpose_elementwise(true), {exact = true}))
    end
  end)

  it("test_conv2d_reindex_weight", function()
    for _, by_name in ipairs({false, true}) do
      local before = conv2d_nhwc()
      local sch = tir.Schedule(before)
      sch:reindex("conv2d_nhwc", by_name and "Weight" or {"read", 1})
      V.check(sch, before, conv2d_nhwc("weight"), {rtol = 1e-5})
    end
  end)

  it("test_conv2d_reindex_data", function()
    for _, by_name in ipairs({false, true}) do
      local before = conv2d_nhwc()
      local sch = tir.Schedule(before)
      sch:reindex(sch:get_block("conv2d_nhwc"), by_name and "PadInput" or {"read", 0})
      -- the reindex buffer is indexed by the iteration variables the access uses: co // 4
      -- is 0 over co < 4, so co drops out (TVM: [1, 112, 112, 7, 7, 3])
      V.check(sch, before, conv2d_nhwc("data"), {rtol = 1e-5})
    end
  end)

  it("test_matmul_reindex_write", function()
    for _, by_name in ipairs({false, true}) do
      local before = matmul({N, N}, {N, N}, {N, N}, F32, false, {N, N, N})
      local sch = tir.Schedule(before)
      sch:reindex("matmul", by_name and "C" or {"write", 0})
      assert.is_true(V.check(sch, before, matmul({N, N}, {N, N}, {N, N}, F32, true, {N, N, N}), {exact = true}))
    end
  end)

  it("test_reindex_fail_multiple_read", function()
    local f = T.prim_func("main", {A = T.Buffer({N, N}, F32), B = T.Buffer({N, N}, F32)}, function(A, B)
      for i, j in T.grid(N, N) do
        T.block("B", function() local vi, vj = T.axis.remap("SS", {i, j}) B[{vi, vj}] = A[{vj, vi}] + A[{vi, vj}] end)
      end
    end)
    for _, buf in ipairs({"A", {"read", 0}}) do
      local sch = tir.Schedule(f)
      V.schedule_error(function() sch:reindex("B", buf) end, "reindex")
    end
  end)

  it("test_reindex_mixed_dtype", function()
    -- an int64 spatial dimension next to int32 ones, fp16 (TVM: (2, 1280) x (1280, 1280))
    local i64 = function(v) return tir.const(v, "int64") end
    local function mixed(reindexed)
      return T.prim_func("main", {p0 = T.Buffer({i64(2), N}, "float16"), p1 = T.Buffer({N, N}, "float16"), out = T.Buffer({i64(2), N}, "float16")},
        function(p0, p1, out)
          local dst = out
          if reindexed then dst = T.alloc_buffer({i64(2), N}, "float16", {name = "out_reindex"}) end
          for i0, i1, i2 in T.grid(i64(2), N, N) do
            T.block("T_matmul_NT", function()
              local i = T.axis.spatial(i64(2), i0)
              local j, k = T.axis.remap("SR", {i1, i2})
              T.init(function() dst[{i, j}] = T.float16(0) end)
              dst[{i, j}] = dst[{i, j}] + p0[{i, k}] * p1[{j, k}]
            end)
          end
          if reindexed then
            for a0, a1 in T.grid(i64(2), N) do
              T.block("out_reindex", function()
                local v0 = T.axis.spatial(i64(2), a0)
                local v1 = T.axis.remap("S", {a1})
                out[{v0, v1}] = dst[{v0, v1}]
              end)
            end
          end
        end)
    end
    for _, by_name in ipairs({false, true}) do
      local before = mixed(false)
      local sch = tir.Schedule(before)
      sch:reindex("T_matmul_NT", by_name and "out" or {"write", 0})
      V.check(sch, before, mixed(true))
    end
  end)

  it("test_matmul_unit_dim_reindex_write", function()
    for _, by_name in ipairs({false, true}) do
      local before = matmul({1, N}, {N, 1}, {1, 1}, F32, false, {1, 1, N})
      local sch = tir.Schedule(before)
      sch:reindex("matmul", by_name and "C" or {"write", 0})
      V.check(sch, before, matmul({1, N}, {N, 1}, {1, 1}, F32, true, {1, 1, N}))
    end
  end)
end)
