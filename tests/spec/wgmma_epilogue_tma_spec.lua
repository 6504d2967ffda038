-- wgmma_epilogue_tma_spec.lua -- tc_gemm_wgmma's staged epilogue stored by TMA (epilogue_store = "tma"
-- with an epilogue that reads more than the accumulator: bias, relu, gelu ...): the accumulators go
-- into a shared tile per warpgroup, its 128 threads run the epilogue block from it into a dense 64 x BN
-- shared tile of outputs, and one cp.async.bulk.tensor store per warpgroup tile leaves it
-- (inject_tma_store.c), also warp-specialized and persistent (consumer-only named barriers).
-- Interpreter-equivalent before/after the schedule, simulator bit-exact against the interpreter,
-- a planted missing proxy fence reported, the PTX for sm_90a holds the store; bad epilogues are clear
-- errors.
local tir = require("tir")
local te = tir.te
local T = tir.script
local U = require("spec_util")
local tc = require("tir.schedules.tc_gemm")

local asan = os.getenv("ASAN_OPTIONS") ~= nil
local nvrtc_ok = tir.core.nvrtc_available()

local workload = require("tir.schedules.tc_gemm_wgmma_epilogue").workload -- D = cast(act(A B^T + bias)), relu by default

local function sched(f, o)
  local opts = {intrin = "wgmma", epilogue = "D", epilogue_store = "tma"}
  for k, v in pairs(o) do opts[k] = v end
  return tc.schedule(f, opts)
end

