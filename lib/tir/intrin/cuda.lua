--- tir.intrin.cuda: tensor intrinsics for NVIDIA GPUs, registered in tir.TensorIntrin on require.
--
-- Each intrinsic is a desc (semantics: loops around one block, over buffers in given scopes) and
-- an impl (builtin calls the CUDA codegen knows; see docs/BUILTINS.md).  Names follow TVM's
-- python/tvm/tir/tensor_intrin/cuda.py where one exists.
--
-- WMMA (CUDA C++ API nvcuda::wmma; PTX ISA 9.7.14 "Warp Level Matrix Multiply-Accumulate
-- Instructions", wmma.load/wmma.mma/wmma.store), shape m16n16k16, fp16 inputs:
--   wmma_load_16x16x16_f16_a      shared [16,16] f16 (row-major)     -> wmma.matrix_a
--   wmma_load_16x16x16_f16_b      shared [16,16] f16 (row-major, k x n) -> wmma.matrix_b
--   wmma_load_16x16x16_f16_{a,b}_trans   operands stored transposed (col_major fragments)
--   wmma_sync_16x16x16_f16f16f32  C[16,16] f32 += A[16,16] * B[16,16] (fp32 accumulate)
--   wmma_fill_16x16x16_f32        wmma.accumulator [16,16] f32 = 0
--   wmma_store_16x16x16_f32_shared / _global   wmma.accumulator -> [16,16] f32
-- A fragment buffer's 16x16 tiles must each be contiguous (e.g. a warp's 32x32 accumulator laid
-- out [2, 2, 16, 16]: transform_layout); the codegen declares one fragment per 256 elements.
local tir = require("tir")
local T = tir.script
local M = {}

local function region(buf) return buf[{{0, 16}, {0, 16}}] end

-- a [16,16] buffer parameter; `strided` gives it a symbolic row stride (the leading dimension
-- a load/store needs), bound to the viewed buffer's actual stride by lower_match_buffer
local function buf(dtype, scope, strided)
  local opts = {scope = scope, offset_factor = 16}
  if strided then opts.strides = {tir.var("ld", "int32"), 1} end
  return T.Buffer({16, 16}, dtype, opts)
end

local function register(name, desc, impl) tir.TensorIntrin.register(name, desc, impl, true) end

-- copy intrinsics: dst[i, j] = src[i, j] over 16x16
local function copy_desc(name, src_dt, src_scope, dst_dt, dst_scope)
  return T.prim_func(name, {S = buf(src_dt, src_scope), D = buf(dst_dt, dst_scope)}, function(S, D)
    T.block("root", function()
      T.reads(region(S))
      T.writes(region(D))
      for i, j in T.grid(16, 16) do
        T.block("copy", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          D[{vi, vj}] = S[{vi, vj}]
        end)
      end
    end)
  end)
end

-- transposed copy: dst[j, i] = src[i, j] (an operand stored transposed: A as k x m, B as n x k)
local function copy_t_desc(name, src_dt, src_scope, dst_dt, dst_scope)
  return T.prim_func(name, {S = buf(src_dt, src_scope), D = buf(dst_dt, dst_scope)}, function(S, D)
    T.block("root", function()
      T.reads(region(S))
      T.writes(region(D))
      for i, j in T.grid(16, 16) do
        T.block("copy", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          D[{vj, vi}] = S[{vi, vj}]
        end)
      end
    end)
  end)
end

