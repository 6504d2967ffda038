-- persistent_tail_spec.lua -- tc_gemm_wgmma persistent_tail = true and its pass
-- (src/core/transform/lower_persistent_tail.c): a persistent grid of `persistent` CTAs when that
-- count does not divide the tile count; the last round's spare CTAs compute the last tile again.
-- The lowered kernels run on the simulator bit-exactly against the interpreter on the
-- unscheduled workload; the CTA and TMA copy counts show the re-gridded launch; bad uses are
-- refused with the option or the loop named.
local tir = require("tir")
local U = require("spec_util")
local tc = require("tir.schedules.tc_gemm")

local asan = os.getenv("ASAN_OPTIONS") ~= nil

local function sched(M, N, K, o)
  local f = tc.workload(M, N, K, "float16", "float16", nil, "NT")
  local opts = {intrin = "wgmma", epilogue = "D", BM = 128, BN = N, BK = 64, tma = true, persistent_tail = true}
  for k, v in pairs(o) do opts[k] = v end
  return f, tc.schedule(f, opts)
end

local function rand_args(f, seed)
  local args = tir.testing.random_args(f, seed)
  for i, a in ipairs(args) do a:fill_random(seed * 7 + i, -1, 1) end
  return args
end

describe("persistent_tail (lower_persistent_tail)", function()
  -- {M, N, K, options, CTAs launched, tile slots (CTAs x rounds)}: T = M / 128 tiles
  local cases = {
    {"7 tiles on 4 CTAs (the divisor grid: 1 CTA of 7 rounds), warp-specialized, TMA-store epilogue", 896, 256, 128,
     {persistent = 4, warp_specialize = true, epilogue_store = "tma", stages = 2}, 4, 8},
    {"10 tiles on 4 CTAs (divisor grid: 2 CTAs of 5), warp-specialized, the fragments' direct store", 1280, 256, 128,
     {persistent = 4, warp_specialize = true, stages = 2}, 4, 12},
    {"10 tiles on 4 CTAs, no warp specialization, one k step, TMA-store epilogue", 1280, 128, 64,
     {persistent = 4, stages = 1, wgmma_pending = 0, epilogue_store = "tma"}, 4, 12},
  }
  if asan then cases = {cases[1]} end
  for _, c in ipairs(cases) do
    it(c[1] .. ": bit-exact on the simulator, the launch re-gridded", function()
      local f, sch = sched(c[2], c[3], c[4], c[5])
      assert.truthy(tostring(sch.mod):find('"persistent_tail"%] = 4'))
      local mod = tir.build(sch.mod, "cuda -arch=sm_90a", {compile = false})
      assert.truthy(mod:get_source("cuda"):find("min%(")) -- the tile number clamped to the last tile
      local rep = tir.simulate(mod, rand_args(f, 3), {reference = f})
      assert.are.equal(0, rep.n_issues)
      assert.are.equal(c[6], rep.ctas)
      assert.are.equal(c[7] * (c[4] // 64) * 2, rep.tma_copies) -- A and B per k step and tile slot (the repeats too)
    end)
  end

  it("a strided 1x1 implicit GEMM (A by TMA im2col, warp-specialized, TMA store): 7 tiles on 3 CTAs, bit-exact on the simulator", function()
    local ct = require("tir.schedules.conv2d_tc")
    local f, info = ct.workload{N = 7, H = 16, W = 16, C = 128, F = 128, R = 1, S = 1, stride = 2, weight_layout = "FK"}
    local sch = ct.schedule(f, {variant = "implicit", intrin = "wgmma", BM = 64, BN = 128, BK = 64, stages = 2, wgmma_pending = 1, tma = true,
                                warp_specialize = true, epilogue_store = "tma", persistent = 3, persistent_tail = true,
                                a_im2col = ct.im2col_geometry(info)})
    local rep = tir.simulate(tir.build(sch.mod, "cuda -arch=sm_90a", {compile = false}), rand_args(f, 4), {reference = f, rtol = 1e-3, atol = 1e-3})
    assert.are.equal(0, rep.n_issues)
    assert.are.equal(3, rep.ctas)
  end)

  it("no annotation where the divisor grid takes no more rounds (6 tiles, 4 CTAs wanted: 3 CTAs of 2 rounds)", function()
    local f, sch = sched(768, 256, 128, {persistent = 4, warp_specialize = true, epilogue_store = "tma", stages = 2})
    assert.falsy(tostring(sch.mod):find("persistent_tail"))
    local rep = tir.simulate(tir.build(sch.mod, "cuda -arch=sm_90a", {compile = false}), rand_args(f, 5), {reference = f})
    assert.are.equal(0, rep.n_issues)
    assert.are.equal(3, rep.ctas)
  end)

  it("refuses persistent_tail without persistent, with a cluster, and a misplaced or malformed annotation", function()
    U.expect_error(function() sched(896, 256, 128, {stages = 2}) end, "ValueError in tc_gemm.schedule",
                   "persistent_tail = true needs persistent")
    U.expect_error(function() sched(1024, 256, 128, {persistent = 4, warp_specialize = true, stages = 2, cluster = {2, 1}}) end,
                   "persistent_tail = true with cluster", "multicast")
    -- the annotation on a loop that is not the tile loop under blockIdx.x: the pass names it
    local f = tc.workload(256, 128, 128, "float16", "float16", nil, "NT")
    local sch = tc.schedule(f, {intrin = "wgmma", epilogue = "D", BM = 128, BN = 128, BK = 64, tma = true, stages = 2})
    local k = {sch:get_loops(sch:get_block("A_shared"))}
    sch:annotate(k[#k - 2], "persistent_tail", 4)
    U.expect_error(function() tir.build(sch.mod, "cuda -arch=sm_90a", {compile = false}) end, "lower_persistent_tail",
                   "not the body of a blockIdx.x loop")
    local _, s2 = sched(896, 256, 128, {persistent = 4, stages = 2})
    local lp = {s2:get_loops(s2:get_block("A_shared"))}
    s2:annotate(lp[2], "persistent_tail", 0)
    U.expect_error(function() tir.build(s2.mod, "cuda -arch=sm_90a", {compile = false}) end, "lower_persistent_tail",
                   "must be a positive integer")
  end)
end)
