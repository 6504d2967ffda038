--- tir.schedules.tc_gemm_wgmma: the Hopper GEMM schedule (tc_gemm with intrin = "wgmma"), built
-- from public schedule primitives only (read it, change it):
--   C[i, j] = sum_k acc(A[i, k]) * acc(B[j, k])   A: M x K, B: N x K (both K-major: tc_gemm's "NT"
--   layout, cuBLAS's "TN"); fp16 / bf16 into fp32, or int8 into int32; optionally followed by the
--   epilogue block D = cast(f16, C), fused into the accumulator store.
-- Structure: a CTA computes BM x BN with BM / 64 consumer warpgroups (threadIdx.y; threadIdx.x =
-- the 128 threads of a warpgroup), each a 64 x BN tile in registers (wgmma.accumulator, BN/2 a
-- thread).  Per BK step the A and B tiles are copied into shared memory by 16-byte cp.async copies
-- of all threads (stages > 1: a cp.async pipeline), into tiles whose rows are exactly BK elements =
-- the swizzle width (storage_swizzle "32B"/"64B"/"128B": BK * element bytes), the canonical K-major wgmma layout;
-- then each warpgroup issues BK / k wgmma.mma_async m64n<BN>k<k> as one group; with
-- wgmma_pending = 1 (the default with a pipeline) it leaves that group in flight and waits for the
-- previous one, so the tensor cores stay busy while the next copies issue; 0 waits for it.
-- The descriptors come from the tiles' swizzle and rows (lower_wgmma_descriptor), never from here.
-- Needs the target "cuda -arch=sm_90a".
local M = {}
local util = require("tir.util")
local raise = util.raise

M.defaults = {BM = 128, BN = 128, BK = 64, stages = 3, epilogue = nil, unroll = true, wgmma_pending = 1}

-- the options that name a tile or a pipeline: when a caller gives none of them, M.pick chooses
-- them from the shape (M.resolve)
M.TILE_OPTS = {"BM", "BN", "BK", "stages", "tma", "warp_specialize", "persistent", "persistent_tail", "wgmma_pending", "ws_regs", "epilogue_store",
               "a_stage", "row_sums", "vec", "a_operand", "tma_store_boxes", "tma_store_wait", "pingpong"}

--- The configuration tc_gemm intrin = "wgmma" takes when no tile or pipeline option is given
-- (and tc_gemm.auto_tensorize(func, "wgmma")): for 16-bit inputs (fp16, bf16) of an m x n x k
-- GEMM on sm_count SMs, measured on the H200 (bench/RESULTS.md, "Stop 10: the wgmma defaults"):
--  * at least one wave of 128 x 256 tiles (m % 128, n % 256, k % 64 = 0, k >= 512): 128 x 256 x 64,
--    4 TMA stages, warp-specialized (a producer warpgroup, two consumers of 64 x 256); persistent
--    (persistent = G: tc_gemm.persistent_grid's G CTAs on sm_count SMs walking the tiles, grouped for L2) when its G CTAs need no
--    more rounds than one CTA a tile does (ceil(tiles / sm_count)): 4096^3 (512 tiles, G = 128),
--    8192^3; otherwise one CTA a tile (4096 x 11008: G = 86 would take 16 rounds against 11).
--    Persistent with float16 out (out_dtype: the fused cast's): 3 stages and the TMA-store epilogue
--    (epilogue_store = "tma": the tile leaves through shared memory while the next tile's main loop
--    runs; its 64 KB tile does not fit beside 4 stages; fp32 out would need 128 KB);
--  * fewer tiles than SMs (small M, e.g. 128 x 11008 x 4096: 43 tiles of 128 x 256): 128 x 128 x 64
--    tiles (m % 128 = 0; 64 x 128 for m = 64), warp-specialized, 6 TMA stages (192 KB of
--    loads in flight: the GEMM streams B), one CTA a tile;
--  * anything else (short k loops, other tile multiples; int8: pick_int8 below): M.defaults (128 x 128 x 64,
--    3 cp.async stages), which the simulator tests run.
-- No pick takes cluster = {cm, cn}: on the H200 at 4096^3 {2, 1} equals the kernel without and {1, 2}
-- is 2.5-3 % slower (bench/RESULTS.md "Stop 11 (hK)").
-- out_dtype: the dtype the GEMM stores (nil: unknown, no TMA-store epilogue).
-- Returns a table of options (empty: M.defaults) and a one-line reason.
-- int8 / uint8 inputs (wgmma m64nNk32.s32.s8.s8; BK = 128 int8 = the 128-byte swizzle row), measured
-- on the H200 against cuBLASLt (bench/RESULTS.md, "Stop 10: int8 wgmma defaults"):
--  * at least a wave of 128 x 256 tiles: 128 x 256 x 128, 4 TMA stages, warp-specialized; persistent
--    with G CTAs where the grid takes no extra rounds (4096^3 0.96-0.97x, 8192^3 1.045x), else one CTA
--    a tile in the persistent path's grouped order (persistent = the tile count: 4096 x 11008 x 4096
--    0.864x, against 0.764x for the plain 2-D grid and 0.644x for G = 86);
--  * fewer 128 x 256 tiles than SMs (128 x 11008 x 4096: 43): 128 x 128 x 128, 6 TMA stages,
--    warp-specialized, one CTA a tile (1.338x; 128 x 256 tiles 0.848x, 64 x 256 1.024x).
local function pick_int8(m, n, k, sms)
  if k % 128 ~= 0 or k < 1024 then return {}, "defaults (int8: K not a multiple of 128 or below 1024)" end
  local TCM = require("tir.schedules.tc_gemm")
  if m % 128 == 0 and n % 256 == 0 and (m // 128) * (n // 256) >= sms then
    local tiles = (m // 128) * (n // 256)
    local G = TCM.persistent_grid(m // 128, n // 256, sms)
    local rounds = tiles // G <= (tiles + sms - 1) // sms
    return {BM = 128, BN = 256, BK = 128, stages = 4, tma = true, warp_specialize = true, persistent = rounds and G or tiles},
           ("pick: int8 128x256x128 s4 ws persistent (%d tiles, %d SMs, G = %d%s)"):format(tiles, sms, rounds and G or tiles,
             rounds and "" or ": one CTA a tile, grouped")
  end
  if m % 128 == 0 and n % 128 == 0 then
    return {BM = 128, BN = 128, BK = 128, stages = 6, tma = true, warp_specialize = true},
           ("pick: int8 128x128x128 s6 ws (%d tiles of 128x256 < %d SMs)"):format((m // 128) * (n // 256), sms)
  end
  return {}, "defaults (int8: the 128 x 128 tiles do not divide M, N)"
end

-- A staged epilogue (staged = true: one that reads more than the accumulator -- bias, relu, ... --
-- or casts to anything but float16; tc_gemm_wgmma_epilogue.lua) on 16-bit inputs keeps its fp32
-- accumulators in a shared tile of their own (BM x (BN + 8) x 4 bytes), which a warp-specialized or
-- persistent 128 x 256 tile cannot fit beside its pipeline (those keep the pipeline tiles allocated
-- through the epilogue); one CTA a tile reuses the pipeline's bytes for it.  Measured on the H200
-- with bias + relu (bench/RESULTS.md "Stop 11: bias + relu epilogues"; 4096^3 fp16 vs cuBLASLt's
-- RELU_BIAS 0.188 ms):
--  * at least a wave of 128 x 256 tiles: 128 x 256 x 64, 4 TMA stages, one CTA a tile, the staged
--    epilogue's direct stores (0.199 ms; with the TMA store 0.202: without a persistent grid there is
--    no next tile for the store to overlap; 128 x 128 WS persistent 4 stages 0.211, 3 stages -- the
--    most that fit with the TMA-store tile -- 0.285);
--  * fewer tiles (small M): 128 x 128 x 64, 4 TMA stages, warp-specialized, one CTA a tile (6 stages
--    do not fit beside the staged tile);
--  * otherwise M.defaults.
local function pick_staged(m, n, k, sms)
  if m % 128 == 0 and n % 256 == 0 and (m // 128) * (n // 256) >= sms then
    return {BM = 128, BN = 256, BK = 64, stages = 4, tma = true},
           ("pick: staged epilogue, 128x256x64 s4, one CTA a tile (%d tiles, %d SMs)"):format((m // 128) * (n // 256), sms)
  end
  if (m % 128 == 0 or m == 64) and n % 128 == 0 and k >= 768 then
    local bm = m == 64 and 64 or 128
    return {BM = bm, BN = 128, BK = 64, stages = 4, tma = true, warp_specialize = true},
           ("pick: staged epilogue, %dx128x64 s4 ws (%d tiles of 128x256 < %d SMs)"):format(bm, (m // 128) * (n // 256), sms)
  end
  return {}, "defaults (staged epilogue: the tiles do not divide M, N)"
end

function M.pick(m, n, k, a_dtype, sm_count, out_dtype, staged)
  local TCM = require("tir.schedules.tc_gemm")
  if a_dtype == "int8" or a_dtype == "uint8" then return pick_int8(m, n, k, sm_count or TCM.device_sm_count()) end
  if a_dtype ~= "float16" and a_dtype ~= "bfloat16" then return {}, "defaults (" .. tostring(a_dtype) .. " inputs)" end
  if k % 64 ~= 0 or k < 512 then return {}, "defaults (K not a multiple of 64 or below 512)" end
  local sms = sm_count or TCM.device_sm_count()
  if staged then return pick_staged(m, n, k, sms) end
  if m % 128 == 0 and n % 256 == 0 and (m // 128) * (n // 256) >= sms then
    local tiles = (m // 128) * (n // 256)
    local G = TCM.persistent_grid(m // 128, n // 256, sms)
    local persistent = tiles // G <= (tiles + sms - 1) // sms
    local es = persistent and out_dtype == "float16"
    return {BM = 128, BN = 256, BK = 64, stages = es and 3 or 4, tma = true, warp_specialize = true, persistent = persistent and G or nil,
            epilogue_store = es and "tma" or nil},
           ("pick: 128x256x64 s%d ws%s%s (%d tiles, %d SMs%s)"):format(es and 3 or 4, persistent and " persistent" or "",
             es and " tma-store" or "", tiles, sms,
             persistent and (", G = " .. G) or (", persistent G = " .. G .. " would take " .. tiles // G .. " rounds"))
  end
  if (m % 128 == 0 or m == 64) and n % 128 == 0 and k >= 768 then
    local bm = m == 64 and 64 or 128
    return {BM = bm, BN = 128, BK = 64, stages = 6, tma = true, warp_specialize = true},
           ("pick: %dx128x64 s6 ws (%d tiles of 128x256 < %d SMs)"):format(bm, (m // 128) * (n // 256), sms)
  end
  return {}, "defaults (the tiles do not divide M, N)"
end

--- tc_gemm's option merge for intrin = "wgmma": M.defaults, then M.pick's choice when opts name
-- no option of M.TILE_OPTS (the GEMM block's extents are constant, unpadded, no batch), then opts.
-- Returns the options and the reason (M.pick's, or "options given").
function M.resolve(sch, opts, P, analyze, sm_count)
  local o = {}
  for k, v in pairs(M.defaults) do o[k] = v end
  local given = false
  for _, k in ipairs(M.TILE_OPTS) do given = given or opts[k] ~= nil end
  local why = "options given"
  if not given then
    local info = analyze(sch, sch:get_block(opts.block or "C"), P)
    local ext = info.extents
    local padded = pcall(function() return sch:get_block("A_pad") end)
    if info.batch == 0 and not padded and ext[#ext] and ext[#ext - 1] and ext[#ext - 2] and info.layout == "NT" then
      -- the stored dtype: a fused epilogue that only casts C (one read) stores its own, else C's
      local out, staged = info.c_dtype, false
      if opts.epilogue then
        local ok, e = pcall(function() return sch:get(sch:get_block(opts.epilogue)) end)
        out = ok and #e.reads == 1 and e.writes[1].buffer.dtype or nil
        -- an epilogue the store does not fuse (tc_gemm_wgmma_epilogue's plain cast) runs staged
        staged = ok and info.c_dtype == "float32" and not (out == "float16" and e.body.value and e.body.value.kind == "Cast" and
                                                            e.body.value.value.kind == "BufferLoad")
      end
      local p
      p, why = M.pick(ext[#ext - 2], ext[#ext - 1], ext[#ext], info.a_dtype, sm_count, out, staged)
      for k, v in pairs(p) do o[k] = v end
    else
      why = "defaults (batched, padded, symbolic or not K-major)"
    end
  end
  for k, v in pairs(opts) do o[k] = v end
  -- a register A fragment is read by the step's wgmma group until its wait: one group in flight
  -- would need two fragments, so a_operand = "register" leaves none unless wgmma_pending is given
  if opts.a_operand == "register" and opts.wgmma_pending == nil then o.wgmma_pending = 0 end
  return o, why
end

local OPTS = {intrin = "string", BM = "positive", BN = "positive", BK = "positive", stages = "positive", epilogue = "string",
              unroll = "boolean", block = "string", dtype = "dtype", vec = "positive", tma = "boolean", wgmma_pending = "nonneg",
              warp_specialize = "boolean", a_stage = "string", a_operand = "string",
              persistent = function(v)
                if v ~= true and v ~= false and not (math.type(v) == "integer" and v > 0) then return "true, false or a number of CTAs" end
              end,
              cluster = function(v)
                if type(v) ~= "table" or #v ~= 2 or math.type(v[1]) ~= "integer" or math.type(v[2]) ~= "integer" or v[1] < 1 or
                   v[2] < 1 or v[1] * v[2] > 8 then
                  return "a list {cm, cn} of positive integers, at most 8 CTAs"
                end
              end,
              ws_regs = function(v)
                if type(v) ~= "table" or #v ~= 2 or math.type(v[1]) ~= "integer" or math.type(v[2]) ~= "integer" then
                  return "a list {producer registers, consumer registers}"
                end
              end,
              epilogue_store = "string", epilogue_vec = "positive", row_sums = "string", row_sums_after = "boolean",
              tma_store_boxes = "boolean", tma_store_wait = "string", row_sums_split = "positive", pingpong = "boolean",
              persistent_tail = "boolean", row_sums_in_flight = "boolean"}
M.OPTS = OPTS
-- a_im2col (with a_stage and tma): the convolution {pt, pl, sh, sw, dh, dw, P, Q, R, S} whose im2col
-- the a_stage block computes from an NHWC X; the A tile is then one TMA copy in im2col mode (tensor
-- map cuTensorMapEncodeIm2col, PTX cp.async.bulk.tensor .im2col; inject_tma_pipeline's tma_im2col
-- copy, which checks the block against it), issued like B's -- by the leader, or the producer
-- warpgroup's lane 0 with warp_specialize -- instead of the gathering producer's cp.async
M.TILE_OPTS[#M.TILE_OPTS + 1] = "a_im2col"
OPTS.a_im2col = function(v)
  if type(v) ~= "table" or #v ~= 10 then return "a list of 10 integers {pt, pl, sh, sw, dh, dw, P, Q, R, S}" end
  for _, x in ipairs(v) do if math.type(x) ~= "integer" then return "a list of 10 integers {pt, pl, sh, sw, dh, dw, P, Q, R, S}" end end
end

-- the wgmma row of the block's dtypes (include/tir/mma.h), or an error naming the supported ones
local function row_for(info, P)
  local rows, known = {}, {}
  for _, r in ipairs(require("tir.core").mma_configs()) do
    if r.family == "wgmma" then
      rows[#rows + 1] = r
      known[#known + 1] = ("%s x %s -> %s"):format(r.a, r.b, r.c)
      if r.a == info.a_dtype and r.b == info.b_dtype and r.c == info.c_dtype then return r end
    end
  end
  raise("TypeError", P, "block '%s' multiplies %s x %s into %s, which intrin = \"wgmma\" does not run; supported: %s", info.name,
        info.a_dtype, info.b_dtype, info.c_dtype, table.concat(known, "; "))
end

--- Schedules the block (default "C") of tc_gemm.workload(M, N, K, dtype, out, pad, "NT") for
-- wgmma; returns the Schedule.  opts: BM (64 or 128: one or two warpgroups), BN (the wgmma N: a
-- valid N of the row, at most 256), BK (16, 32 or 64 for 16-bit inputs, 32, 64 or 128 for int8:
-- BK * element bytes is the swizzle, 32, 64 or 128 bytes), stages (cp.async pipeline depth, or
-- with tma = true the TMA + mbarrier pipeline's),
-- epilogue ("D": the fp16 cast fused into the store), a_stage (a block computing A into a global
-- buffer that becomes the shared A tile itself -- set_scope + compute_at, so what it computes, e.g.
-- conv2d_tc's im2col gather with its zero fill, runs in the copy into shared memory), unroll, wgmma_pending (0 or 1; with tma a stage
-- is released by an mbarrier arrive once the wgmma groups reading it are complete: 1 releases the
-- previous step's stage after this step's wgmma_wait_group 1), warp_specialize (with tma: a
-- producer warpgroup of its own issues the TMA copies, the BM / 64 warpgroups only compute;
-- inject_warp_specialization), ws_regs ({producer, consumer} registers for setmaxnreg; default 40
-- and what the rest of the CTA's registers give each consumer thread: 232 at BM = 128; none at BM = 64), epilogue_store
-- ("direct", the default: each thread stores its accumulator fragment to global memory; "staged":
-- even a plain fp16 cast epilogue runs on the staged path (tc_gemm_wgmma_epilogue.lua: the
-- accumulators through a shared tile per warpgroup, then epilogue_vec consecutive outputs a thread,
-- 8 fp16 = one 16-byte store, instead of the fragment's 4-byte pairs); "tma": each
-- warpgroup stores its 64 x BN tile into a dense shared tile (wgmma_store) that one TMA store copies
-- out, inject_tma_store.c; with warp_specialize its barriers are the consumers' named barrier, and the wait
-- for the store's read of the tile precedes the tile's next writes), tma_store_wait ("reuse", the
-- default: that deferred wait in the consumers' branch and under a persistent tile loop; "store": right after the store), a_operand
-- ("shared", the default, or "register": each k step loads the warpgroup's 64 x BK A tile from
-- shared memory into registers with ldmatrix -- a "wgmma.matrix_a" fragment, PTX ISA
-- 9.7.15.5.1.1.1 -- and wgmma reads A from there, B from shared memory; where a prologue on A
-- (dequantization, a gather) can run in registers; wgmma_pending defaults to 0 then, and 1 is refused),
-- cluster ({cm, cn}, with tma: thread-block clusters of cm x cn CTAs -- cm along M sharing B tiles,
-- cn along N sharing A tiles; each CTA loads 1/cm of the B tile and 1/cn of the A tile and
-- multicasts it to the CTAs that share it, a stage refilled once the consumers of all of them have
-- released it; inject_tma_pipeline's tma_cluster / tma_multicast), row_sums (a quantized GEMM's sums
-- of A's rows from the shared A tiles, tc_gemm_row_sums.lua; row_sums_after = true puts them after
-- the step's wgmma group is issued instead of before: they run while it is in flight; row_sums_split = 2:
-- each row's BK columns summed by two threads of its warpgroup, all 128 of them busy, half the latency
-- before the wgmma issue, tc_gemm_row_sums.fuse_split), pingpong (true: with warp_specialize, tma,
-- persistent and BM = 64, two consumer warpgroups each compute whole tiles, taking the persistent
-- grid's tiles in turn, so one's epilogue runs under the other's main loop; CUTLASS's
-- KernelTmaWarpSpecializedPingpong, inject_warp_specialization's teams; direct stores only).  Every option
-- and shape is checked first; errors are tir.Errors from "tc_gemm.schedule".
function M.schedule(sch, o, P, analyze)
  util.check_helper("tc_gemm_wgmma.schedule", "tc_gemm.schedule(func, {intrin = \"wgmma\", ...})", sch, o)
  if type(analyze) ~= "function" then
    raise("TypeError", "tc_gemm_wgmma.schedule", "is tc_gemm.schedule's helper: call tc_gemm.schedule(func, {intrin = \"wgmma\", ...})")
  end
  local info = analyze(sch, sch:get_block(o.block or "C"), P)
  local row = row_for(info, P)
  if info.layout ~= "NT" then
    raise("ValueError", P, "intrin = \"wgmma\" runs K-major operands (A stored M x K, B stored N x K: tc_gemm.workload(..., \"NT\")); " ..
          "block '%s' has layout %s", info.name, info.layout)
  end
  if info.batch > 0 then raise("ValueError", P, "intrin = \"wgmma\" has no batch dimensions yet (block '%s')", info.name) end
  local esize = tonumber(row.a:match("%d+$")) // 8
  local BM, BN, BK = o.BM, o.BN, o.BK
  if BM ~= 64 and BM ~= 128 and BM ~= 192 and BM ~= 256 then
    raise("ValueError", P, "BM must be 64, 128, 192 or 256 (64 rows a consumer warpgroup), got %d", BM)
  end
  local nv = false
  for _, v in ipairs(row.n_valid) do nv = nv or v == BN end
  if not nv then raise("ValueError", P, "BN = %d is not a valid wgmma N for %s (valid: %s)", BN, row.name, table.concat(row.n_valid, ", ")) end
  local sw = BK * esize
  if sw ~= 32 and sw ~= 64 and sw ~= 128 then
    raise("ValueError", P, "BK * %d bytes = %d: the shared rows must be exactly a swizzle width (32, 64 or 128 bytes), so BK must be %d, " ..
          "%d or %d for %s", esize, sw, 32 // esize, 64 // esize, 128 // esize, row.a)
  end
  if BK % row.k ~= 0 then raise("ValueError", P, "BK = %d is not a multiple of the instruction's k = %d", BK, row.k) end
  local ext = info.extents
  if o.epilogue_store ~= nil and o.epilogue_store ~= "direct" and o.epilogue_store ~= "staged" and o.epilogue_store ~= "tma" then
    raise("ValueError", P, "epilogue_store must be \"direct\", \"staged\" or \"tma\", got %s", util.show(o.epilogue_store))
  end
  if o.tma_store_wait ~= nil and o.epilogue_store ~= "tma" then
    raise("ValueError", P, "tma_store_wait orders the TMA-store epilogue's wait: it needs epilogue_store = \"tma\"")
  end
  if o.tma_store_wait ~= nil and o.tma_store_wait ~= "reuse" and o.tma_store_wait ~= "store" then
    raise("ValueError", P, "tma_store_wait must be \"reuse\" (wait for the tile's read before its next writes) or \"store\" "..
          "(right after the store), got %s", util.show(o.tma_store_wait))
  end
  if o.tma_store_boxes ~= nil and o.epilogue_store ~= "tma" then
    raise("ValueError", P, "tma_store_boxes chooses the layout of the TMA-store epilogue's tile: it needs epilogue_store = \"tma\"")
  end
  if o.epilogue_store == "staged" and not o.epilogue then
    raise("ValueError", P, "epilogue_store = \"staged\" runs the epilogue block from the staged accumulators: give epilogue (e.g. \"D\")")
  end
  for q, t in ipairs({BM, BN, BK}) do
    local e = ext[#ext - 3 + q]
    if not e then raise("ValueError", P, "block '%s' has a symbolic extent; intrin = \"wgmma\" needs constant M, N, K", info.name) end
    if e % t ~= 0 then
      raise("ValueError", P, "%s = %d is not a multiple of %s = %d", ({"M", "N", "K"})[q], e, ({"BM", "BN", "BK"})[q], t)
    end
  end
  local wgs = BM // 64
  local vec = o.vec or 16 // esize
  -- (8-byte copies: conv2d_tc's gather of 8-byte pixels, conv1's C = 3 padded to 4; an 8-byte piece
  -- never straddles a 16-byte swizzle chunk, so the swizzled layout is the same)
  if vec * esize ~= 16 and vec * esize ~= 8 then
    raise("ValueError", P, "vec must be %d (16-byte cp.async copies of %s) or %d (8-byte copies)", 16 // esize, row.a, 8 // esize)
  end
  local pend0 = (o.stages > 1 and not o.tma) and o.wgmma_pending or 0
  local smem = (o.stages + pend0) * (BM + BN) * BK * esize
  if smem > 227 * 1024 then
    raise("ValueError", P, "(stages%s) * (BM + BN) * BK * %d = %d bytes of shared memory; the H100/H200 allow 227 KB per block",
          pend0 > 0 and " + 1 (wgmma_pending)" or "", esize, smem)
  end
  local EP = require("tir.schedules.tc_gemm_wgmma_epilogue") -- fused epilogues (and row sums of A)
  EP.validate(sch, o, row, P)

  if o.row_sums_split ~= nil and not o.row_sums then
    raise("ValueError", P, "row_sums_split splits the row sums of A (option row_sums, a quantized GEMM with a weight zero point); none here")
  end
  if o.row_sums_in_flight ~= nil and not o.row_sums then
    raise("ValueError", P, "row_sums_in_flight places the row sums of A (option row_sums, a quantized GEMM with a weight zero point); none here")
  end
  if o.row_sums_after ~= nil and not o.row_sums then
    raise("ValueError", P, "row_sums_after orders the row sums of A (option row_sums, a quantized GEMM with a weight zero point); none here")
  end
  if o.wgmma_pending > 1 then raise("ValueError", P, "wgmma_pending must be 0 or 1 (wgmma groups left in flight per step), got %d", o.wgmma_pending) end
  -- with TMA (inject_tma_pipeline) a stage is released (mbarrier arrive) once the wgmma groups
  -- that read it are complete: with one group in flight, the previous step's stage
  local pend = o.stages > 1 and o.wgmma_pending or 0
  -- pingpong = true: two consumer warpgroups, each computing whole BM = 64 tiles, take the tiles of
  -- the persistent grid in turn (inject_warp_specialization's ping-pong teams)
  local teams = 1
  if o.pingpong then
    if not (o.warp_specialize and o.tma and o.persistent) then
      raise("ValueError", P, "pingpong = true needs warp_specialize = true, tma = true and persistent (two consumer warpgroups take " ..
            "the tiles of the persistent grid in turn, fed by the producer warpgroup)")
    end
    if BM ~= 64 then
      raise("ValueError", P, "pingpong = true: each consumer warpgroup computes a whole tile of 64 rows (one m64 wgmma a k step): " ..
            "BM must be 64, got %d", BM)
    end
    if o.cluster and o.cluster[1] * o.cluster[2] > 1 then raise("ValueError", P, "pingpong = true with cluster is not supported") end
    if o.epilogue_store == "tma" or o.epilogue_store == "staged" or o.row_sums then
      raise("ValueError", P, "pingpong = true with %s: the two consumer warpgroups work on different tiles at once, and this shared " ..
            "tile would be one for both; use the direct store (epilogue_store = \"direct\")",
            o.row_sums and "row_sums" or ("epilogue_store = \"" .. o.epilogue_store .. "\""))
    end
    teams = 2
  end
  local ws_regs
  if o.warp_specialize then
    if not o.tma then
      raise("ValueError", P, "warp_specialize = true needs tma = true (the producer warpgroup issues TMA copies; cp.async copies are "..
            "issued by every thread)")
    end
    if o.stages < 2 then raise("ValueError", P, "warp_specialize = true needs stages >= 2 (the producer fills one stage while the consumers read another), got %d", o.stages) end
    -- setmaxnreg (PTX ISA) moves registers inside the CTA's allocation, which ptxas makes the
    -- launch bounds' cap R0 = 65536 / threads (to a multiple of 8) when the kernel uses it:
    -- producer Rp <= R0 <= consumer Rc, 128 Rp + 128 * wgs * Rc <= threads * R0.  One consumer
    -- warpgroup (256 threads) caps nothing: no setmaxnreg there (inject_warp_specialization.c)
    local threads = 128 * (wgs * teams + 1)
    local r0 = 65536 // threads // 8 * 8
    -- (a gathering producer, a_stage: its 128 threads compute the gather's addresses, so more than
    -- the 40 registers of a TMA-issuing one)
    local rp = o.ws_regs and o.ws_regs[1] or (r0 <= 255 and (o.a_stage and 56 or 40) or 0)
    local rc = o.ws_regs and o.ws_regs[2] or (r0 <= 255 and (threads * r0 - 128 * rp) // (128 * wgs * teams) // 8 * 8 or 0)
    if o.ws_regs then
      if r0 > 255 then
        raise("ValueError", P, "ws_regs: with BM = %d (one consumer warpgroup, %d threads) setmaxnreg has no register cap to move; "..
              "leave ws_regs out", BM, threads)
      end
      for q, r in ipairs({rp, rc}) do
        if r < 24 or r > 256 or r % 8 ~= 0 then
          raise("ValueError", P, "ws_regs: %s registers %d: setmaxnreg takes a multiple of 8 in 24 .. 256", q == 1 and "producer" or "consumer", r)
        end
      end
      if rp > r0 or rc < r0 or 128 * rp + 128 * wgs * teams * rc > threads * r0 then
        raise("ValueError", P, "ws_regs = {%d, %d}: the %d threads start with %d registers each; the producer's may not exceed that, "..
              "the consumers' not fall below it, and 128 x %d + %d x 128 x %d must fit in %d", rp, rc, threads, r0, rp, wgs, rc, threads * r0)
      end
    end
    ws_regs = {rp, rc}
  elseif o.ws_regs then
    raise("ValueError", P, "ws_regs is for warp_specialize = true")
  end
  local cm, cn = 1, 1
  if o.cluster then
    cm, cn = o.cluster[1], o.cluster[2]
    if cm * cn > 1 and not o.tma then raise("ValueError", P, "cluster = {%d, %d} needs tma = true (the CTAs share TMA copies)", cm, cn) end
    if cm * cn > 1 and o.persistent and not o.warp_specialize then
      raise("ValueError", P, "cluster = {%d, %d} with persistent needs warp_specialize = true (the pipeline re-armed per tile would " ..
            "need a cluster barrier per tile)", cm, cn)
    end
    if (ext[#ext - 2] // BM) % cm ~= 0 or (ext[#ext - 1] // BN) % cn ~= 0 then
      raise("ValueError", P, "cluster = {%d, %d}: the %d x %d tiles of %d x %d do not split into whole clusters", cm, cn,
            ext[#ext - 2] // BM, ext[#ext - 1] // BN, BM, BN)
    end
  end
  -- a_operand = "register": A from the registers of each warpgroup (a "wgmma.matrix_a" fragment
  -- loaded from the shared A tile by ldmatrix; tir.intrin.cuda.wgmma), B from shared memory
  local ra = o.a_operand == "register"
  if o.a_operand ~= nil and o.a_operand ~= "shared" and not ra then
    raise("ValueError", P, "a_operand must be \"shared\" or \"register\", got %s", util.show(o.a_operand))
  end
  if ra and pend > 0 then
    raise("ValueError", P, "a_operand = \"register\" with wgmma_pending = 1: block '%s''s A fragment (one \"wgmma.matrix_a\" buffer of " ..
          "64 x %d %s a warpgroup, loaded by ldmatrix each k step) is read by the step's wgmma group until its wgmma_wait_group, so " ..
          "with that group in flight the next step's ldmatrix would overwrite it (PTX ISA 9.7.15.4; two alternating fragments are " ..
          "not implemented): leave wgmma_pending out (0 with a register A) or pass 0", info.name, BK, row.a)
  end
  if ra and o.row_sums then raise("ValueError", P, "a_operand = \"register\" with row_sums is not supported yet") end
  -- row_sums_in_flight: the step's wgmma intrinsic commits without waiting; the row sums after it end
  -- with the wait (tc_gemm_row_sums.fuse_split), so they run while the step's group is in flight
  if o.row_sums_in_flight then
    if not (o.row_sums and o.row_sums_split == 2 and o.tma and pend == 1 and not o.warp_specialize and not o.row_sums_after) then
      raise("ValueError", P, "row_sums_in_flight runs the row sums between the step's wgmma commit and its wait: it needs row_sums with " ..
            "row_sums_split = 2 (every thread of the warpgroup runs the sums, and the wait is .sync.aligned), tma = true, " ..
            "wgmma_pending = 1, no warp_specialize and no row_sums_after")
    end
  end
  local names = require("tir.intrin.cuda").wgmma(row, BN, "K", BK, o.row_sums_in_flight and "commit" or pend, o.a_operand)
  local C = sch:get_block(o.block or "C")
  local mode = ("%dB"):format(sw) -- the PTX swizzle mode of the tiles (storage_swizzle)
  -- the padded workload (tc.workload(..., pad), any M, N, K): its stages A_pad / B_pad (A, B or 0
  -- outside them) become the shared tiles, so the zero fill runs in the guarded copy into shared
  -- memory; C (the padded extents) goes back to global memory and D (C cut to M x N) is a kernel
  -- of its own, as on tc_gemm's mma path
  local padded = pcall(function() return sch:get_block("A_pad") end) and pcall(function() return sch:get_block("B_pad") end)
  if o.a_stage then
    if not pcall(function() return sch:get_block(o.a_stage) end) then raise("ValueError", P, "a_stage block '%s' does not exist", o.a_stage) end
    if padded then raise("ValueError", P, "a_stage with the padded workload: its A_pad is the A stage already") end
    if o.tma and not o.warp_specialize and not o.a_im2col then
      raise("ValueError", P, "a_stage computes the A tile in its copy (cp.async); tma = true copies boxes of a global tensor (with " ..
            "warp_specialize = true the producer warpgroup gathers A by cp.async while B comes by TMA; with a_im2col one TMA " ..
            "im2col copy brings it)")
    end
  end
  if o.a_im2col and not (o.a_stage and o.tma) then
    raise("ValueError", P, "a_im2col is the convolution of an a_stage im2col block copied by TMA: it needs a_stage and tma = true")
  end
  if padded then
    if o.tma then raise("ValueError", P, "tma = true needs M, N, K multiples of the tiles (TMA copies whole boxes, not the padded workload)") end
    if o.epilogue then
      raise("ValueError", P, "the padded workload's epilogue '%s' is its write-back kernel (C cut to M x N); leave epilogue out", o.epilogue)
    end
  end
  local TCM = require("tir.schedules.tc_gemm") -- (not at load: tc_gemm requires this file)
  local AS = TCM.shared_stage(sch, C, padded and "A_pad" or o.a_stage, info.a_index)
  local BS = TCM.shared_stage(sch, C, padded and "B_pad" or nil, info.b_index)
  sch:storage_swizzle(AS, 0, mode); sch:storage_swizzle(BS, 0, mode)
  local AR = ra and sch:cache_read(C, info.a_index, "wgmma.matrix_a") or nil -- the A fragment, read from AS
  local CF = sch:cache_write(C, 0, "wgmma.accumulator")
  local store, CS = names.store.global, nil
  local prior = o.row_sums ~= nil -- the epilogue reads the row sums, computed before the GEMM
  if o.epilogue then store, CS = EP.inline(sch, o, row, names, CF, prior) end
  if CS and teams > 1 then
    raise("ValueError", P, "pingpong = true with the staged epilogue '%s': its shared tile would be one for both consumer warpgroups", o.epilogue)
  end
  local TS, TSB -- epilogue_store = "tma": the shared tile's copy to global memory, TMA stores (of TSB-column boxes)
  if o.epilogue_store == "tma" then
    if padded then raise("ValueError", P, "epilogue_store = \"tma\" needs M, N multiples of the tiles (not the padded workload)") end
    -- the tile the TMA store reads: the accumulators themselves (converted by the wgmma store), or
    -- with a staged epilogue its outputs (the epilogue block CF writes it from the staged accumulators)
    TS = sch:cache_write(CF, 0, "shared")
    if not CS then
      store = o.epilogue and names.store_f16.shared or names.store.shared
      -- the tile in boxes of 128-byte rows, [BN / b, BM, b] with the 128-byte swizzle: one TMA box of
      -- 64 rows x b columns per box (the swizzle span bounds a swizzled box's rows, PTX ISA 5.5), so the
      -- wgmma store's 8 rows of a column chunk land in 8 different bank groups (a dense [64, BN] tile
      -- puts them in one: 8-way conflicts at BN * 2 bytes = 512-byte rows)
      -- (BN = b: the [BM, BN] tile is one box a warpgroup already, only swizzled; BN < b: no boxes)
      local box, b = names.store_box, 128 // (tonumber(row.c:match("%d+$")) // 8)
      if o.epilogue then box, b = names.store_f16.shared_box, 64 end
      if o.tma_store_boxes ~= false and BN >= b then
        TSB = b
        if box then store = box end
      end
    elseif o.tma_store_boxes ~= nil then
      -- (the staged epilogue writes its output tile row by row, 16-byte pieces of one row a thread:
      -- conflict-free as a dense tile, one box of 64 x BN)
      raise("ValueError", P, "tma_store_boxes lays out the accumulators' TMA-store tile; epilogue '%s' runs staged and writes a " ..
            "dense output tile of its own: leave tma_store_boxes out", o.epilogue)
    end
  end
  info = analyze(sch, C, P)
  local lp = info.loops
  local i, j, k = lp[#lp - 2], lp[#lp - 1], lp[#lp]
  local by, wg, i64 = sch:split(i, {nil, wgs, 64})
  local bx, jn = sch:split(j, {nil, BN})
  local ko, kin = sch:split(k, {nil, BK})
  sch:reorder(by, bx, wg, ko, i64, jn, kin)
  if o.persistent_tail and not o.persistent then raise("ValueError", P, "persistent_tail = true needs persistent (true or a CTA count)") end
  if o.persistent then
    -- a persistent grid (tc_gemm's mma-path scheme): G CTAs, CTA b computes tiles b, b + G, ...
    -- in an order grouped by 8 (4, 2) rows of tiles for L2 reuse; G divides the tile count (no
    -- tail).  With warp_specialize the producer runs ahead into the next tile
    -- (inject_warp_specialization)
    if not o.tma then raise("ValueError", P, "persistent = true needs tma = true (the TMA pipeline walks the tiles)") end
    -- (tc_gemm.persistent_tiles: the largest G <= want over the groups 8, 4, 2, 1 for which the
    -- tile order stays affine -- bind's compact data flow)
    local want = o.persistent == true and TCM.device_sm_count() or o.persistent
    local ny, nx = ext[#ext - 2] // BM, ext[#ext - 1] // BN
    local tile, G = TCM.persistent_tiles(sch, by, bx, ny, nx, want, o.persistent ~= true and not o.persistent_tail and P or nil,
                                         cm * cn > 1 and {cm, cn} or nil)
    if o.persistent_tail then
      -- want CTAs whatever the tile count's divisors: the last round's spare CTAs compute the last
      -- tile again (lower_persistent_tail; the tile's store overwrites D with the same values).  A
      -- cluster's CTAs share operand tiles by multicast, which a repeated tile would break
      if cm * cn > 1 then raise("ValueError", P, "persistent_tail = true with cluster = {%d, %d}: a cluster's CTAs multicast shared tiles", cm, cn) end
      local T, G2 = ny * nx, math.min(want, ny * nx)
      if (T + G2 - 1) // G2 < T // G then sch:annotate(tile, "persistent_tail", G2) end
    end
  else
    sch:bind(by, "blockIdx.y"); sch:bind(bx, "blockIdx.x")
  end
  sch:bind(wg, "threadIdx.y")
  -- the write-back (with an epilogue staged: the accumulators' shared tile, then the epilogue)
  local store_loop
  if CS then store_loop = EP.schedule_staged(sch, o, CS, CF, wg, prior, TS) else sch:reverse_compute_at(CF, wg) end
  if TS then
    if not CS then sch:reverse_compute_at(TS, wg) end -- each warpgroup's 64 rows: a box of 64 x BN, or BN / TSB boxes of 64 x TSB
    if TSB and BN > TSB then
      -- (after the compute_at: its region analysis takes the plain tile's affine indices)
      sch:transform_layout(CF, {"write", 0}, function(r, c) return c // TSB, r, c % TSB end)
      local tl = {sch:get_loops(TS)}
      local jo, ji = sch:split(tl[#tl], {nil, TSB})
      sch:reorder(jo, tl[#tl - 1], ji)
    end
    -- (1: with warp_specialize the wait for the TMA read of the tile precedes its next writes, so
    -- the consumers start the next tile meanwhile; 2: right after the store -- inject_tma_store.c)
    sch:annotate(TS, "tma_store", o.tma_store_wait == "store" and 2 or 1)
  end
  -- row_sums (a quantized GEMM's sums of A's rows): summed from the shared A tile of each k step
  -- (tc_gemm_row_sums.lua): warpgroup w sums its own 64 rows, row 64 w + r on thread r < 64 (the
  -- sums' region is then exactly the tile's rows: more threads than rows would widen the A
  -- copy's region), so the 8 rows of a quarter warp read 8 different 16-byte chunk columns of
  -- the swizzled tile
  -- (quantized_matmul's a_sums = "ones" form, an [M, 8] product with ones: one more wgmma m64n8k32
  -- per 32 columns in the step's group instead, tc_gemm_row_sums.fuse_ones)
  if o.row_sums then
    local RS = require("tir.schedules.tc_gemm_row_sums")
    local okr, rb = pcall(function() return sch:get(sch:get_block(o.row_sums)) end)
    if okr and #rb.writes == 1 and #rb.writes[1].buffer.shape == 2 then
      if o.row_sums_after then raise("ValueError", P, "row_sums_after orders the CUDA-core row sums; the a_sums = \"ones\" form runs in the step's wgmma group") end
      if o.row_sums_split then
        raise("ValueError", P, "row_sums_split splits the CUDA-core row sums over threads; the a_sums = \"ones\" form runs them as wgmma m64n8k32 (leave row_sums_split out)")
      end
      -- (the ones tile under the outermost CTA loop: once per CTA, also in a persistent grid)
      ko = RS.fuse_ones(sch, o, ({sch:get_loops(C)})[1], wg, ko, wgs, P)
    elseif o.row_sums_split and o.row_sums_split > 1 then
      ko = RS.fuse_split(sch, o, wg, ko, wgs, P)
    else
      ko = RS.fuse(sch, o, wg, ko, {{"threadIdx.y", wgs}, {"threadIdx.x", 64}}, P)
    end
  end
  -- (with row sums the B copy goes first: the sums read A, and TMA copies must lead the k step)
  -- (register A: the warpgroup's 64 x BK fragment goes under the k step first, then its shared tile
  -- before it; ldmatrix per 64 x k slab)
  if AR then sch:compute_at(AR, ko) end
  sch:compute_at(AS, ko); sch:compute_at(BS, ko, false, (o.row_sums and -2 or -1) - (AR and 1 or 0))
  if AR then
    local al = {sch:get_loops(AR)}
    sch:tensorize(al[#al - 1], names.load_a)
  end
  -- cooperative 16-byte copies of the shared tiles by all warpgroups (threadIdx.x: 128 threads);
  -- tma: one TMA copy per tile instead (inject_tma_pipeline; the copy loops stay as they are, the
  -- pass adds the 128 threadIdx.x lanes)
  -- a_stage with tma (and warp_specialize): the A tile is gathered by the producer warpgroup's 128
  -- threads alone (cp_async_gather: inject_tma_pipeline runs the copy there, each thread's cp.async
  -- arriving on the stage's full barrier), B still one TMA copy
  local gather = o.tma and o.a_stage ~= nil and not o.a_im2col
  for _, b in ipairs(o.tma and (gather and {AS} or {}) or {AS, BS}) do
    local l = {sch:get_loops(b)}
    local f = sch:fuse(l[#l - 1], l[#l])
    if gather then
      local outer, tx, v = sch:split(f, {nil, 128, vec})
      sch:bind(tx, "threadIdx.x")
      sch:vectorize(v)
      if o.unroll then sch:unroll(outer) end
    else
      local outer, ty, tx, v = sch:split(f, {nil, wgs, 128, vec})
      sch:bind(ty, "threadIdx.y"); sch:bind(tx, "threadIdx.x")
      sch:vectorize(v)
      if o.unroll then sch:unroll(outer) end
    end
  end
  local init = sch:decompose_reduction(C, ko)
  sch:tensorize(i64, names.sync)
  local il = {sch:get_loops(init)}
  sch:tensorize(il[#il - 1], names.fill)
  if not store_loop then
    local sl = {sch:get_loops(CF)}
    store_loop = sl[#sl - 1]
  end
  local ST = sch:tensorize(store_loop, store)
  if CS then EP.pad_staged(sch, ST) end
  -- (on the tensorized store: a block's annotations do not survive its tensorize)
  if TSB then sch:storage_swizzle(ST, 0, "128B") end
  if padded then
    local D = sch:get_block("D")
    local bxd, txd = sch:split(sch:fuse(sch:get_loops(D)), {nil, 256})
    sch:bind(bxd, "blockIdx.x"); sch:bind(txd, "threadIdx.x")
  end
  if o.tma then
    -- full/empty mbarrier pipeline of o.stages stages (docs/TENSOR_CORES.md "TMA pipelines"); the
    -- box lands with the tiles' 32/64/128-byte swizzle, which the wgmma descriptors read
    if o.a_im2col then sch:annotate(AS, "tma_im2col", o.a_im2col)
    else sch:annotate(AS, gather and "cp_async_gather" or "tma_copy", 1) end
    sch:annotate(BS, "tma_copy", 1)
    sch:annotate(ko, "tma_pipeline_stages", o.stages)
    -- a producer warpgroup issuing the copies, the others computing (inject_warp_specialization)
    if ws_regs then sch:annotate(ko, "warp_specialize", teams > 1 and {1, ws_regs[1], ws_regs[2], teams} or {1, ws_regs[1], ws_regs[2]}) end
    -- clusters: rank = (column in cluster) + cn (row in cluster) both ways (grid x = the N tiles,
    -- or the persistent CTAs: tc_gemm.persistent_tiles puts the cn columns fastest), so the cn
    -- CTAs of a row (ranks stride 1) share A, the cm of a column (stride cn) share B
    if cm * cn > 1 then
      sch:annotate(ko, "tma_cluster", o.persistent and {cm * cn, 1, 1} or {cn, cm, 1})
      if cn > 1 then sch:annotate(AS, "tma_multicast", {1, cn}) end
      if cm > 1 then sch:annotate(BS, "tma_multicast", {cn, cm}) end
    end
  elseif o.stages > 1 then
    if o.row_sums then
      -- the k step is (B copy, A copy, row sums, wgmma): the sums and the wgmma group read the
      -- tiles of stages - 1 steps ago
      sch:annotate(ko, "software_pipeline_stage", {0, 0, o.stages - 1, o.stages - 1})
      sch:annotate(ko, "software_pipeline_order", {0, 1, 2, 3})
      if pend == 1 then sch:annotate(ko, "software_pipeline_async_reads", {0, 0, 0, 1}) end
    elseif AR then
      -- the k step is (A copy, B copy, A fragment load, wgmma): the load and the group read the
      -- tiles of stages - 1 steps ago (wgmma_pending = 0 here)
      sch:annotate(ko, "software_pipeline_stage", {0, 0, o.stages - 1, o.stages - 1})
      sch:annotate(ko, "software_pipeline_order", {0, 1, 2, 3})
    else
      sch:annotate(ko, "software_pipeline_stage", {0, 0, o.stages - 1})
      sch:annotate(ko, "software_pipeline_order", {0, 1, 2})
      -- with a group left in flight (wgmma_pending = 1) the step's tiles are read until the next
      -- step's wgmma_wait_group: one more version of each tile, so that no copy refills it earlier
      if pend == 1 then sch:annotate(ko, "software_pipeline_async_reads", {0, 0, 1}) end
    end
    sch:annotate(ko, "software_pipeline_async_stages", {0})
    sch:annotate(ko, "software_pipeline_early_wait", 1)
  end
  return sch
end

return M
