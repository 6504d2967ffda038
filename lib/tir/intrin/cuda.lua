--- tir.intrin.cuda: tensor intrinsics for NVIDIA GPUs, registered in tir.TensorIntrin on require.
--
-- Each intrinsic is a desc (semantics: loops around one block, over buffers in given scopes) and
-- an impl (builtin calls the CUDA codegen knows; see docs/BUILTINS.md).  The intrinsics are
-- generated per row of the core's instruction table (tir.core.mma_configs(), include/tir/mma.h),
-- the way TVM's python/tvm/tir/tensor_intrin/cuda.py get_mma_intrin(k_dim, out_dtype,
-- b_transposed) generates them; names follow TVM's where one exists.  <t> is the row's PTX input
-- type (f16, bf16, s8, u8), <acc> its accumulator (f32, s32).
--
-- WMMA (CUDA C++ API nvcuda::wmma; PTX ISA 9.7.14 "Warp Level Matrix Multiply-Accumulate
-- Instructions", wmma.load/wmma.mma/wmma.store), a row of shape m x n x k:
--   wmma_load_<m>x<n>x<k>_<t>_a / _b      shared [m,k] / [k,n] (row-major)  -> wmma.matrix_a / _b
--   wmma_load_<m>x<n>x<k>_<t>_{a,b}_trans operands stored transposed (col_major fragments)
--   wmma_sync_<m>x<n>x<k>_<a><b><acc>    C[m,n] += A[m,k] * B[k,n] (accumulated in acc)
--   wmma_fill_<m>x<n>x<k>_<acc>          wmma.accumulator [m,n] = 0
--   wmma_store_<m>x<n>x<k>_<acc>_shared / _global   wmma.accumulator -> [m,n]
-- A fragment buffer's tiles must each be contiguous (e.g. a warp's 32x32 accumulator laid out
-- [2, 2, 16, 16]: transform_layout); the codegen declares one fragment per tile.
--
-- mma.sync (PTX ISA 9.7.14.5 "Matrix multiply-accumulate operation using mma instruction"), a row
-- m16n8k, operands in "warp" buffers filled by ldmatrix (PTX ISA 9.7.14.5.15).  The warp tile is
-- 16 x 16 (two instructions along n) and k deep (16 for 16-bit inputs, 32 for 8-bit):
--   mma_ldmatrix_16x<k>_<t>_a        shared [16,k] row-major (m x k)    -> warp   (ldmatrix.x4)
--   mma_ldmatrix_16x<k>_<t>_b        shared [k,16] row-major (k x n)    -> warp   (ldmatrix.x4.trans)
--   mma_ldmatrix_16x<k>_<t>_a_trans / _b_trans: the operand stored transposed (A as k x m, B as
--                                    n x k); desc D[j, i] = S[i, j]
--   mma_sync_16x16x<k>_<t><acc>      C[16,16] += A * B   (inputs of one type; else _<a><b><acc>)
--   mma_fill_16x16_<acc>             C = 0
--   mma_store_16x16_<acc>_<scope>    warp acc -> [16,16] acc (shared or global)
--   mma_store_16x16_f32_f16_<scope>  warp f32 -> [16,16] f16, the cast fused into the store
--   mma_store_add_16x16_<acc>_global global [16,16] acc += warp acc (red.global.add per element)
-- ldmatrix moves 16-byte rows of b16 units and transposes b16 units only (PTX ISA 9.7.14.5.15:
-- .trans with .b16), so 8-bit operands must be k-major in shared memory: the 8-bit rows have _a
-- (A m x k) and _b_trans (B stored n x k), and _a_smem_t / _b_smem_t for an A stored k x m or a B
-- stored k x n whose copy into shared memory made the tile k-major (lib/tir/schedules/tc_gemm.lua
-- does that; docs/TENSOR_CORES.md says why).
-- A warp buffer's tiles must each be contiguous (transform_layout (r, c) -> (r // 16, c // k, r %
-- 16, c % k) for A; (r // k, c // 16, r % k, c % 16) for B; 16x16 for C); each lane keeps a 32nd
-- of a tile.  ldmatrix's per-lane row addresses: lane l gives row l % 16, byte column 16 (l // 16)
-- of the tile, so matrices 0..3 are (rows 0-7, bytes 0-15), (8-15, 0-15), (0-7, 16-31),
-- (8-15, 16-31): for A exactly registers a0..a3 of the fragment; for B stored k x n (.trans) b0,b1
-- of the first n8 tile and b0,b1 of the second; B stored n x k (no .trans): lane l gives row
-- (l % 8) + 8 (l // 16), byte column 16 ((l // 8) % 2).
local tir = require("tir")
local util = require("tir.util")
local T = tir.script
local M = {}

local function region(buf, r, c) return buf[{{0, r}, {0, c}}] end

-- an [r, c] buffer parameter; `strided` gives it a symbolic row stride (the leading dimension
-- a load/store needs), bound to the viewed buffer's actual stride by lower_match_buffer
local function buf(r, c, dtype, scope, strided)
  local opts = {scope = scope, offset_factor = 16}
  if strided then opts.strides = {tir.var("ld", "int32"), 1} end
  return T.Buffer({r, c}, dtype, opts)
end

local function register(name, desc, impl) tir.TensorIntrin.register(name, desc, impl, true) end

-- copy intrinsics over r x c: D[i, j] = S[i, j], or D[j, i] = S[i, j] (`trans`: an operand stored
-- transposed, A as k x m, B as n x k); S is r x c, D c x r when transposed.  `loops_dst`: the
-- loops run over (c, r) instead -- the nest of a fragment load whose shared tile the copy into
-- shared memory transposed (8-bit operands made k-major), which still iterates in the order of
-- the operand's global layout
local function copy_desc(name, r, c, src_dt, src_scope, dst_dt, dst_scope, trans, loops_swapped)
  local dr, dc = r, c
  if trans then dr, dc = c, r end
  local e1, e2 = r, c
  if loops_swapped then e1, e2 = c, r end
  return T.prim_func(name, {S = buf(r, c, src_dt, src_scope), D = buf(dr, dc, dst_dt, dst_scope)}, function(S, D)
    T.block("root", function()
      T.reads(region(S, r, c))
      T.writes(region(D, dr, dc))
      for i, j in T.grid(e1, e2) do
        T.block("copy", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          if loops_swapped then vi, vj = vj, vi end -- (vi, vj) index S
          if trans then D[{vj, vi}] = S[{vi, vj}] else D[{vi, vj}] = S[{vi, vj}] end
        end)
      end
    end)
  end)
end

-- C[m, n] += acc(A[m, k]) * acc(B[k, n]) over the given scopes; `call(A, B, C)` is the impl's body
local function sync_pair(name, m, n, kd, row, scopes, call)
  local function sig()
    return {A = buf(m, kd, row.a, scopes[1]), B = buf(kd, n, row.b, scopes[2]), C = buf(m, n, row.c, scopes[3])}
  end
  local desc = T.prim_func(name, sig(), function(A, B, C)
    T.block("root", function()
      T.reads(region(C, m, n), region(A, m, kd), region(B, kd, n))
      T.writes(region(C, m, n))
      for i, j, k in T.grid(m, n, kd) do
        T.block("update", function()
          local vi, vj, vk = T.axis.remap("SSR", {i, j, k})
          C[{vi, vj}] = C[{vi, vj}] + T.cast(row.c, A[{vi, vk}]) * T.cast(row.c, B[{vk, vj}])
        end)
      end
    end)
  end)
  local impl = T.prim_func(name .. "_impl", sig(), function(A, B, C)
    T.block("root", function()
      T.reads(region(C, m, n), region(A, m, kd), region(B, kd, n))
      T.writes(region(C, m, n))
      T.evaluate(call(A, B, C))
    end)
  end)
  register(name, desc, impl)
end

-- C[m, n] = 0; `call(C)` is the impl's body
local function fill_pair(name, m, n, dtype, scope, call)
  local desc = T.prim_func(name, {C = buf(m, n, dtype, scope)}, function(C)
    T.block("root", function()
      T.reads()
      T.writes(region(C, m, n))
      for i, j in T.grid(m, n) do
        T.block("init", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          C[{vi, vj}] = tir.const(0, dtype)
        end)
      end
    end)
  end)
  local impl = T.prim_func(name .. "_impl", {C = buf(m, n, dtype, scope)}, function(C)
    T.block("root", function()
      T.reads()
      T.writes(region(C, m, n))
      T.evaluate(call(C))
    end)
  end)
  register(name, desc, impl)
end

-- D[m, n] = cast(out, S[m, n]) from an accumulator to memory (desc block `blk`); `call(S, D)` is
-- the impl's body.  `add`: D[m, n] += S[m, n] instead (out = acc), D in a zeroed global temporary
-- (scope "global.zeroed"): the update of a sum over CTAs (red.global.add; mma_store's "add" mode,
-- docs/BUILTINS.md)
local function store_pair(name, blk, m, n, acc, src_scope, out, dst_scope, call, add)
  local function sig(strided) return {S = buf(m, n, acc, src_scope), D = buf(m, n, out, dst_scope, strided)} end
  local function regions(S, D)
    if add then T.reads(region(D, m, n), region(S, m, n)) else T.reads(region(S, m, n)) end
    T.writes(region(D, m, n))
  end
  local desc = T.prim_func(name, sig(false), function(S, D)
    T.block("root", function()
      regions(S, D)
      for i, j in T.grid(m, n) do
        T.block(blk, function()
          local vi, vj = T.axis.remap("SS", {i, j})
          if add then D[{vi, vj}] = D[{vi, vj}] + S[{vi, vj}]
          elseif out == acc then D[{vi, vj}] = S[{vi, vj}] else D[{vi, vj}] = T.cast(out, S[{vi, vj}]) end
        end)
      end
    end)
  end)
  local impl = T.prim_func(name .. "_impl", sig(true), function(S, D)
    T.block("root", function()
      regions(S, D)
      T.evaluate(call(S, D))
    end)
  end)
  register(name, desc, impl)
end

-- wgmma_store_64x<n>_<acc>[_f16]_shared_box<b>: the 64 x n accumulator -> a shared tile [n / b, 64, b]
-- of b-column boxes (b = 128 bytes of the output), the layout of n / b TMA store boxes of 128-byte
-- rows (its 128-byte swizzle, storage_swizzle on the tile, is applied by wgmma_store itself)
local function store_box_pair(name, n, b, acc, out)
  local function dbuf(strided)
    local o = {scope = "shared", offset_factor = 16}
    if strided then o.strides = {tir.var("bstride", "int32"), tir.var("ld", "int32"), 1} end
    return T.Buffer({n // b, 64, b}, out, o)
  end
  local function dregion(D) return D[{{0, n // b}, {0, 64}, {0, b}}] end
  local desc = T.prim_func(name, {S = buf(64, n, acc, "wgmma.accumulator"), D = dbuf(false)}, function(S, D)
    T.block("root", function()
      T.reads(region(S, 64, n))
      T.writes(dregion(D))
      for i, j in T.grid(64, n) do
        T.block("store", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          if out == acc then D[{vj // b, vi, vj % b}] = S[{vi, vj}] else D[{vj // b, vi, vj % b}] = T.cast(out, S[{vi, vj}]) end
        end)
      end
    end)
  end)
  local impl = T.prim_func(name .. "_impl", {S = buf(64, n, acc, "wgmma.accumulator"), D = dbuf(true)}, function(S, D)
    T.block("root", function()
      T.reads(region(S, 64, n))
      T.writes(dregion(D))
      T.evaluate(T.call("void", "wgmma_wait_group", 0))
      T.evaluate(T.call("void", "wgmma_store", T.address_of(S[{0, 0}]), T.address_of(D[{0, 0, 0}]), D.strides[2], n, D.strides[1]))
    end)
  end)
  register(name, desc, impl)
end

local function sync_suffix(row)
  -- inputs of one float type keep TVM's short form (f16f32); integer rows name both inputs
  if row.ptx_a == row.ptx_b and row.a:match("^b?float") then return row.ptx_a .. row.ptx_c end
  return row.ptx_a .. row.ptx_b .. row.ptx_c
end

local function rows(family)
  local out = {}
  for _, r in ipairs(tir.core.mma_configs()) do
    if r.family == family then out[#out + 1] = r end
  end
  return out
end
M.rows = rows

--- The intrinsic names of a table row (tir.core.mma_configs() entry), for schedules:
-- {load_a, load_b, load_a_trans, load_b_trans (nil where ldmatrix cannot), sync, fill, store =
-- {shared=, global=}, store_f16 = {...} (f32 accumulators of mma.sync), tile = {m, n, k}}.
function M.names(row)
  if type(row) ~= "table" or type(row.family) ~= "string" then
    util.raise("TypeError", "intrin.cuda.names", "row must be a row of tir.mma_configs() (a table with family, m, n, k, ...), got %s", util.describe(row))
  end
  local n = {}
  if row.family == "mma" then
    local k, t = row.k, row.ptx_a
    local tb = row.ptx_b
    local pre = ("mma_ldmatrix_16x%d_"):format(k)
    n.load_a, n.load_b_trans = pre .. t .. "_a", pre .. tb .. "_b_trans"
    if row.a:match("16$") then n.load_a_trans = pre .. t .. "_a_trans" end
    if row.b:match("16$") then n.load_b = pre .. tb .. "_b" end
    if row.a:match("8$") then n.load_a_smem_t = pre .. t .. "_a_smem_t" end
    if row.b:match("8$") then n.load_b_smem_t = pre .. tb .. "_b_smem_t" end
    n.sync = ("mma_sync_16x16x%d_%s"):format(k, sync_suffix(row))
    n.fill = "mma_fill_16x16_" .. row.ptx_c
    n.store = {shared = "mma_store_16x16_" .. row.ptx_c .. "_shared", global = "mma_store_16x16_" .. row.ptx_c .. "_global"}
    n.store_add = "mma_store_add_16x16_" .. row.ptx_c .. "_global"
    if row.c == "float32" then
      n.store_f16 = {shared = "mma_store_16x16_f32_f16_shared", global = "mma_store_16x16_f32_f16_global"}
    end
    n.tile = {16, 16, k}
  else
    local shape = ("%dx%dx%d"):format(row.m, row.n, row.k)
    n.load_a, n.load_b = ("wmma_load_%s_%s_a"):format(shape, row.ptx_a), ("wmma_load_%s_%s_b"):format(shape, row.ptx_b)
    n.load_a_trans, n.load_b_trans = n.load_a .. "_trans", n.load_b .. "_trans"
    n.sync = ("wmma_sync_%s_%s%s%s"):format(shape, row.ptx_a, row.ptx_b, row.ptx_c)
    n.fill = ("wmma_fill_%s_%s"):format(shape, row.ptx_c)
    n.store = {shared = ("wmma_store_%s_%s_shared"):format(shape, row.ptx_c), global = ("wmma_store_%s_%s_global"):format(shape, row.ptx_c)}
    n.tile = {row.m, row.n, row.k}
  end
  return n
end

--- Registers the WMMA intrinsics of every wmma row of the table.
function M.register_wmma()
  for _, row in ipairs(rows("wmma")) do
    local m, n, k = row.m, row.n, row.k
    local names = M.names(row)
    local function load(name, r, c, dt, scope, trans)
      local desc = copy_desc(name, r, c, dt, "shared", dt, scope, trans)
      local dr, dc = r, c
      if trans then dr, dc = c, r end
      local impl = T.prim_func(name .. "_impl", {S = buf(r, c, dt, "shared", true), D = buf(dr, dc, dt, scope)}, function(S, D)
        T.block("root", function()
          T.reads(region(S, r, c))
          T.writes(region(D, dr, dc))
          T.evaluate(T.call("void", "wmma_load", T.address_of(D[{0, 0}]), m, n, k, T.address_of(S[{0, 0}]), S.strides[1],
                            trans and "col_major" or "row_major"))
        end)
      end)
      register(name, desc, impl)
    end
    load(names.load_a, m, k, row.a, "wmma.matrix_a", false)
    load(names.load_b, k, n, row.b, "wmma.matrix_b", false)
    load(names.load_a_trans, k, m, row.a, "wmma.matrix_a", true)
    load(names.load_b_trans, n, k, row.b, "wmma.matrix_b", true)
    local shaped = not (m == 16 and n == 16 and k == 16) -- wmma_mma's shape arguments (16^3 when left out)
    sync_pair(names.sync, m, n, k, row, {"wmma.matrix_a", "wmma.matrix_b", "wmma.accumulator"}, function(A, B, C)
      local args = {T.address_of(C[{0, 0}]), T.address_of(A[{0, 0}]), T.address_of(B[{0, 0}]), T.address_of(C[{0, 0}])}
      if shaped then args[5], args[6], args[7] = m, n, k end
      return T.call("void", "wmma_mma", table.unpack(args))
    end)
    fill_pair(names.fill, m, n, row.c, "wmma.accumulator", function(C)
      return T.call("void", "wmma_fill", T.address_of(C[{0, 0}]), m, n, k, tir.const(0, row.c))
    end)
    for _, scope in ipairs({"shared", "global"}) do
      store_pair(names.store[scope], "copy", m, n, row.c, "wmma.accumulator", row.c, scope, function(S, D)
        return T.call("void", "wmma_store", T.address_of(S[{0, 0}]), m, n, k, T.address_of(D[{0, 0}]), D.strides[1], "row_major")
      end)
    end
  end
end

--- Registers the mma.sync intrinsics (ldmatrix loads, the multiply, fill, stores) of every
-- mma.sync row of the table.
function M.register_mma()
  local done = {}
  for _, row in ipairs(rows("mma")) do
    local k = row.k
    local names = M.names(row)
    -- ldmatrix: `trans` the instruction's .trans; `stored_t` the operand stored transposed
    local function ldm(name, dt, rows_, cols_, trans, stored_t, loops_swapped)
      if done[name] then return end
      done[name] = true
      local unit = 16 // (tonumber(dt:match("%d+$")) // 8) -- elements per 16-byte matrix row
      local desc = copy_desc(name, rows_, cols_, dt, "shared", dt, "warp", stored_t, loops_swapped)
      local dr, dc = rows_, cols_
      if stored_t then dr, dc = cols_, rows_ end
      local impl = T.prim_func(name .. "_impl", {S = buf(rows_, cols_, dt, "shared", true), D = buf(dr, dc, dt, "warp")}, function(S, D)
        T.block("root", function()
          T.reads(region(S, rows_, cols_))
          T.writes(region(D, dr, dc))
          local lane = T.call("int32", "tir_lane_id")
          -- an operand stored in the fragment's orientation (A m x k, B k x n): lane l gives row
          -- l % 16, column unit * (l // 16); stored transposed: row l % 8 + 8 (l // 16), column
          -- unit * ((l // 8) % 2), so the four 8x8 matrices come out in the fragments' order
          local src = stored_t and S[{lane % 8 + lane // 16 * 8, lane // 8 % 2 * unit}] or S[{lane % 16, lane // 16 * unit}]
          T.evaluate(T.call("void", "mma_ldmatrix", trans and 1 or 0, 4, T.address_of(D[{0, 0}]), T.address_of(src)))
        end)
      end)
      register(name, desc, impl)
    end
    ldm(names.load_a, row.a, 16, k, false, false)
    if names.load_b then ldm(names.load_b, row.b, k, 16, true, false) end
    if names.load_a_trans then ldm(names.load_a_trans, row.a, k, 16, true, true) end
    ldm(names.load_b_trans, row.b, 16, k, false, true)
    -- 8-bit operands whose global layout is not k-major (A as k x m, B as k x n): the copy into
    -- shared memory stores them k-major, and the load iterates in the global layout's order
    if names.load_a_smem_t then ldm(names.load_a_smem_t, row.a, 16, k, false, false, true) end
    if names.load_b_smem_t then ldm(names.load_b_smem_t, row.b, 16, k, false, true, true) end
    sync_pair(names.sync, 16, 16, k, row, {"warp", "warp", "warp"}, function(A, B, C)
      return T.call("void", "mma_sync", T.address_of(C[{0, 0}]), T.address_of(A[{0, 0}]), T.address_of(B[{0, 0}]),
                    T.address_of(C[{0, 0}]))
    end)
    -- fill and stores depend on the accumulator only: once per accumulator type
    if not done[row.c] then
      done[row.c] = true
      fill_pair(names.fill, 16, 16, row.c, "warp", function(C)
        return T.call("void", "mma_fill", T.address_of(C[{0, 0}]), tir.const(0, row.c))
      end)
      for _, scope in ipairs({"shared", "global"}) do
        local outs = {{names.store[scope], row.c}}
        if names.store_f16 then outs[2] = {names.store_f16[scope], "float16"} end
        for _, o in ipairs(outs) do
          store_pair(o[1], "store", 16, 16, row.c, "warp", o[2], scope, function(S, D)
            return T.call("void", "mma_store", T.address_of(S[{0, 0}]), T.address_of(D[{0, 0}]), D.strides[1])
          end)
        end
      end
      -- D[16,16] += S: red.global.add of each accumulator into global memory (split-K's
      -- cross-CTA sum, tc_gemm split_k_mode = "atomic")
      store_pair(names.store_add, "store_add", 16, 16, row.c, "warp", row.c, "global.zeroed", function(S, D)
        return T.call("void", "mma_store", T.address_of(S[{0, 0}]), T.address_of(D[{0, 0}]), D.strides[1], "add")
      end, true)
    end
  end
end

--- wgmma (PTX ISA 9.7.15 "Asynchronous Warpgroup Level Matrix Multiply-Accumulate"; sm_90a).
-- A warpgroup (128 threads) computes a 64 x n tile; A (64 x k) and B come from swizzled shared
-- memory (storage_swizzle'd tiles, a PTX mode; lower_wgmma_descriptor derives the descriptors from them), the
-- accumulator is a "wgmma.accumulator" buffer (n/2 elements a thread).  N is a parameter of the
-- instruction, so the intrinsics are registered on first use, per (row, n, B's storage, depth):
--   wgmma_sync_64x<n>x<depth>_<t><acc>_<bk|bn>  C[64,n] += A[64,depth] * B: depth / k instructions
--                     (k = the row's: 16, or 32 for s8) issued back to back as one group
--                     (wgmma_fence; wgmma_mma_async x depth/k; wgmma_commit_group;
--                     wgmma_wait_group 0), so the accumulator and the shared tiles are free
--                     when the intrinsic ends; `pending` = 1 (name suffix _w1) waits with
--                     wgmma_wait_group 1 instead: this group stays in flight while the next
--                     instructions issue, and the previous group is complete (its tiles free
--                     after the barrier thread_sync puts after every wgmma_wait_group).  bk: B stored n x k (K-major); bn: B stored k x n
--                     (N-major, 16-bit inputs only).
--   wgmma_fill_64x<n>_<acc>                    C = 0
--   wgmma_store_64x<n>_<acc>[_f16]_<scope>     C -> [64,n] of acc (or float16) in shared / global
-- The stores wait for every group first (wgmma_wait_group 0).
-- pending = "open" (suffix _open): the instructions only, no commit and no wait: they join the
-- group that the next wgmma intrinsic commits (PTX ISA 9.7.15.6: wgmma.commit_group takes every
-- prior uncommitted wgmma.mma_async), e.g. the row sums of A issued with the step's GEMM group.
-- pending = "commit" (suffix _c): fence, the instructions and the commit, no wait: the caller's next
-- statements run while the group is in flight and end with the wait themselves (tc_gemm_wgmma's
-- row_sums_in_flight: the row-sum intrinsic tir.intrin.dp4a.row_sum_name(..., wait) waits).
-- a_operand = "register" (default "shared"): A from the registers of the warpgroup instead, a
-- "wgmma.matrix_a" fragment [64, depth] (PTX ISA 9.7.15.5.1.1.1 "Register Fragments": per
-- instruction each thread holds k / 2 elements in the row's map_a order, warp w of the warpgroup
-- rows 16 w .. 16 w + 15 as mma.sync's m16n8k16 / m16n8k32 A; slab s of the fragment at the
-- threads' part from element s k / 2, address_of(frag[flat 64 k s]) -- include/tir/mma.h):
--   wgmma_sync_64x<n>x<depth>_<t><acc>_<bk|bn>_ra[_w1]  C += A (registers) * B (shared)
--   wgmma_ldmatrix_64x<depth>_<t>_a   shared [64, depth] (K-major) -> wgmma.matrix_a: per slab one
--                     ldmatrix.x4 of each warp (PTX ISA 9.7.14.5.15; warpgroup lane l gives row
--                     16 (l // 32) + l % 16, column s k + 16 bytes * ((l % 32) // 16): matrices
--                     0..3 come out as registers a0..a3 of the fragment)
-- The A registers are read asynchronously until the group completes (PTX ISA 9.7.15.4), so the
-- next load into the fragment must come after the group's wait: with pending = 1 the caller keeps
-- two fragments (the simulator reports an overwrite before the wait).
-- Returns {sync=, fill=, store = {shared=, global=}, store_f16 = {...} (f32 accumulators), tile =
-- {64, n, depth}, load_a = (register A only)}.  Errors name the valid N (tir.core.mma_configs() n_valid).
function M.wgmma(row, n, b_major, depth, pending, a_operand)
  b_major = b_major or "K"
  local P = "tir.intrin.cuda.wgmma"
  if type(row) == "string" then
    local name = row
    row = nil
    for _, r in ipairs(rows("wgmma")) do if r.name == name then row = r end end
    if not row then util.raise("ValueError", P, "no wgmma row named %s", tostring(name)) end
  end
  if type(row) ~= "table" or type(row.n_valid) ~= "table" then
    util.raise("TypeError", P, "row must be a wgmma row of tir.mma_configs() or its name (e.g. \"m64nNk16.f16.f16.f32\"), got %s", util.describe(row))
  end
  local ok = false
  for _, v in ipairs(row.n_valid) do ok = ok or v == n end
  if not ok then
    util.raise("ValueError", P, "n = %s is not a valid N of wgmma %s (valid: %s)", tostring(n), row.name, table.concat(row.n_valid, ", "))
  end
  if b_major ~= "K" and b_major ~= "MN" then util.raise("ValueError", P, "b_major must be \"K\" or \"MN\", got %s", tostring(b_major)) end
  if b_major == "MN" and not row.a:match("16$") then
    util.raise("ValueError", P, "an N-major B exists for 16-bit inputs only (PTX ISA 9.7.15.5.1.2), not for %s", row.name)
  end
  local k = row.k
  depth = depth or k
  pending = pending or 0
  if pending ~= 0 and pending ~= 1 and pending ~= "open" and pending ~= "commit" then
    util.raise("ValueError", P, "pending must be 0 or 1 (groups left in flight), \"open\" (no commit) or \"commit\" (no wait), got %s",
               tostring(pending))
  end
  local open = pending == "open" or pending == "commit"
  if math.type(depth) ~= "integer" or depth < k or depth % k ~= 0 then
    util.raise("ValueError", P, "depth must be a multiple of the instruction's k = %d, got %s", k, tostring(depth))
  end
  a_operand = a_operand or "shared"
  if a_operand ~= "shared" and a_operand ~= "register" then
    util.raise("ValueError", P, "a_operand must be \"shared\" or \"register\", got %s", util.show(a_operand))
  end
  local ra = a_operand == "register"
  -- <t>: A's type, then B's where it differs (u8.s8 is not s8.s8: one intrinsic per row)
  local t = row.ptx_a == row.ptx_b and row.ptx_a or (row.ptx_a .. row.ptx_b)
  local names = {sync = ("wgmma_sync_64x%dx%d_%s%s_%s%s%s"):format(n, depth, t, row.ptx_c, b_major == "K" and "bk" or "bn",
                                                                  ra and "_ra" or "", pending == 1 and "_w1" or pending == "commit" and "_c" or open and "_open" or ""),
                 fill = ("wgmma_fill_64x%d_%s"):format(n, row.ptx_c), tile = {64, n, depth},
                 store = {shared = ("wgmma_store_64x%d_%s_shared"):format(n, row.ptx_c),
                          global = ("wgmma_store_64x%d_%s_global"):format(n, row.ptx_c)}}
  if row.c == "float32" then
    names.store_f16 = {shared = ("wgmma_store_64x%d_f32_f16_shared"):format(n), global = ("wgmma_store_64x%d_f32_f16_global"):format(n)}
  end
  -- the TMA-store tile in boxes of 128 bytes (tc_gemm_wgmma's epilogue_store = "tma"): float16
  -- outputs (f32 accumulators) or the accumulator's own type, n a multiple of the box and wider
  -- (n = b: the plain [64, n] tile is one box already)
  local function box_name(out)
    local b = 128 // (tonumber(out:match("%d+$")) // 8)
    if n % b == 0 and n > b then return ("wgmma_store_64x%d_%s_shared_box%d"):format(n, out == row.c and row.ptx_c or ("%s_f16"):format(row.ptx_c), b), b end
  end
  names.store_box = box_name(row.c)
  if names.store_f16 then names.store_f16.shared_box = box_name("float16") end
  if ra then names.load_a = ("wgmma_ldmatrix_64x%d_%s_a"):format(depth, row.ptx_a) end
  if ra and not tir.TensorIntrin.get(names.load_a) then
    local unit = 16 // (tonumber(row.a:match("%d+$")) // 8) -- elements per 16-byte matrix row
    local desc = copy_desc(names.load_a, 64, depth, row.a, "shared", row.a, "wgmma.matrix_a")
    local impl = T.prim_func(names.load_a .. "_impl", {S = buf(64, depth, row.a, "shared", true), D = buf(64, depth, row.a, "wgmma.matrix_a")},
                             function(S, D)
      T.block("root", function()
        T.reads(region(S, 64, depth))
        T.writes(region(D, 64, depth))
        local l = T.call("int32", "tir_warpgroup_lane")
        for s = 0, depth // k - 1 do
          local f = 64 * k * s -- slab s of the fragment (the threads' part from f / 128)
          T.evaluate(T.call("void", "mma_ldmatrix", 0, 4, T.address_of(D[{f // depth, f % depth}]),
                            T.address_of(S[{l // 32 * 16 + l % 16, s * k + l % 32 // 16 * unit}])))
        end
      end)
    end)
    register(names.load_a, desc, impl)
  end
  if tir.TensorIntrin.get(names.sync) then return names end
  local bk = b_major == "K"
  local function sig()
    return {A = ra and buf(64, depth, row.a, "wgmma.matrix_a") or buf(64, depth, row.a, "shared", true),
            B = bk and buf(n, depth, row.b, "shared", true) or buf(depth, n, row.b, "shared", true),
            C = buf(64, n, row.c, "wgmma.accumulator")}
  end
  local function breg(B) return bk and region(B, n, depth) or region(B, depth, n) end
  local desc = T.prim_func(names.sync, sig(), function(A, B, C)
    T.block("root", function()
      T.reads(region(C, 64, n), region(A, 64, depth), breg(B))
      T.writes(region(C, 64, n))
      for i, j, kk in T.grid(64, n, depth) do
        T.block("update", function()
          local vi, vj, vk = T.axis.remap("SSR", {i, j, kk})
          local b = bk and B[{vj, vk}] or B[{vk, vj}]
          C[{vi, vj}] = C[{vi, vj}] + T.cast(row.c, A[{vi, vk}]) * T.cast(row.c, b)
        end)
      end
    end)
  end)
  local impl = T.prim_func(names.sync .. "_impl", sig(), function(A, B, C)
    T.block("root", function()
      T.reads(region(C, 64, n), region(A, 64, depth), breg(B))
      T.writes(region(C, 64, n))
      T.evaluate(T.call("void", "wgmma_fence"))
      for s = 0, depth // k - 1 do
        local f = 64 * k * s -- (A in registers: slab s, the threads' part from f / 128)
        local da = ra and T.address_of(A[{f // depth, f % depth}]) or T.call("uint64", "wgmma_operand", T.address_of(A[{0, s * k}]), A.strides[1], "K")
        local db = T.call("uint64", "wgmma_operand", T.address_of(bk and B[{0, s * k}] or B[{s * k, 0}]), B.strides[1], b_major)
        T.evaluate(T.call("void", "wgmma_mma_async", T.address_of(C[{0, 0}]), da, db, n, bk and 0 or 1, row.name))
      end
      if not open or pending == "commit" then T.evaluate(T.call("void", "wgmma_commit_group")) end
      if not open then T.evaluate(T.call("void", "wgmma_wait_group", pending)) end
    end)
  end)
  register(names.sync, desc, impl)
  if not tir.TensorIntrin.get(names.fill) then
    fill_pair(names.fill, 64, n, row.c, "wgmma.accumulator", function(C)
      return T.call("void", "wgmma_fill", T.address_of(C[{0, 0}]), n, tir.const(0, row.c))
    end)
    for _, out in ipairs({row.c, names.store_f16 and "float16" or nil}) do
      local nm, b = box_name(out)
      if nm then store_box_pair(nm, n, b, row.c, out) end
    end
    for _, scope in ipairs({"shared", "global"}) do
      local outs = {{names.store[scope], row.c}}
      if names.store_f16 then outs[2] = {names.store_f16[scope], "float16"} end
      for _, o in ipairs(outs) do
        store_pair(o[1], "store", 64, n, row.c, "wgmma.accumulator", o[2], scope, function(S, D)
          -- every group complete first (a _w1 sync leaves the last one in flight)
          T.evaluate(T.call("void", "wgmma_wait_group", 0))
          return T.call("void", "wgmma_store", T.address_of(S[{0, 0}]), T.address_of(D[{0, 0}]), D.strides[1], n)
        end)
      end
    end
  end
  return names
end

M.register_wmma()
M.register_mma()
return M
