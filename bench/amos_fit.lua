-- bench/amos_fit.lua -- the workloads, the rank statistics and the fit of tir.amos's cost-model
-- weights (amos.COST) that bench/amos_calibrate.lua runs and tests/spec/amos_cost_spec.lua checks:
--   local F = dofile("bench/amos_fit.lua")
--   F.WORKLOADS                      {name, function() -> PrimFunc, block name} ...
--   local set = F.load(path)         the measured rows of a bench/amos_calibrate.lua data file,
--                                    grouped by workload, with features from enumerating again
--   F.score(set, weights [, only, skip]) -> mean Spearman, log-MSE, per-workload Spearman,
--                                    fraction of pairs ordered wrongly, mean regret, per-workload regret
--   F.fit(set [, skip]) -> weights   coordinate descent over a log grid (skip: a workload left out)
local tir = require("tir")
local W = dofile("tests/spec/amos_workloads.lua")
local F = {}

F.INTRIN = "mma.m16n8k16"
-- fp16 workloads (fp32 accumulation): matmul in every layout, padded matmuls, batched matmul,
-- conv2d NHWC and NCHW, dilated, grouped, strided 7x7 first layer (C = 3), conv1d
F.WORKLOADS = {
  {"matmul NN 2048^3", function() return W.matmul(2048, 2048, 2048, "NN") end},
  {"matmul NT 2048^3", function() return W.matmul(2048, 2048, 2048, "NT") end},
  {"matmul TN 2048^3", function() return W.matmul(2048, 2048, 2048, "TN") end},
  {"matmul TT 2048^3", function() return W.matmul(2048, 2048, 2048, "TT") end},
  {"matmul NN 1000x520x300 (padded)", function() return W.matmul(1000, 520, 300, "NN") end},
  {"matmul TT 1000x520x300 (padded)", function() return W.matmul(1000, 520, 300, "TT") end},
  {"batch_matmul 16x512x512x256", function() return W.batch_matmul(16, 512, 512, 256, false) end},
  {"batch_matmul 16x512x512x256, shared B", function() return W.batch_matmul(16, 512, 512, 256, true) end},
  {"conv2d NHWC 3x3 56x56x64->64 N=8", function() return W.conv2d(8, 56, 56, 64, 64, 3, 3, {pad = 1}) end},
  {"conv2d NCHW 3x3 28x28x128->128 N=8", function() return W.conv2d(8, 28, 28, 128, 128, 3, 3, {pad = 1, layout = "NCHW"}) end},
  {"conv2d NHWC 3x3 dilation 2 28x28x128->128 N=8", function() return W.conv2d(8, 28, 28, 128, 128, 3, 3, {pad = 2, dilation = 2}) end},
  {"conv2d NHWC 3x3 groups 4 28x28x128->128 N=8", function() return W.conv2d(8, 28, 28, 128, 128, 3, 3, {pad = 1, groups = 4}) end},
  {"conv2d NHWC 7x7/2 112x112x3->64 N=8", function() return W.conv2d(8, 112, 112, 3, 64, 7, 7, {pad = 3, stride = 2}) end},
  {"conv1d NWC 3 L=1024 C=128->128 N=8", function() return W.conv1d(8, 1024, 128, 128, 3) end},
}

-- Spearman's rank correlation (average ranks for ties)
local function ranks(v)
  local idx = {}
  for i = 1, #v do idx[i] = i end
  table.sort(idx, function(a, b) return v[a] < v[b] end)
  local r, i = {}, 1
  while i <= #idx do
    local j = i
    while j < #idx and v[idx[j + 1]] == v[idx[i]] do j = j + 1 end
    for k = i, j do r[idx[k]] = (i + j) / 2 end
    i = j + 1
  end
  return r
end
function F.spearman(x, y)
  local n = #x
  if n < 2 then return nil end
  local rx, ry = ranks(x), ranks(y)
  local mx, my = 0, 0
  for i = 1, n do mx, my = mx + rx[i], my + ry[i] end
  mx, my = mx / n, my / n
  local sxy, sxx, syy = 0, 0, 0
  for i = 1, n do
    sxy = sxy + (rx[i] - mx) * (ry[i] - my)
    sxx, syy = sxx + (rx[i] - mx) ^ 2, syy + (ry[i] - my) ^ 2
  end
  if sxx == 0 or syy == 0 then return nil end
  return sxy / math.sqrt(sxx * syy)
