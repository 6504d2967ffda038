-- arg_checks_spec.lua -- nothing silently accepted: extra arguments (util.strict), unknown or
-- mistyped options (util.check_opts), misspelled annotation keys (tir.annotations), unknown
-- storage scopes, tensors given one name twice, and the tensor-core schedules' up-front
-- checks (tir.Errors at the caller's line; dtypes against tc_gemm.SUPPORTED; the tile choice
-- of auto_tensorize against the SM count).
local tir = require("tir")
local te = tir.te
local T = tir.script
local U = require("spec_util")
local tc = require("tir.schedules.tc_gemm")
local simt = require("tir.schedules.simt_gemm")

local function this_line() return debug.getinfo(2, "l").currentline end

describe("extra arguments are refused", function()
  it("by the T script, te, schedule primitives, nd and testing", function()
    local cases = {
      {function() te.placeholder({4}, "float32", "A", "extra") end, "te.placeholder(shape, dtype, name) takes 3, got 4"},
      {function() te.compute({4}, function(i) return tir.const(1.0) end, "C", {tag = "x"}) end, "te.compute(shape, fcompute, name) takes 3"},
      {function() tir.nd.random({4}, "float32", nil, {}, 5) end, "nd.random(shape, dtype, dev, opts) takes 4, got 5"},
      {function() tir.testing.assert_allclose({1}, {1}, {}, 1e-3) end, "assert_allclose(actual, desired, opts) takes 3"},
      {function() tir.build(U.matmul(4, 4, 4), "cuda", {}, "x") end, "build(func, target, opts) takes 3, got 4"},
    }
    for _, c in ipairs(cases) do U.expect_error(c[1], "TypeError", "too many arguments", c[2]) end
    local sch = tir.Schedule(U.matmul(16, 16, 16))
    local i = sch:get_loops(sch:get_block("C"))
    U.expect_error(function() sch:split(i, {4, 4}, true) end, "TypeError in split", "split(loop, factors) takes 2, got 3")
    U.expect_error(function() sch:bind(i, "blockIdx.x", "threadIdx.x") end, "bind(loop, tag) takes 2, got 3")
    U.expect_error(function() sch:get_block("C", "D") end, "get_block(name) takes 1, got 2")
    -- the failed calls changed nothing
    assert.are.equal(3, #{sch:get_loops(sch:get_block("C"))})
  end)

  it("in T script bodies: T.where, T.block, T.alloc_buffer, loops", function()
    local function body(stmt)
      return function()
        T.prim_func("f", {A = T.Buffer({16}, "float32")}, function(A)
          for i in T.serial(16) do
            T.block("B", function()
              local vi = T.axis.spatial(16, i)
              stmt(A, vi)
              A[{vi}] = 1.0
            end)
          end
        end)
      end
    end
    U.expect_error(body(function(_, vi) T.where(T.lt(vi, 8), "extra") end), "T.where(cond) takes 1, got 2")
    U.expect_error(body(function() T.alloc_buffer({4}, "float32", {scope = "local"}, 1) end),
                   "T.alloc_buffer(shape, dtype, opts) takes 3, got 4")
    U.expect_error(function()
      T.prim_func("f", {}, function() T.block("B", function() end, "x") end)
    end, "T.block(name, fn) takes 2, got 3")
    U.expect_error(function()
      T.prim_func("f", {A = T.Buffer({16})}, function(A) for i in T.serial(16, {}, 3) do A[{i}] = 0.0 end end)
    end, "TypeError in T.serial", "too many arguments")
  end)
end)

describe("options tables", function()
  it("refuse unknown keys with 'did you mean' and the valid keys, and wrong types", function()
    U.expect_error(function() tir.nd.random({4}, "float32", nil, {sead = 1}) end, "ValueError in nd.random",
                   "unknown option 'sead' (did you mean 'seed'?)", "valid options: high, low, seed")
    U.expect_error(function() tir.testing.assert_allclose({1}, {1}, {rtl = 1e-3}) end, "did you mean 'rtol'?")
    U.expect_error(function() tir.build(U.matmul(4, 4, 4), "cuda", {dumps = true}) end, "unknown option 'dumps'",
                   "did you mean 'dump'?", "arch, cache, compile, dump, unroll_max_extent")
    U.expect_error(function() tir.simulate(U.matmul(4, 4, 4), {}, {max_issue = 3}) end, "did you mean 'max_issues'?")
    U.expect_error(function() tir.nd.random({4}, "float32", nil, "seed=1") end, "TypeError in nd.random", "options must be a table")
    U.expect_error(function() simt.schedule(U.matmul(64, 64, 64), {stage = 2}) end, "ValueError in simt_gemm.schedule",
                   "did you mean 'stages'?")
    U.expect_error(function() simt.schedule(U.matmul(64, 64, 64), {stages = 0}) end, "option stages must be a positive integer")
    U.expect_error(function()
      T.prim_func("f", {A = T.Buffer({16}, "float32", {scopes = "global"})}, function(A) A[{0}] = 1.0 end)
    end, "T.Buffer", "unknown option 'scopes' (did you mean 'scope'?)")
  end)

  it("time_evaluator checks its options when it is created", function()
    local sch = tir.Schedule(U.matmul(16, 16, 16))
    local i, j = sch:get_loops(sch:get_block("C"))
    sch:bind(i, "blockIdx.x"); sch:bind(j, "threadIdx.x")
    local m = tir.build(sch, "cuda", {compile = false})
    U.expect_error(function() m:time_evaluator({repeats = 3}) end, "ValueError in time_evaluator", "unknown option 'repeats'",
                   "did you mean 'repeat'?")
    U.expect_error(function() m:time_evaluator({number = 0}) end, "option number must be an integer in [1, 100000]")
    U.expect_error(function() m:time_evaluator({repeat_ = 2, ["repeat"] = 3}) end, "repeat_ or repeat, not both")
    assert.is_function(m:time_evaluator({number = 2, repeat_ = 1, warmup = 0}))
  end)
end)

describe("annotation keys", function()
  local function loop()
    local sch = tir.Schedule(U.matmul(16, 16, 16))
    local _, _, k = sch:get_loops(sch:get_block("C"))
    return sch, k
  end
  it("refuse misspellings of the keys tirlua interprets, allow user keys", function()
    local sch, k = loop()
    U.expect_error(function() sch:annotate(k, "software_pipeline_stages", {0, 0, 1}) end, "ValueError in annotate",
                   "'software_pipeline_stages'", "did you mean 'software_pipeline_stage'?")
    U.expect_error(function() sch:annotate(k, "software_pipline_order", {0, 1, 2}) end, "did you mean 'software_pipeline_order'?")
    U.expect_error(function() sch:annotate(k, "software_pipeline_depth", 2) end, "reserved prefix 'software_pipeline_'")
    U.expect_error(function() sch:annotate(sch:get_block("C"), "tensor_intrinsic", "x") end, "did you mean 'tensor_intrin'?")
    -- user keys and TVM's pragmas stay allowed (kept, printed, ignored by the passes)
    sch:annotate(k, "my_note", 1)
    sch:annotate(k, "pragma_auto_unroll_max_step", 16)
    sch:annotate(k, "software_pipeline_stage", {0, 0, 1})
    local s = tostring(sch.mod)
    assert.matches('"my_note"', s)
    assert.matches('"software_pipeline_stage"', s)
    U.assert_roundtrip(sch.mod)
    -- unannotate's key is checked like annotate's (was a raw Lua "bad argument" error)
    U.expect_error(function() sch:unannotate(k, nil) end, "TypeError in unannotate", "key must be a string, got nil")
    U.expect_error(function() sch:unannotate(k, {}) end, "TypeError in unannotate", "key must be a string, got table")
  end)
  it("in the T script: T.block_attr and loop annotations", function()
    U.expect_error(function()
      T.prim_func("f", {A = T.Buffer({16})}, function(A)
        for i in T.serial(16, {annotations = {software_pipeline_stages = {0}}}) do A[{i}] = 0.0 end
      end)
    end, "ValueError in T.serial", "did you mean 'software_pipeline_stage'?")
    U.expect_error(function()
      T.prim_func("f", {A = T.Buffer({16})}, function(A)
        for i in T.serial(16) do
          T.block("B", function()
            local vi = T.axis.spatial(16, i)
            T.block_attr({tensor_intrn = "x"})
            A[{vi}] = 0.0
          end)
        end
      end)
    end, "ValueError in T.block_attr", "did you mean 'tensor_intrin'?")
  end)
end)

describe("storage scopes", function()
  it("are checked where the buffer is declared, with the list of valid scopes", function()
    local line
    local e = U.expect_error(function()
      T.prim_func("f", {A = T.Buffer({16})}, function(A)
        line = this_line() + 1
        local S = T.alloc_buffer({16}, "float32", {scope = "shard"})
        for i in T.serial(16) do
          T.block("B", function() local vi = T.axis.spatial(16, i) S[{vi}] = A[{vi}] end)
        end
      end)
    end, "ValueError in buffer", "unknown storage scope 'shard'", "global, shared, shared.dyn, local, warp, wmma.matrix_a")
    assert.matches("arg_checks_spec.lua:" .. line .. ":", e.where)
    U.expect_error(function()
      T.prim_func("f", {A = T.Buffer({16}, "float32", {scope = "wmma.matrix_x"})}, function(A) A[{0}] = 1.0 end)
    end, "unknown storage scope 'wmma.matrix_x'")
    U.expect_error(function() tir.Schedule(U.matmul(16, 16, 16)):cache_read("C", 1, "wmma.matrx_a") end,
                   "invalid storage scope 'wmma.matrx_a'")
  end)
end)

describe("tensor names", function()
  it("two tensors given one name are an error at create_prim_func; default names are made unique", function()
    local A = te.placeholder({8}, "float32", "A")
    local C1 = te.compute({8}, function(i) return A[{i}] * 2.0 end, "C")
    local C2 = te.compute({8}, function(i) return C1[{i}] + 1.0 end, "C")
    U.expect_error(function() te.create_prim_func({A, C2}) end, "ValueError in te.create_prim_func", "two tensors are named 'C'")
    local A2 = te.placeholder({8}, "float32", "C")
    local D = te.compute({8}, function(i) return A2[{i}] end, "C")
    U.expect_error(function() te.create_prim_func({A2, D}) end, "two tensors are named 'C'")
    local X = te.compute({8}, function(i) return A[{i}] * 2.0 end)
    local Y = te.compute({8}, function(i) return X[{i}] + 1.0 end)
    local f = te.create_prim_func({A, Y})
    local sch = tir.Schedule(f)
    assert.are.equal("compute", sch:get_block("compute").name)
    assert.is_truthy(sch:get_block("compute_1"))
  end)
  it("get_block of a name two T script blocks share raises", function()
    local f = T.prim_func("f", {A = T.Buffer({16}), B = T.Buffer({16})}, function(A, B)
      for i in T.serial(16) do T.block("C", function() local vi = T.axis.spatial(16, i) A[{vi}] = 1.0 end) end
      for i in T.serial(16) do T.block("C", function() local vi = T.axis.spatial(16, i) B[{vi}] = A[{vi}] end) end
    end)
    U.expect_error(function() tir.Schedule(f):get_block("C") end, "get_block", "'C'")
  end)
end)

describe("tc_gemm checks up front", function()
  it("raise tir.Errors from tc_gemm at the caller's line", function()
    local f = tc.workload(64, 64, 64)
    local line = this_line() + 1
    local e = U.expect_error(function() tc.schedule(f, {BM = 48}) end, "ValueError in tc_gemm.schedule", "BM % warp_m")
    assert.are.equal("tir.Error", getmetatable(e).__name)
    assert.matches("arg_checks_spec.lua:" .. line .. ":", e.where)
    U.expect_error(function() tc.schedule(f, {stage = 2}) end, "did you mean 'stages'?")
    -- errors raised in any lib/tir/<dir>/*.lua (intrin, schedules, ops) point at the caller
    line = this_line() + 1
    local e2 = U.expect_error(function() tir.ops.quantized_matmul({M = 16, N = 16, K = 16, bogus = 1}) end, "bogus")
    assert.matches("arg_checks_spec.lua:" .. line .. ":", e2.where)
    U.expect_error(function() tc.schedule(f, {intrin = "hmma"}) end, "intrin must be one of mma, wmma")
    U.expect_error(function() tc.schedule(f, {BM = 64, BN = 64, warp_m = 32, warp_n = 32, vec = 3}) end, "vec must be 1, 2, 4 or 8")
    U.expect_error(function() tc.schedule(tc.workload(96, 64, 64), {BM = 64, BN = 64, warp_m = 32, warp_n = 32}) end,
                   "M = 96 is not a multiple of BM = 64", "pad")
    U.expect_error(function() tc.schedule(f, {block = "X"}) end, "get_block", "X")
    U.expect_error(function() tc.schedule("f") end, "TypeError in tc_gemm.schedule", "expected a PrimFunc")
    U.expect_error(function() tc.workload(64, 64, 64, "float16", nil, nil, "NX") end, "ValueError in tc_gemm.workload", "layout")
    U.expect_error(function() tc.workload(64.0, 64, 64) end, "M must be a positive integer")
    -- (out_dtype was ignored unless "float16" before: a bfloat16 D came back as C in float32)
    U.expect_error(function() tc.workload(64, 64, 64, "float16", "int8") end, "TypeError in tc_gemm.workload",
                   "float16 x float16 inputs accumulate in float32; out_dtype must be float32, float16 or bfloat16", "not 'int8'")
  end)

  it("tc_gemm.workload's out_dtype = \"bfloat16\" is a D block in bfloat16; mma.sync refuses to fuse it, wgmma fuses it bit-exactly", function()
    for _, dt in ipairs({"float16", "bfloat16"}) do
      local f = tc.workload(128, 128, 128, dt, "bfloat16", nil, "NT")
      assert.are.equal("bfloat16", f.params[3].dtype)
      assert.matches('T.cast%("bfloat16", C', tostring(f))
      U.assert_equiv(f, tc.schedule(f, {intrin = "wgmma", BM = 64, BN = 64, BK = 64, stages = 2, epilogue = "D"}).mod,
                     {trials = 1, rtol = 0, atol = 0})
      local sch = tc.schedule(f, {intrin = "wgmma", BM = 64, BN = 128, BK = 64, stages = 2, epilogue = "D", epilogue_store = "tma"})
      local mod = tir.build(sch.mod, "cuda -arch=sm_90a", {compile = false})
      assert.are.equal(0, tir.simulate(mod, tir.testing.random_args(f, 3), {reference = f}).n_issues)
    end
    U.expect_error(function() tc.schedule(tc.workload(64, 64, 64, "bfloat16", "bfloat16"), {BM = 64, BN = 64, warp_m = 32, warp_n = 32,
                                                                                           epilogue = "D"}) end,
                   "TypeError in tc_gemm.schedule", "epilogue 'D' writes bfloat16", "the fused store of intrin = \"mma\" writes float16")
    -- the padded workload's D casted to bfloat16 as before
    assert.matches('T.cast%("bfloat16", C', tostring(tc.workload(40, 64, 64, "bfloat16", "bfloat16", {64, 64, 64})))
  end)

  it("validate dtypes against tc_gemm.SUPPORTED before scheduling", function()
    local small = {BM = 64, BN = 64, warp_m = 32, warp_n = 32}
    -- (int8 is a row since the IMMA rows; int16 is not)
    for _, dt in ipairs({"int16", "float32"}) do
      U.expect_error(function() tc.schedule(tc.workload(64, 64, 64, dt), small) end, "TypeError in tc_gemm.schedule",
                     "multiplies " .. dt .. " into float32", "supported: mma (mma.m16n8k16): float16 -> float32")
      U.expect_error(function() tc.auto_tensorize(tc.workload(64, 64, 64, dt)) end, "TypeError in tc_gemm.auto_tensorize",
                     "multiplies " .. dt .. " into float32")
    end
    local o = {intrin = "wmma"}
    for k, v in pairs(small) do o[k] = v end
    U.expect_error(function() tc.schedule(tc.workload(64, 64, 64, "bfloat16"), o) end, "multiplies bfloat16 into float32",
                   "intrin = \"wmma\"")
    U.expect_error(function() tc.schedule(tc.workload(64, 64, 64, "float16"), {dtype = "bfloat16", BM = 64, BN = 64}) end,
                   "opts.dtype is bfloat16", "reads float16")
    assert.is_truthy(tc.supported("mma", "bfloat16", "float32"))
    assert.is_nil(tc.supported("wmma", "bfloat16", "float32"))
  end)

  it("auto_tensorize fills the SMs: enough CTAs for sm_count, larger tiles when that allows", function()
    -- 256^3 on 132 SMs: 128x128 tiles would give 4 CTAs
    local bm, bn, ctas = tc.pick_tiles(1, 256, 256, 132)
    assert.is_true(ctas >= 132, ("%dx%d gives %d CTAs"):format(bm, bn, ctas))
    assert.are.equal(ctas, (256 // bm) * (256 // bn))
    -- with 4 SMs the largest tile fills them
    assert.are.same({128, 128, 4}, {tc.pick_tiles(1, 256, 256, 4)})
    -- 4096^2 on 132 SMs: 1024 CTAs of 128x128
    assert.are.same({128, 128, 1024}, {tc.pick_tiles(1, 4096, 4096, 132)})
    -- batches count: 16 x 256^2 with 64x64 tiles is 256 CTAs
    assert.are.same({64, 64, 256}, {tc.pick_tiles(16, 256, 256, 132)})
    -- no tile fills 132 SMs at 128^2: the most CTAs among tiles of at least 32x32
    assert.are.same({32, 32, 16}, {tc.pick_tiles(1, 128, 128, 132)})
    -- the chosen schedule computes the right thing
    local f = tc.workload(128, 128, 64)
    local sch, o = tc.auto_tensorize(f, "mma.m16n8k16", nil, {sm_count = 132})
    assert.are.equal(32, o.BM); assert.are.equal(16, o.ctas)
    U.assert_equiv(f, sch.mod, {rtol = 2e-3, atol = 2e-3, trials = 1})
    local sch2, o2 = tc.auto_tensorize(f, "wmma.m16n16k16", nil, {sm_count = 1})
    assert.are.equal(128, o2.BM); assert.are.equal(1, o2.ctas)
    U.assert_equiv(f, sch2.mod, {rtol = 2e-3, atol = 2e-3, trials = 1})
    -- the 256-wide choice (16 x 16 tiles, one warp per CTA, 256 CTAs) runs right lane by lane
    local g = tc.workload(256, 256, 32)
    local sch3, o3 = tc.auto_tensorize(g, "mma.m16n8k16", nil, {sm_count = 132})
    assert.are.same({16, 16, 256}, {o3.BM, o3.BN, o3.ctas})
    tir.simulate(tir.build(sch3.mod, "cuda -arch=sm_80", {compile = false}), tir.testing.random_args(g, 2),
                 {reference = g, rtol = 1e-2, atol = 1e-2})
    U.expect_error(function() tc.auto_tensorize(f, "mma.m16n8k16", nil, {sm_cont = 4}) end, "did you mean 'sm_count'?")
    U.expect_error(function() tc.auto_tensorize(f, 3) end, "TypeError in tc_gemm.auto_tensorize", "instr must be a string")
  end)
end)

describe("methods of arrays and modules", function()
  it("refuse extra arguments", function()
    local a = tir.nd.empty({4})
    U.expect_error(function() a:shape(1) end, "TypeError in NDArray:shape", "a:shape takes 0, got 1")
    U.expect_error(function() a:to("cpu", "cuda") end, "a:to takes 1, got 2")
    U.expect_error(function() a:save("/tmp/x.npy", true) end, "a:save takes 1, got 2")
    assert.are.equal(2.5, (function() a:set(1, 2.5) return a:get(1) end)()) -- get/set take any number of indices
    local sch = tir.Schedule(U.matmul(16, 16, 16))
    local i, j = sch:get_loops(sch:get_block("C"))
    sch:bind(i, "blockIdx.x"); sch:bind(j, "threadIdx.x")
    local m = tir.build(sch, "cuda", {compile = false})
    U.expect_error(function() m:get_source("cuda", "ptx") end, "TypeError in Module:get_source", "mod:get_source takes 1, got 2")
    assert.matches("__global__", m:get_source("cuda"))
  end)
end)

describe("tc_gemm's up-front checks accept every configuration the GPU specs and benchmarks use", function()
  it("schedules and generates CUDA C for them on the CPU", function()
    -- bench/gemm_fp16.lua's and gpu_tc_spec.lua's tile choice for a shape
    local function config(intrin, stages, m)
      local o = {intrin = intrin, stages = stages, epilogue = "D"}
      if m < 128 then o.BM = m >= 64 and 64 or (m >= 32 and 32 or 16); o.warp_m = o.BM; o.BN, o.warp_n = 128, 32 end
      return o
    end
    local shapes = {{1024, 1024, 1024}, {1000, 1000, 1000}, {1, 4096, 4096}, {16, 11008, 4096}, {100, 130, 70},
                    {32, 4096, 4096}, {64, 4096, 4096}}
    for _, v in ipairs({{"mma", 1}, {"mma", 3}, {"wmma", 1}, {"wmma", 3}}) do
      for _, s in ipairs(shapes) do
        local m, n, k = s[1], s[2], s[3]
        local o = config(v[1], v[2], m)
        local BM, BN, BK = o.BM or 128, o.BN or 128, o.BK or 32
        local divides = m % BM == 0 and n % BN == 0 and k % BK == 0
        local f = tc.workload(m, n, k, "float16", "float16", not divides and {BM, BN, BK} or nil)
        local m_ = tir.build(tc.schedule(f, o).mod, "cuda -arch=sm_90", {compile = false})
        assert.matches("__global__", m_:get_source("cuda"))
      end
    end
    for _, bn in ipairs({128, 256}) do
      for _, st in ipairs({1, 3, 4}) do
        local f = tc.workload(1024, 1024, 1024, "float16", "float16")
        assert.is_truthy(tir.build(tc.schedule(f, {intrin = "mma", BN = bn, stages = st, epilogue = "D"}).mod, "cuda -arch=sm_90",
                                   {compile = false}))
      end
    end
    -- bench/gemm_fp16.lua's split-K rows (mma_s4_sk2/4/8, mma_b64_s3_sk4) at the small-M shapes
    for _, sk in ipairs({{32, 4, 2}, {32, 4, 4}, {32, 4, 8}, {64, 3, 4}}) do
      for _, s in ipairs({{1, 4096, 4096}, {16, 11008, 4096}, {128, 11008, 4096}}) do
        local m, n, k = s[1], s[2], s[3]
        local o = config("mma", sk[2], m)
        o.BK, o.split_k = sk[1], sk[3]
        local divides = m % (o.BM or 128) == 0
        local f = tc.workload(m, n, k, "float16", "float16", not divides and {o.BM or 128, o.BN or 128, o.BK * o.split_k} or nil)
        assert.matches("blockIdx.z", tir.build(tc.schedule(f, o).mod, "cuda -arch=sm_90", {compile = false}):get_source("cuda"))
      end
    end
  end)
end)
