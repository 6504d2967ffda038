-- bench_common_spec.lua -- bench/common.lua: the rows every benchmark appends to
-- bench/results.jsonl (keys and order from DEVELOPERS.md, ratio = ref_ms / ms).
local common = dofile("bench/common.lua")

describe("bench/common.lua", function()
  it("writes one JSON object per row with the standard keys first, ratio derived", function()
    local path = os.tmpname()
    local old = os.getenv("TIRLUA_BENCH_JSONL")
    assert.is_nil(old) -- the spec sets the path through the function below, not the environment
    local orig = common.jsonl_path
    common.jsonl_path = function() return path end
    local line = common.record{bench = "gemm_fp16", variant = "mma_s4", shape = "64x64x64", dtype = "float16",
                               ms = 2.0, tflops = 1.5, ref = "cuBLAS", ref_ms = 1.0, ref_tflops = 3.0,
                               gpu = "test \"gpu\"", commit = "abc1234", date = "2026-12-01", registers = 206}
    common.record{bench = "gemm_fp16", variant = "mma_s4", shape = "64x64x64", dtype = "float16", ms = 1.0,
                  gpu = "g", commit = "c", date = "2026-12-01"}
    common.jsonl_path = orig
    local f = assert(io.open(path))
    local text = f:read("a")
    f:close()
    os.remove(path)
    local l1, l2 = text:match("^(.-)\n(.-)\n$")
    assert.are.equal(line, l1)
    assert.are.equal('{"bench": "gemm_fp16", "variant": "mma_s4", "shape": "64x64x64", "dtype": "float16", "ms": 2, ' ..
      '"tflops": 1.5, "ref": "cuBLAS", "ref_ms": 1, "ref_tflops": 3, "ratio": 0.5, "gpu": "test \\"gpu\\"", ' ..
      '"commit": "abc1234", "date": "2026-12-01", "registers": 206}', l1)
    -- missing reference: null values, no ratio
    assert.truthy(l2:find('"ref": null, "ref_ms": null, "ref_tflops": null, "ratio": null', 1, true))
  end)

  it("refuses rows without the identifying keys or with a bad time", function()
    assert.has_error(function() common.record{variant = "x", shape = "1x1x1", dtype = "int8", ms = 1} end,
      "bench/common.lua: record: row.bench must be a string")
    assert.has_error(function() common.record{bench = "b", variant = "x", shape = "1x1x1", dtype = "int8", ms = 0} end,
      "bench/common.lua: record: row.ms must be a positive number")
  end)

  it("keeps non-finite numbers out of the JSON", function()
    assert.truthy(common.json{bench = "b", ms = 0 / 0}:find('"ms": null', 1, true))
  end)

  it("bench/results.jsonl rows all carry the standard keys", function()
    for line in io.lines("bench/results.jsonl") do
      for _, k in ipairs(common.KEYS) do
        assert.truthy(line:find('"' .. k .. '": ', 1, true), "missing " .. k .. " in " .. line)
      end
    end
  end)
end)
