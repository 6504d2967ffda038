-- bench/conv2d.lua -- the 23 distinct convolution layers of ResNet-50 v1.5 (53 convolutions; the
-- stride 2 sits in the bottleneck's 3x3, as in v1.5) at N = 128, fp16 NHWC in and out, fp32
-- accumulation: tirlua (tir.schedules.conv2d_tc: implicit GEMM or explicit im2col + tc_gemm; the
-- 1x1 stride-1 layers as plain tc_gemm GEMMs) against cuDNN in one process, on the same random
-- inputs.  cuDNN: tir.cudnn.conv2d_plan's search (path "best": every engine configuration the
-- backend API's heuristics (mode A + fallback) list, and every legacy FindEx algorithm, each
-- run and timed; the fastest is the reference -- see lib/tir/cudnn.lua).  Every result is
-- checked first: cuDNN's and tirlua's sampled outputs against a float64 direct convolution,
-- then all of tirlua's outputs against cuDNN's.  Per layer the best tirlua lowering (both are built and
-- timed when both apply) and its tiles; then the total over the 53 layers weighted by their
-- occurrences ("resnet50_total", target <= 1.1x cuDNN) and the geomean over the 3x3 layers.
--   tirlua bench/conv2d.lua [--n=128] [--layers=1,5,...] [--variants=implicit,im2col,wgmma] [--wgmma_tiles=rule|near|all]
--        [--gemm_tiles=rule|near|all|store] [--gemm_tiles_layers=4,8] [--layer_variants=1:implicit+wgmma,...]
--        [--cudnn_path=best|backend|legacy|legacy_ex] [--cudnn_rtc] [--cudnn_configs=32]
--        [--cudnn_candidates]     print every cuDNN candidate (engine / algorithm, ms, note)
--        [--wgmma_epilogue=plain,direct,bias_relu]  the wgmma candidates' epilogues: plain (the default: the fp16
--                                 cast from the staged accumulators, 16-byte stores), direct (the cast fused into the
--                                 fragments' 4-byte stores: epilogue_store = "direct"), bias_relu (+ bias (float32 [F])
--                                 and relu, staged; checked at 64 sampled outputs against float64 with the bias and
--                                 relu, and every output against relu(cuDNN + bias)), tma (the tile stored by TMA from
--                                 shared memory: epilogue_store = "tma"); with several, the first is built for every tile, the others for the rule's
--        [--wgmma_ws]             also the warp-specialized implicit GEMMs of conv2d_tc.wgmma_ws_space (a producer
--                                 warpgroup gathers A by cp.async, B by TMA) on the non-1x1 wgmma layers
--        [--wgmma_im2col[=extra]] also the implicit GEMMs whose A tile comes by TMA in im2col mode
--                                 (conv2d_tc.wgmma_im2col_space [its "extra" level]) on the non-1x1 wgmma layers
--        [--cudnn_only]           the reference alone (no tirlua kernel built): rows "conv2d_cudnn",
--                                 the chosen cuDNN engine against legacy Find's pick
--     wgmma: conv2d_tc intrin = "wgmma" (implicit GEMM, weight packed [F, Kp]; sm_90a), with the tiles of
--     conv2d_tc.wgmma_implicit_tiles (rule, the default), every tiling of conv2d_tc.wgmma_space (all) or those of
--     at least min(F, 128) x 128 elements and the rule's (near); every candidate is timed and printed.
--     The 1x1 stride-1 layers with wgmma: the GEMM of conv2d_tc.wgmma_gemm with wgmma_gemm_tiles' pick
--     (gemm_tiles rule), or also wgmma_gemm_space(level) and wgmma_tiles (near, all; store: the two
--     TMA-store extras only), on the layers of --gemm_tiles_layers (default all).  --layer_variants
--     overrides --variants per layer (conv1 on both the mma.sync and the wgmma implicit GEMM)
--   TIRLUA_BENCH_OUT=file                append the markdown table to that file
--   tirlua bench/conv2d.lua --dry          without a GPU: schedule, lower and emit CUDA C for every
--                                         layer (no NVRTC, nothing timed), and list the layers
-- Rows go to bench/results.jsonl through bench/common.lua (bench "conv2d").
local tir = require("tir")
local common = dofile("bench/common.lua")

local opt = {n = 128, dry = false, wgmma_tiles = "rule", gemm_tiles = "rule"}
for _, a in ipairs(arg or {}) do
  local k, v = a:match("^%-%-([%w_]+)=?(.*)$")
  if k == "dry" then opt.dry = true
  elseif k == "cudnn_rtc" or k == "cudnn_candidates" or k == "cudnn_only" or k == "wgmma_ws" then opt[k] = true
  elseif k == "wgmma_im2col" and (v == "" or v == "extra") then opt[k] = v == "" and true or v
  elseif k == "cudnn_path" then opt.cudnn_path = v
  elseif k == "cudnn_configs" then opt.cudnn_configs = math.tointeger(tonumber(v))
  elseif k == "n" then opt.n = math.tointeger(tonumber(v))
  elseif k == "layers" or k == "variants" or k == "wgmma_epilogue" then opt[k] = v
  elseif (k == "wgmma_tiles" or k == "gemm_tiles") and (v == "rule" or v == "all" or v == "near" or (k == "gemm_tiles" and v == "store")) then opt[k] = v
  elseif k == "gemm_tiles_layers" then opt[k] = {}; for i in v:gmatch("%d+") do opt[k][tonumber(i)] = true end
  elseif k == "layer_variants" then opt[k] = v
  else error("bench/conv2d.lua: unknown argument " .. a .. " (--n=N --layers=i,j --variants=implicit,im2col,wgmma --wgmma_tiles=rule|near|all --gemm_tiles=rule|near|all|store --gemm_tiles_layers=i,j --layer_variants=i:v+v,... --wgmma_epilogue=plain,bias_relu --cudnn_path=P --cudnn_rtc --cudnn_configs=N --cudnn_candidates --cudnn_only --dry)") end
end

