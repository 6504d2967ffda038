-- wgmma_int8_spec.lua -- 8-bit integer GEMMs on Hopper's wgmma (PTX ISA 9.7.15): the four
-- m64nNk32 rows (.atype, .btype each .s8 or .u8 into .s32, PTX ISA 9.7.15.5.2), tc_gemm with
-- intrin = "wgmma" on tc.workload(M, N, K, int8 | uint8 | {A, B}, "int32", pad, "NT") -- A M x K,
-- B N x K, both K-major as wgmma's 8-bit operands must be (PTX ISA 9.7.15.5.1) -- at exact and
-- padded (any M, N, K) shapes: interpreter-equivalent and simulator bit-exact against the
-- interpreter on inputs over the types' whole ranges; the generated instruction names the types.
local tir = require("tir")
local U = require("spec_util")
local tc = require("tir.schedules.tc_gemm")

local asan = os.getenv("ASAN_OPTIONS") ~= nil

-- inputs over the whole range of int8 / uint8 (the int32 sums of 256 products of 255 * 127 fit)
local function args_for(f, seed)
  local out = {}
  for i, p in ipairs(f.params) do
    local shape = {}
    for d = 1, #p.shape do shape[d] = p.shape[d].value end
    local lo, hi = ({int8 = -128, uint8 = 0})[p.dtype], ({int8 = 127, uint8 = 255})[p.dtype]
    out[i] = tir.nd.random(shape, p.dtype, tir.nd.cpu(), {seed = seed * 31 + i, low = lo or -1000, high = hi or 1000})
  end
  return out
end

local function row(name)
  for _, r in ipairs(tir.core.mma_configs()) do if r.name == name then return r end end
end

describe("the integer wgmma rows", function()
  it("are the four s8/u8 combinations m64nNk32 into s32, with the .s32 N steps", function()
    for _, n in ipairs({"m64nNk32.s8.s8.s32", "m64nNk32.u8.s8.s32", "m64nNk32.s8.u8.s32", "m64nNk32.u8.u8.s32"}) do
      local r = row(n)
      assert.is_not_nil(r, n)
      assert.are.equal("wgmma", r.family)
      assert.are.equal(32, r.k)
      assert.are.equal("int32", r.c)
      assert.are.equal(18, #r.n_valid)
    end
    assert.are.equal("uint8", row("m64nNk32.u8.s8.s32").a)
    assert.are.equal("int8", row("m64nNk32.u8.s8.s32").b)
  end)
end)

describe("tc_gemm intrin = \"wgmma\" on 8-bit integers", function()
  local cases = {
    -- dtype, {M, N, K}, pad, options
    {"int8", {128, 128, 256}, nil, {BM = 128, BN = 128, BK = 128, stages = 2}},
    {{"uint8", "int8"}, {128, 64, 256}, nil, {BM = 128, BN = 64, BK = 128, stages = 2}},
    {{"int8", "uint8"}, {64, 64, 128}, nil, {BM = 64, BN = 64, BK = 64, stages = 2}},      -- 64-byte swizzle
    {"uint8", {64, 64, 128}, nil, {BM = 64, BN = 64, BK = 32, stages = 1}},                -- 32-byte swizzle, no pipeline
    {"int8", {100, 72, 200}, {64, 64, 128}, {BM = 64, BN = 64, BK = 128, stages = 2}},     -- padded: odd M, N, K
    {{"uint8", "int8"}, {130, 40, 60}, {128, 32, 64}, {BM = 128, BN = 32, BK = 64, stages = 3}},
  }
  if not asan then cases[#cases + 1] = {"int8", {64, 256, 256}, nil, {BM = 64, BN = 256, BK = 128, stages = 2}} end
  for _, c in ipairs(cases) do
    local dt = type(c[1]) == "table" and (c[1][1] .. " x " .. c[1][2]) or c[1]
    it(("%s %dx%dx%d%s BM=%d BN=%d BK=%d stages=%d: interpreter-equivalent, simulator bit-exact"):format(dt, c[2][1], c[2][2], c[2][3],
       c[3] and " (padded)" or "", c[4].BM, c[4].BN, c[4].BK, c[4].stages), function()
      local f = tc.workload(c[2][1], c[2][2], c[2][3], c[1], "int32", c[3], "NT")
      local o = {intrin = "wgmma"}
      for k, v in pairs(c[4]) do o[k] = v end
      local sch = tc.schedule(f, o)
      U.assert_equiv(f, sch.mod, {trials = 1, rtol = 0, atol = 0})
      local mod = tir.build(sch.mod, "cuda -arch=sm_90a", {compile = false})
      local rep = tir.simulate(mod, args_for(f, 3), {reference = f})
      assert.are.equal(0, rep.n_issues)
      assert.are.equal(0, rep.races)
      assert.is_true(rep.warp_ops > 0)
      -- the instruction names A's and B's types (PTX ISA 9.7.15.5.2: .s32.atype.btype)
      local ta = ({int8 = "s8", uint8 = "u8"})[type(c[1]) == "table" and c[1][1] or c[1]]
      local tb = ({int8 = "s8", uint8 = "u8"})[type(c[1]) == "table" and c[1][2] or c[1]]
      assert.matches(("wgmma%%.mma_async%%.sync%%.aligned%%.m64n%dk32%%.s32%%.%s%%.%s"):format(c[4].BN, ta, tb), mod:get_source("cuda"))
    end)
  end

  it("gives each s8/u8 pair its own intrinsic: the four pairs at one N and BK in one process", function()
    for _, dt in ipairs({{"int8", "uint8"}, {"uint8", "int8"}, "uint8", "int8"}) do
      local f = tc.workload(64, 64, 64, dt, "int32", nil, "NT")
      local sch = tc.schedule(f, {intrin = "wgmma", BM = 64, BN = 64, BK = 64, stages = 1})
      local rep = tir.simulate(tir.build(sch.mod, "cuda -arch=sm_90a", {compile = false}), args_for(f, 5), {reference = f})
      assert.are.equal(0, rep.n_issues)
    end
  end)

  it("refuses tma = true and a fused epilogue on the padded workload, and types no row has", function()
    local f = tc.workload(100, 72, 200, "int8", "int32", {64, 64, 128}, "NT")
    U.expect_error(function() tc.schedule(f, {intrin = "wgmma", BM = 64, BN = 64, BK = 128, tma = true}) end, "tc_gemm.schedule",
                   "tma = true needs M, N, K multiples of the tiles")
    local h = tc.workload(100, 72, 200, "float16", "float16", {64, 64, 64}, "NT")
    U.expect_error(function() tc.schedule(h, {intrin = "wgmma", BM = 64, BN = 64, BK = 64, epilogue = "D"}) end,
                   "its write-back kernel", "leave epilogue out")
    U.expect_error(function() tc.schedule(tc.workload(128, 128, 256, "int8", "int32", {128, 100, 128}, "NT"),
                   {intrin = "wgmma", BM = 128, BN = 128, BK = 128}) end, "N = 200 is not a multiple of BN = 128")
    local mixed = tc.workload(128, 128, 128, {"float16", "int8"}, nil, nil, "NT")
    U.expect_error(function() tc.schedule(mixed, {intrin = "wgmma", BK = 64}) end, "float16 x int8 into float32", "does not run")
  end)
end)
