-- imma_spec.lua -- int8 tensor cores: the IMMA rows (mma.sync m16n8k32 s8/u8 -> s32, ldmatrix)
-- and the int8 WMMA rows (m16n16k16, m32n8k16, m8n32k16) of include/tir/mma.h, their
-- intrinsics (lib/tir/intrin/cuda.lua) and tc_gemm's int8 schedules.  Every schedule runs
-- through the interpreter (before/after, exact) and the warp-accurate simulator (bit-exact
-- against the interpreter, full-range inputs); planted bugs in the lane map and the k packing
-- must show; PTX for sm_80/sm_90 holds the instructions; bad inputs are clear errors.
local tir = require("tir")
local T = tir.script
local U = require("spec_util")
local tc = require("tir.schedules.tc_gemm")
local cuda = require("tir.intrin.cuda")

local nvrtc_ok = tir.core.nvrtc_available()
local asan = os.getenv("ASAN_OPTIONS") ~= nil

local args_for = U.full_range_args -- full-range random inputs (int8 -128..127, uint8 0..255), fixed seed

-- the lowered kernels on the simulator against the interpreter's results of f, exactly
local function sim_exact(f, sch, seed)
  local mod = tir.build(sch.mod, "cuda -arch=sm_80", {compile = false})
  local rep = tir.simulate(mod, args_for(f, seed or 1), {reference = f})
  assert.are.equal(0, rep.n_issues)
  assert.are.equal(0, rep.races)
  assert.are.same({}, rep.hints)
  return rep
end

local SMALL = {intrin = "mma", BM = 64, BN = 64, BK = 64, warp_m = 32, warp_n = 32}
local function opts(o) return U.merge(SMALL, o) end

local function count(s, pat)
  local n = 0
  for _ in s:gmatch(pat) do n = n + 1 end
  return n
end

describe("the int8 rows of the instruction table", function()
  it("m16n8k32 s8/u8 rows (4 + 2 registers of four 8-bit values, 4 s32), sm_80; int8 wmma rows sm_72", function()
    local by = {}
    for _, r in ipairs(tir.core.mma_configs()) do by[r.family .. ":" .. r.name] = r end
    for _, n in ipairs({"s8.s8", "u8.s8", "s8.u8", "u8.u8"}) do
      local r = by["mma:m16n8k32." .. n .. ".s32"]
      assert.are.same({16, 8, 32, "int32", 4, 2, 4, 80}, {r.m, r.n, r.k, r.c, r.regs_a, r.regs_b, r.regs_c, r.min_sm})
    end
    for _, s in ipairs({"m16n16k16", "m32n8k16", "m8n32k16"}) do
      for _, t in ipairs({"s8.s8", "u8.u8"}) do
        assert.are.equal(72, by["wmma:" .. s .. "." .. t .. ".s32"].min_sm)
      end
    end
  end)

  it("registers the intrinsics per row (8-bit operands k-major: no ldmatrix .trans variants)", function()
    local have = {}
    for _, n in ipairs(tir.TensorIntrin.list()) do have[n] = true end
    for _, n in ipairs({"mma_ldmatrix_16x32_s8_a", "mma_ldmatrix_16x32_s8_b_trans", "mma_ldmatrix_16x32_u8_a",
                        "mma_ldmatrix_16x32_s8_a_smem_t", "mma_ldmatrix_16x32_s8_b_smem_t", "mma_sync_16x16x32_s8s8s32",
                        "mma_sync_16x16x32_u8s8s32", "mma_sync_16x16x32_s8u8s32", "mma_sync_16x16x32_u8u8s32", "mma_fill_16x16_s32",
                        "mma_store_16x16_s32_global", "mma_store_16x16_s32_shared", "wmma_load_16x16x16_s8_a",
                        "wmma_load_32x8x16_u8_b_trans", "wmma_sync_8x32x16_s8s8s32", "wmma_fill_32x8x16_s32",
                        "wmma_store_16x16x16_s32_global"}) do
      assert.is_true(have[n], n)
    end
    assert.is_nil(have["mma_ldmatrix_16x32_s8_b"])
    assert.is_nil(have["mma_ldmatrix_16x32_s8_a_trans"])
    -- the multiply's desc: C[i, j] += i32(A[i, k]) * i32(B[k, j]) over 16 x 16 x 32
    local desc = tir.TensorIntrin.get("mma_sync_16x16x32_u8s8s32")
    local s = tostring(desc)
    assert.matches("T.grid%(16, 16, 32%)", s)
    assert.matches('T.cast%("int32", A%[{vi, vk}%]%) %* T.cast%("int32", B%[{vk, vj}%]%)', s)
  end)
end)

