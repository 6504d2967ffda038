-- Port of TVM tests/python/s_tir/schedule/test_tir_schedule_tensorize.py.  The test
-- intrinsics (a 16x16x16 mma, a 4-element dot product, a 16x16 outer product, their annotated
-- variants) are registered here as T script desc/impl pairs; the impls call placeholder
-- builtins (the interpreter runs desc).  Sizes 128 -> 32 (2x2 tiles of 16).  Not ported: the
-- CPU/DSP target intrinsics (VNNI, AVX512, ARM dot, Hexagon vrmpy/vdmpy, dp4a -- tirlua's
-- per-thread dp4a-shaped desc is in tensorize_scalar_spec.lua), the mixed-dtype
-- decompose-and-tensorize of an int8 packed matmul, and the i4 decode one.
local tir = require("tir")
local V = require("tvm.tvm_util")
local T = V.T
local F32 = "float32"
local N = 32
local RT = {rtol = 1e-4}
local function awaits(topic, fn) return function() V.awaits(function(m) pending(m) end, topic, fn) end end

local function reg(name, desc, impl)
  if not tir.TensorIntrin.get(name) then tir.TensorIntrin.register(name, desc, impl) end
end

local function mma_desc(name, anno)
  return T.prim_func(name, {A = T.Buffer({16, 16}, F32, {offset_factor = 1}), B = T.Buffer({16, 16}, F32, {offset_factor = 1}),
                            C = T.Buffer({16, 16}, F32, {offset_factor = 1})}, function(A, B, C)
    T.block("root", function()
      T.reads(C[{{0, 16}, {0, 16}}], A[{{0, 16}, {0, 16}}], B[{{0, 16}, {0, 16}}])
      T.writes(C[{{0, 16}, {0, 16}}])
      for i, j, k in T.grid(16, 16, 16) do
        T.block("update", function()
          if anno then T.block_attr(anno) end
          local vii, vjj, vkk = T.axis.remap("SSR", {i, j, k})
          C[{vii, vjj}] = C[{vii, vjj}] + A[{vii, vkk}] * B[{vjj, vkk}]
        end)
      end
    end)
  end)
end

local function mma_impl(name)
  return T.prim_func(name, {A = T.Buffer({16, 16}, F32, {offset_factor = 1}), B = T.Buffer({16, 16}, F32, {offset_factor = 1}),
                            C = T.Buffer({16, 16}, F32, {offset_factor = 1})}, function(A, B, C)
    T.block("root", function()
      T.reads(C[{{0, 16}, {0, 16}}], A[{{0, 16}, {0, 16}}], B[{{0, 16}, {0, 16}}])
      T.writes(C[{{0, 16}, {0, 16}}])
      T.evaluate(T.call("void", "test_mma_sync", T.address_of(C[{0, 0}]), T.address_of(A[{0, 0}]), T.address_of(B[{0, 0}])))
    end)
  end)
end

local function dot_desc(name)
  return T.prim_func(name, {A = T.Buffer({4}, F32, {offset_factor = 1}), B = T.Buffer({4}, F32, {offset_factor = 1}),
                            C = T.Buffer({}, F32, {offset_factor = 1})}, function(A, B, C)
    T.block("root", function()
      T.reads(C[{}], A[{{0, 4}}], B[{{0, 4}}])
      T.writes(C[{}])
      for i in T.serial(4) do
        T.block("update", function()
          local vi = T.axis.remap("R", {i})
          C[{}] = C[{}] + A[{vi}] * B[{vi}]
        end)
      end
    end)
  end)
end

local function dot_impl(name, anno)
  return T.prim_func(name, {A = T.Buffer({4}, F32, {offset_factor = 1}), B = T.Buffer({4}, F32, {offset_factor = 1}),
                            C = T.Buffer({}, F32, {offset_factor = 1})}, function(A, B, C)
    T.block("root", function()
      if anno then T.block_attr(anno) end
      T.reads(C[{}], A[{{0, 4}}], B[{{0, 4}}])
      T.writes(C[{}])
      T.evaluate(T.call("void", "test_vec4add", T.address_of(C[{}]), T.address_of(A[{0}]), T.address_of(B[{0}])))
    end)
  end)
end

