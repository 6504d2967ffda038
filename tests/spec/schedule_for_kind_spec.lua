-- schedule_for_kind_spec.lua -- parallel, vectorize, bind and unroll as TVM's for_kind.cc:
-- the loop's subtree must have compact data flow (every block under it complete or a
-- reduction block), the loop may only carry data-parallel iterations, a bound loop can be
-- re-bound, unrolled or parallelized.  Cases follow TVM's test_tir_schedule_for_kind.py
-- (the function named in each); before/after interpreter equivalence and IR facts.
local tir = require("tir")
local T = tir.script
local U = require("spec_util")

local F32 = "float32"

local function rowsum()
  return T.prim_func("rowsum", {A = T.Buffer({16, 16}, F32), B = T.Buffer({16}, F32)}, function(A, B)
    for i, k in T.grid(16, 16) do
      T.block("B", function()
        local vi, vk = T.axis.remap("SR", {i, k})
        T.init(function() B[{vi}] = T.float32(0) end)
        B[{vi}] = B[{vi}] + A[{vi, vk}]
      end)
    end
  end)
end

local function element_wise()
  return T.prim_func("element_wise", {A = T.Buffer({16, 16}, F32), B = T.Buffer({16, 16}, F32)}, function(A, B)
    for i, j in T.grid(16, 16) do
      T.block("B", function()
        local vi, vj = T.axis.remap("SS", {i, j})
        B[{vi, vj}] = A[{vi, vj}] * T.float32(2)
      end)
    end
  end)
end

local function loop_of(sch, block, n) return (select(n, sch:get_loops(block))) end

