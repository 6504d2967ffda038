-- tc_gemm_options_spec.lua -- the options of tc_gemm that shape its speed (issue 12): grouped
-- CTA order (group_m), the full-sector fp16 epilogue store, 8-warp 128x256 / 256x128 tiles,
-- swizzled tiles with fragment pipelining; each against the interpreter in the simulator, and
-- the code each one is meant to produce.
local tir = require("tir")
local T = tir.script
local tc = require("tir.schedules.tc_gemm")
local U = require("spec_util")

local asan = os.getenv("ASAN_OPTIONS") ~= nil

local function sim_equal(f, sch) return U.sim_equal(f, sch, 5) end

-- the text of the CUDA C's k-tile loop (the steady state)
local function k_loop(src)
  local at = assert(src:find("for (int k_0", 1, true))
  local indent = src:sub(1, at):match("\n( *)[^\n]*$")
  return src:sub(at, assert(src:find("\n" .. indent .. "}", at, true)))
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

  it("frag_prefetch: the next tile's first fragments load after the one wait and barrier, during this tile's last mma", function()
    -- before (frag_pipeline): each tile's first fragments wait for the barrier at the top of its
    -- k step; after: the steady state is [copies, the tile's fragments 1.. and mma 0.., wait,
    -- barrier, the next tile's fragments 0, mma(last)], one barrier, fragments not versioned twice
    for _, c in ipairs({{BK = 32, stages = 3}, {BK = 64, stages = 4}, {BK = 32, stages = 4}}) do
      local f = tc.workload(64, 64, 512, "float16", "float16")
      local sch = tc.schedule(f, {BM = 32, BN = 64, BK = c.BK, warp_m = 16, warp_n = 32, stages = c.stages, frag_prefetch = true,
                                  group_m = 2, epilogue = "D"})
      local rep, mod = sim_equal(f, sch)
      assert.are.equal(0, rep.races)
      local src = mod:get_source("cuda")
      local loop = k_loop(src)
      assert.are.equal(1, select(2, loop:gsub("__syncthreads", "")))
      assert.are.equal(1, select(2, loop:gsub("tir_cp_async_wait<" .. (c.stages - 2) .. ">", "")))
      local bar = loop:find("__syncthreads", 1, true)
      assert.truthy(loop:find("ldmatrix", bar, true) and loop:find("tir_mma_m16n8k16", bar, true))
      assert.truthy(loop:find("tir_mma_m16n8k16", 1, true) < bar)
      assert.truthy(src:find("half A_shared_warp[" .. (2 * 16 * 16 // 32 * 1) .. "]", 1, true), src:match("half A_shared_warp[^\n]*"))
      if c.stages == 3 then assert.is_nil(tir.build(sch.mod, "cuda -arch=sm_80"):get_source("ptx"):find("ld%.local")) end
    end
    -- a padded workload (staged A_pad / B_pad tiles, predicated copies) and split-K 3 on it
    -- (against the scheduled function: the slices add in another order than the plain sum)
    local g = tc.workload(40, 100, 200, "float16", "float16", {32, 64, 96})
    local sg = tc.schedule(g, {BM = 32, BN = 64, BK = 32, warp_m = 16, warp_n = 32, stages = 3, split_k = 3, frag_prefetch = true})
    local rg = tir.simulate(tir.build(sg.mod, "cuda", {compile = false}), tir.testing.random_args(g, 5), {reference = sg.mod})
    assert.are.same({0, 0}, {rg.n_issues, rg.races})
  end)

  it("copy_order: the next stage's copies after the second k step's fragment loads (CUTLASS's place), same results", function()
    -- top (before): [copies, loads 1, mma 0, ...]; step: [loads 1, copies, mma 0, ...]; spread: A's
    -- copies after loads 1, B's after loads 2 (two commit groups a tile).  The tiles keep their
    -- stages' versions, one barrier and one wait a tile; the simulator agrees with the interpreter
    for _, c in ipairs({{"step", 64, 3}, {"spread", 64, 3}, {"step", 128, 4}, {"spread", 64, 4}}) do
      local f = tc.workload(64, 64, c[2] * 8, "float16", "float16")
      local sch = tc.schedule(f, {BM = 32, BN = 64, BK = c[2], warp_m = 16, warp_n = 32, stages = c[3], frag_prefetch = true,
                                  copy_order = c[1], group_m = 2, epilogue = "D"})
      local rep, mod = sim_equal(f, sch)
      assert.are.equal(0, rep.races)
      local src = mod:get_source("cuda")
      local loop = k_loop(src)
      assert.are.equal(1, select(2, loop:gsub("__syncthreads", "")), loop)
      local groups = c[1] == "spread" and 2 or 1
      assert.are.equal(groups, select(2, loop:gsub("tir_cp_async_commit", "")))
      -- one wait: the tile after next may stay in flight (stages - 2 tiles' groups)
      assert.are.equal(1, select(2, loop:gsub("tir_cp_async_wait<" .. (groups * (c[3] - 2)) .. ">", "")), loop)
      -- the tiles keep one version per stage (the copies still precede the tile's last loads)
      assert.truthy(tostring(tir.lower(sch.mod)):find(('T.allocate({%d}, "float16", {scope = "shared"'):format(c[3] * 32 * c[2]), 1, true))
      -- the first ldmatrix of the loop comes before its first cp.async, the first mma after it
      local ld, cp, mm = loop:find("ldmatrix", 1, true), loop:find("tir_cp_async<", 1, true), loop:find("tir_mma_m16n8k16", 1, true)
      assert.truthy(ld < cp and cp < mm, loop)
    end
    -- the default ("step" for BK 64) on a padded workload (predicated copies of A_pad / B_pad) in 2 split-K slices
    local g = tc.workload(40, 100, 500, "float16", "float16", {32, 64, 128})
    local sg = tc.schedule(g, {BM = 32, BN = 64, BK = 64, warp_m = 16, warp_n = 32, stages = 3, split_k = 2, frag_prefetch = true})
    local rg = tir.simulate(tir.build(sg.mod, "cuda", {compile = false}), tir.testing.random_args(g, 5), {reference = sg.mod})
    assert.are.same({0, 0}, {rg.n_issues, rg.races})
    U.expect_error(function()
      tc.schedule(tc.workload(64, 64, 512, "float16"), {BM = 32, BN = 64, BK = 32, warp_m = 16, warp_n = 32, stages = 3, frag_prefetch = true,
                                                        copy_order = "step"})
    end, "tc_gemm.schedule", "copy_order = \"step\"", "at least 4 instruction k steps", "here 2 of k16")
    U.expect_error(function() tc.schedule(tc.workload(64, 64, 512, "float16"), {copy_order = "late"}) end, "copy_order", "\"spread\"")
  end)

  it("unroll_stages: the k-tile loop unrolled by its stage count, every stage offset a constant; same results", function()
    -- 8 or 9 tiles of BK 64, 3 stages: a steady state of 6 (two rounds of 3) or 7 (one instance left over)
    for _, c in ipairs({{512, "top", 3}, {576, "step", 3}, {768, "spread", 4}, {512, "top", 2}}) do
      local f = tc.workload(64, 64, c[1], "float16", "float16")
      local o = {BM = 32, BN = 64, BK = 64, warp_m = 16, warp_n = 32, stages = c[3], frag_prefetch = c[3] >= 3, unroll_stages = true,
                 group_m = 2, epilogue = "D"}
      if c[3] >= 3 then o.copy_order = c[2] end
      local rep, mod = sim_equal(f, tc.schedule(f, o))
      assert.are.equal(0, rep.races)
      local src = mod:get_source("cuda")
      -- no stage register, no "% 3": the offsets are constants; the loop runs tiles // stages rounds
      assert.is_nil(src:find("_stage[", 1, true))
      assert.is_nil(src:find("%% " .. c[3] .. "%)"))
      local steady = c[1] // 64 - (c[3] - 1)
      assert.truthy(src:find(("for (int k_0 = 0; k_0 < %d; ++k_0)"):format(steady // c[3]), 1, true), src)
    end
  end)

  it("auto_tensorize takes 256 x 128 tiles of 8 warps with frag_prefetch for GEMMs of 3 waves or more (measured)", function()
    local function pick(m, n, k, sms, extra)
      local o = {sm_count = sms, tuned = false, epilogue = "D"}
      for key, v in pairs(extra or {}) do o[key] = v end
      local sch, c = tc.auto_tensorize(tc.workload(m, n, k, "float16", "float16"), "mma.m16n8k16", nil, o)
      return c, sch
    end
    local c = pick(4096, 4096, 4096, 132)
    assert.are.same({256, 128, 64, 64, 64, 3, true, 512}, {c.BM, c.BN, c.BK, c.warp_m, c.warp_n, c.stages, c.frag_prefetch, c.ctas})
    assert.are.equal(32, pick(4096, 4096, 160, 132).BK) -- K = 160: not 3 steps of 64
    assert.are.same({128, 128}, {pick(2048, 2048, 2048, 132).BM, pick(2048, 2048, 2048, 132).BN}) -- 128 tiles of 256 x 128: one wave
    assert.is_nil(pick(4096, 4096, 4096, 132, {stages = 4}).frag_prefetch) -- the caller's pipeline
    -- the same pick on a small GEMM (sm_count 1 makes 4 CTAs 3 waves) is the GEMM, lane by lane
    local c2, sch = pick(512, 256, 96, 1)
    assert.are.same({256, 128, true}, {c2.BM, c2.BN, c2.frag_prefetch})
    sim_equal(tc.workload(512, 256, 96, "float16", "float16"), sch)
  end)

  it("frag_prefetch with wmma fragments, IMMA (two k32 steps a tile) and bf16: the simulator agrees", function()
    for _, c in ipairs({{"wmma", "float16", 32}, {"mma", "int8", 64}, {"mma", "bfloat16", 32}}) do
      local dt = c[2]
      local f = tc.workload(64, 64, 512, dt, dt ~= "int8" and "float16" or nil)
      local sch = tc.schedule(f, {intrin = c[1], BM = 32, BN = 64, BK = c[3], warp_m = 16, warp_n = 32, stages = 3, frag_prefetch = true,
                                  epilogue = dt ~= "int8" and "D" or nil})
      local rep = tir.simulate(tir.build(sch.mod, "cuda -arch=sm_80", {compile = false}), tir.testing.random_args(f, 2), {reference = sch.mod})
      assert.are.same({0, 0}, {rep.n_issues, rep.races})
    end
    U.expect_error(function()
      tc.schedule(tc.workload(64, 64, 384, "int8"), {BM = 32, BN = 64, BK = 96, warp_m = 16, warp_n = 32, stages = 3, frag_prefetch = true})
    end, "BK = 96 has 3 k32 steps")
  end)

  it("frag_prefetch refuses what it cannot pipeline, naming why", function()
    local f = tc.workload(64, 64, 384, "float16", "float16")
    local base = {BM = 32, BN = 64, warp_m = 16, warp_n = 32, frag_prefetch = true}
    U.expect_error(function() tc.schedule(f, U.merge(base, {BK = 32, stages = 2})) end, "tc_gemm.schedule", "frag_prefetch = true needs",
                   "stages = 2")
    U.expect_error(function() tc.schedule(f, U.merge(base, {BK = 48, stages = 3})) end, "BK = 48 has 3 k16 steps")
    U.expect_error(function() tc.schedule(f, U.merge(base, {BK = 32, stages = 3, early_wait = false})) end, "early_wait = false")
  end)
end)

describe("tc_gemm's shared layout choice", function()
  local function lowered(f, o) return tostring(tir.lower(tc.schedule(f, o).mod)) end

  it("swizzles 16-bit mma tiles by default, pads when pad is given, and int8 / wmma stay padded", function()
    local f = tc.workload(64, 64, 64, "float16")
    assert.is_truthy(lowered(f, with({})):find("swizzle = ", 1, true))
    assert.is_falsy(lowered(f, with({pad = true})):find("swizzle = ", 1, true))
    assert.is_falsy(lowered(f, with({pad = false})):find("swizzle = ", 1, true))
    assert.is_falsy(lowered(f, with({intrin = "wmma"})):find("swizzle = ", 1, true))
    local g = tc.workload(64, 64, 128, "int8")
    assert.is_falsy(lowered(g, with({BK = 64})):find("swizzle = ", 1, true))
    assert.is_truthy(lowered(g, with({BK = 64, swizzle = true})):find("swizzle = ", 1, true))
  end)

  it("refuses swizzle with wmma and swizzle together with pad", function()
    local f = tc.workload(64, 64, 64, "float16")
    local ok, e = pcall(tc.schedule, f, with({intrin = "wmma", swizzle = true}))
    assert.is_false(ok)
    assert.matches("swizzle = true needs intrin = \"mma\"", tostring(e))
    ok, e = pcall(tc.schedule, f, with({swizzle = true, pad = true}))
    assert.is_false(ok)
    assert.matches("two layouts of the shared tiles", tostring(e))
  end)

  it("padded rows split half of the cp.async sectors across shared sectors; swizzled ones none (the simulator's counters)", function()
    local f = tc.workload(128, 128, 128, "float16", "float16")
    local pad = sim_equal(f, tc.schedule(f, {stages = 4, pad = true, epilogue = "D"}))
    local swz = sim_equal(f, tc.schedule(f, {stages = 4, epilogue = "D"}))
    for _, r in ipairs({pad, swz}) do
      -- 4 warps x 8 copies per k step x 4 k steps, each a warp's 512 contiguous bytes = 16 sectors
      assert.are.equal(128, r.cp_async_requests)
      assert.are.equal(16 * 128, r.cp_async_sectors)
    end
    assert.are.equal(8 * 128, pad.cp_async_split)
    assert.are.equal(0, swz.cp_async_split)
  end)

  it("computes shared addresses of ldmatrix and cp.async in 32-bit shared-window arithmetic", function()
    local f = tc.workload(64, 64, 64, "float16")
    local src = tir.build(tc.schedule(f, with({stages = 2})).mod, "cuda", {compile = false}):get_source("cuda")
    assert.matches("unsigned a_ = %(tir_smem_addr%(A_shared%) %+ %(unsigned%)%(", src)
    assert.matches("tir_cp_async<16>%(%(tir_smem_addr%(", src)
    assert.is_falsy(src:find("__cvta_generic_to_shared((A_shared", 1, true))
  end)
end)
