-- dispatch.lua -- a kernel family dispatched by shape (tir.dispatch): C[M, N] = A[M, K] @ B[K, N]
-- (fp16 in, fp32 accumulate and out) written once with a symbolic M (te.var), specialized for
-- M = 1, 16, 128, 4096 (each scheduled by its own rule: a GEMV for M = 1, tensor cores chosen by
-- tc_gemm.auto_tensorize for the others) plus the symbolic kernel as the fallback for every other
-- M.  Prints the IRModule's functions, the dispatcher's table, runs every entry and checks it, and
-- measures the host-side dispatch overhead.
--   tirlua scripts/examples/dispatch.lua [N K]
-- With a GPU: N = K = 4096 by default, every entry against cuBLAS (time and result), dispatch +
-- launch vs a direct launch.  Without one: N = K = 32, the interpreter (and the warp simulator for
-- the tensor-core kernels) against the unscheduled symbolic function.
local tir = require("tir")
local util = require("tir.util")
local te = tir.te
local tc = require("tir.schedules.tc_gemm")

local dev = tir.device("cuda", 0)
local has_gpu, why = dev:exists()
local N = math.tointeger(tonumber(arg and arg[1] or "")) or (has_gpu and 4096 or 32)
local K = math.tointeger(tonumber(arg and arg[2] or "")) or N
if N % 16 ~= 0 or K % 16 ~= 0 or N < 16 or K < 16 then
  io.stderr:write("usage: tirlua scripts/examples/dispatch.lua [N K]  (multiples of 16)\n")
  os.exit(1)
end

-- the family's one te program: M is symbolic
local M = te.var("M")
local A = te.placeholder({M, K}, "float16", "A")
local B = te.placeholder({K, N}, "float16", "B")
local k = te.reduce_axis({0, K}, "k")
local C = te.compute({M, N}, function(i, j) return te.sum(te.cast("float32", A[{i, k}]) * te.cast("float32", B[{k, j}]), {k}) end, "C")
local func = te.create_prim_func({A, B, C})

