-- conv_gemm_variants.lua -- times wgmma candidates of ResNet-50's non-3x3 layers without cuDNN: the
-- 1x1 stride-1 layers as GEMMs (conv2d_tc.wgmma_gemm), the others (strided 1x1 projections, conv1)
-- as the implicit GEMM on wgmma (conv2d_tc.schedule, weight packed [F, Kp]); a quick A/B of
-- schedule options on the GPU machine, each output checked at 32 points against a float64 direct
-- convolution first (a wrong kernel is reported and not timed).  cuDNN's times for the ratio are
-- bench/conv2d.lua's (one process with cuDNN).
--   tirlua scripts/gpu/conv_gemm_variants.lua [--space=near|all|store] [--n=128] [--once] LAYER[:opts] ...
--     LAYER: HxCxF (a 1x1 stride-1 layer: 56x64x256 is conv2's expand) or HxCxF[kR]sS (R x R, stride
--     S, padding R // 2: 56x256x512s2 is conv3's projection, 224x3x64k7s2 conv1); each layer runs the
--     rule (wgmma_gemm_tiles / wgmma_tiles) and the rule with every ":"-separated key=value override
--     (e.g. 56x64x256:tma_store_boxes=false, 56x64x256:BN=128:stages=4; a_im2col=auto: A by TMA im2col), and with --space (GEMMs)
--     the candidates of conv2d_tc.wgmma_gemm_space
--   Prints one line per candidate: ms, TFLOP/s, TB/s moved (the input read once, the output written).
--   --once: each candidate launched once and checked, not timed (one launch a candidate, for ncu -c).
local tir = require("tir")
local ct = require("tir.schedules.conv2d_tc")

local n, space, once = 128, nil, false
local layers = {}
for _, a in ipairs(arg) do
  local k, v = a:match("^%-%-(%w+)=(.*)$")
  if a == "--once" then once = true
  elseif k == "space" then space = v
  elseif k == "n" then n = math.tointeger(tonumber(v))
  elseif k then error("conv_gemm_variants.lua: unknown option " .. a)
  else
    local h, c, f, geo, rest = a:match("^(%d+)x(%d+)x(%d+)([ks%d]*)(.*)$")
    local r, st = tonumber(geo and geo:match("k(%d+)") or 1), tonumber(geo and geo:match("s(%d+)") or 1)
    if not h or (rest ~= "" and rest:sub(1, 1) ~= ":") then error("conv_gemm_variants.lua: a layer is HxCxF[kR][sS][:key=value...], got " .. a) end
    local o = {}
    for kv in rest:gmatch(":([^:]+)") do
      local kk, vv = kv:match("^([%w_]+)=(.+)$")
      if not kk then error("conv_gemm_variants.lua: override " .. kv .. " is not key=value") end
      if vv == "true" or vv == "false" then o[kk] = vv == "true" else o[kk] = math.tointeger(tonumber(vv)) or vv end
    end
    local key = h .. "x" .. c .. "x" .. f .. geo
    local L = layers[#layers]
    if not L or L.key ~= key then
      L = {key = key, H = tonumber(h), C = tonumber(c), F = tonumber(f), R = r, stride = st, overrides = {}}
      layers[#layers + 1] = L
    end
    if next(o) then L.overrides[#L.overrides + 1] = o end
  end
end

local function desc(o)
  local t = {}
  for _, k in ipairs({"BM", "BN", "BK", "stages", "wgmma_pending", "tma", "warp_specialize", "persistent", "persistent_tail", "epilogue_store", "tma_store_boxes", "a_im2col",
                      "variant"}) do
    if o[k] ~= nil then t[#t + 1] = k .. "=" .. (type(o[k]) == "table" and "{" .. table.concat(o[k], ",") .. "}" or tostring(o[k])) end
  end
  return table.concat(t, " ")
end

-- every candidate of every layer, built at once (an implicit GEMM's weight packing too)
local funcs, cands = {}, {}
for _, L in ipairs(layers) do
  L.gemm = L.R == 1 and L.stride == 1
  local wl = {N = n, H = L.H, W = L.H, C = L.C, F = L.F, R = L.R, S = L.R, stride = L.stride, padding = L.R // 2, weight_layout = "FK"}
  local func, info = ct.workload(wl)
  L.info, L.P = info, info.P
  if not L.gemm then
    funcs[#funcs + 1] = ct.pack_weight_schedule(ct.pack_weight({R = L.R, S = L.R, C = L.C, F = L.F, kernel_layout = "OHWI", weight_layout = "FK",
                                                                pad_c = info.Cp ~= L.C and info.Cp or nil})).mod
    L.pack = #funcs
  end
  local rule = L.gemm and ct.wgmma_gemm_tiles(info) or ct.wgmma_tiles(info)
  if not L.gemm then rule.variant = "implicit" end
  local list = {{rule, "rule"}}
  for _, ov in ipairs(L.overrides) do
    local o = {}
    for k, v in pairs(rule) do o[k] = v end
    for k, v in pairs(ov) do o[k] = v end
    -- a_im2col=auto: the A tile by TMA in im2col mode, the layer's conv2d_tc.im2col_geometry
    if o.a_im2col == "auto" then o.a_im2col = ct.im2col_geometry(info) or error("conv_gemm_variants.lua: " .. L.key .. ": no TMA im2col") end
    list[#list + 1] = {o, "rule+" .. desc(ov)}
  end
  if space and L.gemm then for _, o in ipairs(ct.wgmma_gemm_space(info, space)) do list[#list + 1] = {o, "space"} end end
  for _, e in ipairs(list) do
    local ok, sch
    if L.gemm then ok, sch = pcall(ct.wgmma_gemm, info, e[1]) else ok, sch = pcall(ct.schedule, func, e[1]) end
    if ok then
      funcs[#funcs + 1] = sch.mod
      cands[#cands + 1] = {L = L, o = e[1], how = e[2], build = #funcs}
    else
      print(("%s %s [%s]: refused: %s"):format(L.key, desc(e[1]), e[2], tostring(sch):match("[^\n]*")))
    end
  end
end
local t0 = os.clock()
local built = tir.build_many(funcs, "cuda -arch=sm_90a")
print(("-- %d kernels built in %.1f s CPU"):format(#funcs, os.clock() - t0))

local dev = tir.device("cuda", 0)
local failures = 0
for _, L in ipairs(layers) do
  local M, C, F = L.info.M, L.C, L.F
  local x = tir.nd.random({n, L.H, L.H, C}, "float16", dev, {seed = 1})
  local w = tir.nd.random({F, L.R, L.R, C}, "float16", dev, {seed = 2})
  local out = tir.nd.empty({L.info.Mp, F}, "float16", dev)
  local xh, wh = x:to(tir.cpu()), w:to(tir.cpu())
  local args
  if L.gemm then args = {x:reshape({M, C}), w:reshape({F, C}), out} -- (a strided layer's M is not x's pixel count)
  else
    local wm = tir.nd.empty({F, L.info.Kp}, "float16", dev)
    local pk = built[L.pack]
    if pk.err then error(pk.err, 0) end
    pk.mod(w, wm)
    args = {x, wm, out}
  end
  local bytes = 2.0 * (M * C + M * F + F * C * L.R * L.R)
  -- 32 sampled outputs (m, f) and their float64 values (tir.testing.ref_conv's direct loops; the
  -- output [M, F] is NHWC, flat index m * F + f), shared by every candidate of the layer
  local seed, mf, pts = 4321, {}, {}
  for i = 1, 32 do
    seed = (seed * 1103515245 + 12345) % 2147483648
    mf[i] = {seed % M, (seed // 7) % F}
    pts[i] = mf[i][1] * F + mf[i][2]
  end
  local want = tir.testing.ref_conv(xh, wh, {stride = L.stride, padding = L.R // 2, kernel_layout = "OHWI"}, pts)
  for _, c in ipairs(cands) do
    if c.L == L then
      local b = built[c.build]
      if b.err then
        failures = failures + 1
        print(("%s %s [%s]: build failed: %s"):format(L.key, desc(c.o), c.how, tostring(b.err):match("[^\n]*")))
      else
        b.mod(table.unpack(args))
        local oh = out:to(tir.cpu())
        local bad = nil
        for i, p in ipairs(mf) do
          if not bad and math.abs(oh:get(p[1], p[2]) - want[i]) > 1e-2 * (1 + math.abs(want[i])) then
            bad = ("out[%d, %d] = %g, float64 %g"):format(p[1], p[2], oh:get(p[1], p[2]), want[i])
          end
        end
        if bad then
          failures = failures + 1
          print(("%s %s [%s]: WRONG: %s"):format(L.key, desc(c.o), c.how, bad))
        elseif once then
          print(("%s %-99s checked [%s]"):format(L.key, desc(c.o), c.how))
        else
          local t = b.mod:time_evaluator({number = 10, repeat_ = 5})(table.unpack(args))
          print(("%s %-99s %8.4f ms %6.1f TFLOP/s %5.2f TB/s [%s]"):format(L.key, desc(c.o), t * 1e3, L.info.flops / t / 1e12, bytes / t / 1e12, c.how))
        end
      end
      io.stdout:flush()
    end
  end
  x, w, out, xh, wh, args = nil, nil, nil, nil, nil, nil
  collectgarbage()
end
if failures > 0 then
  print(("conv_gemm_variants.lua: %d candidate(s) FAILED or WRONG"):format(failures))
  os.exit(1)
end
