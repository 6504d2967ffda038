-- bench/gemm_fp16.lua -- tirlua's tensor-core GEMMs (fp16 x fp16 -> fp32 accumulate -> fp16) against
-- cuBLAS (cublasGemmEx, fp16 in/out, fp32 compute) in one process on the same random inputs.
-- Every result is checked against cuBLAS first (and against float64 for small sizes).
--   tirlua bench/gemm_fp16.lua [MxNxK ...]   (default: 1024^3 2048^3 4096^3 8192^3 and the LLM shapes)
--   TIRLUA_BENCH_VARIANTS=mma,wmma,...       which configurations (see VARIANTS; "tuned" reads the tuning database,
--                                            TIRLUA_TUNE_DB; the mma_*_sk* split-K rows run for M <= 128 only)
--   TIRLUA_BENCH_OUT=file                    append the markdown table to that file
--   TIRLUA_REF_KERNELS=file                  the cuBLAS kernel names to record per dtype, layout and shape
--                                            (scripts/gpu/cublas_kernels.lua writes the file from ncu)
--   TIRLUA_REF_KERNEL_<DTYPE>_<LAYOUT>=name  the cuBLAS kernel name to record for every shape of that
--                                            dtype and layout (TIRLUA_REF_KERNEL_FLOAT16_NT)
-- The wgmma variants (sm_90a) use K-major operands (layout NT: B is N x K; cuBLAS with B transposed).
-- Every row is also appended to bench/results.jsonl (bench/common.lua says where on a GPU machine).
local tir = require("tir")
local core = tir.core
local tc = require("tir.schedules.tc_gemm")
local tt = require("tir.schedules.tc_gemm_tune")
local common = dofile("bench/common.lua")
local TT_OPTS = {dtype = "float16", out_dtype = "float16", intrin = "mma", layout = "NN"} -- tc_gemm_tune.build's workload

local dev = common.device("bench/gemm_fp16.lua")
if not dev then return end
assert(core.cublas_available())

