-- warp_specialization_spec.lua -- inject_warp_specialization (src/core/transform/
-- inject_warp_specialization.c) and tc_gemm's warp_specialize = true on the wgmma + TMA GEMM: a
-- producer warpgroup (one thread issuing every TMA copy, waiting on the "empty" mbarriers) beside
-- the consumer warpgroups (waiting on "full", wgmma, releasing the stage), setmaxnreg moving
-- registers to the consumers, named barriers (bar.sync 1, n) where a __syncthreads would wait for
-- the producer.  The scheduled functions run on the interpreter against the workload, the lowered
-- kernels on the simulator (the two roles as tasks) bit-exactly against it, with planted bugs
-- reported; the lowered IR, the CUDA C and the PTX are checked per role; bad inputs are clear errors.
local tir = require("tir")
local T = tir.script
local U = require("spec_util")
local tc = require("tir.schedules.tc_gemm")

local nvrtc_ok = tir.core.nvrtc_available()
local asan = os.getenv("ASAN_OPTIONS") ~= nil

local function ws_gemm(M, N, K, o, dtype, out)
  local f = tc.workload(M, N, K, dtype or "float16", out or "float32", nil, "NT")
  local opts = {intrin = "wgmma", BM = 128, BN = 256, BK = 64, stages = 2, tma = true, warp_specialize = true}
  for k, v in pairs(o or {}) do opts[k] = v end
  return f, tc.schedule(f, opts)
end

local function count(s, pat)
  local n = 0
  for _ in s:gmatch(pat) do n = n + 1 end
  return n
end

-- the text of the branch that starts at `head` (balanced braces) in CUDA source
local function branch(src, head)
  local at = assert(src:find(head, 1, true), "no " .. head)
  local open = src:find("{", at, true)
  local depth, i = 0, open
  repeat
    local c = src:sub(i, i)
    if c == "{" then depth = depth + 1 elseif c == "}" then depth = depth - 1 end
    i = i + 1
  until depth == 0
  return src:sub(open, i - 1), i
end

