-- new_api_checks_spec.lua -- the session's new entry points as a new user misuses them:
-- extra arguments (README: "a call with more arguments than the function takes" is an
-- error), NaN options, bad names/extents/options for register_extern and tc_gemm_tune, DLPack
-- capsules used twice or imported with a contradicting option, and tirlua --cache-info with
-- other arguments.  Every case is a tir.Error naming the function.
local tir = require("tir")
local U = require("spec_util")
local build = os.getenv("TIRLUA_BUILD_DIR") or "build"

describe("new entry points refuse extra arguments", function()
  it("tir.cache, tir.layout, tir.tune, tir.json, tc_gemm_tune, register_extern, help, to_dlpack", function()
    local tt = require("tir.schedules.tc_gemm_tune")
    local lay = tir.layout.shared{shape = {8, 8}, dtype = "float32"}
    local a = tir.nd.array({1, 2}, "int32")
    local cases = {
      {function() tir.cache.info(1) end, "cache.info() takes 0, got 1"},
      {function() tir.cache.clear("x") end, "cache.clear() takes 0, got 1"},
      {function() tir.cache.set(nil, true, 3) end, "cache.set(dir, enabled) takes 2, got 3"},
      {function() tir.layout.fragment("m16n8k16.f16.f16.f32", "a", 1) end, "layout.fragment(name, operand) takes 2, got 3"},
      {function() tir.layout.shared({shape = {8, 8}}, 1) end, "layout.shared(spec) takes 1, got 2"},
      {function() lay:conflicts(tir.layout.ldmatrix_x4{}, 1) end, "Layout:conflicts(access) takes 1, got 2"},
      {function() lay:png("/tmp/x.png", {}, 1) end, "Layout:png(path, opts) takes 2, got 3"},
      {function() tir.tune.best("w", "cuda", {}, 1) end, "tune.best(workload, target, opts) takes 3, got 4"},
      {function() tir.tune.records(nil, 1) end, "tune.records(path) takes 1, got 2"},
      {function() require("tir.json").encode({}, {}, 1) end, "json.encode(v, opts) takes 2, got 3"},
      {function() require("tir.json").encode({}, 1) end, "json.encode: options must be a table, got number"},
      {function() require("tir.json").encode({}, {float_fmt = "%g"}) end, "json.encode: unknown option float_fmt"},
      {function() tt.workload_key(64, 64, 64, {}, 1) end, "tc_gemm_tune.workload_key(m, n, k, o) takes 4, got 5"},
      {function() tir.register_extern("h9_f", {}, 1) end, "register_extern(name, opts) takes 2, got 3"},
      {function() tir.help(1, 2) end, "help(x) takes 1, got 2"},
      {function() a:to_dlpack({}, 1) end, "NDArray:to_dlpack", "1 more than a:to_dlpack([opts]) takes"},
      {function() require("tir.schedules.qgemm").schedule(nil, {}, 1) end, "qgemm.schedule(func, opts) takes 2, got 3"},
      {function() require("tir.schedules.simt_gemm").schedule(nil, {}, 1) end, "simt_gemm.schedule(func, opts) takes 2, got 3"},
      {function() tir.ops.quantized_matmul.col_sums(nil, "NK", 1) end, "quantized_matmul.col_sums(B, layout) takes 2, got 3"},
    }
    for _, c in ipairs(cases) do U.expect_error(c[1], table.unpack(c, 2)) end
  end)
end)