describe("tc_gemm int8 with mma.sync m16n8k32 (IMMA)", function()
  it("all four layouts, bit-exact on the simulator and through the interpreter", function()
    for _, layout in ipairs(asan and {"NT", "TN"} or {"NN", "NT", "TN", "TT"}) do
      local f = tc.workload(64, 64, 128, "int8", "int32", nil, layout)
      local sch = tc.schedule(f, opts())
      U.assert_equiv(f, sch.mod, {trials = 1})
      sim_exact(f, sch)
    end
  end)

  it("u8 x s8, s8 x u8, u8 x u8 rows", function()
    for _, dt in ipairs({{"uint8", "int8"}, {"int8", "uint8"}, "uint8"}) do
      local f = tc.workload(64, 64, 64, dt, "int32", nil, "NT")
      local sch = tc.schedule(f, opts())
      local src = tir.build(sch.mod, "cuda -arch=sm_80", {compile = false}):get_source("cuda")
      local a = type(dt) == "table" and dt[1] or dt
      local b = type(dt) == "table" and dt[2] or dt
      local p = {int8 = "s8", uint8 = "u8"}
      assert.truthy(src:find(("mma.sync.aligned.m16n8k32.row.col.s32.%s.%s.s32"):format(p[a], p[b]), 1, true))
      sim_exact(f, sch, 2)
    end
  end)

  it("extreme values: -128 * -128 and 255 * 127 summed over K, exact", function()
    local f = tc.workload(64, 64, 256, {"uint8", "int8"}, "int32", nil, "NT")
    local sch = tc.schedule(f, opts())
    local mod = tir.build(sch.mod, "cuda -arch=sm_80", {compile = false})
    local A = tir.nd.empty({64, 256}, "uint8")
    local B = tir.nd.empty({64, 256}, "int8")
    for i = 0, 64 * 256 - 1 do
      A:set(i, (i % 7 == 0) and 0 or 255)
      B:set(i, (i % 5 == 0) and -128 or 127)
    end
    local C = tir.nd.empty({64, 64}, "int32")
    tir.simulate(mod, {A, B, C}, {reference = f})
    -- row 1 (A all 255 except multiples of 7) times column 0 of B^T: checked against int64 arithmetic
    local want = 0
    for k = 0, 255 do
      local ia, ib = 256 + k, k
      want = want + ((ia % 7 == 0) and 0 or 255) * ((ib % 5 == 0) and -128 or 127)
    end
    assert.are.equal(want, C:get(1, 0))
  end)

  it("padded shapes, cp.async pipelines, batch", function()
    local f = tc.workload(50, 70, 100, "int8", "int32", {64, 64, 64}, "NT")
    sim_exact(f, tc.schedule(f, opts({stages = 2})))
    local g = tc.workload(64, 64, 256, "int8", "int32", nil, "NT")
    local sch = tc.schedule(g, opts({stages = 3}))
    local src = tir.build(sch.mod, "cuda -arch=sm_80", {compile = false}):get_source("cuda")
    assert.truthy(src:find("tir_cp_async<16>", 1, true))
    sim_exact(g, sch)
    -- A stored k x m: its shared tile is made k-major by the copy (plain stores, no cp.async for A)
    local h = tc.workload(64, 64, 256, "int8", "int32", nil, "TN")
    sim_exact(h, tc.schedule(h, opts({stages = 3})))
    -- a batch dimension (bound to blockIdx.z) through auto_tensorize
    local te = tir.te
    local A = te.placeholder({2, 64, 64}, "int8", "A")
    local B = te.placeholder({2, 32, 64}, "int8", "B")
    local k = te.reduce_axis({0, 64}, "k")
    local C = te.compute({2, 64, 32}, function(b, i, j)
      return te.sum(te.cast("int32", A[{b, i, k}]) * te.cast("int32", B[{b, j, k}]), {k})
    end, "bmm")
    local bf = te.create_prim_func({A, B, C})
    local bs, o = tc.auto_tensorize(bf, "mma.m16n8k32", "bmm")
    assert.are.equal("int8", o.dtype)
    U.assert_equiv(bf, bs.mod, {trials = 1})
    local mod = tir.build(bs.mod, "cuda -arch=sm_80", {compile = false})
    assert.matches("blockIdx.z", mod:get_source("cuda"))
    tir.simulate(mod, args_for(bf, 3), {reference = bf})
  end)

  it("PTX for sm_80 and sm_90 holds mma.sync m16n8k32 s8 and ldmatrix", function()
    if not nvrtc_ok then return pending("NVRTC is not available") end
    local f = tc.workload(128, 128, 128, "int8", "int32", nil, "NT")
    for _, arch in ipairs({"sm_80", "sm_90"}) do
      local mod = tir.build(tc.schedule(f, {intrin = "mma", BK = 64, stages = 3}).mod, "cuda -arch=" .. arch)
      local ptx = mod:get_source("ptx")
      -- 128x128 CTA, 64x64 warps, BK 64: 4x4 warp tiles of 2 instructions, 2 k32 steps, 1 + 2 pipelined copies
      assert.is_true(count(ptx, "mma%.sync%.aligned%.m16n8k32%.row%.col%.s32%.s8%.s8%.s32") >= 64, arch)
      assert.is_true(count(ptx, "ldmatrix%.sync%.aligned%.m8n8%.x4%.shared%.b16") >= 16, arch)
      assert.is_nil(ptx:find("ldmatrix.sync.aligned.m8n8.x4.trans", 1, true))
      assert.truthy(ptx:find("cp.async.cg.shared.global", 1, true))
    end
  end)

  it("refuses: an old architecture, K not a multiple of 32, mismatched dtypes, a float accumulator", function()
    local f = tc.workload(64, 64, 128, "int8", "int32", nil, "NT")
    U.expect_error(function() tir.build(tc.schedule(f, opts()).mod, "cuda -arch=sm_75", {compile = false}) end,
      "mma_sync: mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 needs sm_80 or newer, but the target is sm_75")
    U.expect_error(function() tc.schedule(tc.workload(64, 64, 100, "int8", "int32", nil, "NT"), opts()) end,
      "K = 100 is not a multiple of BK = 64", "tc_gemm.workload(..., pad = {BM, BN, BK})")
    U.expect_error(function() tc.schedule(tc.workload(64, 64, 64, {"int8", "float16"}), opts()) end,
      "block 'C' multiplies int8 by float16, which intrin = \"mma\" does not run", "mma (mma.m16n8k32): uint8 x int8 -> int32")
    U.expect_error(function() tc.schedule(f, opts({dtype = "float16"})) end, "opts.dtype is float16 but block 'C' reads int8 operands")
    U.expect_error(function() tc.workload(64, 64, 64, "int8", "float32") end, "int8 x int8 inputs accumulate in int32; out_dtype must be int32")
    U.expect_error(function() tc.schedule(f, opts({BK = 48})) end, "BK of 32 (m16n8k32.s8.s8.s32")
    U.expect_error(function() tc.schedule(f, opts({vec = 32})) end, "vec must be 1, 2, 4, 8 or 16")
    U.expect_error(function() tc.auto_tensorize(f, "mma.m16n8k16") end, "block 'C' multiplies int8 into int32, which mma.m16n8k16 does not run")
    U.expect_error(function() tc.auto_tensorize(tc.workload(64, 64, 64), "mma.m16n8k32") end,
      "block 'C' multiplies float16 into float32, which mma.m16n8k32 does not run")
    U.expect_error(function() tc.auto_tensorize(tc.workload(64, 64, 48, "int8", "int32"), "mma.m16n8k32") end,
      "must be multiples of 16, 16, 32")
    -- a T script mixing int8 and float16 operands
    local g = T.prim_func("mixed", {A = T.Buffer({32, 32}, "int8"), B = T.Buffer({32, 32}, "float16"), C = T.Buffer({32, 32}, "float32")},
      function(A, B, C)
        for i, j, k in T.grid(32, 32, 32) do
          T.block("C", function()
            local vi, vj, vk = T.axis.remap("SSR", {i, j, k})
            T.init(function() C[{vi, vj}] = T.float32(0) end)
            C[{vi, vj}] = C[{vi, vj}] + T.cast("float32", A[{vi, vk}]) * T.cast("float32", B[{vk, vj}])
          end)
        end
      end)
    U.expect_error(function() tc.schedule(g, opts()) end, "block 'C' multiplies int8 by float16")
  end)

  it("auto_tensorize(func, \"mma.m16n8k32\") picks 8-bit tiles (BK 64) and stays exact", function()
    local f = tc.workload(128, 64, 192, "int8", "int32", nil, "NT")
    local sch, o = tc.auto_tensorize(f, "mma.m16n8k32")
    assert.are.same({"mma", 64, 3}, {o.intrin, o.BK, o.stages})
    sim_exact(f, sch)
  end)
end)

