-- Port of TVM tests/python/s_tir/schedule/test_tir_schedule_for_kind.py (parallel,
-- vectorize, unroll, bind).  Shapes scaled down: 128 -> 16 (split factors scaled: 32x4 ->
-- 4x4, 13x10 -> 4x5).
local tir = require("tir")
local V = require("tvm.tvm_util")
local T = V.T

local N = 16
local function awaits(topic, fn) return function() V.awaits(function(m) pending(m) end, topic, fn) end end

-- a loop of extent n of the given kind ("serial", "parallel", "vectorized", "unroll", or a
-- thread tag), calling body(v)
local function loop(kind, n, body)
  local it
  if kind == "serial" then it = T.serial(n)
  elseif kind == "parallel" then it = T.parallel(n)
  elseif kind == "vectorized" then it = T.vectorized(n)
  elseif kind == "unroll" then it = T.unroll(n)
  else it = T.thread_binding(n, kind) end
  for v in it do body(v) end
end

local function element_wise(ki, kj)
  return T.prim_func("main", {A = T.Buffer({N, N}, "float32"), B = T.Buffer({N, N}, "float32")}, function(A, B)
    loop(ki or "serial", N, function(i)
      loop(kj or "serial", N, function(j)
        T.block("B", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          B[{vi, vj}] = A[{vi, vj}] * 2.0
        end)
      end)
    end)
  end)
end

local function compute_at_split(kj0, kj1o, kj1i)
  return T.prim_func("main", {A = T.Buffer({N, N}, "float32"), C = T.Buffer({N, N}, "float32")}, function(A, C)
    local B = T.alloc_buffer({N, N}, "float32")
    for i in T.serial(N) do
      loop(kj0 or "serial", N, function(j0)
        T.block("B", function()
          local vi, vj = T.axis.remap("SS", {i, j0})
          B[{vi, vj}] = A[{vi, vj}] * 2.0
        end)
      end)
      loop(kj1o or "serial", 4, function(j1o)
        loop(kj1i or "serial", 4, function(j1i)
          T.block("C", function()
            local vi = T.axis.spatial(N, i)
            local vj = T.axis.spatial(N, j1o * 4 + j1i)
            C[{vi, vj}] = B[{vi, vj}] + 1.0
          end)
        end)
      end)
    end
  end)
end

local function split_predicate(ki, kj0)
  return T.prim_func("main", {A = T.Buffer({N, N}, "float32"), B = T.Buffer({N, N}, "float32")}, function(A, B)
    loop(ki or "serial", N, function(i)
      loop(kj0 or "serial", 4, function(j0)
        for j1 in T.serial(5) do
          T.block("B", function()
            T.where(T.lt(j0 * 5 + j1, N))
            local vi = T.axis.spatial(N, i)
            local vj = T.axis.spatial(N, j0 * 5 + j1)
            B[{vi, vj}] = A[{vi, vj}] * 2.0
          end)
        end
      end)
    end)
  end)
end

local function matmul()
  return T.prim_func("main", {A = T.Buffer({N, N}, "float32"), B = T.Buffer({N, N}, "float32"), C = T.Buffer({N, N}, "float32")},
    function(A, B, C)
      for i, j, k in T.grid(N, N, N) do
        T.block("C", function()
          local vi, vj, vk = T.axis.remap("SSR", {i, j, k})
          T.init(function() C[{vi, vj}] = T.float32(0) end)
          C[{vi, vj}] = C[{vi, vj}] + A[{vi, vk}] * B[{vj, vk}]
        end)
      end
    end)
end

local function rowsum(ki, kk)
  return T.prim_func("main", {A = T.Buffer({N, N}, "float32"), B = T.Buffer({N}, "float32")}, function(A, B)
    loop(ki or "serial", N, function(i)
      loop(kk or "serial", N, function(k)
        T.block("B", function()
          local vi, vk = T.axis.remap("SR", {i, k})
          T.init(function() B[{vi}] = T.float32(0) end)
          B[{vi}] = B[{vi}] + A[{vi, vk}]
        end)
      end)
    end)
  end)
end

