-- launch_overhead.lua -- what a launch costs, apart from the kernel: a trivial kernel of 132 CTAs x
-- 128 threads launched back to back (time_evaluator: CUDA events around 200 launches, no sync
-- between them), as a plain kernel and as thread-block clusters of 2 (AttrStmt cluster_dims, the
-- shape inject_tma_pipeline's tma_cluster gives), and the host-side cost of tir.core.cuda_device_info
-- (a launch of a cluster kernel read it every time before stop 11).  Stop 11's question: the {2, 1} /
-- {1, 2} wgmma cluster GEMMs took 0.5-0.8 ms a launch in the bench but 0.20 ms in ncu's timing of one
-- launch, as long as the kernel without clusters.  Prints one line per measurement (microseconds).
--   tirlua scripts/gpu/launch_overhead.lua
local tir = require("tir")
local T = tir.script

local function trivial(cluster)
  local f = T.prim_func("trivial", {A = T.Buffer({132 * 128}, "float32")}, function(A)
    local bx = T.launch_thread("blockIdx.x", 132)
    local tx = T.launch_thread("threadIdx.x", 128)
    local body = function() A[{bx * 128 + tx}] = A[{bx * 128 + tx}] + T.float32(1) end
    -- (inside the launch, as inject_tma_pipeline puts it)
    if cluster then T.attr(nil, "cluster_dims", cluster, body) else body() end
  end)
  return tir.build(f, "cuda -arch=sm_90a")
end

local dev = tir.device("cuda", 0)
local a = tir.nd.empty({132 * 128}, "float32", dev)
for _, c in ipairs({{"plain", nil}, {"cluster 2x1x1", {2, 1, 1}}}) do
  local ok, err = pcall(function()
    local mod = trivial(c[2])
    mod(a)
    local t = mod:time_evaluator({number = 200, repeat_ = 3, warmup = 5})(a)
    print(("launch_overhead: trivial kernel, %s: %.1f us a launch (back to back)"):format(c[1], t * 1e6))
  end)
  if not ok then print(("launch_overhead: trivial kernel, %s: failed: %s"):format(c[1], tostring(err):match("[^\n]*"))) end
end
-- a small wgmma GEMM (512^3: a few microseconds of work) with and without cluster = {2, 1}
local tc = require("tir.schedules.tc_gemm")
for _, cl in ipairs({false, {2, 1}}) do
  local ok, err = pcall(function()
    local f = tc.workload(512, 512, 512, "float16", "float16", nil, "NT")
    local o = {intrin = "wgmma", BM = 128, BN = 256, BK = 64, stages = 4, tma = true, warp_specialize = true, epilogue = "D"}
    if cl then o.cluster = cl end
    local mod = tir.build(tc.schedule(f, o).mod, "cuda -arch=sm_90a")
    local x = tir.nd.random({512, 512}, "float16", dev, {seed = 1})
    local y = tir.nd.random({512, 512}, "float16", dev, {seed = 2})
    local d = tir.nd.empty({512, 512}, "float16", dev)
    mod(x, y, d)
    local t = mod:time_evaluator({number = 100, repeat_ = 3, warmup = 5})(x, y, d)
    print(("launch_overhead: wgmma GEMM 512^3 %s: %.1f us a launch (back to back)"):format(cl and "cluster {2, 1}" or "no cluster", t * 1e6))
  end)
  if not ok then print(("launch_overhead: wgmma GEMM 512^3: failed: %s"):format(tostring(err):match("[^\n]*"))) end
end
local per = tir.core.cuda_time(function() tir.core.cuda_device_info(0) end, 0, 2, 200, 3)
print(("launch_overhead: tir.core.cuda_device_info(0): %.1f us a call"):format(per * 1e6))
