-- bench/tune_gemm.lua -- tunes tc_gemm (fp16 in, fp32 accumulate, fp16 out) with tir.tune on the
-- GPU for each shape, prints the wall time of the tuning (NVRTC on all CPU cores in the
-- background while the GPU measures), then times the tuned kernel against cuBLAS in one
-- process on the same random inputs (checked first) and records the rows.
--   tirlua bench/tune_gemm.lua [MxNxK ...]        (default 4096x4096x4096)
--   TIRLUA_TUNE_DB=file                           the tuning database (default: the cache's)
local tir = require("tir")
local core = tir.core
local tt = require("tir.schedules.tc_gemm_tune")
local common = dofile("bench/common.lua")

local dev = common.device("bench/tune_gemm.lua")
if not dev then return end
local info = dev:info()
local shapes = {}
for i = 1, #arg do
  local m, n, k = arg[i]:match("^(%d+)x(%d+)x(%d+)$")
  if not m then error("bench/tune_gemm.lua: shapes are MxNxK, got " .. arg[i]) end
  shapes[#shapes + 1] = {tonumber(m), tonumber(n), tonumber(k)}
end
if #shapes == 0 then shapes = {{4096, 4096, 4096}} end

local function wall()
  local p = io.popen("date +%s.%N")
  local t = tonumber(p:read("*l"))
  p:close()
  return t
end

for _, s in ipairs(shapes) do
  local m, n, k = s[1], s[2], s[3]
  tir.cache.set(nil, false) -- time the real builds, not cache hits
  local t0 = wall()
  local best = tt.tune(m, n, k, {progress = false})
  local t1 = wall()
  tir.cache.set(nil, true)
  local fails = 0
  for _, r in ipairs(best.records) do if r.status ~= "ok" then fails = fails + 1 end end
  print(("tune %dx%dx%d: %d candidates (%d failed) in %.1f s wall on %d CPU cores; best %.3f ms %s"):format(m, n, k, best.tried,
    fails, t1 - t0, core.cpu_count(), best.time_s * 1e3, require("tir.json").encode(best.params)))
  -- the tuned kernel, as a later run gets it (tt.schedule reads the database), against cuBLAS
  local sch, p, how = tt.schedule(m, n, k, {})
  local mod = tir.build(sch.mod, "cuda")
  local a = tir.nd.random({m, k}, "float16", dev, {seed = 21})
  local b = tir.nd.random({k, n}, "float16", dev, {seed = 22})
  local c = tir.nd.empty({m, n}, "float16", dev)
  local cref = tir.nd.empty({m, n}, "float16", dev)
  core.cublas_gemm(a, b, cref, false, false, 1.0, 0.0)
  mod(a, b, c)
  tir.testing.assert_allclose(c, cref, {rtol = 2e-2, atol = 2e-2 * math.sqrt(k / 64)})
  local t = mod:time_evaluator({number = 10, repeat_ = 7, warmup = 3})(a, b, c)
  local tc = core.cuda_time(function() core.cublas_gemm(a, b, cref, false, false, 1.0, 0.0) end, 0, 3, 10, 7)
  local flops = 2.0 * m * n * k
  print(("tuned (%s) %dx%dx%d: %.3f ms %.1f TFLOP/s; cuBLAS %.3f ms %.1f TFLOP/s; ratio %.3f"):format(how, m, n, k, t * 1e3,
    flops / t / 1e12, tc * 1e3, flops / tc / 1e12, tc / t))
  common.record{bench = "gemm_fp16", variant = "mma_tuned", shape = ("%dx%dx%d"):format(m, n, k), dtype = "float16",
                ms = t * 1e3, tflops = flops / t / 1e12, ref = "cuBLAS", ref_ms = tc * 1e3, ref_tflops = flops / tc / 1e12,
                gpu = info.name, params = require("tir.json").encode(p), tune_wall_s = t1 - t0, tune_trials = best.tried}
end
