-- docs_spec.lua -- the documentation's code and claims: the tensor-core walk-through of
-- docs/TENSOR_CORES.md runs as printed (interpreter + simulator; on a GPU also the kernel),
-- and print(a) of an NDArray shows values numpy-style (docs/NDARRAY.md).
local tir = require("tir")
local U = require("spec_util")

local function read(path)
  local f = assert(io.open(path))
  local s = f:read("a")
  f:close()
  return s
end

describe("docs/TENSOR_CORES.md", function()
  it("the walk-through's listing runs as printed and checks itself", function()
    local text = read("docs/TENSOR_CORES.md")
    local code = text:match("<!%-%- walkthrough:begin %-%->\n```lua\n(.-)```\n<!%-%- walkthrough:end %-%->")
    assert.is_truthy(code, "no walk-through listing between the markers")
    local printed = {}
    local env = setmetatable({print = function(s) printed[#printed + 1] = tostring(s) end}, {__index = _G})
    local chunk = assert(load(code, "=TENSOR_CORES.md walk-through", "t", env))
    chunk()
    -- it printed the trace, which replays into the same schedule
    assert.matches("sch:tensorize", printed[1])
    assert.matches("mma_sync_16x16x16_f16f32", printed[1])
  end)
end)

describe("NDArray printing", function()
  it("shows the values numpy-style with shape, dtype and device", function()
    assert.are.equal("tir.NDArray([[ 1. ,  2.5],\n             [-3. ,  4. ]], shape=(2, 2), dtype=float32, device=cpu)",
                     tostring(tir.nd.array({{1, 2.5}, {-3, 4}})))
    assert.are.equal("tir.NDArray([1, 2, 3], shape=(3,), dtype=int8, device=cpu)", tostring(tir.nd.array({1, 2, 3}, "int8")))
    assert.are.equal("tir.NDArray([ True, False], shape=(2,), dtype=bool, device=cpu)",
                     tostring(tir.nd.array({true, false}, "bool")))
    local a = tir.nd.array({0 / 0, 1 / 0, -1 / 0, 0.1}, "float64")
    assert.are.equal("tir.NDArray([ nan,  inf, -inf,  0.1], shape=(4,), dtype=float64, device=cpu)", tostring(a))
    -- 3-d: a blank line between the blocks
    local t = tir.nd.array({{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}}, "int32")
    assert.are.equal("tir.NDArray([[[1, 2],\n              [3, 4]],\n\n             [[5, 6],\n              [7, 8]]], " ..
                     "shape=(2, 2, 2), dtype=int32, device=cpu)", tostring(t))
  end)

  it("elides arrays of more than 1000 elements and wraps long rows", function()
    local rows = {}
    for i = 0, 99 do
      local r = {}
      for j = 0, 99 do r[j + 1] = i * 100 + j end
      rows[i + 1] = r
    end
    local s = tostring(tir.nd.array(rows, "int32"))
    assert.are.equal(table.concat({
      "tir.NDArray([[   0,    1,    2, ...,   97,   98,   99],",
      "             [ 100,  101,  102, ...,  197,  198,  199],",
      "             [ 200,  201,  202, ...,  297,  298,  299],",
      "             ...,",
      "             [9700, 9701, 9702, ..., 9797, 9798, 9799],",
      "             [9800, 9801, 9802, ..., 9897, 9898, 9899],",
      "             [9900, 9901, 9902, ..., 9997, 9998, 9999]], shape=(100, 100), dtype=int32, device=cpu)"}, "\n"), s)
    -- 1000 elements exactly: all shown, wrapped at 75 columns
    local v = {}
    for i = 1, 1000 do v[i] = i end
    local long = tostring(tir.nd.array(v, "int32"))
    for line in long:gmatch("[^\n]+") do
      if not line:find("shape=") then assert.is_true(#line <= 75, line) end
    end
    assert.matches("  999, 1000%]", long)
    assert.is_nil(long:find("...", 1, true))
    -- floats: the fewest digits that read back as the same value of the dtype (at most 8)
    assert.are.equal("tir.NDArray([0.1       , 0.33333334], shape=(2,), dtype=float32, device=cpu)",
                     tostring(tir.nd.array({0.1, 1 / 3})))
    assert.are.equal("tir.NDArray([0.1       , 0.33333333], shape=(2,), dtype=float64, device=cpu)",
                     tostring(tir.nd.array({0.1, 1 / 3}, "float64")))
    assert.are.equal("tir.NDArray([0.1   , 0.3333], shape=(2,), dtype=float16, device=cpu)",
                     tostring(tir.nd.array({0.1, 1 / 3}, "float16")))
    -- whole numbers from 10 on print positionally as numpy does ("10.", not %g's "1e+01"); tiny and
    -- huge ones stay in e-notation
    assert.are.equal("tir.NDArray([   0.,   10.,   14., 1000.], shape=(4,), dtype=float32, device=cpu)",
                     tostring(tir.nd.array({0, 10, 14, 1000})))
    assert.are.equal("tir.NDArray([65504.,  2048.], shape=(2,), dtype=float16, device=cpu)",
                     tostring(tir.nd.array({65504, 2048}, "float16")))
    assert.are.equal("tir.NDArray([1e-30, 1e+30], shape=(2,), dtype=float64, device=cpu)",
                     tostring(tir.nd.array({1e-30, 1e30}, "float64")))
    -- the summary line of a large float array keeps the dtype and shape
    local big = tostring(tir.nd.empty({64, 64, 64}, "float16"))
    assert.matches("shape=%(64, 64, 64%), dtype=float16, device=cpu%)$", big)
    assert.matches("%.%.%.", big)
  end)

  it("error messages about arrays stay one line (no values)", function()
    U.expect_error(function() tir.nd.empty({2, 3}):copyfrom(tir.nd.empty({3, 2})) end,
                   "copying tir.NDArray(shape=(3, 2), dtype=float32, device=cpu) into tir.NDArray(shape=(2, 3)")
  end)
end)
