-- split_k_serial_spec.lua -- tc_gemm split_k_mode = "serial": the sum over split-K's slices in the
-- GEMM's own launch (lower_grid_tail + tir_grid_arrive_last: the last CTA of each output tile sums
-- the partials; CUTLASS's serial split-K semaphore).  The scheduled function is checked against
-- the workload on the interpreter (fp16 within rounding, int8 exactly), its one lowered kernel on
-- the simulator against the interpreter of the scheduled function bit for bit (and against the
-- parallel mode's two kernels: the same sums in the same order), the pass alone on a small T
-- script, and the errors.  The #gpu cases compare with cuBLAS and with the parallel mode.
local tir = require("tir")
local U = require("spec_util")
local tc = require("tir.schedules.tc_gemm")

local SMALL = {BM = 32, BN = 128, BK = 32, warp_m = 16, warp_n = 32, stages = 2}
local function opts(o) return U.merge(SMALL, o) end

local function build(sch) return tir.build(sch.mod, "cuda -arch=sm_80", {compile = false}) end

local sim = U.sim_scheduled -- (the simulator against the interpreter of sch.mod, exactly)
local kernels = U.kernel_count

describe("tc_gemm split_k_mode = \"serial\"", function()
  it("fp16 -> fp16: one kernel; the last CTA of a tile sums the slices (interpreter, simulator, same bits as parallel)", function()
    for _, S in ipairs({2, 3}) do
      local f = tc.workload(32, 256, 96 * S, "float16", "float16")
      local sch = tc.schedule(f, opts({split_k = S, split_k_mode = "serial", epilogue = "D"}))
      U.assert_equiv(f, sch.mod, {rtol = 1e-3, atol = 1e-3})
      local mod = build(sch)
      assert.are.equal(1, kernels(mod))
      local src = mod:get_source("cuda")
      assert.truthy(src:find("tir_grid_arrive_last(", 1, true))
      assert.truthy(src:find("atomicAdd", 1, true))
      assert.truthy(mod:get_source("host"):find("grid_counter", 1, true))
      local args = tir.testing.random_args(f, 5)
      sim(sch, args)
      -- the parallel mode adds the same partials in the same order: the same bits
      local par = tc.schedule(f, opts({split_k = S, epilogue = "D"}))
      local a1, a2 = tir.testing.random_args(f, 7), tir.testing.random_args(f, 7)
      tir.interpret(sch.mod, a1)
      tir.interpret(par.mod, a2)
      assert.are.same(a2[3]:to_table(), a1[3]:to_table())
    end
  end)

  it("int8 -> int32 exact, fp32 output without an epilogue, group_m tiles (one grid dimension)", function()
    local f = tc.workload(64, 256, 256, "int8")
    local sch = tc.schedule(f, {BM = 32, BN = 128, BK = 64, warp_m = 16, warp_n = 32, stages = 2, split_k = 2, split_k_mode = "serial"})
    U.assert_equiv(f, sch.mod)
    sim(sch, U.full_range_args(f, 3))
    local g = tc.workload(64, 128, 128, "float16")
    local sch2 = tc.schedule(g, opts({split_k = 2, split_k_mode = "serial", group_m = 2}))
    assert.truthy(tostring(sch2.mod):find('T.thread_binding(2, "blockIdx.x")', 1, true))
    U.assert_equiv(g, sch2.mod, {rtol = 1e-3, atol = 1e-3})
    sim(sch2)
  end)

  it("the padded workload (odd shapes): the writeback D runs in the last CTA too", function()
    local f = tc.workload(5, 200, 200, "float16", "float16", {32, 128, 64})
    local sch = tc.schedule(f, opts({split_k = 2, split_k_mode = "serial"}))
    U.assert_equiv(f, sch.mod, {rtol = 1e-3, atol = 1e-3})
    sim(sch)
  end)

  it("lower_grid_tail: code after a blockIdx loop inside another becomes the last CTA's, on a counter per outer CTA", function()
    -- out[i] = sum over z of part[z, i], written by 3 CTAs per i; serially the sum runs after the z loop
    local T = tir.script
    local f = T.prim_func("main", {X = T.Buffer({3, 4, 32}, "float32"), Y = T.Buffer({4, 32}, "float32")}, function(X, Y)
      T.block("root", function()
        local P = T.alloc_buffer({3, 4, 32}, "float32")
        for bx in T.thread_binding(4, "blockIdx.x") do
          for bz in T.thread_binding(3, "blockIdx.z") do
            for tx in T.thread_binding(32, "threadIdx.x") do
              T.block("part", function()
                local vz, vb, vt = T.axis.remap("SSS", {bz, bx, tx})
                P[{vz, vb, vt}] = X[{vz, vb, vt}] * T.float32(2.0)
              end)
            end
          end
          for tx in T.thread_binding(32, "threadIdx.x") do
            for z in T.serial(3) do
              T.block("sum", function()
                local vb, vt, vz = T.axis.remap("SSR", {bx, tx, z})
                T.init(function() Y[{vb, vt}] = T.float32(0.0) end)
                Y[{vb, vt}] = Y[{vb, vt}] + P[{vz, vb, 31 - vt}]
              end)
            end
          end
        end
      end)
    end)
    local g = tir.core.run_pass("lower_grid_tail", f)
    local text = tostring(g)
    assert.truthy(text:find('T.alloc_buffer({4}, "int32", {scope = "global.zeroed"})', 1, true))
    assert.truthy(text:find('tir_grid_arrive_last', 1, true))
    -- the pass keeps the serial meaning (the interpreter runs the guard: counters start at 0)
    U.assert_equiv(f, g)
    local mod = tir.build(f, "cuda -arch=sm_80", {compile = false})
    local rep = tir.simulate(mod, tir.testing.random_args(f, 1), {reference = f})
    assert.are.equal(0, rep.n_issues)
    -- and so does the scheduled tc_gemm after the pass (the guard at CTA level, outside the threads' loops)
    local fg = tc.workload(32, 256, 192, "float16", "float16")
    local sg = tc.schedule(fg, opts({split_k = 2, split_k_mode = "serial", epilogue = "D"}))
    U.assert_equiv(sg.mod, tir.core.run_pass("lower_grid_tail", sg.mod))
    -- the interpreter refuses the CTA-wide call in lowered code, with a message saying what to do
    local low = tir.lower(f)
    local ok, err = pcall(tir.interpret, low, tir.testing.random_args(f, 1))
    assert.is_false(ok)
    assert.truthy(tostring(err):find("tir_grid_arrive_last", 1, true))
  end)

  it("bad options: clear errors", function()
    local f = tc.workload(32, 128, 256, "float16", "float16")
    U.expect_error(function() tc.schedule(f, opts({split_k = 2, split_k_mode = "stream"})) end, "split_k_mode", "serial")
    local b = U.batched_matmul(3, 32, 128, 128)
    U.expect_error(function() tc.schedule(b, opts({block = "bmm", split_k = 2, split_k_mode = "serial"})) end, "batch dimensions")
  end)
end)

describe("#gpu tc_gemm split_k_mode = \"serial\"", function()
  local dev = U.gpu_or_pending(it, function(why) pending(why) end)
  if not dev then return end
  -- the configurations of bench/gemm_fp16.lua's mma_b64_s3_sk3(_ser) and m16_b64s3_k4_ser (K padded
  -- to 3 whole slices at M = 128), so a run after the bench finds them in the kernel cache
  it("128x11008x4096 (K padded to 4224), 128x128x64, split_k = 3: serial matches cuBLAS and the parallel mode bit for bit", function()
    local m, n, k = 128, 11008, 4096
    local f = tc.workload(m, n, k, "float16", "float16", {128, 128, 192})
    local o = {intrin = "mma", BK = 64, stages = 3, split_k = 3, split_k_mode = "serial"}
    -- the counters come back to 0: every run sums each tile once
    local c1, c2, ser = U.split_k_vs_parallel(f, o, m, n, k, dev, 3)
    U.check_vs_cublas(ser, m, n, k, dev)
    assert.are.same(c1, c2)
  end)
  it("16x11008x4096, 16x128x64, split_k = 4 serial matches cuBLAS", function()
    local f = tc.workload(16, 11008, 4096, "float16", "float16")
    local o = {intrin = "mma", BM = 16, warp_m = 16, BN = 128, warp_n = 32, BK = 64, stages = 3, split_k = 4, split_k_mode = "serial",
               epilogue = "D"}
    U.check_vs_cublas(tir.build(tc.schedule(f, o).mod, "cuda"), 16, 11008, 4096, dev)
  end)
end)
