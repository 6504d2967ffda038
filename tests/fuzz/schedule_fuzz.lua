-- schedule_fuzz.lua -- randomized schedule checker.
--
--   build/tirlua tests/fuzz/schedule_fuzz.lua [--seed S] [--count N] [--steps K] [--jobs J]
--       [--time-limit SEC] [--verbose] [--inproc] [--no-nvrtc] [--skip prim,prim]
--
-- Each sequence (seeds S, S+1, ..., S+N-1) builds a random small workload (matmul with or
-- without an epilogue, batched matmul, NCHW conv2d with a padding stage, elementwise
-- chains, reductions, a softmax-like chain, a T-script function; int32 or float32) and
-- applies up to K random schedule primitives with random arguments, drawn mostly from the
-- current schedule (its blocks, their loops, producers and consumers) and sometimes
-- deliberately wrong (stale handles, loops of other blocks, bad indices, scopes, tags,
-- factors).  rfactor, blockize, reindex, transform_layout and transform_block_layout are
-- drawn when they exist.
-- Every step must either
--   * be accepted: the function still prints and loads back structurally equal, computes
--     the same as the original on random inputs in the interpreter (bit-exact for int32;
--     float32 too, unless a step may change the order of float additions -- reorder,
--     rfactor, transform_block_layout -- then rtol 1e-5), lowers (tir.lower), the
--     lowered function computes the same (unless it has shared, warp or wmma memory: the
--     interpreter runs threads one after another), and, when it binds threads, CUDA C is
--     generated (the last state of a sequence is also compiled by NVRTC where NVRTC is
--     available); lowering may refuse a state with one of the clear errors listed in
--     EXPECTED_LOWERING (counted as refused at lowering); or
--   * be rejected with a tir.Error (ScheduleError/TypeError/ValueError) whose text names
--     the primitive, leaving the function unchanged.
-- At the end of a sequence the trace (sch:trace()) must replay to the same function.
-- A failure prints the seed, the workload, the steps, the trace, the original and current
-- functions and the command that replays it; the exit status is then non-zero.
--
-- By default the sequences run in child processes (this script with --child; --jobs of
-- them at once) watched by this one: a sequence running longer than --time-limit seconds
-- is killed and reported as a hang; a crash (signal, sanitizer report) is reported with the
-- steps tried so far, and a new child resumes after that sequence; a non-zero exit after
-- the last sequence (LeakSanitizer) is reported too.  --inproc runs everything in this
-- process (no watchdog; for a debugger).  --skip leaves primitives out (the random draws,
-- and so the sequences, then differ: replay with the same --skip).
local tir = require("tir")
local te, T = tir.te, tir.script
local core = tir.core

-- ---------------------------------------------------------------------------------------
-- options
local opts = {seed = 1, count = 100, steps = 8, jobs = 1, time_limit = 60, verbose = false, child = false,
              inproc = false, nvrtc = true, skip = {}, skip_text = "", selftest = nil}
do
  local i = 1
  local function num(name)
    i = i + 1
    local v = math.tointeger(tonumber(arg[i]))
    if not v then io.stderr:write(("schedule_fuzz: %s needs an integer\n"):format(name)); os.exit(2) end
    return v
  end
  while arg[i] do
    local a = arg[i]
    if a == "--seed" then opts.seed = num(a)
    elseif a == "--count" then opts.count = num(a)
    elseif a == "--steps" then opts.steps = num(a)
    elseif a == "--jobs" then opts.jobs = num(a)
    elseif a == "--time-limit" then opts.time_limit = num(a)
    elseif a == "--verbose" then opts.verbose = true
    elseif a == "--child" then opts.child = true
    elseif a == "--inproc" then opts.inproc = true
    elseif a == "--no-nvrtc" then opts.nvrtc = false
    elseif a == "--selftest" then -- checks the watchdog: the first sequence hangs or crashes
      i = i + 1
      opts.selftest = arg[i]
    elseif a == "--skip" then
      i = i + 1
      opts.skip_text = arg[i] or ""
      for name in opts.skip_text:gmatch("[%w_]+") do opts.skip[name] = true end
    else
      io.stderr:write(("schedule_fuzz: unknown argument %q\n"):format(a))
      io.stderr:write("usage: tirlua schedule_fuzz.lua [--seed S] [--count N] [--steps K] [--jobs J] " ..
                      "[--time-limit SEC] [--verbose] [--inproc] [--no-nvrtc] [--skip prim,prim]\n")
      os.exit(2)
    end
    i = i + 1
  end
end

local function out(fmt, ...)
  io.stdout:write(select("#", ...) > 0 and fmt:format(...) or fmt, "\n")
  io.stdout:flush()
end
-- protocol lines for the watching parent (only in --child mode)
local function proto(fmt, ...) if opts.child then out("@@" .. fmt, ...) end end

local function replay_cmd(seed)
  return ("%s %s --seed %d --count 1 --verbose%s%s"):format(arg[-1] or "tirlua", arg[0], seed,
    opts.steps ~= 8 and (" --steps " .. opts.steps) or "", opts.skip_text ~= "" and (" --skip " .. opts.skip_text) or "")
end

-- =======================================================================================
-- Parent: runs children and watches them.
-- =======================================================================================
local SUMMARY = "schedule_fuzz: %d sequences (seeds %d..%d): steps %d accepted, %d rejected; %d checks refused " ..
                "at lowering; %d CUDA C builds (%d compiled by NVRTC); %d stopped as too large; %d failures"

local function shell_quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