describe("new entry points check their values", function()
  it("refuses NaN for number options (nd.random low was accepted and filled NaN) and infinite bounds", function()
    U.expect_error(function() tir.nd.random({3}, "float32", nil, {low = 0 / 0}) end, "TypeError in nd.random",
                   "option low must be a number (not NaN), got NaN")
    U.expect_error(function() tir.nd.random({3}, "float32", nil, {high = math.huge}) end, "ValueError in nd.random",
                   "option high must be finite")
  end)

  it("register_extern / register_extern_model: tir.Errors for a missing name, options or model", function()
    U.expect_error(function() tir.register_extern(nil, {}) end, "TypeError in register_extern", "the name must be a string, got nil")
    U.expect_error(function() tir.register_extern("h9_f") end, "TypeError in register_extern", "expected a table")
    U.expect_error(function() tir.register_extern("h9_f", {cudaa = "x"}) end, "unknown option 'cudaa' (did you mean 'cuda'?)")
    U.expect_error(function() tir.register_extern_model("h9_f", nil) end, "TypeError in register_extern_model",
                   "the model must be a function, got nil")
    U.expect_error(function() tir.register_extern_model(5, print) end, "TypeError in register_extern_model", "got 5")
  end)

  it("tc_gemm_tune: extents, option names (did you mean) and types, layout, quiet", function()
    local tt = require("tir.schedules.tc_gemm_tune")
    U.expect_error(function() tt.workload_key(1.5, 64, 64) end, "tc_gemm_tune.workload_key", "M must be a positive integer, got 1.5")
    U.expect_error(function() tt.space(64, 64, nil) end, "tc_gemm_tune.space", "K must be a positive integer, got nil")
    U.expect_error(function() tt.workload_key(-4, 64, 64) end, "M must be a positive integer, got -4")
    U.expect_error(function() tt.options(64, 64, 64, {dtyp = "float16"}) end, "unknown option 'dtyp' (did you mean 'dtype'?)")
    U.expect_error(function() tt.options(64, 64, 64, {trials = 0}) end, "option trials must be a positive integer")
    U.expect_error(function() tt.options(64, 64, 64, {layout = "XX"}) end, "layout must be \"NN\", \"NT\", \"TN\" or \"TT\"")
    U.expect_error(function() tt.schedule(64, 64, 64, {}, 1) end, "quiet must be a boolean, got 1")
    assert.are.equal("tc_gemm:mma:float16:float16:NN:4096x4096x4096", tt.workload_key(4096, 4096, 4096))
  end)

  it("tir.ops errors point at the caller's line, as lib/tir/schedules' do", function()
    local e = U.expect_error(function() tir.ops.quantized_matmul{M = 64, N = 64, K = 64, a_zero_point = 200} end,
                             "ValueError in quantized_matmul", "outside the range of int8")
    assert.truthy(tostring(e):find("new_api_checks_spec.lua:%d+:"), tostring(e))
    assert.falsy(tostring(e):find("quantized_matmul.lua:", 1, true), tostring(e))
  end)

  it("T.reads / T.writes / T.block_attr given twice in one block are refused (the second replaced the first)", function()
    local T = tir.script
    local function blk(extra)
      return function()
        T.prim_func("f", {A = T.Buffer({8}, "float32"), B = T.Buffer({8}, "float32")}, function(A, B)
          for i in T.serial(8) do
            T.block("b", function()
              local vi = T.axis.spatial(8, i)
              T.reads(A[{vi}])
              T.writes(B[{vi}])
              extra(A, B, vi)
              B[{vi}] = A[{vi}]
            end)
          end
        end)
      end
    end
    U.expect_error(blk(function(A) T.reads(A[{0}]) end), "T.reads is given twice in block 'b'")
    U.expect_error(blk(function(A, B, vi) T.writes(B[{vi}]) end), "T.writes is given twice in block 'b'")
    U.expect_error(blk(function() T.block_attr({a = 1}); T.block_attr({b = 2}) end), "T.block_attr is given twice in block 'b'")
  end)

  it("quantized_matmul and qgemm say which option a misspelled one meant", function()
    U.expect_error(function() tir.ops.quantized_matmul{M = 64, N = 64, K = 64, sclae = 1} end,
                   "ValueError in quantized_matmul", "unknown option 'sclae' (did you mean 'scale'?)")
    local qg = require("tir.schedules.qgemm")
    local f = tir.ops.quantized_matmul{M = 64, N = 64, K = 64}
    U.expect_error(function() qg.schedule(f, {intrn = "dp4a"}) end, "unknown option 'intrn' (did you mean 'intrin'?)")
    U.expect_error(function() qg.schedule(f, 5) end, "TypeError in qgemm", "options must be a table, got 5")
  end)

  it("qgemm checks each option's type and refuses options the chosen schedule would ignore", function()
    local qg = require("tir.schedules.qgemm")
    local f = tir.ops.quantized_matmul{M = 64, N = 64, K = 64, b_sums = "input"}
    -- were Lua errors inside qgemm.lua (arithmetic on a boolean, n % 0, iterating a number)
    U.expect_error(function() qg.schedule(f, {BM = false}) end, "TypeError in qgemm", "option BM must be a positive integer")
    U.expect_error(function() qg.schedule(f, {TY = 0}) end, "TypeError in qgemm", "option TY must be a positive integer, got 0")
    U.expect_error(function() qg.schedule(f, {intrin = "mma", tc = 5}) end, "TypeError in qgemm", "option tc must be a table")
    -- were accepted and ignored (or, BM = 0, a split error naming no option)
    U.expect_error(function() qg.schedule(f, {BM = 0}) end, "TypeError in qgemm", "option BM must be a positive integer, got 0")
    U.expect_error(function() qg.schedule(f, {stages = 0}) end, "TypeError in qgemm", "option stages must be a positive integer")
    U.expect_error(function() qg.schedule(f, {unroll = "yes"}) end, "TypeError in qgemm", "option unroll must be a boolean")
    U.expect_error(function() qg.schedule(f, {early_wait = true}) end, "ValueError in qgemm", "early_wait = true needs a pipeline (stages >= 2)")
    U.expect_error(function() qg.schedule(f, {intrin = "dp4a", tc = {BM = 64}}) end, "ValueError in qgemm",
                   "option tc (tc_gemm's options) is for intrin = \"mma\", got intrin = 'dp4a'")
    U.expect_error(function() qg.schedule(f, {intrin = "mma", BM = 128}) end, "ValueError in qgemm",
                   "option BM is for the SIMT/DP4A schedules; with intrin = \"mma\" tc_gemm's options go in tc = {...}")
    -- what stays accepted
    assert.is_truthy(qg.schedule(f, {intrin = "dp4a", stages = 2, early_wait = true, lane_tile = false}))
    assert.is_truthy(qg.schedule(f, {intrin = "mma", tc = {BM = 64, BN = 64, BK = 64, warp_m = 32, warp_n = 32}}))
  end)

  it("tc_gemm's unknown-intrin error lists wgmma too", function()
    local tc = require("tir.schedules.tc_gemm")
    U.expect_error(function() tc.schedule(tc.workload(64, 64, 64, "float16", "float32"), {intrin = "wgmmma"}) end,
                   "ValueError in tc_gemm.schedule", "intrin must be one of mma, wmma, wgmma, got 'wgmmma'")
  end)

  it("Layout:png refuses a cell size that draws nothing", function()
    local lay = tir.layout.shared{shape = {8, 8}, dtype = "float32"}
    U.expect_error(function() lay:png(os.tmpname(), {cell = 0}) end, "ValueError in Layout:png", "cell must be 8..256 pixels, got 0")
  end)
end)

