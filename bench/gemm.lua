-- bench/gemm.lua -- tirlua's fp32 GEMM schedules against cuBLAS SGEMM (FP32, no TF32) in
-- one process, on the same random inputs.  Every result is checked before timing: against
-- cuBLAS, and against a float64 reference (OpenBLAS) up to 2048.
--   tirlua bench/gemm.lua [size ...]         (default 2048 4096 8192)
--   TIRLUA_BENCH_VARIANTS=naive,simt,...     which schedules (see VARIANTS below)
--   TIRLUA_BENCH_OUT=file                    append the markdown table to that file
--   TIRLUA_COMMIT                            the commit named in the table
-- Every row is also appended to bench/results.jsonl (bench/common.lua says where on a GPU machine).
local tir = require("tir")
local te = tir.te
local core = tir.core
local simt = require("tir.schedules.simt_gemm")
local common = dofile("bench/common.lua")

local dev = common.device("bench/gemm.lua")
if not dev then return end
local cublas_ok, cublas_why = core.cublas_available()
if not cublas_ok then error("cuBLAS is needed for the comparison: " .. tostring(cublas_why)) end

local function matmul(n)
  local A = te.placeholder({n, n}, "float32", "A")
  local B = te.placeholder({n, n}, "float32", "B")
  local k = te.reduce_axis({0, n}, "k")
  local C = te.compute({n, n}, function(i, j) return te.sum(A[{i, k}] * B[{k, j}], {k}) end, "C")
  return te.create_prim_func({A, B, C})
end

local VARIANTS = {
  naive = {desc = "16x16 tiles, one output per thread (no shared memory)", make = function(f)
    local sch = tir.Schedule(f)
    local i, j, kk = sch:get_loops(sch:get_block("C"))
    local bi, ti = sch:split(i, {nil, 16})
    local bj, tj = sch:split(j, {nil, 16})
    sch:reorder(bi, bj, ti, tj, kk)
    sch:bind(bi, "blockIdx.y"); sch:bind(bj, "blockIdx.x")
    sch:bind(ti, "threadIdx.y"); sch:bind(tj, "threadIdx.x")
    return sch
  end},
  simt = {desc = "simt_gemm: 128x128x8 CTA tile, 16x16 threads, 8x8 per thread, A tile transposed and B tile XOR-swizzled in shared memory, float4 fetches, shared tiles double-buffered (stages = 2, plain loads)", make = function(f)
    return simt.schedule(f, {stages = 2, async = false})
  end},
  simt_s1 = {desc = "simt_gemm defaults: the same without the pipeline (one shared buffer per tile)", make = function(f)
    return simt.schedule(f)
  end},
  simt_bk16 = {desc = "simt_gemm with BK = 16", make = function(f) return simt.schedule(f, {BK = 16}) end},
  simt_pad = {desc = "simt_gemm with A's shared tile row-major, rows padded (storage_align 16/12) instead of transposed", make = function(f)
    return simt.schedule(f, {a_transpose = false, pad_a = {16, 12}})
  end},
  simt_noswz = {desc = "simt_gemm without B's swizzle (2-way bank conflicts on B reads)", make = function(f)
    return simt.schedule(f, {b_swizzle = false})
  end},
  simt_64 = {desc = "simt_gemm with a 64x64 CTA tile, 8x8 threads, BK = 16", make = function(f)
    return simt.schedule(f, {BM = 64, BN = 64, TY = 8, TX = 8, BK = 16})
  end},
}

