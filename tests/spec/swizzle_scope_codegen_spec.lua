-- swizzle_scope_codegen_spec.lua -- a shared.swz<B> tile (scope-tag swizzle, include/tir/scope.h)
-- keeps logical indices in the IR and the simulator; the CUDA codegen alone maps them to the
-- physical element (tir_swz).  So every shared address the codegen emits for such a tile --
-- also the 32-bit tir_smem_addr form of cp.async / ldmatrix -- must go through tir_swz: the
-- simulator cannot see a missing one (on the H200 it gave wrong wgmma cp.async and mma + TMA GEMMs).
local tir = require("tir")
local tc = require("tir.schedules.tc_gemm")

local function cuda(f, o)
  return tir.build(tc.schedule(f, o).mod, "cuda -arch=sm_90a", {compile = false}):get_source("cuda")
end

-- the lines of src that address a swizzled tile (name ends in _swz<B>, or a TMA tile in .swz scope)
local function lane_address_lines(src, pattern)
  local out = {}
  for line in src:gmatch("[^\n]+") do
    if line:find(pattern) and line:find("tir_smem_addr%(") then out[#out + 1] = line end
  end
  return out
end

describe("shared.swz<B> tiles in the CUDA codegen", function()
  it("cp.async into the wgmma schedule's swizzled tiles writes the physical element", function()
    local src = cuda(tc.workload(256, 256, 128, "float16", "float16", nil, "NT"),
                     {intrin = "wgmma", BN = 128, stages = 3, epilogue = "D"})
    local lines = lane_address_lines(src, "tir_cp_async<16>")
    assert.truthy(#lines >= 8, src)
    for _, l in ipairs(lines) do assert.truthy(l:find("tir_swz<128, 2>(", 1, true), l) end
  end)

  it("ldmatrix from the TMA tiles of the mma schedule reads the physical element", function()
    local src = cuda(tc.workload(256, 256, 128, "float16", "float32", nil, "NT"),
                     {BM = 64, BN = 64, BK = 32, warp_m = 32, warp_n = 32, tma = true, stages = 2})
    local lines = lane_address_lines(src, "unsigned a_ = ")
    assert.truthy(#lines >= 2, src)
    for _, l in ipairs(lines) do assert.truthy(l:find("tir_swz<64, 2>(", 1, true), l) end
  end)
end)
