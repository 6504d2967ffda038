--- tir.schedules.simt_gemm: the classic tiled SIMT GEMM schedule (fp32 FFMA), written only
-- with public schedule primitives so it can be read and changed:
--   * a CTA computes a BM x BN tile of C with TY x TX threads; each thread an (BM/TY) x (BN/TX)
--     register tile (cache_write "local", reverse_compute_at the thread loop);
--   * the K loop is split by BK; per step, A and B tiles are staged in shared memory
--     (cache_read "shared" + compute_at), fetched cooperatively with 16-byte vector loads;
--   * per k, the thread's A column and B row are copied to registers (cache_read "local");
--   * storage_align pads shared rows against bank conflicts; inner loops are unrolled;
--   * the reduction's init is decomposed out of the K loop.
-- schedule(func, opts) works on the "C" block of a te/T matmul C[i, j] += A[i, k] * B[k, j].
local M = {}

-- pad_a / pad_b: {factor, offset} for storage_align of the shared tiles' rows (nil: dense);
-- local_vec: vectorize the register copy of B (needs aligned shared rows).
M.defaults = {BM = 128, BN = 128, BK = 8, TY = 16, TX = 16, vec = 4, pad_a = false, pad_b = false, local_vec = true}

--- Returns the schedule (tir.Schedule).  opts override M.defaults.
function M.schedule(func, opts)
  local tir = require("tir")
  local o = {}
  for k, v in pairs(M.defaults) do o[k] = v end
  for k, v in pairs(opts or {}) do
    if M.defaults[k] == nil then error("simt_gemm: unknown option " .. tostring(k), 2) end
    o[k] = v
  end
  local TM, TN = o.BM // o.TY, o.BN // o.TX
  assert(o.BM % o.TY == 0 and o.BN % o.TX == 0, "BM/BN must be multiples of TY/TX")
  local sch = tir.Schedule(func)
  local C = sch:get_block("C")
  local AS = sch:cache_read(C, 1, "shared")
  local BS = sch:cache_read(C, 2, "shared")
  local CL = sch:cache_write(C, 0, "local")
  local i, j, k = sch:get_loops(C)
  local by, ty, ii = sch:split(i, {nil, o.TY, TM})
  local bx, tx, jj = sch:split(j, {nil, o.TX, TN})
  local ko, ki = sch:split(k, {nil, o.BK})
  sch:reorder(by, bx, ty, tx, ko, ki, ii, jj)
  sch:bind(by, "blockIdx.y"); sch:bind(bx, "blockIdx.x")
  sch:bind(ty, "threadIdx.y"); sch:bind(tx, "threadIdx.x")
  sch:compute_at(AS, ko)
  sch:compute_at(BS, ko)
  -- register copies of the shared tiles, per k step
  local AL = sch:cache_read(C, 1, "local")
  local BL = sch:cache_read(C, 2, "local")
  sch:compute_at(AL, ki)
  sch:compute_at(BL, ki)
  sch:reverse_compute_at(CL, tx)
  -- cooperative, vectorized fetches of the shared tiles
  for n, blk in ipairs({AS, BS}) do
    local loops = {sch:get_loops(blk)}
    local f = sch:fuse(loops[#loops - 1], loops[#loops])
    local _, fy, fx, fv = sch:split(f, {nil, o.TY, o.TX, o.vec})
    sch:bind(fy, "threadIdx.y"); sch:bind(fx, "threadIdx.x")
    sch:vectorize(fv)
    local pad = n == 1 and o.pad_a or o.pad_b
    if pad then sch:storage_align(blk, 0, 0, pad[1], pad[2]) end
  end
  do
    local loops = {sch:get_loops(AL)}
    sch:unroll(loops[#loops])
    loops = {sch:get_loops(BL)}
    if o.local_vec then sch:vectorize(loops[#loops]) else sch:unroll(loops[#loops]) end
  end
  sch:unroll(ki); sch:unroll(ii); sch:unroll(jj)
  local cl = {sch:get_loops(CL)}
  sch:unroll(cl[#cl]); sch:unroll(cl[#cl - 1])
  sch:decompose_reduction(C, ko)
  return sch
end

return M