describe("tc_gemm warp_specialize = true (wgmma + TMA)", function()
  local cases = {
    {"fp16 -> fp32, 2 consumer warpgroups", {128, 256, 192}, {}, "float16", "float32", "{1, 40, 232}"},
    {"fp16 -> fp16 epilogue D, wgmma_pending 0", {128, 256, 128}, {epilogue = "D", wgmma_pending = 0, stages = 3}, "float16", "float16",
     "{1, 40, 232}"},
    {"bf16 -> fp32, 1 consumer warpgroup (BM 64: no setmaxnreg)", {128, 128, 128}, {BM = 64, BN = 128}, "bfloat16", "float32", "{1, 0, 0}"},
    {"fp16, 3 consumer warpgroups (BM 192: 512 threads of 128 registers)", {192, 64, 128}, {BM = 192, BN = 64}, "float16", "float32",
     "{1, 40, 152}"},
  }
  if asan then cases = {cases[3]} end
  for _, c in ipairs(cases) do
    it(c[1] .. ": the scheduled function is interpreter-equivalent to the workload", function()
      local f, sch = ws_gemm(c[2][1], c[2][2], c[2][3], c[3], c[4], c[5])
      assert.is_truthy(tostring(sch.mod):find('["warp_specialize"] = ' .. c[6], 1, true))
      U.assert_equiv(f, sch.mod, {trials = 1, rtol = 0, atol = 0})
    end)
  end

  it("lowers to a producer warpgroup (empty waits, TMA) and consumer warpgroups (full waits, wgmma, arrive)", function()
    local f, sch = ws_gemm(256, 256, 2048, {stages = 4})
    local low = tostring(tir.lower(sch.mod))
    assert.is_truthy(low:find('T.launch_thread("threadIdx.y", 3)', 1, true)) -- 2 consumers + the producer
    assert.is_truthy(low:find('T.launch_thread("threadIdx.x", 128)', 1, true))
    assert.are.equal(1, count(low, '"ptx_setmaxnreg_dec", 40%)'))
    assert.are.equal(1, count(low, '"ptx_setmaxnreg_inc", 232%)'))
    assert.are.equal(2, count(low, '"ptx_tma_load"')) -- A and B, in the producer's loop only (no prologue)
    assert.are.equal(2, count(low, '"ptx_mbarrier_wait"'))
    assert.are.equal(1, count(low, '"tvm_storage_sync"')) -- after the mbarrier init, before the roles split
    assert.is_truthy(low:find('"ptx_mbarrier_init", T.call("handle", "address_of", tma_empty[{s}]), 256)', 1, true)) -- consumer threads
    assert.is_truthy(low:find('T.attr(256, "named_barrier", 1', 1, true))
    local src = tir.build(sch.mod, "cuda -arch=sm_90a", {compile = false}):get_source("cuda")
    assert.is_truthy(src:find("__launch_bounds__(384)", 1, true))
    local prod, after = branch(src, "if ((((int)threadIdx.y) == 2))")
    local cons = branch(src:sub(after), "else")
    assert.is_truthy(prod:find("setmaxnreg.dec.sync.aligned.u32 40", 1, true))
    assert.is_truthy(prod:find("tir_mbarrier_wait((tma_empty + (k_0 % 4)), (unsigned)((((k_0 / 4) + 1) % 2)))", 1, true))
    assert.are.equal(2, count(prod, "tir_tma_load_2d"))
    assert.is_nil(prod:find("tir_mbarrier_wait((tma_full", 1, true)) -- the producer never waits on full
    assert.is_truthy(cons:find("setmaxnreg.inc.sync.aligned.u32 232", 1, true))
    assert.is_truthy(cons:find("tir_mbarrier_wait((tma_full + (k_0_1 % 4)), (unsigned)(((k_0_1 / 4) % 2)))", 1, true))
    assert.is_nil(cons:find("tir_mbarrier_wait((tma_empty", 1, true)) -- consumers never wait on empty
    assert.is_nil(cons:find("tir_tma_load", 1, true))
    -- one wgmma group in flight: step k releases the stage of step k - 1
    assert.is_truthy(cons:find("wgmma.wait_group.sync.aligned 1", 1, true))
    assert.is_truthy(cons:find("if %(%(k_0_1 >= 1%)%) {\n%s*tir_mbarrier_arrive%(%(tma_empty %+ %(%(k_0_1 %+ 3%) %% 4%)%)%);"))
    assert.is_nil(prod:find("__syncthreads", 1, true))
    assert.is_nil(cons:find("__syncthreads", 1, true))
  end)

  it("persistent = G: the producer walks the tiles ahead of the consumers, steps counted across tiles", function()
    local f, sch = ws_gemm(256, 256, 256, {BN = 128, persistent = 2})
    U.assert_equiv(f, sch.mod, {trials = 1, rtol = 0, atol = 0})
    local low = tostring(tir.lower(sch.mod))
    assert.is_truthy(low:find('T.launch_thread("blockIdx.x", 2)', 1, true))
    assert.are.equal(2, count(low, '"ptx_mbarrier_init"')) -- armed once, not per tile
    assert.are.equal(1, count(low, '"tvm_storage_sync"'))
    local src = tir.build(sch.mod, "cuda -arch=sm_90a", {compile = false}):get_source("cuda")
    local prod, after = branch(src, "if ((((int)threadIdx.y) == 2))")
    local cons = branch(src:sub(after), "else")
    -- both roles loop over this CTA's 2 tiles; the step count g = tile * 4 + k decides the waits
    assert.is_truthy(prod:find("for (int i_0_0_j_0_i_0_1_fused_0 = 0; i_0_0_j_0_i_0_1_fused_0 < 2;", 1, true))
    assert.is_truthy(prod:find("if ((((i_0_0_j_0_i_0_1_fused_0 * 4) + k_0) >= 2)) {", 1, true))
    assert.is_truthy(cons:find("for (int i_0_0_j_0_i_0_1_fused_0_1 = 0; i_0_0_j_0_i_0_1_fused_0_1 < 2;", 1, true))
    assert.is_truthy(cons:find("if ((((i_0_0_j_0_i_0_1_fused_0_1 * 4) + k_0_1) >= 1)) {", 1, true)) -- the last stage of a tile is released in the next
    assert.is_nil(cons:find("__syncthreads", 1, true))
    -- without warp specialization the pipeline re-arms per tile (and runs bit-exact on the simulator)
    local g, s2 = ws_gemm(256, 256, 128, {BN = 128, persistent = 2, warp_specialize = false})
    local low2 = tostring(tir.lower(s2.mod))
    assert.are.equal(2, count(low2, '"tvm_storage_sync"'))
    if not asan then
      local rep = tir.simulate(tir.build(s2.mod, "cuda -arch=sm_90a", {compile = false}), tir.testing.random_args(g, 4), {reference = g})
      assert.are.equal(0, rep.n_issues)
    end
    U.expect_error(function() ws_gemm(256, 512, 256, {persistent = 2, tma = false, warp_specialize = false}) end, "tc_gemm.schedule",
      "persistent = true needs tma = true")
  end)

  it("with wgmma_pending = 0 each step releases its own stage", function()
    local _, sch = ws_gemm(128, 256, 256, {wgmma_pending = 0})
    local src = tir.build(sch.mod, "cuda -arch=sm_90a", {compile = false}):get_source("cuda")
    local cons = branch(src, "} else {")
    assert.is_truthy(cons:find("wgmma.wait_group.sync.aligned 0", 1, true))
    assert.is_truthy(cons:find("tir_mbarrier_arrive((tma_empty + (k_0_1 % 2)));", 1, true))
  end)

  it("builds for sm_90a: the PTX has setmaxnreg per role, mbarrier waits, one CTA barrier; ptxas accepts it without spills", function()
    if not nvrtc_ok then return pending("NVRTC is not available") end
    local _, sch = ws_gemm(256, 512, 512, {stages = 4, epilogue = nil})
    local ptx = tir.build(sch.mod, "cuda -arch=sm_90a"):get_source("ptx")
    assert.are.equal(1, count(ptx, "setmaxnreg%.dec%.sync%.aligned%.u32 40;"))
    assert.are.equal(1, count(ptx, "setmaxnreg%.inc%.sync%.aligned%.u32 232;"))
    assert.is_true(count(ptx, "mbarrier%.try_wait%.parity%.shared::cta%.b64") >= 2)
    assert.are.equal(1, count(ptx, "bar%.sync")) -- the __syncthreads after the mbarrier init (barrier 0)
    assert.is_true(count(ptx, "cp%.async%.bulk%.tensor%.2d") >= 2)
    local ok, out = U.ptxas(ptx)
    if ok == nil then return pending("ptxas is not installed") end
    assert.is_true(ok, out)
    assert.matches("0 bytes spill stores", out)
  end)

  it("refuses bad combinations, naming tc_gemm and the option", function()
    U.expect_error(function() ws_gemm(128, 256, 128, {tma = false}) end, "tc_gemm.schedule", "warp_specialize = true needs tma = true")
    U.expect_error(function() ws_gemm(128, 256, 128, {stages = 1}) end, "tc_gemm.schedule", "warp_specialize = true needs stages >= 2")
    U.expect_error(function() ws_gemm(128, 256, 128, {ws_regs = {40, 236}}) end, "ws_regs: consumer registers 236",
      "multiple of 8 in 24 .. 256")
    U.expect_error(function() ws_gemm(128, 256, 128, {ws_regs = {64, 248}}) end, "ws_regs = {64, 248}: the 384 threads start with 168 registers",
      "128 x 64 + 2 x 128 x 248 must fit in 64512")
    U.expect_error(function() ws_gemm(128, 256, 128, {ws_regs = {40, 160}}) end, "the consumers' not fall below it")
    U.expect_error(function() ws_gemm(128, 256, 128, {BM = 64, ws_regs = {40, 232}}) end,
      "ws_regs: with BM = 64 (one consumer warpgroup, 256 threads) setmaxnreg has no register cap to move")
    U.expect_error(function() ws_gemm(128, 256, 128, {warp_specialize = false, ws_regs = {40, 232}}) end,
      "ws_regs is for warp_specialize = true")
    U.expect_error(function() ws_gemm(128, 256, 128, {ws_regs = 40}) end, "option ws_regs must be a list {producer registers, consumer registers}")
    U.expect_error(function() ws_gemm(128, 256, 128, {warp_specialize = 1}) end, "option warp_specialize must be a boolean")
  end)
end)

