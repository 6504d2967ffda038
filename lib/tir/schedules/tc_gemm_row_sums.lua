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

M.fuse = util.strict("tc_gemm_row_sums.fuse", M.fuse)
return M
