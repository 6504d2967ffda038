-- tvm_util.lua -- helpers for the ports of TVM's schedule tests (tests/spec/tvm/*_spec.lua).
--
-- TVM's tests compare the scheduled function with an expected TVMScript function
-- (assert_structural_equal) and replay the trace (verify_trace_roundtrip); negative cases
-- expect a ScheduleError.  The ports do the same with tirlua's means:
--   V.check(sch, before, expected)   interpreter equivalence of before and sch.mod on random
--                                    inputs (exact), trace replay, and -- when an expected
--                                    T script is given -- its structure (V.skeleton: loops,
--                                    extents, kinds, blocks, iteration kinds and domains,
--                                    predicates, buffers read/written/allocated, scopes,
--                                    annotations); opts.exact also requires structural equality
--                                    (index expressions included).
--   V.schedule_error(fn, ...)        fn must raise a tir.Error of kind ScheduleError whose
--                                    message contains every given text.
local tir = require("tir")
local U = require("spec_util")
local assert = require("luassert")
local V = {}

V.T = tir.script
V.te = tir.te
V.U = U

local ITER = {[0] = "S", [1] = "T", [2] = "R", [3] = "O", [4] = "opaque"}

local function ann_text(anns)
  local parts = {}
  for i = 1, #anns do parts[i] = anns[i].key .. "=" .. tostring(anns[i].value) end
  table.sort(parts)
  return table.concat(parts, ",")
end

local function buf_text(b)
  local shape = {}
  for i = 1, #b.shape do shape[i] = tostring(b.shape[i]) end
  local s = ("%s[%s]%s"):format(b.name, table.concat(shape, ","), b.dtype or "")
  if b.scope ~= "" and b.scope ~= "global" then s = s .. "@" .. b.scope end
  return s
end

local function regions_text(rs)
  local parts = {}
  for i = 1, #rs do parts[i] = rs[i].buffer.name end
  return table.concat(parts, ",")
end