-- M = 1: a GEMV, one output column per thread, B read coalesced along a row
local function gemv(f)
  local sch = tir.Schedule(f)
  local loops = {sch:get_loops("C")} -- specialized to M = 1, the i loop is gone: j, k
  local j, kk = loops[#loops - 1], loops[#loops]
  local tx = math.min(128, N)
  local bj, tj = sch:split(j, {nil, tx})
  local ko, ki = sch:split(kk, {nil, 4})
  sch:unroll(ki)
  sch:bind(bj, "blockIdx.x"); sch:bind(tj, "threadIdx.x")
  return sch, ("SIMT GEMV: %d threads a block, a column each"):format(tx)
end

-- M = 16, 128, 4096: mma.sync with the tiles auto_tensorize picks for the shape
local function tensor_cores(f)
  local sch, o = tc.auto_tensorize(f, "mma.m16n8k16")
  return sch, ("mma.sync %dx%dx%d, warps %dx%d, %s, %s"):format(o.BM, o.BN, o.BK, o.warp_m, o.warp_n,
                     util.count(o.stages, "stage"), util.count(o.ctas, "CTA"))
end

-- any other M: the symbolic kernel (ceildiv(M, 16) row blocks; the tail predicated)
local function symbolic(f)
  local sch = tir.Schedule(f)
  local i, j, kk = sch:get_loops("C")
  local bi, ti = sch:split(i, {nil, 16})
  local bj, tj = sch:split(j, {nil, 16})
  sch:reorder(bi, bj, ti, tj, kk)
  sch:bind(bi, "blockIdx.y"); sch:bind(bj, "blockIdx.x"); sch:bind(ti, "threadIdx.y"); sch:bind(tj, "threadIdx.x")
  local ko, ki = sch:split(kk, {nil, 4})
  sch:unroll(ki)
  return sch, "SIMT 16x16 threads, symbolic M (tail predicated)"
end

local fam = tir.dispatch.family(func, "matmul")
fam:add({M = 1}, gemv)
for _, m in ipairs({16, 128, 4096}) do fam:add({M = m}, tensor_cores) end
fam:fallback(symbolic)

print(("-- the family's IRModule (%d PrimFuncs; signatures)"):format(#fam:module().functions))
for _, f in ipairs(fam:module().functions) do
  local shapes = {}
  for _, p in ipairs(f.params) do
    local dims = {}
    for d, e in ipairs(p.shape) do dims[d] = tostring(e) end
    shapes[#shapes + 1] = ("%s[%s]"):format(p.name, table.concat(dims, ", "))
  end
  print(("  %s(%s)"):format(f.name, table.concat(shapes, ", ")))
end

local t0 = os.clock()
local disp = has_gpu and fam:build("cuda") or fam:build("cuda", {compile = false}) -- without a GPU: CUDA C only (simulator)
print(("-- built %d entries in %.2f s (CPU time)"):format(disp:num_entries(), os.clock() - t0))

local failures = 0
local function check(ok, what)
  if not ok then
    failures = failures + 1
    print("FAILED: " .. what)
  end
end

local Ms = {1, 16, 128, 4096, 40, 300}
if has_gpu then
  print(("-- %s, N = %d, K = %d: each M through the dispatcher vs cuBLAS (fp16 in, fp32 out)"):format(dev:info().name, N, K))
  print(("  %6s  %-16s  %10s  %10s  %7s  %10s"):format("M", "kernel", "tirlua ms", "cuBLAS ms", "ratio", "max err"))
  for _, m in ipairs(Ms) do
    local a = tir.nd.random({m, K}, "float16", dev, {seed = m})
    local b = tir.nd.random({K, N}, "float16", dev, {seed = m + 1})
    local c = tir.nd.empty({m, N}, "float32", dev)
    local ref = tir.nd.empty({m, N}, "float32", dev)
    local i = disp(a, b, c)
    tir.core.cublas_gemm(a, b, ref, false, false, 1.0, 0.0)
    local ok, st = pcall(tir.testing.assert_allclose, c, ref, {rtol = 1e-2, atol = 1e-2 * math.sqrt(K / 64)})
    check(ok, ("M = %d: result differs from cuBLAS: %s"):format(m, tostring(st)))
    local t = disp:time_evaluator({number = 10, repeat_ = 5})(a, b, c)
    local tr = tir.core.cuda_time(function() tir.core.cublas_gemm(a, b, ref, false, false, 1.0, 0.0) end, 0, 3, 10, 5)
    print(("  %6d  %-16s  %10.4f  %10.4f  %7.3f  %10.3g"):format(m, disp:entry(i).label, t * 1e3, tr * 1e3, tr / t, ok and st.max_abs or -1))
  end
else
  print(("-- no GPU (%s): N = %d, K = %d on the CPU; each entry against the unscheduled symbolic function"):format(why, N, K))
  print(("  %6s  %-16s  %-11s  %10s"):format("M", "kernel", "run by", "max err"))
  for _, m in ipairs(Ms) do
    local a = tir.nd.random({m, K}, "float16", tir.cpu(), {seed = m})
    local b = tir.nd.random({K, N}, "float16", tir.cpu(), {seed = m + 1})
    local want = tir.nd.empty({m, N}, "float32", tir.cpu())
    tir.interpret(func, {a, b, want})
    local c = tir.nd.empty({m, N}, "float32", tir.cpu())
    local i, how
    if m <= 128 then -- the lowered kernels on the warp simulator (races, lanes, cp.async waits)
      local rep
      rep, i = disp:simulate({a, b, c})
      check(rep.n_issues == 0, ("M = %d: the simulator reports %d issue(s)"):format(m, rep.n_issues))
      how = "simulator"
    else -- the scheduled function on the interpreter (each intrinsic's desc)
      i = disp:interpret({a, b, c})
      how = "interpreter"
    end
    local ok, st = pcall(tir.testing.assert_allclose, c, want, {rtol = 1e-4, atol = 1e-4})
    check(ok, ("M = %d: %s"):format(m, tostring(st)))
    print(("  %6d  %-16s  %-11s  %10.3g"):format(m, disp:entry(i).label, how, ok and st.max_abs or -1))
  end
end

-- errors: a wrong-shaped argument (C's M is not A's), N not the family's
local function expect(f, pat)
  local ok, e = pcall(f)
  check(not ok and tostring(e):find(pat, 1, true), ("expected an error with %q, got %s"):format(pat, tostring(e)))
  print("  error as expected: " .. tostring(e):match("[^\n]*"):gsub("^[^:]*:%d+: ", ""))
end
local where = has_gpu and dev or tir.cpu()
local a5 = tir.nd.empty({5, K}, "float16", where)
local b0 = tir.nd.empty({K, N}, "float16", where)
print("-- argument checks")
expect(function() disp:check(a5, b0, tir.nd.empty({6, N}, "float32", where)) end, "dimension M is 6 here but 5 in another argument")
expect(function() disp:check(tir.nd.empty({16, K}, "float16", where), tir.nd.empty({K, N + 16}, "float16", where),
                             tir.nd.empty({16, N}, "float32", where)) end, ("expected shape (%d, %d)"):format(K, N))

-- host-side dispatch overhead (target <= 2 us a call): selection, selection + argument checks,
-- in C (the C API) and from Lua; on the GPU also dispatch + launch against a direct launch
print("-- dispatch overhead, host side")
local a1 = tir.nd.empty({300, K}, "float16", where) -- the fallback: every condition is tested first
local b1 = tir.nd.empty({K, N}, "float16", where)
local c1 = tir.nd.empty({300, N}, "float32", where)
local sel = disp:bench("select", 100000, a1, b1, c1)
local chk = disp:bench("check", 100000, a1, b1, c1)
local reps = 100000
local t1 = os.clock()
for _ = 1, reps do disp:check(a1, b1, c1) end
local lua = (os.clock() - t1) / reps
print(("  select %.0f ns, select + checks %.0f ns (C API); disp:check from Lua %.0f ns"):format(sel * 1e9, chk * 1e9, lua * 1e9))
-- The 2 us target holds in plain builds (~40 ns in C, ~150 ns from Lua on the 2-core CI machine:
-- a 13x margin).  Under ASan + UBSan (TIRLUA_SANITIZED, set by CMake for this test, or ASAN_OPTIONS
-- as the specs read it) every load is instrumented and the machine is shared, so the time says
-- little about the product: there the bound is 10x the target, which still catches a dispatch that
-- does real work per call (a rebuild, a linear scan of the module's functions by name).
local sanitized = os.getenv("TIRLUA_SANITIZED") == "1" or os.getenv("ASAN_OPTIONS") ~= nil
local bound = sanitized and 20e-6 or 2e-6
check(chk < bound and lua < bound, ("dispatch overhead above %.0f us%s"):format(bound * 1e6, sanitized and " (sanitizer build)" or ""))
if has_gpu then
  -- dispatch + launch against a direct launch of the same module, host time of 500 queued
  -- launches of a tiny kernel (a family of its own at N = K = 64, so the GPU keeps up)
  local Ms_ = te.var("M")
  local As = te.placeholder({Ms_, 64}, "float16", "A")
  local Bs = te.placeholder({64, 64}, "float16", "B")
  local ks = te.reduce_axis({0, 64}, "k")
  local Cs = te.compute({Ms_, 64}, function(i, j) return te.sum(te.cast("float32", As[{i, ks}]) * te.cast("float32", Bs[{ks, j}]), {ks}) end, "C")
  local small = tir.dispatch.family(te.create_prim_func({As, Bs, Cs}), "small")
  small:add({M = 1}, gemv); small:add({M = 16}, tensor_cores); small:add({M = 128}, tensor_cores); small:fallback(symbolic)
  local sd = small:build("cuda")
  local ag, bg, cg = tir.nd.random({1, 64}, "float16", dev, {seed = 3}), tir.nd.random({64, 64}, "float16", dev, {seed = 4}),
                     tir.nd.empty({1, 64}, "float32", dev)
  local n = 500
  local tl = sd:bench("launch", n, ag, bg, cg)
  local tm = sd:bench("module_launch", n, ag, bg, cg)
  print(("  a tiny kernel queued %d times: dispatch + launch %.2f us, direct module launch %.2f us a call (host) -> dispatch adds %.2f us"):format(
    n, tl * 1e6, tm * 1e6, (tl - tm) * 1e6))
  check(tl - tm < 2e-6, "dispatch adds more than 2 us to a launch")
end
print(disp)
if failures > 0 then
  print(("dispatch: %d check(s) failed"):format(failures))
  os.exit(1)
end
print("dispatch: ok")
