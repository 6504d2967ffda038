--- tir.schedules.tc_gemm_split_k: split-K for tc_gemm (CUTLASS's "parallel split-K": the K
-- extent cut into S slices computed by S CTAs each, partial sums in a workspace, a small second
-- kernel adding them), written with schedule primitives only:
--   sch:split(k, {S, -1}); sch:rfactor(ks, 0)
-- gives the block "<C>_rf" writing the partial sums P[ks, (batch..,) i, j] (the accumulator
-- dtype: float32, or int32 for 8-bit inputs, whose sums are exact and wrap like the single
-- kernel's) -- a matmul whose ks is one more batch dimension, which tc_gemm tiles as any other
-- (blockIdx.z) -- while block C becomes the sum over ks.  schedule_reduce binds that sum (and
-- the epilogue behind it: the cast to fp16, or the padded workload's D) as one elementwise
-- kernel.  Used by tc_gemm.schedule(func, {split_k = S}); small-M GEMMs (M <= 128 with N, K in
-- the thousands) have too few output tiles for the SMs without it.
local util = require("tir.util")
local raise = util.raise

local M = {}

--- Splits the reduction loop `k` (a LoopRV of the matmul block `name`, extent K) into S slices
-- and rfactors it.  Checks S divides K into slices that are multiples of BK (a non-dividing
-- split would leave a predicate rfactor refuses).  Returns the rf block's name and C's name
-- (the block that now sums the slices).
function M.rfactor(sch, name, k, K, S, BK, P)
  util.check_helper("tc_gemm_split_k.rfactor", "tc_gemm.schedule(func, {split_k = S})", sch)
  for _, v in ipairs({K, S, BK}) do
    if math.type(v) ~= "integer" or v < 1 then
      raise("TypeError", "tc_gemm_split_k.rfactor", "K, S and BK must be positive integers (call tc_gemm.schedule(func, {split_k = S}))")
    end
  end
  if K % S ~= 0 or (K // S) % BK ~= 0 then
    raise("ValueError", P, "split_k = %d: K = %d must be a multiple of split_k * BK = %d (each slice a whole number of BK = %d steps); " ..
          "pick another split_k or BK, or pad K with tc_gemm.workload(..., pad = {BM, BN, split_k * BK})", S, K, S * BK, BK)
  end
  local ks = sch:split(k, {S, -1})
  local rf = sch:rfactor(ks, 0)
  return sch:get(rf).name, name
end

--- K that split_k * BK does not divide (4096 in 3 slices of 64-deep steps): pads the reduction
-- variable of block `name` to the next multiple of S * BK with pad_einsum (TVM's PadEinsum; zeros
-- add nothing to the sums, so the result is the same), whose zero-filling copies of the two
-- operands then become the shared tiles (tc_gemm's a_stage / b_stage: the copies turn into
-- predicated cp.async loads, no padded buffer is made in global memory).  Only for a block whose
-- operands are not staged yet (stages = false: an A_pad / a_stage already there raises rfactor's
-- error).  Returns the stage names of A and B (a_index / b_index: the operands' read positions
-- in block `name`, from tc_gemm.analyze).  Costs the padded steps' work: 4224 / 4096 = 3 % more
-- mma for 4096 in 3 slices of 64, against 13-35 % of idle SM time with 2 or 4 slices on 86 tiles.
function M.pad_k(sch, name, K, S, BK, a_index, b_index, staged, P)
  util.check_helper("tc_gemm_split_k.pad_k", "tc_gemm.schedule(func, {split_k = S})", sch)
  local step = S * BK
  if K % step == 0 then return nil end
  if staged then
    raise("ValueError", P, "split_k = %d: K = %d must be a multiple of split_k * BK = %d (each slice a whole number of BK = %d steps); " ..
          "the operands are staged blocks already (a_stage / b_stage / a padded workload), so K is not padded here: pick another " ..
          "split_k or BK, or pad K with tc_gemm.workload(..., pad = {BM, BN, split_k * BK})", S, K, step, BK)
  end
  local blk = sch:get_block(name)
  local b = sch:get(blk)
  local a_buf, b_buf = b.reads[a_index + 1].buffer.name, b.reads[b_index + 1].buffer.name
  local factors = {}
  for q, iv in ipairs(b.iter_vars) do factors[q] = iv.iter_type == 2 and step or 1 end
  local outs = {sch:pad_einsum(blk, factors)}
  -- the copies write "<operand>_pad"; the block now reads those at the same positions
  local nb = sch:get(sch:get_block(name))
  local an, bn = nb.reads[a_index + 1].buffer.name, nb.reads[b_index + 1].buffer.name
  local stage_a, stage_b
  for _, o in ipairs(outs) do
    local w = sch:get(o)
    if w.writes[1].buffer.name == an then stage_a = w.name elseif w.writes[1].buffer.name == bn then stage_b = w.name end
  end
  if not (stage_a and stage_b) then
    raise("ValueError", P, "split_k = %d: padding K of block '%s' to %d did not give copies of both operands %s and %s", S, name,
          (K + step - 1) // step * step, a_buf, b_buf)
  end
  return stage_a, stage_b
end

-- The reduction kernel: each thread sums VEC adjacent outputs (one 16-byte load of fp32 partials
-- per slice, one 8-byte store of fp16) in PER_THREAD groups `threads` x VEC apart (every warp load
-- 512 contiguous bytes), ks unrolled, so all PER_THREAD x S loads are independent and in flight
-- together.  Measured on the H200 at 128 x 11008, S = 3 (ncu, batch 1 of stop 11): 4 scalar outputs
-- a thread ran 6.66 us, latency-bound (80 cycles of long-scoreboard stall per instruction, the LSU
-- queue full: lg_throttle 15) -- a sixth of the split-K GEMM's 41 us; one output a thread with a
-- rolled ks loop had run 6.1 us at S = 2.  VEC needs the innermost output extent a multiple of it
-- (else 1: scalar outputs, 4 a thread).
M.PER_THREAD = 2
M.VEC = 4

-- The common tail of both reduction schedules: `epilogue` (a block name or nil) computed at the
-- thread loop tx with the sum R in registers (its innermost loop vectorized when v > 1); with
-- v > 1 the init decomposed out of the ks loop, so the v columns of the update stay one vector
-- (16-byte loads); ks unrolled.
local function finish_reduce(sch, R, epilogue, tx, ks, v)
  local E = epilogue and sch:get_block(epilogue)
  if E then
    sch:reverse_compute_at(E, tx)
    sch:set_scope(R, 0, "local")
    if v > 1 then
      local el = {sch:get_loops(E)}
      sch:vectorize(el[#el])
    end
  end
  if v > 1 then
    local init = sch:decompose_reduction(R, ks)
    local il = {sch:get_loops(init)}
    if sch:get(il[#il]).kind ~= "vectorized" then sch:vectorize(il[#il]) end
  end
  sch:unroll(ks)
end

--- Schedules block `name` (the sum over ks that rfactor left: loops (batch..,) i, j, ks) as
-- one elementwise kernel: j split into (jo, VEC) with the VEC columns vectorized (when j's extent
-- is a multiple of VEC), the other spatial loops and jo fused and split into blockIdx.x x
-- PER_THREAD (unrolled) x threadIdx.x (`threads`), ks unrolled (the init decomposed out of it so
-- the update stays one vector); a tail of the fused extent that the split does not divide is
-- predicated.  `epilogue` (a block name or nil) is computed at the thread loop, and the sum then
-- lives in registers (scope "local").
function M.schedule_reduce(sch, name, epilogue, threads, P)
  util.check_helper("tc_gemm_split_k.schedule_reduce", "tc_gemm.schedule(func, {split_k = S})", sch)
  if math.type(threads) ~= "integer" or threads < 1 then
    raise("TypeError", "tc_gemm_split_k.schedule_reduce", "threads must be a positive integer, got %s", util.show(threads))
  end
  local R = sch:get_block(name)
  local l = {sch:get_loops(R)}
  if #l < 2 then raise("ValueError", P, "split-K: block '%s' has no loop to bind beside its sum over ks", name) end
  local ks = l[#l]
  local v = M.VEC
  while v > 1 and sch:get(l[#l - 1]).extent.value % v ~= 0 do v = v // 2 end
  local jv
  local spatial = {table.unpack(l, 1, #l - 1)}
  if v > 1 then
    local jo
    jo, jv = sch:split(l[#l - 1], {nil, v})
    spatial[#spatial] = jo
    sch:reorder(ks, jv)
    sch:vectorize(jv)
  end
  local f = #spatial > 1 and sch:fuse(table.unpack(spatial)) or spatial[1]
  local ext = sch:get(f).extent.value
  local per = v > 1 and M.PER_THREAD or 4
  while per > 1 and ext < per * threads do per = per // 2 end
  local bx, u, tx = sch:split(f, {nil, per, threads})
  sch:bind(bx, "blockIdx.x"); sch:bind(tx, "threadIdx.x")
  sch:unroll(u)
  finish_reduce(sch, R, epilogue, tx, ks, v)
end

--- Serial split-K (split_k_mode = "serial"; CUTLASS's serial split-K semaphore, the stream-K fixup):
-- block `name` (the sum over ks) goes to the end of the GEMM kernel's tile loop `tile_loop` (the
-- innermost loop bound to a CTA tile coordinate; the ks loop bound to blockIdx.z is inside it), so
-- serially it sums one tile's partials after all slices of that tile; lower_grid_tail then makes
-- the last CTA of each tile run it (tir_grid_arrive_last), in the same launch.  Its BM x BN x S
-- loops run on the GEMM's threads: rows split into UNROLL (unrolled) x threadIdx.y (wm) x
-- threadIdx.z (wn), columns into threadIdx.x (32) x VEC (vectorized: 16-byte loads; the init
-- decomposed out of the ks loop), ks unrolled -- every warp load 512 contiguous bytes, UNROLL x S loads of a thread independent.  (UNROLL 4 and scalar
-- loads ran the tail of 128 x 11008 x 4224, split 3, at ~28 us: 0.069 ms against 0.041 for the
-- parallel mode, H200 batch 1.)  `epilogue` as in schedule_reduce.
M.SERIAL_UNROLL = 8
M.SERIAL_VEC = 4
function M.schedule_reduce_serial(sch, name, epilogue, tile_loop, wm, wn, P)
  local R = sch:get_block(name)
  sch:reverse_compute_at(R, tile_loop)
  -- its loops come in the order of its iteration variables: the slices (rfactor's reduction
  -- variable first), the tile's rows, its columns
  local l = {sch:get_loops(R)}
  local n = #l
  local ks = l[n - 2]
  sch:reorder(l[n - 1], l[n], ks)
  local bm, bn = sch:get(l[n - 1]).extent.value, sch:get(l[n]).extent.value
  if bm % wm ~= 0 or bn % (32 * wn) ~= 0 then
    raise("ValueError", P, "split_k_mode = \"serial\": the %d x %d tile must split over %d x %d warps of 32 lanes along N (BN a multiple of %d)",
          bm, bn, wm, wn, 32 * wn)
  end
  local u, v = M.SERIAL_UNROLL, M.SERIAL_VEC
  local warps = wm * wn
  while v > 1 and bn % (32 * v) ~= 0 do v = v // 2 end
  while u > 1 and bm % (u * warps) ~= 0 do u = u // 2 end
  if bm % warps ~= 0 or bn % 32 ~= 0 then
    raise("ValueError", P, "split_k_mode = \"serial\": the %d x %d tile must split into rows over %d warps and columns over 32 lanes",
          bm, bn, warps)
  end
  -- rows over UNROLL x the warps (threadIdx.y, threadIdx.z), columns over the lanes x v
  local io, uu, ty, tz = sch:split(l[n - 1], {nil, u, wm, wn})
  local jo, tx, jv = sch:split(l[n], {nil, 32, v})
  sch:reorder(io, jo, uu, ty, tz, tx, ks, jv)
  sch:bind(ty, "threadIdx.y"); sch:bind(tz, "threadIdx.z"); sch:bind(tx, "threadIdx.x")
  sch:unroll(uu)
  if v > 1 then sch:vectorize(jv) end
  finish_reduce(sch, R, epilogue, tx, ks, v)
end

--- What split_k_mode = "atomic" needs, checked before anything is scheduled (info: tc_gemm.analyze
-- of the GEMM block; epilogue: the epilogue block's name or nil): mma.sync (its accumulator's lane
-- map is what mma_store's "add" mode adds; wmma fragments are opaque), no batch dimensions (one
-- counter per output tile), fp16 or 8-bit inputs (red.global.add.f32 flushes subnormal sums, PTX
-- ISA red; fp16 products are multiples of 2^-48, so their fp32 sums never are subnormal, bf16
-- products can be), and a block after the sum -- the epilogue, or the padded workload's D -- since
-- the sum goes into a zeroed temporary (a function's own output is not zeroed).
function M.check_atomic(sch, info, o, epilogue, P)
  util.check_helper("tc_gemm_split_k.check_atomic", "tc_gemm.schedule(func, {split_k = S, split_k_mode = \"atomic\"})", sch)
  local why
  if o.intrin ~= "mma" then
    why = ("intrin = \"%s\": the red.global.add store follows mma.sync's accumulator layout (wmma fragments are opaque); use intrin = " ..
           "\"mma\""):format(tostring(o.intrin))
  elseif info.batch > 0 then
    why = "batch dimensions (the slices' counter is per output tile of one matrix)"
  elseif info.a_dtype == "bfloat16" or info.b_dtype == "bfloat16" then
    why = "bfloat16 inputs: red.global.add.f32 flushes subnormal sums to zero (PTX ISA red), which bf16 products can reach"
  elseif not epilogue and not pcall(function() return sch:get_block("A_pad") end) then
    why = "no epilogue block: the slices are summed into a zeroed temporary that the last CTA casts into the output; pass " ..
          "epilogue = \"D\" (the workload's cast) -- an fp32 / int32 output of its own"
  end
  if why then raise("ValueError", P, "split_k_mode = \"atomic\" (%d slices): %s; or use split_k_mode = \"serial\" / \"parallel\"", o.split_k, why) end
end

--- split_k_ordered (atomic split-K): whether the CTA of the last slice adds its slice only after the
-- other slices' CTAs have added theirs and arrived (tir_grid_wait, lower_grid_tail's grid_last_waits).
-- The first two adds into the zeroed tile give a + b in either order (0 + x is exact; fp16 products
-- never sum to -0), so with 3 slices the sum is (a + b) + c in any arrival order: the interpreter's
-- bits.  Default: on for 3 slices; 2 slices need no order; with 4 or more the first adds still land
-- in arrival order, so ordering the last one is refused (it would promise what it cannot keep).
function M.ordered(o, P)
  local v = o.split_k_ordered
  if v ~= nil and o.split_k_mode ~= "atomic" then
    raise("ValueError", P, "split_k_ordered orders the red.global.add of split_k_mode = \"atomic\"; here split_k_mode = \"%s\"",
          tostring(o.split_k_mode))
  end
  if o.split_k_mode ~= "atomic" then return nil end
  if v and o.split_k > 3 then
    raise("ValueError", P, "split_k_ordered = true with split_k = %d: only the last slice's add waits, so the other %d still land in " ..
          "arrival order and the sum's rounding would still vary; use split_k <= 3, or split_k_mode = \"serial\" / \"parallel\" " ..
          "for a fixed order", o.split_k, o.split_k - 1)
  end
  if v == nil then v = o.split_k == 3 end
  return v
end

-- The tail's rows a thread loads at once: one 16-byte load of the sum per output group (the serial
-- mode's tail loads S), so all of a 128 x 128 tile's 32 loads a thread are in flight together.
M.ATOMIC_UNROLL = 32

--- Atomic split-K (split_k_mode = "atomic"): every CTA has added its slice into the zeroed fp32
-- (int32) tile with red.global.add (tc_gemm's store_add intrinsic at the warp loop); block
-- `epilogue` (the cast D = C, or the padded workload's D) moves to the end of the tile loop
-- `tile_loop`, where lower_grid_tail makes the last CTA of the tile run it (and set the tile back
-- to 0 for the next launch).  Its loops as schedule_reduce_serial's: rows over ATOMIC_UNROLL
-- (unrolled) x threadIdx.y x threadIdx.z, columns over threadIdx.x x SERIAL_VEC (vectorized).
function M.schedule_tail_atomic(sch, epilogue, tile_loop, wm, wn, P)
  util.check_helper("tc_gemm_split_k.schedule_tail_atomic", "tc_gemm.schedule(func, {split_k = S, split_k_mode = \"atomic\"})", sch)
  if not epilogue then
    raise("ValueError", P, "split_k_mode = \"atomic\" sums the slices into a zeroed temporary that the last CTA casts: it needs an " ..
          "epilogue block (epilogue = \"D\") or the padded workload's D; an fp32 output of its own is not zeroed: use " ..
          "split_k_mode = \"serial\" or \"parallel\"")
  end
  local E = sch:get_block(epilogue)
  sch:reverse_compute_at(E, tile_loop)
  local l = {sch:get_loops(E)}
  local n = #l
  local bm, bn = sch:get(l[n - 1]).extent.value, sch:get(l[n]).extent.value
  local warps = wm * wn
  -- (the padded workload's D covers the valid part of an edge tile: splits that do not divide
  -- are predicated)
  local u, v = M.ATOMIC_UNROLL, M.SERIAL_VEC
  while v > 1 and bn % (32 * v) ~= 0 do v = v // 2 end
  while u > 1 and bm % (u * warps) ~= 0 do u = u // 2 end
  local io, uu, ty, tz = sch:split(l[n - 1], {nil, u, wm, wn})
  local jo, tx, jv = sch:split(l[n], {nil, 32, v})
  sch:reorder(io, jo, uu, ty, tz, tx, jv)
  sch:bind(ty, "threadIdx.y"); sch:bind(tz, "threadIdx.z"); sch:bind(tx, "threadIdx.x")
  sch:unroll(uu)
  if v > 1 then sch:vectorize(jv) end
end

--- Atomic split-K: the init of the slices' sum (block `init`, decompose_reduction's, before the
-- slices' loop; its loops copies of the warps' and the warp tile's) over the CTA's threads: the
-- warp tile's rows and columns fused and split into threadIdx.x (32) x SERIAL_VEC (vectorized).
function M.schedule_zero_atomic(sch, init, wm, wn, P)
  util.check_helper("tc_gemm_split_k.schedule_zero_atomic", "tc_gemm.schedule(func, {split_k = S, split_k_mode = \"atomic\"})", sch)
  local l = {sch:get_loops(init)}
  local n = #l
  local f = sch:fuse(l[n - 1], l[n])
  local ext = sch:get(f).extent.value
  local v = M.SERIAL_VEC
  while v > 1 and ext % (32 * v) ~= 0 do v = v // 2 end
  if ext % (32 * v) ~= 0 then
    raise("ValueError", P, "split_k_mode = \"atomic\": a warp's %d accumulators do not split over its 32 lanes", ext)
  end
  local o, tx, jv = sch:split(f, {nil, 32, v})
  sch:bind(tx, "threadIdx.x")
  if v > 1 then sch:vectorize(jv) end
end

for _, key in ipairs({"rfactor", "pad_k", "schedule_reduce", "schedule_reduce_serial", "check_atomic", "ordered", "schedule_tail_atomic",
                      "schedule_zero_atomic"}) do M[key] = util.strict("tc_gemm_split_k." .. key, M[key]) end

return M
