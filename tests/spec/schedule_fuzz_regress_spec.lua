-- schedule_fuzz_regress_spec.lua -- regression tests for bugs found by the randomized
-- schedule checker (tests/fuzz/schedule_fuzz.lua).  Each case is a minimal replay of a
-- failing sequence: the schedule must either be rejected clearly or stay equivalent,
-- replay from its trace, lower, and (when it binds threads) generate CUDA C.
local tir = require("tir")
local te = tir.te
local U = require("spec_util")

-- The lowered function (launch_thread attributes run as serial loops) computes the same
-- as the original; valid where no shared memory needs threads in lockstep.
local function assert_lowered_equiv(orig, f)
  local lowered = tir.lower(f)
  U.assert_equiv(orig, lowered, {trials = 1})
  return lowered
end

local function replays(sch)
  local s2 = tir.Schedule(sch:original())
  s2:apply_trace(sch:trace())
  assert.is_true(tir.structural_equal(s2.mod, sch.mod))
end

local function chain(n, m, stages)
  local A = te.placeholder({n, m}, "float32", "A")
  local prev = A
  for s = 1, stages do
    local p = prev
    prev = te.compute({n, m}, function(i, j) return tir.max(p[{i, j}], 0.0) end, "T" .. s)
  end
  return te.create_prim_func({A, prev})
end

local function matmul_epilogue(M, N, K)
  local A = te.placeholder({M, K}, "float32", "A")
  local B = te.placeholder({K, N}, "float32", "B")
  local k = te.reduce_axis({0, K}, "k")
  local C = te.compute({M, N}, function(i, j) return te.sum(A[{i, k}] * B[{k, j}], {k}) end, "C")
  local D = te.compute({M, N}, function(i, j) return C[{i, j}] * 2.0 + 1.0 end, "D")
  return te.create_prim_func({A, B, D})
end

describe("trace", function()
  it("replays a split whose last factor is inferred", function()
    local sch = tir.Schedule(U.matmul(5, 4, 6))
    local k = select(3, sch:get_loops(sch:get_block("C")))
    sch:split(k, {2, -1})
    assert.matches("sch:split%(l%d+, {2, %-1}%)", sch:trace())
    replays(sch)
  end)

  it("replays a trace with more than 200 handles (Lua's limit on locals)", function()
    -- fuzz seed 61528: a long sequence's trace did not load
    local sch = tir.Schedule(U.elementwise(4, 4))
    for _ = 1, 120 do sch:get_loops(sch:get_block("B")) end
    sch:split(sch:get_loops(sch:get_block("B")), {2, -1})
    replays(sch)
  end)

  it("replays cache_read with consumer blocks", function()
    local f = matmul_epilogue(4, 6, 5)
    local sch = tir.Schedule(f)
    local d = sch:get_block("D")
    sch:cache_read(d, 0, "global", {d})
    assert.matches("sch:cache_read%(b%d+, 0, \"global\", {b%d+}%)", sch:trace())
    replays(sch)
    U.assert_equiv(f, sch.mod)
  end)
end)

