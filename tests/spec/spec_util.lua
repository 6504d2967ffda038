-- spec_util.lua -- helpers shared by the specs.
local tir = require("tir")
local te = tir.te
local U = {}
local assert = require("luassert") -- modules do not see busted's injected assert

--- Runs f on random inputs (seeded) and returns the host arrays after the call.
function U.run(f, seed, args)
  args = args and tir.testing.copy_args(args) or tir.testing.random_args(f, seed or 1)
  tir.interpret(f, args)
  return args
end

--- Asserts that print(f) loads back (tir.script) into a structurally equal function.
function U.assert_roundtrip(f)
  if type(f) == "table" and f.func then f = f.func end
  local text = tostring(f)
  local g = tir.script.parse(text)
  local eq, diff = tir.structural_equal(f, g)
  if not eq then error("print -> load is not structurally equal: " .. tostring(diff) .. "\n" .. text, 2) end
  return g
end

--- Asserts that f1 and f2 compute the same thing on the same random inputs: every array
-- argument after the call is equal (exactly, unless opts.rtol is given).
function U.assert_equiv(f1, f2, opts)
  opts = opts or {}
  U.assert_roundtrip(f1)
  U.assert_roundtrip(f2)
  for seed = 1, opts.trials or 2 do
    local args = tir.testing.random_args(f1, seed)
    local r1 = U.run(f1, seed, args)
    local r2 = U.run(f2, seed, args)
    for i = 1, #r1 do
      if opts.rtol then
        tir.testing.assert_allclose(r2[i], r1[i], {rtol = opts.rtol, atol = opts.atol or 0})
      else
        assert.are.same(r1[i]:to_table(), r2[i]:to_table())
      end
    end
  end
end

--- After scheduling f into sch: the lowered schedule computes exactly what f does (random
-- inputs, seed 3) and sch's trace replayed on f gives the same IR.
function U.assert_lowered_and_replayed(f, sch)
  local args = tir.testing.random_args(f, 3)
  local a2 = tir.testing.copy_args(args)
  tir.interpret(f, args)
  tir.interpret(tir.lower(sch.mod), a2)
  for i = 1, #args do assert.are.same(args[i]:to_table(), a2[i]:to_table()) end
  local s2 = tir.Schedule(f)
  s2:apply_trace(sch:trace())
  local eq, diff = tir.structural_equal(s2.mod, sch.mod)
  assert(eq, ("the replayed trace gives other IR: %s\n-- replayed:\n%s\n-- scheduled:\n%s"):format(tostring(diff), tostring(s2.mod),
                                                                                               tostring(sch.mod)))
end

--- Calls fn, requires it to raise, and requires every pattern (plain text) in the message.
function U.expect_error(fn, ...)
  local ok, e = pcall(fn)
  assert(not ok, "expected an error, but the call succeeded")
  local msg = tostring(e)
  for _, pat in ipairs({...}) do
    if not msg:find(pat, 1, true) then
      error(("error message lacks %q:\n%s"):format(pat, msg), 2)
    end
  end
  return e
end

function U.matmul(M, N, K, dtype, out_dtype)
  dtype = dtype or "float32"
  local A = te.placeholder({M, K}, dtype, "A")
  local B = te.placeholder({K, N}, dtype, "B")
  local k = te.reduce_axis({0, K}, "k")
  local C = te.compute({M, N}, function(i, j)
    local a, b = A[{i, k}], B[{k, j}]
    if out_dtype then a, b = tir.cast(out_dtype, a), tir.cast(out_dtype, b) end
    return te.sum(a * b, {k})
  end, "C")
  return te.create_prim_func({A, B, C})
end

-- C[b, i, j] = sum_k A[b, i, k] * B[b, k, j] (fp16 in, fp32 out) as a te function: block "bmm"
function U.batched_matmul(batch, m, n, k)
  local te = tir.te
  local A = te.placeholder({batch, m, k}, "float16", "A")
  local B = te.placeholder({batch, k, n}, "float16", "B")
  local r = te.reduce_axis({0, k}, "k")
  local C = te.compute({batch, m, n}, function(bb, i, j)
    return te.sum(te.cast("float32", A[{bb, i, r}]) * te.cast("float32", B[{bb, r, j}]), {r})
  end, "bmm")
  return te.create_prim_func({A, B, C})
