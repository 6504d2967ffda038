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

  it("names the commit of the checkout it runs in, and 'unknown' in a copied tree (no git of its own)", function()
    if os.getenv("TIRLUA_COMMIT") then pending("TIRLUA_COMMIT is set: it names the commit") return end
    if not io.popen("git --version 2>/dev/null"):read("*l") then pending("no git") return end
    local root = os.tmpname()
    os.remove(root)
    local function run(cmd) assert(os.execute(cmd), cmd) end
    run(("mkdir -p %s/bench %s/copy/t && cd %s && git init -q && git config user.email t@t && git config user.name t && " ..
         "echo a > f && echo r > bench/results.jsonl && git add f bench/results.jsonl && git commit -qm x"):format(root, root, root))
    local head = io.popen(("git -C %s rev-parse --short HEAD"):format(root)):read("*l")
    assert.are.equal(head, common.commit(root))
    -- a new benchmark row is no change of the tree; an edited source file is
    run(("echo r2 >> %s/bench/results.jsonl"):format(root))
    assert.are.equal(head, common.commit(root))
    run(("echo b >> %s/f"):format(root))
    assert.are.equal(head .. "-dirty", common.commit(root))
    -- a tree unpacked inside the checkout (the GPU batch's .carry/NAME/t): not that checkout's HEAD
    assert.are.equal("unknown", common.commit(root .. "/copy/t"))
    -- no checkout at all
    local bare = os.tmpname()
    os.remove(bare)
    run("mkdir -p " .. bare)
    assert.are.equal("unknown", common.commit(bare))
    run(("rm -rf %s %s"):format(root, bare))
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
