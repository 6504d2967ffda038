-- layout_spec.lua -- tir.layout: fragment lane maps from the instruction table (PTX ISA
-- facts), shared-memory banks with padding and XOR swizzles, the conflict degree of ldmatrix,
-- text and PNG pictures.
local tir = require("tir")
local L = tir.layout

local function png_size(path)
  local f = assert(io.open(path, "rb"))
  local head = f:read(24)
  f:close()
  assert.are.equal("\137PNG\r\n\26\n", head:sub(1, 8))
  return string.unpack(">I4", head, 17), string.unpack(">I4", head, 21)
end

describe("tir.layout.fragment", function()
  it("shows the m16n8k16 A map of the PTX ISA: each element held by one lane, 8 per lane", function()
    local f = L.fragment("m16n8k16.f16.f16.f32", "a")
    assert.are.equal(16, f.rows)
    assert.are.equal(16, f.cols)
    -- PTX ISA 9.7.14.5.8: a0,a1 at (groupID, 2*threadID_in_group + {0,1}); a2,a3 at row + 8; a4..a7 at col + 8
    assert.are.same({lane = 0, e = 0}, f.cells[0][0])
    assert.are.same({lane = 1, e = 1}, f.cells[0][3])
    assert.are.same({lane = 4, e = 2}, f.cells[9][0])
    assert.are.same({lane = 0, e = 4}, f.cells[0][8])
    assert.are.same({lane = 31, e = 7}, f.cells[15][15])
    local per = {}
    for r = 0, 15 do for c = 0, 15 do local x = f.cells[r][c]; per[x.lane] = (per[x.lane] or 0) + 1 end end
    for lane = 0, 31 do assert.are.equal(8, per[lane]) end
    assert.truthy(tostring(f):find("T0.0  T0.1  T1.0", 1, true))
  end)

  it("shows the int8 m16n8k32 and accumulator maps", function()
    local a = L.fragment("m16n8k32.s8.s8.s32", "a")
    assert.are.equal(32, a.cols)
    assert.are.same({lane = 0, e = 3}, a.cells[0][3]) -- four int8 in one register
    local c = L.fragment("m16n8k16.f16.f16.f32", "c")
    assert.are.same({lane = 0, e = 2}, c.cells[8][0])
    assert.are.equal(16, c.cols)
  end)

  it("refuses unknown rows and operands", function()
    local ok, e = pcall(L.fragment, "m99n8k16", "a")
    assert.is_false(ok)
    assert.truthy(tostring(e):find("no mma.sync row named 'm99n8k16'", 1, true))
    ok, e = pcall(L.fragment, "m16n8k16.f16.f16.f32", "x")
    assert.is_false(ok)
    assert.truthy(tostring(e):find('operand must be "a", "b" or "c"', 1, true))
  end)
end)

