-- tune_spec.lua -- tir.tune (search, pipeline of background NVRTC builds, failures recorded,
-- database, best/lookup/nearest, progress bar), tir.build_many, tir.json and the tc_gemm space.
-- Without a GPU the candidates are real builds (schedule, lower, NVRTC) timed by a given
-- measure function (a cost of the parameters), so the search itself is checked exactly.
local tir = require("tir")
local te = tir.te
local json = require("tir.json")
local tune = require("tir.tune")
local U = require("spec_util")

local function vadd(n, factor)
  local A = te.placeholder({n}, "float32", "A")
  local B = te.compute({n}, function(i) return A[{i}] + 1.0 end, "B")
  local sch = tir.Schedule(te.create_prim_func({A, B}))
  local bi, ti = sch:split(sch:get_loops(sch:get_block("B")), {nil, factor})
  sch:bind(bi, "blockIdx.x")
  sch:bind(ti, "threadIdx.x")
  return sch
end

local function tmp() local p = os.tmpname(); os.remove(p); return p end

describe("tir.json", function()
  it("round-trips records and rejects malformed text", function()
    local v = {a = 1, b = {2.5, "x\n\"y\""}, c = true, d = {e = -3}, f = "\u{e9}"}
    local back = json.decode(json.encode(v))
    assert.are.same(v, back)
    assert.are.equal('{"a": 1, "b": [2.5, "x\\n\\"y\\""], "c": true, "d": {"e": -3}, "f": "\u{e9}"}', json.encode(v))
    assert.are.equal(json.null, json.decode("null"))
    assert.are.equal("null", json.encode(0 / 0))
    assert.are.same({1, 2, {}}, json.decode(" [1, 2, {}] "))
    assert.are.equal(1e-5, json.decode("1e-5"))
    assert.has_error(function() json.decode('{"a": }') end, "json.decode: unexpected character at position 7")
    assert.has_error(function() json.decode("[1] x") end, "json.decode: trailing characters at position 5")
    -- a deeply nested text is refused by depth, not by a Lua stack overflow
    assert.has_error(function() json.decode(string.rep("[", 100000)) end, "json.decode: nested deeper than 512 levels at position 513")
    assert.are.equal(1, #json.decode(string.rep("[", 512) .. string.rep("]", 512)))
  end)
end)

describe("tir.build_many", function()
  it("builds several functions, NVRTC on threads; a failing function does not stop the others", function()
    tir.cache.set(nil, false)
    local A = te.placeholder({8}, "float32", "A")
    local B = te.compute({8}, function(i) return A[{i}] * 2.0 end, "B")
    local unbound = te.create_prim_func({A, B}) -- no thread binding: refused by split_host_device
    local r = tir.build_many({vadd(1000, 32), unbound, vadd(1000, 64), vadd(64, 64)}, "cuda -arch=sm_80", {jobs = 2})
    tir.cache.set(nil, true)
    assert.are.equal(4, #r)
    for _, i in ipairs({1, 3, 4}) do
      assert.truthy(r[i].mod, tostring(r[i].err))
      assert.truthy(r[i].mod:get_source("ptx"):find("%.entry"))
      assert.are.equal("off", r[i].mod:cache_status())
    end
    assert.is_nil(r[2].mod)
    assert.are.equal("LoweringError", r[2].err.kind)
    assert.has_error(function() tir.build_many({}, "cuda", {jobs = 0}) end)
    assert.has_error(function() tir.build_many({}, "cuda", {compile = false}) end)
  end)

  it("checks its list, target and options once, before building anything", function()
    local function err(...)
      local ok, e = pcall(tir.build_many, ...)
      assert.is_false(ok)
      return e.kind .. " in " .. e.primitive .. ": " .. e.message
    end
    local f = vadd(64, 32)
    -- a table that is not a list, and a list with a hole, were built as empty / cut lists
    assert.truthy(err({a = f}):find("TypeError in build_many: funcs must be a list", 1, true))
    assert.truthy(err({f, nil, f}):find("funcs must be a list (keys 1..n, no holes)", 1, true))
    -- a misspelled option or a bad target was one error per function inside the results
    assert.truthy(err({f, f}, "cuda", {jobz = 2}):find("unknown option 'jobz' (did you mean 'jobs'?)", 1, true))
    assert.truthy(err({f}, "rocm"):find("ValueError in build_many: unknown target 'rocm'", 1, true))
    assert.truthy(err({f}, "cuda", {cache = "x"}):find("option cache must be a boolean", 1, true))
    assert.truthy(err({f}, "cuda", {jobs = 65}):find("jobs must be an integer in 1..64, got 65", 1, true))
    assert.truthy(err({f}, "cuda -arch=sm_80", {arch = "sm_90"}):find("give the architecture once", 1, true))
  end)
end)

describe("tir.tune", function()
  local db
  before_each(function() db = tmp() end)
  after_each(function() os.remove(db) end)

  -- a fake cost of the parameters: smallest at factor 128, x = 3
  local function cost(p) return 1e-3 * (1 + math.abs(math.log(p.factor / 128, 2)) + 0.1 * math.abs(p.x - 3)) end

  it("enumerates a space as the product of its values, filtered by the constraint", function()
    local pts = tune.enumerate({a = {1, 2, 3}, b = {"x", "y"}})
    assert.are.equal(6, #pts)
    assert.are.same({a = 1, b = "x"}, pts[1])
    assert.are.same({a = 1, b = "y"}, pts[2])
    assert.are.equal(2, #tune.enumerate({a = {1, 2, 3}, b = {"x", "y"}}, function(p) return p.a == 2 end))
    assert.are.equal(2, #tune.enumerate({{a = 1}, {a = 5}}))
    -- a mixed space dropped its named lists, a list with a hole its values after the hole
    local ok, e = pcall(tune.enumerate, {a = {1, 2}, {a = 1}})
    assert.truthy(not ok and e.message:find("not both", 1, true))
    ok, e = pcall(tune.enumerate, {a = {1, nil, 3}})
    assert.truthy(not ok and e.message:find("space.a must be a non-empty list of values (no holes", 1, true))
    ok, e = pcall(tune.enumerate, {a = {1}}, 5)
    assert.truthy(not ok and e.message:find("constraint must be a function, got 5", 1, true))
  end)

  it("searches a small space exhaustively, records every trial and its failure, finds the best", function()
    local seen = {}
    local best = tir.tune{
      workload = "vadd:4096", db = db, jobs = 2, progress = false,
      space = {factor = {32, 64, 128, 256, 2048}, x = {1, 3}},
      build = function(p)
        if p.factor == 256 and p.x == 1 then error("a planted build failure") end
        return vadd(4096, p.factor) -- factor 2048: more than 1024 threads, refused at lowering
      end,
      measure = function(mod) -- the cost of the kernel's block size (x does not show in the kernel)
        return cost({factor = mod:kernels()[1].block[1], x = 3})
      end,
      log = function(rec) seen[#seen + 1] = rec end,
    }
    assert.are.equal(10, best.tried)
    assert.are.equal("exhaustive", best.search)
    assert.are.equal(128, best.params.factor)
    local statuses = {}
    for _, r in ipairs(seen) do statuses[r.status] = (statuses[r.status] or 0) + 1 end
    assert.are.same({ok = 7, build_error = 3}, statuses) -- 2048 twice, and the planted failure
    -- the database holds every trial, and best() reads it back
    local recs = tune.records(db)
    assert.are.equal(10, #recs)
    local b = tune.best("vadd:4096", "cuda", {db = db})
    assert.are.equal(128, b.params.factor)
    assert.are.equal("ok", b.status)
    for _, r in ipairs(recs) do
      if r.params.factor == 256 and r.params.x == 1 then
        assert.are.equal("build_error", r.status)
        assert.truthy(r.error:find("a planted build failure", 1, true))
      elseif r.params.factor == 2048 then
        assert.are.equal("build_error", r.status)
        assert.truthy(r.error:find("LoweringError", 1, true), r.error)
      end
    end
  end)

  it("records results that fail the check or the run, and raises when nothing succeeds", function()
    local n = 0
    local best = tir.tune{
      workload = "vadd:check", db = db, progress = false, space = {factor = {32, 64, 128}},
      build = function(p) return vadd(512, p.factor) end,
      check = function(mod) n = n + 1; if n == 1 then return false, "planted wrong result" end; return true end,
      measure = function(mod) if n == 2 then error("planted launch failure") end; return 1e-3 end,
    }
    assert.are.equal(128, best.params.factor)
    local st = {}
    for _, r in ipairs(tune.records(db)) do st[#st + 1] = r.status .. ":" .. tostring(r.error ~= json.null and r.error or "") end
    assert.are.equal("check_failed:planted wrong result", st[1])
    assert.truthy(st[2]:find("^run_error:.*planted launch failure"))
    local ok, err = pcall(tir.tune, {workload = "none", db = db, progress = false, space = {factor = {32}},
                                     build = function() error("never builds") end, measure = function() return 1 end})
    assert.is_false(ok)
    assert.are.equal("RuntimeError", err.kind)
    assert.truthy(err.message:find("no candidate of 'none' succeeded", 1, true))
  end)

  it("random and evolutionary searches try distinct points, as many as asked; evolution finds a good one", function()
    local space = {factor = {16, 32, 64, 128, 256, 512}, x = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}} -- 60 points
    local all = {}
    for _, p in ipairs(tune.enumerate(space)) do all[#all + 1] = cost(p) end
    table.sort(all)
    for _, kind in ipairs({"random", "evolutionary"}) do
      local keys = {}
      local best = tir.tune{
        workload = "fake:" .. kind, db = db, trials = 20, search = kind, seed = 7, progress = false, space = space,
        build = function(p) keys[json.encode(p)] = true; return vadd(256, 32) end, -- one kernel: the cache-free build is cheap
        measure = function() return 1 end, -- replaced below through log
      }
      assert.are.equal(20, best.tried)
      local n = 0
      for _ in pairs(keys) do n = n + 1 end
      assert.are.equal(20, n)
    end
    -- evolution over the cost itself (measure sees the params through a closure)
    local current
    local best = tir.tune{
      workload = "fake:evo2", db = db, trials = 20, search = "evolutionary", seed = 3, progress = false, space = space,
      build = function(p) current = p; return vadd(256, 32) end, batch = 1,
      measure = function() return cost(current) end,
    }
    assert.truthy(best.time_s <= all[4], ("evolution found %g; the 4th best of the space is %g"):format(best.time_s, all[4]))
  end)

  it("looks a workload up: tuned, the nearest tuned shape of its family, or nothing", function()
    local f = assert(io.open(db, "w"))
    for _, r in ipairs({
      {workload = "g:f16:128x128x128", target = "cuda", params = {BM = 64}, status = "ok", time_s = 2e-3},
      {workload = "g:f16:128x128x128", target = "cuda", params = {BM = 128}, status = "ok", time_s = 1e-3},
      {workload = "g:f16:128x128x128", target = "cuda", params = {BM = 256}, status = "compile_error", error = "x"},
      {workload = "g:f16:4096x4096x4096", target = "cuda", params = {BM = 256}, status = "ok", time_s = 5e-3},
    }) do f:write(json.encode(r), "\n") end
    f:write("{damaged line\n")
    f:close()
    local recs, bad = tune.records(db)
    assert.are.equal(4, #recs)
    assert.are.equal(1, bad)
    local r, how = tune.lookup("g:f16:128x128x128", "cuda", {db = db})
    assert.are.equal(128, r.params.BM)
    assert.are.equal("tuned", how)
    r, how = tune.lookup("g:f16:3000x4096x4096", "cuda", {db = db})
    assert.are.equal(256, r.params.BM)
    assert.are.equal("nearest g:f16:4096x4096x4096", how)
    r, how = tune.lookup("g:bf16:128x128x128", "cuda", {db = db})
    assert.is_nil(r)
    assert.are.equal("not tuned", how)
    assert.is_nil((tune.lookup("g:f16:3000x4096x4096", "cuda", {db = db, nearest = false})))
    -- accept filters the records: of the workload itself, then of its neighbours
    local small = function(rec) return rec.params.BM <= 64 end
    r, how = tune.lookup("g:f16:128x128x128", "cuda", {db = db, accept = small})
    assert.are.same({64, "tuned"}, {r.params.BM, how})
    r, how = tune.lookup("g:f16:3000x4096x4096", "cuda", {db = db, accept = small})
    assert.are.same({64, "nearest g:f16:128x128x128"}, {r.params.BM, how})
    assert.is_nil((tune.lookup("g:f16:3000x4096x4096", "cuda", {db = db, accept = function() return false end})))
    assert.are.equal(64, tune.best("g:f16:128x128x128", "cuda", {db = db, accept = small}).params.BM)
  end)

  it("refuses bad specs clearly", function()
    local function err(spec)
      local ok, e = pcall(tir.tune, spec)
      assert.is_false(ok)
      return e.kind .. ": " .. e.message
    end
    assert.truthy(err({workload = "w", space = {}, build = print, trails = 3}):find("unknown option 'trails'", 1, true))
    assert.truthy(err({workload = "w", space = {a = {1}}}):find("option build is required", 1, true))
    assert.truthy(err({workload = "w", space = {a = {}}, build = print}):find("space.a must be a non-empty list", 1, true))
    assert.truthy(err({workload = "w", space = {a = {1}}, build = print, search = "grid"}):find("search must be", 1, true))
    assert.truthy(err({workload = "w", space = {a = {1}}, build = print, trials = 0}):find("trials must be >= 1", 1, true))
    if not tir.device("cuda", 0):exists() then
      assert.truthy(err({workload = "w", space = {a = {1}}, build = print, db = db}):find("measuring needs a GPU", 1, true))
    end
  end)

  it("counts NaN and infinite measurements as failures, refuses an unwritable database and bad keys", function()
    local function spec(measure, path)
      return {workload = "vadd:nan", db = path or db, progress = false, space = {factor = {32, 64}},
              build = function(p) return vadd(256, p.factor) end, measure = measure}
    end
    local ok, e = pcall(tir.tune, spec(function() return 0 / 0 end))
    assert.is_false(ok)
    assert.truthy(e.message:find("measure returned NaN", 1, true), e.message)
    ok, e = pcall(tir.tune, spec(function() return math.huge end))
    assert.is_false(ok)
    assert.truthy(e.message:find("measure returned inf", 1, true), e.message)
    assert.is_nil(tune.best("vadd:nan", "cuda", {db = db})) -- nothing counts as measured
    ok, e = pcall(tir.tune, spec(function() return 1e-3 end, "/proc/no-such-dir/tuning.jsonl"))
    assert.is_false(ok)
    assert.are.equal("RuntimeError", e.kind)
    assert.truthy(e.message:find("cannot write the tuning database '/proc/no-such-dir/tuning.jsonl'", 1, true), e.message)
    for _, f in ipairs({tune.best, tune.lookup}) do
      ok, e = pcall(f, nil, "cuda", {db = db})
      assert.truthy(not ok and e.message:find("workload must be a string, got nil", 1, true))
      ok, e = pcall(f, "vadd:nan", 90, {db = db})
      assert.truthy(not ok and e.message:find("target must be a string", 1, true))
    end
    local dir = os.tmpname()
    os.remove(dir)
    os.execute("mkdir " .. dir)
    ok, e = pcall(tune.records, dir)
    os.remove(dir)
    assert.is_false(ok)
    assert.are.equal("RuntimeError", e.kind)
    assert.truthy(e.message:find("cannot read the tuning database", 1, true), e.message)
  end)

  it("draws a progress bar on stderr when asked (and is quiet when stderr is not a terminal)", function()
    local script = os.tmpname()
    local f = assert(io.open(script, "w"))
    f:write(([[
      local tir = require("tir")
      local te = tir.te
      local function vadd(factor)
        local A = te.placeholder({256}, "float32", "A")
        local B = te.compute({256}, function(i) return A[{i}] + 1.0 end, "B")
        local sch = tir.Schedule(te.create_prim_func({A, B}))
        local bi, ti = sch:split(sch:get_loops(sch:get_block("B")), {nil, factor})
        sch:bind(bi, "blockIdx.x"); sch:bind(ti, "threadIdx.x")
        return sch
      end
      tir.tune{workload = "p", db = %q, space = {f = {32, 64}}, progress = (arg[1] == "on") or nil,
               build = function(p) return vadd(p.f) end, measure = function() return 1e-3 end}
    ]]):format(db))
    f:close()
    local build = os.getenv("TIRLUA_BUILD_DIR") or "build"
    local function run(a)
      local p = io.popen(("%s/tirlua %s %s 2>&1 >/dev/null"):format(build, script, a))
      local out = p:read("a")
      p:close()
      return out
    end
    local on = run("on")
    assert.truthy(on:find("[tune] [" .. ("#"):rep(24) .. "] 2/2  best 1.000 ms", 1, true), on)
    assert.truthy(on:find("ETA", 1, true), on)
    assert.are.equal("", run("auto"))
    os.remove(script)
  end)
end)

describe("tc_gemm_tune", function()
  local tt = require("tir.schedules.tc_gemm_tune")
  it("has a space of 112 valid tc_gemm configurations for 4096^3 (tiles x depths x CTA orders x main loops) and builds its points", function()
    local space, constraint = tt.space(4096, 4096, 4096)
    local pts = tune.enumerate(space, constraint)
    assert.are.equal(112, #pts)
    local orders, prefetch = {}, 0
    for _, p in ipairs(pts) do
      orders[p.group_m] = (orders[p.group_m] or 0) + 1
      if p.frag_prefetch then
        prefetch = prefetch + 1
        assert.truthy(p.stages >= 3 and (p.BK // 16) % 2 == 0)
      end
    end
    assert.are.same({[1] = 56, [8] = 56}, orders)
    assert.are.equal(48, prefetch)
    for _, p in ipairs(pts) do
      local warps = (p.BM // p.warp_m) * (p.BN // p.warp_n)
      assert.truthy(warps == 4 or warps == 8)
    end
    -- small problems drop tiles larger than they are
    for _, p in ipairs(tune.enumerate(tt.space(64, 64, 256))) do assert.are.equal(64, p.BM) end
    -- a point builds to CUDA C (no NVRTC here), padded when it does not divide
    local mod = tir.build(tt.build(1000, 1000, 256, {dtype = "float16", out_dtype = "float16", intrin = "mma", layout = "NN"},
      {BM = 128, BN = 128, BK = 32, warp_m = 64, warp_n = 64, stages = 3}).mod, "cuda -arch=sm_80", {compile = false})
    assert.truthy(mod:get_source("cuda"):find("mma.sync", 1, true))
  end)

  it("reads tuned options back, the nearest tuned shape's, or the defaults", function()
    local db = tmp()
    local f = assert(io.open(db, "w"))
    f:write(json.encode({workload = tt.workload_key(4096, 4096, 4096), target = "cuda", status = "ok", time_s = 1e-3,
                         params = {BM = 128, BN = 256, BK = 32, warp_m = 64, warp_n = 64, stages = 3}}), "\n")
    f:close()
    local p, how = tt.options(4096, 4096, 4096, {db = db})
    assert.are.equal("tuned", how)
    assert.are.equal(256, p.BN)
    p, how = tt.options(4096, 11008, 4096, {db = db})
    assert.are.equal("nearest " .. tt.workload_key(4096, 4096, 4096), how)
    p, how = tt.options(4096, 4096, 4096, {db = db, dtype = "bfloat16"})
    assert.are.equal("defaults", how)
    assert.are.same({}, p)
    local sch = tt.schedule(256, 256, 128, {db = db}, true)
    assert.truthy(sch.mod)
    assert.has_error(function() tt.options(1, 1, 1, {dtyp = "float16"}) end)
    os.remove(db)
  end)

  it("has a small-M space: 16-row tiles and split_k 1..8 for M = 16, padded K slices for odd shapes", function()
    local pts = tune.enumerate(tt.space(16, 11008, 4096))
    assert.are.equal(117, #pts)
    assert.are.equal(81, #tune.enumerate(tt.space(16, 11008, 4096, {dtype = "bfloat16"}))) -- no "atomic" for bf16
    local splits, serial, atomic = {}, 0, 0
    for _, p in ipairs(pts) do
      assert.are.equal(16, p.BM)
      splits[p.split_k] = true
      if p.split_k_mode == "serial" then serial = serial + 1; assert.truthy(p.split_k > 1) end
      if p.split_k_mode == "atomic" then atomic = atomic + 1; assert.truthy(p.split_k > 1) end
    end
    assert.are.same({[1] = true, [2] = true, [3] = true, [4] = true, [8] = true}, splits)
    assert.are.equal(36, serial) -- every split_k > 1 also summed in the same launch
    assert.are.equal(36, atomic) -- and by red.global.add
    -- split_k = 3 does not divide K = 4096 into BK steps: the point builds on K padded to 3 x 1376
    -- (BK 32) and matches the interpreter (a small shape with the same property: K = 256, 3 x 96)
    local o3 = {dtype = "float16", out_dtype = "float16", intrin = "mma", layout = "NN"}
    local s3 = tt.build(16, 64, 256, o3, {BM = 16, BN = 64, BK = 32, warp_m = 16, warp_n = 32, stages = 3, split_k = 3})
    assert.truthy(tostring(s3.mod):find('T.alloc_buffer({3, 16, 64}, "float32")', 1, true))
    U.assert_equiv(require("tir.schedules.tc_gemm").workload(16, 64, 256, "float16", "float16"), s3.mod, {rtol = 1e-3, atol = 1e-3, trials = 1})
    for _, p in ipairs(tune.enumerate(tt.space(128, 11008, 4096))) do assert.truthy(p.BM == 64 or p.BM == 128) end
    -- K = 1000 in 8 slices of BK = 64 pads K to 1024: one step per slice, fewer than the stages
    for _, p in ipairs(tune.enumerate(tt.space(37, 1000, 1000))) do assert.truthy(1024 // (p.BK * p.split_k) >= p.stages) end
    -- a split-K point of an odd shape builds (K padded to whole slices) and matches the interpreter
    local o = {dtype = "float16", out_dtype = "float16", intrin = "mma", layout = "NN"}
    local sch = tt.build(5, 72, 100, o, {BM = 16, BN = 64, BK = 32, warp_m = 16, warp_n = 32, stages = 2, split_k = 2})
    U.assert_equiv(require("tir.schedules.tc_gemm").workload(5, 72, 100, "float16", "float16"), sch.mod, {rtol = 1e-3, atol = 1e-3, trials = 1})
  end)

  it("feeds auto_tensorize and tc_gemm.schedule{tuned = true}: tuned, nearest or defaults, and says which", function()
    local tc = require("tir.schedules.tc_gemm")
    local db = tmp()
    local f = assert(io.open(db, "w"))
    local tuned = {BM = 16, BN = 128, BK = 64, warp_m = 16, warp_n = 32, stages = 3, split_k = 4}
    f:write(json.encode({workload = tt.workload_key(16, 11008, 4096), target = "cuda", status = "ok", time_s = 3e-5, params = tuned}), "\n")
    f:write(json.encode({workload = tt.workload_key(16, 11008, 4096), target = "cuda", status = "ok", time_s = 9e-5,
                         params = {BM = 16, BN = 64, BK = 32, warp_m = 16, warp_n = 32, stages = 4, split_k = 1}}), "\n")
    f:close()
    local key = tt.workload_key(16, 11008, 4096)
    -- the exact workload: its fastest record
    local sch, o = tc.auto_tensorize(tc.workload(16, 11008, 4096, "float16", "float16"), "mma.m16n8k16", nil, {db = db, epilogue = "D"})
    assert.are.equal("tuned " .. key, o.config)
    assert.are.equal(key, o.config_key)
    for k, v in pairs(tuned) do assert.are.equal(v, o[k]) end
    assert.are.equal(86 * 4, o.ctas)
    assert.truthy(tostring(sch.mod):find("C_rf", 1, true))
    -- another M: the nearest tuned shape of the family
    local _, o2 = tc.auto_tensorize(tc.workload(32, 11008, 4096, "float16", "float16"), "mma.m16n8k16", nil, {db = db})
    assert.are.equal("nearest " .. key, o2.config)
    assert.are.equal(4, o2.split_k)
    -- the user's options win over the record's
    local _, o3 = tc.auto_tensorize(tc.workload(16, 11008, 4096, "float16", "float16"), "mma.m16n8k16", nil, {db = db, split_k = 2})
    assert.are.equal(2, o3.split_k)
    -- another family (fp32 out), tuned = false, tiles that do not divide: the defaults, with the reason
    local _, o4 = tc.auto_tensorize(tc.workload(16, 11008, 4096, "float16"), "mma.m16n8k16", nil, {db = db})
    assert.truthy(o4.config:find("^defaults %(tc_gemm:mma:float16:float32:NN:16x11008x4096 and its family are not in the tuning database"))
    assert.are.equal(3, o4.split_k) -- auto_tensorize's own small-M pick (split_k_spec)
    local _, o5 = tc.auto_tensorize(tc.workload(16, 11008, 4096, "float16", "float16"), "mma.m16n8k16", nil, {db = db, tuned = false})
    assert.are.equal("defaults (tuned = false)", o5.config)
    local _, o6 = tc.auto_tensorize(tc.workload(16, 11008, 1024, "float16", "float16"), "mma.m16n8k16", nil, {db = db})
    assert.are.equal("nearest " .. key, o6.config) -- 1024 = 4 slices of 256
    -- K = 128: the fastest record's slices (4 x 64) do not divide it; the other record (split 1, BK 32) does
    local _, o7 = tc.auto_tensorize(tc.workload(16, 11008, 128, "float16", "float16"), "mma.m16n8k16", nil, {db = db})
    assert.are.equal("nearest " .. key, o7.config)
    assert.are.same({64, 1}, {o7.BN, o7.split_k})
    -- K = 64: no record fits (the second one's 4 stages need 4 steps of 32)
    local _, o9 = tc.auto_tensorize(tc.workload(16, 11008, 64, "float16", "float16"), "mma.m16n8k16", nil, {db = db})
    assert.truthy(o9.config:find("do not divide the block's 16x11008x64 or do not fit the shape", 1, true), o9.config)
    -- tc_gemm.schedule asked for it: options not given come from the record, also on a padded workload
    local s1, how, k1 = tc.schedule(tc.workload(16, 11008, 4096, "float16", "float16"), {tuned = true, db = db, epilogue = "D", stages = 2})
    assert.are.equal("tuned " .. key, how)
    assert.are.equal(key, k1)
    assert.truthy(s1:trace():find("rfactor", 1, true))
    local _, how2, k2 = tc.schedule(tc.workload(20, 11008, 4096, "float16", "float16", {16, 128, 256}), {tuned = true, db = db})
    assert.are.equal("nearest " .. key, how2)
    assert.are.equal(tt.workload_key(20, 11008, 4096), k2)
    -- and on the interpreter the tuned schedule is the GEMM (a small tuned record)
    f = assert(io.open(db, "a"))
    f:write(json.encode({workload = tt.workload_key(16, 64, 256), target = "cuda", status = "ok", time_s = 1e-6,
                         params = {BM = 16, BN = 64, BK = 32, warp_m = 16, warp_n = 32, stages = 2, split_k = 2}}), "\n")
    f:close()
    -- tc_gemm_tune.options takes the nearest record that fits: a 128-row tile is not taken for M = 64
    f = assert(io.open(db, "a"))
    f:write(json.encode({workload = tt.workload_key(128, 11008, 4096), target = "cuda", status = "ok", time_s = 6e-5,
                         params = {BM = 128, BN = 128, BK = 64, warp_m = 64, warp_n = 64, stages = 3, split_k = 1}}), "\n")
    f:close()
    local p64, how64 = tt.options(64, 11008, 4096, {db = db})
    assert.are.same({"nearest " .. key, 16}, {how64, p64.BM})
    local p128, how128 = tt.options(128, 11008, 4096, {db = db})
    assert.are.same({"tuned", 128}, {how128, p128.BM})
    local w = tc.workload(16, 64, 256, "float16", "float16")
    local s2, o8 = tc.auto_tensorize(w, "mma.m16n8k16", nil, {db = db, epilogue = "D"})
    assert.are.equal("tuned " .. tt.workload_key(16, 64, 256), o8.config)
    U.assert_equiv(w, s2.mod, {rtol = 1e-3, atol = 1e-3, trials = 1})
    os.remove(db)
  end)
end)
