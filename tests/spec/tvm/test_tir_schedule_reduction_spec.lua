-- Port of TVM tests/python/s_tir/schedule/test_tir_schedule_reduction.py
-- (decompose_reduction).  Sizes 128 -> 16 (split factors {16, 8} -> {2, 8}, {19, 7} -> {3, 7}:
-- the second still does not divide).  TVM's structural equality ignores block names (its
-- expected functions name the parts "init"/"update" or "update_init"/"update_update"); the
-- ports check tirlua's names: <block>_init and <block>_update, as TVM produces.
local tir = require("tir")
local V = require("tvm.tvm_util")
local T = V.T
local F32 = "float32"
local N = 16

local function mm_params() return {A = T.Buffer({N, N}, F32), B = T.Buffer({N, N}, F32), C = T.Buffer({N, N}, F32)} end

local function matmul(order, anno)
  return T.prim_func("main", mm_params(), function(A, B, C)
    local function body(i, j, k)
      T.block("update", function()
        if anno then T.block_attr(anno) end
        local vi, vj, vk = T.axis.remap("SSR", {i, j, k})
        T.init(function() C[{vi, vj}] = T.float32(0) end)
        C[{vi, vj}] = C[{vi, vj}] + A[{vi, vk}] * B[{vj, vk}]
      end)
    end
    if order == "ikj" then
      for i, k, j in T.grid(N, N, N) do body(i, j, k) end
    else
      for i, j, k in T.grid(N, N, N) do body(i, j, k) end
    end
  end)
end

local function init_block(C, i, j, anno)
  T.block("update_init", function()
    if anno then T.block_attr(anno) end
    local vi = T.axis.spatial(N, i)
    local vj = T.axis.spatial(N, j)
    C[{vi, vj}] = T.float32(0)
  end)
end

local function update_block(A, B, C, i, j, k, anno, pred)
  T.block("update_update", function()
    if anno then T.block_attr(anno) end
    if pred then T.where(pred) end
    local vi = T.axis.spatial(N, i)
    local vj = T.axis.spatial(N, j)
    local vk = T.axis.reduce(N, k)
    C[{vi, vj}] = C[{vi, vj}] + A[{vi, vk}] * B[{vj, vk}]
  end)
end