end
-- split-K on the GPU: f scheduled with tc_gemm options o (a split_k_mode) and with the parallel
-- mode (o without split_k_mode / split_k_ordered) on the same random m x k and k x n operands; the
-- mode's module runs `launches` times (its counters and zeroed sums must come back to 0 each
-- time).  Returns the two m x n results (parallel, mode) as host tables.
function U.split_k_vs_parallel(f, o, m, n, k, dev, launches)
  local tc = require("tir.schedules.tc_gemm")
  local mod = tir.build(tc.schedule(f, o).mod, "cuda")
  local po = U.merge(o, {})
  po.split_k_mode, po.split_k_ordered = nil, nil
  local par = tir.build(tc.schedule(f, po).mod, "cuda")
  local a = tir.nd.random({m, k}, "float16", dev, {seed = 1})
  local b = tir.nd.random({k, n}, "float16", dev, {seed = 2})
  local c1, c2 = tir.nd.empty({m, n}, "float16", dev), tir.nd.empty({m, n}, "float16", dev)
  par(a, b, c1)
  for _ = 1, launches do mod(a, b, c2) end
  return c1:to("cpu"):to_table(), c2:to("cpu"):to_table(), mod
end
function U.elementwise(n, m)
  local A = te.placeholder({n, m}, "float32", "A")
  local B = te.compute({n, m}, function(i, j) return A[{i, j}] * 2.0 + 1.0 end, "B")
  return te.create_prim_func({A, B})
end

--- The naive 2-D GPU schedule of a matmul-like block.
function U.bind_2d(sch, block, ti, tj)
  local i, j = sch:get_loops(sch:get_block(block))
  local bi, ii = sch:split(i, {nil, ti or 16})
  local bj, jj = sch:split(j, {nil, tj or 16})
  sch:reorder(bi, bj, ii, jj)
  sch:bind(bi, "blockIdx.y"); sch:bind(bj, "blockIdx.x")
  sch:bind(ii, "threadIdx.y"); sch:bind(jj, "threadIdx.x")
  return sch
end

--- The number of matches of the Lua pattern pat in the string s.
function U.count(s, pat)
  local n = 0
  for _ in s:gmatch(pat) do n = n + 1 end
  return n
end

--- The number of statement calls T.call("void", op, ...) in printed IR (text: a string, or a
-- function or module, printed), e.g. U.count_calls(tir.lower(sch.mod), "ptx_tma_store").
function U.count_calls(text, op)
  return U.count(tostring(text), 'T.call%("void", "' .. op:gsub("%p", "%%%0") .. '"')
end

--- Builds sch (a Schedule or a function) for cuda without NVRTC, simulates its kernels on random
-- inputs (seed) and requires the interpreter's results on the unscheduled f with no issue or race;
-- returns the simulator's report and the module.
function U.sim_equal(f, sch, seed)
  local mod = tir.build(sch.mod or sch, "cuda", {compile = false})
  local rep = tir.simulate(mod, tir.testing.random_args(f, seed or 5), {reference = f})
  assert.are.equal(0, rep.n_issues)
  assert.are.equal(0, rep.races)
  return rep, mod
end

--- Builds sch (a Schedule) for target (default "cuda -arch=sm_80") without NVRTC and simulates
-- its lowered kernels on args (default: random arrays for sch.mod, seed 3) against the interpreter
-- of the scheduled function itself, bit for bit, with no issue or race; returns the module and the
-- simulator's report.
function U.sim_scheduled(sch, args, target)
  local mod = tir.build(sch.mod, target or "cuda -arch=sm_80", {compile = false})
  local rep = tir.simulate(mod, args or tir.testing.random_args(sch.mod, 3), {reference = sch.mod})
  assert.are.equal(0, rep.n_issues)
  assert.are.equal(0, rep.races)
  return mod, rep
end

--- The number of kernels (__global__ functions) in a built module's CUDA C.
function U.kernel_count(mod) return U.count(mod:get_source("cuda"), "__global__") end

