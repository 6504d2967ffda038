-- pipeline_spec.lua -- software pipelining (inject_software_pipeline) and cp.async
-- (inject_ptx_async_copy, the interpreter's async copies, thread_sync's barrier after a wait,
-- CUDA codegen).  Every pipelined function is checked on the interpreter against the
-- unpipelined one, and again with copies landing only at their ptx_wait_group (deferred mode),
-- which fails on any read of data still in flight.
local tir = require("tir")
local te = tir.te
local U = require("spec_util")
local simt = require("tir.schedules.simt_gemm")

local nvrtc_ok, nvrtc_why = tir.core.nvrtc_available()

local TO_PIPELINE = {"lower_init_block", "plan_buffer_allocation", "compact_buffer_allocation", "inject_software_pipeline"}
local TO_ASYNC_COPY = {"lower_init_block", "plan_buffer_allocation", "compact_buffer_allocation", "inject_software_pipeline",
                       "lower_opaque_block", "simplify", "flatten_buffer", "simplify", "vectorize_loop", "inject_ptx_async_copy"}

local function through(f, passes)
  if type(f) == "table" and f.func then f = f.func end
  for _, p in ipairs(passes) do f = tir.core.run_pass(p, f) end
  return f
end

--- f0 and g agree on random inputs: exactly (pipelining keeps every operation's order), with
-- copies landing at once and with copies landing at their waits.
local function check_equiv(f0, g, arrays, no_roundtrip)
  if type(f0) == "table" and f0.func then f0 = f0.func end
  local args = arrays or tir.testing.random_args(f0, 3)
  local r0 = tir.testing.copy_args(args)
  tir.interpret(f0, r0)
  for _, run in ipairs({tir.interpret, tir.core.interpret_async_deferred}) do
    local r = tir.testing.copy_args(args)
    run(g, r)
    for i = 1, #r0 do assert.are.same(r0[i]:to_table(), r[i]:to_table()) end
  end
  if not no_roundtrip then U.assert_roundtrip(g) end
end

local function gemm(M, N, K)
  return U.matmul(M, N, K)
end

local function small_simt(opts)
  local o = {BM = 16, BN = 16, BK = 4, TY = 4, TX = 4}
  for k, v in pairs(opts or {}) do o[k] = v end
  return o
end

-- A chain B = A * 2, C = B + 3, D = C + 4, E = D + 5 computed per i (B, C, D in shared
-- memory), as TVM's test_less_loop_than_num_stage.
local function chain(n)
  local A = te.placeholder({n}, "float32", "A")
  local B = te.compute({n}, function(i) return A[{i}] * 2.0 end, "B")
  local C = te.compute({n}, function(i) return B[{i}] + 3.0 end, "C")
  local D = te.compute({n}, function(i) return C[{i}] + 4.0 end, "D")
  local E = te.compute({n}, function(i) return D[{i}] + 5.0 end, "E")
  local f = te.create_prim_func({A, E})
  local sch = tir.Schedule(f)
  local i = sch:get_loops(sch:get_block("E"))
  for _, b in ipairs({"D", "C", "B"}) do sch:compute_at(sch:get_block(b), i) end
  for _, b in ipairs({"B", "C", "D"}) do sch:set_scope(sch:get_block(b), 0, "shared") end
  return sch, i
end

-- chain(n) with stages {0, 1, 2, 3} and the annotations anns (key -> value) on its loop
local function staged_chain(n, anns)
  local sch, i = chain(n)
  sch:annotate(i, "software_pipeline_stage", {0, 1, 2, 3})
  for k, v in pairs(anns) do sch:annotate(i, k, v) end
  return sch, i
end

-- S[i] = A[i] (a copy into shared memory, optionally select(i < 10, A[i], 0)), O[i] = S[i] * 2,
-- per i: the loop body is [copy, compute].
local function copy_then_compute(n, padded)
  local A = te.placeholder({n}, "float32", "A")
  local S = te.compute({n}, function(i)
    if padded then return tir.select(tir.lt(i, 10), A[{i}], 0.0) end
    return A[{i}]
  end, "S")
  local O = te.compute({n}, function(i) return S[{i}] * 2.0 end, "O")
  local f = te.create_prim_func({A, O})
  local sch = tir.Schedule(f)
  local i = sch:get_loops(sch:get_block("O"))
  sch:compute_at(sch:get_block("S"), i)
  sch:set_scope(sch:get_block("S"), 0, "shared")
  return sch, i
end

describe("inject_software_pipeline", function()
  it("double-buffers a copy/compute loop: prologue, steady state, epilogue", function()
    local sch, i = copy_then_compute(16)
    sch:annotate(i, "software_pipeline_stage", {0, 1})
    sch:annotate(i, "software_pipeline_order", {0, 1})
    local g = through(sch.mod, TO_PIPELINE)
    local s = tostring(g)
    assert.matches('local S = T.alloc_buffer%({2, 1}, "float32", {scope = "shared"}%)', s)
    assert.matches("for i in T.serial%(15%)", s)          -- steady state (the prologue is one step)
    assert.matches("S%[{%(i %+ 1%) %% 2, ", s)           -- the copy fills the next version
    assert.matches("S%[{i %% 2, ", s)                   -- the compute reads this one
    assert.matches("S%[{0, ", s)                        -- prologue
    assert.matches("S%[{1, ", s)                        -- epilogue
    assert.is_nil(s:find("software_pipeline"))
    check_equiv(sch.mod, g)
  end)

  it("reorders statements with software_pipeline_order and needs no versions then", function()
    local sch, i = copy_then_compute(8)
    -- the compute of iteration i - 1 runs before the copy of iteration i: one buffer suffices
    sch:annotate(i, "software_pipeline_stage", {0, 1})
    sch:annotate(i, "software_pipeline_order", {1, 0})
    local g = through(sch.mod, TO_PIPELINE)
    assert.matches('local S = T.alloc_buffer%({1}, "float32", {scope = "shared"}%)', tostring(g))
    check_equiv(sch.mod, g)
  end)

  it("handles loops shorter than the pipeline and symbolic extents (TVM test_less_loop_than_num_stage)", function()
    for _, n in ipairs({1, 2, 3, 4, 7}) do
      local sch, i = chain(n)
      sch:annotate(i, "software_pipeline_stage", {0, 1, 2, 3})
      sch:annotate(i, "software_pipeline_order", {0, 1, 2, 3})
      local g = through(sch.mod, TO_PIPELINE)
      check_equiv(sch.mod, g)
      if n == 2 then
        local s = tostring(g)
        assert.matches('local B = T.alloc_buffer%({2, 1}, "float32", {scope = "shared"}%)', s)
        assert.matches("for i in T.unroll%(3%)", s) -- prologue; the body is empty
        assert.matches("for i_1 in T.unroll%(2%)", s) -- epilogue from max(extent, stages)
        assert.are.equal(0, U.count(s, "T.serial"))
      end
    end
    local n = tir.var("n")
    local sch, i = chain(n)
    sch:annotate(i, "software_pipeline_stage", {0, 1, 2, 3})
    local g = through(sch.mod, TO_PIPELINE)
    local s = tostring(g)
    assert.matches("T.serial%(n %- 3%)", s)
    assert.matches("T.ge%(i_2 %+ n, 3%)", s) -- the epilogue starts after the prologue's iterations
    for _, len in ipairs({1, 2, 3, 4, 9}) do
      local a = tir.nd.random({len}, "float32", tir.nd.cpu(), {seed = len})
      -- (functions with symbolic shapes do not print -> load yet)
      check_equiv(sch.mod, g, {a, tir.nd.empty({len}, "float32", tir.nd.cpu())}, true)
    end
  end)

  it("pipelines a tiled GEMM: shared tiles per k-step, 2 and 3 stages, with and without cp.async", function()
    local f = gemm(32, 32, 32)
    for _, stages in ipairs({2, 3}) do
      for _, async in ipairs({true, false}) do
        local sch = simt.schedule(f, small_simt({stages = stages, async = async}))
        local g = through(sch.mod, TO_PIPELINE)
        local s = tostring(g)
        -- versioned tiles: a new leading dimension of `stages`
        assert.matches(('local A_shared = T.alloc_buffer%%({%d, 4, 16}, "float32", {scope = "shared"}%%)'):format(stages), s)
        assert.matches(('local B_shared = T.alloc_buffer%%({%d, 4, 4, 4}, "float32", {scope = "shared"}%%)'):format(stages), s)
        -- 8 k-steps: prologue (stages - 1 steps of copies), body, epilogue (stages - 1 computes)
        assert.matches(("for k_0_?%%d* in T.serial%%(%d%%)"):format(8 - (stages - 1)), s)
        if stages == 3 then assert.are.equal(2, U.count(s, "in T.unroll%(2%)")) end
        if async then
          assert.are.equal(4, U.count(s, 'T.attr%(nil, "async_scope", 1')) -- 2 copies in the prologue and the body
          assert.are.equal(2, U.count(s, '"ptx_commit_group"')) -- after the prologue's and the body's copies
          -- the steady state waits until stages - 1 groups are left in flight
          assert.matches(('T.call%%("void", "ptx_wait_group", %d%%)'):format(stages - 1), s)
          if stages == 2 then
            assert.matches('T.call%("void", "ptx_wait_group", 0%)', s) -- epilogue
          else
            assert.matches('T.call%("void", "ptx_wait_group", 1 %- k_0_2%)', s) -- fewer each epilogue step
          end
          -- order: prologue copies and commit, then the loop
          local commit, loop = s:find('"ptx_commit_group"'), s:find("T.serial")
          assert.is_true(commit < loop)
        else
          assert.is_nil(s:find("ptx_"))
        end
        check_equiv(f, g)
      end
    end
  end)

  it("pipelines predicated tiles (sizes the tiles do not divide)", function()
    local f = gemm(20, 18, 22)
    local sch = simt.schedule(f, small_simt({stages = 3, vec = 1, local_vec = false, store_vec = false, b_swizzle = false}))
    check_equiv(f, through(sch.mod, TO_PIPELINE))
    check_equiv(f, through(sch.mod, TO_ASYNC_COPY))
  end)

  it("pipelines nested loops (an inner shared->local pipeline inside the k-step pipeline)", function()
    local f = gemm(32, 32, 32)
    local sch = simt.schedule(f, small_simt({stages = 2, BK = 4}))
    local ki = select(6, sch:get_loops(sch:get_block("C_update")))
    -- ki's body: [A_shared -> local, B_shared -> local, the update]
    sch:annotate(ki, "software_pipeline_stage", {0, 0, 1})
    check_equiv(f, through(sch.mod, TO_PIPELINE))
  end)

  it("keeps other loop annotations on the loops it makes", function()
    local sch, i = copy_then_compute(8)
    sch:annotate(i, "software_pipeline_stage", {0, 1})
    sch:annotate(i, "pragma_note", 7)
    local s = tostring(through(sch.mod, TO_PIPELINE))
    assert.matches('%["pragma_note"%] = 7', s)
  end)

  describe("refuses", function()
    local function fails(setup, ...)
      local sch, i = copy_then_compute(8)
      setup(sch, i)
      U.expect_error(function() through(sch.mod, TO_PIPELINE) end, "LoweringError", "inject_software_pipeline", ...)
    end

    it("a stage list whose length is not the number of statements", function()
      fails(function(sch, i) sch:annotate(i, "software_pipeline_stage", {0}) end,
            "software_pipeline_stage has 1 entries but the loop body has 2 statements")
    end)

    it("negative stages", function()
      fails(function(sch, i) sch:annotate(i, "software_pipeline_stage", {0, -1}) end, "stage -1 of statement 1 is out of range")
    end)

    it("an order that is not a permutation", function()
      fails(function(sch, i)
        sch:annotate(i, "software_pipeline_stage", {0, 1})
        sch:annotate(i, "software_pipeline_order", {0, 0})
      end, "software_pipeline_order must be a permutation of 0 .. 1")
      fails(function(sch, i)
        sch:annotate(i, "software_pipeline_stage", {0, 1})
        sch:annotate(i, "software_pipeline_order", {0, 1, 2})
      end, "software_pipeline_order has 3 entries")
    end)

    it("an order or async stages without stages", function()
      fails(function(sch, i) sch:annotate(i, "software_pipeline_order", {0, 1}) end, "is given without software_pipeline_stage")
    end)

    it("a consumer in an earlier stage than its producer", function()
      fails(function(sch, i) sch:annotate(i, "software_pipeline_stage", {1, 0}) end,
            "statement 1 depends on statement 0 through S, but would run before it")
    end)

    it("statements of different stages sharing a buffer that cannot be versioned", function()
      -- X is a parameter: allocated outside the loop
      local f = tir.script.parse([[
T.prim_func("main", {A = T.Buffer({8}, "float32"), X = T.Buffer({8}, "float32"), O = T.Buffer({8}, "float32")}, function(A, X, O)
  for i in T.serial(8, {annotations = {software_pipeline_stage = {0, 1}}}) do
    T.block("X", function()
      local v = T.axis.remap("S", {i})
      X[{v}] = A[{v}]
    end)
    T.block("O", function()
      local v = T.axis.remap("S", {i})
      O[{v}] = X[{v}] * T.float32(2.0)
    end)
  end
end)]])
      U.expect_error(function() through(f, TO_PIPELINE) end, "both access X, which is allocated outside the pipelined loop")
    end)

    it("an async stage that is not a copy from global to shared memory", function()
      fails(function(sch, i)
        sch:annotate(i, "software_pipeline_stage", {0, 1})
        sch:annotate(i, "software_pipeline_async_stages", {1})
      end, "statement 1 is in async stage 1 but is not a copy from global to shared memory")
      local A = te.placeholder({8}, "float32", "A")
      local S = te.compute({8}, function(j) return A[{j}] * 2.0 end, "S")
      local O = te.compute({8}, function(j) return S[{j}] + 1.0 end, "O")
      local sch = tir.Schedule(te.create_prim_func({A, O}))
      local i = sch:get_loops(sch:get_block("O"))
      sch:compute_at(sch:get_block("S"), i)
      sch:set_scope(sch:get_block("S"), 0, "shared")
      sch:annotate(i, "software_pipeline_stage", {0, 1})
      sch:annotate(i, "software_pipeline_async_stages", {0})
      U.expect_error(function() through(sch.mod, TO_PIPELINE) end, "statement 0 is in async stage 0 but is not a copy")
    end)

    it("two async stages (cp.async has one group queue)", function()
      fails(function(sch, i)
        sch:annotate(i, "software_pipeline_stage", {0, 1})
        sch:annotate(i, "software_pipeline_async_stages", {0, 1})
      end, "one async stage is supported")
    end)

    it("a loop body that is not a sequence, and loops that are not serial", function()
      local f = U.elementwise(4, 8)
      local sch = tir.Schedule(f)
      local i, j = sch:get_loops(sch:get_block("B"))
      sch:annotate(j, "software_pipeline_stage", {0})
      U.expect_error(function() through(sch.mod, TO_PIPELINE) end, "must be a sequence of statements")
      local sch2, i2 = copy_then_compute(8)
      sch2:bind(i2, "threadIdx.x")
      sch2:annotate(i2, "software_pipeline_stage", {0, 1})
      U.expect_error(function() through(sch2.mod, TO_PIPELINE) end, "only serial loops can be software-pipelined")
      assert.is_not_nil(i)
    end)
  end)
end)

describe("async copies", function()
  it("become ptx_cp_async after vectorization, 16-byte vectors and zero-filled predicated scalars", function()
    local f = gemm(32, 32, 32)
    local sch = simt.schedule(f, small_simt({stages = 2, a_transpose = false}))
    local g = through(sch.mod, TO_ASYNC_COPY)
    local s = tostring(g)
    assert.is_nil(s:find("async_scope"))
    -- A and B tiles: one 16-byte copy per thread and tile, in the prologue and the body
    assert.are.equal(4, U.count(s, '"ptx_cp_async", T.call%("handle", "address_of", [AB]_shared%[{[^}]*}%]%), T.call%("handle", "address_of", [AB]_1%[{[^}]*}%]%), 16%)'))
    check_equiv(f, g)

    local sch2, i = copy_then_compute(16, true)
    sch2:annotate(i, "software_pipeline_stage", {0, 1})
    sch2:annotate(i, "software_pipeline_async_stages", {0})
    local h = through(sch2.mod, TO_ASYNC_COPY)
    local t = tostring(h)
    -- select(i < 10, A[i], 0): src_bytes = 4 or 0 (the rest zero-filled)
    assert.matches('"ptx_cp_async", T.call%("handle", "address_of", S%[{[^}]*}%]%), T.call%("handle", "address_of", A%[{[^}]*}%]%), 4, T.Select%(', t)
    check_equiv(sch2.mod, h)
  end)

  it("deferred interpretation catches a wait that allows too many groups in flight", function()
    local f = gemm(32, 32, 32)
    local sch = simt.schedule(f, small_simt({stages = 3}))
    local g = through(sch.mod, TO_PIPELINE)
    local text = tostring(g):gsub('"ptx_wait_group", 2%)', '"ptx_wait_group", 3)')
    local bad = tir.script.parse(text)
    local args = tir.testing.random_args(f, 1)
    tir.interpret(bad, tir.testing.copy_args(args)) -- copies land at once: no difference
    U.expect_error(function() tir.core.interpret_async_deferred(bad, tir.testing.copy_args(args)) end,
                   "is accessed while an async copy to it is in flight")
  end)

  it("interpreter: ptx_cp_async copies (and zero-fills), address_of stands only in builtins", function()
    local fn = tir.script.parse([[
T.prim_func("main", {A = T.Buffer({8}, "float32"), B = T.Buffer({8}, "float32")}, function(A, B)
  local S = T.allocate({8}, "float32", "shared")
  T.evaluate(T.call("void", "ptx_cp_async", T.call("handle", "address_of", S[{0}]), T.call("handle", "address_of", A[{0}]), 16))
  T.evaluate(T.call("void", "ptx_cp_async", T.call("handle", "address_of", S[{4}]), T.call("handle", "address_of", A[{4}]), 16, 8))
  T.evaluate(T.call("void", "ptx_commit_group"))
  T.evaluate(T.call("void", "ptx_wait_group", 0))
  for i in T.serial(8) do
    B[{i}] = S[{i}]
  end
end)]])
    local a = tir.nd.array({1, 2, 3, 4, 5, 6, 7, 8}, "float32")
    for _, run in ipairs({tir.interpret, tir.core.interpret_async_deferred}) do
      local b = tir.nd.empty({8}, "float32", tir.nd.cpu())
      run(fn, {a, b})
      assert.are.same({1, 2, 3, 4, 5, 6, 0, 0}, b:to_table())
    end
    local nowait = tir.script.parse(tostring(fn):gsub('T.evaluate%(T.call%("void", "ptx_wait_group", 0%)%)', ""))
    U.expect_error(function() tir.core.interpret_async_deferred(nowait, {a, tir.nd.empty({8}, "float32", tir.nd.cpu())}) end,
                   "in flight")
    local addr = tir.script.parse([[
T.prim_func("main", {A = T.Buffer({8}, "float32")}, function(A)
  T.evaluate(T.call("handle", "address_of", A[{0}]))
end)]])
    U.expect_error(function() tir.interpret(addr, {a}) end, "address_of(...) is only valid as an operand")
  end)

  local SYNC = 'T.call%("int32", "tvm_storage_sync", "shared"%)'
  -- the text of the steady-state loop of a lowered function
  local function steady_state(s, extent)
    local from = assert(s:find("T.serial%(" .. extent .. "%)"))
    local indent = s:sub(1, from):match("\n( *)[^\n]*$")
    local to = s:find("\n" .. indent .. "end", from, true) or #s
    return s:sub(from, to)
  end

  it("thread_sync puts a barrier after every wait and before refilling a version others read", function()
    local f = gemm(32, 32, 32)
    local sch = simt.schedule(f, small_simt({stages = 2}))
    local s = tostring(tir.lower(sch.mod))
    assert.are.equal(U.count(s, '"ptx_wait_group"'), select(2, s:gsub('"ptx_wait_group", %d+%)%)%s*\n%s*T.evaluate%(' .. SYNC, "")))
    -- in the steady state: a barrier before the copies (they overwrite the version the previous
    -- iteration read) and one after the wait (others' copies become visible): two in all
    local body = steady_state(s, 7)
    assert.are.equal(2, U.count(body, SYNC))
    assert.is_true(body:find(SYNC) < body:find('"ptx_cp_async"'))
  end)

  it("early waits (software_pipeline_early_wait): one wait and one barrier per k-step", function()
    local f = gemm(32, 32, 32)
    for _, stages in ipairs({2, 3}) do
      local sch = simt.schedule(f, small_simt({stages = stages, early_wait = true}))
      local g = through(sch.mod, TO_PIPELINE)
      local s = tostring(g)
      -- waiting before this step's copies: stages - 2 groups may stay in flight (CUTLASS's count)
      assert.matches(("for k_0_?%%d* in T.serial%%(%d%%) do%%s*\n%%s*T.evaluate%%(T.call%%(\"void\", \"ptx_wait_group\", %d%%)%%)"):format(
        9 - stages, stages - 2), s)
      check_equiv(f, g)
      check_equiv(f, through(sch.mod, TO_ASYNC_COPY))
      local body = steady_state(tostring(tir.lower(sch.mod)), 9 - stages)
      assert.are.equal(1, U.count(body, SYNC))
    end
  end)

  -- the simt GEMM's k-step pipeline with its inner shared -> local pipeline (ki, stages
  -- {0, 0, 1}) counted as the statements it emits (software_pipeline_nested): load_a(0),
  -- load_b(0), the steady-state ki loop, update(3); the first two one stage early and last but one
  -- in the order, the one wait before them (early_wait 2)
  local function nested_simt(stages)
    local f = gemm(32, 32, 32)
    local sch = simt.schedule(f, small_simt({stages = stages, BK = 4}))
    local loops = {sch:get_loops(sch:get_block("C_update"))}
    local ko, ki = loops[5], loops[6]
    sch:annotate(ki, "software_pipeline_stage", {0, 0, 1})
    local S = stages
    sch:annotate(ko, "software_pipeline_stage", {0, 0, S - 2, S - 2, S - 1, S - 1})
    sch:annotate(ko, "software_pipeline_order", {0, 1, 3, 4, 2, 5})
    sch:annotate(ko, "software_pipeline_nested", 1)
    sch:annotate(ko, "software_pipeline_early_wait", 2)
    return f, sch, ko
  end

  it("nested pipelines the TVM way: the inner rewrite's statements staged across k-steps, one wait before the next tile's loads", function()
    for _, stages in ipairs({3, 4}) do
      local f, sch = nested_simt(stages)
      local g = through(sch.mod, TO_PIPELINE)
      local s = tostring(g)
      check_equiv(f, g)
      check_equiv(f, through(sch.mod, TO_ASYNC_COPY))
      -- before: the inner pipeline's local tiles have 2 versions; the outer pass adds none (the
      -- next tile's version 0 is written while this tile's version 1 is still to be read)
      assert.truthy(s:find('A_shared_local = T.alloc_buffer({2, ', 1, true), s)
      assert.is_falsy(s:find('A_shared_local = T.alloc_buffer({2, 2, ', 1, true))
      -- the steady state: the inner steady-state loop (tile ko), then the one wait (stages - 2
      -- groups in flight: the next tile landed), then the next tile's first loads, then update(3)
      local body = steady_state(s, 9 - stages)
      assert.are.equal(1, U.count(body, '"ptx_wait_group"'))
      local w = body:find(('"ptx_wait_group", %d%%)'):format(stages - 2))
      local inner = body:find("T.unroll%(3%)")
      assert.truthy(w and inner and inner < w, body)
      -- lowered: one barrier in the steady state (after the wait)
      assert.are.equal(1, U.count(steady_state(tostring(tir.lower(sch.mod)), 9 - stages), SYNC))
    end
  end)

  it("software_pipeline_unroll: the inner steady state one instance per step, so the outer copies go between its steps", function()
    -- inner ki (4 steps) emits load_a(0), load_b(0), [load_a(j+1), load_b(j+1), update(j)] for j = 0..2
    -- (unrolled), update(3): 12 statements + the 2 copies.  Emitted: the second step's loads, the
    -- copies, update(0), the other steps, the next tile's first loads (after the one wait), update(3)
    for _, stages in ipairs({3, 4}) do
      local f = gemm(32, 32, 32)
      local sch = simt.schedule(f, small_simt({stages = stages, BK = 4}))
      local loops = {sch:get_loops(sch:get_block("C_update"))}
      local ko, ki = loops[5], loops[6]
      sch:annotate(ki, "software_pipeline_stage", {0, 0, 1})
      sch:annotate(ki, "software_pipeline_unroll", 1)
      local S = stages
      local st, ord = {0, 0, S - 2, S - 2}, {}
      for i = 5, 14 do st[i] = S - 1 end
      -- body indices: 0, 1 copies; 2, 3 loads(0); 4 + 3j, 5 + 3j, 6 + 3j step j; 13 update(3)
      local emit = {4, 5, 0, 1, 6, 7, 8, 9, 10, 11, 12, 2, 3, 13}
      for pos, idx in ipairs(emit) do ord[idx + 1] = pos - 1 end
      sch:annotate(ko, "software_pipeline_stage", st)
      sch:annotate(ko, "software_pipeline_order", ord)
      sch:annotate(ko, "software_pipeline_nested", 1)
      sch:annotate(ko, "software_pipeline_early_wait", 2)
      local g = through(sch.mod, TO_PIPELINE)
      check_equiv(f, g)
      check_equiv(f, through(sch.mod, TO_ASYNC_COPY))
      local s = tostring(g)
      -- the shared tiles keep a version per stage: the copies still precede the tile's last loads
      assert.truthy(s:find(('A_shared = T.alloc_buffer({%d, '):format(stages), 1, true), s)
      local body = steady_state(s, 9 - stages)
      assert.is_falsy(body:find("T.unroll(3)", 1, true)) -- no inner loop left: instances
      assert.are.equal(1, U.count(body, '"ptx_wait_group"'))
      assert.are.equal(1, U.count(steady_state(tostring(tir.lower(sch.mod)), 9 - stages), SYNC))
    end
    -- bad values and loops without constant bounds are refused, naming the key
    local sch, i = copy_then_compute(8)
    sch:annotate(i, "software_pipeline_stage", {0, 1})
    sch:annotate(i, "software_pipeline_unroll", 2)
    U.expect_error(function() through(sch.mod, TO_PIPELINE) end, "inject_software_pipeline", "software_pipeline_unroll must be 0 or 1")
    U.expect_error(function() through(staged_chain(tir.var("n"), {software_pipeline_unroll = 1}).mod, TO_PIPELINE) end,
                   "software_pipeline_unroll = 1 needs a loop of constant bounds")
    -- unrolled without nesting: the same function, the steady state as instances
    local sch3 = staged_chain(7, {software_pipeline_unroll = 1})
    local g3 = through(sch3.mod, TO_PIPELINE)
    check_equiv(sch3.mod, g3)
    assert.are.equal(0, U.count(tostring(g3), "T.serial"))
  end)

  it("software_pipeline_modulo_expand: the steady state unrolled by the versions' common multiple, version indices constant", function()
    -- chain with stages {0, 1, 2, 3}: B, C, D get 2 versions each; 2 copies of the steady state a round
    for _, n in ipairs({3, 4, 7, 8, 12}) do
      local sch = staged_chain(n, {software_pipeline_modulo_expand = 1})
      local g = through(sch.mod, TO_PIPELINE)
      check_equiv(sch.mod, g)
      local s = tostring(g)
      assert.is_falsy(s:find("T.floormod", 1, true), s) -- every version index a constant
      local steady = n - 3
      if steady >= 4 then assert.matches(("T.serial%%(%d%%)"):format(steady // 2), s) end
    end
    -- the k-step pipeline of a GEMM with 3-stage cp.async tiles: rounds of 3 iterations, waits unchanged
    local f = gemm(32, 32, 32)
    local sch = simt.schedule(f, small_simt({stages = 3, async = true}))
    local loops = {sch:get_loops(sch:get_block("C_update"))}
    sch:annotate(loops[5], "software_pipeline_modulo_expand", 1)
    local g = through(sch.mod, TO_PIPELINE)
    check_equiv(f, g)
    check_equiv(f, through(sch.mod, TO_ASYNC_COPY))
    assert.is_falsy(tostring(g):find("T.floormod", 1, true))
    assert.matches("T.serial%(2%)", tostring(g)) -- 8 k-steps: 6 in the steady state, 2 rounds of 3
    -- refused: other values, symbolic trip counts, together with software_pipeline_unroll
    local X = "software_pipeline_modulo_expand"
    U.expect_error(function() through(staged_chain(8, {[X] = 3}).mod, TO_PIPELINE) end, X .. " must be 0 or 1")
    U.expect_error(function() through(staged_chain(tir.var("n"), {[X] = 1}).mod, TO_PIPELINE) end,
                   X .. " = 1 needs a steady state of constant trip count")
    U.expect_error(function() through(staged_chain(8, {[X] = 1, software_pipeline_unroll = 1}).mod, TO_PIPELINE) end, "choose one")
  end)

  it("nested pipelines: without software_pipeline_nested the inner pipeline is one statement", function()
    local _, sch, ko = nested_simt(3)
    sch:unannotate(ko, "software_pipeline_nested")
    U.expect_error(function() through(sch.mod, TO_PIPELINE) end, "LoweringError", "inject_software_pipeline",
                   "software_pipeline_stage has 6 entries but the loop body has 3 statements")
    local _, sch2, ko2 = nested_simt(3)
    sch2:annotate(ko2, "software_pipeline_stage", {0, 0, 1, 2})
    U.expect_error(function() through(sch2.mod, TO_PIPELINE) end, "has 4 entries but the loop body has 6 statements",
                   "an inner pipeline counts as the statements it emitted")
    local _, sch3, ko3 = nested_simt(3)
    sch3:annotate(ko3, "software_pipeline_early_wait", 3)
    U.expect_error(function() through(sch3.mod, TO_PIPELINE) end, "software_pipeline_early_wait must be 0, 1 or 2")
    local sch4, i = copy_then_compute(8)
    sch4:annotate(i, "software_pipeline_stage", {0, 1})
    sch4:annotate(i, "software_pipeline_nested", 1)
    U.expect_error(function() through(sch4.mod, TO_PIPELINE) end, "software_pipeline_nested = 1 but no statement of the body is a software-pipelined loop")
  end)

  it("thread_sync knows versions: filling version (k + 1) % 2 while version k % 2 is read needs no barrier", function()
    local f = gemm(32, 32, 32)
    local sch = simt.schedule(f, small_simt({stages = 2, async = false}))
    local s = tostring(tir.lower(sch.mod))
    assert.matches('T.attr%(A_shared, "pipeline_version", %(k_0 %+ 1%) %% 2', s)
    local body = steady_state(s, 7)
    assert.are.equal(1, U.count(body, SYNC)) -- before the copies; none between copies and compute
    -- without the pipeline (one buffer) the same loop needs two
    local plain = tostring(tir.lower(simt.schedule(f, small_simt()).mod))
    assert.are.equal(2, U.count(steady_state(plain, 8), SYNC))
  end)

  it("thread_sync stays conservative with versions", function()
    local function lowered_body(v_write, v_read)
      local text = ([[
T.prim_func("main", {A = T.Buffer({64}, "float32"), O = T.Buffer({64}, "float32")}, function(A, O)
  local tx = T.launch_thread("threadIdx.x", 4)
  local S = T.allocate({8}, "float32", "shared")
  for k in T.serial(8) do
    T.attr(S, "pipeline_version", %s, function()
      S[{(%s) * 4 + tx}] = A[{k * 4 + tx}]
    end)
    T.attr(S, "pipeline_version", %s, function()
      O[{k * 4 + tx}] = S[{(%s) * 4 + 3 - tx}]
    end)
  end
end)]]):format(v_write, v_write, v_read, v_read)
      return tostring(tir.core.run_pass("thread_sync", tir.script.parse(text)))
    end
    -- different versions in one iteration: only the loop-carried write-after-read needs a barrier
    assert.are.equal(1, U.count(lowered_body("(k + 1) % 2", "k % 2"), SYNC))
    -- the same version: the read-after-write in the iteration; the slot is written again two
    -- iterations later, after that barrier
    assert.are.equal(1, U.count(lowered_body("k % 2", "k % 2"), SYNC))
    assert.are.equal(1, U.count(lowered_body("(k + 2) % 2", "k % 2"), SYNC))
    -- versions that are not floormods of one modulus may be the same slot: as without markers
    assert.are.equal(2, U.count(lowered_body("(k + 1) % 2", "k % 3"), SYNC))
    assert.are.equal(2, U.count(lowered_body("k + 1", "k"), SYNC))
    -- one slot (a single version): read-after-write and the loop-carried write-after-read
    assert.are.equal(2, U.count(lowered_body("0", "0"), SYNC))
  end)
end)

describe("pipelined GEMM codegen", function()
  if not nvrtc_ok then
    it("is skipped: " .. tostring(nvrtc_why), function() pending(nvrtc_why) end)
    return
  end
  it("compiles cp.async, commit and wait for sm_80 and sm_90", function()
    local f = gemm(256, 256, 256)
    for _, arch in ipairs({"sm_80", "sm_90"}) do
      for _, stages in ipairs({2, 3}) do
        local sch = simt.schedule(f, {stages = stages})
        local mod = tir.build(sch.mod, "cuda -arch=" .. arch)
        local src, ptx = mod:get_source("cuda"), mod:get_source("ptx")
        assert.matches("tir_cp_async_wait<" .. (stages - 1) .. ">%(%);\n%s*__syncthreads%(%);", src)
        assert.matches("cp%.async%.cg%.shared%.global %[%%r%d+%], %[%%rd%d+%], 16;", ptx)
        assert.matches("cp%.async%.ca%.shared%.global %[%%r%d+%], %[%%rd%d+%], 4;", ptx) -- the transposed A tile
        assert.matches("cp%.async%.commit_group;", ptx)
        assert.matches("cp%.async%.wait_group " .. (stages - 1) .. ";", ptx)
        assert.matches("cp%.async%.wait_group 0;", ptx)
      end
    end
  end)

  it("emits the zero-filling form for predicated copies", function()
    local A = te.placeholder({256}, "float32", "A")
    local S = te.compute({256}, function(i) return tir.select(tir.lt(i, 200), A[{i}], 0.0) end, "S")
    local O = te.compute({256}, function(i) return S[{i}] * 2.0 end, "O")
    local sch = tir.Schedule(te.create_prim_func({A, O}))
    local i = sch:get_loops(sch:get_block("O"))
    local io, ii = sch:split(i, {nil, 32})
    sch:bind(ii, "threadIdx.x")
    sch:compute_at(sch:get_block("S"), io)
    sch:set_scope(sch:get_block("S"), 0, "shared")
    local si = select(2, sch:get_loops(sch:get_block("S")))
    sch:bind(si, "threadIdx.x")
    sch:annotate(io, "software_pipeline_stage", {0, 1})
    sch:annotate(io, "software_pipeline_async_stages", {0})
    local mod = tir.build(sch.mod, "cuda -arch=sm_80")
    assert.matches("tir_cp_async_zfill<4>", mod:get_source("cuda"))
    assert.matches("cp%.async%.ca%.shared%.global %[%%r%d+%], %[%%rd%d+%], 4, %%r%d+;", mod:get_source("ptx"))
  end)
end)

describe("#gpu pipelined SIMT GEMM", function()
  local dev = tir.device("cuda", 0)
  local has_gpu, why = dev:exists()
  if not has_gpu then
    it("is skipped: " .. tostring(why), function() pending("no GPU: " .. tostring(why)) end)
    return
  end
  it("matches cuBLAS with 2 to 4 stages, cp.async or not, early waits, tiles that do not divide", function()
    for _, n in ipairs({512, 1000}) do
      local f = gemm(n, n, n)
      local a = tir.nd.random({n, n}, "float32", dev, {seed = 5})
      local b = tir.nd.random({n, n}, "float32", dev, {seed = 6})
      local ref = tir.nd.empty({n, n}, "float32", dev)
      tir.core.cublas_gemm(a, b, ref, false, false, 1.0, 0.0)
      for _, o in ipairs({{stages = 2}, {stages = 3}, {stages = 4}, {stages = 2, async = false}, {stages = 3, early_wait = true},
                          {stages = 3, a_transpose = false, pad_a = {16, 12}}}) do
        local c = tir.nd.empty({n, n}, "float32", dev)
        tir.build(simt.schedule(f, o).mod, "cuda")(a, b, c)
        tir.testing.assert_allclose(c, ref, {rtol = 1e-4, atol = 2e-6 * math.sqrt(n)})
      end
    end
  end)
end)
