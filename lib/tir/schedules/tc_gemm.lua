--- tir.schedules.tc_gemm: a tensor-core GEMM schedule with parameters, built only from public
-- schedule primitives (read it, change it):
--   C[i, j] = sum_k f32(A[i, k]) * f32(B[k, j])   (A: M x K, B: K x N, fp16 or bf16), optionally
--   followed by an epilogue block D = cast(f16, C) that is fused into the fragment store.
-- Structure (CUTLASS's): a CTA computes BM x BN with (BM/warp_m) x (BN/warp_n) warps
-- (threadIdx.y, threadIdx.z; threadIdx.x = 32 lanes); per BK step the A and B tiles are staged
-- in shared memory by 16-byte vector copies; per 16-deep k step each warp loads its A and B
-- fragments and issues (warp_m/16) x (warp_n/16) 16x16x16 multiply-accumulates; the
-- accumulators live in registers until the end and are stored straight to global memory.
--   intrin = "mma":  ldmatrix + mma.sync.m16n8k16 (operands in "warp" buffers);
--   intrin = "wmma": nvcuda::wmma fragments (load_matrix_sync);
--   intrin = "wgmma": Hopper's wgmma.mma_async from swizzled shared tiles (sm_90a), scheduled by
--                     lib/tir/schedules/tc_gemm_wgmma.lua (its own options);
--   shared rows padded by 16 bytes (pad) so ldmatrix / wmma loads are free of bank conflicts,
--   or (swizzle = true, mma only; the default for 16-bit operands when pad is not given)
--   XOR-swizzled (storage_swizzle: no padding, each 32-byte global sector lands in one 32-byte
--   shared sector);
--   group_m = G > 1 (default 8 for 16-bit mma operands, else 1): grouped CTA order (one grid dimension; G M tiles per group, the
--   largest divisor of the M tile count not above G; 1: the 2-D grid);
--   the fused fp16 epilogue stores whole 32-byte sectors (lanes exchange words, 16-byte stores).
-- stages > 1 software-pipelines the BK loop (annotations read by inject_software_pipeline;
-- the copies become cp.async); early_wait waits once at the top of each k step, so that one
-- barrier per step suffices.  frag_pipeline double-buffers the fragments within a BK tile
-- (the next k16 step's ldmatrix during this step's mma); frag_prefetch (stages >= 3, an even
-- number of k16 steps per BK tile) also across tiles, CUTLASS's main loop: the wait and the
-- barrier for the next tile come before this tile's last mma, the next tile's first fragments
-- load during it (a nested pipeline: software_pipeline_nested, early_wait 2).
local M = {}
local util = require("tir.util")
local raise = util.raise

M.defaults = {intrin = "mma", BM = 128, BN = 128, BK = 32, warp_m = 64, warp_n = 64, vec = 8, stages = 1, early_wait = true, frag_pipeline = false,
              frag_prefetch = false, copy_order = nil, unroll_stages = false, pad = true,
              dtype = "float16", epilogue = nil, unroll = true, wmma_shape = nil, split_k = 1, split_k_mode = "parallel",
              swizzle = nil, group_m = nil}

--- What the schedule runs on tensor cores: one row per (intrinsic family, input dtypes,
-- accumulator dtype), naming the registered intrinsics it tensorizes with
-- (lib/tir/intrin/cuda.lua) and the instruction auto_tensorize takes for it.  Every
-- dtype check of this file reads this table: a new dtype (int8 -> int32) is a new row.
--   b_dtype: B's dtype when it differs from A's (in_dtype); config: the instruction-table row
--   (tir.core.mma_configs(), include/tir/mma.h) -- a row without intrinsic names takes them
--   from lib/tir/intrin/cuda.lua's names(config).
--   epilogue_dtype: the dtype a fused epilogue's cast may write (the store intrinsic
--   converts); nil: an epilogue goes through shared memory and may write any dtype.
M.SUPPORTED = {
  {intrin = "mma", instr = "mma.m16n8k16", in_dtype = "float16", acc_dtype = "float32", epilogue_dtype = "float16",
   scope_a = "warp", scope_b = "warp", scope_c = "warp", load_a = "mma_ldmatrix_16x16_f16_a", load_b = "mma_ldmatrix_16x16_f16_b",
   sync = "mma_sync_16x16x16_f16f32", fill = "mma_fill_16x16_f32", store = "mma_store_16x16_f32_global",
   store_epilogue = "mma_store_16x16_f32_f16_global"},
  {intrin = "mma", instr = "mma.m16n8k16", in_dtype = "bfloat16", acc_dtype = "float32", epilogue_dtype = "float16",
   scope_a = "warp", scope_b = "warp", scope_c = "warp", load_a = "mma_ldmatrix_16x16_bf16_a", load_b = "mma_ldmatrix_16x16_bf16_b",
   sync = "mma_sync_16x16x16_bf16f32", fill = "mma_fill_16x16_f32", store = "mma_store_16x16_f32_global",
   store_epilogue = "mma_store_16x16_f32_f16_global"},
  {intrin = "wmma", instr = "wmma.m16n16k16", in_dtype = "float16", acc_dtype = "float32",
   scope_a = "wmma.matrix_a", scope_b = "wmma.matrix_b", scope_c = "wmma.accumulator", load_a = "wmma_load_16x16x16_f16_a",
   load_b = "wmma_load_16x16x16_f16_b", sync = "wmma_sync_16x16x16_f16f16f32", fill = "wmma_fill_16x16x16_f32",
   store = "wmma_store_16x16x16_f32_global", store_shared = "wmma_store_16x16x16_f32_shared"},
  -- int8 IMMA (mma.sync m16n8k32, PTX ISA 9.7.14.5.10): s8/u8 operands, s32 accumulators
  {intrin = "mma", instr = "mma.m16n8k32", in_dtype = "int8", acc_dtype = "int32", config = "m16n8k32.s8.s8.s32"},
  {intrin = "mma", instr = "mma.m16n8k32", in_dtype = "uint8", b_dtype = "int8", acc_dtype = "int32", config = "m16n8k32.u8.s8.s32"},
  {intrin = "mma", instr = "mma.m16n8k32", in_dtype = "int8", b_dtype = "uint8", acc_dtype = "int32", config = "m16n8k32.s8.u8.s32"},
  {intrin = "mma", instr = "mma.m16n8k32", in_dtype = "uint8", acc_dtype = "int32", config = "m16n8k32.u8.u8.s32"},
  -- int8 WMMA (A and B of one type, as CUDA's mma_sync overloads); wmma_shape picks the shape
  {intrin = "wmma", instr = "wmma.m16n16k16", in_dtype = "int8", acc_dtype = "int32", config = "m16n16k16.s8.s8.s32"},
  {intrin = "wmma", instr = "wmma.m16n16k16", in_dtype = "uint8", acc_dtype = "int32", config = "m16n16k16.u8.u8.s32"},
  {intrin = "wmma", instr = "wmma.m32n8k16", in_dtype = "int8", acc_dtype = "int32", config = "m32n8k16.s8.s8.s32", shape = {32, 8, 16}},
  {intrin = "wmma", instr = "wmma.m32n8k16", in_dtype = "uint8", acc_dtype = "int32", config = "m32n8k16.u8.u8.s32", shape = {32, 8, 16}},
  {intrin = "wmma", instr = "wmma.m8n32k16", in_dtype = "int8", acc_dtype = "int32", config = "m8n32k16.s8.s8.s32", shape = {8, 32, 16}},
  {intrin = "wmma", instr = "wmma.m8n32k16", in_dtype = "uint8", acc_dtype = "int32", config = "m8n32k16.u8.u8.s32", shape = {8, 32, 16}},
}
for _, r in ipairs(M.SUPPORTED) do
  r.b_dtype = r.b_dtype or r.in_dtype
  r.shape = r.shape or {16, 16, 16}
  if not r.config then -- the 16-bit rows
    r.config = r.intrin == "mma" and ("m16n8k16.%s.%s.f32"):format(r.in_dtype == "bfloat16" and "bf16" or "f16", r.in_dtype == "bfloat16" and "bf16" or "f16")
               or "m16n16k16.f16.f16.f32"
  end
end

-- The intrinsics of a row: its names (explicit, or from cuda.names of its config), the warp
-- tile {m, n, k} and the transposing / k-major load variants.
local function intrinsics(row)
  local cuda = require("tir.intrin.cuda")
  local cfg
  for _, c in ipairs(require("tir.core").mma_configs()) do
    if c.name == row.config and c.family == row.intrin then cfg = c end
  end
  local n = cuda.names(cfg)
  local I = {scope_a = row.intrin == "mma" and "warp" or "wmma.matrix_a", scope_b = row.intrin == "mma" and "warp" or "wmma.matrix_b",
             scope_c = row.intrin == "mma" and "warp" or "wmma.accumulator", load_a = row.load_a or n.load_a, load_b = row.load_b or n.load_b,
             load_a_trans = n.load_a_trans, load_b_trans = n.load_b_trans, load_a_smem_t = n.load_a_smem_t,
             load_b_smem_t = n.load_b_smem_t, sync = row.sync or n.sync, fill = row.fill or n.fill, store = row.store or n.store.global,
             store_epilogue = row.store_epilogue, store_shared = row.store_shared or n.store.shared, store_add = n.store_add, tile = n.tile,
             config = cfg}
  return I
end

--- The row of M.SUPPORTED for an intrinsic family and dtypes (b_dtype: B's, default A's;
-- shape: a wmma shape {m, n, k}, default the first row's), or nil.
function M.supported(intrin, in_dtype, acc_dtype, b_dtype, shape)
  for _, r in ipairs(M.SUPPORTED) do
    if r.intrin == intrin and r.in_dtype == in_dtype and r.b_dtype == (b_dtype or in_dtype) and (acc_dtype == nil or r.acc_dtype == acc_dtype) and
       (shape == nil or (r.shape[1] == shape[1] and r.shape[2] == shape[2] and r.shape[3] == shape[3])) then
      return r
    end
  end
end

local function supported_text()
  local t, seen = {}, {}
  for _, r in ipairs(M.SUPPORTED) do
    local s = ("%s (%s): %s%s -> %s"):format(r.intrin, r.instr, r.in_dtype, r.b_dtype ~= r.in_dtype and (" x " .. r.b_dtype) or "", r.acc_dtype)
    if not seen[s] then seen[s] = true t[#t + 1] = s end
  end
  return table.concat(t, "; ")
end

local function families()
  local seen, out = {}, {}
  for _, r in ipairs(M.SUPPORTED) do
    if not seen[r.intrin] then seen[r.intrin] = true out[#out + 1] = r.intrin end
  end
  return out
end

--- The te workload: returns a PrimFunc computing C (and D = cast(out_dtype, C) when out_dtype
-- is "float16" or "bfloat16"), with blocks "C" (and "D").
-- dtype: A's and B's dtype, or {A dtype, B dtype} ({"uint8", "int8"}: u8 activations x s8
-- weights); 8-bit inputs accumulate in int32 (out_dtype nil or "int32"; products are exact, sums
-- wrap like CUDA's int), others in float32 (out_dtype nil, "float32", "float16" or "bfloat16";
-- another is a TypeError).  A bfloat16 D is fused by intrin = "wgmma" (its staged epilogue);
-- mma.sync's fused store writes float16 only (tc_gemm.schedule refuses epilogue = "D" there).
-- pad = {BM, BN, BK}: when the extents are not multiples of these, the computation runs on
-- padded extents (TVM's pad_einsum): stages "A_pad"/"B_pad" read A/B or 0 outside them (they
-- become the shared tiles, loaded with predicates), "C" is a padded fp32 workspace, and "D"
-- (M x N; cast to out_dtype, or a copy) reads what the caller asked for.
function M.workload(Mx, N, K, dtype, out_dtype, pad, layout)
  local tir = require("tir")
  local te = tir.te
  local P = "tc_gemm.workload"
  for i, v in ipairs({Mx, N, K}) do
    if math.type(v) ~= "integer" or v < 1 then raise("TypeError", P, "%s must be a positive integer, got %s", ({"M", "N", "K"})[i], util.show(v)) end
  end
  local da, db = dtype, dtype
  if type(dtype) == "table" then
    if #dtype ~= 2 or util.count_keys(dtype) ~= 2 then raise("TypeError", P, "dtype must be a dtype or {A dtype, B dtype}, got %s", util.show(dtype)) end
    da, db = dtype[1], dtype[2]
  end
  util.check_dtype(da, P, "dtype")
  util.check_dtype(db, P, "dtype")
  util.check_dtype(out_dtype, P, "out_dtype")
  da, db = da or "float16", db or "float16"
  local int8 = ({int8 = true, uint8 = true})
  local acc = (int8[da] and int8[db]) and "int32" or "float32"
  if acc == "int32" and out_dtype ~= nil and out_dtype ~= "int32" then
    raise("TypeError", P, "%s x %s inputs accumulate in int32; out_dtype must be int32 (or nil), not %s", da, db, util.show(out_dtype))
  end
  if acc == "int32" then out_dtype = nil end
  if acc == "float32" and out_dtype ~= nil and not ({float32 = true, float16 = true, bfloat16 = true})[out_dtype] then
    raise("TypeError", P, "%s x %s inputs accumulate in float32; out_dtype must be float32, float16 or bfloat16 (or nil), not %s", da, db,
          util.show(out_dtype))
  end
  if pad ~= nil and pad ~= false then
    if type(pad) ~= "table" or #pad ~= 3 or util.count_keys(pad) ~= 3 then
      raise("TypeError", P, "pad must be {BM, BN, BK} (the tile sizes to pad the extents to), got %s", util.show(pad))
    end
    for i = 1, 3 do
      if math.type(pad[i]) ~= "integer" or pad[i] < 1 then raise("ValueError", P, "pad[%d] must be a positive integer, got %s", i, util.show(pad[i])) end
    end
  end
  if layout ~= nil and not ({NN = 1, NT = 1, TN = 1, TT = 1})[layout] then
    raise("ValueError", P, "layout must be \"NN\", \"NT\", \"TN\" or \"TT\" (A and B stored plain or transposed), got %s", util.show(layout))
  end
  layout = layout or "NN"
  local ta, tb = layout:sub(1, 1) == "T", layout:sub(2, 2) == "T"
  -- A is M x K ("N") or K x M ("T"); B is K x N ("N") or N x K ("T")
  local A = te.placeholder(ta and {K, Mx} or {Mx, K}, da, "A")
  local B = te.placeholder(tb and {N, K} or {K, N}, db, "B")
  local function a_at(X, i, k) return ta and X[{k, i}] or X[{i, k}] end
  local function b_at(X, k, j) return tb and X[{j, k}] or X[{k, j}] end
  local function up(x, m) return (x + m - 1) // m * m end
  local Mp, Np, Kp = Mx, N, K
  if pad then Mp, Np, Kp = up(Mx, pad[1]), up(N, pad[2]), up(K, pad[3]) end
  if Mp == Mx and Np == N and Kp == K then
    local k = te.reduce_axis({0, K}, "k")
    local C = te.compute({Mx, N}, function(i, j)
      return te.sum(te.cast(acc, a_at(A, i, k)) * te.cast(acc, b_at(B, k, j)), {k})
    end, "C")
    if out_dtype ~= nil and out_dtype ~= acc then
      local D = te.compute({Mx, N}, function(i, j) return te.cast(out_dtype, C[{i, j}]) end, "D")
      return te.create_prim_func({A, B, D})
    end
    return te.create_prim_func({A, B, C})
  end
  local function guarded(X, dt, r, c, R, Cc)
    return tir.core.call(dt, "if_then_else", tir.And(tir.lt(r, R), tir.lt(c, Cc)), X[{r, c}], tir.const(0, dt))
  end
  local Ap = ta and te.compute({Kp, Mp}, function(k, i) return guarded(A, da, k, i, K, Mx) end, "A_pad")
              or te.compute({Mp, Kp}, function(i, k) return guarded(A, da, i, k, Mx, K) end, "A_pad")
  local Bp = tb and te.compute({Np, Kp}, function(j, k) return guarded(B, db, j, k, N, K) end, "B_pad")
              or te.compute({Kp, Np}, function(k, j) return guarded(B, db, k, j, K, N) end, "B_pad")
  local k = te.reduce_axis({0, Kp}, "k")
  local C = te.compute({Mp, Np}, function(i, j)
    return te.sum(te.cast(acc, a_at(Ap, i, k)) * te.cast(acc, b_at(Bp, k, j)), {k})
  end, "C")
  local D = te.compute({Mx, N}, function(i, j) return te.cast(out_dtype or acc, C[{i, j}]) end, "D")
  return te.create_prim_func({A, B, D})
end

-- The roles in a matmul-like block: C[b.., i, j] (+)= A[b.., i|k, k|i] * B[b.., k|j, j|k] with casts;
-- returns {a_index, b_index (read positions), layout "NN".."TT", loops = {batch.., i, j, k} (LoopRVs)}.
local function analyze(sch, blk, P)
  P = P or "tc_gemm.schedule"
  local b = sch:get(blk)
  local ivs = b.iter_vars
  local role = {}
  local reads = b.reads
  local wbuf = b.writes[1] and b.writes[1].buffer
  if #b.writes ~= 1 then
    raise("ValueError", P, "block '%s' is not matmul-like (it must write one buffer and read two operands)", b.name)
  end
  -- a block with an init reads A, B (TVM's read rule); without one (an update block) C, A, B
  local ops = {}
  for r = 1, #reads do
    if reads[r].buffer ~= wbuf then ops[#ops + 1] = {index = r - 1, region = reads[r]} end
  end
  if #ops ~= 2 then raise("ValueError", P, "block '%s' must read two operands besides its output", b.name) end
  local function vars_of(region)
    local out = {}
    for d = 1, #region.region do
      local mn = region.region[d].min
      local found
      for q = 1, #ivs do if mn == ivs[q].var then found = q end end
      if not found then raise("ValueError", P, "block '%s': operand %s is not indexed by plain iteration variables", b.name, region.buffer.name) end
      out[d] = found
    end
    return out
  end
  local wv = vars_of(b.writes[1])
  local is_batch = {}
  for d = 1, #wv - 2 do is_batch[wv[d]] = true end
  -- an operand's index per dimension: a plain iteration variable, or one non-batch variable
  -- plus batch variables times constants (the split-K block's A[i, ks * Kc + k], made by
  -- rfactor: ks is a batch dimension of the partial sums); the result names the variable
  local function uses(e, out)
    for q = 1, #ivs do if e == ivs[q].var then out[#out + 1] = q return out end end
    local kind = e.kind
    if kind == "Add" or kind == "Sub" or kind == "Mul" then uses(e.a, out); uses(e.b, out)
    elseif kind ~= "IntImm" then out.bad = true end
    return out
  end
  local function operand_vars(region)
    local out = {}
    for d = 1, #region.region do
      local u = uses(region.region[d].min, {})
      local main = {}
      for _, q in ipairs(u) do if not is_batch[q] then main[#main + 1] = q end end
      if #u == 1 then out[d] = u[1] elseif not u.bad and #main == 1 then out[d] = main[1] end
      if not out[d] then
        raise("ValueError", P, "block '%s': operand %s is not indexed by plain iteration variables (or one plus batch variables " ..
              "times constants, as split-K's ks * Kc + k)", b.name, region.buffer.name)
      end
    end
    return out
  end
  local av, bv = operand_vars(ops[1].region), operand_vars(ops[2].region)
  local function has(list, q) for _, x in ipairs(list) do if x == q then return true end end return false end
  local kq
  for q = 1, #ivs do if ivs[q].iter_type == 2 then kq = q end end
  if not kq then raise("ValueError", P, "block '%s' has no reduction variable", b.name) end
  local iq, jq = wv[#wv - 1], wv[#wv]
  local batch = {}
  for d = 1, #wv - 2 do batch[#batch + 1] = wv[d] end
  -- operand roles: A uses i and k, B uses k and j (swap if given the other way round)
  if has(av, jq) and has(bv, iq) then av, bv, ops[1], ops[2] = bv, av, ops[2], ops[1] end
  if not (has(av, iq) and has(av, kq) and has(bv, jq) and has(bv, kq)) then
    raise("ValueError", P, "block '%s': cannot tell which operand is A (rows, k) and which is B (k, columns)", b.name)
  end
  local la = av[#av] == iq and "T" or "N"
  local lb = bv[#bv] == kq and "T" or "N"
  -- loops: trivial bindings, one loop per iteration variable
  local loops = {sch:get_loops(blk)}
  local lfor = {}
  for q = 1, #ivs do
    for _, l in ipairs(loops) do
      if sch._state:block_realize(blk.uid).iter_values[q] == l.var then lfor[q] = l end
    end
    if not lfor[q] then
      raise("ValueError", P, "block '%s': iteration variable %d is not bound to one loop (apply the schedule before other loop transformations)", b.name, q)
    end
  end
  local order = {}
  for _, q in ipairs(batch) do order[#order + 1] = lfor[q] end
  order[#order + 1], order[#order + 2], order[#order + 3] = lfor[iq], lfor[jq], lfor[kq]
  -- extents of batch.., i, j, k (nil when symbolic) and the dtypes
  local ext = {}
  for q, l in ipairs(order) do
    local e = sch:get(l).extent
    ext[q] = e.kind == "IntImm" and e.value or false
  end
  return {a_index = ops[1].index, b_index = ops[2].index, layout = la .. lb, batch = #batch, loops = order, extents = ext,
          a_dtype = ops[1].region.buffer.dtype, b_dtype = ops[2].region.buffer.dtype, c_dtype = wbuf.dtype, name = b.name}
end
--- tc_gemm.analyze(sch, block [, prim]) -> the GEMM view of a matmul-like block (roles of its
-- iteration variables, layout, dtypes, extents), as tc_gemm.schedule reads it.
function M.analyze(sch, blk, P)
  if getmetatable(sch) ~= require("tir").Schedule then
    util.raise("TypeError", "tc_gemm.analyze", "sch must be a tir.Schedule, got %s", util.describe(sch))
  end
  return analyze(sch, blk, P or "tc_gemm.analyze")
end

--- Schedules the "C" block of M.workload (or an equivalent T script); returns the Schedule.
-- opts override M.defaults; epilogue = "D" fuses that cast block into the store.
local SCHEDULE_OPTS = {intrin = "string", BM = "positive", BN = "positive", BK = "positive", warp_m = "positive",
                       warp_n = "positive", vec = "positive", stages = "positive", early_wait = "boolean",
                       frag_pipeline = "boolean", frag_prefetch = "boolean", copy_order = function(v)
                         if v ~= "top" and v ~= "step" and v ~= "spread" then
                           return '"top" (the copies before the tile\'s first fragment loads), "step" (after the second k step\'s ' ..
                                  'loads) or "spread" (A\'s after the second step\'s loads, B\'s after the third)'
                         end
                       end, unroll_stages = "boolean", pad = "boolean", swizzle = "boolean", group_m = "positive", dtype = "dtype", epilogue = "string", unroll = "boolean",
                       block = "string", split_k = "positive", split_k_mode = function(v)
                         if v ~= "parallel" and v ~= "serial" and v ~= "atomic" then
                           return '"parallel" (a second kernel sums the slices), "serial" (the last CTA of each tile does) or "atomic" ' ..
                                  '(each CTA adds its slice with red.global.add; the last casts)'
                         end
                       end, split_k_ordered = "boolean", a_stage = "string", b_stage = "string", writeback = "string",
                       stage_epilogue = "boolean",
                       tuned = "boolean", db = "string", target = "string", tma = "boolean", persistent = function(v)
                         if v ~= true and v ~= false and not (math.type(v) == "integer" and v > 0) then
                           return "true, false or a number of CTAs"
                         end
                       end,
                       row_sums = "string",
                       wmma_shape = function(v)
                         if type(v) ~= "table" or #v ~= 3 or math.type(v[1]) ~= "integer" or math.type(v[2]) ~= "integer" or
                            math.type(v[3]) ~= "integer" then return "a wmma shape {m, n, k}" end
                       end}
M.SCHEDULE_OPTS = SCHEDULE_OPTS

local function as_schedule(func, P)
  local tir = require("tir")
  if getmetatable(func) == tir.Schedule then return func end
  local core = require("tir.core")
  if not (core.is_node(func, "PrimFunc") or core.is_node(func, "IRModule")) then
    raise("TypeError", P, "expected a PrimFunc (e.g. tc_gemm.workload(...)) or a Schedule, got %s", util.describe(func))
  end
  return tir.Schedule(func)
end

-- Everything the schedule needs, checked before the first primitive runs (so that an error
-- names the option or the block rather than a primitive deep inside the schedule).
local function validate(sch, o, P)
  local fam = families()
  local known = false
  for _, f in ipairs(fam) do known = known or f == o.intrin end
  -- "wgmma" is dispatched to tc_gemm_wgmma before validate, so it is not in the mma.sync/WMMA rows
  if not known then raise("ValueError", P, "intrin must be one of %s, wgmma, got %s", table.concat(fam, ", "), util.show(o.intrin)) end
  local C = sch:get_block(o.block or "C")
  local info = analyze(sch, C, P)
  local row = M.supported(o.intrin, info.a_dtype, info.c_dtype, info.b_dtype, o.wmma_shape)
  if not row and info.a_dtype ~= info.b_dtype and not M.supported(o.intrin, info.a_dtype, nil, info.b_dtype) then
    raise("TypeError", P, "block '%s' multiplies %s by %s, which intrin = \"%s\" does not run; supported: %s", info.name, info.a_dtype,
          info.b_dtype, o.intrin, supported_text())
  end
  if not row and o.wmma_shape and M.supported(o.intrin, info.a_dtype, info.c_dtype, info.b_dtype) then
    raise("ValueError", P, "wmma_shape {%d, %d, %d} is not a wmma shape for %s inputs; supported: %s", o.wmma_shape[1], o.wmma_shape[2],
          o.wmma_shape[3], info.a_dtype, supported_text())
  end
  if not row then
    raise("TypeError", P, "block '%s' multiplies %s into %s, which intrin = \"%s\" does not run; supported: %s", info.name,
          info.a_dtype, info.c_dtype, o.intrin, supported_text())
  end
  local I = intrinsics(row)
  local tm, tn, tk = I.tile[1], I.tile[2], I.tile[3]
  local esize = tonumber(info.a_dtype:match("%d+$")) // 8
  I.esize = esize
  if not o.vec_given then o.vec = 16 // esize end -- 16-byte copies
  if o.dtype_given and o.dtype ~= info.a_dtype then
    raise("TypeError", P, "opts.dtype is %s but block '%s' reads %s operands (the dtype is taken from the block)", o.dtype,
          info.name, info.a_dtype)
  end
  o.dtype = info.a_dtype
  local bm, bn, bk, wm_, wn_ = o.BM, o.BN, o.BK, o.warp_m, o.warp_n
  if bm % wm_ ~= 0 or bn % wn_ ~= 0 or wm_ % tm ~= 0 or wn_ % tn ~= 0 or bk % tk ~= 0 then
    raise("ValueError", P, "need BM %% warp_m == 0, BN %% warp_n == 0, warp tiles multiples of %dx%d and BK of %d (%s; BM=%d BN=%d BK=%d warp %dx%d)",
          tm, tn, tk, row.config, bm, bn, bk, wm_, wn_)
  end
  local threads = (bm // wm_) * (bn // wn_) * 32
  if threads > 1024 then
    raise("ValueError", P, "BM/warp_m * BN/warp_n = %d warps = %d threads per block; CUDA allows 1024", threads // 32, threads)
  end
  if not ({[1] = true, [2] = true, [4] = true, [8] = true, [16] = true})[o.vec] or o.vec * esize > 16 then
    raise("ValueError", P, "vec must be %s (elements per vector copy, at most 16 bytes of %s), got %d",
          esize == 1 and "1, 2, 4, 8 or 16" or "1, 2, 4 or 8", info.a_dtype, o.vec)
  end
  local ext = info.extents
  local n = #ext
  local names = {"M", "N", "K"}
  for q = 1, n do
    if not ext[q] then raise("ValueError", P, "block '%s' has a symbolic extent; tc_gemm needs constant M, N, K (and batch)", info.name) end
  end
  for q, t in ipairs({bm, bn, bk}) do
    local e = ext[n - 3 + q]
    if e % t ~= 0 then
      raise("ValueError", P, "%s = %d is not a multiple of %s = %d: pick a tile that divides it, or build the workload with " ..
            "tc_gemm.workload(..., pad = {BM, BN, BK}), which pads the operands", names[q], e, ({"BM", "BN", "BK"})[q], t)
    end
  end
  for _, X in ipairs({{"A", bm}, {"B", bn}}) do
    local elems = X[2] * bk
    -- whole vectors; a tile smaller than threads * vec is copied by the first threads (the
    -- split of the copy loop is predicated): small-M tiles (16 x 32 with 128 threads) need it
    if elems % o.vec ~= 0 then
      raise("ValueError", P, "the %s tile (%d x %d = %d elements) is not a multiple of vec = %d: the cooperative copy " ..
            "moves whole vectors (use a smaller vec)", X[1], X[2], bk, elems, o.vec)
    end
  end
  local padded = o.writeback or pcall(function() return sch:get_block("A_pad") end)
  for _, key in ipairs({"a_stage", "b_stage", "writeback"}) do
    if o[key] and not pcall(function() return sch:get_block(o[key]) end) then
      raise("ValueError", P, "%s block '%s' does not exist", key, o[key])
    end
  end
  if o.tma then
    -- TMA copies whole dense boxes (include/tir/tma.h): no row padding, no predicated tiles
    if o.intrin ~= "mma" then raise("ValueError", P, "tma = true runs with intrin = \"mma\" (got %s)", util.show(o.intrin)) end
    if padded then raise("ValueError", P, "tma = true needs M, N, K multiples of the tiles (TMA copies whole boxes, not the padded workload)") end
    if o.pad_given and o.pad then raise("ValueError", P, "tma = true and pad = true: a TMA box lands dense (no row padding)") end
    if bk * esize % 16 ~= 0 or bk > 256 or bm > 256 or bn > 256 then
      raise("ValueError", P, "tma = true: a TMA box is at most 256 per dimension with 16-byte rows (BM=%d BN=%d BK=%d)", bm, bn, bk)
    end
    o.pad = false
  end
  if o.persistent then
    if not o.tma then raise("ValueError", P, "persistent = true needs tma = true (the TMA pipeline re-arms its mbarriers per tile)") end
    if o.split_k > 1 or info.batch > 0 then raise("ValueError", P, "persistent = true: no split_k and no batch dimensions") end
  end
  if o.split_k_mode == "serial" and o.split_k > 1 and info.batch > 1 then
    raise("ValueError", P, "split_k_mode = \"serial\" with batch dimensions is not supported (the slices' counter is per output tile of one " ..
          "matrix); use split_k_mode = \"parallel\"")
  end
  if o.epilogue and not padded then -- (the padded workload's D is a kernel of its own)
    local okb, E = pcall(function() return sch:get(sch:get_block(o.epilogue)) end)
    if not okb then raise("ValueError", P, "epilogue block '%s' does not exist", o.epilogue) end
    local edt = E.writes[1] and E.writes[1].buffer.dtype
    if row.epilogue_dtype and edt ~= row.epilogue_dtype and not o.stage_epilogue then
      raise("TypeError", P, "epilogue '%s' writes %s, but the fused store of intrin = \"%s\" writes %s", o.epilogue,
            tostring(edt), o.intrin, row.epilogue_dtype)
    end
  end
  -- 8-bit wmma stores its shared tiles fragment by fragment: a fragment's stored width must be
  -- a multiple of 16 bytes (load_matrix_sync's ldm)
  if o.intrin == "wmma" and esize == 1 then
    local ta, tb = info.layout:sub(1, 1) == "T", info.layout:sub(2, 2) == "T"
    for _, t in ipairs({{"A", ta and {tk, tm} or {tm, tk}}, {"B", tb and {tn, tk} or {tk, tn}}}) do
      if t[2][2] % 16 ~= 0 then
        raise("ValueError", P, "wmma %s: the %s tile is stored %dx%d (layout %s), so its leading dimension is %d bytes; load_matrix_sync " ..
              "needs a multiple of 16 bytes (store %s the other way, or use another shape or intrin = \"mma\")", row.config, t[1], t[2][1],
              t[2][2], info.layout, t[2][2], t[1])
      end
    end
  end
  return I, C
end

--- Schedules the "C" block of M.workload (or an equivalent T script); returns the Schedule.
-- opts override M.defaults; epilogue = "D" fuses that cast block into the store.  Every
-- option, the block's dtypes (M.SUPPORTED) and shapes (multiples of the tiles) are checked
-- first; errors are tir.Errors from "tc_gemm.schedule" at the caller's line.
-- split_k = S: K in S slices on blockIdx.z and a second kernel adding them (tc_gemm_split_k.lua);
-- a K that S * BK does not divide is padded with zeros (pad_einsum: tc_gemm_split_k.pad_k).
-- tuned = true (with db, target: the tuning database and target, tir.tune.default_db() and
-- "cuda" by default): options not given are the tuned ones of this GEMM, of the nearest tuned
-- shape, or the defaults (tc_gemm_tune.lookup); it then returns the Schedule, which of these it
-- used ("tuned <key>", "nearest <key>", "defaults (<why>)") and the workload key.
local function schedule(func, opts, P)
  require("tir.intrin.cuda")
  if type(opts) == "table" and opts.intrin == "wgmma" then -- Hopper: lib/tir/schedules/tc_gemm_wgmma.lua
    local W = require("tir.schedules.tc_gemm_wgmma")
    util.check_opts(P, opts, W.OPTS)
    local sch = as_schedule(func, P)
    local o = W.resolve(sch, opts, P, analyze) -- no tile option given: tc_gemm_wgmma.pick's per-shape choice
    return W.schedule(sch, o, P, analyze)
  end
  util.check_opts(P, opts, SCHEDULE_OPTS)
  local o = {}
  for k, v in pairs(M.defaults) do o[k] = v end
  for k, v in pairs(opts or {}) do o[k] = v end
  o.dtype_given = opts ~= nil and opts.dtype ~= nil
  o.vec_given = opts ~= nil and opts.vec ~= nil
  o.pad_given = opts ~= nil and opts.pad ~= nil
  local sch = as_schedule(func, P)
  -- tuned = true: the options not given come from the tuning database (tc_gemm_tune.lookup)
  local config, config_key
  if o.tuned then
    local p
    p, config, config_key = require("tir.schedules.tc_gemm_tune").lookup(sch, analyze(sch, sch:get_block(o.block or "C"), P), o.intrin,
      {db = o.db, target = o.target})
    for key, v in pairs(p) do if opts[key] == nil then o[key] = v end end
    o.vec_given = opts.vec ~= nil or p.vec ~= nil
  end
  -- split-K (tc_gemm_split_k.lua): the rfactor'ed block of partial sums is what is tiled below;
  -- the sum over the slices and the epilogue (or the padded workload's D) are a second kernel
  local reduce, epilogue
  if o.split_k > 1 then
    local C0 = sch:get_block(o.block or "C")
    local info0 = analyze(sch, C0, P)
    epilogue, o.epilogue = o.epilogue, nil
    if epilogue and not pcall(function() return sch:get_block(epilogue) end) then
      raise("ValueError", P, "epilogue block '%s' does not exist", epilogue)
    end
    local SK = require("tir.schedules.tc_gemm_split_k")
    if o.split_k_mode == "atomic" then SK.check_atomic(sch, info0, o, epilogue, P) end
    o.split_k_ordered = SK.ordered(o, P)
    -- K in whole slices of whole BK steps: padded with pad_einsum when it is not (tc_gemm_split_k.pad_k)
    local K0 = info0.extents[#info0.extents]
    if K0 and math.type(o.BK) == "integer" and o.BK > 0 and K0 % (o.split_k * o.BK) ~= 0 then
      local staged = o.a_stage or o.b_stage or o.writeback or pcall(function() return sch:get_block("A_pad") end)
      local sa, sb = SK.pad_k(sch, info0.name, K0, o.split_k, o.BK, info0.a_index, info0.b_index, staged, P)
      o.a_stage, o.b_stage = sa, sb
      info0 = analyze(sch, sch:get_block(info0.name), P)
    end
    o.block, reduce = SK.rfactor(sch, info0.name, info0.loops[#info0.loops], info0.extents[#info0.extents], o.split_k, o.BK, P)
  elseif o.split_k_ordered ~= nil then
    raise("ValueError", P, "split_k_ordered orders split_k_mode = \"atomic\"'s adds; without split_k > 1 there are none")
  end
  local I, C = validate(sch, o, P)
  -- shared layout: swizzle (nil = auto: on for 16-bit mma.sync operands unless pad is given,
  -- measured 333 -> 387 TFLOP/s at 4096^3 on the H200, bench/RESULTS.md), or padded rows
  local given = opts or {}
  if given.swizzle and o.intrin ~= "mma" then
    raise("ValueError", P, "swizzle = true needs intrin = \"mma\" (wmma's load_matrix_sync reads rows from a pointer and a row stride, " ..
          "which a swizzle does not follow); use pad")
  end
  if given.swizzle and given.pad then
    raise("ValueError", P, "pad = true and swizzle = true are two layouts of the shared tiles (padded rows or XOR-swizzled ones): choose one")
  end
  -- (and for TMA tiles of any element size: the box lands in a PTX swizzle mode)
  if given.swizzle == nil then o.swizzle = o.intrin == "mma" and (I.esize == 2 or o.tma) and given.pad == nil end
  -- CTA order: group_m nil = auto: 8 for 16-bit mma.sync operands (measured +2 % at 8192^3 on the
  -- H200), else the 2-D grid (8-bit and wmma schedules keep theirs until measured)
  if given.group_m == nil then o.group_m = (o.intrin == "mma" and I.esize == 2) and 8 or 1 end
  local wm, wn = o.BM // o.warp_m, o.BN // o.warp_n
  local info = analyze(sch, C, P)
  local ta, tb = info.layout:sub(1, 1) == "T", info.layout:sub(2, 2) == "T"
  -- operand stages: blocks computing A / B into global buffers become the shared tiles
  -- (set_scope), so what they compute (padding, an im2col gather) runs in the copy into shared
  -- memory; the result goes through a global workspace read by the writeback block, a kernel of
  -- its own.  tc.workload(..., pad) names them A_pad, B_pad, D; tir.amos passes its own.
  if not (o.a_stage or o.b_stage) and pcall(function() return sch:get_block("A_pad") end) then
    o.a_stage, o.b_stage, o.writeback = "A_pad", "B_pad", "D"
  end
  -- with a writeback block the epilogue is that kernel; without one (an im2col stage whose GEMM
  -- covers the whole output: conv2d_tc) an epilogue still fuses into the store
  if o.writeback then o.epilogue = nil end
  local AS = M.shared_stage(sch, C, o.a_stage, info.a_index)
  local BS = M.shared_stage(sch, C, o.b_stage, info.b_index)
  -- (the fragments feed the GEMM only: the row sums of o.row_sums read the shared tile)
  local AF = sch:cache_read(C, info.a_index, I.scope_a, {C})
  local BF = sch:cache_read(C, info.b_index, I.scope_b, {C})
  local CF = sch:cache_write(C, 0, I.scope_c)
  local store_intrin = I.store
  local CS -- wmma with an epilogue: accumulators staged in shared memory, then cast by all lanes
  if o.epilogue then
    -- the write-back block now computes D = cast(C); with row_sums the epilogue also reads the
    -- row sums, a producer before the GEMM (prior_producers)
    sch:reverse_compute_inline(o.epilogue, o.row_sums ~= nil)
    -- the fused store converts only: an epilogue reading more (a bias) goes through shared memory
    -- (stage_epilogue: always, e.g. an epilogue storing into another layout -- tir.amos's
    -- write-back of a fused M, which no fragment store's window covers)
    local plain = #sch:get(CF).reads == 1 and not o.stage_epilogue
    if I.store_epilogue and plain then
      store_intrin = I.store_epilogue -- the cast fused into the fragment store
    else
      -- the accumulator among the write-back's reads (an inlined epilogue may read more:
      -- a bias, a scale)
      local acc_index = 0
      for q, rg in ipairs(sch:get(CF).reads) do
        if rg.buffer.scope == I.scope_c then acc_index = q - 1 end
      end
      CS = sch:cache_read(CF, acc_index, "shared")
      store_intrin = I.store_shared
    end
  end
  info = analyze(sch, C, P)
  local lp = info.loops
  local i, j, k = lp[#lp - 2], lp[#lp - 1], lp[#lp]
  local tm, tn, tk = I.tile[1], I.tile[2], I.tile[3]
  local esize = I.esize
  local wide = esize == 1 -- 8-bit operands: k-major in shared memory for ldmatrix
  local by, wy, wi, i16 = sch:split(i, {nil, wm, o.warp_m // tm, tm})
  local bx, wz, wj, j16 = sch:split(j, {nil, wn, o.warp_n // tn, tn})
  local ko, ki, k16 = sch:split(k, {nil, o.BK // tk, tk})
  local order = {}
  for q = 1, info.batch do order[#order + 1] = lp[q] end
  for _, l in ipairs({by, bx, wy, wz, ko, ki, wi, wj, i16, j16, k16}) do order[#order + 1] = l end
  sch:reorder(table.unpack(order))
  local bz -- (split-K: the slices' loop)
  if info.batch > 0 then
    bz = info.batch > 1 and sch:fuse(table.unpack(order, 1, info.batch)) or lp[1]
    sch:bind(bz, "blockIdx.z")
  end
  local cta_loop -- the innermost loop bound to a CTA tile coordinate
  local nbm = sch:get(by).extent.value
  local G = (not o.persistent and o.group_m and o.group_m > 1) and math.min(o.group_m, nbm) or 1
  while nbm % G ~= 0 do G = G - 1 end
  if o.persistent then
    -- a persistent grid (inject_tma_pipeline re-arms its mbarriers per tile): two CTAs an SM
    local ny, nx = info.extents[#info.extents - 2] // o.BM, info.extents[#info.extents - 1] // o.BN
    M.persistent_tiles(sch, by, bx, ny, nx, o.persistent == true and 2 * M.device_sm_count() or o.persistent, o.persistent ~= true and P or nil)
  elseif G > 1 then
    -- grouped CTA order (Triton's GROUP_M; CUTLASS's threadblock swizzle): consecutive CTAs walk
    -- G tiles down M before moving along N, so the CTAs resident at once share A rows and B
    -- columns in L2.  One grid dimension: cta = (g, bx, mi) with M tile = g * G + mi.
    local g, mi = sch:split(by, {nil, G})
    sch:reorder(g, bx, mi)
    cta_loop = sch:fuse(g, bx, mi)
    sch:bind(cta_loop, "blockIdx.x")
  else
    sch:bind(by, "blockIdx.y"); sch:bind(bx, "blockIdx.x")
    cta_loop = bx
  end
  -- serial split-K: the slices' loop (blockIdx.z) inside the tile's, so the sum over the slices,
  -- computed at the tile loop after it, is one tile's (lower_grid_tail: the last CTA of a tile runs it)
  local atomic = reduce and o.split_k_mode == "atomic"
  if reduce and (o.split_k_mode == "serial" or atomic) then
    if G > 1 then sch:reorder(cta_loop, order[1]) else sch:reorder(by, bx, order[1]) end
  end
  sch:bind(wy, "threadIdx.y"); sch:bind(wz, "threadIdx.z")
  local CFB = CF -- with an epilogue, the write-back block now computes it
  local prior = o.row_sums ~= nil -- the epilogue reads the row sums, computed before the GEMM
  if CS then
    sch:reverse_compute_at(CS, wz)
    sch:reverse_compute_at(CF, wz, false, -1, prior)
    -- the cast from the staged tile: 32 lanes, vec-wide
    local l = {sch:get_loops(CF)}
    local f = sch:fuse(l[#l - 1], l[#l])
    local outer, tx, v = sch:split(f, {nil, 32, o.vec})
    sch:bind(tx, "threadIdx.x"); sch:vectorize(v)
    if o.unroll then sch:unroll(outer) end
    CFB = CS
  else
    if atomic then
      -- atomic split-K: the sum over the slices reads the warp accumulators directly (the
      -- partials' write-back inlined) into a zeroed fp32 / int32 tile, at the warp's loop inside
      -- the slice's CTA: each CTA adds its slice (red.global.add), the last one casts (the tail)
      sch:compute_inline(CF)
      CFB = sch:get_block(reduce)
      sch:set_scope(CFB, 0, "global.zeroed")
      store_intrin = I.store_add
    end
    sch:reverse_compute_at(CFB, wz, false, -1, prior)
  end
  -- serial split-K: the sum over the slices moves to the end of the tile loop now, while the
  -- write-back of the partials is plain loops (reverse_compute_at proves what it reads was written)
  if reduce and o.split_k_mode == "serial" then
    require("tir.schedules.tc_gemm_split_k").schedule_reduce_serial(sch, reduce, epilogue or o.writeback, cta_loop, wm, wn, P)
  elseif atomic then
    require("tir.schedules.tc_gemm_split_k").schedule_tail_atomic(sch, epilogue or o.writeback, cta_loop, wm, wn, P)
  end
  sch:compute_at(AF, ki); sch:compute_at(BF, ki)
  -- row_sums: the block summing the rows of A moves into the CTA, its k loop merged with the
  -- GEMM's, so it reads the shared A tile each k step loads (tc_gemm_row_sums.lua)
  if o.row_sums then
    ko = require("tir.schedules.tc_gemm_row_sums").fuse(sch, o, wz, ko, {{"threadIdx.y", wm}, {"threadIdx.z", wn}, {"threadIdx.x", 32}}, P)
  end
  sch:compute_at(AS, ko); sch:compute_at(BS, ko)
  -- cooperative 16-byte copies of the shared tiles by all warps (tma: one TMA copy per tile,
  -- inject_tma_pipeline; the copy's loops stay as compute_at left them)
  for _, b in ipairs(o.tma and {} or {AS, BS}) do
    local l = {sch:get_loops(b)}
    local f = sch:fuse(l[#l - 1], l[#l])
    local outer, ty, tz, tx, v = sch:split(f, {nil, wm, wn, 32, o.vec})
    sch:bind(ty, "threadIdx.y"); sch:bind(tz, "threadIdx.z"); sch:bind(tx, "threadIdx.x")
    sch:vectorize(v)
    if o.unroll then sch:unroll(outer) end
  end
  local init = sch:decompose_reduction(C, ko)
  -- tensorize: fragment loads, the multiply-accumulate, the init, the store
  local function unroll(loop)
    local f = sch:get(loop)
    if o.unroll and f.thread_tag == "" then sch:unroll(loop) end
  end
  -- the two inner loops of blk split into r x c tiles; returns the loop over the tile
  local function tile2(blk, r, c)
    local l = {sch:get_loops(blk)}
    local a0, a1 = sch:split(l[#l - 1], {nil, r})
    local b0, b1 = sch:split(l[#l], {nil, c})
    sch:reorder(a0, b0, a1, b1)
    unroll(a0); unroll(b0)
    return a1
  end
  local function swap_last(blk)
    local nd = #sch:get(blk).writes[1].buffer.shape
    sch:transform_layout(blk, {"write", 0}, function(...) local x = {...} x[nd - 1], x[nd] = x[nd], x[nd - 1] return table.unpack(x) end)
  end
  -- an operand stored transposed: its fragment buffer gets the mma's orientation (rows x k for A,
  -- k x columns for B), and the load is the transposing one.  The copy loops keep the order of
  -- the operand's global layout: A (m, k) or (k, m), B (k, n) or (n, k).  8-bit operands and
  -- ldmatrix (.trans moves 16-bit units only): an A stored k x m or a B stored k x n has its
  -- shared tile made k-major by the copy into shared memory, and a plain ldmatrix loads it (the
  -- _smem_t intrinsics; docs/TENSOR_CORES.md says why)
  local load_a, load_b = I.load_a, (o.intrin == "mma" and wide) and I.load_b_smem_t or I.load_b
  local ra, ca, rb, cb = tm, tk, tk, tn
  if ta then
    swap_last(AF)
    ra, ca = tk, tm
    if o.intrin == "mma" and wide then
      swap_last(AS)
      load_a = I.load_a_smem_t
    else
      load_a = I.load_a_trans
    end
  end
  if tb then
    swap_last(BF)
    rb, cb = tn, tk
    load_b = I.load_b_trans
  elseif o.intrin == "mma" and wide then
    swap_last(BS)
  end
  local LA = sch:tensorize(tile2(AF, ra, ca), load_a)
  local LB = sch:tensorize(tile2(BF, rb, cb), load_b)
  sch:tensorize(i16, I.sync)
  local il = {sch:get_loops(init)}
  unroll(il[#il - 3]); unroll(il[#il - 2])
  sch:tensorize(il[#il - 1], I.fill)
  if atomic then
    -- the sum's init (the zeroed tile) split off before the slices' loop, its loops over the
    -- CTA's threads; lower_grid_tail moves it behind the tail (the last CTA resets the tile)
    require("tir.schedules.tc_gemm_split_k").schedule_zero_atomic(sch, sch:decompose_reduction(CFB, bz), wm, wn, P)
    -- ordered: the last slice's CTA adds after the others arrived (lower_grid_tail's tir_grid_wait)
    if o.split_k_ordered then sch:annotate(bz, "grid_last_waits", 1) end
  end
  local ST = sch:tensorize(tile2(CFB, tm, tn), store_intrin)
  local ks = o.BK // tk
  if o.frag_prefetch then
    local why = o.stages < 3 and ("stages = %d (the next tile is waited for one stage early: stages >= 3)"):format(o.stages)
                or ks % 2 ~= 0 and ("BK = %d has %d k%d steps (an odd count puts the next tile's first fragments on the version this " ..
                                    "tile's last mma reads)"):format(o.BK, ks, tk)
                or o.row_sums and "row_sums (its k step has more statements)" or o.tma and "tma = true (an mbarrier pipeline)"
                or (not o.early_wait) and "early_wait = false"
    if why then raise("ValueError", P, "frag_prefetch = true needs stages >= 3, an even number of instruction k steps per BK tile, cp.async " ..
                      "copies with early_wait and no row_sums; here: %s", why) end
  end
  -- copy_order nil = auto: "step" under frag_prefetch with 4 or more k steps a tile (256x128x64, 3
  -- stages, 4096^3 on the H200: 479.9 / 482.2 -> 501.9 TFLOP/s; "spread" 493.2), else "top"
  if o.copy_order == nil then o.copy_order = (o.frag_prefetch and ks >= 4) and "step" or "top" end
  if o.copy_order ~= "top" and not (o.frag_prefetch and ks >= 4) then
    raise("ValueError", P, "copy_order = %q places the copies between the fragment loads of a BK tile's k steps: it needs frag_prefetch " ..
          "= true and at least 4 instruction k steps per BK tile (here %d of k%d, frag_prefetch = %s)", o.copy_order, ks, tk,
          tostring(o.frag_prefetch))
  end
  if (o.frag_pipeline or o.frag_prefetch) and ks > 1 then
    -- fragments of the next k step load while this step's mma run (a nested pipeline:
    -- the warp buffers get two versions)
    sch:annotate(ki, "software_pipeline_stage", {0, 0, 1})
    sch:annotate(ki, "software_pipeline_order", {0, 1, 2})
    -- copy_order other than "top": the steady state one instance per k step, so that the k-step
    -- pipeline can put its copies between them
    if o.copy_order ~= "top" then sch:annotate(ki, "software_pipeline_unroll", 1) end
  else
    unroll(ki)
  end
  unroll(wi); unroll(wj)
  -- each fragment tile contiguous (one wmma fragment / a 32nd of a warp tile per lane)
  local function tiled(tr, tc)
    return function(...)
      local x = {...}
      local n = #x
      local r, c = x[n - 1], x[n]
      x[n - 1], x[n], x[n + 1], x[n + 2] = r // tr, c // tc, r % tr, c % tc
      return table.unpack(x)
    end
  end
  sch:transform_layout(LA, {"write", 0}, tiled(tm, tk))
  sch:transform_layout(LB, {"write", 0}, tiled(tk, tn))
  -- (the accumulator: the store's first read; the atomic store's other read is its destination)
  local acc_read = 0
  for q, rg in ipairs(sch:get(ST).reads) do if rg.buffer.scope == I.scope_c then acc_read = q - 1 end end
  sch:transform_layout(ST, {"read", acc_read}, tiled(tm, tn))
  -- shared layouts against bank conflicts: rows padded by 16 bytes (storage_align: row strides
  -- of 16 mod 64 bytes), so the 8 rows an ldmatrix phase reads (and wmma's loads) fall in 8
  -- different 16-byte bank groups.  (An XOR swizzle through transform_layout would dissolve the
  -- tensorized views, which the interpreter then cannot check; see transform_layout.c.)  The
  -- row axis is the second-to-last: a batched operand's stage ([batch, rows, k], amos mappings
  -- with a batch dimension) keeps its batch stride, which padded would move every tile off
  -- wmma's 32-byte alignment.
  local function row_axis(b) return #sch:get(b).writes[1].buffer.shape - 2 end
  if o.intrin == "wmma" and wide then
    -- 8-bit wmma: load_matrix_sync needs 32-byte aligned tile pointers, and a 16-element column
    -- offset is 16 bytes; the shared tiles are stored fragment by fragment instead (each
    -- contiguous, ldm = its width; validate checked the width)
    sch:transform_layout(AS, {"write", 0}, ta and tiled(tk, tm) or tiled(tm, tk))
    sch:transform_layout(BS, {"write", 0}, tb and tiled(tn, tk) or tiled(tk, tn))
  elseif o.swizzle and o.intrin == "mma" and not o.tma then -- (TMA tiles: the PTX modes below)
    -- XOR-swizzled instead (storage_swizzle; CUTLASS's and Triton's layout): the 16-byte chunks
    -- of 8 consecutive rows spread over the 8 bank groups, no padding, and each 32-byte global
    -- sector a cp.async copies lands in one 32-byte shared sector.  An 8-bit operand that the
    -- copy transposes into k-major order (A stored k x m, B stored k x n) is stored element by
    -- element, which a swizzle of 16-byte chunks cannot follow: that tile stays padded.
    local core = require("tir.core")
    local a_cols = (ta and not wide) and o.BM or o.BK
    local b_cols = (tb or wide) and o.BK or o.BN
    local a_mode, b_mode = core.swizzle_for_rows(a_cols * esize), core.swizzle_for_rows(b_cols * esize)
    if a_mode and not (ta and wide) then sch:storage_swizzle(AS, 0, a_mode)
    else sch:storage_align(AS, 0, row_axis(AS), 64 // esize, 16 // esize) end
    if b_mode and not (wide and not tb) then sch:storage_swizzle(BS, 0, b_mode)
    else sch:storage_align(BS, 0, row_axis(BS), 64 // esize, 16 // esize) end
  elseif o.pad then
    sch:storage_align(AS, 0, row_axis(AS), 64 // esize, 16 // esize)
    sch:storage_align(BS, 0, row_axis(BS), 64 // esize, 16 // esize)
  end
  if CS and o.intrin == "mma" and o.pad then
    -- the staged accumulators: mma_store writes 8 rows x 4 lanes of 8 bytes per instruction;
    -- rows BN * 4 bytes apart put all 8 rows on the same banks (8-way conflicts).  Rows
    -- padded to 32 mod 128 bytes: 2 wavefronts per 256-byte store, the minimum
    sch:storage_align(ST, 0, 0, 32, 8)
  end
  if reduce and o.split_k_mode == "parallel" then
    require("tir.schedules.tc_gemm_split_k").schedule_reduce(sch, reduce, epilogue or o.writeback, 256, P)
  elseif o.writeback and not reduce then
    local D = sch:get_block(o.writeback)
    local f = sch:fuse(sch:get_loops(D))
    local bxd, txd = sch:split(f, {nil, 256})
    sch:bind(bxd, "blockIdx.x"); sch:bind(txd, "threadIdx.x")
  end
  if o.tma then
    -- a tile whose rows are 32, 64 or 128 bytes gets that PTX swizzle mode (storage_swizzle): the
    -- TMA box lands swizzled and ldmatrix reads its 8 rows from 8 different bank groups
    local function swz(b, inner)
      local bytes = inner * esize
      if o.swizzle and (bytes == 32 or bytes == 64 or bytes == 128) then sch:storage_swizzle(b, 0, ("%dB"):format(bytes)) end
    end
    swz(AS, ta and o.BM or o.BK); swz(BS, tb and o.BK or o.BN)
    sch:annotate(AS, "tma_copy", 1); sch:annotate(BS, "tma_copy", 1)
    sch:annotate(ko, "tma_pipeline_stages", o.stages)
  elseif o.stages > 1 then
    -- row_sums: the k step is (A copy, row sums, B copy, mma); the sums, like the
    -- multiply-accumulate, read the tiles loaded stages - 1 steps ago; both copies go first
    if o.row_sums then
      sch:annotate(ko, "software_pipeline_stage", {0, o.stages - 1, 0, o.stages - 1})
      sch:annotate(ko, "software_pipeline_order", {0, 2, 1, 3})
    elseif o.frag_prefetch then
      -- the k step is (A copy, B copy, the fragment pipeline's statements: load_a(0), load_b(0),
      -- then [load_a(1), load_b(1), mma(0)] for 2 k16 steps or the steady-state loop, and
      -- mma(last)); the first fragments one stage early, emitted after the steady state
      local S = o.stages
      if o.copy_order ~= "top" then
        -- statements: copy A, copy B, load_a(0), load_b(0), then per k step j = 0 .. ks - 2
        -- [load_a(j + 1), load_b(j + 1), mma(j)], then mma(ks - 1).  Emitted: the second step's
        -- loads, the copies ("spread": B's after the third step's loads, CUTLASS's groups), mma(0),
        -- the other steps, then the next tile's first loads (after the one wait) and mma(ks - 1).
        -- The copies still precede this tile's last loads, so the tiles keep S versions: a copy
        -- overwrites the tile read before the previous iteration's barrier.
        local n = 3 * ks + 2
        local stage, order = {}, {}
        for i = 1, n do stage[i] = S - 1 end
        stage[1], stage[2], stage[3], stage[4] = 0, 0, S - 2, S - 2
        local emit = {}
        local function step(j) -- body indices (0-based) of k step j's statements
          return 4 + 3 * j, 5 + 3 * j, 6 + 3 * j
        end
        local la1, lb1, mma0 = step(0)
        emit[#emit + 1] = la1; emit[#emit + 1] = lb1; emit[#emit + 1] = 0
        if o.copy_order == "step" then emit[#emit + 1] = 1 end
        emit[#emit + 1] = mma0
        for j = 1, ks - 2 do
          local la, lb, mm = step(j)
          emit[#emit + 1] = la; emit[#emit + 1] = lb
          if j == 1 and o.copy_order == "spread" then emit[#emit + 1] = 1 end
          emit[#emit + 1] = mm
        end
        emit[#emit + 1] = 2; emit[#emit + 1] = 3; emit[#emit + 1] = n - 1
        for pos, idx in ipairs(emit) do order[idx + 1] = pos - 1 end
        sch:annotate(ko, "software_pipeline_stage", stage)
        sch:annotate(ko, "software_pipeline_order", order)
      elseif ks == 2 then
        sch:annotate(ko, "software_pipeline_stage", {0, 0, S - 2, S - 2, S - 1, S - 1, S - 1, S - 1})
        sch:annotate(ko, "software_pipeline_order", {0, 1, 5, 6, 2, 3, 4, 7})
      else
        sch:annotate(ko, "software_pipeline_stage", {0, 0, S - 2, S - 2, S - 1, S - 1})
        sch:annotate(ko, "software_pipeline_order", {0, 1, 3, 4, 2, 5})
      end
      sch:annotate(ko, "software_pipeline_nested", 1)
    else
      sch:annotate(ko, "software_pipeline_stage", {0, 0, o.stages - 1})
      sch:annotate(ko, "software_pipeline_order", {0, 1, 2})
    end
    sch:annotate(ko, "software_pipeline_async_stages", {0})
    -- unroll_stages: the k-tile loop unrolled by its tiles' version count, every stage offset a
    -- constant (modulo variable expansion) instead of a register advanced with a wrap
    if o.unroll_stages then sch:annotate(ko, "software_pipeline_modulo_expand", 1) end
    -- one wait at the top of each k step (CUTLASS's count, stages - 2): then one barrier per step
    if o.early_wait then sch:annotate(ko, "software_pipeline_early_wait", o.frag_prefetch and 2 or 1) end
  end
  if o.tuned then return sch, config, config_key end
  return sch
end

function M.schedule(func, opts) return schedule(func, opts, "tc_gemm.schedule") end

--- The shared-memory tile of the GEMM block C's read buffer `index` (tc_gemm's mma path and
-- tc_gemm_wgmma): the block named `stage` (a producer the caller made, e.g. conv2d_tc's im2col
-- gather or a padded copy) moved to "shared", else a new cache_read of C's read `index`.
-- Raises TypeError for a sch that is not a Schedule, a stage that is not a block name or an index
-- that is not a non-negative integer (the primitives check the rest).
function M.shared_stage(sch, C, stage, index)
  if getmetatable(sch) ~= require("tir").Schedule or (stage ~= nil and type(stage) ~= "string")
     or math.type(index) ~= "integer" or index < 0 then
    raise("TypeError", "tc_gemm.shared_stage", "takes (sch, C, stage, index): a Schedule, the GEMM block, a block name " ..
          "or nil and a read index (integer >= 0), got (%s, %s, %s, %s)", util.describe(sch), util.describe(C),
          util.describe(stage), util.describe(index))
  end
  if not stage then return sch:cache_read(C, index, "shared") end
  local blk = sch:get_block(stage)
  sch:set_scope(blk, 0, "shared")
  return blk
end

-- SMs to fill when no GPU answers: the H200 / H100 SXM's 132
M.DEFAULT_SM_COUNT = 132

--- A persistent grid over the ny x nx output tiles of the CTA loops by (M tiles) and bx (N tiles)
-- of sch (tc_gemm's mma path and tc_gemm_wgmma): G CTAs, CTA b computing tiles b, b + G, ... in an
-- order grouped by grp rows of tiles for L2 reuse (tile t = (row group, column, row in group): the
-- G tiles in flight at once share A rows and B columns; Triton's GROUP_M, CUTLASS's tile
-- scheduler).  G divides the tile count (no tail predicate) and is a divisor of an inner part of
-- (ny / grp, nx, grp), so that the tile -> (row, column) map stays affine (bind checks TVM's compact
-- data flow); grp (8, 4, 2 or 1, dividing ny) and G are picked for the most CTAs not above `want`,
-- then the widest group (4096 x 11008 with 128 x 256 tiles: grp 2, G = 86).  The CTA loop is bound
-- to blockIdx.x; returns the serial tile loop (outside the threadIdx loops) and G.
-- exact (a primitive's name, or nil): want is the user's own CTA count (tc_gemm's persistent = G),
-- so a G other than want is a ValueError from that primitive listing the counts that work, instead
-- of a smaller grid chosen silently (persistent = true passes nil: the most CTAs up to the SMs).
function M.persistent_tiles(sch, by, bx, ny, nx, want, exact, cluster)
  for _, v in ipairs({ny or false, nx or false, want or false}) do
    if math.type(v) ~= "integer" or v < 1 then
      raise("TypeError", "tc_gemm.persistent_tiles", "takes (sch, by, bx, ny, nx, want): a Schedule, its M and N tile loops, " ..
            "the tile counts and a CTA count (positive integers), got %s", util.describe(v))
    end
  end
  local G, grp = M.persistent_grid(ny, nx, want, cluster)
  if exact and G ~= want then
    -- the CTA counts that work: for some group, the product of inner dims times a divisor of the next
    local ok, list = {}, {}
    for _, gr in ipairs({8, 4, 2, 1}) do
      if ny % gr == 0 then
        local dims, inner = {ny // gr, nx, gr}, 1
        for q = 3, 1, -1 do
          for d = 1, dims[q] do if dims[q] % d == 0 then ok[inner * d] = true end end
          inner = inner * dims[q]
        end
      end
    end
    for g in pairs(ok) do list[#list + 1] = g end
    table.sort(list)
    raise("ValueError", exact, "persistent = %d: the %d x %d = %d output tiles have no persistent grid of %d CTAs (each CTA walks " ..
          "the same number of tiles, no tail); counts that work: %s (or persistent = true)", want, ny, nx, ny * nx, want,
          table.concat(list, ", "))
  end
  local byo, byi = sch:split(by, {nil, grp})
  local t
  if cluster and cluster[2] > 1 then -- the cn columns of a cluster innermost
    local bxo, bxi = sch:split(bx, {nil, cluster[2]})
    sch:reorder(byo, bxo, byi, bxi)
    t = sch:fuse(byo, bxo, byi, bxi)
  else
    sch:reorder(byo, bx, byi)
    t = sch:fuse(byo, bx, byi)
  end
  local tile, cta = sch:split(t, {nil, G})
  sch:reorder(cta, tile)
  sch:bind(cta, "blockIdx.x")
  return tile, G
end

--- persistent_tiles' grid for ny x nx tiles and at most `want` CTAs, without a schedule: returns
-- G (the CTAs; a divisor of ny * nx) and grp (the rows of tiles a group, 8, 4, 2 or 1).
-- cluster = {cm, cn} (optional; tc_gemm_wgmma's thread-block clusters): each cm x cn block of
-- tiles goes to consecutive CTAs, cn columns fastest (tile t = ((row group, column / cn, row in
-- group), column % cn), so CTA b's rank in its cluster of cm cn is b % (cm cn)): grp a multiple of
-- cm, G of cm cn, or a ValueError.
function M.persistent_grid(ny, nx, want, cluster)
  for _, v in ipairs({ny or false, nx or false, want or false}) do
    if math.type(v) ~= "integer" or v < 1 then
      raise("TypeError", "tc_gemm.persistent_grid", "takes (ny, nx, want): the tile counts and a CTA count (positive integers), got %s",
            util.describe(v))
    end
  end
  local cm, cn = cluster and cluster[1] or 1, cluster and cluster[2] or 1
  local function best(dims) -- the largest G <= want of the form (product of inner dims) * (divisor of the next), whole clusters
    local g, inner = 0, 1
    for q = #dims, 1, -1 do
      for d = 1, dims[q] do
        if dims[q] % d == 0 and inner * d <= want and inner * d > g and inner * d % (cm * cn) == 0 then g = inner * d end
      end
      inner = inner * dims[q]
    end
    return g
  end
  local G, grp = 0, 1
  for _, gr in ipairs({8, 4, 2, 1}) do
    if ny % gr == 0 and gr % cm == 0 and nx % cn == 0 then
      local g = best(cn > 1 and {ny // gr, nx // cn, gr, cn} or {ny // gr, nx, gr})
      if g > G then G, grp = g, gr end
    end
  end
  if G == 0 then
    raise("ValueError", "tc_gemm.persistent_grid", "no persistent grid of at most %d CTAs for %d x %d tiles in clusters of %d x %d " ..
          "(the tile rows must split into groups of a multiple of %d, the columns into %d, the CTAs into whole clusters)", want, ny, nx,
          cm, cn, cm, cn)
  end
  return G, grp
end

local function device_sm_count()
  local core = require("tir.core")
  local ok = core.cuda_available and core.cuda_available()
  if ok then
    local okd, info = pcall(core.cuda_device_info, 0)
    if okd and type(info) == "table" and math.type(info.sm_count) == "integer" and info.sm_count > 0 then return info.sm_count end
  end
  return M.DEFAULT_SM_COUNT
end
M.device_sm_count = device_sm_count

--- The CTA tile auto_tensorize takes for an (batch x) m x n output on sm_count SMs: the
-- largest BM x BN (from 128, 64, 32, 16, dividing m and n) whose grid has at least one CTA
-- per SM; when no tile gets there, the tile with the most CTAs not smaller than 32 x 32
-- (one mma.sync warp per 16 x 16 tile would leave the SMs starved of work per CTA), or
-- the smallest tile when even that is not available.  Split-K is not used (it needs a
-- reduction across CTAs).  Returns BM, BN and the number of CTAs.
function M.pick_tiles(batch, m, n, sm_count)
  local vals = {batch, m, n}
  for i, name in ipairs({"batch", "m", "n"}) do
    if math.type(vals[i]) ~= "integer" or vals[i] < 1 then
      raise("TypeError", "tc_gemm.pick_tiles", "%s must be a positive integer, got %s", name, util.show(vals[i]))
    end
  end
  if sm_count ~= nil and (math.type(sm_count) ~= "integer" or sm_count < 1) then
    raise("TypeError", "tc_gemm.pick_tiles", "sm_count must be a positive integer, got %s", util.show(sm_count))
  end
  local cands = {}
  for _, bm in ipairs({128, 64, 32, 16}) do
    for _, bn in ipairs({128, 64, 32, 16}) do
      if m % bm == 0 and n % bn == 0 then
        cands[#cands + 1] = {bm = bm, bn = bn, ctas = batch * (m // bm) * (n // bn)}
      end
    end
  end
  -- larger area first; among equal areas the squarer tile (less operand traffic per flop)
  table.sort(cands, function(a, b)
    if a.bm * a.bn ~= b.bm * b.bn then return a.bm * a.bn > b.bm * b.bn end
    if math.abs(a.bm - a.bn) ~= math.abs(b.bm - b.bn) then return math.abs(a.bm - a.bn) < math.abs(b.bm - b.bn) end
    return a.bm > b.bm
  end)
  for _, c in ipairs(cands) do
    if c.ctas >= sm_count then return c.bm, c.bn, c.ctas end
  end
  local best
  for _, c in ipairs(cands) do
    if c.bm * c.bn >= 32 * 32 and (not best or c.ctas > best.ctas) then best = c end
  end
  best = best or cands[#cands]
  if not best then
    raise("ValueError", "tc_gemm.pick_tiles", "no CTA tile of 16..128 divides m = %d and n = %d (pad them to multiples of 16)", m, n)
  end
  return best.bm, best.bn, best.ctas
end

--- The split-K slice count for `tiles` output tiles of a K-deep reduction in BK steps on sm_count
-- SMs: the S in 1..8 whose busiest SM has the least work, ceil(tiles * S / sm_count) slices of
-- ceil(K / (S * BK)) steps (K padded to whole slices) plus SLICE_COST steps a slice (the pipeline's
-- fill and the partial tile's store), the smaller S on a tie.  86 tiles, K = 4096, BK 64, 132 SMs:
-- S = 3 (2 x (22 + 2) steps on the busiest SM; S = 2: 2 x 34, S = 4: 3 x 18, none: 66).
M.SLICE_COST = 2
function M.split_k_for(tiles, K, BK, sm_count)
  local vals = {tiles, K, BK, sm_count}
  for i = 1, 4 do
    local v = vals[i]
    if math.type(v) ~= "integer" or v < 1 then
      raise("TypeError", "tc_gemm.split_k_for", "%s must be a positive integer, got %s", ({"tiles", "K", "BK", "sm_count"})[i], util.show(v))
    end
  end
  local best, cost
  for S = 1, 8 do
    local steps = (K + S * BK - 1) // (S * BK)
    local c = ((tiles * S + sm_count - 1) // sm_count) * (steps + (S > 1 and M.SLICE_COST or 0))
    if steps >= 1 and (not cost or c < cost) then best, cost = S, c end
  end
  return best
end

-- small-M splits summed by split_k_mode = "atomic" in auto_tensorize (when it can be; else "parallel").
-- Off: measured slower on the H200 (128 x 11008 x 4096, 3 slices: 0.053 ms ordered / 0.051 in arrival
-- order against 0.041 for the parallel mode; 16 x 11008 x 4096: 0.029 against 0.028 -- L2 performs the
-- fp32 reds slower than plain partial stores plus the summing kernel; bench/RESULTS.md "Stop 12 (hM)")
M.SMALL_M_ATOMIC = false

local INSTR = {["mma.m16n8k16"] = "mma", ["mma.m16n8k32"] = "mma", mma = "mma", ["wmma.m16n16k16"] = "wmma", ["wmma.m32n8k16"] = "wmma",
               ["wmma.m8n32k16"] = "wmma", wmma = "wmma"}

--- Auto-tensorization (TVM users know it from MetaSchedule's tensor-core rules): schedules a
-- matmul-like block of `func` (or of a Schedule) onto tensor cores with tiles chosen from its shape.
--   instr: "mma.m16n8k16" (mma.sync + ldmatrix), "wmma.m16n16k16", or "wgmma" (sm_90a: K-major
--   operands, tc_gemm_wgmma.pick's tiles and pipeline for the shape; extra: tc_gemm_wgmma's options
--   and sm_count; the returned options' config is the pick's reason); block: its name (default "C").
--   extra: options of tc_gemm.schedule that override the chosen ones, and sm_count (the SMs
--   to fill; default the device's, M.DEFAULT_SM_COUNT without a GPU).
-- The block may have batch dimensions (bound to blockIdx.z) and either operand transposed; its
-- M, N, K extents must be multiples of 16 (use M.workload(..., pad) for other shapes), its
-- dtypes a row of M.SUPPORTED.  Tiles: the tuning database's for this GEMM (or the nearest
-- tuned shape; tc_gemm_tune.lookup; extra.tuned = false skips it, extra.db / extra.target pick
-- the database and target), else M.pick_tiles (enough CTAs for the SMs; for M = 16 or 32 an
-- M x 128 tile, BK 64 and split_k up to 2 CTAs per SM; for M = 128 a 128 x 128 x 64 tile in M.split_k_for
-- slices, K padded to whole slices).  Returns the Schedule
-- and the options it chose, with ctas (the main kernel's grid size), config (which it used:
-- "tuned <key>", "nearest <key>" or "defaults (<why>)") and config_key (the workload key).
function M.auto_tensorize(func, instr, block, extra)
  local P = "tc_gemm.auto_tensorize"
  if instr ~= nil and type(instr) ~= "string" then raise("TypeError", P, "instr must be a string such as \"mma.m16n8k16\", got %s", util.show(instr)) end
  if instr == "wgmma" then -- Hopper (sm_90a): tc_gemm_wgmma.pick's configuration for the shape
    local W = require("tir.schedules.tc_gemm_wgmma")
    if block ~= nil and type(block) ~= "string" then raise("TypeError", P, "block must be a block name, got %s", util.show(block)) end
    local spec = {sm_count = "positive"}
    for k, v in pairs(W.OPTS) do spec[k] = v end
    extra = util.check_opts(P, extra, spec)
    if extra.intrin ~= nil and extra.intrin ~= "wgmma" then
      raise("ValueError", P, "instr \"wgmma\" with extra.intrin = %s: leave intrin out", util.show(extra.intrin))
    end
    local sch = as_schedule(func, P)
    local opts = {intrin = "wgmma", block = block}
    for k, v in pairs(extra) do if k ~= "sm_count" then opts[k] = v end end
    local sms = extra.sm_count or device_sm_count()
    local info = analyze(sch, sch:get_block(block or "C"), P)
    local o, why = W.resolve(sch, opts, P, analyze, sms)
    local out = W.schedule(sch, o, P, analyze)
    local ext = info.extents
    local tiles = (ext[#ext - 2] // o.BM) * (ext[#ext - 1] // o.BN)
    o.ctas = o.persistent and (o.persistent == true and M.persistent_grid(ext[#ext - 2] // o.BM, ext[#ext - 1] // o.BN, sms) or
             M.persistent_grid(ext[#ext - 2] // o.BM, ext[#ext - 1] // o.BN, o.persistent)) or tiles
    o.sm_count, o.config = sms, why
    return out, o
  end
  local intrin = INSTR[instr or "mma.m16n8k16"]
  if not intrin then
    raise("ValueError", P, "unknown instruction %s (mma.m16n8k16, mma.m16n8k32, wmma.m16n16k16, wmma.m32n8k16, wmma.m8n32k16, wgmma)",
          util.show(instr))
  end
  if block ~= nil and type(block) ~= "string" then raise("TypeError", P, "block must be a block name, got %s", util.show(block)) end
  local spec = {sm_count = "positive"}
  for k, v in pairs(SCHEDULE_OPTS) do spec[k] = v end
  extra = util.check_opts(P, extra, spec)
  require("tir.intrin.cuda")
  local sch = as_schedule(func, P)
  local blk = sch:get_block(block or "C")
  local info = analyze(sch, blk, P)
  local ext = info.extents
  for q = 1, #ext do
    if not ext[q] then raise("ValueError", P, "block '%s': the extents must be constants", info.name) end
  end
  local nb = #ext
  local m, n, k = ext[nb - 2], ext[nb - 1], ext[nb]
  -- the inputs' dtypes pick the intrinsics (M.SUPPORTED); a named instruction must be theirs
  local row
  for _, r in ipairs(M.SUPPORTED) do
    if not row and r.intrin == intrin and (instr == nil or instr == intrin or r.instr == instr) and r.in_dtype == info.a_dtype and
       r.b_dtype == info.b_dtype and r.acc_dtype == info.c_dtype then
      row = r
    end
  end
  if not row then
    raise("TypeError", P, "block '%s' multiplies %s%s into %s, which %s does not run; supported: %s", info.name, info.a_dtype,
          info.a_dtype ~= info.b_dtype and (" by " .. info.b_dtype) or "", info.c_dtype, instr or "mma.m16n8k16", supported_text())
  end
  local tk = intrinsics(row).tile[3]
  for q, v in ipairs({m, n, k}) do
    if v % (q == 3 and tk or 16) ~= 0 then
      raise("ValueError", P, "M, N, K = %d, %d, %d must be multiples of 16, 16, %d (build the workload with tc_gemm.workload(..., pad))", m, n,
            k, tk)
    end
  end
  local batch = 1
  for q = 1, nb - 3 do batch = batch * ext[q] end
  local sms = extra.sm_count or device_sm_count()
  local o = {intrin = intrin, block = block, dtype = info.a_dtype}
  if row.intrin == "wmma" and (row.shape[1] ~= 16 or row.shape[2] ~= 16) then o.wmma_shape = row.shape end
  local ctas
  o.BM, o.BN, ctas = M.pick_tiles(batch, m, n, sms)
  if tk == 32 then o.BK = k % 64 == 0 and 64 or 32 else o.BK = k % 32 == 0 and 32 or 16 end
  o.warp_m = math.min(64, o.BM); o.warp_n = math.min(64, o.BN)
  if o.BM * o.BN <= 64 * 64 then o.warp_m, o.warp_n = math.max(16, o.BM // 2), math.max(16, o.BN // 2) end
  if o.wmma_shape then
    -- warp tiles of whole fragments (m32n8: 32 rows; m8n32: 32 columns)
    o.warp_m = math.max(o.warp_m, row.shape[1]); o.warp_n = math.max(o.warp_n, row.shape[2])
    if o.BM % o.warp_m ~= 0 or o.BN % o.warp_n ~= 0 then
      raise("ValueError", P, "M, N = %d, %d give %dx%d tiles, which do not hold whole %s warp tiles", m, n, o.BM, o.BN, row.instr)
    end
  end
  o.stages = k // o.BK >= 3 and 3 or 1
  -- M = 16 or 32 with 16-bit inputs: the GEMM is bound by reading B (16 x 11008 x 4096 moves
  -- 90 MB for 1.4 GFLOP).  The H200's best (bench/RESULTS.md "Small M", the tuner's pick too):
  -- an M x 128 CTA of 16 x 32 warp tiles with a 64-deep k tile (3 stages), and split-K until
  -- there are 2 CTAs per SM (31.2 us against 34.0 unsplit, 80 with the 32-deep 4-stage tile).
  -- Split 2, 4 or 8, keeping >= 6 BK steps per slice.  (K < 1024: too little to stream; the
  -- pick above keeps its smaller tiles and more CTAs.)
  local bn_small = n % 128 == 0 and 128 or (n % 64 == 0 and 64 or nil)
  -- how small-M splits are summed: red.global.add into a zeroed tile that the last CTA casts
  -- (split_k_mode = "atomic", one launch) where it can be -- fp16 inputs and an epilogue block to cast
  -- into (tc_gemm_split_k.check_atomic) --, else the parallel mode's second kernel
  local function small_m_mode(S)
    if S > 1 and M.SMALL_M_ATOMIC and info.a_dtype == "float16" and info.b_dtype == "float16" and extra.epilogue and batch == 1 then
      return "atomic"
    end
  end
  if tk == 16 and intrin == "mma" and (m == 16 or m == 32) and k >= 1024 and k % 64 == 0 and bn_small then
    o.BM, o.BN, o.warp_m, o.warp_n = m, bn_small, m, 32
    o.BK, o.stages = 64, k // 64 >= 3 and 3 or 1
    -- the slices as for M = 128 (M.split_k_for, K padded to whole slices): 16 x 11008 x 4096 in 3
    -- slices, 1.020x cuBLAS against 0.968x for the earlier pick's 4 (H200, bench/RESULTS.md "Stop 12 (hM)")
    -- (at least 6 BK steps a slice: fewer slices where K is short)
    local S = M.split_k_for(batch * (n // bn_small), k, 64, sms)
    while S > 1 and (k + S * 64 - 1) // (S * 64) < 6 do S = S - 1 end
    if S > 1 then o.split_k, o.split_k_mode = S, small_m_mode(S) end
    -- CUTLASS's main loop (frag_prefetch, copy_order "step"): 52.7 against 51.9 TFLOP/s (0.992x cuBLAS;
    -- H200 stop 12 batch 3); not where the caller chose the pipeline
    local own_loop = false
    for _, key in ipairs({"BK", "stages", "early_wait", "tma", "row_sums", "frag_pipeline", "frag_prefetch"}) do
      if extra[key] ~= nil then own_loop = true end
    end
    if o.stages >= 3 and not own_loop then o.frag_prefetch = true end
  end
  -- the picks below were measured on plain GEMMs (no staged operand blocks, the caller's tiles
  -- and pipeline left to us): bench/RESULTS.md, issue 12, run 2 (H200)
  local plain = true
  for _, key in ipairs({"BM", "BN", "BK", "warp_m", "warp_n", "stages", "split_k", "split_k_mode", "tma", "persistent", "row_sums", "early_wait",
                        "frag_pipeline", "frag_prefetch", "copy_order", "unroll_stages", "a_stage", "b_stage", "writeback", "stage_epilogue"}) do
    if extra[key] ~= nil then plain = false end
  end
  -- M = 128 with 16-bit inputs and N in the thousands: 128 x 128 x 64 CTAs of 4 warps of 64 x 64,
  -- 3 stages (2 CTAs an SM), split-K into M.split_k_for slices (K padded to whole slices:
  -- tc_gemm_split_k.pad_k): 128 x 11008 x 4096 in 3 slices, 0.041 ms against 0.045 for 64 x 128
  -- tiles in 2 slices (H200, bench/RESULTS.md "Issue 12, stop 10" and "stop 11")
  -- stop 12 (batch 3): with CUTLASS's main loop (frag_prefetch; copy_order "step") 289.2 TFLOP/s against
  -- 283.4 (0.678x / 0.661x cuBLAS); atomic sums measured slower (M.SMALL_M_ATOMIC)
  if plain and tk == 16 and intrin == "mma" and m == 128 and n >= 4096 and n % 128 == 0 and k >= 1024 and k % 64 == 0 then
    o.BM, o.BN, o.warp_m, o.warp_n, o.BK, o.stages, o.frag_prefetch = 128, 128, 64, 64, 64, 3, true
    local S = M.split_k_for(batch * (n // 128), k, 64, sms)
    o.split_k = S > 1 and S or nil
    if S > 1 then o.split_k_mode = small_m_mode(S) end
  end
  -- large 16-bit GEMMs (at least 3 waves of 256 x 128 tiles): 8 warps of 64 x 64 with the
  -- CUTLASS main loop (frag_prefetch), 3 stages: 445.5 / 407.9 / 437.6 / 468.0 TFLOP/s at 4096^3,
  -- 8192^3, 4096x11008x4096, 4096x4096x11008 with BK 32 against 439.3 / 384.1 / 423.8 / 447.4 for
  -- the 128 x 128 x 32 3-stage pick; BK 64 where K has 3 such steps: 476.4 (batch 1; 471 in batch
  -- 2) against 448.6 for BK 32 in the same run at 4096^3, 422.2 at 8192^3 (0.62-0.64x cuBLAS, H200,
  -- bench/RESULTS.md "Issue 12, stop 10"); stop 11: 475.4 at 4096^3, 467.7 / 488.7 at 4096x11008x4096 /
  -- 4096x4096x11008 (0.67x / 0.65x); 4 stages +0.2 % at 4096^3 but -1.5 % at 4096x11008x4096 and 192 KB of
  -- shared memory (more than an A100 has): 3 stages.  Stop 12: copy_order "step" (the default under
  -- frag_prefetch with BK 64) 475.5 -> 491.5 at 4096^3, 455.3 -> 481.8 at 4096x11008x4096; 4 stages then
  -- lose 3 %, 128x256 ties (bench/RESULTS.md "Stop 12 (hS)")
  if plain and tk == 16 and intrin == "mma" and m % 256 == 0 and n % 128 == 0 and k % 32 == 0 and k // 32 >= 3 and
     batch * (m // 256) * (n // 128) >= 3 * sms then
    o.BM, o.BN, o.warp_m, o.warp_n, o.BK, o.stages, o.frag_prefetch = 256, 128, 64, 64, 32, 3, true
    if k % 64 == 0 and k // 64 >= 3 then o.BK = 64 end
  end
  -- a tuned configuration of this GEMM (or of the nearest tuned shape) replaces the pick
  local config, config_key = "defaults (tuned = false)", nil
  if extra.tuned ~= false then
    local p
    p, config, config_key = require("tir.schedules.tc_gemm_tune").lookup(sch, info, intrin, {db = extra.db, target = extra.target})
    -- a record is a whole configuration: the pick's split-K and main loop do not stay
    if next(p) then o.frag_prefetch, o.split_k, o.split_k_mode = p.frag_prefetch, p.split_k, p.split_k_mode end
    for key, v in pairs(p) do o[key] = v end
  end
  -- the copies need whole vectors per thread: fewer elements per vector on small tiles
  local threads = (o.BM // o.warp_m) * (o.BN // o.warp_n) * 32
  local esize = tonumber(info.a_dtype:match("%d+$")) // 8
  o.vec = o.vec or 16 // esize
  while o.vec > 1 and (o.BM * o.BK % (threads * o.vec) ~= 0 or o.BN * o.BK % (threads * o.vec) ~= 0) do o.vec = o.vec // 2 end
  local own = {sm_count = true, tuned = true, db = true, target = true}
  for key, v in pairs(extra) do if not own[key] then o[key] = v end end
  local out = schedule(sch, o, P)
  ctas = batch * (m // o.BM) * (n // o.BN) * (o.split_k or 1)
  o.ctas, o.sm_count, o.config, o.config_key = ctas, sms, config, config_key
  return out, o
end

for _, k in ipairs({"workload", "schedule", "auto_tensorize", "pick_tiles", "split_k_for", "supported"}) do M[k] = util.strict("tc_gemm." .. k, M[k]) end

return M
