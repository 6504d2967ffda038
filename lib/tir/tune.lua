--- tir.tune: search a space of schedule parameters, measure each candidate on the GPU, keep
-- every trial in a database that later runs reuse (TVM MetaSchedule's tune + database, Triton's
-- autotune configs).
--
--   local best = tir.tune{
--     workload = "my_gemm:4096x4096x4096",      -- the database key of what is tuned
--     space = {BM = {64, 128}, BN = {128, 256}, stages = {2, 3, 4}},   -- or a list of param tables
--     constraint = function(p) return p.BM <= p.BN, "BM > BN" end,     -- optional filter
--     build = function(p) return schedule_or_func end,                 -- params -> schedule
--     args = function() return {a, b, c} end,   -- device arrays for the kernel (called once)
--     check = function(mod, args) return ok, why end,   -- correctness, run before timing
--   }
--   best.params, best.time_s, best.record
--
-- Options (defaults): target ("cuda"), trials (the whole space when it has <= 64 points, else
-- 64), search ("auto": exhaustive when trials covers the space, else "evolutionary"; or
-- "exhaustive", "random"), seed (1), jobs (CPU cores: NVRTC threads), batch (2 x jobs: a batch
-- compiles in the background while the previous one is measured), number/repeat_/warmup
-- (10/5/2: time_evaluator's), db (tune.default_db()), measure (function(mod, args) -> seconds;
-- default: time_evaluator, needs a GPU), progress (auto: a bar on stderr when it is a terminal),
-- log (a function(record) called after each trial).
-- Every candidate is built, checked, then timed; a failure at any step is recorded with its
-- error (status "build_error", "compile_error", "check_failed", "run_error") and the search goes
-- on.  Raises ValueError for a bad spec and RuntimeError when no candidate succeeded.
--
-- Database: JSON lines, one record per trial: {workload, target, params, status, time_s, error,
-- gpu, date}.  tune.best(workload, target) and tune.lookup(workload, target) read it.
local tir = require("tir")
local json = require("tir.json")
local util = require("tir.util")
local core = tir.core

local tune = {}

local SPEC_KEYS = {workload = "string", space = "table", constraint = "function", build = "function", args = "function",
                   check = "function", target = "string", trials = "integer", search = "string", seed = "integer",
                   jobs = "integer", batch = "integer", number = "integer", repeat_ = "integer", warmup = "integer",
                   db = "string", measure = "function", progress = "boolean", log = "function", build_opts = "table"}

--- The database file: $TIRLUA_TUNE_DB, else tuning.jsonl in the kernel cache's directory
-- (~/.cache/tirlua/tuning.jsonl by default).
function tune.default_db()
  local env = os.getenv("TIRLUA_TUNE_DB")
  if env and env ~= "" then return env end
  local dir = tir.cache.info().dir or "."
  return dir .. "/tuning.jsonl"
end

local function check_spec(spec)
  if type(spec) ~= "table" then util.raise("TypeError", "tune", "expected a table of options, got %s", util.show(spec)) end
  util.check_opts("tune", spec, SPEC_KEYS)
  for _, k in ipairs({"workload", "space", "build"}) do
    if spec[k] == nil then util.raise("ValueError", "tune", "option %s is required", k) end
  end
  for _, k in ipairs({"trials", "jobs", "batch", "number", "repeat_"}) do
    if spec[k] ~= nil and spec[k] < 1 then util.raise("ValueError", "tune", "option %s must be >= 1, got %d", k, spec[k]) end
  end
  if spec.search and not ({auto = 1, exhaustive = 1, random = 1, evolutionary = 1})[spec.search] then
    util.raise("ValueError", "tune", "search must be auto, exhaustive, random or evolutionary, got '%s'", spec.search)
  end
end

-- A stable text for a params table (the identity of a candidate).
local function pkey(p) return json.encode(p) end