describe("tir.layout.shared", function()
  local swizzle = function(r, c) return r, ((c // 8) ~ (r % 8)) * 8 + c % 8 end

  it("gives the bank of each element with padding and swizzles", function()
    local s = L.shared{shape = {16, 64}, dtype = "float16", pad = 8}
    assert.are.equal(0, s.cells[0][0].bank)
    assert.are.equal(4, s.cells[1][0].bank) -- 144-byte rows start 4 banks apart
    local w = L.shared{shape = {16, 64}, dtype = "float16", index_map = swizzle}
    assert.are.equal(4, w.cells[1][0].bank) -- row 1's first chunk moved to chunk 1
  end)

  it("measures ldmatrix conflicts: 8-way on 128-byte rows, none when padded or swizzled", function()
    local plain = L.shared{shape = {16, 64}, dtype = "float16"}
    assert.are.equal(8, (plain:conflicts(L.ldmatrix_x4{})))
    assert.are.equal(1, (L.shared{shape = {16, 64}, dtype = "float16", pad = 8}:conflicts(L.ldmatrix_x4{})))
    local deg, phases = L.shared{shape = {16, 64}, dtype = "float16", index_map = swizzle}:conflicts(L.ldmatrix_x4{col = 16})
    assert.are.equal(1, deg)
    assert.are.equal(4, #phases)
    local lay = plain:access(L.ldmatrix_x4{})
    assert.truthy(lay:text():find("access: conflict degree 8 (4 phases)", 1, true))
  end)

  it("refuses index maps that are not one-to-one and accesses outside the buffer", function()
    local ok, e = pcall(L.shared, {shape = {4, 8}, dtype = "float16", index_map = function(r, c) return 0, c end})
    assert.is_false(ok)
    assert.truthy(tostring(e):find("to one place", 1, true))
    ok, e = pcall(L.shared, {shape = {4, 8}, dtype = "float16", padd = 8})
    assert.is_false(ok)
    assert.truthy(tostring(e):find("did you mean 'pad'", 1, true))
    local s = L.shared{shape = {8, 8}, dtype = "float16"}
    ok, e = pcall(s.conflicts, s, L.ldmatrix_x4{})
    assert.is_false(ok)
    assert.truthy(tostring(e):find("outside the [8, 8] buffer", 1, true))
  end)
end)

describe("tir.layout.shared (bad input, narrow accesses)", function()
  it("counts the words of 1- and 2-byte accesses: a column of fp16 or int8 on 128-byte rows is 32-way", function()
    local col = {}
    for l = 0, 31 do col[l + 1] = {r = l, c = 0} end
    assert.are.equal(32, (L.shared{shape = {32, 64}, dtype = "float16"}:conflicts(col)))
    assert.are.equal(32, (L.shared{shape = {32, 128}, dtype = "int8"}:conflicts(col)))
    -- one row read by 32 lanes, two fp16 per word: each bank gives one word (no conflict)
    local row = {}
    for l = 0, 31 do row[l + 1] = {r = 0, c = l} end
    assert.are.equal(1, (L.shared{shape = {32, 64}, dtype = "float16"}:conflicts(row)))
    -- padded by one fp16: row r starts at word floor(32.5 r), bank floor(r / 2): 2-way
    assert.are.equal(2, (L.shared{shape = {32, 64}, dtype = "float16", pad = 1}:conflicts(col)))
  end)

  it("refuses non-positive or fractional shapes, negative padding, layouts beyond shared memory, malformed accesses", function()
    local function err(f, ...)
      local ok, e = pcall(f, ...)
      assert.is_false(ok)
      return tostring(e)
    end
    assert.truthy(err(L.shared, {shape = {0, 64}}):find("shape[1] must be a positive integer, got 0", 1, true))
    assert.truthy(err(L.shared, {shape = {16, 4.5}}):find("shape[2] must be a positive integer", 1, true))
    assert.truthy(err(L.shared, {shape = {16, 64}, pad = -8}):find("pad must be >= 0, got -8", 1, true))
    assert.truthy(err(L.shared, {shape = {100000, 100000}}):find("more than a CTA's shared memory", 1, true))
    -- an index map with / (float division) or one result: named as such, not as "outside the storage"
    assert.truthy(err(L.shared, {shape = {8, 8}, index_map = function(r, c) return r, c / 1 end})
      :find("must return two integers (row, column), got 0, 0.0 (a float) (use // for integer division)", 1, true))
    assert.truthy(err(L.shared, {shape = {8, 8}, index_map = function(r, c) return r * 8 + c end})
      :find("must return two integers (row, column), got 0, nil", 1, true))
    local lay = L.shared{shape = {8, 8}, dtype = "float32"}
    local pairs_ = {}
    for l = 1, 32 do pairs_[l] = {0, l % 8} end
    assert.truthy(err(lay.conflicts, lay, pairs_):find("lane 0: expected {r = row, c = column", 1, true))
    assert.truthy(err(lay.conflicts, lay, {{r = 0, c = 0, bytes = 3}}):find("bytes must be 1, 2, 4, 8 or 16, got 3", 1, true))
  end)
end)

describe("Layout:png", function()
  it("draws fragment and bank pictures of the stated size", function()
    local p1, p2 = os.tmpname() .. ".png", os.tmpname() .. ".png"
    L.fragment("m16n8k16.f16.f16.f32", "a"):png(p1)
    local w, h = png_size(p1)
    assert.are.equal(1028, w) -- 16 cells of 48 px + 260
    assert.are.equal(600, h)
    L.shared{shape = {8, 32}, dtype = "float16", pad = 8}:png(p2, {cell = 24})
    w, h = png_size(p2)
    assert.are.equal(1028, w)
    assert.are.equal(320, h)
    os.remove(p1)
    os.remove(p2)
  end)
end)
