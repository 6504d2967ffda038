-- matmul.lua -- the tirlua main job: a te.compute matmul, scheduled in Lua, built for CUDA,
-- run on the GPU when one exists (else on the CPU interpreter), checked against a float64
-- reference.
--   tirlua scripts/examples/matmul.lua [M N K]
-- Default size: 1024^3 on a GPU, 128^3 on the interpreter.
local tir = require("tir")
local te = tir.te

local dev = tir.device("cuda", 0)
local has_gpu, why = dev:exists()
local default = has_gpu and 1024 or 128
local function size_arg(i, fallback)
  local a = arg and arg[i]
  if a == nil then return fallback end
  return math.tointeger(tonumber(a)) or -1
end
local M = size_arg(1, default)
local N = size_arg(2, M)
local K = size_arg(3, N)
if M <= 0 or N <= 0 or K <= 0 then
  io.stderr:write("usage: tirlua scripts/examples/matmul.lua [M N K]  (positive integers)\n")
  os.exit(1)
end

-- 1. The computation.
local A = te.placeholder({M, K}, "float32", "A")
local B = te.placeholder({K, N}, "float32", "B")
local k = te.reduce_axis({0, K}, "k")
local C = te.compute({M, N}, function(i, j) return te.sum(A[{i, k}] * B[{k, j}], {k}) end, "C")
local func = te.create_prim_func({A, B, C})
print("-- TensorIR from te.create_prim_func")
print(func)

-- 2. The schedule: 16x16 output tiles, one thread per element.
local sch = tir.Schedule(func)
local blk = sch:get_block("C")
local i, j, kk = sch:get_loops(blk)
local bi, ti = sch:split(i, {nil, 16})
local bj, tj = sch:split(j, {nil, 16})
sch:reorder(bi, bj, ti, tj, kk)
sch:bind(bi, "blockIdx.y"); sch:bind(bj, "blockIdx.x")
sch:bind(ti, "threadIdx.y"); sch:bind(tj, "threadIdx.x")
print("-- scheduled TensorIR")
print(sch.mod)
print("-- trace")
io.write(sch:trace())

-- 3. Build: lower, emit CUDA C, compile with NVRTC (works without a GPU).
local mod = tir.build(sch.mod, "cuda")
print("-- CUDA C (" .. mod:arch() .. ")")
print(mod:get_source("cuda"))
local ptx = mod:get_source("ptx") or ""
print(("-- PTX: %d lines; entry: %s"):format(select(2, ptx:gsub("\n", "")), ptx:match("%.entry%s+([%w_]+)") or "?"))

-- 4. Inputs and the float64 reference.
local a = tir.nd.random({M, K}, "float32", tir.cpu(), {seed = 1})
local b = tir.nd.random({K, N}, "float32", tir.cpu(), {seed = 2})
local ref = tir.testing.ref_matmul(a, b)
local flops = 2.0 * M * N * K

if has_gpu then
  local info = dev:info()
  print(("-- running on %s (%s), %dx%dx%d"):format(info.name, info.arch, M, N, K))
  local da, db = a:to(dev), b:to(dev)
  local dc = tir.nd.empty({M, N}, "float32", dev)
  mod(da, db, dc)
  local st = tir.testing.assert_allclose(dc, ref, {rtol = 1e-4, atol = 1e-4 * math.sqrt(K)})
  local t = mod:time_evaluator({number = 20, repeat_ = 5})(da, db, dc)
  print(("time %.3f ms, %.2f TFLOP/s; vs float64 reference: max abs error %.3g, relative L2 error %.3g"):format(
    t * 1e3, flops / t / 1e12, st.max_abs, st.rel_l2))
else
  print(("-- no GPU (%s): running the same scheduled function on the CPU interpreter at %dx%dx%d"):format(why, M, N, K))
  local c = tir.nd.empty({M, N}, "float32")
  local t0 = os.clock()
  tir.interpret(sch.mod, {a, b, c})
  local dt = os.clock() - t0
  local st = tir.testing.assert_allclose(c, ref, {rtol = 1e-4, atol = 1e-4 * math.sqrt(K)})
  print(("interpreter %.3f s; vs float64 reference: max abs error %.3g, relative L2 error %.3g"):format(dt, st.max_abs, st.rel_l2))
  print("the CUDA C above is what a GPU would launch: " .. mod:get_source("host"))
end
