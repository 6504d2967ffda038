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
--   shared rows padded by 16 bytes (pad) so ldmatrix / wmma loads are free of bank conflicts.
-- stages > 1 software-pipelines the BK loop (annotations read by inject_software_pipeline;
-- the copies become cp.async); early_wait waits once at the top of each k step, so that one
-- barrier per step suffices.
local M = {}

M.defaults = {intrin = "mma", BM = 128, BN = 128, BK = 32, warp_m = 64, warp_n = 64, vec = 8, stages = 1, early_wait = true, frag_pipeline = false, pad = true,
              dtype = "float16", epilogue = nil, unroll = true}

local INTRIN = {
  mma = function(t)
    local s = t == "bfloat16" and "bf16" or "f16"
    return {scope_a = "warp", scope_b = "warp", scope_c = "warp", load_a = "mma_ldmatrix_16x16_" .. s .. "_a",
            load_b = "mma_ldmatrix_16x16_" .. s .. "_b", sync = "mma_sync_16x16x16_" .. s .. "f32", fill = "mma_fill_16x16_f32",
            store = "mma_store_16x16_f32_global", store_f16 = "mma_store_16x16_f32_f16_global"}
  end,
  wmma = function(t)
    if t ~= "float16" then error("tc_gemm: the wmma intrinsics here take float16 inputs", 3) end
    return {scope_a = "wmma.matrix_a", scope_b = "wmma.matrix_b", scope_c = "wmma.accumulator", load_a = "wmma_load_16x16x16_f16_a",
            load_b = "wmma_load_16x16x16_f16_b", sync = "wmma_sync_16x16x16_f16f16f32", fill = "wmma_fill_16x16x16_f32",
            store = "wmma_store_16x16x16_f32_global", store_shared = "wmma_store_16x16x16_f32_shared"}
  end,
}

--- The te workload: returns a PrimFunc computing C (and D = cast(out_dtype, C) when out_dtype
-- is "float16"), with blocks "C" (and "D").
-- pad = {BM, BN, BK}: when the extents are not multiples of these, the computation runs on
-- padded extents (TVM's pad_einsum): stages "A_pad"/"B_pad" read A/B or 0 outside them (they
-- become the shared tiles, loaded with predicates), "C" is a padded fp32 workspace, and "D"
-- (M x N; cast to out_dtype, or a copy) reads what the caller asked for.
function M.workload(Mx, N, K, dtype, out_dtype, pad, layout)
  local tir = require("tir")
  local te = tir.te
  layout = layout or "NN"
  local ta, tb = layout:sub(1, 1) == "T", layout:sub(2, 2) == "T"
  -- A is M x K ("N") or K x M ("T"); B is K x N ("N") or N x K ("T")
  local A = te.placeholder(ta and {K, Mx} or {Mx, K}, dtype or "float16", "A")
  local B = te.placeholder(tb and {N, K} or {K, N}, dtype or "float16", "B")
  local function a_at(X, i, k) return ta and X[{k, i}] or X[{i, k}] end
  local function b_at(X, k, j) return tb and X[{j, k}] or X[{k, j}] end
  local function up(x, m) return (x + m - 1) // m * m end
  local Mp, Np, Kp = Mx, N, K
  if pad then Mp, Np, Kp = up(Mx, pad[1]), up(N, pad[2]), up(K, pad[3]) end
  if Mp == Mx and Np == N and Kp == K then
    local k = te.reduce_axis({0, K}, "k")
    local C = te.compute({Mx, N}, function(i, j)
      return te.sum(te.cast("float32", a_at(A, i, k)) * te.cast("float32", b_at(B, k, j)), {k})
    end, "C")
    if out_dtype == "float16" then
      local D = te.compute({Mx, N}, function(i, j) return te.cast("float16", C[{i, j}]) end, "D")
      return te.create_prim_func({A, B, D})
    end
    return te.create_prim_func({A, B, C})
  end
  local zero = tir.const(0, dtype or "float16")
  local function guarded(X, r, c, R, Cc)
    return tir.core.call(dtype or "float16", "if_then_else", tir.And(tir.lt(r, R), tir.lt(c, Cc)), X[{r, c}], zero)
  end
  local Ap = ta and te.compute({Kp, Mp}, function(k, i) return guarded(A, k, i, K, Mx) end, "A_pad")
              or te.compute({Mp, Kp}, function(i, k) return guarded(A, i, k, Mx, K) end, "A_pad")
  local Bp = tb and te.compute({Np, Kp}, function(j, k) return guarded(B, j, k, N, K) end, "B_pad")
              or te.compute({Kp, Np}, function(k, j) return guarded(B, k, j, K, N) end, "B_pad")
  local k = te.reduce_axis({0, Kp}, "k")
  local C = te.compute({Mp, Np}, function(i, j)
    return te.sum(te.cast("float32", a_at(Ap, i, k)) * te.cast("float32", b_at(Bp, k, j)), {k})
  end, "C")
  local D = te.compute({Mx, N}, function(i, j) return te.cast(out_dtype or "float32", C[{i, j}]) end, "D")
  return te.create_prim_func({A, B, D})
