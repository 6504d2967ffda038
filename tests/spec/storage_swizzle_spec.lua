-- storage_swizzle_spec.lua -- XOR-swizzled shared layouts (sch:storage_swizzle, the Buffer's
-- swizzle field, lower_buffer_swizzle; include/tir/swizzle.h): the modes are the PTX ISA's
-- 32/64/128-byte swizzles, the interpreter keeps logical indices, the lowered code (CUDA C and
-- the simulator) uses the swizzled addresses, and every schedule gives the interpreter's results.
local tir = require("tir")
local T = tir.script
local U = require("spec_util")
local tc = require("tir.schedules.tc_gemm")
local core = tir.core

local asan = os.getenv("ASAN_OPTIONS") ~= nil

local function sim_equal(f, sch) return U.sim_equal(f, sch, 11) end

describe("swizzle modes", function()
  it("are the PTX ISA's: 16-byte chunk bits 4.. XORed with the address bits from bit 7", function()
    -- 128B: bits 4-6 ^= bits 7-9 (repeat 1024 bytes); 64B: bits 4-5 ^= 7-8; 32B: bit 4 ^= bit 7
    for off = 0, 4095, 16 do
      local x = off
      assert.are.equal(x ~ (((x >> 7) & 7) << 4), core.swizzle_apply("128B", off))
      assert.are.equal(x ~ (((x >> 7) & 3) << 4), core.swizzle_apply("64B", off))
      assert.are.equal(x ~ (((x >> 7) & 1) << 4), core.swizzle_apply("32B", off))
    end
    -- row 1 of a 128-byte-row tile: chunk c lands in chunk c ^ 1 (the TMA / wgmma pictures)
    assert.are.equal(128 + 16, core.swizzle_apply("128B", 128))
    assert.are.equal(128 + 7 * 16 + 5, core.swizzle_apply("128B", 128 + 6 * 16 + 5)) -- bytes inside a chunk stay
    assert.are.same({bits = 3, base = 4, shift = 3, ["repeat"] = 1024, unit = 16, ptx_mode = 128}, core.swizzle_info("128B"))
    assert.are.same({bits = 2, base = 4, shift = 3, ["repeat"] = 512, unit = 16, ptx_mode = 64}, core.swizzle_info({2, 4, 3}))
    assert.are.equal(-1, core.swizzle_info({3, 4, 4}).ptx_mode)
    assert.are.equal(0, core.swizzle_info("none").ptx_mode)
  end)

  it("are bijections of each repeat; swizzle_for_rows spreads 8 rows over the 8 bank groups", function()
    for _, m in ipairs({"32B", "64B", "128B", {3, 4, 4}, {3, 3, 3}}) do
      local info = core.swizzle_info(m)
      local seen = {}
      for off = 0, info["repeat"] - 1 do
        local p = core.swizzle_apply(m, off)
        assert.is_true(p >= 0 and p < info["repeat"] and not seen[p])
        seen[p] = true
      end
    end
    assert.are.equal("32B", core.swizzle_for_rows(32))
    assert.are.equal("64B", core.swizzle_for_rows(64))
    assert.are.equal("128B", core.swizzle_for_rows(128))
    assert.are.same({3, 4, 4}, core.swizzle_for_rows(256))
    assert.is_nil(core.swizzle_for_rows(48))
    local L = tir.layout
    for _, rb in ipairs({32, 64, 128, 256}) do
      local cols = rb // 2
      local lay = L.shared{shape = {16, math.max(cols, 16)}, dtype = "float16", swizzle = core.swizzle_for_rows(math.max(cols, 16) * 2)}
      assert.are.equal(1, (lay:conflicts(L.ldmatrix_x4{})))
    end
    assert.are.equal(8, (L.shared{shape = {16, 64}, dtype = "float16"}:conflicts(L.ldmatrix_x4{})))
  end)

  it("refuse what is not a swizzle", function()
    U.expect_error(function() core.swizzle_info("256B") end, "unknown swizzle mode \"256B\"", "\"128B\"")
    U.expect_error(function() core.swizzle_info({3, 4, 2}) end, "is not a swizzle", "B <= S")
    U.expect_error(function() core.swizzle_info({3, 4}) end, "{B, M, S}")
    U.expect_error(function() core.swizzle_info(7) end, "swizzle must be")
    U.expect_error(function() tir.layout.shared{shape = {8, 64}, swizzle = "12B"} end, "unknown swizzle mode")
  end)
end)

