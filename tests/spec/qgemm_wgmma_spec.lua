-- qgemm_wgmma_spec.lua -- the quantized GEMM (tir.ops.quantized_matmul) as ONE kernel on Hopper's
-- wgmma (tir.schedules.qgemm intrin = "wgmma" -> tc_gemm_wgmma + tc_gemm_wgmma_epilogue): the
-- accumulators staged in shared memory, the 4-term correction / bias / scale / rounding / zero
-- point / clamp in the epilogue, the row sums of A (zb ~= 0) from the swizzled shared A tiles
-- the GEMM loads (TMA or cp.async), int8/uint8 written with packed 4-byte stores (16-byte ones on
-- the IMMA path).  Simulated bit-exact against the interpreter on the direct (un-rewritten)
-- compute accumulated in int64, with extreme inputs and zero points at the ends of their ranges;
-- bad options as tir.Errors.
local tir = require("tir")
local U = require("spec_util")
local qm = tir.ops.quantized_matmul
local qg = require("tir.schedules.qgemm")

local RANGE = {int8 = {-128, 127}, uint8 = {0, 255}}

local lcg, matrix = U.lcg, U.extreme_matrix

-- the arguments of qm(o) (b_sums = "input"), the output last
local function inputs(o, seed)
  local rnd = lcg(seed)
  local args = {matrix(o.M, o.K, o.a_dtype or "int8", rnd), matrix(o.N, o.K, o.b_dtype or "int8", rnd)}
  local function vec(n, lo, hi, ends)
    local t = {}
    for i = 1, n do t[i] = i == 1 and ends[1] or i == 2 and ends[2] or rnd(lo, hi) end
    return tir.nd.array(t, "int32")
  end
  local alo, ahi = RANGE[o.a_dtype or "int8"][1], RANGE[o.a_dtype or "int8"][2]
  local blo, bhi = RANGE[o.b_dtype or "int8"][1], RANGE[o.b_dtype or "int8"][2]
  if o.a_zero_point == "per_row" then args[#args + 1] = vec(o.M, alo, ahi, {alo, ahi}) end
  if o.b_zero_point == "per_column" then args[#args + 1] = vec(o.N, blo, bhi, {blo, bhi}) end
  if o.bias then args[#args + 1] = vec(o.N, -5000, 5000, {-2 ^ 20 // 1, 2 ^ 20 // 1}) end
  local t = {}
  -- scales around 1 / (K * 128), a few exact halves (ties of the rounding)
  for i = 1, o.N do t[i] = i % 3 == 0 and 0.5 or (rnd(1, 1000) / 1000) / (o.K * 128) end
  args[#args + 1] = tir.nd.array(t, "float32")
  args[#args + 1] = qm.col_sums(args[2], "NK")
  args[#args + 1] = tir.nd.empty({o.M, o.N}, o.out_dtype or "int8")
  return args
end

-- simulates mod on inputs(o, seed) against the interpreter on f, then the output against the
-- direct compute in int64 (the oracle); returns the report
local function check(o, f, mod, seed)
  local args = inputs(o, seed)
  local rep = tir.simulate(mod, args, {reference = f})
  assert.are.equal(0, rep.n_issues)
  assert.are.equal(1, rep.kernels)
  assert.is_true(rep.warp_ops > 0)
  local ro = {}
  for k, v in pairs(o) do ro[k] = v end
  ro.four_term, ro.accum_dtype, ro.b_sums, ro.a_sums = false, "int64", nil, nil
  local ra = {}
  for q = 1, #args - 2 do ra[q] = args[q] end
  local want = tir.nd.empty({o.M, o.N}, o.out_dtype or "int8")
  ra[#ra + 1] = want
  tir.interpret(qm(ro), ra)
  assert.are.same(want:to_table(), args[#args]:to_table())
  return rep
end

local function qopts(c)
  return {M = c.M or 128, N = c.N or 128, K = c.K or 256, a_dtype = c.a_dtype, b_dtype = c.b_dtype, a_zero_point = c.za,
          b_zero_point = c.zb or 0, b_sums = "input", bias = true, scale = "per_channel", out_zero_point = c.zo or -3,
          out_dtype = c.out_dtype, relu = c.relu}
end

describe("tir.schedules.qgemm intrin = \"wgmma\"", function()
  local asan = os.getenv("ASAN_OPTIONS") ~= nil
  it("is one kernel: the epilogue from the staged accumulators, bit-exact vs the int64 oracle (TMA and cp.async)", function()
    local cases = {
      {a_dtype = "uint8", za = 255, zo = -128, tc = {BM = 128, BN = 128, BK = 128, stages = 2, tma = true}},
      {a_dtype = "int8", za = -128, zo = 127, tc = {BM = 64, BN = 128, BK = 128, stages = 3, wgmma_pending = 1}},
      {a_dtype = "uint8", za = "per_row", out_dtype = "uint8", zo = 255, tc = {BM = 128, BN = 64, BK = 64, stages = 2, tma = true}},
      {a_dtype = "int8", za = 0, relu = true, tc = {BM = 64, BN = 64, BK = 32, stages = 1}},
      -- one CTA a tile in the persistent path's grouped order (persistent = the tile count: the
      -- staged accumulators still reuse the pipeline's bytes; the 2 x 2 tiles walked in groups)
      {a_dtype = "int8", za = -128, zo = 127, M = 256, N = 512, K = 128, tc = {BM = 128, BN = 256, BK = 128, stages = 2, tma = true,
                                                                          persistent = 4}},
    }
    -- (under ASan every case is 10x slower: the TMA and the cp.async case at K = 128 only)
    if asan then cases = {cases[1], cases[2]}; cases[1].K, cases[2].K = 128, 128 end
    for n, c in ipairs(cases) do
      local o = qopts(c)
      local f = qm(o)
      local to = {}
      for k, v in pairs(c.tc) do to[k] = v end
      local sch = qg.schedule(f, {intrin = "wgmma", tc = to})
      local mod = tir.build(sch.mod, "cuda -arch=sm_90a", {compile = false})
      local src = mod:get_source("cuda")
      assert.is_truthy(src:find("wgmma.mma_async", 1, true))
      -- (grouped: one CTA a tile on a 1-D grid, the tile's row and column from blockIdx.x)
      if c.tc.persistent then assert.is_falsy(src:find("blockIdx.y", 1, true)) end
      -- the int8 / uint8 outputs leave 4 at a time in one 32-bit store, never byte by byte
      assert.is_truthy(src:find("*(unsigned int*)(out + ", 1, true))
      assert.is_falsy(src:find("\n%s*out%["))
      check(o, f, mod, n)
    end
  end)

  it("with zb ~= 0 sums the rows of A from the swizzled shared A tiles in the same kernel", function()
    local cases = {
      {a_dtype = "int8", za = 127, zb = -128, M = 256, N = 256, tc = {BM = 128, BN = 256, BK = 128, stages = 2, tma = true}},   -- zero points at the ends
      {a_dtype = "uint8", za = 0, zb = 127, tc = {BM = 128, BN = 64, BK = 128, stages = 3, wgmma_pending = 1}},
      {a_dtype = "uint8", za = "per_row", zb = "per_column", tc = {BM = 64, BN = 64, BK = 64, stages = 2, tma = true}},
      {a_dtype = "int8", za = 0, zb = "per_column", relu = true, tc = {BM = 64, BN = 64, BK = 64, stages = 1}},
      -- the sums after the step's wgmma group is issued (row_sums_after: they run while it is in flight)
      {a_dtype = "int8", za = -128, zb = "per_column", tc = {BM = 128, BN = 128, BK = 128, stages = 3, tma = true, row_sums_after = true}},
      -- each row's k step summed by two threads (row_sums_split: rfactor over the halves of BK)
      {a_dtype = "int8", za = 127, zb = "per_column", M = 128, N = 256, tc = {BM = 128, BN = 256, BK = 128, stages = 2, tma = true, row_sums_split = 2}},
      {a_dtype = "uint8", za = 255, zb = -128, tc = {BM = 64, BN = 64, BK = 64, stages = 3, wgmma_pending = 1, row_sums_split = 2}},
      -- split and after the step's wgmma group, one CTA a tile in the grouped order
      {a_dtype = "uint8", za = 255, zb = "per_column", M = 256, N = 512, K = 256, tc = {BM = 128, BN = 256, BK = 128, stages = 2, tma = true,
                                                                                    row_sums_split = 2, row_sums_after = true, persistent = 4}},
      -- split, between the step's wgmma commit and its wait (row_sums_in_flight: the sums' intrinsic waits)
      {a_dtype = "int8", za = -128, zb = "per_column", M = 128, N = 256, K = 384, tc = {BM = 128, BN = 256, BK = 128, stages = 2, tma = true,
                                                                                   row_sums_split = 2, row_sums_in_flight = true}},
    }
    if asan then cases = {cases[1], cases[3], cases[6]}; cases[1].K, cases[2].K, cases[3].K = 128, 128, 256 end
    for n, c in ipairs(cases) do
      local o = qopts(c)
      local f = qm(o)
      local sch = qg.schedule(f, {intrin = "wgmma", tc = c.tc})
      -- the printed IR: the sums' update inside the GEMM's k loop, reading the swizzled A tile
      local ir = tostring(sch.mod)
      local upd = ir:find('T.block("a_row_sum_update_o"', 1, true)
      local mma = ir:find('T.block("C_update_o"', 1, true)
      assert.is_truthy(c.tc.row_sums_split or upd and mma and (upd < mma) == not c.tc.row_sums_after)
      local part = c.tc.BK // (c.tc.row_sums_split or 1)
      assert.is_truthy(ir:find(('"dp4a_row_sum%d_%s_shared%s"'):format(part, c.a_dtype == "uint8" and "u8" or "s8",
                                                                       c.tc.row_sums_in_flight and "_wg1" or ""), 1, true))
      if c.tc.row_sums_split then
        upd = ir:find('T.block("a_row_sum_rf_update_o"', 1, true)
        assert.is_truthy(upd and (upd < mma) == not (c.tc.row_sums_after or c.tc.row_sums_in_flight))
      end
      assert.is_truthy(ir:match("T%.reads%(A_shared[%w_]*%[{[^\n]*a_row_sum[%w_]*%["))
      local mod = tir.build(sch.mod, "cuda -arch=sm_90a", {compile = false})
      assert.are.equal(1, #mod:kernels())
      -- each 16-byte chunk of a row is one 16-byte load whose words feed the dp4a (the swizzle's
      -- in-chunk offset stays outside the XOR), never four 32-bit loads
      local src = mod:get_source("cuda")
      assert.is_truthy(src:find("(*(int4*)(A_shared + ", 1, true))
      assert.is_falsy(src:find("(*(int*)(A_shared + ", 1, true))
      if c.tc.row_sums_in_flight then
        -- the k step: the group's commit, the sums, then its wait (no wait between commit and sums)
        local cm = src:find("wgmma.commit_group", 1, true)
        local sm = src:find("a_row_sum_rf[", cm, true)
        local wt = src:find("wgmma.wait_group.sync.aligned 1", cm, true)
        assert.is_truthy(cm and sm and wt and sm < wt)
      end
      -- a per-column zb is read once a store by the epilogue (zb_j * (K za - sum a): one term, not two)
      if c.zb == "per_column" then
        local loads = select(2, src:gsub("%(zb %+ ", "")) + select(2, src:gsub("zb%[", ""))
        assert.are.equal(select(2, src:gsub("%*%(unsigned int%*%)%(out %+ ", "")), loads)
      end
      check(o, f, mod, 20 + n)
    end
  end)

  it("with a_sums = \"ones\" runs the row sums as one more wgmma m64n8k32 per 32 columns in the step's group", function()
    local cases = {
      {a_dtype = "int8", za = 127, zb = -128, M = 128, N = 256, tc = {BM = 128, BN = 256, BK = 128, stages = 2, tma = true}},   -- zero points at the ends
      {a_dtype = "uint8", za = 0, zb = 127, tc = {BM = 128, BN = 64, BK = 128, stages = 3, wgmma_pending = 1}},
      {a_dtype = "uint8", za = "per_row", zb = "per_column", tc = {BM = 64, BN = 64, BK = 64, stages = 2, tma = true}},
      {a_dtype = "int8", za = 0, zb = "per_column", relu = true, tc = {BM = 64, BN = 64, BK = 32, stages = 1}},
    }
    if asan then cases = {cases[1], cases[3]}; cases[1].K, cases[2].K = 128, 128 end
    for n, c in ipairs(cases) do
      local o = qopts(c)
      o.a_sums = "ones"
      local f = qm(o)
      local sch = qg.schedule(f, {intrin = "wgmma", tc = c.tc})
      -- the printed IR: the sums' wgmma (no commit of its own) ahead of the GEMM's in the k loop
      local ir = tostring(sch.mod)
      local t = c.a_dtype == "uint8" and "u8s8" or "s8"
      local upd = ir:find(('"tensor_intrin"] = "wgmma_sync_64x8x32_%ss32_bk_open"'):format(t), 1, true)
      local mma = ir:find('T.block("C_update_o"', 1, true)
      assert.is_truthy(upd and mma and upd < mma)
      assert.is_truthy(ir:find('"wgmma_fill_64x8_s32"', 1, true) and ir:find('"wgmma_store_64x8_s32_shared"', 1, true))
      assert.is_falsy(ir:find("dp4a", 1, true))
      local mod = tir.build(sch.mod, "cuda -arch=sm_90a", {compile = false})
      assert.are.equal(1, #mod:kernels())
      local src = mod:get_source("cuda")
      assert.is_truthy(src:find(("m64n8k32.s32.%s.s8"):format(c.a_dtype == "uint8" and "u8" or "s8"), 1, true))
      -- each warpgroup's 64 x 8 sums: 4 accumulator registers a thread, at a constant offset (a
      -- threadIdx-dependent one would put the wgmma's registers in local memory)
      assert.is_truthy(src:find("int a_row_sum_wgmma_accumulator[4];", 1, true))
      assert.is_truthy(src:find("(a_row_sum_wgmma_accumulator + (0) / 128)", 1, true))
      check(o, f, mod, 40 + n)
    end
    -- what the form cannot do, each named
    local zf = qm(qopts({a_dtype = "int8", za = 3, zb = 5}))
    local of = qm((function() local o = qopts({a_dtype = "int8", za = 3, zb = 5}); o.a_sums = "ones"; return o end)())
    U.expect_error(function() qg.schedule(of, {intrin = "wgmma", tc = {BM = 128, BN = 128, BK = 128, stages = 3, tma = true, row_sums_after = true}}) end,
                   "tc_gemm.schedule", "row_sums_after", "runs in the step's wgmma group")
    U.expect_error(function() qg.schedule(of, {intrin = "wgmma", tc = {BM = 128, BN = 128, BK = 128, stages = 3, tma = true, row_sums_split = 2}}) end,
                   "tc_gemm.schedule", "row_sums_split", "leave row_sums_split out")
    U.expect_error(function() qg.schedule(of, {intrin = "mma", tc = {BM = 128, BN = 128, BK = 128, warp_m = 64, warp_n = 64}}) end,
                   'a_sums = "ones" form', 'build the PrimFunc with a_sums = "compute"')
    U.expect_error(function() qg.schedule(of, {intrin = "simt"}) end, "qgemm", "block a_row_sum is computed in the PrimFunc")
    U.expect_error(function() qg.schedule(qm(qopts({a_dtype = "int8", za = 3})), {intrin = "wgmma", tc = {BM = 128, BN = 128, BK = 128,
                   row_sums_split = 2}}) end, "row_sums_split splits the row sums of A", "none here")
    U.expect_error(function() qg.schedule(zf, {intrin = "wgmma", tc = {BM = 128, BN = 128, BK = 128, row_sums_split = 4}}) end,
                   "row_sums_split = 4", "at most 2 ways")
    -- the sums between the commit and the wait need every thread in them (split 2) and the TMA pipeline
    U.expect_error(function() qg.schedule(zf, {intrin = "wgmma", tc = {BM = 128, BN = 128, BK = 128, stages = 3, tma = true,
                                                                     row_sums_in_flight = true}}) end,
                   "row_sums_in_flight", "row_sums_split = 2", ".sync.aligned")
    assert.is_truthy(zf)
  end)

  it("without tc options takes the fused kernel measured best (128x256x128, 4 TMA stages, grouped, two threads a row in the wgmma's shadow)", function()
    for _, zb in ipairs({0, "per_column", "ones"}) do
      local f = qm{M = 4096, N = 4096, K = 4096, a_zero_point = 3, b_zero_point = zb == "ones" and 5 or zb, b_sums = "input", bias = true,
                   scale = "per_channel", out_zero_point = -7, out_dtype = "int8", a_sums = zb == "ones" and "ones" or nil}
      local sch = qg.schedule(f, {intrin = "wgmma"})
      local mod = tir.build(sch.mod, "cuda -arch=sm_90a", {compile = false})
      local src = mod:get_source("cuda")
      assert.are.equal(1, #mod:kernels())
      assert.is_truthy(src:find("m64n256k32", 1, true))
      assert.is_truthy(src:find("cp.async.bulk.tensor", 1, true))
      assert.is_falsy(src:find("setmaxnreg", 1, true))
      -- one CTA a tile on a 1-D grid in the grouped order (512 tiles of 128 x 256)
      assert.is_falsy(src:find("blockIdx.y", 1, true))
      assert.are.equal(512, mod:kernels()[1].grid[1])
      -- (the staged accumulators on the pipeline's bytes: it launches)
      assert.is_true(mod:kernels()[1].dyn_smem_bytes <= 227 * 1024)
      -- the CUDA-core row sums split over two threads a row (the ones form stays on wgmma)
      local ir = tostring(sch.mod)
      assert.are.equal(zb == "per_column", ir:find('T.block("a_row_sum_rf_update_o"', 1, true) ~= nil)
      -- (between the step's wgmma commit and its wait: the sums' intrinsic waits)
      assert.are.equal(zb == "per_column", ir:find('"dp4a_row_sum64_s8_shared_wg1"', 1, true) ~= nil)
      assert.are.equal(zb == "ones", src:find("m64n8k32", 1, true) ~= nil)
    end
  end)

  it("refuses what it cannot run, naming the option", function()
    local f = qm(qopts({a_dtype = "int8", za = 3}))
    U.expect_error(function() qg.schedule(f, {intrin = "wgmma", tc = {BM = 128, BN = 128, BK = 128, epilogue_vec = 3}}) end,
                   "tc_gemm.schedule", "epilogue_vec = 3 outputs of int8 = 3 bytes", "4, 8 or 16 bytes")
    U.expect_error(function() qg.schedule(f, {intrin = "wgmma", tc = {BM = 128, BN = 128, BK = 128, epilogue_vek = 4}}) end,
                   "epilogue_vek")
    -- B stored K x N is not K-major: wgmma's 8-bit operands must be
    local kn = qm{M = 128, N = 128, K = 128, a_zero_point = 3, b_layout = "KN", b_sums = "input", scale = "per_channel"}
    U.expect_error(function() qg.schedule(kn, {intrin = "wgmma", tc = {BM = 128, BN = 128, BK = 128}}) end, "K-major operands")
    local zf = qm(qopts({a_dtype = "int8", za = 3, zb = 5, K = 64}))
    U.expect_error(function() qg.schedule(zf, {intrin = "wgmma", tc = {BM = 64, BN = 64, BK = 8}}) end, "tc_gemm.schedule",
                   "BK must be 32, 64 or 128 for int8")
    U.expect_error(function() qg.schedule(zf, {intrin = "wgmma", tc = {BM = 64, BN = 64, BK = 64, row_sums = "nope"}}) end,
                   "row_sums: there is no block 'nope'")
    local f256 = qm(qopts({a_dtype = "int8", za = 3, N = 256}))
    U.expect_error(function() qg.schedule(f256, {intrin = "wgmma", tc = {BM = 128, BN = 256, BK = 128, stages = 4, tma = true,
                                                                    warp_specialize = true}}) end,
                   "warp_specialize = true with epilogue 'out'", "> the 227 KB")
    -- a persistent grid of fewer CTAs than tiles keeps the pipeline through the epilogue (the
    -- grouped one-CTA-a-tile order, persistent = the tile count, does not)
    local f4 = qm(qopts({a_dtype = "int8", za = 3, M = 256, N = 512}))
    U.expect_error(function() qg.schedule(f4, {intrin = "wgmma", tc = {BM = 128, BN = 256, BK = 128, stages = 4, tma = true, persistent = 2}}) end,
                   "persistent with epilogue 'out'", "stay allocated through the epilogue")
    assert.is_truthy(qg.schedule(f4, {intrin = "wgmma", tc = {BM = 128, BN = 256, BK = 128, stages = 4, tma = true, persistent = 4}}))
    local tc = require("tir.schedules.tc_gemm")
    U.expect_error(function() tc.schedule(tc.workload(128, 128, 128, "int8", "int32", nil, "NT"),
                   {intrin = "wgmma", BM = 128, BN = 128, BK = 128, epilogue = "nope"}) end, "epilogue block 'nope' does not exist")
  end)
end)

describe("packed int8 epilogue stores on IMMA (mma.sync)", function()
  it("stores 16 requantized int8 outputs a thread as one 16-byte store, bit-exact on the simulator", function()
    local o = {M = 128, N = 64, K = 128, a_dtype = "uint8", a_zero_point = 255, b_sums = "input", bias = true, scale = "per_channel",
               out_zero_point = 127}
    local f = qm(o)
    local sch = qg.schedule(f, {intrin = "mma", tc = {BM = 64, BN = 64, BK = 64, warp_m = 32, warp_n = 32, stages = 2}})
    local mod = tir.build(sch.mod, "cuda -arch=sm_80", {compile = false})
    local src = mod:get_source("cuda")
    assert.is_truthy(src:find("*(uint4*)(out + ", 1, true))
    assert.is_falsy(src:find("\n%s*out%["))
    check(o, f, mod, 7)
  end)
end)
