-- Port of TVM tests/python/s_tir/schedule/test_tir_schedule_compute_at.py (compute_at and
-- reverse_compute_at).  Shapes scaled down (128 -> 16 with 8x8 tiles of 2x2 -> ...; each case
-- says its sizes); TVM runs most cases with the block given as a handle and by name: the
-- ports alternate.  TVM's T.likely hints are left out (tirlua has no likely builtin).
local tir = require("tir")
local V = require("tvm.tvm_util")
local T = V.T

local function awaits(topic, fn) return function() V.awaits(function(m) pending(m) end, topic, fn) end end

local F32 = "float32"

local function two_elementwise()
  return T.prim_func("main", {A = T.Buffer({16, 16}, F32), C = T.Buffer({16, 16}, F32)}, function(A, C)
    local B = T.alloc_buffer({16, 16}, F32)
    for i, j in T.grid(16, 16) do
      T.block("B", function()
        local vi, vj = T.axis.remap("SS", {i, j})
        B[{vi, vj}] = A[{vi, vj}] * 2.0
      end)
    end
    for i, j in T.grid(16, 16) do
      T.block("C", function()
        local vi, vj = T.axis.remap("SS", {i, j})
        C[{vi, vj}] = B[{vi, vj}] + 1.0
      end)
    end
  end)
end

-- 16x16, C blockized into 2x2 tiles of 8x8 (TVM: 128x128, 8x8 tiles of 16x16)
local function blockized_1(after)
  return T.prim_func("main", {A = T.Buffer({16, 16}, F32), C = T.Buffer({16, 16}, F32)}, function(A, C)
    local B = T.alloc_buffer({16, 16}, F32)
    local function b_block(i, j)
      T.block("B", function()
        local vi = T.axis.spatial(16, i)
        local vj = T.axis.spatial(16, j)
        B[{vi, vj}] = A[{vi, vj}] * 2.0
      end)
    end
    local function c_outer(i, j)
      T.block("C_outer", function()
        local vio, vjo = T.axis.remap("SS", {i, j})
        T.reads(B[{{vio * 8, vio * 8 + 8}, {vjo * 8, vjo * 8 + 8}}])
        T.writes(C[{{vio * 8, vio * 8 + 8}, {vjo * 8, vjo * 8 + 8}}])
        for ii, ji in T.grid(8, 8) do
          T.block("C_inner", function()
            local vi = T.axis.spatial(16, vio * 8 + ii)
            local vj = T.axis.spatial(16, vjo * 8 + ji)
            C[{vi, vj}] = B[{vi, vj}] + 1.0
          end)
        end
      end)
    end
    if not after then
      for i, j in T.grid(16, 16) do b_block(i, j) end
      for i, j in T.grid(2, 2) do c_outer(i, j) end
    else
      for i0, j0 in T.grid(2, 2) do
        for ax0, ax1 in T.grid(8, 8) do b_block(i0 * 8 + ax0, j0 * 8 + ax1) end
        c_outer(i0, j0)
      end
    end
  end)
end

-- B blockized into 4x4 tiles of 4x4; C tiled 2x2 of 8x8 (TVM: 8x8 of 16x16; 4x4 of 32x32)
local function blockized_2(variant)
  return T.prim_func("main", {A = T.Buffer({16, 16}, F32), C = T.Buffer({16, 16}, F32)}, function(A, C)
    local B = T.alloc_buffer({16, 16}, F32)
    local function b_outer(io, jo)
      T.block("B_outer", function()
        local vio = T.axis.spatial(4, io)
        local vjo = T.axis.spatial(4, jo)
        T.reads(A[{{vio * 4, vio * 4 + 4}, {vjo * 4, vjo * 4 + 4}}])
        T.writes(B[{{vio * 4, vio * 4 + 4}, {vjo * 4, vjo * 4 + 4}}])
        for ii, ji in T.grid(4, 4) do
          T.block("B_inner", function()
            local vi = T.axis.spatial(16, vio * 4 + ii)
            local vj = T.axis.spatial(16, vjo * 4 + ji)
            B[{vi, vj}] = A[{vi, vj}] * 2.0
          end)
        end
      end)
    end
    local function c_block(i, j)
      T.block("C", function()
        local vi = T.axis.spatial(16, i)
        local vj = T.axis.spatial(16, j)
        C[{vi, vj}] = B[{vi, vj}] + 1.0
      end)
    end
    if variant == nil then
      for io, jo in T.grid(4, 4) do b_outer(io, jo) end
      for io, jo, ii, ji in T.grid(2, 2, 8, 8) do c_block(io * 8 + ii, jo * 8 + ji) end
    elseif variant == "compute_at" then
      for io, jo in T.grid(2, 2) do
        for ax0, ax1 in T.grid(2, 2) do b_outer(io * 2 + ax0, jo * 2 + ax1) end
        for ii, ji in T.grid(8, 8) do c_block(io * 8 + ii, jo * 8 + ji) end
      end
    else -- reverse_compute_at
      for io, jo in T.grid(4, 4) do
        b_outer(io, jo)
        for ax0, ax1 in T.grid(4, 4) do c_block(io * 4 + ax0, jo * 4 + ax1) end
      end
    end
  end)
end

-- 16x16 tiled 2x2 of 8x8 (TVM: 128x128, 8x8 of 16x16); lead: a leading unit dimension
local function tiled(after, lead)
  local shape = lead and {1, 16, 16} or {16, 16}
  return T.prim_func("main", {A = T.Buffer(shape, F32), C = T.Buffer(shape, F32)}, function(A, C)
    local B = T.alloc_buffer(shape, F32)
    local function at(buf, vi, vj) if lead then return buf[{0, vi, vj}] end return buf[{vi, vj}] end
    local function b_block(i, j)
      T.block("B", function()
        local vi = T.axis.spatial(16, i)
        local vj = T.axis.spatial(16, j)
        if lead then B[{0, vi, vj}] = A[{0, vi, vj}] * 2.0 else B[{vi, vj}] = A[{vi, vj}] * 2.0 end
      end)
    end
    local function c_block(i, j)
      T.block("C", function()
        local vi = T.axis.spatial(16, i)
        local vj = T.axis.spatial(16, j)
        if lead then C[{0, vi, vj}] = at(B, vi, vj) + 1.0 else C[{vi, vj}] = at(B, vi, vj) + 1.0 end
      end)
    end
    if not after then
      for i0, j0, i1, j1 in T.grid(2, 2, 8, 8) do b_block(i0 * 8 + i1, j0 * 8 + j1) end
      for i, j in T.grid(16, 16) do c_block(i, j) end
    else
      for i0, j0, i1 in T.grid(2, 2, 8) do
        for j1 in T.serial(8) do b_block(i0 * 8 + i1, j0 * 8 + j1) end
        for j1 in T.serial(8) do c_block(i0 * 8 + i1, j0 * 8 + j1) end
      end
    end
  end)