--- Random host arrays for f's parameters over the full range of 8-bit integers (int8
-- -128..127, uint8 0..255; other dtypes -1..1), seeded.
function U.full_range_args(f, seed)
  local out = {}
  for i, p in ipairs(f.params) do
    local shape = {}
    for d = 1, #p.shape do shape[d] = p.shape[d].value end
    local lo, hi = -1, 1
    if p.dtype == "int8" then lo, hi = -128, 127 elseif p.dtype == "uint8" then lo, hi = 0, 255 end
    out[i] = tir.nd.random(shape, p.dtype, tir.nd.cpu(), {seed = seed * 31 + i, low = lo, high = hi})
  end
  return out
end

--- The fp16 GEMM module mod (A: m x k, B: k x n -> fp16 m x n) on dev against cuBLAS
-- (cublasGemmEx, fp32 compute) on seeded random inputs, within fp16 rounding.
function U.check_vs_cublas(mod, m, n, k, dev)
  local a = tir.nd.random({m, k}, "float16", dev, {seed = m + 1})
  local b = tir.nd.random({k, n}, "float16", dev, {seed = n + 2})
  local c = tir.nd.empty({m, n}, "float16", dev)
  local ref = tir.nd.empty({m, n}, "float16", dev)
  mod(a, b, c)
  tir.core.cublas_gemm(a, b, ref, false, false, 1.0, 0.0)
  return tir.testing.assert_allclose(c, ref, {rtol = 2e-2, atol = 2e-2 * math.sqrt(k / 64)})
end

--- The K-major ("NT": A m x k, B n x k) GEMM module mod in dtype (fp16 writes fp16, bf16 fp32) on
-- dev against cuBLAS on the same seeded random operands (B transposed), within fp16 rounding.
function U.check_nt_vs_cublas(mod, m, n, k, dtype, dev)
  local a = tir.nd.random({m, k}, dtype, dev, {seed = m + 1})
  local b = tir.nd.random({n, k}, dtype, dev, {seed = n + 2})
  local out = dtype == "float16" and "float16" or "float32"
  local c = tir.nd.empty({m, n}, out, dev)
  local ref = tir.nd.empty({m, n}, out, dev)
  mod(a, b, c)
  tir.core.cublas_gemm(a, b, ref, false, true, 1.0, 0.0)
  tir.core.cuda_sync(0)
  return tir.testing.assert_allclose(c, ref, {rtol = 2e-2, atol = 2e-2 * math.sqrt(k / 64)})
end

--- Runs ptxas -arch=arch -v over the PTX text; returns whether it succeeded and its output, or
-- nil when ptxas is not installed ($CUDA_HOME/bin/ptxas, else /usr/local/cuda/bin/ptxas).
function U.ptxas(ptx, arch)
  local ptxas = os.getenv("CUDA_HOME") and (os.getenv("CUDA_HOME") .. "/bin/ptxas") or "/usr/local/cuda/bin/ptxas"
  local fh = io.open(ptxas, "r")
  if not fh then return nil end
  fh:close()
  local tmp = os.tmpname()
  local w = assert(io.open(tmp .. ".ptx", "w"))
  w:write(ptx)
  w:close()
  local p = io.popen(("%s -arch=%s -v -o %s.cubin %s.ptx 2>&1"):format(ptxas, arch or "sm_90a", tmp, tmp))
  local out = p:read("a")
  local ok = p:close()
  os.remove(tmp .. ".ptx"); os.remove(tmp .. ".cubin"); os.remove(tmp)
  return ok == true, out
end

--- Inside a #gpu describe: CUDA device 0, or nil after adding a pending case that says why
-- there is none (the describe then returns).  it: busted's; pending: a function of the spec
-- calling busted's pending (which is looked up when the case runs, so a closure of the spec's).
function U.gpu_or_pending(it, pending)
  local dev = tir.device("cuda", 0)
  local ok, why = dev:exists()
  if ok then return dev end
  it("is skipped: " .. tostring(why), function() pending("no GPU: " .. tostring(why)) end)
  return nil
end

