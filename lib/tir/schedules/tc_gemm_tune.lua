--- tir.schedules.tc_gemm_tune: tir.tune over tc_gemm's parameters, and the tuned options a
-- later run reads back.
--   local tt = require("tir.schedules.tc_gemm_tune")
--   local best = tt.tune(4096, 4096, 4096, {dtype = "float16", out_dtype = "float16"})
--   local opts, how = tt.options(4096, 4096, 4096, {dtype = "float16"})   -- how: "tuned",
--        "nearest tc_gemm:...:4096x4096x11008" or "defaults"
--   local sch = tt.schedule(4096, 4096, 4096, {dtype = "float16"})       -- prints which it used
-- The space (tt.space): 8 CTA/warp tilings x 4 (BK, stages) pairs x 2 CTA orders (group_m 1 or
-- 8) x 2 main loops (frag_prefetch, for the 3 depths of 3 or more stages) = 112 points, those whose
-- shared tiles fit in 227 KB (the sm_90 limit; sm_80: 163 KB) and the problem; shared tiles are tc_gemm's default layout (XOR-swizzled for 16-bit operands); tt.tune
-- tries 32 of them by default (evolutionary search; trials = 64 for all).  For M <= 128,
-- small-M tiles x 3 depths x split_k 1, 2, 3, 4, 8, each split summed by a second kernel, in the
-- same launch, or (fp16) by red.global.add into a zeroed tile (split_k_mode; 117 points, 81 for
-- other dtypes).  Every candidate's result is compared
-- with cuBLAS before it is timed.
local tir = require("tir")
local tc = require("tir.schedules.tc_gemm")
local util = require("tir.util")

local M = {}

local OPT_KEYS = {dtype = "dtype", out_dtype = "dtype", layout = "string", intrin = "string", db = "string", trials = "positive",
                  jobs = "positive", search = "string", space = "table", progress = "boolean", seed = "integer",
                  smem_limit = "positive", target = "string"}

-- options (unknown keys: "did you mean"; types) and the GEMM's extents, for each entry point
local function check_opts(prim, o, m, n, k)
  for i = 1, 3 do
    local x = ({m, n, k})[i]
    if math.type(x) ~= "integer" or x < 1 then
      util.raise("TypeError", prim, "%s must be a positive integer, got %s", ({"M", "N", "K"})[i], util.show(x))
    end
  end
  o = util.check_opts(prim, o, OPT_KEYS)
  if o.layout ~= nil and not ({NN = 1, NT = 1, TN = 1, TT = 1})[o.layout] then
    util.raise("ValueError", prim, "layout must be \"NN\", \"NT\", \"TN\" or \"TT\", got %s", util.show(o.layout))
  end
  return {dtype = o.dtype or "float16", out_dtype = o.out_dtype or "float16", layout = o.layout or "NN",
          intrin = o.intrin or "mma", db = o.db, trials = o.trials, jobs = o.jobs, search = o.search, space = o.space,
          progress = o.progress, seed = o.seed, smem_limit = o.smem_limit or 227 * 1024, target = o.target or "cuda"}
end

--- The database key of a GEMM: "tc_gemm:<intrin>:<dtype>:<out_dtype>:<layout>:MxNxK".
local function key_text(intrin, dtype, out_dtype, layout, m, n, k)
  return ("tc_gemm:%s:%s:%s:%s:%dx%dx%d"):format(intrin, dtype, out_dtype, layout, m, n, k)
end

function M.workload_key(m, n, k, o)
  o = check_opts("tc_gemm_tune.workload_key", o, m, n, k)
  return key_text(o.intrin, o.dtype, o.out_dtype, o.layout, m, n, k)
end

-- options of a record that describe the workload or the caller's choices, not the tuned schedule
local NOT_TUNED = {intrin = true, dtype = true, block = true, epilogue = true, tuned = true, db = true, target = true}

