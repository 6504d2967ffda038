-- matmul_shared.lua -- the classic tiled SIMT GEMM, scheduled with tirlua's primitives
-- (lib/tir/schedules/simt_gemm.lua holds the schedule; this script shows every step):
--   cache_read of A and B into shared memory + compute_at the K loop, cooperative float4
--   fetches, A's tile stored transposed and B's XOR-swizzled (transform_layout) against bank
--   conflicts, register tiles (cache_read/cache_write "local" + compute_at/reverse_compute_at),
--   unrolled inner loops, vectorized write-back.
--   tirlua scripts/examples/matmul_shared.lua [M N K]       (default 4096^3 on a GPU, 128^3 on the interpreter)
-- Prints the scheduled IR, the trace, the CUDA C and the PTX's shared-memory/vector lines; on a
-- GPU it runs, checks against cuBLAS (or float64 up to 2048) and reports TFLOP/s beside cuBLAS SGEMM.
local tir = require("tir")
local util = require("tir.util")
local te = tir.te
local simt = require("tir.schedules.simt_gemm")

local dev = tir.device("cuda", 0)
local has_gpu, why = dev:exists()
local default = has_gpu and 4096 or 128
local function size_arg(i, fallback)
  local a = arg and arg[i]
  if a == nil then return fallback end
  return math.tointeger(tonumber(a)) or -1
end
local M = size_arg(1, default)
local N = size_arg(2, M)
local K = size_arg(3, N)
if M <= 0 or N <= 0 or K <= 0 then
  io.stderr:write("usage: tirlua scripts/examples/matmul_shared.lua [M N K]  (positive integers)\n")
  os.exit(1)
end

local A = te.placeholder({M, K}, "float32", "A")
local B = te.placeholder({K, N}, "float32", "B")
local k = te.reduce_axis({0, K}, "k")
local C = te.compute({M, N}, function(i, j) return te.sum(A[{i, k}] * B[{k, j}], {k}) end, "C")
local func = te.create_prim_func({A, B, C})

-- stages = 2: the shared tiles double-buffered (the next k step's tiles load while this one computes)
local sch = simt.schedule(func, {stages = 2, async = false})
print("-- scheduled TensorIR")
print(sch.mod)
print("-- trace (replays on the unscheduled function)")
io.write(sch:trace())

local mod = tir.build(sch.mod, "cuda")
print("-- CUDA C (" .. mod:arch() .. ")")
print(mod:get_source("cuda"))
local ptx = mod:get_source("ptx") or ""
local counts = {}
for _, pat in ipairs({"ld%.shared%.v4%.f32", "ld%.shared%.f32", "st%.shared%.v4", "st%.shared%.[fub]32", "ld%.global%.nc%.v4", "ld%.global%.v4",
                      "st%.global%.v4", "fma%.rn%.f32", "bar%.sync"}) do
  local _, n = ptx:gsub(pat, "")
  counts[#counts + 1] = ("%s: %d"):format(pat:gsub("%%", ""), n)
end
print("-- PTX instruction counts: " .. table.concat(counts, ", "))

local flops = 2.0 * M * N * K
if has_gpu then
  local info = dev:info()
  local a = tir.nd.random({M, K}, "float32", dev, {seed = 1})
  local b = tir.nd.random({K, N}, "float32", dev, {seed = 2})
  local c = tir.nd.empty({M, N}, "float32", dev)
  local tol = {rtol = 1e-4, atol = 2e-6 * math.sqrt(K)}
  mod(a, b, c)
  local ok_cublas = tir.core.cublas_available()
  local st
  if M * N * K <= 2048 ^ 3 or not ok_cublas then
    st = tir.testing.assert_allclose(c, tir.testing.ref_matmul(a, b), tol)
  else
    local cref = tir.nd.empty({M, N}, "float32", dev)
    tir.core.cublas_gemm(a, b, cref, false, false, 1.0, 0.0)
    st = tir.testing.assert_allclose(c, cref, tol)
  end
  local t = mod:time_evaluator({number = 10, repeat_ = 5})(a, b, c)
  local r = mod:resources()
  print(("-- %s (%s), %dx%dx%d: %.3f ms, %.2f TFLOP/s; max abs error %.3g; %d registers, %d bytes spilled, %d bytes static shared memory"):format(
    info.name, info.arch, M, N, K, t * 1e3, flops / t / 1e12, st.max_abs, r.registers, r.local_bytes, r.static_smem_bytes))
  if ok_cublas then
    local cref = tir.nd.empty({M, N}, "float32", dev)
    local tc = tir.core.cuda_time(function() tir.core.cublas_gemm(a, b, cref, false, false, 1.0, 0.0) end, 0, 3, 10, 5)
    print(("-- cuBLAS SGEMM: %.3f ms, %.2f TFLOP/s; tirlua / cuBLAS = %.3f"):format(tc * 1e3, flops / tc / 1e12, tc / t))
  end
else
  print(("-- no GPU (%s): running the scheduled function on the CPU interpreter at %dx%dx%d"):format(why, M, N, K))
  local a = tir.nd.random({M, K}, "float32", tir.cpu(), {seed = 1})
  local b = tir.nd.random({K, N}, "float32", tir.cpu(), {seed = 2})
  local c = tir.nd.empty({M, N}, "float32")
  tir.interpret(sch.mod, {a, b, c})
  local st = tir.testing.assert_allclose(c, tir.testing.ref_matmul(a, b), {rtol = 1e-4, atol = 2e-6 * math.sqrt(K)})
  print(("interpreter result matches the float64 reference: max abs error %.3g"):format(st.max_abs))
  -- the lowered kernel, threads in lockstep, shared-memory races checked
  local cs = tir.nd.empty({M, N}, "float32")
  local rep = tir.simulate(mod, {a, b, cs})
  local st2 = tir.testing.assert_allclose(cs, tir.testing.ref_matmul(a, b), {rtol = 1e-4, atol = 2e-6 * math.sqrt(K)})
  print(("simulator (lowered CUDA kernel, %s, %s, no races): max abs error %.3g"):format(util.count(rep.ctas, "CTA"),
    util.count(rep.barriers, "barrier"), st2.max_abs))
end
