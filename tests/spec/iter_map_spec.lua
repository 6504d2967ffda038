-- iter_map_spec.lua -- affine iteration maps (tir.arith.detect_iter_map, subspace_divide):
-- small cases of fused, split, reordered, non-bijective, overlapping, non-affine bindings
-- and predicates (facts from TVM tests/python/arith/test_arith_iter_affine_map.py), and
-- the property that split/fuse/reorder keep every block's bindings bijective.
local tir = require("tir")
local U = require("spec_util")
local A = tir.arith

local function var(name) return tir.var(name) end

local function ok(bindings, iters, opts)
  local r, why = A.detect_iter_map(bindings, iters, opts)
  assert(r, "expected an affine map, got: " .. tostring(why))
end

local function bad(bindings, iters, opts, pat)
  local r, why = A.detect_iter_map(bindings, iters, opts)
  assert(not r, "expected a failure")
  assert(type(why) == "string" and #why > 0, "a reason is given")
  if pat then assert(why:find(pat, 1, true), ("reason %q lacks %q"):format(why, pat)) end
end

describe("detect_iter_map", function()
  local i, j, k, f, n = var("i"), var("j"), var("k"), var("f"), var("n")

  it("accepts identity, reordered and unit bindings", function()
    ok({i, j}, {{i, 4}, {j, 8}})
    ok({j, i}, {{i, 4}, {j, 8}})
    ok({i, j}, {{i, 4}, {j, 8}}, {extents = {4, 8}})
    ok({tir.const(0), i}, {{i, 4}, {j, 1}}) -- an unused extent-1 loop is fine
    ok({j}, {{j, 1}}, {extents = {1}})
  end)

  it("accepts split bindings (products of chained extents)", function()
    ok({i * 16 + j}, {{i, 4}, {j, 16}}, {extents = {64}})
    ok({i * 32 + j * 4 + k}, {{i, 4}, {j, 8}, {k, 4}}, {extents = {128}})
    ok({j + i * 16}, {{i, 4}, {j, 16}}) -- order of the terms does not matter
    ok({k * 32 + i * 8 + j}, {{i, 4}, {j, 8}, {k, 2}}) -- loops given in another order
  end)

  it("accepts fused bindings and a split of a fuse", function()
    ok({f // 8, f % 8}, {{f, 32}}, {extents = {4, 8}})
    ok({f // 24, f // 4 % 6, f % 4}, {{f, 48}}, {extents = {2, 6, 4}})
    ok({(f // 16) * 16 + f % 16}, {{f, 64}}) -- pieces of one source recombine
    -- fuse(i: 8, j: 4) then split by 16: the fused index is i0 * 16 + i1
    ok({(i * 16 + j) // 4, (i * 16 + j) % 4}, {{i, 2}, {j, 16}}, {extents = {8, 4}})
  end)

  it("accepts offsets, free symbols and loops that do not start at 0", function()
    ok({i + 1}, {{i, 4}}, {extents = {4}})
    ok({i + n, j}, {{i, 4}, {j, 3}})
    ok({i}, {{i, 4, min = 2}}, {extents = {4}})
  end)

  it("rejects bindings that are not bijective", function()
    bad({i}, {{i, 4}, {j, 8}}, nil, "loop variable j (extent 8) is not used")
    bad({i, i}, {{i, 4}}, nil, "overlap")
    bad({i // 2}, {{i, 8}}, nil, "not a bijection")
    bad({i // 2, i % 4}, {{i, 8}}, nil, "overlap")
    bad({f // 3, f % 3}, {{f, 8}}, nil, "not a bijection")
    bad({i}, {{i, 4}}, {extents = {8}}, "covers 4 values but its iteration domain has extent 8")
  end)

  it("accepts surjective maps only at the surjective level", function()
    local s = {level = "surjective"}
    ok({i}, {{i, 4}, {j, 8}}, s)
    ok({i // 2}, {{i, 8}}, s)
    bad({i // 2, i % 4}, {{i, 8}}, s, "overlap")
    bad({i // 3}, {{i, 8}}, s)
  end)

  it("rejects non-affine bindings with the reason", function()
    bad({i * j}, {{i, 4}, {j, 8}}, nil, "product of two loop variables")
    bad({i * i}, {{i, 4}}, nil, "product of two loop variables")
    bad({i * n}, {{i, 4}}, nil, "scaled by a non-constant")
    bad({tir.min(i, 3)}, {{i, 4}}, nil, "not an affine function")
    bad({i // j}, {{i, 4}, {j, 8}}, nil, "divisor must be a positive constant")
    bad({i * 2}, {{i, 4}}, nil, "scaled iterator")
    bad({3 - i}, {{i, 4}}, nil, "non-positive coefficient")
    bad({i * 16 + j}, {{i, 4}, {j, 8}}, nil, "do not fuse")
    bad({(i + n) // 2}, {{i, 4}}, nil, "symbolic offset inside a division")
    bad({(i + 1) // 2}, {{i, 4}}, {level = "surjective"}, "offset is not a multiple of the divisor")
    local B = tir.buffer("B", {4}, "int32")
    bad({B[{i}]}, {{i, 4}}, nil, "not an affine function")
  end)

  it("uses predicates of non-dividing splits", function()
    local p = tir.lt(i * 16 + j, 50)
    ok({i * 16 + j}, {{i, 4}, {j, 16}}, {predicate = p, extents = {50}})
    bad({i * 16 + j}, {{i, 4}, {j, 16}}, {extents = {50}}, "covers 64 values")
    ok({i}, {{i, 16}}, {predicate = tir.lt(i, 10), extents = {10}})
    ok({i - 2}, {{i, 16}}, {predicate = tir.all(tir.ge(i, 2), tir.lt(i, 10)), extents = {8}})
    -- fuse(12, 10) = 120, split by 16 with a predicate, then the fused index split back
    local q = tir.lt(i * 16 + j, 120)
    ok({(i * 16 + j) // 10, (i * 16 + j) % 10}, {{i, 8}, {j, 16}}, {predicate = q, extents = {12, 10}})
    -- two predicates of a two-level non-dividing split nest
    local r = tir.all(tir.lt(j * 4 + k, 10), tir.lt(i * 10 + j * 4 + k, 25))
    ok({i * 10 + j * 4 + k}, {{i, 3}, {j, 3}, {k, 4}}, {predicate = r, extents = {25}})
  end)

  it("rejects predicates it cannot use", function()
    bad({i}, {{i, 16}}, {predicate = tir.eq(i % 2, 0)}, "not a conjunction")
    bad({i}, {{i, 16}}, {predicate = tir.lt(i, n)}, "non-constant")
    bad({i}, {{i, 16}}, {predicate = tir.lt(i, 0)}, "no iterations")
    local a, b, c = var("a"), var("b"), var("c")
    -- {b, c} and {a, b} overlap without one containing the other (TVM CheckConstraints)
    local x, y = tir.lt(a * 2 + b, 3), tir.lt(b * 4 + c, 7)
    bad({a * 8 + b * 4 + c}, {{a, 2}, {b, 2}, {c, 4}}, {predicate = tir.all(y, x)})
    bad({a * 8 + b * 4 + c}, {{a, 2}, {b, 2}, {c, 4}}, {predicate = tir.all(x, y)}, "could not normalize")
    -- a predicate on a sum whose inner loop divides the bound constrains the outer part
    ok({a * 4 + b * 2 + c}, {{a, 3}, {b, 2}, {c, 2}}, {predicate = tir.lt(a * 4 + b * 2 + c, 10), extents = {10}})
  end)

  it("checks its arguments", function()
    U.expect_error(function() A.detect_iter_map({i}, {{i}}) end, "extent")
    U.expect_error(function() A.detect_iter_map({i}, {{3, 4}}) end, "must be a variable")
    U.expect_error(function() A.detect_iter_map({i}, {{i, 4}}, {level = "x"}) end, "bijective")
    bad({i}, {{i, 4}, {i, 4}}, nil, "given twice")
    bad({i}, {{i, 0}}, nil, "extent 0")
  end)
end)

describe("subspace_divide", function()
  local i, j, k, o, ii = var("i"), var("j"), var("k"), var("o"), var("ii")

  local function parts(bindings, iters, inner, opts)
    local p, op, ip = A.subspace_divide(bindings, iters, inner, opts)
    assert(p, "division failed: " .. tostring(op))
    return p, op, ip
  end

  local function same(e, want) assert(tir.structural_equal(e, want), tostring(e) .. " vs " .. tostring(want)) end

  it("divides split bindings into outer and inner parts", function()
    local p = parts({i * 16 + j, k}, {{i, 4}, {j, 16}, {k, 3}}, {j})
    same(p[1].outer, i); assert.are.equal(4, p[1].outer_extent)
    same(p[1].inner, j); assert.are.equal(16, p[1].inner_extent)
    same(p[2].outer, k); assert.are.equal(3, p[2].outer_extent)
    assert.are.equal(1, p[2].inner_extent)
  end)

  it("divides a fused index split by the inner loop", function()
    local e = o * 8 + ii
    local p = parts({e // 8, e % 8}, {{o, 4}, {ii, 8}}, {ii})
    same(p[1].outer, o); assert.are.equal(4, p[1].outer_extent); assert.are.equal(1, p[1].inner_extent)
    same(p[2].inner, ii); assert.are.equal(8, p[2].inner_extent); assert.are.equal(1, p[2].outer_extent)
  end)

  it("puts a predicate on the side whose loops it uses", function()
    local p, op, ip = parts({i * 16 + j, k}, {{i, 4}, {j, 16}, {k, 4}}, {i, j}, {predicate = tir.lt(i * 16 + j, 50)})
    assert.are.equal(50, p[1].inner_extent)
    same(op, tir.const(true))
    assert.matches("T.lt%(i %* 16 %+ j, 50%)", tostring(ip))
  end)

  it("puts a predicate that narrows a single loop on that loop's side", function()
    local p, op, ip = parts({i, j}, {{i, 2}, {j, 4}}, {j}, {predicate = tir.lt(j, 3)})
    assert.are.equal(3, p[2].inner_extent)
    same(op, tir.const(true))
    assert.matches("T.lt%(j, 3%)", tostring(ip))
    local _, op2, ip2 = parts({i, j}, {{i, 2}, {j, 4}}, {j}, {predicate = tir.ge(i, 1)})
    assert.matches("T.ge%(i, 1%)", tostring(op2))
    same(ip2, tir.const(true))
  end)

  it("fails when a binding mixes the subspaces in a way that does not divide", function()
    assert.is_nil((A.subspace_divide({(o * 8 + ii) // 16}, {{o, 4}, {ii, 8}}, {ii})))
    local r, why = A.subspace_divide({i * 16 + j}, {{i, 4}, {j, 16}}, {i})
    assert.is_nil(r)
    assert.matches("cannot be divided", why)
    -- a predicate over both subspaces cannot be split
    assert.is_nil((A.subspace_divide({i * 16 + j}, {{i, 4}, {j, 16}}, {j}, {predicate = tir.lt(i * 16 + j, 50)})))
  end)
end)

-- The bindings of every block under a schedule, with their loops, for the property checks.
local function block_maps(sch)
  local out = {}
  local function walk(node, loops)
    if node.kind == "For" then
      local l2 = {table.unpack(loops)}
      l2[#l2 + 1] = {node.loop_var, node.extent.value, min = node.min.value}
      walk(node.body, l2)
    elseif node.kind == "SeqStmt" then
      for _, s in ipairs(node.seq) do walk(s, loops) end
    elseif node.kind == "BlockRealize" then
      local b = node.block
      if #b.iter_vars > 0 then
        local ext = {}
        for q, iv in ipairs(b.iter_vars) do ext[q] = iv.dom.extent.value end
        out[#out + 1] = {name = b.name, bindings = {table.unpack(node.iter_values)}, iters = loops, extents = ext,
                         predicate = node.predicate}
      end
      if b.init then walk(b.init, {}) end
      walk(b.body, {})
    end
  end
  walk(sch.mod.body, {})
  return out
end

describe("split / fuse / reorder keep bindings bijective", function()
  local function check_all(sch)
    for _, m in ipairs(block_maps(sch)) do
      local r, why = A.detect_iter_map(m.bindings, m.iters, {predicate = m.predicate, extents = m.extents})
      assert(r, ("block %s: %s\n%s"):format(m.name, tostring(why), tostring(sch.mod)))
    end
  end

  it("on matmul with dividing and non-dividing factors", function()
    for _, sizes in ipairs({{64, 32, 16}, {50, 7, 3}, {12, 10, 9}}) do
      local sch = tir.Schedule(U.matmul(sizes[1], sizes[2], sizes[3]))
      check_all(sch)
      local i, j, k = sch:get_loops(sch:get_block("C"))
      local io, ii = sch:split(i, {nil, 4}); check_all(sch)
      local jo, ji = sch:split(j, {nil, 8}); check_all(sch)
      sch:reorder(io, jo, ii, ji); check_all(sch)
      local fused = sch:fuse(io, jo); check_all(sch)
      sch:split(fused, {nil, 3}); check_all(sch)
      sch:split(k, {2, -1}); check_all(sch)
    end
  end)

  it("on random sequences of split and reorder (any factors)", function()
    local rng = 12345
    local function rand(n) rng = (rng * 1103515245 + 12345) % 2147483648; return rng % n end
    for _ = 1, 40 do
      local f = U.elementwise(3 + rand(14), 2 + rand(12))
      local sch = tir.Schedule(f)
      for _ = 1, 6 do
        local loops = {sch:get_loops(sch:get_block("B"))}
        if rand(2) == 0 then
          sch:split(loops[1 + rand(#loops)], {nil, 2 + rand(4)})
        elseif #loops >= 2 then
          local p, q = 1 + rand(#loops), 1 + rand(#loops)
          if p ~= q then sch:reorder(loops[math.max(p, q)], loops[math.min(p, q)]) end
        end
        check_all(sch)
      end
      U.assert_equiv(f, sch.mod, {trials = 1})
    end
  end)

  it("on fuse patterns: fuse then split, split then fuse back, fuse of reordered loops", function()
    for _, ext in ipairs({{12, 10}, {8, 8}, {6, 9}}) do
      local f = U.elementwise(ext[1], ext[2])
      local sch = tir.Schedule(f)
      local i, j = sch:get_loops(sch:get_block("B"))
      local a, b = sch:split(sch:fuse(i, j), {nil, 16}); check_all(sch)
      local c, d = sch:split(b, {4, 4}); check_all(sch)
      sch:fuse(c, d); check_all(sch)
      U.assert_equiv(f, sch.mod, {trials = 1})
      local sch2 = tir.Schedule(f)
      local i2, j2 = sch2:get_loops(sch2:get_block("B"))
      sch2:reorder(j2, i2)
      sch2:fuse(j2, i2); check_all(sch2)
      local sch3 = tir.Schedule(f)
      local i3, j3 = sch3:get_loops(sch3:get_block("B"))
      local _, ii = sch3:split(i3, {nil, 2})
      sch3:fuse(ii, j3); check_all(sch3)
      local l1, l2 = sch3:get_loops(sch3:get_block("B"))
      sch3:fuse(l1, l2); check_all(sch3)
      U.assert_equiv(f, sch3.mod, {trials = 1})
    end
  end)
end)
