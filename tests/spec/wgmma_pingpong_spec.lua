-- wgmma_pingpong_spec.lua -- tc_gemm_wgmma's ping-pong consumers (pingpong = true: two consumer
-- warpgroups, each computing whole 64-row tiles, take the tiles of the persistent grid in turn, so
-- one's epilogue runs while the other's main loop issues wgmma; CUTLASS's
-- KernelTmaWarpSpecializedPingpong).  inject_warp_specialization's teams (warp_specialize's fourth
-- value) and inject_tma_pipeline's per-tile stage release.  Simulator bit-exact against the
-- interpreter on the unscheduled workload (int8 and fp16, tile counts that the two warpgroups
-- split evenly, unevenly and not at all); a planted missing order barrier is reported; bad
-- inputs are clear errors.
local tir = require("tir")
local U = require("spec_util")
local tc = require("tir.schedules.tc_gemm")

local asan = os.getenv("ASAN_OPTIONS") ~= nil

local function sched(M, N, K, dtype, o)
  local f = tc.workload(M, N, K, dtype, dtype == "float16" and (o.epilogue and "float16" or "float32") or "int32", nil, "NT")
  local opts = {intrin = "wgmma", tma = true, warp_specialize = true, pingpong = true}
  for k, v in pairs(o) do opts[k] = v end
  return f, tc.schedule(f, opts)
end