end

function F.load(path)
  local data = dofile(path)
-- the features come from enumerating the workloads again (the same code the ranking runs, so
-- a feature added to amos.lua later is fitted on the same measurements), matched to the
-- measured rows by mapping and operand order
  local by, order, feats = {}, {}, {}
  for _, w in ipairs(F.WORKLOADS) do
    local f, blk = w[2]()
    for _, c in ipairs(tir.amos.mappings(f, blk, F.INTRIN)) do feats[w[1] .. "|" .. c:describe() .. "|" .. tostring(c.swap)] = c.features end
  end
  for _, r in ipairs(data.rows) do
    if r.measured then
      local ft = feats[r.workload .. "|" .. r.mapping .. "|" .. tostring(r.swap)]
      if not ft then error(("bench/amos_fit.lua: no candidate %s (swap %s) of workload %s any more"):format(r.mapping, tostring(r.swap), r.workload), 0) end
      if not by[r.workload] then by[r.workload] = {} order[#order + 1] = r.workload end
      table.insert(by[r.workload], {measured = r.measured, features = ft})
    end
  end
  return {data = data, by = by, order = order}
end

-- mean Spearman over the workloads (with at least 3 measured candidates), the log-MSE, the
-- fraction of candidate pairs of one workload ordered wrongly (ties count half; every
-- workload), and the mean regret: the measured time of the predicted-best candidate over the
-- measured best
function F.score(set, wt, only, skip)
  local by, order = set.by, set.order
  local sum, n, sse, m, bad, pairs_, reg, nreg = 0, 0, 0, 0, 0, 0, 0, 0
  local per, per_regret = {}, {}
  for _, name in ipairs(order) do
    if (not only or only == name) and skip ~= name then
      local p, y = {}, {}
      local ibest, ymin = 1, math.huge
      for _, r in ipairs(by[name]) do
        p[#p + 1] = tir.amos.predict(r.features, wt)
        y[#y + 1] = r.measured
        sse, m = sse + (math.log(p[#p]) - math.log(r.measured)) ^ 2, m + 1
        if p[#p] < p[ibest] then ibest = #p end
        ymin = math.min(ymin, r.measured)
      end
      for i = 1, #p do
        for j = i + 1, #p do
          if y[i] ~= y[j] then
            pairs_ = pairs_ + 1
            if p[i] == p[j] then bad = bad + 0.5 elseif (p[i] < p[j]) ~= (y[i] < y[j]) then bad = bad + 1 end
          end
        end
      end
      per_regret[name] = y[ibest] / ymin
      reg, nreg = reg + y[ibest] / ymin, nreg + 1
      local rho = #p >= 3 and F.spearman(p, y) or nil
      per[name] = rho
      if rho then sum, n = sum + rho, n + 1 end
    end
  end
  return n > 0 and sum / n or 0, m > 0 and sse / m or 0, per, pairs_ > 0 and bad / pairs_ or 0, nreg > 0 and reg / nreg or 1, per_regret
end

local EXP = {0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 2, 2.5, 3}
local GRID = {mma = {}, l2 = {}, dram = {}, launch = {}, pad = EXP, gather = EXP}
for e = -16, 16 do
  local v = 2 ^ (e / 4)
  for _, k in ipairs({"mma", "l2", "dram", "launch"}) do table.insert(GRID[k], v) end
end
F.KEYS = {"mma", "pad", "l2", "gather", "dram", "launch"}

-- coordinate descent from the uncalibrated weights: the objective is the log-MSE (which also
-- calibrates the scale) plus the fraction of pairs ordered wrongly
function F.fit(set, skip, keys)
  keys = keys or F.KEYS
  local wt = {}
  for k, v in pairs(tir.amos.COST_UNCALIBRATED) do wt[k] = v end
  local function obj(w)
    local _, mse, _, disc = F.score(set, w, nil, skip)
    return mse + disc
  end
  local best = obj(wt)
  for _ = 1, 6 do
    local moved = false
    for _, k in ipairs(keys) do
      for _, v in ipairs(GRID[k]) do
        local old = wt[k]
        wt[k] = v
        local o = obj(wt)
        if o < best - 1e-12 then best, moved = o, true else wt[k] = old end
      end
    end
    if not moved then break end
  end
  return wt
end


return F
