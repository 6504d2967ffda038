-- wgmma_defaults_spec.lua -- what a user gets from tc_gemm intrin = "wgmma" with no tile or
-- pipeline option, and from tc_gemm.auto_tensorize(func, "wgmma"): tc_gemm_wgmma.pick's per-shape
-- configuration (bench/RESULTS.md "Stop 10: the wgmma defaults"): 128 x 256 warp-specialized TMA
-- tiles, persistent where the persistent grid takes no extra rounds; 128 x 128, 6 stages for fewer
-- tiles than SMs (M = 128); the old defaults (cp.async) for short k loops and int8.  The generated
-- kernels are checked (grid, setmaxnreg, TMA), a small picked shape runs bit-exact on the simulator.
local tir = require("tir")
local U = require("spec_util")
local tc = require("tir.schedules.tc_gemm")
local W = require("tir.schedules.tc_gemm_wgmma")

local asan = os.getenv("ASAN_OPTIONS") ~= nil

local function kernel(f, o)
  local mod = tir.build(tc.schedule(f, o).mod, "cuda -arch=sm_90a", {compile = false})
  return mod:kernels()[1], mod:get_source("cuda"), mod
end

describe("tc_gemm_wgmma.pick", function()
  it("chooses per shape: persistent where it takes no extra rounds, one CTA a tile where the tile count is awkward", function()
    for _, dt in ipairs({"float16", "bfloat16"}) do
      local p = W.pick(4096, 4096, 4096, dt, 132)
      -- persistent = G, the grid persistent_grid makes on the 132 SMs (an exact CTA count: 128 of 512 tiles)
      assert.are.same({BM = 128, BN = 256, BK = 64, stages = 4, tma = true, warp_specialize = true, persistent = 128}, p)
      assert.are.equal(tc.persistent_grid(64, 32, 132), W.pick(8192, 8192, 8192, dt, 132).persistent)
      assert.are.equal(128, W.pick(4096, 4096, 11008, dt, 132).persistent)
      -- 32 x 43 tiles: the persistent grid would be 86 CTAs (16 rounds against 11)
      local q, why = W.pick(4096, 11008, 4096, dt, 132)
      assert.is_nil(q.persistent)
      assert.are.same({128, 256, 4, true}, {q.BM, q.BN, q.stages, q.warp_specialize})
      assert.matches("G = 86 would take 16 rounds", why)
      -- M = 128: 43 tiles of 128 x 256 on 132 SMs -> 86 of 128 x 128 with 6 stages
      local s = W.pick(128, 11008, 4096, dt, 132)
      assert.are.same({BM = 128, BN = 128, BK = 64, stages = 6, tma = true, warp_specialize = true}, s)
      assert.are.equal(64, W.pick(64, 11008, 4096, dt, 132).BM)
    end
  end)

  it("int8: 128 x 256 x 128 s4 warp-specialized persistent (grouped one CTA a tile where G adds rounds), 128 x 128 s6 for small M", function()
    local base = {BM = 128, BN = 256, BK = 128, stages = 4, tma = true, warp_specialize = true}
    local small = {BM = 128, BN = 128, BK = 128, stages = 6, tma = true, warp_specialize = true}
    -- 4096 x 11008: 1376 tiles, one CTA a tile in the grouped order; 128 x 11008: 43 tiles -> 128 x 128 s6
    for _, c in ipairs({{4096, 4096, 4096, 128}, {8192, 8192, 8192, 128}, {4096, 11008, 4096, 1376}, {128, 11008, 4096, nil}}) do
      for _, dt in ipairs({"int8", "uint8"}) do
        local want = {}
        for key, v in pairs(c[4] and base or small) do want[key] = v end
        want.persistent = c[4]
        local p, why = W.pick(c[1], c[2], c[3], dt, 132)
        assert.are.same(want, p)
        assert.matches("^pick: int8", why)
      end
    end
    -- the int8 GEMM without options builds that kernel: 128 persistent CTAs of 384 threads
    local k, src = kernel(tc.workload(4096, 4096, 4096, "int8", "int32", nil, "NT"), {intrin = "wgmma"})
    assert.are.equal(128, k.grid[1])
    assert.are.equal(384, k.block[1] * k.block[2] * k.block[3])
    assert.matches("wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8", src)
  end)

  it("with float16 out (the fused cast) a persistent pick stores through shared memory: 3 stages, epilogue_store = \"tma\"", function()
    local p, why = W.pick(4096, 4096, 4096, "float16", 132, "float16")
    assert.are.same({BM = 128, BN = 256, BK = 64, stages = 3, tma = true, warp_specialize = true, persistent = 128, epilogue_store = "tma"}, p)
    assert.matches("tma%-store", why)
    assert.are.equal("tma", W.pick(8192, 8192, 8192, "bfloat16", 132, "float16").epilogue_store)
    -- fp32 out (a 128 KB store tile) and one CTA a tile (nothing to overlap) store directly
    assert.is_nil(W.pick(4096, 4096, 4096, "bfloat16", 132, "float32").epilogue_store)
    assert.is_nil(W.pick(4096, 11008, 4096, "float16", 132, "float16").epilogue_store)
    assert.is_nil(W.pick(128, 11008, 4096, "float16", 132, "float16").epilogue_store)
  end)

  it("keeps tc_gemm_wgmma.defaults for short k loops and tiles that do not divide (int8 too)", function()
    for _, c in ipairs({{4096, 4096, 512, "int8"}, {4096, 4000, 4096, "int8"}, {128, 128, 128, "float16"}, {4096, 4096, 448, "float16"},
                        {4096, 4000, 4096, "float16"}}) do
      local p, why = W.pick(c[1], c[2], c[3], c[4], 132)
      assert.are.same({}, p)
      assert.matches("^defaults", why)
    end
  end)

  it("follows the SM count: fewer SMs turn 4096 x 11008 persistent", function()
    -- 1376 tiles on 86 SMs: G = 86, 16 rounds either way
    assert.are.equal(86, W.pick(4096, 11008, 4096, "float16", 86).persistent)
  end)
end)