-- B = A * 2 through a shared tile: 8 warps copy a 64 x 64 fp16 tile with 16-byte vectors
local function copy_func(n, m, dtype)
  dtype = dtype or "float16"
  local te = tir.te
  local A = te.placeholder({n, m}, dtype, "A")
  local B = te.compute({n, m}, function(i, j) return A[{i, j}] * tir.const(2, dtype) end, "B")
  return te.create_prim_func({A, B})
end
local function copy_schedule(f, mode, vec)
  local sch = tir.Schedule(f)
  local b = sch:get_block("B")
  local i, j = sch:get_loops(b)
  local bi, ii = sch:split(i, {nil, 64})
  sch:bind(bi, "blockIdx.x")
  local AS = sch:cache_read(b, 0, "shared")
  sch:compute_at(AS, bi)
  local l = {sch:get_loops(AS)}
  local fz = sch:fuse(l[#l - 1], l[#l])
  local o, tx, v = sch:split(fz, {nil, 256, vec or 8})
  sch:bind(tx, "threadIdx.x"); sch:vectorize(v)
  local f2 = sch:fuse(ii, j)
  local o2, tx2 = sch:split(f2, {nil, 256})
  sch:bind(tx2, "threadIdx.x")
  if mode then sch:storage_swizzle(AS, 0, mode) end
  return sch, AS
end

describe("sch:storage_swizzle", function()
  it("records the mode, keeps the interpreter's logical indices and swizzles the lowered addresses", function()
    local f = copy_func(128, 64)
    for _, mode in ipairs({"32B", "64B", "128B", {3, 4, 4}}) do
      local sch = copy_schedule(f, mode)
      assert.matches("buffer_swizzle", tostring(sch.mod))
      -- the interpreter runs the scheduled function as it is
      local args = tir.testing.random_args(f, 3)
      local ref = tir.testing.random_args(f, 3)
      tir.interpret(f, ref)
      tir.interpret(sch.mod, args)
      tir.testing.assert_allclose(args[2], ref[2], {rtol = 0, atol = 0})
      local rep, mod = sim_equal(f, sch)
      assert.is_true(rep.shared_writes > 0)
      local src = mod:get_source("cuda")
      assert.matches(" %^ ", src) -- the XOR of the swizzle
      local lowered = tostring(tir.lower(sch.mod))
      local want = type(mode) == "table" and ("swizzle = {%d, %d, %d}"):format(table.unpack(mode)) or ("swizzle = \"" .. mode .. "\"")
      assert.is_truthy(lowered:find(want, 1, true))
    end
    -- "none" removes it again; the trace replays
    local sch = copy_schedule(f, "128B")
    sch:storage_swizzle("A_shared", 0, "none")
    assert.is_falsy(tostring(sch.mod):find("buffer_swizzle", 1, true))
    local t = sch:trace()
    assert.matches("storage_swizzle", t)
    local s2 = tir.Schedule(f)
    s2:apply_trace(t)
    assert.is_true(tir.structural_equal(sch.mod, s2.mod))
  end)

  it("places swizzled buffers at multiples of their repeat so the PTX modes (defined on addresses) agree", function()
    local f = copy_func(128, 64)
    local sch = copy_schedule(f, "128B")
    local mod = tir.build(sch.mod, "cuda", {compile = false})
    local src = mod:get_source("cuda")
    -- static shared arrays carry the repeat as their alignment
    assert.matches("__shared__ __align__%(1024%)", src)
  end)

  it("a swizzled buffer prints and loads back (T.alloc_buffer's swizzle option)", function()
    local f = T.prim_func("k", {A = T.Buffer({64, 64}, "float16"), B = T.Buffer({64, 64}, "float16")}, function(A, B)
      T.block("root", function()
        local S = T.alloc_buffer({64, 64}, "float16", {scope = "shared", swizzle = "128B"})
        for i, j in T.grid(64, 64) do
          T.block("S", function()
            local vi, vj = T.axis.remap("SS", {i, j})
            S[{vi, vj}] = A[{vi, vj}]
          end)
        end
        for i, j in T.grid(64, 64) do
          T.block("B", function()
            local vi, vj = T.axis.remap("SS", {i, j})
            B[{vi, vj}] = S[{vi, vj}]
          end)
        end
      end)
    end)
    local txt = tostring(f)
    assert.is_truthy(txt:find("swizzle = \"128B\"", 1, true))
    local g = T.parse(txt)
    assert.is_true(tir.structural_equal(f, g))
    U.expect_error(function() tir.buffer("X", {4}, "float16", {scope = "shared", swizzle = "9B"}) end, "unknown swizzle mode")
  end)

  it("checks its arguments and the buffer", function()
    local f = copy_func(128, 64)
    local sch = copy_schedule(f, nil)
    U.expect_error(function() sch:storage_swizzle("A_shared", 1, "128B") end, "storage_swizzle", "write_buffer_index 1 is out of range")
    U.expect_error(function() sch:storage_swizzle("A_shared", 0, "100B") end, "unknown swizzle mode \"100B\"")
    U.expect_error(function() sch:storage_swizzle("B", 0, "128B") end, "B is a function parameter")
    local s2 = tir.Schedule(f)
    local b = s2:get_block("B")
    local AL = s2:cache_read(b, 0, "local")
    U.expect_error(function() s2:storage_swizzle(AL, 0, "128B") end, "A_local is in scope \"local\"", "must be shared")
    local g = copy_func(64, 64, "float64")
    local s3 = tir.Schedule(g)
    local AS = s3:cache_read(s3:get_block("B"), 0, "shared")
    U.expect_error(function() s3:storage_swizzle(AS, 0, {3, 2, 3}) end, "8-byte elements, wider than the 4-byte chunks")
    -- a malformed annotation written by hand
    local s4 = tir.Schedule(f)
    local AS4 = s4:cache_read(s4:get_block("B"), 0, "shared")
    s4:annotate(AS4, "buffer_swizzle", {0})
    U.expect_error(function() s4:storage_swizzle(AS4, 0, "64B") end, "malformed buffer_swizzle annotation")
  end)

  it("lowering refuses accesses the swizzle would split, and builtins that compute their own addresses", function()
    -- 32-byte vectors of a 16-byte-chunk swizzle straddle chunks
    local f = copy_func(128, 64, "float32")
    local sch = copy_schedule(f, "128B", 8)
    U.expect_error(function() tir.lower(sch.mod) end, "lower_buffer_swizzle", "may straddle two of the chunks")
    -- wmma's load_matrix_sync reads rows from a base pointer and a stride
    local w = tc.workload(64, 64, 64, "float16")
    local ws = tc.schedule(w, {intrin = "wmma", BM = 32, BN = 32, BK = 32, warp_m = 16, warp_n = 16, pad = false})
    ws:storage_swizzle("A_shared", 0, "64B")
    U.expect_error(function() tir.lower(ws.mod) end, "lower_buffer_swizzle", "A_shared is swizzled, but wmma_load",
      "computes addresses from a base pointer")
    -- a tile whose size is no multiple of the blocks the swizzle permutes
    local g = copy_func(4, 8)
    local s2 = tir.Schedule(g)
    local b = s2:get_block("B")
    local AS = s2:cache_read(b, 0, "shared")
    local i, j = s2:get_loops(b)
    local fz = s2:fuse(i, j)
    local bx, tx = s2:split(fz, {nil, 32})
    s2:bind(bx, "blockIdx.x"); s2:bind(tx, "threadIdx.x")
    s2:compute_at(AS, bx)
    s2:storage_swizzle(AS, 0, "128B")
    U.expect_error(function() tir.lower(s2.mod) end, "lower_buffer_swizzle", "A_shared is swizzled but its size is not a multiple",
      "64 bytes; the swizzle permutes blocks of 128")
  end)
end)

describe("tc_gemm with swizzle = true", function()
  local function small(o)
    local r = {BM = 32, BN = 32, BK = 32, warp_m = 16, warp_n = 16, swizzle = true}
    for k, v in pairs(o or {}) do r[k] = v end
    return r
  end

  it("uses no padding and gives the interpreter's results (mma.sync, fp16 and bf16, all layouts, 1-4 stages)", function()
    local cases = {{"NN", 1}, {"NN", 2}, {"NN", 3}, {"NN", 4}, {"NT", 2}, {"TN", 2}, {"TT", 3}}
    if asan then cases = {{"NN", 3}, {"TT", 2}} end
    for _, c in ipairs(cases) do
      local f = tc.workload(64, 64, 128, "float16", "float16", nil, c[1])
      local sch = tc.schedule(f, small({stages = c[2], epilogue = "D"}))
      local lowered = tostring(tir.lower(sch.mod))
      assert.is_truthy(lowered:find("swizzle = ", 1, true))
      assert.is_falsy(lowered:find("strides = {40, 1}", 1, true))
      sim_equal(f, sch)
    end
    local g = tc.workload(64, 64, 64, "bfloat16")
    sim_equal(g, tc.schedule(g, small({stages = 2})))
  end)

  it("the default 128x128x32 tile: 64-byte rows of A get the 64B mode, 256-byte rows of B Swizzle<3, 4, 4>", function()
    local f = tc.workload(128, 128, 64, "float16", "float16")
    local sch = tc.schedule(f, {stages = 2, swizzle = true, epilogue = "D"})
    local lowered = tostring(tir.lower(sch.mod))
    assert.is_truthy(lowered:find("swizzle = \"64B\"", 1, true))
    assert.is_truthy(lowered:find("swizzle = {3, 4, 4}", 1, true))
    if not asan then sim_equal(f, sch) end
    -- 4 stages of 128x32 + 32x128 fp16 tiles: 64 KB, no padding
    local m = tir.build(tc.schedule(tc.workload(4096, 4096, 4096, "float16", "float16"), {stages = 4, swizzle = true, epilogue = "D"}).mod,
      "cuda", {compile = false})
    assert.are.equal(4 * (128 * 32 + 32 * 128) * 2, m:kernels()[1].dyn_smem_bytes)
  end)

  it("int8 IMMA (k-major 8-bit tiles) swizzled too", function()
    local f = tc.workload(64, 64, 128, "int8")
    sim_equal(f, tc.schedule(f, small({BK = 64, stages = 2})))
    local g = tc.workload(64, 64, 128, {"uint8", "int8"}, nil, nil, "TN")
    sim_equal(g, tc.schedule(g, small({BK = 64, stages = 3})))
  end)
end)

describe("swizzled TMA destinations", function()
  it("a TMA copy into a storage_swizzle'd tile writes the buffer's PTX mode, and ldmatrix reads it so", function()
    for _, lay in ipairs({"NT", "NN"}) do
      local f = tc.workload(128, 128, 128, "float16", "float32", nil, lay)
      local sch = tc.schedule(f, {BM = 64, BN = 64, BK = 32, warp_m = 32, warp_n = 32, tma = true, stages = 3})
      -- (tc_gemm gives TMA tiles these modes itself; here they are given again, and B's is
      -- replaced: the last storage_swizzle of a buffer wins)
      sch:storage_swizzle("A_shared", 0, "64B")
      sch:storage_swizzle("B_shared", 0, lay == "NT" and "64B" or "128B")
      local text = tostring(tir.lower(sch.mod))
      -- A's 64-byte rows: the 64B mode in the tensor map; B stored k x n (NN) has 128-byte rows: 128B
      assert.is_truthy(text:find('T.call("handle", "tma_descriptor", A_1, "float16", 64, 2,', 1, true))
      assert.is_truthy(text:find(('T.call("handle", "tma_descriptor", B_1, "float16", %d, 2,'):format(lay == "NT" and 64 or 128), 1, true))
      assert.is_truthy(text:find('swizzle = "64B"', 1, true))
      local rep = sim_equal(f, sch)
      assert.is_true(rep.tma_copies > 0)
    end
  end)

  it("refuses a swizzle TMA does not have on a TMA destination; the old shared.swz<B> scopes are gone", function()
    local f = tc.workload(128, 128, 128, "float16", "float32", nil, "NN")
    local sch = tc.schedule(f, {BM = 64, BN = 64, BK = 32, warp_m = 32, warp_n = 32, tma = true, stages = 2})
    U.expect_error(function() sch:set_scope("B_shared", 0, "shared.swz128") end, "set_scope", "shared.swz128")
    sch:storage_swizzle("B_shared", 0, {3, 4, 4})
    U.expect_error(function() tir.lower(sch.mod) end, "inject_tma_pipeline", "has swizzle {3, 4, 4}, which is not one of TMA's modes")
  end)
end)
