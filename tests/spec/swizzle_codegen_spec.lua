-- swizzle_codegen_spec.lua -- the wgmma and TMA tiles are swizzled by Buffer.swizzle
-- (storage_swizzle; include/tir/swizzle.h), the one swizzle mechanism: lower_buffer_swizzle
-- rewrites every per-thread index of such a tile into the physical one (XOR), so the CUDA C and
-- the simulator see the same addresses; builtins that encode the swizzle themselves (wgmma
-- descriptors, TMA copies: TIR_BUILTIN_SWIZZLE_AWARE) keep the tile's logical origin.  Last
-- stop's final-round bug was a codegen site that missed the old scope-tag mapping (shared.swz<B>,
-- applied in the codegen only, invisible to the simulator); here no such site can exist: the
-- lines below must all carry the XOR, and the simulator runs the same indices.
local tir = require("tir")
local tc = require("tir.schedules.tc_gemm")

local function build(f, o) return tir.build(tc.schedule(f, o).mod, "cuda -arch=sm_90a", {compile = false}) end

local function lines_with(src, pattern)
  local out = {}
  for line in src:gmatch("[^\n]+") do
    if line:find(pattern, 1, true) then out[#out + 1] = line end
  end
  return out
end

describe("swizzled wgmma / TMA tiles in the CUDA codegen (Buffer.swizzle)", function()
  it("cp.async into the wgmma schedule's tiles writes the physical element; the descriptors take the logical origin", function()
    local f = tc.workload(256, 256, 128, "float16", "float16", nil, "NT")
    local mod = build(f, {intrin = "wgmma", BN = 128, stages = 3, epilogue = "D"})
    local src = mod:get_source("cuda")
    assert.is_nil(src:find("tir_swz", 1, true)) -- the old scope-tag helper is gone
    local cp = lines_with(src, "tir_cp_async<16>((tir_smem_addr(")
    assert.truthy(#cp >= 8, src)
    -- 128-byte rows of fp16: Swizzle<3, 4, 3> on elements is i ^ ((i >> 3) & 56)
    for _, l in ipairs(cp) do assert.truthy(l:find(">> 3)) & 56)", 1, true), l) end
    local desc = lines_with(src, "tir_wgmma_desc((")
    assert.truthy(#desc >= 4, src)
    for _, l in ipairs(desc) do assert.is_nil(l:find("^", 1, true), l) end
    -- the simulator runs these very indices, bit-exact against the interpreter
    local rep = tir.simulate(mod, tir.testing.random_args(f, 2), {reference = f})
    assert.are.equal(0, rep.n_issues)
  end)

  it("ldmatrix from the mma schedule's TMA tiles reads the physical element; the TMA copy takes the origin", function()
    local f = tc.workload(256, 256, 128, "float16", "float32", nil, "NT")
    local mod = build(f, {BM = 64, BN = 64, BK = 32, warp_m = 32, warp_n = 32, tma = true, stages = 2})
    local src = mod:get_source("cuda")
    local ld = lines_with(src, "unsigned a_ = (tir_smem_addr(")
    assert.truthy(#ld >= 2, src)
    -- 64-byte rows of fp16: Swizzle<2, 4, 3>: i ^ ((i >> 3) & 24)
    for _, l in ipairs(ld) do assert.truthy(l:find(">> 3)) & 24)", 1, true), l) end
    local tma = lines_with(src, "tir_tma_load_2d((")
    assert.truthy(#tma >= 2, src)
    for _, l in ipairs(tma) do assert.is_nil(l:find("^", 1, true), l) end
    assert.are.equal(0, tir.simulate(mod, tir.testing.random_args(f, 2), {reference = f}).n_issues)
  end)
end)
