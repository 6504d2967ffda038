-- user_errors_spec.lua -- a new user's wrong calls end in a tir.Error naming the function, never
-- a bare Lua error ("attempt to index a nil value", "bad argument #1 to '?'") or a wrong value.
-- The sweep (user_errors_sweep.lua) calls every public function of a module with junk in a
-- child tirlua (the calls change process state); the cases below pin the messages.

local build = os.getenv("TIRLUA_BUILD_DIR") or "build"
local te = tir.te

local function err_of(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  local mt = type(e) == "table" and getmetatable(e)
  assert.is_truthy(mt and mt.__name == "tir.Error", "not a tir.Error: " .. tostring(e))
  return e
end

local function sweep(target)
  local p = assert(io.popen(("TIRLUA_CACHE=0 %s/tirlua tests/spec/user_errors_sweep.lua %s 2>&1; echo rc=$?"):format(build, target)))
  local out = p:read("a")
  p:close()
  return out
end

describe("wrong arguments give a tir.Error #errors", function()
  for _, target in ipairs({"tir", "T", "tir.te", "tir.ops", "tir.testing", "tir.nd", "tir.dispatch", "tir.amos", "tir.layout",
                           "tir.cudnn", "tir.tune", "NDArray", "Schedule", "Dispatcher", "PrimFunc", "Module", "family",
                           "tir.schedules.tc_gemm", "tir.schedules.tc_gemm_tune", "tir.schedules.simt_gemm", "tir.schedules.conv2d_tc",
                           "tir.schedules.qgemm", "tir.intrin.cuda"}) do
    it("sweep of " .. target, function()
      local out = sweep(target)
      assert.matches("done %d+ 0\nrc=0\n$", out, nil, nil, out)
    end)
  end

  it("tir.call / T.call / T.Broadcast / te.cast name themselves", function()
    local e = err_of(tir.call, nil, "x")
    assert.are.equal("TypeError", e.kind)
    assert.are.equal("call", e.primitive)
    assert.matches("bad argument #1 %(string expected, got nil%)", e.message)
    e = err_of(tir.script.Broadcast, "x", 4)
    assert.are.equal("T.Broadcast", e.primitive)
    e = err_of(tir.script.call, 3)
    assert.are.equal("T.call", e.primitive)
    e = err_of(te.cast, "floot32", 1)
    assert.are.equal("te.cast", e.primitive)
    assert.matches("unknown dtype 'floot32'", e.message)
    e = err_of(tir.script.reduce, "prod", 1, {})
    assert.are.equal("T.reduce", e.primitive)
  end)

  it("a Lua error inside a user's callback stays the user's error", function()
    local A = te.placeholder({4}, "float32", "A")
    local ok, e = pcall(te.compute, {4}, function(i) local t = nil; return t.x end, "B")
    assert.is_false(ok)
    assert.matches("attempt to index", tostring(e))
    local _ = A
  end)

  it("T.Let and T.thread_binding check their arguments", function()
    local T = tir.script
    assert.matches("fn must be a function", err_of(T.Let, "x", 1, nil).message)
    assert.matches("name must be a string", err_of(T.Let, {}, 1, function(v) return v end).message)
    assert.matches("bounds must be integers", err_of(T.thread_binding, nil, "threadIdx.x").message)
    assert.matches("bounds must be integers", err_of(T.thread_binding, "x", 4, "threadIdx.x").message)
  end)

  it("tir.capture_prints needs a function", function()
    assert.matches("f must be a function", err_of(tir.capture_prints, 3).message)
    assert.are.equal("", tir.capture_prints(function() end)) -- capture state not left open
  end)

  it("tir.ops.conv / conv_plan / conv_out_size / ref_conv refuse non-tables and missing sizes", function()
    local X = te.placeholder({1, 8, 8, 4}, "float32", "X")
    local W = te.placeholder({3, 3, 4, 8}, "float32", "W")
    assert.matches("options must be a table", err_of(tir.ops.conv, X, W, "NHWC").message)
    assert.matches("options must be a table", err_of(tir.ops.conv_plan, X, W, 3).message)
    assert.are.equal(8, tir.ops.conv_out_size(8, 3, 1, 1, 1, 1))
    assert.are.equal(6, tir.ops.conv_out_size(8, 3))
    assert.are.equal(4, tir.ops.conv_out_size(8, 3, 2, 1))
    assert.matches("stride must be at least 1", err_of(tir.ops.conv_out_size, 8, 3, 0).message)
    assert.matches("k must be an integer", err_of(tir.ops.conv_out_size, 8).message)
    assert.matches("data must be a tir.NDArray", err_of(tir.testing.ref_conv, nil, nil, {}).message)
    local x = tir.nd.empty({1, 4, 4, 2}, "float32", "cpu")
    local w = tir.nd.empty({1, 1, 2, 2}, "float32", "cpu")
    assert.matches("opts must be a table", err_of(tir.testing.ref_conv, x, w, 5).message)
    assert.matches("opts.bias must be a tir.NDArray", err_of(tir.testing.ref_conv, x, w, {bias = 1}).message)
  end)

  it("a tuning database with damaged lines says so once on stderr (lookups skip those lines)", function()
    local db = os.tmpname()
    local f = assert(io.open(db, "w"))
    f:write('{not json\n{"workload": 1}\n')
    f:close()
    local script = ("local r = tir.tune.lookup('w:1x2x3', 'cuda', {db = %q}); tir.tune.best('w:1x2x3', 'cuda', {db = %q}); print(r)"):format(db, db)
    local p = assert(io.popen(("%s/tirlua -e %q 2>&1"):format(build, script)))
    local out = p:read("a")
    p:close()
    os.remove(db)
    local _, n = out:gsub("2 line%(s%) are not JSON records with a workload; skipped", "")
    assert.are.equal(1, n, out)
    assert.matches("nil\n$", out)
  end)

  it("pad_einsum names the iteration variable of a bad factor, counted from 1", function()
    local A = te.placeholder({15, 19}, "float32", "A")
    local B = te.placeholder({19, 17}, "float32", "B")
    local k = te.reduce_axis({0, 19}, "k")
    local C = te.compute({15, 17}, function(i, j) return te.sum(A[{i, k}] * B[{k, j}], {k}) end, "C")
    local sch = tir.Schedule(te.create_prim_func({A, B, C}))
    local e = err_of(sch.pad_einsum, sch, "C", {16, 0, 1})
    assert.matches("padding factor of iteration variable v_j %(number 2 of 3, counted from 1%) is 0", e.message)
  end)

  it("tir.cudnn.conv2d_plan names itself and has its documentation", function()
    local x = tir.nd.empty({1, 4, 4, 8}, "float16", "cpu")
    assert.matches("cudnn%.conv2d_plan", tostring(err_of(tir.cudnn.conv2d_plan, x, x, x, {stride = 0})))
    assert.matches("in cudnn%.conv2d:", tostring(err_of(tir.cudnn.conv2d, x, x, x, {stride = 0})))
    assert.matches("the fastest of what cuDNN offers", require("tir.repl").doc(tir.cudnn.conv2d_plan))
  end)

  it("a hand-written TMA kernel with a bad tensor map or destination fails at build time (not only at launch)", function()
    local T = tir.script
    local function kernel(descargs, dst_scope)
      return T.prim_func("tma_bad", {A = T.Buffer({256, 64}, "float16"), B = T.Buffer({64}, "float16")}, function(A, B)
        local _ = T.launch_thread("blockIdx.x", 1)
        local tx = T.launch_thread("threadIdx.x", 32)
        local S = T.allocate({8192}, "float16", dst_scope or "shared")
        local bar = T.allocate({1}, "uint64", "shared")
        local d = T.call("handle", "tma_descriptor", A.data, table.unpack(descargs))
        T.If(tir.eq(tx, 0), function()
          T.evaluate(T.call("void", "ptx_mbarrier_init", T.address_of(bar[{0}]), 1))
          T.evaluate(T.call("void", "ptx_fence_proxy_async"))
        end)
        T.evaluate(T.call("void", "tvm_storage_sync"))
        T.If(tir.eq(tx, 0), function()
          T.evaluate(T.call("void", "ptx_mbarrier_arrive_expect_tx", T.address_of(bar[{0}]), 8192))
          T.evaluate(T.call("void", "ptx_tma_load", T.address_of(S[{0}]), d, T.address_of(bar[{0}]), 0, 0))
        end)
        T.evaluate(T.call("void", "ptx_mbarrier_wait", T.address_of(bar[{0}]), 0))
        B[{tx}] = S[{tx}]
      end)
    end
    local function build(...) return tir.build(kernel(...), "cuda -arch=sm_90a", {compile = false, cache = false}) end
    assert.is_truthy(build({"float16", 0, 2, 256, 64, 64, 64}):get_source("cuda"):match("tir_tmap_0"))
    local cases = {
      {{"float16", 0, 2, 256, 64}, "rank 1..5"},
      {{"floot", 0, 2, 256, 64, 64, 64}, "unknown dtype 'floot'"},
      {{"float16", 0, 2, 256, 64, 0, 64}, "box dimension 0 is 0"},
      {{"float16", 128, 2, 256, 64, 64, 128}, "box dimension 1 %(128%) is larger than the tensor's %(64%)"},
    }
    for _, c in ipairs(cases) do
      local e = err_of(build, c[1])
      assert.are.equal("CodegenError", e.kind)
      assert.matches(c[2], e.message)
    end
    local e = err_of(build, {"float16", 0, 2, 256, 64, 64, 64}, "local")
    assert.matches("ptx_tma_load copies into shared memory: its destination must be address_of%(S%[i%]%) of a shared buffer, not of S", e.message)
  end)

  it("apply_trace: a misspelled primitive in the text is a tir.Error naming the trace's line", function()
    local A = te.placeholder({4, 4}, "float32", "A")
    local B = te.compute({4, 4}, function(i, j) return A[{i, j}] end, "B")
    local sch = tir.Schedule(te.create_prim_func({A, B}))
    local e = err_of(sch.apply_trace, sch, "local b0 = sch:get_block(\"B\")\nsch:spilt(b0)\n")
    assert.are.equal("apply_trace", e.primitive)
    assert.matches("the trace fails at trace:2: attempt to call a nil value %(method 'spilt'%)", e.message)
    -- a primitive's own tir.Error passes through unchanged
    e = err_of(sch.apply_trace, sch, "sch:get_block(\"nope\")\n")
    assert.are.equal("get_block", e.primitive)
  end)

  it("vector expressions keep their lanes consistent (TVM's Broadcast / Ramp / Cast / Select checks); bool constants are 0 or 1", function()
    local T = tir.script
    assert.matches("the value must be a scalar", err_of(T.Broadcast, T.Broadcast(1, 4), 4).message)
    assert.matches("must be scalars", err_of(T.Ramp, T.Ramp(0, 1, 4), 1, 4).message)
    assert.matches("must have one dtype", err_of(T.Ramp, 0, tir.const(1, "int64"), 4).message)
    assert.matches("a cast keeps the number of lanes", err_of(tir.cast, "float32x4", T.Broadcast(1, 8)).message)
    assert.matches("the condition has 4 lanes", err_of(tir.select, tir.eq(T.Ramp(0, 1, 4), T.Broadcast(0, 4)),
                                                       T.Broadcast(1.0, 8), T.Broadcast(2.0, 8)).message)
    assert.matches("a bool constant is true, false, 0 or 1, got 2", err_of(tir.const, 2, "bool").message)
    -- what stays valid
    assert.are.equal("float32x4", tir.cast("float32x4", T.Broadcast(1, 4)).dtype)
    assert.are.equal("float32x4", tir.cast("float32x4", 1).dtype)
    assert.are.equal("float32x8", tir.select(tir.eq(1, 1 + tir.var("x")), T.Broadcast(1.0, 8), T.Broadcast(2.0, 8)).dtype)
    assert.are.equal("bool", tir.const(1, "bool").dtype)
  end)

  it("te.reduce_axis with one bound says so", function()
    assert.matches("two bounds", err_of(te.reduce_axis, {4}, "k").message)
  end)

  it("tir.specialize refuses values outside the variable's dtype (no wrap-around)", function()
    local M = te.var("M")
    local A = te.placeholder({M, 4}, "float32", "A")
    local B = te.compute({M, 4}, function(i, j) return A[{i, j}] * 2 end, "B")
    local f = te.create_prim_func({A, B})
    local e = err_of(tir.specialize, f, {M = 1 << 31})
    assert.matches("2147483648 does not fit M's dtype int32", e.message)
    e = err_of(tir.specialize, f, {M = 1 << 40})
    assert.matches("1099511627776 does not fit", e.message)
    assert.matches("at least 1, got 0", err_of(tir.specialize, f, {M = 0}).message)
    local g = tir.specialize(f, {M = 0x7fffffff})
    assert.are.equal(0x7fffffff, g.params[1].shape[1].value)
    local M64 = te.var("M64", "int64")
    local A64 = te.placeholder({M64}, "float32", "A64")
    local B64 = te.compute({M64}, function(i) return A64[{i}] end, "B64")
    local g64 = tir.specialize(te.create_prim_func({A64, B64}), {M64 = 1 << 40})
    assert.are.equal(1 << 40, g64.params[1].shape[1].value)
  end)
end)
