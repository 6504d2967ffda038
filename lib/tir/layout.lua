--- tir.layout: pictures of where data lives (CuTe's print_layout, in a terminal or a PNG).
--
--   tir.layout.fragment("m16n8k16.f16.f16.f32", "a")   -- which lane / element holds each entry
--                                                       -- of a mma.sync warp tile (PTX ISA lane maps,
--                                                       -- from the core's instruction table)
--   tir.layout.shared{shape = {16, 64}, dtype = "float16", pad = 8}          -- the bank of each element
--   tir.layout.shared{shape = {16, 64}, dtype = "float16",
--                     index_map = function(r, c) return r, ((c // 8) ~ (r % 8)) * 8 + c % 8 end}
--   lay:access(tir.layout.ldmatrix_x4{row0 = 0, col = 0})  -- conflicts of one warp instruction
--   print(lay) / lay:text()            -- text: one cell per element
--   lay:png("file.png" [, {title =}])  -- colored cells (lane or bank), legend, shape in the title
--                                      -- (gnuplot, Debian's gnuplot-nox)
--
-- Shared-memory banks: 32 banks of 4 bytes (CUDA C++ Programming Guide, Compute Capability
-- 5.x+ shared memory); a warp's access of w bytes per lane is served in phases of 128 / w lanes
-- (16-byte accesses: 4 phases of 8 lanes, as ldmatrix's 8 row addresses per matrix); the conflict
-- degree of a phase is the largest number of distinct 4-byte words it needs from one bank.
local util = require("tir.util")
local M = {}

local Layout = {__name = "tir.Layout"}
Layout.__index = Layout

local SMEM_MAX_BYTES = 227 * 1024

local DTYPE_BYTES = {float16 = 2, bfloat16 = 2, float32 = 4, float64 = 8, int8 = 1, uint8 = 1, int16 = 2, uint16 = 2,
                     int32 = 4, uint32 = 4, int64 = 8, uint64 = 8}

--- The lane layout of an mma.sync warp-tile operand ("a", "b" or "c") of instruction row
-- `name` (tir.core.mma_configs() names, e.g. "m16n8k32.s8.s8.s32").  Cells: {lane, e} -- lane
-- 0..31 and the element's index among that lane's values (register r holds elements
-- r * (4 / element bytes) ...).  Raises ValueError for an unknown row or operand.
function M.fragment(name, operand)
  if type(name) ~= "string" then util.raise("TypeError", "layout.fragment", "expected an instruction row name, got %s", util.show(name)) end
  operand = operand or "c"
  local core = require("tir").core
  local map = util.guard("layout.fragment", core.mma_lane_map, name, operand)
  local row
  for _, r in ipairs(core.mma_configs()) do if r.name == name and r.family == "mma" then row = r end end
  local rows, cols = 0, 0
  for _, x in ipairs(map) do
    rows = math.max(rows, x.row + 1)
    cols = math.max(cols, x.col + 1)
  end
  local cells = {}
  for r = 0, rows - 1 do cells[r] = {} end
  for _, x in ipairs(map) do
    if cells[x.row][x.col] then
      util.raise("ValueError", "layout.fragment", "%s %s: element (%d, %d) is held twice", name, operand, x.row, x.col)
    end
    cells[x.row][x.col] = {lane = x.lane, e = x.e}
  end
  local dt = operand == "a" and row.a or operand == "b" and row.b or row.c
  local names = {a = "A", b = "B", c = "C/D"}
  return setmetatable({kind = "fragment", rows = rows, cols = cols, cells = cells, dtype = dt,
                       title = ("%s operand %s (%s, %dx%d warp tile, %s): lane.element"):format(name, names[operand], dt,
                         rows, cols, row.source)}, Layout)
end

--- The bank layout of a 2-D shared-memory buffer.  spec: shape {rows, cols}; dtype; pad (elements
-- added to each row: storage_align's padding) or row_stride (elements); index_map (a Lua
-- function (r, c) -> r', c' like transform_layout's, e.g. an XOR swizzle, mapping onto the stored
-- [rows, row_stride] array); swizzle (a storage_swizzle mode: "32B", "64B", "128B" or {B, M, S},
-- applied to the byte offset as the lowering does); base (byte offset of the buffer, default 0).
function M.shared(spec)
  spec = util.check_opts("layout.shared", spec, {shape = "table", dtype = "string", pad = "integer", row_stride = "integer",
                                                index_map = "function", base = "integer", swizzle = "string|table"})
  if spec.swizzle ~= nil then require("tir.core").swizzle_info(spec.swizzle) end -- checks the mode
  local shape = spec.shape
  if not shape or #shape ~= 2 then util.raise("ValueError", "layout.shared", "shape must be {rows, cols}") end
  local eb = DTYPE_BYTES[spec.dtype or "float16"]
  if not eb then util.raise("ValueError", "layout.shared", "unknown dtype '%s'", tostring(spec.dtype)) end
  local rows, cols = shape[1], shape[2]
  for d = 1, 2 do
    if math.type(shape[d]) ~= "integer" or shape[d] < 1 then
      util.raise("ValueError", "layout.shared", "shape[%d] must be a positive integer, got %s", d, util.show(shape[d]))
    end
  end
  if spec.pad and spec.pad < 0 then util.raise("ValueError", "layout.shared", "pad must be >= 0, got %d", spec.pad) end
  if spec.base and spec.base < 0 then util.raise("ValueError", "layout.shared", "base must be >= 0, got %d", spec.base) end
  local stride = spec.row_stride or (cols + (spec.pad or 0))
  -- a CTA's shared memory is at most 227 KB (CUDA C++ Programming Guide, compute capability 9.0
  -- table): a larger "layout" is a mistake, and would take minutes to tabulate cell by cell
  if rows * 1.0 * stride * eb > SMEM_MAX_BYTES then -- (in floats: no int64 wrap)
    util.raise("ValueError", "layout.shared", "%s[%d, %d] with row stride %d is %.0f bytes, more than a CTA's shared memory (%d bytes)",
      spec.dtype or "float16", rows, cols, stride, rows * 1.0 * stride * eb, SMEM_MAX_BYTES)
  end
  if stride < cols then util.raise("ValueError", "layout.shared", "row_stride %d is less than the %d columns", stride, cols) end
  local cells, seen = {}, {}
  for r = 0, rows - 1 do
    cells[r] = {}
    for c = 0, cols - 1 do
      local pr, pc = r, c
      if spec.index_map then
        pr, pc = spec.index_map(r, c)
        if math.type(pr) ~= "integer" or math.type(pc) ~= "integer" then
          util.raise("TypeError", "layout.shared", "index_map(%d, %d) must return two integers (row, column), got %s, %s%s", r, c,
            util.show(pr), util.show(pc), (math.type(pr) == "float" or math.type(pc) == "float") and " (use // for integer division)" or "")
        end
        if pr < 0 or pc < 0 or pc >= stride then
          util.raise("ValueError", "layout.shared", "index_map(%d, %d) gave (%s, %s), outside the [%s, %d] storage", r, c,
            tostring(pr), tostring(pc), "rows", stride)
        end
      end
      local off = (pr * stride + pc) * eb
      if spec.swizzle then off = require("tir.core").swizzle_apply(spec.swizzle, off) end
      off = off + (spec.base or 0)
      if seen[off] then
        util.raise("ValueError", "layout.shared", "index_map sends (%d, %d) and (%d, %d) to one place", r, c, seen[off][1], seen[off][2])
      end
      seen[off] = {r, c}
      cells[r][c] = {offset = off, bank = (off // 4) % 32}
    end
  end
  local how = spec.index_map and "index map" or (spec.pad and spec.pad > 0) and ("rows padded by %d"):format(spec.pad) or "row-major"
  if spec.swizzle then
    how = how .. ", swizzle " .. (type(spec.swizzle) == "table" and ("{%d, %d, %d}"):format(table.unpack(spec.swizzle)) or spec.swizzle)
  end
  return setmetatable({kind = "shared", rows = rows, cols = cols, cells = cells, dtype = spec.dtype or "float16", elem_bytes = eb,
                       title = ("shared %s[%d, %d], row stride %d elements, %s: bank of each element"):format(spec.dtype or "float16",
                         rows, cols, stride, how)}, Layout)
end

--- ldmatrix.x4's access (PTX ISA 9.7.14.5.15): lanes 8i..8i+7 give the row addresses of matrix
-- i; each row is 16 bytes (8 fp16).  spec: row0 (first row, 0), col (first column, 0), and the
-- order of the four 8x8 matrices (default: rows 0-7/cols 0-7, rows 8-15/cols 0-7, rows 0-7/cols
-- 8-15, rows 8-15/cols 8-15 -- the A-operand order).  Returns an access: a list of 32 lanes, each
-- {r, c, bytes}.
function M.ldmatrix_x4(spec)
  spec = util.check_opts("layout.ldmatrix_x4", spec, {row0 = "integer", col = "integer"})
  local r0, c0 = spec.row0 or 0, spec.col or 0
  local quads = {{0, 0}, {8, 0}, {0, 8}, {8, 8}}
  local acc = {}
  for lane = 0, 31 do
    local q = quads[lane // 8 + 1]
    acc[lane + 1] = {r = r0 + q[1] + lane % 8, c = c0 + q[2], bytes = 16}
  end
  return acc
end

--- The conflict degree of one warp access (a list of 32 {r, c, bytes}) on a shared layout:
-- returns degree (1 = conflict-free), and a per-phase list {lanes = {first, last}, degree,
-- banks = {bank -> words}}.
function Layout:conflicts(access)
  if self.kind ~= "shared" then util.raise("ValueError", "Layout:conflicts", "only shared-memory layouts have banks") end
  if type(access) ~= "table" or #access == 0 then util.raise("TypeError", "Layout:conflicts", "expected a list of lane accesses") end
  for lane, a in ipairs(access) do
    if type(a) ~= "table" or math.type(a.r) ~= "integer" or math.type(a.c) ~= "integer" then
      util.raise("TypeError", "Layout:conflicts", "lane %d: expected {r = row, c = column [, bytes = n]} with integer r and c, got %s",
        lane - 1, util.show(a))
    end
    local w = a.bytes
    if w ~= nil and (math.type(w) ~= "integer" or w < 1 or w > 16 or w & (w - 1) ~= 0) then
      util.raise("ValueError", "Layout:conflicts", "lane %d: bytes must be 1, 2, 4, 8 or 16, got %s", lane - 1, util.show(w))
    end
  end
  local width = access[1].bytes or self.elem_bytes
  local per_phase = math.max(1, 128 // width)
  local phases, worst = {}, 1
  for first = 1, #access, per_phase do
    local words = {}
    for lane = first, math.min(first + per_phase - 1, #access) do
      local a = access[lane]
      local cell = self.cells[a.r] and self.cells[a.r][a.c]
      if not cell then
        util.raise("ValueError", "Layout:conflicts", "lane %d reads (%d, %d), outside the [%d, %d] buffer", lane - 1, a.r, a.c,
          self.rows, self.cols)
      end
      -- every 4-byte word the access touches (a 1- or 2-byte access touches one)
      for word = cell.offset // 4, (cell.offset + (a.bytes or self.elem_bytes) - 1) // 4 do
        local b = word % 32
        words[b] = words[b] or {}
        words[b][word] = true
      end
    end
    local deg, banks = 1, {}
    for b, ws in pairs(words) do
      local n = 0
      for _ in pairs(ws) do n = n + 1 end
      banks[b] = n
      deg = math.max(deg, n)
    end
    phases[#phases + 1] = {lanes = {first - 1, math.min(first + per_phase - 1, #access) - 1}, degree = deg, banks = banks}
    worst = math.max(worst, deg)
  end
  return worst, phases
end

--- Marks an access on the layout (its lanes shown in the text and PNG) and returns self.
function Layout:access(acc)
  local deg, phases = self:conflicts(acc)
  self.marked = {}
  for lane, a in ipairs(acc) do
    for k = 0, math.max(1, (a.bytes or self.elem_bytes) // self.elem_bytes) - 1 do
      self.marked[a.r * 100000 + a.c + k] = lane - 1
    end
  end
  self.conflict = {degree = deg, phases = phases}
  return self
end

local function cell_text(self, r, c)
  local x = self.cells[r][c]
  if not x then return "." end
  if self.kind == "fragment" then return ("T%d.%d"):format(x.lane, x.e) end
  local m = self.marked and self.marked[r * 100000 + c]
  return m and ("%d*%d"):format(x.bank, m) or tostring(x.bank)
end

--- The picture as text: a header, the column numbers, one line per row.
function Layout:text()
  local w = 2
  for r = 0, self.rows - 1 do for c = 0, self.cols - 1 do w = math.max(w, #cell_text(self, r, c)) end end
  local out = {self.title}
  if self.kind == "shared" and self.marked then
    out[#out + 1] = ("access: conflict degree %d (%d phases); cells bank*lane"):format(self.conflict.degree, #self.conflict.phases)
  end
  local head = {("%4s"):format("")}
  for c = 0, self.cols - 1 do head[#head + 1] = ("%" .. w .. "d"):format(c) end
  out[#out + 1] = table.concat(head, " ")
  for r = 0, self.rows - 1 do
    local line = {("%4d"):format(r)}
    for c = 0, self.cols - 1 do line[#line + 1] = ("%" .. w .. "s"):format(cell_text(self, r, c)) end
    out[#out + 1] = table.concat(line, " ")
  end
  return table.concat(out, "\n")
end
Layout.__tostring = Layout.text

local function q(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

--- Writes the picture as a PNG (cells colored by lane, or by bank for shared layouts; the
-- cell's text written on it; a color legend; the title with the shape).  opts: title, cell
-- (pixels per cell, default 48).  Returns the path.  Raises RuntimeError when gnuplot fails.
function Layout:png(path, opts)
  if type(path) ~= "string" or path == "" then util.raise("TypeError", "Layout:png", "expected a file name") end
  opts = util.check_opts("Layout:png", opts, {title = "string", cell = "integer"})
  if os.execute("command -v gnuplot > /dev/null") ~= true then
    util.raise("RuntimeError", "Layout:png", "gnuplot is missing (apt-get install gnuplot-nox; scripts/setup.sh installs it)")
  end
  local cell = opts.cell or 48
  if cell < 8 or cell > 256 then util.raise("ValueError", "Layout:png", "cell must be 8..256 pixels, got %d", cell) end
  local data = os.tmpname()
  local f = assert(io.open(data, "w"))
  for r = 0, self.rows - 1 do
    for c = 0, self.cols - 1 do
      local x = self.cells[r][c]
      local v = x and (self.kind == "fragment" and x.lane or x.bank) or -1
      f:write(("%d %d %d \"%s\"\n"):format(c, r, v, cell_text(self, r, c)))
    end
    f:write("\n")
  end
  f:close()
  local width = math.max(640, self.cols * cell + 260)
  local height = math.floor(math.max(320, self.rows * cell * 0.6 + 140))
  local script = table.concat({
    ("set terminal pngcairo size %d,%d font 'sans,9' noenhanced"):format(width, height),
    "set output " .. q(path),
    "set title " .. q(opts.title or self.title),
    ("set xrange [-0.5:%f]"):format(self.cols - 0.5), ("set yrange [%f:-0.5]"):format(self.rows - 0.5),
    "set xlabel 'column'", "set ylabel 'row'", "set xtics 1 out nomirror", "set ytics 1 out nomirror",
    "set palette maxcolors 32 defined (0 '#4e79a7', 4 '#f28e2b', 8 '#e15759', 12 '#76b7b2', 16 '#59a14f', " ..
      "20 '#edc948', 24 '#b07aa1', 28 '#ff9da7', 31 '#9c755f')",
    "set cbrange [0:31]", ("set cblabel %s"):format(q(self.kind == "fragment" and "lane" or "bank")), "set cbtics 4",
    "unset key",
    ("plot %s using 1:2:3 with image, '' using 1:2:4 with labels font 'sans,7'"):format(q(data)),
  }, "\n")
  local sf = os.tmpname()
  local sfh = assert(io.open(sf, "w"))
  sfh:write(script, "\n")
  sfh:close()
  local ok = os.execute("gnuplot " .. q(sf) .. " 2>/dev/null")
  os.remove(sf)
  os.remove(data)
  if ok ~= true then util.raise("RuntimeError", "Layout:png", "gnuplot failed to draw %s", path) end
  return path
end

-- a call with more arguments than a function's parameters is an error (util.strict)
util.strict_all(M, "layout.")
for _, k in ipairs({"conflicts", "access", "text", "png"}) do Layout[k] = util.strict("Layout:" .. k, Layout[k], true) end

return M
