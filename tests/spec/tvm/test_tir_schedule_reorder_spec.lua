-- Port of TVM tests/python/s_tir/schedule/test_tir_schedule_reorder.py.
-- Shapes scaled down (128 -> 8; the pooling cascade 112 -> 16) to keep the interpreter fast.
-- TVM's opaque_access writes with tvm_fill_fragment; here a plain store under the same
-- declared whole-buffer regions (what reorder looks at).
local tir = require("tir")
local V = require("tvm.tvm_util")
local T = V.T

local N = 8
local function awaits(topic, fn) return function() V.awaits(function(m) pending(m) end, topic, fn) end end
local S4 = {N, N, N, N}

local function elementwise4(order, pred)
  return T.prim_func("main", {A = T.Buffer(S4, "float32"), B = T.Buffer(S4, "float32")}, function(A, B)
    for a, b, c, d in T.grid(N, N, N, N) do
      local lv = {}
      lv[order:sub(1, 1)], lv[order:sub(2, 2)], lv[order:sub(3, 3)], lv[order:sub(4, 4)] = a, b, c, d
      T.block("B", function()
        if pred then T.where(T.lt(lv.i * 512 + lv.j * 64 + lv.k * 8 + lv.l, 100)) end
        local vi, vj, vk, vl = T.axis.remap("SSSS", {lv.i, lv.j, lv.k, lv.l})
        B[{vi, vj, vk, vl}] = A[{vi, vj, vk, vl}] * 2.0
      end)
    end
  end)
end

local function opaque_access(swap)
  return T.prim_func("main", {A = T.Buffer({16, 16}, "float32"), B = T.Buffer({16, 16}, "float32")}, function(A, B)
    for _, name in ipairs({"A", "B"}) do
      local buf = name == "A" and A or B
      for x, y in T.grid(16, 16) do
        local i, j = x, y
        if swap then i, j = y, x end
        T.block(name, function()
          local vi, vj = T.axis.remap("SS", {i, j})
          T.reads()
          T.writes(buf[{{0, 16}, {0, 16}}])
          buf[{vi, vj}] = T.float32(1)
        end)
      end
    end
  end)
end

