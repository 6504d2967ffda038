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

local OPTS = {intrin = "string", BM = "positive", BN = "positive", BK = "positive", stages = "positive", epilogue = "string",
              unroll = "boolean", block = "string", dtype = "dtype", vec = "positive", tma = "boolean", wgmma_pending = "nonneg"}
M.OPTS = OPTS

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
-- epilogue ("D": the fp16 cast fused into the store), unroll, wgmma_pending (0 or 1; 0 with tma: a
-- stage is released by an mbarrier arrive right after the statements that read it).  Every option and shape is
-- checked first; errors are tir.Errors from "tc_gemm.schedule".
function M.schedule(sch, o, P, analyze)
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
  for q, t in ipairs({BM, BN, BK}) do
    local e = ext[#ext - 3 + q]
    if not e then raise("ValueError", P, "block '%s' has a symbolic extent; intrin = \"wgmma\" needs constant M, N, K", info.name) end
    if e % t ~= 0 then
      raise("ValueError", P, "%s = %d is not a multiple of %s = %d", ({"M", "N", "K"})[q], e, ({"BM", "BN", "BK"})[q], t)
    end
  end
  local wgs = BM // 64
  local vec = o.vec or 16 // esize
  if vec * esize ~= 16 then raise("ValueError", P, "vec must be %d (16-byte cp.async copies of %s)", 16 // esize, row.a) end
  local pend0 = (o.stages > 1 and not o.tma) and o.wgmma_pending or 0
  local smem = (o.stages + pend0) * (BM + BN) * BK * esize
  if smem > 227 * 1024 then
    raise("ValueError", P, "(stages%s) * (BM + BN) * BK * %d = %d bytes of shared memory; the H100/H200 allow 227 KB per block",
          pend0 > 0 and " + 1 (wgmma_pending)" or "", esize, smem)
  end
  if o.epilogue then
    local okb, E = pcall(function() return sch:get(sch:get_block(o.epilogue)) end)
    if not okb then raise("ValueError", P, "epilogue block '%s' does not exist", o.epilogue) end
    local edt = E.writes[1] and E.writes[1].buffer.dtype
    if row.c ~= "float32" or edt ~= "float16" then
      raise("TypeError", P, "epilogue '%s' writes %s; the fused wgmma store writes float16 from float32 accumulators", o.epilogue, tostring(edt))
    end
  end

  if o.wgmma_pending > 1 then raise("ValueError", P, "wgmma_pending must be 0 or 1 (wgmma groups left in flight per step), got %d", o.wgmma_pending) end
  -- with TMA (inject_tma_pipeline) a stage is released (mbarrier arrive) right after the
  -- statements that read it, so each step's wgmma group must be complete there: wgmma_pending 0
  local pend = (o.stages > 1 and not o.tma) and o.wgmma_pending or 0
  local names = require("tir.intrin.cuda").wgmma(row, BN, "K", BK, pend)
  local C = sch:get_block(o.block or "C")
  local mode = ("%dB"):format(sw) -- the PTX swizzle mode of the tiles (storage_swizzle)
  -- the padded workload (tc.workload(..., pad), any M, N, K): its stages A_pad / B_pad (A, B or 0
  -- outside them) become the shared tiles, so the zero fill runs in the guarded copy into shared
  -- memory; C (the padded extents) goes back to global memory and D (C cut to M x N) is a kernel
  -- of its own, as on tc_gemm's mma path
  local padded = pcall(function() return sch:get_block("A_pad") end) and pcall(function() return sch:get_block("B_pad") end)
  if padded then
    if o.tma then raise("ValueError", P, "tma = true needs M, N, K multiples of the tiles (TMA copies whole boxes, not the padded workload)") end
    if o.epilogue then
      raise("ValueError", P, "the padded workload's epilogue '%s' is its write-back kernel (C cut to M x N); leave epilogue out", o.epilogue)
    end
  end
  local AS, BS
  if padded then
    AS, BS = sch:get_block("A_pad"), sch:get_block("B_pad")
    sch:set_scope(AS, 0, "shared"); sch:set_scope(BS, 0, "shared")
  else
    AS = sch:cache_read(C, info.a_index, "shared")
    BS = sch:cache_read(C, info.b_index, "shared")
  end
  sch:storage_swizzle(AS, 0, mode); sch:storage_swizzle(BS, 0, mode)
  local CF = sch:cache_write(C, 0, "wgmma.accumulator")
  local store = names.store.global
  if o.epilogue then
    sch:reverse_compute_inline(o.epilogue) -- the write-back block now computes D = cast(C)
    store = names.store_f16.global
  end
  info = analyze(sch, C, P)
  local lp = info.loops
  local i, j, k = lp[#lp - 2], lp[#lp - 1], lp[#lp]
  local by, wg, i64 = sch:split(i, {nil, wgs, 64})
  local bx, jn = sch:split(j, {nil, BN})
  local ko, kin = sch:split(k, {nil, BK})
  sch:reorder(by, bx, wg, ko, i64, jn, kin)
  sch:bind(by, "blockIdx.y"); sch:bind(bx, "blockIdx.x")
  sch:bind(wg, "threadIdx.y")
  sch:compute_at(AS, ko); sch:compute_at(BS, ko)
  sch:reverse_compute_at(CF, wg)
  -- cooperative 16-byte copies of the shared tiles by all warpgroups (threadIdx.x: 128 threads);
  -- tma: one TMA copy per tile instead (inject_tma_pipeline; the copy loops stay as they are, the
  -- pass adds the 128 threadIdx.x lanes)
  for _, b in ipairs(o.tma and {} or {AS, BS}) do
    local l = {sch:get_loops(b)}
    local f = sch:fuse(l[#l - 1], l[#l])
    local outer, ty, tx, v = sch:split(f, {nil, wgs, 128, vec})
    sch:bind(ty, "threadIdx.y"); sch:bind(tx, "threadIdx.x")
    sch:vectorize(v)
    if o.unroll then sch:unroll(outer) end
  end
  local init = sch:decompose_reduction(C, ko)
  sch:tensorize(i64, names.sync)
  local il = {sch:get_loops(init)}
  sch:tensorize(il[#il - 1], names.fill)
  local sl = {sch:get_loops(CF)}
  sch:tensorize(sl[#sl - 1], store)
  if padded then
    local D = sch:get_block("D")
    local bxd, txd = sch:split(sch:fuse(sch:get_loops(D)), {nil, 256})
    sch:bind(bxd, "blockIdx.x"); sch:bind(txd, "threadIdx.x")
  end
  if o.tma then
    -- full/empty mbarrier pipeline of o.stages stages (docs/TENSOR_CORES.md "TMA pipelines"); the
    -- box lands with the tiles' 32/64/128-byte swizzle, which the wgmma descriptors read
    sch:annotate(AS, "tma_copy", 1); sch:annotate(BS, "tma_copy", 1)
    sch:annotate(ko, "tma_pipeline_stages", o.stages)
  elseif o.stages > 1 then
    sch:annotate(ko, "software_pipeline_stage", {0, 0, o.stages - 1})
    sch:annotate(ko, "software_pipeline_order", {0, 1, 2})
    -- with a group left in flight (wgmma_pending = 1) the step's tiles are read until the next
    -- step's wgmma_wait_group: one more version of each tile, so that no copy refills it earlier
    if pend == 1 then sch:annotate(ko, "software_pipeline_async_reads", {0, 0, 1}) end
    sch:annotate(ko, "software_pipeline_async_stages", {0})
    sch:annotate(ko, "software_pipeline_early_wait", 1)
  end
  return sch
end

return M
