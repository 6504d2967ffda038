-- simulate_spec.lua -- tir.simulate, the warp-accurate GPU simulator (docs/SIMULATOR.md):
-- every GPU example and every tensorized/GPU schedule of the suite runs its lowered kernels at
-- small sizes and must match the interpreter bit-exactly with no issue reported; planted bugs
-- (a missing barrier, a wrong ldmatrix lane mapping, a missing or too weak cp.async wait, an
-- off-by-one tile bound, a divergent barrier, a partial warp at a warp-wide instruction) must
-- each be caught with a message that says what and where; errors name the problem.
local tir = require("tir")
local T = tir.script
local U = require("spec_util")
local simt = require("tir.schedules.simt_gemm")
local tc = require("tir.schedules.tc_gemm")
local cuda = require("tir.intrin.cuda")
local core = tir.core

-- the sanitizer build runs the same checks on fewer configurations
local asan = os.getenv("ASAN_OPTIONS") ~= nil

--- Simulates sch's lowered kernels on random inputs and requires the interpreter's results
-- (on the unscheduled f) exactly, with no issue; returns the report.
local function sim_equal(f, sch, opts)
  local mod = tir.build(sch.mod or sch, "cuda", {compile = false})
  local o = {reference = f}
  for k, v in pairs(opts or {}) do o[k] = v end
  local rep = tir.simulate(mod, tir.testing.random_args(f, 7), o)
  assert.are.equal(0, rep.n_issues)
  assert.are.equal(0, rep.races)
  assert.are.same({}, rep.hints)
  assert.is_true(rep.ctas >= 1 and rep.statements > 0)
  return rep
end

-- statement rewriting for planting bugs (spec_util.lua)
local rewrite, rewrite_func, is_call, drop_call = U.rewrite, U.rewrite_func, U.is_call, U.drop_call

local function small_tc(intrin, o)
  local r = {BM = 32, BN = 32, BK = 32, warp_m = 16, warp_n = 16, intrin = intrin}
  for k, v in pairs(o or {}) do r[k] = v end
  return r
end
local function small_simt(o)
  local r = {BM = 32, BN = 32, BK = 8, TY = 8, TX = 8}
  for k, v in pairs(o or {}) do r[k] = v end
  return r
end

describe("tir.simulate runs the GPU examples", function()
  it("matmul.lua: 16x16 tiles, one thread per element", function()
    local f = U.matmul(64, 48, 32)
    local sch = tir.Schedule(f)
    local i, j, k = sch:get_loops(sch:get_block("C"))
    local bi, ti = sch:split(i, {nil, 16})
    local bj, tj = sch:split(j, {nil, 16})
    sch:reorder(bi, bj, ti, tj, k)
    sch:bind(bi, "blockIdx.y"); sch:bind(bj, "blockIdx.x")
    sch:bind(ti, "threadIdx.y"); sch:bind(tj, "threadIdx.x")
    local rep = sim_equal(f, sch)
    assert.are.equal(12, rep.ctas)
    assert.are.equal(0, rep.barriers)
  end)

  it("matmul_shared.lua: the double-buffered SIMT GEMM with its default tiles at 128x128x64", function()
    local f = U.matmul(128, 128, asan and 16 or 64)
    local rep = sim_equal(f, simt.schedule(f, {stages = 2, async = false}))
    assert.is_true(rep.barriers > 0 and rep.shared_reads > 0)
  end)

  for _, intrin in ipairs({"mma", "wmma"}) do
    it("matmul_" .. intrin .. ".lua: fp16 tensor cores, fp16 epilogue, 3-stage cp.async pipeline (the no-GPU tiles)", function()
      for _, size in ipairs(asan and {{64, 64, 64}} or {{64, 64, 64}, {50, 70, 40}}) do
        local M, N, K = size[1], size[2], size[3]
        local pad = (M % 32 ~= 0 or N % 32 ~= 0 or K % 32 ~= 0) and {32, 32, 32} or nil
        local f = tc.workload(M, N, K, "float16", "float16", pad)
        local rep = sim_equal(f, tc.schedule(f, small_tc(intrin, {epilogue = "D", stages = 3})))
        assert.is_true(rep.warp_ops > 0)
        if not pad then assert.is_true(rep.cp_async > 0) end
      end
    end)
  end
end)

