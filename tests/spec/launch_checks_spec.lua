-- launch_checks_spec.lua -- CUDA's launch limits (grid 2^31-1 / 65535 / 65535, block 1024 /
-- 1024 / 64, 1024 threads) checked at lowering for constant extents and at launch (simulator,
-- GPU) for symbolic ones; kernels with warp-wide tensor-core builtins launch whole warps of
-- consecutive threadIdx.x lanes (docs/TENSOR_CORES.md).
local tir = require("tir")
local te = tir.te
local U = require("spec_util")
local tc = require("tir.schedules.tc_gemm")
require("tir.intrin.cuda")

local function copy(n, dtype)
  local A = te.placeholder({n}, dtype or "int8", "A")
  local B = te.compute({n}, function(i) return A[{i}] end, "B")
  return te.create_prim_func({A, B})
end

describe("launch dimensions", function()
  it("refuse a grid beyond CUDA's limits at lowering, naming the loop and the axis", function()
    for _, case in ipairs({{1 << 31, "blockIdx.x", "2147483647"}, {1 << 32, "blockIdx.x", "2147483647"},
                           {65536, "blockIdx.y", "65535"}, {70000, "blockIdx.z", "65535"}}) do
      local sch = tir.Schedule(copy(case[1]))
      local i = sch:get_loops(sch:get_block("B"))
      sch:bind(i, case[2])
      U.expect_error(function() tir.build(sch.mod, "cuda", {compile = false}) end, "LoweringError",
        "lower_thread_binding", "loop i of extent " .. case[1], "bound to " .. case[2], "at most " .. case[3],
        "compute capability table")
    end
    -- at the limit it builds: 65535 blocks on y
    local sch = tir.Schedule(copy(65535))
    sch:bind(sch:get_loops(sch:get_block("B")), "blockIdx.y")
    assert.is_truthy(tir.build(sch.mod, "cuda", {compile = false}))
  end)

  it("refuse thread blocks beyond 1024 threads or 64 in z", function()
    local sch = tir.Schedule(copy(128))
    sch:bind(sch:get_loops(sch:get_block("B")), "threadIdx.z")
    U.expect_error(function() tir.build(sch.mod, "cuda", {compile = false}) end, "loop i of extent 128",
      "bound to threadIdx.z", "at most 64")
    local sch2 = tir.Schedule(copy(64 * 32))
    local i0, i1 = sch2:split(sch2:get_loops(sch2:get_block("B")), {64, 32})
    sch2:bind(i0, "threadIdx.y"); sch2:bind(i1, "threadIdx.x")
    U.expect_error(function() tir.build(sch2.mod, "cuda", {compile = false}) end, "split_host_device",
      "64 x 1 = 2048 threads per block", "at most 1024")
  end)

  it("check symbolic grids at launch (simulator) with the value they would have", function()
    local n = tir.var("n", "int64")
    local A = te.placeholder({n}, "int8", "A")
    local B = te.compute({n}, function(i) return A[{i}] end, "B")
    local sch = tir.Schedule(te.create_prim_func({A, B}))
    sch:bind(sch:get_loops(sch:get_block("B")), "blockIdx.y")
    local m = tir.build(sch.mod, "cuda", {compile = false})
    local a, b = tir.nd.empty({70000}, "int8"), tir.nd.empty({70000}, "int8")
    U.expect_error(function() tir.simulate(m, {a, b}) end, "gridDim.y = 70000", "1..65535 on blockIdx.y")
  end)
end)