describe("lowering of schedules found by the fuzzer", function()
  it("keeps global buffers out of kernels when a local one is allocated beside them", function()
    -- fuzz seed 8: a global cache of a local cache at the root, one nest bound
    local f = chain(2, 7, 3)
    local sch = tir.Schedule(f)
    sch:bind(sch:get_loops(sch:get_block("T3")), "blockIdx.z")
    sch:cache_write(sch:get_block("T1"), 0, "local")
    sch:cache_write(sch:get_block("T1"), 0, "global")
    U.assert_equiv(f, sch.mod)
    assert_lowered_equiv(f, sch.mod)
    tir.build(sch.mod, "cuda", {compile = false}) -- failed: a global buffer allocated in the kernel
  end)

  it("allocates a global intermediate used inside one kernel on the host", function()
    -- fuzz seed 67: the epilogue moved under the matmul's blockIdx loop
    local f = matmul_epilogue(4, 6, 10)
    local sch = tir.Schedule(f)
    local c = sch:get_block("C")
    local i = sch:get_loops(c)
    sch:reverse_compute_at(sch:get_block("D"), i, true)
    local io, ii = sch:split(i, {nil, 1})
    sch:bind(io, "blockIdx.x")
    sch:bind(ii, "threadIdx.x")
    U.assert_equiv(f, sch.mod)
    local lowered = assert_lowered_equiv(f, sch.mod)
    assert.matches('T.allocate%({24}, "float32", "global"%)', tostring(lowered))
    tir.build(sch.mod, "cuda", {compile = false})
  end)

  it("keeps an accumulator outside the reduction loop that carries it", function()
    -- fuzz seed 45: the reduction loop outermost, a local accumulator copied back under j
    local f = U.matmul(5, 4, 10)
    local sch = tir.Schedule(f)
    local c = sch:get_block("C")
    local i, j, k = sch:get_loops(c)
    sch:reorder(k, i)
    sch:cache_write(c, 0, "local")
    sch:reverse_compute_at(sch:get_block("C_local"), j)
    U.assert_equiv(f, sch.mod)
    assert_lowered_equiv(f, sch.mod)
  end)

  it("rejects a local buffer shared by the iterations of a thread loop", function()
    -- fuzz seed 21: a local cache written under threadIdx.x, read by another nest
    local f = chain(4, 5, 2)
    local sch = tir.Schedule(f)
    sch:cache_read(sch:get_block("T2"), 0, "local")
    sch:bind(sch:get_loops(sch:get_block("T1_local")), "threadIdx.x")
    U.assert_equiv(f, sch.mod)
    U.expect_error(function() tir.lower(sch.mod) end, "LoweringError in verify_memory_scope",
                   "buffer T1_local has scope 'local'", "outside loop ax0", "bound to threadIdx.x")
  end)
end)

describe("bind of nested loops to one thread axis", function()
  it("rejects a block that uses the outer of two nested loops of one tag", function()
    -- fuzz seed 80: split, the innermost unit part bound, then the outer part to the same tag
    local f = U.elementwise(4, 3)
    local sch = tir.Schedule(f)
    local i = sch:get_loops(sch:get_block("B"))
    local i0, i1 = sch:split(i, {nil, 1})
    sch:bind(i1, "threadIdx.x")
    U.expect_error(function() sch:bind(i0, "threadIdx.x") end, "ScheduleError in bind", "depends on loop i_0",
                   "bind the inner loop to another axis")
    U.assert_equiv(f, sch.mod)
  end)

  -- a block that uses only the inner loop (a cooperative copy) runs for tx < both extents
  local function copy(outer, inner)
    local T = tir.script
    return T.prim_func("main", {A = T.Buffer({inner}, "float32"), B = T.Buffer({inner}, "float32")}, function(A, B)
      for tx, ax in T.grid(outer, inner) do
        T.block("copy", function()
          local v = T.axis.spatial(inner, ax)
          B[{v}] = A[{v}] * T.float32(2)
        end)
      end
    end)
  end

  it("rejects a cooperative loop longer than the loop of the same tag around it", function()
    local f = copy(2, 4)
    local sch = tir.Schedule(f)
    local tx, ax = sch:get_loops(sch:get_block("copy"))
    sch:bind(ax, "threadIdx.x")
    U.expect_error(function() sch:bind(tx, "threadIdx.x") end, "ScheduleError in bind",
                   "loop tx (extent 2) encloses loop ax (extent 4)")
  end)

  it("accepts a cooperative loop no longer than the loop around it", function()
    local f = copy(8, 4)
    local sch = tir.Schedule(f)
    local tx, ax = sch:get_loops(sch:get_block("copy"))
    sch:bind(tx, "threadIdx.x")
    sch:bind(ax, "threadIdx.x")
    assert_lowered_equiv(f, sch.mod)
    tir.build(sch.mod, "cuda", {compile = false})
  end)
end)

