-- wgmma_persistent_spec.lua -- tc_gemm_wgmma's persistent grid (persistent = true | G with tma =
-- true: tc_gemm.persistent_tiles, G CTAs walking the output tiles in grouped order, the TMA
-- pipeline re-armed per tile) and its TMA-store epilogue (epilogue_store = "tma": each warpgroup's
-- 64 x BN tile stored into a shared tile of 128-byte boxes with the 128-byte swizzle -- or one dense
-- box with tma_store_boxes = false -- then one cp.async.bulk.tensor store per box; inject_tma_store.c).  Interpreter-equivalent, simulator bit-exact against the interpreter on
-- the unscheduled workload; a planted missing proxy fence is reported; bad inputs are clear errors.
local tir = require("tir")
local U = require("spec_util")
local tc = require("tir.schedules.tc_gemm")

local asan = os.getenv("ASAN_OPTIONS") ~= nil

local function sched(M, N, K, out, o)
  local f = tc.workload(M, N, K, "float16", out, nil, "NT")
  local opts = {intrin = "wgmma"}
  for k, v in pairs(o) do opts[k] = v end
  return f, tc.schedule(f, opts)
end

local function sim(f, sch)
  local mod = tir.build(sch.mod, "cuda -arch=sm_90a", {compile = false})
  local rep = tir.simulate(mod, tir.testing.random_args(f, 3), {reference = f})
  assert.are.equal(0, rep.n_issues)
  return rep, mod
end

