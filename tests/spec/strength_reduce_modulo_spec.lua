-- strength_reduce_modulo_spec.lua -- the pass that turns floormod(k + c, S) of a serial loop's
-- variable into registers advanced with a wrap (a pipeline's stage indices; CUTLASS's
-- smem_read/write_stage_idx): exact on every iteration, from any loop start, negative skews
-- included; powers of two, other variables and host loops untouched; the mma.sync pipeline's
-- main loop computes no `% 3` after it (and its copies' global addresses are pointer + constant,
-- codegen) and still matches the reference in the simulator.
local tir = require("tir")
local T = tir.script
local U = require("spec_util")
local tc = require("tir.schedules.tc_gemm")

-- a kernel of 8 threads, each walking k in [lo, hi): the moduli of k + c (c = 2, -1, a power of
-- two, and one of k + threadIdx.x, which is no constant skew)
local function kernel(lo, hi)
  local n = hi - lo
  return T.prim_func("main", {A = T.Buffer({16}, "int32"), C = T.Buffer({8 * n}, "int32")}, function(A, C)
    local tx = T.launch_thread("threadIdx.x", 8)
    for k in T.serial(lo, hi) do
      C[{tx * n + k - lo}] = A[{(k + 2) % 3}] * 1000 + A[{(k - 1) % 5 + 3}] * 100 + A[{(k + 5) % 3}] * 10 + A[{k % 4 + 8}] +
                             A[{(k + tx) % 3 + 12}]
    end
  end)
end

describe("strength_reduce_modulo", function()
  it("replaces floormod(k + c, S) by wrapped registers, exactly, from any loop start", function()
    for _, r in ipairs({{0, 17}, {3, 20}, {-4, 9}, {5, 6}}) do
      local f = kernel(r[1], r[2])
      local g = tir.core.run_pass("strength_reduce_modulo", f)
      U.assert_equiv(f, g, {trials = 2})
      local s = tostring(g)
      -- (k + 2) % 3 and (k + 5) % 3 are one register; (k - 1) % 5 another
      assert.matches('local k_stage = T.allocate%({2}, "int32", "local"%)', s)
      assert.is_nil(s:find("(k + 2) % 3", 1, true))
      assert.is_nil(s:find("(k - 1) % 5", 1, true))
      assert.truthy(s:find("k % 4", 1, true), s)             -- a power of two: one AND already
      assert.truthy(s:find("(k + threadIdx_x) % 3", 1, true), s) -- not a constant skew
      assert.matches("T.Select%(T.eq%(k_stage%[{1}%], 4%), 0, k_stage%[{1}%] %+ 1%)", s)
    end
  end)

  it("leaves loops outside kernels alone", function()
    local f = T.prim_func("main", {A = T.Buffer({3}, "int32"), C = T.Buffer({10}, "int32")}, function(A, C)
      for k in T.serial(10) do C[{k}] = A[{(k + 1) % 3}] end
    end)
    local g = tir.core.run_pass("strength_reduce_modulo", f)
    assert.is_true(tir.structural_equal(f, g))
  end)

  it("takes the mod out of the mma.sync pipeline's main loop, which still matches the reference", function()
    -- 3 stages (versions % 3) with frag_prefetch, as auto_tensorize's 256 x 128 x 64 pick on a small tile
    local f = tc.workload(64, 64, 384, "float16", "float16")
    local sch = tc.schedule(f, {BM = 32, BN = 64, BK = 64, warp_m = 16, warp_n = 32, stages = 3, frag_prefetch = true, group_m = 2,
                                epilogue = "D"})
    local mod = tir.build(sch.mod, "cuda", {compile = false})
    local src = mod:get_source("cuda")
    local at = assert(src:find("for (int k_0", 1, true))
    local indent = src:sub(1, at):match("\n( *)[^\n]*$")
    local loop = src:sub(at, assert(src:find("\n" .. indent .. "}", at, true)))
    assert.is_nil(loop:find("% 3", 1, true), loop)
    assert.truthy(src:find("int k_0_stage[", 1, true))
    -- codegen's ptr_ref: the copies' global addresses as (A + x) + constant (one pointer a tile)
    assert.truthy(loop:find("tir_cp_async<16>%(%b(), %(%(A %+ %b()%) %+ %d+%)%);"), loop)
    local rep = tir.simulate(mod, tir.testing.random_args(f, 3), {reference = true})
    assert.are.same({0, 0}, {rep.n_issues, rep.races})
  end)
end)