describe("bind of nested loops to one thread axis, across blocks", function()
  it("sees the loops above an outer block", function()
    -- fuzz seed 560: after blockize, an inner loop bound to the tag of a loop outside the outer block
    local T = tir.script
    local f = T.prim_func("main", {A = T.Buffer({4, 4}, "float32"), B = T.Buffer({4, 4}, "float32")}, function(A, B)
      for n in T.serial(4) do
        T.block("o", function()
          local vn = T.axis.spatial(4, n)
          for y in T.serial(4) do
            T.block("c", function()
              local vy = T.axis.spatial(4, y)
              B[{vn, vy}] = A[{vn, vy}] * T.float32(2)
            end)
          end
        end)
      end
    end)
    local sch = tir.Schedule(f)
    sch:bind(sch:get_loops("o"), "threadIdx.x")
    local y = select(-1, sch:get_loops("c"))
    U.expect_error(function() sch:bind(y, "threadIdx.x") end, "ScheduleError in bind", "block 'c' depends on loops n and y")
    sch:bind(y, "threadIdx.y")
    assert_lowered_equiv(f, sch.mod)
  end)
end)

describe("reverse_compute_at", function()
  it("refuses a consumer that would read what other iterations produce", function()
    -- fuzz seed 22: a strided convolution moved under the row loop of its padding stage
    local A = te.placeholder({1, 1, 6, 4}, "int32", "A")
    local W = te.placeholder({1, 1, 2, 2}, "int32", "W")
    local P = te.compute({1, 1, 6, 4}, function(n, c, h, w) return A[{n, c, h, w}] + 1 end, "pad")
    local rc, rh, rw = te.reduce_axis({0, 1}, "rc"), te.reduce_axis({0, 2}, "rh"), te.reduce_axis({0, 2}, "rw")
    local O = te.compute({1, 1, 3, 2}, function(n, f, y, x)
      return te.sum(P[{n, rc, y * 2 + rh, x * 2 + rw}] * W[{f, rc, rh, rw}], {rc, rh, rw})
    end, "conv")
    local f = te.create_prim_func({A, W, O})
    local sch = tir.Schedule(f)
    local h = select(3, sch:get_loops("pad"))
    U.expect_error(function() sch:reverse_compute_at("conv", h) end, "ScheduleError in reverse_compute_at",
                   "block 'conv' would read pad beyond what its producers write in one iteration")
    -- under the channel loop every row it needs is there
    local c = select(2, sch:get_loops("pad"))
    sch:reverse_compute_at("conv", c)
    U.assert_equiv(f, sch.mod)
    assert_lowered_equiv(f, sch.mod)
  end)
end)

