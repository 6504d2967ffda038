-- bench/amos_calibrate.lua -- calibrates tir.amos's cost model (lib/tir/amos.lua, amos.COST)
-- on measured candidate times.  Two steps:
--   tirlua bench/amos_calibrate.lua --measure [--data=FILE] [--per=N]
--       (GPU) every workload below: its candidate mappings onto mma.m16n8k16 (N per workload,
--       default 10, spread over the predicted ranking so fast and slow ones are measured),
--       applied, built together (tir.build_many), each output checked against the first
--       candidate's, timed (time_evaluator, median of 3 samples of 5 runs); features, the
--       prediction with the weights in force and the time go to FILE (default
--       $OUT/amos_calibration.lua) with the machine, commit and date.
--   tirlua bench/amos_calibrate.lua --fit [--data=bench/amos_calibration.lua]
--       (no GPU) fits amos.COST to those times (least squares on log time; coordinate descent
--       over a log grid) and prints Spearman's rank correlation of predicted vs measured per
--       workload before (the weights in force, and all-1 uncalibrated) and after, a
--       leave-one-workload-out check, and the amos.COST line to put in lib/tir/amos.lua.
--   --dry  like --measure without compiling or timing (CPU time of enumerate + apply + lower)
local tir = require("tir")
local common = dofile("bench/common.lua")
local W = dofile("tests/spec/amos_workloads.lua")

local opt = {per = 10}
for _, a in ipairs(arg or {}) do
  local k, v = a:match("^%-%-([%w_]+)=?(.*)$")
  if k == "measure" or k == "fit" or k == "dry" then opt.mode = k
  elseif k == "data" then opt.data = v
  elseif k == "per" then opt.per = math.tointeger(tonumber(v))
  else error("bench/amos_calibrate.lua: unknown argument " .. a .. " (--measure | --fit | --dry, --data=FILE, --per=N)", 0) end
end
if not opt.mode then error("bench/amos_calibrate.lua: say --measure (GPU), --fit or --dry", 0) end

