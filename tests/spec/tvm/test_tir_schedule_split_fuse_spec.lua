-- Port of TVM tests/python/s_tir/schedule/test_tir_schedule_split_fuse.py.
-- Shapes are scaled down (TVM's 128^3 becomes 16^3) to keep the interpreter fast; split
-- factors are scaled with them so that each case keeps TVM's structure (which splits divide,
-- which get a predicate, unit factors).
local tir = require("tir")
local V = require("tvm.tvm_util")
local T = V.T

local N = 16
local function awaits(topic, fn) return function() V.awaits(function(m) pending(m) end, topic, fn) end end

local function elementwise()
  return T.prim_func("main", {A = T.Buffer({N, N, N}, "float32"), B = T.Buffer({N, N, N}, "float32")}, function(A, B)
    for i, j, k in T.grid(N, N, N) do
      T.block("B", function()
        local vi, vj, vk = T.axis.remap("SSS", {i, j, k})
        B[{vi, vj, vk}] = A[{vi, vj, vk}] * 2.0
      end)
    end
  end)
end

local function elementwise_symbolic()
  local n = tir.var("n")
  return T.prim_func("main", {A = T.Buffer({N, N, n}, "float32"), B = T.Buffer({N, N, n}, "float32"), n = n},
    function(A, B, n)
      for i, j, k in T.grid(N, N, n) do
        T.block("B", function()
          local vi, vj, vk = T.axis.remap("SSS", {i, j, k})
          B[{vi, vj, vk}] = A[{vi, vj, vk}] * 2.0
        end)
      end
    end)
end

local function elementwise_with_seq()
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

local function elementwise_with_anno()
  return T.prim_func("main", {A = T.Buffer({N, N, N}, "float32"), B = T.Buffer({N, N, N}, "float32")}, function(A, B)
    for i, j in T.grid(N, N) do
      for k in T.serial(N, {annotations = {useless_annotation = 1}}) do
        T.block("B", function()
          local vi, vj, vk = T.axis.remap("SSS", {i, j, k})
          B[{vi, vj, vk}] = A[{vi, vj, vk}] * 2.0
        end)
      end
    end
  end)
end

local function elementwise_with_thread_binding()
  return T.prim_func("main", {A = T.Buffer({N, N, N}, "float32"), B = T.Buffer({N, N, N}, "float32")}, function(A, B)
    for i, j in T.grid(N, N) do
      for k in T.thread_binding(N, "threadIdx.x") do
        T.block("B", function()
          local vi, vj, vk = T.axis.remap("SSS", {i, j, k})
          B[{vi, vj, vk}] = A[{vi, vj, vk}] * 2.0
        end)
      end
    end
  end)
end

local function elementwise_with_starting_point()
  return T.prim_func("main", {A = T.Buffer({N, N, N}, "float32"), B = T.Buffer({N, N, N}, "float32")}, function(A, B)
    for i, j in T.grid(N, N) do
      for k in T.serial(10, N) do
        T.block("B", function()
          local vi, vj, vk = T.axis.remap("SSS", {i, j, k})
          B[{vi, vj, vk}] = A[{vi, vj, vk}] * 2.0
        end)
      end
    end
  end)
end

local function elementwise_with_opaque_block()
  return T.prim_func("main", {A = T.Buffer({N, N, N}, "float32"), B = T.Buffer({N, N, N}, "float32")}, function(A, B)
    for i, j, k in T.grid(N, N, N) do
      T.block("opaque", function()
        T.reads(A[{i, j, k}])
        T.writes(B[{i, j, k}])
        T.block("B", function()
          local vi, vj, vk = T.axis.remap("SSS", {i, j, k})
          B[{vi, vj, vk}] = A[{vi, vj, vk}] * 2.0
        end)
      end)
    end
  end)
end

local function opaque_access()
  return T.prim_func("main", {A = T.Buffer({N, N}, "float32"), B = T.Buffer({N, N}, "float32")}, function(A, B)
    for i, j in T.grid(N, N) do
      T.block("A", function()
        local vi, vj = T.axis.remap("SS", {i, j})
        T.reads()
        T.writes(A[{{0, N}, {0, N}}])
        A[{vi, vj}] = T.float32(1)
      end)
    end
    for i, j in T.grid(N, N) do
      T.block("B", function()
        local vi, vj = T.axis.remap("SS", {i, j})
        T.reads()
        T.writes(B[{{0, N}, {0, N}}])
        B[{vi, vj}] = T.float32(2)
      end)
    end
  end)
end

