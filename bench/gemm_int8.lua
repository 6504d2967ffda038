-- bench/gemm_int8.lua -- int8 GEMMs on the GPU, in one process on the same random inputs, each
-- result checked bit-exact first:
--   * gemm_int8: tirlua's plain int8 GEMM (A [M, K] int8 x B [N, K] int8 -> int32) against
--     cuBLASLt (cublasLtMatmul, CUDA_R_8I in, CUDA_R_32I out, COMPUTE_32I, TN layout);
--   * qgemm: the fused quantized GEMM (tir.ops.quantized_matmul: za != 0, zb = 0 symmetric
--     weights with precomputed column sums, int32 bias, per-channel scale, out zero point, int8
--     out; tir.schedules.qgemm, one launch) against (a) tirlua's plain int8 GEMM of the shape and
--     (b) cuBLASLt int8 followed by a separate requantizing kernel written with tirlua (its time
--     is the sum of the two, each timed alone);
--   * qgemm imma_fused_zb: the same with asymmetric per-column weight zero points zb (so the
--     row sums of A are needed: computed in the IMMA kernel from its shared A tiles, still one
--     launch) against the plain IMMA GEMM and against cuBLASLt + a tirlua row-sum kernel + a
--     requantizing kernel (three launches, times added).
-- tirlua's int8 GEMMs here are tir.schedules.qgemm's: "simt" (int32 multiply-adds) and "dp4a"
-- (dp4a on int8x4 words: byte copies packed with prmt, or 4-byte copies of whole words; the
-- fused DP4A rows use qgemm.dp4a_options); "imma*" is tc_gemm's mma.sync m16n8k32 path.
-- "wgmma_*" (sm_90 only) is tc_gemm's Hopper path, wgmma.mma_async m64nNk32.s8.s8.s32 from 128-byte
-- swizzled shared tiles (lib/tir/schedules/tc_gemm_wgmma.lua, target "cuda -arch=sm_90a"):
-- wgmma_<BM>x<BN>_s<stages> fills the tiles with cp.async and waits for each step's wgmma group
-- (wgmma_pending = 0), _w1 leaves it in flight for one step; wgmma_tma_* loads with TMA + mbarriers.
--   tirlua bench/gemm_int8.lua [--only=v1,v2,..] [MxNxK ...]   (default: 1024^3 .. 8192^3 and M in {16, 128, 4096},
--                                            N = 11008, K = 4096; --only: just these gemm_int8 variants, no qgemm rows
--                                            unless "qgemm" is named)
--   TIRLUA_BENCH_OUT=file                    append the markdown tables to that file
--   TIRLUA_REF_KERNELS=file                  cuBLASLt's kernel names per shape ("int8 TN MxNxK name" lines:
--                                            scripts/gpu/cublas_kernels.lua run8), recorded as the rows' ref_kernel
-- CUDA events, 3 warm-ups, median of 5 samples of 5 launches.  Rows go to bench/results.jsonl.
local tir = require("tir")
local core = tir.core
local qm = tir.ops.quantized_matmul
local qg = require("tir.schedules.qgemm")
local tc = require("tir.schedules.tc_gemm")
local common = dofile("bench/common.lua")

local dev = common.device("bench/gemm_int8.lua")
if not dev then return end
local lt_ok, lt_why = core.cublaslt_available()
if not lt_ok then error("bench/gemm_int8.lua: cuBLASLt: " .. tostring(lt_why)) end

