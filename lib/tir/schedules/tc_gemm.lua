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
-- the copies become cp.async).
local M = {}

M.defaults = {intrin = "mma", BM = 128, BN = 128, BK = 32, warp_m = 64, warp_n = 64, vec = 8, stages = 1, pad = true,
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
function M.workload(Mx, N, K, dtype, out_dtype, pad)
  local tir = require("tir")
  local te = tir.te
  local A = te.placeholder({Mx, K}, dtype or "float16", "A")
  local B = te.placeholder({K, N}, dtype or "float16", "B")
  local function up(x, m) return (x + m - 1) // m * m end
  local Mp, Np, Kp = Mx, N, K
  if pad then Mp, Np, Kp = up(Mx, pad[1]), up(N, pad[2]), up(K, pad[3]) end
  if Mp == Mx and Np == N and Kp == K then
    local k = te.reduce_axis({0, K}, "k")
    local C = te.compute({Mx, N}, function(i, j) return te.sum(te.cast("float32", A[{i, k}]) * te.cast("float32", B[{k, j}]), {k}) end, "C")
    if out_dtype == "float16" then
      local D = te.compute({Mx, N}, function(i, j) return te.cast("float16", C[{i, j}]) end, "D")
      return te.create_prim_func({A, B, D})
    end
    return te.create_prim_func({A, B, C})
  end
  local zero = tir.const(0, dtype or "float16")
  local Ap = te.compute({Mp, Kp}, function(i, k)
    return tir.core.call(dtype or "float16", "if_then_else", tir.And(tir.lt(i, Mx), tir.lt(k, K)), A[{i, k}], zero)
  end, "A_pad")
  local Bp = te.compute({Kp, Np}, function(k, j)
    return tir.core.call(dtype or "float16", "if_then_else", tir.And(tir.lt(k, K), tir.lt(j, N)), B[{k, j}], zero)
  end, "B_pad")
  local k = te.reduce_axis({0, Kp}, "k")
  local C = te.compute({Mp, Np}, function(i, j) return te.sum(te.cast("float32", Ap[{i, k}]) * te.cast("float32", Bp[{k, j}]), {k}) end, "C")
  local D = te.compute({Mx, N}, function(i, j) return te.cast(out_dtype or "float32", C[{i, j}]) end, "D")
  return te.create_prim_func({A, B, D})
end

--- Schedules the "C" block of M.workload (or an equivalent T script); returns the Schedule.
-- opts override M.defaults; epilogue = "D" fuses that cast block into the store.
function M.schedule(func, opts)
  local tir = require("tir")
  require("tir.intrin.cuda")
  local o = {}
  for k, v in pairs(M.defaults) do o[k] = v end
  for k, v in pairs(opts or {}) do
    if M.defaults[k] == nil and k ~= "epilogue" then error("tc_gemm: unknown option " .. tostring(k), 2) end
    o[k] = v
  end
  local I = assert(INTRIN[o.intrin], "tc_gemm: intrin must be \"mma\" or \"wmma\"")(o.dtype)
  local wm, wn = o.BM // o.warp_m, o.BN // o.warp_n
  if o.BM % o.warp_m ~= 0 or o.BN % o.warp_n ~= 0 or o.warp_m % 16 ~= 0 or o.warp_n % 16 ~= 0 or o.BK % 16 ~= 0 then
    error(("tc_gemm: need BM %% warp_m == 0, BN %% warp_n == 0, warp tiles and BK multiples of 16 (BM=%d BN=%d BK=%d warp %dx%d)")
      :format(o.BM, o.BN, o.BK, o.warp_m, o.warp_n), 2)
  end
  local sch = tir.Schedule(func)
  local C = sch:get_block("C")
  local padded = pcall(function() return sch:get_block("A_pad") end)
  local AS, BS
  if padded then
    -- the padding stages are the shared tiles; the padded C is a workspace, D a second kernel
    AS, BS = sch:get_block("A_pad"), sch:get_block("B_pad")
    sch:set_scope(AS, 0, "shared"); sch:set_scope(BS, 0, "shared")
    o.epilogue = nil
  else
    AS = sch:cache_read(C, 1, "shared")
    BS = sch:cache_read(C, 2, "shared")
  end
  local AF = sch:cache_read(C, 1, I.scope_a)
  local BF = sch:cache_read(C, 2, I.scope_b)
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
  local i, j, k = sch:get_loops(C)
  local by, wy, wi, i16 = sch:split(i, {nil, wm, o.warp_m // 16, 16})
  local bx, wz, wj, j16 = sch:split(j, {nil, wn, o.warp_n // 16, 16})
  local ko, ki, k16 = sch:split(k, {nil, o.BK // 16, 16})
  sch:reorder(by, bx, wy, wz, ko, ki, wi, wj, i16, j16, k16)
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
  local LA = sch:tensorize(tile2(AF), I.load_a)
  local LB = sch:tensorize(tile2(BF), I.load_b)
  sch:tensorize(i16, I.sync)
  local il = {sch:get_loops(init)}
  unroll(il[#il - 3]); unroll(il[#il - 2])
  sch:tensorize(il[#il - 1], I.fill)
  local ST = sch:tensorize(tile2(CFB), store_intrin)
  unroll(ki); unroll(wi); unroll(wj)
  -- each 16x16 fragment tile contiguous (one wmma fragment / 8 registers per lane)
  local tiled = function(r, c) return r // 16, c // 16, r % 16, c % 16 end
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
  end
  return sch
end

return M