describe("tir.simulate runs the warp-specialized kernels (producer / consumer branches as tasks)", function()
  local function sim(f, sch, seed)
    local mod = tir.build(sch.mod, "cuda -arch=sm_90a", {compile = false})
    local rep = tir.simulate(mod, tir.testing.random_args(f, seed or 3), {reference = f})
    assert.are.equal(0, rep.n_issues)
    assert.are.equal(0, rep.races)
    return mod
  end
  local cases = {
    {"2 consumer warpgroups, one wgmma group in flight", {128, 256, 256}, {}},
    {"wgmma_pending 0, 3 stages, fp16 epilogue", {128, 256, 192}, {wgmma_pending = 0, stages = 3, epilogue = "D"}, "float16", "float16"},
    {"persistent: 2 CTAs of 2 tiles, the producer running ahead across tiles", {256, 256, 256}, {BN = 128, persistent = 2}},
    {"bf16, one consumer warpgroup (no setmaxnreg)", {128, 128, 128}, {BM = 64, BN = 128}, "bfloat16"},
  }
  if asan then cases = {cases[1], cases[3]} end
  for _, c in ipairs(cases) do
    it(c[1] .. ": bit-exact against the interpreter on the workload", function()
      sim(ws_gemm(c[2][1], c[2][2], c[2][3], c[3], c[4], c[5]))
    end)
  end

  it("reports planted bugs: no empty wait in the producer, no full wait in a consumer, no consumer arrive", function()
    local f, sch = ws_gemm(128, 256, 256, {})
    local low = tir.build(sch.mod, "cuda -arch=sm_90a", {compile = false}):lowered()
    local args = function() return tir.testing.random_args(f, 3) end
    U.expect_error(function() tir.simulate(U.drop_call(low, "ptx_mbarrier_wait", 1), args()) end,
      "a TMA copy issued by thread (0, 2, 0) [warp 8, lane 0] refills it", "a producer that does not wait on the stage's empty barrier")
    U.expect_error(function() tir.simulate(U.drop_call(low, "ptx_mbarrier_wait", 2), args()) end,
      "the destination of a TMA copy issued by thread (0, 2, 0)", "before the mbarrier phase the copy completes on has completed")
    U.expect_error(function() tir.simulate(U.drop_call(low, "ptx_mbarrier_arrive", 1), args()) end, "deadlock")
  end)
end)

