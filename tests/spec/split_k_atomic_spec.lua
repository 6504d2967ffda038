-- split_k_atomic_spec.lua -- tc_gemm split_k_mode = "atomic": each CTA adds its slice of split-K
-- into a zeroed fp32 (int32) tile with red.global.add (mma_store's "add" mode, the
-- mma_store_add_16x16_<acc>_global intrinsic), the last CTA of the tile casts it into the output
-- and sets it back to 0 (lower_grid_tail moves the sum's init behind its tail), one launch and no
-- partials workspace.  The scheduled function is checked against the workload on the interpreter
-- (fp16 within rounding), its one lowered kernel on the simulator against the interpreter of the
-- scheduled function bit for bit (the simulator runs the CTAs in order: the slices in order), the
-- same bits as the serial mode, the pass alone on a small T script, the codegen, and the errors.
-- The #gpu cases compare with cuBLAS and with the parallel mode, after repeated launches.
local tir = require("tir")
local U = require("spec_util")
local tc = require("tir.schedules.tc_gemm")

local SMALL = {BM = 32, BN = 128, BK = 32, warp_m = 16, warp_n = 32, stages = 2}
local function opts(o) return U.merge(SMALL, o) end
local TOL = {rtol = 1e-3, atol = 1e-3}
local asan = os.getenv("ASAN_OPTIONS") ~= nil

describe("tc_gemm split_k_mode = \"atomic\"", function()
  it("fp16 -> fp16: one kernel, red.global.add into a zeroed tile, the last CTA casts (interpreter, simulator, same bits as serial)", function()
    for _, S in ipairs({2, 3}) do
      local f = tc.workload(32, 256, 96 * S, "float16", "float16")
      local sch = tc.schedule(f, opts({split_k = S, split_k_mode = "atomic", epilogue = "D"}))
      U.assert_equiv(f, sch.mod, TOL)
      -- the sum's init is a block of its own (decompose_reduction), before the slices' loop
      assert.truthy(tostring(sch.mod):find('T.block("C_init"', 1, true))
      assert.truthy(tostring(sch.mod):find('"mma_store_add_16x16_f32_global"', 1, true))
      local mod = tir.build(sch.mod, "cuda -arch=sm_90a", {compile = false})
      assert.are.equal(1, U.kernel_count(mod))
      local src = mod:get_source("cuda")
      assert.truthy(src:find("atomicAdd((float2*)", 1, true)) -- sm_90: one red.global.add.v2.f32 per pair
      assert.truthy(src:find("tir_grid_arrive_last(", 1, true))
      -- 3 slices: the last slice's CTA waits for the other two before its adds (split_k_ordered's
      -- default), so the sum is (a + b) + c in any arrival order; 2 slices need no wait
      assert.are.equal(S == 3 and 1 or 0, U.count(src, "tir_grid_wait%(%(int%*%)"))
      U.sim_scheduled(sch, tir.testing.random_args(f, 5))
      -- serially the slices are added in order, as the serial mode does: the same bits
      local ser = tc.schedule(f, opts({split_k = S, split_k_mode = "serial", epilogue = "D"}))
      local a1, a2 = tir.testing.random_args(f, 7), tir.testing.random_args(f, 7)
      tir.interpret(sch.mod, a1)
      tir.interpret(ser.mod, a2)
      assert.are.same(a2[3]:to_table(), a1[3]:to_table())
    end
    -- sm_80: two scalar reds per pair (atomicAdd(float*, float) with the result unused)
    local f = tc.workload(32, 256, 192, "float16", "float16")
    local src = tir.build(tc.schedule(f, opts({split_k = 2, split_k_mode = "atomic", epilogue = "D"})).mod, "cuda -arch=sm_80",
                          {compile = false}):get_source("cuda")
    assert.falsy(src:find("float2*)", 1, true))
    assert.truthy(src:find("atomicAdd(p_ + o_, c_[4 * t_ + 2 * h_])", 1, true))
  end)

  it("K padded to whole slices, 16-row tiles, the padded workload's D (odd shapes), 128x128x64 tiles", function()
    local cases = {
      {tc.workload(32, 256, 256, "float16", "float16"), opts({split_k = 3, split_k_mode = "atomic", epilogue = "D"})},
      {tc.workload(16, 256, 256, "float16", "float16"),
       {BM = 16, BN = 128, BK = 32, warp_m = 16, warp_n = 32, stages = 3, split_k = 4, split_k_mode = "atomic", epilogue = "D"}},
      {tc.workload(5, 200, 200, "float16", "float16", {32, 128, 64}), opts({split_k = 2, split_k_mode = "atomic"})},
    }
    if not asan then
      cases[#cases + 1] = {tc.workload(128, 256, 384, "float16", "float16"),
                           {BM = 128, BN = 128, BK = 64, stages = 3, split_k = 3, split_k_mode = "atomic", epilogue = "D"}}
    end
    for _, c in ipairs(cases) do
      local sch = tc.schedule(c[1], c[2])
      U.assert_equiv(c[1], sch.mod, TOL)
      U.sim_scheduled(sch, tir.testing.random_args(c[1], 3))
    end
  end)

  it("lower_grid_tail: a zero init of a global.zeroed sum before the blockIdx loop goes behind the tail, after a barrier", function()
    -- Y[i] = sum over z of X[z, i]: 3 CTAs per i add into the zeroed S; the last one copies S to Y
    local T = tir.script
    local function make(init)
      return T.prim_func("main", {X = T.Buffer({3, 4, 32}, "float32"), Y = T.Buffer({4, 32}, "float32")}, function(X, Y)
        T.block("root", function()
          local S = T.alloc_buffer({4, 32}, "float32", {scope = "global.zeroed"})
          for bx in T.thread_binding(4, "blockIdx.x") do
            for tx in T.thread_binding(32, "threadIdx.x") do
              T.block("init", function()
                local vb, vt = T.axis.remap("SS", {bx, tx})
                S[{vb, vt}] = T.float32(init)
              end)
            end
            for bz in T.thread_binding(3, "blockIdx.z") do
              for tx in T.thread_binding(32, "threadIdx.x") do
                T.block("add", function()
                  local vb, vt, vz = T.axis.remap("SSR", {bx, tx, bz})
                  S[{vb, vt}] = S[{vb, vt}] + X[{vz, vb, vt}]
                end)
              end
            end
            for tx in T.thread_binding(32, "threadIdx.x") do
              T.block("out", function()
                local vb, vt = T.axis.remap("SS", {bx, tx})
                Y[{vb, vt}] = S[{vb, 31 - vt}]
              end)
            end
          end
        end)
      end)
    end
    local f = make(0.0)
    local g = tir.core.run_pass("lower_grid_tail", f)
    local text = tostring(g)
    -- the init now follows the tail's copy, behind a __syncthreads, inside the last CTA's branch
    local p_out, p_sync, p_init = text:find('T.block("out"', 1, true), text:find('"syncthreads"', 1, true), text:find('T.block("init"', 1, true)
    assert.truthy(p_out and p_sync and p_init)
    assert.truthy(p_out < p_sync and p_sync < p_init)
    U.assert_equiv(f, g)
    -- a statement before the loop that is more than a zero init stays where it was
    -- grid_last_waits on a loop without atomic adds: a clear error
    local w = tir.Schedule(f)
    local ls = {w:get_loops(w:get_block("add"))}
    w:annotate(ls[2], "grid_last_waits", 1)
    U.expect_error(function() tir.core.run_pass("lower_grid_tail", w.mod) end, "grid_last_waits", "no atomic add")
    local h = make(1.0)
    local ht = tostring(tir.core.run_pass("lower_grid_tail", h))
    assert.truthy(ht:find('T.block("init"', 1, true) < ht:find('tir_grid_arrive_last', 1, true))
  end)

  it("bad options: clear errors", function()
    local o = opts({split_k = 2, split_k_mode = "atomic"})
    U.expect_error(function() tc.schedule(tc.workload(64, 256, 256, "int8", "int32"), U.merge(o, {BK = 64})) end,
                   "split_k_mode = \"atomic\"", "no epilogue block")
    U.expect_error(function() tc.schedule(tc.workload(64, 256, 256, "bfloat16", "float16"), U.merge(o, {epilogue = "D"})) end,
                   "bfloat16", "subnormal")
    U.expect_error(function() tc.schedule(tc.workload(64, 256, 256, "float16", "float16"), U.merge(o, {epilogue = "D", intrin = "wmma"})) end,
                   "wmma", "intrin = \"mma\"")
    U.expect_error(function() tc.schedule(tc.workload(64, 256, 256, "float16", "float16"), U.merge(o, {split_k_mode = "stream"})) end,
                   "split_k_mode", "atomic")
    local f16 = tc.workload(32, 256, 512, "float16", "float16")
    U.expect_error(function() tc.schedule(f16, U.merge(o, {epilogue = "D", split_k = 4, split_k_ordered = true})) end,
                   "split_k_ordered = true with split_k = 4", "arrival order")
    U.expect_error(function() tc.schedule(f16, U.merge(o, {epilogue = "D", split_k_mode = "serial", split_k_ordered = true})) end,
                   "split_k_ordered", "split_k_mode = \"serial\"")
    U.expect_error(function() tc.schedule(f16, U.merge(SMALL, {epilogue = "D", split_k_ordered = false})) end,
                   "split_k_ordered", "split_k > 1")
    -- split_k_ordered = false: no wait, the adds land in arrival order
    local src = tir.build(tc.schedule(tc.workload(32, 256, 288, "float16", "float16"),
                                      U.merge(o, {epilogue = "D", split_k = 3, split_k_ordered = false})).mod, "cuda -arch=sm_90a",
                          {compile = false}):get_source("cuda")
    assert.are.equal(0, U.count(src, "tir_grid_wait%(%(int%*%)"))
    U.expect_error(function() tc.schedule(U.batched_matmul(3, 32, 128, 128), U.merge(o, {block = "bmm"})) end, "batch dimensions")
  end)
end)