describe("verify_memory_scope: code outside thread loops runs in every thread", function()
  local function bmm()
    local A = te.placeholder({2, 5, 3}, "int32", "A")
    local B = te.placeholder({2, 3, 6}, "int32", "B")
    local k = te.reduce_axis({0, 3}, "k")
    local C = te.compute({2, 5, 6}, function(b, i, j) return te.sum(A[{b, i, k}] * B[{b, k, j}], {k}) end, "C")
    return te.create_prim_func({A, B, C})
  end

  it("rejects an update left outside the thread loops of its kernel", function()
    -- fuzz seed 10897: the init bound to threadIdx.x, the update in the same kernel unbound
    local f = bmm()
    local sch = tir.Schedule(f)
    local c = sch:get_block("C")
    local b, i = sch:get_loops(c)
    local init = sch:decompose_reduction(c, i)
    local _, _, j_init = sch:get_loops(init)
    sch:bind(j_init, "threadIdx.x")
    U.assert_equiv(f, sch.mod)
    U.expect_error(function() tir.lower(sch.mod) end, "LoweringError in verify_memory_scope",
                   "block 'C_update' updates C in place", "every thread would apply the update again")
  end)

  it("rejects an init outside the blockIdx loop of the update it feeds", function()
    -- fuzz seed 10450: C_init in every thread block, C_update distributed over blockIdx.z.
    -- The schedule that made it (decompose_reduction, then bind) is refused now, as in TVM
    -- (the update without its init is not a reduction block); the IR is written by hand.
    local f = bmm()
    local sch = tir.Schedule(f)
    local c = sch:get_block("C")
    local b, i, j = sch:get_loops(c)
    sch:decompose_reduction(c, j)
    U.expect_error(function() sch:bind(b, "threadIdx.y") end, "ScheduleError in bind",
                   "loop b does not have compact data flow", "block 'C_update'", "it has no init")
    local T = tir.script
    local g = T.prim_func("main", {A = T.Buffer({2, 5, 3}, "int32"), B = T.Buffer({2, 3, 6}, "int32"),
                                   C = T.Buffer({2, 5, 6}, "int32")}, function(A, B, C)
      for b in T.thread_binding(2, "threadIdx.y") do
        for i in T.serial(5) do
          for j_init in T.serial(6) do
            T.block("C_init", function()
              local v_b_init, v_i_init, v_j_init = T.axis.remap("SSS", {b, i, j_init})
              C[{v_b_init, v_i_init, v_j_init}] = 0
            end)
          end
          for j in T.thread_binding(6, "blockIdx.z") do
            for k in T.serial(3) do
              T.block("C_update", function()
                local v_b, v_i, v_j, v_k = T.axis.remap("SSSR", {b, i, j, k})
                T.reads(C[{v_b, v_i, v_j}], A[{v_b, v_i, v_k}], B[{v_b, v_k, v_j}])
                T.writes(C[{v_b, v_i, v_j}])
                C[{v_b, v_i, v_j}] = C[{v_b, v_i, v_j}] + A[{v_b, v_i, v_k}] * B[{v_b, v_k, v_j}]
              end)
            end
          end
        end
      end
    end)
    U.assert_equiv(f, g)
    U.expect_error(function() tir.lower(g) end, "LoweringError in verify_memory_scope",
                   "block 'C_init' writes C in every thread block of its kernel", "the copies would overwrite")
    -- bound to the same axes, it lowers and computes the same
    local sch2 = tir.Schedule(f)
    local c2 = sch2:get_block("C")
    local b2, i2, j2 = sch2:get_loops(c2)
    sch2:bind(b2, "threadIdx.y")
    sch2:bind(j2, "blockIdx.z")
    sch2:decompose_reduction(c2, select(4, sch2:get_loops(c2)))
    assert_lowered_equiv(f, sch2.mod)
  end)
end)

describe("verify_memory_scope: a local buffer of the root block makes the body one kernel", function()
  it("rejects reading, in every thread, what that kernel writes under a thread loop", function()
    -- fuzz seed 31469: a local cache at the root merged all nests into one kernel
    local f = chain(4, 5, 3)
    local sch = tir.Schedule(f)
    local _, j = sch:get_loops(sch:get_block("T2"))
    sch:bind(j, "threadIdx.x")
    sch:cache_read(sch:get_block("T3"), 0, "local")
    U.assert_equiv(f, sch.mod)
    U.expect_error(function() tir.lower(sch.mod) end, "LoweringError in verify_memory_scope",
                   "block 'T2_local' reads T2 in every thread of its kernel", "block 'T2' writes T2 under loop j")
  end)
end)

describe("reverse_compute_at after a split that does not divide", function()
  it("runs the consumer only in the iterations where its producer writes", function()
    -- fuzz seeds 45293, 45166, 42178: the write-back of a local accumulator ran in threads
    -- whose producer was predicated off, copying values those threads never computed
    local A = te.placeholder({1, 2, 2}, "int32", "A")
    local B = te.placeholder({1, 2, 1}, "int32", "B")
    local k = te.reduce_axis({0, 2}, "k")
    local C = te.compute({1, 2, 1}, function(b, i, j) return te.sum(A[{b, i, k}] * B[{b, k, j}], {k}) end, "C")
    local f = te.create_prim_func({A, B, C})
    local sch = tir.Schedule(f)
    local c = sch:get_block("C")
    local b, i, j, kk = sch:get_loops(c)
    sch:unroll(b)
    local io, ii = sch:split(i, {nil, 2})
    local jo, jj = sch:split(j, {nil, 4})
    local ko, ki = sch:split(kk, {nil, 4})
    sch:reorder(io, jo, ii, jj, ko, ki)
    sch:bind(io, "blockIdx.y")
    sch:bind(jo, "blockIdx.x")
    sch:bind(ii, "threadIdx.y")
    sch:bind(jj, "threadIdx.x")
    local w = sch:cache_write(c, 0, "local")
    sch:reverse_compute_at(w, jj)
    assert.matches('T.block%("C_local".-T.where%(T.lt%(j_1, 1%)%)', tostring(sch.mod))
    U.assert_equiv(f, sch.mod)
    assert_lowered_equiv(f, sch.mod)
  end)
end)

