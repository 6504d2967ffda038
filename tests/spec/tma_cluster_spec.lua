-- tma_cluster_spec.lua -- thread-block clusters with TMA multicast (tc_gemm_wgmma cluster = {cm, cn};
-- inject_tma_pipeline's tma_cluster / tma_multicast annotations; split_host_device's cluster dims,
-- compiled in as __cluster_dims__, launched with plain cuLaunchKernel).  Without a GPU: the schedule stays interpreter-equivalent, the
-- lowered IR and the CUDA C carry the multicast slices, masks, remote arrivals, the cluster barrier
-- and the producer tail; the interpreter and tir.simulate refuse the lowered cluster kernel with a
-- clear error (neither models CTAs sharing shared memory); bad inputs are clear errors.  On the
-- GPU: tests/spec/gpu_wgmma_spec.lua (#gpu) checks the results against cuBLAS.
local tir = require("tir")
local U = require("spec_util")
local tc = require("tir.schedules.tc_gemm")

local function sched(M, N, K, o)
  local f = tc.workload(M, N, K, "float16", "float16", nil, "NT")
  return f, tc.schedule(f, U.merge({intrin = "wgmma", BM = 128, BN = 128, BK = 64, stages = 3, tma = true, epilogue = "D"}, o))
end
local count = U.count

describe("tc_gemm intrin = \"wgmma\", cluster = {cm, cn}", function()
  it("multicasts each CTA's slice of the shared tile to its cluster, every consumer releasing the stage in all of them", function()
    for ci, c in ipairs({
      {{2, 1}, {warp_specialize = true}, {1, 2, 1}, 1, 2},          -- two CTAs along M share B
      {{1, 2}, {warp_specialize = true}, {2, 1, 1}, 2, 1},          -- two along N share A
      {{2, 1}, {warp_specialize = true, persistent = 4}, {2, 1, 1}, 1, 2},
      {{1, 2}, {warp_specialize = true, persistent = 4}, {2, 1, 1}, 2, 1},
      {{2, 1}, {}, {1, 2, 1}, 1, 2},                                 -- not warp-specialized: the leader refills
    }) do
      local f, sch = sched(256, 256, 128, U.merge({cluster = c[1]}, c[2]))
      if ci == 1 then U.assert_equiv(f, sch.mod, {trials = 1}) end -- the schedule means what the workload means
      local mod = tir.build(sch.mod, "cuda -arch=sm_90a", {compile = false})
      local k = mod:kernels()[1]
      assert.are.same(c[3], k.cluster)
      local gx, gy = k.grid[1], k.grid[2]
      assert.are.equal(0, gx % c[3][1]); assert.are.equal(0, gy % c[3][2])
      local text = tostring(mod:lowered())
      -- one multicast per shared tile (the other a plain load), whose box is 1/count of the rows
      assert.are.equal(1, count(text, '"ptx_tma_load_multicast"'), text)
      assert.are.equal(1, count(text, '"ptx_tma_load"'), text)
      local shared = c[1][1] > 1 and "B_1" or "A_1"
      assert.is_truthy(text:find(('"tma_descriptor", %s, "float16", 128, 2, 256, 128, 64, 64'):format(shared), 1, true), text)
      -- empty barriers count a release per consumer warpgroup of both CTAs (2 x 2: the tiles are read
      -- by wgmma only, complete for the warpgroup at its wgmma_wait_group), by thread 0 of each
      assert.is_truthy(text:find('"ptx_mbarrier_init", T.call("handle", "address_of", tma_empty[{s}]), 4)', 1, true), text)
      assert.is_truthy(text:find('T%.If%(T%.eq%(threadIdx_x, 0%), function%(%)\n%s*T%.evaluate%(T%.call%("void", "ptx_mbarrier_arrive"'), text)
      assert.is_truthy(text:find('"ptx_mbarrier_arrive_cluster"', 1, true), text)
      assert.is_truthy(text:find('"ptx_fence_mbarrier_init"', 1, true), text)
      assert.are.equal(1, count(text, '"ptx_cluster_sync"'))
      -- the producer's tail: 3 stages - 1 group in flight = 2 waits after its last step
      assert.is_truthy(text:find("for tail in T.serial(2)", 1, true), text)
      local src = mod:get_source("cuda")
      assert.is_truthy(src:find("multicast::cluster", 1, true))
      assert.is_truthy(src:find("mapa.shared::cluster.u32", 1, true))
      assert.is_truthy(src:find("barrier.cluster.arrive.release", 1, true))
      assert.is_truthy(src:find("%cluster_ctarank", 1, true))
      -- the shape is compiled in: the kernel launches like any other
      assert.is_truthy(src:find(("__cluster_dims__(%d, %d, %d) main_kernel("):format(c[3][1], c[3][2], c[3][3]), 1, true), src)
    end
  end)

  it("builds for sm_90a: ptxas takes the multicast copy, mapa, the remote arrival and the cluster barrier", function()
    if not tir.core.nvrtc_available() then return pending("NVRTC is not available") end
    local _, sch = sched(512, 512, 256, {BN = 256, stages = 4, warp_specialize = true, persistent = 2, cluster = {2, 1}})
    local ptx = tir.build(sch.mod, "cuda -arch=sm_90a"):get_source("ptx")
    assert.is_true(count(ptx, "cp%.async%.bulk%.tensor%.2d%.shared::cluster%.global%.mbarrier::complete_tx::bytes%.multicast::cluster") >= 1)
    assert.is_true(count(ptx, "mapa%.shared::cluster%.u32") >= 1)
    -- the consumers release a stage once their wgmma reads of it are complete (wgmma.wait_group), so
    -- the remote arrival is .release.cta: a .release.cluster one is a cluster-scope fence (MEMBAR.GPU
    -- in SASS) per k step, which made these kernels 2.5x slower on the H200 (stop 10's 0.36x cuBLAS)
    assert.is_true(count(ptx, "mbarrier%.arrive%.release%.cta%.shared::cluster%.b64") >= 1)
    assert.are.equal(0, count(ptx, "mbarrier%.arrive%.release%.cluster"))
    assert.are.equal(1, count(ptx, "barrier%.cluster%.arrive%.release"))
    assert.are.equal(1, count(ptx, "fence%.mbarrier_init%.release%.cluster"))
    assert.are.equal(1, count(ptx, "%.reqnctapercluster 2, 1, 1"), ptx) -- (__cluster_dims__)
    local ok, out = U.ptxas(ptx)
    if ok == nil then return pending("ptxas is not installed") end
    assert.is_true(ok, out)
  end)

  it("releases a remote stage at CTA scope only where the tiles' reads are complete (wgmma), else at cluster scope", function()
    -- read by wgmma only: one arrival per warpgroup after wgmma_wait_group, .release.cta
    local _, s1 = sched(256, 256, 128, {warp_specialize = true, cluster = {2, 1}})
    local m1 = tir.build(s1.mod, "cuda -arch=sm_90a", {compile = false})
    local t1 = tostring(m1:lowered())
    assert.are.equal(2, count(t1, '"ptx_mbarrier_arrive_cluster", [^\n]*, "cta"%)'), t1) -- (the loop over the other CTA, unrolled)
    assert.are.equal(0, count(t1, '"ptx_mbarrier_arrive_cluster", [^\n]*, "cluster"%)'), t1)
    local src = m1:get_source("cuda")
    assert.is_truthy(src:find("tir_mbarrier_arrive_cluster_cta((tma_empty", 1, true), src)
    -- A from registers: ldmatrix (generic-proxy reads) may be in flight at the release, so every
    -- consumer thread arrives with .release.cluster (256 x 2 CTAs)
    local _, s2 = sched(256, 256, 128, {warp_specialize = true, cluster = {2, 1}, a_operand = "register", wgmma_pending = 0})
    local t2 = tostring(tir.build(s2.mod, "cuda -arch=sm_90a", {compile = false}):lowered())
    assert.are.equal(2, count(t2, '"ptx_mbarrier_arrive_cluster", [^\n]*, "cluster"%)'), t2)
    assert.is_truthy(t2:find('"ptx_mbarrier_init", T.call("handle", "address_of", tma_empty[{s}]), 512)', 1, true), t2)
    -- a release scope codegen does not know is refused, naming the builtin
    local T = tir.script
    local k = T.prim_func("arrive", {A = T.Buffer({128}, "float32")}, function(A)
      local bx = T.launch_thread("blockIdx.x", 2)
      local tx = T.launch_thread("threadIdx.x", 128)
      local bar = T.allocate({1}, "uint64", "shared")
      T.evaluate(T.call("void", "ptx_mbarrier_arrive_cluster", T.address_of(bar[{0}]), 1, "gpu"))
      A[{tx}] = T.float32(1)
    end)
    U.expect_error(function() tir.build(k, "cuda -arch=sm_90a", {compile = false}):get_source("cuda") end,
                   "ptx_mbarrier_arrive_cluster", 'the release scope, "cluster" or "cta"')
  end)

  it("prints the lowered cluster_dims attribute as its values, and the text parses back to the same IR", function()
    local _, sch = sched(256, 256, 128, {warp_specialize = true, cluster = {2, 1}})
    local low = tir.lower(sch.mod)
    local text = tostring(low)
    assert.is_truthy(text:find('T.attr(nil, "cluster_dims", {1, 2, 1}, function()', 1, true), text)
    assert.is_falsy(text:find("<Array>", 1, true), text)
    local T = tir.script
    local small = T.prim_func("k", {A = T.Buffer({128}, "float32")}, function(A)
      T.attr(nil, "cluster_dims", {2, 1, 1}, function()
        local bx = T.launch_thread("blockIdx.x", 2)
        local tx = T.launch_thread("threadIdx.x", 128)
        A[{tx}] = T.float32(1)
      end)
    end)
    local back = T.parse(tostring(small))
    assert.is_true(tir.structural_equal(small, back))
    assert.are.equal(tostring(small), tostring(back))
    U.expect_error(function()
      T.prim_func("k", {A = T.Buffer({128}, "float32")}, function(A) T.attr(nil, "cluster_dims", {2, {1}}, function() A[{0}] = T.float32(1) end) end)
    end, "AttrStmt.value[2] must be an expression")
  end)

  it("cluster = {1, 1} is no cluster: the same kernel as without the option", function()
    local _, a = sched(256, 256, 128, {warp_specialize = true, cluster = {1, 1}})
    local _, b = sched(256, 256, 128, {warp_specialize = true})
    assert.is_true(tir.structural_equal(a.mod, b.mod))
    assert.is_nil(tir.build(a.mod, "cuda -arch=sm_90a", {compile = false}):kernels()[1].cluster)
  end)

  it("the interpreter and the simulator refuse the lowered cluster kernel, saying why", function()
    local f, sch = sched(256, 256, 128, {warp_specialize = true, cluster = {2, 1}})
    local mod = tir.build(sch.mod, "cuda -arch=sm_90a", {compile = false})
    U.expect_error(function() tir.simulate(mod, tir.testing.random_args(f, 1)) end, "thread-block clusters of (1, 2, 1) CTAs",
                   "does not model")
    U.expect_error(function() tir.interpret(tir.lower(sch.mod), tir.testing.random_args(f, 1)) end, "cluster",
                   "one CTA at a time")
  end)

  it("refuses what it cannot run, with clear errors", function()
    U.expect_error(function() sched(256, 256, 128, {cluster = {2, 1}, tma = false}) end, "tc_gemm.schedule", "needs tma = true")
    U.expect_error(function() sched(256, 256, 128, {cluster = {2}}) end, "cluster", "{cm, cn}")
    U.expect_error(function() sched(256, 256, 128, {cluster = {4, 4}}) end, "cluster", "at most 8 CTAs")
    U.expect_error(function() sched(384, 256, 128, {cluster = {2, 1}, warp_specialize = true}) end, "do not split into whole clusters")
    U.expect_error(function() sched(256, 256, 128, {cluster = {2, 1}, persistent = 2}) end, "needs warp_specialize = true")
    -- a slice that is not whole 1024-byte atoms
    local f, sch = sched(256, 256, 128, {BN = 64, warp_specialize = true})
    local B = sch:get_block("B_shared")
    sch:annotate(B, "tma_multicast", {1, 16})
    U.expect_error(function() tir.lower(sch.mod) end, "LoweringError in inject_tma_pipeline", "slices of whole rows")
    -- a multicast without a cluster
    local _, s2 = sched(256, 256, 128, {warp_specialize = true})
    s2:annotate(s2:get_block("B_shared"), "tma_multicast", {1, 2})
    U.expect_error(function() tir.lower(s2.mod) end, "LoweringError in inject_tma_pipeline", "is not set: no cluster")
    -- a cluster kernel for a target without clusters
    local _, s3 = sched(256, 256, 128, {warp_specialize = true, cluster = {2, 1}})
    U.expect_error(function() tir.build(s3.mod, "cuda -arch=sm_80", {compile = false}) end, "sm_90")
  end)
end)