--- A copy of table a with the keys of b (may be nil) set over it.
--- Runs fn with the impl of the registered tensor intrinsic `name` replaced by make() (a planted
-- bug), then restores the registered impl, also when fn fails (its error is re-raised).
function U.with_impl(name, make, fn)
  local desc, good = tir.TensorIntrin.get(name)
  local ok, err = pcall(function()
    tir.TensorIntrin.register(name, desc, make(), true)
    fn()
  end)
  tir.TensorIntrin.register(name, desc, good, true)
  assert(ok, err)
end

function U.merge(a, b)
  local r = {}
  for k, v in pairs(a) do r[k] = v end
  for k, v in pairs(b or {}) do r[k] = v end
  return r
end

-- Statement rewriting of a lowered function, for planting bugs: fn(stmt) returns nil (keep and
-- recurse), false (delete) or a replacement.
U.REWRITE_FIELDS = {For = {"loop_var", "min", "extent", "thread_tag", "annotations", "body"}, IfThenElse = {"cond", "then_case", "else_case"},
                LetStmt = {"var", "value", "body"}, AttrStmt = {"node", "key", "value", "body"}, Allocate = {"buffer", "body"}}
U.REWRITE_BODIES = {For = {"body"}, IfThenElse = {"then_case", "else_case"}, LetStmt = {"body"}, AttrStmt = {"body"}, Allocate = {"body"}}
function U.rewrite(s, fn)
  local r = fn(s)
  if r ~= nil then return r end
  if s.kind == "SeqStmt" then
    local out = {}
    for i = 1, #s.seq do
      local x = U.rewrite(s.seq[i], fn)
      if x then out[#out + 1] = x end
    end
    return tir.core.make("SeqStmt", {seq = out})
  end
  if not U.REWRITE_FIELDS[s.kind] then return s end
  local t = {}
  for _, f in ipairs(U.REWRITE_FIELDS[s.kind]) do t[f] = s[f] end
  if s.kind == "For" then -- the loop kind (s.kind is the node's kind): from the printed header
    local head = tostring(s):match("^[^\n]*")
    t.kind = head:find("T.unroll", 1, true) and 3 or head:find("T.vectorized", 1, true) and 2 or 0
  end
  for _, f in ipairs(U.REWRITE_BODIES[s.kind]) do
    if s[f] then t[f] = U.rewrite(s[f], fn) or tir.core.make("Evaluate", {value = 0}) end
  end
  return tir.core.make(s.kind, t)
end
function U.rewrite_func(f, fn)
  return tir.core.make("PrimFunc", {name = f.name, params = f.params, body = U.rewrite(f.body, fn), attrs = f.attrs})
end
function U.is_call(s, op) return s.kind == "Evaluate" and s.value.kind == "Call" and s.value.op == op end
-- deletes the n-th Evaluate calling op
function U.drop_call(f, op, n)
  local seen = 0
  local g = U.rewrite_func(f, function(s)
    if U.is_call(s, op) then
      seen = seen + 1
      if seen == n then return false end
    end
  end)
  assert(seen >= n, "no call " .. op .. " #" .. n)
  return g
end

-- A deterministic integer generator: g(lo, hi) uniform in [lo, hi] (an LCG; the same stream
-- for a seed on every machine)
function U.lcg(seed)
  local s = seed
  return function(lo, hi)
    s = (s * 6364136223846793005 + 1442695040888963407) & 0x7fffffffffffffff
    return lo + (s >> 17) % (hi - lo + 1)
  end
end

-- A rows x cols int8 / uint8 NDArray on the host with row 1 at the dtype's maximum, row 2 at its
-- minimum, column 1 alternating the two, the rest from rnd (U.lcg): quantized GEMMs' extremes
function U.extreme_matrix(rows, cols, dtype, rnd)
  local lo, hi = ({int8 = -128, uint8 = 0})[dtype], ({int8 = 127, uint8 = 255})[dtype]
  local t = {}
  for r = 1, rows do
    t[r] = {}
    for c = 1, cols do
      local v = rnd(lo, hi)
      if r == 1 then v = hi elseif r == 2 then v = lo elseif c == 1 then v = (r % 2 == 0) and lo or hi end
      t[r][c] = v
    end
  end
  return require("tir").nd.array(t, dtype)
end

return U