--- A text of the structure of f: one line per loop/block/statement, indented by depth.
-- Index expressions and bindings are left out (they are checked by interpretation and, with
-- opts.exact, structural equality); everything TVM's expected IR shows besides them is in.
function V.skeleton(f)
  if type(f) == "table" and f.func then f = f.func end
  local lines = {}
  local function emit(d, s) lines[#lines + 1] = string.rep("  ", d) .. s end
  local walk
  walk = function(s, d)
    if s == nil then return end
    local k = s.kind
    if k == "SeqStmt" then
      for i = 1, #s.seq do walk(s.seq[i], d) end
    elseif k == "For" then
      local min = tostring(s.min)
      emit(d, ("for %s%s %s%s%s"):format(min ~= "0" and (min .. "..+") or "", tostring(s.extent), s.loop_kind,
        s.thread_tag ~= "" and (" " .. s.thread_tag) or "", #s.annotations > 0 and (" {" .. ann_text(s.annotations) .. "}") or ""))
      walk(s.body, d + 1)
    elseif k == "BlockRealize" then
      local b = s.block
      local iters = {}
      for i = 1, #b.iter_vars do
        local iv = b.iter_vars[i]
        local min = tostring(iv.dom.min)
        iters[i] = (ITER[iv.iter_type] or "?") .. (min ~= "0" and (min .. "..+") or "") .. tostring(iv.dom.extent)
      end
      local pred = tostring(s.predicate)
      local allocs = {}
      for i = 1, #b.alloc_buffers do allocs[i] = buf_text(b.alloc_buffers[i]) end
      local matches = {}
      for i = 1, #b.match_buffers do matches[i] = b.match_buffers[i].buffer.name .. "<-" .. b.match_buffers[i].source.buffer.name end
      emit(d, ("block %s [%s]%s reads(%s) writes(%s)%s%s%s"):format(b.name, table.concat(iters, " "),
        (pred ~= "True" and pred ~= "true" and pred ~= "T.bool(true)") and " where" or "",
        regions_text(b.reads), regions_text(b.writes),
        #allocs > 0 and (" alloc(" .. table.concat(allocs, " ") .. ")") or "",
        #matches > 0 and (" match(" .. table.concat(matches, " ") .. ")") or "",
        #b.annotations > 0 and (" {" .. ann_text(b.annotations) .. "}") or ""))
      if b.init then emit(d + 1, "init:"); walk(b.init, d + 2) end
      walk(b.body, d + 1)
    elseif k == "IfThenElse" then
      emit(d, "if"); walk(s.then_case, d + 1)
      if s.else_case then emit(d, "else"); walk(s.else_case, d + 1) end
    elseif k == "BufferStore" then
      emit(d, "store " .. s.buffer.name)
    elseif k == "LetStmt" then
      emit(d, "let " .. s.var.name); walk(s.body, d + 1)
    else
      emit(d, k)
    end
  end
  for i = 1, #f.params do
    local p = f.params[i]
    if p.kind == "Buffer" then emit(0, "param " .. buf_text(p)) else emit(0, "param " .. p.name) end
  end
  walk(f.body, 0)
  return table.concat(lines, "\n")
end

--- verify_trace_roundtrip: the trace replayed on `before` gives sch.mod exactly.
function V.check_trace(sch, before)
  local s2 = tir.Schedule(before)
  s2:apply_trace(sch:trace())
  local eq, diff = tir.structural_equal(s2.mod, sch.mod)
  if not eq then error("trace replay differs: " .. tostring(diff) .. "\n" .. sch:trace(), 2) end
end

--- The positive check of a ported case (see the header).  Returns whether sch.mod is
-- structurally equal to expected.
--- Interpreter equivalence of f1 and f2 (both also print and load back): every array after
-- the call is equal (exactly unless opts.rtol).  opts.args(seed) gives the arguments (for
-- scalar parameters and symbolic shapes); else random ones.
function V.equiv(f1, f2, opts)
  opts = opts or {}
  U.assert_roundtrip(f1)
  U.assert_roundtrip(f2)
  for seed = 1, opts.trials or 1 do
    local args = opts.args and opts.args(seed) or tir.testing.random_args(f1, seed)
    local r1 = U.run(f1, seed, args)
    local r2 = U.run(f2, seed, args)
    for i = 1, #r1 do
      if type(r1[i]) == "userdata" then
        if opts.rtol then
          tir.testing.assert_allclose(r2[i], r1[i], {rtol = opts.rtol, atol = opts.atol or opts.rtol})
        else
          assert.are.same(r1[i]:to_table(), r2[i]:to_table())
        end
      end
    end
  end
end

function V.check(sch, before, expected, opts)
  opts = opts or {}
  local after = sch.mod
  V.equiv(before, after, opts)
  if not opts.no_trace then V.check_trace(sch, before) end
  if expected == nil then return nil end
  -- the expected function is written by hand from TVM's: it must compute the same thing
  if not opts.expected_not_runnable then V.equiv(before, expected, opts) end
  local eq, diff = tir.structural_equal(after, expected)
  if opts.exact and not eq then
    error("not structurally equal to TVM's expected function: " .. tostring(diff) .. "\n" .. tostring(after), 2)
  end
  assert.are.equal(V.skeleton(expected), V.skeleton(after))
  return eq
end

--- fn must raise a tir.Error of kind ScheduleError whose message has every text given.
function V.schedule_error(fn, ...)
  local ok, e = pcall(fn)
  if ok then error("expected a ScheduleError, but the call succeeded", 2) end
  if type(e) ~= "table" or e.kind ~= "ScheduleError" then
    error("expected a ScheduleError, got: " .. (type(e) == "table" and tostring(e.kind) .. ": " or "") .. tostring(e), 2)
  end
  local msg = tostring(e)
  for _, pat in ipairs({...}) do
    if not msg:find(pat, 1, true) then error(("ScheduleError message lacks %q:\n%s"):format(pat, msg), 2) end
  end
  return e
end

--- The loop nest of the block, as the list of For nodes (outer to inner).
function V.loops(sch, block)
  local out = {}
  for i, l in ipairs({sch:get_loops(block)}) do out[i] = sch:get(l) end
  return out
end

--- The extents of the loops above a block (numbers where constant, text otherwise).
function V.extents(sch, block)
  local out = {}
  for i, l in ipairs(V.loops(sch, block)) do
    local e = l.extent
    out[i] = e.kind == "IntImm" and e.value or tostring(e)
  end
  return out
end

--- Runs a case that awaits another helper's fix (topic names it): while fn fails, the case
-- is pending (pend is busted's `pending` of the running case, which only the spec file's
-- environment has); once fn passes, it fails saying to drop the wrapper -- so no case stays
-- pending by accident.  In a spec file:
--   local function awaits(topic, fn) return function() V.awaits(function(m) pending(m) end, topic, fn) end end
function V.awaits(pend, topic, fn)
  local ok, e = pcall(fn)
  if ok then error("passes now: remove awaits(\"" .. topic .. "\") from this case", 2) end
  pend(("awaits %s: %s"):format(topic, tostring(type(e) == "table" and (tostring(e.kind) .. ": " .. tostring(e.message)) or e):sub(1, 300)))
end

return V
