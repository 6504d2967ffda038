-- gpu_wgmma_defaults_spec.lua -- the wgmma GEMM a user gets without tuning (#gpu): tc_gemm intrin =
-- "wgmma" with no tile option (tc_gemm_wgmma.pick's configuration for the shape) and
-- tc.auto_tensorize(func, "wgmma"), fp16 and bf16, against cuBLAS on the same K-major operands, at
-- the shapes of issue 9 (4096^3, the LLM shapes).  Without an sm_90 GPU: pending.
local tir = require("tir")
local tc = require("tir.schedules.tc_gemm")
local U = require("spec_util")

local dev = tir.device("cuda", 0)
local has_gpu, why = dev:exists()
if has_gpu and dev:info().arch ~= "sm_90" then has_gpu, why = false, "the GPU is " .. dev:info().arch .. ", wgmma needs sm_90" end

describe("#gpu wgmma defaults (tc_gemm_wgmma.pick)", function()
  if not has_gpu then
    it("is skipped: " .. tostring(why), function() pending("no sm_90 GPU: " .. tostring(why)) end)
    return
  end
  for _, c in ipairs({{"float16", {4096, 4096, 4096}}, {"bfloat16", {4096, 11008, 4096}}, {"float16", {128, 11008, 4096}},
                      {"bfloat16", {128, 11008, 4096}}}) do
    local m, n, k = c[2][1], c[2][2], c[2][3]
    it(("%s %dx%dx%d with {intrin = \"wgmma\"} matches cuBLAS"):format(c[1], m, n, k), function()
      local f = tc.workload(m, n, k, c[1], c[1] == "float16" and "float16" or nil, nil, "NT")
      local mod = tir.build(tc.schedule(f, {intrin = "wgmma", epilogue = c[1] == "float16" and "D" or nil}).mod, "cuda -arch=sm_90a")
      U.check_nt_vs_cublas(mod, m, n, k, c[1], dev)
    end)
  end
  it("auto_tensorize(func, \"wgmma\") at 4096 x 4096 x 11008 (bf16) matches cuBLAS", function()
    local f = tc.workload(4096, 4096, 11008, "bfloat16", nil, nil, "NT")
    local sch, o = tc.auto_tensorize(f, "wgmma")
    assert.matches("^pick:", o.config)
    U.check_nt_vs_cublas(tir.build(sch.mod, "cuda -arch=sm_90a"), 4096, 4096, 11008, "bfloat16", dev)
  end)
end)