describe("planted bugs in the int8 fragments show on the simulator", function()
  local function with_bad(name, impl_body, fn)
    local desc, good = tir.TensorIntrin.get(name)
    local ok, err = pcall(function()
      local ld = tir.var("ld", "int32")
      local rows, cols = 16, 32
      local bad = T.prim_func("bad_" .. name, {S = T.Buffer({rows, cols}, "int8", {scope = "shared", offset_factor = 16, strides = {ld, 1}}),
                                                D = T.Buffer(name:match("_b_trans$") and {cols, rows} or {rows, cols}, "int8",
                                                  {scope = "warp", offset_factor = 16})}, function(S, D)
        T.block("root", function()
          T.reads(S[{{0, rows}, {0, cols}}])
          T.writes(name:match("_b_trans$") and D[{{0, cols}, {0, rows}}] or D[{{0, rows}, {0, cols}}])
          impl_body(S, D, T.call("int32", "tir_lane_id"))
        end)
      end)
      tir.TensorIntrin.register(name, desc, bad, true)
      fn()
    end)
    tir.TensorIntrin.register(name, desc, good, true)
    assert(ok, err)
  end

  it("a wrong ldmatrix lane -> row map for A (matrices 1 and 2 swapped): differs, with a hint at A", function()
    local f = tc.workload(64, 64, 64, "int8", "int32", nil, "NT")
    with_bad("mma_ldmatrix_16x32_s8_a", function(S, D, lane)
      T.evaluate(T.call("void", "mma_ldmatrix", 0, 4, T.address_of(D[{0, 0}]), T.address_of(S[{lane % 8 + lane // 16 * 8, lane // 8 % 2 * 16}])))
    end, function()
      local sch = tc.schedule(f, opts())
      local mod = tir.build(sch.mod, "cuda -arch=sm_80", {compile = false})
      U.expect_error(function() tir.simulate(mod, args_for(f, 1), {reference = f}) end, "C differs from the oracle (the interpreter) at",
        "hint: the A operand of mma_sync in warp 0 is not a 16x32 tile of A_shared", "m16n8k32 A fragment (PTX ISA 9.7.14.5.10)")
    end)
  end)

  it("a wrong k packing of B (the two 16-byte k halves of each register pair swapped): differs, with a hint at B", function()
    local f = tc.workload(64, 64, 64, "int8", "int32", nil, "NT")
    with_bad("mma_ldmatrix_16x32_s8_b_trans", function(S, D, lane)
      T.evaluate(T.call("void", "mma_ldmatrix", 0, 4, T.address_of(D[{0, 0}]), T.address_of(S[{lane % 8 + lane // 16 * 8, (1 - lane // 8 % 2) * 16}])))
    end, function()
      local sch = tc.schedule(f, opts())
      local mod = tir.build(sch.mod, "cuda -arch=sm_80", {compile = false})
      U.expect_error(function() tir.simulate(mod, args_for(f, 1), {reference = f}) end, "C differs from the oracle (the interpreter) at",
        "hint: the B operand of mma_sync in warp 0 is not a 32x16 tile of B_shared", "(n 0-7, k 0-15), (n 0-7, k 16-31)")
    end)
  end)

  it("ldmatrix .trans on 8-bit data is refused (PTX ISA: .trans transposes 16-bit elements)", function()
    local f = tc.workload(64, 64, 64, "int8", "int32", nil, "NT")
    with_bad("mma_ldmatrix_16x32_s8_a", function(S, D, lane)
      T.evaluate(T.call("void", "mma_ldmatrix", 1, 4, T.address_of(D[{0, 0}]), T.address_of(S[{lane % 16, lane // 16 * 16}])))
    end, function()
      local sch = tc.schedule(f, opts())
      local mod = tir.build(sch.mod, "cuda -arch=sm_80", {compile = false})
      U.expect_error(function() tir.simulate(mod, args_for(f, 1), {reference = f}) end,
        "mma_ldmatrix: .trans transposes 16-bit elements only; A_shared has 8-bit elements")
    end)
  end)
end)

describe("tc_gemm int8 with WMMA", function()
  it("m16n16k16 in every layout, m32n8k16 and m8n32k16 where their tiles are 16-byte wide, exact", function()
    local cases = {{"NN", {16, 16, 16}}, {"TT", {16, 16, 16}}, {"NT", {32, 8, 16}}, {"NN", {8, 32, 16}}}
    if not asan then cases[#cases + 1] = {"TN", {16, 16, 16}}; cases[#cases + 1] = {"NT", {16, 16, 16}} end
    for _, c in ipairs(cases) do
      local f = tc.workload(64, 64, 64, "int8", "int32", nil, c[1])
      local sch = tc.schedule(f, opts({intrin = "wmma", BK = 32, wmma_shape = c[2]}))
      U.assert_equiv(f, sch.mod, {trials = 1})
      sim_exact(f, sch)
    end
    local g = tc.workload(64, 64, 128, "uint8", "int32", nil, "NT")
    sim_exact(g, tc.schedule(g, opts({intrin = "wmma", BK = 32, stages = 2})))
    if nvrtc_ok then
      local ptx = tir.build(tc.schedule(g, opts({intrin = "wmma", BK = 32})).mod, "cuda -arch=sm_80"):get_source("ptx")
      assert.truthy(ptx:find("wmma.mma.sync.aligned.row.col.m16n16k16.s32.u8.u8.s32", 1, true) or
                    ptx:find("wmma.mma.sync.aligned.row.col.m16n16k16.u8", 1, true))
    end
  end)

  it("refuses a fragment whose stored width is not 16 bytes, and wmma for u8 x s8", function()
    local f = tc.workload(64, 64, 64, "int8", "int32", nil, "NN")
    U.expect_error(function() tc.schedule(f, opts({intrin = "wmma", BK = 32, wmma_shape = {32, 8, 16}})) end,
      "wmma m32n8k16.s8.s8.s32: the B tile is stored 16x8 (layout NN), so its leading dimension is 8 bytes")
    U.expect_error(function() tc.schedule(tc.workload(64, 64, 64, {"uint8", "int8"}, "int32"), opts({intrin = "wmma", BK = 32})) end,
      "block 'C' multiplies uint8 by int8, which intrin = \"wmma\" does not run")
    U.expect_error(function() tc.schedule(f, opts({intrin = "wmma", BK = 32, wmma_shape = {8, 8, 16}})) end,
      "wmma_shape {8, 8, 16} is not a wmma shape for int8 inputs")
  end)
end)