describe("inject_warp_specialization", function()
  -- the wgmma + TMA GEMM without the option, and its pipelined k loop
  local function tma_gemm(o)
    local f = tc.workload(128, 256, 256, "float16", "float32", nil, "NT")
    local opts = {intrin = "wgmma", BM = 128, BN = 256, BK = 64, stages = 2, tma = true}
    for k, v in pairs(o or {}) do opts[k] = v end
    local sch = tc.schedule(f, opts)
    local loops = {sch:get_loops(sch:get_block("C_update_o"))}
    return sch, loops[#loops]
  end

  it("leaves setmaxnreg out with {1, 0, 0} and refuses it where the launch bounds cap no registers", function()
    local sch, ko = tma_gemm()
    sch:annotate(ko, "warp_specialize", {1, 0, 0})
    local low = tostring(tir.lower(sch.mod))
    assert.is_nil(low:find("setmaxnreg", 1, true))
    assert.is_truthy(low:find('T.launch_thread("threadIdx.y", 3)', 1, true))
    local s1, k1 = tma_gemm({BM = 64})
    s1:annotate(k1, "warp_specialize", {1, 40, 232})
    U.expect_error(function() tir.lower(s1.mod) end, "setmaxnreg with 256 threads: the launch bounds cap no register count",
      "use {1, 0, 0}")
  end)

  it("refuses malformed annotations and loops it cannot specialize, naming the loop", function()
    for _, bad in ipairs({{{2, 40, 232}, "2 producer warpgroups; one is supported"},
                          {{1, 41, 232}, "producer registers 41: setmaxnreg takes a multiple of 8 in 24 .. 256"},
                          {{1, 40}, "must be a list {producer warpgroups, producer registers, consumer registers}"},
                          {{1, 176, 232}, "the CTA's 384 threads start with 168 registers each"},
                          {{1, 40, 240}, "128 x 40 + 2 x 128 x 240 = 66560 must fit in the 64512"}}) do
      local sch, ko = tma_gemm()
      sch:annotate(ko, "warp_specialize", bad[1])
      U.expect_error(function() tir.lower(sch.mod) end, "LoweringError in inject_warp_specialization", "loop k_0", bad[2])
    end
    -- no TMA pipeline on the loop: nothing for a producer to issue
    local f = tc.workload(128, 256, 256, "float16", "float32", nil, "NT")
    local sch = tc.schedule(f, {intrin = "wgmma", BM = 128, BN = 256, BK = 64, stages = 2})
    local loops = {sch:get_loops(sch:get_block("C_update_o"))}
    sch:annotate(loops[#loops], "warp_specialize", {1, 40, 232})
    U.expect_error(function() tir.lower(sch.mod) end, "inject_warp_specialization", "is annotated warp_specialize but is not a TMA pipeline")
    -- the mma.sync TMA GEMM: threadIdx.x is a warp, not a warpgroup
    local g = tc.workload(128, 128, 128, "float16", "float32", nil, "NT")
    local s2 = tc.schedule(g, {BM = 64, BN = 64, BK = 32, warp_m = 32, warp_n = 32, tma = true, stages = 2})
    local l2 = {s2:get_loops(s2:get_block("A_shared"))}
    s2:annotate(l2[4], "warp_specialize", {1, 40, 232})
    U.expect_error(function() tir.lower(s2.mod) end, "inject_warp_specialization", "loop k_0",
      "needs threadIdx.x to be one warpgroup (128 threads)", "here threadIdx.x has 32 threads and threadIdx.z is bound")
  end)
end)

describe("thread_sync in a named-barrier region (a warp-specialized consumer branch)", function()
  local function kernel(marked)
    return T.prim_func("k", {A = T.Buffer({128}, "float32"), B = T.Buffer({128}, "float32")}, function(A, B)
      for ty in T.thread_binding(2, "threadIdx.y") do
        for tx in T.thread_binding(128, "threadIdx.x") do
          T.block("", function()
            local S = T.alloc_buffer({128}, "float32", {scope = "shared"})
            local function body()
              S[tx] = A[tx]
              B[tx] = S[127 - tx]
            end
            T.If(T.eq(ty, 1), function() B[tx] = T.float32(0) end, function()
              if marked then T.attr(128, "named_barrier", 1, body) else body() end
            end)
          end)
        end
      end
    end)
  end

  it("puts bar.sync 1, 128 (not __syncthreads) between the consumers' shared write and read", function()
    local src = tir.build(kernel(true), "cuda", {compile = false}):get_source("cuda")
    local cons = branch(src, "} else {")
    local w, bar = cons:find("S[((int)threadIdx.x)] = A[((int)threadIdx.x)];", 1, true), cons:find('asm volatile("bar.sync 1, %0;" :: "r"((int)(128))', 1, true)
    local r = cons:find("B[((int)threadIdx.x)] = S[", 1, true)
    assert.is_true(w and bar and r and w < bar and bar < r)
    assert.is_nil(src:find("__syncthreads", 1, true))
    -- both run the same on the interpreter (threads one after another)
    U.assert_equiv(kernel(true), kernel(false), {trials = 1})
  end)
end)
