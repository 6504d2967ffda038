-- wgmma_register_a_spec.lua -- wgmma with A from registers (PTX ISA 9.7.15.5.1.1.1 "Register
-- Fragments": the A fragment of m64nNk16 / m64nNk32 in the registers of a warpgroup, B from shared
-- memory through its descriptor): the "wgmma.matrix_a" scope, its ldmatrix load from the swizzled
-- shared tile (tir.intrin.cuda.wgmma(..., "register")), the register form of wgmma.mma_async in the
-- CUDA C / PTX, and tc_gemm's a_operand = "register".  Every schedule runs on the simulator
-- bit-exact against the interpreter (A read lane by lane through the table row's map_a); planted
-- bugs (a wrong lane -> row map of the load, the fragment overwritten before the wait) are reported.
local tir = require("tir")
local T = tir.script
local U = require("spec_util")
local tc = require("tir.schedules.tc_gemm")
local cuda = require("tir.intrin.cuda")

local nvrtc_ok = tir.core.nvrtc_available()
local asan = os.getenv("ASAN_OPTIONS") ~= nil

local args_for = U.full_range_args

local function ra_opts(t) return U.merge({intrin = "wgmma", a_operand = "register", wgmma_pending = 0}, t) end

describe("the A register fragment of the wgmma rows", function()
  it("covers the 64 x k slab over the 128 threads, k / 2 elements a thread, warp w rows 16 w .. 16 w + 15", function()
    for _, c in ipairs({{"m64nNk16.f16.f16.f32", 16}, {"m64nNk16.bf16.bf16.f32", 16}, {"m64nNk32.s8.s8.s32", 32}}) do
      local seen, count, per = {}, 0, {}
      for _, e in ipairs(tir.core.mma_lane_map(c[1], "a", 64)) do
        local key = e.row * 1000 + e.col
        assert.is_nil(seen[key])
        seen[key] = true
        count = count + 1
        per[e.lane] = (per[e.lane] or 0) + 1
        assert.is_true(e.row >= 16 * (e.lane // 32) and e.row < 16 * (e.lane // 32) + 16)
        assert.is_true(e.col >= 0 and e.col < c[2])
      end
      assert.are.equal(64 * c[2], count)
      for l = 0, 127 do assert.are.equal(c[2] // 2, per[l]) end
    end
    -- PTX ISA Figure (wgmma .m64nNk16 A fragment): thread 37 = warp 1, lane 5 (group 1, q 1): a0,a1 =
    -- (17, 2..3), a2,a3 = (25, 2..3), a4,a5 = (17, 10..11), a6,a7 = (25, 10..11)
    local got = {}
    for _, e in ipairs(tir.core.mma_lane_map("m64nNk16.f16.f16.f32", "a", 64)) do if e.lane == 37 then got[#got + 1] = {e.row, e.col} end end
    assert.are.same({{17, 2}, {17, 3}, {25, 2}, {25, 3}, {17, 10}, {17, 11}, {25, 10}, {25, 11}}, got)
  end)

  it("is a storage scope of its own, split per warpgroup like the accumulator", function()
    local f = tc.workload(128, 64, 64, "float16", nil, nil, "NT")
    local sch = tc.schedule(f, ra_opts {BM = 128, BN = 64, BK = 64, stages = 1})
    local txt = tostring(sch.mod)
    assert.is_truthy(txt:find('scope = "wgmma.matrix_a"', 1, true))
    assert.is_truthy(txt:find("wgmma_ldmatrix_64x64_f16_a", 1, true))
    assert.is_truthy(txt:find("wgmma_sync_64x64x64_f16f32_bk_ra", 1, true))
  end)
end)

describe("tc_gemm with intrin = \"wgmma\", a_operand = \"register\"", function()
  local cases = {
    {"float16", "float16", {BM = 128, BN = 128, BK = 64, stages = 2, tma = true, epilogue = "D"}, {128, 128, 128}}, -- TMA, 2 warpgroups
    {"bfloat16", nil, {BM = 64, BN = 64, BK = 32, stages = 3}, {64, 128, 128}},                                    -- cp.async, 64-byte swizzle
    {"float16", nil, {BM = 64, BN = 32, BK = 16, stages = 1}, {64, 64, 64}},                                       -- 32-byte swizzle, one slab
    {"int8", nil, {BM = 128, BN = 64, BK = 128, stages = 2, tma = true}, {128, 64, 256}},                         -- s8 m64n64k32
    {"float16", "float16", {BM = 128, BN = 128, BK = 64, stages = 2, tma = true, warp_specialize = true, epilogue = "D"}, {128, 128, 256}},
  }
  if not asan then
    cases[#cases + 1] = {"float16", "float16", {BM = 128, BN = 128, BK = 64, stages = 2, tma = true, persistent = 2, epilogue = "D"}, {256, 256, 128}}
  end
  for _, c in ipairs(cases) do
    local o = ra_opts(c[3])
    it(("%s BM=%d BN=%d BK=%d stages=%d%s%s: interpreter-equivalent, simulator bit-exact"):format(c[1], o.BM, o.BN, o.BK, o.stages,
        o.tma and " tma" or "", o.warp_specialize and " ws" or o.persistent and " persistent" or ""), function()
      local f = tc.workload(c[4][1], c[4][2], c[4][3], c[1], c[2], nil, "NT")
      local sch = tc.schedule(f, o)
      U.assert_equiv(f, sch.mod, {trials = 1, rtol = 0, atol = 0})
      local mod = tir.build(sch.mod, "cuda -arch=sm_90a", {compile = false})
      local rep = tir.simulate(mod, args_for(f, 1), {reference = f})
      assert.are.equal(0, rep.n_issues)
      assert.are.equal(0, rep.races)
      assert.is_true(rep.warp_ops > 0)
    end)
  end

  it("emits ldmatrix into the fragment and the register form wgmma.mma_async ... {d}, {a0, a1, a2, a3}, b-desc, p, 1, 1, 0", function()
    local f = tc.workload(128, 128, 128, "float16", "float16", nil, "NT")
    local mod = tir.build(tc.schedule(f, ra_opts {BM = 128, BN = 128, BK = 64, stages = 2, tma = true, epilogue = "D"}).mod,
                          "cuda -arch=sm_90a", {compile = nvrtc_ok})
    local cu = mod:get_source("cuda")
    assert.is_truthy(cu:find("void tir_wgmma_m64n128k16_f16_f16_f32_ra(float *d, const unsigned *a, unsigned long long db)", 1, true))
    assert.is_truthy(cu:find("{%64, %65, %66, %67}, %68, p, 1, 1, 0;", 1, true))
    assert.is_truthy(cu:find("unsigned* r_ = (unsigned*)(A_shared_wgmma_matrix_a + (1024) / 128);", 1, true)) -- slab 1: registers 8..
    assert.is_truthy(cu:find("__align__(16) half A_shared_wgmma_matrix_a[32];", 1, true)) -- 64 x 64 / 128 a thread
    if nvrtc_ok then
      local ptx = mod:get_source("ptx")
      assert.is_truthy(ptx:find("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {[^}]*}, {%%r%d+, %%r%d+, %%r%d+, %%r%d+}, %%rd%d+, p, 1, 1, 0"))
      assert.is_truthy(ptx:find("ldmatrix.sync.aligned.m8n8.x4.shared.b16", 1, true))
    end
    -- the integer form takes no scale / transpose immediates
    local g = tc.workload(128, 64, 256, "int8", "int32", nil, "NT")
    local cu8 = tir.build(tc.schedule(g, ra_opts {BM = 128, BN = 64, BK = 128, stages = 2, tma = true}).mod, "cuda -arch=sm_90a",
                          {compile = false}):get_source("cuda")
    assert.is_truthy(cu8:find("wgmma.mma_async.sync.aligned.m64n64k32.s32.s8.s8 {[^}]*}, {%%32, %%33, %%34, %%35}, %%36, p;"))
  end)

  it("checks its options", function()
    local f = tc.workload(128, 128, 128, "float16", nil, nil, "NT")
    -- wgmma_pending left out: 0 with a register A (the default 1 would need two fragments)
    local sch = tc.schedule(f, {intrin = "wgmma", a_operand = "register", BM = 128, BN = 128, BK = 64, stages = 2, tma = true})
    local mod = tir.build(sch.mod, "cuda -arch=sm_90a", {compile = false})
    assert.are.equal(0, tir.simulate(mod, args_for(f, 1), {reference = f}).n_issues)
    assert.is_nil(mod:get_source("cuda"):find("wgmma.wait_group.sync.aligned 1;", 1, true))
    U.expect_error(function() tc.schedule(f, {intrin = "wgmma", a_operand = "register", tma = true, wgmma_pending = 1}) end,
                   "ValueError in tc_gemm.schedule", "a_operand = \"register\" with wgmma_pending = 1",
                   "block 'C''s A fragment (one \"wgmma.matrix_a\" buffer of 64 x 64 float16 a warpgroup", "PTX ISA 9.7.15.4",
                   "leave wgmma_pending out")
    U.expect_error(function() tc.schedule(f, {intrin = "wgmma", a_operand = "regs"}) end, "a_operand must be \"shared\" or \"register\"")
    U.expect_error(function() cuda.wgmma("m64nNk16.f16.f16.f32", 64, "K", 64, 0, "smem") end, "tir.intrin.cuda.wgmma",
                   "a_operand must be \"shared\" or \"register\"")
  end)
end)

describe("planted bugs in register-A wgmma kernels show on the simulator", function()
  local with_impl = U.with_impl
  local f = tc.workload(64, 64, 128, "float16", nil, nil, "NT")
  local o = ra_opts {BM = 64, BN = 64, BK = 64, stages = 2, tma = true}
  local names = cuda.wgmma("m64nNk16.f16.f16.f32", 64, "K", 64, 0, "register")

  it("a wrong lane -> row map of the fragment's ldmatrix: the result differs, and a hint names the lane map", function()
    with_impl(names.load_a, function()
      local ld = tir.var("ld", "int32")
      return T.prim_func("bad_load", {S = T.Buffer({64, 64}, "float16", {scope = "shared", offset_factor = 16, strides = {ld, 1}}),
                                      D = T.Buffer({64, 64}, "float16", {scope = "wgmma.matrix_a", offset_factor = 16})}, function(S, D)
        T.block("root", function()
          T.reads(S[{{0, 64}, {0, 64}}])
          T.writes(D[{{0, 64}, {0, 64}}])
          local l = T.call("int32", "tir_warpgroup_lane")
          for s = 0, 3 do
            -- matrices 1 and 2 swapped: lanes 8..15 give the column half, 16..23 the lower rows (the
            -- mma.sync B order), so registers a1 and a2 of every thread hold each other's 8 x 8 blocks
            T.evaluate(T.call("void", "mma_ldmatrix", 0, 4, T.address_of(D[{16 * s, 0}]),
                              T.address_of(S[{l // 32 * 16 + l % 8 + l % 32 // 16 * 8, s * 16 + l % 16 // 8 * 8}])))
          end
        end)
      end)
    end, function()
      local mod = tir.build(tc.schedule(f, o).mod, "cuda -arch=sm_90a", {compile = false})
      local rep = tir.simulate(mod, args_for(f, 1), {reference = f, check = false})
      local kinds = {}
      for _, is in ipairs(rep.issues) do kinds[is.kind] = true end
      assert.is_true(kinds.mismatch)
      local hints = table.concat(rep.hints or {}, "\n")
      assert.is_truthy(hints:find("is not a 64 x 16 tile of A_shared", 1, true))
      assert.is_truthy(hints:find("lane -> row mapping of the mma_ldmatrix", 1, true))
    end)
  end)

  it("the fragment reloaded while the group reading it is in flight: wgmma_pending", function()
    -- the sync's group left in flight (wgmma_wait_group 1) with one fragment: the next k step's
    -- ldmatrix overwrites registers the previous group still reads
    local rn = cuda.wgmma("m64nNk16.f16.f16.f32", 64, "K", 64, 1, "register")
    local mod0 = tir.build(tc.schedule(f, o).mod, "cuda -arch=sm_90a", {compile = false})
    assert.are.equal(0, tir.simulate(mod0, args_for(f, 1), {reference = f}).n_issues) -- the schedule as it is: clean
    with_impl(names.sync, function() return select(2, tir.TensorIntrin.get(rn.sync)) end, function()
      local mod = tir.build(tc.schedule(f, o).mod, "cuda -arch=sm_90a", {compile = false})
      U.expect_error(function() tir.simulate(mod, args_for(f, 1), {reference = f}) end, "mma_ldmatrix overwrites wgmma A fragment",
                     "until a wgmma_wait_group covers that group", "PTX ISA 9.7.15.4")
    end)
  end)
end)
