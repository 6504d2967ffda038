-- matmul_wgmma.lua -- an fp16 GEMM on Hopper's warpgroup MMA (wgmma.mma_async m64nNk16, PTX ISA
-- 9.7.15) from 128-byte-swizzled shared tiles loaded by TMA on a full/empty mbarrier pipeline
-- (tir.schedules.tc_gemm, intrin "wgmma" with no tile options on a GPU: tc_gemm_wgmma.pick's
-- configuration for the shape; lib/tir/schedules/tc_gemm_wgmma.lua and
-- inject_tma_pipeline; `cp.async` as the last argument uses the cp.async pipeline instead, `ws`
-- warp specialization: a producer warpgroup issuing the TMA copies, setmaxnreg, inject_warp_specialization):
--   D[i, j] = f16(sum_k f32(A[i, k]) * f32(B[j, k]))   A: M x K, B: N x K (both K-major: layout "NT")
-- Prints the scheduled IR, an excerpt of the CUDA C (the descriptors and the wgmma helper) and
-- the PTX lines with wgmma / cp.async / fence instructions, built for sm_90a.  On an sm_90 GPU it
-- runs M x N x K (default 4096^3) against cuBLAS and prints TFLOP/s; elsewhere it runs the lowered
-- kernel on the warp-accurate simulator at a small size, bit-exact against the interpreter.
-- `register` reads A from registers (a_operand = "register": wgmma.mma_async with {a0..a3} operands).
-- `bias`: D = f16(relu(C + bias[j])) (tc_gemm_wgmma_epilogue.workload): the staged epilogue; on the
-- simulator its outputs leave by one TMA store per warpgroup tile (epilogue_store = "tma"), on a GPU
-- the pick's configuration for a staged epilogue (direct 16-byte stores from the staged tile: measured
-- faster than the TMA store at one CTA a tile), checked against cuBLASLt's CUBLASLT_EPILOGUE_RELU_BIAS.
--   tirlua scripts/examples/matmul_wgmma.lua [M N K] [cp.async | ws | register | bias]
local tir = require("tir")
local util = require("tir.util")
local tc = require("tir.schedules.tc_gemm")

