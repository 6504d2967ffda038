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
local F = dofile("bench/amos_fit.lua") -- the workloads, Spearman, the fit
local INTRIN, WORKLOADS = F.INTRIN, F.WORKLOADS

local opt = {per = 10}
for _, a in ipairs(arg or {}) do
  local k, v = a:match("^%-%-([%w_]+)=?(.*)$")
  if k == "measure" or k == "fit" or k == "dry" then opt.mode = k
  elseif k == "data" then opt.data = v
  elseif k == "per" then opt.per = math.tointeger(tonumber(v))
  else error("bench/amos_calibrate.lua: unknown argument " .. a .. " (--measure | --fit | --dry, --data=FILE, --per=N)", 0) end
end
if not opt.mode then error("bench/amos_calibrate.lua: say --measure (GPU), --fit or --dry", 0) end

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
local set = F.load(opt.data or "bench/amos_calibration.lua")
local data, by, order = set.data, set.by, set.order
local function score(wt, only, skip) return F.score(set, wt, only, skip) end
local function fit(skip) return F.fit(set, skip) end
local KEYS = F.KEYS
local uncal = tir.amos.COST_UNCALIBRATED
local r0, m0, per0, d0, g0, pg0 = score(uncal)
local rc, mc, perc, dc, gc = score(tir.amos.COST)
local wt = fit()
local r1, m1, per1, d1, g1, pg1 = score(wt)
print(("data: %s, %d workloads, %d measured candidates (%s, commit %s, %s)"):format(opt.data or "bench/amos_calibration.lua", #order,
  (function() local n = 0 for _, name in ipairs(order) do n = n + #by[name] end return n end)(), data.machine, data.commit, data.date))
print(("%-48s %4s %12s %12s %12s %10s %10s"):format("workload", "n", "rho uncal.", "rho in force", "rho fitted", "regret u.", "regret f."))
local function f3(x) return x and ("%.3f"):format(x) or "-" end
for _, name in ipairs(order) do
  print(("%-48s %4d %12s %12s %12s %10s %10s"):format(name, #by[name], f3(per0[name]), f3(perc[name]), f3(per1[name]), f3(pg0[name]), f3(pg1[name])))
end
print(("%-48s %4s %12.3f %12.3f %12.3f"):format("mean Spearman (workloads with >= 3 candidates)", "", r0, rc, r1))
print(("%-48s %4s %12.3f %12.3f %12.3f"):format("pairs ordered wrongly (all workloads)", "", d0, dc, d1))
print(("%-48s %4s %12.3f %12.3f %12.3f"):format("mean regret of the predicted best", "", g0, gc, g1))
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
print(("provenance: fitted by bench/amos_calibrate.lua --fit on %s, measured on %s at commit %s, %s; mean Spearman %.3f uncalibrated -> %.3f fitted " ..
       "(leave-one-workload-out %.3f), pairs ordered wrongly %.3f -> %.3f, regret %.3f -> %.3f"):format(
  opt.data or "bench/amos_calibration.lua", data.machine, data.commit, data.date, r0, r1, ln > 0 and lsum / ln or 0, d0, d1, g0, g1))