-- ResNet-50 v1.5 at 224x224: {name, H (= W) of the input, C, F (output channels), R (= S), stride, padding, occurrences}
local LAYERS = {
  {"conv1", 224, 3, 64, 7, 2, 3, 1},
  -- conv2_x (56x56, 3 bottlenecks)
  {"conv2_1x1_reduce_first", 56, 64, 64, 1, 1, 0, 1},
  {"conv2_3x3", 56, 64, 64, 3, 1, 1, 3},
  {"conv2_1x1_expand+proj", 56, 64, 256, 1, 1, 0, 4}, -- 3 expands + the projection shortcut (64 -> 256, stride 1)
  {"conv2_1x1_reduce", 56, 256, 64, 1, 1, 0, 2},
  -- conv3_x (28x28, 4 bottlenecks; the first's 3x3 has stride 2)
  {"conv3_1x1_reduce_first", 56, 256, 128, 1, 1, 0, 1},
  {"conv3_3x3_s2", 56, 128, 128, 3, 2, 1, 1},
  {"conv3_1x1_expand", 28, 128, 512, 1, 1, 0, 4},
  {"conv3_proj_s2", 56, 256, 512, 1, 2, 0, 1},
  {"conv3_1x1_reduce", 28, 512, 128, 1, 1, 0, 3},
  {"conv3_3x3", 28, 128, 128, 3, 1, 1, 3},
  -- conv4_x (14x14, 6 bottlenecks)
  {"conv4_1x1_reduce_first", 28, 512, 256, 1, 1, 0, 1},
  {"conv4_3x3_s2", 28, 256, 256, 3, 2, 1, 1},
  {"conv4_1x1_expand", 14, 256, 1024, 1, 1, 0, 6},
  {"conv4_proj_s2", 28, 512, 1024, 1, 2, 0, 1},
  {"conv4_1x1_reduce", 14, 1024, 256, 1, 1, 0, 5},
  {"conv4_3x3", 14, 256, 256, 3, 1, 1, 5},
  -- conv5_x (7x7, 3 bottlenecks)
  {"conv5_1x1_reduce_first", 14, 1024, 512, 1, 1, 0, 1},
  {"conv5_3x3_s2", 14, 512, 512, 3, 2, 1, 1},
  {"conv5_1x1_expand", 7, 512, 2048, 1, 1, 0, 3},
  {"conv5_proj_s2", 14, 1024, 2048, 1, 2, 0, 1},
  {"conv5_1x1_reduce", 7, 2048, 512, 1, 1, 0, 2},
  {"conv5_3x3", 7, 512, 512, 3, 1, 1, 2},
}
local total_count = 0
for _, l in ipairs(LAYERS) do total_count = total_count + l[8] end
assert(#LAYERS == 23 and total_count == 53, "ResNet-50 has 23 distinct conv layers, 53 in all")

local selected = {}
if opt.layers then
  for i in opt.layers:gmatch("%d+") do selected[#selected + 1] = tonumber(i) end
else
  for i = 1, #LAYERS do selected[i] = i end
end
local function variant_list(text)
  local l = {}
  for v in text:gmatch("[^,+]+") do
    if v ~= "implicit" and v ~= "im2col" and v ~= "wgmma" then error("bench/conv2d.lua: unknown variant " .. v .. " (implicit, im2col, wgmma)") end
    l[#l + 1] = v
  end
  return l
end
local variants_all = variant_list(opt.variants or "implicit,im2col,wgmma")
local layer_variants = {} -- --layer_variants=1:implicit+wgmma,9:wgmma: per layer, instead of --variants
for i, v in (opt.layer_variants or ""):gmatch("(%d+):([%w_+]+)") do layer_variants[tonumber(i)] = variant_list(v) end

local function layer_info(l, N)
  local name, H, C, F, R, stride, pad, count = table.unpack(l)
  local P = (H + 2 * pad - R) // stride + 1
  return {name = name, N = N, H = H, W = H, C = C, F = F, R = R, S = R, stride = stride, padding = pad, count = count, P = P, Q = P,
          M = N * P * P, K = C * R * R, flops = 2.0 * N * P * P * F * C * R * R}
end

local function shape_key(L)
  return ("N%d_%dx%dx%d_to_%d_%dx%d_s%d_p%d"):format(L.N, L.H, L.W, L.C, L.F, L.R, L.S, L.stride, L.padding)
end

-- wgmma schedule options as the mapping column shows them
local function wgmma_desc(o)
  local t = {("BM%d BN%d BK%d, %d stage(s), wgmma_pending %d"):format(o.BM, o.BN, o.BK, o.stages, o.wgmma_pending or 1)}
  if o.tma then t[#t + 1] = "TMA" end
  if o.warp_specialize then t[#t + 1] = "warp-specialized" end
  if o.persistent then t[#t + 1] = o.persistent_tail and "persistent (persistent_tail: up to one CTA an SM)" or "persistent" end
  if o.epilogue_store == "tma" then t[#t + 1] = "TMA-store epilogue" end
  return table.concat(t, ", ")
end

-- Every tirlua candidate of a layer: {lowering, mapping (text), sch (Schedule), args = function(x, wm, out)}.
-- The 1x1 stride-1 layers are GEMMs (x viewed as [N*H*W, C], the packed weight [C, F]): tc_gemm;
-- the others go through conv2d_tc's two lowerings (both, unless --variants says otherwise).
local function candidates(L, index)
  local variants = layer_variants[index] or variants_all
  local tc = require("tir.schedules.tc_gemm")
  local ct = require("tir.schedules.conv2d_tc")
  local wl = {N = L.N, H = L.H, W = L.W, C = L.C, F = L.F, R = L.R, S = L.S, stride = L.stride, padding = L.padding}
  local func, info = ct.workload(wl)
  local topts, how = ct.layer_options(info)
  if topts.BM and info.M % topts.BM ~= 0 then
    wl.pad_m = topts.BM
    func, info = ct.workload(wl)
  end
  local function tiles(o)
    return ("BM%d BN%d BK%d warps %dx%d, %d stage(s) [%s]"):format(o.BM or tc.defaults.BM, o.BN or tc.defaults.BN, o.BK or tc.defaults.BK,
      o.warp_m or tc.defaults.warp_m, o.warp_n or tc.defaults.warp_n, o.stages or 1, how)
  end
  local out = {}
  if ct.is_gemm(info) then
    local wg, mma = false, false
    for _, v in ipairs(variants) do wg, mma = wg or v == "wgmma", mma or v == "implicit" or v == "im2col" end
    if mma or not wg then -- (--variants=wgmma: the wgmma GEMMs only)
      local g = tc.workload(info.M, L.F, L.C, "float16", "float16")
      local o = {epilogue = "D"}
      for k, v in pairs(topts) do o[k] = v end
      out[1] = {lowering = "tc_gemm", mapping = ("GEMM %dx%dx%d, %s"):format(info.M, L.F, L.C, tiles(o)), sch = tc.schedule(g, o),
                info = info, gemm = true}
    end
    if wg then
      -- the same GEMM on wgmma: x [M, C] times the OHWI kernel itself as B [F, C] (K-major: tc_gemm's
      -- "NT" layout, no packing; conv2d_tc.wgmma_gemm): the tiles of conv2d_tc.wgmma_tiles for the layer
      -- (cp.async copies), and with --gemm_tiles=near|all conv2d_tc.wgmma_gemm_space's TMA pipelines
      -- (warp-specialized + persistent, persistent with the TMA-store epilogue)
      local _, i0 = ct.workload{N = L.N, H = L.H, W = L.W, C = L.C, F = L.F, R = 1, S = 1, weight_layout = "FK"}
      local okr, r = pcall(ct.wgmma_gemm_tiles, i0)
      local list = {}
      if okr then list[1] = {o = r, how = "wgmma_gemm_tiles rule"} else io.write(("  %s: wgmma_gemm_tiles refused: %s\n"):format(L.name, tostring(r):match("[^\n]*"))) end
      local function same(a, b)
        for k, v in pairs(a) do if b[k] ~= v then return false end end
        for k, v in pairs(b) do if a[k] ~= v then return false end end
        return true
      end
      if opt.gemm_tiles ~= "rule" and (not opt.gemm_tiles_layers or opt.gemm_tiles_layers[index]) then
        -- the rest of the space, and (but for "store") the implicit GEMM's cp.async tiles (wgmma_tiles) on the GEMM
        local more = ct.wgmma_gemm_space(i0, opt.gemm_tiles)
        local okw, rw = pcall(ct.wgmma_tiles, i0)
        if okw and opt.gemm_tiles ~= "store" then table.insert(more, 1, rw) end
        for _, o in ipairs(more) do
          if not (okr and same(o, r)) then list[#list + 1] = {o = o, how = o == rw and "wgmma_tiles" or "wgmma_gemm_space"} end
        end
      end
      for _, e in ipairs(list) do
        local so = {}
        for k, v in pairs(e.o) do so[k] = v end
        local ok, sch = pcall(ct.wgmma_gemm, i0, so)
        if ok then
          out[#out + 1] = {lowering = "tc_gemm_wgmma", mapping = ("GEMM %dx%dx%d on wgmma m64n%dk16, %s [%s]"):format(info.M, L.F, L.C, so.BN,
                           wgmma_desc(so), e.how), sch = sch, info = info, gemm = true, sm90 = true}
        else
          io.write(("  %s: GEMM on wgmma %s refused: %s\n"):format(L.name, wgmma_desc(so), tostring(sch):match("[^\n]*")))
        end
      end
    end
    return out, info
  end
  for _, v in ipairs(variants) do
    if v == "wgmma" then
      -- implicit GEMM on wgmma: the weight packed K-major (Wm [F, Kp], weight_layout = "FK").  A pixel
      -- narrower than 16 bytes (conv1's C = 3) is padded by X_pad (a kernel of its own; the packed weight's
      -- rows there are zero): to 8 bytes (Cp 4, 8-byte cp.async copies, K = 196 -> Kp 224) and, with
      -- --wgmma_tiles=near|all, to 16 bytes too (Cp 8: 16-byte copies, twice the k steps: Kp 416)
      wl.weight_layout, wl.pad_m = "FK", nil
      for _, pad_c in ipairs(L.C * 2 < 16 and opt.wgmma_tiles ~= "rule" and {false, 8} or {false}) do
      wl.pad_c = pad_c or nil
      local f0, i0 = ct.workload(wl)
      local list, rule = {}, nil
      local okr, r = pcall(ct.wgmma_implicit_tiles, i0)
      if okr then rule = r else io.write(("  %s: wgmma refused: %s\n"):format(L.name, tostring(r):match("[^\n]*"))) end
      local function same(a, b) return a.BM == b.BM and a.BN == b.BN and a.BK == b.BK and a.stages == b.stages and a.wgmma_pending == b.wgmma_pending end
      if rule then list[1] = rule end
      -- (the cp.async tile of wgmma_tiles too, where the rule picked another kernel: both in one process)
      local okc, rc = pcall(ct.wgmma_tiles, i0)
      if okc and rule and rule.warp_specialize then list[#list + 1] = rc end
      if opt.wgmma_tiles ~= "rule" then
        for _, o in ipairs(ct.wgmma_space(i0)) do
          if not (rule and same(o, rule)) and (opt.wgmma_tiles == "all" or o.BM * o.BN >= math.min(L.F, 128) * 128) then list[#list + 1] = o end
        end
      end
      if opt.wgmma_ws then
        local function same_all(a, b)
          for k, v in pairs(a) do if (type(v) == "table" and type(b[k]) ~= "table") or (type(v) ~= "table" and b[k] ~= v) then return false end end
          for k, v in pairs(b) do if (type(v) == "table" and type(a[k]) ~= "table") or (type(v) ~= "table" and a[k] ~= v) then return false end end
          return true
        end
        for _, o in ipairs(ct.wgmma_ws_space(i0)) do if not (rule and same_all(o, rule)) then list[#list + 1] = o end end
      end
      if opt.wgmma_im2col then
        for _, o in ipairs(ct.wgmma_im2col_space(i0, opt.wgmma_im2col == "extra" and "extra" or nil)) do if not (rule and rule.a_im2col and rule.BM == o.BM and rule.BN == o.BN and
          rule.epilogue_store == o.epilogue_store and rule.warp_specialize == o.warp_specialize and rule.persistent == o.persistent and
          rule.persistent_tail == o.persistent_tail) then list[#list + 1] = o end end
      end
      -- the epilogues (--wgmma_epilogue): the plain cast, and + bias, relu (a workload of its own)
      local epis = {}
      for e in (opt.wgmma_epilogue or "plain"):gmatch("[^,]+") do
        if e ~= "plain" and e ~= "direct" and e ~= "bias_relu" and e ~= "tma" then
          error("bench/conv2d.lua: --wgmma_epilogue takes plain, direct, tma and/or bias_relu, got " .. e)
        end
        epis[#epis + 1] = e
      end
      local fbr
      for _, e in ipairs(epis) do
        if e == "bias_relu" and not fbr then
          wl.bias, wl.activation = true, "relu"
          fbr = ct.workload(wl)
          wl.bias, wl.activation = nil, nil
        end
      end
      for _, o in ipairs(list) do
        for q, e in ipairs(epis) do
          if q > 1 and o ~= rule then break end
          if q > 1 and e == "tma" and o.epilogue_store == "tma" then goto next_epi end
          local so = {variant = "implicit"}
          for k, x in pairs(o) do so[k] = x end
          if e == "direct" or e == "tma" then so.epilogue_store = e end
          local how = o == rule and "wgmma_implicit_tiles rule" or o == rc and "wgmma_tiles" or o.a_im2col and "wgmma_im2col_space" or
                      o.warp_specialize and "wgmma_ws_space" or opt.wgmma_tiles == "all" and "wgmma_space"
                      or "wgmma_space near"
          local ok, sch = pcall(ct.schedule, e == "bias_relu" and fbr or f0, so)
          if ok then
            out[#out + 1] = {lowering = e == "bias_relu" and "implicit_wgmma_bias_relu" or e == "direct" and "implicit_wgmma_direct" or
                             e == "tma" and "implicit_wgmma_tma_store" or "implicit_wgmma",
                             mapping = ("implicit GEMM on wgmma m64n%dk16 M=%d N=%d K=%d (%sKp %d), BM%d BN%d BK%d, " ..
                             "%d warpgroup(s), %d stage(s), wgmma_pending %d, %s [%s]"):format(o.BN, i0.M, L.F, i0.K,
                             i0.Cp ~= L.C and ("C padded to %d, "):format(i0.Cp) or "", i0.Kp, o.BM, o.BN, o.BK, o.BM // 64, o.stages,
                             o.wgmma_pending, o.a_im2col and ("A by TMA im2col, B by TMA, %s%s%s epilogue"):format(o.warp_specialize and
                             "warp-specialized, " or "", o.persistent_tail and "persistent (one CTA an SM), " or o.persistent and "persistent, " or "",
                             o.epilogue_store) or
                             o.warp_specialize and ("warp-specialized (A gathered by a producer warpgroup, B by TMA), %s%s epilogue")
                             :format(o.persistent and (o.persistent_tail and "persistent (persistent_tail), " or "persistent, ") or "", o.epilogue_store) or
                             ({plain = "staged store", direct = "direct fragment store", bias_relu = "+ bias + relu, staged store",
                               tma = "TMA-store epilogue"})[e], how),
                             sch = sch, info = i0, fk = true, sm90 = true, bias_relu = e == "bias_relu"}
          else
            io.write(("  %s: wgmma BM%d BN%d (%s) refused: %s\n"):format(L.name, o.BM, o.BN, e, tostring(sch):match("[^\n]*")))
          end
          ::next_epi::
        end
      end
      end
      wl.weight_layout, wl.pad_c = nil, nil
      goto next_variant
    end
    do
    local o = {variant = v}
    for k, x in pairs(topts) do o[k] = x end
    local ok, sch = pcall(ct.schedule, func, o)
    local label = v == "implicit" and "implicit_gemm" or "im2col"
    if ok then
      out[#out + 1] = {lowering = label, mapping = ("%s M=%d N=%d K=%d (Kp %d), %s"):format(v == "implicit" and "implicit GEMM" or "im2col + GEMM",
                       info.M, L.F, info.K, info.Kp, tiles(o)), sch = sch, info = info}
    else
      io.write(("  %s: %s refused: %s\n"):format(L.name, label, tostring(sch):match("[^\n]*")))
    end
    end
    ::next_variant::
  end
  return out, info
end

if opt.dry then
  print(("bench/conv2d.lua --dry: %d layers at N = %d, scheduled, lowered and emitted as CUDA C (no NVRTC, nothing run)"):format(#selected, opt.n))
  local t0 = os.clock()
  for _, i in ipairs(selected) do
    local L = layer_info(LAYERS[i], opt.n)
    local t1 = os.clock()
    local cands = candidates(L, i)
    for _, c in ipairs(cands) do
      tir.build(c.sch.mod, c.sm90 and "cuda -arch=sm_90a" or "cuda", {compile = false})
      print(("  %2d %-24s x%d  %-15s %s"):format(i, L.name, L.count, c.lowering, c.mapping))
    end
    print(("     (%.2f s CPU)"):format(os.clock() - t1))
  end
  print(("bench/conv2d.lua --dry: ok (%.1f s CPU)"):format(os.clock() - t0))
  return
end

local dev = common.device("bench/conv2d.lua")
if not dev then return end
local ok_cudnn, where = tir.cudnn.available()
if not ok_cudnn then
  print("bench/conv2d.lua: skipped: " .. tostring(where))
  return
end
print(("bench/conv2d.lua: %s, cuDNN %d (%s), N = %d"):format(dev:info().name, tir.cudnn.version(), where, opt.n))
local ct = require("tir.schedules.conv2d_tc")

-- 32 sampled outputs of out (host, [M, F]) against tir.testing.ref_conv (float64 direct loops) of the
-- host copies xh [N, H, W, C], wh [F, R, S, C] (+ bias bh and relu: the bias_relu epilogue): the largest
-- error, and the first output beyond the tolerance (nil when none)
local function sampled_check(L, xh, wh, out, M, seed, who, bh, points)
  local mf, pts = {}, {}
  for i = 1, points or 32 do
    seed = (seed * 1103515245 + 12345) % 2147483648
    mf[i] = {seed % M, (seed // 7) % L.F}
    pts[i] = mf[i][1] * L.F + mf[i][2] -- (NHWC: output m = (n, p, q) row-major, F channels)
  end
  local want = tir.testing.ref_conv(xh, wh, {stride = L.stride, padding = L.padding, kernel_layout = "OHWI", bias = bh,
                                             activation = bh and "relu" or nil}, pts)
  local worst, bad = 0, nil
  for i, p in ipairs(mf) do
    local m, f = p[1], p[2]
    local e = math.abs(out:get(m, f) - want[i])
    worst = math.max(worst, e)
    if not bad and e > 1e-2 * (1 + math.abs(want[i])) then bad = ("%s out[%d, %d] = %g, float64 %g"):format(who, m, f, out:get(m, f), want[i]) end
  end
  return worst, bad
end

-- relu(y + bias) of cuDNN's plain output y [M, F] (fp16) and a float32 bias [F], as an fp16 [M, F]
-- on the GPU: the whole-output reference of the bias_relu candidates (a host loop over 12-200 MB
-- outputs would take minutes).  One kernel per M x F, built on first use.
local bias_relu_refs = {}
local function bias_relu_ref(M, F)
  local key = M .. "x" .. F
  if not bias_relu_refs[key] then
    local T = tir.script
    local f = T.prim_func("bias_relu_ref", {Y = T.Buffer({M, F}, "float16"), Bv = T.Buffer({F}, "float32"),
                                            E = T.Buffer({M, F}, "float16")}, function(Y, Bv, E)
      for m, n in T.grid(M, F) do
        T.block("E", function()
          local vm, vn = T.axis.remap("SS", {m, n})
          E[{vm, vn}] = T.cast("float16", T.max(T.cast("float32", Y[{vm, vn}]) + Bv[{vn}], T.float32(0)))
        end)
      end
    end)
    local sch = tir.Schedule(f)
    local bx, tx = sch:split(sch:fuse(sch:get_loops(sch:get_block("E"))), {nil, 256})
    sch:bind(bx, "blockIdx.x"); sch:bind(tx, "threadIdx.x")
    bias_relu_refs[key] = tir.build(sch.mod, "cuda")
  end
  return bias_relu_refs[key]
end

-- all candidates of the selected layers, built together (NVRTC on every core)
-- (wgmma kernels: a second list, built for sm_90a; their indices are offset by #funcs below)
local plans, funcs, funcs90 = {}, {}, {}
local tb = os.clock()
for _, i in ipairs(selected) do
  local L = layer_info(LAYERS[i], opt.n)
  local cands, info = candidates(L, i)
  local pack = ct.pack_weight_schedule(ct.pack_weight({R = L.R, S = L.S, C = L.C, F = L.F, kernel_layout = "OHWI"}))
  plans[#plans + 1] = {index = i, L = L, cands = cands, info = info, pack_fk = {}}
  for _, c in ipairs(cands) do
    -- the [Kp, F] packed weight, when a candidate reads it (mma.sync; the wgmma GEMMs read the kernel itself)
    if not c.sm90 and not plans[#plans].pack then plans[#plans].pack = #funcs + 1; funcs[#funcs + 1] = pack.mod end
  end
  for _, c in ipairs(cands) do
    if c.sm90 then
      -- the [F, Kp] packed weight of each Kp the wgmma candidates use (conv1: one per channel padding)
      local pf = plans[#plans].pack_fk
      if c.fk and not pf[c.info.Kp] then
        pf[c.info.Kp] = #funcs + 1
        funcs[#funcs + 1] = ct.pack_weight_schedule(ct.pack_weight({R = L.R, S = L.S, C = L.C, F = L.F, kernel_layout = "OHWI",
                                                                      weight_layout = "FK", pad_c = c.info.Cp ~= L.C and c.info.Cp or nil})).mod
      end
      funcs90[#funcs90 + 1] = c.sch.mod
      c.build90 = #funcs90
    else
      c.build = #funcs + 1
      funcs[#funcs + 1] = c.sch.mod
    end
  end
end
local built = opt.cudnn_only and {} or tir.build_many(funcs, "cuda")
if #funcs90 > 0 and not opt.cudnn_only then
  local b90 = tir.build_many(funcs90, "cuda -arch=sm_90a")
  for _, pl in ipairs(plans) do
    for _, c in ipairs(pl.cands) do
      if c.build90 then c.build = #built + 1; built[#built + 1] = b90[c.build90] end
    end
  end
end
print(("-- %d kernels scheduled and built in %.1f s (CPU time of this thread)"):format(#funcs + #funcs90, os.clock() - tb))

local rows, failures, inputs = {}, 0, {}
print(("%-3s %-24s %3s %-15s %9s %9s %7s  %-22s %s"):format("#", "layer", "x", "tirlua", "ms", "cuDNN ms", "ratio", "cuDNN engine", "mapping"))
-- the fastest timed candidate of one path in a plan's list (legacy Find's pick is FindEx's rank 1)
local function fastest(cands, path, rank1)
  local b
  for _, c in ipairs(cands) do
    if c.path == path and c.ms and (not rank1 or c.rank == 1) and (not b or c.ms < b.ms) then b = c end
  end
  return b
end
local cudnn_opts = {path = opt.cudnn_path, rtc = opt.cudnn_rtc, max_configs = opt.cudnn_configs}
local function run_layer(pl)
  local L, info = pl.L, pl.info
  -- layers with the same input shape share one random input (and its host copy)
  local xkey = ("%dx%dx%dx%d"):format(L.N, L.H, L.W, L.C)
  if not inputs[xkey] then
    local xd = tir.nd.random({L.N, L.H, L.W, L.C}, "float16", dev, {seed = pl.index})
    inputs = {[xkey] = {xd, xd:to(tir.cpu())}} -- one at a time: the previous ones are freed
  end
  local x, xh = inputs[xkey][1], inputs[xkey][2]
  local w = tir.nd.random({L.F, L.R, L.S, L.C}, "float16", dev, {seed = 100 + pl.index})
  local y = tir.nd.empty({L.N, L.P, L.Q, L.F}, "float16", dev)
  local tp = os.clock()
  local plan = tir.cudnn.conv2d_plan(x, w, y, {stride = L.stride, padding = L.padding, path = cudnn_opts.path, rtc = cudnn_opts.rtc,
                                                max_configs = cudnn_opts.max_configs})
  tp = os.clock() - tp
  plan:run(x, w, y)
  local t_ref = tir.core.cuda_time(function() plan:run(x, w, y) end, 0, 3, 10, 5)
  local wh = w:to(tir.cpu())
  local yflat = y:reshape({info.M, L.F})
  -- cuDNN's own output first: 32 sampled outputs against float64 (a wrong engine is cuDNN's fault, not tirlua's)
  local cands = plan:candidates()
  local yh = yflat:to(tir.cpu()) -- (cuDNN's output, kept: every candidate is compared with it)
  local ref_worst, ref_bad = sampled_check(L, xh, wh, yh, info.M, 54321 + pl.index,
                                           ("cuDNN (%s %s)"):format(plan:path(), plan:algo()))
  if ref_bad then error(ref_bad .. ": the reference is wrong", 0) end
  local n_timed, n_listed = 0, 0
  for _, c in ipairs(cands) do
    if c.name ~= "" then n_listed = n_listed + 1 end
    if c.ms then n_timed = n_timed + 1 end
  end
  local legacy_pick, legacy_best = fastest(cands, "legacy FindEx", true), fastest(cands, "legacy FindEx")
  local backend_best = fastest(cands, "backend")
  local heur_top
  for _, c in ipairs(cands) do if c.path == "backend" and c.heuristic == "A" and c.ms and not heur_top then heur_top = c end end
  if opt.cudnn_candidates then
    print(("    cuDNN %s: %d candidates listed, %d timed, search %.2f s CPU:"):format(L.name, n_listed, n_timed, tp))
    for _, c in ipairs(cands) do
      print(("      %-14s %-8s %2d  %-60s %9s  ws %9d  %s"):format(c.path, c.heuristic or "", c.rank, c.name,
        c.ms and ("%.4f"):format(c.ms) or "-", c.workspace_bytes, c.note))
    end
  end
  local function cudnn_line()
    return ("      cuDNN: %d timed in %.2f s; legacy Find's pick %s %s, best legacy %s %s, best backend %s, heuristics A's first %s %s"):format(
      n_timed, tp, legacy_pick and legacy_pick.name or "-", legacy_pick and ("%.4f"):format(legacy_pick.ms) or "-",
      legacy_best and legacy_best.name or "-", legacy_best and ("%.4f"):format(legacy_best.ms) or "-",
      backend_best and ("%.4f"):format(backend_best.ms) or "-", heur_top and heur_top.name or "-", heur_top and ("%.4f"):format(heur_top.ms) or "-")
  end
  local cudnn_fields = {ref_variant = plan:path(), ref_engine = plan:algo(), ref_err_f64 = ref_worst, cudnn_version = tir.cudnn.version(),
                        ref_legacy_find_ms = legacy_pick and legacy_pick.ms, ref_legacy_find_algo = legacy_pick and legacy_pick.name,
                        ref_legacy_best_ms = legacy_best and legacy_best.ms, ref_legacy_best_algo = legacy_best and legacy_best.name,
                        ref_backend_ms = backend_best and backend_best.ms, ref_heur_a_top_ms = heur_top and heur_top.ms,
                        ref_heur_a_top = heur_top and heur_top.name, ref_candidates_timed = n_timed, ref_search_s = tp}
  if opt.cudnn_only then -- the reference alone: its time against legacy Find's pick (no tirlua kernel built)
    if not legacy_pick then error("cuDNN: legacy Find's pick did not run (path " .. (cudnn_opts.path or "best") .. ")", 0) end
    local row = {bench = "conv2d_cudnn", variant = "cuDNN " .. plan:path(), shape = shape_key(L), dtype = "float16", ms = t_ref * 1e3,
                 tflops = L.flops / t_ref / 1e12, ref = "cuDNN legacy Find", ref_ms = legacy_pick.ms, ref_tflops = L.flops / (legacy_pick.ms * 1e-3) / 1e12,
                 layer = L.name, count = L.count, note = "ms: the reference bench/conv2d.lua now uses; ref_ms: the earlier one (Find's first algorithm)"}
    for k, v in pairs(cudnn_fields) do row[k] = v end
    common.record(row)
    row.index = pl.index
    rows[#rows + 1] = row
    print(("%-3d %-24s %3d %-15s %9s %9.4f %7s  %-22s"):format(pl.index, L.name, L.count, "-", "-", t_ref * 1e3, "-", plan:path() .. " " .. plan:algo()))
    print(cudnn_line())
    return
  end
  local wm
  if pl.pack then
    local pm = built[pl.pack]
    if pm.err then error(pm.err, 0) end
    wm = tir.nd.empty({info.Kp, L.F}, "float16", dev)
    pm.mod(w, wm)
  end
  local wm_fk = {} -- [F, Kp] for the wgmma candidates, by Kp (the workload's without pad_m, the same K)
  for kp, at in pairs(pl.pack_fk) do
    local pf = built[at]
    if pf.err then error(pf.err, 0) end
    wm_fk[kp] = tir.nd.empty({L.F, kp}, "float16", dev)
    pf.mod(w, wm_fk[kp])
  end
  local best
  for _, c in ipairs(pl.cands) do
    local b = built[c.build]
    if b.err then
      print(("    %s %s: build failed: %s"):format(L.name, c.lowering, tostring(b.err):match("[^\n]*")))
    else
      local ci = c.info -- (a candidate's own workload: its Mp)
      local out = tir.nd.empty({ci.Mp, L.F}, "float16", dev)
      -- (the wgmma GEMM reads the OHWI kernel [F, 1, 1, C] itself as its K-major B [F, C])
      local args = c.gemm and {x:reshape({info.M, L.C}), c.sm90 and w:reshape({L.F, L.C}) or wm, out} or {x, c.fk and wm_fk[c.info.Kp] or wm, out}
      local bh
      if c.bias_relu then -- + bias, relu: a float32 bias in [-1, 1) (about the outputs' size: relu cuts a good part)
        if not pl.bias then pl.bias = tir.nd.random({L.F}, "float32", dev, {seed = 200 + pl.index, low = -1, high = 1}) end
        bh = pl.bias:to(tir.cpu())
        table.insert(args, 3, pl.bias)
      end
      b.mod(table.unpack(args))
      -- checked before timing: 32 sampled outputs against float64 (the oracle), then every output
      -- against cuDNN's (rows padded to the tile, when M is, are scratch: then the samples only);
      -- the bias_relu candidates: 64 sampled outputs against float64 with the bias and relu, then
      -- every output against relu(cuDNN's plain output + bias) (bias_relu_ref, on the GPU)
      -- (one host copy of each output: the device-to-host copies of these 12-200 MB outputs are most of
      -- a candidate's cost in this bench)
      local oh = out:to(tir.cpu())
      local worst, why = sampled_check(L, xh, wh, oh, info.M, 12345 + pl.index, "tirlua", bh, bh and 64 or 32)
      local ok = why == nil
      local st = {}
      if ok and ci.Mp == ci.M then
        local ref = yh
        if bh then
          if not pl.bias_ref_h then
            local e = tir.nd.empty({info.M, L.F}, "float16", dev)
            bias_relu_ref(info.M, L.F)(yflat, pl.bias, e)
            pl.bias_ref_h = e:to(tir.cpu())
          end
          ref = pl.bias_ref_h
        end
        local okc, stc = pcall(tir.testing.assert_allclose, oh, ref, {rtol = 1e-2, atol = 2e-2 * math.sqrt(info.K / 64)})
        if okc then st = stc
        else ok, why = false, ("tirlua (right at the float64 points) and cuDNN%s differ: "):format(bh and " + bias + relu" or "") ..
                              tostring(stc):gsub("\n", "; ") end
      end
      if not ok then
        failures = failures + 1
        print(("    %s %s: WRONG RESULT: %s"):format(L.name, c.lowering, why))
      else
        local t = b.mod:time_evaluator({number = 10, repeat_ = 5})(table.unpack(args))
        c.ms, c.err_cudnn, c.err_f64 = t * 1e3, st.max_abs, worst
        print(("      %s %s: %.4f ms (%.1f TFLOP/s)"):format(L.name, c.mapping, c.ms, L.flops / t / 1e12))
        if not c.bias_relu and (not best or c.ms < best.ms) then best = c end
      end
    end
  end
  if best then
    local row = {bench = "conv2d", variant = best.lowering, shape = shape_key(L), dtype = "float16", ms = best.ms,
                 tflops = L.flops / (best.ms * 1e-3) / 1e12, ref = "cuDNN", ref_ms = t_ref * 1e3,
                 ref_tflops = L.flops / t_ref / 1e12, layer = L.name, count = L.count, mapping = best.mapping,
                 max_err_cudnn = best.err_cudnn, max_err_f64 = best.err_f64}
    for k, v in pairs(cudnn_fields) do row[k] = v end -- which cuDNN path and engine the reference is, and what the other paths gave
    -- each lowering's best time, and every candidate's ("mapping: ms; ...")
    local all = {}
    for _, c in ipairs(pl.cands) do
      if c.ms then
        row["ms_" .. c.lowering] = math.min(row["ms_" .. c.lowering] or math.huge, c.ms)
        all[#all + 1] = ("%s: %.4f"):format(c.mapping, c.ms)
      end
    end
    row.candidates = table.concat(all, "; ")
    common.record(row)
    row.index = pl.index
    rows[#rows + 1] = row
    print(("%-3d %-24s %3d %-15s %9.4f %9.4f %7.3f  %-22s %s"):format(pl.index, L.name, L.count, best.lowering, best.ms, t_ref * 1e3,
      t_ref * 1e3 / best.ms, plan:path() .. " " .. plan:algo(), best.mapping))
    print(cudnn_line())
  end
end
for _, pl in ipairs(plans) do
  local ok, err = pcall(run_layer, pl)
  if not ok then -- one layer's failure (cuDNN, a launch) is reported; the others still run
    failures = failures + 1
    print(("    %s: FAILED: %s"):format(pl.L.name, tostring(err):gsub("\n", "; ")))
  end
  io.stdout:flush()
  collectgarbage() -- the layer's device arrays (hundreds of MB) go now, not when Lua's heap grows
end

-- the weighted total over ResNet-50's 53 convolutions and the geomean over the 3x3 layers
table.sort(rows, function(a, b) return a.index < b.index end) -- (--layers may list them in any order)
local summary
if opt.cudnn_only and #rows == #LAYERS then
  -- the reference's total over the 53 against the earlier reference's (Find's first) and the paths alone
  local tot, tot_find, tot_backend, tot_legacy = 0, 0, 0, 0
  local wins = {}
  for _, r in ipairs(rows) do
    tot, tot_find = tot + r.count * r.ms, tot_find + r.count * r.ref_ms
    tot_backend = tot_backend and r.ref_backend_ms and tot_backend + r.count * r.ref_backend_ms
    tot_legacy = tot_legacy and r.ref_legacy_best_ms and tot_legacy + r.count * r.ref_legacy_best_ms
    wins[r.ref_variant] = (wins[r.ref_variant] or 0) + 1
  end
  common.record{bench = "conv2d_cudnn", variant = "resnet50_total", shape = ("N%d_53_layers"):format(opt.n), dtype = "float16", ms = tot,
                ref = "cuDNN legacy Find", ref_ms = tot_find, ref_backend_ms = tot_backend or nil, ref_legacy_best_ms = tot_legacy or nil,
                cudnn_version = tir.cudnn.version(), note = "ms: the best cuDNN candidate per layer (path " .. (cudnn_opts.path or "best") .. ")"}
  local w = {}
  for k, v in pairs(wins) do w[#w + 1] = ("%s %d"):format(k, v) end
  table.sort(w)
  summary = ("cuDNN over the 53 convolutions: best candidate %.3f ms; legacy Find's pick %.3f ms (%.2fx); best backend engine %s ms; " ..
             "best legacy FindEx algorithm %s ms; layers won: %s"):format(tot, tot_find, tot_find / tot,
             tot_backend and ("%.3f"):format(tot_backend) or "-", tot_legacy and ("%.3f"):format(tot_legacy) or "-", table.concat(w, ", "))
  print(summary)
elseif #rows == #LAYERS then
  local tot, tot_ref, lg, lg_ref, n3 = 0, 0, 0, 0, 0
  local tot_legacy, tot_backend = 0, 0 -- the same sum with legacy Find's pick / the best backend engine only
  for _, r in ipairs(rows) do
    tot, tot_ref = tot + r.count * r.ms, tot_ref + r.count * r.ref_ms
    tot_legacy = tot_legacy and r.ref_legacy_find_ms and tot_legacy + r.count * r.ref_legacy_find_ms
    tot_backend = tot_backend and r.ref_backend_ms and tot_backend + r.count * r.ref_backend_ms
    if r.shape:match("_3x3_") then lg, lg_ref, n3 = lg + math.log(r.ms), lg_ref + math.log(r.ref_ms), n3 + 1 end
  end
  local g, g_ref = math.exp(lg / n3), math.exp(lg_ref / n3)
  local path = cudnn_opts.path or "best"
  common.record{bench = "conv2d", variant = "resnet50_total", shape = ("N%d_53_layers"):format(opt.n), dtype = "float16", ms = tot,
                ref = "cuDNN", ref_ms = tot_ref, ref_variant = path, target = "ms <= 1.1 x ref_ms",
                ref_legacy_find_ms = tot_legacy or nil, ref_backend_ms = tot_backend or nil, cudnn_version = tir.cudnn.version()}
  common.record{bench = "conv2d", variant = "geomean_3x3", shape = ("N%d_%d_3x3_layers"):format(opt.n, n3), dtype = "float16", ms = g,
                ref = "cuDNN", ref_ms = g_ref, ref_variant = path, target = "ratio >= 0.9", cudnn_version = tir.cudnn.version()}
  summary = ("resnet50_total: tirlua %.3f ms, cuDNN (%s) %.3f ms over the 53 convolutions: %.3fx cuDNN's time (target <= 1.1x)\n" ..
             "geomean over the %d 3x3 layers: cuDNN / tirlua = %.3f (target >= 0.9)\n" ..
             "cuDNN paths over the 53: legacy Find's pick %s ms, best backend engine %s ms"):format(tot, path, tot_ref, tot / tot_ref, n3, g_ref / g,
             tot_legacy and ("%.3f"):format(tot_legacy) or "-", tot_backend and ("%.3f"):format(tot_backend) or "-")
  print(summary)
elseif #rows > 0 and not opt.cudnn_only then
  -- a subset: its weighted sum (rows "resnet50_partial", the layers named), so that two runs' subsets can
  -- be combined -- and such a total says it combines runs
  local tot, tot_ref, names = 0, 0, {}
  for _, r in ipairs(rows) do tot, tot_ref, names[#names + 1] = tot + r.count * r.ms, tot_ref + r.count * r.ref_ms, tostring(r.index) end
  common.record{bench = "conv2d", variant = "resnet50_partial", shape = ("N%d_layers_%s"):format(opt.n, table.concat(names, "_")), dtype = "float16",
                ms = tot, ref = "cuDNN", ref_ms = tot_ref, ref_variant = cudnn_opts.path or "best", cudnn_version = tir.cudnn.version()}
  summary = ("%d of %d layers measured (%s): weighted sum tirlua %.3f ms, cuDNN %.3f ms (%.3fx)"):format(#rows, #LAYERS, table.concat(names, ","),
            tot, tot_ref, tot / tot_ref)
  -- every 3x3 layer measured (a --layers subset of them): their geomean too, as in the whole run
  local lg, lg_ref, n3, all3 = 0, 0, 0, 0
  for _, l in ipairs(LAYERS) do if l[5] == 3 then all3 = all3 + 1 end end
  for _, r in ipairs(rows) do
    if r.shape:match("_3x3_") then lg, lg_ref, n3 = lg + math.log(r.ms), lg_ref + math.log(r.ref_ms), n3 + 1 end
  end
  if n3 == all3 then
    local g, g_ref = math.exp(lg / n3), math.exp(lg_ref / n3)
    common.record{bench = "conv2d", variant = "geomean_3x3", shape = ("N%d_%d_3x3_layers"):format(opt.n, n3), dtype = "float16", ms = g,
                  ref = "cuDNN", ref_ms = g_ref, ref_variant = cudnn_opts.path or "best", target = "ratio >= 0.9", cudnn_version = tir.cudnn.version()}
    summary = summary .. ("\ngeomean over the %d 3x3 layers: cuDNN / tirlua = %.3f (target >= 0.9)"):format(n3, g_ref / g)
  end
  print(summary)
else
  print(("bench/conv2d.lua: %d of %d layers measured: no weighted total"):format(#rows, #LAYERS))
end
-- the markdown table for bench/RESULTS.md
local md = os.getenv("TIRLUA_BENCH_OUT")
if md and #rows > 0 and opt.cudnn_only then
  local f = assert(io.open(md, "a"))
  f:write(("\n### cuDNN's best for ResNet-50 v1.5's convolutions at N = %d (fp16 NHWC, fp32 accumulation)\n\n"):format(opt.n))
  f:write(("%s, %s, cuDNN %d, commit %s; every candidate run and timed with CUDA events (median of 3 samples of 5 runs in the search; the " ..
           "chosen one re-timed: median of 5 samples of 10 launches); its output checked against 32 float64 outputs.\n\n"):format(
           common.date(), common.gpu(), tir.cudnn.version(), common.commit()))
  f:write("| # | layer | x | cuDNN ms | TFLOP/s | path | engine / algorithm | timed | legacy Find's pick ms (algo) | best backend ms | best FindEx ms (algo) | heuristics A's first ms |\n" ..
          "|---|---|---|---|---|---|---|---|---|---|---|---|\n")
  local function f4(v) return v and ("%.4f"):format(v) or "-" end
  for _, r in ipairs(rows) do
    f:write(("| %d | %s | %d | %.4f | %.1f | %s | %s | %d | %s (%s) | %s | %s (%s) | %s |\n"):format(r.index, r.layer, r.count, r.ms, r.tflops,
      r.ref_variant, r.ref_engine, r.ref_candidates_timed, f4(r.ref_legacy_find_ms), r.ref_legacy_find_algo or "-", f4(r.ref_backend_ms),
      f4(r.ref_legacy_best_ms), r.ref_legacy_best_algo or "-", f4(r.ref_heur_a_top_ms)))
  end
  if summary then f:write("\n" .. summary .. "\n") end
  f:close()
elseif md and #rows > 0 then
  local f = assert(io.open(md, "a"))
  f:write(("\n### ResNet-50 v1.5 convolutions at N = %d (fp16 NHWC, fp32 accumulation) vs cuDNN\n\n"):format(opt.n))
  f:write(("%s, %s, cuDNN %d, commit %s; CUDA events, median of 5 samples of 10 launches; cuDNN's and tirlua's outputs checked against 32 " ..
           "float64 outputs and tirlua's against all of cuDNN's first.  ms: tirlua's best lowering.  cuDNN: path %s (the fastest of what " ..
           "it ran); legacy Find ms: the algorithm cudnnFindConvolutionForwardAlgorithm ranks first, timed the same way.\n\n"):format(
           common.date(), common.gpu(), tir.cudnn.version(), common.commit(), cudnn_opts.path or "best"))
  f:write("| # | layer | x | lowering | mapping | tirlua ms | TFLOP/s | cuDNN ms | cuDNN engine | legacy Find ms (algo) | cuDNN / tirlua |\n" ..
          "|---|---|---|---|---|---|---|---|---|---|---|\n")
  for _, r in ipairs(rows) do
    f:write(("| %d | %s | %d | %s | %s | %.4f | %.1f | %.4f | %s %s | %s | %.3f |\n"):format(r.index, r.layer, r.count, r.variant, r.mapping, r.ms,
      r.tflops, r.ref_ms, r.ref_variant, r.ref_engine,
      r.ref_legacy_find_ms and ("%.4f (%s)"):format(r.ref_legacy_find_ms, r.ref_legacy_find_algo) or "-", r.ref_ms / r.ms))
  end
  if summary then f:write("\n" .. summary .. "\n") end
  f:close()
end
if failures > 0 then
  print(("bench/conv2d.lua: %d layer(s) or lowering(s) FAILED or WRONG (see above)"):format(failures))
  os.exit(1)
end
