-- vectorize_guard_spec.lua -- vectorize_loop's rules for guarded and gathered copies (what the
-- im2col / implicit-GEMM tiles need): floordiv / floormod of an aligned ramp by a multiple of
-- the lane count, comparisons that are the same in every lane, and if_then_else with such a
-- condition become one vector copy (zero-filled when the condition fails); everything else stays
-- scalar.  Each kernel runs on the simulator against the interpreter of the unlowered function.
local tir = require("tir")
local te = tir.te

-- B[i, j] = value(i, j) over {rows, cols}, j split by 8 and vectorized, i on threads
local function kernel(rows, cols, dtype, value, inputs)
  local B = te.compute({rows, cols}, value, "B")
  local f = te.create_prim_func({inputs[1], B})
  local sch = tir.Schedule(f)
  local blk = sch:get_block("B")
  local i, j = sch:get_loops(blk)
  local jo, jv = sch:split(j, {nil, 8})
  sch:bind(i, "threadIdx.x")
  sch:vectorize(jv)
  return f, sch
end

local function check(f, sch)
  local mod = tir.build(sch.mod, "cuda -arch=sm_80", {compile = false})
  local args = tir.testing.random_args(f, 3)
  local rep = tir.simulate(mod, args, {reference = f})
  assert.are.equal(0, rep.n_issues)
  return mod:get_source("cuda")
end

describe("vectorize: guarded and gathered copies", function()
  it("if_then_else with a bound check on aligned blocks is one 16-byte copy or zeros", function()
    local A = te.placeholder({30, 40}, "float16", "A")
    local f, sch = kernel(32, 48, "float16", function(i, j)
      return tir.if_then_else(tir.all(tir.lt(i, 30), tir.lt(j, 40)), A[{i, j}], tir.const(0, "float16"))
    end, {A})
    local src = check(f, sch)
    assert.truthy(src:find("*(uint4*)(B + ", 1, true), src)
    assert.truthy(src:find(": uint4{};", 1, true), src)
  end)

  it("k // C and k % C of a vector of k stay contiguous when C is a multiple of the lanes (im2col's channels)", function()
    local A = te.placeholder({4, 3, 16}, "float16", "A")
    local f, sch = kernel(4, 48, "float16", function(i, k)
      local r, c = k // 16, k % 16
      return tir.if_then_else(tir.lt(r, 3), A[{i, r, c}], tir.const(0, "float16"))
    end, {A})
    local src = check(f, sch)
    assert.truthy(src:find("*(uint4*)(B + ", 1, true), src)
    assert.falsy(src:find("B%[[^%]]+%] = "), src) -- no element-wise store left
  end)

  it("stays scalar (and right) when a lane-dependent condition or a channel count not a multiple of 8 breaks the blocks", function()
    local A = te.placeholder({30, 40}, "float16", "A")
    -- j < 37: lanes of one vector differ
    local f, sch = kernel(32, 48, "float16", function(i, j)
      return tir.if_then_else(tir.lt(j, 37), A[{i % 30, j % 40}], tir.const(0, "float16"))
    end, {A})
    local src = check(f, sch)
    assert.falsy(src:find("uint4", 1, true), src)
    -- k % 12 as the outer index (a transposing gather): a vector of 8 may wrap, and is no ramp
    local A2 = te.placeholder({4, 12, 4}, "float16", "A2")
    local f2, sch2 = kernel(4, 48, "float16", function(i, k) return A2[{i, k % 12, k // 12}] end, {A2})
    local src2 = check(f2, sch2)
    assert.falsy(src2:find("uint4", 1, true), src2)
  end)

  it("the ramp's start must be provably aligned", function()
    local A = te.placeholder({4, 64}, "float16", "A")
    -- (j + 3) % 16 over a vector of 8 at an aligned j: the start j + 3 is not a multiple of 8
    local f, sch = kernel(4, 48, "float16", function(i, j) return A[{i, (j + 3) % 16 + 8}] end, {A})
    local src = check(f, sch)
    assert.falsy(src:find("uint4", 1, true), src)
  end)
end)