local VARIANTS = {
  mma = {desc = "mma.sync m16n8k16 + ldmatrix, 128x128x32 CTA, 64x64 warp tiles, tc_gemm's shared layout (XOR-swizzled since issue 12; padded rows before)",
         opts = {intrin = "mma"}},
  mma_s3 = {desc = "as mma, 3-stage cp.async pipeline", opts = {intrin = "mma", stages = 3}},
  mma_s4 = {desc = "as mma, 4-stage cp.async pipeline", opts = {intrin = "mma", stages = 4}},
  mma_256 = {desc = "mma.sync, 128x256x32 CTA (8 warps of 64x64)", opts = {intrin = "mma", BN = 256}},
  mma_256_s3 = {desc = "mma.sync, 128x256x32 CTA, 3-stage cp.async pipeline", opts = {intrin = "mma", BN = 256, stages = 3}},
  mma_256_s4 = {desc = "mma.sync, 128x256x32 CTA, 4-stage cp.async pipeline", opts = {intrin = "mma", BN = 256, stages = 4}},
  wmma_s3 = {desc = "WMMA, 3-stage cp.async pipeline", opts = {intrin = "wmma", stages = 3}},
  -- issue 12 (every mma variant: the fp16 epilogue stores whole sectors, 32-bit shared addresses;
  -- tc_gemm's defaults: XOR-swizzled tiles, group_m = 8)
  mma_s4_pad = {desc = "as mma_s4 with the old layout: rows padded by 16 bytes, 2-D grid (pad = true, group_m = 1)",
                opts = {intrin = "mma", stages = 4, pad = true, group_m = 1}},
  mma_s4_swz = {desc = "as mma_s4, shared tiles XOR-swizzled instead of padded", opts = {intrin = "mma", stages = 4, swizzle = true}},
  mma_s3_swz = {desc = "as mma_s3, swizzled", opts = {intrin = "mma", stages = 3, swizzle = true}},
  mma_s4_swz_g8 = {desc = "as mma_s4_swz, grouped CTA order (group_m = 8)", opts = {intrin = "mma", stages = 4, swizzle = true, group_m = 8}},
  mma_bk64_s3 = {desc = "128x128x64 CTA, 3 stages (tc_gemm defaults otherwise: swizzled, group_m = 8)",
                 opts = {intrin = "mma", BK = 64, stages = 3}},
  mma_bk64_s3_swz = {desc = "128x128x64 CTA, 3 stages, swizzled (128-byte rows of A)",
                     opts = {intrin = "mma", BK = 64, stages = 3, swizzle = true}},
  mma_bk64_s3_fp = {desc = "as mma_bk64_s3, fragments of the next k16 step loaded during this one's mma (frag_pipeline)",
                    opts = {intrin = "mma", BK = 64, stages = 3, frag_pipeline = true}},
  mma_bk64_s2 = {desc = "128x128x64 CTA, 2 stages", opts = {intrin = "mma", BK = 64, stages = 2}},
  mma_256_s3_swz = {desc = "128x256x32 CTA (8 warps of 64x64), 3 stages, swizzled", opts = {intrin = "mma", BN = 256, stages = 3, swizzle = true}},
  mma_256_s4_swz_g8 = {desc = "128x256x32 CTA (8 warps), 4 stages, swizzled, group_m = 8",
                       opts = {intrin = "mma", BN = 256, stages = 4, swizzle = true, group_m = 8}},
  mma_256x128_s3_swz = {desc = "256x128x32 CTA (8 warps of 64x64), 3 stages, swizzled",
                        opts = {intrin = "mma", BM = 256, BN = 128, stages = 3, swizzle = true}},
  mma_256x128_s4_swz_g8 = {desc = "256x128x32 CTA (8 warps), 4 stages, swizzled, group_m = 8",
                           opts = {intrin = "mma", BM = 256, BN = 128, stages = 4, swizzle = true, group_m = 8}},
  mma_256x128_bk64_s3 = {desc = "256x128x64 CTA (8 warps of 64x64), 3 stages", opts = {intrin = "mma", BM = 256, BN = 128, BK = 64, stages = 3}},
  mma_256_bk64_s3 = {desc = "128x256x64 CTA (8 warps of 64x64), 3 stages", opts = {intrin = "mma", BN = 256, BK = 64, stages = 3}},
  -- 8 warps of 64x32 on the 128x128 tile: 4 warps a scheduler at 2 CTAs a SM (64x64 warp tiles give 2)
  mma_8w_s3 = {desc = "128x128x32 CTA, 8 warps of 64x32, 3 stages", opts = {intrin = "mma", warp_n = 32, stages = 3}},
  mma_8w_bk64_s3 = {desc = "128x128x64 CTA, 8 warps of 64x32, 3 stages", opts = {intrin = "mma", warp_n = 32, BK = 64, stages = 3}},
  mma_256_s3_b32 = {desc = "128x256x32 CTA (8 warps of 64x64), 3 stages", opts = {intrin = "mma", BN = 256, BK = 32, stages = 3}},
  mma_256x128_s3_b32 = {desc = "256x128x32 CTA (8 warps of 64x64), 3 stages", opts = {intrin = "mma", BM = 256, BN = 128, BK = 32, stages = 3}},
  -- frag_prefetch: CUTLASS's main loop (the next tile's first fragments after the wait and barrier, during this
  -- tile's last mma; inject_software_pipeline's nested mode)
  mma_s3_fpf = {desc = "128x128x32, 3 stages, frag_prefetch", opts = {intrin = "mma", stages = 3, frag_prefetch = true}},
  mma_s4_fpf = {desc = "128x128x32, 4 stages, frag_prefetch", opts = {intrin = "mma", stages = 4, frag_prefetch = true}},
  mma_bk64_s3_fpf = {desc = "128x128x64, 3 stages, frag_prefetch", opts = {intrin = "mma", BK = 64, stages = 3, frag_prefetch = true}},
  mma_256x128_s3_fpf = {desc = "256x128x32 (8 warps of 64x64), 3 stages, frag_prefetch",
                        opts = {intrin = "mma", BM = 256, BN = 128, BK = 32, stages = 3, frag_prefetch = true}},
  mma_256_s3_fpf = {desc = "128x256x32 (8 warps of 64x64), 3 stages, frag_prefetch",
                    opts = {intrin = "mma", BN = 256, BK = 32, stages = 3, frag_prefetch = true}},
  -- not measured yet (issue 12's runs ended before them; 248 / 248 / 230 registers, no spills with ptxas 13 sm_90)
  mma_256x128_bk64_s3_fpf = {desc = "256x128x64 (8 warps of 64x64), 3 stages, frag_prefetch",
                             opts = {intrin = "mma", BM = 256, BN = 128, BK = 64, stages = 3, frag_prefetch = true}},
  mma_256_bk64_s3_fpf = {desc = "128x256x64 (8 warps of 64x64), 3 stages, frag_prefetch",
                         opts = {intrin = "mma", BN = 256, BK = 64, stages = 3, frag_prefetch = true}},
  mma_256_s4_fpf = {desc = "128x256x32 (8 warps of 64x64), 4 stages, frag_prefetch",
                    opts = {intrin = "mma", BN = 256, BK = 32, stages = 4, frag_prefetch = true}},
  wmma = {desc = "WMMA 16x16x16, 128x128x32 CTA, 64x64 warp tiles", opts = {intrin = "wmma"}},
  -- Hopper TMA (tc_gemm tma = true; sm_90): one cp.async.bulk.tensor per tile by thread 0, full/empty mbarrier
  -- pipeline without __syncthreads in the main loop; shared rows dense (TMA does not pad)
  tma_s3 = {desc = "mma.sync, TMA tiles, 3-stage mbarrier pipeline (128x128x32)", opts = {intrin = "mma", tma = true, stages = 3}},
  tma_s4 = {desc = "mma.sync, TMA tiles, 4-stage mbarrier pipeline (128x128x32)", opts = {intrin = "mma", tma = true, stages = 4}},
  tma_256_s4 = {desc = "mma.sync, TMA tiles, 128x256x32 CTA, 4 stages", opts = {intrin = "mma", tma = true, BN = 256, stages = 4}},
  tma_b64_s3 = {desc = "mma.sync, TMA tiles, 128x128x64 (128-byte rows), 3 stages", opts = {intrin = "mma", tma = true, BK = 64, stages = 3}},
  tma_s4_p = {desc = "as tma_s4, persistent: 2 CTAs per SM walking the tiles in groups of 8 rows", opts = {intrin = "mma", tma = true, stages = 4, persistent = true}},
  tma_nt_s4 = {desc = "mma.sync, TMA tiles with the 64-byte swizzle (both K-major), 4 stages, layout NT",
               opts = {intrin = "mma", tma = true, stages = 4}, layout = "NT", arch = "sm_90a"},
  mma_nt_s4 = {desc = "as mma_s4 (cp.async, padded rows), layout NT: the baseline of tma_nt_s4", opts = {intrin = "mma", stages = 4},
               layout = "NT"},
  wgmma_tma = {desc = "wgmma m64n256k16, 128x256x64 CTA, TMA tiles (128-byte swizzle), 4-stage mbarrier pipeline, one wgmma group in flight, layout NT",
               opts = {intrin = "wgmma", BM = 128, BN = 256, BK = 64, stages = 4, tma = true}, layout = "NT", arch = "sm_90a"},
  -- issue 9 (hA): with tma the stage of step k - 1 is released after step k's wgmma_wait_group 1
  -- (wgmma_pending = 1, the default); wgmma_tma_w0 is the earlier wgmma_tma (each step waited)
  wgmma_tma_w0 = {desc = "as wgmma_tma, each step's wgmma group waited before its stage is released (wgmma_pending = 0)",
                  opts = {intrin = "wgmma", BM = 128, BN = 256, BK = 64, stages = 4, tma = true, wgmma_pending = 0},
                  layout = "NT", arch = "sm_90a"},
  -- issue 9 (hR): A from registers (a_operand = "register": each k step ldmatrix's the warpgroup's
  -- 64 x 64 A tile into a wgmma.matrix_a fragment, wgmma reads A there, B from shared memory); one
  -- fragment, so each group is waited before the next load (wgmma_pending = 0): compare with _w0
  wgmma_tma_ra = {desc = "as wgmma_tma_w0 with A from registers (ldmatrix into a wgmma.matrix_a fragment, a_operand = \"register\")",
                  opts = {intrin = "wgmma", BM = 128, BN = 256, BK = 64, stages = 4, tma = true, wgmma_pending = 0, a_operand = "register"},
                  layout = "NT", arch = "sm_90a"},
  wgmma_ws_ra = {desc = "as wgmma_ws_w0 with A from registers (a_operand = \"register\")",
                 opts = {intrin = "wgmma", BM = 128, BN = 256, BK = 64, stages = 4, tma = true, warp_specialize = true, wgmma_pending = 0,
                         a_operand = "register"}, layout = "NT", arch = "sm_90a"},
  -- warp specialization (inject_warp_specialization): a producer warpgroup (one thread issuing every
  -- TMA copy, setmaxnreg.dec 40) + BM / 64 consumer warpgroups (setmaxnreg.inc 232): 128 * (BM / 64 + 1) threads
  wgmma_ws = {desc = "as wgmma_tma, warp-specialized: 1 producer + 2 consumer warpgroups (384 threads), one wgmma group in flight",
              opts = {intrin = "wgmma", BM = 128, BN = 256, BK = 64, stages = 4, tma = true, warp_specialize = true},
              layout = "NT", arch = "sm_90a"},
  wgmma_ws_w0 = {desc = "as wgmma_ws with wgmma_pending = 0 (a stage released as soon as its group is waited)",
                 opts = {intrin = "wgmma", BM = 128, BN = 256, BK = 64, stages = 4, tma = true, warp_specialize = true, wgmma_pending = 0},
                 layout = "NT", arch = "sm_90a"},
  wgmma_ws_s3 = {desc = "as wgmma_ws, 3 stages", opts = {intrin = "wgmma", BM = 128, BN = 256, BK = 64, stages = 3, tma = true,
                 warp_specialize = true}, layout = "NT", arch = "sm_90a"},
  wgmma_ws_128 = {desc = "warp-specialized, 128x128x64 CTA (2 consumer warpgroups of 64x128), 4 stages",
                  opts = {intrin = "wgmma", BM = 128, BN = 128, BK = 64, stages = 4, tma = true, warp_specialize = true},
                  layout = "NT", arch = "sm_90a"},
  wgmma_ws_64x128 = {desc = "warp-specialized, 64x128x64 CTA (1 consumer warpgroup, 256 threads), 4 stages (small M)",
                     opts = {intrin = "wgmma", BM = 64, BN = 128, BK = 64, stages = 4, tma = true, warp_specialize = true},
                     layout = "NT", arch = "sm_90a"},
  wgmma_ws_64x256 = {desc = "warp-specialized, 64x256x64 CTA (1 consumer warpgroup), 4 stages",
                     opts = {intrin = "wgmma", BM = 64, BN = 256, BK = 64, stages = 4, tma = true, warp_specialize = true},
                     layout = "NT", arch = "sm_90a"},
  wgmma_ws_bf16 = {desc = "as wgmma_ws with bf16 inputs and fp32 output (cuBLAS bf16 -> fp32)",
                   opts = {intrin = "wgmma", BM = 128, BN = 256, BK = 64, stages = 4, tma = true, warp_specialize = true},
                   layout = "NT", arch = "sm_90a", dtype = "bfloat16"},
  wgmma_tma_bf16 = {desc = "as wgmma_tma with bf16 inputs and fp32 output (not warp-specialized)",
                    opts = {intrin = "wgmma", BM = 128, BN = 256, BK = 64, stages = 4, tma = true},
                    layout = "NT", arch = "sm_90a", dtype = "bfloat16"},
  wgmma_ws_64x128_bf16 = {desc = "as wgmma_ws_64x128 with bf16 inputs, fp32 output",
                          opts = {intrin = "wgmma", BM = 64, BN = 128, BK = 64, stages = 4, tma = true, warp_specialize = true},
                          layout = "NT", arch = "sm_90a", dtype = "bfloat16"},
  -- persistent (tc_gemm_wgmma persistent = true: G = the largest divisor of the tile count <= the SMs, tiles
  -- grouped by 8 rows); warp-specialized, the producer fills the next tile's stages during the epilogue
  wgmma_ws_p = {desc = "as wgmma_ws, persistent (G CTAs walking the tiles; the producer runs ahead across tiles)",
                opts = {intrin = "wgmma", BM = 128, BN = 256, BK = 64, stages = 4, tma = true, warp_specialize = true, persistent = true},
                layout = "NT", arch = "sm_90a"},
  wgmma_tma_p = {desc = "as wgmma_tma, persistent (not warp-specialized: the pipeline re-arms per tile)",
                 opts = {intrin = "wgmma", BM = 128, BN = 256, BK = 64, stages = 4, tma = true, persistent = true},
                 layout = "NT", arch = "sm_90a"},
  wgmma_ws_p_bf16 = {desc = "as wgmma_ws_p with bf16 inputs and fp32 output",
                     opts = {intrin = "wgmma", BM = 128, BN = 256, BK = 64, stages = 4, tma = true, warp_specialize = true, persistent = true},
                     layout = "NT", arch = "sm_90a", dtype = "bfloat16"},
  wgmma_ws_128_s6 = {desc = "warp-specialized 128x128x64 CTA, 6 stages (192 KB in flight per SM: small-M, memory-bound shapes)",
                     opts = {intrin = "wgmma", BM = 128, BN = 128, BK = 64, stages = 6, tma = true, warp_specialize = true},
                     layout = "NT", arch = "sm_90a"},
  wgmma_ws_128_s6_bf16 = {desc = "as wgmma_ws_128_s6 with bf16 inputs and fp32 output (not measured yet)",
                          opts = {intrin = "wgmma", BM = 128, BN = 128, BK = 64, stages = 6, tma = true, warp_specialize = true},
                          layout = "NT", arch = "sm_90a", dtype = "bfloat16"},
  wgmma_ws_64x64_s6 = {desc = "warp-specialized 64x64x64 CTA (1 consumer warpgroup, no setmaxnreg), 6 stages",
                       opts = {intrin = "wgmma", BM = 64, BN = 64, BK = 64, stages = 6, tma = true, warp_specialize = true},
                       layout = "NT", arch = "sm_90a"},
  wgmma_tma_64x64_s6 = {desc = "64x64x64 CTA, one warpgroup (128 threads), TMA 6 stages, not warp-specialized",
                        opts = {intrin = "wgmma", BM = 64, BN = 64, BK = 64, stages = 6, tma = true},
                        layout = "NT", arch = "sm_90a"},
  wgmma_tma_s3 = {desc = "as wgmma_tma, 3 stages", opts = {intrin = "wgmma", BM = 128, BN = 256, BK = 64, stages = 3, tma = true},
                  layout = "NT", arch = "sm_90a"},
  -- persistent grids (tc_gemm.persistent_tiles: CTAs that fit at once walk the tiles in grouped
  -- order, the pipeline re-armed per tile) and the TMA-store epilogue (each warpgroup's tile into
  -- a dense shared tile, one cp.async.bulk.tensor store); the 4-stage 128x256 kernel leaves no room
  -- for the 64 KB store tile inside the persistent tile loop (no reuse under a loop), hence s3
  wgmma_tma_es = {desc = "as wgmma_tma, epilogue_store = \"tma\" (the store tile reuses the pipeline's bytes)",
                  opts = {intrin = "wgmma", BM = 128, BN = 256, BK = 64, stages = 4, tma = true, epilogue_store = "tma"},
                  layout = "NT", arch = "sm_90a"},
  wgmma_tma_p = {desc = "as wgmma_tma, persistent = true (one CTA an SM)",
                 opts = {intrin = "wgmma", BM = 128, BN = 256, BK = 64, stages = 4, tma = true, persistent = true}, layout = "NT", arch = "sm_90a"},
  wgmma_tma_s3_p = {desc = "as wgmma_tma_s3, persistent = true",
                    opts = {intrin = "wgmma", BM = 128, BN = 256, BK = 64, stages = 3, tma = true, persistent = true}, layout = "NT", arch = "sm_90a"},
  wgmma_tma_s3_p_es = {desc = "as wgmma_tma_s3_p, epilogue_store = \"tma\"",
                       opts = {intrin = "wgmma", BM = 128, BN = 256, BK = 64, stages = 3, tma = true, persistent = true, epilogue_store = "tma"},
                       layout = "NT", arch = "sm_90a"},
  -- stop 10 (hA): the small-M tiles (M = 128: 86 CTAs of 128 x 128 for N = 11008, 172 of 64 x 128 or 128 x 64),
  -- the 4096^3 experiments (256 x 128 tiles: 4 consumer warpgroups; setmaxnreg split) and the leave-one-out rows
  wgmma_ws_64x128_s8 = {desc = "warp-specialized 64x128x64 CTA (1 consumer warpgroup), 8 stages (192 KB)",
                        opts = {intrin = "wgmma", BM = 64, BN = 128, BK = 64, stages = 8, tma = true, warp_specialize = true},
                        layout = "NT", arch = "sm_90a"},
  wgmma_ws_64x128_s8_bf16 = {desc = "as wgmma_ws_64x128_s8 with bf16 inputs, fp32 output",
                             opts = {intrin = "wgmma", BM = 64, BN = 128, BK = 64, stages = 8, tma = true, warp_specialize = true},
                             layout = "NT", arch = "sm_90a", dtype = "bfloat16"},
  wgmma_ws_128x64_s8 = {desc = "warp-specialized 128x64x64 CTA (2 consumer warpgroups of 64x64), 8 stages (192 KB)",
                        opts = {intrin = "wgmma", BM = 128, BN = 64, BK = 64, stages = 8, tma = true, warp_specialize = true},
                        layout = "NT", arch = "sm_90a"},
  wgmma_ws_128x64_s8_bf16 = {desc = "as wgmma_ws_128x64_s8 with bf16 inputs, fp32 output",
                             opts = {intrin = "wgmma", BM = 128, BN = 64, BK = 64, stages = 8, tma = true, warp_specialize = true},
                             layout = "NT", arch = "sm_90a", dtype = "bfloat16"},
  wgmma_ws_bf16_nop = {desc = "as wgmma_ws_p_bf16 without persistent (one CTA a tile)",
                       opts = {intrin = "wgmma", BM = 128, BN = 256, BK = 64, stages = 4, tma = true, warp_specialize = true},
                       layout = "NT", arch = "sm_90a", dtype = "bfloat16"},
  wgmma_ws_p_256x128 = {desc = "as wgmma_ws_p with 256x128 tiles (4 consumer warpgroups of 64x128, 640 threads)",
                        opts = {intrin = "wgmma", BM = 256, BN = 128, BK = 64, stages = 4, tma = true, warp_specialize = true, persistent = true},
                        layout = "NT", arch = "sm_90a"},
  wgmma_ws_p_r24 = {desc = "as wgmma_ws_p, ws_regs = {24, 240} (the producer's minimum, the consumers' 240)",
                    opts = {intrin = "wgmma", BM = 128, BN = 256, BK = 64, stages = 4, tma = true, warp_specialize = true, persistent = true,
                            ws_regs = {24, 240}}, layout = "NT", arch = "sm_90a"},
  wgmma_ws_p_bk32_s8 = {desc = "as wgmma_ws_p with BK = 32 (64-byte swizzle) and 8 stages (the same 192 KB, finer stages)",
                        opts = {intrin = "wgmma", BM = 128, BN = 256, BK = 32, stages = 8, tma = true, warp_specialize = true, persistent = true},
                        layout = "NT", arch = "sm_90a"},
  wgmma_ws_p_s3x = {desc = "as wgmma_ws_p, 3 stages",
                    opts = {intrin = "wgmma", BM = 128, BN = 256, BK = 64, stages = 3, tma = true, warp_specialize = true, persistent = true},
                    layout = "NT", arch = "sm_90a"},
  -- what a user gets: tc_gemm intrin = "wgmma" with no tile or pipeline option (tc_gemm_wgmma.pick), and
  -- tc_gemm.auto_tensorize(func, "wgmma")
  wgmma_default = {desc = "tc_gemm.schedule(func, {intrin = \"wgmma\"}): the defaults' per-shape pick", opts = {intrin = "wgmma"},
                   layout = "NT", arch = "sm_90a"},
  wgmma_default_bf16 = {desc = "as wgmma_default with bf16 inputs, fp32 output", opts = {intrin = "wgmma"},
                        layout = "NT", arch = "sm_90a", dtype = "bfloat16"},
  auto_wgmma = {desc = "tc_gemm.auto_tensorize(func, \"wgmma\") (fp16, layout NT)", auto_wgmma = true, layout = "NT", arch = "sm_90a"},
  auto_wgmma_bf16 = {desc = "tc_gemm.auto_tensorize(func, \"wgmma\") (bf16 -> fp32, layout NT)", auto_wgmma = true, layout = "NT",
                     arch = "sm_90a", dtype = "bfloat16"},
  -- warp-specialized + persistent with the TMA-store epilogue (the consumers' named barrier around
  -- the store, inject_tma_store): 3 stages leave room for the 64 KB store tile (wgmma_ws_p_s3x without it)
  wgmma_ws_p_s3_es = {desc = "as wgmma_ws_p_s3x, epilogue_store = \"tma\"", opts = {intrin = "wgmma", BM = 128, BN = 256, BK = 64, stages = 3,
                      tma = true, warp_specialize = true, persistent = true, epilogue_store = "tma"}, layout = "NT", arch = "sm_90a"},
  -- thread-block clusters (cluster = {cm, cn}): cm CTAs along M share the B tile, cn along N the A
  -- tile; each loads its slice and multicasts it (inject_tma_pipeline tma_cluster / tma_multicast)
  wgmma_ws_p_c21 = {desc = "as wgmma_ws_p, cluster = {2, 1} (B tiles multicast to 2 CTAs)", opts = {intrin = "wgmma", BM = 128, BN = 256,
                    BK = 64, stages = 4, tma = true, warp_specialize = true, persistent = true, cluster = {2, 1}}, layout = "NT", arch = "sm_90a"},
  wgmma_ws_p_c12 = {desc = "as wgmma_ws_p, cluster = {1, 2} (A tiles multicast to 2 CTAs)", opts = {intrin = "wgmma", BM = 128, BN = 256,
                    BK = 64, stages = 4, tma = true, warp_specialize = true, persistent = true, cluster = {1, 2}}, layout = "NT", arch = "sm_90a"},
  wgmma_ws_c21 = {desc = "as wgmma_ws (not persistent), cluster = {2, 1}", opts = {intrin = "wgmma", BM = 128, BN = 256, BK = 64, stages = 4,
                  tma = true, warp_specialize = true, cluster = {2, 1}}, layout = "NT", arch = "sm_90a"},
  wgmma_ws_p_s3_es_c12 = {desc = "as wgmma_ws_p_s3_es, cluster = {1, 2} (cuBLAS's 4096^3 shape: A multicast)", opts = {intrin = "wgmma", BM = 128,
                          BN = 256, BK = 64, stages = 3, tma = true, warp_specialize = true, persistent = true, epilogue_store = "tma", cluster = {1, 2}},
                          layout = "NT", arch = "sm_90a"},
  wgmma_ws_p_s3_es_c21 = {desc = "as wgmma_ws_p_s3_es, cluster = {2, 1}", opts = {intrin = "wgmma", BM = 128, BN = 256, BK = 64, stages = 3,
                          tma = true, warp_specialize = true, persistent = true, epilogue_store = "tma", cluster = {2, 1}}, layout = "NT", arch = "sm_90a"},
  wgmma_tma_128 = {desc = "wgmma m64n128k16, 128x128x64 CTA, TMA tiles, 4 stages, layout NT",
                   opts = {intrin = "wgmma", BM = 128, BN = 128, BK = 64, stages = 4, tma = true}, layout = "NT", arch = "sm_90a"},
  mma_nopad_s4 = {desc = "as mma_s4 with unpadded shared rows (the layout TMA gives: isolates TMA from padding)",
                  opts = {intrin = "mma", stages = 4, pad = false}},
  -- split-K (tc_gemm split_k: partial sums on blockIdx.z + a kernel adding them); small-M shapes only
  mma_s4_sk2 = {desc = "as mma_s4, split_k = 2 (M <= 128 only)", opts = {intrin = "mma", stages = 4, split_k = 2}, small_m = true},
  mma_s4_sk4 = {desc = "as mma_s4, split_k = 4 (M <= 128 only)", opts = {intrin = "mma", stages = 4, split_k = 4}, small_m = true},
  mma_s4_sk8 = {desc = "as mma_s4, split_k = 8 (M <= 128 only)", opts = {intrin = "mma", stages = 4, split_k = 8}, small_m = true},
  mma_b64_s3_sk4 = {desc = "mma.sync, BK = 64, 3 stages, split_k = 4 (M <= 128 only)",
                    opts = {intrin = "mma", BK = 64, stages = 3, split_k = 4}, small_m = true},
  -- split_k = 3: 86 x 3 = 258 CTAs for N = 11008 on 132 SMs (2 and 4 leave SMs idle); K padded to whole slices
  mma_b32_s3_sk3 = {desc = "mma.sync, BK = 32, 3 stages, split_k = 3 (K padded to 3 whole slices; M <= 128 only)",
                    opts = {intrin = "mma", BK = 32, stages = 3, split_k = 3}, small_m = true},
  mma_b64_s3_sk3 = {desc = "mma.sync, BK = 64, 3 stages, split_k = 3 (K padded; M <= 128 only)",
                    opts = {intrin = "mma", BK = 64, stages = 3, split_k = 3}, small_m = true},
  mma_b32_s4_sk3 = {desc = "mma.sync, BK = 32, 4 stages, split_k = 3 (K padded; M <= 128 only)",
                    opts = {intrin = "mma", BK = 32, stages = 4, split_k = 3}, small_m = true},
  mma_b32_s3_sk3_fpf = {desc = "as mma_b32_s3_sk3 with frag_prefetch (M <= 128 only)",
                        opts = {intrin = "mma", BK = 32, stages = 3, split_k = 3, frag_prefetch = true}, small_m = true},
  -- split_k_mode = "serial": the last CTA of each tile sums the slices in the same launch (lower_grid_tail)
  mma_b64_s3_sk3_ser = {desc = "as mma_b64_s3_sk3, split_k_mode = \"serial\" (one launch; M <= 128 only)",
                        opts = {intrin = "mma", BK = 64, stages = 3, split_k = 3, split_k_mode = "serial"}, small_m = true},
  mma_b32_s4_sk3_ser = {desc = "as mma_b32_s4_sk3, split_k_mode = \"serial\" (M <= 128 only)",
                        opts = {intrin = "mma", BK = 32, stages = 4, split_k = 3, split_k_mode = "serial"}, small_m = true},
  mma_b32_s3_sk3_ser = {desc = "as mma_b32_s3_sk3, split_k_mode = \"serial\" (M <= 128 only)",
                        opts = {intrin = "mma", BK = 32, stages = 3, split_k = 3, split_k_mode = "serial"}, small_m = true},
  mma_b64_s3_sk4_ser = {desc = "as mma_b64_s3_sk4, split_k_mode = \"serial\" (M <= 128 only)",
                        opts = {intrin = "mma", BK = 64, stages = 3, split_k = 4, split_k_mode = "serial"}, small_m = true},
  -- split_k_mode = "atomic" (stop 12): each CTA adds its slice into a zeroed fp32 tile with red.global.add,
  -- the last CTA of the tile casts it and sets it back to 0 (one launch, no partials workspace)
  mma_b64_s3_sk3_at = {desc = "as mma_b64_s3_sk3, split_k_mode = \"atomic\" (red.global.add; one launch; M <= 128 only)",
                       opts = {intrin = "mma", BK = 64, stages = 3, split_k = 3, split_k_mode = "atomic"}, small_m = true},
  mma_b64_s3_sk3_atu = {desc = "as mma_b64_s3_sk3_at, split_k_ordered = false (the 3 adds in arrival order: no wait; M <= 128 only)",
                        opts = {intrin = "mma", BK = 64, stages = 3, split_k = 3, split_k_mode = "atomic", split_k_ordered = false}, small_m = true},
  mma_c256_b32s6_sk3_at = {desc = "128x256x32, 6 stages, frag_prefetch, split_k = 3 atomic (129 CTAs; M <= 128 only)",
                           opts = {intrin = "mma", BN = 256, BK = 32, stages = 6, frag_prefetch = true, split_k = 3, split_k_mode = "atomic"},
                           small_m = true},
  mma_b32_s6_sk3_at = {desc = "128x128x32, 6 stages, frag_prefetch, split_k = 3 atomic (M <= 128 only)",
                       opts = {intrin = "mma", BK = 32, stages = 6, frag_prefetch = true, split_k = 3, split_k_mode = "atomic"}, small_m = true},
  mma_b64_s4_sk4_at = {desc = "BK = 64, 4 stages, split_k = 4 atomic (M = 16: 16x128 tiles; M <= 128 only)",
                       opts = {intrin = "mma", BK = 64, stages = 4, split_k = 4, split_k_mode = "atomic"}, small_m = true},
  mma_b64_s4_sk8_at = {desc = "BK = 64, 4 stages, split_k = 8 atomic (M <= 128 only)",
                       opts = {intrin = "mma", BK = 64, stages = 4, split_k = 8, split_k_mode = "atomic"}, small_m = true},
  mma_b64_s4_sk4 = {desc = "BK = 64, 4 stages, split_k = 4 parallel (M <= 128 only)",
                    opts = {intrin = "mma", BK = 64, stages = 4, split_k = 4}, small_m = true},
  -- the tuning database's configuration (tc_gemm_tune.options: tuned, nearest tuned shape, or defaults)
  tuned = {desc = "the tuning database's options for the shape (tc_gemm_tune.options; the row says which: tuned, nearest, defaults)",
           tuned = true},
  auto = {desc = "tc_gemm.auto_tensorize's own pick (tuned = false; M, N, K multiples of 16)", auto = true},
  -- Hopper (sm_90a): wgmma.mma_async from 128-byte-swizzled shared tiles, cp.async pipeline;
  -- K-major operands (A M x K, B N x K: layout "NT"), cuBLAS on the same operands (B transposed)
  wgmma = {desc = "wgmma m64n256k16, 128x256x64 CTA (2 consumer warpgroups), 3-stage cp.async + one wgmma group in flight " ..
                   "(wgmma_wait_group 1, 4 tile versions), layout NT",
           opts = {intrin = "wgmma", BM = 128, BN = 256, BK = 64, stages = 3}, layout = "NT", arch = "sm_90a"},
  wgmma_w0 = {desc = "as wgmma, each step's group waited (wgmma_wait_group 0), 4-stage cp.async (the first round's wgmma)",
              opts = {intrin = "wgmma", BM = 128, BN = 256, BK = 64, stages = 4, wgmma_pending = 0}, layout = "NT", arch = "sm_90a"},
  wgmma_128 = {desc = "wgmma m64n128k16, 128x128x64 CTA, 4-stage cp.async + one group in flight, layout NT",
               opts = {intrin = "wgmma", BM = 128, BN = 128, BK = 64, stages = 4}, layout = "NT", arch = "sm_90a"},
  wgmma_bf16 = {desc = "as wgmma with bf16 inputs and fp32 output (cuBLAS bf16 -> fp32)",
                opts = {intrin = "wgmma", BM = 128, BN = 256, BK = 64, stages = 3}, layout = "NT", arch = "sm_90a", dtype = "bfloat16"},
}

-- extra configurations for experiments: TIRLUA_BENCH_EXTRA="name:BK=64,stages=3;name2:..." (tc_gemm options;
-- layout=NT / arch=sm_90a / small_m=true set the variant's operand layout, target arch, M <= 128 only)
for spec in (os.getenv("TIRLUA_BENCH_EXTRA") or ""):gmatch("[^;]+") do
  local name, kv = spec:match("^([%w_]+):(.*)$")
  if not name then error("TIRLUA_BENCH_EXTRA: expected name:key=value,..., got " .. spec) end
  local opts, V = {intrin = "mma"}, {desc = "experiment: " .. kv}
  for k, v in kv:gmatch("([%w_]+)=([%w_]+)") do
    local x = v
    if v == "true" or v == "false" then x = v == "true" else x = math.tointeger(tonumber(v)) or v end
    if k == "layout" or k == "arch" or k == "small_m" then V[k] = x else opts[k] = x end
  end
  V.opts = opts
  VARIANTS[name] = V
end

local shapes = {}
for i = 1, #arg do
  local m, n, k = arg[i]:match("^(%d+)x(%d+)x(%d+)$")
  if not m then m = arg[i]:match("^(%d+)$"); n, k = m, m end
  shapes[#shapes + 1] = {tonumber(m), tonumber(n), tonumber(k)}
end
if #shapes == 0 then
  shapes = {{1024, 1024, 1024}, {2048, 2048, 2048}, {4096, 4096, 4096}, {8192, 8192, 8192}, {16, 11008, 4096},
            {128, 11008, 4096}, {4096, 11008, 4096}, {4096, 4096, 11008}}
end
local names = {}
for v in (os.getenv("TIRLUA_BENCH_VARIANTS") or "mma,wmma"):gmatch("[^,]+") do
  if not VARIANTS[v] then error("unknown variant " .. v) end
  names[#names + 1] = v
end

local function config_for(v, m)
  local o = {epilogue = (VARIANTS[v].dtype or "float16") == "float16" and "D" or nil}
  for k, x in pairs(VARIANTS[v].opts) do o[k] = x end
  -- small M: a CTA of 1 x 4 warps over 16 (or 32) rows (mma.sync / wmma)
  if m < (o.BM or 128) and o.intrin ~= "wgmma" then
    o.BM = m >= 64 and 64 or (m >= 32 and 32 or 16)
    o.warp_m = o.BM
    o.BN, o.warp_n = 128, 32
  end
  return o
end

-- the cuBLAS kernel(s) of each (dtype, layout, shape): common.ref_kernel (TIRLUA_REF_KERNELS)
local ref_kernel = common.ref_kernel

local info = dev:info()
local rows = {}
local wrong = 0 -- results that differ from cuBLAS: reported, not timed; the script then fails
print(("%-8s %-18s %9s %9s %9s %9s %7s %5s %6s %6s"):format("variant", "MxNxK", "ms", "TFLOP/s", "cuBLAS ms", "cuBLAS TF", "ratio",
  "regs", "spill", "smem"))
for _, s in ipairs(shapes) do
  local m, n, k = s[1], s[2], s[3]
  collectgarbage() -- the previous shape's operands
  local tol = {rtol = 2e-2, atol = 2e-2 * math.sqrt(k / 64)}
  local flops = 2.0 * m * n * k
  -- the operands of each dtype / layout (fp16 NN: the mma.sync / WMMA variants; NT: the wgmma ones) and
  -- cuBLAS's result, made on first use for this shape (random inputs of 8192^3 take seconds)
  local inputs = {}
  local function operands(dt, layout)
    local key = dt .. layout
    if not inputs[key] then
      local x = tir.nd.random({m, k}, dt, dev, {seed = 21})
      local y = tir.nd.random(layout == "NT" and {n, k} or {k, n}, dt, dev, {seed = 22})
      local r = tir.nd.empty({m, n}, dt == "float16" and "float16" or "float32", dev)
      core.cublas_gemm(x, y, r, false, layout == "NT", 1.0, 0.0)
      core.cuda_sync(0)
      inputs[key] = {x, y, r}
    end
    return table.unpack(inputs[key])
  end
  -- every variant of the shape scheduled and lowered first, then compiled together (tir.build_many:
  -- NVRTC on all CPU cores, ~2-4 s a kernel on the H200 host when one after another)
  local function pending(sch_mod, target) return {pending = sch_mod, target = target} end
  local made = {}
  for _, v in ipairs(names) do
    local okb, mod, config, params
    local V = VARIANTS[v]
    local dt, layout = V.dtype or "float16", V.layout or "NN"
    if VARIANTS[v].small_m and m > 128 then
      okb, mod = false, "split-K rows are for M <= 128"
    elseif VARIANTS[v].auto then
      okb, mod = pcall(function()
        local sch, o = tc.auto_tensorize(tc.workload(m, n, k, "float16", "float16"), "mma.m16n8k16", nil, {epilogue = "D", tuned = false})
        params = require("tir.json").encode({BM = o.BM, BN = o.BN, BK = o.BK, warp_m = o.warp_m, warp_n = o.warp_n, stages = o.stages,
                                             split_k = o.split_k})
        config = "auto_tensorize"
        return pending(sch.mod, "cuda")
      end)
    elseif V.auto_wgmma then
      okb, mod = pcall(function()
        local sch, o = tc.auto_tensorize(tc.workload(m, n, k, dt, dt == "float16" and "float16" or nil, nil, "NT"), "wgmma", nil,
                                         {epilogue = dt == "float16" and "D" or nil})
        params = require("tir.json").encode({BM = o.BM, BN = o.BN, BK = o.BK, stages = o.stages, tma = o.tma,
                                             warp_specialize = o.warp_specialize, persistent = o.persistent, ctas = o.ctas})
        config = o.config
        return pending(sch.mod, "cuda -arch=sm_90a")
      end)
    elseif VARIANTS[v].tuned then
      local p
      p, config = tt.options(m, n, k, {})
      params = require("tir.json").encode(p)
      okb, mod = pcall(function() return pending(tt.build(m, n, k, TT_OPTS, p).mod, "cuda") end)
    else
      local o = config_for(v, m)
      if o.intrin == "wgmma" and not o.BM then -- no tile option: tc_gemm_wgmma.pick's choice (recorded)
        local p
        p, config = require("tir.schedules.tc_gemm_wgmma").pick(m, n, k, dt, nil, o.epilogue and "float16" or "float32")
        params = require("tir.json").encode(p)
      end
      local BM, BN, BK = o.BM or 128, o.BN or 128, (o.BK or 32) * (o.split_k or 1)
      local pad = (m % BM ~= 0 or n % BN ~= 0 or k % BK ~= 0) and {BM, BN, BK} or nil
      if pad then o.epilogue = nil end
      okb, mod = pcall(function()
        if pad and o.intrin == "wgmma" then error("the wgmma schedule has no padding yet (tiles must divide the shape)") end
        return pending(tc.schedule(tc.workload(m, n, k, dt, dt == "float16" and "float16" or nil, pad, layout), o).mod,
                       V.arch and ("cuda -arch=" .. V.arch) or "cuda")
      end)
    end
    made[v] = {okb, mod, config, params}
  end
  local by_target, targets, queued = {}, {}, {}
  for _, v in ipairs(names) do
    local r = made[v]
    if r[1] and not queued[v] then -- (a variant named twice is timed twice, built once)
      queued[v] = true
      local t = r[2].target
      if not by_target[t] then by_target[t] = {} targets[#targets + 1] = t end
      table.insert(by_target[t], v)
    end
  end
  for _, t in ipairs(targets) do
    local funcs = {}
    for i, v in ipairs(by_target[t]) do funcs[i] = made[v][2].pending end
    for i, res in ipairs(tir.build_many(funcs, t)) do
      local r = made[by_target[t][i]]
      if res.mod then r[2] = res.mod else r[1], r[2] = false, res.err end
    end
  end
  for _, v in ipairs(names) do
    local okb, mod, config, params = table.unpack(made[v], 1, 4)
    local V = VARIANTS[v]
    local dt, layout = V.dtype or "float16", V.layout or "NN"
    if not okb then
      print(("%-8s %-18s  not built: %s"):format(v, ("%dx%dx%d"):format(m, n, k), tostring(mod):match("[^\n]*")))
    else
      local a, b, cref = operands(dt, layout)
      local c = tir.nd.empty({m, n}, cref:dtype(), dev)
      -- the result against cuBLAS's, before timing and once more after the timed launches (split-K's
      -- counters and zeroed sums must come back to 0 after every launch: a leftover would add into the next)
      local function right(when)
        local okc, why = pcall(tir.testing.assert_allclose, c, cref, tol)
        if not okc then
          wrong = wrong + 1
          print(("%-8s %-18s  WRONG %s: %s"):format(v, ("%dx%dx%d"):format(m, n, k), when, tostring(why):match("[^\n]*")))
        end
        return okc
      end
      mod(a, b, c)
      if not right("(not timed)") then goto next_variant end
      local t = mod:time_evaluator({number = 10, repeat_ = 7, warmup = 3})(a, b, c)
      if not right("after the timed launches") then goto next_variant end
      local tcub = core.cuda_time(function() core.cublas_gemm(a, b, cref, false, layout == "NT", 1.0, 0.0) end, 0, 3, 10, 7)
      local r = mod:resources()
      local row = {v = v, shape = ("%dx%dx%d"):format(m, n, k), t = t, tc = tcub, tf = flops / t / 1e12, tfc = flops / tcub / 1e12,
                   regs = r.registers, spill = r.local_bytes, smem = r.static_smem_bytes + (r.dynamic_smem_bytes or 0)}
      row.ratio = row.tf / row.tfc
      rows[#rows + 1] = row
      row.config = config
      row.ref_kernel = ref_kernel(dt, layout, row.shape)
      common.record{bench = "gemm_fp16", variant = v, shape = row.shape, dtype = dt, layout = layout, ms = t * 1e3, tflops = row.tf,
                    ref = "cuBLAS", ref_ms = tcub * 1e3, ref_tflops = row.tfc, gpu = info.name, registers = row.regs,
                    -- the cuBLAS kernel behind ref_ms, when the caller found it (ncu) and passed it
                    ref_kernel = ref_kernel(dt, layout, row.shape),
                    smem_bytes = row.smem, config = config, params = params}
      print(("%-8s %-18s %9.3f %9.1f %9.3f %9.1f %7.3f %5d %6d %6d%s"):format(v, row.shape, t * 1e3, row.tf, tcub * 1e3, row.tfc, row.ratio,
        row.regs, row.spill, row.smem, (config and ("  " .. config .. " " .. params) or "") ..
        (ref_kernel(dt, layout, row.shape) and ("  cuBLAS: " .. ref_kernel(dt, layout, row.shape)) or "")))
    end
    ::next_variant::
  end
end

local out = os.getenv("TIRLUA_BENCH_OUT")
if out then
  local commit = common.commit()
  local f = assert(io.open(out, "a"))
  f:write("\n### fp16 GEMM (fp32 accumulate, fp16 out) vs cuBLAS (cublasGemmEx)\n\n")
  f:write(("%s, %s (%s, %d SMs), commit %s; CUDA events, median of 7 samples of 10 launches after 3 warm-ups, cuBLAS timed " ..
           "right after each kernel; every result checked against cuBLAS first.\n\n"):format(os.date("!%Y-%m-%d"), info.name, info.arch,
           info.sm_count, commit))
  for _, v in ipairs(names) do f:write(("- `%s`: %s\n"):format(v, VARIANTS[v].desc)) end
  f:write("\n| variant | MxNxK | tirlua ms | TFLOP/s | cuBLAS ms | cuBLAS TFLOP/s | tirlua / cuBLAS | registers | spill bytes | smem bytes | cuBLAS kernel |\n")
  f:write("|---|---|---|---|---|---|---|---|---|---|---|\n")
  for _, r in ipairs(rows) do
    f:write(("| %s | %s | %.3f | %.1f | %.3f | %.1f | %.3f | %d | %d | %d | %s |\n"):format(r.v .. (r.config and (" (" .. r.config .. ")") or ""),
      r.shape, r.t * 1e3, r.tf, r.tc * 1e3, r.tfc, r.ratio, r.regs, r.spill, r.smem, r.ref_kernel or ""))
  end
  f:close()
end
if wrong > 0 then error(("bench/gemm_fp16.lua: %d configuration(s) differ from cuBLAS (see WRONG above)"):format(wrong)) end
