-- tc_gemm_options_spec.lua -- the options of tc_gemm that shape its speed (issue 12): grouped
-- CTA order (group_m), the full-sector fp16 epilogue store, 8-warp 128x256 / 256x128 tiles,
-- swizzled tiles with fragment pipelining; each against the interpreter in the simulator, and
-- the code each one is meant to produce.
local tir = require("tir")
local T = tir.script
local tc = require("tir.schedules.tc_gemm")

local asan = os.getenv("ASAN_OPTIONS") ~= nil

local function sim_equal(f, sch)
  local mod = tir.build(sch.mod or sch, "cuda", {compile = false})
  local rep = tir.simulate(mod, tir.testing.random_args(f, 5), {reference = f})
  assert.are.equal(0, rep.n_issues)
  assert.are.equal(0, rep.races)
  return rep, mod
end

local small = {BM = 32, BN = 32, BK = 32, warp_m = 16, warp_n = 16}
local function with(o)
  local r = {}
  for k, v in pairs(small) do r[k] = v end
  for k, v in pairs(o) do r[k] = v end
  return r
end

describe("tc_gemm group_m (grouped CTA order)", function()
  it("uses one grid dimension and walks G M tiles per N tile; results equal the interpreter", function()
    local f = tc.workload(256, 128, 64, "float16", "float16")
    local rep, mod = sim_equal(f, tc.schedule(f, with({group_m = 4, stages = 2, epilogue = "D"})))
    assert.are.equal(32, rep.ctas)
    local k = mod:kernels()[1]
    assert.are.equal(32, k.grid[1])
    assert.are.equal(1, k.grid[2])
    -- CTA b: M tile (b // (4 * 4)) * 4 + b % 4, N tile (b // 4) % 4: A's offset (32 rows of 64 per
    -- M tile) in the CUDA C
    local src = mod:get_source("cuda")
    assert.matches("%(%(int%)blockIdx.x%) / 16%) %* 8192%)", src)
    assert.matches("%(%(int%)blockIdx.x%) %% 4%) %* 2048%)", src)
  end)

  it("takes the largest divisor of the M tile count not above G", function()
    -- 3 M tiles: group_m = 2 becomes 1 (the plain 2-D grid), group_m = 3 groups all three
    local f = tc.workload(96, 64, 64, "float16")
    local _, m1 = sim_equal(f, tc.schedule(f, with({group_m = 2})))
    assert.are.equal(3, m1:kernels()[1].grid[2])
    local _, m3 = sim_equal(f, tc.schedule(f, with({group_m = 3, stages = 2})))
    assert.are.equal(6, m3:kernels()[1].grid[1])
    assert.are.equal(1, m3:kernels()[1].grid[2])
  end)
end)

describe("tc_gemm's fused fp16 epilogue", function()
  it("stores whole 32-byte sectors: a word transpose in each quad, one 16-byte store per lane", function()
    local f = tc.workload(64, 64, 64, "float16", "float16")
    local _, mod = sim_equal(f, tc.schedule(f, with({epilogue = "D"})))
    local src = mod:get_source("cuda")
    assert.matches("__shfl_xor_sync%(0xffffffffu, s0_, 2%)", src)
    assert.matches("%*%(uint4%*%)%(p_ %+", src)
    assert.is_falsy(src:find("*(__half2*)(p_ + o_)", 1, true))
  end)

  it("keeps 4-byte stores when the row stride does not allow 16-byte ones, with the same results", function()
    local function kernel(ld)
      return T.prim_func("st", {O = T.Buffer({16 * ld}, "float16")}, function(O)
        local bx = T.launch_thread("blockIdx.x", 1)
        local tx = T.launch_thread("threadIdx.x", 32)
        local W = T.allocate({256}, "float32", "warp")
        for j in T.serial(8) do W[{j}] = T.cast("float32", tx * 8 + j) end
        T.evaluate(T.call("void", "mma_store", T.address_of(W[{0}]), T.address_of(O[{0}]), ld))
      end)
    end
    for _, ld in ipairs({20, 24}) do
      local k = kernel(ld)
      local src = tir.build(k, "cuda", {compile = false}):get_source("cuda")
      if ld == 20 then
        assert.is_truthy(src:find("*(__half2*)(p_ + o_)", 1, true))
        assert.is_falsy(src:find("uint4", 1, true))
      else
        assert.is_truthy(src:find("*(uint4*)(p_ +", 1, true))
      end
      local o = tir.nd.empty({16 * ld}, "float16")
      assert.are.equal(0, tir.simulate(k, {o}).n_issues)
      local got = o:to_table()
      for l = 0, 31 do
        for j = 0, 7 do
          local r, c = l // 4 + 8 * ((j % 4) // 2), 8 * (j // 4) + 2 * (l % 4) + j % 2
          assert.are.equal(l * 8 + j, got[r * ld + c + 1])
        end
      end
    end
  end)
end)

describe("tc_gemm 8-warp tiles and swizzled pipelines", function()
  it("128x256 and 256x128 CTAs of 8 warps of 64x64 give the interpreter's results", function()
    if asan then
      pending("the sanitizer build simulates the small tiles only")
      return
    end
    for _, t in ipairs({{128, 256}, {256, 128}}) do
      local f = tc.workload(t[1], t[2], 64, "float16", "float16")
      local rep = sim_equal(f, tc.schedule(f, {BM = t[1], BN = t[2], BK = 32, stages = 2, swizzle = true, epilogue = "D"}))
      assert.are.equal(1, rep.ctas)
    end
  end)

  it("swizzled tiles with fragment double-buffering (frag_pipeline) and grouped order", function()
    local f = tc.workload(128, 128, 96, "float16", "float16")
    sim_equal(f, tc.schedule(f, {BM = 32, BN = 64, BK = 32, warp_m = 16, warp_n = 32, stages = 3, swizzle = true,
                                 frag_pipeline = true, group_m = 2, epilogue = "D"}))
  end)
end)
