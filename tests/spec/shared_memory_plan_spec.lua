-- shared_memory_plan_spec.lua -- buffers used one after the other share dynamic shared memory
-- (narrow_shared_allocations + the stack plan of shared_memory_plan.c): tc_gemm's staged
-- epilogue tile reuses the bytes of the pipeline's A/B tiles behind a barrier, so the fused
-- quantized GEMM asks for no more shared memory than the plain GEMM (two CTAs per SM on the
-- H200 instead of one).
local tir = require("tir")
local tc = require("tir.schedules.tc_gemm")
local qm = tir.ops.quantized_matmul
local qg = require("tir.schedules.qgemm")

local tiles = {BM = 128, BN = 128, BK = 128, warp_m = 64, warp_n = 64, stages = 3}

local function kernel_of(sch)
  local mod = tir.build(sch.mod, "cuda -arch=sm_90", {compile = false})
  return mod:kernels()[1], mod:get_source("cuda")
end

describe("dynamic shared memory plan", function()
  it("the fused qgemm's staging tile reuses the A/B pipeline tiles: the plain GEMM's bytes, a barrier first", function()
    local o = {intrin = "mma"}
    for k, v in pairs(tiles) do o[k] = v end
    local plain = kernel_of(tc.schedule(tc.workload(4096, 4096, 4096, "int8", "int32", nil, "NT"), o))
    local qf = qm{M = 4096, N = 4096, K = 4096, a_zero_point = 3, b_sums = "input", bias = true, scale = "per_channel",
                  out_zero_point = -7}
    local fused, src = kernel_of(qg.schedule(qf, {intrin = "mma", tc = tiles}))
    -- about 3 stages x (128 x 144 bytes) x 2 tiles; the 128 x 128 int32 staging tile (65536 bytes) fits in it
    assert.is_true(plain.dyn_smem_bytes <= 3 * 128 * 144 * 2 and plain.dyn_smem_bytes > 65536)
    assert.are.equal(plain.dyn_smem_bytes, fused.dyn_smem_bytes)
    local a_at = src:match("signed char%* A_shared = %(signed char%*%)%(tir_dyn_smem %+ (%d+)%);")
    local c_at, after = src:match("int%* C_warp_shared = %(int%*%)%(tir_dyn_smem %+ (%d+)%);%s*(__syncthreads%(%);)")
    assert.are.equal("0", a_at)
    assert.are.equal("0", c_at)
    assert.is_truthy(after)
    -- the IR: the staging tile is allocated after the main loop's tiles, as their sibling
    local lowered = tostring(tir.lower(qg.schedule(qf, {intrin = "mma", tc = tiles}).mod))
    local pa = lowered:find("A_shared = T.alloc", 1, false) or lowered:find("A_shared", 1, true)
    local pc = lowered:find("C_warp_shared", 1, true)
    assert.is_truthy(pa and pc and pa < pc)
  end)

  it("pads the staged accumulator rows so mma_store's 8-byte stores are free of bank conflicts", function()
    local qf = qm{M = 4096, N = 4096, K = 4096, a_zero_point = 3, b_sums = "input", bias = true, scale = "per_channel"}
    local k, src = kernel_of(qg.schedule(qf, {intrin = "mma", tc = tiles}))
    assert.is_truthy(src:find("ld_ = 136;", 1, true)) -- 128 int32 + 8: rows 32 mod 128 bytes apart
    assert.are.equal(110576, k.dyn_smem_bytes)         -- (still inside the pipeline's bytes; each shared
                                                        -- tile starts at a multiple of 128 bytes)
    -- one mma_store instruction: lane l writes row l / 4, columns 2 (l % 4) .. + 1 (8 bytes)
    local function store(r0)
      local acc = {}
      for l = 0, 31 do acc[l + 1] = {r = r0 + l // 4, c = 2 * (l % 4), bytes = 8} end
      return acc
    end
    local plain = tir.layout.shared{shape = {128, 128}, dtype = "int32"}
    local padded = tir.layout.shared{shape = {128, 128}, dtype = "int32", pad = 8}
    assert.are.equal(4, (plain:conflicts(store(0))))
    assert.are.equal(1, (padded:conflicts(store(0))))
  end)

  it("still simulates bit-exact (the narrowed allocations keep the program's meaning)", function()
    local o = {M = 64, N = 64, K = 128, a_zero_point = -128, b_sums = "input", bias = true, scale = "per_channel", out_zero_point = 5}
    local f = qm(o)
    local sch = qg.schedule(f, {intrin = "mma", tc = {BM = 64, BN = 64, BK = 64, warp_m = 32, warp_n = 32, stages = 2}})
    local mod = tir.build(sch.mod, "cuda -arch=sm_80", {compile = false})
    local rep = tir.simulate(mod, tir.testing.random_args(f, 9), {reference = f})
    assert.are.equal(0, rep.n_issues)
  end)

  it("does not reuse bytes under a loop (a barrier per iteration would be needed)", function()
    -- A -> B -> C -> G -> D (shared stages), per row i of a serial loop: B is dead once C is
    -- computed and G could take its bytes, but the next iteration's B would overwrite G while
    -- it is read
    local te = tir.te
    local A = te.placeholder({4, 64}, "float32", "A")
    local B = te.compute({4, 64}, function(i, j) return A[{i, j}] * 2 end, "B")
    local C = te.compute({4, 64}, function(i, j) return B[{i, j}] + 1 end, "C")
    local G = te.compute({4, 64}, function(i, j) return C[{i, j}] * 3 end, "G")
    local D = te.compute({4, 64}, function(i, j) return G[{i, j}] - A[{i, j}] end, "D")
    local ref = te.create_prim_func({A, D})
    local sch = tir.Schedule(ref)
    local i, j = sch:get_loops(sch:get_block("D"))
    sch:bind(j, "threadIdx.x")
    for _, name in ipairs({"G", "C", "B"}) do
      local b = sch:get_block(name)
      sch:compute_at(b, i)
      sch:set_scope(b, 0, "shared.dyn")
      local l = {sch:get_loops(b)}
      sch:bind(l[#l], "threadIdx.x")
    end
    local mod = tir.build(sch.mod, "cuda -arch=sm_80", {compile = false})
    local src = mod:get_source("cuda")
    local offs = {}
    for off in src:gmatch("%(tir_dyn_smem %+ (%d+)%)") do offs[#offs + 1] = tonumber(off) end
    assert.are.same({0, 256, 512}, offs)
    assert.are.equal(768, mod:kernels()[1].dyn_smem_bytes)
    assert.is_falsy(src:find("__syncthreads();\n%s*float%* ", 1))
    local rep = tir.simulate(mod, tir.testing.random_args(ref, 2), {reference = ref})
    assert.are.equal(0, rep.n_issues)
  end)
end)
