-- gpu_warp_specialization_spec.lua -- the warp-specialized wgmma + TMA GEMM (tc_gemm intrin =
-- "wgmma", tma = true, warp_specialize = true: a producer warpgroup issuing the TMA copies,
-- setmaxnreg, consumer warpgroups on wgmma; inject_warp_specialization) on a real sm_90 GPU
-- (#gpu) against cuBLAS on the same K-major operands, fp16 and bf16 in, fp32 accumulate; and the
-- non-specialized TMA pipeline with one wgmma group in flight (its stage released a step later).
-- Without an sm_90 GPU: pending.
local tir = require("tir")
local tc = require("tir.schedules.tc_gemm")
local U = require("spec_util")

local dev = tir.device("cuda", 0)
local has_gpu, why = dev:exists()
if has_gpu and dev:info().arch ~= "sm_90" then has_gpu, why = false, "the GPU is " .. dev:info().arch .. ", wgmma needs sm_90" end

local function check(m, n, k, dtype, o)
  local f = tc.workload(m, n, k, dtype, dtype == "float16" and "float16" or nil, nil, "NT")
  local opts = {intrin = "wgmma", tma = true}
  for key, v in pairs(o) do opts[key] = v end
  if dtype == "float16" then opts.epilogue = "D" end
  local mod = tir.build(tc.schedule(f, opts).mod, "cuda -arch=sm_90a")
  U.check_nt_vs_cublas(mod, m, n, k, dtype, dev)
  return mod
end

describe("#gpu warp-specialized wgmma GEMM (sm_90a)", function()
  if not has_gpu then
    it("is skipped: " .. tostring(why), function() pending("no sm_90 GPU: " .. tostring(why)) end)
    return
  end
  for _, c in ipairs({
    {"float16", {4096, 4096, 4096}, {BM = 128, BN = 256, BK = 64, stages = 4, warp_specialize = true}},
    {"float16", {4096, 4096, 4096}, {BM = 128, BN = 256, BK = 64, stages = 4, warp_specialize = true, wgmma_pending = 0}},
    {"bfloat16", {4096, 4096, 4096}, {BM = 128, BN = 256, BK = 64, stages = 4, warp_specialize = true}},
    {"float16", {128, 11008, 4096}, {BM = 64, BN = 128, BK = 64, stages = 4, warp_specialize = true}},
    {"float16", {512, 768, 1024}, {BM = 128, BN = 128, BK = 64, stages = 2, warp_specialize = true}},
    {"float16", {4096, 4096, 4096}, {BM = 128, BN = 256, BK = 64, stages = 4}}, -- not specialized, one group in flight
    {"float16", {4096, 4096, 4096}, {BM = 128, BN = 256, BK = 64, stages = 4, warp_specialize = true, persistent = true}},
    {"bfloat16", {2048, 3072, 1024}, {BM = 128, BN = 256, BK = 64, stages = 3, warp_specialize = true, persistent = 16}},
    {"float16", {1024, 1024, 512}, {BM = 128, BN = 128, BK = 64, stages = 2, persistent = 8}}, -- re-armed per tile
    {"bfloat16", {1024, 1024, 4096}, {BM = 128, BN = 256, BK = 64, stages = 3, wgmma_pending = 1}},
  }) do
    it(("%s %dx%dx%d BM=%d BN=%d stages=%d%s%s%s matches cuBLAS"):format(c[1], c[2][1], c[2][2], c[2][3], c[3].BM, c[3].BN, c[3].stages,
       c[3].warp_specialize and " warp_specialize" or "", c[3].wgmma_pending == 0 and " wgmma_pending=0" or "",
       c[3].persistent and (" persistent=" .. tostring(c[3].persistent)) or ""), function()
      local mod = check(c[2][1], c[2][2], c[2][3], c[1], c[3])
      if c[3].warp_specialize then
        local r = mod:resources()
        assert.are.equal(0, r.local_bytes) -- no spills
      end
    end)
  end
end)