local function elementwise_dependent_loops()
  return T.prim_func("main", {A = T.Buffer({N, N, N}, "float32"), B = T.Buffer({N, N, N}, "float32")}, function(A, B)
    for i in T.serial(N) do
      for j, k in T.grid(i, N) do
        T.block("B", function()
          local vi = T.axis.spatial(N, i)
          local vj = T.axis.spatial(N, j)
          local vk = T.axis.spatial(N, k)
          B[{vi, vj, vk}] = A[{vi, vj, vk}] * 2.0
        end)
      end
    end
  end)
end

local function elementwise_not_affine()
  -- TVM: (127, 128), i in 4, j < min(31, 126 - i*32) + 1; here (15, 4), i in 4, j < min(3, 14 - i*4) + 1
  return T.prim_func("main", {A = T.Buffer({15, 4}, "float32"), B = T.Buffer({15, 4}, "float32")}, function(A, B)
    for i in T.serial(4) do
      for j, k in T.grid(T.min(3, 14 - i * 4) + 1, 4) do
        T.block("B", function()
          local vi = T.axis.spatial(15, i * 4 + j)
          local vj = T.axis.spatial(4, k)
          B[{vi, vj}] = A[{vi, vj}]
        end)
      end
    end
  end)
end

local function sym_args(n)
  return function(seed)
    return {tir.nd.random({N, N, n}, "float32", tir.nd.cpu(), {seed = seed}),
            tir.nd.random({N, N, n}, "float32", tir.nd.cpu(), {seed = seed + 7}), n}
  end
end

