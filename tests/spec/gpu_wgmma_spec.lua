-- gpu_wgmma_spec.lua -- Hopper wgmma GEMMs on a real sm_90 GPU (#gpu): tc_gemm with intrin =
-- "wgmma" (lib/tir/schedules/tc_gemm_wgmma.lua, built for sm_90a) against cuBLAS on the same
-- K-major operands (A M x K, B N x K; cuBLAS with B transposed), fp16 and bf16 in, fp32
-- accumulate, at 4096^3 and a small size, and int8 against an int32 CUDA-core kernel (exact).
-- Without an sm_90 GPU: pending.
local tir = require("tir")
local tc = require("tir.schedules.tc_gemm")
local U = require("spec_util")

local dev = tir.device("cuda", 0)
local has_gpu, why = dev:exists()
if has_gpu and dev:info().arch ~= "sm_90" then has_gpu, why = false, "the GPU is " .. dev:info().arch .. ", wgmma needs sm_90" end

local function check(m, n, k, dtype, o)
  local f = tc.workload(m, n, k, dtype, dtype == "float16" and "float16" or nil, nil, "NT")
  local opts = {intrin = "wgmma"}
  for key, v in pairs(o) do opts[key] = v end
  local mod = tir.build(tc.schedule(f, opts).mod, "cuda -arch=sm_90a")
  return U.check_nt_vs_cublas(mod, m, n, k, dtype, dev)
end

describe("#gpu wgmma GEMM (sm_90a)", function()
  if not has_gpu then
    it("is skipped: " .. tostring(why), function() pending("no sm_90 GPU: " .. tostring(why)) end)
    return
  end
  for _, c in ipairs({
    {"float16", {4096, 4096, 4096}, {BM = 128, BN = 256, BK = 64, stages = 3, epilogue = "D"}},
    {"float16", {4096, 4096, 4096}, {BM = 128, BN = 256, BK = 64, stages = 4, wgmma_pending = 0, epilogue = "D"}},
    {"float16", {4096, 4096, 4096}, {BM = 128, BN = 128, BK = 64, stages = 4, epilogue = "D"}},
    {"bfloat16", {4096, 4096, 4096}, {BM = 128, BN = 256, BK = 64, stages = 3}},
    {"float16", {256, 512, 192}, {BM = 64, BN = 64, BK = 32, stages = 3, epilogue = "D"}},
    -- small B tiles: 64-byte (BK 32) and 32-byte (BK 16) swizzled tiles aligned to their
    -- pattern's repeat (512 / 256 bytes), not to 1024 (PTX ISA 9.7.15.5.1.2.2, base offset 0)
    {"float16", {256, 256, 256}, {BM = 64, BN = 8, BK = 32, stages = 1, epilogue = "D"}},
    {"float16", {256, 240, 256}, {BM = 64, BN = 24, BK = 16, stages = 1, epilogue = "D"}},
    {"float16", {256, 240, 256}, {BM = 64, BN = 40, BK = 32, stages = 2, epilogue = "D"}},
    -- persistent grids (tc_gemm.persistent_tiles) and the TMA-store epilogue (inject_tma_store)
    {"float16", {4096, 4096, 4096}, {BM = 128, BN = 256, BK = 64, stages = 4, tma = true, persistent = true, epilogue = "D"}},
    {"float16", {4096, 4096, 4096}, {BM = 128, BN = 256, BK = 64, stages = 4, tma = true, epilogue = "D", epilogue_store = "tma"}},
    {"float16", {2048, 4096, 1024}, {BM = 128, BN = 256, BK = 64, stages = 3, tma = true, persistent = true, epilogue = "D", epilogue_store = "tma"}},
    {"bfloat16", {1024, 2048, 512}, {BM = 128, BN = 128, BK = 64, stages = 2, epilogue_store = "tma"}},
    -- warp-specialized (persistent) with the TMA-store epilogue: the consumers' named barrier around the store
    {"float16", {4096, 4096, 4096}, {BM = 128, BN = 256, BK = 64, stages = 3, tma = true, warp_specialize = true, persistent = true, epilogue = "D", epilogue_store = "tma"}},
    {"float16", {2048, 2048, 1024}, {BM = 128, BN = 128, BK = 64, stages = 4, tma = true, warp_specialize = true, epilogue = "D", epilogue_store = "tma"}},
    -- A from registers (a_operand = "register": ldmatrix into a wgmma.matrix_a fragment, hR)
    {"float16", {4096, 4096, 4096}, {BM = 128, BN = 256, BK = 64, stages = 4, tma = true, wgmma_pending = 0, a_operand = "register", epilogue = "D"}},
    {"float16", {2048, 2048, 1024}, {BM = 128, BN = 256, BK = 64, stages = 4, tma = true, warp_specialize = true, wgmma_pending = 0,
                                     a_operand = "register", epilogue = "D"}},
    {"bfloat16", {1024, 1024, 512}, {BM = 128, BN = 128, BK = 64, stages = 3, wgmma_pending = 0, a_operand = "register"}},
    -- thread-block clusters with TMA multicast (cluster = {cm, cn}: cm CTAs along M share B, cn along N share A)
    {"float16", {4096, 4096, 4096}, {BM = 128, BN = 256, BK = 64, stages = 4, tma = true, warp_specialize = true, persistent = true, cluster = {2, 1}, epilogue = "D"}},
    {"float16", {4096, 4096, 4096}, {BM = 128, BN = 256, BK = 64, stages = 4, tma = true, warp_specialize = true, persistent = true, cluster = {1, 2}, epilogue = "D"}},
    {"float16", {1024, 2048, 512}, {BM = 128, BN = 128, BK = 64, stages = 3, tma = true, warp_specialize = true, cluster = {2, 2}, epilogue = "D"}},
    {"bfloat16", {1024, 1024, 512}, {BM = 128, BN = 128, BK = 64, stages = 3, tma = true, cluster = {2, 1}}},
  }) do
    it(("%s %dx%dx%d BM=%d BN=%d BK=%d stages=%d%s%s%s%s matches cuBLAS"):format(c[1], c[2][1], c[2][2], c[2][3], c[3].BM, c[3].BN, c[3].BK, c[3].stages,
       c[3].warp_specialize and " ws" or "", c[3].epilogue_store == "tma" and " tma-store" or "", c[3].a_operand == "register" and " (A in registers)" or "",
       c[3].cluster and (" cluster %dx%d"):format(c[3].cluster[1], c[3].cluster[2]) or ""),
       function() check(c[2][1], c[2][2], c[2][3], c[1], c[3]) end)
  end

  it("int8 m64n128k32 at 1024^3 equals an int32 CUDA-core kernel exactly", function()
    local m, n, k = 1024, 1024, 1024
    local f = tc.workload(m, n, k, "int8", "int32", nil, "NT")
    local mod = tir.build(tc.schedule(f, {intrin = "wgmma", BM = 128, BN = 128, BK = 128, stages = 3}).mod, "cuda -arch=sm_90a")
    local a = tir.nd.random({m, k}, "int8", dev, {seed = 5, low = -128, high = 127})
    local b = tir.nd.random({n, k}, "int8", dev, {seed = 6, low = -128, high = 127})
    local c = tir.nd.empty({m, n}, "int32", dev)
    mod(a, b, c)
    local rs = tir.Schedule(f)
    local i, j = rs:get_loops(rs:get_block("C"))
    local io, ii = rs:split(i, {nil, 16})
    local jo, ji = rs:split(j, {nil, 16})
    rs:reorder(io, jo, ii, ji)
    rs:bind(io, "blockIdx.y"); rs:bind(jo, "blockIdx.x"); rs:bind(ii, "threadIdx.y"); rs:bind(ji, "threadIdx.x")
    local r = tir.nd.empty({m, n}, "int32", dev)
    tir.build(rs.mod, "cuda")(a, b, r)
    tir.testing.assert_allclose(c, r, {rtol = 0, atol = 0})
  end)
end)
