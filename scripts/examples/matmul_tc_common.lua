-- matmul_tc_common.lua -- shared by matmul_wmma.lua, matmul_mma.lua and matmul_tma.lua: builds the fp16 tensor-core
-- GEMM (tir.schedules.tc_gemm) with the given intrinsic, prints the scheduled IR, the trace and the
-- PTX lines with the tensor-core instructions; runs it on a GPU against cuBLAS, or on the CPU
-- interpreter (which runs each intrinsic's desc) at a small size.
local tir = require("tir")
local util = require("tir.util")
local tc = require("tir.schedules.tc_gemm")

-- extra: tc_gemm options over the example's (matmul_tma.lua: tma = true); name: the script's.
return function(intrin, argv, extra, name)
  local dev = tir.device("cuda", 0)
  local has_gpu, why = dev:exists()
  local function size(i, d)
    local a = argv and argv[i]
    if a == nil then return d end
    return math.tointeger(tonumber(a)) or -1
  end
  local M = size(1, has_gpu and 4096 or 64)
  local N, K = size(2, M), size(3, M)
  if M <= 0 or N <= 0 or K <= 0 then
    io.stderr:write("usage: tirlua scripts/examples/matmul_" .. (name or intrin) .. ".lua [M N K]\n")
    os.exit(1)
  end
  -- tiles: the benchmark's defaults on a GPU, small ones for the interpreter
  local o = {intrin = intrin, epilogue = "D", stages = 3}
  if not has_gpu then o.BM, o.BN, o.BK, o.warp_m, o.warp_n = 32, 32, 32, 16, 16 end
  for k, v in pairs(extra or {}) do o[k] = v end
  local BM, BN, BK = o.BM or 128, o.BN or 128, o.BK or 32
  local pad = (M % BM ~= 0 or N % BN ~= 0 or K % BK ~= 0) and {BM, BN, BK} or nil
  local func = tc.workload(M, N, K, "float16", "float16", pad)
  local sch = tc.schedule(func, o)
  print(("-- scheduled TensorIR (%s, %dx%dx%d, fp16 in, fp32 accumulate, fp16 out)"):format(intrin, M, N, K))
  print(sch.mod)
  print("-- trace")
  io.write(sch:trace())
  local mod = tir.build(sch.mod, "cuda")
  local ptx = mod:get_source("ptx") or ""
  print("-- PTX lines with tensor-core and async-copy instructions (first of each kind)")
  -- instructions at the start of a PTX line (so wmma.mma.sync is not counted as mma.sync)
  for _, x in ipairs(tir.testing.ptx_instructions(ptx, {"mma%.sync%.aligned[%w%.]*", "ldmatrix%.sync%.aligned[%w%.]*",
      "wmma%.load%.[ab]%.sync[%w%.]*", "wmma%.mma%.sync[%w%.]*", "wmma%.store%.d%.sync[%w%.]*", "cp%.async%.c[ga]%.shared%.global[^;]*",
      "cp%.async%.commit_group", "cp%.async%.wait_group[^;]*", "cp%.async%.bulk%.tensor[^;]*", "mbarrier%.init[%w%.:_]*", "mbarrier%.arrive[%w%.:_]*", "mbarrier%.try_wait[%w%.:_]*"})) do
    print(("  %4d x  %s"):format(x.count, x.first))
  end
  if has_gpu then
    local a = tir.nd.random({M, K}, "float16", dev, {seed = 1})
    local b = tir.nd.random({K, N}, "float16", dev, {seed = 2})
    local c = tir.nd.empty({M, N}, "float16", dev)
    local ref = tir.nd.empty({M, N}, "float16", dev)
    mod(a, b, c)
    tir.core.cublas_gemm(a, b, ref, false, false, 1.0, 0.0)
    local st = tir.testing.assert_allclose(c, ref, {rtol = 2e-2, atol = 2e-2 * math.sqrt(K / 64)})
    local t = mod:time_evaluator({number = 10, repeat_ = 5})(a, b, c)
    local tcb = tir.core.cuda_time(function() tir.core.cublas_gemm(a, b, ref, false, false, 1.0, 0.0) end, 0, 3, 10, 5)
    local fl = 2.0 * M * N * K
    print(("-- %s: %.3f ms, %.1f TFLOP/s; cuBLAS %.3f ms, %.1f TFLOP/s (ratio %.3f); max abs error vs cuBLAS %.3g"):format(
      dev:info().name, t * 1e3, fl / t / 1e12, tcb * 1e3, fl / tcb / 1e12, tcb / t, st.max_abs))
  else
    print(("-- no GPU (%s): the interpreter runs the tensorized function (each intrinsic's desc) at %dx%dx%d"):format(why, M, N, K))
    local a = tir.nd.random({M, K}, "float16", tir.cpu(), {seed = 1})
    local b = tir.nd.random({K, N}, "float16", tir.cpu(), {seed = 2})
    local c = tir.nd.empty({M, N}, "float16")
    tir.interpret(sch.mod, {a, b, c})
    local c0 = tir.nd.empty({M, N}, "float16")
    tir.interpret(func, {a, b, c0})
    local st = tir.testing.assert_allclose(c, c0, {rtol = 1e-2, atol = 1e-2})
    print(("interpreter: tensorized equals untensorized, max abs error %.3g"):format(st.max_abs))
    -- the lowered kernels (ldmatrix lanes, mma fragments, cp.async groups, barriers) on the
    -- warp-accurate simulator, which raises on races, missing waits or wrong lane mappings
    local cs = tir.nd.empty({M, N}, "float16")
    local rep = tir.simulate(mod, {a, b, cs})
    local st2 = tir.testing.assert_allclose(cs, c0, {rtol = 1e-2, atol = 1e-2})
    print(("simulator: %s, %s, %d cp.async, %s, %s, no races; max abs error %.3g"):format(util.count(rep.ctas, "CTA"),
      util.count(rep.warp_ops, "warp-level op"), rep.cp_async, util.count(rep.tma_copies, "TMA copy", "TMA copies"),
      util.count(rep.barriers, "barrier"), st2.max_abs))
  end
end
