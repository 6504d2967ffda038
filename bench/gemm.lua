-- bench/gemm.lua -- tirlua's fp32 GEMM against cuBLAS SGEMM (FP32, no TF32) in one process,
-- on the same random inputs.  The result is checked before timing: ours against cuBLAS
-- and both against a float64 reference (OpenBLAS) at sizes where that is cheap.
--   tirlua bench/gemm.lua [size ...]            (default 1024 2048 4096)
--   TIRLUA_BENCH_OUT=file appends the markdown table to that file;
--   TIRLUA_COMMIT names the commit in the table (git's is used when available).
local tir = require("tir")
local te = tir.te
local core = tir.core

local dev = tir.device("cuda", 0)
local ok, why = dev:exists()
if not ok then
  print("bench/gemm.lua: skipped: " .. tostring(why))
  return
end
local cublas_ok, cublas_why = core.cublas_available()
if not cublas_ok then error("cuBLAS is needed for the comparison: " .. tostring(cublas_why)) end

local sizes = {}
for i = 1, #arg do sizes[#sizes + 1] = math.tointeger(tonumber(arg[i])) end
if #sizes == 0 then sizes = {1024, 2048, 4096} end

-- The schedule under test: the baseline SIMT schedule of the main job (16x16 tiles, one
-- output per thread).
local function naive_gemm(M, N, K)
  local A = te.placeholder({M, K}, "float32", "A")
  local B = te.placeholder({K, N}, "float32", "B")
  local k = te.reduce_axis({0, K}, "k")
  local C = te.compute({M, N}, function(i, j) return te.sum(A[{i, k}] * B[{k, j}], {k}) end, "C")
  local sch = tir.Schedule(te.create_prim_func({A, B, C}))
  local i, j, kk = sch:get_loops(sch:get_block("C"))
  local bi, ti = sch:split(i, {nil, 16})
  local bj, tj = sch:split(j, {nil, 16})
  sch:reorder(bi, bj, ti, tj, kk)
  sch:bind(bi, "blockIdx.y"); sch:bind(bj, "blockIdx.x")
  sch:bind(ti, "threadIdx.y"); sch:bind(tj, "threadIdx.x")
  return tir.build(sch.mod, "cuda")
end

local info = dev:info()
local rows = {}
print(("%-16s %12s %12s %12s %10s %12s"):format("M=N=K", "tirlua ms", "tirlua TF/s", "cuBLAS ms", "cuBLAS TF/s", "ratio"))
for _, n in ipairs(sizes) do
  local mod = naive_gemm(n, n, n)
  local a = tir.nd.random({n, n}, "float32", dev, {seed = 11})
  local b = tir.nd.random({n, n}, "float32", dev, {seed = 12})
  local c = tir.nd.empty({n, n}, "float32", dev)
  local cref = tir.nd.empty({n, n}, "float32", dev)
  mod(a, b, c)
  core.cublas_gemm(a, b, cref, false, false, 1.0, 0.0)
  core.cuda_sync(0)
  -- fp32 sums of n products: tolerance grows like sqrt(n) ulps
  local tol = {rtol = 1e-4, atol = 2e-6 * math.sqrt(n)}
  tir.testing.assert_allclose(c, cref, tol)
  if n <= 2048 then tir.testing.assert_allclose(c, tir.testing.ref_matmul(a, b), tol) end
  local t_ours = mod:time_evaluator({number = 10, repeat_ = 7, warmup = 3})(a, b, c)
  local t_cublas = core.cuda_time(function() core.cublas_gemm(a, b, cref, false, false, 1.0, 0.0) end, 0, 3, 10, 7)
  local flops = 2.0 * n * n * n
  local row = {size = n, ours = t_ours, cublas = t_cublas, tf_ours = flops / t_ours / 1e12, tf_cublas = flops / t_cublas / 1e12}
  row.ratio = row.tf_ours / row.tf_cublas
  rows[#rows + 1] = row
  print(("%-16s %12.3f %12.2f %12.3f %10.2f %12.3f"):format(n .. "^3", t_ours * 1e3, row.tf_ours, t_cublas * 1e3, row.tf_cublas, row.ratio))
end

local out = os.getenv("TIRLUA_BENCH_OUT")
if out then
  local commit = os.getenv("TIRLUA_COMMIT")
  if not commit then
    local p = io.popen("git rev-parse --short HEAD 2>/dev/null")
    commit = p and p:read("*l") or "unknown"
    if p then p:close() end
  end
  local f = assert(io.open(out, "a"))
  f:write(("\n### fp32 GEMM, baseline SIMT schedule (16x16 tiles, one output per thread) vs cuBLAS SGEMM (FP32, no TF32)\n\n"))
  f:write(("%s, %s (%s, %d SMs), commit %s; CUDA events, median of 7 samples of 10 launches after 3 warm-ups; result checked first.\n\n"):format(
    os.date("!%Y-%m-%d"), info.name, info.arch, info.sm_count, commit))
  f:write("| M=N=K | tirlua ms | tirlua TFLOP/s | cuBLAS ms | cuBLAS TFLOP/s | tirlua / cuBLAS |\n|---|---|---|---|---|---|\n")
  for _, r in ipairs(rows) do
    f:write(("| %d | %.3f | %.2f | %.3f | %.2f | %.3f |\n"):format(r.size, r.ours * 1e3, r.tf_ours, r.cublas * 1e3, r.tf_cublas, r.ratio))
  end
  f:close()
end