local function decomposed_gemm(vec_c, vec_init)
  return T.prim_func("main", {A = T.Buffer({16, 16}, "float32"), B = T.Buffer({16, 16}, "float32"), C = T.Buffer({16, 16}, "float32")},
    function(A, B, C)
      local lc = T.alloc_buffer({16, 16}, "float32")
      for i, j in T.grid(4, 4) do
        for ii in T.serial(4) do
          loop(vec_init and "vectorized" or "serial", 4, function(jj)
            T.block("init", function()
              local vi = T.axis.spatial(16, i * 4 + ii)
              local vj = T.axis.spatial(16, j * 4 + jj)
              lc[{vi, vj}] = T.float32(0)
            end)
          end)
        end
        for k, ii, jj in T.grid(16, 4, 4) do
          T.block("update", function()
            local vi = T.axis.spatial(16, i * 4 + ii)
            local vj = T.axis.spatial(16, j * 4 + jj)
            local vk = T.axis.reduce(16, k)
            lc[{vi, vj}] = lc[{vi, vj}] + A[{vi, vk}] * B[{vj, vk}]
          end)
        end
        for ii in T.serial(4) do
          loop(vec_c and "vectorized" or "serial", 4, function(jj)
            T.block("C", function()
              local vi = T.axis.spatial(16, i * 4 + ii)
              local vj = T.axis.spatial(16, j * 4 + jj)
              C[{vi, vj}] = lc[{vi, vj}]
            end)
          end)
        end
      end
    end)
end