--- The tuned tc_gemm options for the matmul block of a schedule, as tc_gemm.auto_tensorize and
-- tc_gemm.schedule(func, {tuned = true}) read them.
--   info: tc_gemm.analyze's result for the block (layout, dtypes, extents: the block's, which
--   the padded workload makes larger than the GEMM's); intrin: "mma" | "wmma"; opts: db, target.
-- The key is workload_key's for the GEMM: M and N from the function's last parameter (its
-- output; a padded workload's D), K from the block, or from A (the first parameter) when the
-- workload is padded; the out dtype is that parameter's.  Returns params (tc_gemm options,
-- {} for none), how and the key; how is "tuned <key>", "nearest <key>" (tir.tune.lookup: the
-- nearest tuned shape of the same family) or "defaults (<why>)" -- nothing recorded, a batched
-- block, or no record whose tiles (BK x split_k for K) divide the block's extents and fit the
-- GEMM (M.fits): those are passed over for the next nearest shape.
function M.lookup(sch, info, intrin, opts)
  if getmetatable(sch) ~= require("tir").Schedule then
    util.raise("TypeError", "tc_gemm_tune.lookup", "sch must be a tir.Schedule, got %s", util.describe(sch))
  end
  if type(info) ~= "table" or type(info.extents) ~= "table" then
    util.raise("TypeError", "tc_gemm_tune.lookup", "info must be tc_gemm.analyze's result, got %s", util.describe(info))
  end
  opts = util.check_opts("tc_gemm_tune.lookup", opts, {db = "string", target = "string"})
  local params = sch.mod.params
  local out = params[#params]
  local nd = #out.shape
  local e = info.extents
  local nb = #e
  local m, n, k = out.shape[nd - 1].value, out.shape[nd].value, e[nb]
  local padded = pcall(function() return sch:get_block("A_pad") end)
  if padded then
    local a = params[1].shape
    k = info.layout:sub(1, 1) == "T" and a[#a - 1].value or a[#a].value
  end
  local dt = info.a_dtype == info.b_dtype and info.a_dtype or (info.a_dtype .. "x" .. info.b_dtype)
  local key = key_text(intrin, dt, out.dtype, info.layout, m, n, k)
  if nb > 3 then return {}, "defaults (batched GEMMs are not tuned)", key end
  local d = tc.defaults
  -- a record's CTA tile and k slice (BK x split_k), or nil when they are not positive integers
  local function tiles(r)
    local p = r.params
    if type(p) ~= "table" then return nil end
    local BM, BN, BK, S = p.BM or d.BM, p.BN or d.BN, p.BK or d.BK, p.split_k or 1
    for _, x in ipairs({BM, BN, BK, S}) do if math.type(x) ~= "integer" or x < 1 then return nil end end
    return BM, BN, BK * S
  end
  local fits = M.fits(m, n, k)
  local function divides(r)
    local BM, BN, BK = tiles(r)
    return BM ~= nil and e[nb - 2] % BM == 0 and e[nb - 1] % BN == 0 and e[nb] % BK == 0 and fits(r)
  end
  local db = opts.db or tir.tune.default_db()
  local rec, how = tir.tune.lookup(key, opts.target or "cuda", {db = db, accept = divides})
  if not rec then
    local any, how0 = tir.tune.lookup(key, opts.target or "cuda", {db = db})
    if not any then return {}, ("defaults (%s and its family are not in the tuning database %s)"):format(key, db), key end
    local src = how0 == "tuned" and key or how0:gsub("^nearest ", "")
    local BM, BN, BK = tiles(any)
    if not BM then return {}, ("defaults (the record of %s has tiles that are not positive integers)"):format(src), key end
    return {}, ("defaults (%s's tiles %dx%dx%d do not divide the block's %dx%dx%d or do not fit the shape, and no other record does)"):format(
      src, BM, BN, BK, e[nb - 2], e[nb - 1], e[nb]), key
  end
  local p = {}
  for name, v in pairs(rec.params) do
    if tc.SCHEDULE_OPTS[name] and not NOT_TUNED[name] then p[name] = v end
  end
  return p, how == "tuned" and ("tuned " .. key) or how, key
end

-- Shared bytes of a configuration: stages x (A tile + B tile); rows padded by 16 bytes unless
-- swizzled (tc_gemm's default for 16-bit operands, or swizzle = true)
local function smem_bytes(p, elem)
  local swz = p.swizzle
  if swz == nil then swz = elem == 2 and p.pad == nil end
  local pad = swz and 0 or 16 // elem
  return p.stages * ((p.BM * (p.BK + pad)) + (p.BK * (p.BN + pad))) * elem
end

-- CTA tiles with their warp tiles (CUTLASS's sm80 shapes: 64x64 warp tiles, 4 or 8 warps;
-- 32-wide warp tiles where a CTA side is 64), and the k depth with the pipeline stages.
M.TILES = {{128, 128, 64, 64}, {128, 256, 64, 64}, {256, 128, 64, 64}, {64, 128, 32, 64}, {128, 64, 64, 32},
           {64, 256, 64, 64}, {256, 64, 64, 64}, {64, 64, 32, 32}}
M.DEPTHS = {{32, 3}, {32, 4}, {64, 2}, {64, 3}}
-- CTA orders: the 2-D grid, or groups of 8 M tiles (tc_gemm's group_m; Triton's GROUP_M)
M.ORDERS = {1, 8}
-- main loops: tc_gemm's, or CUTLASS's (frag_prefetch; 3 stages and more -- the depths above have
-- 2 or 4 k16 steps a tile, as it needs): +37 % on 256x128x32 at 4096^3 on the H200, -3 % on 128x128x32
M.PREFETCH = {false, true}

-- Small M (M <= SMALL_M: the decode / small-batch LLM shapes): CTA tiles as high as M rounded
-- up to 16, 32 or 64 rows (one warp row; 16 x 32 or 16 x 64 warp tiles), and split-K, since
-- N / BN output tiles alone leave most SMs idle (M = 16, N = 11008: 86 tiles of 16 x 128).
-- split_k = 3 balances N = 11008 on 132 SMs (86 x 3 = 258 CTAs, 2 a SM on all but 6; 2 and 4
-- leave 35 % / 13 % of the SMs' time idle); K is then padded to whole slices (tc_gemm_tune.build).
-- 3 tilings per M class x 3 depths x (split_k 1 + 4 split_k values x 3 split_k_modes) = 117 points
-- (2 modes, 81 points, for other input dtypes than fp16: "atomic" needs fp16 or 8-bit inputs and
-- an epilogue, tc_gemm_split_k.check_atomic).
M.SMALL_M = 128
M.SMALL_TILES = {
  [16] = {{16, 64, 16, 32}, {16, 128, 16, 32}, {16, 256, 16, 64}},
  [32] = {{32, 64, 32, 32}, {32, 128, 32, 32}, {32, 256, 32, 64}},
  [64] = {{64, 64, 32, 32}, {64, 128, 64, 32}, {64, 256, 64, 64}},
  [128] = {{64, 128, 64, 32}, {128, 128, 64, 64}, {128, 256, 64, 64}},
}
M.SMALL_DEPTHS = {{32, 3}, {32, 4}, {64, 3}}
M.SPLIT_K = {1, 2, 3, 4, 8}
-- how the slices are summed (tc_gemm split_k_mode): a second kernel, the last CTA of each tile in
-- the GEMM's launch, or each CTA by red.global.add into a zeroed tile (fp16 inputs only here)
M.SPLIT_K_MODES = {"parallel", "serial", "atomic"}

--- The default space (a list of tc_gemm option tables) and its constraint for an M x N x K
-- GEMM: for M > M.SMALL_M the 112 points of TILES x DEPTHS x ORDERS x PREFETCH, tiles larger than the problem
-- (rounded up to 64) dropped; for smaller M the 117 (non-fp16: 81) points of SMALL_TILES (the class of M
-- rounded up to 16, 32, 64 or 128) x SMALL_DEPTHS x SPLIT_K (x SPLIT_K_MODES above 1).  Dropped too: points whose
-- shared tiles exceed smem_limit, or whose k loop (per split_k slice) is shorter than the pipeline.
function M.space(m, n, k, o)
  o = check_opts("tc_gemm_tune.space", o, m, n, k)
  local space = {}
  if m <= M.SMALL_M then
    local class = m <= 16 and 16 or m <= 32 and 32 or m <= 64 and 64 or 128
    for _, t in ipairs(M.SMALL_TILES[class]) do
      for _, d in ipairs(M.SMALL_DEPTHS) do
        for _, s in ipairs(M.SPLIT_K) do
          for _, mode in ipairs(s > 1 and M.SPLIT_K_MODES or {"parallel"}) do
            if mode == "atomic" and o.dtype ~= "float16" then goto next_mode end
            space[#space + 1] = {BM = t[1], BN = t[2], warp_m = t[3], warp_n = t[4], BK = d[1], stages = d[2], split_k = s,
                                 split_k_mode = mode ~= "parallel" and mode or nil}
            ::next_mode::
          end
        end
      end
    end
  else
    for _, t in ipairs(M.TILES) do
      for _, d in ipairs(M.DEPTHS) do
        for _, g in ipairs(M.ORDERS) do
          for _, fp in ipairs(M.PREFETCH) do
            if not fp or d[2] >= 3 then
              space[#space + 1] = {BM = t[1], BN = t[2], warp_m = t[3], warp_n = t[4], BK = d[1], stages = d[2], group_m = g,
                                   frag_prefetch = fp or nil}
            end
          end
        end
      end
    end
  end
  local function up(x, q) return (x + q - 1) // q * q end
  local constraint = function(p)
    if smem_bytes(p, 2) > o.smem_limit then return false end
    if p.BN > up(n, 64) or p.BM > up(m, m > M.SMALL_M and 64 or 16) then return false end
    local kc = p.BK * (p.split_k or 1)
    if up(k, kc) // kc < p.stages then return false end -- BK steps per slice
    return true
  end
  return space, constraint
end

local function layout_flags(layout) return layout:sub(1, 1) == "T", layout:sub(2, 2) == "T" end

--- Tunes tc_gemm for one GEMM on the GPU; records go to the tuning database.  Returns
-- tir.tune's result (best.params are tc_gemm options).
function M.tune(m, n, k, opts)
  local o = check_opts("tc_gemm_tune.tune", opts, m, n, k)
  local dev = tir.device("cuda", 0)
  local ta, tb = layout_flags(o.layout)
  local a = tir.nd.random(ta and {k, m} or {m, k}, o.dtype, dev, {seed = 31})
  local b = tir.nd.random(tb and {n, k} or {k, n}, o.dtype, dev, {seed = 32})
  local cref = tir.nd.empty({m, n}, o.out_dtype, dev)
  tir.core.cublas_gemm(a, b, cref, ta, tb, 1.0, 0.0)
  tir.core.cuda_sync(0)
  local tol = {rtol = 2e-2, atol = 2e-2 * math.sqrt(k / 64)}
  local space, constraint = M.space(m, n, k, o)
  return tir.tune{
    workload = M.workload_key(m, n, k, o), target = o.target, space = o.space or space,
    constraint = not o.space and constraint or nil, trials = o.trials or (not o.space and 32 or nil), jobs = o.jobs, search = o.search,
    seed = o.seed, db = o.db, progress = o.progress,
    build = function(p) return M.build(m, n, k, o, p) end,
    args = function() return {a, b, tir.nd.empty({m, n}, o.out_dtype, dev)} end,
    check = function(mod, args)
      mod(table.unpack(args))
      local ok, err = pcall(tir.testing.assert_allclose, args[3], cref, tol)
      return ok, not ok and tostring(err):match("[^\n]*") or nil
    end,
  }
end

--- The tc_gemm schedule of an M x N x K GEMM with options p (a point of the space): padded
-- when the tiles do not divide the extents.
function M.build(m, n, k, o, p)
  if type(o) ~= "table" or type(p) ~= "table" then
    util.raise("TypeError", "tc_gemm_tune.build", "build(m, n, k, o, p): o (the tuning options) and p (the candidate's parameters) must be tables, got %s and %s",
               util.describe(o), util.describe(p))
  end
  local sopts = {intrin = o.intrin, dtype = o.dtype}
  for key, v in pairs(p) do sopts[key] = v end
  local BM, BN, BK = sopts.BM or tc.defaults.BM, sopts.BN or tc.defaults.BN, sopts.BK or tc.defaults.BK
  BK = BK * (sopts.split_k or 1) -- split-K: K padded to whole slices of whole BK steps
  local pad = (m % BM ~= 0 or n % BN ~= 0 or k % BK ~= 0) and {BM, BN, BK} or nil
  local func = tc.workload(m, n, k, o.dtype, o.out_dtype, pad, o.layout)
  if not pad and o.out_dtype == "float16" then sopts.epilogue = "D" end
  return tc.schedule(func, sopts)
end

--- A tir.tune.lookup accept function for an M x N x K GEMM: records whose parameters pass the
-- space's constraint for this shape (tiles not taller than M rounded up to 16 -- to 64 above
-- SMALL_M --, not wider than N rounded up to 64, each k slice at least `stages` steps, shared
-- tiles within 227 KB).  A record tuned for M = 128 is then not taken for M = 64.
function M.fits(m, n, k)
  local _, constraint = M.space(m, n, k)
  local d = tc.defaults
  return function(rec)
    local p = rec.params
    if type(p) ~= "table" then return false end
    local q = {BM = p.BM or d.BM, BN = p.BN or d.BN, BK = p.BK or d.BK, stages = p.stages or d.stages, split_k = p.split_k}
    for _, key in ipairs({"BM", "BN", "BK", "stages"}) do if math.type(q[key]) ~= "integer" or q[key] < 1 then return false end end
    if q.split_k ~= nil and (math.type(q.split_k) ~= "integer" or q.split_k < 1) then return false end
    return constraint(q)
  end
end

--- The options to schedule an M x N x K GEMM with: the tuned ones, the nearest tuned shape's,
-- or tc_gemm's defaults; only records that fit the shape count (M.fits).  Returns opts, how
-- ("tuned", "nearest <key>", "defaults").
function M.options(m, n, k, opts)
  local o = check_opts("tc_gemm_tune.options", opts, m, n, k)
  local rec, how = tir.tune.lookup(M.workload_key(m, n, k, o), o.target, {db = o.db, accept = M.fits(m, n, k)})
  if not rec then return {}, "defaults" end
  local p = {}
  for key, v in pairs(rec.params) do p[key] = v end
  return p, how
end

--- A schedule of the GEMM with M.options' choice; says on stdout which it used (quiet = true
-- keeps it silent).  Returns the schedule, the options and how.
function M.schedule(m, n, k, opts, quiet)
  if quiet ~= nil and type(quiet) ~= "boolean" then
    util.raise("TypeError", "tc_gemm_tune.schedule", "quiet must be a boolean, got %s", util.show(quiet))
  end
  local o = check_opts("tc_gemm_tune.schedule", opts, m, n, k)
  local p, how = M.options(m, n, k, opts)
  if not quiet then
    print(("tc_gemm %dx%dx%d: %s options%s"):format(m, n, k, how, next(p) and (" " .. require("tir.json").encode(p)) or ""))
  end
  return M.build(m, n, k, o, p), p, how
end

-- a call with more arguments than a function's parameters is an error (util.strict)
for _, key in ipairs({"workload_key", "space", "tune", "build", "options", "schedule", "lookup", "fits"}) do M[key] = util.strict("tc_gemm_tune." .. key, M[key]) end

return M
