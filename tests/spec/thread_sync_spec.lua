-- thread_sync_spec.lua -- thread_sync (src/core/transform/thread_sync.c) and shared-memory
-- hazards inside an `if` whose condition depends on threadIdx: a barrier cannot go inside the
-- branch (the threads that skip it never arrive), so the pass distributes the if over its
-- statements (`if c {s1; s2}` -> `if c {s1}; barrier; if c {s2}`, `if c {t} else {e}` ->
-- `if c {t}; barrier; if !c {e}`) and puts the barrier between the pieces.  Before/after IR, and
-- the simulator (races reported, results against the interpreter on the unlowered function).
local tir = require("tir")
local T = tir.script

local SYNC = 'T.call%("int32", "tvm_storage_sync", "shared"%)'

local function count(s, pat)
  local n = 0
  for _ in s:gmatch(pat) do n = n + 1 end
  return n
end

-- a kernel of one CTA of 64 threads with a shared S of `n` floats; body(A, O, tx, S) is its code
local function kernel(name, n, body)
  return T.prim_func(name, {A = T.Buffer({64}, "float32"), O = T.Buffer({64}, "float32")}, function(A, O)
    T.launch_thread("blockIdx.x", 1)
    local tx = T.launch_thread("threadIdx.x", 64)
    body(A, O, tx, T.allocate({n}, "float32", "shared"))
  end)
end

-- the first 32 threads write S, then read what another thread of the branch wrote
local function intra_branch()
  return kernel("intra", 32, function(A, O, tx, S)
    T.If(T.lt(tx, 32), function()
      S[{tx}] = A[{tx}] * 2.0
      O[{tx}] = S[{31 - tx}]
    end)
  end)
end

-- the then-branch's threads write S, the else-branch's threads read it: the branches run at once
local function across_branches()
  return kernel("across", 32, function(A, O, tx, S)
    T.If(T.lt(tx, 32), function() S[{tx}] = A[{tx}] + 1.0 end, function() O[{tx}] = S[{63 - tx}] end)
  end)
end

local function sync_pass(f) return tostring(tir.core.run_pass("thread_sync", f)) end

-- thread tx copies A into S, then reads thread 31 - tx's element (a hazard between the two)
local function mirror(A, O, tx, S)
  S[{tx}] = A[{tx}]
  O[{tx}] = S[{31 - tx}]
end

-- thread_sync leaves f as it was, without a barrier
local function assert_unchanged(f)
  local after = sync_pass(f)
  assert.are.equal(0, count(after, SYNC), after)
  assert.are.equal(tostring(f), after)
end

-- f's lowered kernel on the simulator (random A and O, seed): no race or issue, and each O[t] as
-- want(a, o, t) of the inputs says, within 1e-6 relative (+ atol); returns the module and the report
local function sim_check(f, seed, want, atol)
  local mod = tir.build(f, "cuda", {compile = false})
  local args = tir.testing.random_args(f, seed)
  local a, o = {}, {}
  for t = 0, 63 do a[t], o[t] = args[1]:get(t), args[2]:get(t) end
  local rep = tir.simulate(mod, args)
  assert.are.equal(0, rep.races)
  assert.are.equal(0, rep.n_issues)
  for t = 0, 63 do
    local w = want(a, o, t)
    assert(math.abs(args[2]:get(t) - w) <= 1e-6 * math.abs(w) + (atol or 0), ("O[%d] = %s, want %s"):format(t, args[2]:get(t), w))
  end
  return mod, rep
end

-- a loop inside the branch: each step the first 32 threads write S, then read another thread's
-- element (a read-after-write in the step, and a write-after-read across steps)
local function loop_in_branch()
  return kernel("loop", 32, function(A, O, tx, S)
    T.If(T.lt(tx, 32), function()
      for k in T.serial(3) do
        S[{tx}] = A[{tx}] + T.cast("float32", k)
        O[{tx}] = O[{tx}] + S[{31 - tx}]
      end
    end)
  end)
end

