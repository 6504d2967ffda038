-- tma_store_wait_spec.lua -- the simulator's model of a TMA store's read of its shared source
-- (sim_mbarrier.c): the store copies at its issue here, but on the GPU the TMA unit reads the tile
-- until a cp.async.bulk.wait_group.read of the issuing thread covers the store's bulk group, so a
-- write into the tile before that wait (the next tile's accumulators stored too early) and a CTA
-- that ends before it are issues.  On tc_gemm_wgmma's TMA-store epilogue (int8 -> int32, fp16): the
-- kernels as scheduled are clean and bit-exact; with the wait dropped each case is reported.
-- Then inject_tma_store's deferred wait: in the consumers' branch of a warp-specialized kernel and
-- under a persistent tile loop the wait precedes the tile's next writes ([leader: wait_group.read 0;
-- barrier] wgmma_store .. fence, barrier, leader: stores, commit) and the region ends with the
-- leaders' wait; one tile a CTA and tma_store_wait = "store" keep it right after the store.
local tir = require("tir")
local U = require("spec_util")
local tc = require("tir.schedules.tc_gemm")

local function sched(M, N, K, dt, out, o)
  local f = tc.workload(M, N, K, dt, out, nil, "NT")
  local opts = {intrin = "wgmma"}
  for k, v in pairs(o) do opts[k] = v end
  return f, tc.schedule(f, opts)
end

local function lowered(M, N, K, dt, out, o)
  local f, sch = sched(M, N, K, dt, out, o)
  return f, tir.lower(sch.mod)
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

-- sch lowered is clean and bit-exact on the simulator against f, with its one read wait after the store
local function assert_wait_after_store(f, sch)
  local low = tir.lower(sch.mod)
  assert.are.equal(0, tir.simulate(low, tir.testing.random_args(f, 3), {reference = f}).n_issues)
  local text = tostring(low)
  assert.are.equal(1, U.count_calls(text, "ptx_bulk_wait_group_read"))
  assert.is_true(text:find('"ptx_bulk_wait_group_read"', 1, true) > text:find('"ptx_tma_store"', 1, true))
end

local I8 = {BM = 128, BN = 128, BK = 128, stages = 2, tma = true, warp_specialize = true, persistent = 2, epilogue_store = "tma"}

-- int8 -> int32 M x 256 x 256 scheduled with o, lowered: clean and bit-exact on the simulator, the
-- deferred order ([leader: wait_group_read 0] then `barrier` before wgmma_store, the store, one more
-- wait after it at the region's end), and each wait dropped is reported (the first: the next tile's
-- writes race with the store; the last: the CTA ends under it); returns the lowered text
local function assert_deferred(M, o, barrier)
  local f, sch = sched(M, 256, 256, "int8", "int32", o)
  local low = tir.lower(sch.mod)
  assert.are.equal(0, tir.simulate(low, tir.testing.random_args(f, 3), {reference = f}).n_issues)
  local text = tostring(low)
  assert.are.equal(2, U.count_calls(text, "ptx_bulk_wait_group_read"))
  local w1 = text:find('"ptx_bulk_wait_group_read"', 1, true)
  local st, tma = text:find('"wgmma_store"', 1, true), text:find('"ptx_tma_store"', 1, true)
  assert.is_true(w1 < st and st < tma, text)
  assert.is_truthy(text:sub(w1):match('^"ptx_bulk_wait_group_read", 0%)%)%s*end%)%s*' .. barrier), text)
  assert.is_truthy(text:find('"ptx_bulk_wait_group_read"', tma, true), text) -- the final wait
  U.expect_error(function() tir.simulate(U.drop_call(low, "ptx_bulk_wait_group_read", 1), tir.testing.random_args(f, 1)) end,
                 "writes C_shared", "which a TMA store issued by", "still reads", "ptx_bulk_wait_group_read")
  U.expect_error(function() tir.simulate(U.drop_call(low, "ptx_bulk_wait_group_read", 2), tir.testing.random_args(f, 1)) end,
                 "the CTA ends while a TMA store issued by")
  return text
end

describe("tc_gemm intrin = \"wgmma\", epilogue_store = \"tma\": the wait for the store's read", function()
  it("warp-specialized persistent int8 -> int32: the wait precedes the tile's next writes; bit-exact on the simulator", function()
    -- the leader's wait + the consumers' barrier before the writes, none after the store, the
    -- leader's wait at the end of the consumers' region
    assert_deferred(256, I8, 'T%.evaluate%(T%.call%("void", "ptx_bar_sync", 1, 256%)%)')
  end)

  it("tma_store_wait = \"store\" keeps the wait (and a barrier) right after the store; fp16 bit-exact", function()
    local f, sch = sched(256, 256, 128, "float16", "float16",
                         {BM = 128, BN = 128, BK = 64, stages = 2, tma = true, warp_specialize = true, persistent = 2, epilogue = "D",
                          epilogue_store = "tma", tma_store_wait = "store"})
    assert_wait_after_store(f, sch)
  end)

  it("outside a warp-specialized kernel a persistent tile loop defers the wait the same way (CTA barriers), the loop ends with every warpgroup's wait", function()
    -- 2 CTAs x 2 tiles, 2 warpgroups: each warpgroup's leader stores its 64 rows; after the tile
    -- loop lane 0 of every warpgroup waits (threadIdx.x only), not warpgroup 0 alone
    local text = assert_deferred(256, U.merge(I8, {warp_specialize = false}), 'T%.evaluate%(T%.call%("void", "tvm_storage_sync", "shared"%)%)')
    assert.is_truthy(text:sub((text:find('"ptx_tma_store"', 1, true))):match(
      'T%.If%(T%.eq%(threadIdx_x, 0%), function%(%)%s*T%.evaluate%(T%.call%("void", "ptx_bulk_wait_group_read", 0%)%)'), text)
  end)

  it("one tile a CTA keeps the wait (and the CTA barrier) right after the store: nothing writes the tile again", function()
    local f, sch = sched(128, 256, 128, "float16", "float16", {BM = 64, BN = 128, BK = 64, stages = 2, epilogue = "D", epilogue_store = "tma"})
    assert_wait_after_store(f, sch)
  end)

  it("refuses a wait order it does not know, and the option without the TMA-store epilogue", function()
    U.expect_error(function() sched(256, 256, 256, "int8", "int32", U.merge(I8, {tma_store_wait = "never"})) end,
                   "ValueError in tc_gemm.schedule", "tma_store_wait must be \"reuse\"", "\"store\"")
    U.expect_error(function() sched(256, 256, 256, "int8", "int32", U.merge(I8, {epilogue_store = "direct", tma_store_wait = "store"})) end,
                   "tma_store_wait orders the TMA-store epilogue's wait", "epilogue_store = \"tma\"")
  end)
end)