describe("DLPack capsules", function()
  it("name release() when a capsule is released twice, and refuse a versioned option the capsule contradicts", function()
    local a = tir.nd.array({1, 2}, "int32")
    local c = a:to_dlpack()
    local p = c:release()
    U.expect_error(function() c:release() end, "ValueError in DLPack:release", "already consumed")
    U.expect_error(function() c.release(a:to_dlpack(), 1) end, "TypeError in DLPack:release", "too many arguments")
    tir.nd.from_dlpack(p) -- the pointer's deleter runs with this array
    U.expect_error(function() tir.nd.from_dlpack(a:to_dlpack{versioned = true}, {versioned = false}) end,
                   "ValueError in nd.from_dlpack", "versioned = false, but the capsule holds a DLManagedTensorVersioned")
    U.expect_error(function() tir.nd.from_dlpack(a:to_dlpack(), {versioned = true}) end,
                   "versioned = true, but the capsule holds a DLManagedTensor")
    local b = tir.nd.from_dlpack(a:to_dlpack{versioned = true}, {versioned = true})
    assert.are.same({1, 2}, b:to_table())
  end)
end)

describe("tirlua --cache-info / --cache-clear", function()
  it("says that they stand alone when given with other arguments", function()
    for _, cmd in ipairs({"--cache-info extra", "--cache-clear --cache-info"}) do
      local p = assert(io.popen(("%s/tirlua %s 2>&1"):format(build, cmd)))
      local out = p:read("a")
      local ok = p:close()
      assert.is_falsy(ok)
      local opt = cmd:match("^%S+")
      assert.truthy(out:find(("'%s' stands alone"):format(opt), 1, true), out)
    end
  end)
end)

describe("the int8 examples", function()
  it("refuse sizes that are not positive integers (abc ran the default size)", function()
    for _, ex in ipairs({"qgemm", "gemm_dp4a"}) do
      for _, a in ipairs({"abc", "64 x", "0", "64 64 64 64"}) do
        local p = assert(io.popen(("%s/tirlua scripts/examples/%s.lua %s 2>&1"):format(build, ex, a)))
        local out = p:read("a")
        local ok = p:close()
        assert.is_falsy(ok)
        assert.truthy(out:find(("usage: tirlua scripts/examples/%s.lua [M N K]"):format(ex), 1, true), out)
      end
    end
  end)
end)