describe("tc_gemm intrin = \"wgmma\", pingpong = true", function()
  -- {M, N, K, dtype, options, CTAs}: tiles a CTA = E; E even, odd, E = 1 (the second warpgroup idle)
  local cases = {
    {256, 256, 256, "int8", {BM = 64, BN = 128, BK = 128, stages = 2, persistent = 2}, 2},      -- E = 4
    {384, 256, 256, "int8", {BM = 64, BN = 128, BK = 128, stages = 2, persistent = 4}, 4},      -- E = 3
    {256, 512, 384, "int8", {BM = 64, BN = 256, BK = 128, stages = 3, persistent = 4}, 4},      -- E = 2, 3 k steps
    {128, 256, 256, "float16", {BM = 64, BN = 128, BK = 64, stages = 3, persistent = 2, epilogue = "D"}, 2},
    {128, 128, 128, "int8", {BM = 64, BN = 128, BK = 64, stages = 2, persistent = 2, wgmma_pending = 0}, 2}, -- E = 1
  }
  if asan then cases = {cases[2]} end
  for _, c in ipairs(cases) do
    it(("%s %dx%dx%d BM=%d BN=%d BK=%d stages=%d G=%d%s: simulator bit-exact against the interpreter"):format(c[4], c[1], c[2], c[3],
       c[5].BM, c[5].BN, c[5].BK, c[5].stages, c[6], c[5].wgmma_pending == 0 and " wgmma_pending=0" or ""), function()
      local f, sch = sched(c[1], c[2], c[3], c[4], c[5])
      local mod = tir.build(sch.mod, "cuda -arch=sm_90a", {compile = false})
      local k = mod:kernels()[1]
      assert.are.equal(c[6], k.grid[1])
      assert.are.same({128, 3, 1}, {k.block[1], k.block[2], k.block[3]}) -- two consumer warpgroups and the producer
      local rep = tir.simulate(mod, tir.testing.random_args(f, 5), {reference = f})
      assert.are.equal(0, rep.n_issues)
      local tiles = (c[1] // 64) * (c[2] // c[5].BN)
      assert.are.equal(tiles * 2 * (c[3] // c[5].BK), rep.tma_copies) -- one copy per operand, tile and k step
      -- each warpgroup's own code (barrier ids are constants): the order chain and the team barriers
      local src = mod:get_source("cuda")
      assert.are.equal(2, U.count(src, "setmaxnreg%.inc"))
      local E = tiles // c[6]
      if E > 1 then
        assert.is_truthy(src:find("bar.sync 3, ", 1, true)) -- warpgroup 1 waits for warpgroup 0's main loop
        assert.is_truthy(src:find("bar.arrive 3, ", 1, true))
      end
    end)
  end

  it("reports a planted missing order barrier: the second warpgroup would pass a stage's parity wait two phases early", function()
    local f, sch = sched(256, 256, 256, "int8", {BM = 64, BN = 128, BK = 128, stages = 2, persistent = 2})
    local low = tir.lower(sch.mod)
    -- (ptx_bar_sync #1: warpgroup 0's wait, #2: warpgroup 1's, before its first tile's main loop)
    U.expect_error(function() tir.simulate(U.drop_call(low, "ptx_bar_sync", 2), tir.testing.random_args(f, 1)) end,
                   "SimulationError", "reads A_shared", "before the mbarrier phase the copy completes on has completed")
    -- and its signal: warpgroup 1 waits forever
    U.expect_error(function() tir.simulate(U.drop_call(low, "ptx_bar_arrive", 1), tir.testing.random_args(f, 1)) end,
                   "SimulationError", "deadlock", "named barrier 3 (bar.sync)")
    -- the release of a tile's last stage after the loop: without it the producer waits forever
    local n = 0
    local g = U.rewrite_func(low, function(s)
      if U.is_call(s, "ptx_mbarrier_arrive") then
        n = n + 1
        if n == 2 then return false end -- warpgroup 0's tail release (#1 is its in-loop one)
      end
    end)
    U.expect_error(function() tir.simulate(g, tir.testing.random_args(f, 1)) end, "SimulationError", "deadlock")
  end)

  it("is refused where it cannot work, with clear errors", function()
    U.expect_error(function() sched(256, 256, 256, "int8", {BM = 64, BN = 128, BK = 128, stages = 2}) end, "ValueError in tc_gemm.schedule",
                   "pingpong = true needs warp_specialize = true, tma = true and persistent")
    U.expect_error(function() sched(256, 256, 256, "int8", {BM = 128, BN = 128, BK = 128, stages = 2, persistent = 2}) end,
                   "pingpong = true: each consumer warpgroup computes a whole tile of 64 rows", "got 128")
    U.expect_error(function() sched(256, 256, 256, "int8", {BM = 64, BN = 128, BK = 128, stages = 2, persistent = 2, epilogue_store = "tma"}) end,
                   "pingpong = true with epilogue_store = \"tma\"", "use the direct store")
    U.expect_error(function() sched(256, 256, 256, "int8", {BM = 64, BN = 128, BK = 128, stages = 2, persistent = 2, pingpong = 1}) end,
                   "pingpong")
    -- the annotation itself: teams need one consumer warpgroup a tile, and a tile loop
    local f = tc.workload(256, 256, 256, "int8", "int32", nil, "NT")
    local s1 = tc.schedule(f, {intrin = "wgmma", BM = 128, BN = 128, BK = 128, stages = 2, tma = true, warp_specialize = true, persistent = 2})
    local l1 = {s1:get_loops(s1:get_block("C_update_o"))}
    s1:annotate(l1[#l1], "warp_specialize", {1, 0, 0, 2})
    U.expect_error(function() tir.lower(s1.mod) end, "LoweringError in inject_warp_specialization", "2 ping-pong consumer warpgroups",
                   "must have extent 1 (one warpgroup a tile, BM = 64), it has 2")
    local s2 = tc.schedule(f, {intrin = "wgmma", BM = 64, BN = 128, BK = 128, stages = 2, tma = true, warp_specialize = true})
    local l2 = {s2:get_loops(s2:get_block("C_update_o"))}
    s2:annotate(l2[#l2], "warp_specialize", {1, 40, 232, 2})
    U.expect_error(function() tir.lower(s2.mod) end, "LoweringError in inject_tma_pipeline",
                   "needs the pipeline in a persistent kernel's tile loop")
    local s3 = tc.schedule(f, {intrin = "wgmma", BM = 64, BN = 128, BK = 128, stages = 2, tma = true, warp_specialize = true, persistent = 2})
    local l3 = {s3:get_loops(s3:get_block("C_update_o"))}
    s3:annotate(l3[#l3], "warp_specialize", {1, 0, 0, 5})
    U.expect_error(function() tir.lower(s3.mod) end, "LoweringError in inject_warp_specialization", "5 ping-pong consumer warpgroups (1 .. 4)")
  end)
end)
