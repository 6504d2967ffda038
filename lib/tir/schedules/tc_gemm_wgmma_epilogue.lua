--- tir.schedules.tc_gemm_wgmma_epilogue: tc_gemm_wgmma's fused epilogues (tc_gemm option
-- epilogue = the block's name), public schedule primitives only:
--   * plain: an epilogue that converts the float32 accumulator to float16 and reads nothing
--     else is fused into the accumulator store (wgmma_store_..._f32_f16_global);
--   * staged: any other elementwise epilogue (and the plain one with epilogue_store = "staged") (a quantized GEMM's 4-term correction, bias,
--     scale, rounding, zero point and clamp: tir.ops.quantized_matmul's block "out") is inlined
--     into the write-back (reverse_compute_inline), the accumulators are stored into a shared
--     tile per warpgroup (cache_read into "shared", wgmma_store_..._shared: 64 x BN int32/float32),
--     and the 128 threads of the warpgroup run the epilogue from it, `vec` consecutive outputs
--     a thread (vectorize: a 16- or 4-byte store of packed int8 / float16 lanes, codegen_cuda.c
--     packs the computed lanes into one store).  The staged rows are padded by 32 bytes, so the
--     wgmma store's 8 rows a warp writes at once spread over the banks.
-- The staged tile reuses the bytes of the A/B pipeline tiles (narrow_shared_allocations and the
-- shared-memory plan make them siblings), so it costs no extra shared memory beyond the larger
-- of the two.
local M = {}
local util = require("tir.util")
local raise = util.raise

-- whether block b (a tir.Block) is the plain epilogue the store converts itself: out = cast(float16,
-- the float32 accumulator) and nothing else (a relu-only epilogue reads one buffer too, but is staged)
local function plain_cast(b, row)
  local v = b.body.value
  return #b.reads == 1 and row.c == "float32" and b.writes[1].buffer.dtype == "float16" and v ~= nil and v.kind == "Cast" and
         v.value.kind == "BufferLoad"
end

--- Checks opts.epilogue for row (a wgmma row of include/tir/mma.h); returns the epilogue's
-- output dtype, or nil without an epilogue.
function M.validate(sch, o, row, P)
  util.check_helper("tc_gemm_wgmma_epilogue.validate", "tc_gemm.schedule(func, {intrin = \"wgmma\", epilogue = ...})", sch, o, row)
  if not o.epilogue then return nil end
  local okb, E = pcall(function() return sch:get(sch:get_block(o.epilogue)) end)
  if not okb then raise("ValueError", P, "epilogue block '%s' does not exist", o.epilogue) end
  if #E.writes ~= 1 then raise("ValueError", P, "epilogue '%s' must write one buffer (it writes %d)", o.epilogue, #E.writes) end
  local edt = E.writes[1].buffer.dtype
  local esz = tonumber(edt:match("%d+$")) // 8
  -- a warp-specialized kernel keeps the pipeline tiles allocated through the epilogue (the
  -- producer's branch spans the kernel), so the staged accumulators cannot reuse their bytes
  local plain = plain_cast(E, row) and o.epilogue_store ~= "staged"
  if o.warp_specialize and not plain then
    local asz = tonumber(row.a:match("%d+$")) // 8
    local tiles = o.stages * (o.BM + o.BN) * o.BK * asz
    local staged = o.BM * (o.BN + 8) * (tonumber(row.c:match("%d+$")) // 8)
    if tiles + staged > 227 * 1024 then
      raise("ValueError", P, "warp_specialize = true with epilogue '%s': the pipeline tiles (%d bytes) stay allocated through the " ..
            "epilogue, so its staged %d x %d accumulators need %d more bytes: %d > the 227 KB a block may use (fewer stages, a " ..
            "smaller BN, or warp_specialize = false)", o.epilogue, tiles, o.BM, o.BN, staged, tiles + staged)
    end
  end
  local bytes = o.epilogue_vec and o.epilogue_vec * esz
  if bytes and bytes ~= 4 and bytes ~= 8 and bytes ~= 16 then
    raise("ValueError", P, "epilogue_vec = %d outputs of %s = %d bytes a store; a packed store moves 4, 8 or 16 bytes", o.epilogue_vec, edt,
          bytes)
  end
  return edt
end

--- Inlines the epilogue into the accumulator's write-back CF.  Returns the store intrinsic's
-- name (of names: tir.intrin.cuda.wgmma's) and the staged shared tile's block (or nil when
-- the epilogue is fused into the store).  prior: the epilogue reads a producer computed before
-- the GEMM (the row sums of A).
function M.inline(sch, o, row, names, CF, prior)
  util.check_helper("tc_gemm_wgmma_epilogue.inline", "tc_gemm.schedule(func, {intrin = \"wgmma\", epilogue = ...})", sch, o, row, names)
  sch:reverse_compute_inline(o.epilogue, prior)
  local b = sch:get(CF)
  if plain_cast(b, row) and names.store_f16 and o.epilogue_store ~= "staged" then
    return names.store_f16.global, nil
  end
  -- the accumulator among the write-back's reads (the inlined epilogue reads more: a bias ...)
  local acc = 0
  for q, rg in ipairs(b.reads) do if rg.buffer.scope == "wgmma.accumulator" then acc = q - 1 end end
  return names.store.shared, sch:cache_read(CF, acc, "shared")
end

--- Schedules the staged epilogue: CS (the accumulators' shared tile) and CF (the epilogue
-- reading it) under the warpgroup loop wg; the epilogue's 64 x BN outputs over the 128 threads
-- of the warpgroup, vec consecutive outputs each (vectorized).  Returns the loop to tensorize
-- the wgmma store of CS with.
function M.schedule_staged(sch, o, CS, CF, wg, prior)
  util.check_helper("tc_gemm_wgmma_epilogue.schedule_staged", "tc_gemm.schedule(func, {intrin = \"wgmma\", epilogue = ...})", sch, o)
  sch:reverse_compute_at(CS, wg)
  sch:reverse_compute_at(CF, wg, false, -1, prior)
  local l = {sch:get_loops(CF)}
  local f = sch:fuse(l[#l - 1], l[#l])
  -- default: 4 outputs a thread: one 4-byte store of int8 (32 lanes = 128 contiguous bytes a
  -- warp), 8 of float16; the 4 accumulators it reads from the staged row are 16 bytes
  local vec = o.epilogue_vec or 4
  local outer, tx, v = sch:split(f, {nil, 128, vec})
  sch:bind(tx, "threadIdx.x")
  sch:vectorize(v)
  if o.unroll then sch:unroll(outer) end
  local sl = {sch:get_loops(CS)}
  return sl[#sl - 1]
end

--- After the staged store is tensorized (ST: its block): the staged rows padded to a row
-- stride of 32 mod 128 bytes, so that the 8 rows a warp's wgmma_store writes at once (8-byte
-- pairs, 4 lanes a row) fall into different banks.
function M.pad_staged(sch, ST)
  sch:storage_align(ST, 0, 0, 32, 8)
end

M.validate = util.strict("tc_gemm_wgmma_epilogue.validate", M.validate)
M.inline = util.strict("tc_gemm_wgmma_epilogue.inline", M.inline)
M.schedule_staged = util.strict("tc_gemm_wgmma_epilogue.schedule_staged", M.schedule_staged)
M.pad_staged = util.strict("tc_gemm_wgmma_epilogue.pad_staged", M.pad_staged)
return M
