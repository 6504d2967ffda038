-- bench/plot.lua -- bench/results.jsonl -> one PNG chart per benchmark (gnuplot, Debian's
-- gnuplot-nox): TFLOP/s (TOP/s for integer benchmarks) per shape, every tirlua variant of the
-- latest run of that benchmark beside its reference libraries (a reference measured in several
-- rows of a shape shows its best value).
--   tirlua bench/plot.lua [results.jsonl [outdir]]     (defaults: bench/results.jsonl, bench/plots)
-- Writes <outdir>/<bench>.png (1200 x 600) and prints one line per chart.  The latest run of a
-- benchmark is its newest date, and of that date the commit of its last row.
local json = require("tir.json")

if arg[3] ~= nil then error("usage: tirlua bench/plot.lua [results.jsonl [outdir]]", 0) end
local src = arg[1] or "bench/results.jsonl"
local outdir = arg[2] or "bench/plots"

local function sh_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

local rows = {}
local f, why = io.open(src, "r")
if not f then error("bench/plot.lua: cannot open " .. tostring(why), 0) end
local n = 0
for line in f:lines() do
  n = n + 1
  if line:match("%S") then
    local ok, r = pcall(json.decode, line)
    if not ok or type(r) ~= "table" then error(("bench/plot.lua: %s:%d: %s"):format(src, n, tostring(r))) end
    rows[#rows + 1] = r
  end
end
f:close()

-- rows that can be drawn: a benchmark, shape, variant and date (strings) and a number; the others
-- are counted and said, never a crash on a missing field
do
  local good, skipped = {}, 0
  for _, r in ipairs(rows) do
    if type(r) == "table" and type(r.bench) == "string" and type(r.shape) == "string" and type(r.variant) == "string" and
        type(r.date) == "string" and type(r.tflops) == "number" then
      good[#good + 1] = r
    else
      skipped = skipped + 1
    end
  end
  if skipped > 0 then
    io.stderr:write(("bench/plot.lua: %s: skipped %d row(s) without bench, shape, variant, date (strings) and tflops (a number)\n")
      :format(src, skipped))
  end
  if #good == 0 then error(("bench/plot.lua: %s has no row to draw"):format(src), 0) end
  rows = good
end

-- the latest run of each benchmark
local latest = {}
for _, r in ipairs(rows) do
  if type(r.bench) == "string" and type(r.tflops) == "number" then
    local l = latest[r.bench]
    if not l or r.date > l.date then latest[r.bench] = {date = r.date, commit = r.commit} end
    if latest[r.bench].date == r.date then latest[r.bench].commit = r.commit end
  end
end

local benches = {}
for b in pairs(latest) do benches[#benches + 1] = b end
table.sort(benches)
if os.execute("mkdir -p " .. sh_quote(outdir)) ~= true then error(("bench/plot.lua: cannot create the directory %s"):format(outdir), 0) end
if os.execute("command -v gnuplot > /dev/null") ~= true then
  error("bench/plot.lua: gnuplot is missing (apt-get install gnuplot-nox; scripts/setup.sh installs it)")
end

for _, b in ipairs(benches) do
  local L = latest[b]
  -- reference columns: one per reference library named in the rows (qgemm rows carry two)
  local shapes, variants, val, ref, refs, gpu, dtype = {}, {}, {}, {}, {}, nil, nil
  local seen_s, seen_v, seen_r = {}, {}, {}
  for _, r in ipairs(rows) do
    if r.bench == b and r.date == L.date and r.commit == L.commit and type(r.tflops) == "number" then
      if not seen_s[r.shape] then seen_s[r.shape] = true; shapes[#shapes + 1] = r.shape end
      if not seen_v[r.variant] then seen_v[r.variant] = true; variants[#variants + 1] = r.variant end
      val[r.variant .. "|" .. r.shape] = r.tflops
      if type(r.ref_tflops) == "number" and type(r.ref) == "string" then
        if not seen_r[r.ref] then seen_r[r.ref] = true; refs[#refs + 1] = r.ref end
        local key = r.ref .. "|" .. r.shape
        ref[key] = ref[key] or {}
        table.insert(ref[key], r.ref_tflops)
      end
      gpu, dtype = gpu or r.gpu, dtype or r.dtype
    end
  end
  local refname = #refs > 0 and table.concat(refs, ", ") or nil
  local data = os.tmpname()
  local df = assert(io.open(data, "w"))
  local cols = {"shape"}
  for _, v in ipairs(variants) do cols[#cols + 1] = v end
  for _, rn in ipairs(refs) do cols[#cols + 1] = rn end
  local function field(x) return (x:gsub("[\t\n\"]", " ")) end
  local head = {}
  for i, c in ipairs(cols) do head[i] = '"' .. field(c) .. '"' end
  df:write(table.concat(head, "\t"), "\n")
  for _, s in ipairs(shapes) do
    local line = {'"' .. field(s) .. '"'}
    for _, v in ipairs(variants) do line[#line + 1] = val[v .. "|" .. s] and ("%.2f"):format(val[v .. "|" .. s]) or "-" end
    for _, rn in ipairs(refs) do
      local rs = ref[rn .. "|" .. s]
      local best -- several rows of a shape name the reference (one per variant): its best value
      for _, x in ipairs(rs or {}) do best = math.max(best or x, x) end
      line[#line + 1] = best and ("%.2f"):format(best) or "-"
    end
    df:write(table.concat(line, "\t"), "\n")
  end
  df:close()
  local unit = (dtype and (dtype:match("int") ~= nil)) and "TOP/s" or "TFLOP/s"
  local png = outdir .. "/" .. b .. ".png"
  local plot = {}
  for i = 2, #cols do
    plot[#plot + 1] = ("%s using %d:xtic(1) title columnheader(%d)"):format(i == 2 and sh_quote(data) or "''", i, i)
  end
  local script = table.concat({
    "set terminal pngcairo size 1200,600 font 'sans,10' noenhanced", -- names keep their underscores
    "set output " .. sh_quote(png),
    ("set title %s"):format(sh_quote(("%s: tirlua vs %s, %s, commit %s (%s)"):format(b, refname or "-", gpu or "?", tostring(L.commit), L.date))),
    "set style data histograms", "set style histogram clustered gap 1", "set style fill solid 0.85 border -1",
    "set boxwidth 0.9", "set datafile missing '-'", "set datafile separator '\\t'", "set key outside right top", "set grid ytics",
    "set ylabel " .. sh_quote(unit), "set xtics rotate by -30 left", "set yrange [0:*]",
    "plot " .. table.concat(plot, ", "),
  }, "\n")
  local sf = os.tmpname()
  local sfh = assert(io.open(sf, "w"))
  sfh:write(script, "\n")
  sfh:close()
  local ok = os.execute("gnuplot " .. sh_quote(sf))
  os.remove(sf)
  os.remove(data)
  if ok ~= true then error("bench/plot.lua: gnuplot failed for " .. b) end
  print(("%s: %d shapes x %d variants (+ %s), %s %s -> %s"):format(b, #shapes, #variants, refname or "no reference", L.date,
    tostring(L.commit), png))
end
