--- tir.amos: AMOS-style automatic mapping of a computation onto a tensor intrinsic (Zheng et
-- al., "AMOS: Enabling Automatic Mapping for Tensor Computations On Spatial Accelerators with
-- Hardware Abstraction", ISCA 2022; TVM users know the mechanics from MetaSchedule's
-- auto-tensorization: reindex + transform_layout + transform_block_layout + pad_einsum).
--
--   local cands = tir.amos.mappings(func_or_sch, "conv", "mma.m16n8k16")
--   print(cands)                          -- the candidate table (index, mapping, padding, cost)
--   local sch, cand = tir.amos.apply(func_or_sch, "conv", "mma.m16n8k16", 3)  -- candidate 3
--   tir.amos.measure(cands, {top = 4})    -- with a GPU: build + time, fills cand.measured
--
-- A block C[..] += A[..] * B[..] (casts allowed) over iteration variables (spatial and
-- reduction) is mapped onto the intrinsic's iteration space M x N x K (C[m, n] += A[m, k] *
-- B[k, n]): every spatial variable the output and only one operand use can go to that
-- operand's side (M for A, N for B; several are fused) or stay outside as a batch
-- dimension; spatial variables all three use are batch dimensions; reduction variables both
-- operands use go to K (fused, in one of the operands' memory orders).  Each candidate
-- is checked (affine accesses, roles), padded to whole instruction tiles, and ranked by a
-- cost model (padding waste, operand reuse per CTA tile, contiguity of the global gathers).
-- apply performs the mapping with schedule primitives only (reindex, compute_inline,
-- transform_layout, transform_block_layout, pad_einsum, then tc_gemm.schedule's cache / split /
-- tensorize steps), all in sch:trace(); the operands' reindex stages become the shared-memory
-- tiles, so the im2col of a convolution happens in the global -> shared copy (implicit GEMM).
local amos = {}
local util = require("tir.util")
local raise = util.raise

-- The H200 numbers the cost model uses: tirlua's measured mma.sync GEMM 324 TFLOP/s, IMMA
-- 690 TOP/s and DP4A GEMM 16.6 TOP/s (bench/RESULTS.md); HBM3e 4.8 TB/s (NVIDIA's H200 data
-- sheet); L2 taken as 2.5x HBM and a launch as 3 us (assumptions of the model, not measured:
-- amos.measure is what decides); 32-byte sectors (the CUDA programming guide's global loads).
amos.MACHINE = {flops = {float16 = 324e12, bfloat16 = 324e12, int8 = 690e12, uint8 = 690e12}, flops_dp4a = 16.6e12, dram_bytes_per_s = 4.8e12,
                l2_bytes_per_s = 12e12, sector_bytes = 32, launch_s = 3e-6}

-- The intrinsics: tc_gemm's table of supported rows (one place); a name is a row's instr.
-- tile: the warp tile tc_gemm tensorizes ({16, 16, k} for mma.sync: two m16n8k instructions).
local function intrinsic(name, P)
  local tc = require("tir.schedules.tc_gemm")
  local rows, names, seen = {}, {}, {}
  for _, r in ipairs(tc.SUPPORTED) do
    if not seen[r.instr] then seen[r.instr] = true names[#names + 1] = r.instr end
    if r.instr == name then rows[#rows + 1] = r end
  end
  names[#names + 1] = "dp4a"
  if name == "dp4a" then
    for _, a in ipairs({"int8", "uint8"}) do
      for _, b in ipairs({"int8", "uint8"}) do rows[#rows + 1] = {instr = "dp4a", in_dtype = a, b_dtype = b, acc_dtype = "int32"} end
    end
  end
  if type(name) ~= "string" then raise("TypeError", P, "the intrinsic must be a name such as \"mma.m16n8k16\", got %s", util.describe(name)) end
  if #rows == 0 then
    local near = util.closest(name, names)
    raise("ValueError", P, "unknown intrinsic %s%s; known: %s", util.show(name), near and (" (did you mean '" .. near .. "'?)") or "",
          table.concat(names, ", "))
  end
  if name == "dp4a" then
    -- dp4a (PTX ISA, dp4a; tir.intrin.dp4a): one thread's C[0] += A[k] * B[k], k < 4, 8-bit
    -- operands into int32.  Its M and N are 1: every spatial variable stays a loop of the SIMT
    -- schedule (dp4a_schedule below, 16 x 16 tiles per CTA stage), K pads to its 16-deep steps
    return {name = name, rows = rows, tile = {1, 1, 4}, granule = {16, 16, 16}, names = names, simt = true}
  end
  local s = rows[1].shape
  local tile = {s[1], s[2], s[3]}
  if rows[1].instr == "mma.m16n8k32" then tile = {16, 16, 32} end
  -- tc_gemm's CTA tiles are multiples of 16 (tc.pick_tiles): M and N pad to 16 at least
  local function lcm(a, b) local x, y = a, b while y ~= 0 do x, y = y, x % y end return a // x * b end
  return {name = name, rows = rows, tile = tile, granule = {lcm(16, tile[1]), lcm(16, tile[2]), tile[3]}, names = names}
end

-- ---------------------------------------------------------------------------------------
-- The block: iteration variables, the output and the two operands, their affine indices
-- ---------------------------------------------------------------------------------------

-- An index as an affine form over the block's iteration variables: {coef = {[q] = c}, const},
-- or nil and the reason.
local function affine(e, qof)
  local k = e.kind
  if k == "IntImm" then return {coef = {}, const = e.value} end
  if k == "Var" then
    local q = qof(e)
    if not q then return nil, ("it uses %s, which is not an iteration variable of the block"):format(e.name) end
    return {coef = {[q] = 1}, const = 0}
  end
  if k == "Add" or k == "Sub" then
    local a, why = affine(e.a, qof)
    if not a then return nil, why end
    local b, why2 = affine(e.b, qof)
    if not b then return nil, why2 end
    local s = k == "Add" and 1 or -1
    local out = {coef = {}, const = a.const + s * b.const}
    for q, c in pairs(a.coef) do out.coef[q] = c end
    for q, c in pairs(b.coef) do out.coef[q] = (out.coef[q] or 0) + s * c end
    for q, c in pairs(out.coef) do if c == 0 then out.coef[q] = nil end end
    return out
  end
  if k == "Mul" then
    local a, why = affine(e.a, qof)
    if not a then return nil, why end
    local b, why2 = affine(e.b, qof)
    if not b then return nil, why2 end
    if next(a.coef) and next(b.coef) then return nil, "it multiplies two iteration variables" end
    if next(b.coef) then a, b = b, a end
    local out = {coef = {}, const = a.const * b.const}
    for q, c in pairs(a.coef) do if c * b.const ~= 0 then out.coef[q] = c * b.const end end
    return out
  end
  return nil, ("it contains %s (%s), which is not an affine function of the iteration variables"):format(k, tostring(e))
end

local function strip_casts(e)
  while e.kind == "Cast" do e = e.value end
  return e
end

-- Splits of iteration variables the indices already imply: v // c and v % c (c dividing v's
-- extent) in an index, as grouped convolutions index the input channel with
-- (f // (F / groups)) * Cg + rc, become two variables (transform_block_layout v -> (v // c,
-- v % c)), after which the indices are affine.  Returns the variables' names for display
-- ("ff/16", "ff%16") when it changed the block, else nil.
local function split_implied(sch, blk)
  local b = sch:get(blk)
  local ivs = b.iter_vars
  local function qof(v) for q, iv in ipairs(ivs) do if iv.var == v then return q end end end
  local split = {}
  local core = require("tir.core")
  local function walk(e)
    local k = e.kind
    if k == "Buffer" then return end
    if k == "Array" then
      for i = 1, #e do if core.is_node(e[i]) then walk(e[i]) end end
      return
    end
    if (k == "FloorDiv" or k == "FloorMod") and e.a.kind == "Var" and e.b.kind == "IntImm" then
      local q = qof(e.a)
      local ext = q and ivs[q].dom.extent
      if q and ext.kind == "IntImm" and e.b.value > 1 and e.b.value < ext.value and ext.value % e.b.value == 0 and not split[q] then
        split[q] = e.b.value
      end
      return
    end
    for _, f in ipairs(core.node_fields(e)) do
      local c = e[f]
      if core.is_node(c) then walk(c) end
    end
  end
  walk(b.body)
  if not next(split) then return nil end
  local shown = {}
  for q, iv in ipairs(ivs) do
    local n = iv.var.name:gsub("^v_", "")
    if split[q] then shown[#shown + 1] = n .. "/" .. split[q]; shown[#shown + 1] = n .. "%" .. split[q] else shown[#shown + 1] = n end
  end
  sch:transform_block_layout(blk, function(...)
    local v, out = {...}, {}
    for q = 1, #v do
      if split[q] then out[#out + 1] = v[q] // split[q]; out[#out + 1] = v[q] % split[q] else out[#out + 1] = v[q] end
    end
    return table.unpack(out)
  end)
  return shown
end

-- Everything the enumeration needs from the block, checked: returns info or raises a
-- ValueError naming P and the block, with the offending fragment.
local function analyze(sch, blk, P, shown)
  local b = sch:get(blk)
  local name = b.name
  local function fail(fmt, ...) raise("ValueError", P, "block '%s': " .. fmt, name, ...) end
  local ivs, qvar = {}, {}
  for q, iv in ipairs(b.iter_vars) do
    local e = iv.dom.extent
    if e.kind ~= "IntImm" then fail("iteration variable %s has the symbolic extent %s; a mapping needs constant extents", iv.var.name, tostring(e)) end
    if iv.iter_type ~= 0 and iv.iter_type ~= 2 then fail("iteration variable %s is neither spatial nor a reduction", iv.var.name) end
    ivs[q] = {q = q, name = shown and shown[q] or iv.var.name, var = iv.var, kind = iv.iter_type == 2 and "R" or "S", ext = e.value}
  end
  local function qof(v) for q, iv in ipairs(ivs) do if iv.var == v then return q end end end
  local has_r = false
  for _, iv in ipairs(ivs) do has_r = has_r or iv.kind == "R" end
  if not has_r then
    fail("no reduction iteration variable: a tensor intrinsic computes C += A * B, and this block reduces nothing (%s)", tostring(b.body))
  end
  if #b.writes ~= 1 then fail("it writes %d buffers; a mapping needs one output", #b.writes) end
  local body = b.body
  if body.kind ~= "BufferStore" then fail("its body is a %s, not one store C[..] = C[..] + A[..] * B[..]", body.kind) end
  if not b.init then
    fail("it has no init (apply the mapping before decompose_reduction): %s", tostring(body))
  end
  local init = b.init
  if init.kind ~= "BufferStore" or init.buffer ~= body.buffer or not (init.value.kind == "IntImm" or init.value.kind == "FloatImm") or
     init.value.value ~= 0 then
    fail("its init must store 0 into the output (a sum), got %s", tostring(init))
  end
  local v = body.value
  local mac = v.kind == "Add" and strip_casts(v.a).kind == "BufferLoad" and strip_casts(v.a).buffer == body.buffer and v.b.kind == "Mul"
  local la, lb = mac and strip_casts(v.b.a), mac and strip_casts(v.b.b)
  if not mac or la.kind ~= "BufferLoad" or lb.kind ~= "BufferLoad" then
    fail("its body is not a multiply-accumulate C[..] = C[..] + A[..] * B[..] (casts allowed): %s", tostring(body))
  end
  if la.buffer == body.buffer or lb.buffer == body.buffer or la.buffer == lb.buffer then
    fail("the two factors must be loads of two buffers other than the output: %s", tostring(body))
  end
  local function access(buf, indices, what)
    local forms = {}
    for d = 1, #indices do
      local f, why = affine(require("tir.core").simplify(indices[d]), qof)
      if not f then fail("%s's index %d (%s) is not affine: %s", what .. " " .. buf.name, d - 1, tostring(indices[d]), why) end
      forms[d] = f
    end
    local shape = {}
    for d = 1, #buf.shape do
      local s = buf.shape[d]
      if s.kind ~= "IntImm" then fail("%s has the symbolic shape %s", buf.name, tostring(s)) end
      shape[d] = s.value
    end
    -- each variable's stride in elements of buf (row-major), and whether it is used
    -- uses: the variables reindex gives a dimension (those of the index simplified over the
    -- domains, where variables of extent 1 vanish -- unless nothing else is left: reindex keeps
    -- an index that would fold to a constant, TVM's SimplifyNonTrivialExpr)
    local stride, uses = {}, {}
    local st = 1
    for d = #shape, 1, -1 do
      local big = false
      for q in pairs(forms[d].coef) do big = big or ivs[q].ext > 1 end
      for q, c in pairs(forms[d].coef) do
        stride[q] = (stride[q] or 0) + c * st
        if ivs[q].ext > 1 or not big then uses[q] = true end
      end
      st = st * shape[d]
    end
    return {buffer = buf, forms = forms, shape = shape, stride = stride, uses = uses, dtype = buf.dtype}
  end
  local out = access(body.buffer, body.indices, "the output")
  for d, f in ipairs(out.forms) do
    for q in pairs(f.coef) do
      if ivs[q].kind ~= "S" then
        fail("the output %s's index %d (%s) uses the reduction variable %s", body.buffer.name, d - 1, tostring(body.indices[d]), ivs[q].name)
      end
    end
  end
  local x, y = access(la.buffer, la.indices, "operand"), access(lb.buffer, lb.indices, "operand")
  -- read positions (cache_read / reindex indices; a block with an init does not read its output)
  local function pos(buf)
    for i, r in ipairs(b.reads) do if r.buffer == buf then return i - 1 end end
  end
  x.pos, y.pos = pos(x.buffer), pos(y.buffer)
  return {name = name, ivs = ivs, out = out, ins = {x, y}, acc_dtype = body.buffer.dtype}
end

-- ---------------------------------------------------------------------------------------
-- Enumeration
-- ---------------------------------------------------------------------------------------

local function product(list, ivs)
  local p = 1
  for _, q in ipairs(list) do p = p * ivs[q].ext end
  return p
end

local function up(x, m) return (x + m - 1) // m * m end

-- variables sorted by their stride in an access (largest first: the memory order), ties in
-- block order
local function memory_order(list, acc)
  local out = {table.unpack(list)}
  table.sort(out, function(a, b)
    local sa, sb = math.abs(acc.stride[a] or 0), math.abs(acc.stride[b] or 0)
    if sa ~= sb then return sa > sb end
    return a < b
  end)
  return out
end

-- the run of contiguous elements a copy along `group` (fused, last variable fastest) reads
-- from acc: the innermost variable must have stride 1; the run grows while the next one's
-- stride equals it
local function contiguous_run(group, acc, ivs)
  local run = 1
  for i = #group, 1, -1 do
    local q = group[i]
    if (acc.stride[q] or 0) ~= run then break end
    run = run * ivs[q].ext
  end
  return run
end

local function names(list, ivs)
  local t = {}
  for _, q in ipairs(list) do t[#t + 1] = ivs[q].name:gsub("^v_", "") end
  return table.concat(t, "*")
end

local Candidate = {}
Candidate.__index = Candidate
Candidate.__name = "tir.amos.Candidate"

local Candidates = {}
Candidates.__index = Candidates
Candidates.__name = "tir.amos.Candidates"

-- The roles of every variable for one assignment of the operands to the intrinsic's A and B.
local function roles(info, A, B)
  local ivs, C = info.ivs, info.out
  local r = {bs = {}, mable = {}, nable = {}, kable = {}, why = nil}
  for q, iv in ipairs(ivs) do
    local c, a, b = C.uses[q], A.uses[q], B.uses[q]
    if iv.ext == 1 then
      -- a variable of extent 1 takes part in no group (the maps drop it; it is 0)
    elseif iv.kind == "S" then
      if c and a and b then r.bs[#r.bs + 1] = q
      elseif c and a then r.mable[#r.mable + 1] = q
      elseif c and b then r.nable[#r.nable + 1] = q
      elseif c then
        r.why = r.why or ("spatial variable %s is used by the output only (both operands broadcast along it)"):format(iv.name)
      else
        r.why = r.why or ("spatial variable %s is not used by the output"):format(iv.name)
      end
    else
      if a and b and not c then r.kable[#r.kable + 1] = q
      else
        r.why = r.why or ("reduction variable %s is used by %s, not by both operands only"):format(iv.name,
          table.concat((function() local t = {} if c then t[#t + 1] = "the output" end if a then t[#t + 1] = A.buffer.name end
                         if b then t[#t + 1] = B.buffer.name end return t end)(), " and "))
      end
    end
  end
  return r
end

local function subsets(list)
  local out = {}
  local n = #list
  for mask = (1 << n) - 1, 1, -1 do
    local s, rest = {}, {}
    for i = 1, n do
      if mask & (1 << (i - 1)) ~= 0 then s[#s + 1] = list[i] else rest[#rest + 1] = list[i] end
    end
    out[#out + 1] = {s, rest}
  end
  return out
end

-- The cost model (seconds on amos.MACHINE): the tensor-core time of the padded problem, the
-- global traffic of the operand tiles (each A tile read by every CTA of its row, each B
-- tile by every CTA of its column: the reuse a CTA tile gives), divided by the efficiency of
-- the gathers (a copy whose contiguous run is shorter than a 32-byte sector wastes the rest
-- of it), the output (through an fp32 workspace and a copy-back kernel when M or N is padded),
-- and a launch per kernel.  features() measures a candidate once; amos.predict combines the
-- features with the weights amos.COST, so a calibration refits the weights on logged features
-- without enumerating again.
--
-- amos.COST: the weights, fitted by bench/amos_calibrate.lua to measured candidate times
-- (least squares on log time, coordinate descent over a log grid; the data it fitted are in
-- bench/amos_calibration.lua with the machine, commit and date they came from).
-- Other weights: change the fields of amos.COST (the table every ranking reads).
-- amos.COST_UNCALIBRATED is the physical model before the fit (the exponents of the effects it
-- did not model 0).
--   mma: multiplies the tensor-core time; pad: exponent of the padding factor (padded flops /
--   useful flops: how much padding waste costs); l2: multiplies the operand tiles' L2 time
--   (reuse per CTA tile); gather: exponent of the gathers' sector efficiency (contiguity);
--   dram: multiplies the DRAM time; launch: multiplies the per-kernel launch cost.
-- (Wave quantization, im2col index cost, output-store contiguity and a per-main-loop-step
-- latency were tried as further terms: they fitted the data better and ranked the workload
-- left out worse -- bench/RESULTS.md -- so the model keeps these six.)
amos.COST_UNCALIBRATED = {mma = 1, pad = 1, l2 = 1, gather = 1, dram = 1, launch = 1}
-- Fitted (the factors on the grid 2 ^ (e / 4)) by `tirlua bench/amos_calibrate.lua --fit` on
-- bench/amos_calibration.lua: 96 candidates of 14 fp16 workloads on mma.m16n8k16 (matmul
-- NN/NT/TN/TT, padded, batched, shared B; conv2d NHWC, NCHW, dilated, grouped, 7x7 C = 3;
-- conv1d), measured on an NVIDIA H200 at commit 32b3249 on 2026-12-01.  Mean Spearman of
-- predicted vs measured per workload 0.408 uncalibrated -> 0.439 fitted (leave-one-workload-out
-- 0.462); log-MSE 1.107 -> 0.283.  The ranking is still weak: amos.measure decides.
amos.COST = {mma = 2 ^ -0.25, pad = 1.25, l2 = 2 ^ 0.5, gather = 2, dram = 2 ^ 1.5, launch = 2 ^ 1.75,
             provenance = {machine = "NVIDIA H200", commit = "32b3249 (main 3825ae9 + hF's first two commits, before rebasing)", date = "2026-12-01", data = "bench/amos_calibration.lua",
                           fit = "bench/amos_calibrate.lua --fit", spearman_uncalibrated = 0.408, spearman_fitted = 0.439,
                           spearman_leave_one_out = 0.462, mse_log_uncalibrated = 1.107, mse_log_fitted = 0.283}}

local function features(c, intr, info)
  local tc = require("tir.schedules.tc_gemm")
  local Mx = amos.MACHINE
  local bt, mp, np, kp = c.batch_ext, c.padded[1], c.padded[2], c.padded[3]
  local sms = tc.DEFAULT_SM_COUNT
  local bm, bn = tc.pick_tiles(bt, mp, np, sms)
  local esz = tonumber(info.ins[1].dtype:match("%d+$")) // 8
  local flops = 2 * bt * mp * np * kp
  local useful = 2 * bt * c.ext[1] * c.ext[2] * c.ext[3]
  local peak = intr.simt and Mx.flops_dp4a or Mx.flops[info.ins[1].dtype] or Mx.flops.float16
  local function eff(run) return math.min(1, run * esz / Mx.sector_bytes) end
  local bytes_a = bt * mp * kp * esz * (np // bn)
  local bytes_b = bt * np * kp * esz * (mp // bm)
  if c.bb_ext == 1 and #c.bs == 0 then bytes_b = np * kp * esz * math.max(1, (bt * mp) // bm) end
  local out_elems = bt * mp * np
  -- a padded M or N: an fp32 workspace and a copy-back kernel; else the fragments go to the
  -- output (through shared memory when it is reindexed)
  local writeback = c.padded[1] ~= c.ext[1] or c.padded[2] ~= c.ext[2]
  local bytes_c = writeback and (out_elems * 8 + c.useful_out * 4) or c.useful_out * 4
  -- the tiles stream through L2; from DRAM come the operands' footprints (a gather's re-reads
  -- of the same input, R*S times for a convolution, hit L2) and the output traffic
  local function footprint(acc)
    local n = esz
    for _, e in ipairs(acc.shape) do n = n * e end
    return n
  end
  return {t_mma_useful = useful / peak, pad_factor = flops / useful, l2_a = bytes_a / Mx.l2_bytes_per_s, eff_a = eff(c.run_a),
          l2_b = bytes_b / Mx.l2_bytes_per_s, eff_b = eff(c.run_b),
          t_dram = (footprint(c.A) + footprint(c.B) + bytes_c) / Mx.dram_bytes_per_s, launches = (writeback and 2 or 1) * Mx.launch_s,
          bm = bm, bn = bn, reuse = flops / (bytes_a / eff(c.run_a) + bytes_b / eff(c.run_b) + bytes_c)}
end

--- tir.amos.predict(features, weights) -> seconds, parts: the cost model on a candidate's
-- features (cand.features) with the weights (default amos.COST; the keys of amos.COST).
local FEATURE_KEYS = {"t_mma_useful", "pad_factor", "l2_a", "eff_a", "l2_b", "eff_b", "t_dram", "launches"}
function amos.predict(f, wt)
  local P = "amos.predict"
  if type(f) ~= "table" then raise("TypeError", P, "features must be a candidate's features table (cand.features), got %s", util.describe(f)) end
  for _, k in ipairs(FEATURE_KEYS) do
    if type(f[k]) ~= "number" then raise("TypeError", P, "features.%s must be a number (cand.features has it), got %s", k, util.describe(f[k])) end
  end
  wt = wt == nil and amos.COST or wt
  if type(wt) ~= "table" then raise("TypeError", P, "weights must be a table like amos.COST, got %s", util.describe(wt)) end
  for k in pairs(amos.COST_UNCALIBRATED) do
    if type(wt[k]) ~= "number" then raise("TypeError", P, "weights.%s must be a number (the keys of amos.COST), got %s", k, util.describe(wt[k])) end
  end
  local t_mma = wt.mma * f.t_mma_useful * f.pad_factor ^ wt.pad
  local t_l2 = wt.l2 * (f.l2_a / f.eff_a ^ wt.gather + f.l2_b / f.eff_b ^ wt.gather)
  local t_dram = wt.dram * f.t_dram
  return math.max(t_mma, t_l2, t_dram) + wt.launch * f.launches, {t_mma = t_mma, t_l2 = t_l2, t_dram = t_dram}
end

local function cost(c, intr, info)
  local f = features(c, intr, info)
  local t, parts = amos.predict(f)
  parts.bm, parts.bn, parts.reuse = f.bm, f.bn, f.reuse
  c.features = f
  return t, parts
end

local function plain(acc, dims)
  -- acc indexed exactly by the variables `dims` (one per dimension, coefficient 1, no offset)
  if #acc.forms ~= #dims then return false end
  for d, f in ipairs(acc.forms) do
    if f.const ~= 0 then return false end
    local n = 0
    for q, cf in pairs(f.coef) do
      n = n + 1
      if q ~= dims[d] or cf ~= 1 then return false end
    end
    if n ~= 1 then return false end
  end
  return true
end

local function enumerate(info, intr)
  local ivs = info.ivs
  local cands, rejected = {}, {}
  local seen = {}
  -- either operand can be the intrinsic's A (tensorize matches C + x * y with the factors
  -- exchanged too: the M and N roles of a convolution's pixels and channels can swap)
  for swap = 0, 1 do
    local A, B = info.ins[1 + swap], info.ins[2 - swap]
    local r = roles(info, A, B)
    local function reject(why)
      if not seen[why] then seen[why] = true rejected[#rejected + 1] = why end
    end
    if r.why then reject(r.why)
    elseif #r.mable == 0 then
      reject(("no spatial variable is used by the output and %s only, so the intrinsic's M would have extent 1 (padded to %d: %d%% of every instruction wasted)"):format(
        A.buffer.name, intr.granule[1], 100 - 100 // intr.granule[1]))
    elseif #r.nable == 0 then
      local dw = ""
      if #r.bs > 0 then
        dw = (" (%s is used by the output and both operands -- the channel of a depthwise convolution -- so it can only be a batch dimension; " ..
              "a SIMT schedule suits this block better)"):format(names(r.bs, ivs))
      end
      reject(("no spatial variable is used by the output and %s only, so the intrinsic's N would have extent 1 (padded to %d: %d%% of every instruction wasted)%s"):format(
        B.buffer.name, intr.granule[2], 100 - 100 // intr.granule[2], dw))
    elseif #r.kable == 0 then
      reject("no reduction variable is used by both operands")
    else
      local korders, kseen = {}, {}
      for _, acc in ipairs({A, B}) do
        local o = memory_order(r.kable, acc)
        local key = table.concat(o, ",")
        if not kseen[key] then kseen[key] = true korders[#korders + 1] = o end
      end
      for _, ms in ipairs(subsets(r.mable)) do
        for _, ns in ipairs(subsets(r.nable)) do
          for _, K in ipairs(korders) do
            local Mg, Ng = memory_order(ms[1], info.out), memory_order(ns[1], info.out)
            local ba, bb = memory_order(ms[2], info.out), memory_order(ns[2], info.out)
            local bs = memory_order(r.bs, info.out)
            local c = setmetatable({swap = swap == 1, A = A, B = B, M = Mg, N = Ng, K = K, bs = bs, ba = ba, bb = bb}, Candidate)
            c.ext = {product(Mg, ivs), product(Ng, ivs), product(K, ivs)}
            c.padded = {up(c.ext[1], intr.granule[1]), up(c.ext[2], intr.granule[2]), up(c.ext[3], intr.granule[3])}
            c.bs_ext, c.ba_ext, c.bb_ext = product(bs, ivs), product(ba, ivs), product(bb, ivs)
            c.batch_ext = c.bs_ext * c.ba_ext * c.bb_ext
            c.useful_out = c.batch_ext * c.ext[1] * c.ext[2]
            c.pad_any = c.padded[1] ~= c.ext[1] or c.padded[2] ~= c.ext[2] or c.padded[3] ~= c.ext[3]
            local useful = c.batch_ext * c.ext[1] * c.ext[2] * c.ext[3]
            c.waste = 1 - useful / (c.batch_ext * c.padded[1] * c.padded[2] * c.padded[3])
            -- operand layouts: the tile's fast dimension is the one along which the source is
            -- contiguous the longest (the copy into shared memory reads runs of it); an operand
            -- read without a reindex keeps its own layout (tc_gemm reads it from the block)
            local function layout(acc, side, side_name)
              local run_k, run_x = contiguous_run(K, acc, ivs), contiguous_run(side, acc, ivs)
              if run_x > run_k then return "K" .. side_name, run_x end
              return side_name .. "K", run_k
            end
            c.layout_a, c.run_a = layout(A, Mg, "M")
            c.layout_b, c.run_b = layout(B, Ng, "N")
            -- new block iteration space: [bs] [ba] [bb] m n k, one fused variable per group
            local groups = {}
            for _, g in ipairs({bs, ba, bb}) do if #g > 0 then groups[#groups + 1] = g end end
            c.groups = groups
            local function dims_of(acc, last2)
              local d = {}
              for gi, g in ipairs(groups) do
                local usesg = false
                for _, q in ipairs(g) do usesg = usesg or acc.uses[q] end
                if usesg then d[#d + 1] = gi end
              end
              for _, x in ipairs(last2) do d[#d + 1] = x end
              return d
            end
            local ng = #groups
            local im, jn, kk = ng + 1, ng + 2, ng + 3
            c.dims_a = dims_of(A, c.layout_a == "MK" and {im, kk} or {kk, im})
            c.dims_b = dims_of(B, c.layout_b == "NK" and {jn, kk} or {kk, jn})
            c.dims_c = dims_of(info.out, {im, jn})
            -- which accesses are already plain in the new iteration space (no reindex needed)
            local single = {}
            for gi, g in ipairs(groups) do single[gi] = #g == 1 and g[1] or false end
            single[im] = #Mg == 1 and Mg[1] or false
            single[jn] = #Ng == 1 and Ng[1] or false
            single[kk] = #K == 1 and K[1] or false
            local function needs(acc, dims)
              local qs = {}
              for d, gi in ipairs(dims) do
                if not single[gi] then return true end
                qs[d] = single[gi]
              end
              return not plain(acc, qs)
            end
            c.reindex_a, c.reindex_b, c.reindex_c = needs(A, c.dims_a), needs(B, c.dims_b), needs(info.out, c.dims_c)
            if c.batch_ext > 65535 then
              reject(("batch dimensions of %d exceed the grid's z limit 65535"):format(c.batch_ext))
            else
              c.predicted, c.parts = cost(c, intr, info)
              cands[#cands + 1] = c
            end
          end
        end
      end
    end
  end
  table.sort(cands, function(a, b)
    if a.predicted ~= b.predicted then return a.predicted < b.predicted end
    if a.waste ~= b.waste then return a.waste < b.waste end
    if #a.groups ~= #b.groups then return #a.groups < #b.groups end
    if a.swap ~= b.swap then return not a.swap end
    return false
  end)
  for i, c in ipairs(cands) do c.index = i end
  return cands, rejected
end

-- a Schedule as it is, a PrimFunc in a new one
local function as_schedule(func_or_sch, P)
  local tir = require("tir")
  if getmetatable(func_or_sch) == tir.Schedule then return func_or_sch end
  if not (tir.core.is_node(func_or_sch, "PrimFunc") or tir.core.is_node(func_or_sch, "IRModule")) then
    raise("TypeError", P, "expected a PrimFunc or a Schedule, got %s", util.describe(func_or_sch))
  end
  return tir.Schedule(func_or_sch)
end

local function check_block_arg(block, P)
  if type(block) ~= "string" and not (type(block) == "table" and block.uid) then
    raise("TypeError", P, "block must be a block name or a BlockRV, got %s", util.describe(block))
  end
end

-- the enumeration on sch (which becomes the candidates' base); shown: the display names of
-- a split already made (amos.apply), nil to make the implied splits here
local mappings_on

--- The valid mappings of a block onto an intrinsic, ranked by the cost model (best first).
--   func_or_sch: a PrimFunc or a tir.Schedule; block: the block's name or BlockRV;
--   intrin: an instruction name of tc_gemm's table ("mma.m16n8k16", "mma.m16n8k32",
--   "wmma.m16n16k16", "wmma.m32n8k16", "wmma.m8n32k16") or "dp4a".
-- A Schedule given is not changed (the enumeration works on a copy; apply one with
-- cands:apply(i) or tir.amos.apply).
-- Returns a tir.amos.Candidates list (cands[i], #cands; print(cands) shows the table; a
-- candidate's fields: M, N, K, bs/ba/bb (lists of iteration-variable positions), ext,
-- padded, waste, layout_a/layout_b, reindex_a/b/c, predicted (seconds), measured).
-- An empty list has cands.reason (why nothing maps: a depthwise convolution's N, say).
-- Errors: TypeError/ValueError naming "amos.mappings" and the block (no reduction,
-- non-affine access, a body that is not a multiply-accumulate, dtypes the intrinsic does not
-- run, an unknown intrinsic).
function amos.mappings(func_or_sch, block, intrin)
  local P = "amos.mappings"
  intrinsic(intrin, P)
  check_block_arg(block, P)
  local sch = as_schedule(func_or_sch, P)
  -- enumerate on a copy: a Schedule given stays as it is
  if sch == func_or_sch then sch = sch:copy() end
  return mappings_on(sch, block, intrin, P)
end

function mappings_on(sch, block, intrin, P, shown)
  local intr = intrinsic(intrin, P)
  local blk = type(block) == "string" and sch:get_block(block) or block
  if shown == nil then shown = split_implied(sch, blk) end
  local info = analyze(sch, blk, P, shown or nil)
  -- dtypes: a row of the intrinsic
  local row
  for _, r in ipairs(intr.rows) do
    for _, sw in ipairs({{1, 2}, {2, 1}}) do
      local a, b = info.ins[sw[1]].dtype, info.ins[sw[2]].dtype
      if not row and r.in_dtype == a and r.b_dtype == b and r.acc_dtype == info.acc_dtype then row = r end
    end
  end
  if not row then
    local t = {}
    for _, r in ipairs(intr.rows) do t[#t + 1] = ("%s x %s -> %s"):format(r.in_dtype, r.b_dtype, r.acc_dtype) end
    raise("TypeError", P, "block '%s' multiplies %s by %s into %s, which %s does not run (it runs %s)", info.name, info.ins[1].dtype,
          info.ins[2].dtype, info.acc_dtype, intr.name, table.concat(t, "; "))
  end
  local cands, rejected = enumerate(info, intr)
  -- a mixed-dtype row fixes which operand is A
  local kept = {}
  for _, c in ipairs(cands) do
    if c.A.dtype == row.in_dtype and c.B.dtype == row.b_dtype then kept[#kept + 1] = c end
  end
  for i, c in ipairs(kept) do c.index = i end
  local out = setmetatable({intrin = intr.name, block = info.name, info = info, row = row, rejected = rejected, base = sch},
                           Candidates)
  for i, c in ipairs(kept) do out[i] = c c.set = out end
  if #kept == 0 then
    out.reason = ("no profitable mapping of block '%s' onto %s: %s"):format(info.name, intr.name,
      #rejected > 0 and table.concat(rejected, "; ") or "no candidate")
  end
  return out
end

-- ---------------------------------------------------------------------------------------
-- Printing
-- ---------------------------------------------------------------------------------------

local function fmt_time(s)
  if not s then return "-" end
  if s < 1e-3 then return ("%.1f us"):format(s * 1e6) end
  return ("%.3f ms"):format(s * 1e3)
end

--- One line describing the mapping: "M=n*h*w(64) N=o(16) K=rh*rw*rc(144) batch=-".
function Candidate:describe()
  local ivs = self.set.info.ivs
  local b = {}
  for _, g in ipairs(self.groups) do b[#b + 1] = names(g, ivs) end
  return ("M=%s(%d) N=%s(%d) K=%s(%d)%s"):format(names(self.M, ivs), self.ext[1], names(self.N, ivs), self.ext[2], names(self.K, ivs),
    self.ext[3], #b > 0 and (" batch=" .. table.concat(b, ",")) or "")
end

function Candidate.__tostring(c)
  return ("tir.amos.Candidate %d of %s onto %s: %s, A=%s %s, B=%s %s, padded %dx%dx%d (%.1f%% waste), predicted %s%s"):format(
    c.index, c.set.block, c.set.intrin, c:describe(), c.A.buffer.name, c.layout_a, c.B.buffer.name, c.layout_b, c.padded[1], c.padded[2],
    c.padded[3], 100 * c.waste, fmt_time(c.predicted), c.measured and (", measured " .. fmt_time(c.measured)) or "")
end

--- The table: index, mapping, operands (A, B and their layouts), padding, waste, predicted
-- and measured time.  limit: rows to show (default all).
function Candidates:table(limit)
  local lines = {}
  lines[1] = ("mappings of block '%s' onto %s (%d candidates%s)"):format(self.block, self.intrin, #self,
    #self.rejected > 0 and (", " .. #self.rejected .. " rejected") or "")
  if #self == 0 then
    lines[#lines + 1] = self.reason
    return table.concat(lines, "\n")
  end
  local rows = {{"#", "mapping", "A", "B", "padded MxNxK", "waste", "gather run A/B", "reuse", "predicted", "measured"}}
  local n = math.min(#self, limit or #self)
  for i = 1, n do
    local c = self[i]
    rows[#rows + 1] = {tostring(i), c:describe(), ("%s %s%s"):format(c.A.buffer.name, c.layout_a, c.reindex_a and "*" or ""),
      ("%s %s%s"):format(c.B.buffer.name, c.layout_b, c.reindex_b and "*" or ""),
      c.pad_any and ("%dx%dx%d"):format(c.padded[1], c.padded[2], c.padded[3]) or "none",
      ("%.1f%%"):format(100 * c.waste), ("%d/%d"):format(c.run_a, c.run_b), ("%.0f"):format(c.parts.reuse), fmt_time(c.predicted),
      c.measure_error and "failed" or fmt_time(c.measured)}
  end
  local w = {}
  for _, r in ipairs(rows) do for j, s in ipairs(r) do w[j] = math.max(w[j] or 0, #s) end end
  for _, r in ipairs(rows) do
    local t = {}
    for j, s in ipairs(r) do t[j] = j == 2 and (s .. (" "):rep(w[j] - #s)) or ((" "):rep(w[j] - #s) .. s) end
    lines[#lines + 1] = table.concat(t, "  ")
  end
  if n < #self then lines[#lines + 1] = ("... %d more (cands:table() shows all)"):format(#self - n) end
  lines[#lines + 1] = "(* = reindexed: gathered into the shared tile; reuse = flops per byte of global traffic)"
  for i = 1, n do
    if self[i].measure_error then lines[#lines + 1] = ("#%d failed to measure: %s"):format(i, self[i].measure_error:match("[^\n]*")) end
  end
  local best = self:best()
  if best and best.measured then lines[#lines + 1] = ("best measured: #%d (%s)"):format(best.index, fmt_time(best.measured)) end
  for _, why in ipairs(self.rejected) do lines[#lines + 1] = "rejected: " .. why end
  return table.concat(lines, "\n")
end


-- ---------------------------------------------------------------------------------------
-- Applying a mapping
-- ---------------------------------------------------------------------------------------

-- fuse(vals, group): the fused index of a group of variables (last fastest)
local function fuse_index(vals, group, ivs)
  local e
  for _, q in ipairs(group) do
    e = e and (e * ivs[q].ext + vals[q]) or vals[q]
  end
  return e
end

-- The index map of an access over the variables it uses (block order) onto its dims in the
-- new iteration space (c.groups.., m, n, k).
local function access_map(c, ivs, acc, dims)
  local used = {}
  for q = 1, #ivs do if acc.uses[q] then used[#used + 1] = q end end
  local ng = #c.groups
  local gl = {}
  for i, g in ipairs(c.groups) do gl[i] = g end
  gl[ng + 1], gl[ng + 2], gl[ng + 3] = c.M, c.N, c.K
  return function(...)
    local args, vals = {...}, {}
    for i, q in ipairs(used) do vals[q] = args[i] end
    local out = {}
    for d, gi in ipairs(dims) do out[d] = fuse_index(vals, gl[gi], ivs) end
    return table.unpack(out)
  end, #used
end

local function block_map(c, ivs)
  local all = {}
  for q = 1, #ivs do all[q] = q end
  local ng = #c.groups
  local dims = {}
  for i = 1, ng + 3 do dims[i] = i end
  return access_map(c, ivs, {uses = setmetatable({}, {__index = function() return true end})}, dims)
end

-- is the new iteration space the block's own (every group one variable, in block order)?
local function identity_layout(c)
  local order = {}
  for _, g in ipairs(c.groups) do if #g ~= 1 then return false end order[#order + 1] = g[1] end
  for _, g in ipairs({c.M, c.N, c.K}) do if #g ~= 1 then return false end order[#order + 1] = g[1] end
  for i = 2, #order do if order[i] < order[i - 1] then return false end end
  return true
end

-- Blocks no kernel binds yet (a producer that could not be inlined, an epilogue): each its
-- own elementwise kernel, 256 threads per CTA.
local function bind_rest(sch)
  for _, b in ipairs(sch:get_child_blocks(sch:get_block("root"))) do
    local loops = {sch:get_loops(b)}
    local bound = false
    for _, l in ipairs(loops) do bound = bound or sch:get(l).thread_tag ~= "" end
    if not bound and #loops > 0 then
      local f = #loops > 1 and sch:fuse(table.unpack(loops)) or loops[1]
      local bx, tx = sch:split(f, {nil, 256})
      sch:bind(bx, "blockIdx.x"); sch:bind(tx, "threadIdx.x")
    end
  end
end

-- The SIMT schedule of a normalized block C[b.., m, n] += A[.., m|k, k|m] * B[.., n|k, k|n] with
-- dp4a: a CTA computes BM x BN with TY x TX threads (register tiles of BM/TY x BN/TX), the
-- operands' tiles staged in shared memory per 16-deep k step (the operand stages made the
-- tiles by set_scope, like tc_gemm's a_stage, else cache_read), both stored k-major so one
-- intrinsic covers both layouts (the prmt-packing dp4a of tir.intrin.dp4a), the accumulators in
-- registers; epilogue: the output's reindex stage (inlined into the register write-back) or a
-- kernel of its own (writeback).
local DP4A_OPTS = {BM = "positive", BN = "positive", TY = "positive", TX = "positive"}
local function dp4a_schedule(sch, name, o, P)
  local dp4a = require("tir.intrin.dp4a")
  local C = sch:get_block(name)
  local b = sch:get(C)
  local loops = {sch:get_loops(C)}
  local nb = #loops - 3
  local dom = {}
  for q, iv in ipairs(b.iter_vars) do dom[q] = iv.dom.extent.value end
  local m, n, k = dom[nb + 1], dom[nb + 2], dom[nb + 3]
  local function pick(e, want)
    if want then return e % want == 0 and want or nil end
    for _, t in ipairs({64, 32, 16}) do if e % t == 0 then return t end end
  end
  local BM, BN = pick(m, o.BM), pick(n, o.BN)
  if (o.BM and BM ~= o.BM) or (o.BN and BN ~= o.BN) then
    raise("ValueError", P, "dp4a: BM = %s, BN = %s must divide M = %d, N = %d", tostring(o.BM), tostring(o.BN), m, n)
  end
  local TY, TX = o.TY or math.min(8, BM), o.TX or math.min(8, BN)
  if BM % TY ~= 0 or BN % TX ~= 0 then raise("ValueError", P, "dp4a: TY = %d, TX = %d must divide BM = %d, BN = %d", TY, TX, BM, BN) end
  local BK = 16
  -- operand tiles in shared memory
  local reads = b.reads
  local function stage(stage_name, pos)
    if stage_name then
      local S = sch:get_block(stage_name)
      sch:set_scope(S, 0, "shared")
      return S
    end
    return sch:cache_read(C, pos, "shared", {C})
  end
  local posA, posB = 0, 1
  local AS, BS = stage(o.a_stage, posA), stage(o.b_stage, posB)
  local CL = sch:cache_write(C, 0, "local")
  if o.epilogue then sch:reverse_compute_inline(o.epilogue) end
  loops = {sch:get_loops(C)}
  local i, j, kk = loops[nb + 1], loops[nb + 2], loops[nb + 3]
  local by, ty, ii = sch:split(i, {nil, TY, BM // TY})
  local bx, tx, jj = sch:split(j, {nil, TX, BN // TX})
  local ko, ki = sch:split(kk, {nil, BK})
  local order = {}
  for q = 1, nb do order[q] = loops[q] end
  for _, l in ipairs({by, bx, ty, tx, ko, ki, ii, jj}) do order[#order + 1] = l end
  sch:reorder(table.unpack(order))
  if nb > 0 then sch:bind(nb > 1 and sch:fuse(table.unpack(loops, 1, nb)) or loops[1], "blockIdx.z") end
  sch:bind(by, "blockIdx.y"); sch:bind(bx, "blockIdx.x")
  sch:bind(ty, "threadIdx.y"); sch:bind(tx, "threadIdx.x")
  sch:compute_at(AS, ko); sch:compute_at(BS, ko)
  sch:reverse_compute_at(CL, tx)
  for _, S in ipairs({AS, BS}) do
    local l = {sch:get_loops(S)}
    local f = sch:fuse(l[#l - 1], l[#l])
    local _, fy, fx = sch:split(f, {nil, TY, TX})
    sch:bind(fy, "threadIdx.y"); sch:bind(fx, "threadIdx.x")
  end
  -- both tiles k-major ([k][row]): the dp4a intrinsic's kmajor form packs four rows of a column
  for _, S in ipairs({AS, BS}) do
    local buf = sch:get(S).writes[1].buffer
    local nd = #buf.shape
    local last_is_k = false
    local kvar = sch:get(C).iter_vars[nb + 3].var
    for _, rg in ipairs(sch:get(C).reads) do
      if rg.buffer == buf then last_is_k = rg.region[#rg.region].min == kvar end
    end
    if last_is_k then
      sch:transform_layout(S, {"write", 0}, function(...)
        local x = {...}
        x[nd - 1], x[nd] = x[nd], x[nd - 1]
        return table.unpack(x)
      end)
    end
  end
  sch:decompose_reduction(C, ko)
  local upd = sch:get_block(name .. "_update")
  local dt = {}
  for q, rg in ipairs(sch:get(upd).reads) do dt[q] = rg.buffer.dtype end
  local ul = {sch:get_loops(upd)}
  local kl, il, jl = ul[#ul - 2], ul[#ul - 1], ul[#ul]
  local kio, kii = sch:split(kl, {nil, 4})
  sch:reorder(kio, il, jl, kii)
  local adt, bdt
  for _, rg in ipairs(sch:get(upd).reads) do
    if rg.buffer == sch:get(AS).writes[1].buffer then adt = rg.buffer.dtype end
    if rg.buffer == sch:get(BS).writes[1].buffer then bdt = rg.buffer.dtype end
  end
  sch:tensorize(kii, dp4a.name(adt, bdt, true, "shared"))
  if o.writeback then
    local D = sch:get_block(o.writeback)
    local f = sch:fuse(sch:get_loops(D))
    local bxd, txd = sch:split(f, {nil, 256})
    sch:bind(bxd, "blockIdx.x"); sch:bind(txd, "threadIdx.x")
  end
  return {BM = BM, BN = BN, BK = BK, TY = TY, TX = TX, stages = 1}
end

local function perform(sch, c, extra, P)
  local tc = require("tir.schedules.tc_gemm")
  local set = c.set
  local intr = intrinsic(set.intrin, P)
  local info = set.info
  local ivs = info.ivs
  local blk = sch:get_block(info.name)
  local CR, AR, BR
  if c.reindex_c then CR = sch:reindex(blk, {"write", 0}) end
  if c.reindex_a then AR = sch:reindex(blk, {"read", c.A.pos}) end
  if c.reindex_b then BR = sch:reindex(blk, {"read", c.B.pos}) end
  -- elementwise producers of a gathered operand (a padding stage) move into its gather
  for _, R in ipairs({AR or false, BR or false}) do
    if R then
      for _, p in ipairs(sch:get_producers(R)) do
        local pb = sch:get(p)
        if not pb.init then pcall(sch.compute_inline, sch, p) end
      end
    end
  end
  local function relayout(R, acc, dims, kind)
    local fn = access_map(c, ivs, acc, dims)
    sch:transform_layout(R, {kind, 0}, fn)
    sch:transform_block_layout(R, fn)
  end
  if AR then relayout(AR, c.A, c.dims_a, "write") end
  if BR then relayout(BR, c.B, c.dims_b, "write") end
  if CR then relayout(CR, info.out, c.dims_c, "read") end
  if not identity_layout(c) then sch:transform_block_layout(blk, (block_map(c, ivs))) end
  if CR then
    -- elementwise consumers of the output (an epilogue) move into the write-back
    for _, q in ipairs(sch:get_consumers(CR)) do pcall(sch.reverse_compute_inline, sch, q) end
  end
  -- padding to whole instruction tiles (pad_einsum): the zero-filling copies of the operands
  -- take over the gathers (the reindex stages are inlined into them), the output's copy back
  -- takes over the write-back
  local stage_a, stage_b, wb = AR, BR, CR
  if c.pad_any then
    local g = intr.granule
    local factors = {}
    for i = 1, #c.groups do factors[i] = 1 end
    factors[#factors + 1], factors[#factors + 2], factors[#factors + 3] = g[1], g[2], g[3]
    local abuf = AR and sch:get(AR).writes[1].buffer or c.A.buffer
    local bbuf = BR and sch:get(BR).writes[1].buffer or c.B.buffer
    for _, nb in ipairs({sch:pad_einsum(blk, factors)}) do
      local b = sch:get(nb)
      local reads_ = b.reads[1] and b.reads[1].buffer
      if reads_ == abuf or reads_ == bbuf then
        local R = reads_ == abuf and AR or BR
        if R then sch:compute_inline(R) end
        if reads_ == abuf then stage_a = nb else stage_b = nb end
      else
        if CR then sch:reverse_compute_inline(CR) end
        wb = nb
      end
    end
  end
  local o = {a_stage = stage_a and sch:get(stage_a).name or nil, b_stage = stage_b and sch:get(stage_b).name or nil}
  if wb and wb == CR then
    -- the output's reindex stage reads the accumulator over its whole domain: it becomes the
    -- fragment store's epilogue, staged through shared memory (its output index is no window of
    -- a fragment), so no fp32 workspace exists in global memory
    o.epilogue, o.stage_epilogue = sch:get(wb).name, true
  elseif wb then
    o.writeback = sch:get(wb).name -- the padded output's copy back: a kernel of its own
  end
  local chosen
  if intr.simt then
    for k, v in pairs(extra or {}) do
      if not DP4A_OPTS[k] then raise("ValueError", P, "option %s does not apply to dp4a (its options: BM, BN, TY, TX)", util.show(k)) end
      o[k] = v
    end
    require("tir.intrin.dp4a")
    chosen = dp4a_schedule(sch, info.name, o, P)
  else
    -- the tuning database's records are plain GEMMs' (tc_gemm_tune): used when asked for
    o.tuned = false
    for k, v in pairs(extra or {}) do o[k] = v end
    _, chosen = tc.auto_tensorize(sch, set.intrin, info.name, o)
  end
  bind_rest(sch)
  return sch, chosen
end

local function pick(cands, choice, P)
  if #cands == 0 then raise("ValueError", P, "%s", cands.reason) end
  if choice == nil then return cands:best() end
  if math.type(choice) == "integer" then
    if choice < 1 or choice > #cands then
      raise("ValueError", P, "candidate %d does not exist: block '%s' has %d mappings onto %s (1..%d)", choice, cands.block, #cands,
            cands.intrin, #cands)
    end
    return cands[choice]
  end
  if getmetatable(choice) == Candidate then
    for _, c in ipairs(cands) do if c:describe() == choice:describe() and c.swap == choice.swap then return c end end
    raise("ValueError", P, "the candidate %s is not a mapping of block '%s' onto %s", choice:describe(), cands.block, cands.intrin)
  end
  raise("TypeError", P, "choice must be a candidate index (an integer), a tir.amos.Candidate or nil (the best), got %s", util.show(choice))
end

--- The best candidate: the fastest measured one when any was measured, else the best
-- predicted (the first).
function Candidates:best()
  local best
  for _, c in ipairs(self) do
    if c.measured and (not best or c.measured < best.measured) then best = c end
  end
  return best or self[1]
end

local APPLY_OPTS
local function apply_opts()
  if not APPLY_OPTS then
    APPLY_OPTS = {}
    for k, v in pairs(require("tir.schedules.tc_gemm").SCHEDULE_OPTS) do APPLY_OPTS[k] = v end
    APPLY_OPTS.sm_count = "positive"
    APPLY_OPTS.TY, APPLY_OPTS.TX = "positive", "positive" -- dp4a's thread tiles
    for _, k in ipairs({"a_stage", "b_stage", "writeback", "block"}) do APPLY_OPTS[k] = nil end
  end
  return APPLY_OPTS
end

--- Applies candidate `choice` (its index, the Candidate, or nil: cands:best()) on a fresh
-- copy of the schedule the candidates were enumerated on; returns the Schedule, the
-- Candidate and the tc_gemm options chosen.  extra: tc_gemm.auto_tensorize options (tiles,
-- stages, sm_count) overriding the chosen ones.
function Candidates:apply(choice, extra)
  local P = "amos.apply"
  extra = util.check_opts(P, extra, apply_opts())
  local c = pick(self, choice, P)
  local sch = self.base:copy()
  local _, o = perform(sch, c, extra, P)
  return sch, c, o
end

--- Enumerates the mappings of `block` onto `intrin` and applies one (choice: an index into
-- the ranked list, a Candidate, or nil for the best) with schedule primitives.  A Schedule
-- given is changed in place (the steps extend its trace); a PrimFunc gets a new Schedule.
-- Returns the Schedule, the Candidate applied and the tc_gemm options chosen.  Errors:
-- those of amos.mappings, "no profitable mapping" (with the reason) when there is none, a
-- choice that does not exist.
function amos.apply(func_or_sch, block, intrin, choice, extra)
  local P = "amos.apply"
  extra = util.check_opts(P, extra, apply_opts())
  local sch = as_schedule(func_or_sch, P)
  intrinsic(intrin, P)
  check_block_arg(block, P)
  local shown = split_implied(sch, type(block) == "string" and sch:get_block(block) or block)
  local cands = mappings_on(sch:copy(), block, intrin, P, shown or false)
  local c = pick(cands, choice, P)
  local _, o = perform(sch, c, extra, P)
  return sch, c, o
end

--- Measures candidates (the AMOS paper's tuning by measurement): for each of the first
-- opts.top candidates (default 8, in ranking order) applies it on a copy, builds it for
-- CUDA and times it on random inputs (mod:time_evaluator, median seconds), storing
-- cand.measured (or cand.measure_error when it fails to build or run; the others go on).
-- cands:best() is then the fastest measured one and print(cands) shows the times.
--   opts: top, number (20), repeat_ (3), device (0), extra (tc_gemm options for apply),
--   runner = function(sch, cand) -> seconds: replaces build + time (another timer, a
--   simulator-based estimate, a remote device).
-- Without a runner it needs a CUDA device and raises a RuntimeError naming amos.measure
-- otherwise.  Returns cands.
function amos.measure(cands, opts)
  local P = "amos.measure"
  if getmetatable(cands) ~= Candidates then
    raise("TypeError", P, "expected the candidates of tir.amos.mappings, got %s", util.describe(cands))
  end
  opts = util.check_opts(P, opts, {top = "positive", number = "positive", repeat_ = "positive", device = "nonneg", extra = "table",
                                   runner = "function"})
  local tir = require("tir")
  local runner = opts.runner
  if not runner then
    local dev = tir.device("cuda", opts.device or 0)
    if not dev:exists() then
      raise("RuntimeError", P, "no CUDA device %d: candidates are measured on a GPU (pass opts.runner to measure otherwise); " ..
            "the ranking stays the predicted one", opts.device or 0)
    end
    local func = cands.base.mod
    if tir.core.is_node(func, "IRModule") then func = func.functions[1] end
    local host = tir.testing.random_args(func, 1)
    local args = {}
    for i, a in ipairs(host) do args[i] = a:to(dev) end
    runner = function(sch)
      local mod = tir.build(sch.mod, "cuda")
      return mod:time_evaluator({number = opts.number or 20, repeat_ = opts.repeat_ or 3})(table.unpack(args))
    end
  end
  for i = 1, math.min(#cands, opts.top or 8) do
    local c = cands[i]
    local ok, t = pcall(function()
      local sch = cands:apply(i, opts.extra)
      return runner(sch, c)
    end)
    if ok and type(t) == "number" then c.measured, c.measure_error = t, nil
    else c.measured, c.measure_error = nil, ok and ("the runner returned " .. util.describe(t)) or tostring(t) end
  end
  return cands
end

function Candidates.__tostring(s) return s:table(20) end
function Candidates.__len(s) return rawlen(s) end

-- a call with more arguments than a function takes is an error (util.strict)
for _, k in ipairs({"mappings", "apply", "measure", "predict"}) do amos[k] = util.strict("amos." .. k, amos[k]) end
for _, k in ipairs({"apply", "table", "best"}) do Candidates[k] = util.strict("Candidates:" .. k, Candidates[k], true) end
Candidate.describe = util.strict("Candidate:describe", Candidate.describe, true)

return amos