describe("cache_read in a nested scope", function()
  it("clips the outer block's read region of an input to the buffer", function()
    -- fuzz seed 52838: after blockize the outer block read rows 0..7 of a 7-row buffer
    -- (its regions over-approximate), and the shared copy ran past the buffer
    local T = tir.script
    local f = T.prim_func("main", {A = T.Buffer({7, 3}, "float32"), B = T.Buffer({7, 3}, "float32")}, function(A, B)
      T.block("o", function()
        T.reads(A[{{0, 8}, {0, 3}}])
        T.writes(B[{{0, 8}, {0, 3}}])
        for f0, f1 in T.grid(3, 8) do
          T.block("b", function()
            local vi = T.axis.spatial(7, (f0 * 8 + f1) // 3)
            local vj = T.axis.spatial(3, (f0 * 8 + f1) % 3)
            T.where(T.lt(f0 * 8 + f1, 21))
            B[{vi, vj}] = A[{vi, vj}] * T.float32(2)
          end)
        end
      end)
    end)
    local sch = tir.Schedule(f)
    local c = sch:cache_read(sch:get_block("b"), 0, "shared")
    assert.matches("for ax0, ax1 in T.grid%(7, 3%)", tostring(sch.mod))
    U.assert_equiv(f, sch.mod)
    assert.are.equal("A_shared", c.name)
  end)
end)

describe("reverse_compute_at under a fused producer", function()
  it("refuses when the producer's writes in one iteration are not a whole box", function()
    -- fuzz seed 63137: three consecutive elements of a fused 9x2 index per iteration; the
    -- consumer's relaxed rows covered elements the next iteration writes
    local f = chain(9, 2, 2)
    local sch = tir.Schedule(f)
    local fused = sch:fuse(sch:get_loops(sch:get_block("T1")))
    local o = sch:split(fused, {8, -1})
    U.expect_error(function() sch:reverse_compute_at(sch:get_block("T2"), o) end, "ScheduleError in reverse_compute_at",
                   "what the producers of block 'T2' write of T1 in one iteration is not a whole box")
    -- rows of whole width are a box
    local sch2 = tir.Schedule(f)
    local i = sch2:get_loops(sch2:get_block("T1"))
    sch2:reverse_compute_at(sch2:get_block("T2"), i)
    U.assert_equiv(f, sch2.mod)
    assert_lowered_equiv(f, sch2.mod)
  end)
end)

describe("decompose_reduction", function()
  it("refuses to split the init above a loop that repeats the reduction", function()
    -- fuzz seed 75493: a sum compute_at'ed under a consumer's loop is recomputed per
    -- iteration (re-initialized each time); one init above that loop summed 6 times over
    local T = tir.script
    local f = T.prim_func("main", {A = T.Buffer({4}, "float32"), C = T.Buffer({1}, "float32")}, function(A, C)
      for r, k in T.grid(3, 4) do
        T.block("S", function()
          local vk = T.axis.reduce(4, k)
          T.init(function() C[{0}] = T.float32(0) end)
          C[{0}] = C[{0}] + A[{vk}]
        end)
      end
    end)
    local sch = tir.Schedule(f)
    local r, k = sch:get_loops("S")
    U.expect_error(function() sch:decompose_reduction("S", r) end, "ScheduleError in decompose_reduction",
                   "loop r repeats block 'S' without being bound to any of its iteration variables")
    sch:decompose_reduction("S", k)
    U.assert_equiv(f, sch.mod)
  end)
end)

describe("blockize", function()
  it("gives an inner unit loop its own iteration variable", function()
    -- fuzz seed 11505 and others: blockize at a loop of extent 1 put the loop variable itself
    -- into the inner block (and into the init, outside any loop)
    local X = te.placeholder({6, 1}, "float32", "X")
    local r = te.reduce_axis({0, 6}, "r")
    local Y = te.compute({1}, function(i) return te.sum(X[{r, i}], {r}) end, "red")
    local f = te.create_prim_func({X, Y})
    local sch = tir.Schedule(f)
    sch:blockize((sch:get_loops(sch:get_block("red"))))
    U.assert_equiv(f, sch.mod)
    assert_lowered_equiv(f, sch.mod)
  end)

  it("refuses to drop the predicate of a split that does not divide, behind a fuse", function()
    -- fuzz seed 81085: the outer block of a fused, predicated nest ran past its domain
    local f = chain(4, 7, 1)
    local sch = tir.Schedule(f)
    local i, j = sch:get_loops(sch:get_block("T1"))
    local j0, j1 = sch:split(j, {2, -1})
    sch:fuse(i, j0, j1)
    local b = sch:get_block("T1")
    U.expect_error(function() sch:blockize((sch:get_loops(b))) end, "ScheduleError in blockize",
                   "the predicate of block 'T1' would be lost")
  end)
end)

describe("cache_write of an update without init", function()
  it("is refused: the cache would not start from the values written before", function()
    -- fuzz seed 90014: the update of a decomposed reduction inside an outer block read
    -- an uninitialized cache
    local T = tir.script
    local f = T.prim_func("main", {A = T.Buffer({8}, "float32"), C = T.Buffer({8}, "float32")}, function(A, C)
      for i in T.serial(8) do
        T.block("acc", function()
          local vi = T.axis.spatial(8, i)
          C[{vi}] = C[{vi}] + A[{vi}]
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:cache_write("acc", 0, "global") end, "ScheduleError in cache_write",
                   "block 'acc' reads the C it writes and has no init")
  end)
end)

describe("verify_memory_scope: two loops of one thread axis in one kernel", function()
  it("rejects threads handing values to each other through global memory", function()
    -- fuzz seed 91892: an init distributed over threadIdx.x by one loop, its update by another
    local T = tir.script
    local f = T.prim_func("main", {A = T.Buffer({4}, "float32"), C = T.Buffer({4}, "float32")}, function(A, C)
      local B = T.alloc_buffer({4}, "float32")
      for bx in T.thread_binding(1, "blockIdx.x") do
        for tx in T.thread_binding(4, "threadIdx.x") do
          T.block("W", function()
            local v = T.axis.spatial(4, tx)
            B[{v}] = A[{v}] * T.float32(2)
          end)
        end
        for ty in T.thread_binding(4, "threadIdx.x") do
          T.block("R", function()
            local v = T.axis.spatial(4, ty)
            C[{v}] = B[{3 - v}]
          end)
        end
      end
    end)
    U.expect_error(function() tir.lower(f) end, "LoweringError in verify_memory_scope",
                   "blocks 'W' and 'R' of one kernel write and read B under different loops bound to threadIdx.x")
  end)
end)

describe("print -> load", function()
  it("keeps a loop's symbolic extent as written", function()
    -- fuzz seed 44457: a cache stage's extent (i * 2 + 1) * 2 - i * 4 loaded back simplified
    local T = tir.script
    local f = T.prim_func("main", {A = T.Buffer({8}, "float32")}, function(A)
      for i in T.serial(2) do
        for j in T.serial((i * 2 + 1) * 2 - i * 4 + 2) do
          T.block("b", function()
            local v = T.axis.spatial(8, i * 4 + j)
            A[{v}] = T.float32(1)
          end)
        end
      end
    end)
    U.assert_roundtrip(f)
  end)
end)

describe("errors name the primitive", function()
  it("transform_layout with a block handle that is gone", function()
    -- fuzz seed 24989: the error came from "schedule", not transform_layout
    local f = chain(1, 5, 2)
    local sch = tir.Schedule(f)
    local t1 = sch:get_block("T1")
    sch:compute_inline(t1)
    U.expect_error(function() sch:transform_layout(t1, {"write", 0}, function(i, j) return i, j end) end,
                   "ScheduleError in transform_layout", "no longer refers to a block")
  end)
end)