local function outer_desc(name)
  return T.prim_func(name, {A = T.Buffer({16, 1}, F32, {offset_factor = 1}), B = T.Buffer({16, 1}, F32, {offset_factor = 1}),
                            C = T.Buffer({16, 16}, F32, {offset_factor = 1})}, function(A, B, C)
    T.block("root", function()
      T.reads(C[{{0, 16}, {0, 16}}], A[{{0, 16}, {0, 1}}], B[{{0, 16}, {0, 1}}])
      T.writes(C[{{0, 16}, {0, 16}}])
      for i, j in T.grid(16, 16) do
        T.block("update", function()
          local vii, vjj = T.axis.remap("SS", {i, j})
          C[{vii, vjj}] = C[{vii, vjj}] + A[{vii, 0}] * B[{vjj, 0}]
        end)
      end
    end)
  end)
end

local function outer_impl(name)
  return T.prim_func(name, {A = T.Buffer({16, 1}, F32, {offset_factor = 1}), B = T.Buffer({16, 1}, F32, {offset_factor = 1}),
                            C = T.Buffer({16, 16}, F32, {offset_factor = 1})}, function(A, B, C)
    T.block("root", function()
      T.reads(C[{{0, 16}, {0, 16}}], A[{{0, 16}, {0, 1}}], B[{{0, 16}, {0, 1}}])
      T.writes(C[{{0, 16}, {0, 16}}])
      T.evaluate(T.call("void", "test_outer_product", T.address_of(C[{0, 0}]), T.address_of(A[{0, 0}]), T.address_of(B[{0, 0}])))
    end)
  end)
end

reg("test_mma_intrin", mma_desc("mma_desc"), mma_impl("mma_intrin"))
reg("test_annotated_mma_intrin", mma_desc("annotated_mma_desc", {test_annotation = true}), mma_impl("mma_intrin"))
reg("test_dot_product_intrin", dot_desc("dot_product_desc"), dot_impl("dot_product_intrin"))
reg("test_outer_product_intrin", outer_desc("outer_product_desc"), outer_impl("outer_product_intrin"))
reg("test_dot_product_intrin_annotated", dot_desc("dot_product_desc"), dot_impl("dot_product_intrin_annotated", {test_annotation = true}))

local function matmul(anno)
  return T.prim_func("main", {A = T.Buffer({N, N}, F32), B = T.Buffer({N, N}, F32), C = T.Buffer({N, N}, F32)}, function(A, B, C)
    for i, j, k in T.grid(N, N, N) do
      T.block("update", function()
        local vi, vj, vk = T.axis.remap("SSR", {i, j, k})
        if anno then T.block_attr(anno) end
        T.init(function() C[{vi, vj}] = T.float32(0) end)
        C[{vi, vj}] = C[{vi, vj}] + A[{vi, vk}] * B[{vj, vk}]
      end)
    end
  end)
end

-- init and update as separate blocks (no T.init), batch of 2
local function batch_matmul()
  local S = {2, N, N}
  return T.prim_func("main", {A = T.Buffer(S, F32), B = T.Buffer(S, F32), C = T.Buffer(S, F32)}, function(A, B, C)
    for n, i, j in T.grid(2, N, N) do
      T.block("init", function() local vn, vi, vj = T.axis.remap("SSS", {n, i, j}) C[{vn, vi, vj}] = T.float32(0) end)
    end
    for n, i, j, k in T.grid(2, N, N, N) do
      T.block("update", function()
        local vn, vi, vj, vk = T.axis.remap("SSSR", {n, i, j, k})
        C[{vn, vi, vj}] = C[{vn, vi, vj}] + A[{vn, vi, vk}] * B[{vn, vj, vk}]
      end)
    end
  end)
end

local function intrin_of(sch, block)
  local b = sch:get(block)
  for i = 1, #b.annotations do
    if b.annotations[i].key == "tensor_intrin" then return b.annotations[i].value.value end
  end
end