-- one CTA of 128 threads staging n float32 through a shared S (4 n bytes), read back reversed
local function stage(n)
  local T = tir.script
  return T.prim_func("stage", {A = T.Buffer({n}, "float32"), B = T.Buffer({n}, "float32")}, function(A, B)
    T.launch_thread("blockIdx.x", 1)
    local tx = T.launch_thread("threadIdx.x", 128)
    local S = T.allocate({n}, "float32", "shared")
    for i in T.serial(n // 128) do S[{i * 128 + tx}] = A[{i * 128 + tx}] end
    T.evaluate(T.call("int32", "tvm_storage_sync", "shared"))
    for i in T.serial(n // 128) do B[{i * 128 + tx}] = S[{n - 1 - (i * 128 + tx)}] end
  end)
end

describe("shared memory a block", function()
  it("is refused at build beyond the target's limit (sm_90 227 KB, sm_86 99 KB, sm_80 163 KB), naming the kernel, the bytes and the buffers", function()
    -- 60032 floats = 240128 bytes: over sm_90's 232448; a target without -arch here is sm_90 (no GPU)
    for _, t in ipairs({"cuda -arch=sm_90a", "cuda"}) do
      U.expect_error(function() tir.build(stage(60032), t, {compile = false}) end, "CodegenError in build",
                     "kernel stage_kernel needs 240128 bytes of shared memory a block", "sm_90 allows at most 232448 (227 KB",
                     "S (shared): 240128 bytes at offset 0")
    end
    -- 30080 floats = 120320 bytes: fits sm_90 and sm_80 (166912), not sm_86 (101376)
    assert.is_truthy(tir.build(stage(30080), "cuda -arch=sm_90a", {compile = false}))
    local m80 = tir.build(stage(30080), "cuda -arch=sm_80", {compile = false})
    U.expect_error(function() tir.build(stage(30080), "cuda -arch=sm_86", {compile = false}) end,
                   "kernel stage_kernel needs 120320 bytes", "sm_86 allows at most 101376 (99 KB")
    -- what fits runs on the simulator, bit-exact (B = A reversed)
    local f = stage(30080)
    local args = tir.testing.random_args(f, 1)
    assert.are.equal(0, tir.simulate(m80, args).n_issues)
    local a, b = args[1], args[2]
    for _, i in ipairs({0, 1, 17, 30079}) do assert.are.equal(a:get(30079 - i), b:get(i)) end
  end)

  it("is refused by the simulator for a lowered function (no target: the largest limit, sm_90's)", function()
    local f = stage(60032)
    U.expect_error(function() tir.simulate(tir.lower(f), tir.testing.random_args(f, 1)) end, "RuntimeError in simulate",
                   "kernel stage_kernel needs 240128 bytes", "any GPU (the architecture is not known) allows at most 232448",
                   "S (shared)")
    local g = stage(58112) -- 232448 bytes: exactly the limit
    assert.are.equal(0, tir.simulate(tir.lower(g), tir.testing.random_args(g, 1)).n_issues)
  end)
end)

-- a 32x32x32 wmma GEMM, copies of A into shared memory bound to threadIdx (x, y) = tx, ty
local function wmma_gemm(tx, ty)
  local f = tc.workload(32, 32, 32)
  local sch = tir.Schedule(f)
  local blk = sch:get_block("C")
  local i, j, kk = sch:get_loops(blk)
  local i0, i1 = sch:split(i, {nil, 16}); local j0, j1 = sch:split(j, {nil, 16}); local k0, k1 = sch:split(kk, {nil, 16})
  sch:reorder(i0, j0, k0, i1, j1, k1)
  local As, Bs = sch:cache_read(blk, 0, "shared"), sch:cache_read(blk, 1, "shared")
  local Aw, Bw = sch:cache_read(blk, 0, "wmma.matrix_a"), sch:cache_read(blk, 1, "wmma.matrix_b")
  local Cw = sch:cache_write(blk, 0, "wmma.accumulator")
  sch:compute_at(Aw, k0); sch:compute_at(Bw, k0); sch:compute_at(As, k0); sch:compute_at(Bs, k0)
  sch:reverse_compute_at(Cw, j0)
  sch:bind(i0, "blockIdx.y"); sch:bind(j0, "blockIdx.x") -- before decompose_reduction (compact data flow)
  local init = sch:decompose_reduction(blk, k0)
  sch:tensorize(i1, "wmma_sync_16x16x16_f16f16f32")
  sch:tensorize(select(3, sch:get_loops(init)), "wmma_fill_16x16x16_f32")
  local la = sch:tensorize(select(4, sch:get_loops(Aw)), "wmma_load_16x16x16_f16_a")
  local lb = sch:tensorize(select(4, sch:get_loops(Bw)), "wmma_load_16x16x16_f16_b")
  local st = sch:tensorize(select(3, sch:get_loops(Cw)), "wmma_store_16x16x16_f32_global")
  local tiled = function(r, c) return r // 16, c // 16, r % 16, c % 16 end
  sch:transform_layout(la, {"write", 0}, tiled); sch:transform_layout(lb, {"write", 0}, tiled)
  sch:transform_layout(st, {"read", 0}, tiled)
  for _, s in ipairs({As, Bs}) do
    local a, b = select(4, sch:get_loops(s))
    local l = sch:fuse(a, b)
    local _, y, x = sch:split(l, {nil, ty, tx})
    sch:bind(y, "threadIdx.y"); sch:bind(x, "threadIdx.x")
  end
  return f, sch
end

describe("tensor-core kernels launch whole warps of consecutive threadIdx.x lanes", function()
  it("refuse threadIdx.x = 16 with threadIdx.y = 4 (64 threads: two half-warps per warp)", function()
    local f, sch = wmma_gemm(16, 4)
    U.assert_equiv(f, sch.mod, {rtol = 1e-3, atol = 1e-3, trials = 1}) -- the IR itself is right
    -- refused before lowering, naming the tensorized block, its intrinsic and the threadIdx.x loop
    U.expect_error(function() tir.build(sch.mod, "cuda -arch=sm_80", {compile = false}) end, "verify_memory_scope",
      "block 'C_init_o' (tensorized with wmma_fill_16x16x16_f32) uses the warp-wide builtin wmma_fill",
      "threadIdx.x = 16 (loop ax0_ax1_fused_2), threadIdx.y = 4", "consecutive threadIdx.x lanes", "multiple of 32",
      "bound to threadIdx.x")
    -- and the lowered kernel is refused by split_host_device too (builtins written by hand)
    local T = tir.script
    local hand = T.prim_func("f", {C = T.Buffer({256}, "float32")}, function(C)
      for ty in T.thread_binding(4, "threadIdx.y") do
        for tx in T.thread_binding(16, "threadIdx.x") do
          T.evaluate(T.call("void", "mma_fill", T.address_of(C[{0}]), T.float32(0)))
        end
      end
    end)
    U.expect_error(function() tir.build(hand, "cuda -arch=sm_80", {compile = false}) end, "split_host_device",
      "uses the warp-wide builtin mma_fill", "threadIdx.x = 16, threadIdx.y = 4", "multiple of 32")
  end)

  it("accept threadIdx.x = 32 with threadIdx.y = 2 and simulate it correctly", function()
    local f, sch = wmma_gemm(32, 2)
    local m = tir.build(sch.mod, "cuda -arch=sm_80", {compile = false})
    tir.simulate(m, tir.testing.random_args(f, 3), {reference = f, rtol = 1e-2, atol = 1e-2})
  end)
end)

describe("#gpu launch checks on the device", function()
  local has_gpu, why = tir.device("cuda", 0):exists()
  if not has_gpu then
    it("is skipped: " .. tostring(why), function() pending("no GPU: " .. tostring(why)) end)
    return
  end
  local dev = tir.device("cuda", 0)

  it("refuse a symbolic grid beyond 65535 on blockIdx.y at launch, run it at the limit", function()
    local n = tir.var("n", "int64")
    local A = te.placeholder({n}, "int8", "A")
    local B = te.compute({n}, function(i) return A[{i}] + tir.const(1, "int8") end, "B")
    local sch = tir.Schedule(te.create_prim_func({A, B}))
    sch:bind(sch:get_loops(sch:get_block("B")), "blockIdx.y")
    local m = tir.build(sch.mod, "cuda")
    U.expect_error(function() m(tir.nd.empty({70000}, "int8", dev), tir.nd.empty({70000}, "int8", dev)) end,
      "RuntimeError", "gridDim.y = 70000", "1..65535 on blockIdx.y")
    local a = tir.nd.random({65535}, "int8", dev, {seed = 3, low = -100, high = 100})
    local b = tir.nd.empty({65535}, "int8", dev)
    m(a, b)
    local ha, hb = a:to("cpu"), b:to("cpu")
    for _, k in ipairs({0, 1, 40000, 65534}) do assert.are.equal(ha:get(k) + 1, hb:get(k)) end
  end)

  it("auto_tensorize's occupancy-aware tiles compute a 256^3 GEMM correctly on the device's SMs", function()
    local f = tc.workload(256, 256, 256)
    local sch, o = tc.auto_tensorize(f, "mma.m16n8k16")
    assert.are.equal(dev:info().sm_count, o.sm_count)
    assert.is_true(o.ctas >= math.min(o.sm_count, 256), ("%d CTAs"):format(o.ctas))
    local m = tir.build(sch.mod, "cuda")
    local a = tir.nd.random({256, 256}, "float16", dev, {seed = 1})
    local b = tir.nd.random({256, 256}, "float16", dev, {seed = 2})
    local c = tir.nd.empty({256, 256}, "float32", dev)
    m(a, b, c)
    tir.testing.assert_allclose(c, tir.testing.ref_matmul(a, b), {rtol = 1e-2, atol = 1e-2})
    -- against the divisibility-only choice (128 x 128 tiles, 4 CTAs): both right, times printed
    local sch1, o1 = tc.auto_tensorize(f, "mma.m16n8k16", nil, {sm_count = 1})
    local m1 = tir.build(sch1.mod, "cuda")
    local c1 = tir.nd.empty({256, 256}, "float32", dev)
    m1(a, b, c1)
    tir.testing.assert_allclose(c1, tir.testing.ref_matmul(a, b), {rtol = 1e-2, atol = 1e-2})
    local t = m:time_evaluator({number = 50, repeat_ = 5})(a, b, c)
    local t1 = m1:time_evaluator({number = 50, repeat_ = 5})(a, b, c1)
    print(("auto_tensorize 256^3: %dx%d tiles, %d CTAs on %d SMs: %.1f us; %dx%d tiles, %d CTAs: %.1f us"):format(
      o.BM, o.BN, o.ctas, o.sm_count, t * 1e6, o1.BM, o1.BN, o1.ctas, t1 * 1e6))
  end)
end)
