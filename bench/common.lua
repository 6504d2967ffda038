-- bench/common.lua -- what every benchmark in bench/ shares: the commit and date a result is
-- recorded with, and the machine-readable record of each row (bench/results.jsonl, one JSON
-- object per line, appended, never rewritten).
--   local common = dofile("bench/common.lua")      (bench scripts run from the repository root)
--   common.record{bench = "gemm_fp16", variant = "mma_s4", shape = "4096x4096x4096", dtype = "float16",
--                 ms = 0.42, tflops = 325, ref = "cuBLAS", ref_ms = 0.18, ref_tflops = 768}
-- The row gets ratio (= ref_ms / ms: > 1 means tirlua is faster), gpu, commit and date added when
-- absent and goes to $TIRLUA_BENCH_JSONL (default: $OUT/results.jsonl when OUT is set, else
-- bench/results.jsonl).  On the GPU machine the file comes back under $OUT; append its lines
-- to bench/results.jsonl here (scripts/gpu/collect_results.sh).
local M = {}

-- The commit named in results: $TIRLUA_COMMIT, else git's short HEAD of the checkout whose root
-- is dir (default: the current directory; benchmarks run from the repository root), with
-- "-dirty" when tracked files other than the result files differ from it, else "unknown".  The
-- root check matters on the GPU machine: there the tree is a copy (a tarball unpacked under
-- another checkout, or files without .git), and git would name some other checkout's HEAD.
local function sh(cmd)
  local p = io.popen(cmd .. " 2>/dev/null")
  if not p then return nil end
  local out = p:read("*a") or ""
  p:close()
  out = out:gsub("%s+$", "")
  return out ~= "" and out or nil
end

function M.commit(dir)
  local c = os.getenv("TIRLUA_COMMIT")
  if c and c ~= "" then return c end
  local q = "'" .. tostring(dir or "."):gsub("'", "'\\''") .. "'"
  local top, here = sh("git -C " .. q .. " rev-parse --show-toplevel"), sh("cd " .. q .. " && pwd -P")
  if not top or top ~= here then return "unknown" end
  c = sh("git -C " .. q .. " rev-parse --short HEAD")
  if not c then return "unknown" end
  if sh("git -C " .. q .. " status --porcelain --untracked-files=no -- . ':!bench/results.jsonl' ':!bench/RESULTS.md'") then
    c = c .. "-dirty"
  end
  return c
end

-- The CUDA device 0, or nil after printing "<script>: skipped: <why>" when there is none (a
-- benchmark then returns: no GPU is not a failure).
function M.device(script)
  local dev = require("tir").device("cuda", 0)
  local ok, why = dev:exists()
  if ok then return dev end
  print(script .. ": skipped: " .. tostring(why))
  return nil
end

-- UTC date as YYYY-MM-DD.
function M.date() return os.date("!%Y-%m-%d") end

-- The keys every row carries, in this order (DEVELOPERS.md); others follow sorted.
M.KEYS = {"bench", "variant", "shape", "dtype", "ms", "tflops", "ref", "ref_ms", "ref_tflops", "ratio", "gpu",
          "commit", "date"}

-- One JSON object (a line) for a flat table of strings, numbers and booleans: the standard keys
-- first (null when absent), numbers with 6 significant digits.
function M.json(row)
  for k, v in pairs(row) do
    if type(v) == "table" or type(v) == "function" or type(v) == "userdata" then
      error("bench/common.lua: cannot write a " .. type(v) .. " as a JSON value (key " .. tostring(k) .. ")", 2)
    end
  end
  return require("tir.json").encode(row, {float_format = "%.6g", key_order = M.KEYS})
end

function M.jsonl_path()
  local p = os.getenv("TIRLUA_BENCH_JSONL")
  if p and p ~= "" then return p end
  local out = os.getenv("OUT")
  if out and out ~= "" then return out .. "/results.jsonl" end
  return "bench/results.jsonl"
end

local cached_gpu
-- The GPU's name, e.g. "NVIDIA H200" (from the first CUDA device), or "none".
function M.gpu()
  if cached_gpu then return cached_gpu end
  local ok, info = pcall(function() return require("tir").device("cuda", 0):info() end)
  cached_gpu = ok and info and info.name or "none"
  return cached_gpu
end

-- Appends one row (see the header) to the jsonl file; returns the line written.
-- Errors: a row without bench/variant/shape/ms, or non-positive times.
function M.record(row)
  for _, k in ipairs({"bench", "variant", "shape", "dtype"}) do
    if type(row[k]) ~= "string" then error(("bench/common.lua: record: row.%s must be a string"):format(k), 2) end
  end
  if type(row.ms) ~= "number" or row.ms <= 0 then error("bench/common.lua: record: row.ms must be a positive number", 2) end
  local r = {}
  for k, v in pairs(row) do r[k] = v end
  if r.ratio == nil and type(r.ref_ms) == "number" then r.ratio = r.ref_ms / r.ms end
  r.gpu = r.gpu or M.gpu()
  r.commit = r.commit or M.commit()
  r.date = r.date or M.date()
  local line = M.json(r)
  local f = assert(io.open(M.jsonl_path(), "a"))
  f:write(line, "\n")
  f:close()
  return line
end

-- Appends a markdown section to the file $TIRLUA_BENCH_OUT (nothing when unset): "### title",
-- the paragraph intro, the list items (strings, may be nil), then a table with the column names
-- `columns` and one line per element of rows, cells(row) returning its cells as strings (or numbers).
function M.markdown_report(title, intro, items, columns, rows, cells)
  local out = os.getenv("TIRLUA_BENCH_OUT")
  if not out or out == "" then return end
  local f = assert(io.open(out, "a"))
  f:write("\n### ", title, "\n\n", intro, "\n\n")
  for _, it in ipairs(items or {}) do f:write("- ", it, "\n") end
  if items and #items > 0 then f:write("\n") end
  f:write("| ", table.concat(columns, " | "), " |\n|", ("---|"):rep(#columns), "\n")
  for _, r in ipairs(rows) do
    local c = cells(r)
    for i = 1, #c do c[i] = tostring(c[i]) end
    f:write("| ", table.concat(c, " | "), " |\n")
  end
  f:close()
end

-- The reference library's kernel(s) of a GEMM (dtype, layout, "MxNxK"), for the rows' ref_kernel:
-- TIRLUA_REF_KERNELS names a file of lines "<dtype> <layout> <MxNxK> <kernel names>"
-- (scripts/gpu/cublas_kernels.lua writes it from ncu's list of the kernels cuBLAS / cuBLASLt
-- launched; bench/cublas_kernels_h200.txt is the H200's); else TIRLUA_REF_KERNEL_<DTYPE>_<LAYOUT>
-- for every shape; nil when neither names one.
local ref_kernels
function M.ref_kernel(dt, layout, shape)
  if not ref_kernels then
    ref_kernels = {}
    local path = os.getenv("TIRLUA_REF_KERNELS") or ""
    if path ~= "" then
      local f = io.open(path)
      for l in (f and f:lines() or function() end) do
        local d, lay, s, kn = l:match("^(%S+) (%S+) (%S+) (.+)$")
        if d and not l:match("^#") then ref_kernels[d .. " " .. lay .. " " .. s] = kn end
      end
      if f then f:close() else print("bench/common.lua: TIRLUA_REF_KERNELS file not found: " .. path) end
    end
  end
  local k = ref_kernels[dt .. " " .. layout .. " " .. shape]
  if k then return k end
  local e = os.getenv("TIRLUA_REF_KERNEL_" .. dt:upper() .. "_" .. layout) or ""
  return e ~= "" and e or nil
end

return M
