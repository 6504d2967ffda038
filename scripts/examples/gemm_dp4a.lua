-- gemm_dp4a.lua -- an int8 GEMM (A [M, K] int8 x B [N, K] int8 -> int32) on DP4A: the k loop is
-- tensorized by 4 with tir.intrin.dp4a (dp4a.s32.s32 on int8x4 registers), in
-- tir.schedules.qgemm's SIMT GEMM.  The int8x4 packing is hoisted out of the inner loop into the
-- global -> shared copy: the shared tiles are stored [k / 4][row][k % 4], so each operand's four
-- consecutive k are one aligned 32-bit word (the copies move whole words; dp4a_load = "prmt"
-- packs bytes with prmt.b32 in the inner loop instead).  Prints the scheduled IR and the PTX
-- lines of its dp4a/prmt instructions; on a GPU runs M x N x K (default 4096^3) against
-- cuBLASLt int8 (bit-exact) and prints TOP/s; without a GPU runs the simulator on the same
-- schedule at a small size (default 128^3) and checks it bit-exact against the interpreter.
--   tirlua scripts/examples/gemm_dp4a.lua [M N K]
local util = require("tir.util")
local qm = tir.ops.quantized_matmul
local qg = require("tir.schedules.qgemm")
local dev = tir.device("cuda", 0)
local has_gpu, why = dev:exists()
local M, N, K = dofile((debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./") .. "size_args.lua")(
  "gemm_dp4a", has_gpu and 4096 or 128)
local f = qm{M = M, N = N, K = K, out_dtype = "int32", name = "gemm_int8"}
-- the measured best schedule (qgemm.dp4a_options; 113 TOP/s at 4096^3 on the H200): 128 x 128
-- CTAs with 8 x 8 register tiles, BK 64, 4-byte cp.async copies into padded k-group planes (3
-- stages), lane_tile 4 -- where 128 divides the problem; else qgemm's 64 x 64 defaults
local sch = qg.schedule(f, qg.dp4a_options(M, N))
print(("-- scheduled int8 GEMM %dx%dx%d on DP4A"):format(M, N, K))
print(sch.mod)
local mod = tir.build(sch.mod, "cuda", {compile = has_gpu or tir.core.nvrtc_available()})
local ptx = mod:get_source("ptx")
if ptx then
  print("-- PTX lines with dp4a and prmt (first of each kind)")
  for _, pat in ipairs({"dp4a%.[us]32%.[us]32[^\n]*", "prmt%.b32[^\n]*"}) do
    local first = ptx:match(pat)
    local _, n = ptx:gsub(pat, "")
    if n > 0 then print(("  %4d x  %s"):format(n, first)) end
  end
end
if has_gpu then
  local a = tir.nd.random({M, K}, "int8", dev, {seed = 1})
  local b = tir.nd.random({N, K}, "int8", dev, {seed = 2})
  local c = tir.nd.empty({M, N}, "int32", dev)
  mod(a, b, c)
  local t = mod:time_evaluator({number = 5, repeat_ = 5, warmup = 2})(a, b, c)
  local line = ("-- dp4a GEMM %dx%dx%d: %.3f ms, %.2f TOP/s"):format(M, N, K, t * 1e3, 2.0 * M * N * K / t / 1e12)
  if tir.core.cublaslt_available() then
    local cref = tir.nd.empty({M, N}, "int32", dev)
    tir.core.cublaslt_gemm_int8(a, b, cref)
    tir.core.cuda_sync(0)
    tir.testing.assert_allclose(c, cref, {rtol = 0, atol = 0})
    local tl = tir.core.cuda_time(function() tir.core.cublaslt_gemm_int8(a, b, cref) end, 0, 2, 5, 5)
    line = line .. ("; cuBLASLt int8 %.3f ms, %.2f TOP/s; bit-exact"):format(tl * 1e3, 2.0 * M * N * K / tl / 1e12)
  end
  print(line)
else
  print(("-- no GPU (%s): the simulator runs the lowered kernel at %dx%dx%d"):format(why, M, N, K))
  local args = tir.testing.random_args(f, 3)
  local ref = tir.testing.copy_args(args)
  tir.interpret(f, ref)
  local rep = tir.simulate(mod, args)
  local st = tir.testing.assert_allclose(args[3], ref[3], {rtol = 0, atol = 0})
  print(("simulator: %s, %s, no issues (%d); bit-exact against the interpreter (max abs error %g)"):format(
    util.count(rep.ctas, "CTA"), util.count(rep.barriers or 0, "barrier"), rep.n_issues, st.max_abs))
end
