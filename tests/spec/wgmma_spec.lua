-- wgmma_spec.lua -- Hopper's warpgroup MMA (PTX ISA 9.7.15): the wgmma rows of include/tir/mma.h,
-- wgmma.accumulator, the descriptors lower_wgmma_descriptor derives from the tiles' storage_swizzle,
-- the sm_90a target, tc_gemm with intrin = "wgmma" (lib/tir/schedules/tc_gemm_wgmma.lua).
-- Every schedule runs through the interpreter (before/after) and the simulator (bit-exact against
-- the interpreter); planted bugs (an accumulator read before its wait, a descriptor whose swizzle
-- is not the buffer's) must be reported; the PTX for sm_90a holds the instructions and ptxas
-- accepts it; bad inputs are clear errors.
local tir = require("tir")
local T = tir.script
local U = require("spec_util")
local tc = require("tir.schedules.tc_gemm")
local cuda = require("tir.intrin.cuda")

local nvrtc_ok = tir.core.nvrtc_available()
local asan = os.getenv("ASAN_OPTIONS") ~= nil

local function row(name)
  for _, r in ipairs(tir.core.mma_configs()) do if r.name == name then return r end end
end

-- random inputs: floats in [-1, 1], int8 over its whole range
local function args_for(f, seed)
  local out = {}
  for i, p in ipairs(f.params) do
    local shape = {}
    for d = 1, #p.shape do shape[d] = p.shape[d].value end
    local lo, hi = -1, 1
    if p.dtype == "int8" then lo, hi = -128, 127 end
    out[i] = tir.nd.random(shape, p.dtype, tir.nd.cpu(), {seed = seed * 31 + i, low = lo, high = hi})
  end
  return out
end

local function sim_exact(f, sch, seed)
  local mod = tir.build(sch.mod, "cuda -arch=sm_90a", {compile = false})
  local rep = tir.simulate(mod, args_for(f, seed or 1), {reference = f})
  assert.are.equal(0, rep.n_issues)
  assert.are.equal(0, rep.races)
  return rep, mod
end

describe("the wgmma rows of the instruction table", function()
  it("are m64nNk16 f16/bf16 -> f32 and m64nNk32 s8 -> s32, sm_90, with the PTX ISA's valid N", function()
    local f16, bf16, s8 = row("m64nNk16.f16.f16.f32"), row("m64nNk16.bf16.bf16.f32"), row("m64nNk32.s8.s8.s32")
    for _, r in ipairs({f16, bf16, s8}) do
      assert.are.equal("wgmma", r.family)
      assert.are.equal(64, r.m)
      assert.are.equal(90, r.min_sm)
      assert.matches("PTX ISA 9.7.15", r.source)
    end
    assert.are.equal(16, f16.k); assert.are.equal(32, s8.k)
    assert.are.equal(32, #f16.n_valid) -- 8, 16, ..., 256
    assert.are.equal(256, f16.n_valid[32])
    -- .s32: 8 i up to 32, then 16 i (PTX ISA 9.7.15.5.1.1.3)
    assert.are.same({8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256}, s8.n_valid)
  end)

  it("lay the 64 x N accumulator over the 128 threads of a warpgroup, each element exactly once", function()
    for _, n in ipairs({8, 24, 128, 256}) do
      local seen, count = {}, 0
      for _, c in ipairs(tir.core.mma_lane_map("m64nNk16.f16.f16.f32", "c", n)) do
        local key = c.row * 1000 + c.col
        assert.is_nil(seen[key])
        seen[key] = true
        count = count + 1
        assert.is_true(c.row >= 16 * (c.lane // 32) and c.row < 16 * (c.lane // 32) + 16) -- warp w owns rows 16w..16w+15
      end
      assert.are.equal(64 * n, count)
    end
    -- D fragment (PTX ISA Figure 149): thread 37 = warp 1, lane 5: rows 16 + 1 (+ 8), columns 2 + {0, 1} + 8 j
    local m = tir.core.mma_lane_map("m64nNk16.f16.f16.f32", "c", 16)
    local got = {}
    for _, c in ipairs(m) do if c.lane == 37 then got[#got + 1] = {c.row, c.col} end end
    assert.are.same({{17, 2}, {17, 3}, {25, 2}, {25, 3}, {17, 10}, {17, 11}, {25, 10}, {25, 11}}, got)
    U.expect_error(function() tir.core.mma_lane_map("m64nNk16.f16.f16.f32", "c", 12) end, "not a valid N")
  end)

  it("has builtins flagged warpgroup-wide and swizzle-aware; the swizzle is no part of a scope", function()
    local by = {}
    for _, b in ipairs(tir.core.builtins()) do by[b.op] = b end
    for _, op in ipairs({"wgmma_fence", "wgmma_commit_group", "wgmma_wait_group", "wgmma_mma_async", "wgmma_fill", "wgmma_store"}) do
      assert.is_true(by[op].warpgroup and by[op].warp, op)
    end
    assert.are.same({0}, by.wgmma_mma_async.writes)
    assert.are.same({1}, by.wgmma_store.writes)
    assert.is_true(by.wgmma_desc.pure and by.wgmma_operand.pure)
    -- the descriptor encodes the tile's swizzle: lower_buffer_swizzle leaves its address logical
    for _, op in ipairs({"wgmma_desc", "wgmma_operand", "ptx_tma_load", "ptx_tma_store"}) do assert.is_true(by[op].swizzle_aware, op) end
    assert.is_true(by.mma_ldmatrix.lane_address and by.ptx_cp_async.lane_address)
    assert.is_true(tir.core.scope_valid("wgmma.accumulator"))
    assert.is_true(tir.core.scope_valid("wgmma.matrix_a")) -- A from registers (wgmma_register_a_spec.lua)
    -- (shared.swz<B> scopes were the old swizzle mechanism: Buffer.swizzle, storage_swizzle, replaced them)
    for _, s in ipairs({"shared.swz32", "shared.swz64", "shared.swz128", "shared.swz", "wgmma.matrix_b"}) do assert.is_false(tir.core.scope_valid(s), s) end
  end)
end)

describe("tc_gemm with intrin = \"wgmma\"", function()
  local cases = {
    {"float16", "float16", {BM = 128, BN = 128, BK = 64, stages = 2, epilogue = "D"}, {128, 128, 128}},  -- 128-byte swizzle, 2 warpgroups
    {"bfloat16", nil, {BM = 64, BN = 64, BK = 32, stages = 3}, {64, 128, 128}},                       -- 64-byte swizzle, fp32 out
    {"float16", nil, {BM = 64, BN = 32, BK = 16, stages = 1}, {64, 64, 64}},                          -- 32-byte swizzle, no pipeline
    {"int8", nil, {BM = 128, BN = 64, BK = 128, stages = 2}, {128, 64, 256}},                         -- s8 m64n64k32, 128-byte swizzle
  }
  if not asan then cases[#cases + 1] = {"float16", "float16", {BM = 64, BN = 256, BK = 64, stages = 2, epilogue = "D"}, {64, 256, 128}} end
  for _, c in ipairs(cases) do
    it(("%s BM=%d BN=%d BK=%d stages=%d: interpreter-equivalent, simulator bit-exact"):format(c[1], c[3].BM, c[3].BN, c[3].BK, c[3].stages), function()
      local f = tc.workload(c[4][1], c[4][2], c[4][3], c[1], c[2], nil, "NT")
      local o = {intrin = "wgmma"}
      for k, v in pairs(c[3]) do o[k] = v end
      local sch = tc.schedule(f, o)
      U.assert_equiv(f, sch.mod, {trials = 1, rtol = 0, atol = 0})
      local rep = sim_exact(f, sch)
      assert.is_true(rep.warp_ops > 0)
    end)
  end

  it("derives the descriptors: start address, SBO = 8 rows of the swizzle width, the swizzle from the tile's storage_swizzle", function()
    local f = tc.workload(128, 128, 128, "float16", "float16", nil, "NT")
    local mod = tir.build(tc.schedule(f, {intrin = "wgmma", BK = 32, epilogue = "D"}).mod, "cuda -arch=sm_90a", {compile = false})
    local src = mod:get_source("cuda")
    -- 64-byte rows: SBO 512 bytes, mode 2 (64B) in bits 62-63, LBO unused (16)
    -- the start address is logical (a tile origin: the hardware swizzles from there)
    assert.truthy(src:find("tir_wgmma_desc((A_shared + ((k_0 * 4096) + (((int)threadIdx.y) * 2048))), 16u, 512u, 2u)", 1, true), src)
    assert.is_nil(src:find("tir_swz", 1, true))
    assert.matches(", 16u, 512u, 2u%)", src)
    assert.matches("__floats2half2_rn", src)
    assert.matches("fence.proxy.async.shared::cta", src) -- cp.async writes (generic proxy) before wgmma reads (async proxy)
    assert.matches("__shared__ __align__%(1024%)", src) -- the swizzle pattern's boundary
  end)

  it("orders plain shared stores (an unpipelined copy) before wgmma with a proxy fence ahead of the barrier", function()
    -- stages = 1: the tiles are filled by ordinary stores (generic proxy), which wgmma (async
    -- proxy) sees only after each writing thread's fence.proxy.async (found on the H200: BN = 8)
    local f = tc.workload(256, 256, 256, "float16", "float16", nil, "NT")
    local src = tir.build(tc.schedule(f, {intrin = "wgmma", BM = 64, BN = 8, BK = 32, stages = 1, epilogue = "D"}).mod,
                          "cuda -arch=sm_90a", {compile = false}):get_source("cuda")
    local before = src:sub(1, src:find("tir_wgmma_m64n8k16_f16_f16_f32((float*)", 1, true))
    local last_sync = 0
    for p in before:gmatch("()__syncthreads%(%);") do last_sync = p end
    assert.truthy(last_sync > 0, src)
    local tail = before:sub(1, last_sync)
    assert.truthy(tail:sub(-200):find("fence.proxy.async.shared::cta", 1, true), src)
  end)

  it("builds for sm_90a with NVRTC; the PTX holds wgmma.mma_async and ptxas -arch=sm_90a accepts it without spills", function()
    if not nvrtc_ok then return pending("NVRTC is not available") end
    local f = tc.workload(256, 256, 128, "float16", "float16", nil, "NT")
    local mod = tir.build(tc.schedule(f, {intrin = "wgmma", BN = 256, epilogue = "D"}).mod, "cuda -arch=sm_90a")
    local ptx = mod:get_source("ptx")
    assert.matches("%.target sm_90a", ptx)
    assert.matches("wgmma%.mma_async%.sync%.aligned%.m64n256k16%.f32%.f16%.f16", ptx)
    for _, s in ipairs({"wgmma%.fence%.sync%.aligned", "wgmma%.commit_group%.sync%.aligned", "wgmma%.wait_group%.sync%.aligned 0",
                        "cp%.async%.cg%.shared%.global", "fence%.proxy%.async%.shared::cta"}) do
      assert.matches(s, ptx)
    end
    local ok, out = U.ptxas(ptx)
    if ok == nil then return pending("ptxas is not installed") end
    assert.is_true(ok, out)
    assert.matches("0 bytes spill stores", out)
  end)

  it("is refused for any target other than sm_90a, naming it", function()
    local f = tc.workload(128, 128, 64, "float16", "float16", nil, "NT")
    local sch = tc.schedule(f, {intrin = "wgmma", epilogue = "D"})
    for _, t in ipairs({"cuda -arch=sm_90", "cuda -arch=sm_80"}) do
      U.expect_error(function() tir.build(sch.mod, t, {compile = false}) end, "CodegenError",
                     "the wgmma instructions exist only on the architecture-specific target sm_90a", "build with \"cuda -arch=sm_90a\"")
    end
  end)

  it("checks its options and the block first", function()
    local nt = tc.workload(128, 128, 64, "float16", "float16", nil, "NT")
    U.expect_error(function() tc.schedule(nt, {intrin = "wgmma", BN = 100}) end, "tc_gemm.schedule", "BN = 100 is not a valid wgmma N")
    U.expect_error(function() tc.schedule(nt, {intrin = "wgmma", BK = 48}) end, "the shared rows must be exactly a swizzle width")
    U.expect_error(function() tc.schedule(nt, {intrin = "wgmma", BM = 96}) end, "BM must be 64, 128, 192 or 256")
    U.expect_error(function() tc.schedule(nt, {intrin = "wgmma", warp_m = 64}) end, "unknown option", "warp_m")
    U.expect_error(function() tc.schedule(tc.workload(256, 256, 64, "float16", nil, nil, "NT"), {intrin = "wgmma", stages = 8, BN = 256}) end,
                   "227 KB")
    local nn = tc.workload(128, 128, 64, "float16", "float16")
    U.expect_error(function() tc.schedule(nn, {intrin = "wgmma"}) end, "K-major operands", "has layout NN")
    local mixed = tc.workload(128, 128, 128, {"bfloat16", "float16"}, nil, nil, "NT")
    U.expect_error(function() tc.schedule(mixed, {intrin = "wgmma", BK = 64}) end, "bfloat16 x float16 into float32", "does not run")
  end)

  it("refuses an operand tile without a swizzle or with one that is no PTX mode, naming the storage_swizzle to give", function()
    local f = tc.workload(128, 128, 64, "float16", "float16", nil, "NT")
    local sch = tc.schedule(f, {intrin = "wgmma", epilogue = "D", stages = 1})
    sch:storage_swizzle("A_shared", 0, "none")
    U.expect_error(function() tir.build(sch.mod, "cuda -arch=sm_90a", {compile = false}) end, "lower_wgmma_descriptor",
                   "the wgmma operand A_shared has scope 'shared' and no swizzle", "give the shared tile storage_swizzle(block, i, \"128B\")")
    sch:storage_swizzle("A_shared", 0, {3, 4, 4})
    U.expect_error(function() tir.build(sch.mod, "cuda -arch=sm_90a", {compile = false}) end, "lower_wgmma_descriptor",
                   "has the swizzle {3, 4, 4}, which is none of the descriptor's modes", "storage_swizzle(block, i, \"128B\")")
    -- a PTX mode of another width than the rows
    sch:storage_swizzle("A_shared", 0, "64B")
    U.expect_error(function() tir.build(sch.mod, "cuda -arch=sm_90a", {compile = false}) end, "lower_wgmma_descriptor",
                   "(swizzle 64B) has rows of 64 elements = 128 bytes", "needs rows of exactly 64 bytes")
  end)
end)

describe("warpgroup launches", function()
  it("are refused when blockDim.x is not a multiple of 128 (a warpgroup is 4 consecutive warps)", function()
    local f = T.prim_func("f", {A = T.Buffer({64}, "float32")}, function(A)
      for tx in T.thread_binding(64, "threadIdx.x") do
        T.block("w", function()
          T.reads()
          T.writes(A[{{tx, tx + 1}}])
          T.block_attr({tensor_intrin = "by_hand"})
          T.evaluate(T.call("void", "wgmma_fence"))
          A[{tx}] = 1.0
        end)
      end
    end)
    U.expect_error(function() tir.build(f, "cuda -arch=sm_90a", {compile = false}) end, "verify_memory_scope",
                   "uses the warpgroup-wide builtin wgmma_fence", "threadIdx.x = 64 (loop tx)", "multiple of 128")
  end)
end)

describe("planted bugs in wgmma kernels show on the simulator", function()
  local with_impl = U.with_impl
  local function bad_sync(n, depth, body)
    local ld, ldb = tir.var("ld", "int32"), tir.var("ldb", "int32")
    return T.prim_func("bad", {A = T.Buffer({64, depth}, "float16", {scope = "shared", offset_factor = 16, strides = {ld, 1}}),
                               B = T.Buffer({n, depth}, "float16", {scope = "shared", offset_factor = 16, strides = {ldb, 1}}),
                               C = T.Buffer({64, n}, "float32", {scope = "wgmma.accumulator", offset_factor = 16})}, function(A, B, C)
      T.block("root", function()
        T.reads(C[{{0, 64}, {0, n}}], A[{{0, 64}, {0, depth}}], B[{{0, n}, {0, depth}}])
        T.writes(C[{{0, 64}, {0, n}}])
        body(A, B, C, ld, ldb)
      end)
    end)
  end
  local f = tc.workload(64, 64, 128, "float16", nil, nil, "NT")
  local o = {intrin = "wgmma", BM = 64, BN = 64, BK = 64, stages = 2, wgmma_pending = 0}
  local names = cuda.wgmma(row("m64nNk16.f16.f16.f32"), 64, "K", 64)

  it("an accumulator read before a wgmma_wait_group covered its group: wgmma_pending", function()
    with_impl(names.sync, function()
      return bad_sync(64, 64, function(A, B, C, ld, ldb)
        T.evaluate(T.call("void", "wgmma_fence"))
        for s = 0, 3 do
          T.evaluate(T.call("void", "wgmma_mma_async", T.address_of(C[{0, 0}]),
            T.call("uint64", "wgmma_operand", T.address_of(A[{0, 16 * s}]), ld, "K"),
            T.call("uint64", "wgmma_operand", T.address_of(B[{0, 16 * s}]), ldb, "K"), 64, 0))
        end
        -- and neither wgmma_commit_group nor wgmma_wait_group: the store's wgmma_wait_group 0 covers
        -- committed groups only
      end)
    end, function()
      local mod = tir.build(tc.schedule(f, o).mod, "cuda -arch=sm_90a", {compile = false})
      U.expect_error(function() tir.simulate(mod, args_for(f, 1), {reference = f}) end, "wgmma_store reads wgmma accumulator",
                     "not even committed (no wgmma_commit_group)", "until a wgmma_wait_group covers that group")
      local rep = tir.simulate(mod, args_for(f, 1), {reference = f, check = false})
      assert.are.equal("wgmma_pending", rep.issues[1].kind)
    end)
  end)

  it("wgmma_wait_group 1 without the extra tile version: the refill races with the group still reading", function()
    local g = tc.workload(64, 64, 256, "float16", nil, nil, "NT")
    local sch = tc.schedule(g, {intrin = "wgmma", BM = 64, BN = 64, BK = 64, stages = 3})
    local l = {sch:get_loops(sch:get_block("C_update_o"))}
    sch:unannotate(l[#l], "software_pipeline_async_reads")
    local mod = tir.build(sch.mod, "cuda -arch=sm_90a", {compile = false})
    U.expect_error(function() tir.simulate(mod, args_for(g, 1), {reference = g}) end, "while a cp.async to it is in flight",
                   "wgmma_wait_group", "a stage refilled while a wgmma may still read it")
    -- with it (the schedule's default), the same kernel is clean
    sim_exact(g, tc.schedule(g, {intrin = "wgmma", BM = 64, BN = 64, BK = 64, stages = 3}))
  end)

  it("a descriptor whose swizzle disagrees with the buffer's layout: wgmma_descriptor, and the result differs", function()
    with_impl(names.sync, function()
      return bad_sync(64, 64, function(A, B, C, ld, ldb)
        T.evaluate(T.call("void", "wgmma_fence"))
        for s = 0, 3 do
          -- the tile is swizzled "128B", the descriptor says 64-byte swizzle (SBO as for 128-byte rows)
          T.evaluate(T.call("void", "wgmma_mma_async", T.address_of(C[{0, 0}]),
            T.call("uint64", "wgmma_desc", T.address_of(A[{0, 16 * s}]), 16, 1024, 64),
            T.call("uint64", "wgmma_operand", T.address_of(B[{0, 16 * s}]), ldb, "K"), 64, 0))
        end
        T.evaluate(T.call("void", "wgmma_commit_group"))
        T.evaluate(T.call("void", "wgmma_wait_group", 0))
      end)
    end, function()
      local mod = tir.build(tc.schedule(f, o).mod, "cuda -arch=sm_90a", {compile = false})
      U.expect_error(function() tir.simulate(mod, args_for(f, 1), {reference = f}) end, "the descriptor of A says a 64-byte swizzle",
                     "A_shared is laid out with the swizzle 128B (storage_swizzle)", "PTX ISA 9.7.15.5.1.2")
      local rep = tir.simulate(mod, args_for(f, 1), {reference = f, check = false})
      local kinds = {}
      for _, is in ipairs(rep.issues) do kinds[is.kind] = true end
      assert.is_true(kinds.wgmma_descriptor and kinds.mismatch)
    end)
  end)
end)