local names = {}
for v in (os.getenv("TIRLUA_BENCH_VARIANTS") or "naive,simt,simt_s1"):gmatch("[^,]+") do
  if not VARIANTS[v] then error("unknown variant " .. v) end
  names[#names + 1] = v
end
local sizes = {}
for i = 1, #arg do sizes[#sizes + 1] = math.tointeger(tonumber(arg[i])) end
if #sizes == 0 then sizes = {2048, 4096, 8192} end

local info = dev:info()
local rows = {}
print(("%-12s %-7s %10s %10s %10s %10s %8s %6s %6s"):format("schedule", "M=N=K", "ms", "TFLOP/s", "cuBLAS ms", "cuBLAS TF", "ratio", "regs", "spill"))
for _, n in ipairs(sizes) do
  local a = tir.nd.random({n, n}, "float32", dev, {seed = 11})
  local b = tir.nd.random({n, n}, "float32", dev, {seed = 12})
  local cref = tir.nd.empty({n, n}, "float32", dev)
  core.cublas_gemm(a, b, cref, false, false, 1.0, 0.0)
  core.cuda_sync(0)
  local tol = {rtol = 1e-4, atol = 2e-6 * math.sqrt(n)}
  local ref64 = n <= 2048 and tir.testing.ref_matmul(a, b) or nil
  if ref64 then tir.testing.assert_allclose(cref, ref64, tol) end
  local flops = 2.0 * n * n * n
  for _, v in ipairs(names) do
    local mod = tir.build(VARIANTS[v].make(matmul(n)).mod, "cuda")
    local c = tir.nd.empty({n, n}, "float32", dev)
    mod(a, b, c)
    tir.testing.assert_allclose(c, cref, tol)
    if ref64 then tir.testing.assert_allclose(c, ref64, tol) end
    -- interleave our timing with cuBLAS's so both see the same clocks
    local t_ours = mod:time_evaluator({number = 10, repeat_ = 7, warmup = 3})(a, b, c)
    local t_cublas = core.cuda_time(function() core.cublas_gemm(a, b, cref, false, false, 1.0, 0.0) end, 0, 3, 10, 7)
    local r = mod:resources()
    local row = {variant = v, size = n, ours = t_ours, cublas = t_cublas, tf = flops / t_ours / 1e12,
                 tf_cublas = flops / t_cublas / 1e12, regs = r.registers, spill = r.local_bytes, smem = r.static_smem_bytes}
    row.ratio = row.tf / row.tf_cublas
    rows[#rows + 1] = row
    common.record{bench = "gemm_fp32", variant = v, shape = ("%dx%dx%d"):format(n, n, n), dtype = "float32",
                  ms = t_ours * 1e3, tflops = row.tf, ref = "cuBLAS", ref_ms = t_cublas * 1e3, ref_tflops = row.tf_cublas,
                  gpu = info.name, registers = row.regs}
    print(("%-12s %-7d %10.3f %10.2f %10.3f %10.2f %8.3f %6d %6d"):format(v, n, t_ours * 1e3, row.tf, t_cublas * 1e3,
      row.tf_cublas, row.ratio, row.regs, row.spill))
  end
end

local out = os.getenv("TIRLUA_BENCH_OUT")
if out then
  local commit = common.commit()
  local f = assert(io.open(out, "a"))
  f:write("\n### fp32 GEMM vs cuBLAS SGEMM (FP32 pedantic, no TF32)\n\n")
  f:write(("%s, %s (%s, %d SMs), commit %s; CUDA events, median of 7 samples of 10 launches after 3 warm-ups, " ..
           "cuBLAS timed right after each kernel; results checked against cuBLAS (and float64 up to 2048) first.\n\n"):format(
    os.date("!%Y-%m-%d"), info.name, info.arch, info.sm_count, commit))
  for _, v in ipairs(names) do f:write(("- `%s`: %s\n"):format(v, VARIANTS[v].desc)) end
  f:write("\n| schedule | M=N=K | tirlua ms | TFLOP/s | cuBLAS ms | cuBLAS TFLOP/s | tirlua / cuBLAS | registers | spill bytes | static smem |\n")
  f:write("|---|---|---|---|---|---|---|---|---|---|\n")
  for _, r in ipairs(rows) do
    f:write(("| %s | %d | %.3f | %.2f | %.3f | %.2f | %.3f | %d | %d | %d |\n"):format(r.variant, r.size, r.ours * 1e3, r.tf,
      r.cublas * 1e3, r.tf_cublas, r.ratio, r.regs, r.spill, r.smem))
  end
  f:close()
end