describe("tc_gemm intrin = \"wgmma\", persistent", function()
  it("G CTAs walk every tile once in grouped order, the mbarriers re-armed per tile; bit-exact on the simulator", function()
    local cases = {{256, 256, 128, 2, {BM = 128, BN = 64, BK = 64, stages = 2}}, {256, 512, 192, 4, {BM = 64, BN = 128, BK = 64, stages = 3}}}
    if asan then cases = {cases[1]} end
    for _, c in ipairs(cases) do
      local o = {tma = true, persistent = c[4], epilogue = "D"}
      for k, v in pairs(c[5]) do o[k] = v end
      local f, sch = sched(c[1], c[2], c[3], "float16", o)
      local rep, mod = sim(f, sch)
      local tiles = (c[1] // o.BM) * (c[2] // o.BN)
      local G = 1
      for g = 1, c[4] do if tiles % g == 0 then G = g end end
      assert.are.equal(G, rep.ctas)
      assert.are.equal(G, mod:kernels()[1].grid[1])
      assert.are.equal(tiles * 2 * (c[3] // o.BK), rep.tma_copies) -- one copy per tile and k step
      assert.are.equal(2 * tiles, rep.barriers) -- per tile: before the re-init and after it
    end
  end)

  it("persistent = true takes the CTAs that fit at once: one an SM for a 197 KB kernel", function()
    local f, sch = sched(4096, 4096, 4096, "float16", {BM = 128, BN = 256, BK = 64, stages = 4, tma = true, persistent = true, epilogue = "D"})
    local k = tir.build(sch.mod, "cuda -arch=sm_90a", {compile = false}):kernels()[1]
    -- 512 tiles: the largest divisor not above the 132 SMs (no GPU here: tc_gemm.DEFAULT_SM_COUNT)
    assert.are.equal(128, k.grid[1])
  end)

  it("is refused without tma, with a clear error", function()
    U.expect_error(function() sched(256, 256, 128, "float16", {persistent = 2, epilogue = "D"}) end, "tc_gemm.schedule",
                   "needs tma = true")
    U.expect_error(function() sched(256, 256, 128, "float16", {tma = true, persistent = 0}) end, "persistent", "true, false or a number of CTAs")
    -- 4 tiles and persistent = 3: refused with the counts that work (it used to launch 2 CTAs silently)
    U.expect_error(function() sched(256, 256, 128, "float16", {BM = 128, BN = 128, BK = 64, stages = 2, tma = true, persistent = 3}) end,
                   "ValueError in tc_gemm.schedule", "persistent = 3: the 2 x 2 = 4 output tiles have no persistent grid of 3 CTAs",
                   "counts that work: 1, 2, 4 (or persistent = true)")
    U.expect_error(function() sched(256, 256, 128, "float16", {BM = 128, BN = 128, BK = 64, stages = 2, tma = true, persistent = 8}) end,
                   "persistent = 8: the 2 x 2 = 4 output tiles")
  end)
end)

describe("tc_gemm intrin = \"wgmma\", epilogue_store = \"tma\"", function()
  it("stores each warpgroup's tile with TMA stores of 128-byte boxes (swizzled) or one (tma_store_boxes = false): interpreter-equivalent, " ..
     "bit-exact on the simulator (fp16 and fp32 out)", function()
    local cases = {{128, 256, 128, "float16", {BM = 128, BN = 128, BK = 64, stages = 2, tma = true, epilogue = "D"}},
                   {128, 128, 128, nil, {BM = 64, BN = 128, BK = 64, stages = 2}}, -- a cp.async main loop, fp32 C
                   {256, 256, 128, "float16", {BM = 128, BN = 64, BK = 64, stages = 2, tma = true, persistent = 4, epilogue = "D"}},
                   {128, 256, 128, "float16", {BM = 128, BN = 128, BK = 64, stages = 2, tma = true, epilogue = "D", tma_store_boxes = false}}}
    if asan then cases = {cases[1]} end
    for _, c in ipairs(cases) do
      c[5].epilogue_store = "tma"
      local f, sch = sched(c[1], c[2], c[3], c[4], c[5])
      if not asan then U.assert_equiv(f, sch.mod, {trials = 1, rtol = 0, atol = 0}) end
      local rep, mod = sim(f, sch)
      local text = tostring(mod:lowered())
      assert.are.equal(1, U.count_calls(text, "ptx_tma_store")) -- in the warpgroup loop: one store a warpgroup
      assert.are.equal(1, U.count_calls(text, "ptx_bulk_commit_group"))
      -- the wait for the store's read: right after it, or (a persistent tile loop) before the next
      -- tile's wgmma_store plus one after the loop (tma_store_wait_spec)
      assert.are.equal(c[5].persistent and 2 or 1, U.count_calls(text, "ptx_bulk_wait_group_read"))
      -- the box: 64 rows x 128 bytes with the 128-byte swizzle (one store per box, a loop), or the whole 64 x BN unswizzled
      local bc = c[5].tma_store_boxes == false and c[5].BN or 128 // (c[4] and 2 or 4)
      local box = ('"tma_descriptor", %s_1, "%s", %d, 2, %d, %d, 64, %d'):format(c[4] and "D" or "C", c[4] or "float32",
                                                                           bc == c[5].BN and c[5].tma_store_boxes == false and 0 or 128, c[1], c[2], bc)
      assert.is_truthy(text:find(box, 1, true), text)
      if bc < c[5].BN then assert.is_truthy(text:find(("for ax1_0 in T.serial(%d) do"):format(c[5].BN // bc), 1, true), text) end
      if c[5].tma_store_boxes ~= false then
        -- (printed as T.allocate(.., function(X_shared) ..) or, where a statement precedes it in its sequence, local X_shared = T.allocate(..))
        local name = (c[4] and "D" or "C") .. "_shared"
        assert.is_truthy(text:find('{scope = "shared", swizzle = "128B"}, function(' .. name .. ")", 1, true) or
                         text:find("local " .. name .. ' = T%.allocate%({%d+}, "%w+", {scope = "shared", swizzle = "128B"}%)'), text)
      end
      assert.is_truthy(mod:get_source("cuda"):find("tir_tma_store_2d(", 1, true))
      assert.is_true(rep.ctas > 0)
    end
  end)

  it("with warp_specialize (and persistent) the store's barriers are the consumers' named barrier: bit-exact on the simulator", function()
    local cases = {{256, 256, 128, {BM = 128, BN = 128, BK = 64, stages = 2}},
                   {256, 256, 128, {BM = 128, BN = 64, BK = 64, stages = 3, persistent = 2}}}
    if asan then cases = {cases[2]} end
    for _, c in ipairs(cases) do
      local o = {tma = true, warp_specialize = true, epilogue = "D", epilogue_store = "tma"}
      for k, v in pairs(c[4]) do o[k] = v end
      local f, sch = sched(c[1], c[2], c[3], "float16", o)
      local rep, mod = sim(f, sch)
      local text = tostring(mod:lowered())
      assert.are.equal(1, U.count_calls(text, "ptx_tma_store"))
      -- fence, bar.sync(1, 256), the leader's store, bar.sync(1, 256): no __syncthreads, which the
      -- producer warpgroup would never reach
      local at = text:find('"ptx_tma_store"', 1, true)
      local before, after = text:sub(1, at), text:sub(at)
      -- (a loop over the 128-byte boxes when BN has several)
      assert.is_truthy(before:match('"ptx_fence_proxy_async"%)%)%s*T%.evaluate%(T%.call%("void", "ptx_bar_sync", 1, 256%)%)%s*T%.If[^\n]*\n' ..
                                    (o.BN > 64 and '%s*for ax1_0 in T%.serial%(%d%) do\n' or '') .. '[^\n]*$'), text)
      -- (inject_tma_store defers the wait for the tile's TMA read to before its next writes: the
      -- leader's wait, then the named barrier; the consumers' region ends with the leader's wait)
      assert.is_truthy(before:match('"ptx_bulk_wait_group_read", 0%)%)%s*end%)%s*T%.evaluate%(T%.call%("void", "ptx_bar_sync", 1, 256%)%)'), text)
      assert.is_truthy(after:find('"ptx_bulk_wait_group_read", 0', 1, true), text)
      assert.is_nil(text:find("tvm_storage_sync", text:find('"named_barrier"', 1, true), true), text)
      assert.is_true(rep.named_barriers > 0)
      assert.are.equal((c[1] // o.BM) * (c[2] // o.BN) * 2 * (c[3] // o.BK), rep.tma_copies) -- every tile's loads, once
    end
  end)

  it("a copy at the CTA level (outside the threadIdx.y loop) is one store by thread (0, 0) of the whole box", function()
    local T = tir.script
    local f = T.prim_func("st", {A = T.Buffer({128, 64}, "float16"), D = T.Buffer({128, 64}, "float16")}, function(A, D)
      for bx in T.thread_binding(1, "blockIdx.x") do
        T.block("cta", function()
          local S = T.alloc_buffer({128, 64}, "float16", {scope = "shared"})
          for ty in T.thread_binding(2, "threadIdx.y") do
            for tx in T.thread_binding(128, "threadIdx.x") do
              for i in T.serial(32) do
                T.block("w", function()
                  local vi = T.axis.spatial(128, ty * 64 + i * 2 + tx // 64)
                  local vj = T.axis.spatial(64, tx % 64)
                  S[{vi, vj}] = A[{vi, vj}] + T.float16(1)
                end)
              end
            end
          end
          for i, j in T.grid(128, 64) do
            T.block("D_store", function()
              local vi, vj = T.axis.remap("SS", {i, j})
              T.block_attr({tma_store = 1})
              D[{vi, vj}] = S[{vi, vj}]
            end)
          end
        end)
      end
    end)
    local mod = tir.build(f, "cuda -arch=sm_90a", {compile = false})
    local text = tostring(mod:lowered())
    assert.are.equal(1, U.count_calls(text, "ptx_tma_store"))
    assert.is_truthy(text:find('"tma_descriptor", D_1, "float16", 0, 2, 128, 64, 128, 64', 1, true), text)
    assert.is_truthy(text:find("T.If(T.eq(threadIdx_y, 0)", 1, true), text) -- not one store per threadIdx.y
    local a = tir.nd.random({128, 64}, "float16", tir.nd.cpu(), {seed = 1})
    local d = tir.nd.empty({128, 64}, "float16", tir.nd.cpu())
    assert.are.equal(0, tir.simulate(mod, {a, d}).n_issues)
    local want = tir.nd.empty({128, 64}, "float16", tir.nd.cpu())
    tir.interpret(f, {a, want})
    tir.testing.assert_allclose(d, want, {rtol = 0, atol = 0})
  end)

  it("the 128-byte boxes: wgmma_store XORs the element index as the tensor map's SWIZZLE_128B places the box (CUDA C)", function()
    local f, sch = sched(128, 256, 64, "float16", {BM = 128, BN = 256, BK = 64, stages = 2, tma = true, epilogue = "D", epilogue_store = "tma"})
    local src = tir.build(sch.mod, "cuda -arch=sm_90a", {compile = false}):get_source("cuda")
    -- column c in box c / 64 (8192 elements apart: the [4, 128, 64] tile), then the 128B pattern on the
    -- element index (16-byte chunk bits 3-5 ^ row bits 6-8), one TMA store per box
    assert.is_truthy(src:find("ld_ = 64, bs_ = 8192;", 1, true), src)
    assert.is_truthy(src:find("o_ ^= (o_ >> 3) & 56;", 1, true), src)
    assert.is_truthy(src:find("for (int ax1_0 = 0; ax1_0 < 4; ++ax1_0) {", 1, true), src)
    -- a copy whose swizzled box would not start at the 1024-byte repeat is refused
    local T = tir.script
    local g = T.prim_func("st", {A = T.Buffer({2, 64, 64}, "float16"), D = T.Buffer({60, 128}, "float16")}, function(A, D)
      for bx in T.thread_binding(1, "blockIdx.x") do
        T.block("cta", function()
          local S = T.alloc_buffer({2, 64, 64}, "float16", {scope = "shared"})
          for tx in T.thread_binding(128, "threadIdx.x") do
            for i in T.serial(64) do
              T.block("w", function()
                local vb = T.axis.spatial(2, tx // 64)
                local vi = T.axis.spatial(64, i)
                local vj = T.axis.spatial(64, tx % 64)
                T.block_attr({buffer_swizzle = {{0, 3, 4, 3}}})
                S[{vb, vi, vj}] = A[{vb, vi, vj}]
              end)
            end
          end
          for b, i, j in T.grid(2, 60, 64) do
            T.block("D_store", function()
              local vb, vi, vj = T.axis.remap("SSS", {b, i, j})
              T.block_attr({tma_store = 1})
              D[{vi, vb * 64 + vj}] = S[{vb, vi + 4, vj}]
            end)
          end
        end)
      end
    end)
    U.expect_error(function() tir.lower(g) end, "LoweringError in inject_tma_store", "the TMA store of the swizzled S",
                   "does not start at a multiple of the swizzle's 1024-byte repeat")
  end)

  it("reports a tile written through the generic proxy without fence.proxy.async before the TMA store reads it", function()
    local f, sch = sched(128, 128, 128, "float16", {BM = 64, BN = 128, BK = 64, stages = 2, epilogue = "D", epilogue_store = "tma"})
    local low = tir.lower(sch.mod)
    local bad = U.drop_call(low, "ptx_fence_proxy_async", 1)
    U.expect_error(function() tir.simulate(bad, tir.testing.random_args(f, 1)) end, "a TMA store", "fence.proxy.async")
  end)

  it("refuses what it cannot store, naming the copy", function()
    U.expect_error(function() sched(128, 128, 128, "float16", {epilogue = "D", epilogue_store = "bulk"}) end,
                   "epilogue_store must be \"direct\", \"staged\" or \"tma\"")
    U.expect_error(function() sched(128, 128, 128, "float16", {epilogue = "D", tma_store_boxes = false}) end,
                   "ValueError in tc_gemm.schedule", "tma_store_boxes", "needs epilogue_store = \"tma\"")
    -- a copy whose loops are bound to threads is not one box copy
    local f, sch = sched(128, 128, 128, "float16", {BM = 64, BN = 128, BK = 64, stages = 2, epilogue = "D", epilogue_store = "tma"})
    local l = {sch:get_loops("D_shared")}
    local _, tx = sch:split(l[#l], {nil, 32})
    sch:bind(tx, "threadIdx.x")
    U.expect_error(function() tir.lower(sch.mod) end, "LoweringError in inject_tma_store", "inside a threadIdx.x loop")
  end)
end)
