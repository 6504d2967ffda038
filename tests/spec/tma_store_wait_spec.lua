-- tma_store_wait_spec.lua -- the simulator's model of a TMA store's read of its shared source
-- (sim_mbarrier.c): the store copies at its issue here, but on the GPU the TMA unit reads the tile
-- until a cp.async.bulk.wait_group.read of the issuing thread covers the store's bulk group, so a
-- write into the tile before that wait (the next tile's accumulators stored too early) and a CTA
-- that ends before it are issues.  On tc_gemm_wgmma's TMA-store epilogue (int8 -> int32, fp16): the
-- kernels as scheduled are clean and bit-exact; with the wait dropped each case is reported.
local tir = require("tir")
local U = require("spec_util")
local tc = require("tir.schedules.tc_gemm")

local function lowered(M, N, K, dt, out, o)
  local f = tc.workload(M, N, K, dt, out, nil, "NT")
  local opts = {intrin = "wgmma"}
  for k, v in pairs(o) do opts[k] = v end
  return f, tir.lower(tc.schedule(f, opts).mod)
end

describe("simulator: a TMA store reads its shared source until cp.async.bulk.wait_group.read", function()
  it("a persistent CTA's next tile written before the wait is a tma_store_race; as scheduled it is clean", function()
    -- 2 CTAs walking 4 tiles of 128 x 128: the second tile's wgmma_store reuses the first's tile
    local f, low = lowered(256, 256, 256, "int8", "int32", {BM = 128, BN = 128, BK = 128, stages = 2, tma = true, persistent = 2,
                                                           epilogue_store = "tma"})
    assert.are.equal(0, tir.simulate(low, tir.testing.random_args(f, 3), {reference = f}).n_issues)
    U.expect_error(function() tir.simulate(U.drop_call(low, "ptx_bulk_wait_group_read", 1), tir.testing.random_args(f, 1)) end,
                   "writes C_shared", "which a TMA store issued by", "still reads", "ptx_bulk_wait_group_read")
    -- without check the issue is counted and the run goes on
    local rep = tir.simulate(U.drop_call(low, "ptx_bulk_wait_group_read", 1), tir.testing.random_args(f, 1), {check = false})
    local kinds = {}
    for _, is in ipairs(rep.issues) do kinds[is.kind] = true end
    assert.is_true(kinds.tma_store_race)
  end)

  it("a CTA that ends before the wait is tma_store_not_waited (fp16 cast epilogue, one tile a CTA)", function()
    local f, low = lowered(128, 256, 128, "float16", "float16", {BM = 64, BN = 128, BK = 64, stages = 2, epilogue = "D",
                                                                epilogue_store = "tma"})
    assert.are.equal(0, tir.simulate(low, tir.testing.random_args(f, 3), {reference = f}).n_issues)
    U.expect_error(function() tir.simulate(U.drop_call(low, "ptx_bulk_wait_group_read", 1), tir.testing.random_args(f, 1)) end,
                   "the CTA ends while a TMA store issued by", "may still read D_shared")
  end)

  it("a wait that leaves the store's group in flight (wait_group_read 1) does not cover it", function()
    local f, low = lowered(256, 256, 256, "int8", "int32", {BM = 128, BN = 128, BK = 128, stages = 2, tma = true, persistent = 2,
                                                           epilogue_store = "tma"})
    local bad = U.rewrite_func(low, function(s)
      if U.is_call(s, "ptx_bulk_wait_group_read") then
        return tir.core.make("Evaluate", {value = tir.call("void", "ptx_bulk_wait_group_read", 1)})
      end
    end)
    U.expect_error(function() tir.simulate(bad, tir.testing.random_args(f, 1)) end, "still reads")
  end)
end)