end

describe("test_tir_schedule_compute_at", function()
  it("test_compute_at_two_elementwise", function()
    local before = two_elementwise()
    for _, by_name in ipairs({false, true}) do
      local sch = tir.Schedule(before)
      local block = by_name and "B" or sch:get_block("B")
      local loop = sch:get_loops(by_name and "C" or sch:get_block("C"))
      sch:compute_at(block, loop, true)
      local expected = T.prim_func("main", {A = T.Buffer({16, 16}, F32), C = T.Buffer({16, 16}, F32)}, function(A, C)
        local B = T.alloc_buffer({16, 16}, F32)
        for i in T.serial(16) do
          for ax0, ax1 in T.grid(1, 16) do
            T.block("B", function()
              local vi = T.axis.spatial(16, i + ax0)
              local vj = T.axis.spatial(16, ax1)
              B[{vi, vj}] = A[{vi, vj}] * 2.0
            end)
          end
          for j in T.serial(16) do
            T.block("C", function()
              local vi, vj = T.axis.remap("SS", {i, j})
              C[{vi, vj}] = B[{vi, vj}] + 1.0
            end)
          end
        end
      end)
      V.check(sch, before, expected)
    end
  end)

  it("test_compute_at_blockized_1", function()
    local before = blockized_1(false)
    local sch = tir.Schedule(before)
    local _, loop = sch:get_loops(sch:get_block("C_outer"))
    sch:compute_at(sch:get_block("B"), loop, true)
    V.check(sch, before, blockized_1(true))
  end)

  it("test_compute_at_blockized_2", function()
    local before = blockized_2()
    local sch = tir.Schedule(before)
    local _, loop = sch:get_loops(sch:get_block("C"))
    sch:compute_at("B_outer", loop, true)
    V.check(sch, before, blockized_2("compute_at"))
  end)

  it("test_compute_at_cuda_matmul_0", function()
    -- TVM's cuda_matmul_0 (2048^3): C computes into C_local, the copy C_local -> C is tiled
    -- over blockIdx 32x32, vthread 2x2, threadIdx 8x8 and 4x4; C goes under threadIdx.x.
    -- Here 64x64x8: blockIdx 2x2, 2x2 (TVM's vthread: tirlua has none, left serial),
    -- threadIdx 2x2, 8x8.
    local te = V.te
    local A = te.placeholder({8, 64}, F32, "A")
    local B = te.placeholder({8, 64}, F32, "B")
    local k = te.reduce_axis({0, 8}, "k")
    local C = te.compute({64, 64}, function(i, j) return te.sum(A[{k, i}] * B[{k, j}], {k}) end, "C")
    local before = te.create_prim_func({A, B, C})
    local sch = tir.Schedule(before)
    local copy = sch:cache_write(sch:get_block("C"), 0, "local")
    local i, j = sch:get_loops(copy)
    local i0, i1, i2, i3 = sch:split(i, {2, 2, 2, 8})
    local j0, j1, j2, j3 = sch:split(j, {2, 2, 2, 8})
    sch:reorder(i0, j0, i1, j1, i2, j2, i3, j3)
    sch:bind(i0, "blockIdx.y"); sch:bind(j0, "blockIdx.x")
    sch:bind(i2, "threadIdx.y"); sch:bind(j2, "threadIdx.x")
    sch:compute_at(sch:get_block("C"), j2, true)
    -- under the thread loops: the 8x8 tile of C (and its reduction), then the copy
    assert.are.same({2, 2, 2, 2, 2, 2, 8, 8, 8}, V.extents(sch, sch:get_block("C")))
    assert.are.same({2, 2, 2, 2, 2, 2, 8, 8}, V.extents(sch, copy))
    local cl = sch:get(sch:get_block("C"))
    assert.are.equal("local", cl.writes[1].buffer.scope)
    V.check(sch, before)
  end)

  it("test_compute_at_reduction_block", function()
    local function f(after)
      return T.prim_func("main", {A = T.Buffer({16, 16}, F32), C = T.Buffer({}, F32)}, function(A, C)
        local B = T.alloc_buffer({16}, F32)
        local function b_block(i, k)
          T.block("B", function()
            local vi, vk = T.axis.remap("SR", {i, k})
            T.init(function() B[{vi}] = T.float32(0) end)
            B[{vi}] = B[{vi}] + A[{vi, vk}]
          end)
        end
        local function c_block(k)
          T.block("C", function()
            local vk = T.axis.remap("R", {k})
            T.init(function() C[{}] = T.float32(0) end)
            C[{}] = C[{}] + B[{vk}]
          end)
        end
        if not after then
          for i, k in T.grid(16, 16) do b_block(i, k) end
          for k in T.serial(16) do c_block(k) end
        else
          for k in T.serial(16) do
            for kk in T.serial(16) do b_block(k, kk) end
            c_block(k)
          end
        end
      end)
    end
    local before = f(false)
    local sch = tir.Schedule(before)
    local loop = sch:get_loops(sch:get_block("C"))
    sch:compute_at(sch:get_block("B"), loop, false)
    assert.is_true(V.check(sch, before, f(true), {exact = true}))
  end)

  it("test_compute_at_tiled_pooling_read_cache", function()
    -- 16x16 (TVM 224x224), tiles 2x2 of 8x8 (TVM 28x28 of 8x8), 3x3 max pooling with padding
    local function f(after)
      return T.prim_func("main", {X = T.Buffer({16, 16}, F32), Y = T.Buffer({16, 16}, F32)}, function(X, Y)
        local cache = T.alloc_buffer({16, 16}, F32, {name = "cache"})
        local function cache_block(h, w, pred)
          T.block("cache", function()
            local vh = T.axis.spatial(16, h)
            local vw = T.axis.spatial(16, w)
            if pred then T.where(pred) end
            cache[{vh, vw}] = X[{vh, vw}]
          end)
        end
        local function compute(h0, w0, h1, w1, kh, kw)
          T.block("compute", function()
            local h = T.axis.spatial(16, h0 * 8 + h1)
            local w = T.axis.spatial(16, w0 * 8 + w1)
            local vkh, vkw = T.axis.remap("RR", {kh, kw})
            T.init(function() Y[{h, w}] = T.float32(0) end)
            Y[{h, w}] = T.max(Y[{h, w}], T.if_then_else(
              T.And(T.And(T.le(1, h + vkh), T.lt(h + vkh, 17)), T.And(T.le(1, w + vkw), T.lt(w + vkw, 17))),
              cache[{h + vkh - 1, w + vkw - 1}], T.float32(0)))
          end)
        end
        if not after then
          for hh, ww in T.grid(16, 16) do cache_block(hh, ww) end
          for h0, w0, h1, w1, kh, kw in T.grid(2, 2, 8, 8, 3, 3) do compute(h0, w0, h1, w1, kh, kw) end
        else
          for h0, w0 in T.grid(2, 2) do
            for ax0, ax1 in T.grid(10, 10) do
              cache_block(h0 * 8 - 1 + ax0, w0 * 8 - 1 + ax1,
                T.And(T.And(T.le(1, h0 * 8 + ax0), T.lt(h0 * 8 + ax0, 17)), T.And(T.le(1, w0 * 8 + ax1), T.lt(w0 * 8 + ax1, 17))))
            end
            for h1, w1, kh, kw in T.grid(8, 8, 3, 3) do compute(h0, w0, h1, w1, kh, kw) end
          end
        end
      end)
    end
    local before = f(false)
    local sch = tir.Schedule(before)
    local _, w_o = sch:get_loops(sch:get_block("compute"))
    sch:compute_at(sch:get_block("cache"), w_o)
    V.check(sch, before, f(true))
  end)

  it("test_compute_at_non_uniform_tiled_conv", function()
    -- x (1, 3, 20, 20), w (4, 3, 3, 3), y (1, 4, 18, 18); spatial tiles of 7 (3 tiles, the
    -- last one partial; TVM: 100x100 input, tiles of 15)
    local function f(after)
      return T.prim_func("main", {x = T.Buffer({1, 3, 20, 20}, F32), w = T.Buffer({4, 3, 3, 3}, F32), y = T.Buffer({1, 4, 18, 18}, F32)},
        function(x, w, y)
          local xg = T.alloc_buffer({1, 3, 20, 20}, F32, {name = "x_global"})
          local function cache(a0, a1, a2, a3, pred)
            T.block("cache", function()
              local v0 = T.axis.spatial(1, a0)
              local v1 = T.axis.spatial(3, a1)
              local v2 = T.axis.spatial(20, a2)
              local v3 = T.axis.spatial(20, a3)
              if pred then T.where(pred) end
              xg[{v0, v1, v2, v3}] = x[{v0, v1, v2, v3}]
            end)
          end
          local function compute(ho, wo, co, hi, wi, ci, kh, kw)
            T.block("compute", function()
              local nn = T.axis.spatial(1, 0)
              local cc = T.axis.spatial(4, co)
              local hh = T.axis.spatial(18, ho * 7 + hi)
              local ww = T.axis.spatial(18, wo * 7 + wi)
              local rc, rh, rw = T.axis.remap("RRR", {ci, kh, kw})
              T.where(T.And(T.lt(ho * 7 + hi, 18), T.lt(wo * 7 + wi, 18)))
              T.init(function() y[{nn, cc, hh, ww}] = T.float32(0) end)
              y[{nn, cc, hh, ww}] = y[{nn, cc, hh, ww}] + xg[{nn, cc // 4 * 3 + rc, hh + rh, ww + rw}] * w[{cc, rc, rh, rw}]
            end)
          end
          if not after then
            for a0, a1, a2, a3 in T.grid(1, 3, 20, 20) do cache(a0, a1, a2, a3) end
            for ho, wo, _, co, hi, wi, ci, kh, kw in T.grid(3, 3, 1, 4, 7, 7, 3, 3, 3) do compute(ho, wo, co, hi, wi, ci, kh, kw) end
          else
            for ho, wo in T.grid(3, 3) do
              for ax0, ax1, ax2 in T.grid(3, 9, 9) do
                cache(0, ax0, ho * 7 + ax1, wo * 7 + ax2, T.And(T.lt(ho * 7 + ax1, 20), T.lt(wo * 7 + ax2, 20)))
              end
              for _, co, hi, wi, ci, kh, kw in T.grid(1, 4, 7, 7, 3, 3, 3) do compute(ho, wo, co, hi, wi, ci, kh, kw) end
            end
          end
        end)
    end
    local before = f(false)
    local sch = tir.Schedule(before)
    sch:compute_at(sch:get_block("cache"), (select(2, sch:get_loops(sch:get_block("compute")))))
    V.check(sch, before, f(true))
  end)

  it("test_compute_at_concat", function()
    local function f(after)
      return T.prim_func("main", {x = T.Buffer({16}, F32), y = T.Buffer({8}, F32), T_concat = T.Buffer({24}, F32)}, function(x, y, T_concat)
        local a1 = T.alloc_buffer({16}, F32, {name = "T_add_1"})
        local a2 = T.alloc_buffer({8}, F32, {name = "T_add_2"})
        local function add1(i, pred)
          T.block("T_add_1", function()
            local ax = T.axis.spatial(16, i)
            if pred then T.where(pred) end
            a1[{ax}] = x[{ax}] + T.float32(1)
          end)
        end
        local function add2(i, pred)
          T.block("T_add_2", function()
            local ax = T.axis.spatial(8, i)
            if pred then T.where(pred) end
            a2[{ax}] = y[{ax}] + T.float32(2)
          end)
        end
        local function concat(i)
          T.block("T_concat", function()
            local ax = T.axis.spatial(24, i)
            T_concat[{ax}] = T.if_then_else(T.le(16, ax), a2[{ax - 16}], a1[{ax}])
          end)
        end
        if not after then
          for i in T.serial(16) do add1(i) end
          for i in T.serial(8) do add2(i) end
          for i in T.serial(24) do concat(i) end
        else
          for i in T.serial(24) do
            add1(i, T.lt(i, 16))
            add2(i - 16, T.le(16, i))
            concat(i)
          end
        end
      end)
    end
    local before = f(false)
    local sch = tir.Schedule(before)
    local axis = sch:get_loops(sch:get_block("T_concat"))
    sch:compute_at(sch:get_block("T_add_1"), axis)
    sch:compute_at(sch:get_block("T_add_2"), axis)
    V.check(sch, before, f(true))
  end)

  it("test_compute_at_tiled_repeat_op", function()
    local function f(after)
      return T.prim_func("main", {x = T.Buffer({4}, F32), T_repeat = T.Buffer({64}, F32)}, function(x, T_repeat)
        local add = T.alloc_buffer({4}, F32, {name = "T_add"})
        local function add_block(i)
          T.block("T_add", function()
            local ax0 = T.axis.spatial(4, i)
            add[{ax0}] = x[{ax0}] + 1.0
          end)
        end
        local function rep(i0, i1)
          T.block("T_repeat", function()
            local ax0 = T.axis.spatial(64, i0 * 8 + i1)
            T_repeat[{ax0}] = add[{ax0 // 16}]
          end)
        end
        if not after then
          for i in T.serial(4) do add_block(i) end
          for i0, i1 in T.grid(8, 8) do rep(i0, i1) end
        else
          for i0 in T.serial(8) do
            add_block(i0 // 2)
            for i1 in T.serial(8) do rep(i0, i1) end
          end
        end
      end)
    end
    local before = f(false)
    local sch = tir.Schedule(before)
    local outer = sch:get_loops(sch:get_block("T_repeat"))
    sch:compute_at(sch:get_block("T_add"), outer)
    V.check(sch, before, f(true))
  end)

  it("test_compute_at_rev_iter", function()
    local function f(after)
      return T.prim_func("main", {X = T.Buffer({10, 10}, F32), Z = T.Buffer({10, 10}, F32)}, function(X, Z)
        local Y = T.alloc_buffer({10, 10}, F32)
        local function b0(i, j)
          T.block("b0", function()
            local vi = T.axis.spatial(10, i)
            local vj = T.axis.spatial(10, j)
            Y[{9 - vi, 9 - vj}] = X[{vi, vj}] + 1.0
          end)
        end
        local function b1(i, j)
          T.block("b1", function()
            local vi, vj = T.axis.remap("SS", {i, j})
            Z[{vi, vj}] = Y[{vj, vi}] + 2.0
          end)
        end
        if not after then
          for i, j in T.grid(10, 10) do b0(i, j) end
          for i, j in T.grid(10, 10) do b1(i, j) end
        else
          for i in T.serial(10) do
            for j in T.serial(10) do b0(j, 9 - i) end
            for j in T.serial(10) do b1(i, j) end
          end
        end
      end)
    end
    local before = f(false)
    local sch = tir.Schedule(before)
    local axis = sch:get_loops(sch:get_block("b1"))
    sch:compute_at(sch:get_block("b0"), axis)
    V.check(sch, before, f(true))
  end)

  it("test_reverse_compute_at_tiled", function()
    local before = tiled(false)
    local sch = tir.Schedule(before)
    local _, _, loop = sch:get_loops(sch:get_block("B"))
    sch:reverse_compute_at(sch:get_block("C"), loop, false)
    V.check(sch, before, tiled(true))
  end)

  it("test_reverse_compute_at_tiled_trivial_binding", function()
    local before = tiled(false, true)
    local sch = tir.Schedule(before)
    local _, _, loop = sch:get_loops(sch:get_block("B"))
    sch:reverse_compute_at("C", loop, false)
    V.check(sch, before, tiled(true, true))
  end)

  it("test_reverse_compute_at_blockized_2", function()
    local before = blockized_2()
    local sch = tir.Schedule(before)
    local _, loop = sch:get_loops(sch:get_block("B_outer"))
    sch:reverse_compute_at(sch:get_block("C"), loop, true)
    V.check(sch, before, blockized_2("reverse"))
  end)

  it("test_reverse_compute_at_factorized", function()
    local function f(after)
      return T.prim_func("main", {A = T.Buffer({16, 16, 16}, F32), B = T.Buffer({16}, F32)}, function(A, B)
        local rf = T.alloc_buffer({16, 16}, F32, {scope = "local", name = "B_rf_local"})
        local function b_block(i, k)
          T.block("B", function()
            local vi = T.axis.spatial(16, i)
            local vk = T.axis.reduce(16, k)
            T.init(function() B[{vi}] = T.float32(0) end)
            B[{vi}] = B[{vi}] + rf[{vk, vi}]
          end)
        end
        for j in T.thread_binding(16, "blockIdx.x") do
          for io in T.thread_binding(4, "threadIdx.x") do
            for ii, k in T.grid(4, 16) do
              T.block("B_rf", function()
                local vi = T.axis.spatial(16, io * 4 + ii)
                local vj, vk = T.axis.remap("SR", {j, k})
                T.init(function() rf[{vi, vj}] = T.float32(0) end)
                rf[{vi, vj}] = rf[{vi, vj}] + A[{vj, vi, vk}]
              end)
            end
            if after then for k in T.serial(4) do b_block(j, io * 4 + k) end end
          end
        end
        if not after then for i, k in T.grid(16, 16) do b_block(i, k) end end
      end)
    end
    local before = f(false)
    local sch = tir.Schedule(before)
    local _, loop = sch:get_loops(sch:get_block("B_rf"))
    sch:reverse_compute_at(sch:get_block("B"), loop, false)
    V.check(sch, before, f(true))
  end)

  it("test_reverse_compute_at_floordiv_and_floormod_indices", function()
    local function f(after)
      return T.prim_func("main", {X = T.Buffer({16, 16}, F32), Y = T.Buffer({256}, F32)}, function(X, Y)
        local temp = T.alloc_buffer({16, 16}, F32, {name = "temp"})
        local function a(i, j)
          T.block("A", function()
            local vi, vj = T.axis.remap("SS", {i, j})
            temp[{vi, vj}] = X[{vj, vi}] + 1.0
          end)
        end
        local function b(i)
          T.block("B", function()
            local vi = T.axis.spatial(256, i)
            Y[{vi}] = temp[{vi // 16, vi % 16}]
          end)
        end
        if not after then
          for i, j in T.grid(16, 16) do a(i, j) end
          for i in T.serial(256) do b(i) end
        else
          for i in T.serial(16) do
            for j in T.serial(16) do a(i, j) end
            for ax0 in T.serial(16) do b(i * 16 + ax0) end
          end
        end
      end)
    end
    local before = f(false)
    local sch = tir.Schedule(before)
    sch:reverse_compute_at(sch:get_block("B"), (sch:get_loops(sch:get_block("A"))))
    V.check(sch, before, f(true))
  end)

  it("test_read_out_of_bound", function()
    local function f(after)
      return T.prim_func("main", {A = T.Buffer({16}, F32), C = T.Buffer({16}, F32)}, function(A, C)
        local B = T.alloc_buffer({16}, F32)
        local function b(i, pred)
          T.block("B", function()
            local v = T.axis.spatial(16, i)
            if pred then T.where(pred) end
            B[{v}] = A[{v}]
          end)
        end
        local function c(j)
          T.block("C", function()
            local v = T.axis.spatial(16, j)
            T.reads(B[{{v, v + 2}}])
            T.writes(C[{v}])
            C[{v}] = T.if_then_else(T.lt(v, 15), T.max(B[{v}], B[{v + 1}]), B[{v}])
          end)
        end
        if not after then
          for i in T.serial(16) do b(i) end
          for j in T.serial(16) do c(j) end
        else
          for j in T.serial(16) do
            for i in T.serial(2) do b(j + i, T.lt(j + i, 16)) end
            c(j)
          end
        end
      end)
    end
    local before = f(false)
    local sch = tir.Schedule(before)
    sch:compute_at(sch:get_block("B"), (sch:get_loops(sch:get_block("C"))))
    V.check(sch, before, f(true))
  end)

  it("test_compact_dataflow", function()
    local function f(after)
      return T.prim_func("main", {A = T.Buffer({16, 16}, F32), C = T.Buffer({16, 16}, F32)}, function(A, C)
        local B = T.alloc_buffer({16, 16}, F32)
        local function b(i, j)
          T.block("B", function()
            local vi = T.axis.spatial(16, i)
            local vj = T.axis.spatial(16, j)
            B[{vi, vj}] = A[{vi, vj}]
          end)
        end
        if not after then for i, j in T.grid(16, 16) do b(i, j) end end
        for i, j in T.grid(16, 8) do
          if after then for t in T.serial(2) do b(i, j * 2 + t) end end
          T.block("C_1", function()
            local vi, vj = T.axis.remap("SS", {i, j})
            C[{vi, vj * 2}] = B[{vi, vj * 2}] + 1.0
          end)
          T.block("C_2", function()
            local vi, vj = T.axis.remap("SS", {i, j})
            C[{vi, vj * 2 + 1}] = B[{vi, vj * 2 + 1}] * 2.0
          end)
        end
      end)
    end
    local before = f(false)
    local sch = tir.Schedule(before)
    local _, loop = sch:get_loops(sch:get_block("C_1"))
    sch:compute_at(sch:get_block("B"), loop)
    V.check(sch, before, f(true))
  end)

  it("test_compute_at_simplify_static_bound", function()
    local function f(after)
      return T.prim_func("main", {A = T.Buffer({32, 1}, F32), C = T.Buffer({32, 1}, F32)}, function(A, C)
        local B = T.alloc_buffer({32, 1}, F32)
        local function b(i, j)
          T.block("B", function()
            local vi = T.axis.spatial(32, i)
            local vj = T.axis.spatial(1, j)
            B[{vi, vj}] = A[{vi, vj}] * 2.0
          end)
        end
        local function c(i, j)
          T.block("C", function()
            local vi = T.axis.spatial(32, i)
            local vj = T.axis.spatial(1, j)
            T.where(T.lt(j, 1))
            C[{vi, vj}] = B[{vi, vj}] + 1.0
          end)
        end
        if not after then
          for i, j in T.grid(32, 1) do b(i, j) end
          for i, j in T.grid(32, 32) do c(i, j) end
        else
          for i in T.serial(32) do
            for ax0, ax1 in T.grid(1, 1) do b(i + ax0, ax1) end
            for j in T.serial(32) do c(i, j) end
          end
        end
      end)
    end
    local before = f(false)
    local sch = tir.Schedule(before)
    local loop = sch:get_loops(sch:get_block("C"))
    sch:compute_at(sch:get_block("B"), loop, true)
    V.check(sch, before, f(true))
  end)

  it("test_compute_at_simplify_symbolic_predicate", awaits("symbolic loop bounds in the simplifier: k_0 < n proves k_0 * 32 + ax0 < n * 32 (the split itself gives TVM's n x 32 now)", function()
    local n = tir.var("n", "int64")
    local before = T.prim_func("main", {X = T.Buffer({tir.const(8, "int64"), n * 32}, F32), Y = T.Buffer({tir.const(8, "int64"), n * 32}, F32), n = n},
      function(X, Y, n)
        for i, k in T.grid(tir.const(8, "int64"), n * 32) do
          T.block("Y", function()
            local vi, vk = T.axis.remap("SS", {i, k})
            Y[{vi, vk}] = X[{vi, vk}]
          end)
        end
      end)
    local sch = tir.Schedule(before)
    local block = sch:get_block("Y")
    local _, k = sch:get_loops(block)
    local ko = sch:split(k, {nil, 32})
    local xx = sch:cache_read(block, 0, "global")
    sch:compute_at(xx, ko)
    local ext = V.extents(sch, xx)
    assert.are.equal(32, ext[#ext])
    assert.are.equal("True", tostring(sch._state:block_realize(xx.uid).predicate))
  end))

  it("test_compute_at_non_perfect_channel_group", function()
    -- X (40, 2, 2), groups of 16 channels, c_o tiles of 20 (TVM: 720 channels, tiles of 360)
    local before = T.prim_func("main", {X = T.Buffer({40, 2, 2}, F32), Y = T.Buffer({40, 2, 2}, F32)}, function(X, Y)
      local B = T.alloc_buffer({3}, F32)
      for i in T.serial(3) do
        T.block("init", function()
          local vi = T.axis.spatial(3, i)
          B[{vi}] = T.cast(F32, vi)
        end)
      end
      for c_o, h, w, c_i in T.grid(2, 2, 2, 20) do
        T.block("compute", function()
          local hh, ww = T.axis.remap("SS", {h, w})
          local cc = T.axis.spatial(40, c_o * 20 + c_i)
          Y[{cc, hh, ww}] = X[{cc, hh, ww}] + B[{cc // 16}]
        end)
      end
    end)
    local sch = tir.Schedule(before)
    local loop = sch:get_loops(sch:get_block("compute"))
    sch:compute_at(sch:get_block("init"), loop)
    V.check(sch, before)
    local ext = V.extents(sch, sch:get_block("init"))
    assert.are.equal(2, #ext)
    assert.are.equal(2, ext[1])
    -- TVM: 23 for 360 of 720 channels, the exact (c*360+359)//16 - (c*360)//16 + 1 over c in
    -- [0, 1] (rewrite_simplify's floordiv(x + c1, d) - floordiv(x, d) rule with the bounds);
    -- the same rule gives the exact 2 here
    assert.are.equal(2, ext[2])
  end)

  it("test_fail_subtree_complete_block", function()
    local f = T.prim_func("main", {A = T.Buffer({16, 16}, F32), C = T.Buffer({16, 16}, F32)}, function(A, C)
      local B = T.alloc_buffer({16, 16}, F32)
      for i in T.serial(16) do
        for j in T.serial(8) do
          T.block("B_0", function()
            local vi = T.axis.spatial(16, i)
            local vj = T.axis.spatial(16, j)
            B[{vi, vj}] = A[{vi, vj}] * 2.0
          end)
        end
        for j in T.serial(8) do
          T.block("B_1", function()
            local vi = T.axis.spatial(16, i)
            local vj = T.axis.spatial(16, j + 8)
            B[{vi, vj}] = A[{vi, vj}] * 2.0
          end)
        end
      end
      for i, j in T.grid(16, 16) do
        T.block("C", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          C[{vi, vj}] = B[{vi, vj}] + 1.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    local loop = sch:get_loops(sch:get_block("C"))
    V.schedule_error(function() sch:compute_at(sch:get_block("B_0"), loop) end, "compute_at")
  end)

  it("test_fail_not_in_same_scope", function()
    local sch = tir.Schedule(blockized_1(false))
    local loop = sch:get_loops(sch:get_block("C_inner"))
    V.schedule_error(function() sch:compute_at("B", loop) end, "compute_at")
  end)

  it("test_fail_loop_is_ancestor_of_block", function()
    local sch = tir.Schedule(two_elementwise())
    local loop = sch:get_loops(sch:get_block("B"))
    V.schedule_error(function() sch:compute_at(sch:get_block("B"), loop) end, "compute_at")
  end)

  it("test_fail_output_block", function()
    local sch = tir.Schedule(tiled(false))
    local loop = sch:get_loops(sch:get_block("B"))
    V.schedule_error(function() sch:compute_at("C", loop) end, "output")
  end)

  it("test_fail_all_consumers_under_loop", function()
    local f = T.prim_func("main", {A = T.Buffer({16, 16}, F32), C = T.Buffer({16, 16}, F32), D = T.Buffer({16, 16}, F32)}, function(A, C, D)
      local B = T.alloc_buffer({16, 16}, F32)
      for i, j in T.grid(16, 16) do
        T.block("B", function() local vi, vj = T.axis.remap("SS", {i, j}) B[{vi, vj}] = A[{vi, vj}] * 2.0 end)
      end
      for i, j in T.grid(16, 16) do
        T.block("C", function() local vi, vj = T.axis.remap("SS", {i, j}) C[{vi, vj}] = B[{vi, vj}] + 1.0 end)
      end
      for i, j in T.grid(16, 16) do
        T.block("D", function() local vi, vj = T.axis.remap("SS", {i, j}) D[{vi, vj}] = B[{vi, vj}] + 1.0 end)
      end
    end)
    local sch = tir.Schedule(f)
    local loop = sch:get_loops(sch:get_block("C"))
    V.schedule_error(function() sch:compute_at("B", loop) end, "consumer")
  end)

  it("test_fail_all_producers_under_loop", function()
    local f = T.prim_func("main", {A = T.Buffer({16, 16}, F32), D = T.Buffer({16, 16}, F32)}, function(A, D)
      local B = T.alloc_buffer({16, 16}, F32)
      local C = T.alloc_buffer({16, 16}, F32)
      for i, j in T.grid(16, 16) do
        T.block("B", function() local vi, vj = T.axis.remap("SS", {i, j}) B[{vi, vj}] = A[{vi, vj}] * 2.0 end)
      end
      for i, j in T.grid(16, 16) do
        T.block("C", function() local vi, vj = T.axis.remap("SS", {i, j}) C[{vi, vj}] = A[{vi, vj}] + 1.0 end)
      end
      for i, j in T.grid(16, 16) do
        T.block("D", function() local vi, vj = T.axis.remap("SS", {i, j}) D[{vi, vj}] = B[{vi, vj}] + C[{vi, vj}] end)
      end
    end)
    local sch = tir.Schedule(f)
    local loop = sch:get_loops(sch:get_block("C"))
    V.schedule_error(function() sch:reverse_compute_at("D", loop) end, "producer")
  end)

  it("test_compute_at_int64_loop", function()
    local te = V.te
    local n, m = tir.var("n", "int64"), tir.var("m", "int64")
    local A = te.placeholder({n, m}, F32, "A")
    local B = te.placeholder({n, m}, F32, "B")
    local C = te.compute({n, m}, function(i, j) return A[{i, j}] + B[{i, j}] end, "C")
    local D = te.compute({n, m}, function(i, j) return C[{i, j}] + 1.0 end, "D")
    local before = te.create_prim_func({A, B, D})
    local sch = tir.Schedule(before)
    local i = sch:get_loops(sch:get_block("D"))
    sch:compute_at(sch:get_block("C"), i)
    local function args(seed)
      return {tir.nd.random({3, 5}, F32, tir.nd.cpu(), {seed = seed}), tir.nd.random({3, 5}, F32, tir.nd.cpu(), {seed = seed + 1}),
              tir.nd.empty({3, 5}, F32)}
    end
    V.check(sch, before, nil, {args = args})
  end)

  it("test_compute_at_to_index", function()
    -- data (1, 3, 12, 12) int8 padded by 3 to 18x18, w (4, 3, 7, 7), conv stride 2 -> 6x6
    -- (TVM: 224 -> 230, 16 filters, 112x112)
    local function f(after)
      return T.prim_func("main", {data = T.Buffer({1, 3, 12, 12}, "int8"), w = T.Buffer({4, 3, 7, 7}, "int8"), conv = T.Buffer({1, 4, 6, 6}, "int32")},
        function(data, w, conv)
          local pad = T.alloc_buffer({1, 3, 18, 18}, "int8", {name = "pad"})
          local wbuf = T.alloc_buffer({4, 3, 7, 7}, "int8", {name = "wbuf"})
          local function pad_block(a, b, c, d)
            T.block("pad", function()
              local i0 = T.axis.spatial(1, a)
              local i1 = T.axis.spatial(3, b)
              local i2 = T.axis.spatial(18, c)
              local i3 = T.axis.spatial(18, d)
              pad[{i0, i1, i2, i3}] = T.if_then_else(T.And(T.And(T.le(3, i2), T.lt(i2, 15)), T.And(T.le(3, i3), T.lt(i3, 15))),
                data[{i0, i1, i2 - 3, i3 - 3}], T.int8(0))
            end)
          end
          if not after then for a, b, c, d in T.grid(1, 3, 18, 18) do pad_block(a, b, c, d) end end
          for i0 in T.serial(1) do
            if after then for ax0, ax1, ax2 in T.grid(3, 17, 17) do pad_block(0, ax0, ax1, ax2) end end
            for a0, a1, a2, a3 in T.grid(4, 3, 7, 7) do
              T.block("wbuf", function()
                local v0, v1, v2, v3 = T.axis.remap("SSSS", {a0, a1, a2, a3})
                wbuf[{v0, v1, v2, v3}] = w[{v0, v1, v2, v3}]
              end)
            end
            for i1, i2, i3, i4, i5, i6 in T.grid(4, 6, 6, 3, 7, 7) do
              T.block("conv", function()
                local nn, ff, yy, xx, rc, ry, rx = T.axis.remap("SSSSRRR", {i0, i1, i2, i3, i4, i5, i6})
                T.init(function() conv[{nn, ff, yy, xx}] = T.int32(0) end)
                conv[{nn, ff, yy, xx}] = conv[{nn, ff, yy, xx}] +
                  T.cast("int32", pad[{nn, rc, yy * 2 + ry, xx * 2 + rx}]) * T.cast("int32", wbuf[{ff, rc, ry, rx}])
              end)
            end
          end
        end)
    end
    local before = f(false)
    local sch = tir.Schedule(before)
    local axis = sch:get_loops(sch:get_block("conv"))
    sch:compute_at(sch:get_block("pad"), axis, false, -2)
    V.check(sch, before, f(true))
  end)

  local function to_index_main(after)
    return T.prim_func("main", {A = T.Buffer({16, 16}, F32), D = T.Buffer({16, 16}, F32)}, function(A, D)
      local B = T.alloc_buffer({16, 16}, F32)
      local C = T.alloc_buffer({16, 16}, F32)
      local function use(name, out, i, j)
        T.block(name, function()
          local vi = T.axis.spatial(16, i)
          local vj = T.axis.spatial(16, j)
          out[{vi, vj}] = B[{vi, vj}] + T.float32(1)
        end)
      end
      for i0, j0, i1 in T.grid(2, 2, 8) do
        for j1 in T.serial(8) do
          T.block("B", function()
            local vi = T.axis.spatial(16, i0 * 8 + i1)
            local vj = T.axis.spatial(16, j0 * 8 + j1)
            B[{vi, vj}] = A[{vi, vj}] * T.float32(2)
          end)
        end
        if after then for ax0 in T.serial(8) do use("D", D, i0 * 8 + i1, j0 * 8 + ax0) end end
        for ax0 in T.serial(8) do use("C", C, i0 * 8 + i1, j0 * 8 + ax0) end
      end
      if not after then for i, j in T.grid(16, 16) do use("D", D, i, j) end end
    end)
  end

  it("test_reverse_compute_at_to_index", function()
    local before = to_index_main(false)
    local sch = tir.Schedule(before)
    local axis = select(3, sch:get_loops(sch:get_block("B")))
    sch:reverse_compute_at(sch:get_block("D"), axis, false, 1)
    V.check(sch, before, to_index_main(true))
  end)

  it("test_reverse_compute_at_with_unit_loop", function()
    local i64 = function(v) return tir.const(v, "int64") end
    local before = T.prim_func("main", {A = T.Buffer({16, 16}, F32), D = T.Buffer({1, 2, 1}, F32)}, function(A, D)
      local B = T.alloc_buffer({16, 16}, F32)
      for i0, j0, i1 in T.grid(i64(2), i64(2), i64(8)) do
        for j1 in T.serial(i64(8)) do
          T.block("B", function()
            local vi = T.axis.spatial(i64(16), i0 * i64(8) + i1)
            local vj = T.axis.spatial(i64(16), j0 * i64(8) + j1)
            B[{vi, vj}] = A[{vi, vj}] * T.float32(2)
          end)
        end
      end
      for a0, a1, a2 in T.grid(i64(1), i64(2), i64(1)) do
        T.block("D", function()
          local v0, v1, v2 = T.axis.remap("SSS", {a0, a1, a2})
          D[{v0, v1, v2}] = B[{v0, v1}] + T.float32(1)
        end)
      end
    end)
    local sch = tir.Schedule(before)
    local axis = select(3, sch:get_loops(sch:get_block("B")))
    sch:reverse_compute_at(sch:get_block("D"), axis, true, 1)
    -- TVM: D moves under i_1 with loops (1, 8, 1) and a predicate keeping (0, 0..1, 0)
    local ext = V.extents(sch, sch:get_block("D"))
    assert.are.same({2, 2, 8, 1, 8, 1}, ext)
    V.check(sch, before)
  end)

  it("test_reverse_compute_at_layout_trans", function()
    local function f(after)
      return T.prim_func("main", {A = T.Buffer({1, 3, 5, 5, 16}, F32), C = T.Buffer({1, 6, 5, 5, 8}, F32)}, function(A, C)
        local B = T.alloc_buffer({1, 3, 5, 5, 16}, F32)
        local function compute(i0, i1, i2, i3, i4)
          T.block("compute", function()
            local v0, v1, v2, v3, v4 = T.axis.remap("SSSSS", {i0, i1, i2, i3, i4})
            B[{v0, v1, v2, v3, v4}] = A[{v0, v1, v2, v3, v4}] + T.float32(1)
          end)
        end
        local function trans(a0, a1, a2, a3, a4)
          T.block("T_layout_trans", function()
            local v0 = T.axis.spatial(1, a0)
            local v1 = T.axis.spatial(6, a1)
            local v2, v3, v4 = T.axis.remap("SSS", {a2, a3, a4})
            C[{v0, v1, v2, v3, v4}] = B[{v0, (v1 * 8 + v4) // 16, v2, v3, (v1 * 8 + v4) % 16}]
          end)
        end
        if not after then
          for i0, i1, i2, i3, i4 in T.grid(1, 3, 5, 5, 16) do compute(i0, i1, i2, i3, i4) end
          for a0, a1, a2, a3, a4 in T.grid(1, 6, 5, 5, 8) do trans(a0, a1, a2, a3, a4) end
        else
          for i0, i1 in T.grid(1, 3) do
            for i2, i3, i4 in T.grid(5, 5, 16) do compute(i0, i1, i2, i3, i4) end
            for a0, a1, a2, a3 in T.grid(2, 5, 5, 8) do trans(0, i1 * 2 + a0, a1, a2, a3) end
          end
        end
      end)
    end
    local before = f(false)
    local sch = tir.Schedule(before)
    local axis = select(2, sch:get_loops(sch:get_block("compute")))
    sch:reverse_compute_at(sch:get_block("T_layout_trans"), axis)
    V.check(sch, before, f(true))
  end)

  it("test_compute_at_sliced_concatenate", function()
    -- TVM: channels 16 + 32 + 53 = 101, sliced to 87, spatial 28x64; here 4 + 6 + 5 = 15
    -- sliced to 13, spatial 2x2 (X lands at 11..14: the slice needs X's first 2 rows)
    local function f(after)
      return T.prim_func("main", {Out = T.Buffer({1, 13, 2, 2}, F32)}, function(Out)
        local X = T.alloc_buffer({1, 4, 2, 2}, F32, {name = "X"})
        local Y = T.alloc_buffer({1, 6, 2, 2}, F32, {name = "Y"})
        local Z = T.alloc_buffer({1, 5, 2, 2}, F32, {name = "Z"})
        local Concat = T.alloc_buffer({1, 15, 2, 2}, F32, {name = "Concat"})
        for a0, a1, a2, a3 in T.grid(1, 6, 2, 2) do
          T.block("Y", function()
            local v0, v1, v2, v3 = T.axis.remap("SSSS", {a0, a1, a2, a3})
            Y[{v0, v1, v2, v3}] = T.float32(2)
          end)
        end
        for a0, a1, a2, a3 in T.grid(1, 5, 2, 2) do
          T.block("Z", function()
            local v0, v1, v2, v3 = T.axis.remap("SSSS", {a0, a1, a2, a3})
            Z[{v0, v1, v2, v3}] = T.float32(3)
          end)
        end
        local function compute(a1, a2, a3)
          T.block("compute", function()
            local v0 = T.axis.spatial(1, 0)
            local v1 = T.axis.spatial(4, a1)
            local v2, v3 = T.axis.remap("SS", {a2, a3})
            X[{v0, v1, v2, v3}] = T.float32(1)
          end)
        end
        local function concat(a1, a2, a3)
          T.block("T_concat", function()
            local v0 = T.axis.spatial(1, 0)
            local v1 = T.axis.spatial(15, a1)
            local v2, v3 = T.axis.remap("SS", {a2, a3})
            Concat[{v0, v1, v2, v3}] = T.if_then_else(T.le(11, v1), X[{v0, v1 - 11, v2, v3}],
              T.if_then_else(T.le(5, v1), Y[{v0, v1 - 5, v2, v3}], Z[{v0, v1, v2, v3}]))
          end)
        end
        if not after then
          for _, a1, a2, a3 in T.grid(1, 4, 2, 2) do compute(a1, a2, a3) end
          for _, a1, a2, a3 in T.grid(1, 15, 2, 2) do concat(a1, a2, a3) end
        end
        for a0 in T.serial(1) do
          if after then
            for a1, a2, a3 in T.grid(2, 2, 2) do compute(a1, a2, a3) end
            for a1, a2, a3 in T.grid(13, 2, 2) do concat(a1, a2, a3) end
          end
          for a1, a2, a3 in T.grid(13, 2, 2) do
            T.block("T_strided_slice", function()
              local v0, v1, v2, v3 = T.axis.remap("SSSS", {a0, a1, a2, a3})
              Out[{v0, v1, v2, v3}] = Concat[{v0, v1, v2, v3}]
            end)
          end
        end
      end)
    end
    local before = f(false)
    local sch = tir.Schedule(before)
    local loop = sch:get_loops(sch:get_block("T_strided_slice"))
    sch:compute_at(sch:get_block("T_concat"), loop)
    sch:compute_at(sch:get_block("compute"), loop)
    V.check(sch, before, f(true))
  end)
end)
