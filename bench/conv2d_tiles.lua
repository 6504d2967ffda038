-- bench/conv2d_tiles.lua -- tile sweep of tir.schedules.conv2d_tc's implicit GEMM on ResNet-50's
-- 3x3 layers at N = 128 (fp16 NHWC, fp32 accumulation, fp16 out, no bias): for each layer the
-- default tiles (conv2d_tc.default_tiles) and a few points of conv2d_tc.space, each result
-- compared with cuDNN's first (then timed), against cuDNN (the algorithm
-- cudnnFindConvolutionForwardAlgorithm picks).  What the default-tile heuristic is measured by;
-- bench/conv2d.lua is the whole-network benchmark.
--   tirlua bench/conv2d_tiles.lua [--layers=3x3|all] [--max=N (points per layer, default 8)] [--variant=implicit|im2col]
--   tirlua bench/conv2d_tiles.lua --dry    without a GPU: schedules and emits CUDA C for every point
-- Rows go to bench/results.jsonl through bench/common.lua (bench "conv2d_tiles").
local tir = require("tir")
local common = dofile("bench/common.lua")
local ct = require("tir.schedules.conv2d_tc")

local opt = {layers = "3x3", max = 8, variant = "implicit", dry = false}
for _, a in ipairs(arg or {}) do
  local k, v = a:match("^%-%-([%w_]+)=?(.*)$")
  if k == "dry" then opt.dry = true
  elseif k == "layers" or k == "variant" then opt[k] = v
  elseif k == "max" then opt.max = math.tointeger(tonumber(v))
  else error("bench/conv2d_tiles.lua: unknown argument " .. a .. " (--layers=3x3|all --max=N --variant=implicit|im2col)") end
end