describe("tir.simulate runs the GEMM schedules", function()
  it("SIMT: 1, 2 and 3 stages, A transposed or padded, cp.async or plain copies", function()
    local f = U.matmul(64, 64, 64)
    local cfgs = {{stages = 1}, {stages = 2}, {stages = 3}, {stages = 1, a_transpose = false, pad_a = {32, 4}},
                  {stages = 3, a_transpose = false, pad_a = {32, 4}}, {stages = 2, async = false}, {stages = 2, early_wait = true},
                  {stages = 3, early_wait = true}}
    if asan then cfgs = {{stages = 1}, {stages = 3, a_transpose = false, pad_a = {32, 4}}, {stages = 3, early_wait = true}} end
    for _, c in ipairs(cfgs) do
      local rep = sim_equal(f, simt.schedule(f, small_simt(c)))
      if c.stages > 1 and c.async ~= false then assert.is_true(rep.cp_async > 0) end
    end
  end)

  it("SIMT: sizes the tiles do not divide (predicated tiles), pipelined too", function()
    local f = U.matmul(50, 70, 30)
    for _, st in ipairs({1, 3}) do
      sim_equal(f, simt.schedule(f, small_simt({stages = st, vec = 1, local_vec = false, store_vec = false, b_swizzle = false})))
    end
  end)

  it("SIMT: the pipeline spec's small tiles and nested pipelines", function()
    local f = U.matmul(32, 32, 32)
    local base = {BM = 16, BN = 16, BK = 4, TY = 4, TX = 4}
    for _, c in ipairs({{stages = 2}, {stages = 3}, {stages = 2, async = false}, {stages = 2, a_transpose = false}}) do
      local o = {}
      for k, v in pairs(base) do o[k] = v end
      for k, v in pairs(c) do o[k] = v end
      sim_equal(f, simt.schedule(f, o))
    end
  end)

  it("tensor cores: mma.sync + ldmatrix and WMMA, 1 to 3 stages (waits early or late), with and without the fp16 epilogue, bf16", function()
    local cfgs = {}
    for _, intrin in ipairs({"mma", "wmma"}) do
      for _, st in ipairs(asan and {1, 3} or {1, 2, 3}) do
        for _, epi in ipairs({false, true}) do cfgs[#cfgs + 1] = {intrin, st, epi, true} end
      end
      cfgs[#cfgs + 1] = {intrin, 3, false, false}
    end
    for _, c in ipairs(cfgs) do
      local f = tc.workload(64, 64, 64, "float16", c[3] and "float16" or nil)
      local rep = sim_equal(f, tc.schedule(f, small_tc(c[1], {stages = c[2], epilogue = c[3] and "D" or nil, early_wait = c[4]})))
      assert.is_true(rep.warp_ops > 0)
    end
    local f = tc.workload(64, 64, 64, "bfloat16")
    sim_equal(f, tc.schedule(f, small_tc("mma", {dtype = "bfloat16"})))
  end)

  it("tensor cores: padded odd shapes (A_pad/B_pad tiles, fp32 workspace, D as a second kernel)", function()
    for _, intrin in ipairs({"mma", "wmma"}) do
      local f = tc.workload(50, 40, 24, "float16", "float16", {32, 32, 32})
      local rep = sim_equal(f, tc.schedule(f, small_tc(intrin, {stages = 2})))
      assert.are.equal(2, rep.kernels)
      local g = tc.workload(1, 32, 32, "float16", "float32", {32, 32, 32})
      sim_equal(g, tc.schedule(g, small_tc(intrin)))
    end
  end)

  it("the tensorize spec's warp tiles (64x64x64, 32x32 CTA tiles, 16x16 warps)", function()
    for _, cfg in ipairs({{intrin = "mma"}, {intrin = "wmma"}, {intrin = "mma", epilogue = "D"}, {intrin = "wmma", epilogue = "D"}}) do
      local f = tc.workload(64, 64, 64, "float16", cfg.epilogue and "float16")
      sim_equal(f, tc.schedule(f, small_tc(cfg.intrin, {epilogue = cfg.epilogue})))
    end
  end)

  it("a 128x128x64 tensor-core GEMM (default tiles) simulates in well under 2 seconds", function()
    for _, intrin in ipairs(asan and {"mma"} or {"mma", "wmma"}) do
      local f = tc.workload(128, 128, 64, "float16")
      local mod = tir.build(tc.schedule(f, {intrin = intrin, stages = 3}).mod, "cuda", {compile = false})
      local args = tir.testing.random_args(f, 3)
      local t0 = os.clock()
      local rep = tir.simulate(mod, args)
      local dt = os.clock() - t0
      assert.are.equal(0, rep.n_issues)
      if not asan then assert.is_true(dt < 2, ("took %.2f s"):format(dt)) end
      local want = tir.testing.copy_args(tir.testing.random_args(f, 3))
      tir.interpret(f, want)
      assert.are.same(want[3]:to_table(), args[3]:to_table())
    end
  end)

  it("the GPU and codegen specs' kernels: odd sizes, int32 bit for bit, two kernels with a temporary, floordiv", function()
    local te = tir.te
    -- gpu_spec: 16x16 tiles at sizes they do not divide
    local f = U.matmul(50, 70, 33)
    local sch = tir.Schedule(f)
    local i, j, k = sch:get_loops(sch:get_block("C"))
    local bi, ti = sch:split(i, {nil, 16})
    local bj, tj = sch:split(j, {nil, 16})
    sch:reorder(bi, bj, ti, tj, k)
    sch:bind(bi, "blockIdx.y"); sch:bind(bj, "blockIdx.x"); sch:bind(ti, "threadIdx.y"); sch:bind(tj, "threadIdx.x")
    sim_equal(f, sch)
    -- gpu_spec: the integer matmul, rows over blockIdx.x / threadIdx.y, columns over threadIdx.x
    local g = U.matmul(40, 24, 19, "int32")
    local s2 = tir.Schedule(g)
    local gi, gj = s2:get_loops(s2:get_block("C"))
    local gbi, gti = s2:split(gi, {nil, 8})
    s2:bind(gbi, "blockIdx.x"); s2:bind(gti, "threadIdx.y"); s2:bind(gj, "threadIdx.x")
    sim_equal(g, s2)
    -- gpu_spec: a chain as two kernels, Y a global temporary
    local X = te.placeholder({1024}, "float32", "X")
    local Y = te.compute({1024}, function(x) return X[{x}] * 2.0 + 1.0 end, "Y")
    local Z = te.compute({1024}, function(x) return tir.max(Y[{x}], 0.0) end, "Z")
    local h = te.create_prim_func({X, Z})
    local s3 = tir.Schedule(h)
    for _, name in ipairs({"Y", "Z"}) do
      local bx, tx = s3:split(s3:get_loops(s3:get_block(name)), {nil, 256})
      s3:bind(bx, "blockIdx.x"); s3:bind(tx, "threadIdx.x")
    end
    assert.are.equal(2, sim_equal(h, s3).kernels)
    -- codegen_spec: predicated tiles with an unrolled k loop
    local m = U.matmul(50, 50, 64)
    local s4 = tir.Schedule(m)
    U.bind_2d(s4, "C")
    local _, ki = s4:split(select(5, s4:get_loops(s4:get_block("C"))), {nil, 32})
    s4:unroll(ki)
    sim_equal(m, s4)
    -- codegen_spec: floor division of negative values
    local A = te.placeholder({64}, "int32", "A")
    local B = te.compute({64}, function(x) return (A[{x}] - 32) // 8 + x // 8 end, "B")
    local d = te.create_prim_func({A, B})
    local s5 = tir.Schedule(d)
    local bx, tx = s5:split(s5:get_loops(s5:get_block("B")), {nil, 32})
    s5:bind(bx, "blockIdx.x"); s5:bind(tx, "threadIdx.x")
    sim_equal(d, s5)
  end)

  it("elementwise and reduction kernels of the lowering specs", function()
    local f = U.elementwise(40, 24)
    local sch = tir.Schedule(f)
    U.bind_2d(sch, "B", 16, 8)
    sim_equal(f, sch)
    local g = U.matmul(24, 40, 16, "int32")
    local s2 = tir.Schedule(g)
    U.bind_2d(s2, "C", 8, 16)
    sim_equal(g, s2)
  end)
end)

describe("tir.simulate catches planted bugs", function()
  local function tc_func(o, M)
    local f = tc.workload(M or 64, M or 64, 64, "float16")
    return f, tir.lower(tc.schedule(f, small_tc("mma", o)).mod)
  end

  it("a missing barrier before ldmatrix reads the shared tiles: a read-after-write race", function()
    local f, low = tc_func()
    local e = U.expect_error(function() tir.simulate(drop_call(low, "tvm_storage_sync", 2), tir.testing.random_args(f, 1)) end,
      "SimulationError in main_kernel", "shared-memory race (read after write) on A_shared[", "no __syncthreads / tvm_storage_sync",
      "statement: T.evaluate(T.call(\"void\", \"mma_ldmatrix\"", "other statement: A_shared[{T.Ramp(", "[warp 0, lane")
    assert.are.equal("SimulationError", e.kind)
    assert.matches("this access", tostring(e), 1, true)
    assert.matches("the other access", tostring(e), 1, true)
  end)

  it("a missing barrier before refilling the tiles: a write-after-read race, and check = false reports", function()
    local f = U.matmul(64, 64, 64)
    local low = tir.lower(simt.schedule(f, small_simt()).mod)
    local g = drop_call(low, "tvm_storage_sync", 1)
    U.expect_error(function() tir.simulate(g, tir.testing.random_args(f, 1)) end, "shared-memory race (write after read)",
      "writes it, but thread", "read it in the same barrier interval",
      "no __syncthreads / tvm_storage_sync between the read and the write")
    local rep = tir.simulate(g, tir.testing.random_args(f, 1), {check = false, max_issues = 5})
    assert.is_true(rep.races >= 1 and rep.n_issues >= rep.races)
    local is = rep.issues[1]
    assert.are.equal("race", is.kind)
    assert.are.equal("A_shared", is.buffer)
    assert.is_truthy(is.thread and is.other_thread and is.statement and is.other_statement and is.cta)
    assert.are_not.same(is.thread, is.other_thread)
    assert.is_true(is.index >= 0 and is.index < is.extent)
  end)

  it("a missing cp.async wait: data read while in flight, naming the issuing thread", function()
    local f, low = tc_func({stages = 3})
    for n = 1, 2 do
      U.expect_error(function() tir.simulate(drop_call(low, "ptx_wait_group", n), tir.testing.random_args(f, 1)) end,
        "while a cp.async to it is in flight", "it was issued by thread", "a ptx_wait_group is missing, or allows too many groups",
        "other statement: T.evaluate(T.call(\"void\", \"ptx_cp_async\"")
    end
    -- a wait that allows one group too many in flight
    local g = rewrite_func(low, function(s)
      if is_call(s, "ptx_wait_group") and s.value.args[1].value == 1 then
        return core.make("Evaluate", {value = tir.call("void", "ptx_wait_group", 2)})
      end
    end)
    U.expect_error(function() tir.simulate(g, tir.testing.random_args(f, 1)) end, "in flight")
  end)

  it("a missing barrier after a cp.async wait: the landed data races with other threads' reads", function()
    local f = U.matmul(64, 64, 64)
    local low = tir.lower(simt.schedule(f, small_simt({stages = 2})).mod)
    -- the barrier right after the first wait
    local g, after_wait = nil, false
    g = rewrite_func(low, function(s)
      if is_call(s, "ptx_wait_group") then after_wait = true
      elseif after_wait and is_call(s, "tvm_storage_sync") then
        after_wait = false
        return false
      end
    end)
    U.expect_error(function() tir.simulate(g, tir.testing.random_args(f, 1)) end, "shared-memory race (read after write)",
      "ptx_cp_async")
  end)

  it("cp.async copies never waited for", function()
    local k = T.prim_func("k", {A = T.Buffer({64}, "float32")}, function(A)
      local bx = T.launch_thread("blockIdx.x", 1)
      local tx = T.launch_thread("threadIdx.x", 16)
      local S = T.allocate({64}, "float32", "shared")
      T.evaluate(T.call("void", "ptx_cp_async", T.address_of(S[{tx * 4}]), T.address_of(A[{tx * 4}]), 16))
      T.evaluate(T.call("void", "ptx_commit_group"))
    end)
    U.expect_error(function() tir.simulate(k, tir.testing.random_args(k, 1)) end, "1 cp.async copy issued by thread (0, 0, 0)",
      "never waited for")
  end)

  it("a wrong ldmatrix lane mapping: results differ from the interpreter, with a hint at the operand", function()
    -- matrices 1 and 2 swapped: lane l gives row l % 8 + 8 * (l / 16), column 8 * (l / 8 % 2)
    local desc = tir.TensorIntrin.get("mma_ldmatrix_16x16_f16_a")
    local ld = tir.var("ld", "int32")
    local bad = T.prim_func("bad_ldmatrix", {S = T.Buffer({16, 16}, "float16", {scope = "shared", offset_factor = 16, strides = {ld, 1}}),
                                             D = T.Buffer({16, 16}, "float16", {scope = "warp", offset_factor = 16})}, function(S, D)
      T.block("root", function()
        T.reads(S[{{0, 16}, {0, 16}}])
        T.writes(D[{{0, 16}, {0, 16}}])
        local lane = T.call("int32", "tir_lane_id")
        T.evaluate(T.call("void", "mma_ldmatrix", 0, 4, T.address_of(D[{0, 0}]), T.address_of(S[{lane % 8 + lane // 16 * 8, lane // 8 % 2 * 8}])))
      end)
    end)
    tir.TensorIntrin.register("mma_ldmatrix_16x16_f16_a", desc, bad, true)
    local ok, sch = pcall(tc.schedule, tc.workload(64, 64, 64, "float16"), small_tc("mma"))
    cuda.register_mma() -- the correct intrinsics again
    assert(ok, sch)
    local f = tc.workload(64, 64, 64, "float16")
    local mod = tir.build(sch.mod, "cuda", {compile = false})
    U.expect_error(function() tir.simulate(mod, tir.testing.random_args(f, 1), {reference = f}) end,
      "C differs from the oracle (the interpreter) at", "last written by thread", "mma_store",
      "hint: the A operand of mma_sync in warp 0 is not a 16x16 tile of A_shared", "check the lane -> row mapping of the mma_ldmatrix")
    -- the correct mapping passes
    sim_equal(f, tc.schedule(f, small_tc("mma")))
  end)

  it("an off-by-one tile bound: an out-of-bounds read with the index and the extent", function()
    local f = U.matmul(50, 70, 30)
    local low = tir.lower(simt.schedule(f, small_simt({vec = 1, local_vec = false, store_vec = false, b_swizzle = false})).mod)
    local done = false
    local g = rewrite_func(low, function(s)
      -- the guard of A's copy into shared memory: row < 50 becomes row <= 50
      if not done and s.kind == "IfThenElse" and s.cond.kind == "And" and s.cond.a.kind == "LT" and s.cond.a.b.kind == "IntImm" and
         s.cond.a.b.value == 50 and s.then_case.kind == "BufferStore" and s.then_case.buffer.name == "A_shared" then
        done = true
        return core.make("IfThenElse", {cond = tir.And(tir.le(s.cond.a.a, s.cond.a.b), s.cond.b), then_case = s.then_case})
      end
    end)
    assert.is_true(done)
    local e = U.expect_error(function() tir.simulate(g, tir.testing.random_args(f, 1)) end,
      "out-of-bounds read of A[", "the global buffer has 1500 elements", "statement: A_shared[")
    local rep = tir.simulate(g, tir.testing.random_args(f, 1), {check = false})
    local is = rep.issues[1]
    assert.are.equal("out_of_bounds", is.kind)
    assert.are.equal(1500, is.extent)
    assert.is_true(is.index >= 1500)
    assert.is_truthy(e.message:find("CTA (0, 1, 0)", 1, true))
  end)

  it("a barrier under a divergent if", function()
    local f, low = tc_func()
    local g = rewrite_func(low, function(s)
      if is_call(s, "tvm_storage_sync") then
        return core.make("IfThenElse", {cond = tir.lt(tir.var("never", "int32"), 1), then_case = s})
      end
    end)
    -- a condition on threadIdx.x: find that variable in the kernel
    local tx
    rewrite(low.body, function(s)
      if s.kind == "AttrStmt" and s.key == "thread_extent" and s.node.thread_tag == "threadIdx.x" then tx = s.node.var end
    end)
    assert.is_truthy(tx)
    g = rewrite_func(low, function(s)
      if is_call(s, "tvm_storage_sync") then return core.make("IfThenElse", {cond = tir.lt(tx, 16), then_case = s}) end
    end)
    U.expect_error(function() tir.simulate(g, tir.testing.random_args(tc.workload(64, 64, 64, "float16"), 1)) end,
      "__syncthreads (tvm_storage_sync) is reached by 64 of the CTA's 128 threads", "under divergent control flow",
      "thread (16, 0, 0) [warp 0, lane 16] is not there")
  end)

  it("a warp-wide instruction executed by part of a warp", function()
    local f, low = tc_func()
    local tx
    rewrite(low.body, function(s)
      if s.kind == "AttrStmt" and s.key == "thread_extent" and s.node.thread_tag == "threadIdx.x" then tx = s.node.var end
    end)
    local g = rewrite_func(low, function(s)
      if is_call(s, "mma_ldmatrix") then return core.make("IfThenElse", {cond = tir.lt(tx, 8), then_case = s}) end
    end)
    U.expect_error(function() tir.simulate(g, tir.testing.random_args(f, 1)) end,
      "mma_ldmatrix is a warp-wide .sync.aligned instruction, but only part of the warp executes it")
  end)
end)

describe("tir.simulate on hand-written kernels", function()
  local function kernel(n, body)
    return T.prim_func("k", {A = T.Buffer({64}, "float32"), B = T.Buffer({64}, "float32")}, function(A, B)
      local bx = T.launch_thread("blockIdx.x", 1)
      local tx = T.launch_thread("threadIdx.x", n)
      body(A, B, tx)
    end)
  end

  it("shares memory within a CTA in lockstep (a reversal needs the barrier)", function()
    local f = kernel(64, function(A, B, tx)
      local S = T.allocate({64}, "float32", "shared")
      S[{tx}] = A[{tx}]
      T.evaluate(T.call("int32", "tvm_storage_sync", "shared"))
      B[{tx}] = S[{63 - tx}]
    end)
    local args = tir.testing.random_args(f, 1)
    local rep = tir.simulate(f, args)
    assert.are.equal(0, rep.n_issues)
    assert.are.equal(1, rep.barriers)
    local a, b = args[1]:to_table(), args[2]:to_table()
    for i = 1, 64 do assert.are.equal(a[65 - i], b[i]) end
  end)

  it("runs loops whose trip count differs by thread, with a mask", function()
    local f = kernel(8, function(A, B, tx)
      B[{tx}] = T.float32(0)
      for i in T.serial(tx + 1) do B[{tx}] = B[{tx}] + A[{i}] end
    end)
    local args = tir.testing.random_args(f, 1)
    local rep = tir.simulate(f, args)
    local a, b = args[1]:to_table(), args[2]:to_table()
    local s = 0
    for t = 1, 8 do
      s = s + a[t]
      assert.is_true(math.abs(b[t] - s) < 1e-5)
    end
    assert.are.equal(0, rep.n_issues)
    -- a barrier in such a loop is divergent
    local g = kernel(8, function(A, B, tx)
      for i in T.serial(tx + 1) do T.evaluate(T.call("int32", "tvm_storage_sync", "shared")) end
    end)
    U.expect_error(function() tir.simulate(g, tir.testing.random_args(g, 1)) end, "is reached by 7 of the CTA's 8 threads",
      "thread (0, 0, 0) [warp 0, lane 0] is not there")
  end)

  it("ldmatrix gives each lane the elements of the PTX ISA layout (.x1, .x2, .x4, .trans)", function()
    -- S is a 16x16 tile holding 16 * row + col; lane l gives row l % 16, column 8 * (l / 16)
    for _, num in ipairs({1, 2, 4}) do
      for _, trans in ipairs({0, 1}) do
        local k = T.prim_func("ldm", {A = T.Buffer({256}, "float16"), O = T.Buffer({256}, "float16")}, function(A, O)
          local bx = T.launch_thread("blockIdx.x", 1)
          local tx = T.launch_thread("threadIdx.x", 32)
          local S = T.allocate({256}, "float16", "shared")
          local W = T.allocate({256}, "float16", "warp")
          for i in T.serial(8) do S[{tx * 8 + i}] = A[{tx * 8 + i}] end
          T.evaluate(T.call("int32", "tvm_storage_sync", "shared"))
          T.evaluate(T.call("void", "mma_ldmatrix", trans, num, T.address_of(W[{0}]), T.address_of(S[{tx % 16 * 16 + tx // 16 * 8}])))
          for i in T.serial(2 * num) do O[{tx * 8 + i}] = W[{i}] end
        end)
        local vals = {}
        for e = 0, 255 do vals[e + 1] = e end
        local a = tir.nd.array(vals, "float16")
        local o = tir.nd.empty({256}, "float16")
        assert.are.equal(0, tir.simulate(k, {a, o}).n_issues)
        local got = o:to_table()
        for l = 0, 31 do
          for i = 0, num - 1 do
            for e = 0, 1 do
              -- matrix i covers rows 8 (i % 2).., columns 8 (i // 2)..; PTX ISA 9.7.14.5.15
              local r, c = l // 4, 2 * (l % 4) + e
              if trans == 1 then r, c = 2 * (l % 4) + e, l // 4 end
              local want = (r + 8 * (i % 2)) * 16 + c + 8 * (i // 2)
              assert.are.equal(want, got[l * 8 + 2 * i + e + 1], ("x%d trans=%d lane %d reg %d half %d"):format(num, trans, l, i, e))
            end
          end
        end
      end
    end
  end)

  it("mma_store writes each lane's accumulators where the m16n8k16 C layout puts them", function()
    local k = T.prim_func("st", {O = T.Buffer({256}, "float32")}, function(O)
      local bx = T.launch_thread("blockIdx.x", 1)
      local tx = T.launch_thread("threadIdx.x", 32)
      local W = T.allocate({256}, "float32", "warp")
      for j in T.serial(8) do W[{j}] = T.cast("float32", tx * 8 + j) end
      T.evaluate(T.call("void", "mma_store", T.address_of(W[{0}]), T.address_of(O[{0}]), 16))
    end)
    local o = tir.nd.empty({256}, "float32")
    assert.are.equal(0, tir.simulate(k, {o}).n_issues)
    local got = o:to_table()
    for l = 0, 31 do
      for j = 0, 7 do
        -- PTX ISA 9.7.14.5.8: c0,c1 at (g, 2q..), c2,c3 at (g + 8, 2q..); floats 4-7 are columns 8-15
        local r, c = l // 4 + 8 * ((j % 4) // 2), 8 * (j // 4) + 2 * (l % 4) + j % 2
        assert.are.equal(l * 8 + j, got[r * 16 + c + 1])
      end
    end
  end)

  it("cp.async: the zero-filling form, data landing at the issuing thread's wait", function()
    local k = T.prim_func("cp", {A = T.Buffer({64}, "float32"), B = T.Buffer({64}, "float32")}, function(A, B)
      local bx = T.launch_thread("blockIdx.x", 1)
      local tx = T.launch_thread("threadIdx.x", 16)
      local S = T.allocate({64}, "float32", "shared")
      -- threads 8..15 copy 8 of their 16 bytes, the rest is zero-filled
      T.evaluate(T.call("void", "ptx_cp_async", T.address_of(S[{tx * 4}]), T.address_of(A[{tx * 4}]), 16,
                        tir.select(tir.lt(tx, 8), 16, 8)))
      T.evaluate(T.call("void", "ptx_commit_group"))
      T.evaluate(T.call("void", "ptx_wait_group", 0))
      T.evaluate(T.call("int32", "tvm_storage_sync", "shared"))
      for i in T.serial(4) do B[{tx * 4 + i}] = S[{63 - tx * 4 - i}] end
    end)
    local args = tir.testing.random_args(k, 1)
    local rep = tir.simulate(k, args)
    assert.are.equal(16, rep.cp_async)
    local a, b = args[1]:to_table(), args[2]:to_table()
    for j = 0, 63 do
      local e = 63 - j
      local want = (e < 32 or e % 4 < 2) and a[e + 1] or 0
      assert.are.equal(want, b[j + 1])
    end
  end)

  it("reports out-of-bounds shared and local accesses with the extent", function()
    local f = kernel(32, function(A, B, tx)
      local S = T.allocate({32}, "float32", "shared")
      S[{tx + 1}] = A[{tx}]
    end)
    U.expect_error(function() tir.simulate(f, tir.testing.random_args(f, 1)) end,
      "out-of-bounds write of S[32]: the shared buffer has 32 elements, by thread (31, 0, 0) [warp 0, lane 31]")
    local g = kernel(4, function(A, B, tx)
      local L = T.allocate({2}, "float32", "local")
      L[{tx}] = A[{tx}]
    end)
    U.expect_error(function() tir.simulate(g, tir.testing.random_args(g, 1)) end, "out-of-bounds write of L[2]: the local buffer has 2 elements")
  end)

  it("reports misaligned vector accesses as the codegen emits them", function()
    local f = kernel(8, function(A, B, tx)
      local S = T.allocate({64}, "float32", "shared")
      S[{T.Ramp(tx * 4 + 1, 1, 4)}] = A[{T.Ramp(tx * 4, 1, 4)}]
    end)
    U.expect_error(function() tir.simulate(f, tir.testing.random_args(f, 1)) end, "misaligned vector access", "16-byte store")
  end)

  it("runs the chosen CTAs only", function()
    local f = T.prim_func("k", {A = T.Buffer({64}, "float32"), B = T.Buffer({64}, "float32")}, function(A, B)
      local bx = T.launch_thread("blockIdx.x", 4)
      local tx = T.launch_thread("threadIdx.x", 16)
      B[{bx * 16 + tx}] = A[{bx * 16 + tx}] * T.float32(2)
    end)
    local args = tir.testing.random_args(f, 1)
    local before = args[2]:to_table()
    local rep = tir.simulate(f, args, {ctas = {{2}, {0, 0, 0}}})
    assert.are.equal(2, rep.ctas)
    local a, b = args[1]:to_table(), args[2]:to_table()
    for i = 1, 64 do
      local cta = (i - 1) // 16
      if cta == 0 or cta == 2 then assert.are.equal(a[i] * 2, b[i]) else assert.are.equal(before[i], b[i]) end
    end
    assert.are.equal(1, tir.simulate(f, args, {ctas = {k_kernel = {{3, 0, 0}}}}).ctas)
    U.expect_error(function() tir.simulate(f, args, {ctas = {{4, 0, 0}}}) end, "CTA (4, 0, 0) is outside kernel k_kernel's grid (4, 1, 1)")
  end)
end)

describe("tir.simulate errors", function()
  it("checks its arguments and options", function()
    local f = U.matmul(16, 16, 16)
    local sch = tir.Schedule(f)
    U.bind_2d(sch, "C", 8, 8)
    U.expect_error(function() tir.simulate(42, {}) end, "TypeError in simulate", "expected a tir.Module, a PrimFunc or a Schedule")
    U.expect_error(function() tir.simulate(sch, 1) end, "args must be a table")
    U.expect_error(function() tir.simulate(sch, tir.testing.random_args(f, 1), {chekc = false}) end, "unknown option 'chekc'")
    U.expect_error(function() tir.simulate(sch, tir.testing.random_args(f, 1), {reference = 3}) end, "reference must be true or a PrimFunc")
    U.expect_error(function() tir.simulate(sch, {tir.nd.empty({16, 16}, "float32")}) end, "takes 3 argument(s), got 1")
    -- a Schedule and a scheduled PrimFunc are lowered first
    assert.are.equal(0, tir.simulate(sch, tir.testing.random_args(f, 1), {reference = f}).n_issues)
  end)

  it("refuses functions without kernels and builtins it does not know", function()
    U.expect_error(function() tir.simulate(U.matmul(8, 8, 8), tir.testing.random_args(U.matmul(8, 8, 8), 1)) end, "LoweringError",
      "bind its loops to blockIdx/threadIdx")
    local k = T.prim_func("k", {A = T.Buffer({32}, "float32")}, function(A)
      local tx = T.launch_thread("threadIdx.x", 32)
      T.evaluate(T.call("void", "no_such_builtin", tx))
    end)
    U.expect_error(function() tir.simulate(k, tir.testing.random_args(k, 1)) end, "RuntimeError", "does not know builtin 'no_such_builtin'")
  end)
end)