local function run_parent()
  local exe, script = arg[-1], arg[0]
  local last = opts.seed + opts.count - 1
  local totals = {seqs = 0, acc = 0, rej = 0, fail = 0, lower_rej = 0, built = 0, compiled = 0, too_big = 0}
  local extra = (opts.verbose and " --verbose" or "") .. (opts.nvrtc and "" or " --no-nvrtc") ..
                (" --steps %d"):format(opts.steps) ..
                (opts.skip_text ~= "" and (" --skip " .. shell_quote(opts.skip_text)) or "") ..
                (opts.selftest and (" --selftest " .. shell_quote(opts.selftest:match("^%a+") .. ":" .. opts.seed)) or "")

  -- a slot is one child working on seeds [from, to]
  local slots = {}
  local function spawn(slot, from)
    slot.from, slot.pos, slot.buf = from, 0, ""
    slot.cur, slot.cur_lines, slot.pid, slot.exit, slot.killed = nil, {}, nil, nil, false
    slot.file = os.tmpname()
    local cmd = ("{ %s %s --child --seed %d --count %d%s; echo \"@@EXIT $?\"; } >%s 2>&1 </dev/null &"):format(
      shell_quote(exe), shell_quote(script), from, slot.to - from + 1, extra, shell_quote(slot.file))
    os.execute(cmd)
  end
  local per = math.max(1, (opts.count + opts.jobs - 1) // opts.jobs)
  local s = opts.seed
  while s <= last do
    local slot = {to = math.min(last, s + per - 1)}
    slots[#slots + 1] = slot
    spawn(slot, s)
    s = slot.to + 1
  end

  local function report_dead(slot, why)
    totals.fail = totals.fail + 1
    totals.seqs = totals.seqs + 1
    out("FAIL seed=%d: %s", slot.cur, why)
    for _, l in ipairs(slot.cur_lines) do out("  %s", l) end
    out("replay: %s", replay_cmd(slot.cur))
  end

  local function handle(slot, line)
    local tag, rest = line:match("^@@(%u+)%s?(.*)$")
    if not tag then io.stdout:write(line, "\n"); return end
    if tag == "PID" then slot.pid = math.tointeger(tonumber(rest))
    elseif tag == "SEQ" then
      slot.cur, slot.start, slot.cur_lines = math.tointeger(tonumber(rest)), os.time(), {}
    elseif tag == "WL" then slot.cur_lines[#slot.cur_lines + 1] = "workload: " .. rest
    elseif tag == "TRY" then slot.cur_lines[#slot.cur_lines + 1] = "step " .. rest
    elseif tag == "RES" then slot.cur_lines[#slot.cur_lines] = (slot.cur_lines[#slot.cur_lines] or "") .. "  -> " .. rest
    elseif tag == "PHASE" then slot.cur_lines[#slot.cur_lines + 1] = "phase: " .. rest
    elseif tag == "END" then
      local seed, status, acc, rej, lrej, built, comp, big = rest:match("^(%-?%d+) (%a+) (%d+) (%d+) (%d+) (%d+) (%d+) (%d+)$")
      totals.seqs = totals.seqs + 1
      totals.acc = totals.acc + tonumber(acc)
      totals.rej = totals.rej + tonumber(rej)
      totals.lower_rej = totals.lower_rej + tonumber(lrej)
      totals.built = totals.built + tonumber(built)
      totals.compiled = totals.compiled + tonumber(comp)
      totals.too_big = totals.too_big + tonumber(big)
      if status ~= "pass" then totals.fail = totals.fail + 1 end
      slot.cur, slot.from = nil, math.tointeger(tonumber(seed)) + 1
    elseif tag == "EXIT" then slot.exit = math.tointeger(tonumber(rest)) or -1
    end
  end

  local sleep = 0.02
  while true do
    local busy = false
    for _, slot in ipairs(slots) do
      if slot.file then
        busy = true
        local f = io.open(slot.file, "rb")
        local data = ""
        if f then
          f:seek("set", slot.pos)
          data = f:read("a") or ""
          f:close()
        end
        slot.pos = slot.pos + #data
        slot.buf = slot.buf .. data
        while true do
          local nl = slot.buf:find("\n", 1, true)
          if not nl then break end
          local line = slot.buf:sub(1, nl - 1)
          slot.buf = slot.buf:sub(nl + 1)
          handle(slot, line)
        end
        if #data > 0 then sleep = 0.02 end
        if slot.exit then
          if #slot.buf > 0 then io.stdout:write(slot.buf, "\n") end
          os.remove(slot.file)
          slot.file = nil
          if slot.cur then
            local why
            if slot.killed then
              why = ("hang: the sequence ran longer than %d s and was killed"):format(opts.time_limit)
            else
              why = ("crash: the child died (exit status %d) during this sequence; its output is above"):format(slot.exit)
            end
            report_dead(slot, why)
            if slot.cur < slot.to then spawn(slot, slot.cur + 1) end
          elseif slot.exit ~= 0 then
            totals.fail = totals.fail + 1
            out("FAIL: the child for seeds up to %d exited with status %d after its last sequence " ..
                "(a leak or sanitizer report at exit? see above; rerun the seeds with --inproc to narrow it down)",
                slot.to, slot.exit)
          elseif slot.from <= slot.to then
            -- exited cleanly before finishing (should not happen): resume
            spawn(slot, slot.from)
          end
        elseif slot.cur and slot.pid and not slot.killed and os.time() - slot.start > opts.time_limit then
          slot.killed = true
          os.execute("kill -9 " .. slot.pid .. " 2>/dev/null")
        end
      end
    end
    if not busy then break end
    os.execute(("sleep %.2f"):format(sleep))
    sleep = math.min(0.2, sleep * 1.5)
  end
  out(SUMMARY, totals.seqs, opts.seed, last, totals.acc, totals.rej, totals.lower_rej, totals.built, totals.compiled,
      totals.too_big, totals.fail)
  os.exit(totals.fail == 0 and totals.seqs == opts.count and 0 or 1, true)
end

if not opts.child and not opts.inproc then run_parent() end

-- =======================================================================================
-- Child: runs the sequences.
-- =======================================================================================
do
  local f = io.open("/proc/self/stat")
  if f then
    local pid = (f:read("l") or ""):match("^(%d+)")
    f:close()
    if pid then proto("PID %s", pid) end
  end
end

local rnd = math.random
local function pick(t) return t[rnd(#t)] end
local function chance(p) return rnd() < p end

-- ---------------------------------------------------------------------------------------
-- workloads: each returns {desc = , func = , dtype = , float = bool}
local function size(lo, hi) return rnd(lo, hi) end
local function dtype_pick() return chance(0.5) and "int32" or "float32" end
local function cst(dtype, v) return dtype == "int32" and math.tointeger(v) or v + 0.0 end

local workloads = {}

function workloads.matmul()
  local M, N, K, dt = size(1, 12), size(1, 12), size(1, 12), dtype_pick()
  local A = te.placeholder({M, K}, dt, "A")
  local B = te.placeholder({K, N}, dt, "B")
  local k = te.reduce_axis({0, K}, "k")
  local C = te.compute({M, N}, function(i, j) return te.sum(A[{i, k}] * B[{k, j}], {k}) end, "C")
  local args = {A, B, C}
  local desc = ("matmul M=%d N=%d K=%d %s"):format(M, N, K, dt)
  if chance(0.3) then -- with an epilogue
    local D = te.compute({M, N}, function(i, j) return C[{i, j}] * cst(dt, 2) + cst(dt, 1) end, "D")
    args = {A, B, D}
    desc = desc .. " + epilogue"
  end
  return {desc = desc, func = te.create_prim_func(args), dtype = dt}
end

function workloads.batch_matmul()
  local Bn, M, N, K, dt = size(1, 3), size(1, 8), size(1, 8), size(1, 8), dtype_pick()
  local A = te.placeholder({Bn, M, K}, dt, "A")
  local B = te.placeholder({Bn, K, N}, dt, "B")
  local k = te.reduce_axis({0, K}, "k")
  local C = te.compute({Bn, M, N}, function(b, i, j) return te.sum(A[{b, i, k}] * B[{b, k, j}], {k}) end, "C")
  return {desc = ("batch_matmul B=%d M=%d N=%d K=%d %s"):format(Bn, M, N, K, dt), func = te.create_prim_func({A, B, C}),
          dtype = dt}
end

function workloads.conv2d()
  local N, CI, H, W = size(1, 2), size(1, 3), size(3, 7), size(3, 7)
  local CO, KH, KW = size(1, 3), size(1, 3), size(1, 3)
  local stride, pad, dt = size(1, 2), size(0, 1), dtype_pick()
  local HP, WP = H + 2 * pad, W + 2 * pad
  local OH, OW = (HP - KH) // stride + 1, (WP - KW) // stride + 1
  local A = te.placeholder({N, CI, H, W}, dt, "A")
  local Wt = te.placeholder({CO, CI, KH, KW}, dt, "W")
  local zero = cst(dt, 0)
  -- indices are clamped too, so the regions the schedules see stay inside A (tir.if_then_else
  -- itself evaluates only the side taken)
  local P = te.compute({N, CI, HP, WP}, function(n, c, h, w)
    local inside = tir.all(tir.ge(h, pad), tir.lt(h, H + pad), tir.ge(w, pad), tir.lt(w, W + pad))
    local hh = tir.max(tir.min(h - pad, H - 1), 0)
    local ww = tir.max(tir.min(w - pad, W - 1), 0)
    return tir.if_then_else(inside, A[{n, c, hh, ww}], zero)
  end, "pad")
  local rc, rh, rw = te.reduce_axis({0, CI}, "rc"), te.reduce_axis({0, KH}, "rh"), te.reduce_axis({0, KW}, "rw")
  local O = te.compute({N, CO, OH, OW}, function(n, f, y, x)
    return te.sum(P[{n, rc, y * stride + rh, x * stride + rw}] * Wt[{f, rc, rh, rw}], {rc, rh, rw})
  end, "conv")
  return {desc = ("conv2d N=%d C=%d H=%d W=%d F=%d KH=%d KW=%d stride=%d pad=%d %s"):format(
            N, CI, H, W, CO, KH, KW, stride, pad, dt),
          func = te.create_prim_func({A, Wt, O}), dtype = dt}
end

local function random_shape(maxdims, maxsize)
  local nd = rnd(1, maxdims)
  local shape = {}
  for d = 1, nd do shape[d] = size(1, maxsize) end
  return shape
end

local function index(t, idx) return t[idx] end

function workloads.elementwise()
  local dt = dtype_pick()
  local shape = random_shape(3, 9)
  local A = te.placeholder(shape, dt, "A")
  local Bin = te.placeholder(shape, dt, "B")
  local nstage = rnd(2, 4)
  local prev, used_b = A, false
  local ops = {}
  for s = 1, nstage do
    local op = rnd(1, 5)
    if op == 5 and #shape ~= 2 then op = 1 end
    local name = "T" .. s
    local p = prev
    if op == 1 then
      prev = te.compute(shape, function(...) return index(p, {...}) * cst(dt, 3) + cst(dt, 1) end, name)
      ops[#ops + 1] = "x*3+1"
    elseif op == 2 then
      prev = te.compute(shape, function(...) return tir.max(index(p, {...}), cst(dt, 0)) end, name)
      ops[#ops + 1] = "max(x,0)"
    elseif op == 3 then
      used_b = true
      prev = te.compute(shape, function(...) local ix = {...}; return index(p, ix) - index(Bin, ix) end, name)
      ops[#ops + 1] = "x-B"
    elseif op == 4 then
      if dt == "int32" then
        prev = te.compute(shape, function(...) return index(p, {...}) // 3 + index(p, {...}) % 4 end, name)
        ops[#ops + 1] = "x//3+x%4"
      else
        prev = te.compute(shape, function(...) return index(p, {...}) * index(p, {...}) end, name)
        ops[#ops + 1] = "x*x"
      end
    else
      -- transpose: shape[1] x shape[2] -> swapped and back keeps the shape when square;
      -- otherwise a transposed stage followed by its transpose back
      local m, n = shape[1], shape[2]
      local tp = te.compute({n, m}, function(i, j) return p[{j, i}] + cst(dt, 1) end, name .. "t")
      prev = te.compute(shape, function(i, j) return tp[{j, i}] end, name)
      ops[#ops + 1] = "transpose2"
    end
  end
  local args = used_b and {A, Bin, prev} or {A, prev}
  local dims = {}
  for i, d in ipairs(shape) do dims[i] = tostring(d) end
  return {desc = ("elementwise [%s] %s: %s"):format(table.concat(dims, "x"), dt, table.concat(ops, ", ")),
          func = te.create_prim_func(args), dtype = dt}
end

function workloads.reduction()
  local dt = dtype_pick()
  local shape = random_shape(3, 8)
  if #shape == 1 then shape[2] = size(1, 8) end
  local ax = rnd(1, #shape)
  local comb = pick({"sum", "max", "min"})
  local X = te.placeholder(shape, dt, "X")
  local src = X
  local pre = chance(0.4)
  if pre then src = te.compute(shape, function(...) return index(X, {...}) * cst(dt, 2) + cst(dt, 1) end, "pre") end
  local oshape = {}
  for d = 1, #shape do if d ~= ax then oshape[#oshape + 1] = shape[d] end end
  local r = te.reduce_axis({0, shape[ax]}, "r")
  local Y = te.compute(oshape, function(...)
    local o, ix, j = {...}, {}, 1
    for d = 1, #shape do
      if d == ax then ix[d] = r else ix[d] = o[j]; j = j + 1 end
    end
    return te[comb](index(src, ix), {r})
  end, "red")
  local post = chance(0.4)
  local res = Y
  if post then res = te.compute(oshape, function(...) return index(Y, {...}) + cst(dt, 1) end, "post") end
  local dims = {}
  for i, d in ipairs(shape) do dims[i] = tostring(d) end
  return {desc = ("reduction %s over axis %d of [%s] %s%s%s"):format(comb, ax - 1, table.concat(dims, "x"), dt,
                                                                  pre and " +prologue" or "", post and " +epilogue" or ""),
          func = te.create_prim_func({X, res}), dtype = dt}
end

function workloads.softmax()
  local n, m = size(1, 8), size(1, 12)
  local X = te.placeholder({n, m}, "float32", "X")
  local k1 = te.reduce_axis({0, m}, "k")
  local mx = te.compute({n}, function(i) return te.max(X[{i, k1}], {k1}) end, "maxv")
  local e = te.compute({n, m}, function(i, j) return tir.call("float32", "exp", X[{i, j}] - mx[{i}]) end, "expv")
  local k2 = te.reduce_axis({0, m}, "k2")
  local s = te.compute({n}, function(i) return te.sum(e[{i, k2}], {k2}) end, "sumv")
  local o = te.compute({n, m}, function(i, j) return e[{i, j}] / s[{i}] end, "out")
  return {desc = ("softmax [%dx%d] float32"):format(n, m), func = te.create_prim_func({X, o}), dtype = "float32"}
end

-- Written in the T script: a transposed copy into a scratch buffer, a row sum with an
-- init, and a block predicate.
function workloads.tscript()
  local n, m = size(1, 9), size(1, 9)
  local dt = dtype_pick()
  local f = T.prim_func("main", {A = T.Buffer({m, n}, dt), S = T.Buffer({n}, dt)}, function(A, S)
    local Bt = T.alloc_buffer({n, m}, dt)
    for i, j in T.grid(n, m) do
      T.block("transpose", function()
        local vi, vj = T.axis.remap("SS", {i, j})
        Bt[{vi, vj}] = A[{vj, vi}] * T.cast(dt, 2)
      end)
    end
    for i, k in T.grid(n, m) do
      T.block("rowsum", function()
        local vi, vk = T.axis.remap("SR", {i, k})
        T.init(function() S[{vi}] = T.cast(dt, 0) end)
        S[{vi}] = S[{vi}] + Bt[{vi, vk}]
      end)
    end
  end)
  return {desc = ("tscript transpose+rowsum n=%d m=%d %s"):format(n, m, dt), func = f, dtype = dt}
end

local workload_names = {"matmul", "matmul", "batch_matmul", "conv2d", "elementwise", "elementwise", "reduction",
                        "reduction", "softmax", "tscript"}

-- ---------------------------------------------------------------------------------------
-- IR walks
local function walk_stmt(s, fn)
  if s == nil then return end
  local k = s.kind
  if k == "SeqStmt" then
    for i = 1, #s.seq do walk_stmt(s.seq[i], fn) end
  elseif k == "For" then
    fn(s)
    walk_stmt(s.body, fn)
  elseif k == "BlockRealize" then
    fn(s)
    walk_stmt(s.block.init, fn)
    walk_stmt(s.block.body, fn)
  elseif k == "IfThenElse" then
    walk_stmt(s.then_case, fn)
    walk_stmt(s.else_case, fn)
  elseif k == "LetStmt" or k == "AttrStmt" or k == "Allocate" then
    fn(s)
    walk_stmt(s.body, fn)
  end
end

local function func_of(x) if type(x) == "table" and x.func then return x.func end return x end

--- Names of all blocks except the function's root block, in program order.
local function block_names(func)
  local names = {}
  local body = func.body
  local function add(s) if s.kind == "BlockRealize" then names[#names + 1] = s.block.name end end
  if body.kind == "BlockRealize" then
    walk_stmt(body.block.init, add)
    walk_stmt(body.block.body, add)
  else
    walk_stmt(body, add)
  end
  return names
end

-- Memory that threads share (shared) or hold in parts (warp, wmma fragments): the
-- interpreter, running threads one after another, cannot model it in lowered code.
local function cross_thread_scope(scope) return scope:match("^shared") or scope == "warp" or scope:match("^wmma") end

local function uses_cross_thread_memory(func)
  -- warp shuffles (a cross-thread reduction's allreduce) exchange values between lanes too
  if tostring(func):find("ptx_shfl_sync_", 1, true) then return true end -- TIR_BUILTIN_SHUFFLE rows
  local found = false
  walk_stmt(func.body, function(s)
    if s.kind == "Allocate" and cross_thread_scope(s.buffer.scope) then found = true end
    if s.kind == "BlockRealize" then
      for i = 1, #s.block.alloc_buffers do
        if cross_thread_scope(s.block.alloc_buffers[i].scope) then found = true end
      end
    end
  end)
  return found
end

--- Iterations of all blocks (products of the extents of the loops around them).
local VOLUME_LIMIT = 2000000
local function volume(func)
  local total = 0
  local function visit(st, iters)
    if st == nil then return end
    local k = st.kind
    if k == "SeqStmt" then
      for i = 1, #st.seq do visit(st.seq[i], iters) end
    elseif k == "For" then
      local e = st.extent.kind == "IntImm" and st.extent.value or 1024
      visit(st.body, iters * e)
    elseif k == "BlockRealize" then
      total = total + iters
      visit(st.block.init, iters)
      visit(st.block.body, iters)
    elseif k == "IfThenElse" then
      visit(st.then_case, iters)
      visit(st.else_case, iters)
    elseif k == "LetStmt" or k == "AttrStmt" or k == "Allocate" then
      visit(st.body, iters)
    else
      total = total + iters
    end
  end
  visit(func.body, 1)
  return total
end

local function has_thread_binding(func)
  local found = false
  walk_stmt(func.body, function(s)
    if s.kind == "For" and s.thread_tag and s.thread_tag ~= "" then found = true end
  end)
  return found
end

-- ---------------------------------------------------------------------------------------
-- inputs and the oracle
local function make_inputs(func, dtype, seed)
  local args = {}
  for i = 1, #func.params do
    local p = func.params[i]
    local shape = {}
    for d = 1, #p.shape do shape[d] = p.shape[d].value end
    local lo, hi = -1, 1
    if p.dtype:match("int") then lo, hi = -8, 8 end
    args[i] = tir.nd.random(shape, p.dtype, tir.cpu(), {seed = seed * 31 + i, low = lo, high = hi})
  end
  return args
end

local function interpret(func, inputs)
  local args = tir.testing.copy_args(inputs)
  tir.interpret(func, args)
  return args
end

-- Primitives that may change the order of float operations: reorder (of reduction
-- loops), rfactor, transform_block_layout (which may permute reduction variables).  (The
-- interpreter rounds float32 after every operation, so inlining keeps results bit-exact.)
local LOOSE = {reorder = true, rfactor = true, transform_block_layout = true}

-- ---------------------------------------------------------------------------------------
-- error classification
local ERROR_KINDS = {ScheduleError = true, TypeError = true, ValueError = true}

local function is_tir_error(e)
  return type(e) == "table" and type(e.kind) == "string" and type(e.text) == "string"
end

local function err_text(e)
  if is_tir_error(e) then return e.text end
  return tostring(e)
end

local function first_line(s) return (tostring(s):match("^[^\n]*")) end

-- ---------------------------------------------------------------------------------------
-- one sequence
local Seq = {}
Seq.__index = Seq

-- stats for this process
local stats = {seqs = 0, acc = 0, rej = 0, fail = 0, lower_rej = 0, built = 0, compiled = 0, too_big = 0}

local function new_seq(seed)
  return setmetatable({seed = seed, acc = 0, rej = 0, lower_rej = 0, built = 0, stale_loops = {}, stale_blocks = {},
                       stale = {}, loose = false,
                       log = {}}, Seq)
end

function Seq:remember_loops(list)
  for _, l in ipairs(list) do
    if #self.stale_loops < 64 then self.stale_loops[#self.stale_loops + 1] = l
    else self.stale_loops[rnd(64)] = l end
  end
end

function Seq:block_rv(name)
  local b = self.sch:get_block(name)
  if #self.stale_blocks < 32 then self.stale_blocks[#self.stale_blocks + 1] = b end
  return b
end

--- A random block handle: usually a block of the current function, sometimes a stale one.
function Seq:any_block()
  if #self.stale_blocks > 0 and chance(0.04) then
    local b = pick(self.stale_blocks)
    self.stale[b] = true -- possibly gone: lookups on it may fail
    return b, "stale"
  end
  local names = block_names(func_of(self.sch.mod))
  if #names == 0 then return nil end
  local name = pick(names)
  return self:block_rv(name), name
end

function Seq:loops_of(b)
  if self.stale[b] then
    local ok, r = pcall(function() return table.pack(self.sch:get_loops(b)) end)
    if not ok then return {} end
    r.n = nil
    return r
  end
  local loops = table.pack(self.sch:get_loops(b))
  loops.n = nil
  self:remember_loops(loops)
  return loops
end

--- A loop of block b, sometimes a stale one or one of another block.
function Seq:loop_of(b)
  if #self.stale_loops > 0 and chance(0.04) then return pick(self.stale_loops), "stale" end
  local loops = self:loops_of(b)
  if #loops == 0 then return #self.stale_loops > 0 and pick(self.stale_loops) or nil end
  return pick(loops)
end

local function lname(l) return l and l.var and l.var.name or tostring(l) end
local function bname(b) return b and b.name or tostring(b) end
local SCOPES = {"global", "shared", "local"}
local function scope_pick() return chance(0.04) and pick({"texture", "", "warp", "wmma.accumulator"}) or pick(SCOPES) end
local TAGS = {"blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z"}

--- The block's IR (a stale handle may fail: then nil).
local function block_ir(seq, b)
  if seq.stale[b] then
    local ok, blk = pcall(seq.sch.get, seq.sch, b)
    return ok and blk or nil
  end
  return seq.sch:get(b)
end
local function nreads(seq, b) local blk = block_ir(seq, b); return blk and #blk.reads or 1 end
local function nwrites(seq, b) local blk = block_ir(seq, b); return blk and #blk.writes or 1 end

local function index_pick(n)
  if chance(0.08) then return pick({-1, n, n + 3}) end
  if n == 0 then return 0 end
  return rnd(0, n - 1)
end

local function loop_extent(seq, l)
  local ok, f = pcall(seq.sch.get, seq.sch, l)
  if ok and f and f.extent and f.extent.kind == "IntImm" then return f.extent.value end
  return 8
end

-- Each generator returns prim, description, function(sch) or nil when it finds nothing
-- to act on.  Handles are looked up in the generator (that is outside the checked call).
local gens = {}

function gens.split(seq)
  local b = seq:any_block()
  if not b then return nil end
  local l = seq:loop_of(b)
  if not l then return nil end
  local ext = loop_extent(seq, l)
  local n = chance(0.75) and 2 or 3
  local fs = {}
  local choices = {1, 2, 3, 4, 5, 8, 16, ext, ext + 1}
  for i = 1, n do fs[i] = pick(choices) end
  if chance(0.85) then fs[rnd(n)] = -1 end
  if chance(0.05) then fs[rnd(n)] = pick({0, -3, 1 << 40}) end
  local shown = {}
  for i = 1, n do shown[i] = fs[i] == -1 and "nil" or tostring(fs[i]) end
  return "split", ("split(%s of %s, {%s})"):format(lname(l), bname(b), table.concat(shown, ", ")),
         function(sch)
           -- an inferred factor is nil, except in the last place (Lua drops trailing nils)
           local f2 = {}
           for i = 1, n do
             if fs[i] ~= -1 or i == n then f2[i] = fs[i] end
           end
           return table.pack(sch:split(l, f2))
         end, "loops"
end

function gens.fuse(seq)
  local b = seq:any_block()
  if not b then return nil end
  local loops = seq:loops_of(b)
  local chosen = {}
  if #loops >= 2 and chance(0.85) then
    local len = math.min(#loops, pick({2, 2, 3}))
    local start = rnd(1, #loops - len + 1)
    for i = start, start + len - 1 do chosen[#chosen + 1] = loops[i] end
  else
    for _ = 1, rnd(1, 3) do
      local l = (#loops > 0 and chance(0.8)) and pick(loops) or (#seq.stale_loops > 0 and pick(seq.stale_loops))
      if l then chosen[#chosen + 1] = l end
    end
  end
  if #chosen == 0 then return nil end
  local names = {}
  for i, l in ipairs(chosen) do names[i] = lname(l) end
  return "fuse", ("fuse(%s of %s)"):format(table.concat(names, ", "), bname(b)),
         function(sch) return {sch:fuse(table.unpack(chosen))} end, "loops"
end

function gens.reorder(seq)
  local b = seq:any_block()
  if not b then return nil end
  local loops = seq:loops_of(b)
  if #loops < 2 then return nil end
  local chosen = {}
  for _, l in ipairs(loops) do if chance(0.6) then chosen[#chosen + 1] = l end end
  if #chosen < 2 then chosen = {loops[1], loops[#loops]} end
  -- shuffle
  for i = #chosen, 2, -1 do
    local j = rnd(i)
    chosen[i], chosen[j] = chosen[j], chosen[i]
  end
  if chance(0.08) then
    local other = seq:any_block()
    if other then
      local ol = seq:loops_of(other)
      if #ol > 0 then chosen[rnd(#chosen)] = pick(ol) end
    end
  end
  if chance(0.03) then chosen[2] = chosen[1] end -- a repeated loop
  local names = {}
  for i, l in ipairs(chosen) do names[i] = lname(l) end
  return "reorder", ("reorder(%s of %s)"):format(table.concat(names, ", "), bname(b)),
         function(sch) sch:reorder(table.unpack(chosen)) end
end

function gens.bind(seq)
  local b = seq:any_block()
  if not b then return nil end
  local l = seq:loop_of(b)
  if not l then return nil end
  local tag = chance(0.04) and pick({"vthread.x", "warp", "threadIdx.w"}) or pick(TAGS)
  return "bind", ("bind(%s of %s, %q)"):format(lname(l), bname(b), tag), function(sch) sch:bind(l, tag) end
end

for _, name in ipairs({"unroll", "parallel", "vectorize"}) do
  gens[name] = function(seq)
    local b = seq:any_block()
    if not b then return nil end
    local l = seq:loop_of(b)
    if not l then return nil end
    return name, ("%s(%s of %s)"):format(name, lname(l), bname(b)), function(sch) sch[name](sch, l) end
  end
end

function gens.cache_read(seq)
  local b = seq:any_block()
  if not b then return nil end
  local idx = index_pick(nreads(seq, b))
  local scope = scope_pick()
  local consumers = nil
  if chance(0.2) then consumers = {b} end
  return "cache_read", ("cache_read(%s, %d, %q%s)"):format(bname(b), idx, scope, consumers and ", {self}" or ""),
         function(sch) return {sch:cache_read(b, idx, scope, consumers)} end, "block"
end

function gens.cache_write(seq)
  local b = seq:any_block()
  if not b then return nil end
  local idx = index_pick(nwrites(seq, b))
  local scope = scope_pick()
  return "cache_write", ("cache_write(%s, %d, %q)"):format(bname(b), idx, scope),
         function(sch) return {sch:cache_write(b, idx, scope)} end, "block"
end

--- A loop to move block b under: mostly a loop of a consumer (producers for reverse).
function Seq:target_loop(b, producers)
  local rel = {}
  if chance(0.8) then
    local ok, r = pcall(producers and self.sch.get_producers or self.sch.get_consumers, self.sch, b)
    if ok then rel = r end
  end
  local other
  if #rel > 0 then other = pick(rel) else other = self:any_block() end
  if not other then return nil end
  return self:loop_of(other), other
end

for _, rev in ipairs({false, true}) do
  local name = rev and "reverse_compute_at" or "compute_at"
  gens[name] = function(seq)
    local b = seq:any_block()
    if not b then return nil end
    local l, other = seq:target_loop(b, rev)
    if not l then return nil end
    local keep = chance(0.5)
    local index = chance(0.85) and -1 or rnd(-2, 3)
    return name, ("%s(%s, %s of %s, %s, %d)"):format(name, bname(b), lname(l), bname(other), tostring(keep), index),
           function(sch) sch[name](sch, b, l, keep, index) end
  end
end

for _, name in ipairs({"compute_inline", "reverse_compute_inline"}) do
  gens[name] = function(seq)
    local b = seq:any_block()
    if not b then return nil end
    return name, ("%s(%s)"):format(name, bname(b)), function(sch) sch[name](sch, b) end
  end
end

function gens.decompose_reduction(seq)
  local b = seq:any_block()
  if not b then return nil end
  local l = seq:loop_of(b)
  if not l then return nil end
  return "decompose_reduction", ("decompose_reduction(%s, %s)"):format(bname(b), lname(l)),
         function(sch) return {sch:decompose_reduction(b, l)} end, "block"
end

function gens.set_scope(seq)
  local b = seq:any_block()
  if not b then return nil end
  local idx = index_pick(nwrites(seq, b))
  local scope = scope_pick()
  return "set_scope", ("set_scope(%s, %d, %q)"):format(bname(b), idx, scope), function(sch) sch:set_scope(b, idx, scope) end
end

function gens.storage_align(seq)
  local b = seq:any_block()
  if not b then return nil end
  local blk = block_ir(seq, b)
  local idx = index_pick(blk and #blk.writes or 1)
  local ndim = 1
  if blk and blk.writes[idx + 1] then ndim = #blk.writes[idx + 1].buffer.shape end
  local axis = index_pick(ndim)
  local factor = chance(0.05) and pick({0, -4}) or pick({1, 2, 4, 8, 16, 32})
  local offset = chance(0.05) and pick({-1, 64}) or rnd(0, math.max(0, factor - 1))
  return "storage_align", ("storage_align(%s, %d, %d, %d, %d)"):format(bname(b), idx, axis, factor, offset),
         function(sch) sch:storage_align(b, idx, axis, factor, offset) end
end

local ANN_KEYS = {"pragma_auto_unroll_max_step", "fuzz_key", "software_pipeline_stage", "pragma_unroll_explicit"}
local ANN_VALUES = {1, 16, "x", {1, 2}, 0, {-1, 2}, -1}

function Seq:block_or_loop()
  local b = self:any_block()
  if not b then return nil end
  if chance(0.5) then
    local l = self:loop_of(b)
    if l then return l, lname(l) .. " of " .. bname(b) end
  end
  return b, bname(b)
end

function gens.annotate(seq)
  local x, what = seq:block_or_loop()
  if not x then return nil end
  local key, value = pick(ANN_KEYS), pick(ANN_VALUES)
  local shown = type(value) == "table" and ("{%d, %d}"):format(value[1], value[2]) or ("%q"):format(value)
  return "annotate", ("annotate(%s, %q, %s)"):format(what, key, shown), function(sch) sch:annotate(x, key, value) end
end

function gens.unannotate(seq)
  local x, what = seq:block_or_loop()
  if not x then return nil end
  local key = pick(ANN_KEYS)
  return "unannotate", ("unannotate(%s, %q)"):format(what, key), function(sch) sch:unannotate(x, key) end
end

function gens.add_unit_loop(seq)
  local x, what = seq:block_or_loop()
  if not x then return nil end
  return "add_unit_loop", ("add_unit_loop(%s)"):format(what), function(sch) return {sch:add_unit_loop(x)} end, "loops"
end

-- Primitives that other helpers add: drawn only when the Schedule has them.
function gens.rfactor(seq)
  local b = seq:any_block()
  if not b then return nil end
  local l = seq:loop_of(b)
  if not l then return nil end
  local axis = chance(0.9) and 0 or pick({1, -1})
  return "rfactor", ("rfactor(%s of %s, %d)"):format(lname(l), bname(b), axis),
         function(sch) return {sch:rfactor(l, axis)} end, "block"
end

function gens.blockize(seq)
  local b = seq:any_block()
  if not b then return nil end
  local l = seq:loop_of(b)
  if not l then return nil end
  return "blockize", ("blockize(%s of %s)"):format(lname(l), bname(b)), function(sch) return {sch:blockize(l)} end, "block"
end

function gens.reindex(seq)
  local b = seq:any_block()
  if not b then return nil end
  local rw = chance(0.5) and "read" or "write"
  local idx = index_pick(rw == "read" and nreads(seq, b) or nwrites(seq, b))
  return "reindex", ("reindex(%s, {%q, %d})"):format(bname(b), rw, idx),
         function(sch) return {sch:reindex(b, {rw, idx})} end, "block"
end

function gens.transform_layout(seq)
  local b = seq:any_block()
  if not b then return nil end
  local blk = block_ir(seq, b)
  local rw = chance(0.5) and "read" or "write"
  local list = blk and (rw == "read" and blk.reads or blk.writes) or {}
  local idx = index_pick(#list)
  local ndim = list[idx + 1] and #list[idx + 1].buffer.shape or 1
  -- a parameter would take the new shape in the signature (as TVM): the function then
  -- expects other arguments than the original, which the checker compares against
  if list[idx + 1] then
    for _, p in ipairs(seq.sch.mod.params) do
      if p == list[idx + 1].buffer then return nil end
    end
  end
  local kind = rnd(1, 3)
  local map, shown
  if kind == 1 and ndim >= 2 then -- swap the last two axes
    map = function(...) local ix = {...}; ix[ndim - 1], ix[ndim] = ix[ndim], ix[ndim - 1]; return table.unpack(ix) end
    shown = "swap last two axes"
  elseif kind == 2 then -- split the last axis by 4
    map = function(...)
      local ix = {...}
      local last = ix[ndim]
      ix[ndim] = last // 4
      ix[ndim + 1] = last % 4
      return table.unpack(ix)
    end
    shown = "split last axis by 4"
  else
    map = function(...) return ... end
    shown = "identity"
  end
  return "transform_layout", ("transform_layout(%s, {%q, %d}, %s)"):format(bname(b), rw, idx, shown),
         function(sch) sch:transform_layout(b, {rw, idx}, map) end
end

function gens.transform_block_layout(seq)
  local b = seq:any_block()
  if not b then return nil end
  local blk = block_ir(seq, b)
  local n = blk and #blk.iter_vars or 1
  local ext2 = 1
  if blk and n >= 2 and blk.iter_vars[2].dom.extent.kind == "IntImm" then ext2 = blk.iter_vars[2].dom.extent.value end
  local kind, map, shown = rnd(1, 4)
  if kind == 1 then
    map = function(...)
      local v, r = {...}, {}
      for k = #v, 1, -1 do r[#r + 1] = v[k] end
      return table.unpack(r)
    end
    shown = "reversed"
  elseif kind == 2 then
    map = function(...)
      local v = {...}
      if #v < 2 then return ... end
      local r = {v[1] * ext2 + v[2]}
      for k = 3, #v do r[#r + 1] = v[k] end
      return table.unpack(r)
    end
    shown = "first two fused"
  elseif kind == 3 then
    map = function(...)
      local v = {...}
      local r = {v[1] // 2, v[1] % 2}
      for k = 2, #v do r[#r + 1] = v[k] end
      return table.unpack(r)
    end
    shown = "first split by 2"
  else
    map = function(...) return ... end
    shown = "identity"
  end
  return "transform_block_layout", ("transform_block_layout(%s, %s)"):format(bname(b), shown),
         function(sch) sch:transform_block_layout(b, map) end
end

-- A tiled GPU GEMM in several primitive calls on a reduction block (the flow of
-- scripts/examples/matmul_shared.lua, with random tiles): tile and bind the two innermost
-- spatial loops, split the reduction, stage each input in shared memory under the outer
-- reduction loop, and sometimes accumulate in a local cache.  Steps may fail on the way
-- (rejections are fine); what was applied is checked like any other step.
function gens.gemm_tile(seq)
  local names = block_names(func_of(seq.sch.mod))
  local cands = {}
  for _, name in ipairs(names) do
    local ok, b = pcall(seq.sch.get_block, seq.sch, name)
    if ok then
      local g = seq.sch:get(b)
      if g.init and #g.iter_vars >= 3 then cands[#cands + 1] = name end
    end
  end
  if #cands == 0 then return nil end
  local name = pick(cands)
  local ti, tj, tk = pick({1, 2, 4}), pick({2, 4, 8}), pick({2, 4})
  local local_acc, shared = chance(0.5), chance(0.8)
  return "gemm_tile", ("gemm_tile(%s, tiles %dx%d, k by %d%s%s)"):format(name, ti, tj, tk, shared and ", shared inputs" or "",
                                                                       local_acc and ", local accumulator" or ""),
    function(sch)
      local b = sch:get_block(name)
      local loops = table.pack(sch:get_loops(b))
      local n = loops.n
      -- te puts spatial loops first, the reduction loops last
      local blk = sch:get(b)
      local nr = 0
      for i = 1, #blk.iter_vars do if blk.iter_vars[i].iter_type ~= 0 then nr = nr + 1 end end
      local i, j, k = loops[n - nr - 1], loops[n - nr], loops[n - nr + 1]
      local io, ii = sch:split(i, {nil, ti})
      local jo, jj = sch:split(j, {nil, tj})
      local ko, ki = sch:split(k, {nil, tk})
      sch:reorder(io, jo, ii, jj, ko, ki)
      sch:bind(io, "blockIdx.y")
      sch:bind(jo, "blockIdx.x")
      sch:bind(ii, "threadIdx.y")
      sch:bind(jj, "threadIdx.x")
      if shared then
        for r = 0, 1 do -- the two operands (a block with an init does not read its output)
          local c = sch:cache_read(b, r, "shared")
          sch:compute_at(c, ko)
        end
      end
      if local_acc then
        local w = sch:cache_write(b, 0, "local")
        sch:reverse_compute_at(w, jj)
      end
    end
end

-- A GPU mapping in several primitive calls: the outermost loop of every top-level nest is
-- split and bound to blockIdx.x / threadIdx.x (so sequences reach buildable kernels).
function gens.gpu_bind(seq)
  local tpb = pick({1, 2, 4, 8, 32})
  return "gpu_bind", ("gpu_bind(threads=%d): split+bind the outer loop of every nest"):format(tpb), function(sch)
    for _, name in ipairs(block_names(func_of(sch.mod))) do
      local ok, b = pcall(sch.get_block, sch, name)
      if ok then
        local l = sch:get_loops(b)
        if l then
          local f = sch:get(l)
          if not (f.thread_tag and f.thread_tag ~= "") then
            local o, i = sch:split(l, {nil, tpb})
            sch:bind(o, "blockIdx.x")
            sch:bind(i, "threadIdx.x")
          end
        end
      end
    end
  end
end

local BASE_WEIGHTS = {
  split = 14, fuse = 7, reorder = 8, bind = 8, unroll = 3, parallel = 3, vectorize = 4, cache_read = 6,
  cache_write = 6, compute_at = 9, reverse_compute_at = 6, compute_inline = 6, reverse_compute_inline = 5,
  decompose_reduction = 5, set_scope = 3, storage_align = 3, annotate = 2, unannotate = 1, add_unit_loop = 3,
  gpu_bind = 2, gemm_tile = 2, rfactor = 5, blockize = 4, reindex = 3, transform_layout = 4, transform_block_layout = 3,
}
local OPTIONAL = {rfactor = true, blockize = true, reindex = true, transform_layout = true, transform_block_layout = true}

local function core_state_has(name)
  local ok, st = pcall(core.ScheduleState, T.prim_func("probe", {A = T.Buffer({1}, "float32")}, function(A)
    T.block("b", function() A[{0}] = T.float32(0) end)
  end))
  if not ok then return false end
  local ok2, m = pcall(function() return st[name] end)
  return ok2 and m ~= nil
end

local weights, total_weight = {}, 0
do
  local names = {}
  for name in pairs(BASE_WEIGHTS) do names[#names + 1] = name end
  table.sort(names) -- deterministic order for a seed
  for _, name in ipairs(names) do
    -- optional ones need both the Lua method and the core state's (others may be mid-way)
    if not opts.skip[name] and (not OPTIONAL[name] or (tir.Schedule[name] and core_state_has(name))) then
      weights[#weights + 1] = {name, BASE_WEIGHTS[name]}
      total_weight = total_weight + BASE_WEIGHTS[name]
    end
  end
end

local function draw_primitive()
  local x = rnd() * total_weight
  for _, w in ipairs(weights) do
    x = x - w[2]
    if x < 0 then return w[1] end
  end
  return weights[#weights][1]
end

-- ---------------------------------------------------------------------------------------
-- checks
local nvrtc_ok = nil
local function nvrtc_available()
  if nvrtc_ok == nil then
    nvrtc_ok = false
    if opts.nvrtc then
      local sch = tir.Schedule(T.prim_func("probe", {A = T.Buffer({4}, "float32")}, function(A)
        for i in T.thread_binding(4, "threadIdx.x") do
          T.block("b", function()
            local v = T.axis.spatial(4, i)
            A[{v}] = A[{v}] + T.float32(1)
          end)
        end
      end))
      nvrtc_ok = pcall(tir.build, sch.mod, "cuda")
    end
  end
  return nvrtc_ok
end

--- Host-code rejections from the build are expected while not every nest is bound.
-- Lowering and codegen refuse some schedules on purpose, with clear messages: states a
-- schedule passes through on its way to a kernel, or features not lowered yet.  These
-- count as rejections (at lowering); any other failure after accepted steps is a bug.
local EXPECTED_LOWERING = {
  {"LoweringError", "in split_host_device:"},                -- loops left on the host
  {"LoweringError", "in verify_memory_scope:"},              -- local/shared storage shared by threads
  {"LoweringError", "is marked parallel, which has no meaning inside a CUDA kernel"},
  {"CodegenError", "which cannot be allocated inside a kernel"}, -- scopes codegen cannot place
  {"CodegenError", "in codegen_cuda: warp buffer"},          -- warp / wmma fragments need whole
  {"CodegenError", "in codegen_cuda: wmma buffer"},          -- tensor-core tiles
  {"LoweringError", "in inject_software_pipeline:"},         -- software_pipeline_* annotations that
                                                             -- do not describe a pipeline
  {"LoweringError", "CUDA allows at most"},                  -- launch dimensions past CUDA's limits
  {"LoweringError", "in lower_cross_thread_reduction:"},     -- reductions bound to threadIdx in a form
}                                                            -- TVM's pass refuses too (loops, body)
local function expected_lowering_error(e)
  if not is_tir_error(e) then return false end
  for _, x in ipairs(EXPECTED_LOWERING) do
    if e.kind == x[1] and e.text:find(x[2], 1, true) then
      return not (x[1] == "CodegenError" and e.text:find("scope 'global'", 1, true))
    end
  end
  return false
end

function Seq:compare(got, func, what)
  for i = 1, #got do
    local rtol, atol = 0, 0
    if self.float and self.loose then rtol, atol = 1e-5, 1e-5 end
    local same, st = core.nd_allclose(got[i], self.expected[i], rtol, atol)
    if not same then
      return ("%s is not equivalent to the original: argument %d (%s) differs in %d of %d elements (max abs error %g)%s"):format(
        what, i, func.params[i].name, st.n_bad, st.n, st.max_abs, rtol > 0 and (", rtol " .. rtol) or ", exact")
    end
  end
end

function Seq:check_function(func, phase)
  -- print -> load -> equal
  local text = tostring(func)
  local ok, g = pcall(T.parse, text)
  if not ok then return ("the printed function does not load back: %s"):format(err_text(g)) end
  local eq, diff = tir.structural_equal(func, g)
  if not eq then return ("print -> load is not structurally equal: %s"):format(tostring(diff)) end
  -- splits by factors that do not divide (and splits of those) can multiply the loop
  -- volume far beyond the workload: past a limit the sequence stops (it is no failure)
  if volume(func) > VOLUME_LIMIT then
    self.too_big = true
    return nil
  end
  -- the interpreter against the original
  local ok2, got = pcall(interpret, func, self.inputs)
  if not ok2 then return ("the interpreter fails on the scheduled function: %s"):format(err_text(got)) end
  local why = self:compare(got, func, "the scheduled function")
  if why then return why end
  -- lowering
  local ok3, lowered = pcall(tir.lower, func)
  if not ok3 then
    if expected_lowering_error(lowered) then
      self.lower_rej = self.lower_rej + 1
      stats.lower_rej = stats.lower_rej + 1
      return nil
    end
    return ("tir.lower fails after accepted steps: %s"):format(err_text(lowered))
  end
  -- the lowered function computes the same, when its threads may run one after another
  -- (the interpreter runs launch_thread as serial loops; shared memory needs lockstep)
  if not uses_cross_thread_memory(lowered) then
    local ok5, got2 = pcall(interpret, lowered, self.inputs)
    if not ok5 then return ("the interpreter fails on the lowered function: %s"):format(err_text(got2)) end
    local why = self:compare(got2, func, "the lowered function")
    if why then return why end
  end
  -- CUDA C when threads are bound
  if has_thread_binding(func) then
    local compile = phase == "final" and nvrtc_available()
    local ok4, e4 = pcall(tir.build, func, "cuda", {compile = compile})
    if not ok4 and not expected_lowering_error(e4) then
      return ("tir.build(\"cuda\"%s) fails: %s"):format(compile and "" or ", {compile = false}", err_text(e4))
    end
    if ok4 then
      self.built = self.built + 1
      stats.built = stats.built + 1
      if compile then
        stats.compiled = stats.compiled + 1
        self.compiled = (self.compiled or 0) + 1
      end
    end
  end
  return nil
end

function Seq:fail(what, step_desc, err)
  self.failed = true
  stats.fail = stats.fail + 1
  local lines = {}
  lines[#lines + 1] = ("FAIL seed=%d: %s"):format(self.seed, what)
  lines[#lines + 1] = "workload: " .. self.wl.desc
  if step_desc then lines[#lines + 1] = "failing step: " .. step_desc end
  if err then lines[#lines + 1] = "error: " .. err_text(err) end
  lines[#lines + 1] = "steps tried:"
  for _, l in ipairs(self.log) do lines[#lines + 1] = "  " .. l end
  lines[#lines + 1] = "trace of accepted steps (sch:trace()):"
  lines[#lines + 1] = self.sch and self.sch:trace() or "(none)"
  lines[#lines + 1] = "original function:"
  lines[#lines + 1] = tostring(self.wl.func)
  if self.sch then
    lines[#lines + 1] = "current function:"
    lines[#lines + 1] = tostring(self.sch.mod)
  end
  lines[#lines + 1] = "replay: " .. replay_cmd(self.seed)
  out("%s", table.concat(lines, "\n"))
end

function Seq:stop_too_big()
  stats.too_big = stats.too_big + 1
  self.log[#self.log + 1] = "(stopped: the loops now run over " .. VOLUME_LIMIT .. " iterations)"
  if opts.verbose then out("    stopped: the loops now run over %d iterations", VOLUME_LIMIT) end
  return false
end

-- Runs one generated step; returns false when the sequence must stop.
function Seq:step(i, forced)
  local prim = forced or draw_primitive()
  local okg, p, desc, fn, ret = xpcall(gens[prim], debug.traceback, self)
  if not okg then
    -- the generator only looks things up (get_block/get_loops/get): these must not fail
    self:fail("a lookup on the current schedule failed", prim, p)
    return false
  end
  if not p then return true end -- nothing to act on
  proto("TRY %d %s", i, desc)
  if opts.verbose then out("  step %d: %s", i, desc) end
  local before = self.sch.mod
  local okc, r = pcall(fn, self.sch)
  local after = self.sch.mod
  if okc then
    self.acc = self.acc + 1
    stats.acc = stats.acc + 1
    if LOOSE[p] then self.loose = true end
    proto("RES ok")
    self.log[#self.log + 1] = desc .. "  -> accepted"
    if opts.verbose then out("    accepted") end
    if ret == "loops" and type(r) == "table" then self:remember_loops(r) end
    local why = self:check_function(func_of(after), "step")
    if why then self:fail(why, desc); return false end
    if self.too_big then return self:stop_too_big() end
  else
    self.rej = self.rej + 1
    stats.rej = stats.rej + 1
    local e = r
    proto("RES rejected %s", first_line(err_text(e)))
    self.log[#self.log + 1] = desc .. "  -> rejected: " .. first_line(err_text(e))
    if opts.verbose then out("    rejected: %s", first_line(err_text(e))) end
    if not is_tir_error(e) then self:fail("rejected without a tir.Error (unclear error)", desc, e); return false end
    if not ERROR_KINDS[e.kind] then self:fail(("rejected with an unexpected error kind %s"):format(e.kind), desc, e); return false end
    if p ~= "gpu_bind" and p ~= "gemm_tile" then
      if not e.text:find(" in " .. p .. ":", 1, true) then
        self:fail(("the error does not name the primitive '%s'"):format(p), desc, e)
        return false
      end
      if not tir.structural_equal(func_of(before), func_of(after)) then
        self:fail("a rejected step changed the function", desc, e)
        return false
      end
    elseif not rawequal(before, after) then
      -- a partly applied macro: what it did must still be valid
      local why = self:check_function(func_of(after), "step")
      if why then self:fail(why, desc); return false end
      if self.too_big then return self:stop_too_big() end
    end
  end
  return true
end

local function run_sequence(seed)
  math.randomseed(seed)
  local seq = new_seq(seed)
  stats.seqs = stats.seqs + 1
  proto("SEQ %d", seed)
  local st_kind, st_seed = (opts.selftest or ""):match("^(%a+):?(%-?%d*)$")
  if st_kind and opts.child and seed == (math.tointeger(tonumber(st_seed)) or opts.seed) then
    proto("TRY 1 selftest %s", st_kind)
    if st_kind == "hang" then while true do end end
    if st_kind == "crash" then os.exit(3, false) end
  end
  local wname = pick(workload_names)
  local okw, wl = xpcall(workloads[wname], debug.traceback)
  if not okw then
    seq.wl = {desc = wname, func = "(not built)"}
    seq:fail("building the workload failed", nil, wl)
  else
    seq.wl = wl
    seq.float = wl.dtype ~= "int32"
    proto("WL %s", wl.desc)
    if opts.verbose then out("seed %d: %s", seed, wl.desc) end
    seq.sch = tir.Schedule(wl.func)
    seq.inputs = make_inputs(wl.func, wl.dtype, seed)
    local oke, exp = pcall(interpret, wl.func, seq.inputs)
    if not oke then
      seq:fail("the interpreter fails on the original workload", nil, exp)
    else
      seq.expected = exp
      local why = seq:check_function(wl.func, "step")
      if why then seq:fail("original: " .. why) end
    end
    local nsteps = rnd(1, math.max(1, opts.steps))
    local i = 1
    while not seq.failed and i <= nsteps do
      if not seq:step(i) then break end
      i = i + 1
    end
    if not seq.failed and chance(0.3) then
      -- finish with a GPU mapping attempt so more sequences reach code generation
      seq:step(i, "gpu_bind")
    end
    if not seq.failed then
      proto("PHASE final checks")
      -- the trace replays to the same function
      local okr, e = pcall(function()
        local s2 = tir.Schedule(wl.func)
        s2:apply_trace(seq.sch:trace())
        local eq, diff = tir.structural_equal(s2.mod, seq.sch.mod)
        if not eq then error("replayed function differs: " .. tostring(diff), 0) end
      end)
      if not okr then seq:fail("the trace does not replay", nil, e) end
    end
    if not seq.failed and has_thread_binding(func_of(seq.sch.mod)) then
      local why = seq:check_function(func_of(seq.sch.mod), "final")
      if why then seq:fail("final: " .. why) end
    end
    if opts.verbose and not seq.failed then
      out("  trace:\n%s", seq.sch:trace())
      out("  final function:\n%s", tostring(seq.sch.mod))
    end
  end
  proto("END %d %s %d %d %d %d %d %d", seed, seq.failed and "fail" or "pass", seq.acc, seq.rej, seq.lower_rej, seq.built,
        seq.compiled or 0, seq.too_big and 1 or 0)
  if opts.verbose then out("seed %d: %s (%d accepted, %d rejected)", seed, seq.failed and "FAIL" or "ok", seq.acc, seq.rej) end
end

for s = opts.seed, opts.seed + opts.count - 1 do
  run_sequence(s)
  if s % 16 == 0 then collectgarbage() end
end
if not opts.child then
  out(SUMMARY, stats.seqs, opts.seed, opts.seed + opts.count - 1, stats.acc, stats.rej, stats.lower_rej, stats.built,
      stats.compiled, stats.too_big, stats.fail)
end
-- A child reports failures through its protocol lines; its exit status tells the parent
-- only about what happened after them (a leak check at exit, a crash).  Closing the state
-- frees everything, so the leak check sees only real leaks.
os.exit((stats.fail == 0 or opts.child) and 0 or 1, true)