-- {name, H, C, F, R, stride, pad}: the 3x3 layers (v1.5: the strided ones too) and, with
-- --layers=all, the strided 1x1 projections and the stem
local LAYERS = {
  {"conv2_3x3", 56, 64, 64, 3, 1, 1}, {"conv3_3x3_s2", 56, 128, 128, 3, 2, 1}, {"conv3_3x3", 28, 128, 128, 3, 1, 1},
  {"conv4_3x3_s2", 28, 256, 256, 3, 2, 1}, {"conv4_3x3", 14, 256, 256, 3, 1, 1}, {"conv5_3x3_s2", 14, 512, 512, 3, 2, 1},
  {"conv5_3x3", 7, 512, 512, 3, 1, 1},
}
if opt.layers == "all" then
  for _, l in ipairs({{"conv1", 224, 3, 64, 7, 2, 3}, {"conv3_proj_s2", 56, 256, 512, 1, 2, 0}, {"conv4_proj_s2", 28, 512, 1024, 1, 2, 0},
                      {"conv5_proj_s2", 14, 1024, 2048, 1, 2, 0}}) do LAYERS[#LAYERS + 1] = l end
elseif opt.layers ~= "3x3" then
  error("bench/conv2d_tiles.lua: --layers must be 3x3 or all")
end

local dev, has_cudnn, where
if not opt.dry then
  dev = common.device("bench/conv2d_tiles.lua")
  if not dev then return end
  has_cudnn, where = tir.cudnn.available()
  print(("bench/conv2d_tiles.lua: %s, variant %s, cuDNN %s"):format(dev:info().name, opt.variant, has_cudnn and tir.cudnn.version() or where))
end

local function same(a, b) return a.BM == b.BM and a.BN == b.BN and a.BK == b.BK and a.warp_m == b.warp_m and a.warp_n == b.warp_n and a.stages == b.stages end

-- every candidate of every layer, built together
local jobs, funcs = {}, {}
for li, l in ipairs(LAYERS) do
  local name, H, C, F, R, stride, pad = table.unpack(l)
  local layer = {N = 128, H = H, W = H, C = C, F = F, R = R, S = R, stride = stride, padding = pad}
  local _, info = ct.workload(layer)
  local d = ct.default_tiles(info)
  -- the default, then one point per other tiling (its deepest pipeline that fits), then the rest
  local points, seen = {d}, {}
  local rest = {}
  local sp = ct.space(info)
  table.sort(sp, function(a, b) return a.stages * a.BK > b.stages * b.BK end)
  for _, p in ipairs(sp) do
    local tiling = ("%dx%d/%dx%d"):format(p.BM, p.BN, p.warp_m, p.warp_n)
    if info.M % p.BM == 0 and not same(p, d) then
      if not seen[tiling] then seen[tiling] = true; points[#points + 1] = p else rest[#rest + 1] = p end
    end
  end
  for _, p in ipairs(rest) do points[#points + 1] = p end
  while #points > opt.max do table.remove(points) end
  local lw = {}
  for k, v in pairs(layer) do lw[k] = v end
  if info.M % d.BM ~= 0 then lw.pad_m = d.BM end
  local pack = ct.pack_weight_schedule(ct.pack_weight({R = R, S = R, C = C, F = F, kernel_layout = "OHWI"}))
  local job = {name = name, layer = layer, info = info, points = {}, pack = #funcs + 1}
  funcs[#funcs + 1] = pack.mod
  for pi, p in ipairs(points) do
    local l2 = {}
    for k, v in pairs(layer) do l2[k] = v end
    if info.M % p.BM ~= 0 then l2.pad_m = p.BM end
    local f, i2 = ct.workload(l2)
    local so = {variant = opt.variant}
    for k, v in pairs(p) do so[k] = v end
    local ok, sch = pcall(ct.schedule, f, so)
    if ok then
      job.points[#job.points + 1] = {p = p, info = i2, build = #funcs + 1, default = pi == 1}
      funcs[#funcs + 1] = sch.mod
    else
      print(("  %s: %s refused: %s"):format(name, require("tir.json").encode(p), tostring(sch):match("[^\n]*")))
    end
  end
  jobs[li] = job
end
local t0 = os.clock()
if opt.dry then
  for _, job in ipairs(jobs) do
    for _, pt in ipairs(job.points) do
      tir.build(funcs[pt.build], "cuda", {compile = false})
      print(("  %-14s %s%s"):format(job.name, require("tir.json").encode(pt.p), pt.default and " (default)" or ""))
    end
  end
  print(("bench/conv2d_tiles.lua --dry: ok, %d kernels (%.1f s CPU)"):format(#funcs, os.clock() - t0))
  return
end
local built = {}
for i, r in ipairs(tir.build_many(funcs, "cuda")) do
  built[i] = r.mod
  if r.err then print(("  kernel %d failed to build: %s"):format(i, tostring(r.err):match("[^\n]*"))) end
end
print(("-- %d kernels built (%.1f s CPU of this thread)"):format(#funcs, os.clock() - t0))

local json = require("tir.json")
for _, job in ipairs(jobs) do
  local L, info = job.layer, job.info
  local x = tir.nd.random({L.N, L.H, L.W, L.C}, "float16", dev, {seed = 1})
  local w = tir.nd.random({L.F, L.R, L.S, L.C}, "float16", dev, {seed = 2})
  local wm = tir.nd.empty({info.Kp, L.F}, "float16", dev)
  built[job.pack](w, wm)
  local y = tir.nd.empty({L.N, info.P, info.Q, L.F}, "float16", dev)
  local t_ref
  if has_cudnn then
    local plan = tir.cudnn.conv2d_plan(x, w, y, {stride = L.stride, padding = L.padding})
    plan:run(x, w, y)
    t_ref = tir.core.cuda_time(function() plan:run(x, w, y) end, 0, 3, 10, 5)
    job.algo = plan:algo()
  end
  local yref = has_cudnn and y:reshape({info.M, L.F}) or nil
  local best
  -- one point: checked against cuDNN (when the rows are not padded), timed, recorded
  local function measure(pt, mod)
    local out = tir.nd.empty({pt.info.Mp, L.F}, "float16", dev)
    mod(x, wm, out)
    local status = "ok"
    if yref and pt.info.Mp == info.M then
      local ok, err = pcall(tir.testing.assert_allclose, out, yref, {rtol = 2e-2, atol = 2e-2})
      if not ok then status = "WRONG: " .. tostring(err):match("[^\n]*") end
    end
    local t = status == "ok" and mod:time_evaluator({number = 10, repeat_ = 5})(x, wm, out) or nil
    local tf = t and info.flops / t / 1e12
    print(("  %-14s %-62s %s%s"):format(job.name, json.encode(pt.p) .. (pt.default and " (default)" or ""),
      t and ("%.3f ms %6.1f TFLOP/s"):format(t * 1e3, tf) or status,
      (t and t_ref) and ("  cuDNN %.3f ms (%s) ratio %.2f"):format(t_ref * 1e3, job.algo, t_ref / t) or ""))
    if t then
      common.record({bench = "conv2d_tiles", variant = opt.variant .. (pt.default and " default" or ""), shape = ("%s_N128"):format(job.name),
                     dtype = "float16", ms = t * 1e3, tflops = tf, ref = has_cudnn and ("cuDNN " .. job.algo) or nil,
                     ref_ms = t_ref and t_ref * 1e3 or nil, ref_tflops = t_ref and info.flops / t_ref / 1e12 or nil,
                     tiles = ("BM%d BN%d BK%d warps %dx%d stages %d"):format(pt.p.BM, pt.p.BN, pt.p.BK, pt.p.warp_m, pt.p.warp_n, pt.p.stages)})
    end
    return t
  end
  local best
  for _, pt in ipairs(job.points) do
    local mod = built[pt.build]
    local t = mod and measure(pt, mod)
    if t and (not best or t < best.t) then best = {t = t, p = pt.p, default = pt.default} end
  end
  if best then
    print(("  %-14s best %s %.3f ms%s"):format(job.name, json.encode(best.p), best.t * 1e3, best.default and " (the default)" or ""))
  end
end
