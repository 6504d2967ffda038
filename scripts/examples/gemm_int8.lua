-- gemm_int8.lua -- an int8 GEMM on tensor cores (IMMA): mma.sync.aligned.m16n8k32 s8 x s8 -> s32
-- with ldmatrix and a cp.async pipeline (tir.schedules.tc_gemm, intrin "mma"):
--   C[i, j] = sum_k i32(A[i, k]) * i32(B[j, k])     A: M x K int8, B: N x K int8 (both k-major,
--   tc_gemm's layout "NT" -- cuBLASLt's "TN"), C: M x N int32 (exact; wraps like CUDA's int)
-- Prints the scheduled IR and the PTX lines with its instructions.  With a GPU it runs M x N x K
-- (default 4096^3), checks every element against a CUDA-core int32 kernel and a sample against
-- int64 arithmetic on the CPU, and prints TOP/s; without one it runs the lowered kernels on the
-- warp-accurate simulator at a small size and checks them bit-exactly against the interpreter.
--   tirlua scripts/examples/gemm_int8.lua [M N K] [uint8]     (uint8: u8 A x s8 B)
local tir = require("tir")
local util = require("tir.util")
local tc = require("tir.schedules.tc_gemm")

local dev = tir.device("cuda", 0)
-- a copy of an NDArray on another device (NDArray:copyfrom copies across devices)
local function copy_to(x, dev)
  local y = tir.nd.empty(x:shape(), x:dtype(), dev)
  y:copyfrom(x)
  return y
end
local has_gpu, why = dev:exists()
local function size(i, d)
  local a = arg and arg[i]
  if a == nil or a == "uint8" then return d end
  return math.tointeger(tonumber(a)) or -1
end
local M = size(1, has_gpu and 4096 or 128)
local N, K = size(2, M), size(3, M)
if M <= 0 or N <= 0 or K <= 0 then
  io.stderr:write("usage: tirlua scripts/examples/gemm_int8.lua [M N K] [uint8]\n")
  os.exit(1)
end
local a_dt = "int8"
for _, v in ipairs(arg or {}) do if v == "uint8" then a_dt = "uint8" end end

-- tiles: 128x128x128 CTAs of 8 warps (64x32 each: 127 registers, 2 CTAs = 16 warps per SM),
-- 3 stages, XOR-swizzled shared tiles (no padding) on a GPU -- the best measured, 741 TOP/s at
-- 4096^3 on the H200 against 656 for 4 warps of 64x64 with padded rows (bench/RESULTS.md "DP4A
-- and IMMA mma.sync speed"); the same shape at a small size for the simulator (8 warps of 32x16)
local o = {intrin = "mma", BM = 128, BN = 128, BK = 128, warp_m = 64, warp_n = 32, stages = 3, swizzle = true}
if not has_gpu then o.BM, o.BN, o.BK, o.warp_m, o.warp_n = 64, 64, 64, 32, 16 end
local pad = (M % o.BM ~= 0 or N % o.BN ~= 0 or K % o.BK ~= 0) and {o.BM, o.BN, o.BK} or nil
local func = tc.workload(M, N, K, {a_dt, "int8"}, "int32", pad, "NT")
local sch = tc.schedule(func, o)
print(("-- scheduled TensorIR (IMMA m16n8k32, %dx%dx%d, %s x int8 -> int32)"):format(M, N, K, a_dt))
print(sch.mod)
local mod = tir.build(sch.mod, "cuda")
local ptx = mod:get_source("ptx") or ""
print(("-- PTX lines with tensor-core and async-copy instructions (%s; first of each kind)"):format(mod:arch()))
for _, x in ipairs(tir.testing.ptx_instructions(ptx, {"mma%.sync%.aligned[%w%.]*", "ldmatrix%.sync%.aligned[%w%.]*",
    "cp%.async%.c[ga]%.shared%.global[^;]*", "cp%.async%.commit_group", "cp%.async%.wait_group[^;]*"})) do
  print(("  %4d x  %s"):format(x.count, x.first))
end

local lo = a_dt == "uint8" and 0 or -128
local hi = a_dt == "uint8" and 255 or 127
if has_gpu then
  local a = tir.nd.random({M, K}, a_dt, tir.cpu(), {seed = 1, low = lo, high = hi})
  local b = tir.nd.random({N, K}, "int8", tir.cpu(), {seed = 2, low = -128, high = 127})
  local ga, gb = copy_to(a, dev), copy_to(b, dev)
  local gc = tir.nd.empty({M, N}, "int32", dev)
  mod(ga, gb, gc)
  -- every element against a CUDA-core kernel (the same compute, one thread per element)
  local ref = tc.workload(M, N, K, {a_dt, "int8"}, "int32", nil, "NT")
  local rs = tir.Schedule(ref)
  local i, j, k = rs:get_loops(rs:get_block("C"))
  local io_, ii = rs:split(i, {nil, 16})
  local jo, ji = rs:split(j, {nil, 16})
  rs:reorder(io_, jo, ii, ji, k)
  rs:bind(io_, "blockIdx.y"); rs:bind(jo, "blockIdx.x"); rs:bind(ii, "threadIdx.y"); rs:bind(ji, "threadIdx.x")
  local rmod = tir.build(rs.mod, "cuda")
  local gr = tir.nd.empty({M, N}, "int32", dev)
  rmod(ga, gb, gr)
  local c, r = copy_to(gc, tir.cpu()), copy_to(gr, tir.cpu())
  local bad = 0
  for e = 0, M * N - 1 do if c:get(e) ~= r:get(e) then bad = bad + 1 end end
  -- and a sample against int64 arithmetic on the CPU
  local sbad, samples = 0, 256
  for s = 0, samples - 1 do
    local ii_, jj = (s * 7919) % M, (s * 104729) % N
    local acc = 0
    for kk = 0, K - 1 do acc = acc + a:get(ii_, kk) * b:get(jj, kk) end
    acc = ((acc + 2147483648) % 4294967296) - 2147483648 -- int32 wrap (never reached for K < 2^17)
    if c:get(ii_, jj) ~= acc then sbad = sbad + 1 end
  end
  local t = mod:time_evaluator({number = 10, repeat_ = 5})(ga, gb, gc)
  local ops = 2.0 * M * N * K
  print(("-- %s: %.3f ms, %.1f TOP/s; %s: %d of %d elements differ from the CUDA-core kernel, %d of %d samples from int64"):format(
    dev:info().name, t * 1e3, ops / t / 1e12, (bad == 0 and sbad == 0) and "bit-exact" or "WRONG", bad, M * N, sbad, samples))
  -- cuBLASLt int8 (CUDA_R_8I in, CUDA_R_32I out, the same k-major operands) where it opens
  local lt_ok = a_dt == "int8" and tir.core.cublaslt_available and tir.core.cublaslt_available()
  if lt_ok then
    local gl = tir.nd.empty({M, N}, "int32", dev)
    tir.core.cublaslt_gemm_int8(ga, gb, gl)
    local l = copy_to(gl, tir.cpu())
    local lbad = 0
    for e = 0, M * N - 1 do if c:get(e) ~= l:get(e) then lbad = lbad + 1 end end
    local tl = tir.core.cuda_time(function() tir.core.cublaslt_gemm_int8(ga, gb, gl) end, 0, 3, 10, 5)
    print(("-- cuBLASLt int8: %.3f ms, %.1f TOP/s (tirlua / cuBLASLt = %.3f); %d of %d elements differ from it"):format(
      tl * 1e3, ops / tl / 1e12, tl / t, lbad, M * N))
    bad = bad + lbad
  end
  if bad ~= 0 or sbad ~= 0 then os.exit(1) end
else
  print(("-- no GPU (%s): the warp-accurate simulator runs the lowered kernels at %dx%dx%d"):format(why, M, N, K))
  local a = tir.nd.random({M, K}, a_dt, tir.cpu(), {seed = 1, low = lo, high = hi})
  local b = tir.nd.random({N, K}, "int8", tir.cpu(), {seed = 2, low = -128, high = 127})
  local c0 = tir.nd.empty({M, N}, "int32")
  tir.interpret(func, {a, b, c0})
  local c = tir.nd.empty({M, N}, "int32")
  local rep = tir.simulate(mod, {a, b, c})
  local bad = 0
  for e = 0, M * N - 1 do if c:get(e) ~= c0:get(e) then bad = bad + 1 end end
  print(("simulator: %s, %s, %d cp.async, %s, no races; %s against the interpreter (%d of %d elements differ)")
    :format(util.count(rep.ctas, "CTA"), util.count(rep.warp_ops, "warp-level op"), rep.cp_async, util.count(rep.barriers, "barrier"),
            bad == 0 and "bit-exact" or "WRONG", bad, M * N))
  if bad ~= 0 then os.exit(1) end
end