function M.register_wmma()
  for _, ab in ipairs({{"a", "wmma.matrix_a"}, {"b", "wmma.matrix_b"}}) do
    local name = "wmma_load_16x16x16_f16_" .. ab[1]
    local desc = copy_desc(name, "float16", "shared", "float16", ab[2])
    local impl = T.prim_func(name .. "_impl", {S = buf("float16", "shared", true), D = buf("float16", ab[2])}, function(S, D)
      T.block("root", function()
        T.reads(region(S))
        T.writes(region(D))
        T.evaluate(T.call("void", "wmma_load", T.address_of(D[{0, 0}]), 16, 16, 16, T.address_of(S[{0, 0}]), S.strides[1],
                          "row_major"))
      end)
    end)
    register(name, desc, impl)
  end
  -- operands stored transposed (A as k x m, B as n x k): col_major fragments
  for _, ab in ipairs({{"a", "wmma.matrix_a"}, {"b", "wmma.matrix_b"}}) do
    local name = "wmma_load_16x16x16_f16_" .. ab[1] .. "_trans"
    local desc = copy_t_desc(name, "float16", "shared", "float16", ab[2])
    local impl = T.prim_func(name .. "_impl", {S = buf("float16", "shared", true), D = buf("float16", ab[2])}, function(S, D)
      T.block("root", function()
        T.reads(region(S))
        T.writes(region(D))
        T.evaluate(T.call("void", "wmma_load", T.address_of(D[{0, 0}]), 16, 16, 16, T.address_of(S[{0, 0}]), S.strides[1],
                          "col_major"))
      end)
    end)
    register(name, desc, impl)
  end
  do
    local name = "wmma_sync_16x16x16_f16f16f32"
    local sig = {A = buf("float16", "wmma.matrix_a"), B = buf("float16", "wmma.matrix_b"), C = buf("float32", "wmma.accumulator")}
    local desc = T.prim_func(name, sig, function(A, B, C)
      T.block("root", function()
        T.reads(region(C), region(A), region(B))
        T.writes(region(C))
        for i, j, k in T.grid(16, 16, 16) do
          T.block("update", function()
            local vi, vj, vk = T.axis.remap("SSR", {i, j, k})
            C[{vi, vj}] = C[{vi, vj}] + T.cast("float32", A[{vi, vk}]) * T.cast("float32", B[{vk, vj}])
          end)
        end
      end)
    end)
    local sig2 = {A = buf("float16", "wmma.matrix_a"), B = buf("float16", "wmma.matrix_b"), C = buf("float32", "wmma.accumulator")}
    local impl = T.prim_func(name .. "_impl", sig2, function(A, B, C)
      T.block("root", function()
        T.reads(region(C), region(A), region(B))
        T.writes(region(C))
        T.evaluate(T.call("void", "wmma_mma", T.address_of(C[{0, 0}]), T.address_of(A[{0, 0}]), T.address_of(B[{0, 0}]),
                          T.address_of(C[{0, 0}])))
      end)
    end)
    register(name, desc, impl)
  end
  do
    local name = "wmma_fill_16x16x16_f32"
    local desc = T.prim_func(name, {C = buf("float32", "wmma.accumulator")}, function(C)
      T.block("root", function()
        T.reads()
        T.writes(region(C))
        for i, j in T.grid(16, 16) do
          T.block("init", function()
            local vi, vj = T.axis.remap("SS", {i, j})
            C[{vi, vj}] = T.float32(0)
          end)
        end
      end)
    end)
    local impl = T.prim_func(name .. "_impl", {C = buf("float32", "wmma.accumulator")}, function(C)
      T.block("root", function()
        T.reads()
        T.writes(region(C))
        T.evaluate(T.call("void", "wmma_fill", T.address_of(C[{0, 0}]), 16, 16, 16, T.float32(0)))
      end)
    end)
    register(name, desc, impl)
  end
  for _, scope in ipairs({"shared", "global"}) do
    local name = "wmma_store_16x16x16_f32_" .. scope
    local desc = copy_desc(name, "float32", "wmma.accumulator", "float32", scope)
    local impl = T.prim_func(name .. "_impl", {S = buf("float32", "wmma.accumulator"), D = buf("float32", scope, true)}, function(S, D)
      T.block("root", function()
        T.reads(region(S))
        T.writes(region(D))
        T.evaluate(T.call("void", "wmma_store", T.address_of(S[{0, 0}]), 16, 16, 16, T.address_of(D[{0, 0}]), D.strides[1],
                          "row_major"))
      end)
    end)
    register(name, desc, impl)
  end
end