describe("thread_sync: hazards inside an if that depends on threadIdx", function()
  it("splits the branch and puts the barrier between its statements (before/after IR)", function()
    local f = intra_branch()
    local before = tostring(f)
    assert.are.equal(0, count(before, SYNC))
    local after = sync_pass(f)
    assert.are.equal(1, count(after, SYNC), after)
    -- the write, then the barrier outside any branch, then the read, each under the condition
    local w = after:find("S%[{threadIdx_x}%] = A%[{threadIdx_x}%]")
    local b = after:find(SYNC)
    local r = after:find("O%[{threadIdx_x}%] = S%[{31 %- threadIdx_x}%]")
    assert.is_truthy(w and b and r, after)
    assert.is_true(w < b and b < r, after)
    assert.are.equal(2, count(after, "T%.If%(T%.lt%(threadIdx_x, 32%), function%(%)"), after)
    -- the barrier is at the kernel's top level: no `if` encloses it
    local indent_sync = #after:match("\n( *)T%.evaluate%(" .. SYNC)
    local indent_if = #after:match("\n( *)T%.If%(")
    assert.are.equal(indent_if, indent_sync, after)
  end)

  it("the lowered kernel is race-free on the simulator (it reported a read-after-write race before) and right", function()
    -- O[t] = 2 A[31 - t] for t < 32 (intra), O[t] = A[63 - t] + 1 for t >= 32 (across); other O unchanged
    local cases = {{intra_branch, function(a, o, t) return t < 32 and 2 * a[31 - t] or o[t] end},
                   {across_branches, function(a, o, t) return t >= 32 and a[63 - t] + 1 or o[t] end}}
    for _, c in ipairs(cases) do
      local mod, rep = sim_check(c[1](), 4, c[2])
      assert.are.equal(1, count(mod:get_source("cuda"), "__syncthreads%(%)"), mod:get_source("cuda"))
      -- the report prints as a line of counts (tir.simulate's report metatable)
      assert.matches("^simulation: 1 kernel%(s%), 1 CTA%(s%), 1 barrier%(s%)", tostring(rep))
    end
  end)

  it("orders the then-branch's writes before the else-branch's reads: if c {t}; barrier; if !c {e}", function()
    local after = sync_pass(across_branches())
    assert.are.equal(1, count(after, SYNC), after)
    local t = after:find("S%[{threadIdx_x}%] = A%[{threadIdx_x}%] %+ T%.float32%(1%.0%)")
    local b = after:find(SYNC)
    local e = after:find("O%[{threadIdx_x}%] = S%[{63 %- threadIdx_x}%]")
    assert.is_truthy(t and b and e, after)
    assert.is_true(t < b and b < e, after)
    assert.is_truthy(after:find("T.If(T.Not(T.lt(threadIdx_x, 32)), function()", 1, true), after)
  end)

  it("moves the if into a loop of uniform bounds inside it, so the loop's hazards get barriers every thread reaches", function()
    local after = sync_pass(loop_in_branch())
    -- for k { if c {write}; barrier; if c {read} } plus the barrier before the next step's write
    assert.are.equal(2, count(after, SYNC), after)
    local l = after:find("for k in T.serial(3) do", 1, true)
    local w = after:find("S%[{threadIdx_x}%] = A%[{threadIdx_x}%]")
    local r = after:find("O%[{threadIdx_x}%] = O%[{threadIdx_x}%] %+ S%[{31 %- threadIdx_x}%]")
    assert.is_truthy(l and w and r, after)
    local b = after:find(SYNC, w)
    assert.is_true(l < w and b and w < b and b < r, after)
    assert.are.equal(2, count(after, "T%.If%(T%.lt%(threadIdx_x, 32%), function%(%)"), after)
    -- no barrier under an if: each sits at the loop body's level, as the ifs do
    for ind in after:gmatch("\n( *)T%.evaluate%(" .. SYNC) do
      assert.are.equal(#after:match("\n( *)T%.If%("), #ind, after)
    end
    -- on the simulator: race-free and O[t] = O[t] + sum_k (A[31 - t] + k) for t < 32
    sim_check(loop_in_branch(), 6, function(a, o, t)
      local w = o[t]
      if t < 32 then for k = 0, 2 do w = w + (a[31 - t] + k) end end
      return w
    end, 1e-5) -- (float32 sums of four terms against Lua's doubles)
  end)

  it("keeps a loop whose bounds depend on threadIdx inside the if (no barrier can go in it; the simulator reports the race)", function()
    local f = kernel("tloop", 64, function(A, O, tx, S)
      T.If(T.lt(tx, 32), function()
        for k in T.serial(tx % 4 + 1) do mirror(A, O, tx, S) end
      end)
    end)
    assert_unchanged(f)
    local mod = tir.build(f, "cuda", {compile = false})
    local ok, e = pcall(tir.simulate, mod, tir.testing.random_args(f, 2))
    assert.is_false(ok)
    assert.matches("race", tostring(e))
  end)

  it("never splits an if whose branch waits on an mbarrier (its pieces would wait for each other)", function()
    -- (sim_warp_specialized_spec's producer / consumer kernels deadlocked when the consumers' loop
    -- took the if inside and a barrier)
    local f = kernel("mbar", 32, function(A, O, tx, S)
      local bar = T.allocate({1}, "uint64", "shared")
      T.If(T.lt(tx, 32), function()
        for k in T.serial(3) do
          T.evaluate(T.call("void", "ptx_mbarrier_wait", T.address_of(bar[{0}]), k % 2))
          mirror(A, O, tx, S)
        end
      end)
    end)
    assert_unchanged(f)
  end)

  it("never splits an if whose branch holds a named barrier (bar.sync / bar.arrive: the builtins' named_barrier flag)", function()
    for _, op in ipairs({"ptx_bar_sync", "ptx_bar_arrive"}) do
      local f = kernel("named_" .. op, 32, function(A, O, tx, S)
        T.If(T.lt(tx, 32), function()
          for k in T.serial(3) do
            T.evaluate(T.call("void", op, 1, 32))
            mirror(A, O, tx, S)
          end
        end)
      end)
      assert_unchanged(f)
    end
    local by = {}
    for _, b in ipairs(tir.core.builtins()) do by[b.op] = b end
    assert.is_true(by.ptx_bar_sync.named_barrier and by.ptx_bar_arrive.named_barrier)
    assert.is_false(by.tvm_storage_sync.named_barrier)
  end)

  it("leaves an if without an inner hazard as it was (a unit, any barrier before it)", function()
    local f = kernel("plain", 64, function(A, O, tx, S)
      S[{tx}] = A[{tx}]
      T.If(T.lt(tx, 32), function()
        O[{tx}] = S[{63 - tx}]
        O[{tx + 32}] = A[{tx}]
      end)
    end)
    local after = sync_pass(f)
    assert.are.equal(1, count(after, SYNC), after)
    assert.are.equal(1, count(after, "T%.If%("), after)
    assert.is_true(after:find(SYNC) < after:find("T%.If%("), after)
  end)
end)

describe("#gpu thread_sync's split of a thread-dependent if on the device", function()
  local U = require("spec_util")
  local dev = U.gpu_or_pending(it, function(w) pending(w) end)
  if not dev then return end
  it("the barrier between the pieces makes both kernels right on the GPU (every element checked)", function()
    local cases = {{intra_branch, function(a, o, t) return t < 32 and 2 * a[31 - t] or o[t] end},
                   {across_branches, function(a, o, t) return t >= 32 and a[63 - t] + 1 or o[t] end}}
    for _, c in ipairs(cases) do
      local f = c[1]()
      local mod = tir.build(f, "cuda")
      local host = tir.testing.random_args(f, 5)
      local a, o = {}, {}
      for t = 0, 63 do a[t], o[t] = host[1]:get(t), host[2]:get(t) end
      local da, dout = host[1]:to(dev), host[2]:to(dev)
      for _ = 1, 100 do mod(da, dout) end
      local out = dout:to("cpu")
      for t = 0, 63 do
        local want = c[2](a, o, t)
        assert(math.abs(out:get(t) - want) <= 1e-6 * math.abs(want), ("O[%d] = %s, want %s"):format(t, out:get(t), want))
      end
    end
  end)

  it("the loop inside the branch, its if moved in and barriers in its body, is right on the GPU (every element)", function()
    local f = loop_in_branch()
    local mod = tir.build(f, "cuda")
    local host = tir.testing.random_args(f, 7)
    local a, o = {}, {}
    for t = 0, 63 do a[t], o[t] = host[1]:get(t), host[2]:get(t) end
    local dout = host[2]:to(dev)
    mod(host[1]:to(dev), dout) -- (once: O accumulates)
    local out = dout:to("cpu")
    for t = 0, 63 do
      local want = o[t]
      if t < 32 then for k = 0, 2 do want = want + (a[31 - t] + k) end end
      assert(math.abs(out:get(t) - want) <= 1e-6 * math.abs(want) + 1e-5, ("O[%d] = %s, want %s"):format(t, out:get(t), want))
    end
  end)
end)