--- The points of a space: {name = {values}} gives the cartesian product (names in sorted order,
-- values in their given order); a list of param tables is taken as it is.  constraint(p) may
-- drop points.  Returns the list of param tables.
function tune.enumerate(space, constraint)
  if type(space) ~= "table" then util.raise("TypeError", "tune", "space must be a table, got %s", util.show(space)) end
  if constraint ~= nil and type(constraint) ~= "function" then
    util.raise("TypeError", "tune", "constraint must be a function, got %s", util.show(constraint))
  end
  local points = {}
  if #space > 0 then
    -- a list of param tables, nothing else (named lists beside it would be dropped)
    if util.count_keys(space) ~= #space then
      util.raise("ValueError", "tune", "space is either a list of param tables or {name = {values}}, not both (or a list with holes)")
    end
    for i, p in ipairs(space) do
      if type(p) ~= "table" then util.raise("TypeError", "tune", "space[%d] must be a table of parameters", i) end
      points[#points + 1] = p
    end
  else
    local names = {}
    for k, vals in pairs(space) do
      if type(k) ~= "string" then util.raise("TypeError", "tune", "space keys must be parameter names") end
      if type(vals) ~= "table" or #vals == 0 or util.count_keys(vals) ~= #vals then
        util.raise("ValueError", "tune", "space.%s must be a non-empty list of values (no holes, no other keys)", k)
      end
      names[#names + 1] = k
    end
    table.sort(names)
    local function rec(i, cur)
      if i > #names then
        local p = {}
        for k, v in pairs(cur) do p[k] = v end
        points[#points + 1] = p
        return
      end
      for _, v in ipairs(space[names[i]]) do
        cur[names[i]] = v
        rec(i + 1, cur)
      end
      cur[names[i]] = nil
    end
    if #names > 0 then rec(1, {}) end
  end
  if constraint then
    local kept = {}
    for _, p in ipairs(points) do if constraint(p) then kept[#kept + 1] = p end end
    points = kept
  end
  return points
end

-- Values of each parameter over the points (for mutation).
local function value_lists(points)
  local vals, seen = {}, {}
  for _, p in ipairs(points) do
    for k, v in pairs(p) do
      vals[k] = vals[k] or {}
      seen[k] = seen[k] or {}
      local key = pkey(v)
      if not seen[k][key] then
        seen[k][key] = true
        vals[k][#vals[k] + 1] = v
      end
    end
  end
  return vals
end

-- Deterministic generator (xorshift64*), independent of math.random's global state.
local function rng(seed)
  local s = (seed * 0x9E3779B97F4A7C15) | 1
  return function(n) -- 1..n
    s = s ~ (s >> 12); s = s ~ (s << 25); s = s ~ (s >> 27)
    local r = (s * 0x2545F4914F6CDD1D) >> 11
    return (r % n) + 1
  end
end

--- The order in which a search proposes candidates: a function next(results) -> params or nil.
-- results: the list of {params, time_s} measured so far (time_s nil for failures).
local function proposer(kind, points, trials, seed)
  local rand = rng(seed)
  local by_key, tried = {}, {}
  for _, p in ipairs(points) do by_key[pkey(p)] = p end
  local count = 0
  if kind == "exhaustive" then
    local i = 0
    return function()
      i = i + 1
      if i > #points or count >= trials then return nil end
      count = count + 1
      return points[i]
    end
  end
  -- a random permutation, the population of the evolutionary search too
  local perm = {}
  for i = 1, #points do perm[i] = i end
  for i = #perm, 2, -1 do
    local j = rand(i)
    perm[i], perm[j] = perm[j], perm[i]
  end
  local pi = 0
  local function next_random()
    while pi < #perm do
      pi = pi + 1
      local p = points[perm[pi]]
      local k = pkey(p)
      if not tried[k] then
        tried[k] = true
        return p
      end
    end
    return nil
  end
  if kind == "random" then
    return function()
      if count >= trials then return nil end
      local p = next_random()
      if p then count = count + 1 end
      return p
    end
  end
  -- evolutionary: a random population first, then children of the best (mutation of one or two
  -- parameters, or a crossover of two parents), each a point of the space not tried before
  local vals = value_lists(points)
  local names = {}
  for k in pairs(vals) do names[#names + 1] = k end
  table.sort(names)
  local population = math.max(4, math.min(16, trials // 3))
  return function(results)
    if count >= trials then return nil end
    if count < population then
      local p = next_random()
      if p then count = count + 1 end
      return p
    end
    local good = {}
    for _, r in ipairs(results) do if r.time_s then good[#good + 1] = r end end
    table.sort(good, function(a, b) return a.time_s < b.time_s end)
    local elite = math.max(1, math.min(#good, 4))
    for _ = 1, 200 do
      if #good == 0 then break end
      local child = {}
      local a = good[rand(elite)].params
      for k, v in pairs(a) do child[k] = v end
      if #good > 1 and rand(10) <= 3 then -- crossover
        local b = good[rand(math.min(#good, 8))].params
        for _, k in ipairs(names) do if rand(2) == 1 then child[k] = b[k] end end
      end
      for _ = 1, rand(2) do -- mutation
        local k = names[rand(#names)]
        child[k] = vals[k][rand(#vals[k])]
      end
      local key = pkey(child)
      if by_key[key] and not tried[key] then
        tried[key] = true
        count = count + 1
        return by_key[key]
      end
    end
    local p = next_random() -- no new child: fall back to an untried point
    if p then count = count + 1 end
    return p
  end
end

local function fmt_time(s)
  if s >= 1 then return ("%.2f s"):format(s) end
  if s >= 1e-3 then return ("%.3f ms"):format(s * 1e3) end
  return ("%.1f us"):format(s * 1e6)
end

local function progress_bar(enabled, total)
  if not enabled then return function() end, function() end end
  local t0 = os.time()
  local clock0 = os.clock()
  local function wall() return math.max(os.time() - t0, 0) + 0.0 end
  local last = ""
  local function draw(done, best)
    local width = 24
    local filled = total > 0 and math.floor(width * done / total) or width
    local el = wall()
    if el == 0 then el = os.clock() - clock0 end
    local eta = done > 0 and el / done * (total - done) or 0
    local line = ("\r[tune] [%s%s] %d/%d  best %s  elapsed %ds  ETA %ds "):format(("#"):rep(filled),
      ("-"):rep(width - filled), done, total, best and fmt_time(best) or "-", math.floor(el), math.floor(eta))
    if line ~= last then
      io.stderr:write(line)
      io.stderr:flush()
      last = line
    end
  end
  local function finish() io.stderr:write("\n") end
  return draw, finish
end

-- Appends rec (nil: only checks that path can be appended to).  Returns true, or false and why.
local function append_record(path, rec)
  local dir = path:match("^(.*)/[^/]*$")
  if dir and dir ~= "" then os.execute("mkdir -p '" .. dir:gsub("'", "'\\''") .. "' 2>/dev/null") end
  local f, why = io.open(path, "a")
  if not f then return false, why end
  if rec ~= nil then f:write(json.encode(rec), "\n") end
  local ok, cwhy = f:close()
  if not ok then return false, cwhy end
  return true
end

local function first_line(e) return (tostring(e):match("[^\n]*[^\n%s]") or tostring(e)) end

-- A short text for an error object (tir.Error: its kind, primitive and message line).
local function err_text(e)
  if type(e) == "table" and e.kind then
    return ("%s in %s: %s"):format(e.kind, tostring(e.primitive), first_line(e.message or ""))
  end
  return first_line(e)
end

local function gpu_name()
  local ok, info = pcall(function() return tir.device("cuda", 0):info() end)
  return ok and info and info.name or "none"
end

--- Tunes (see the header).  Returns {params, time_s, record, records, tried}.
function tune.run(spec)
  check_spec(spec)
  local target = spec.target or "cuda"
  local points = tune.enumerate(spec.space, spec.constraint)
  if #points == 0 then util.raise("ValueError", "tune", "the space of '%s' has no points (after the constraint)", spec.workload) end
  local trials = math.min(spec.trials or (#points <= 64 and #points or 64), #points)
  local kind = spec.search or "auto"
  if kind == "auto" then kind = trials >= #points and "exhaustive" or "evolutionary" end
  local jobs = spec.jobs or core.cpu_count()
  local batch = spec.batch or math.max(2, 2 * jobs)
  local db = spec.db or tune.default_db()
  -- every trial goes to the database: one that cannot be written is an error before the search,
  -- not a tuning run whose results are silently lost
  local okdb, whydb = append_record(db, nil)
  if not okdb then util.raise("RuntimeError", "tune", "cannot write the tuning database '%s': %s", db, tostring(whydb)) end
  local measure = spec.measure
  if not measure then
    local ok, why = tir.device("cuda", 0):exists()
    if not ok then
      util.raise("RuntimeError", "tune", "measuring needs a GPU (%s); give measure = function(mod, args) ... end to tune without one",
        tostring(why))
    end
    local number, repeat_, warmup = spec.number or 10, spec.repeat_ or 5, spec.warmup or 2
    measure = function(mod, args)
      return mod:time_evaluator({number = number, repeat_ = repeat_, warmup = warmup})(table.unpack(args))
    end
  end
  local args = spec.args and spec.args() or {}
  if type(args) ~= "table" then util.raise("TypeError", "tune", "args() must return a list of arrays") end
  local gpu = spec.gpu or gpu_name()
  local date = os.date("!%Y-%m-%d")
  local next_point = proposer(kind, points, trials, spec.seed or 1)
  local results, records = {}, {}
  local best
  local show = spec.progress
  if show == nil then show = core.stderr_isatty() end
  local draw, finish = progress_bar(show, trials)
  draw(0, nil)

  local function record(p, status, time_s, err)
    local rec = {workload = spec.workload, target = target, params = p, status = status, time_s = time_s, error = err,
                 gpu = gpu, date = date}
    records[#records + 1] = rec
    results[#results + 1] = {params = p, time_s = time_s}
    if time_s and (not best or time_s < best.time_s) then best = {params = p, time_s = time_s, record = rec} end
    append_record(db, rec)
    if spec.log then spec.log(rec) end
    draw(#records, best and best.time_s)
  end

  -- builds a batch: schedule + lower + codegen here, NVRTC in the background
  local function start_batch(ps)
    local items, mods = {}, {}
    for _, p in ipairs(ps) do
      local ok, f = pcall(spec.build, p)
      local item = {params = p}
      if ok then
        local okb, mod = pcall(tir.build, f, target, (function()
          local o = {compile = false}
          for k, v in pairs(spec.build_opts or {}) do o[k] = v end
          return o
        end)())
        if okb then
          item.mod = mod
          mods[#mods + 1] = mod
        else
          item.err, item.status = err_text(mod), "build_error"
        end
      else
        item.err, item.status = err_text(f), "build_error"
      end
      items[#items + 1] = item
    end
    local job = #mods > 0 and core.compile_start(mods, jobs) or nil
    return {items = items, job = job}
  end

  local function measure_batch(b)
    if b.job then b.job:wait() end
    for _, it in ipairs(b.items) do
      if it.mod then
        local okc, cerr = pcall(it.mod.compile_error, it.mod)
        if not okc then
          it.err, it.status = err_text(cerr), "compile_error"
        end
      end
      if it.status then
        record(it.params, it.status, nil, it.err)
      else
        local okk, good, why = true, true, nil
        if spec.check then okk, good, why = pcall(spec.check, it.mod, args) end
        if not okk then
          record(it.params, "run_error", nil, err_text(good))
        elseif not good then
          record(it.params, "check_failed", nil, why and tostring(why) or "the result is wrong")
        else
          local okt, t = pcall(measure, it.mod, args)
          if not okt then
            record(it.params, "run_error", nil, err_text(t))
          elseif type(t) ~= "number" or t ~= t or t <= 0 or t == math.huge then -- NaN and inf are no times
            record(it.params, "run_error", nil, "measure returned " .. util.show(t))
          else
            record(it.params, "ok", t, nil)
          end
        end
      end
    end
  end

  -- pipeline: batch k+1 compiles while batch k is measured
  local pending
  while true do
    local ps = {}
    while #ps < batch do
      local p = next_point(results)
      if not p then break end
      ps[#ps + 1] = p
    end
    if #ps == 0 then break end
    local b = start_batch(ps)
    if pending then measure_batch(pending) end
    pending = b
    -- the evolutionary search wants results before proposing more: measure now when the
    -- population is done (its children depend on them)
    if kind == "evolutionary" and #results + #(pending.items) >= math.max(4, math.min(16, trials // 3)) then
      measure_batch(pending)
      pending = nil
    end
  end
  if pending then measure_batch(pending) end
  finish()
  if not best then
    local lines = {}
    for i = 1, math.min(#records, 5) do
      lines[#lines + 1] = ("  %s: %s"):format(pkey(records[i].params), tostring(records[i].error))
    end
    util.raise("RuntimeError", "tune", "no candidate of '%s' succeeded (%d tried); first failures:\n%s", spec.workload, #records,
      table.concat(lines, "\n"))
  end
  best.records = records
  best.tried = #records
  best.search = kind
  return best
end

--- Records of the database at path (default tune.default_db()), in file order; damaged lines
-- are skipped and counted (second result).
function tune.records(path)
  if path ~= nil and type(path) ~= "string" then util.raise("TypeError", "tune.records", "path must be a string, got %s", util.show(path)) end
  path = path or tune.default_db()
  local out, bad = {}, 0
  local f = io.open(path, "r")
  if not f then return out, 0 end
  local okr, first = pcall(f.read, f, 0) -- a directory opens but does not read
  if not okr or (first == nil and f:seek("end") ~= 0) then
    f:close()
    util.raise("RuntimeError", "tune.records", "cannot read the tuning database '%s'%s", path, okr and "" or (": " .. tostring(first)))
  end
  f:seek("set")
  for line in f:lines() do
    if line:match("%S") then
      local ok, rec = pcall(json.decode, line)
      if ok and type(rec) == "table" and type(rec.workload) == "string" then out[#out + 1] = rec else bad = bad + 1 end
    end
  end
  f:close()
  return out, bad
end

-- tune.records for the lookups: lines that are not records (a damaged or hand-edited
-- database) are skipped, and said once per database on stderr, so that "not in the tuning
-- database" is not the only trace of them
local warned_bad = {}
local function records_warned(path)
  local recs, bad = tune.records(path)
  local p = path or tune.default_db()
  if bad > 0 and not warned_bad[p] then
    warned_bad[p] = true
    io.stderr:write(("tuning database %s: %d line(s) are not JSON records with a workload; skipped\n"):format(p, bad))
  end
  return recs
end

local function check_key(prim, workload, target)
  if type(workload) ~= "string" then util.raise("TypeError", prim, "workload must be a string, got %s", util.show(workload)) end
  if target ~= nil and type(target) ~= "string" then
    util.raise("TypeError", prim, "target must be a string like \"cuda\" (or nil), got %s", util.show(target))
  end
end

--- The fastest successful record of workload on target (default "cuda"), or nil.
-- opts: db (path), gpu (only records measured on this GPU name), accept (function(record) ->
-- boolean: the records it refuses do not count).
function tune.best(workload, target, opts)
  check_key("tune.best", workload, target)
  opts = util.check_opts("tune.best", opts, {db = "string", gpu = "string", nearest = "boolean", accept = "function"})
  target = target or "cuda"
  local best
  for _, r in ipairs(records_warned(opts.db)) do
    if r.workload == workload and r.target == target and r.status == "ok" and type(r.time_s) == "number" and
        (not opts.gpu or r.gpu == opts.gpu) and (not opts.accept or opts.accept(r)) then
      if not best or r.time_s < best.time_s then best = r end
    end
  end
  return best
end

-- "family:AxBxC" -> family, {A, B, C}
local function split_key(w)
  local fam, shape = w:match("^(.*):([%dx]+)$")
  if not fam then return w, nil end
  local dims = {}
  for d in shape:gmatch("%d+") do dims[#dims + 1] = tonumber(d) end
  return fam, dims
end

--- The record to use for workload: the best record of workload itself, else (opts.nearest,
-- default true) the best record of the nearest tuned workload of the same family -- keys
-- "family:MxNxK", distance the sum of |log| ratios of the dimensions.  Returns record, how:
-- how is "tuned" or "nearest <workload>"; nil, "not tuned" when there is none.
-- opts.accept (function(record) -> boolean): only the records it accepts count, for the workload
-- and its neighbours alike (a caller refusing parameters that do not fit its shape).
function tune.lookup(workload, target, opts)
  check_key("tune.lookup", workload, target)
  opts = util.check_opts("tune.lookup", opts, {db = "string", gpu = "string", nearest = "boolean", accept = "function"})
  local r = tune.best(workload, target, opts)
  if r then return r, "tuned" end
  if opts.nearest == false then return nil, "not tuned" end
  local fam, dims = split_key(workload)
  if not dims then return nil, "not tuned" end
  local cands = {}
  for _, rec in ipairs(records_warned(opts.db)) do
    local f2, d2 = split_key(rec.workload)
    if f2 == fam and d2 and #d2 == #dims and rec.status == "ok" and rec.target == (target or "cuda") and type(rec.time_s) == "number" and
        (not opts.gpu or rec.gpu == opts.gpu) and (not opts.accept or opts.accept(rec)) then
      cands[rec.workload] = d2
    end
  end
  local near, dist
  for w, d2 in pairs(cands) do
    local s = 0
    for i = 1, #dims do s = s + math.abs(math.log(math.max(dims[i], 1) / math.max(d2[i], 1))) end
    if not dist or s < dist or (s == dist and w < near) then near, dist = w, s end
  end
  if not near then return nil, "not tuned" end
  return tune.best(near, target, opts), "nearest " .. near
end

-- a call with more arguments than a function's parameters is an error (util.strict)
util.strict_all(tune, "tune.")
setmetatable(tune, {__call = function(_, spec) return tune.run(spec) end})
return tune