-- mma.sync (PTX ISA 9.7.14.5 "Matrix multiply-accumulate operation using mma instruction"),
-- m16n8k16 with fp16/bf16 inputs and fp32 accumulation, operands in "warp" buffers filled by
-- ldmatrix (PTX ISA 9.7.14.5.15).  Tiles are 16x16 (two m16n8k16 per multiply):
--   mma_ldmatrix_16x16_<t>_a   shared [16,16] row-major (m x k)  -> warp   (ldmatrix.x4)
--   mma_ldmatrix_16x16_<t>_b   shared [16,16] row-major (k x n)  -> warp   (ldmatrix.x4.trans)
--   mma_ldmatrix_16x16_<t>_a_trans / _b_trans: the operand stored transposed (A as k x m, B as n x k);
--                              desc D[j, i] = S[i, j]
--   mma_sync_16x16x16_<t>f32   C[16,16] f32 += A * B
--   mma_fill_16x16_f32         C = 0
--   mma_store_16x16_f32_<scope>        warp f32 -> [16,16] f32 (shared or global)
--   mma_store_16x16_f32_f16_<scope>    warp f32 -> [16,16] f16, the cast fused into the store
-- A warp buffer's 16x16 tiles must each be contiguous (transform_layout (r, c) -> (r // 16,
-- c // 16, r % 16, c % 16)); each lane keeps 8 elements of a tile.  ldmatrix's per-lane row
-- addresses: lane l gives row l % 16, column 8 * (l // 16) of the tile, so matrices 0..3 are
-- (rows 0-7, cols 0-7), (8-15, 0-7), (0-7, 8-15), (8-15, 8-15): for A exactly a0..a3 of the
-- m16n8k16 A fragment; for B (transposed) b0,b1 of the first n8 tile and b0,b1 of the second.
function M.register_mma()
  for _, t in ipairs({{"f16", "float16"}, {"bf16", "bfloat16"}}) do
    for _, ab in ipairs({{"a", 0}, {"b", 1}}) do
      local name = ("mma_ldmatrix_16x16_%s_%s"):format(t[1], ab[1])
      local desc = copy_desc(name, t[2], "shared", t[2], "warp")
      local impl = T.prim_func(name .. "_impl", {S = buf(t[2], "shared", true), D = buf(t[2], "warp")}, function(S, D)
        T.block("root", function()
          T.reads(region(S))
          T.writes(region(D))
          local lane = T.call("int32", "tir_lane_id")
          T.evaluate(T.call("void", "mma_ldmatrix", ab[2], 4, T.address_of(D[{0, 0}]), T.address_of(S[{lane % 16, lane // 16 * 8}])))
        end)
      end)
      register(name, desc, impl)
    end
    -- operands stored transposed: A as k x m (ldmatrix.trans), B as n x k (ldmatrix without .trans);
    -- lane l gives row (l % 8) + 8 * (l // 16), column 8 * ((l // 8) % 2) of the stored 16x16 tile, so
    -- the four 8x8 matrices come out in the order of the m16n8k16 fragments (PTX ISA 9.7.14.5.15)
    for _, ab in ipairs({{"a", 1}, {"b", 0}}) do
      local name = ("mma_ldmatrix_16x16_%s_%s_trans"):format(t[1], ab[1])
      local desc = copy_t_desc(name, t[2], "shared", t[2], "warp")
      local impl = T.prim_func(name .. "_impl", {S = buf(t[2], "shared", true), D = buf(t[2], "warp")}, function(S, D)
        T.block("root", function()
          T.reads(region(S))
          T.writes(region(D))
          local lane = T.call("int32", "tir_lane_id")
          T.evaluate(T.call("void", "mma_ldmatrix", ab[2], 4, T.address_of(D[{0, 0}]),
                            T.address_of(S[{lane % 8 + lane // 16 * 8, lane // 8 % 2 * 8}])))
        end)
      end)
      register(name, desc, impl)
    end
    local name = ("mma_sync_16x16x16_%sf32"):format(t[1])
    local function sig() return {A = buf(t[2], "warp"), B = buf(t[2], "warp"), C = buf("float32", "warp")} end
    local desc = T.prim_func(name, sig(), function(A, B, C)
      T.block("root", function()
        T.reads(region(C), region(A), region(B))
        T.writes(region(C))
        for i, j, k in T.grid(16, 16, 16) do
          T.block("update", function()
            local vi, vj, vk = T.axis.remap("SSR", {i, j, k})
            C[{vi, vj}] = C[{vi, vj}] + T.cast("float32", A[{vi, vk}]) * T.cast("float32", B[{vk, vj}])
          end)
        end
      end)
    end)
    local impl = T.prim_func(name .. "_impl", sig(), function(A, B, C)
      T.block("root", function()
        T.reads(region(C), region(A), region(B))
        T.writes(region(C))
        T.evaluate(T.call("void", "mma_sync", T.address_of(C[{0, 0}]), T.address_of(A[{0, 0}]), T.address_of(B[{0, 0}]),
                          T.address_of(C[{0, 0}])))
      end)
    end)
    register(name, desc, impl)
  end
  do
    local name = "mma_fill_16x16_f32"
    local desc = T.prim_func(name, {C = buf("float32", "warp")}, function(C)
      T.block("root", function()
        T.reads()
        T.writes(region(C))
        for i, j in T.grid(16, 16) do
          T.block("init", function()
            local vi, vj = T.axis.remap("SS", {i, j})
            C[{vi, vj}] = T.float32(0)
          end)
        end
      end)
    end)
    local impl = T.prim_func(name .. "_impl", {C = buf("float32", "warp")}, function(C)
      T.block("root", function()
        T.reads()
        T.writes(region(C))
        T.evaluate(T.call("void", "mma_fill", T.address_of(C[{0, 0}]), T.float32(0)))
      end)
    end)
    register(name, desc, impl)
  end
  for _, scope in ipairs({"shared", "global"}) do
    for _, out in ipairs({{"f32", "float32"}, {"f32_f16", "float16"}}) do
      local name = ("mma_store_16x16_%s_%s"):format(out[1], scope)
      local desc = T.prim_func(name, {S = buf("float32", "warp"), D = buf(out[2], scope)}, function(S, D)
        T.block("root", function()
          T.reads(region(S))
          T.writes(region(D))
          for i, j in T.grid(16, 16) do
            T.block("store", function()
              local vi, vj = T.axis.remap("SS", {i, j})
              if out[2] == "float32" then D[{vi, vj}] = S[{vi, vj}] else D[{vi, vj}] = T.cast(out[2], S[{vi, vj}]) end
            end)
          end
        end)
      end)
      local impl = T.prim_func(name .. "_impl", {S = buf("float32", "warp"), D = buf(out[2], scope, true)}, function(S, D)
        T.block("root", function()
          T.reads(region(S))
          T.writes(region(D))
          T.evaluate(T.call("void", "mma_store", T.address_of(S[{0, 0}]), T.address_of(D[{0, 0}]), D.strides[1]))
        end)
      end)
      register(name, desc, impl)
    end
  end
end

M.register_wmma()
M.register_mma()
return M