local shapes = {}
local only -- nil: every variant; else the set given by --only=
for i = 1, #arg do
  local list = arg[i]:match("^%-%-only=(.*)$")
  if list then
    only = {}
    for v in list:gmatch("[^,]+") do only[v] = true end
    goto continue
  end
  local m, n, k = arg[i]:match("^(%d+)x(%d+)x(%d+)$")
  if not m then m = arg[i]:match("^(%d+)$"); n, k = m, m end
  if not m then error("bench/gemm_int8.lua: arguments are MxNxK, N (for NxNxN) or --only=v1,v2; got " .. arg[i]) end
  shapes[#shapes + 1] = {tonumber(m), tonumber(n), tonumber(k)}
  ::continue::
end
local function wanted(v) return only == nil or only[v] == true end
-- the fused variants: --only=qgemm runs every one; naming some (qgemm_imma, qgemm_simt, wgmma_fused,
-- wgmma_fused_zb, ...) runs just those
local any_named = false
for v in pairs(only or {}) do any_named = any_named or v:match("^qgemm_") ~= nil or v:match("^wgmma_fused") ~= nil end
local function qwant(v) return wanted("qgemm") and (not any_named or only[v] or only["qgemm_" .. v]) end
-- the wgmma variants: {name, tc_gemm options}; 128 x 256 CTAs = two consumer warpgroups of
-- 64 x 256 (128 int32 accumulators a thread), BK = 128 int8 = the 128-byte swizzle row
local WGMMA = {
  -- tc_gemm intrin = "wgmma" without tile options: tc_gemm_wgmma.pick's choice for the shape
  {"wgmma_default", {}},
  -- cp.async: wgmma_pending = 1 keeps one more tile version (4 stages would be 240 KB > 227 KB)
  {"wgmma_128x256_s4", {BM = 128, BN = 256, BK = 128, stages = 4, wgmma_pending = 0}},
  {"wgmma_128x256_s3_w1", {BM = 128, BN = 256, BK = 128, stages = 3, wgmma_pending = 1}},
  {"wgmma_tma_128x256_s4", {BM = 128, BN = 256, BK = 128, stages = 4, tma = true}},
  {"wgmma_tma_128x256_s3", {BM = 128, BN = 256, BK = 128, stages = 3, tma = true}},
  {"wgmma_tma_128x128_s4", {BM = 128, BN = 128, BK = 128, stages = 4, tma = true}},
  -- the configuration search of issue 8 part 5: 256 x 128 CTAs (four consumer warpgroups of
  -- 64 x 128, 64 accumulators a thread), BK = 64 (64-byte swizzle rows) with more stages
  {"wgmma_tma_256x128_s4", {BM = 256, BN = 128, BK = 128, stages = 4, tma = true}},
  {"wgmma_tma_256x128_k64_s6", {BM = 256, BN = 128, BK = 64, stages = 6, tma = true}},
  {"wgmma_tma_128x256_k64_s6", {BM = 128, BN = 256, BK = 64, stages = 6, tma = true}},
  {"wgmma_tma_128x256_k64_s8", {BM = 128, BN = 256, BK = 64, stages = 8, tma = true}},
  -- hA's options (issue 9): one wgmma group left in flight under TMA (a stage released one step
  -- later), and a producer warpgroup (warp specialization); a variant whose options this tree does
  -- not know is reported and skipped
  {"wgmma_tma_128x256_s4_w1", {BM = 128, BN = 256, BK = 128, stages = 4, tma = true, wgmma_pending = 1}},
  {"wgmma_tma_128x256_s4_w0", {BM = 128, BN = 256, BK = 128, stages = 4, tma = true, wgmma_pending = 0}},
  {"wgmma_tma_128x256_s4_ws", {BM = 128, BN = 256, BK = 128, stages = 4, tma = true, warp_specialize = true}},
  {"wgmma_tma_128x128_s4_ws", {BM = 128, BN = 128, BK = 128, stages = 4, tma = true, warp_specialize = true}},
  -- persistent tiles (the fp16 path's best at 4096^3 / 8192^3): warp-specialized, and without WS with
  -- 3 stages (the mbarriers re-armed per tile)
  {"wgmma_tma_128x256_s4_ws_p", {BM = 128, BN = 256, BK = 128, stages = 4, tma = true, warp_specialize = true, persistent = true}},
  {"wgmma_tma_128x256_s3_p", {BM = 128, BN = 256, BK = 128, stages = 3, tma = true, persistent = true}},
  -- small M (128 x 11008: 43 tiles of 128 x 256 for 132 SMs): more, narrower tiles, deeper pipelines
  {"wgmma_tma_128x128_s6_ws", {BM = 128, BN = 128, BK = 128, stages = 6, tma = true, warp_specialize = true}},
  {"wgmma_tma_64x256_s4_ws", {BM = 64, BN = 256, BK = 128, stages = 4, tma = true, warp_specialize = true}},
  -- thread-block clusters with TMA multicast (helper hP's cluster option): a 2 x 1 cluster shares
  -- each B tile between two CTAs, 1 x 2 each A tile (half the L2 reads of that operand); skipped
  -- where the tree has no cluster option
  {"wgmma_tma_128x256_s4_ws_p_c21", {BM = 128, BN = 256, BK = 128, stages = 4, tma = true, warp_specialize = true, persistent = true,
                                     cluster = {2, 1}}},
  {"wgmma_tma_128x256_s4_ws_p_c12", {BM = 128, BN = 256, BK = 128, stages = 4, tma = true, warp_specialize = true, persistent = true,
                                     cluster = {1, 2}}},
  {"wgmma_tma_128x256_s4_ws_c21", {BM = 128, BN = 256, BK = 128, stages = 4, tma = true, warp_specialize = true, cluster = {2, 1}}},
  -- one CTA a tile in the persistent path's grouped order (persistent = the tile count: tiles in
  -- groups of 8 rows for L2 reuse, no tail), where G CTAs < the tiles would add rounds (4096 x 11008)
  {"wgmma_tma_128x256_s4_ws_g", {BM = 128, BN = 256, BK = 128, stages = 4, tma = true, warp_specialize = true, persistent = "tiles"}},
  -- stop 11 (issue 8, 4096^3): the persistent warp-specialized kernel with fewer stages, and with the
  -- TMA-store epilogue (_es: the int32 tile through shared memory in 128-byte swizzled boxes of 32
  -- columns, a TMA store a box, which overlap the next tile's main loop; its 128 KB beside 2 stages
  -- of 128 x 256 x 128 or 4 of BK = 64; _esd: the dense tile, 8-way bank conflicts in the writes;
  -- _esw: the wait for the store's read right after the store, not before the next tile's writes)
  {"wgmma_tma_128x256_s3_ws_p", {BM = 128, BN = 256, BK = 128, stages = 3, tma = true, warp_specialize = true, persistent = true}},
  {"wgmma_tma_128x256_s2_ws_p", {BM = 128, BN = 256, BK = 128, stages = 2, tma = true, warp_specialize = true, persistent = true}},
  {"wgmma_tma_128x256_s2_ws_p_es", {BM = 128, BN = 256, BK = 128, stages = 2, tma = true, warp_specialize = true, persistent = true,
                                    epilogue_store = "tma"}},
  {"wgmma_tma_128x256_s2_ws_p_esd", {BM = 128, BN = 256, BK = 128, stages = 2, tma = true, warp_specialize = true, persistent = true,
                                     epilogue_store = "tma", tma_store_boxes = false}},
  {"wgmma_tma_128x256_s2_ws_p_esw", {BM = 128, BN = 256, BK = 128, stages = 2, tma = true, warp_specialize = true, persistent = true,
                                     epilogue_store = "tma", tma_store_wait = "store"}},
  {"wgmma_tma_128x256_k64_s8_ws_p", {BM = 128, BN = 256, BK = 64, stages = 8, tma = true, warp_specialize = true, persistent = true}},
  {"wgmma_tma_128x256_k64_s4_ws_p_es", {BM = 128, BN = 256, BK = 64, stages = 4, tma = true, warp_specialize = true, persistent = true,
                                        epilogue_store = "tma"}},
  {"wgmma_tma_256x128_s4_ws_p", {BM = 256, BN = 128, BK = 128, stages = 4, tma = true, warp_specialize = true, persistent = true}},
  -- 128 x 128 tiles (cuBLASLt's: a 64 KB int32 tile beside 4-5 stages of 32 KB) and 64 x 256 (one consumer
  -- warpgroup), persistent, with the TMA-store epilogue or direct stores
  {"wgmma_tma_128x128_s4_ws_p_es", {BM = 128, BN = 128, BK = 128, stages = 4, tma = true, warp_specialize = true, persistent = true,
                                    epilogue_store = "tma"}},
  {"wgmma_tma_128x128_s5_ws_p_es", {BM = 128, BN = 128, BK = 128, stages = 5, tma = true, warp_specialize = true, persistent = true,
                                    epilogue_store = "tma"}},
  {"wgmma_tma_128x128_s5_ws_p_esw", {BM = 128, BN = 128, BK = 128, stages = 5, tma = true, warp_specialize = true, persistent = true,
                                     epilogue_store = "tma", tma_store_wait = "store"}},
  {"wgmma_tma_128x128_s5_ws_p_esd", {BM = 128, BN = 128, BK = 128, stages = 5, tma = true, warp_specialize = true, persistent = true,
                                     epilogue_store = "tma", tma_store_boxes = false}},
  {"wgmma_tma_128x128_s6_ws_p", {BM = 128, BN = 128, BK = 128, stages = 6, tma = true, warp_specialize = true, persistent = true}},
  {"wgmma_tma_128x128_s5_ws_g_es", {BM = 128, BN = 128, BK = 128, stages = 5, tma = true, warp_specialize = true, persistent = "tiles",
                                    epilogue_store = "tma"}},
  {"wgmma_tma_64x256_s4_ws_p_es", {BM = 64, BN = 256, BK = 128, stages = 4, tma = true, warp_specialize = true, persistent = true,
                                   epilogue_store = "tma"}},
  {"wgmma_tma_64x256_s5_ws_p", {BM = 64, BN = 256, BK = 128, stages = 5, tma = true, warp_specialize = true, persistent = true}},
  {"wgmma_tma_256x128_s2_ws_p_es", {BM = 256, BN = 128, BK = 128, stages = 2, tma = true, warp_specialize = true, persistent = true,
                                    epilogue_store = "tma"}},
  -- stop 12 (issue 8, 4096^3): ping-pong consumers (pingpong = true): two consumer warpgroups, each on
  -- whole 64 x 256 tiles of the persistent grid in turn, so one's epilogue runs under the other's main
  -- loop (inject_warp_specialization's teams); 40 KB a stage (BK = 128) or 20 KB (BK = 64)
  {"wgmma_tma_64x256_s5_ws_p_pp", {BM = 64, BN = 256, BK = 128, stages = 5, tma = true, warp_specialize = true, persistent = true,
                                   pingpong = true}},
  {"wgmma_tma_64x256_s4_ws_p_pp", {BM = 64, BN = 256, BK = 128, stages = 4, tma = true, warp_specialize = true, persistent = true,
                                   pingpong = true}},
  {"wgmma_tma_64x256_k64_s10_ws_p_pp", {BM = 64, BN = 256, BK = 64, stages = 10, tma = true, warp_specialize = true, persistent = true,
                                        pingpong = true}},
  {"wgmma_tma_64x256_k64_s8_ws_p_pp", {BM = 64, BN = 256, BK = 64, stages = 8, tma = true, warp_specialize = true, persistent = true,
                                       pingpong = true}},
}
-- the fused quantized GEMM on wgmma: {variant, tc_gemm options, the plain GEMM variant of the same
-- tiles (its "tirlua plain int8" reference)}.  _s3: 3 stages (144 KB of tiles; the staged 128 x
-- 264 int32 accumulators reuse those bytes); _i32: the same epilogue without the requantization
-- (int32 out: the 4-term correction only), to separate the staging from the float math
-- the plain variant every qgemm wgmma row is also compared with (the best plain int8 kernel
-- measured at 4096^3, bench/RESULTS.md)
local BEST_PLAIN = "wgmma_tma_128x256_s4_ws_p"
local QWGMMA = {
  -- tir.schedules.qgemm without tc options: its default for the shape (grouped, row_sums_split = 2 with zb)
  {"wgmma_fused_default", false, "wgmma_default"},
  {"wgmma_fused", {BM = 128, BN = 256, BK = 128, stages = 4, tma = true}, "wgmma_tma_128x256_s4"},
  {"wgmma_fused_s3", {BM = 128, BN = 256, BK = 128, stages = 3, tma = true}, "wgmma_tma_128x256_s3"},
  {"wgmma_fused_w1", {BM = 128, BN = 256, BK = 128, stages = 4, tma = true, wgmma_pending = 1}, "wgmma_tma_128x256_s4_w1"},
  -- warp-specialized: the staged accumulators cannot reuse the tiles' bytes there, 128 x 256 x 4 stages
  -- does not fit (refused); 128 x 128 x 4 stages does (128 KB of tiles + 70 KB staged)
  {"wgmma_fused_ws", {BM = 128, BN = 256, BK = 128, stages = 4, tma = true, warp_specialize = true}, "wgmma_tma_128x256_s4_ws"},
  {"wgmma_fused_ws_128", {BM = 128, BN = 128, BK = 128, stages = 4, tma = true, warp_specialize = true}, "wgmma_tma_128x128_s4_ws"},
  -- (zb rows) each row's k step summed by two threads: all 128 threads of a warpgroup (row_sums_split)
  {"wgmma_fused_rs2", {BM = 128, BN = 256, BK = 128, stages = 4, tma = true, row_sums_split = 2}, "wgmma_tma_128x256_s4"},
  -- the row sums (zb rows) after the step's wgmma group is issued, overlapping it (row_sums_after)
  {"wgmma_fused_ra", {BM = 128, BN = 256, BK = 128, stages = 4, tma = true, row_sums_after = true}, "wgmma_tma_128x256_s4"},
  -- stop 12: one CTA a tile in the persistent path's grouped order (persistent = the tile count: L2
  -- reuse of A and B at 8192^3, where the 2-D grid streams B from DRAM once a wave)
  {"wgmma_fused_g", {BM = 128, BN = 256, BK = 128, stages = 4, tma = true, persistent = "tiles"}, "wgmma_default"},
  {"wgmma_fused_rs2_g", {BM = 128, BN = 256, BK = 128, stages = 4, tma = true, persistent = "tiles", row_sums_split = 2}, "wgmma_default"},
  -- (zb rows) two threads a row, grouped, between the step's wgmma commit and its wait (row_sums_in_flight)
  {"wgmma_fused_rs2_if_g", {BM = 128, BN = 256, BK = 128, stages = 4, tma = true, persistent = "tiles", row_sums_split = 2,
                            row_sums_in_flight = true}, "wgmma_default"},
  -- (zb rows) two threads a row, after the step's wgmma group
  {"wgmma_fused_rs2_ra", {BM = 128, BN = 256, BK = 128, stages = 4, tma = true, row_sums_split = 2, row_sums_after = true}, "wgmma_default"},
}
-- a QWGMMA entry's tc options at an m x n output (persistent = "tiles": the tile count; false: none,
-- qgemm's default)
local function qtc(o, m, n)
  if not o then return nil end
  local r = {}
  for kk, v in pairs(o) do r[kk] = v end
  if r.persistent == "tiles" then r.persistent = (m // r.BM) * (n // r.BN) end
  return r
end
if #shapes == 0 then
  shapes = {{1024, 1024, 1024}, {2048, 2048, 2048}, {4096, 4096, 4096}, {8192, 8192, 8192}, {16, 11008, 4096},
            {128, 11008, 4096}, {4096, 11008, 4096}}
end

-- the SIMT / DP4A variants: {name, tir.schedules.qgemm options over opts_for's tiles}
--   dp4a: byte copies (vec 16) packed into the [k / 4][row][k % 4] word tiles with prmt;
--   dp4a_v4: 4-byte copies (one k-group word per access); _s2p: a 2-stage cp.async pipeline
--   with the k-group planes padded (conflict-free 4-byte stores); _lt4: lane_tile = 4 (a warp's
--   16-byte shared loads read consecutive chunks); _k64: BK = 64; _s3p: 3 stages; _ew: early_wait
local SIMT = {
  {"simt", {intrin = "simt"}},
  {"dp4a", {intrin = "dp4a"}},
  {"dp4a_v4", {intrin = "dp4a", vec = 4}},
  {"dp4a_v4_s2p", {intrin = "dp4a", vec = 4, stages = 2, pad_planes = true}},
  {"dp4a_lt4_s2p", {intrin = "dp4a", vec = 4, stages = 2, pad_planes = true, lane_tile = 4}},
  {"dp4a_lt4_s2p_k64", {intrin = "dp4a", vec = 4, stages = 2, pad_planes = true, lane_tile = 4, BK = 64}},
  {"dp4a_lt4_s3p", {intrin = "dp4a", vec = 4, stages = 3, pad_planes = true, lane_tile = 4}},
  {"dp4a_lt4_s3p_k64", {intrin = "dp4a", vec = 4, stages = 3, pad_planes = true, lane_tile = 4, BK = 64}},
  -- not measured yet: one barrier per k step (early_wait)
  {"dp4a_lt4_s3p_k64_ew", {intrin = "dp4a", vec = 4, stages = 3, pad_planes = true, lane_tile = 4, BK = 64, early_wait = true}},
}
-- the IMMA variants (tc_gemm options; the first is the qgemm rows' tiles): imma = 4 warps of
-- 64x64 (211 registers, 2 CTAs and 8 warps per SM); _w8: 8 warps of 64x32 (100 registers, 16
-- warps per SM); _fp: fragments of the next k step loaded during this step's mma (frag_pipeline);
-- _swz: XOR-swizzled shared tiles instead of padded rows; _k64s4: BK 64, 4 stages;
-- 256x128: 8 warps of 64x64 (one CTA per SM).  imma_w8_swz is the best measured (741 TOP/s at
-- 4096^3, the gemm_int8 example's tiles); the last four were not measured yet.
local IMMA = {
  {"imma", {BM = 128, BN = 128, BK = 128, warp_m = 64, warp_n = 64, stages = 3}},
  {"imma_w8", {BM = 128, BN = 128, BK = 128, warp_m = 64, warp_n = 32, stages = 3}},
  {"imma_w8_fp", {BM = 128, BN = 128, BK = 128, warp_m = 64, warp_n = 32, stages = 3, frag_pipeline = true}},
  {"imma_w8_swz", {BM = 128, BN = 128, BK = 128, warp_m = 64, warp_n = 32, stages = 3, swizzle = true}},
  {"imma_w8_k64s4", {BM = 128, BN = 128, BK = 64, warp_m = 64, warp_n = 32, stages = 4}},
  {"imma_256x128", {BM = 256, BN = 128, BK = 128, warp_m = 64, warp_n = 64, stages = 3}},
  {"imma_swz", {BM = 128, BN = 128, BK = 128, warp_m = 64, warp_n = 64, stages = 3, swizzle = true}},
  {"imma_w8_swz_k64s4", {BM = 128, BN = 128, BK = 64, warp_m = 64, warp_n = 32, stages = 4, swizzle = true}},
  {"imma_w8_swz_fp", {BM = 128, BN = 128, BK = 128, warp_m = 64, warp_n = 32, stages = 3, swizzle = true, frag_pipeline = true}},
  -- hB's frag_prefetch (fragments across BK tiles, CUTLASS's main loop): 156 registers by ptxas,
  -- so one 256-thread CTA per SM
  {"imma_w8_swz_pf", {BM = 128, BN = 128, BK = 128, warp_m = 64, warp_n = 32, stages = 3, swizzle = true, frag_prefetch = true}},
}
local imma_small = {BM = 16, warp_m = 16, BN = 128, warp_n = 32, BK = 128, stages = 3}

local ZA = 3 -- the activations' zero point of the qgemm rows
local function opts_for(m, n)
  -- small M: 16-row CTAs; else 128 x 128 CTAs with 8 x 8 register tiles
  if m < 64 then return {BM = 16, TY = 4, BN = 64, TX = 16, BK = 32, vec = 8} end
  if m % 128 == 0 and n % 128 == 0 then return {BM = 128, BN = 128, vec = 16} end
  return {}
end

-- a requantizing (elementwise M x N) kernel: 256 threads of 4 consecutive outputs per CTA, vectorized
-- (16-byte loads of the int32 accumulators, one packed 4-byte int8 store a thread)
local function elementwise_kernel(f, block)
  local rs = tir.Schedule(f)
  local ri, rj = rs:get_loops(rs:get_block(block))
  local fused = rs:fuse(ri, rj)
  local bx, tx, vv = rs:split(fused, {nil, 256, 4})
  rs:bind(bx, "blockIdx.x"); rs:bind(tx, "threadIdx.x"); rs:vectorize(vv)
  return tir.build(rs.mod, "cuda")
end

local info = dev:info()
local rows = {}
local function timed(mod, ...) return mod:time_evaluator({number = 5, repeat_ = 5, warmup = 3})(...) end
print(("%-10s %-22s %-16s %9s %9s %-22s %9s %9s %7s"):format("bench", "variant", "MxNxK", "ms", "TOP/s", "ref", "ref ms", "ref TOP/s", "ratio"))
local function bench_shape(m, n, k)
  local shape = ("%dx%dx%d"):format(m, n, k)
  local ops = 2.0 * m * n * k
  local a = tir.nd.random({m, k}, "int8", dev, {seed = 31})
  local b = tir.nd.random({n, k}, "int8", dev, {seed = 32})
  -- cuBLASLt int8 -> int32
  local c_lt = tir.nd.empty({m, n}, "int32", dev)
  core.cublaslt_gemm_int8(a, b, c_lt)
  core.cuda_sync(0)
  local t_lt = core.cuda_time(function() core.cublaslt_gemm_int8(a, b, c_lt) end, 0, 3, 5, 5)
  -- tirlua plain int8 GEMM (the quantized op with nothing to requantize: out = int32 acc)
  local plain_f = qm{M = m, N = n, K = k, out_dtype = "int32", name = "gemm_int8"}
  local c = tir.nd.empty({m, n}, "int32", dev)
  local t_int8 = {}
  local function row(bench, variant, t, ref, t_ref, dtype, ref_variant)
    local r = {bench = bench, variant = variant, shape = shape, dtype = dtype, ms = t * 1e3, tflops = ops / t / 1e12, ref = ref,
               ref_ms = t_ref * 1e3, ref_tflops = ops / t_ref / 1e12, gpu = info.name, ref_variant = ref_variant,
               ref_kernel = ref == "cuBLASLt" and common.ref_kernel("int8", "TN", shape) or nil}
    common.record(r)
    rows[#rows + 1] = r
    print(("%-10s %-22s %-16s %9.3f %9.1f %-22s %9.3f %9.1f %7.3f"):format(bench, variant, shape, r.ms, r.tflops, ref, r.ref_ms,
      r.ref_tflops, r.ref_ms / r.ms))
  end
  -- the fused DP4A qgemm's schedule is qgemm.dp4a_options where 128 divides M and N (the best
  -- measured plain one, dp4a_lt4_s3p_k64), else the "dp4a" variant's; its plain reference too
  local big = m % 128 == 0 and n % 128 == 0
  local dp4a_plain = big and "dp4a_lt4_s3p_k64" or "dp4a"
  for _, sv in ipairs(SIMT) do
    local intrin = sv[1]
    if not (wanted(intrin) or (intrin == "simt" and qwant("simt")) or (intrin == dp4a_plain and qwant("dp4a"))) then goto next_intrin end
    local o = opts_for(m, n)
    for kk, v in pairs(sv[2]) do o[kk] = v end
    local plain = tir.build(qg.schedule(plain_f, o).mod, "cuda")
    plain(a, b, c)
    tir.testing.assert_allclose(c, c_lt, {rtol = 0, atol = 0}) -- int32 in float64: bit-exact
    t_int8[intrin] = timed(plain, a, b, c)
    row("gemm_int8", intrin, t_int8[intrin], "cuBLASLt", t_lt, "int8")
    ::next_intrin::
  end
  -- tirlua IMMA: tc_gemm with mma.sync m16n8k32 (A [M, K], B [N, K]: both k-major, tc_gemm's
  -- "NT"); the IMMA table's tiles, 16-row CTAs for small M
  for _, iv in ipairs(IMMA) do
    if not (wanted(iv[1]) or (iv[1] == "imma" and (qwant("imma") or qwant("imma_fused_zb"))) or
            (iv[1] == "imma_w8_swz" and qwant("imma_w8_swz"))) then goto next_imma end
    if m < 64 and iv[1] ~= "imma" then goto next_imma end
    local o = {}
    for kk, v in pairs(m < 64 and imma_small or iv[2]) do o[kk] = v end
    o.intrin = "mma"
    if m % o.BM ~= 0 or n % o.BN ~= 0 then goto next_imma end
    local tcf = tc.workload(m, n, k, "int8", "int32", nil, "NT")
    local imma = tir.build(tc.schedule(tcf, o).mod, "cuda")
    -- a random output first: a kernel writing nothing cannot pass the check
    local ci = tir.nd.random({m, n}, "int32", dev, {seed = 78, low = -1000, high = 1000})
    imma(a, b, ci)
    tir.testing.assert_allclose(ci, c_lt, {rtol = 0, atol = 0})
    local t = timed(imma, a, b, ci)
    t_int8[iv[1]] = t
    if iv[1] == "imma" then t_int8.mma = t end
    row("gemm_int8", iv[1], t, "cuBLASLt", t_lt, "int8")
    ::next_imma::
  end
  local imma_tiles = m < 64 and imma_small or IMMA[1][2]
  -- tirlua wgmma (sm_90): the same K-major operands; M, N, K multiples of the tiles here (the
  -- plain variants the qgemm wgmma rows compare with run when those do)
  local qwanted = {}
  for _, q in ipairs(QWGMMA) do
    if qwant(q[1]) or qwant(q[1] .. "_zb") or qwant(q[1] .. "_zb1") then qwanted[q[3]] = true; qwanted[BEST_PLAIN] = true end
  end
  if info.arch == "sm_90" then
    local tcf = tc.workload(m, n, k, "int8", "int32", nil, "NT")
    for _, wv in ipairs(WGMMA) do
      if (wanted(wv[1]) or qwanted[wv[1]]) and m % (wv[2].BM or 1) == 0 and n % (wv[2].BN or 1) == 0 and k % (wv[2].BK or 1) == 0 then
        local o = {intrin = "wgmma"}
        for kk, v in pairs(wv[2]) do o[kk] = v end
        if o.persistent == "tiles" then o.persistent = (m // o.BM) * (n // o.BN) end
        local okw, wsch = pcall(tc.schedule, tcf, o)
        if not okw then
          print(("%s: skipped (%s)"):format(wv[1], tostring(wsch):match("[^\n]*")))
          goto next_wgmma
        end
        local okb, wmod = pcall(tir.build, wsch.mod, "cuda -arch=sm_90a")
        if not okb then
          print(("%s: skipped (build: %s)"):format(wv[1], tostring(wmod):match("[^\n]*")))
          goto next_wgmma
        end
        -- a random output first: a kernel writing nothing cannot pass the check
        local cw = tir.nd.random({m, n}, "int32", dev, {seed = 77, low = -1000, high = 1000})
        local okr, rerr = pcall(wmod, a, b, cw)
        if not okr then
          print(("%s: FAILED to run (%s)"):format(wv[1], tostring(rerr):match("[^\n]*")))
          goto next_wgmma
        end
        local okc, cerr = pcall(tir.testing.assert_allclose, cw, c_lt, {rtol = 0, atol = 0})
        if not okc then -- reported, not timed (and no row)
          print(("%s: WRONG RESULT against cuBLASLt (%s)"):format(wv[1], tostring(cerr):match("[^\n]*")))
          goto next_wgmma
        end
        t_int8[wv[1]] = timed(wmod, a, b, cw)
        row("gemm_int8", wv[1], t_int8[wv[1]], "cuBLASLt", t_lt, "int8")
      end
      ::next_wgmma::
    end
  end
  if not wanted("qgemm") then return end
  -- the qgemm rows' "tirlua plain int8" reference: the fastest plain int8 GEMM measured at this
  -- shape (any variant; named in the row's ref_variant), not only the one of the same tiles
  local best_v, best_t
  for v, t in pairs(t_int8) do
    if v ~= "mma" and v ~= "dp4a" and (not best_t or t < best_t) then best_v, best_t = v, t end
  end
  -- (the fused variants need their plain GEMM's time; the zb rows need imma or a wgmma one)
  -- fused quantized GEMM
  local qo = {M = m, N = n, K = k, a_zero_point = ZA, b_zero_point = 0, b_sums = "input", bias = true, scale = "per_channel",
              out_zero_point = -7, out_dtype = "int8", name = "qgemm"}
  local qf = qm(qo)
  local qmods = {}
  local intrins = {}
  for _, intrin in ipairs({"simt", "dp4a", "mma"}) do
    local plain_t = intrin == "dp4a" and t_int8[dp4a_plain] or t_int8[intrin]
    if qwant(intrin == "mma" and "imma" or intrin) and plain_t then
      intrins[#intrins + 1] = intrin
      local o = intrin == "mma" and {tc = imma_tiles} or (intrin == "dp4a" and big) and qg.dp4a_options(m, n) or opts_for(m, n)
      o.intrin = intrin
      qmods[intrin] = tir.build(qg.schedule(qf, o).mod, "cuda")
    end
  end
  local qw = {} -- the wgmma fused variants run here: {variant, module, plain variant}
  if info.arch == "sm_90" then
    for _, q in ipairs(QWGMMA) do
      if qwant(q[1]) and t_int8[q[3]] then
        local okq, qs = pcall(qg.schedule, qf, {intrin = "wgmma", tc = qtc(q[2], m, n)})
        if okq then qw[#qw + 1] = {q[1], tir.build(qs.mod, "cuda -arch=sm_90a"), q[3]}
        else print(("%s: skipped (%s)"):format(q[1], tostring(qs):match("[^\n]*"))) end
      end
    end
  end
  t_int8.dp4a = t_int8[dp4a_plain]
  local bias = tir.nd.random({n}, "int32", dev, {seed = 33, low = -20000, high = 20000})
  local scale = tir.nd.random({n}, "float32", dev, {seed = 34, low = 1 / (k * 4096), high = 1 / (k * 256)})
  -- the constant weight's column sums: a one-time pre-pass (not timed)
  local bsum = tir.nd.empty({n}, "int32", dev)
  local ss = tir.Schedule(qm.col_sums_func(n, k, "NK"))
  local sj = ss:get_loops(ss:get_block("b_col_sum"))
  local sbx, stx = ss:split(sj, {nil, 128})
  ss:bind(sbx, "blockIdx.x"); ss:bind(stx, "threadIdx.x")
  tir.build(ss.mod, "cuda")(b, bsum)
  local out = tir.nd.empty({m, n}, "int8", dev)
  local t_q = {}
  for intrin, q in pairs(qmods) do
    q(a, b, bias, scale, bsum, out)
    t_q[intrin] = timed(q, a, b, bias, scale, bsum, out)
  end
  for _, q in ipairs(qw) do t_q[q[1]] = timed(q[2], a, b, bias, scale, bsum, out) end
  -- the requantizing kernel on cuBLASLt's int32 result
  local te = tir.te
  local Ci = te.placeholder({m, n}, "int32", "C")
  local Bi = te.placeholder({n}, "int32", "bias")
  local Si = te.placeholder({n}, "float32", "scale")
  local Ki = te.placeholder({n}, "int32", "b_col_sums")
  local O = te.compute({m, n}, function(i, j)
    local v = Ci[{i, j}] - tir.const(ZA, "int32") * Ki[{j}] + Bi[{j}]
    local r = tir.call("float32", "round", Si[{j}] * te.cast("float32", v))
    r = tir.min(tir.max(r, tir.const(-128 + 7, "float32")), tir.const(127 + 7, "float32"))
    return te.cast("int8", te.cast("int32", r) + tir.const(-7, "int32"))
  end, "requant")
  local rq = elementwise_kernel(te.create_prim_func({Ci, Bi, Si, Ki, O}, "requant"), "requant")
  local out2 = tir.nd.empty({m, n}, "int8", dev)
  rq(c_lt, bias, scale, bsum, out2)
  local t_rq = timed(rq, c_lt, bias, scale, bsum, out2)
  for _, intrin in ipairs(intrins) do
    local variant = (intrin == "mma" and "imma" or intrin == "dp4a" and dp4a_plain or intrin) .. "_fused"
    qmods[intrin](a, b, bias, scale, bsum, out)
    tir.testing.assert_allclose(out, out2, {rtol = 0, atol = 0})
    row("qgemm", variant, t_q[intrin], "tirlua plain int8", best_t, "int8", best_v)
    row("qgemm", variant, t_q[intrin], "cuBLASLt + requant", t_lt + t_rq, "int8")
  end
  -- the fused qgemm on the best measured IMMA tiles (8 warps of 64x32, swizzled)
  local sw
  if t_int8.imma_w8_swz and qwant("imma_w8_swz") then
    sw = {}
    for _, iv in ipairs(IMMA) do
      if iv[1] == "imma_w8_swz" then for kk, v in pairs(iv[2]) do sw[kk] = v end end
    end
    local qsw = tir.build(qg.schedule(qf, {intrin = "mma", tc = sw}).mod, "cuda")
    qsw(a, b, bias, scale, bsum, out)
    tir.testing.assert_allclose(out, out2, {rtol = 0, atol = 0})
    local t_sw = timed(qsw, a, b, bias, scale, bsum, out)
    row("qgemm", "imma_w8_swz_fused", t_sw, "tirlua plain int8", best_t, "int8", best_v)
    row("qgemm", "imma_w8_swz_fused", t_sw, "cuBLASLt + requant", t_lt + t_rq, "int8")
  end
  -- wgmma: against the plain wgmma GEMM of the same tiles (the best plain int8 path here)
  for _, q in ipairs(qw) do
    local o2 = tir.nd.random({m, n}, "int8", dev, {seed = 78}) -- a kernel writing nothing cannot pass
    q[2](a, b, bias, scale, bsum, o2)
    tir.testing.assert_allclose(o2, out2, {rtol = 0, atol = 0})
    row("qgemm", q[1], t_q[q[1]], "tirlua plain int8", best_t, "int8", best_v)
    row("qgemm", q[1], t_q[q[1]], "cuBLASLt + requant", t_lt + t_rq, "int8")
  end
  -- asymmetric weights: per-column zb, the row sums of A computed inside the IMMA kernel
  local zo = {M = m, N = n, K = k, a_zero_point = ZA, b_zero_point = "per_column", b_sums = "input", bias = true,
              scale = "per_channel", out_zero_point = -7, out_dtype = "int8", name = "qgemm_zb"}
  local zf = qm(zo)
  local zmods = {} -- {variant, module, plain time}
  if qwant("imma_fused_zb") and t_int8.mma then
    zmods[#zmods + 1] = {"imma_fused_zb", tir.build(qg.schedule(zf, {intrin = "mma", tc = imma_tiles}).mod, "cuda"), t_int8.mma}
  end
  -- wgmma: the row sums of A from the swizzled TMA tiles of A, in the same kernel
  for _, q in ipairs(QWGMMA) do
    if info.arch == "sm_90" and qwant(q[1] .. "_zb") and t_int8[q[3]] then
      local okq, qs = pcall(qg.schedule, zf, {intrin = "wgmma", tc = qtc(q[2], m, n)})
      if okq then zmods[#zmods + 1] = {q[1] .. "_zb", tir.build(qs.mod, "cuda -arch=sm_90a"), t_int8[q[3]]}
      else print(("%s_zb: skipped (%s)"):format(q[1], tostring(qs):match("[^\n]*"))) end
    end
  end
  -- _zb1: the row sums in quantized_matmul's a_sums = "ones" form: one more wgmma m64n8k32 per 32
  -- columns of A against a ones tile, in the step's wgmma group (tc_gemm_row_sums.fuse_ones)
  local zo1 = {}
  for kk, v in pairs(zo) do zo1[kk] = v end
  zo1.a_sums = "ones"
  local zf1
  for _, q in ipairs(QWGMMA) do
    if info.arch == "sm_90" and qwant(q[1] .. "_zb1") and t_int8[q[3]] then
      zf1 = zf1 or qm(zo1)
      local okq, qs = pcall(qg.schedule, zf1, {intrin = "wgmma", tc = qtc(q[2], m, n)})
      if okq then zmods[#zmods + 1] = {q[1] .. "_zb1", tir.build(qs.mod, "cuda -arch=sm_90a"), t_int8[q[3]]}
      else print(("%s_zb1: skipped (%s)"):format(q[1], tostring(qs):match("[^\n]*"))) end
    end
  end
  if #zmods == 0 and not sw then return end
  local zb = tir.nd.random({n}, "int32", dev, {seed = 35, low = -128, high = 127})
  -- the reference: cuBLASLt, the row sums (a tirlua kernel), a requantizing kernel
  -- (a CTA a row: 256 threads read the row coalesced, a cross-thread reduction of their partial
  -- sums -- lower_cross_thread_reduction's shuffles; was one thread a row, 0.2+ ms at 4096^2)
  local rsf = tir.Schedule(qm.row_sums_func(m, k, "int8"))
  local ri2, rk2 = rsf:get_loops(rsf:get_block("a_row_sum"))
  local _, rt2 = rsf:split(rk2, {nil, 256})
  rsf:bind(ri2, "blockIdx.x"); rsf:bind(rt2, "threadIdx.x")
  local rsk = tir.build(rsf.mod, "cuda")
  local asum = tir.nd.empty({m}, "int32", dev)
  rsk(a, asum)
  local t_rs = timed(rsk, a, asum)
  local Ai = te.placeholder({m}, "int32", "a_row_sums")
  local Zi = te.placeholder({n}, "int32", "zb")
  local O2 = te.compute({m, n}, function(i, j)
    local v = Ci[{i, j}] - Zi[{j}] * Ai[{i}] - tir.const(ZA, "int32") * Ki[{j}] + tir.const(k * ZA, "int32") * Zi[{j}] + Bi[{j}]
    return qm.requantize_expr(Si[{j}] * te.cast("float32", v), -7, "int8", false)
  end, "requant_zb")
  local rq2 = elementwise_kernel(te.create_prim_func({Ci, Ai, Zi, Bi, Si, Ki, O2}, "requant_zb"), "requant_zb")
  local out3 = tir.nd.empty({m, n}, "int8", dev)
  rq2(c_lt, asum, zb, bias, scale, bsum, out3)
  local t_rq2 = timed(rq2, c_lt, asum, zb, bias, scale, bsum, out3)
  for _, z in ipairs(zmods) do
    local o3 = tir.nd.random({m, n}, "int8", dev, {seed = 79})
    z[2](a, b, zb, bias, scale, bsum, o3)
    tir.testing.assert_allclose(o3, out3, {rtol = 0, atol = 0})
    local t_zb = timed(z[2], a, b, zb, bias, scale, bsum, o3)
    row("qgemm", z[1], t_zb, "tirlua plain int8", best_t, "int8", best_v)
    row("qgemm", z[1], t_zb, "cuBLASLt + row sums + requant", t_lt + t_rs + t_rq2, "int8")
  end
  if sw then
    local zsw = tir.build(qg.schedule(qm(zo), {intrin = "mma", tc = sw}).mod, "cuda")
    zsw(a, b, zb, bias, scale, bsum, out)
    tir.testing.assert_allclose(out, out3, {rtol = 0, atol = 0})
    local t_zsw = timed(zsw, a, b, zb, bias, scale, bsum, out)
    row("qgemm", "imma_w8_swz_fused_zb", t_zsw, "tirlua plain int8", best_t, "int8", best_v)
    row("qgemm", "imma_w8_swz_fused_zb", t_zsw, "cuBLASLt + row sums + requant", t_lt + t_rs + t_rq2, "int8")
  end
end

for _, s in ipairs(shapes) do
  local okb, err = pcall(bench_shape, s[1], s[2], s[3])
  if not okb then print(("%dx%dx%d: FAILED: %s"):format(s[1], s[2], s[3], tostring(err))) end
end

common.markdown_report("int8 GEMM and fused quantized GEMM vs cuBLASLt (bench/gemm_int8.lua)",
  ("%s, %s (%s, %d SMs), commit %s; CUDA events, median of 5 samples of 5 launches after 3 warm-ups; every result " ..
   "checked bit-exact first (tirlua int8 GEMM = cuBLASLt, fused qgemm = cuBLASLt + requant). simt/dp4a: " ..
   "tir.schedules.qgemm's SIMT and DP4A schedules; imma: tc_gemm mma.sync m16n8k32; wgmma_*: tc_gemm intrin = \"wgmma\" (m64nNk32.s8.s8.s32, sm_90a)."):format(
   common.date(), info.name, info.arch, info.sm_count, common.commit()), nil,
  {"bench", "variant", "MxNxK", "ms", "TOP/s", "ref", "ref ms", "ref TOP/s", "ref_ms / ms"}, rows,
  function(r)
    return {r.bench, r.variant, r.shape, ("%.3f"):format(r.ms), ("%.2f"):format(r.tflops), r.ref, ("%.3f"):format(r.ref_ms),
            ("%.2f"):format(r.ref_tflops), ("%.3f"):format(r.ref_ms / r.ms)}
  end)