describe("test_tir_schedule_split_fuse", function()
  it("test_fuse", function()
    local before = elementwise()
    local sch = tir.Schedule(before)
    local i, j, k = sch:get_loops(sch:get_block("B"))
    sch:fuse(i, j, k)
    local expected = T.prim_func("main", {A = T.Buffer({N, N, N}, "float32"), B = T.Buffer({N, N, N}, "float32")}, function(A, B)
      for fused in T.serial(N * N * N) do
        T.block("B", function()
          local vi = T.axis.spatial(N, fused // (N * N))
          local vj = T.axis.spatial(N, fused % (N * N) // N)
          local vk = T.axis.spatial(N, fused % N)
          B[{vi, vj, vk}] = A[{vi, vj, vk}] * 2.0
        end)
      end
    end)
    V.check(sch, before, expected)
  end)

  local function split_case0()
    return T.prim_func("main", {A = T.Buffer({N, N, N}, "float32"), B = T.Buffer({N, N, N}, "float32")}, function(A, B)
      for i1, i2, i3, j1, j2, k1, k2 in T.grid(2, 1, 8, 4, 4, 2, 8) do
        T.block("B", function()
          local vi = T.axis.spatial(N, i1 * 8 + i2 * 8 + i3)
          local vj = T.axis.spatial(N, j1 * 4 + j2)
          local vk = T.axis.spatial(N, k1 * 8 + k2)
          B[{vi, vj, vk}] = A[{vi, vj, vk}] * 2.0
        end)
      end
    end)
  end

  it("test_split", function()
    -- TVM also runs it with disable_predication=True: tirlua's split has no such option
    -- (dividing factors get no predicate either way).
    local before = elementwise()
    local sch = tir.Schedule(before)
    local i, j, k = sch:get_loops(sch:get_block("B"))
    sch:split(i, {2, 1, 8})
    sch:split(j, {4, 4})
    sch:split(k, {2, 8})
    V.check(sch, before, split_case0())
  end)

  it("test_split_with_inferred_factor", function()
    local before = elementwise()
    local sch = tir.Schedule(before)
    local i, j, k = sch:get_loops(sch:get_block("B"))
    sch:split(i, {nil, 1, 8})
    sch:split(j, {2, nil, 8})
    sch:split(k, {2, 1, -1})
    local expected = T.prim_func("main", {A = T.Buffer({N, N, N}, "float32"), B = T.Buffer({N, N, N}, "float32")}, function(A, B)
      for i1, i2, i3, j1, j2, j3, k1, k2, k3 in T.grid(2, 1, 8, 2, 1, 8, 2, 1, 8) do
        T.block("B", function()
          local vi = T.axis.spatial(N, i1 * 8 + i2 * 8 + i3)
          local vj = T.axis.spatial(N, j1 * 8 + j2 * 8 + j3)
          local vk = T.axis.spatial(N, k1 * 8 + k2 * 8 + k3)
          B[{vi, vj, vk}] = A[{vi, vj, vk}] * 2.0
        end)
      end
    end)
    V.check(sch, before, expected)
    assert.are.same({2, 1, 8, 2, 1, 8, 2, 1, 8}, V.extents(sch, sch:get_block("B")))
  end)

  it("test_split_with_dynamic_inferred_factor", function()
    local nv, mv = tir.var("n"), tir.var("m")
    local before = T.prim_func("main", {A = T.Buffer({nv, 8, mv}, "float32"), B = T.Buffer({nv, 8, mv}, "float32"),
                                        n = nv, m = mv}, function(A, B, n, m)
      for i, j, k in T.grid(n, 8, m) do
        T.block("B", function()
          local vi, vj, vk = T.axis.remap("SSS", {i, j, k})
          B[{vi, vj, vk}] = A[{vi, vj, vk}] * 2.0
        end)
      end
    end)
    local sch = tir.Schedule(before)
    local i, j, k = sch:get_loops(sch:get_block("B"))
    sch:split(i, {nil, 4})
    sch:split(j, {2, 4})
    sch:split(k, {4, -1})  -- TVM [4, None]: Lua drops a trailing nil
    local ext = V.extents(sch, sch:get_block("B"))
    assert.are.equal(6, #ext)
    assert.are.equal(4, ext[2]); assert.are.equal(2, ext[3]); assert.are.equal(4, ext[4]); assert.are.equal(4, ext[5])
    local blk = sch:get(sch:get_block("B"))
    assert.are_not.equal("True", tostring(sch._state:block_realize(sch:get_block("B").uid).predicate))
    assert.are.equal("B", blk.name)
    local function args(seed)
      return {tir.nd.random({6, 8, 7}, "float32", tir.nd.cpu(), {seed = seed}),
              tir.nd.random({6, 8, 7}, "float32", tir.nd.cpu(), {seed = seed + 1}), 6, 7}
    end
    V.check(sch, before, nil, {args = args})
  end)

  it("test_split_with_predicate", function()
    -- TVM: factors {1000, 2, 3}, {nil, 129}, {3, nil} over 128; here over 16
    local before = elementwise()
    local sch = tir.Schedule(before)
    local i, j, k = sch:get_loops(sch:get_block("B"))
    sch:split(i, {100, 2, 3})
    sch:split(j, {nil, 17})
    sch:split(k, {3, -1}) -- Lua drops a trailing nil: -1 marks the inferred factor
    local expected = T.prim_func("main", {A = T.Buffer({N, N, N}, "float32"), B = T.Buffer({N, N, N}, "float32")}, function(A, B)
      for i0, i1, i2, j0, j1, k0, k1 in T.grid(100, 2, 3, 1, 17, 3, 6) do
        T.block("B", function()
          local vi = T.axis.spatial(N, i0 * 6 + i1 * 3 + i2)
          local vj = T.axis.spatial(N, j0 * 17 + j1)
          local vk = T.axis.spatial(N, k0 * 6 + k1)
          T.where(T.And(T.And(T.lt(i0 * 6 + i1 * 3 + i2, N), T.lt(j0 * 17 + j1, N)), T.lt(k0 * 6 + k1, N)))
          B[{vi, vj, vk}] = A[{vi, vj, vk}] * 2.0
        end)
      end
    end)
    V.check(sch, before, expected)
  end)

  it("test_fuse_fail_not_only_child", function()
    local sch = tir.Schedule(elementwise_with_seq())
    local _, j, k = sch:get_loops(sch:get_block("B"))
    V.schedule_error(function() sch:fuse(j, k) end, "fuse")
  end)

  it("test_fuse_split_fail_with_annotation", function()
    local sch = tir.Schedule(elementwise_with_anno())
    local _, j, k = sch:get_loops(sch:get_block("B"))
    V.schedule_error(function() sch:fuse(j, k) end, "annotat")
    V.schedule_error(function() sch:split(k, {nil, 10}) end, "annotat")
  end)

  it("test_fuse_split_fail_not_start_with_zero", function()
    -- TVM's test uses elementwise_with_anno (a copy-paste); the loop from 10 is what it means
    local sch = tir.Schedule(elementwise_with_starting_point())
    local _, j, k = sch:get_loops(sch:get_block("B"))
    V.schedule_error(function() sch:fuse(j, k) end, "fuse")
    V.schedule_error(function() sch:split(k, {nil, 2}) end, "split")
  end)

  it("test_fuse_with_opaque_block", function()
    local before = elementwise_with_opaque_block()
    local sch = tir.Schedule(before)
    local i, j, k = sch:get_loops(sch:get_block("opaque"))
    sch:fuse(i, j, k)
    local expected = T.prim_func("main", {A = T.Buffer({N, N, N}, "float32"), B = T.Buffer({N, N, N}, "float32")}, function(A, B)
      for f in T.serial(N * N * N) do
        T.block("opaque", function()
          T.reads(A[{f // (N * N), f % (N * N) // N, f % N}])
          T.writes(B[{f // (N * N), f % (N * N) // N, f % N}])
          T.block("B", function()
            local vi = T.axis.spatial(N, f // (N * N))
            local vj = T.axis.spatial(N, f % (N * N) // N)
            local vk = T.axis.spatial(N, f % N)
            B[{vi, vj, vk}] = A[{vi, vj, vk}] * 2.0
          end)
        end)
      end
    end)
    V.check(sch, before, expected)
  end)

  it("test_fuse_with_opaque_access", function()
    local before = opaque_access()
    local sch = tir.Schedule(before)
    sch:fuse(sch:get_loops(sch:get_block("A")))
    sch:fuse(sch:get_loops(sch:get_block("B")))
    assert.are.same({N * N}, V.extents(sch, sch:get_block("A")))
    assert.are.same({N * N}, V.extents(sch, sch:get_block("B")))
    V.check(sch, before)
    -- the declared (opaque) regions stay whole-buffer
    assert.matches("T.writes%(A%[{{0, 16}, {0, 16}}%]%)", tostring(sch.mod))
  end)

  it("test_split_with_opaque_block", function()
    local before = elementwise_with_opaque_block()
    local sch = tir.Schedule(before)
    local i = sch:get_loops(sch:get_block("opaque"))
    sch:split(i, {nil, 4})
    assert.are.same({4, 4, N, N}, V.extents(sch, sch:get_block("opaque")))
    assert.are.same({}, V.extents(sch, sch:get_block("B"))) -- get_loops stops at the enclosing block, as TVM
    V.check(sch, before)
    assert.matches("T.reads%(A%[{i_0 %* 4 %+ i_1, j, k}%]%)", tostring(sch.mod))
  end)

  it("test_split_with_opaque_access", function()
    local before = opaque_access()
    local sch = tir.Schedule(before)
    local _, j = sch:get_loops(sch:get_block("A"))
    sch:split(j, {nil, 4})
    _, j = sch:get_loops(sch:get_block("B"))
    sch:split(j, {nil, 4})
    assert.are.same({N, 4, 4}, V.extents(sch, sch:get_block("A")))
    assert.are.same({N, 4, 4}, V.extents(sch, sch:get_block("B")))
    V.check(sch, before)
  end)

  it("test_split_with_non_positive_factors", function()
    local sch = tir.Schedule(elementwise())
    local i, j, k = sch:get_loops(sch:get_block("B"))
    V.schedule_error(function() sch:split(i, {-2, -64}) end, "factor")
    V.schedule_error(function() sch:split(j, {0, nil}) end, "factor")
    V.schedule_error(function() sch:split(k, {nil, -16}) end, "factor")
  end)

  it("test_fuse_split_fail_with_thread_binding", function()
    local sch = tir.Schedule(elementwise_with_thread_binding())
    local _, j, k = sch:get_loops(sch:get_block("B"))
    V.schedule_error(function() sch:fuse(j, k) end, "fuse")
    V.schedule_error(function() sch:split(k, {nil, 10}) end, "split")
  end)

  it("test_fuse_symbolic", function()
    local before = elementwise_symbolic()
    local sch = tir.Schedule(before)
    local i, j, k = sch:get_loops(sch:get_block("B"))
    sch:fuse(i, j, k)
    local ext = V.extents(sch, sch:get_block("B"))
    assert.are.equal(1, #ext)
    V.check(sch, before, nil, {args = sym_args(5)})
  end)

  it("test_split_symbolic", function()
    local before = elementwise_symbolic()
    local sch = tir.Schedule(before)
    local _, _, k = sch:get_loops(sch:get_block("B"))
    sch:split(k, {10, -1})
    local ext = V.extents(sch, sch:get_block("B"))
    assert.are.same({N, N, 10}, {ext[1], ext[2], ext[3]})
    V.check(sch, before, nil, {args = sym_args(23)})
  end)

  it("test_fuse_fail_with_dependent_loops", function()
    local sch = tir.Schedule(elementwise_dependent_loops())
    local i, j = sch:get_loops(sch:get_block("B"))
    V.schedule_error(function() sch:fuse(i, j) end, "fuse")
  end)

  it("test_fuse_not_affine", function()
    local before = elementwise_not_affine()
    local sch = tir.Schedule(before)
    local _, j, k = sch:get_loops(sch:get_block("B"))
    sch:fuse(j, k)
    local loops = V.loops(sch, sch:get_block("B"))
    assert.are.equal(2, #loops)
    assert.are.equal(4, loops[1].extent.value)
    V.check(sch, before)
  end)

  local function zero_dim(n_units)
    return T.prim_func("main", {A = T.Buffer({}, "int32"), B = T.Buffer({}, "int32"), C = T.Buffer({}, "int32")}, function(A, B, C)
      local function body()
        T.block("C", function()
          local _ = T.axis.spatial(1, 0)
          C[{}] = A[{}] + B[{}]
        end)
      end
      if n_units == 0 then body()
      elseif n_units == 1 then for _ in T.serial(1) do body() end
      else for _, _ in T.grid(1, 1) do body() end end
    end)
  end

  it("test_add_unit_loop_above_block", function()
    local before = zero_dim(0)
    local sch = tir.Schedule(before)
    sch:add_unit_loop(sch:get_block("C"))
    V.check(sch, before, zero_dim(1))
  end)

  it("test_add_unit_loop_above_loop", function()
    local before = zero_dim(1)
    local sch = tir.Schedule(before)
    local loop = sch:get_loops(sch:get_block("C"))
    sch:add_unit_loop(loop)
    V.check(sch, before, zero_dim(2))
  end)

  local function int64_func(m)
    local te = V.te
    local A = te.placeholder({tir.const(m, "int64")}, "float32", "A")
    local B = te.compute({tir.const(m, "int64")}, function(i) return A[{i}] + 1.0 end, "B")
    return te.create_prim_func({A, B})
  end

  it("test_split_int64_extent_with_mixed_factors", function()
    local before = int64_func(384)
    local sch = tir.Schedule(before)
    local i = sch:get_loops(sch:get_block("B"))
    sch:split(i, {tir.const(1, "int64"), tir.const(512, "int32")})
    V.check(sch, before)
  end)

  it("test_split_int64_extent_with_int32_factors", function()
    local before = int64_func(12)
    local sch = tir.Schedule(before)
    local i = sch:get_loops(sch:get_block("B"))
    sch:split(i, {tir.const(1, "int32"), tir.const(1, "int32"), tir.const(3, "int32"), tir.const(1, "int32"), tir.const(4, "int32")})
    assert.are.same({1, 1, 3, 1, 4}, V.extents(sch, sch:get_block("B")))
    for _, l in ipairs(V.loops(sch, sch:get_block("B"))) do assert.are.equal("int64", l.loop_var.dtype) end
    V.check(sch, before)
  end)

  it("test_split_int64_factors", function()
    local before = elementwise_symbolic()
    local sch = tir.Schedule(before)
    local _, _, k = sch:get_loops(sch:get_block("B"))
    sch:split(k, {tir.const(10, "int64"), -1})
    assert.are.equal(10, V.extents(sch, sch:get_block("B"))[3])
    V.check(sch, before, nil, {args = sym_args(12)})
  end)

  it("test_fused_symbolic_2D_tiling", function()
    local Mv, Nv = tir.var("M"), tir.var("N")
    local before = T.prim_func("main", {A = T.Buffer({Mv, Nv}, "float32"), B = T.Buffer({Mv, Nv}, "float32"),
                                        M = Mv, N = Nv}, function(A, B, M, N)
      for i, j in T.grid(M, N) do
        T.block("B", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          B[{vi, vj}] = A[{vi, vj}] * 2.0
        end)
      end
    end)
    local sch = tir.Schedule(before)
    local i, j = sch:get_loops(sch:get_block("B"))
    local i0, i1 = sch:split(i, {nil, 8})
    local j0, j1 = sch:split(j, {nil, 4})
    sch:reorder(i0, j0, i1, j1)
    sch:fuse(i0, j0)
    local ext = V.extents(sch, sch:get_block("B"))
    assert.are.equal(3, #ext)
    assert.are.same({8, 4}, {ext[2], ext[3]})
    local function args(seed)
      return {tir.nd.random({13, 10}, "float32", tir.nd.cpu(), {seed = seed}),
              tir.nd.random({13, 10}, "float32", tir.nd.cpu(), {seed = seed + 1}), 13, 10}
    end
    V.check(sch, before, nil, {args = args})
  end)
end)
