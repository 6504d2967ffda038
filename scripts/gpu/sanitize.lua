-- scripts/gpu/sanitize.lua -- the Hopper GEMM kernels of issue 9 launched once each, for
-- compute-sanitizer (scripts/gpu/sanitize.sh runs this file under memcheck, synccheck, initcheck):
-- each variant is built for sm_90a, run once on fresh random inputs into an output filled with
-- random values (a kernel writing nothing cannot pass) and compared with cuBLAS (fp16) or cuBLASLt
-- (int8, bit-exact).  No timing: under the sanitizer a launch is orders of magnitude slower.
--   tirlua scripts/gpu/sanitize.lua [variant ...]     (default: all; `list` prints the names)
-- Every launched kernel of ours is named "main_kernel" (tc_gemm.workload's function is main), so
-- `compute-sanitizer --kernel-name kns=main_kernel` checks these and leaves cuBLAS alone.
local tir = require("tir")
local tc = require("tir.schedules.tc_gemm")
local core = tir.core

-- {name, dtype, M, N, K, tc_gemm options}: the example's kernel (matmul_wgmma.lua: 128 x 256 x 64
-- CTA, 4 TMA stages, fp16 epilogue) and its warp-specialized, persistent, TMA-store and cp.async
-- variants, the int8 wgmma kernel, and A from registers (a_operand = "register").  persistent = 16
-- CTAs over 128 tiles: every CTA walks 8 tiles (the tile loop and the pipeline re-arming run).
local W = {intrin = "wgmma", BM = 128, BN = 256, BK = 64, stages = 4, tma = true, epilogue = "D"}
local function with(t)
  local o = {}
  for k, v in pairs(W) do o[k] = v end
  for k, v in pairs(t) do o[k] = v end
  return o
end
local VARIANTS = {
  {"tma", "float16", 2048, 2048, 512, with {}},
  {"ws", "float16", 2048, 2048, 512, with {warp_specialize = true}},
  {"tma_persistent", "float16", 2048, 2048, 512, with {persistent = 16}},
  {"ws_persistent", "float16", 2048, 2048, 512, with {warp_specialize = true, persistent = 16}},
  {"tma_store", "float16", 2048, 2048, 512, with {epilogue_store = "tma"}},
  {"cp_async", "float16", 2048, 2048, 512, with {tma = false, stages = 3}},
  {"a_register", "float16", 2048, 2048, 512, with {a_operand = "register", wgmma_pending = 0}},
  {"ws_a_register", "float16", 2048, 2048, 512, with {a_operand = "register", wgmma_pending = 0, warp_specialize = true}},
  {"int8_tma", "int8", 2048, 2048, 512, {intrin = "wgmma", BM = 128, BN = 256, BK = 128, stages = 4, tma = true}},
  {"int8_a_register", "int8", 2048, 2048, 512, {intrin = "wgmma", BM = 128, BN = 256, BK = 128, stages = 4, tma = true,
                                                 wgmma_pending = 0, a_operand = "register"}},
}

local want = {}
for _, a in ipairs(arg) do want[a] = true end
if want.list then
  for _, v in ipairs(VARIANTS) do print(v[1]) end
  os.exit(0)
end
local dev = tir.device("cuda", 0)
if not (dev:exists() and dev:info().arch == "sm_90") then error("scripts/gpu/sanitize.lua: needs an sm_90 GPU (H100/H200)") end

local failed = 0
for _, v in ipairs(VARIANTS) do
  local name, dt, m, n, k, o = table.unpack(v)
  if next(want) == nil or want[name] then
    local ok, err = pcall(function()
      local int8 = dt == "int8"
      local func = tc.workload(m, n, k, dt, int8 and "int32" or "float16", nil, "NT")
      local mod = tir.build(tc.schedule(func, o).mod, "cuda -arch=sm_90a")
      local a = tir.nd.random({m, k}, dt, dev, {seed = 1})
      local b = tir.nd.random({n, k}, dt, dev, {seed = 2})
      local odt = int8 and "int32" or "float16"
      local c = tir.nd.random({m, n}, odt, dev, {seed = 3, low = -1000, high = 1000})
      -- (initialized: cuBLAS is not instrumented under --kernel-name, so initcheck would call the
      -- result it writes uninitialized memory when it is copied back)
      local ref = tir.nd.random({m, n}, odt, dev, {seed = 4, low = -1000, high = 1000})
      mod(a, b, c)
      if int8 then core.cublaslt_gemm_int8(a, b, ref) else core.cublas_gemm(a, b, ref, false, true, 1.0, 0.0) end
      core.cuda_sync(0)
      if int8 then
        tir.testing.assert_allclose(c, ref, {rtol = 0, atol = 0})
      else
        tir.testing.assert_allclose(c, ref, {rtol = 2e-2, atol = 2e-2 * math.sqrt(k / 64)})
      end
      local r = mod:resources()
      return ("%d registers, %d bytes smem"):format(r.registers, r.static_smem_bytes + (r.dynamic_smem_bytes or 0))
    end)
    print(("sanitize %-16s %s %dx%dx%d: %s"):format(name, dt, m, n, k, ok and ("ok vs cuBLAS (" .. err .. ")") or ("FAILED: " .. tostring(err))))
    io.stdout:flush() -- (a step killed by its timeout keeps the lines before it)
    if not ok then failed = failed + 1 end
  end
end
io.stdout:flush()
if failed > 0 then os.exit(1) end