describe("#gpu tc_gemm split_k_mode = \"atomic\"", function()
  local dev = U.gpu_or_pending(it, function(why) pending(why) end)
  if not dev then return end
  -- bench/gemm_fp16.lua's mma_b64_s3_sk3_at (K padded to 3 whole slices at M = 128)
  it("128x11008x4096 (K padded to 4224), 128x128x64, split_k = 3 (ordered): cuBLAS's results, the parallel mode's bits after repeated launches", function()
    local m, n, k = 128, 11008, 4096
    local f = tc.workload(m, n, k, "float16", "float16", {128, 128, 192})
    -- the zeroed sums and counters come back to 0: every launch sums each tile once; the last slice's
    -- CTA adds last (split_k_ordered), so the sums are (a + b) + c: the parallel mode's bits
    local c1, c2, at = U.split_k_vs_parallel(f, {intrin = "mma", BK = 64, stages = 3, split_k = 3, split_k_mode = "atomic"}, m, n, k, dev, 3)
    U.check_vs_cublas(at, m, n, k, dev)
    assert.are.same(c1, c2)
  end)
  it("16x11008x4096, 16x128x64: split_k = 4 atomic matches cuBLAS; 2 slices give the parallel mode's bits", function()
    local f = tc.workload(16, 11008, 4096, "float16", "float16")
    local o = {intrin = "mma", BM = 16, warp_m = 16, BN = 128, warp_n = 32, BK = 64, stages = 4, split_k = 4, split_k_mode = "atomic",
               epilogue = "D"}
    U.check_vs_cublas(tir.build(tc.schedule(f, o).mod, "cuda"), 16, 11008, 4096, dev)
    -- with 2 slices the order of the two adds into 0 does not matter
    local c1, c2 = U.split_k_vs_parallel(f, U.merge(o, {split_k = 2}), 16, 11008, 4096, dev, 2)
    assert.are.same(c1, c2)
  end)
end)
