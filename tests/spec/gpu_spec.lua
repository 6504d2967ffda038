-- gpu_spec.lua -- end-to-end checks on a real GPU (#gpu): kernels built by tirlua run,
-- give float64-reference results at real and odd sizes, reject bad arguments before
-- launch, and time.  Without a GPU every test is reported pending with the reason.
-- On the GPU machine: TIRLUA_LUA_MODULES=.carry/lua build/tirlua tests/run_busted.lua --run=gpu
local tir = require("tir")
local te = tir.te

local dev = tir.device("cuda", 0)
local has_gpu, why = dev:exists()

local function matmul(M, N, K, tile)
  tile = tile or 16
  local A = te.placeholder({M, K}, "float32", "A")
  local B = te.placeholder({K, N}, "float32", "B")
  local k = te.reduce_axis({0, K}, "k")
  local C = te.compute({M, N}, function(i, j) return te.sum(A[{i, k}] * B[{k, j}], {k}) end, "C")
  local sch = tir.Schedule(te.create_prim_func({A, B, C}))
  local i, j, kk = sch:get_loops(sch:get_block("C"))
  local bi, ti = sch:split(i, {nil, tile})
  local bj, tj = sch:split(j, {nil, tile})
  sch:reorder(bi, bj, ti, tj, kk)
  sch:bind(bi, "blockIdx.y"); sch:bind(bj, "blockIdx.x")
  sch:bind(ti, "threadIdx.y"); sch:bind(tj, "threadIdx.x")
  return tir.build(sch.mod, "cuda"), sch
end

local function check_matmul(M, N, K, tile)
  local mod = matmul(M, N, K, tile)
  local a = tir.nd.random({M, K}, "float32", dev, {seed = M + 7})
  local b = tir.nd.random({K, N}, "float32", dev, {seed = N + 13})
  local c = tir.nd.empty({M, N}, "float32", dev)
  mod(a, b, c)
  return tir.testing.assert_allclose(c, tir.testing.ref_matmul(a, b), {rtol = 1e-4, atol = 2e-6 * math.sqrt(K)})
end

describe("#gpu end to end", function()
  if not has_gpu then
    it("is skipped: " .. tostring(why), function() pending("no GPU: " .. tostring(why)) end)
    return
  end

  it("runs the 1024^3 matmul and matches the float64 reference", function()
    local st = check_matmul(1024, 1024, 1024)
    assert.is_true(st.max_abs < 1e-3)
  end)

  it("handles sizes the tiles do not divide (predicated blocks)", function()
    check_matmul(1000, 1000, 1000)
    check_matmul(100, 130, 70)
    check_matmul(1, 257, 33)
    check_matmul(17, 1, 5, 8)
  end)

  it("agrees with the CPU interpreter bit for bit on small inputs of an integer matmul", function()
    local M, N, K = 40, 24, 19
    local A = te.placeholder({M, K}, "int32", "A")
    local B = te.placeholder({K, N}, "int32", "B")
    local k = te.reduce_axis({0, K}, "k")
    local C = te.compute({M, N}, function(i, j) return te.sum(A[{i, k}] * B[{k, j}], {k}) end, "C")
    local sch = tir.Schedule(te.create_prim_func({A, B, C}))
    local i, j = sch:get_loops(sch:get_block("C"))
    local bi, ti = sch:split(i, {nil, 8})
    sch:bind(bi, "blockIdx.x"); sch:bind(ti, "threadIdx.y"); sch:bind(j, "threadIdx.x")
    local mod = tir.build(sch.mod, "cuda")
    local a = tir.nd.random({M, K}, "int32", tir.cpu(), {seed = 1})
    local b = tir.nd.random({K, N}, "int32", tir.cpu(), {seed = 2})
    local c_cpu = tir.nd.empty({M, N}, "int32")
    tir.interpret(sch.mod, {a, b, c_cpu})
    local c_gpu = tir.nd.empty({M, N}, "int32", dev)
    mod(a:to(dev), b:to(dev), c_gpu)
    assert.are.same(c_cpu:to_table(), c_gpu:to_table())
  end)

  it("runs a chain of computes as several kernels with a device temporary", function()
    local n = 4096
    local X = te.placeholder({n}, "float32", "X")
    local Y = te.compute({n}, function(i) return X[{i}] * 2.0 + 1.0 end, "Y")
    local Z = te.compute({n}, function(i) return tir.max(Y[{i}], 0.0) end, "Z")
    local sch = tir.Schedule(te.create_prim_func({X, Z}))
    for _, name in ipairs({"Y", "Z"}) do
      local l = sch:get_loops(sch:get_block(name))
      local bx, tx = sch:split(l, {nil, 256})
      sch:bind(bx, "blockIdx.x"); sch:bind(tx, "threadIdx.x")
    end
    local mod = tir.build(sch.mod, "cuda")
    assert.are.equal(2, #mod:kernels())
    local x = tir.nd.random({n}, "float32", tir.cpu(), {seed = 5})
    local z = tir.nd.empty({n}, "float32", dev)
    mod(x:to(dev), z)
    local want = tir.nd.empty({n}, "float32")
    tir.interpret(sch.mod, {x, want})
    tir.testing.assert_allclose(z, want, {rtol = 1e-6})
  end)

  it("rejects wrong arguments before launch", function()
    local mod = matmul(64, 64, 64)
    local a = tir.nd.random({64, 64}, "float32", dev)
    local b = tir.nd.random({64, 64}, "float32", dev)
    local c = tir.nd.empty({64, 64}, "float32", dev)
    assert.has_error(function() mod(a, b) end)
    local ok, e = pcall(mod, a, b, tir.nd.empty({64, 32}, "float32", dev))
    assert.is_false(ok)
    assert.matches("argument 3 %(C%): expected shape %(64, 64%), got %(64, 32%)", tostring(e))
    ok, e = pcall(mod, a, tir.nd.empty({64, 64}, "float16", dev), c)
    assert.is_false(ok)
    assert.matches("argument 2 %(B%): expected dtype float32, got float16", tostring(e))
    ok, e = pcall(mod, a, b, tir.nd.empty({64, 64}, "float32"))
    assert.is_false(ok)
    assert.matches("argument 3 %(C%) is on the host", tostring(e))
  end)

  it("times with CUDA events and reports kernel resources", function()
    local mod = matmul(512, 512, 512)
    local a = tir.nd.random({512, 512}, "float32", dev)
    local b = tir.nd.random({512, 512}, "float32", dev)
    local c = tir.nd.empty({512, 512}, "float32", dev)
    local t, samples = mod:time_evaluator({number = 5, repeat_ = 3})(a, b, c)
    assert.is_true(t > 0 and t < 1)
    assert.are.equal(3, #samples)
    local r = mod:resources()
    assert.is_true(r.registers > 0)
    assert.are.equal(0, r.local_bytes)
  end)

  it("copies arrays both ways and round-trips .npy through the device", function()
    local a = tir.nd.random({33, 17}, "float16", tir.cpu(), {seed = 3})
    local d = a:to(dev)
    local back = d:to(tir.cpu())
    assert.are.same(a:to_table(), back:to_table())
    local path = os.tmpname()
    d:save(path)
    local l = tir.nd.load(path, dev)
    os.remove(path)
    assert.are.same(a:to_table(), l:to(tir.cpu()):to_table())
  end)
end)