describe("tc_gemm intrin = \"wgmma\": a staged epilogue stored by TMA", function()
  local cases = {
    {"float16 bias + relu, 2 warpgroups, TMA loads", {128, 256, 128, "float16"}, {BM = 128, BN = 128, BK = 64, stages = 2, tma = true}},
    {"bfloat16 bias + relu, warp-specialized, persistent", {256, 256, 128, "bfloat16"},
     {BM = 128, BN = 64, BK = 64, stages = 2, tma = true, warp_specialize = true, persistent = 2}},
    {"float16 bias + gelu (tanh), cp.async loads", {64, 128, 128, "float16", "gelu"}, {BM = 64, BN = 64, BK = 64, stages = 2}},
  }
  if asan then cases = {cases[2]} end
  for _, c in ipairs(cases) do
    it(c[1] .. ": interpreter-equivalent, simulator bit-exact, one TMA store a warpgroup tile", function()
      local s = c[2]
      local f = workload(s[1], s[2], s[3], s[4], s[5])
      local sch = sched(f, c[3])
      U.assert_equiv(f, sch.mod, {trials = 1, rtol = 0, atol = 0})
      local mod = tir.build(sch.mod, "cuda -arch=sm_90a", {compile = false})
      local rep = tir.simulate(mod, tir.testing.random_args(f, 3), {reference = f})
      assert.are.equal(0, rep.n_issues)
      assert.are.equal(0, rep.races)
      local text = tostring(mod:lowered())
      -- one store in the code, issued per warpgroup tile; no direct global store of D
      assert.are.equal(1, U.count_calls(text, "ptx_tma_store"))
      assert.is_nil(text:find("\n%s*D_1%[") or text:find("\n%s*D%["), text)
      -- the epilogue's outputs: a dense tile (TMA reads boxes without padding), the staged
      -- accumulators padded (the wgmma store's rows spread over the banks)
      assert.is_truthy(text:find(('"tma_descriptor", D[_1]*, "%s", 0, 2, %d, %d, 64, %d%%)'):format(s[4], s[1], s[2], c[3].BN)), text)
      if c[3].warp_specialize then
        -- the consumers' named barrier around the store, never __syncthreads (the producer would not come)
        local at = text:find('"ptx_tma_store"', 1, true)
        assert.is_truthy(text:sub(1, at):match('"ptx_fence_proxy_async"%)%)%s*T%.evaluate%(T%.call%("void", "ptx_bar_sync", 1, 256%)%)'), text)
        assert.is_nil(text:find("tvm_storage_sync", text:find('"named_barrier"', 1, true), true), text)
      end
    end)
  end

  it("reports the outputs written without fence.proxy.async before the TMA store reads them", function()
    local f = workload(64, 64, 64, "float16")
    local low = tir.lower(sched(f, {BM = 64, BN = 64, BK = 64, stages = 1}).mod)
    -- (cp.async loads: the only proxy fence is the store's)
    local bad = U.drop_call(low, "ptx_fence_proxy_async", 1)
    U.expect_error(function() tir.simulate(bad, tir.testing.random_args(f, 1)) end, "a TMA store", "fence.proxy.async")
  end)

  it("builds for sm_90a with NVRTC: the PTX holds the bulk tensor store after the proxy fence", function()
    if not nvrtc_ok then return pending("NVRTC is not available") end
    local f = workload(256, 256, 256, "float16")
    local mod = tir.build(sched(f, {BM = 128, BN = 128, BK = 64, stages = 3, tma = true, warp_specialize = true, persistent = true}).mod,
                          "cuda -arch=sm_90a")
    local ptx = mod:get_source("ptx")
    local st = ptx:find("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group", 1, true)
    assert.is_truthy(st, "no TMA store in the PTX")
    assert.is_truthy(ptx:sub(1, st):find("fence.proxy.async.shared::cta", 1, true))
    assert.matches("cp%.async%.bulk%.wait_group%.read 0", ptx)
    assert.matches("max%.f32", ptx) -- relu in the epilogue
    local ok, out = U.ptxas(ptx)
    if ok == nil then return pending("ptxas is not installed") end
    assert.is_true(ok, out)
    assert.matches("0 bytes spill stores", out)
  end)

  it("the defaults (no tile option) for a staged epilogue fit: 128x256 s4 one CTA a tile, small M 128x128 s4 ws", function()
    local W = require("tir.schedules.tc_gemm_wgmma")
    for _, c in ipairs({{4096, 4096, 4096, "float16", "128x256x64 s4, one CTA a tile"}, {4096, 11008, 4096, "bfloat16", "128x256x64 s4"},
                        {128, 11008, 4096, "float16", "128x128x64 s4 ws"}}) do
      local sch, o = tc.auto_tensorize(workload(c[1], c[2], c[3], c[4]), "wgmma", nil, {epilogue = "D"})
      assert.is_truthy(o.config:find("pick: staged epilogue, " .. c[5], 1, true), o.config)
      local k = tir.build(sch.mod, "cuda -arch=sm_90a", {compile = false}):kernels()[1]
      assert.is_true(k.dyn_smem_bytes <= 227 * 1024, tostring(k.dyn_smem_bytes))
    end
    -- a bf16 cast is staged too (the fused store converts to float16 only); the fp16 cast keeps the plain pick
    local _, why = W.pick(4096, 4096, 4096, "bfloat16", 132, "bfloat16", true)
    assert.matches("staged epilogue", why)
    local _, o16 = tc.auto_tensorize(tc.workload(4096, 4096, 4096, "float16", "float16", nil, "NT"), "wgmma", nil, {epilogue = "D"})
    assert.matches("pick: 128x256x64 s3 ws persistent tma%-store", o16.config)
    local _, obf = tc.auto_tensorize(tc.workload(4096, 4096, 4096, "bfloat16", nil, nil, "NT"), "wgmma")
    assert.is_nil(obf.config:find("staged", 1, true), obf.config)
  end)

  it("refuses epilogues that are not elementwise, two outputs, tiles that do not fit and shapes the tiles do not divide", function()
    local M, N, K = 128, 128, 128
    local A = te.placeholder({M, K}, "float16", "A")
    local B = te.placeholder({N, K}, "float16", "B")
    local k = te.reduce_axis({0, K}, "k")
    local C = te.compute({M, N}, function(i, j) return te.sum(te.cast("float32", A[{i, k}]) * te.cast("float32", B[{j, k}]), {k}) end, "C")
    local o = {BM = 64, BN = 128, BK = 64, stages = 2}
    -- transposed, reversed, a reduction over C's columns
    local Dt = te.compute({M, N}, function(i, j) return te.cast("float16", C[{j, i}]) end, "D")
    U.expect_error(function() sched(te.create_prim_func({A, B, Dt}), o) end, "tc_gemm.schedule", "epilogue 'D' must be elementwise in C",
                   "reads C's column v_i where it writes column v_j", "D[{v_i, v_j}]")
    local Dr = te.compute({M, N}, function(i, j) return te.cast("float16", C[{i, N - 1 - j}]) end, "D")
    U.expect_error(function() sched(te.create_prim_func({A, B, Dr}), o) end, "must be elementwise", "column 127 - v_j")
    local r = te.reduce_axis({0, N}, "r")
    local Ds = te.compute({M}, function(i) return te.sum(C[{i, r}], {r}) end, "D")
    U.expect_error(function() sched(te.create_prim_func({A, B, Ds}), o) end, "must be elementwise", "v_r is not spatial")
    -- an epilogue block writing two buffers
    local f2 = T.prim_func("two", {A2 = T.Buffer({M, K}, "float16"), B2 = T.Buffer({N, K}, "float16"), D = T.Buffer({M, N}, "float16"),
                                   E = T.Buffer({M, N}, "float16")}, function(A2, B2, D, E)
      local C2 = T.alloc_buffer({M, N}, "float32")
      for i, j, kk in T.grid(M, N, K) do
        T.block("C", function()
          local vi, vj, vk = T.axis.remap("SSR", {i, j, kk})
          T.init(function() C2[{vi, vj}] = T.float32(0) end)
          C2[{vi, vj}] = C2[{vi, vj}] + T.cast("float32", A2[{vi, vk}]) * T.cast("float32", B2[{vj, vk}])
        end)
      end
      for i, j in T.grid(M, N) do
        T.block("D", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          D[{vi, vj}] = T.cast("float16", C2[{vi, vj}])
          E[{vi, vj}] = T.cast("float16", C2[{vi, vj}] * T.float32(2))
        end)
      end
    end)
    U.expect_error(function() sched(f2, o) end, "tc_gemm.schedule", "epilogue 'D' must write one buffer (it writes 2)")
    -- 128 x 256 warp-specialized: the pipeline tiles, the staged accumulators and the output tile
    U.expect_error(function()
      sched(workload(256, 256, 512, "float16"), {BM = 128, BN = 256, BK = 64, stages = 3, tma = true, warp_specialize = true})
    end, "tc_gemm.schedule", "the pipeline tiles (147456 bytes) stay allocated", "the dense 128 x 256 tile of float16 outputs",
       "> the 227 KB a block may use")
    -- persistent keeps the pipeline tiles too
    U.expect_error(function()
      sched(workload(256, 512, 512, "float16"), {BM = 128, BN = 256, BK = 64, stages = 3, tma = true, persistent = 2})
    end, "persistent with epilogue 'D'", "stay allocated")
    -- the workload's own arguments
    U.expect_error(function() workload(64, 64, 64, "float32") end, "tc_gemm_wgmma_epilogue.workload", "dtype must be")
    U.expect_error(function() workload(64, 64, 64, "float16", "swish") end, "act must be \"relu\", \"gelu\"")
    U.expect_error(function() workload(64, 0, 64, "float16") end, "N must be a positive integer")
    -- M, N the tiles do not divide (TMA stores whole boxes; tc.workload's pad is for the plain cast)
    U.expect_error(function() sched(workload(96, 128, 128, "float16"), o) end, "tc_gemm.schedule", "M = 96 is not a multiple of BM = 64")
  end)
end)
