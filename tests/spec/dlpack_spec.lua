-- dlpack_spec.lua -- DLPack from Lua: NDArray -> tir.DLPack capsule -> NDArray shares memory;
-- versioned capsules; a capsule is consumed once; an unconsumed capsule's deleter runs when it
-- is collected (ASan checks nothing leaks); bad arguments.  The C side (dtypes, strides,
-- deleter contract) is tests/unit/test_dlpack.c; the embedding is scripts/examples/embed.c.
local tir = require("tir")

describe("DLPack", function()
  for _, versioned in ipairs({false, true}) do
    it(("round-trips an array without copying (%s)"):format(versioned and "DLManagedTensorVersioned" or "DLManagedTensor"), function()
      local a = tir.nd.array({{1, 2, 3}, {4, 5, 6}}, "int16")
      local cap = a:to_dlpack({versioned = versioned})
      assert.are.equal(versioned, cap:versioned())
      local b = tir.nd.from_dlpack(cap)
      assert.are.same({2, 3}, b:shape())
      assert.are.equal("int16", b:dtype())
      b:set(4, -7)
      assert.are.equal(-7, a:get(4)) -- the same memory
      a = nil
      collectgarbage()
      assert.are.equal(6, b:get(5)) -- b keeps a's memory alive through the capsule
      assert.truthy(tostring(cap):find("consumed", 1, true))
    end)
  end

  it("imports a capsule once, refuses other values and bad options", function()
    local a = tir.nd.empty({4}, "float32")
    local cap = a:to_dlpack()
    tir.nd.from_dlpack(cap)
    local ok, e = pcall(tir.nd.from_dlpack, cap)
    assert.is_false(ok)
    assert.truthy(tostring(e):find("already consumed", 1, true))
    ok, e = pcall(tir.nd.from_dlpack, {})
    assert.is_false(ok)
    assert.are.equal("TypeError", e.kind)
    ok, e = pcall(a.to_dlpack, a, {version = 1})
    assert.is_false(ok)
    assert.truthy(tostring(e):find("unknown option", 1, true))
    ok, e = pcall(tir.nd.from_dlpack, a:to_dlpack(), {versioned = "yes"})
    assert.is_false(ok)
  end)

  it("runs the deleter of a capsule nobody imported (collected), and of a released one only in C", function()
    local a = tir.nd.empty({1000}, "float64")
    for _ = 1, 50 do local _ = a:to_dlpack() end
    collectgarbage()
    local cap = a:to_dlpack()
    local p = cap:release() -- the C caller owns it now; importing the pointer takes it over
    assert.are.equal("userdata", type(p))
    local b = tir.nd.from_dlpack(p)
    assert.are.same({1000}, b:shape())
    local ok = pcall(cap.release, cap)
    assert.is_false(ok)
  end)

  it("#gpu shares CUDA memory and a kernel writes through the view", function()
    local dev = tir.device("cuda", 0)
    local a = tir.nd.random({256}, "float32", dev, {seed = 3})
    local b = tir.nd.from_dlpack(a:to_dlpack())
    local te = tir.te
    local X = te.placeholder({256}, "float32", "X")
    local Y = te.compute({256}, function(i) return X[{i}] * 0.0 + 5.0 end, "Y")
    local sch = tir.Schedule(te.create_prim_func({X, Y}))
    local bi, ti = sch:split(sch:get_loops(sch:get_block("Y")), {nil, 64})
    sch:bind(bi, "blockIdx.x")
    sch:bind(ti, "threadIdx.x")
    local mod = tir.build(sch.mod, "cuda")
    local x = tir.nd.random({256}, "float32", dev, {seed = 4})
    mod(x, b)
    assert.are.equal(5.0, a:to("cpu"):get(100))
  end)
end)