describe("test_tir_schedule_reorder", function()
  it("test_reorder", function()
    local before = elementwise4("ijkl")
    local sch = tir.Schedule(before)
    local i, _, _, l = sch:get_loops(sch:get_block("B"))
    sch:reorder(l, i)
    assert.is_true(V.check(sch, before, elementwise4("ljki"), {exact = true}))
  end)

  it("test_reorder2", function()
    local before = elementwise4("ijkl")
    local sch = tir.Schedule(before)
    local i, _, k, l = sch:get_loops(sch:get_block("B"))
    sch:reorder(k, i, l)
    assert.is_true(V.check(sch, before, elementwise4("kjil"), {exact = true}))
  end)

  it("test_reorder_with_opaque_access", function()
    local before = opaque_access(false)
    local sch = tir.Schedule(before)
    local i, j = sch:get_loops(sch:get_block("A"))
    sch:reorder(j, i)
    i, j = sch:get_loops(sch:get_block("B"))
    sch:reorder(j, i)
    V.check(sch, before, opaque_access(true))
  end)

  local function overlapped(name, reordered, nonaffine)
    return T.prim_func("main", {A = T.Buffer({14, 4}, "float32"), B = T.Buffer({14, 4}, "float32")}, function(A, B)
      -- TVM's non-affine variant runs v0 over 6, so v0 * v0 + v1 reaches 28 in a domain of 14
      -- (the interpreter refuses that); here v0 runs over 3
      for a, b, c in T.grid(nonaffine and 3 or 6, 4, 4) do
        local v0, v1, v2 = a, b, c
        if reordered then v0, v2, v1 = a, b, c end
        T.block(name, function()
          local i = T.axis.spatial(14, nonaffine and (v0 * v0 + v1) or (v0 * 2 + v1))
          local j = T.axis.spatial(4, v2)
          B[{i, j}] = A[{i, j}] + 1.0
        end)
      end
    end)
  end

  it("test_reorder_overlapped_access", function()
    local before = overlapped("block", false)
    local sch = tir.Schedule(before)
    local v0, v1, v2 = sch:get_loops(sch:get_block("block"))
    sch:reorder(v0, v2, v1)
    V.check(sch, before, overlapped("block", true))
  end)

  it("test_reorder_with_partial_affineness", function()
    local before = overlapped("block", false, true)
    local sch = tir.Schedule(before)
    local v0, v1, v2 = sch:get_loops(sch:get_block("block"))
    V.schedule_error(function() sch:reorder(v0, v2, v1) end, "reorder", "not linear")
    sch:reorder(v2, v1)
    V.check(sch, before, overlapped("block", true, true))
  end)

  it("test_reorder_with_cascade_tiled_ops", function()
    local function pools(tiled)
      return T.prim_func("main", {x = T.Buffer({1, 2, 16, 16}, "float32"), y2 = T.Buffer({1, 2, 12, 12}, "float32")}, function(x, y2)
        local y1 = T.alloc_buffer({1, 2, 14, 14}, "float32")
        local function pool(name, out, inp, n, c, h, w, kh, kw, H)
          T.block(name, function()
            local a0 = T.axis.spatial(1, n)
            local a1 = T.axis.spatial(2, c)
            local a2 = T.axis.spatial(H, h)
            local a3 = T.axis.spatial(H, w)
            local r0 = T.axis.reduce(3, kh)
            local r1 = T.axis.reduce(3, kw)
            T.init(function() out[{a0, a1, a2, a3}] = T.float32(0) end)
            out[{a0, a1, a2, a3}] = out[{a0, a1, a2, a3}] + inp[{a0, a1, a2 + r0, a3 + r1}]
          end)
        end
        if not tiled then
          for n, c, h, w, kh, kw in T.grid(1, 2, 14, 14, 3, 3) do pool("pool_0", y1, x, n, c, h, w, kh, kw, 14) end
          for n, c, h, w, kh, kw in T.grid(1, 2, 12, 12, 3, 3) do pool("pool_1", y2, y1, n, c, h, w, kh, kw, 12) end
        else
          for n, c, ho in T.grid(1, 2, 3) do
            for w, hi, kh, kw in T.grid(14, 6, 3, 3) do pool("pool_0", y1, x, 0, c, ho * 4 + hi, w, kh, kw, 14) end
            for hi, w, kh, kw in T.grid(4, 12, 3, 3) do pool("pool_1", y2, y1, n, c, ho * 4 + hi, w, kh, kw, 12) end
          end
        end
      end)
    end
    local before = pools(false)
    local sch = tir.Schedule(before)
    local pool_0, pool_1 = sch:get_block("pool_0"), sch:get_block("pool_1")
    local _, _, h = sch:get_loops(pool_1)
    local ho = sch:split(h, {nil, 4})
    sch:compute_at(pool_0, ho)
    local _, _, _, h_i, w = sch:get_loops(pool_0)
    sch:reorder(w, h_i)
    V.check(sch, before, pools(true))
  end)

  it("test_reorder_with_predicate", function()
    local sch = tir.Schedule(elementwise4("ijkl", true))
    local i, _, _, l = sch:get_loops(sch:get_block("B"))
    V.schedule_error(function() sch:reorder(l, i) end, "reorder", "couples loops")
  end)

  it("test_reorder_fail_with_multi_appearance_loops", function()
    local sch = tir.Schedule(elementwise4("ijkl"))
    local i, _, k = sch:get_loops(sch:get_block("B"))
    V.schedule_error(function() sch:reorder(k, i, i) end, "more than once")
  end)

  local function non_single_branch()
    return T.prim_func("main", {A = T.Buffer({N, N, N}, "float32"), B = T.Buffer({N, N, N}, "float32")}, function(A, B)
      local C = T.alloc_buffer({N, N, N}, "float32")
      for i, j in T.grid(N, N) do
        for k in T.serial(N) do
          T.block("C", function()
            local vi, vj, vk = T.axis.remap("SSS", {i, j, k})
            C[{vi, vj, vk}] = A[{vi, vj, vk}] * 2.0
          end)
        end
        for k in T.serial(N) do
          T.block("B", function()
            local vi, vj, vk = T.axis.remap("SSS", {i, j, k})
            B[{vi, vj, vk}] = C[{vi, vj, vk}] * 2.0
          end)
        end
      end
    end)
  end

  it("test_reorder_fail_with_non_single_branch_loop", function()
    local sch = tir.Schedule(non_single_branch())
    local i, _, k = sch:get_loops(sch:get_block("B"))
    V.schedule_error(function() sch:reorder(k, i) end, "reorder")
    sch = tir.Schedule(non_single_branch())
    local i2, _, k1 = sch:get_loops(sch:get_block("B"))
    local _, _, k2 = sch:get_loops(sch:get_block("C"))
    V.schedule_error(function() sch:reorder(k1, i2, k2) end, "reorder")
  end)

  it("test_reorder_fail_with_loops_not_under_same_scope", function()
    local f = T.prim_func("main", {A = T.Buffer({N, N, N}, "float32"), B = T.Buffer({N, N, N}, "float32")}, function(A, B)
      for i, j in T.grid(N, N) do
        T.block("A", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          T.reads(A[{vi, vj, {0, N}}])
          T.writes(B[{vi, vj, {0, N}}])
          for k in T.serial(N) do
            T.block("B", function()
              local vk = T.axis.spatial(N, k)
              T.reads(A[{vi, vj, vk}])
              T.writes(B[{vi, vj, vk}])
              B[{vi, vj, vk}] = A[{vi, vj, vk}] * 2.0
            end)
          end
        end)
      end
    end)
    local sch = tir.Schedule(f)
    local i = sch:get_loops(sch:get_block("A"))
    local k = sch:get_loops(sch:get_block("B"))
    V.schedule_error(function() sch:reorder(k, i) end, "reorder")
  end)

  it("test_reorder_fail_with_wrong_block_var_type", function()
    local f = T.prim_func("main", {A = T.Buffer({N, N, N}, "float32"), B = T.Buffer({N, N, N}, "float32")}, function(A, B)
      for i, j, k in T.grid(N, N, N) do
        T.block("B", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          local vk = T.axis.scan(N, k)
          B[{vi, vj, vk}] = A[{vi, vj, vk}] * 2.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    local i, _, k = sch:get_loops(sch:get_block("B"))
    V.schedule_error(function() sch:reorder(k, i) end, "reorder")
  end)

  it("test_reorder_fail_with_dependent_loops", function()
    local f = T.prim_func("main", {A = T.Buffer(S4, "float32"), B = T.Buffer(S4, "float32")}, function(A, B)
      for i in T.serial(N) do
        for j, k, l in T.grid(N, i, N) do
          T.block("B", function()
            local vi, vj, vk, vl = T.axis.remap("SSSS", {i, j, k, l})
            B[{vi, vj, vk, vl}] = A[{vi, vj, vk, vl}] * 2.0
          end)
        end
      end
    end)
    local sch = tir.Schedule(f)
    local i, _, _, l = sch:get_loops(sch:get_block("B"))
    V.schedule_error(function() sch:reorder(l, i) end, "reorder")
  end)

  it("test_reorder_fail_not_affine_bindings", function()
    local f = T.prim_func("main", {A = T.Buffer(S4, "float32"), B = T.Buffer(S4, "float32")}, function(A, B)
      for i, j, k, l in T.grid(N, N, N, 2) do
        T.block("B", function()
          local vi, vj, vk = T.axis.remap("SSS", {i, j, k})
          local vl = T.axis.spatial(N, l * 4)
          B[{vi, vj, vk, vl}] = A[{vi, vj, vk, vl}] * 2.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    local i, _, _, l = sch:get_loops(sch:get_block("B"))
    V.schedule_error(function() sch:reorder(l, i) end, "reorder", "a scaled iterator")
  end)
end)