describe("test_tir_schedule_reduction", function()
  it("test_reduction_decompose0", function()
    local expected = T.prim_func("main", mm_params(), function(A, B, C)
      for i, j in T.grid(N, N) do init_block(C, i, j) end
      for i, j, k in T.grid(N, N, N) do update_block(A, B, C, i, j, k) end
    end)
    for _, by_name in ipairs({false, true}) do
      local before = matmul()
      local s = tir.Schedule(before)
      local C = by_name and "update" or s:get_block("update")
      local i = s:get_loops(C)
      s:decompose_reduction(C, i)
      V.check(s, before, expected)
    end
  end)

  it("test_reduction_decompose1", function()
    -- B (8, 4), A (8, 4, 16); the reduction blockized by 8 (TVM: 32, 4, 128 by 8)
    local params = {A = T.Buffer({8, 4, 16}, F32), B = T.Buffer({8, 4}, F32)}
    local function inner(A, B, io, ko)
      for i1, i2 in T.grid(4, 8) do
        T.block("B", function()
          local ii = T.axis.spatial(4, i1)
          local k = T.axis.reduce(16, ko * 8 + i2)
          B[{io, ii}] = B[{io, ii}] + A[{io, ii, k}]
        end)
      end
    end
    local function init(B, io)
      for i1 in T.serial(4) do
        T.block("B_init", function()
          local ii = T.axis.spatial(4, i1)
          B[{io, ii}] = T.float32(0)
        end)
      end
    end
    local before = T.prim_func("main", params, function(A, B)
      for i0, i2o in T.grid(8, 2) do
        T.block("blockized_B", function()
          local io, ko = T.axis.remap("SR", {i0, i2o})
          T.init(function() init(B, io) end)
          inner(A, B, io, ko)
        end)
      end
    end)
    local expected = T.prim_func("main", params, function(A, B)
      for i0 in T.serial(8) do
        T.block("blockized_B_init", function()
          local io = T.axis.spatial(8, i0)
          init(B, io)
        end)
      end
      for i0, i2o in T.grid(8, 2) do
        T.block("blockized_B_update", function()
          local io, ko = T.axis.remap("SR", {i0, i2o})
          inner(A, B, io, ko)
        end)
      end
    end)
    local s = tir.Schedule(before)
    local b = s:get_block("blockized_B")
    local io = s:get_loops(b)
    s:decompose_reduction(b, io)
    V.check(s, before, expected)
  end)

  it("test_reduction_decompose2", function()
    local before = matmul()
    local s = tir.Schedule(before)
    local C = s:get_block("update")
    local _, _, k = s:get_loops(C)
    s:decompose_reduction(C, k)
    local expected = T.prim_func("main", mm_params(), function(A, B, C)
      for i0, i1 in T.grid(N, N) do
        init_block(C, i0, i1)
        for i2 in T.serial(N) do update_block(A, B, C, i0, i1, i2) end
      end
    end)
    assert.is_true(V.check(s, before, expected, {exact = true}))
  end)

  it("test_reduction_decompose3", function()
    -- loops i, k, j: TVM's test names them i, j, k and passes the innermost (j), below the
    -- reduction loop k
    local s = tir.Schedule(matmul("ikj"))
    local C = s:get_block("update")
    local _, _, k = s:get_loops(C)
    V.schedule_error(function() s:decompose_reduction(C, k) end, "decompose_reduction")
  end)

  it("test_reduction_decompose4", function()
    local before = matmul()
    local s = tir.Schedule(before)
    local C = s:get_block("update")
    local i, _, k = s:get_loops(C)
    local _, ii = s:split(i, {2, 8})
    s:split(k, {3, 7})
    s:decompose_reduction(C, ii)
    local expected = T.prim_func("main", mm_params(), function(A, B, C)
      for i0 in T.serial(2) do
        for i1, j in T.grid(8, N) do init_block(C, i0 * 8 + i1, j) end
        for i1, j, k0, k1 in T.grid(8, N, 3, 7) do
          update_block(A, B, C, i0 * 8 + i1, j, k0 * 7 + k1, nil, T.lt(k0 * 7 + k1, N))
        end
      end
    end)
    V.check(s, before, expected)
  end)

  it("test_reduction_decompose_with_annotation", function()
    local anno = {test_annotation = 1}
    local before = matmul(nil, anno)
    local s = tir.Schedule(before)
    local C = s:get_block("update")
    s:decompose_reduction(C, (s:get_loops(C)))
    local expected = T.prim_func("main", mm_params(), function(A, B, C)
      for i, j in T.grid(N, N) do init_block(C, i, j, anno) end
      for i, j, k in T.grid(N, N, N) do update_block(A, B, C, i, j, k, anno) end
    end)
    V.check(s, before, expected)
  end)

  it("test_reduction_decompose_with_different_for_kind", function()
    local before = T.prim_func("main", {A = T.Buffer({N, 8}, F32), B = T.Buffer({8}, F32)}, function(A, B)
      for k in T.serial(N) do
        for i in T.vectorized(8) do
          T.block("B", function()
            local vk, vi = T.axis.remap("RS", {k, i})
            T.init(function() B[{vi}] = T.float32(0) end)
            B[{vi}] = B[{vi}] + A[{vk, vi}]
          end)
        end
      end
    end)
    local expected = T.prim_func("main", {A = T.Buffer({N, 8}, F32), B = T.Buffer({8}, F32)}, function(A, B)
      for i in T.vectorized(8) do
        T.block("B_init", function() local vi = T.axis.spatial(8, i) B[{vi}] = T.float32(0) end)
      end
      for k in T.serial(N) do
        for i in T.vectorized(8) do
          T.block("B_update", function()
            local vk, vi = T.axis.remap("RS", {k, i})
            B[{vi}] = B[{vi}] + A[{vk, vi}]
          end)
        end
      end
    end)
    local s = tir.Schedule(before)
    local B = s:get_block("B")
    local k = s:get_loops(B)
    local B_init = s:decompose_reduction(B, k)
    V.check(s, before, expected)
    assert.are.equal(s:get(B), s:get(s:get_block("B_update")))
    assert.are.equal(s:get(B_init), s:get(s:get_block("B_init")))
  end)

  it("test_decompose_reduction_ref_hash_check", function()
    local f = matmul()
    local text = tostring(f)
    local s = tir.Schedule(f)
    local C = s:get_block("update")
    local _, _, k = s:get_loops(C)
    s:decompose_reduction(C, k)
    -- the function the schedule started from is unchanged (nodes are immutable)
    assert.are.equal(text, tostring(f))
    assert.is_true(tir.structural_equal(f, matmul()))
  end)

  it("test_decompose_reduction_nested_block", function()
    local params = {A = T.Buffer({1, 16}, F32), B = T.Buffer({1}, F32)}
    local function outer_body(A, B, vi, vko)
      local C = T.alloc_buffer({8}, F32)
      for ki in T.serial(8) do
        T.block("inner_1", function() local vki = T.axis.spatial(8, ki) C[{vki}] = A[{vi, vko * 8 + vki}] end)
      end
      for ki in T.serial(8) do
        T.block("inner_2", function() local vki = T.axis.reduce(8, ki) B[{vi}] = B[{vi}] + C[{vki}] end)
      end
    end
    local before = T.prim_func("main", params, function(A, B)
      for i, ko in T.grid(1, 2) do
        T.block("outer", function()
          local vi, vko = T.axis.remap("SR", {i, ko})
          T.init(function() B[{vi}] = T.float32(0) end)
          outer_body(A, B, vi, vko)
        end)
      end
    end)
    local expected = T.prim_func("main", params, function(A, B)
      for i in T.serial(1) do
        T.block("outer_init", function() local vi = T.axis.spatial(1, i) B[{vi}] = T.float32(0) end)
        for ko in T.serial(2) do
          T.block("outer_update", function()
            local vi, vko = T.axis.remap("SR", {i, ko})
            T.reads(B[{vi}], A[{vi, {vko * 8, vko * 8 + 8}}]) -- as TVM's expected: B first
            T.writes(B[{vi}])
            outer_body(A, B, vi, vko)
          end)
        end
      end
    end)
    local s = tir.Schedule(before)
    local outer = s:get_block("outer")
    local _, ko = s:get_loops(outer)
    s:decompose_reduction(outer, ko)
    V.check(s, before, expected)
  end)

  it("test_decompose_reduction_with_thread_binding", function()
    local params = {A = T.Buffer({32, 16}, F32), B = T.Buffer({32}, F32)}
    local before = T.prim_func("main", params, function(A, B)
      for t in T.thread_binding(32, "threadIdx.x") do
        for r in T.serial(16) do
          T.block("B", function()
            local vi, vr = T.axis.remap("SR", {t, r})
            T.init(function() B[{vi}] = T.float32(0) end)
            B[{vi}] = B[{vi}] + A[{vi, vr}]
          end)
        end
      end
    end)
    local expected = T.prim_func("main", params, function(A, B)
      for t in T.thread_binding(32, "threadIdx.x") do
        T.block("B_init", function() local vi = T.axis.remap("S", {t}) B[{vi}] = T.float32(0) end)
      end
      for t in T.thread_binding(32, "threadIdx.x") do
        for r in T.serial(16) do
          T.block("B_update", function()
            local vi, vr = T.axis.remap("SR", {t, r})
            B[{vi}] = B[{vi}] + A[{vi, vr}]
          end)
        end
      end
    end)
    local s = tir.Schedule(before)
    local t = s:get_loops(s:get_block("B"))
    s:decompose_reduction("B", t)
    V.check(s, before, expected)
  end)
end)
