-- gpu_numerics_spec.lua -- #gpu: the GPU computes what the CPU oracle says, for every case of
-- numerics_cases.lua (every cast between two of the 13 dtypes, every math builtin on every float
-- dtype, the operators on every dtype, bit operations; edge values and seeded random bits):
-- exact cases bit for bit (two NaNs match whatever their payloads; the payloads are reported),
-- transcendental functions within the ulp bound of numerics_cases.ulp_bound (CUDA's documented
-- maximum error plus the interpreter's own rounding; docs/BUILTINS.md).
--
-- On the GPU machine:
--   TIRLUA_LUA_MODULES=.carry/lua TIRLUA_NUMERICS_LOG=$OUT/numerics.log \
--     build/tirlua tests/run_busted.lua --run=gpu tests/spec/gpu_numerics_spec.lua
-- The log has one line per case (mismatches, NaN payloads, largest ulp distance, examples with
-- their inputs).  TIRLUA_NUMERICS_DRY=1 runs the same harness with the simulator in place of
-- the GPU (the kernels are still compiled by NVRTC): a check of the spec itself without a GPU.
local tir = require("tir")
local te = tir.te
local C = require("numerics_cases")

local dev = tir.device("cuda", 0)
local has_gpu, why = dev:exists()
local dry = os.getenv("TIRLUA_NUMERICS_DRY") ~= nil
local N = 512

local function run_device(mod, f, ins, out_dt)
  if dry then
    local o = tir.nd.empty({N}, out_dt)
    local args = {}
    for k = 1, #ins do args[k] = ins[k] end
    args[#args + 1] = o
    tir.simulate(mod, args)
    return o
  end
  local args = {}
  for k = 1, #ins do args[k] = ins[k]:to(dev) end
  local o = tir.nd.empty({N}, out_dt, dev)
  args[#args + 1] = o
  mod(table.unpack(args))
  return o:to(tir.cpu())
end

local function nan_set(dt, a)
  local seen, list = {}, {}
  for i = 0, a:numel() - 1 do
    local b = a:get_bits(i)
    if C.is_nan_bits(dt, b) and not seen[b] then
      seen[b] = true
      list[#list + 1] = C.hex(dt, b)
    end
  end
  table.sort(list)
  return table.concat(list, " ")
end

-- informational cases: results the rules leave to the compiler (docs/ARCHITECTURE.md
-- "Numerics"): logged, not asserted
local INFO = {
  {name = "a * b + c float32 (nvcc may contract into fma)", ins = {"float32", "float32"}, out = "float32",
   fn = function(a, b) return a * b + a end},
  {name = "(a + b) < a int32 (signed overflow is undefined in C)", ins = {"int32", "int32"}, out = "bool",
   fn = function(a, b) return tir.lt(a + b, a) end},
}

describe("#gpu numerics: the GPU against the interpreter", function()
  if not has_gpu and not dry then
    it("is skipped: " .. tostring(why), function() pending("no GPU: " .. tostring(why)) end)
    return
  end

  it("agrees on every cast, math builtin and operator (exact bit for bit, transcendental within the ulp bound)", function()
    local logpath = os.getenv("TIRLUA_NUMERICS_LOG")
    local log = logpath and assert(io.open(logpath, "w")) or nil
    local function say(fmt, ...)
      local line = fmt:format(...)
      if log then log:write(line, "\n") log:flush() end
    end
    say("# gpu_numerics_spec: %s, %d elements per case%s", dry and "simulator (dry run)" or tostring(dev:info().name or "cuda:0"), N,
        "")
    local fails, n, exact, ulp_cases = {}, 0, 0, 0
    local t0 = os.time()
    local function one(ci, case, info)
      local f, ins = C.build_case(case, N, ci)
      local ref = tir.nd.empty({N}, case.out)
      local args = {}
      for k = 1, #ins do args[k] = ins[k] end
      args[#args + 1] = ref
      tir.interpret(f, args)
      local ok, mod = pcall(tir.build, f, "cuda")
      if not ok then
        fails[#fails + 1] = case.name .. ": build failed: " .. tostring(mod):sub(1, 300)
        say("BUILD-FAIL %s: %s", case.name, tostring(mod):sub(1, 2000))
        return
      end
      local got = run_device(mod, f, ins, case.out)
      local st = C.compare(case.out, ref, got, case.ulp)
      local tag = info and "INFO" or (st.mismatches > 0 and "FAIL" or "ok")
      local line = ("%-4s %-40s mismatches %4d  nan-payload %3d  max-ulp %d%s"):format(tag, case.name, st.mismatches, st.nan_payload,
                                                                                   st.max_ulp, case.ulp and (" (bound " .. case.ulp .. ")") or " (exact)")
      if st.nan_payload > 0 then
        line = line .. ("  NaN bits: interpreter {%s} gpu {%s}"):format(nan_set(case.out, ref), nan_set(case.out, got))
      end
      say("%s", line)
      for _, e in ipairs(st.examples) do
        local i = e[1]
        local inputs = {}
        for k = 1, #ins do inputs[k] = C.show(ins[k], i) end
        say("       [%d] in %s -> interpreter %s, gpu %s", i, table.concat(inputs, ", "), C.show(ref, i), C.show(got, i))
      end
      if st.mismatches > 0 and not info then
        local e = st.examples[1]
        local inputs = {}
        for k = 1, #ins do inputs[k] = C.show(ins[k], e[1]) end
        fails[#fails + 1] = ("%s: %d of %d differ, e.g. %s -> interpreter %s, gpu %s"):format(case.name, st.mismatches, N,
                                                                                             table.concat(inputs, ", "), C.show(ref, e[1]),
                                                                                             C.show(got, e[1]))
      end
      if not info then
        n = n + 1
        if case.ulp then ulp_cases = ulp_cases + 1 else exact = exact + 1 end
      end
    end
    for ci, case in ipairs(C.cases()) do one(ci, case, false) end
    for ci, case in ipairs(INFO) do one(1000 + ci, case, true) end
    say("# %d cases (%d exact, %d within ulp bounds), %d failing, %d s", n, exact, ulp_cases, #fails, os.time() - t0)
    if log then log:close() end
    assert.is_true(n > 500)
    assert.are.same({}, fails)
  end)

  it("runs a padding stage whose untaken if_then_else side reads out of bounds", function()
    local n = 1000
    local A = te.placeholder({n}, "float32", "A")
    local B = te.compute({n + 2}, function(i)
      return tir.if_then_else(tir.And(tir.ge(i, 1), tir.lt(i, n + 1)), A[{i - 1}], tir.const(-1, "float32"))
    end, "B")
    local sch = tir.Schedule(te.create_prim_func({A, B}))
    local bx, tx = sch:split(sch:get_loops(sch:get_block("B")), {nil, 128})
    sch:bind(bx, "blockIdx.x")
    sch:bind(tx, "threadIdx.x")
    local a = tir.nd.random({n}, "float32", tir.cpu(), {seed = 5})
    local ref = tir.nd.empty({n + 2})
    tir.interpret(sch.mod, {a, ref})
    local mod = tir.build(sch.mod, "cuda")
    local got
    if dry then
      got = tir.nd.empty({n + 2})
      tir.simulate(mod, {a, got})
    else
      local o = tir.nd.empty({n + 2}, "float32", dev)
      mod(a:to(dev), o)
      got = o:to(tir.cpu())
    end
    assert.are.same(ref:to_table(), got:to_table())
    assert.are.equal(-1, got:get(0))
    assert.are.equal(-1, got:get(n + 1))
  end)
end)
