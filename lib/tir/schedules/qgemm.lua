--- tir.schedules.qgemm: one-kernel schedule of a tir.ops.quantized_matmul PrimFunc (4-term form)
-- on the SIMT cores, written with public schedule primitives only:
--   * the int8 GEMM block "C" as the classic tiled SIMT GEMM (tir.schedules.simt_gemm's shape):
--     a CTA computes BM x BN with TY x TX threads, each a TM x TN register tile in int32; per BK
--     step the A and B tiles are staged in shared memory (cooperative copies, vectorized);
--   * the epilogue block "out" (the 4-term correction, bias, scale, rounding, zero point,
--     clamp) runs per thread right after its register tile (reverse_compute_at the thread
--     loop; the accumulator C is set to "local" scope), so C never goes to global memory;
--   * the column sums of B come in as a parameter (b_sums = "input": a constant weight's sums,
--     computed once by a one-time pre-pass); with b_zero_point ~= 0 the row sums of A are
--     computed in the kernel on tensor cores (intrin "mma": tc_gemm's row_sums, from the
--     shared A tiles of each k step, tir.schedules.tc_gemm_row_sums) -- the SIMT/DP4A
--     schedules take them as a parameter (a_sums = "input", a separate kernel per call) and
--     refuse a PrimFunc that computes them, since their epilogue moves into the GEMM's nest
--     with reverse_compute_at, which needs the GEMM as its only producer.
-- One kernel launch for the quantized GEMM (on tensor cores also with zb != 0).  opts: BM, BN, BK, TY, TX, vec (8: int8 elements per access of the
-- cooperative copies; BM * BK and BN * BK must be multiples of TY * TX * vec), unroll (true),
-- stages (1: none; 2 or more: the SIMT/DP4A tile copies software-pipelined as cp.async),
-- early_wait (false; with stages >= 2: one wait and one barrier at the top of each k step),
-- pad_planes (false; DP4A word tiles: pad the k-group planes against the bank conflicts of
-- 4-byte copies), lane_tile (false; L: DP4A word tiles with each thread's register tile read as
-- (TM / L) x (TN / L) blocks of L x L, the L rows of a block of the TY (TX) threads side by side
-- in the plane -- CUTLASS's SIMT LaneMmaShape -- so a warp's 16-byte shared loads (L = 4) read
-- consecutive chunks; a permutation of the shared rows only: the register tile stays contiguous), transpose (true: the shared tiles stored k-major, [k][i] and [k][j], so that the threads of a
-- warp read consecutive bytes instead of rows 128 bytes apart, all in one bank), intrin ("simt":
-- int32 multiply-adds; "dp4a": the k loop by 4 tensorized with tir.intrin.dp4a, dp4a.*.s32 on
-- int8x4 registers, sm_61+), dp4a_load ("word": the shared tiles stored [k / 4][row][k % 4], each
-- operand's four k one aligned 32-bit load; "prmt": k-major tiles, the four bytes packed with
-- three prmt.b32); intrin "mma": tensor cores (IMMA mma.sync m16n8k32) through
-- tir.schedules.tc_gemm with the epilogue fused into its write-back (tc: tc_gemm's options, e.g.
-- {BM = 128, BN = 128, BK = 128, warp_m = 64, warp_n = 64, stages = 3}).
-- Errors (tir.Error from "qgemm"): unknown options, values of the wrong type (M.OPTS), an option of
-- the SIMT/DP4A schedules given with intrin = "mma" (tc_gemm's go in tc) or tc without it, early_wait
-- without a pipeline, and the shape checks below.
local M = {}

M.defaults = {BM = 64, BN = 64, BK = 32, TY = 16, TX = 16, vec = 8, unroll = true, transpose = true, intrin = "simt",
              dp4a_load = "word", tc = false, stages = 1, pad_planes = false, lane_tile = false,
              early_wait = false}
-- option types (util.check_opts): a wrong type is a TypeError naming the option
M.OPTS = {BM = "positive", BN = "positive", BK = "positive", TY = "positive", TX = "positive", vec = "positive",
          unroll = "boolean", transpose = "boolean", intrin = "string", dp4a_load = "string", stages = "positive",
          pad_planes = "boolean", early_wait = "boolean",
          tc = function(v) if v ~= false and type(v) ~= "table" then return "a table of tc_gemm options (with intrin = \"mma\")" end end,
          lane_tile = function(v) if v ~= false and not (math.type(v) == "integer" and v >= 1) then return "false or a positive integer" end end}

function M.schedule(func, opts)
  local tir = require("tir")
  local util = require("tir.util")
  local o = {}
  for k, v in pairs(M.defaults) do o[k] = v end
  if opts ~= nil and type(opts) ~= "table" then util.raise("TypeError", "qgemm", "options must be a table, got %s", util.show(opts)) end
  util.check_opts("qgemm", opts, M.OPTS)
  for k, v in pairs(opts or {}) do o[k] = v end
  -- each option belongs to one of the two schedules: one given to the other is refused, not ignored
  if o.intrin == "mma" or o.intrin == "wgmma" then
    for k in pairs(opts) do
      if k ~= "intrin" and k ~= "tc" then
        util.raise("ValueError", "qgemm", "option %s is for the SIMT/DP4A schedules; with intrin = %q tc_gemm's options go in " ..
                   "tc = {...} (e.g. tc = {BM = 128, BN = 128, BK = 128, warp_m = 64, warp_n = 64, stages = 3})", k, o.intrin)
      end
    end
  elseif o.tc then
    util.raise("ValueError", "qgemm", "option tc (tc_gemm's options) is for intrin = \"mma\", got intrin = %s (tc is for the tensor-core schedules, intrin = \"mma\" or \"wgmma\")", util.show(o.intrin))
  elseif o.early_wait and o.stages < 2 then
    util.raise("ValueError", "qgemm", "early_wait = true needs a pipeline (stages >= 2), got stages = %d", o.stages)
  end
  if o.BM % o.TY ~= 0 or o.BN % o.TX ~= 0 then
    util.raise("ValueError", "qgemm", "BM=%d, BN=%d must be multiples of TY=%d, TX=%d", o.BM, o.BN, o.TY, o.TX)
  end
  local sch = tir.Schedule(func)
  local C = sch:get_block("C")
  local out = sch:get_block("out")
  local has = {}
  for _, b in ipairs(sch:get_child_blocks(sch:get_block("root"))) do has[b.name] = b end
  for _, name in ipairs({"a_row_sum", "b_col_sum"}) do
    -- on tensor cores the row sums of A are computed in the GEMM's kernel (tc_gemm row_sums)
    if has[name] and not (name == "a_row_sum" and (o.intrin == "mma" or o.intrin == "wgmma")) then
      util.raise("ValueError", "qgemm",
                 "block %s is computed in the PrimFunc: this schedule fuses the epilogue into the GEMM's thread loop, which "
                 .. "needs the GEMM as the epilogue's only producer (TVM's reverse_compute_at rule); give the sums as "
                 .. "inputs: b_sums = \"input\" (a constant weight's column sums, computed once) and, when "
                 .. "b_zero_point ~= 0, a_sums = \"input\" (quantized_matmul.row_sums_func: a kernel before the GEMM) -- or "
                 .. "intrin = \"mma\", which computes the row sums of A in the GEMM's kernel", name)
    end
  end
  if o.intrin == "mma" or o.intrin == "wgmma" then
    -- IMMA: tir.schedules.tc_gemm (mma.sync m16n8k32, ldmatrix, cp.async pipeline) with the
    -- epilogue inlined into its write-back, which stages the accumulators in shared memory;
    -- wgmma (sm_90a): tc_gemm_wgmma the same way (tc_gemm_wgmma_epilogue.lua), B stored N x K
    local tc = require("tir.schedules.tc_gemm")
    local to = {intrin = o.intrin, epilogue = "out", row_sums = has.a_row_sum and "a_row_sum" or nil}
    if o.intrin == "wgmma" and not o.tc then
      -- no tc options: the fused kernel measured best (bench/RESULTS.md "Stop 10: int8 wgmma
      -- defaults", "Stop 12 (hQ)"): 128 x 256 x 128 (else 128 x 128 x 128), 4 TMA stages, not
      -- warp-specialized (tc_gemm_wgmma.pick's plain-GEMM choice is: the staged epilogue tile does not
      -- fit beside its pipeline tiles), one CTA a tile in the persistent path's grouped order
      -- (persistent = the tile count: L2 reuse, 8192^3 za 0.732 -> 0.693 ms, 4096^3 unchanged); with
      -- the row sums of A (zb ~= 0, a_sums = "compute") two threads a row between the step's wgmma
      -- commit and its wait (row_sums_split = 2, row_sums_in_flight: 4096^3 0.108 -> 0.100 ms, 1.039x
      -- the plain int8 GEMM's time); other shapes keep tc_gemm_wgmma.defaults
      local shp = sch:get(out).writes[1].buffer.shape
      local K = sch:get(C).reads[1].buffer.shape[2]
      local m, n, k = tonumber(tostring(shp[1])), tonumber(tostring(shp[2])), tonumber(tostring(K))
      if m and n and k and m % 128 == 0 and k % 128 == 0 and k >= 1024 and n % 128 == 0 then
        local bn = n % 256 == 0 and 256 or 128
        for key, v in pairs({BM = 128, BN = bn, BK = 128, stages = 4, tma = true, persistent = (m // 128) * (n // bn)}) do to[key] = v end
        -- (the CUDA-core sums only: a_sums = "ones" writes an [M, 8] block, run as wgmma)
        if has.a_row_sum and #sch:get(has.a_row_sum).writes[1].buffer.shape == 1 then
          to.row_sums_split, to.row_sums_in_flight = 2, true
        end
      else
        to.stages = 3 -- a tile option given: tc_gemm_wgmma.defaults, not the plain GEMM's pick
      end
    end
    for k, v in pairs(o.tc or {}) do to[k] = v end
    return tc.schedule(func, to)
  end
  local AS = sch:cache_read(C, 0, "shared", {C})
  local BS = sch:cache_read(C, 1, "shared", {C})
  local CL = sch:cache_write(C, 0, "local")
  local simt = require("tir.schedules.simt_gemm")
  local _, _, _, tx, ko, ki, ii, jj = simt.thread_tiles(sch, C, AS, BS, o)
  sch:reverse_compute_at(CL, tx)
  -- the epilogue right after the thread's write-back, which then stays in registers
  sch:reverse_compute_at(out, tx)
  sch:set_scope(CL, 0, "local")
  simt.cooperative_copies(sch, {AS, BS}, o.TY, o.TX, o.vec)
  if o.intrin ~= "simt" and o.intrin ~= "dp4a" then
    util.raise("ValueError", "qgemm", "intrin must be \"simt\", \"dp4a\" or \"mma\", got %s", util.show(o.intrin))
  end
  if o.dp4a_load ~= "word" and o.dp4a_load ~= "prmt" then
    util.raise("ValueError", "qgemm", "dp4a_load must be \"word\" or \"prmt\", got %s", util.show(o.dp4a_load))
  end
  if o.intrin == "dp4a" and o.BK % 4 ~= 0 then
    util.raise("ValueError", "qgemm", "intrin dp4a needs BK a multiple of 4, got %d", o.BK)
  end
  local word = o.intrin == "dp4a" and o.dp4a_load == "word"
  if o.lane_tile then
    local L, TM, TN = o.lane_tile, o.BM // o.TY, o.BN // o.TX
    if not word then
      util.raise("ValueError", "qgemm", "lane_tile needs the DP4A word tiles (intrin = \"dp4a\", dp4a_load = \"word\")")
    end
    if math.type(L) ~= "integer" or L < 1 or TM % L ~= 0 or TN % L ~= 0 then
      util.raise("ValueError", "qgemm", "lane_tile must be a positive integer dividing the thread tile %dx%d, got %s", TM, TN, util.show(L))
    end
  end
  if o.unroll then sch:unroll(ki); sch:unroll(ii); sch:unroll(jj) end
  if o.transpose and not word then
    sch:transform_layout(AS, {"write", 0}, function(r, c) return c, r end)
    sch:transform_layout(BS, {"write", 0}, function(r, c) return c, r end)
  end
  sch:decompose_reduction(C, ko)
  if o.intrin == "dp4a" then
    local dp4a = require("tir.intrin.dp4a")
    local blk = sch:get_block("C_update")
    local dt = {}
    for _, rg in ipairs(sch:get(blk).reads) do dt[rg.buffer.name] = rg.buffer.dtype end
    local a_dt, b_dt = dt.A_shared, dt.B_shared
    local loops = {sch:get_loops(blk)}
    -- ... ko, ki, ii, jj  ->  ko, kio, ii, jj, kii(4)
    local kl, il, jl = loops[#loops - 2], loops[#loops - 1], loops[#loops]
    local kio, kii = sch:split(kl, {nil, 4})
    sch:reorder(kio, il, jl, kii)
    if o.unroll then sch:unroll(kio) end
    if word then
      -- k trailing: each operand's four k are one aligned 32-bit word once the tiles are stored
      -- [k / 4][row][k % 4] (the layout change keeps the intrinsic's views: windows of it)
      sch:tensorize(kii, dp4a.name(a_dt, b_dt, false, "shared", "word"))
      sch:transform_layout(AS, {"write", 0}, function(r, c) return c // 4, r, c % 4 end)
      sch:transform_layout(BS, {"write", 0}, function(r, c) return c // 4, r, c % 4 end)
      local L = o.lane_tile
      if L then
        -- rows permuted within a tile so that lane t's L consecutive rows of each part of its
        -- register tile sit at rows t * L .. t * L + L - 1 of that part's slab of T * L rows:
        -- a warp's 16-byte loads of one plane then read consecutive 16-byte chunks (CUTLASS's
        -- SIMT lane layout) instead of chunks a whole register tile apart
        local function perm(T, TT)
          -- (within each tile of T * TT rows: the buffer has all rows until it is compacted)
          return function(g, r, w)
            local q = r % (T * TT)
            return g, r // (T * TT) * (T * TT) + (q // L) % (TT // L) * (T * L) + q // TT * L + q % L, w
          end
        end
        sch:transform_layout(AS, {"write", 0}, perm(o.TY, o.BM // o.TY))
        sch:transform_layout(BS, {"write", 0}, perm(o.TX, o.BN // o.TX))
      end
    else
      sch:tensorize(kii, dp4a.name(a_dt, b_dt, o.transpose, "shared"))
    end
    if word and o.pad_planes then
      -- 4-byte copies (vec = 4) store the four k-groups of a row's 16 bytes into four planes
      -- BM * 4 bytes apart: the 8 lanes of a row segment hit one bank.  Planes padded to 16 mod
      -- 128 bytes: lane (plane p, row r) lands on bank 4p + r, conflict-free; the compute's
      -- 16-byte loads (4 rows of one plane) are unchanged
      sch:storage_align(AS, 0, 0, 128, 16)
      sch:storage_align(BS, 0, 0, 128, 16)
    end
  end
  if o.stages > 1 then
    -- the tile copies run stages - 1 k steps ahead as cp.async (inject_software_pipeline): ko's
    -- body is [A copy, B copy, the k step's multiply-accumulates]
    sch:annotate(ko, "software_pipeline_stage", {0, 0, o.stages - 1})
    sch:annotate(ko, "software_pipeline_order", {0, 1, 2})
    sch:annotate(ko, "software_pipeline_async_stages", {0})
    -- early_wait: wait for this step's tiles at the top of the step, before issuing the next
    -- copies (CUTLASS's order): one barrier per k step instead of two
    if o.early_wait then sch:annotate(ko, "software_pipeline_early_wait", 1) end
  end
  return sch
end

--- The DP4A options measured best for an M x N output (bench/RESULTS.md "DP4A and IMMA
-- mma.sync speed": 113 TOP/s at 4096^3 on the H200): 128 x 128 CTAs of 16 x 16 threads with
-- 8 x 8 register tiles, BK 64, the k-group word tiles filled by 4-byte cp.async copies in a
-- 3-stage pipeline, planes padded, lane_tile 4; shapes that 128 does not divide get the
-- defaults (64 x 64 CTAs).  Returns a new options table for M.schedule.
function M.dp4a_options(m, n)
  local util = require("tir.util")
  for i, v in ipairs({m, n}) do
    if math.type(v) ~= "integer" or v < 1 then util.raise("TypeError", "qgemm.dp4a_options", "%s must be a positive integer, got %s", ({"m", "n"})[i], util.show(v)) end
  end
  if m % 128 == 0 and n % 128 == 0 then
    return {intrin = "dp4a", BM = 128, BN = 128, BK = 64, vec = 4, stages = 3, pad_planes = true, lane_tile = 4}
  end
  return {intrin = "dp4a"}
end

-- a call with more arguments than a function's parameters is an error (util.strict)
M.schedule = require("tir.util").strict("qgemm.schedule", M.schedule)
M.dp4a_options = require("tir.util").strict("qgemm.dp4a_options", M.dp4a_options)

return M