local dev = tir.device("cuda", 0)
local has_gpu = dev:exists() and dev:info().arch == "sm_90"
local dir = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
local cpasync, ws, areg, bias = arg[#arg] == "cp.async", arg[#arg] == "ws", arg[#arg] == "register", arg[#arg] == "bias"
if cpasync or ws or areg or bias then arg[#arg] = nil end
local M, N, K = dofile(dir .. "size_args.lua")("matmul_wgmma", has_gpu and 4096 or 128)

-- On a GPU the defaults: no tile option, so tc_gemm_wgmma.pick chooses per shape (4096^3: 128 x 256 x
-- 64 tiles, two consumer warpgroups of 64 x 256 and a producer warpgroup, 3 TMA stages, persistent,
-- the tile stored by TMA from shared memory);
-- `cp.async`: 128 x 256 x 64 with 3 cp.async stages and one wgmma group in flight; `ws`: 128 x 256,
-- 4 TMA stages, warp-specialized, one CTA a tile.  128 x 128, 2 TMA stages for the simulator
local o = {intrin = "wgmma", epilogue = "D"}
if cpasync or ws or areg then o.BM, o.BN, o.BK, o.stages, o.tma = 128, 256, 64, cpasync and 3 or 4, not cpasync end
if not has_gpu then o.BM, o.BN, o.BK, o.stages, o.tma = 128, 128, 64, 2, not cpasync end
if bias and o.BM then o.epilogue_store = "tma" end -- (on a GPU the pick's: direct stores, see above)
o.warp_specialize = ws or nil
-- `register`: A from registers (ldmatrix into a wgmma.matrix_a fragment; each group waited), tiles as `ws`
if areg then o.a_operand, o.wgmma_pending = "register", 0 end
local why, shown = "options given", o
if not o.BM then shown, why = require("tir.schedules.tc_gemm_wgmma").pick(M, N, K, "float16", nil, "float16", bias) end -- what tc.schedule will take
local func = bias and require("tir.schedules.tc_gemm_wgmma_epilogue").workload(M, N, K, "float16", "relu")
             or tc.workload(M, N, K, "float16", "float16", nil, "NT")
local sch = tc.schedule(func, o)
print(("-- scheduled TensorIR (wgmma m64n%dk16, %dx%dx%d, fp16 x fp16 -> fp32%s -> fp16, %s; %s)"):format(shown.BN or 128, M, N, K,
  bias and (" + bias, relu (staged in shared memory, %s)"):format(shown.epilogue_store == "tma" and "TMA store" or "direct stores") or "",
  cpasync and "cp.async pipeline" or shown.warp_specialize and "TMA + mbarrier pipeline, warp-specialized"
  or areg and "TMA + mbarrier pipeline, A from registers" or "TMA + mbarrier pipeline", why))
print(sch.mod)
local mod = tir.build(sch.mod, "cuda -arch=sm_90a", {compile = tir.core.nvrtc_available()})
local cu = mod:get_source("cuda")
print("-- CUDA C excerpt: the wgmma helper's instruction and the calls with their descriptors")
local shown = 0
for l in cu:gmatch("[^\n]+") do
  if (l:match("wgmma%.mma_async") or l:match("^%s+tir_wgmma_m64") or l:match("wgmma%.wait_group") or l:match("fence%.proxy")
      or (areg and l:match("ldmatrix"))) and shown < 8 then
    print("  " .. (#l > 200 and l:sub(1, 200) .. " ..." or l))
    shown = shown + 1
  end
end
local ptx = mod:get_source("ptx") or ""
print(("-- PTX lines with wgmma, TMA / cp.async, mbarrier and fence instructions (%s; first of each kind)"):format(mod:arch()))
if ptx == "" then print("  (NVRTC is not available: no PTX)") end
for _, x in ipairs(tir.testing.ptx_instructions(ptx, {"wgmma%.mma_async[%w%.]*", "wgmma%.fence[%w%.]*", "wgmma%.commit_group[%w%.]*",
    "wgmma%.wait_group[^;]*", "cp%.async%.c[ga]%.shared%.global[^;]*", "cp%.async%.wait_group[^;]*", "fence%.proxy%.async[^;]*",
    "cp%.async%.bulk%.tensor%.%dd%.shared[^;]*", "cp%.async%.bulk%.tensor%.%dd%.global[^;]*", "cp%.async%.bulk%.wait_group[^;]*",
    "mbarrier%.init[%w%.:_]*", "mbarrier%.arrive[%w%.:_]*", "mbarrier%.try_wait[%w%.:_]*"})) do
  print(("  %4d x  %s"):format(x.count, x.first))
end

if has_gpu then
  local a = tir.nd.random({M, K}, "float16", dev, {seed = 1})
  local b = tir.nd.random({N, K}, "float16", dev, {seed = 2})
  local c = tir.nd.empty({M, N}, "float16", dev)
  local ref = tir.nd.empty({M, N}, "float16", dev)
  local bv = bias and tir.nd.random({N}, "float16", dev, {seed = 3}) or nil
  -- the reference: cuBLAS, or with the bias + relu epilogue cuBLASLt's RELU_BIAS
  local function reference()
    if bias then tir.core.cublaslt_gemm_epilogue(a, b, bv, ref, true) else tir.core.cublas_gemm(a, b, ref, false, true, 1.0, 0.0) end
  end
  local args = bias and {a, b, bv, c} or {a, b, c}
  mod(table.unpack(args))
  reference()
  tir.core.cuda_sync(0)
  tir.testing.assert_allclose(c, ref, {rtol = 2e-2, atol = 2e-2 * math.sqrt(K / 64)})
  local t = mod:time_evaluator({number = 10, repeat_ = 5, warmup = 3})(table.unpack(args))
  local tcub = tir.core.cuda_time(reference, 0, 3, 10, 5)
  local flops = 2.0 * M * N * K
  local r = mod:resources()
  local lib = bias and "cuBLASLt bias+relu" or "cuBLAS"
  print(("-- %s: %.3f ms, %.1f TFLOP/s; %s %.3f ms, %.1f TFLOP/s (%.3fx); %d registers, %d bytes smem; max abs error vs %s "
         .. "within tolerance"):format(dev:info().name, t * 1e3, flops / t / 1e12, lib, tcub * 1e3, flops / tcub / 1e12, tcub / t, r.registers,
         r.static_smem_bytes + (r.dynamic_smem_bytes or 0), lib))
else
  -- the simulator runs the lowered kernel thread by thread (wgmma with descriptor-addressed,
  -- swizzled operands) and compares D with the interpreter's result of the unscheduled function
  local args = tir.testing.random_args(func, 1)
  local rep = tir.simulate(mod, args, {reference = func, rtol = 0, atol = 0})
  print(("-- no sm_90 GPU: simulated %s (%s): D bit-exact against the interpreter, %s"):format(
    util.count(rep.ctas, "CTA"), util.count(rep.warp_ops, "warpgroup operation"), util.count(rep.n_issues, "issue")))
  if ws then
    print(("-- the producer and consumer branches ran as %d cooperative tasks (%d switches between them)"):format(rep.tasks,
      rep.task_switches))
  end
end