local INTRIN = "mma.m16n8k16"
-- fp16 workloads (fp32 accumulation): matmul in every layout, padded matmuls, batched matmul,
-- conv2d NHWC and NCHW, dilated, grouped, strided 7x7 first layer (C = 3), conv1d
local WORKLOADS = {
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

-- the candidates to measure: N indices spread over the ranking (always the first and the last)
local function spread(n, k)
  if n <= k then
    local t = {}
    for i = 1, n do t[i] = i end
    return t
  end
  local t, seen = {}, {}
  for j = 0, k - 1 do
    local i = 1 + math.floor(j * (n - 1) / (k - 1) + 0.5)
    if not seen[i] then seen[i] = true t[#t + 1] = i end
  end
  return t
end

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
local function spearman(x, y)
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

local function fmt_lua(v, ind)
  if type(v) == "table" then
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys, function(a, b)
      if type(a) == type(b) then return a < b end
      return type(a) == "number"
    end)
    local parts = {}
    for _, k in ipairs(keys) do
      local key = type(k) == "number" and "" or (k:match("^[%a_][%w_]*$") and (k .. " = ") or ("[%q] = "):format(k))
      parts[#parts + 1] = key .. fmt_lua(v[k], ind .. "  ")
    end
    return "{" .. table.concat(parts, ", ") .. "}"
  elseif type(v) == "string" then return ("%q"):format(v)
  elseif math.type(v) == "integer" then return tostring(v)
  elseif type(v) == "number" then return ("%.6g"):format(v)
  else return tostring(v) end
end

if opt.mode == "measure" or opt.mode == "dry" then
  local dry = opt.mode == "dry"
  local dev
  if not dry then
    dev = common.device("bench/amos_calibrate.lua")
    if not dev then return end
  end
  local t0 = os.clock()
  local plan, funcs = {}, {}
  for wi, w in ipairs(WORKLOADS) do
    local t1 = os.clock()
    local f, blk = w[2]()
    local cands = tir.amos.mappings(f, blk, INTRIN)
    local entry = {name = w[1], f = f, cands = cands, items = {}}
    for _, i in ipairs(spread(#cands, opt.per)) do
      local ok, sch = pcall(function() return (cands:apply(i)) end)
      local c = cands[i]
      local item = {index = i, cand = c}
      if ok then
        item.build = #funcs + 1
        funcs[#funcs + 1] = sch.mod
      else
        item.err = tostring(sch):match("[^\n]*")
      end
      entry.items[#entry.items + 1] = item
    end
    plan[wi] = entry
    for _, it in ipairs(entry.items) do if it.err then print(("  #%d refused: %s"):format(it.index, it.err)) end end
    print(("%-46s %3d candidates, %2d to measure (%.1f s CPU)"):format(w[1], #cands, #entry.items, os.clock() - t1))
    io.stdout:flush()
  end
  local tb = os.clock()
  local built
  if dry then
    for _, m in ipairs(funcs) do tir.build(m, "cuda", {compile = false}) end
  else
    built = tir.build_many(funcs, "cuda")
  end
  print(("-- %d kernels %s in %.1f s CPU of this thread (%.1f s in all)"):format(#funcs, dry and "lowered and emitted" or "built",
    os.clock() - tb, os.clock() - t0))
  if dry then return end
  local rows = {}
  local info = dev:info()
  local path = opt.data or ((os.getenv("OUT") or ".") .. "/amos_calibration.lua")
  -- the data file is rewritten after every workload: a run cut short keeps what it measured
  local function save()
    local data = {machine = ("%s (%s)"):format(info.name, common.gpu()), commit = common.commit(), date = common.date(), intrin = INTRIN,
                  weights_in_force = {}, rows = rows}
    for k, v in pairs(tir.amos.COST) do if type(v) == "number" then data.weights_in_force[k] = v end end
    local f = assert(io.open(path, "w"))
    f:write("-- measured by bench/amos_calibrate.lua --measure; fitted by --fit (lib/tir/amos.lua amos.COST)\nreturn ",
            fmt_lua(data, ""), "\n")
    f:close()
  end
  for _, e in ipairs(plan) do
    local args = {}
    for i, a in ipairs(tir.testing.random_args(e.f, 1)) do args[i] = a:to(dev) end
    local first
    print(("== %s"):format(e.name))
    for _, it in ipairs(e.items) do
      local c = it.cand
      local b = it.build and built[it.build]
      local row = {workload = e.name, index = it.index, mapping = c:describe(), swap = c.swap, waste = c.waste, features = c.features,
                   predicted = c.predicted}
      if it.err or (b and b.err) then
        row.error = it.err or tostring(b.err):match("[^\n]*")
      else
        local out = args[#args]
        local ok, err = pcall(function()
          b.mod(table.unpack(args))
          local oh = out:to(tir.cpu())
          if first then tir.testing.assert_allclose(oh, first, {rtol = 2e-2, atol = 2e-2}) else first = oh end
          row.measured = b.mod:time_evaluator({number = 5, repeat_ = 3})(table.unpack(args))
        end)
        if not ok then row.error = tostring(err):gsub("\n", "; "):sub(1, 300) end
      end
      print(("  #%-3d %-58s predicted %10.1f us  measured %s"):format(it.index, row.mapping, 1e6 * c.predicted,
        row.measured and ("%10.1f us"):format(1e6 * row.measured) or ("FAILED: " .. row.error)))
      rows[#rows + 1] = row
    end
    save()
    io.stdout:flush()
    collectgarbage()
  end
  print(("bench/amos_calibrate.lua: %d rows to %s"):format(#rows, path))
  return
end

-- ---- fit ----
local data = dofile(opt.data or "bench/amos_calibration.lua")
local by = {}
local order = {}
for _, r in ipairs(data.rows) do
  if r.measured and r.features then
    if not by[r.workload] then by[r.workload] = {} order[#order + 1] = r.workload end
    table.insert(by[r.workload], r)
  end
end

-- mean Spearman over the workloads (with at least 3 measured candidates) and the log-MSE
local function score(wt, only, skip)
  local sum, n, sse, m = 0, 0, 0, 0
  local per = {}
  for _, name in ipairs(order) do
    if (not only or only == name) and skip ~= name then
      local p, y = {}, {}
      for _, r in ipairs(by[name]) do
        p[#p + 1] = tir.amos.predict(r.features, wt)
        y[#y + 1] = r.measured
        sse, m = sse + (math.log(p[#p]) - math.log(r.measured)) ^ 2, m + 1
      end
      local rho = #p >= 3 and spearman(p, y) or nil
      per[name] = rho
      if rho then sum, n = sum + rho, n + 1 end
    end
  end
  return n > 0 and sum / n or 0, m > 0 and sse / m or 0, per
end

local GRID = {mma = {}, l2 = {}, dram = {}, launch = {}, pad = {0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 2, 2.5, 3},
              gather = {0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 2, 2.5, 3}}
for e = -12, 12 do
  local v = 2 ^ (e / 4)
  for _, k in ipairs({"mma", "l2", "dram", "launch"}) do table.insert(GRID[k], v) end
end
local KEYS = {"mma", "pad", "l2", "gather", "dram", "launch"}

-- coordinate descent: the objective is the log-MSE (which also calibrates the scale), ties
-- and near-ties broken by the mean Spearman
local function fit(skip)
  local wt = {}
  for k, v in pairs(tir.amos.COST_UNCALIBRATED) do wt[k] = v end
  local function obj(w)
    local rho, mse = score(w, nil, skip)
    return mse - 0.05 * rho
  end
  local best = obj(wt)
  for _ = 1, 6 do
    local moved = false
    for _, k in ipairs(KEYS) do
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

local uncal = tir.amos.COST_UNCALIBRATED
local r0, m0, per0 = score(uncal)
local rc, mc, perc = score(tir.amos.COST)
local wt = fit()
local r1, m1, per1 = score(wt)
print(("data: %s, %d workloads, %d measured candidates (%s, commit %s, %s)"):format(opt.data or "bench/amos_calibration.lua", #order,
  (function() local n = 0 for _, name in ipairs(order) do n = n + #by[name] end return n end)(), data.machine, data.commit, data.date))
print(("%-48s %4s %12s %12s %12s"):format("workload", "n", "rho uncal.", "rho in force", "rho fitted"))
local function f3(x) return x and ("%.3f"):format(x) or "-" end
for _, name in ipairs(order) do
  print(("%-48s %4d %12s %12s %12s"):format(name, #by[name], f3(per0[name]), f3(perc[name]), f3(per1[name])))
end
print(("%-48s %4s %12.3f %12.3f %12.3f"):format("mean Spearman", "", r0, rc, r1))
print(("%-48s %4s %12.3f %12.3f %12.3f"):format("mean squared log error", "", m0, mc, m1))
-- leave one workload out: fitted on the others, ranked on it
local lsum, ln = 0, 0
for _, name in ipairs(order) do
  local w = fit(name)
  local _, _, per = score(w, name)
  if per[name] then lsum, ln = lsum + per[name], ln + 1 end
end
print(("leave-one-workload-out mean Spearman (each workload ranked by weights fitted on the others): %.3f"):format(ln > 0 and lsum / ln or 0))
local parts = {}
for _, k in ipairs(KEYS) do parts[#parts + 1] = ("%s = %.6g"):format(k, wt[k]) end
print(("fitted: amos.COST = {%s}"):format(table.concat(parts, ", ")))
print(("provenance: fitted by bench/amos_calibrate.lua --fit on %s, measured on %s at commit %s, %s; mean Spearman %.3f uncalibrated -> %.3f fitted"):format(
  opt.data or "bench/amos_calibration.lua", data.machine, data.commit, data.date, r0, r1))
