--- tir.schedules.simt_gemm: the classic tiled SIMT GEMM schedule (fp32 FFMA), written only
-- with public schedule primitives so it can be read and changed:
--   * a CTA computes a BM x BN tile of C with TY x TX threads; each thread a TM x TN register
--     tile (TM = BM/TY, TN = BN/TX; cache_write "local" + reverse_compute_at the thread loop);
--   * the K loop is split by BK; per step, A and B tiles are staged in shared memory
--     (cache_read "shared" + compute_at), fetched cooperatively with 16-byte vector loads;
--   * per k, the thread's A column and B row are copied to registers (cache_read "local"),
--     with 16-byte shared loads where the layout allows;
--   * shared layouts against bank conflicts (transform_layout): A's tile is stored transposed
--     ([k][i], so a thread's TM values of a column are contiguous), and B's rows are XOR-swizzled
--     in 16-byte chunks (chunk c goes to c ~ (c // 8 % 2)), so the 8 threads of a quarter warp
--     reading chunks 2t (and 2t + 1) hit 8 different bank groups; padding (storage_align) is
--     the alternative for A (pad_a);
--   * inner loops are unrolled; the C tile is written back with vector stores;
--   * the reduction's init is decomposed out of the K loop;
--   * stages >= 2 software-pipelines the K loop (annotations read by inject_software_pipeline):
--     the shared tiles get `stages` versions and the copies for step ko + stages - 1 are issued
--     while step ko computes, as cp.async (async = true, the default) on sm_80+.  With the
--     transposed A tile (a_transpose) A's copies are 4-byte cp.async per element; a_transpose =
--     false (with pad_a) makes them 16-byte ones.
-- schedule(func, opts) works on the "C" block of a te/T matmul C[i, j] += A[i, k] * B[k, j].
-- Extents that BM/BN/BK do not divide work (split adds predicates), but the vector accesses
-- then fall back to scalar ones unless rows stay 16-byte aligned.
local M = {}

-- a_transpose: A's shared tile as [k][i]; b_swizzle: XOR-swizzle B's shared rows;
-- pad_a: {factor, offset} storage_align of A's rows (with a_transpose = false);
-- vec: elements per vector access (4 floats = 16 bytes).
-- stages: 1 = no pipeline; 2 = double buffering; n = n shared buffers, copies n - 1 steps ahead.
-- async: with stages >= 2, the copies are cp.async (software_pipeline_async_stages = {0}).
-- early_wait: with async, wait for the copies at the start of each k-step, before issuing the
-- next ones (CUTLASS's order: one barrier per step instead of two; software_pipeline_early_wait).
M.defaults = {BM = 128, BN = 128, BK = 8, TY = 16, TX = 16, vec = 4, a_transpose = true, b_swizzle = true, pad_a = false,
              local_vec = true, store_vec = true, stages = 1, async = true, early_wait = false}

--- The CTA/thread tiling of the GEMM block C (loops i, j, k): a CTA computes o.BM x o.BN with
-- o.TY x o.TX threads, each a (BM / TY) x (BN / TX) register tile; k is split by o.BK and the
-- shared copies AS, BS move under the k step.  Returns by, bx, ty, tx, ko, ki, ii, jj.
-- (Shared with tir.schedules.qgemm.)
local function check_sch(P, sch)
  if getmetatable(sch) ~= require("tir").Schedule then
    require("tir.util").raise("TypeError", P, "sch must be a tir.Schedule, got %s", require("tir.util").describe(sch))
  end
end

function M.thread_tiles(sch, C, AS, BS, o)
  check_sch("simt_gemm.thread_tiles", sch)
  if type(o) ~= "table" then require("tir.util").raise("TypeError", "simt_gemm.thread_tiles", "o (the tile options BM, BN, BK, TY, TX) must be a table, got %s", require("tir.util").show(o)) end
  local i, j, k = sch:get_loops(C)
  local by, ty, ii = sch:split(i, {nil, o.TY, o.BM // o.TY})
  local bx, tx, jj = sch:split(j, {nil, o.TX, o.BN // o.TX})
  local ko, ki = sch:split(k, {nil, o.BK})
  sch:reorder(by, bx, ty, tx, ko, ki, ii, jj)
  sch:bind(by, "blockIdx.y"); sch:bind(bx, "blockIdx.x")
  sch:bind(ty, "threadIdx.y"); sch:bind(tx, "threadIdx.x")
  sch:compute_at(AS, ko)
  sch:compute_at(BS, ko)
  return by, bx, ty, tx, ko, ki, ii, jj
end

--- Cooperative, vectorized copies: each block's two innermost loops fused and spread over
-- TY x TX threads, vec elements per access.
function M.cooperative_copies(sch, blocks, TY, TX, vec)
  check_sch("simt_gemm.cooperative_copies", sch)
  if type(blocks) ~= "table" then require("tir.util").raise("TypeError", "simt_gemm.cooperative_copies", "blocks must be a list of blocks, got %s", require("tir.util").show(blocks)) end
  for _, blk in ipairs(blocks) do
    local loops = {sch:get_loops(blk)}
    local f = sch:fuse(loops[#loops - 1], loops[#loops])
    local _, fy, fx, fv = sch:split(f, {nil, TY, TX, vec})
    sch:bind(fy, "threadIdx.y"); sch:bind(fx, "threadIdx.x")
    sch:vectorize(fv)
  end
end

--- Returns the schedule (tir.Schedule).  opts override M.defaults; errors on unknown options
-- and on tiles that do not divide (BM by TY, BN by TX, TM and TN by vec when vectorizing).
local OPTS = {BM = "positive", BN = "positive", BK = "positive", TY = "positive", TX = "positive", vec = "positive",
              a_transpose = "boolean", b_swizzle = "boolean", pad_a = "table|boolean", local_vec = "boolean",
              store_vec = "boolean", stages = "positive", async = "boolean", early_wait = "boolean"}

function M.schedule(func, opts)
  local tir = require("tir")
  local util = require("tir.util")
  local P = "simt_gemm.schedule"
  util.check_opts(P, opts, OPTS)
  local o = {}
  for k, v in pairs(M.defaults) do o[k] = v end
  for k, v in pairs(opts or {}) do o[k] = v end
  local TM, TN = o.BM // o.TY, o.BN // o.TX
  if o.BM % o.TY ~= 0 or o.BN % o.TX ~= 0 or TM % o.vec ~= 0 or TN % o.vec ~= 0 then
    util.raise("ValueError", P, "BM=%d, BN=%d must be multiples of TY=%d, TX=%d, and the thread tile %dx%d of vec=%d",
               o.BM, o.BN, o.TY, o.TX, TM, TN, o.vec)
  end
  if o.TY * o.TX > 1024 then util.raise("ValueError", P, "TY * TX = %d threads per block; CUDA allows 1024", o.TY * o.TX) end
  local sch = tir.Schedule(func)
  local C = sch:get_block("C")
  local AS = sch:cache_read(C, 0, "shared")
  local BS = sch:cache_read(C, 1, "shared")
  local CL = sch:cache_write(C, 0, "local")
  local by, bx, ty, tx, ko, ki, ii, jj = M.thread_tiles(sch, C, AS, BS, o)
  -- register copies of the thread's A column and B row, per k
  local AL = sch:cache_read(C, 0, "local")
  local BL = sch:cache_read(C, 1, "local")
  sch:compute_at(AL, ki)
  sch:compute_at(BL, ki)
  sch:reverse_compute_at(CL, tx)
  -- cooperative, vectorized fetches of the shared tiles
  M.cooperative_copies(sch, {AS, BS}, o.TY, o.TX, o.vec)
  -- register copies: vec-wide shared loads where contiguous, else unrolled
  for _, blk in ipairs({AL, BL}) do
    local loops = {sch:get_loops(blk)}
    local contiguous = blk == BL or o.a_transpose
    if o.local_vec and contiguous then
      local lo, li = sch:split(loops[#loops], {nil, o.vec})
      sch:unroll(lo); sch:vectorize(li)
    else
      sch:unroll(loops[#loops])
    end
  end
  sch:unroll(ki); sch:unroll(ii); sch:unroll(jj)
  -- write-back: rows unrolled, each run of vec columns one vector store
  local cl = {sch:get_loops(CL)}
  local cjo, cji = sch:split(cl[#cl], {nil, o.vec})
  if o.store_vec then sch:vectorize(cji) else sch:unroll(cji) end
  sch:unroll(cjo); sch:unroll(cl[#cl - 1])
  -- shared layouts (after the compute_at steps, whose region analysis reads the original indices)
  if o.a_transpose then
    sch:transform_layout(AS, {"write", 0}, function(i, k) return k, i end)
  elseif o.pad_a then
    sch:storage_align(AS, 0, 0, o.pad_a[1], o.pad_a[2])
  end
  if o.b_swizzle then
    local v = o.vec
    sch:transform_layout(BS, {"write", 0}, function(k, j) return k, (j // v) ~ (j // (8 * v) % 2), j % v end)
  end
  sch:decompose_reduction(C, ko)
  if o.stages > 1 then
    -- ko's body: [A copy, B copy, ki loop]; the copies run stages - 1 iterations ahead
    sch:annotate(ko, "software_pipeline_stage", {0, 0, o.stages - 1})
    sch:annotate(ko, "software_pipeline_order", {0, 1, 2})
    if o.async then sch:annotate(ko, "software_pipeline_async_stages", {0}) end
    if o.async and o.early_wait then sch:annotate(ko, "software_pipeline_early_wait", 1) end
  end
  return sch
end

-- a call with more arguments than a function's parameters is an error (util.strict)
M.schedule = require("tir.util").strict("simt_gemm.schedule", M.schedule)

return M
