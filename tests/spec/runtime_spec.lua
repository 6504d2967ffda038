-- runtime_spec.lua -- arrays, devices, .npy files, references, and a built module's
-- argument checks (they run before any GPU is touched, so they are tested here too).
local tir = require("tir")
local U = require("spec_util")

describe("NDArray", function()
  it("is created from shapes, tables and seeds, deterministically", function()
    local a = tir.nd.random({3, 4}, "float32", tir.cpu(), {seed = 42})
    local b = tir.nd.random({3, 4}, "float32", tir.cpu(), {seed = 42})
    assert.are.same(a:to_table(), b:to_table())
    assert.are.same({3, 4}, a:shape())
    assert.are.equal("float32", a:dtype())
    assert.are.equal("cpu", a:device())
    local nonzero = 0
    for _, row in ipairs(a:to_table()) do for _, v in ipairs(row) do
      assert.is_true(v >= -1 and v < 1)
      if v ~= 0 then nonzero = nonzero + 1 end
    end end
    assert.are.equal(12, nonzero)
    local t = tir.nd.array({{1, 2}, {3, 4}}, "int8")
    assert.are.same({{1, 2}, {3, 4}}, t:to_table())
    assert.are.equal(3, t:get({1, 0}))
    t:set({1, 0}, -7)
    assert.are.equal(-7, t:get({1, 0}))
    -- values int8 cannot hold are refused, not wrapped
    U.expect_error(function() t:set({1, 0}, 300) end, "NDArray:set", "300, outside int8's range [-128, 127]")
    assert.are.equal(-7, t:get({1, 0}))
  end)
  it("starts uninitialized as NaN so unwritten outputs show", function()
    local e = tir.nd.empty({2}, "float32")
    assert.is_true(e:get(0) ~= e:get(0))
  end)
  it("round-trips .npy files", function()
    for _, dt in ipairs({"float32", "float16", "int8", "int64", "uint8", "bool"}) do
      local a = tir.nd.random({5, 3, 2}, dt, tir.cpu(), {seed = 9})
      local path = os.tmpname()
      a:save(path)
      local b = tir.nd.load(path)
      os.remove(path)
      assert.are.equal(dt, b:dtype())
      assert.are.same(a:to_table(), b:to_table())
    end
    U.expect_error(function() tir.nd.load("/nonexistent/file.npy") end, "IOError", "cannot open")
  end)
  it("rejects bad shapes, dtypes and tables", function()
    U.expect_error(function() tir.nd.empty({2, -1}) end, "shape[2] is negative")
    U.expect_error(function() tir.nd.empty({2}, "float17") end, "unknown dtype")
    U.expect_error(function() tir.nd.array({{1, 2}, {3}}) end, "ragged")
    U.expect_error(function() tir.nd.empty({2}, "float32", "tpu") end, "unknown device type 'tpu'")
  end)
end)

describe("devices without a GPU", function()
  local ok = tir.device("cuda", 0):exists()
  if ok then
    it("(a GPU is present: covered by gpu_spec)", function() end)
    return
  end
  it("say why CUDA is unusable and fail GPU allocations clearly", function()
    local exists, why = tir.device("cuda", 0):exists()
    assert.is_false(exists)
    assert.is_string(why)
    U.expect_error(function() tir.nd.empty({4}, "float32", tir.cuda(0)) end, "CudaError")
  end)
end)

describe("a built module", function()
  local sch = tir.Schedule(U.matmul(32, 32, 32))
  U.bind_2d(sch, "C")
  local mod = tir.build(sch.mod, "cuda", {compile = false})
  local a, b, c = tir.nd.random({32, 32}), tir.nd.random({32, 32}), tir.nd.empty({32, 32})
  it("checks argument count, shapes, dtypes and devices before launching", function()
    U.expect_error(function() mod(a, b) end, "takes 3 argument(s), got 2")
    U.expect_error(function() mod(a, b, tir.nd.empty({32, 31})) end, "argument 3 (C): expected shape (32, 32), got (32, 31)")
    U.expect_error(function() mod(a, tir.nd.empty({32, 32}, "float64"), c) end, "argument 2 (B): expected dtype float32, got float64")
    U.expect_error(function() mod(a, b, c) end, "argument 1 (A) is on the host (cpu); expected an array on the GPU")
    U.expect_error(function() mod(a, "x", c) end, "argument 2 (B) must be a tir.NDArray")
  end)
  it("describes itself and keeps every stage", function()
    assert.matches("tir.Module%(main, sm_%d+, 1 kernel%(s%)%)", tostring(mod))
    assert.matches("launch main_kernel grid%(2, 2, 1%) block%(16, 16, 1%) args%(A, B, C%)", mod:get_source("host"))
    assert.matches("T.launch_thread", mod:get_source("ir"))
    U.expect_error(function() mod:get_source("ptx") end, "no ptx source")
  end)
end)

describe("references", function()
  it("ref_matmul matches a naive float64 product, with and without transposes", function()
    local a = tir.nd.random({5, 7}, "float32", tir.cpu(), {seed = 1})
    local b = tir.nd.random({7, 3}, "float32", tir.cpu(), {seed = 2})
    local c = tir.testing.ref_matmul(a, b)
    for i = 0, 4 do for j = 0, 2 do
      local s = 0
      for k = 0, 6 do s = s + a:get({i, k}) * b:get({k, j}) end
      assert.is_true(math.abs(s - c:get({i, j})) < 1e-12)
    end end
    local at = tir.nd.empty({7, 5}, "float32")
    for i = 0, 4 do for k = 0, 6 do at:set({k, i}, a:get({i, k})) end end
    tir.testing.assert_allclose(tir.testing.ref_matmul(at, b, true, false), c, {rtol = 1e-12})
  end)
  it("assert_allclose reports where and by how much", function()
    local x = tir.nd.array({1.0, 2.0, 3.0})
    local y = tir.nd.array({1.0, 2.5, 3.0})
    U.expect_error(function() tir.testing.assert_allclose(x, y, {rtol = 1e-3}) end,
      "1 of 3 elements differ", "worst at [1]: actual 2, desired 2.5", "max abs error 0.5")
    U.expect_error(function() tir.testing.assert_allclose(tir.nd.array({0/0}), tir.nd.array({1.0})) end, "(1 NaN)")
    tir.testing.assert_allclose(x, {1.0, 2.0, 3.0})
  end)
end)

describe("NDArray:reshape", function()
  it("views the same memory with another shape and keeps it alive", function()
    local a = tir.nd.random({2, 3, 4}, "float32", tir.cpu(), {seed = 1})
    local v = a:reshape({6, 4})
    assert.are.same({6, 4}, v:shape())
    assert.are.equal(a:get(1, 2, 3), v:get(5, 3))
    v:set(0, 1, 42.0)
    assert.are.equal(42.0, a:get(0, 0, 1)) -- writes through the view are the array's
    local flat = a:reshape({24})
    a = nil
    collectgarbage()
    collectgarbage()
    assert.are.equal(42.0, flat:get(1)) -- the base's memory lives as long as a view of it
    assert.are.equal(24, #flat:to_table())
  end)
  it("refuses shapes of another size and non-integer extents", function()
    local a = tir.nd.empty({4, 4}, "float16", tir.cpu())
    U.expect_error(function() a:reshape({5, 3}) end, "ValueError in nd.reshape", "the new shape has 15 elements, the array 16")
    U.expect_error(function() a:reshape({2, 8.5}) end, "dimension 2 must be an integer")
    U.expect_error(function() a:reshape({-4, -4}) end, "is not a valid extent")
  end)
end)
