-- Port of TVM tests/python/s_tir/schedule/test_tir_schedule_compute_inline.py
-- (compute_inline and reverse_compute_inline).  Shapes scaled down (128 -> 16; the affine
-- loads' 4-D outputs accordingly).  TVM runs most cases with the block as a handle and by
-- name: the ports alternate.  Not ported: the Conv2dInt8 tensor-core module (a meta-schedule
-- dump), the tvm_access_ptr cases (no such builtin), the symbolic softmax/layer-norm modules
-- (ported at fixed sizes below as far as the primitives go).
local tir = require("tir")
local V = require("tvm.tvm_util")
local T = V.T

local OPEN_OVER = "reverse_compute_inline of an affine load over a smaller domain than the producer's (open)"
local function awaits(topic, fn) return function() V.awaits(function(m) pending(m) end, topic, fn) end end
local F32 = "float32"
local N = 16

-- a 2-D elementwise block over n x m
local function ew(name, n, m, body, loops)
  for i, j in T.grid(n, m) do
    T.block(name, function()
      local vi, vj = T.axis.remap("SS", {i, j})
      body(vi, vj, i, j)
    end)
  end
end

local function elementwise()
  return T.prim_func("main", {A = T.Buffer({N, N}, F32), C = T.Buffer({N, N}, F32)}, function(A, C)
    local B = T.alloc_buffer({N, N}, F32)
    ew("B", N, N, function(vi, vj) B[{vi, vj}] = A[{vi, vj}] * 2.0 end)
    ew("C", N, N, function(vi, vj) C[{vi, vj}] = B[{vi, vj}] + 1.0 end)
  end)
end

local function elementwise_inlined(name)
  return T.prim_func("main", {A = T.Buffer({N, N}, F32), C = T.Buffer({N, N}, F32)}, function(A, C)
    ew(name or "C", N, N, function(vi, vj) C[{vi, vj}] = A[{vi, vj}] * 2.0 + 1.0 end)
  end)
end

local function elementwise_under_loop()
  return T.prim_func("main", {A = T.Buffer({N, N}, F32), C = T.Buffer({N, N}, F32)}, function(A, C)
    local B = T.alloc_buffer({N, N}, F32)
    for i in T.serial(N) do
      for j in T.serial(N) do
        T.block("B", function() local vi, vj = T.axis.remap("SS", {i, j}) B[{vi, vj}] = A[{vi, vj}] * 2.0 end)
      end
      for j in T.serial(N) do
        T.block("C", function() local vi, vj = T.axis.remap("SS", {i, j}) C[{vi, vj}] = B[{vi, vj}] + 1.0 end)
      end
    end
  end)
end

local function elementwise_standalone(dce)
  return T.prim_func("main", {A = T.Buffer({N, N}, F32), C = T.Buffer({N, N}, F32)}, function(A, C)
    if not dce then
      local B = T.alloc_buffer({N, N}, F32)
      ew("B", N, N, function(vi, vj) B[{vi, vj}] = A[{vi, vj}] * 2.0 end)
    end
    ew("C", N, N, function(vi, vj) C[{vi, vj}] = A[{vi, vj}] + 1.0 end)
  end)
end

local function multi_producer_consumer(inlined)
  return T.prim_func("main", {A = T.Buffer({N, N}, F32), C = T.Buffer({N, N}, F32), D = T.Buffer({N, N}, F32)}, function(A, C, D)
    if not inlined then
      local B = T.alloc_buffer({N, N}, F32)
      ew("B", N, N, function(vi, vj) B[{vi, vj}] = A[{vi, vj}] * 2.0 end)
      ew("C", N, N, function(vi, vj) C[{vi, vj}] = B[{vi, vj}] + 1.0 end)
      ew("D", N, N, function(vi, vj) D[{vi, vj}] = B[{vi, vj}] + 2.0 + C[{vi, vj}] end)
    else
      ew("C", N, N, function(vi, vj) C[{vi, vj}] = A[{vi, vj}] * 2.0 + 1.0 end)
      ew("D", N, N, function(vi, vj) D[{vi, vj}] = A[{vi, vj}] * 2.0 + 2.0 + C[{vi, vj}] end)
    end
  end)
end

local function fail_multi_reader_writer()
  return T.prim_func("main", {A = T.Buffer({N, N}, F32), D = T.Buffer({N, N}, F32)}, function(A, D)
    local B = T.alloc_buffer({N, N}, F32)
    local C = T.alloc_buffer({N, N}, F32)
    ew("B", N, N, function(vi, vj)
      B[{vi, vj}] = A[{vi, vj}] * 2.0
      C[{vi, vj}] = A[{vi, vj}] + 2.0
    end)
    ew("C", N, N, function(vi, vj) D[{vi, vj}] = B[{vi, vj}] + C[{vi, vj}] end)
  end)
end

-- producer B = A * 2 over 16x16, then consumer(B, Out) with the output parameter named C or D
local function with_producer(params, consumer)
  local function prod(A, Out)
    local B = T.alloc_buffer({N, N}, F32)
    ew("B", N, N, function(vi, vj) B[{vi, vj}] = A[{vi, vj}] * 2.0 end)
    consumer(B, Out)
  end
  if params.C then return T.prim_func("main", params, function(A, C) prod(A, C) end) end
  return T.prim_func("main", params, function(A, D) prod(A, D) end)
end

local function check_inline(before, expected, prim, block, opts)
  local sch = tir.Schedule(before)
  sch[prim](sch, block)
  V.check(sch, before, expected, opts)
  return sch
end

describe("test_tir_schedule_compute_inline", function()
  it("test_compute_inline_elementwise", function()
    for _, by_name in ipairs({false, true}) do
      local before = elementwise()
      local sch = tir.Schedule(before)
      local block_c = sch:get_block("C")
      sch:compute_inline(by_name and "B" or sch:get_block("B"))
      V.check(sch, before, elementwise_inlined())
      assert.are.equal("C", sch:get(block_c).name)
    end
  end)

  it("test_compute_inline_under_loop", function()
    local before = elementwise_under_loop()
    local sch = tir.Schedule(before)
    local block_c = sch:get_block("C")
    sch:compute_inline("B")
    -- TVM's expected is elementwise_inlined with one T.grid: the same two loops
    V.check(sch, before, elementwise_inlined())
    assert.are.equal("C", sch:get(block_c).name)
  end)

  it("test_compute_inline_as_dce", function()
    local before = elementwise_standalone()
    local sch = tir.Schedule(before)
    local block_c = sch:get_block("C")
    sch:compute_inline(sch:get_block("B"))
    V.check(sch, before, elementwise_standalone(true))
    assert.are.equal("C", sch:get(block_c).name)
  end)

  it("test_compute_inline_multi_consumer", function()
    local before = multi_producer_consumer()
    local sch = tir.Schedule(before)
    local c, d = sch:get_block("C"), sch:get_block("D")
    sch:compute_inline("B")
    V.check(sch, before, multi_producer_consumer(true))
    assert.are.equal("C", sch:get(c).name)
    assert.are.equal("D", sch:get(d).name)
  end)

  it("test_compute_inline_fail_multi_writer", function()
    local sch = tir.Schedule(fail_multi_reader_writer())
    V.schedule_error(function() sch:compute_inline("B") end, "compute_inline")
  end)

  it("test_reverse_compute_inline_elementwise", function()
    local before = elementwise()
    local sch = tir.Schedule(before)
    local block_b = sch:get_block("B")
    sch:reverse_compute_inline(sch:get_block("C"))
    -- the producer keeps its block (named B), as TVM
    V.check(sch, before, elementwise_inlined("B"))
    assert.are.equal("B", sch:get(block_b).name)
  end)

  it("test_reverse_compute_inline_under_loop", function()
    local before = elementwise_under_loop()
    local sch = tir.Schedule(before)
    local block_b = sch:get_block("B")
    sch:reverse_compute_inline("C")
    V.check(sch, before, elementwise_inlined("B"))
    assert.are.equal("B", sch:get(block_b).name)
  end)

  it("test_reverse_compute_inline_fail_as_dce", function()
    local sch = tir.Schedule(elementwise_standalone())
    V.schedule_error(function() sch:reverse_compute_inline("B") end, "reverse_compute_inline")
  end)

  it("test_reverse_compute_inline_fail_multi_producer", function()
    local sch = tir.Schedule(multi_producer_consumer())
    V.schedule_error(function() sch:reverse_compute_inline(sch:get_block("D")) end, "reverse_compute_inline")
  end)

  it("test_reverse_compute_inline_fail_multi_reader", function()
    local sch = tir.Schedule(fail_multi_reader_writer())
    V.schedule_error(function() sch:reverse_compute_inline("C") end, "reverse_compute_inline")
  end)

  it("test_reverse_compute_multi_reverse_loads", function()
    local p = {A = T.Buffer({N, N}, F32), C = T.Buffer({N, N}, F32)}
    local before = with_producer(p, function(B, C)
      ew("C", N, N, function(vi, vj) C[{vi, vj}] = (B[{vi, vj}] + 1.0) * (B[{vi, vj}] * 2.0) + 3.0 end)
    end)
    local expected = T.prim_func("main", {A = T.Buffer({N, N}, F32), C = T.Buffer({N, N}, F32)}, function(A, C)
      ew("B", N, N, function(vi, vj) C[{vi, vj}] = (A[{vi, vj}] * 2.0 + 1.0) * (A[{vi, vj}] * 2.0 * 2.0) + 3.0 end)
    end)
    check_inline(before, expected, "reverse_compute_inline", "C")
  end)

  it("test_reverse_compute_inline_affine_load", function()
    -- C (2, 4, 4, 8) reads B at the row-major position of its index (TVM: (8, 32, 8, 8))
    local p = {A = T.Buffer({N, N}, F32), C = T.Buffer({2, 4, 4, 8}, F32)}
    local before = with_producer(p, function(B, C)
      for i, j, k, l in T.grid(2, 4, 4, 8) do
        T.block("C", function()
          local vi, vj, vk, vl = T.axis.remap("SSSS", {i, j, k, l})
          C[{vi, vj, vk, vl}] = B[{(((vi * 4 + vj) * 4 + vk) * 8 + vl) // 16, (((vi * 4 + vj) * 4 + vk) * 8 + vl) % 16}]
        end)
      end
    end)
    local expected = T.prim_func("main", p, function(A, C)
      ew("B", N, N, function(vi, vj)
        C[{(vj + vi * 16) // 128, (vj + vi * 16) // 32 % 4, (vj + vi * 16) // 8 % 4, (vj + vi * 16) % 8}] = A[{vi, vj}] * 2.0
      end)
    end)
    check_inline(before, expected, "reverse_compute_inline", "C")
  end)

  it("test_reverse_compute_inline_multi_affine_load", function()
    local p = {A = T.Buffer({N, N}, F32), C = T.Buffer({2, 8, N}, F32)}
    local before = with_producer(p, function(B, C)
      for i, j, k in T.grid(2, 8, N) do
        T.block("C", function()
          local vi, vj, vk = T.axis.remap("SSS", {i, j, k})
          C[{vi, vj, vk}] = B[{vi * 8 + vj, vk}] + B[{vi * 8 + vj, vk}]
        end)
      end
    end)
    local expected = T.prim_func("main", p, function(A, C)
      ew("B", N, N, function(vi, vj) C[{vi // 8, vi % 8, vj}] = A[{vi, vj}] * 2.0 + A[{vi, vj}] * 2.0 end)
    end)
    check_inline(before, expected, "reverse_compute_inline", "C")
  end)

  local function unit_iter_expected()
    return T.prim_func("main", {A = T.Buffer({N, N}, F32), B = T.Buffer({2, 8, 1}, F32), D = T.Buffer({1, 2, 8, N}, F32)}, function(A, B, D)
      ew("B", N, N, function(vi, vj) D[{0, vi // 8, vi % 8, vj}] = A[{vi, vj}] * 2.0 + B[{vi // 8, vi % 8, 0}] end)
    end)
  end

  it("test_reverse_compute_inline_affine_load_unit_iter", function()
    local before = T.prim_func("main", {A = T.Buffer({N, N}, F32), B = T.Buffer({2, 8, 1}, F32), D = T.Buffer({1, 2, 8, N}, F32)}, function(A, B, D)
      local C = T.alloc_buffer({N, N}, F32)
      ew("B", N, N, function(vi, vj) C[{vi, vj}] = A[{vi, vj}] * 2.0 end)
      for i, j, k, l in T.grid(1, 2, 8, N) do
        T.block("C", function()
          local vi, vj, vk, vl = T.axis.remap("SSSS", {i, j, k, l})
          D[{vi, vj, vk, vl}] = C[{vj * 8 + vk, vl}] + B[{vj, vk, vi}]
        end)
      end
    end)
    check_inline(before, unit_iter_expected(), "reverse_compute_inline", "C")
  end)

  it("test_reverse_compute_inline_affine_load_unit_iter_simplified", function()
    local before = T.prim_func("main", {A = T.Buffer({N, N}, F32), B = T.Buffer({2, 8, 1}, F32), D = T.Buffer({1, 2, 8, N}, F32)}, function(A, B, D)
      local C = T.alloc_buffer({N, N}, F32)
      ew("B", N, N, function(vi, vj) C[{vi, vj}] = A[{vi, vj}] * 2.0 end)
      for i, j, k in T.grid(2, 8, N) do
        T.block("C", function()
          local vi, vj, vk = T.axis.remap("SSS", {i, j, k})
          D[{0, vi, vj, vk}] = C[{vi * 8 + vj, vk}] + B[{vi, vj, 0}]
        end)
      end
    end)
    check_inline(before, unit_iter_expected(), "reverse_compute_inline", "C")
  end)

  -- TVM runs it in both orders (reverse_order True / False)
  local function affine_chain(order)
    local before = T.prim_func("main", {A = T.Buffer({N, N}, F32), D = T.Buffer({1, 2, 8, N}, F32)}, function(A, D)
      local B = T.alloc_buffer({N, N}, F32)
      local C = T.alloc_buffer({2, 8, N}, F32)
      ew("B", N, N, function(vi, vj) B[{vi, vj}] = A[{vi, vj}] * 2.0 end)
      for i, j, k in T.grid(2, 8, N) do
        T.block("C", function()
          local vi, vj, vk = T.axis.remap("SSS", {i, j, k})
          C[{vi, vj, vk}] = B[{vi * 8 + vj, vk}] + 1.0
        end)
      end
      for i, j, k, l in T.grid(1, 2, 8, N) do
        T.block("D", function()
          local vi, vj, vk, vl = T.axis.remap("SSSS", {i, j, k, l})
          D[{vi, vj, vk, vl}] = C[{vj, vk, vl}]
        end)
      end
    end)
    local expected = T.prim_func("main", {A = T.Buffer({N, N}, F32), D = T.Buffer({1, 2, 8, N}, F32)}, function(A, D)
      ew("B", N, N, function(vi, vj) D[{0, vi // 8, vi % 8, vj}] = A[{vi, vj}] * 2.0 + 1.0 end)
    end)
    local sch = tir.Schedule(before)
    for _, name in ipairs(order) do sch:reverse_compute_inline(name) end
    V.check(sch, before, expected)
  end

  it("test_reverse_compute_inline_affine_chain", function() affine_chain({"D", "C"}) end)

  -- after C is inlined first, B stores C[vi // 8, vi % 8, vj]: a producer storing at an affine
  -- map of its iteration variables
  it("test_reverse_compute_inline_affine_chain (C first, then D)", function() affine_chain({"C", "D"}) end)

  it("test_reverse_compute_fail_non_affine_load", function()
    local before = with_producer({A = T.Buffer({N, N}, F32), C = T.Buffer({2, 8, N}, F32)}, function(B, C)
      for i, j, k in T.grid(2, 8, N) do
        T.block("C", function()
          local vi, vj, vk = T.axis.remap("SSS", {i, j, k})
          C[{vi, vj, vk}] = B[{vi * 8 + vj, vi * 8 + vj}]
        end)
      end
    end)
    local sch = tir.Schedule(before)
    V.schedule_error(function() sch:reverse_compute_inline("C") end, "reverse_compute_inline")
  end)

  local function multi_loads()
    return with_producer({A = T.Buffer({N, N}, F32), C = T.Buffer({N, N}, F32)}, function(B, C)
      -- TVM reads B[vi, vj + 2] past the 128 columns (unchecked there); here within bounds
      for i, j in T.grid(N, N - 2) do
        T.block("C", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          C[{vi, vj}] = B[{vi, vj}] + B[{vi, vj + 1}] + B[{vi, vj + 2}]
        end)
      end
    end)
  end

  it("test_reverse_compute_fail_multi_reverse_loads", function()
    local sch = tir.Schedule(multi_loads())
    V.schedule_error(function() sch:reverse_compute_inline("C") end, "reverse_compute_inline")
  end)

  it("test_opaque_access_load", function()
    -- TVM: T.evaluate(B.access_ptr("r")); here the opaque use is T.address_of(B[...])
    local before = with_producer({A = T.Buffer({N, N}, F32), C = T.Buffer({N, N}, F32)}, function(B, C)
      ew("C", N, N, function(vi, vj)
        T.evaluate(T.address_of(B[{0, 0}]))
        C[{vi, vj}] = B[{vi, vj}] + 1.0
      end)
    end)
    local sch = tir.Schedule(before)
    V.schedule_error(function() sch:compute_inline("B") end, "compute_inline")
  end)

  it("test_opaque_access_store", function()
    local before = with_producer({A = T.Buffer({N, N}, F32), C = T.Buffer({N, N}, F32)}, function(B, C)
      ew("C", N, N, function(vi, vj)
        T.evaluate(T.address_of(B[{0, 0}]))
        T.evaluate(T.address_of(C[{0, 0}]))
        C[{vi, vj}] = B[{vi, vj}] + 1.0
      end)
    end)
    local sch = tir.Schedule(before)
    V.schedule_error(function() sch:compute_inline("B") end, "compute_inline")
  end)

  it("test_buffer_matched", function()
    local before = with_producer({A = T.Buffer({N, N}, F32), C = T.Buffer({N, N}, F32)}, function(B, C)
      ew("C", N, N, function(vi, vj)
        local Bb = T.match_buffer(B[{{vi, vi + 1}, {vj, vj + 1}}], {1, 1}, F32)
        C[{vi, vj}] = Bb[{0, 0}] + 1.0
      end)
    end)
    local sch = tir.Schedule(before)
    V.schedule_error(function() sch:compute_inline("B") end, "compute_inline")
  end)

  it("test_output_block", function()
    local te = V.te
    local A = te.placeholder({N, N}, F32, "A")
    local B = te.placeholder({N, N}, F32, "B")
    local k = te.reduce_axis({0, N}, "k")
    local C = te.compute({N, N}, function(i, j) return te.sum(A[{i, k}] * B[{k, j}], {k}) end, "C")
    local R = te.compute({N, N}, function(i, j) return tir.max(C[{i, j}], tir.const(0, F32)) end, "compute")
    local sch = tir.Schedule(te.create_prim_func({A, B, R}))
    V.schedule_error(function() sch:compute_inline(sch:get_block("compute")) end, "compute_inline")
    local out = T.prim_func("main", {A = T.Buffer({N, N}, F32), B = T.Buffer({N, N}, F32), C = T.Buffer({N, N}, F32)}, function(A, B, C)
      ew("B", N, N, function(vi, vj) B[{vi, vj}] = A[{vi, vj}] * 2.0 end)
      ew("C", N, N, function(vi, vj) C[{vi, vj}] = B[{vi, vj}] + 1.0 end)
    end)
    sch = tir.Schedule(out)
    V.schedule_error(function() sch:compute_inline(sch:get_block("B")) end, "compute_inline")
    V.schedule_error(function() sch:reverse_compute_inline(sch:get_block("C")) end, "reverse_compute_inline")
  end)

  it("test_compute_inline_predicate", function()
    local before = with_producer({A = T.Buffer({N, N}, F32), C = T.Buffer({N, N}, F32)}, function(B, C)
      ew("C", N, N, function(vi, vj, i, j)
        T.where(T.lt(B[{i, j}], T.float32(10)))
        C[{vi, vj}] = B[{vi, vj}] + 1.0
      end)
    end)
    local expected = T.prim_func("main", {A = T.Buffer({N, N}, F32), C = T.Buffer({N, N}, F32)}, function(A, C)
      ew("C", N, N, function(vi, vj, i, j)
        T.where(T.lt(A[{i, j}] * 2.0, T.float32(10)))
        C[{vi, vj}] = A[{vi, vj}] * 2.0 + 1.0
      end)
    end)
    check_inline(before, expected, "compute_inline", "B")
  end)

  it("test_compute_inline_multi_loads", function()
    local expected = T.prim_func("main", {A = T.Buffer({N, N}, F32), C = T.Buffer({N, N}, F32)}, function(A, C)
      for i, j in T.grid(N, N - 2) do
        T.block("C", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          C[{vi, vj}] = A[{vi, vj}] * 2.0 + A[{vi, vj + 1}] * 2.0 + A[{vi, vj + 2}] * 2.0
        end)
      end
    end)
    check_inline(multi_loads(), expected, "compute_inline", "B")
  end)

  it("test_compute_inline_with_opaque_access", function()
    -- an opaque block writes A_cache partly; inlining the unrelated BB keeps it as it is
    local function f(inlined)
      return T.prim_func("main", {A = T.Buffer({32}, F32), B = T.Buffer({32}, F32)}, function(A, B)
        local A_cache = T.alloc_buffer({32}, F32, {name = "A_cache"})
        local BB = not inlined and T.alloc_buffer({32}, F32, {name = "BB"})
        T.block("opaque", function()
          T.reads(A[{{0, 16}}])
          T.writes(A_cache[{{0, 16}}])
          for i in T.serial(16) do A_cache[{i}] = A[{i}] end
        end)
        if not inlined then
          for i in T.serial(16) do
            T.block("BB", function() local vi = T.axis.spatial(32, i) BB[{vi}] = A_cache[{vi}] * 2.0 end)
          end
        end
        for i in T.serial(16) do
          T.block("B", function()
            local vi = T.axis.spatial(32, i)
            if inlined then B[{vi}] = A_cache[{vi}] * 2.0 + 1.0 else B[{vi}] = BB[{vi}] + 1.0 end
          end)
        end
      end)
    end
    local before = f(false)
    local sch = tir.Schedule(before)
    sch:compute_inline("BB")
    -- B is only partly written: compare the written part
    local function args(seed)
      return {tir.nd.random({32}, F32, tir.nd.cpu(), {seed = seed}), tir.nd.array((function() local t = {} for i = 1, 32 do t[i] = 0.0 end return t end)(), F32)}
    end
    V.check(sch, before, f(true), {args = args})
  end)

  it("test_inline_block_with_init", function()
    local f = T.prim_func("main", {A = T.Buffer({1, 8, 3, 3}, F32), B = T.Buffer({1, 8, 1, 1}, F32)}, function(A, B)
      local B_rf = T.alloc_buffer({1, 8, 1, 1, 9}, F32, {name = "B_rf"})
      for _, i1, _, _, i4, _ in T.grid(1, 8, 1, 1, 9, 1) do
        T.block("tensor_rf", function()
          local vi4 = T.axis.spatial(9, i4)
          local ax0 = T.axis.spatial(1, 0)
          local ax1 = T.axis.spatial(8, i1)
          local ax2 = T.axis.spatial(1, 0)
          local ax3 = T.axis.spatial(1, 0)
          T.init(function() B_rf[{ax0, ax1, ax2, ax3, vi4}] = T.float32(0) end)
          B_rf[{ax0, ax1, ax2, ax3, vi4}] = B_rf[{ax0, ax1, ax2, ax3, vi4}] + A[{ax0, ax1, ax2 * 3 + vi4 // 3, ax3 * 3 + vi4 % 3}]
        end)
      end
      for _, i1 in T.grid(1, 8) do
        for a0, a1, a2, a3, a4 in T.grid(9, 1, 1, 1, 1) do
          T.block("tensor", function()
            local vi4 = T.axis.reduce(9, a0)
            local b0 = T.axis.spatial(1, a1)
            local b1 = T.axis.spatial(8, i1 + a2)
            local b2 = T.axis.spatial(1, a3)
            local b3 = T.axis.spatial(1, a4)
            T.init(function() B[{b0, b1, b2, b3}] = T.float32(0) end)
            B[{b0, b1, b2, b3}] = B[{b0, b1, b2, b3}] + B_rf[{b0, b1, b2, b3, vi4}]
          end)
        end
      end
    end)
    local sch = tir.Schedule(f)
    V.schedule_error(function() sch:compute_inline(sch:get_block("tensor_rf")) end, "compute_inline")
  end)

  it("test_reverse_compute_inline_overcomputed_producer", function()
    local p = {A = T.Buffer({N, N}, F32), C = T.Buffer({N - 1, N - 1}, F32)}
    local before = with_producer(p, function(B, C)
      ew("C", N - 1, N - 1, function(vi, vj) C[{vi, vj}] = B[{vi, vj}] + 1.0 end)
    end)
    local expected = T.prim_func("main", p, function(A, C)
      ew("B", N, N, function(vi, vj, i, j)
        T.where(T.And(T.lt(i, N - 1), T.lt(j, N - 1)))
        C[{vi, vj}] = A[{vi, vj}] * 2.0 + 1.0
      end)
    end)
    check_inline(before, expected, "reverse_compute_inline", "C")
  end)

  it("test_reverse_compute_inline_overcomputed_producer_simplify_predicate", function()
    local p = {A = T.Buffer({N, N}, F32), C = T.Buffer({N - 1, N - 1}, F32)}
    local function prod(body)
      for i in T.serial(N * N) do
        T.block("B", function()
          local vi = T.axis.spatial(N, i // N)
          local vj = T.axis.spatial(N, i % N)
          body(vi, vj, i)
        end)
      end
    end
    local before = T.prim_func("main", p, function(A, C)
      local B = T.alloc_buffer({N, N}, F32)
      prod(function(vi, vj) B[{vi, vj}] = A[{vi, vj}] * 2.0 end)
      ew("C", N - 1, N - 1, function(vi, vj) C[{vi, vj}] = B[{vi, vj}] + 1.0 end)
    end)
    local expected = T.prim_func("main", p, function(A, C)
      prod(function(vi, vj, i)
        T.where(T.And(T.lt(i, (N - 1) * N - 1), T.lt(i % N, N - 1)))
        C[{vi, vj}] = A[{vi, vj}] * 2.0 + 1.0
      end)
    end)
    check_inline(before, expected, "reverse_compute_inline", "C")
  end)

  it("test_reverse_compute_inline_overcomputed_producer_injective_load", awaits(OPEN_OVER, function()
    local p = {A = T.Buffer({N, N}, F32), C = T.Buffer({N - 1, N - 1}, F32)}
    local function prod(body)
      for i0, j0, i1, j1 in T.grid(2, 2, 8, 8) do
        T.block("B", function()
          local vi, vj, vm, vn = T.axis.remap("SSSS", {i0, j0, i1, j1})
          body(vi, vj, vm, vn, i0, j0, i1, j1)
        end)
      end
    end
    local before = T.prim_func("main", p, function(A, C)
      local B = T.alloc_buffer({2, 2, 8, 8}, F32)
      prod(function(vi, vj, vm, vn) B[{vi, vj, vm, vn}] = A[{vi * 8 + vm, vj * 8 + vn}] * 2.0 end)
      ew("C", N - 1, N - 1, function(vi, vj) C[{vi, vj}] = B[{vi // 8, vj // 8, vi % 8, vj % 8}] + 1.0 end)
    end)
    local expected = T.prim_func("main", p, function(A, C)
      prod(function(vi, vj, vm, vn, i0, j0, i1, j1)
        T.where(T.And(T.lt(i0 * 8 + i1, N - 1), T.lt(j0 * 8 + j1, N - 1)))
        C[{vm + vi * 8, vn + vj * 8}] = A[{vi * 8 + vm, vj * 8 + vn}] * 2.0 + 1.0
      end)
    end)
    check_inline(before, expected, "reverse_compute_inline", "C")
  end))

  it("test_reverse_compute_inline_error_producer_not_cover_consumer", function()
    local before = with_producer({A = T.Buffer({N, N}, F32), D = T.Buffer({2 * N, N}, F32)}, function(B, D)
      ew("C", 2 * N, N, function(vi, vj) D[{vi, vj}] = T.if_then_else(T.ge(vi, N), B[{vi - N, vj}], T.float32(0)) end)
    end)
    local sch = tir.Schedule(before)
    V.schedule_error(function() sch:reverse_compute_inline("C") end, "reverse_compute_inline")
  end)

  it("test_reverse_compute_inline_producer_predicate_allowed", function()
    local before = T.prim_func("main", {A = T.Buffer({N, N}, F32), C = T.Buffer({N - 1, N}, F32)}, function(A, C)
      local B = T.alloc_buffer({N - 1, N}, F32)
      ew("B", N, N, function(vi, vj, i)
        T.where(T.lt(i, N - 1))
        B[{vi, vj}] = A[{vi, vj}] * 2.0
      end)
      ew("C", N - 1, N, function(vi, vj) C[{vi, vj}] = B[{vi, vj}] + 1.0 end)
    end)
    local expected = T.prim_func("main", {A = T.Buffer({N, N}, F32), C = T.Buffer({N - 1, N}, F32)}, function(A, C)
      ew("B", N, N, function(vi, vj, i)
        T.where(T.lt(i, N - 1))
        C[{vi, vj}] = A[{vi, vj}] * T.float32(2) + T.float32(1)
      end)
    end)
    check_inline(before, expected, "reverse_compute_inline", "C")
  end)

  it("test_reverse_compute_inline_producer_is_reduction", function()
    local f = T.prim_func("main", {A = T.Buffer({N, N}, F32), D = T.Buffer({N}, F32)}, function(A, D)
      local B = T.alloc_buffer({N}, F32)
      for i, j in T.grid(N, N) do
        T.block("B", function()
          local vi, vj = T.axis.remap("SR", {i, j})
          T.init(function() B[{vi}] = T.float32(0) end)
          B[{vi}] = B[{vi}] + A[{vi, vj}]
        end)
      end
      for i in T.serial(N) do
        T.block("C", function() local vi = T.axis.remap("S", {i}) D[{vi}] = B[{vi}] + 1.0 end)
      end
    end)
    local sch = tir.Schedule(f)
    V.schedule_error(function() sch:reverse_compute_inline(sch:get_block("C")) end, "reverse_compute_inline")
  end)

  it("test_compute_inline_softmax", function()
    -- TVM: (1, 32, n, m) with n, m symbolic int64; here (1, 2, 3, 4): inlining T_softmax_exp
    -- into both its consumers
    local te = V.te
    local x = te.placeholder({1, 2, 3, 4}, F32, "lv44")
    local k = te.reduce_axis({0, 4}, "k")
    local maxelem = te.compute({1, 2, 3}, function(a, b, c) return te.max(x[{a, b, c, k}], {k}) end, "T_softmax_maxelem")
    local ex = te.compute({1, 2, 3, 4}, function(a, b, c, d) return tir.call(F32, "exp", x[{a, b, c, d}] - maxelem[{a, b, c}]) end, "T_softmax_exp")
    local k2 = te.reduce_axis({0, 4}, "k2")
    local sum = te.compute({1, 2, 3}, function(a, b, c) return te.sum(ex[{a, b, c, k2}], {k2}) end, "T_softmax_expsum")
    local norm = te.compute({1, 2, 3, 4}, function(a, b, c, d) return ex[{a, b, c, d}] / sum[{a, b, c}] end, "T_softmax_norm")
    local out = te.compute({1, 2, 3, 4}, function(a, b, c, d) return tir.cast("float16", norm[{a, b, c, d}]) end, "compute")
    local before = te.create_prim_func({x, out})
    local sch = tir.Schedule(before)
    sch:compute_inline(sch:get_block("T_softmax_exp"))
    local f = sch.mod
    local names = {}
    for _, b in ipairs(sch:get_child_blocks(sch:get_block("root"))) do names[#names + 1] = b.name end
    assert.are.same({"T_softmax_maxelem", "T_softmax_expsum", "T_softmax_norm", "compute"}, names)
    local sum_blk = sch:get(sch:get_block("T_softmax_expsum"))
    local reads = {}
    for i = 1, #sum_blk.reads do reads[sum_blk.reads[i].buffer.name] = true end
    assert.is_true(reads.lv44 and reads.T_softmax_maxelem)
    V.check(sch, before, nil, {rtol = 1e-3})
    assert.is_not_nil(f)
  end)
end)
