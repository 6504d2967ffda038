--- tir.schedules.tc_gemm_row_sums: the row sums of A (a quantized GEMM's sum_k A[i, k], needed
-- for a weight zero point zb != 0: tir.ops.quantized_matmul's block "a_row_sum") computed
-- inside tc_gemm's kernel from the shared A tiles the GEMM already loads (tc_gemm option
-- row_sums = the block's name).  Public schedule primitives only; after it the printed IR has
-- the sums' block inside the GEMM's k loop, reading A_shared:
--   * set_scope: the sums live in shared memory, one int32 per row of the CTA (the epilogue's
--     lanes read other rows than the threads that sum them);
--   * compute_at under the warp loop (ahead of the GEMM: its producer, the copy of A, comes
--     first), the rows split over the CTA's threads (threadIdx.y, .z, .x: one row each);
--   * its k loop split by BK and the k-step loop merged with the GEMM's (Schedule:merge), so
--     each k step sums the BK columns of the tile just staged (the cache_read of A already
--     feeds both blocks, so the compute_at of A_shared that follows covers both);
--   * the BK-wide inner loop tensorized with tir.intrin.dp4a's row-sum intrinsic: per 16
--     columns one 16-byte load and four dp4a against 0x01010101, one update of the sum per k
--     step.
-- Cost per k step of BK = 128: 8 16-byte shared loads + 32 dp4a per thread (conflict-free with
-- the 16-byte row padding: the 8 rows of a quarter warp fall in 8 bank groups), against the
-- warp's 128 mma.sync; no extra global traffic.
local M = {}
local util = require("tir.util")

--- Moves block o.row_sums into the GEMM's nest; wz: the innermost thread loop of the GEMM
-- that the sums go under (its warp loop), ko: the GEMM's k-step loop; threads: the CTA's
-- threads as a list of {thread tag, extent}, outermost first (tc_gemm's mma.sync: {{"threadIdx.y",
-- wm}, {"threadIdx.z", wn}, {"threadIdx.x", 32}}); row i goes to the thread whose digits in that
-- order make i.  Returns the merged k-step loop (the GEMM's ko from then on).
function M.fuse(sch, o, wz, ko, threads, P)
  util.check_helper("tc_gemm_row_sums.fuse", "tc_gemm.schedule(func, {row_sums = name, ...})", sch, o, threads)
  local dp4a = require("tir.intrin.dp4a")
  local ok, rs = pcall(function() return sch:get_block(o.row_sums) end)
  if not ok then util.raise("ValueError", P, "row_sums: there is no block '%s'", o.row_sums) end
  local b = sch:get(rs)
  if #b.writes == 1 and #b.writes[1].buffer.shape == 2 then
    util.raise("ValueError", P, "row_sums: block '%s' is quantized_matmul's a_sums = \"ones\" form (a product with ones), which " ..
               "intrin = \"wgmma\" runs on its tensor cores; the mma.sync path sums rows on the CUDA cores: build the PrimFunc " ..
               "with a_sums = \"compute\"", o.row_sums)
  end
  if #b.writes ~= 1 or #b.writes[1].buffer.shape ~= 1 or b.writes[1].buffer.dtype ~= "int32" or #b.reads ~= 1 then
    util.raise("ValueError", P, "row_sums: block '%s' must sum the rows of A into an int32 vector (S[i] += A[i, k])", o.row_sums)
  end
  local a_dt = b.reads[1].buffer.dtype
  if a_dt ~= "int8" and a_dt ~= "uint8" then
    util.raise("ValueError", P, "row_sums: block '%s' reads %s; the row-sum intrinsic takes int8 or uint8", o.row_sums, a_dt)
  end
  if o.BK % 16 ~= 0 or o.BK > 256 then
    util.raise("ValueError", P, "row_sums needs BK a multiple of 16 up to 256 (the row-sum intrinsics), got %d", o.BK)
  end
  local n, factors = 1, {nil}
  for q, t in ipairs(threads) do n = n * t[2]; factors[q + 1] = t[2] end
  if o.BM % n ~= 0 and n % o.BM ~= 0 then
    util.raise("ValueError", P, "row_sums: BM = %d rows over %d threads (one row per thread): one must divide the other", o.BM, n)
  end
  sch:set_scope(rs, 0, "shared")
  -- (after_gemm: after the GEMM's k loop, index 1 of the warp loop's body, so that merging puts the
  -- sums after the GEMM's step: they run while the step's wgmma group is in flight)
  sch:compute_at(rs, wz, false, o.row_sums_after and 1 or -2)
  local l = {sch:get_loops(rs)}
  local i, k = l[#l - 1], l[#l]
  local kstep, kin = sch:split(k, {nil, o.BK})
  local parts = {sch:split(i, factors)}
  sch:reorder(kstep, table.unpack(parts), kin)
  for q, t in ipairs(threads) do sch:bind(parts[q + 1], t[1]) end
  local init = sch:decompose_reduction(rs, kstep)
  local il = {sch:get_loops(init)}
  for q, t in ipairs(threads) do
    local lp = il[#il - #threads + q]
    if sch:get(lp).thread_tag == "" then sch:bind(lp, t[1]) end
  end
  sch:tensorize(kin, dp4a.row_sum_name(a_dt, o.BK, "shared"))
  if o.row_sums_after then return sch:merge(ko, kstep) end
  return sch:merge(kstep, ko)
end

--- The row sums in tir.ops.quantized_matmul's a_sums = "ones" form (block o.row_sums writes an
-- int32 [M, 8] = sum_k A[i, k] * a_ones[j, k % 32], a_ones an int8 [8, 32] block of ones) on
-- wgmma, for tc_gemm_wgmma: the sums become one more wgmma m64n8k32 per 32 columns of each
-- warpgroup's A tile, against the ones tile in shared memory, issued in the step's GEMM group
-- (intrinsic pending "open": no commit of its own), so no CUDA-core work and no wait in the k loop
-- (the tensor cores do 8 / BN more MMA work: 3 % at BN = 256).  Public primitives only:
--   * a_ones: set_scope shared (rows of 32 bytes, the 32-byte swizzle the descriptor names),
--     compute_at the outermost CTA loop `cta` (once per CTA, also in a persistent grid), its 256
--     bytes over the CTA's threads;
--   * the sums: cache_write into a "wgmma.accumulator" (64 x 8 a warpgroup: 4 registers a thread),
--     compute_at the warpgroup loop wg, the k loop split by BK and merged with the GEMM's ko, each
--     32 columns tensorized with wgmma_sync_64x8x32_<t>s32_bk_open; the accumulator filled with 0
--     before the k loop (decompose_reduction) and stored to a shared [BM, 8] tile after it
--     (wgmma_store_64x8_s32_shared), which the epilogue reads (column 0).
-- wgs: the consumer warpgroups (BM / 64).  Returns the merged k-step loop.
function M.fuse_ones(sch, o, cta, wg, ko, wgs, P)
  util.check_helper("tc_gemm_row_sums.fuse_ones", "tc_gemm.schedule(func, {intrin = \"wgmma\", row_sums = name, ...})", sch, o, cta, wg, ko)
  local rs = sch:get_block(o.row_sums)
  local b = sch:get(rs)
  local ones
  for _, p in ipairs(sch:get_producers(rs)) do
    local pb = sch:get(p)
    if pb.writes[1].buffer.dtype == "int8" and #pb.reads == 0 then ones = p end
  end
  local shp = b.writes[1].buffer.shape
  if not ones or b.writes[1].buffer.dtype ~= "int32" or tonumber(tostring(shp[2])) ~= 8 then
    util.raise("ValueError", P, "row_sums: block '%s' must be tir.ops.quantized_matmul's a_sums = \"ones\" form (an int32 [M, 8] = " ..
               "sum_k A[i, 32 kao + kai] * a_ones[j, kai], a_ones an int8 block of ones)", o.row_sums)
  end
  local a_dt
  for _, rg in ipairs(b.reads) do if rg.buffer.dtype ~= "int8" or not a_dt then a_dt = rg.buffer.dtype end end
  local row
  for _, r in ipairs(require("tir.core").mma_configs()) do
    if r.family == "wgmma" and r.a == a_dt and r.b == "int8" and r.c == "int32" then row = r end
  end
  if not row then util.raise("ValueError", P, "row_sums: block '%s' reads %s; the wgmma row sums take int8 or uint8 A", o.row_sums, a_dt) end
  if o.BK % row.k ~= 0 then util.raise("ValueError", P, "row_sums needs BK a multiple of %d, got %d", row.k, o.BK) end
  sch:set_scope(ones, 0, "shared")
  sch:storage_swizzle(ones, 0, ("%dB"):format(row.k))
  local cuda = require("tir.intrin.cuda")
  local names = cuda.wgmma(row, 8, "K", row.k, "open")
  -- the accumulator and its write-back into the shared [BM, 8] tile the epilogue reads
  local W = sch:cache_write(rs, 0, "wgmma.accumulator")
  -- (placed while W's tile is "local", whose region is not widened over the thread loops as a
  -- shared buffer's is: each warpgroup then sums and stores its own 64 rows, the accumulator 4
  -- registers a thread; the tile is shared from then on, the epilogue's threads read other rows)
  sch:set_scope(W, 0, "local")
  sch:compute_at(W, wg, false, -1)
  sch:compute_at(rs, wg, false, -2)
  sch:set_scope(W, 0, "shared")
  local l = {sch:get_loops(rs)}
  local i, j, ko32, k32 = l[#l - 3], l[#l - 2], l[#l - 1], l[#l]
  local kstep, k4 = sch:split(ko32, {nil, o.BK // row.k})
  sch:reorder(kstep, k4, i, j, k32)
  if o.unroll then sch:unroll(k4) end
  local init = sch:decompose_reduction(rs, kstep)
  local il = {sch:get_loops(init)}
  sch:tensorize(il[#il - 1], names.fill)
  sch:tensorize(i, names.sync)
  local wl = {sch:get_loops(W)}
  sch:tensorize(wl[#wl - 1], names.store.shared)
  -- the ones tile: once per CTA, ahead of the warpgroups (their wgmma reads it from shared memory)
  sch:compute_at(ones, cta, false, -1)
  local ol = {sch:get_loops(ones)}
  local f = sch:fuse(ol[#ol - 1], ol[#ol])
  local _, ty, tx = sch:split(f, {nil, wgs, 128})
  sch:bind(ty, "threadIdx.y"); sch:bind(tx, "threadIdx.x")
  return sch:merge(kstep, ko)
end

--- tc_gemm_wgmma's row sums (the CUDA-core form: block o.row_sums, S[i] += A[i, k]) with each row
-- split over `split` threads of its warpgroup (row_sums_split; M.fuse gives a row one thread): the
-- k step's BK columns in `split` parts of BK / split, thread h * 64 + r of warpgroup w summing part
-- h of row 64 w + r -- all 128 threads of each warpgroup, so the sums that hold back the step's wgmma
-- issue take 1 / split of the time.  Public primitives only: split k into (k step, part, BK / split),
-- rfactor over the part (TVM rfactor: block "<name>_rf" sums each part into a shared [M, split]
-- buffer, the original block then adds the parts), the rf block compute_at the warpgroup loop and
-- merged with the GEMM's k steps, the adding block after the k loop (ahead of the epilogue), each
-- part's BK / split columns tensorized with the dp4a row-sum intrinsic.  Returns the merged k loop.
function M.fuse_split(sch, o, wg, ko, wgs, P)
  util.check_helper("tc_gemm_row_sums.fuse_split", "tc_gemm.schedule(func, {intrin = \"wgmma\", row_sums = name, row_sums_split = n})",
                    sch, o, wg, ko)
  local dp4a = require("tir.intrin.dp4a")
  local split = o.row_sums_split
  local rs = sch:get_block(o.row_sums)
  local b = sch:get(rs)
  local a_dt = b.reads[1].buffer.dtype
  if o.BK % (16 * split) ~= 0 then
    util.raise("ValueError", P, "row_sums_split = %d: each part of the BK = %d columns must be a multiple of 16 (the row-sum intrinsics)", split, o.BK)
  end
  if 64 * split > 128 then util.raise("ValueError", P, "row_sums_split = %d: a warpgroup's 128 threads split its 64 rows at most 2 ways", split) end
  local l = {sch:get_loops(rs)}
  local _, h = sch:split(l[#l], {nil, split, o.BK // split})
  local rf = sch:rfactor(h, 1)
  -- the adding block S[i] = sum_h S_rf[i, h]: before the epilogue, rows over the CTA's threads
  -- (right after the GEMM's k loop, index 1 of the warpgroup loop's [k loop, staged store, epilogue]:
  -- the parts' buffer then dies before the staged accumulator tile is first written, which can then
  -- reuse the pipeline tiles' bytes -- after the staged store it kept all three alive, 333 KB)
  sch:set_scope(rs, 0, "shared")
  sch:compute_at(rs, wg, false, 1)
  local wl = {sch:get_loops(rs)}
  local row = wl[#wl - 1]
  if sch:get(row).extent ~= o.BM then row = wl[#wl] end -- (the rows, not the parts)
  local wy, wr = sch:split(row, {wgs, 64})
  sch:bind(wy, "threadIdx.y"); sch:bind(wr, "threadIdx.x")
  -- the parts: rows (warpgroup, 64) x parts over (threadIdx.y, threadIdx.x = h * 64 + r)
  sch:set_scope(rf, 0, "shared")
  -- (row_sums_after: at index 1, between the k loop and the adding block, so that merging puts the
  -- parts after the GEMM's step: they run while the step's wgmma group is in flight)
  local after = o.row_sums_after or o.row_sums_in_flight
  sch:compute_at(rf, wg, false, after and 1 or -2)
  -- (its loops follow the rf block's iteration variables: the part, the row, the k step, the
  -- part's columns)
  local fl = {sch:get_loops(rf)}
  local hh, i, kstep, kin = fl[#fl - 3], fl[#fl - 2], fl[#fl - 1], fl[#fl]
  local ry, rr = sch:split(i, {wgs, 64})
  sch:reorder(kstep, ry, hh, rr, kin)
  sch:bind(ry, "threadIdx.y")
  sch:bind(sch:fuse(hh, rr), "threadIdx.x")
  local init = sch:decompose_reduction(rf, kstep)
  local il = {sch:get_loops(init)}
  for q = #il - 2, #il do
    local lp = il[q]
    if lp and sch:get(lp).thread_tag == "" then sch:bind(lp, q == #il - 1 and "threadIdx.y" or "threadIdx.x") end
  end
  -- the parts stored part-major ([split, M]): thread h * 64 + r's word at h * M + 64 w + r, so a
  -- warp's 32 read-modify-writes a step hit 32 banks (row-major [M, split] put lanes 2 words apart: 2-way)
  sch:transform_layout(rf, {"write", 0}, function(i, h) return h, i end)
  -- (row_sums_in_flight: the intrinsic ends with the step's wgmma_wait_group 1)
  sch:tensorize(kin, dp4a.row_sum_name(a_dt, o.BK // split, "shared", o.row_sums_in_flight and 1 or nil))
  if after then return sch:merge(ko, kstep) end
  return sch:merge(kstep, ko)
end

M.fuse = util.strict("tc_gemm_row_sums.fuse", M.fuse)
M.fuse_split = util.strict("tc_gemm_row_sums.fuse_split", M.fuse_split)
M.fuse_ones = util.strict("tc_gemm_row_sums.fuse_ones", M.fuse_ones)
return M