local function tile_mma(s, update, has_batch)
  local loops = {s:get_loops(update)}
  local i, j, k = loops[#loops - 2], loops[#loops - 1], loops[#loops]
  local io, ii = s:split(i, {nil, 16})
  local jo, ji = s:split(j, {nil, 16})
  local ko, ki = s:split(k, {nil, 16})
  s:reorder(io, jo, ko, ii, ji, ki)
  return io, jo, ko, ii
end

describe("test_tir_schedule_tensorize", function()
  it("test_tensorize_matmul", function()
    local before = matmul()
    local s = tir.Schedule(before)
    local update = s:get_block("update")
    local _, _, ko, ii = tile_mma(s, update)
    s:decompose_reduction(update, ko)
    local blk = s:tensorize(ii, "test_mma_intrin")
    V.check(s, before, nil, RT)
    local b = s:get(blk)
    assert.are.equal("test_mma_intrin", intrin_of(s, blk))
    assert.are.equal(3, #b.match_buffers)
    -- one block per 16x16x16 tile over the 2x2x2 tiles
    assert.are.same({2, 2, 2}, V.extents(s, blk))
  end)

  it("test_tensorize_matmul (the tensorized block's iteration variables)", awaits("tensorize making a block with TVM's outer iteration variables (open)", function()
    -- TVM's tensorized block binds vi, vj, vk (S, S, R) to the tile loops; tirlua's is an
    -- opaque block over the loop variables
    local s = tir.Schedule(matmul())
    local update = s:get_block("update")
    local _, _, ko, ii = tile_mma(s, update)
    s:decompose_reduction(update, ko)
    local blk = s:tensorize(ii, "test_mma_intrin")
    local b = s:get(blk)
    local iters = {}
    for n = 1, #b.iter_vars do iters[n] = b.iter_vars[n].iter_type end
    assert.are.same({0, 0, 2}, iters)
  end))

  it("test_tensorize_batch_matmul", function()
    local before = batch_matmul()
    local s = tir.Schedule(before)
    local _, _, _, ii = tile_mma(s, s:get_block("update"))
    local blk = s:tensorize(ii, "test_mma_intrin")
    V.check(s, before, nil, RT)
    assert.are.same({2, 2, 2, 2}, V.extents(s, blk))
    local b = s:get(blk)
    -- C[vn : vn + 1, vi * 16 : vi * 16 + 16, ...] viewed as 16x16
    assert.are.equal(3, #b.match_buffers[1].source.region)
  end)

  it("test_tensorize_dot_product", function()
    local before = batch_matmul()
    local s = tir.Schedule(before)
    local C = s:get_block("update")
    local _, _, _, k = s:get_loops(C)
    local _, ki = s:split(k, {nil, 4})
    local blk = s:tensorize(ki, "test_dot_product_intrin")
    V.check(s, before, nil, RT)
    assert.are.same({2, N, N, 8}, V.extents(s, blk))
    assert.are.equal("test_dot_product_intrin", intrin_of(s, blk))
  end)

  it("test_tensorize_outer_product", function()
    local before = batch_matmul()
    local s = tir.Schedule(before)
    local C = s:get_block("update")
    local _, i, j, k = s:get_loops(C)
    local io, ii = s:split(i, {nil, 16})
    local jo, ji = s:split(j, {nil, 16})
    s:reorder(io, jo, k, ii, ji)
    local blk = s:tensorize(ii, "test_outer_product_intrin")
    V.check(s, before, nil, RT)
    assert.are.same({2, 2, 2, N}, V.extents(s, blk))
  end)

  it("test_tensorize_with_annotation", function()
    local before = matmul({test_annotation = true})
    local s = tir.Schedule(before)
    local update = s:get_block("update")
    local _, _, ko, ii = tile_mma(s, update)
    s:decompose_reduction(update, ko)
    local blk = s:tensorize(ii, "test_annotated_mma_intrin")
    V.check(s, before, nil, RT)
    assert.are.equal("test_annotated_mma_intrin", intrin_of(s, blk))
  end)

  it("test_tensorize_intrinsic_with_annotation", function()
    local before = matmul()
    local s = tir.Schedule(before)
    local update = s:get_block("update")
    local _, _, k = s:get_loops(update)
    local ko, ki = s:split(k, {nil, 4})
    s:decompose_reduction(update, ko)
    s:tensorize(ki, "test_dot_product_intrin_annotated")
    local b = s:get(s:get_block("update_update_o"))
    local found
    for i = 1, #b.annotations do if b.annotations[i].key == "test_annotation" then found = b.annotations[i].value end end
    assert.is_not_nil(found)
    assert.are.equal("true", tostring(found):lower():match("true"))
    V.check(s, before, nil, RT)
  end)

  it("test_tensor_intrin_look_up", function()
    assert.is_nil(tir.TensorIntrin.get("non_existent_intrin"))
    local s = tir.Schedule(matmul())
    V.schedule_error(function() s:tensorize((s:get_loops(s:get_block("update"))), "non_existent_intrin") end,
                     "non_existent_intrin")
  end)
end)