end

-- The roles in a matmul-like block: C[b.., i, j] (+)= A[b.., i|k, k|i] * B[b.., k|j, j|k] with casts;
-- returns {a_index, b_index (read positions), layout "NN".."TT", loops = {batch.., i, j, k} (LoopRVs)}.
local function analyze(sch, blk)
  local tir = require("tir")
  local b = sch:get(blk)
  local ivs = b.iter_vars
  local role = {}
  local reads = b.reads
  local wbuf = b.writes[1] and b.writes[1].buffer
  if #b.writes ~= 1 then
    error(("tc_gemm: block '%s' is not matmul-like (it must write one buffer)"):format(b.name), 3)
  end
  -- a block with an init reads A, B (TVM's read rule); without one (an update block) C, A, B
  local ops = {}
  for r = 1, #reads do
    if reads[r].buffer ~= wbuf then ops[#ops + 1] = {index = r - 1, region = reads[r]} end
  end
  if #ops ~= 2 then error(("tc_gemm: block '%s' must read two operands besides its output"):format(b.name), 3) end
  local function vars_of(region)
    local out = {}
    for d = 1, #region.region do
      local mn = region.region[d].min
      local found
      for q = 1, #ivs do if mn == ivs[q].var then found = q end end
      if not found then error(("tc_gemm: block '%s': operand %s is not indexed by plain iteration variables"):format(b.name,
        region.buffer.name), 4) end
      out[d] = found
    end
    return out
  end
  local wv = vars_of(b.writes[1])
  local av, bv = vars_of(ops[1].region), vars_of(ops[2].region)
  local function has(list, q) for _, x in ipairs(list) do if x == q then return true end end return false end
  local kq
  for q = 1, #ivs do if ivs[q].iter_type == 2 then kq = q end end
  if not kq then error(("tc_gemm: block '%s' has no reduction variable"):format(b.name), 3) end
  local iq, jq = wv[#wv - 1], wv[#wv]
  local batch = {}
  for d = 1, #wv - 2 do batch[#batch + 1] = wv[d] end
  -- operand roles: A uses i and k, B uses k and j (swap if given the other way round)
  if has(av, jq) and has(bv, iq) then av, bv, ops[1], ops[2] = bv, av, ops[2], ops[1] end
  if not (has(av, iq) and has(av, kq) and has(bv, jq) and has(bv, kq)) then
    error(("tc_gemm: block '%s': cannot tell which operand is A (rows, k) and which is B (k, columns)"):format(b.name), 3)
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
    if not lfor[q] then error(("tc_gemm: block '%s': iteration variable %d is not bound to one loop (apply the schedule before other loop transformations)"):format(b.name, q), 3) end
  end
  local order = {}
  for _, q in ipairs(batch) do order[#order + 1] = lfor[q] end
  order[#order + 1], order[#order + 2], order[#order + 3] = lfor[iq], lfor[jq], lfor[kq]
  return {a_index = ops[1].index, b_index = ops[2].index, layout = la .. lb, batch = #batch, loops = order}
end
M.analyze = analyze

--- Schedules the "C" block of M.workload (or an equivalent T script); returns the Schedule.
-- opts override M.defaults; epilogue = "D" fuses that cast block into the store.
function M.schedule(func, opts)
  local tir = require("tir")
  require("tir.intrin.cuda")
  local o = {}
  for k, v in pairs(M.defaults) do o[k] = v end
  for k, v in pairs(opts or {}) do
    if M.defaults[k] == nil and k ~= "epilogue" and k ~= "block" then error("tc_gemm: unknown option " .. tostring(k), 2) end
    o[k] = v
  end
  local I = assert(INTRIN[o.intrin], "tc_gemm: intrin must be \"mma\" or \"wmma\"")(o.dtype)
  local wm, wn = o.BM // o.warp_m, o.BN // o.warp_n
  if o.BM % o.warp_m ~= 0 or o.BN % o.warp_n ~= 0 or o.warp_m % 16 ~= 0 or o.warp_n % 16 ~= 0 or o.BK % 16 ~= 0 then
    error(("tc_gemm: need BM %% warp_m == 0, BN %% warp_n == 0, warp tiles and BK multiples of 16 (BM=%d BN=%d BK=%d warp %dx%d)")
      :format(o.BM, o.BN, o.BK, o.warp_m, o.warp_n), 2)
  end
  local sch = getmetatable(func) == tir.Schedule and func or tir.Schedule(func)
  local C = sch:get_block(o.block or "C")
  local info = analyze(sch, C)
  local ta, tb = info.layout:sub(1, 1) == "T", info.layout:sub(2, 2) == "T"
  local padded = pcall(function() return sch:get_block("A_pad") end)
  local AS, BS
  if padded then
    -- the padding stages are the shared tiles; the padded C is a workspace, D a second kernel
    AS, BS = sch:get_block("A_pad"), sch:get_block("B_pad")
    sch:set_scope(AS, 0, "shared"); sch:set_scope(BS, 0, "shared")
    o.epilogue = nil
  else
    AS = sch:cache_read(C, info.a_index, "shared")
    BS = sch:cache_read(C, info.b_index, "shared")
  end
  local AF = sch:cache_read(C, info.a_index, I.scope_a)
  local BF = sch:cache_read(C, info.b_index, I.scope_b)
  local CF = sch:cache_write(C, 0, I.scope_c)
  local store_intrin = I.store
  local CS -- wmma with an epilogue: accumulators staged in shared memory, then cast by all lanes
  if o.epilogue then
    sch:reverse_compute_inline(o.epilogue) -- the write-back block now computes D = cast(C)
    if I.store_f16 then
      store_intrin = I.store_f16 -- the cast fused into the fragment store
    else
      CS = sch:cache_read(CF, 0, "shared")
      store_intrin = I.store_shared
    end
  end
  info = analyze(sch, C)
  local lp = info.loops
  local i, j, k = lp[#lp - 2], lp[#lp - 1], lp[#lp]
  local by, wy, wi, i16 = sch:split(i, {nil, wm, o.warp_m // 16, 16})
  local bx, wz, wj, j16 = sch:split(j, {nil, wn, o.warp_n // 16, 16})
  local ko, ki, k16 = sch:split(k, {nil, o.BK // 16, 16})
  local order = {}
  for q = 1, info.batch do order[#order + 1] = lp[q] end
  for _, l in ipairs({by, bx, wy, wz, ko, ki, wi, wj, i16, j16, k16}) do order[#order + 1] = l end
  sch:reorder(table.unpack(order))
  if info.batch > 0 then
    local bz = info.batch > 1 and sch:fuse(table.unpack(order, 1, info.batch)) or lp[1]
    sch:bind(bz, "blockIdx.z")
  end
  sch:bind(by, "blockIdx.y"); sch:bind(bx, "blockIdx.x")
  sch:bind(wy, "threadIdx.y"); sch:bind(wz, "threadIdx.z")
  sch:compute_at(AF, ki); sch:compute_at(BF, ki)
  sch:compute_at(AS, ko); sch:compute_at(BS, ko)
  local CFB = CF -- with an epilogue, the write-back block now computes it
  if CS then
    sch:reverse_compute_at(CS, wz)
    sch:reverse_compute_at(CF, wz)
    -- the cast from the staged tile: 32 lanes, vec-wide
    local l = {sch:get_loops(CF)}
    local f = sch:fuse(l[#l - 1], l[#l])
    local outer, tx, v = sch:split(f, {nil, 32, o.vec})
    sch:bind(tx, "threadIdx.x"); sch:vectorize(v)
    if o.unroll then sch:unroll(outer) end
    CFB = CS
  else
    sch:reverse_compute_at(CFB, wz)
  end
  -- cooperative 16-byte copies of the shared tiles by all warps
  for _, b in ipairs({AS, BS}) do
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
  local function tile2(blk)
    local l = {sch:get_loops(blk)}
    local a0, a1 = sch:split(l[#l - 1], {nil, 16})
    local b0, b1 = sch:split(l[#l], {nil, 16})
    sch:reorder(a0, b0, a1, b1)
    unroll(a0); unroll(b0)
    return a1
  end
  -- an operand stored transposed: its fragment buffer gets the mma's orientation (rows x k for A,
  -- k x columns for B), and the load is the transposing one
  local load_a, load_b = I.load_a, I.load_b
  if ta then
    local nd = #sch:get(AF).writes[1].buffer.shape
    sch:transform_layout(AF, {"write", 0}, function(...) local x = {...} x[nd - 1], x[nd] = x[nd], x[nd - 1] return table.unpack(x) end)
    load_a = I.load_a .. "_trans"
  end
  if tb then
    local nd = #sch:get(BF).writes[1].buffer.shape
    sch:transform_layout(BF, {"write", 0}, function(...) local x = {...} x[nd - 1], x[nd] = x[nd], x[nd - 1] return table.unpack(x) end)
    load_b = I.load_b .. "_trans"
  end
  local LA = sch:tensorize(tile2(AF), load_a)
  local LB = sch:tensorize(tile2(BF), load_b)
  sch:tensorize(i16, I.sync)
  local il = {sch:get_loops(init)}
  unroll(il[#il - 3]); unroll(il[#il - 2])
  sch:tensorize(il[#il - 1], I.fill)
  local ST = sch:tensorize(tile2(CFB), store_intrin)
  if o.frag_pipeline and o.BK // 16 > 1 then
    -- fragments of the next 16-deep step load while this step's mma run (a nested pipeline:
    -- the warp buffers get two versions)
    sch:annotate(ki, "software_pipeline_stage", {0, 0, 1})
    sch:annotate(ki, "software_pipeline_order", {0, 1, 2})
  else
    unroll(ki)
  end
  unroll(wi); unroll(wj)
  -- each 16x16 fragment tile contiguous (one wmma fragment / 8 registers per lane)
  local tiled = function(...)
    local x = {...}
    local n = #x
    local r, c = x[n - 1], x[n]
    x[n - 1], x[n], x[n + 1], x[n + 2] = r // 16, c // 16, r % 16, c % 16
    return table.unpack(x)
  end
  sch:transform_layout(LA, {"write", 0}, tiled)
  sch:transform_layout(LB, {"write", 0}, tiled)
  sch:transform_layout(ST, {"read", 0}, tiled)
  -- shared layouts against bank conflicts: rows padded by 16 bytes (storage_align), so the 8
  -- rows an ldmatrix phase reads (and wmma's loads) fall in 8 different 16-byte bank groups.
  -- (An XOR swizzle through transform_layout would dissolve the tensorized views, which the
  -- interpreter then cannot check; see transform_layout.c.)
  if o.pad then
    sch:storage_align(AS, 0, 0, 32, 8)
    sch:storage_align(BS, 0, 0, 32, 8)
  end
  if padded then
    local D = sch:get_block("D")
    local l = {sch:get_loops(D)}
    local f = sch:fuse(l[1], l[2])
    local bxd, txd = sch:split(f, {nil, 256})
    sch:bind(bxd, "blockIdx.x"); sch:bind(txd, "threadIdx.x")
  end
  if o.stages > 1 then
    sch:annotate(ko, "software_pipeline_stage", {0, 0, o.stages - 1})
    sch:annotate(ko, "software_pipeline_order", {0, 1, 2})
    sch:annotate(ko, "software_pipeline_async_stages", {0})
    -- one wait at the top of each k step (CUTLASS's count, stages - 2): then one barrier per step
    if o.early_wait then sch:annotate(ko, "software_pipeline_early_wait", 1) end
  end
  return sch
end

--- Auto-tensorization (TVM users know it from MetaSchedule's tensor-core rules): schedules a
-- matmul-like block of `func` (or of a Schedule) onto tensor cores with tiles chosen from its shape.
--   instr: "mma.m16n8k16" (mma.sync + ldmatrix) or "wmma.m16n16k16"; block: its name (default "C").
-- The block may have batch dimensions (bound to blockIdx.z) and either operand transposed; its
-- M, N, K extents must be multiples of 16 (use M.workload(..., pad) for other shapes).  Returns
-- the Schedule and the options it chose.
function M.auto_tensorize(func, instr, block, extra)
  local tir = require("tir")
  local intrin = ({["mma.m16n8k16"] = "mma", mma = "mma", ["wmma.m16n16k16"] = "wmma", wmma = "wmma"})[instr or "mma.m16n8k16"]
  if not intrin then error(("auto_tensorize: unknown instruction %q (mma.m16n8k16, wmma.m16n16k16)"):format(tostring(instr)), 2) end
  local sch = getmetatable(func) == tir.Schedule and func or tir.Schedule(func)
  local blk = sch:get_block(block or "C")
  local info = analyze(sch, blk)
  local ext = {}
  for q = #info.loops - 2, #info.loops do
    local e = sch:get(info.loops[q]).extent
    ext[#ext + 1] = math.tointeger(tonumber(tostring(e)))
    if not ext[#ext] then error("auto_tensorize: the block's extents must be constants", 2) end
  end
  local m, n, k = ext[1], ext[2], ext[3]
  for _, v in ipairs({m, n, k}) do
    if v % 16 ~= 0 then
      error(("auto_tensorize: M, N, K = %d, %d, %d must be multiples of 16 (build the workload with tc_gemm.workload(..., pad))")
        :format(m, n, k), 2)
    end
  end
  local function pick(x, cands) for _, c in ipairs(cands) do if x % c == 0 then return c end end end
  local o = {intrin = intrin, block = block}
  -- the inputs' dtype picks the intrinsics: fp16 (mma and wmma) or bf16 (mma), fp32 accumulation
  local b = sch:get(blk)
  local in_dt = b.reads[info.a_index + 1].buffer.dtype
  local out_dt = b.writes[1].buffer.dtype
  if (in_dt ~= "float16" and in_dt ~= "bfloat16") or (in_dt == "bfloat16" and intrin ~= "mma") or out_dt ~= "float32" then
    error(("auto_tensorize: block '%s' multiplies %s into %s; the intrinsics here take float16 (or bfloat16 with mma.m16n8k16) "
      .. "inputs and accumulate in float32"):format(b.name, in_dt, out_dt), 2)
  end
  o.dtype = in_dt
  o.BM = pick(m, {128, 64, 32, 16}); o.BN = pick(n, {128, 64, 32, 16}); o.BK = pick(k, {32, 16})
  o.warp_m = math.min(64, o.BM); o.warp_n = math.min(64, o.BN)
  if o.BM * o.BN <= 64 * 64 then o.warp_m, o.warp_n = math.max(16, o.BM // 2), math.max(16, o.BN // 2) end
  o.stages = k // o.BK >= 3 and 3 or 1
  for key, v in pairs(extra or {}) do o[key] = v end
  return M.schedule(sch, o), o
end

return M