describe("parallel / vectorize / bind need compact data flow (TVM CheckSubtreeCompactDataflow)", function()
  it("refuse a loop whose iterations update the same element (rowsum_not_compact_data_flow)", function()
    -- B[vk] is written under every i: parallel iterations of i would race on it
    local f = T.prim_func("f", {A = T.Buffer({16, 16}, F32), B = T.Buffer({16}, F32)}, function(A, B)
      for i, k in T.grid(16, 16) do
        T.block("B", function()
          local vi, vk = T.axis.remap("SR", {i, k})
          T.init(function() B[{vk}] = T.float32(0) end)
          B[{vk}] = B[{vk}] + A[{vi, vk}]
        end)
      end
    end)
    for _, prim in ipairs({"parallel", "vectorize"}) do
      local sch = tir.Schedule(f)
      U.expect_error(function() sch[prim](sch, loop_of(sch, "B", 1)) end, "ScheduleError in " .. prim,
                     "loop i does not have compact data flow", "block 'B' under it is neither a complete block",
                     "non-spatial iteration variable vk", "its reduction variable vk indexes the written buffer B")
      assert.is_true(tir.structural_equal(f, sch.mod)) -- a failed primitive changes nothing
    end
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:bind(loop_of(sch, "B", 1), "blockIdx.x") end, "ScheduleError in bind",
                   "loop i does not have compact data flow")
  end)

  it("refuse an accumulation without init declared spatial (a data race the iteration types hide)", function()
    local f = T.prim_func("f", {A = T.Buffer({16, 4}, F32), B = T.Buffer({4}, F32)}, function(A, B)
      for i, k in T.grid(16, 4) do
        T.block("B", function()
          local vi, vk = T.axis.remap("SS", {i, k})
          B[{vk}] = B[{vk}] + A[{vi, vk}]
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:parallel(loop_of(sch, "B", 1)) end, "ScheduleError in parallel",
                   "block 'B' under it is neither a complete block (it reads B, which it writes)",
                   "nor a reduction block (it has no init)")
  end)

  it("refuse a reduction whose bindings are not affine (rowsum_not_quasi_affine)", function()
    local f = T.prim_func("f", {A = T.Buffer({16, 16}, F32), B = T.Buffer({16}, F32)}, function(A, B)
      for i, k in T.grid(16, 4) do
        T.block("B", function()
          local vi = T.axis.spatial(16, i)
          local vk = T.axis.reduce(16, (k * k) // 2)
          T.init(function() B[{vi}] = T.float32(0) end)
          B[{vi}] = B[{vi}] + A[{vi, vk}]
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:parallel(loop_of(sch, "B", 1)) end, "ScheduleError in parallel",
                   "its bindings are not affine in its loops")
  end)

  it("refuse an opaque block reading what it writes (test_vectorize_opaque_block)", function()
    local f = T.prim_func("f", {A = T.Buffer({16}, F32)}, function(A)
      for i in T.serial(15) do
        T.block("opaque", function() A[{i + 1}] = A[{i + 1}] + A[{i}] end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:vectorize(loop_of(sch, "opaque", 1)) end, "ScheduleError in vectorize",
                   "block 'opaque' under it is neither a complete block (it reads A, which it writes)")
  end)

  it("refuse the loops of an update split from its init, as TVM (bind before decompose_reduction)", function()
    local f = U.matmul(16, 16, 8)
    local sch = tir.Schedule(f)
    local c = sch:get_block("C")
    local i, j = sch:get_loops(c)
    sch:decompose_reduction(c, j)
    U.expect_error(function() sch:parallel(i) end, "ScheduleError in parallel", "block 'C_update'", "it has no init")
    -- the loops of the init alone are complete blocks' loops
    local init = sch:get_block("C_init")
    sch:vectorize(loop_of(sch, init, 2))
    U.assert_equiv(f, sch.mod)
    -- the TVM order: bind, then decompose (the init's loops inherit the kinds)
    local sch2 = tir.Schedule(f)
    local c2 = sch2:get_block("C")
    local i2, j2 = sch2:get_loops(c2)
    sch2:bind(i2, "blockIdx.x"); sch2:bind(j2, "threadIdx.x")
    sch2:decompose_reduction(c2, loop_of(sch2, c2, 3))
    U.assert_equiv(f, sch2.mod)
  end)

  it("accept reductions, predicates, blocks reading other buffers (test_parallel, _predicate, test_scatter_parallelize)", function()
    local f = rowsum()
    local sch = tir.Schedule(f)
    sch:parallel(loop_of(sch, "B", 1))
    assert.matches("for i in T.parallel%(16%) do", tostring(sch.mod))
    U.assert_equiv(f, sch.mod)
    -- a split that does not divide: the predicate is kept
    local g = element_wise()
    local s2 = tir.Schedule(g)
    local _, jo = s2:split(loop_of(s2, "B", 2), {nil, 5})
    s2:parallel(loop_of(s2, "B", 2))
    assert.matches("for j_0 in T.parallel%(4%) do", tostring(s2.mod))
    assert.matches("T.where", tostring(s2.mod))
    U.assert_equiv(g, s2.mod)
    -- two blocks writing disjoint halves of B, each under its own parallel loop
    local h = T.prim_func("scatter", {A = T.Buffer({16}, F32), B = T.Buffer({16}, F32)}, function(A, B)
      for i in T.serial(8) do
        T.block("first_half", function() local vi = T.axis.spatial(16, 8 + i); B[{vi}] = A[{vi - 8}] end)
      end
      for i in T.serial(8) do
        T.block("last_half", function() local vi = T.axis.spatial(16, i); B[{vi}] = A[{vi + 8}] end)
      end
    end)
    local s3 = tir.Schedule(h)
    s3:parallel(loop_of(s3, "first_half", 1)); s3:parallel(loop_of(s3, "last_half", 1))
    U.assert_equiv(h, s3.mod)
  end)
end)

describe("bound loops (TVM test_bind_after_bind, test_unroll_after_bind)", function()
  it("re-binds a bound loop to another axis", function()
    local f = element_wise()
    local sch = tir.Schedule(f)
    local i = loop_of(sch, "B", 1)
    sch:bind(i, "blockIdx.x")
    sch:bind(i, "threadIdx.x")
    local s = tostring(sch.mod)
    assert.matches('for i in T.thread_binding%(16, "threadIdx.x"%) do', s)
    assert.is_nil(s:find("blockIdx", 1, true))
    U.assert_equiv(f, sch.mod)
    local m = tir.lower(sch.mod)
    assert.matches("threadIdx.x", tostring(m))
    -- the trace replays
    local r = tir.Schedule(f):apply_trace(sch:trace())
    assert.is_true(tir.structural_equal(sch.mod, r.mod))
  end)

  it("unrolls, parallelizes or vectorizes a bound loop, which loses its binding", function()
    local f = rowsum()
    local sch = tir.Schedule(f)
    local i = loop_of(sch, "B", 1)
    sch:bind(i, "blockIdx.x")
    sch:unroll(i)
    -- rowsum_unrolled
    local s = tostring(sch.mod)
    assert.matches("for i in T.unroll%(16%) do", s)
    assert.is_nil(s:find("thread_binding", 1, true))
    U.assert_equiv(f, sch.mod)
    local g = element_wise()
    local s2 = tir.Schedule(g)
    local a, b = s2:get_loops("B")
    s2:bind(a, "blockIdx.x"); s2:bind(b, "threadIdx.x")
    s2:parallel(a); s2:vectorize(b)
    assert.matches("for i in T.parallel%(16%) do", tostring(s2.mod))
    assert.matches("for j in T.vectorized%(16%) do", tostring(s2.mod))
    U.assert_equiv(g, s2.mod)
  end)

  it("still refuses a reduction loop bound to threads (test_bind_not_cross_thread_reduction)", function()
    local sch = tir.Schedule(rowsum())
    U.expect_error(function() sch:bind(loop_of(sch, "B", 2), "blockIdx.x") end, "ScheduleError in bind",
                   "binds its iteration variable vk (a reduction) to loop k")
  end)
end)
