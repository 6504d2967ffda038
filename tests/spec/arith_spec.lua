-- arith_spec.lua -- the arithmetic core: bounds, the canonical simplifier, proofs.  Where
-- compilers quietly go wrong, so besides fixed cases a randomized check compares every
-- simplified expression with the original by brute force over the variables' domains.
local tir = require("tir")

local i, j, k = tir.var("i"), tir.var("j"), tir.var("k")
local doms = {[i] = {0, 8}, [j] = {0, 16}, [k] = {0, 4}}

local function S(e, d) return tostring(tir.simplify(e, d or doms)) end

describe("canonical simplifier", function()
  it("removes split/fuse index arithmetic using variable bounds", function()
    assert.are.equal("i", S((i * 16 + j) // 16))
    assert.are.equal("j", S((i * 16 + j) % 16))
    assert.are.equal("j // 4", S(((i * 16 + j) // 4) % 4))
    assert.are.equal("k + j // 4", S((k * 4 + j) // 4))
    assert.are.equal("i * 16 + j", S((i * 16 + j) // 16 * 16 + (i * 16 + j) % 16))
    assert.are.equal("j", S(i * 16 + j - (i * 16 + j) // 16 * 16))
  end)
  it("collects like terms and folds constants", function()
    assert.are.equal("i * 2", S((i + j) * 2 - j * 2))
    assert.are.equal("i * 3 + 5", S(i + 2 + i * 2 + 3))
    assert.are.equal("0", S(i - i))
    assert.are.equal("15 - i", S(15 - i))
  end)
  it("divides out common factors", function()
    assert.are.equal("(i * 2 + 1) // 4", S((i * 4 + 2) // 8))
    assert.are.equal("1", S((i * 2 + 1) % 2))
    assert.are.equal("i // 2 * 2", S((i * 4) // 8 * 2))
  end)
  it("keeps what it cannot prove", function()
    local n = tir.var("n")
    assert.are.equal("(i + n) // 16", S((i + n) // 16))
    assert.are.equal("n % 4", S(n % 4))
  end)
  it("folds comparisons, min and max by bounds", function()
    assert.are.equal("T.bool(true)", S(tir.lt(i * 16 + j, 128)))
    assert.are.equal("T.bool(false)", S(tir.ge(i, 8)))
    assert.are.equal("T.lt(i * 16 + j, 100)", S(tir.lt(i * 16 + j, 100)))
    assert.are.equal("i + 2", S(tir.min(i + 2, i + 5)))
    assert.are.equal("j", S(tir.max(j, 0)))
  end)
  it("proves facts and bounds", function()
    assert.is_true(tir.can_prove(tir.lt(i * 16 + j, 128), doms))
    assert.is_false(tir.can_prove(tir.lt(i * 16 + j, 127), doms))
    assert.is_true(tir.can_prove(tir.eq((i * 16 + j) % 16, j), doms))
    local lo, hi = tir.const_int_bound((i * 16 + j) // 3, doms)
    assert.are.equal(0, lo)
    assert.are.equal(42, hi)
    lo, hi = tir.const_int_bound(tir.var("free") + 1)
    assert.are.equal(-2147483647, lo)
  end)
  it("never turns truncating division of possibly negative values into floor division", function()
    local n = tir.var("n")
    assert.are.equal("T.truncdiv(n, 4)", S(tir.truncdiv(n, 4)))
    assert.are.equal("i // 4", S(tir.truncdiv(i, 4))) -- i >= 0: equal
  end)
end)

-- A tiny evaluator of integer expressions (floor semantics as in TIR).
local function fdiv(a, b) return a // b end
local function eval(e, env)
  local kd = e.kind
  if kd == "IntImm" then return e.value end
  if kd == "Var" then return env[e] end
  if kd == "Add" then return eval(e.a, env) + eval(e.b, env) end
  if kd == "Sub" then return eval(e.a, env) - eval(e.b, env) end
  if kd == "Mul" then return eval(e.a, env) * eval(e.b, env) end
  if kd == "FloorDiv" then return fdiv(eval(e.a, env), eval(e.b, env)) end
  if kd == "FloorMod" then return eval(e.a, env) % eval(e.b, env) end
  if kd == "Min" then return math.min(eval(e.a, env), eval(e.b, env)) end
  if kd == "Max" then return math.max(eval(e.a, env), eval(e.b, env)) end
  error("eval: " .. kd)
end

describe("canonical simplifier, randomized", function()
  it("agrees with the original expression on every point of the domain", function()
    local rng = 12345
    local function rand(n)
      rng = (rng * 1103515245 + 12345) % 2147483648
      return rng % n
    end
    local vars = {i, j, k}
    local function gen(depth)
      local c = rand(depth > 3 and 2 or 9)
      if c == 0 then return vars[rand(3) + 1] end
      if c == 1 then return tir.const(rand(40) - 8) end
      local a = gen(depth + 1)
      if c == 2 or c == 3 then return a + gen(depth + 1) end
      if c == 4 then return a - gen(depth + 1) end
      if c == 5 then return a * (rand(7) - 2) end
      if c == 6 then return a // (rand(12) + 1) end
      if c == 7 then return a % (rand(12) + 1) end
      return (rand(2) == 0) and tir.min(a, gen(depth + 1)) or tir.max(a, gen(depth + 1))
    end
    local checked = 0
    for _ = 1, 800 do
      local e = gen(0)
      local s = tir.simplify(e, doms)
      for a = 0, 7 do
        for b = 0, 15, 3 do
          for c = 0, 3 do
            local env = {[i] = a, [j] = b, [k] = c}
            local want, got = eval(e, env), eval(s, env)
            if want ~= got then
              error(("simplify(%s) = %s differs at i=%d j=%d k=%d: %d vs %d"):format(tostring(e), tostring(s), a, b, c, want, got))
            end
            checked = checked + 1
          end
        end
      end
    end
    assert.is_true(checked > 100000)
  end)
end)

-- The digits of one index merge back (TVM's canonical simplifier keeps index terms as splits
-- floormod(floordiv(E, lo), hi / lo); src/arith/canonical_simplify.cc).
describe("canonical simplifier, split merging", function()
  local x, n = tir.var("x"), tir.var("n")
  it("merges touching digits of one expression", function()
    assert.are.equal("x % 96", S(x // 32 % 3 * 32 + x % 32, {}))
    assert.are.equal("x", S(x // 32 * 32 + x % 32, {}))
    assert.are.equal("x", S(x // 32 % 3 * 32 + x % 32 + x // 96 * 96, {}))
    assert.are.equal("x % 32", S((x // 8) % 4 * 8 + (x // 2) % 4 * 2 + x % 2, {}))
    assert.are.equal("x // 2 % 16", S((x // 8) % 4 * 4 + (x // 2) % 4, {}))
    assert.are.equal("(x + n) % 96", S((x + n) // 32 % 3 * 32 + (x + n) % 32, {}))
    assert.are.equal("x % 96 * 2", S(x // 32 % 3 * 64 + x % 32 * 2, {}))
    -- digits that do not touch stay apart
    assert.are.equal("x // 64 % 3 * 32 + x % 32", S(x // 64 % 3 * 32 + x % 32, {}))
  end)
  it("uses bounds on the merged split", function()
    assert.are.equal("x", S(x // 32 % 3 * 32 + x % 32, {[x] = {0, 96}}))
    assert.are.equal("x * 4", S((x * 4) // 32 % 3 * 32 + (x * 4) % 32, {[x] = {0, 10}}))
  end)
  it("normalizes a division of a modulo into a split", function()
    assert.are.equal("x // 32 % 3", S(x % 96 // 32, {}))
    assert.are.equal("x // 8 % 4", S(x // 4 % 8 // 2, {}))
    assert.are.equal("x % 96", S(x % 96 // 32 * 32 + x % 32, {}))
  end)
  it("agrees with the original on random digit sums, negative values included", function()
    local rng = 777
    local function rand(m)
      rng = (rng * 1103515245 + 12345) % 2147483648
      return rng % m
    end
    local cs = {1, 2, 3, 4, 6, 8}
    for _ = 1, 300 do
      -- E = a*x + b, then a chain of digits lo1 < lo2 < ... with random scales
      local E = x * (rand(3) + 1) + (rand(9) - 4)
      local lo, e, ref = 1, tir.const(0), {}
      for _ = 1, rand(3) + 1 do
        local w = cs[rand(#cs) + 1]
        local scale = lo * (rand(4) == 0 and 2 or 1)
        local d = (lo == 1) and (E % w) or (E // lo % w)
        e = e + d * scale
        lo = lo * w
      end
      if rand(2) == 0 then e = e + E // lo * lo end
      local s = tir.simplify(e, {[x] = {-50, 50}})
      for v = -50, 49 do
        local want, got = eval(e, {[x] = v}), eval(s, {[x] = v})
        if want ~= got then error(("simplify(%s) = %s differs at x=%d: %d vs %d"):format(tostring(e), tostring(s), v, want, got)) end
      end
    end
  end)
end)

describe("canonical simplifier, differences of divisions", function()
  local x, c = tir.var("x"), tir.var("c")
  it("folds floordiv(A + k, d) - floordiv(A, d) with the bounds (TVM rewrite_simplify)", function()
    assert.are.equal("1", S((c * 20 + 19) // 16 - (c * 20) // 16, {[c] = {0, 2}}))
    assert.are.equal("23", S((c * 360 + 359) // 16 - (c * 360) // 16 + 1, {[c] = {0, 2}}))
    assert.are.equal("(x % 16 + 5) // 16", S((x + 5) // 16 - x // 16, {}))
  end)
  it("agrees with the original on random differences", function()
    local rng = 99
    local function rand(m)
      rng = (rng * 1103515245 + 12345) % 2147483648
      return rng % m
    end
    for _ = 1, 300 do
      local d = ({2, 3, 4, 8, 16})[rand(5) + 1]
      local s = ({1, 2, 4})[rand(3) + 1]
      local a = x * (rand(40) - 10) + (rand(30) - 15)
      local e = (a + rand(40)) // (d * s) - (a * s) // (d * s * s) + x // (rand(5) + 1)
      local sd = tir.simplify(e, {[x] = {-20, 20}})
      for v = -20, 19 do
        local want, got = eval(e, {[x] = v}), eval(sd, {[x] = v})
        if want ~= got then error(("simplify(%s) = %s differs at x=%d: %d vs %d"):format(tostring(e), tostring(sd), v, want, got)) end
      end
    end
  end)
end)