describe("tc_gemm intrin = \"wgmma\" without tile options", function()
  it("builds the picked kernel: 4096^3 warp-specialized persistent (G = 128, 384 threads), 4096 x 11008 one CTA a tile", function()
    local k, src, mod = kernel(tc.workload(4096, 4096, 4096, "float16", "float16", nil, "NT"), {intrin = "wgmma", epilogue = "D"})
    assert.are.equal(128, k.grid[1]) -- no GPU here: tc_gemm.DEFAULT_SM_COUNT = 132 SMs
    assert.are.equal(384, k.block[1] * k.block[2] * k.block[3])
    assert.matches("setmaxnreg", src)
    assert.matches("cp.async.bulk.tensor", src)
    assert.truthy(tostring(mod:lowered()):find("ptx_tma_store", 1, true)) -- the fp16 tile leaves by a TMA store
    -- bf16 -> fp32: the accumulator fragments stored directly
    local _, _, mod2 = kernel(tc.workload(4096, 4096, 4096, "bfloat16", nil, nil, "NT"), {intrin = "wgmma"})
    assert.is_nil(tostring(mod2:lowered()):find("ptx_tma_store", 1, true))
    local k2 = kernel(tc.workload(4096, 11008, 4096, "bfloat16", nil, nil, "NT"), {intrin = "wgmma"})
    assert.are.equal(32 * 43, k2.grid[1] * k2.grid[2])
    local k3 = kernel(tc.workload(128, 11008, 4096, "float16", "float16", nil, "NT"), {intrin = "wgmma", epilogue = "D"})
    assert.are.equal(86, k3.grid[1] * k3.grid[2])
  end)

  it("any tile or pipeline option keeps tc_gemm_wgmma.defaults for the rest (128 x 128 x 64, 3 cp.async stages)", function()
    local k, src = kernel(tc.workload(4096, 4096, 4096, "float16", "float16", nil, "NT"), {intrin = "wgmma", BN = 128, epilogue = "D"})
    assert.are.equal(32 * 32, k.grid[1] * k.grid[2])
    assert.is_nil(src:find("cp.async.bulk.tensor", 1, true))
    assert.matches("cp%.async%.cg", src)
  end)

  it("a small picked shape (128 x 128 x 768: 128 x 128, 6 TMA stages, warp-specialized) is bit-exact on the simulator", function()
    if asan then pending("simulated WS GEMM: plain build only") return end
    local f = tc.workload(128, 128, 768, "float16", "float16", nil, "NT")
    local p = W.pick(128, 128, 768, "float16", 132)
    assert.are.same({BM = 128, BN = 128, BK = 64, stages = 6, tma = true, warp_specialize = true}, p)
    local sch = tc.schedule(f, {intrin = "wgmma", epilogue = "D"})
    local mod = tir.build(sch.mod, "cuda -arch=sm_90a", {compile = false})
    assert.matches("setmaxnreg", mod:get_source("cuda"))
    local rep = tir.simulate(mod, tir.testing.random_args(f, 5), {reference = f, rtol = 0, atol = 0})
    assert.are.equal(0, rep.n_issues)
    assert.are.equal(2 * (768 // 64), rep.tma_copies)
  end)
end)

describe("tc_gemm.auto_tensorize(func, \"wgmma\")", function()
  it("returns the pick with its reason and grid size, on the SM count given", function()
    local f = tc.workload(4096, 4096, 4096, "float16", "float16", nil, "NT")
    local sch, o = tc.auto_tensorize(f, "wgmma", nil, {epilogue = "D", sm_count = 132})
    assert.are.equal(128, o.ctas)
    assert.matches("^pick: 128x256x64 s3 ws persistent tma%-store", o.config)
    assert.are.equal(128, tir.build(sch.mod, "cuda -arch=sm_90a", {compile = false}):kernels()[1].grid[1])
    local _, o2 = tc.auto_tensorize(tc.workload(4096, 11008, 4096, "bfloat16", nil, nil, "NT"), "wgmma", nil, {sm_count = 132})
    assert.are.equal(1376, o2.ctas)
    assert.is_nil(o2.persistent)
    -- options given win over the pick
    local _, o3 = tc.auto_tensorize(f, "wgmma", nil, {BN = 128, epilogue = "D"})
    assert.are.same({128, 3, "options given"}, {o3.BN, o3.stages, o3.config})
  end)

  it("on 1 SM a 128 x 512 x 512 GEMM gets the persistent TMA-store pick (one CTA, two tiles): bit-exact on the simulator", function()
    local f = tc.workload(128, 512, 512, "float16", "float16", nil, "NT")
    local sch, o = tc.auto_tensorize(f, "wgmma", nil, {epilogue = "D", sm_count = 1})
    assert.are.same({1, 3, "tma"}, {o.ctas, o.stages, o.epilogue_store})
    local mod = tir.build(sch.mod, "cuda -arch=sm_90a", {compile = false})
    local rep = tir.simulate(mod, tir.testing.random_args(f, 7), {reference = f, rtol = 0, atol = 0})
    assert.are.equal(0, rep.n_issues)
    assert.are.equal(1, rep.ctas)
    assert.are.equal(2 * 2 * (512 // 64), rep.tma_copies) -- 2 tiles, A and B per k step
  end)

  it("rejects a conflicting intrin and unknown options with clear errors", function()
    local f = tc.workload(256, 256, 512, "float16", "float16", nil, "NT")
    U.expect_error(function() tc.auto_tensorize(f, "wgmma", nil, {intrin = "mma"}) end, "tc_gemm.auto_tensorize", "leave intrin out")
    U.expect_error(function() tc.auto_tensorize(f, "wgmma", nil, {warp_m = 64}) end, "tc_gemm.auto_tensorize", "warp_m")
    U.expect_error(function() tc.auto_tensorize(f, "wgmma", 3) end, "block must be a block name")
  end)
end)

describe("tc_gemm.persistent_grid", function()
  it("gives persistent_tiles' CTA count and row group", function()
    assert.are.same({128, 8}, {tc.persistent_grid(32, 16, 132)})
    assert.are.same({86, 2}, {tc.persistent_grid(32, 43, 132)})
    U.expect_error(function() tc.persistent_grid(0, 4, 132) end, "tc_gemm.persistent_grid", "positive integers")
  end)
end)