describe("test_tir_schedule_for_kind", function()
  it("test_parallel", function()
    local before = element_wise()
    local s = tir.Schedule(before)
    local i = s:get_loops(s:get_block("B"))
    s:parallel(i)
    assert.is_true(V.check(s, before, element_wise("parallel"), {exact = true}))
  end)

  it("test_parallel_predicate", function()
    local before = split_predicate()
    local s = tir.Schedule(before)
    local _, j = s:get_loops(s:get_block("B"))
    s:parallel(j)
    V.check(s, before, split_predicate(nil, "parallel"))
  end)

  it("test_parallel_reduction_block_iter", function()
    local s = tir.Schedule(matmul())
    local _, _, k = s:get_loops(s:get_block("C"))
    V.schedule_error(function() s:parallel(k) end, "parallel")
  end)

  it("test_parallel_not_quasi_affine", function()
    local f = T.prim_func("main", {A = T.Buffer({N, 128}, "float32"), B = T.Buffer({N}, "float32")}, function(A, B)
      for i, k in T.grid(N, 16) do
        T.block("B", function()
          local vi = T.axis.spatial(N, i)
          local vk = T.axis.reduce(128, (k * k) // 2)
          T.init(function() B[{vi}] = T.float32(0) end)
          B[{vi}] = B[{vi}] + A[{vi, vk}]
        end)
      end
    end)
    local s = tir.Schedule(f)
    local i = s:get_loops(s:get_block("B"))
    V.schedule_error(function() s:parallel(i) end, "parallel")
  end)

  it("test_parallel_not_compact_data_flow", function()
    local f = T.prim_func("main", {A = T.Buffer({N, 16}, "float32"), B = T.Buffer({N}, "float32")}, function(A, B)
      for i, k in T.grid(N, 16) do
        T.block("B", function()
          local vi, vk = T.axis.remap("SR", {i, k})
          T.init(function() B[{vk}] = T.float32(0) end)
          B[{vk}] = B[{vk}] + A[{vi, vk}]
        end)
      end
    end)
    local s = tir.Schedule(f)
    local i = s:get_loops(s:get_block("B"))
    V.schedule_error(function() s:parallel(i) end, "parallel")
  end)

  it("test_vectorize", function()
    local before = compute_at_split()
    local s = tir.Schedule(before)
    local _, _, j1i = s:get_loops(s:get_block("C"))
    s:vectorize(j1i)
    assert.is_true(V.check(s, before, compute_at_split(nil, nil, "vectorized"), {exact = true}))
  end)

  it("test_vectorize_predicate", function()
    local before = split_predicate()
    local s = tir.Schedule(before)
    local i = s:get_loops(s:get_block("B"))
    s:vectorize(i)
    V.check(s, before, split_predicate("vectorized"))
  end)

  it("test_vectorize_opaque_block", function()
    local f = T.prim_func("main", {A = T.Buffer({16}, "float32")}, function(A)
      for i in T.serial(15) do
        T.block("opaque", function()
          A[{i + 1}] = A[{i + 1}] + A[{i}]
        end)
      end
    end)
    local s = tir.Schedule(f)
    local i = s:get_loops(s:get_block("opaque"))
    V.schedule_error(function() s:vectorize(i) end, "vectorize")
  end)

  it("test_unroll", function()
    local before = rowsum()
    local s = tir.Schedule(before)
    local i = s:get_loops(s:get_block("B"))
    s:unroll(i)
    assert.is_true(V.check(s, before, rowsum("unroll"), {exact = true}))
  end)

  it("test_unroll_after_bind", function()
    local before = rowsum()
    local s = tir.Schedule(before)
    local i = s:get_loops(s:get_block("B"))
    s:bind(i, "blockIdx.x")
    s:unroll(i)
    V.check(s, before, rowsum("unroll"))
  end)

  it("test_bind1", function()
    local before = element_wise()
    local s = tir.Schedule(before)
    local i = s:get_loops(s:get_block("B"))
    s:bind(i, "threadIdx.x")
    assert.is_true(V.check(s, before, element_wise("threadIdx.x"), {exact = true}))
  end)

  it("test_bind2", function()
    local before = compute_at_split()
    local s = tir.Schedule(before)
    local _, j0 = s:get_loops(s:get_block("B"))
    local _, j1o = s:get_loops(s:get_block("C"))
    s:bind(j0, "threadIdx.x")
    s:bind(j1o, "threadIdx.x")
    assert.is_true(V.check(s, before, compute_at_split("threadIdx.x", "threadIdx.x"), {exact = true}))
  end)

  it("test_bind_cross_thread_reduction", function()
    local before = rowsum()
    local s = tir.Schedule(before)
    local _, k = s:get_loops(s:get_block("B"))
    s:bind(k, "threadIdx.x")
    assert.is_true(V.check(s, before, rowsum(nil, "threadIdx.x"), {exact = true}))
  end)

  it("test_bind_not_cross_thread_reduction", function()
    local s = tir.Schedule(rowsum())
    local _, k = s:get_loops(s:get_block("B"))
    V.schedule_error(function() s:bind(k, "blockIdx.x") end, "bind")
  end)

  it("test_bind_after_bind", function()
    local before = element_wise()
    local s = tir.Schedule(before)
    local i = s:get_loops(s:get_block("B"))
    s:bind(i, "blockIdx.x")
    s:bind(i, "threadIdx.x")
    V.check(s, before, element_wise("threadIdx.x"))
  end)

  local function block_inside_init(ki)
    return T.prim_func("main", {A = T.Buffer({8, 8, 8}, "float32"), B = T.Buffer({8, 8}, "float32")}, function(A, B)
      loop(ki, 8, function(i)
        T.block("outer", function()
          local vi = T.axis.spatial(8, i)
          T.init(function()
            for j in T.serial(8) do
              T.block("init", function()
                local vj = T.axis.spatial(8, j)
                B[{vi, vj}] = T.float32(0)
              end)
            end
          end)
          for k, j in T.grid(8, 8) do
            T.block("inner", function()
              local vj, vk = T.axis.remap("SR", {j, k})
              B[{vi, vj}] = B[{vi, vj}] + A[{vi, vj, vk}]
            end)
          end
        end)
      end)
    end)
  end

  it("test_block_inside_init", function()
    local before = block_inside_init("serial")
    local s = tir.Schedule(before)
    local i = s:get_loops(s:get_block("outer"))
    s:bind(i, "threadIdx.x")
    V.check(s, before, block_inside_init("threadIdx.x"))
  end)

  it("test_vectorize_after_decompose", function()
    local before = decomposed_gemm()
    local s = tir.Schedule(before)
    local loops = {s:get_loops(s:get_block("C"))}
    s:vectorize(loops[#loops])
    assert.is_true(V.check(s, before, decomposed_gemm(true), {exact = true}))
  end)

  local function nested_block_bind(kj, kl)
    return T.prim_func("main", {A = T.Buffer({8, 8, 8, 8}, "float32"), B = T.Buffer({8, 8, 8}, "float32")}, function(A, B)
      for i in T.serial(8) do
        loop(kj, 8, function(j)
          T.block("outer", function()
            local vi, vj = T.axis.remap("SS", {i, j})
            for k in T.serial(8) do
              loop(kl, 8, function(l)
                T.block("inner", function()
                  local vk, vl = T.axis.remap("SR", {k, l})
                  T.init(function() B[{vi, vj, vk}] = T.float32(0) end)
                  B[{vi, vj, vk}] = B[{vi, vj, vk}] + A[{vi, vj, vk, vl}]
                end)
              end)
            end
          end)
        end)
      end
    end)
  end

  it("test_nested_block_bind", function()
    local before = nested_block_bind("serial", "serial")
    local s = tir.Schedule(before)
    local _, j = s:get_loops(s:get_block("outer"))
    local _, l = s:get_loops(s:get_block("inner"))
    s:bind(l, "threadIdx.x")
    s:bind(j, "blockIdx.x")
    V.check(s, before, nested_block_bind("blockIdx.x", "threadIdx.x"))
  end)

  local function nested_after_cache_read(ki, kj)
    return T.prim_func("main", {A = T.Buffer({16, 16}, "float32"), B = T.Buffer({16}, "float32")}, function(A, B)
      loop(ki, 16, function(i)
        T.block("outer", function()
          local vi = T.axis.spatial(16, i)
          local A_shared = T.alloc_buffer({1, 16}, "float32", {scope = "shared", name = "A_shared"})
          for ax0, ax1 in T.grid(1, 16) do
            T.block("A_shared", function()
              local v0 = T.axis.spatial(16, vi + ax0)
              local v1 = T.axis.spatial(16, ax1)
              A_shared[{v0 - vi, v1}] = A[{v0, v1}]
            end)
          end
          loop(kj, 16, function(j)
            T.block("inner", function()
              local vj = T.axis.reduce(16, j)
              T.init(function() B[{vi}] = T.float32(0) end)
              B[{vi}] = B[{vi}] + A_shared[{0, vj}]
            end)
          end)
        end)
      end)
    end)
  end

  it("test_nexted_block_bind_after_cache_read", function()
    -- TVM indexes its [1, 16] A_shared with the global row (A_shared[vi, vj]); a tirlua
    -- block-local allocation is indexed relative to it
    local before = nested_after_cache_read("serial", "serial")
    local s = tir.Schedule(before)
    local i = s:get_loops(s:get_block("outer"))
    local j = s:get_loops(s:get_block("inner"))
    s:bind(i, "blockIdx.x")
    s:bind(j, "threadIdx.x")
    V.check(s, before, nested_after_cache_read("blockIdx.x", "threadIdx.x"))
  end)

  it("test_vectorize_init", function()
    local before = decomposed_gemm()
    local s = tir.Schedule(before)
    local _, _, _, jj_0 = s:get_loops(s:get_block("init"))
    s:vectorize(jj_0)
    assert.is_true(V.check(s, before, decomposed_gemm(false, true), {exact = true}))
  end)

  local function scatter(kind)
    return T.prim_func("main", {A = T.Buffer({16}, "float32"), B = T.Buffer({16}, "float32")}, function(A, B)
      loop(kind, 8, function(i)
        T.block("first_half", function()
          local vi = T.axis.spatial(16, 8 + i)
          B[{vi}] = A[{vi - 8}]
        end)
      end)
      loop(kind, 8, function(i)
        T.block("last_half", function()
          local vi = T.axis.spatial(16, i)
          B[{vi}] = A[{vi + 8}]
        end)
      end)
    end)
  end

  it("test_scatter_parallelize", function()
    local before = scatter("serial")
    local s = tir.Schedule(before)
    local i0 = s:get_loops(s:get_block("first_half"))
    local i1 = s:get_loops(s:get_block("last_half"))
    s:parallel(i0)
    s:parallel(i1)
    V.check(s, before, scatter("parallel"))
  end)

  it("test_bind_thread_iter_var_dtype", function()
    local function f(bound)
      local n = tir.const(16, "int64")
      return T.prim_func("main", {A = T.Buffer({n, n}, "float32"), B = T.Buffer({n, n}, "float32")}, function(A, B)
        local outer = bound and T.thread_binding(n, "threadIdx.x") or T.serial(n)
        for i in outer do
          for j in T.serial(n) do
            T.block("B", function()
              local vi, vj = T.axis.remap("SS", {i, j})
              B[{vi, vj}] = A[{vi, vj}] * 2.0
            end)
          end
        end
      end)
    end
    local before = f(false)
    local s = tir.Schedule(before)
    local i = s:get_loops(s:get_block("B"))
    s:bind(i, "threadIdx.x")
    V.check(s, before, f(true))
    local l = s:get((s:get_loops(s:get_block("B"))))
    assert.are.equal("int64", l.loop_var.dtype)
    assert.are.equal("thread_binding", l.loop_kind)
  end)
end)
