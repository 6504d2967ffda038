-- bench_plot_spec.lua -- bench/plot.lua turns results.jsonl rows into one PNG chart per
-- benchmark (gnuplot): the files exist, are PNGs of the stated size, and hold the latest run.
local json = require("tir.json")
local build = os.getenv("TIRLUA_BUILD_DIR") or "build"

local function png_size(path)
  local f = assert(io.open(path, "rb"))
  local head = f:read(24)
  f:close()
  assert.are.equal("\137PNG\r\n\26\n", head:sub(1, 8))
  return string.unpack(">I4", head, 17), string.unpack(">I4", head, 21)
end

describe("bench/plot.lua", function()
  it("draws one chart per benchmark from the latest run of each", function()
    local dir = os.tmpname()
    os.remove(dir)
    local src = dir .. ".jsonl"
    local f = assert(io.open(src, "w"))
    local function row(t)
      local r = {bench = "gemm_int8", variant = "imma", shape = "1024x1024x1024", dtype = "int8", ms = 1, tflops = 500,
                 ref = "cuBLASLt", ref_ms = 1, ref_tflops = 600, ratio = 1, gpu = "NVIDIA H200", commit = "c1", date = "2026-12-01"}
      for k, v in pairs(t) do r[k] = v end
      f:write(json.encode(r), "\n")
    end
    row{}
    row{shape = "4096x4096x4096", tflops = 800}
    row{variant = "dp4a", tflops = 90}
    row{bench = "gemm_int8", date = "2026-11-01", commit = "old", variant = "stale"} -- an older run: not drawn
    row{bench = "conv2d", dtype = "float16", variant = "implicit_gemm", ref = "cuDNN", shape = "resnet50_total"}
    f:close()
    local p = io.popen(("%s/tirlua bench/plot.lua %s %s 2>&1"):format(build, src, dir))
    local out = p:read("a")
    p:close()
    assert.truthy(out:find("gemm_int8: 2 shapes x 2 variants (+ cuBLASLt), 2026-12-01 c1", 1, true), out)
    assert.truthy(out:find("conv2d: 1 shapes x 1 variants (+ cuDNN)", 1, true), out)
    for _, b in ipairs({"gemm_int8", "conv2d"}) do
      local w, h = png_size(dir .. "/" .. b .. ".png")
      assert.are.equal(1200, w)
      assert.are.equal(600, h)
    end
    os.execute("rm -rf " .. dir .. " " .. src)
  end)

  it("says which line of the file is damaged", function()
    local src = os.tmpname()
    local f = assert(io.open(src, "w"))
    f:write('{"bench": "x"}\n{oops\n')
    f:close()
    local p = io.popen(("%s/tirlua bench/plot.lua %s /tmp 2>&1"):format(build, src))
    local out = p:read("a")
    p:close()
    os.remove(src)
    assert.truthy(out:find(src .. ":2: json.decode", 1, true), out)
  end)

  it("skips rows without a shape or date (saying how many), and says when nothing is left to draw", function()
    local src = os.tmpname()
    local dir = os.tmpname()
    os.remove(dir)
    local f = assert(io.open(src, "w"))
    f:write(json.encode({bench = "b", variant = "v", tflops = 1, date = "2026-12-01", commit = "c"}), "\n") -- no shape
    f:write(json.encode({bench = "b", variant = "v", shape = "64", tflops = 1}), "\n") -- no date
    f:close()
    local p = io.popen(("%s/tirlua bench/plot.lua %s %s 2>&1"):format(build, src, dir))
    local out = p:read("a")
    local ok = p:close()
    os.remove(src)
    assert.is_falsy(ok)
    assert.truthy(out:find("skipped 2 row(s) without bench, shape, variant, date", 1, true), out)
    assert.truthy(out:find("has no row to draw", 1, true), out)
    assert.falsy(out:find("table index is nil", 1, true), out)
  end)
end)
