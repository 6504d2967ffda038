-- sim_warp_specialized_spec.lua -- tir.simulate on warp-specialized kernels (src/core/sim/sim_task.c,
-- sim_sync.c): a producer warpgroup that fills the stages of a pipeline with TMA copies and
-- consumer warpgroups that wait on the stages' full barriers, compute, and release them on
-- their empty barriers.  The two branches of the `if warpgroup == 0` wait on each other, so
-- the simulator runs them as cooperative tasks.  Hand-built kernels (T script) run bit-exactly
-- against the interpreter on the plain workload; planted bugs (a wrong parity, a consumer that
-- reads a stage before its full barrier, a producer that refills a stage the consumers have
-- not released, a named barrier with the wrong thread count, setmaxnreg misuse) are reported.
local tir = require("tir")
local U = require("spec_util")
local T = tir.script
local tc = require("tir.schedules.tc_gemm")

local BM, BN, BK = 32, 32, 32

-- C = A B^T (A [M, K], B [N, K] fp16, C fp32) by CTAs of 32 x 32 tiles: warpgroup 0 produces
-- (its thread 0 issues one TMA copy per operand and stage), warpgroups 1 .. nc consume (each
-- thread keeps 1024 / (128 nc) accumulators, k in order as the interpreter adds them) and
-- write C through a shared tile ordered by a named barrier among the consumers only.
-- opts plant bugs: parity_bug, no_full_wait, no_empty_wait, bar_count, nreg_inc, nreg_leader;
-- tma_first issues the copies before their arrive.expect_tx (legal); split puts each consumer
-- warpgroup in a branch of its own.
local function ws_gemm(M, N, K, opts)
  opts = opts or {}
  local stages, nc = opts.stages or 2, opts.consumers or 2
  local nthreads = 128 * (1 + nc)
  local per = BM * BN // (128 * nc) -- accumulators per consumer thread
  local KT = K // BK
  local tile_bytes = (BM + BN) * BK * 2
  return T.prim_func("ws_gemm", {A = T.Buffer({M, K}, "float16"), B = T.Buffer({N, K}, "float16"),
                                 C = T.Buffer({M, N}, "float32")}, function(A, B, C)
    local by = T.launch_thread("blockIdx.y", M // BM)
    local bx = T.launch_thread("blockIdx.x", N // BN)
    local tx = T.launch_thread("threadIdx.x", nthreads)
    local As = T.allocate({stages * BM * BK}, "float16", "shared")
    local Bs = T.allocate({stages * BN * BK}, "float16", "shared")
    local Cs = T.allocate({BM * BN}, "float32", "shared")
    local full = T.allocate({stages}, "uint64", "shared")
    local empty = T.allocate({stages}, "uint64", "shared")
    local da = T.call("handle", "tma_descriptor", A.data, "float16", 0, 2, M, K, BM, BK)
    local db = T.call("handle", "tma_descriptor", B.data, "float16", 0, 2, N, K, BN, BK)
    T.If(tir.eq(tx, 0), function()
      for s in T.serial(stages) do
        T.evaluate(T.call("void", "ptx_mbarrier_init", T.address_of(full[{s}]), 1))
        T.evaluate(T.call("void", "ptx_mbarrier_init", T.address_of(empty[{s}]), 128 * nc))
      end
      T.evaluate(T.call("void", "ptx_fence_proxy_async"))
    end)
    T.evaluate(T.call("void", "tvm_storage_sync", "shared"))
    T.If(tir.lt(tx, 128), function()
      -- the producer warpgroup
      T.evaluate(T.call("void", "ptx_setmaxnreg_dec", 40))
      T.If(tir.eq(tx, 0), function()
        for ko in T.serial(KT) do
          local s = ko % stages
          -- the first round passes at once (parity 1 of a fresh barrier: the phase "before 0")
          local parity = opts.parity_bug and (ko // stages) % 2 or (ko // stages + 1) % 2
          if not opts.no_empty_wait then
            T.evaluate(T.call("void", "ptx_mbarrier_wait", T.address_of(empty[{s}]), parity))
          end
          T.evaluate(T.call("void", "ptx_fence_proxy_async"))
          local function expect() T.evaluate(T.call("void", "ptx_mbarrier_arrive_expect_tx", T.address_of(full[{s}]), tile_bytes)) end
          if not opts.tma_first then expect() end
          T.evaluate(T.call("void", "ptx_tma_load", T.address_of(As[{s * BM * BK}]), da, T.address_of(full[{s}]), by * BM, ko * BK))
          T.evaluate(T.call("void", "ptx_tma_load", T.address_of(Bs[{s * BN * BK}]), db, T.address_of(full[{s}]), bx * BN, ko * BK))
          if opts.tma_first then expect() end -- legal: the transaction count is negative until the arrival
        end
      end)
    end, function()
      -- the consumer warpgroups (split: each in a branch of its own, so the consumers are
      -- two tasks that meet at the named barrier)
      local function consumer()
        if opts.nreg_leader then
          T.If(tir.eq(tx, 128), function() T.evaluate(T.call("void", "ptx_setmaxnreg_inc", 232)) end)
        else
          T.evaluate(T.call("void", "ptx_setmaxnreg_inc", opts.nreg_inc or 232))
        end
        local c = tx - 128
        local acc = T.allocate({per}, "float32", "local")
        for j in T.serial(per) do acc[{j}] = T.float32(0) end
        for ko in T.serial(KT) do
          local s = ko % stages
          if not opts.no_full_wait then
            T.evaluate(T.call("void", "ptx_mbarrier_wait", T.address_of(full[{s}]), (ko // stages) % 2))
          end
          for j, kk in T.grid(per, BK) do
            local e = j * 128 * nc + c
            local r, col = e // BN, e % BN
            acc[{j}] = acc[{j}] + T.cast("float32", As[{s * BM * BK + r * BK + kk}]) * T.cast("float32", Bs[{s * BN * BK + col * BK + kk}])
          end
          T.evaluate(T.call("void", "ptx_mbarrier_arrive", T.address_of(empty[{s}])))
        end
        for j in T.serial(per) do Cs[{j * 128 * nc + c}] = acc[{j}] end
        T.evaluate(T.call("void", "ptx_bar_sync", 1, opts.bar_count or 128 * nc))
        -- each consumer writes elements other consumers computed: the named barrier orders them
        for j in T.serial(per) do
          local e = c * per + j
          C[{by * BM + e // BN, bx * BN + e % BN}] = Cs[{e}]
        end
      end
      if opts.split then T.If(tir.lt(tx, 256), consumer, consumer) else consumer() end
    end)
  end)
end

local function workload(M, N, K) return tc.workload(M, N, K, "float16", "float32", nil, "NT") end

local function run(M, N, K, opts, sim_opts)
  local f = workload(M, N, K)
  local mod = tir.build(ws_gemm(M, N, K, opts), "cuda -arch=sm_90a", {compile = false})
  local o = {reference = f}
  for k, v in pairs(sim_opts or {}) do o[k] = v end
  return tir.simulate(mod, tir.testing.random_args(f, 7), o), mod
end

describe("tir.simulate on warp-specialized kernels", function()
  it("runs the producer and consumer branches as tasks, bit-exactly against the interpreter", function()
    for _, c in ipairs({{64, 64, 128, 2, 2}, {32, 64, 96, 3, 1}, {64, 32, 64, 4, 2}, {32, 32, 128, 2, 2, true}}) do
      local rep = run(c[1], c[2], c[3], {stages = c[4], consumers = c[5], tma_first = c[6]})
      assert.are.equal(0, rep.n_issues)
      local ctas = (c[1] // BM) * (c[2] // BN)
      assert.are.equal(ctas * 2 * (c[3] // BK), rep.tma_copies)
      assert.are.equal(ctas * 2, rep.tasks) -- one per branch of the if
      assert.is_true(rep.task_switches > ctas * (c[3] // BK)) -- producer and consumers interleave stage by stage
      assert.are.equal(ctas, rep.barriers) -- the __syncthreads after the inits: none in the loops
      assert.is_true(rep.named_barriers >= ctas)
    end
    -- the consumer warpgroups in two branches of their own: three tasks, the named barrier
    -- completes when the second consumer task arrives
    local rep = run(64, 32, 128, {split = true})
    assert.are.equal(0, rep.n_issues)
    assert.are.equal(2 * 4, rep.tasks)
    assert.are.equal(2 * 2, rep.named_barriers)
    U.expect_error(function() run(32, 32, 64, {split = true, bar_count = 384}) end,
      "threads 128 .. 255 wait on named barrier 1 (bar.sync), which has 256 of its 384 threads",
      "threads 256 .. 383 wait on named barrier 1 (bar.sync), which has 256 of its 384 threads")
  end)

  it("emits bar.sync and setmaxnreg for sm_90a", function()
    local _, mod = run(32, 32, 64)
    local src = mod:get_source("cuda")
    assert.is_truthy(src:find('asm volatile("bar.sync 1, %0;" :: "r"((int)(256)) : "memory");', 1, true))
    assert.is_truthy(src:find('asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");', 1, true))
  end)

  it("reports a wrong parity as a deadlock naming both waits, not a hang", function()
    U.expect_error(function() run(32, 32, 128, {parity_bug = true}) end, "SimulationError",
      "deadlock: every thread still running waits, and no wait can pass",
      "thread (0, 0, 0) [warp 0, lane 0] waits on phase 0 of empty[0] (parity 0), which still needs 256 of its 256 arrivals",
      "(127 more threads of this branch wait at the end of an if or loop inside it)",
      "threads 128 .. 383 wait on phase 0 of full[0] (parity 0), which still needs 1 of its 1 arrivals",
      "ptx_mbarrier_wait")
    local rep = run(32, 32, 128, {parity_bug = true}, {check = false})
    assert.are.equal("deadlock", rep.issues[1].kind)
  end)

  it("reports a consumer that reads a stage before its full barrier", function()
    U.expect_error(function() run(32, 32, 128, {no_full_wait = true}) end,
      "thread (128, 0, 0) [warp 4, lane 0] reads As[0], the destination of a TMA copy issued by thread (0, 0, 0)",
      "before the mbarrier phase the copy completes on has completed")
  end)

  it("reports a producer that refills a stage the consumers have not released (write after read)", function()
    U.expect_error(function() run(32, 32, 128, {no_empty_wait = true}) end,
      "shared-memory race (write after read) on As[", "a TMA copy issued by thread (0, 0, 0) [warp 0, lane 0] refills it",
      "but thread (128, 0, 0) [warp 4, lane 0] read it and nothing orders that read before the copy")
  end)

  it("reports a named barrier with the wrong thread count", function()
    U.expect_error(function() run(32, 32, 64, {bar_count = 384}) end, "deadlock: every thread still running waits",
      "threads 128 .. 383 wait on named barrier 1 (bar.sync), which has 256 of its 384 threads")
    U.expect_error(function() run(32, 32, 64, {bar_count = 128}) end,
      "256 threads (thread (128, 0, 0) [warp 4, lane 0] ...) arrive at barrier 1, which has 0 of its 128 threads already",
      "more threads than its count arrive before it completes")
    assert.are.equal("named_barrier", run(32, 32, 64, {bar_count = 128}, {check = false}).issues[1].kind)
    -- a count that is not whole warps: the codegen refuses it, the simulator reports it in lowered IR
    U.expect_error(function() run(32, 32, 64, {bar_count = 100}) end, "CodegenError", "the thread count 100 is not a positive multiple of 32")
    local f = workload(32, 32, 64)
    U.expect_error(function() tir.simulate(tir.lower(ws_gemm(32, 32, 64, {bar_count = 100})), tir.testing.random_args(f, 1)) end,
      "the thread count 100 of barrier 1 is not a positive multiple of 32 up to the CTA's 384 threads")
    -- without the barrier the epilogue's reads race with the other consumers' writes
    local low = U.drop_call(tir.lower(ws_gemm(32, 32, 64)), "ptx_bar_sync", 1)
    U.expect_error(function() tir.simulate(low, tir.testing.random_args(f, 1)) end,
      "shared-memory race (read after write) on Cs[")
  end)

  it("names the threads parked at the end of an if when a one-sided branch waits on arrivals made after it", function()
    -- on Volta and later the other threads could run past the if and arrive; the simulator
    -- reconverges at the end of the if, so it reports the wait it cannot run past
    local k = T.prim_func("late_arrive", {A = T.Buffer({128}, "float32")}, function(A)
      local bx = T.launch_thread("blockIdx.x", 1)
      local tx = T.launch_thread("threadIdx.x", 128)
      local bar = T.allocate({1}, "uint64", "shared")
      T.If(tir.eq(tx, 0), function() T.evaluate(T.call("void", "ptx_mbarrier_init", T.address_of(bar[{0}]), 1)) end)
      T.evaluate(T.call("void", "tvm_storage_sync", "shared"))
      T.If(tir.lt(tx, 32), function() T.evaluate(T.call("void", "ptx_mbarrier_wait", T.address_of(bar[{0}]), 0)) end)
      T.If(tir.eq(tx, 64), function() T.evaluate(T.call("void", "ptx_mbarrier_arrive", T.address_of(bar[{0}]))) end)
      A[{tx}] = T.float32(1)
    end)
    U.expect_error(function() tir.simulate(k, {tir.nd.empty({128}, "float32")}) end,
      "deadlock: thread (0, 0, 0) [warp 0, lane 0] waits on phase 0 of bar[0] (parity 0), which still needs 1 of its 1 arrivals",
      "the CTA's other 96 threads are not here: they wait where their control flow rejoins this statement's")
  end)

  it("checks setmaxnreg: whole warpgroups, the register file", function()
    U.expect_error(function() run(32, 32, 64, {nreg_leader = true}) end, "ptx_setmaxnreg_inc is a warpgroup-wide .sync.aligned instruction, but only 1 of the 128 threads of warpgroup 1")
    U.expect_error(function() run(32, 32, 64, {nreg_inc = 240}) end,
      "the warpgroups' register limits (40, 240, 240 per thread) need 66560 registers, more than the 65536 of an SM")
  end)
end)

describe("tir.simulate on tc_gemm's warp-specialized wgmma kernels (inject_warp_specialization)", function()
  -- bit-exact runs and the missing-wait / missing-arrive bugs: tests/spec/warp_specialization_spec.lua
  local function lowered(K)
    local f = workload(128, 128, K)
    local sch = tc.schedule(f, {intrin = "wgmma", BM = 64, BN = 128, BK = 64, stages = 2, tma = true, warp_specialize = true})
    return f, tir.lower(sch.mod)
  end
  local function with_parity(low, bar, fn)
    return U.rewrite_func(low, function(s)
      if U.is_call(s, "ptx_mbarrier_wait") and tostring(s.value.args[1]):find(bar, 1, true) then
        return tir.core.make("Evaluate", {value = tir.call("void", "ptx_mbarrier_wait", s.value.args[1], fn(s.value.args[2]))})
      end
    end)
  end

  it("runs as two tasks, bit-exact, and reports wrong parities: a deadlock, or a read before the copy landed", function()
    local f, low = lowered(384)
    local rep = tir.simulate(low, tir.testing.random_args(f, 2), {reference = f})
    assert.are.equal(0, rep.n_issues)
    assert.are.equal(2 * 2, rep.tasks)
    local args = function() return tir.testing.random_args(f, 1) end
    -- the producer waits on parity 0 every round: from the third round on it waits for a release
    -- the consumers can only make after the stage it has not filled yet
    U.expect_error(function() tir.simulate(with_parity(low, "tma_empty", function() return 0 end), args()) end,
      "deadlock: every thread still running waits", "waits on phase 2 of tma_empty[0] (parity 0), which still needs 128 of its 128 arrivals",
      "threads 0 .. 127 wait on phase 2 of tma_full[0] (parity 0), which still needs 1 of its 1 arrivals")
    -- flipped: it waits for the release after the one the consumers made (in this interleaving
    -- the consumers release before the producer waits; the other order would refill early)
    U.expect_error(function() tir.simulate(with_parity(low, "tma_empty", function(p) return (p + 1) % 2 end), args()) end,
      "waits on phase 1 of tma_empty[0] (parity 1)", "threads 0 .. 127 wait on phase 1 of tma_full[0] (parity 1)")
    -- the consumers' parity flipped: they read a stage before its copies landed
    U.expect_error(function() tir.simulate(with_parity(low, "tma_full", function(p) return (p + 1) % 2 end), args()) end,
      "the destination of a TMA copy issued by thread (0, 1, 0) [warp 4, lane 0], before the mbarrier phase the copy completes on")
  end)
end)
