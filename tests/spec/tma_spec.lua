-- tma_spec.lua -- Hopper TMA and mbarrier builtins (include/tir/tma.h, docs/BUILTINS.md): the
-- registry rows, the CUDA C / PTX for sm_90a, the refusals, and the interpreter's copy semantics
-- (a TMA copy = the box copy it stands for, with the swizzle of include/tir/tma.h).
local tir = require("tir")
local U = require("spec_util")
local T = tir.script

local function nvrtc() return (tir.core.nvrtc_available and tir.core.nvrtc_available()) ~= false end

-- The element of a dense 64-column fp16 box row r, column c after the 128-byte swizzle: the
-- 16-byte chunk c // 8 of 128-byte line r lands in chunk (c // 8) ~ (r % 8).
local function swz128(r, c) return r * 64 + (((c // 8) ~ (r % 8)) * 8) + c % 8 end

-- A copy kernel: each CTA loads its 64 x 64 tile of A with one TMA copy (thread 0), waits on
-- the mbarrier, and all threads copy the (unswizzled) tile to B.
local function copy_kernel(opts)
  opts = opts or {}
  local rows, swizzle = opts.rows or 256, opts.swizzle or 128
  local nthreads = opts.threads or 128
  local tx_bytes = opts.tx_bytes or 64 * 64 * 2
  return T.prim_func("tmacopy", {A = T.Buffer({rows, 64}, "float16"), B = T.Buffer({rows, 64}, "float16")}, function(A, B)
    local bx = T.launch_thread("blockIdx.x", rows // 64)
    -- threads = 0: no thread launch (the interpreter runs no shared memory inside one)
    local tx = nthreads > 0 and T.launch_thread("threadIdx.x", nthreads) or 0
    nthreads = math.max(nthreads, 1)
    local S = T.allocate({4096}, "float16", "shared")
    local bar = T.allocate({1}, "uint64", "shared")
    local d = T.call("handle", "tma_descriptor", A.data, "float16", swizzle, 2, rows, 64, 64, 64)
    T.If(tir.eq(tx, 0), function()
      T.evaluate(T.call("void", "ptx_mbarrier_init", T.address_of(bar[{0}]), opts.count or 1))
      -- the init (generic proxy) made visible to the TMA unit's complete_tx (async proxy)
      if not opts.no_fence then T.evaluate(T.call("void", "ptx_fence_proxy_async")) end
    end)
    T.evaluate(T.call("void", "tvm_storage_sync"))
    T.If(tir.eq(tx, 0), function()
      T.evaluate(T.call("void", "ptx_mbarrier_arrive_expect_tx", T.address_of(bar[{0}]), tx_bytes))
      T.evaluate(T.call("void", "ptx_tma_load", T.address_of(S[{0}]), d, T.address_of(bar[{0}]), bx * 64, 0))
    end)
    if not opts.no_wait then T.evaluate(T.call("void", "ptx_mbarrier_wait", T.address_of(bar[{0}]), 0)) end
    for i in T.serial(4096 // nthreads) do
      local e = i * nthreads + tx
      local r, c = e // 64, e % 64
      local src = swizzle == 128 and swz128(r, c) or e
      B[{bx * 64 + r, c}] = S[{src}]
    end
  end)
end

-- An im2col copy kernel (tma.h's im2col mode): X [N, H, W, C] fp16 NHWC, CTA t = a filter tap (r, s)
-- of an R x S convolution (pad, stride, dilation): thread 0 loads `pixels` pixels of C channels from
-- the first output pixel's window corner (0, -pad, -pad, 0) with im2col offsets (r dil, s dil), and
-- all threads copy the box to B[t].  The expected box (im2col_ref): pixel j = output (n, p, q) in
-- order, channel c = X[n, p st - pad + r dil, q st - pad + s dil, c], zero outside X.
-- thread 0: init the mbarrier (one arrival), fence it for the async proxy; a CTA barrier; thread 0:
-- arrive.expect_tx(bytes) and issue(), the copies completing on it
local function arm_barrier(tx, bar, bytes, issue)
  T.If(tir.eq(tx, 0), function()
    T.evaluate(T.call("void", "ptx_mbarrier_init", T.address_of(bar[{0}]), 1))
    T.evaluate(T.call("void", "ptx_fence_proxy_async"))
  end)
  T.evaluate(T.call("void", "tvm_storage_sync"))
  T.If(tir.eq(tx, 0), function()
    T.evaluate(T.call("void", "ptx_mbarrier_arrive_expect_tx", T.address_of(bar[{0}]), bytes))
    issue()
  end)
end

local function im2col_geo(g)
  local P = (g.H + 2 * g.pad - (g.R - 1) * g.dil - 1) // g.st + 1
  return P, -g.pad + (P - 1) * g.st - g.H + 1 -- (square images: P = Q; the upper corner)
end

local function im2col_kernel(g, threads)
  local P, up = im2col_geo(g)
  local nt = math.max(threads, 1)
  local pixels, C = g.pixels or g.N * P * P, g.C
  return T.prim_func("im2col", {X = T.Buffer({g.N, g.H, g.H, C}, "float16"), B = T.Buffer({g.R * g.R, pixels, C}, "float16")}, function(X, B)
    local bx = T.launch_thread("blockIdx.x", g.R * g.R)
    -- (threads = 0: no thread launch, for the interpreter, which runs no shared memory inside one)
    local tx = threads > 0 and T.launch_thread("threadIdx.x", threads) or 0
    local S = T.allocate({pixels * C}, "float16", "shared")
    local bar = T.allocate({1}, "uint64", "shared")
    local d = T.call("handle", "tma_im2col_descriptor", X.data, "float16", 0, 4, g.N, g.H, g.H, C, -g.pad, -g.pad, up, up, g.st, g.st,
                     pixels, C)
    arm_barrier(tx, bar, pixels * C * 2, function()
      T.evaluate(T.call("void", "ptx_tma_load_im2col", T.address_of(S[{0}]), d, T.address_of(bar[{0}]), 0, -g.pad, -g.pad, 0,
                        bx // g.R * g.dil, bx % g.R * g.dil))
    end)
    T.evaluate(T.call("void", "ptx_mbarrier_wait", T.address_of(bar[{0}]), 0))
    for i in T.serial((pixels * C + nt - 1) // nt) do
      local e = i * nt + tx
      T.If(tir.lt(e, pixels * C), function() B[{bx, e // C, e % C}] = S[{e}] end)
    end
  end)
end

local function im2col_ref(g, x)
  local P = im2col_geo(g)
  local xt, out = x:to("cpu"):to_table(), {}
  local pixels = g.pixels or g.N * P * P
  for t = 0, g.R * g.R - 1 do
    local r, s, rows = t // g.R, t % g.R, {}
    for j = 0, pixels - 1 do
      local n, p, q = j // (P * P), j // P % P, j % P
      local h, w, row = p * g.st - g.pad + r * g.dil, q * g.st - g.pad + s * g.dil, {}
      for c = 1, g.C do row[c] = (n < g.N and h >= 0 and h < g.H and w >= 0 and w < g.H) and xt[n + 1][h + 1][w + 1][c] or 0 end
      rows[j + 1] = row
    end
    out[t + 1] = rows
  end
  return out
end

-- stride 2 pad 1 (pixels walk 3 x 3 outputs an image, wrapping rows and images), stride 1 dilation
-- 2 pad 2, and a box longer than the tensor's pixels (the walk runs past the last image: zeros)
local IM2COL = {
  {N = 2, H = 5, C = 16, R = 3, pad = 1, st = 2, dil = 1},
  {N = 2, H = 6, C = 8, R = 3, pad = 2, st = 1, dil = 2},
  {N = 1, H = 4, C = 16, R = 3, pad = 1, st = 1, dil = 1, pixels = 24},
}

describe("TMA and mbarrier builtins", function()
  it("are rows of the registry with the attributes thread_sync reads", function()
    local by = {}
    for _, b in ipairs(tir.core.builtins()) do by[b.op] = b end
    assert.are.same({0}, by.ptx_tma_load.writes)
    assert.is_true(by.ptx_tma_load.async_proxy and by.ptx_mbarrier_wait.async_proxy and by.ptx_mbarrier_arrive.async_proxy)
    assert.is_false(by.ptx_mbarrier_init.async_proxy) -- an ordinary write: a barrier follows it
    assert.are.same({0}, by.ptx_mbarrier_init.writes)
    assert.is_true(by.tma_descriptor.pure)
    assert.is_true(by.ptx_setmaxnreg_inc.warp)
  end)

  it("generate CUDA C with a __grid_constant__ tensor map and the PTX instructions for sm_90a", function()
    local mod = tir.build(copy_kernel(), "cuda -arch=sm_90a", {compile = nvrtc()})
    local src = mod:get_source("cuda")
    for _, want in ipairs({"const __grid_constant__ tir_CUtensorMap tir_tmap_0", "__shared__ __align__(1024) half S[4096]",
                           "tir_tma_load_2d((S + 0), (&tir_tmap_0), (bar + 0), 0, (((int)blockIdx.x) * 64))",
                           "tir_mbarrier_wait((bar + 0), (unsigned)(0))"}) do
      assert.is_truthy(src:find(want, 1, true), want)
    end
    -- no barrier between the TMA copy, the wait and the reads: the mbarrier orders them
    local after = src:sub(src:find("tir_mbarrier_arrive_expect_tx((bar", 1, true), -1)
    assert.is_nil(after:find("__syncthreads", 1, true))
    if nvrtc() then
      local ptx = mod:get_source("ptx")
      assert.is_truthy(ptx:find("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes", 1, true))
      assert.is_truthy(ptx:find("mbarrier.try_wait.parity.shared::cta.b64", 1, true))
      assert.is_truthy(ptx:find("mbarrier.arrive.expect_tx.shared::cta.b64", 1, true))
    end
  end)

  it("are refused for targets before sm_90, and setmaxnreg without sm_90a", function()
    U.expect_error(function() tir.build(copy_kernel(), "cuda -arch=sm_80", {compile = false}) end,
      "ptx_mbarrier_init is a Hopper instruction (sm_90+), but the target is sm_80", "sm_90a")
    local function nreg(op, n)
      return T.prim_func("nreg", {A = T.Buffer({128}, "float32")}, function(A)
        local bx = T.launch_thread("blockIdx.x", 1)
        local tx = T.launch_thread("threadIdx.x", 128)
        T.evaluate(T.call("void", op, n))
        A[{tx}] = T.float32(1)
      end)
    end
    local k, bad = nreg("ptx_setmaxnreg_inc", 232), nreg("ptx_setmaxnreg_dec", 20)
    U.expect_error(function() tir.build(k, "cuda -arch=sm_90", {compile = false}) end, "needs the architecture-specific target sm_90a")
    local src = tir.build(k, "cuda -arch=sm_90a", {compile = false}):get_source("cuda")
    assert.is_truthy(src:find('asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");', 1, true))
    U.expect_error(function() tir.build(bad, "cuda -arch=sm_90a", {compile = false}) end, "a multiple of 8 in 24 .. 256")
  end)

  it("run on the interpreter as the box copies they stand for (swizzle included)", function()
    for _, sw in ipairs({0, 128}) do
      local k = copy_kernel({swizzle = sw, threads = 0})
      local a = tir.nd.random({256, 64}, "float16", nil, {seed = 3})
      local b = tir.nd.empty({256, 64}, "float16")
      tir.interpret(k, {a, b})
      assert.are.same(a:to_table(), b:to_table())
    end
  end)

  it("im2col mode runs on the interpreter as the pixel walk of tma.h (corners, traversal stride, tap offsets, zero fill)", function()
    for _, g in ipairs(IM2COL) do
      local x = tir.nd.random({g.N, g.H, g.H, g.C}, "float16", nil, {seed = 5})
      local P = im2col_geo(g)
      local b = tir.nd.empty({g.R * g.R, g.pixels or g.N * P * P, g.C}, "float16")
      tir.interpret(im2col_kernel(g, 0), {x, b})
      assert.are.same(im2col_ref(g, x), b:to_table())
    end
    local src = tir.build(im2col_kernel(IM2COL[1], 32), "cuda -arch=sm_90a", {compile = false}):get_source("cuda")
    assert.truthy(src:find("cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], [%2], {%7, %8};", 1, true), src)
    -- a tiled load of an im2col map (and the other way round) is refused, as are maps outside the driver's rules
    local function bad(desc_args, op, ncoords)
      return T.prim_func("bad", {X = T.Buffer({2, 8, 8, 64}, "float16")}, function(X)
        local bx = T.launch_thread("blockIdx.x", 1)
        local S = T.allocate({16384}, "float16", "shared")
        local bar = T.allocate({1}, "uint64", "shared")
        local co = {}
        for i = 1, ncoords do co[i] = 0 end
        T.evaluate(T.call("void", op, T.address_of(S[{0}]), T.call("handle", desc_args[1], X.data, "float16", table.unpack(desc_args, 2)),
                          T.address_of(bar[{0}]), table.unpack(co)))
      end)
    end
    local x = tir.nd.random({2, 8, 8, 64}, "float16", nil, {seed = 1})
    local ok = {"tma_im2col_descriptor", 128, 4, 2, 8, 8, 64, -1, -1, -1, -1, 1, 1, 128, 64}
    tir.interpret(bad(ok, "ptx_tma_load_im2col", 6), {x})
    U.expect_error(function() tir.interpret(bad(ok, "ptx_tma_load", 4), {x}) end, "ptx_tma_load needs a tiled (tma_descriptor) tensor map")
    U.expect_error(function() tir.interpret(bad({"tma_descriptor", 128, 4, 2, 8, 8, 64, 1, 1, 8, 64}, "ptx_tma_load_im2col", 6), {x}) end,
      "ptx_tma_load_im2col needs an im2col (tma_im2col_descriptor) tensor map")
    U.expect_error(function() tir.interpret(bad(ok, "ptx_tma_load_im2col", 5), {x}) end, "5 coordinates and offsets for a rank-4 tensor map (6 expected)")
    local function with(i, v) local t = {table.unpack(ok)}; t[i] = v; return t end
    U.expect_error(function() tir.interpret(bad(with(14, 2048), "ptx_tma_load_im2col", 6), {x}) end, "pixels per column is 2048")
    U.expect_error(function() tir.interpret(bad(with(12, 9), "ptx_tma_load_im2col", 6), {x}) end, "traversal stride 0 is 9")
    U.expect_error(function() tir.interpret(bad(with(8, -200), "ptx_tma_load_im2col", 6), {x}) end, "is outside -128 .. 127")
    U.expect_error(function() tir.interpret(bad(with(2, 64), "ptx_tma_load_im2col", 6), {x}) end, "more than the 64-byte swizzle span")
  end)

  it("check the tensor map's rules (box sizes, the swizzle span, the rank)", function()
    local function with_desc(...)
      local args = {...}
      return T.prim_func("bad", {A = T.Buffer({256, 64}, "float16")}, function(A)
        local bx = T.launch_thread("blockIdx.x", 1)
        local S = T.allocate({8192}, "float16", "shared")
        local bar = T.allocate({1}, "uint64", "shared")
        T.evaluate(T.call("void", "ptx_tma_load", T.address_of(S[{0}]),
          T.call("handle", "tma_descriptor", A.data, "float16", table.unpack(args)), T.address_of(bar[{0}]), 0, 0))
      end)
    end
    local a = tir.nd.random({256, 64}, "float16", nil, {seed = 1})
    U.expect_error(function() tir.interpret(with_desc(128, 2, 256, 64, 512, 64), {a}) end, "TMA boxes are 1 to 256 elements")
    U.expect_error(function() tir.interpret(with_desc(64, 2, 256, 64, 64, 64), {a}) end, "more than the 64-byte swizzle span")
    U.expect_error(function() tir.interpret(with_desc(0, 2, 256, 64, 64, 4), {a}) end, "multiple of 16")
    U.expect_error(function() tir.interpret(with_desc(48, 2, 256, 64, 64, 64), {a}) end, "0, 32, 64 or 128 bytes")
  end)
end)

describe("tir.simulate on TMA copies and mbarriers", function()
  local function run(opts)
    local a = tir.nd.random({256, 64}, "float16", nil, {seed = 5})
    local b = tir.nd.empty({256, 64}, "float16")
    local rep = tir.simulate(copy_kernel(opts), {a, b})
    return rep, a, b
  end

  it("lands the copy when its phase completes: the result is the input, bit for bit", function()
    for _, sw in ipairs({0, 128}) do
      local rep, a, b = run({swizzle = sw})
      assert.are.equal(0, rep.n_issues)
      assert.are.equal(4, rep.tma_copies)
      assert.is_true(rep.mbarrier_waits >= 4)
      assert.are.same(a:to_table(), b:to_table())
    end
  end)

  it("reports reading a TMA destination before its barrier phase (no wait), naming the copy", function()
    U.expect_error(function() run({no_wait = true}) end, "SimulationError", "reads S[0], the destination of a TMA copy issued by thread (0, 0, 0)",
      "before the mbarrier phase the copy completes on has completed", "other statement: T.evaluate(T.call(\"void\", \"ptx_tma_load\"")
  end)

  it("reports a wrong expect_tx byte count, too small and too large", function()
    U.expect_error(function() run({tx_bytes = 4096}) end, "wrong expect_tx byte count on bar[0] (phase 0)",
      "bring 4096 bytes more than ptx_mbarrier_arrive_expect_tx announced (4096)")
    U.expect_error(function() run({tx_bytes = 16384}) end, "wrong expect_tx byte count on bar[0]",
      "expects 8192 more bytes than the TMA copies issued on it bring (announced 16384)", "would wait forever")
    local a = tir.nd.random({256, 64}, "float16", nil, {seed = 5})
    local rep = tir.simulate(copy_kernel({tx_bytes = 16384}), {a, tir.nd.empty({256, 64}, "float16")}, {check = false})
    assert.is_true(rep.n_issues >= 1)
    assert.are.equal("mbarrier_tx", rep.issues[1].kind)
  end)

  it("reports a TMA copy on bytes the generic proxy touched without a fence.proxy.async since", function()
    U.expect_error(function() run({no_fence = true}) end, "the mbarrier of a TMA copy by thread (0, 0, 0)",
      "uses bar[0], which thread (0, 0, 0) [warp 0, lane 0] accessed through the generic proxy with no fence.proxy.async since")
  end)

  it("reports a deadlock: every thread waits on a phase that lacks arrivals", function()
    U.expect_error(function() run({count = 2}) end, "deadlock: every thread of the CTA waits on phase 0 of bar[0] (parity 0)",
      "still needs 1 of its 2 arrivals", "no thread is left to make them")
  end)
end)

-- A TMA store epilogue: a tile loaded with TMA, scaled by 2 by every thread (generic stores),
-- then fence.proxy.async, __syncthreads and one cp.async.bulk.tensor store of the tile by thread 0.
local function store_kernel(opts)
  opts = opts or {}
  return T.prim_func("tmastore", {A = T.Buffer({256, 64}, "float16"), B = T.Buffer({256, 64}, "float16")}, function(A, B)
    local bx = T.launch_thread("blockIdx.x", 4)
    local tx = T.launch_thread("threadIdx.x", 128)
    local S = T.allocate({4096}, "float16", "shared")
    local bar = T.allocate({1}, "uint64", "shared")
    local da = T.call("handle", "tma_descriptor", A.data, "float16", 0, 2, 256, 64, 64, 64)
    local db = T.call("handle", "tma_descriptor", B.data, "float16", 0, 2, 256, 64, 64, 64)
    arm_barrier(tx, bar, 8192, function()
      T.evaluate(T.call("void", "ptx_tma_load", T.address_of(S[{0}]), da, T.address_of(bar[{0}]), bx * 64, 0))
    end)
    T.evaluate(T.call("void", "ptx_mbarrier_wait", T.address_of(bar[{0}]), 0))
    for i in T.serial(32) do
      local e = i * 128 + tx
      S[{e}] = S[{e}] * T.float16(2)
    end
    if not opts.no_fence then T.evaluate(T.call("void", "ptx_fence_proxy_async")) end
    T.evaluate(T.call("void", "tvm_storage_sync"))
    T.If(tir.eq(tx, 0), function()
      T.evaluate(T.call("void", "ptx_tma_store", db, T.address_of(S[{0}]), bx * 64, 0))
      T.evaluate(T.call("void", "ptx_bulk_commit_group"))
      T.evaluate(T.call("void", "ptx_bulk_wait_group_read", 0))
    end)
  end)
end

describe("TMA stores", function()
  it("write the shared box to the tensor: simulator result = 2 * A, CUDA C and PTX for sm_90a", function()
    local a = tir.nd.random({256, 64}, "float16", nil, {seed = 9})
    local b = tir.nd.empty({256, 64}, "float16")
    local rep = tir.simulate(store_kernel(), {a, b})
    assert.are.equal(0, rep.n_issues)
    local at, bt = a:to_table(), b:to_table()
    for r = 1, 256 do for c = 1, 64 do assert.are.equal(at[r][c] * 2, bt[r][c]) end end
    local mod = tir.build(store_kernel(), "cuda -arch=sm_90a", {compile = nvrtc()})
    local src = mod:get_source("cuda")
    assert.is_truthy(src:find("tir_tma_store_2d((&tir_tmap_1), (S + 0), 0, (((int)blockIdx.x) * 64));", 1, true))
    assert.is_truthy(src:find("tir_bulk_wait_read<0>();", 1, true))
    if nvrtc() then
      assert.is_truthy(mod:get_source("ptx"):find("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group", 1, true))
    end
  end)

  it("report a TMA store of bytes written by generic stores without a fence.proxy.async", function()
    local a = tir.nd.random({256, 64}, "float16", nil, {seed = 9})
    U.expect_error(function() tir.simulate(store_kernel({no_fence = true}), {a, tir.nd.empty({256, 64}, "float16")}) end,
      "a TMA store by thread (0, 0, 0) [warp 0, lane 0] uses S[", "accessed through the generic proxy with no fence.proxy.async since")
  end)
end)

describe("#gpu TMA on the device", function()
  local dev = U.gpu_or_pending(it, function(w) pending(w) end)
  if not dev then return end
  it("a TMA store epilogue writes 2 * A (load, scale, fence, store)", function()
    local mod = tir.build(store_kernel(), "cuda -arch=sm_90a")
    local a = tir.nd.random({256, 64}, "float16", dev, {seed = 9})
    local b = tir.nd.empty({256, 64}, "float16", dev)
    mod(a, b)
    local at, bt = a:to("cpu"):to_table(), b:to("cpu"):to_table()
    for r = 1, 256 do for c = 1, 64 do assert.are.equal(at[r][c] * 2, bt[r][c]) end end
  end)

  it("im2col mode: the hardware's pixel walk is the interpreter's (cuTensorMapEncodeIm2col, cp.async.bulk.tensor .im2col)", function()
    for _, g in ipairs(IM2COL) do
      local mod = tir.build(im2col_kernel(g, 32), "cuda -arch=sm_90a")
      local x = tir.nd.random({g.N, g.H, g.H, g.C}, "float16", dev, {seed = 5})
      local P = im2col_geo(g)
      local b = tir.nd.empty({g.R * g.R, g.pixels or g.N * P * P, g.C}, "float16", dev)
      mod(x, b)
      assert.are.same(im2col_ref(g, x), b:to("cpu"):to_table())
    end
  end)

  it("copies 64 x 64 fp16 tiles with one TMA copy each (no swizzle and 128-byte swizzle), tensor maps encoded at launch", function()
    for _, sw in ipairs({0, 128}) do
      for _, rows in ipairs({256, 4096}) do
        local mod = tir.build(copy_kernel({swizzle = sw, rows = rows}), "cuda -arch=sm_90a")
        local a = tir.nd.random({rows, 64}, "float16", dev, {seed = rows + sw})
        local b = tir.nd.empty({rows, 64}, "float16", dev)
        mod(a, b)
        assert.are.same(a:to("cpu"):to_table(), b:to("cpu"):to_table())
      end
    end
  end)
end)

return {copy_kernel = copy_kernel}
