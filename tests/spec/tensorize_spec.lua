-- tensorize_spec.lua -- tensor intrinsics: the registry, sch:tensorize (structure, regions,
-- every mismatch error), the interpreter running desc in place of impl, the WMMA and mma.sync
-- GEMM schedules (interpreter-equivalent to the plain matmul), their CUDA through NVRTC for
-- sm_80 and sm_90 with the intended PTX instructions.
local tir = require("tir")
local T = tir.script
local U = require("spec_util")
local tc = require("tir.schedules.tc_gemm")
require("tir.intrin.cuda")

local function nvrtc() return (tir.core.nvrtc_available and tir.core.nvrtc_available()) ~= false end

-- a 32x32x32 fp16 matmul with A, B in shared memory and C in a wmma accumulator, loops split by 16
local function staged(dtype)
  local f = tc.workload(32, 32, 32, dtype or "float16")
  local sch = tir.Schedule(f)
  local C = sch:get_block("C")
  local AF = sch:cache_read(C, 0, "wmma.matrix_a") -- reads A, B (the init means C is not read)
  local BF = sch:cache_read(C, 1, "wmma.matrix_b")
  local CF = sch:cache_write(C, 0, "wmma.accumulator")
  local i, j, k = sch:get_loops(C)
  local io, ii = sch:split(i, {nil, 16})
  local jo, ji = sch:split(j, {nil, 16})
  local ko, ki = sch:split(k, {nil, 16})
  sch:reorder(io, jo, ko, ii, ji, ki)
  return sch, {C = C, AF = AF, BF = BF, CF = CF, io = io, jo = jo, ko = ko, ii = ii, ji = ji, ki = ki}
end

describe("TensorIntrin registry", function()
  it("lists the CUDA library and rejects bad registrations", function()
    local names = {}
    for _, n in ipairs(tir.TensorIntrin.list()) do names[n] = true end
    for _, n in ipairs({"wmma_load_16x16x16_f16_a", "wmma_sync_16x16x16_f16f16f32", "mma_ldmatrix_16x16_f16_b",
                        "mma_sync_16x16x16_f16f32", "mma_store_16x16_f32_f16_global"}) do
      assert.is_true(names[n], n)
    end
    local desc, impl = tir.TensorIntrin.get("wmma_fill_16x16x16_f32")
    assert.is_truthy(desc and impl)
    assert.is_nil(tir.TensorIntrin.get("nope"))
    U.expect_error(function() tir.TensorIntrin.register("wmma_fill_16x16x16_f32", desc, impl) end, "already registered",
                   "override")
    local other = tir.TensorIntrin.get("wmma_load_16x16x16_f16_a")
    U.expect_error(function() tir.TensorIntrin.register("bad", desc, other) end, "desc has 1 parameters, impl 2")
    U.expect_error(function() tir.TensorIntrin.register("bad", desc, 3) end, "impl must be a PrimFunc")
  end)
end)

describe("tensorize", function()
  it("replaces a nest by the intrinsic, keeps results (interpreter runs desc)", function()
    local sch, h = staged()
    local f0 = sch:original()
    local init = sch:decompose_reduction(h.C, h.ko)
    local blk = sch:tensorize(h.ii, "wmma_sync_16x16x16_f16f16f32")
    assert.are.equal("C_update_o", blk.name)
    local b = sch:get(blk)
    assert.are.equal(3, #b.match_buffers)
    local s = tostring(sch.mod)
    assert.matches('T.block_attr%({%["tensor_intrin"%] = "wmma_sync_16x16x16_f16f16f32"}%)', s)
    assert.matches('T.call%("void", "wmma_mma"', s)
    local il = {sch:get_loops(init)}
    sch:tensorize(il[#il - 1], "wmma_fill_16x16x16_f32")
    U.assert_equiv(f0, sch.mod, {rtol = 1e-3, atol = 1e-3})
    -- the trace replays to the same function
    local s2 = tir.Schedule(f0)
    s2:apply_trace(sch:trace())
    assert.is_true((tir.structural_equal(s2.mod, sch.mod)))
  end)

  it("accepts a block (its innermost loops)", function()
    local sch, h = staged()
    sch:decompose_reduction(h.C, h.ko)
    sch:tensorize(h.C, "wmma_sync_16x16x16_f16f16f32")
    U.assert_equiv(sch:original(), sch.mod, {rtol = 1e-3, atol = 1e-3})
  end)

  it("says what differs", function()
    local sch, h = staged()
    U.expect_error(function() sch:tensorize(h.ii, "no_such_intrin") end, "ScheduleError in tensorize", "no tensor intrinsic named 'no_such_intrin'")
    U.expect_error(function() sch:tensorize(h.ii, "wmma_sync_16x16x16_f16f16f32") end, "has an init",
                   "decompose_reduction first")
    sch:decompose_reduction(h.C, h.ko)
    -- wrong nest depth
    U.expect_error(function() sch:tensorize(h.ji, "wmma_sync_16x16x16_f16f16f32") end, "has 3 loop(s) around its block, but this nest has 2")
    -- wrong extent: split ki by 8 inside
    local sch2, h2 = staged()
    sch2:decompose_reduction(h2.C, h2.ko)
    local k0, k1 = sch2:split(h2.ki, {nil, 8})
    U.expect_error(function() sch2:tensorize(h2.ii, "wmma_sync_16x16x16_f16f16f32") end, "has 4")
    -- wrong scope: the operands still in global memory
    local f = tc.workload(32, 32, 32)
    local sch3 = tir.Schedule(f)
    local C = sch3:get_block("C")
    local i, j, k = sch3:get_loops(C)
    local _, ii = sch3:split(i, {nil, 16}); local _, ji = sch3:split(j, {nil, 16}); local ko, ki = sch3:split(k, {nil, 16})
    local l = {sch3:get_loops(C)}
    sch3:reorder(l[1], l[3], l[5], l[2], l[4], l[6])
    sch3:decompose_reduction(C, l[5])
    U.expect_error(function() sch3:tensorize(l[2], "wmma_sync_16x16x16_f16f16f32") end, "desc's C is in scope 'wmma.accumulator'",
                   "the block's C is in scope 'global'", "cache_read/cache_write or set_scope it")
    -- wrong dtype: float32 operands
    local sch4, h4 = staged("float32")
    sch4:decompose_reduction(h4.C, h4.ko)
    U.expect_error(function() sch4:tensorize(h4.ii, "wmma_sync_16x16x16_f16f16f32") end, "is float16", "is float32")
    -- wrong body: a copy where desc multiplies
    local sch5, h5 = staged()
    local al = {sch5:get_loops(h5.AF)}
    local a0, a1 = sch5:split(al[#al - 1], {nil, 16}); local b0, b1 = sch5:split(al[#al], {nil, 16})
    sch5:reorder(a0, b0, a1, b1)
    U.expect_error(function() sch5:tensorize(a1, "wmma_fill_16x16x16_f32") end, "buffer access")
    -- a predicate from a split that does not divide
    local f6 = tc.workload(40, 32, 32)
    local sch6 = tir.Schedule(f6)
    local C6 = sch6:get_block("C")
    local AF6 = sch6:cache_read(C6, 0, "wmma.matrix_a")
    local l6 = {sch6:get_loops(AF6)}
    local r0, r1 = sch6:split(l6[1], {nil, 16}); local c0, c1 = sch6:split(l6[2], {nil, 16})
    sch6:reorder(r0, c0, r1, c1)
    U.expect_error(function() sch6:tensorize(r1, "wmma_load_16x16x16_f16_a") end, "predicate over the loops being tensorized")
  end)
end)

describe("tensor-core GEMM schedules", function()
  for _, cfg in ipairs({{intrin = "mma"}, {intrin = "wmma"}, {intrin = "mma", epilogue = "D"}, {intrin = "wmma", epilogue = "D"},
                        {intrin = "mma", dtype = "bfloat16"}}) do
    local name = cfg.intrin .. (cfg.epilogue and " with the fp16 epilogue" or "") .. (cfg.dtype and " " .. cfg.dtype or "")
    it(name .. ": interpreter-equivalent, PTX with the tensor-core instructions", function()
      local f = tc.workload(64, 64, 64, cfg.dtype or "float16", cfg.epilogue and "float16")
      local o = {BM = 32, BN = 32, BK = 32, warp_m = 16, warp_n = 16}
      for k, v in pairs(cfg) do o[k] = v end
      local sch = tc.schedule(f, o)
      U.assert_equiv(f, sch.mod, {rtol = 2e-2, atol = 2e-2, trials = 1})
      for _, arch in ipairs({"sm_80", "sm_90"}) do
        local m = tir.build(sch.mod, "cuda -arch=" .. arch)
        local ptx = m:get_source("ptx")
        if cfg.intrin == "mma" then
          assert.matches("mma%.sync%.aligned%.m16n8k16%.row%.col%.f32%." .. (cfg.dtype and "bf16" or "f16"), ptx)
          assert.matches("ldmatrix%.sync%.aligned%.m8n8%.x4%.shared%.b16", ptx)
          assert.matches("ldmatrix%.sync%.aligned%.m8n8%.x4%.trans%.shared%.b16", ptx)
        else
          assert.matches("wmma%.mma%.sync%.aligned", ptx)
          assert.matches("wmma%.load%.a%.sync%.aligned", ptx)
        end
        assert.is_nil(ptx:find("st%.local"), "fragments spilled to local memory")
      end
    end)
  end

  for _, lay in ipairs({"NT", "TN", "TT"}) do
    it("layout " .. lay .. " (operands stored transposed): interpreter-equivalent, transposing loads in the PTX", function()
      local f = tc.workload(64, 64, 64, "float16", "float16", nil, lay)
      for _, intrin in ipairs({"mma", "wmma"}) do
        local sch = tc.schedule(f, {intrin = intrin, BM = 32, BN = 32, BK = 32, warp_m = 16, warp_n = 16, epilogue = "D"})
        U.assert_equiv(f, sch.mod, {rtol = 2e-2, atol = 2e-2, trials = 1})
        local ptx = tir.build(sch.mod, "cuda -arch=sm_80"):get_source("ptx")
        if intrin == "wmma" then
          assert.matches(lay:sub(1, 1) == "T" and "wmma%.load%.a%.sync%.aligned%.col" or "wmma%.load%.a%.sync%.aligned%.row", ptx)
        else
          local _, trans = ptx:gsub("ldmatrix%.sync%.aligned%.m8n8%.x4%.trans", "")
          local _, plain = ptx:gsub("ldmatrix%.sync%.aligned%.m8n8%.x4%.shared", "")
          -- A loads with .trans when stored transposed; B with .trans when stored k x n (not transposed)
          local ta, tb = lay:sub(1, 1) == "T", lay:sub(2, 2) == "T"
          assert.are.equal(ta or not tb, trans > 0)
          assert.are.equal(not ta or tb, plain > 0)
        end
      end
    end)
  end

  it("auto_tensorize schedules a batched matmul-like block with a transposed operand", function()
    local te = tir.te
    local A = te.placeholder({2, 64, 32}, "float16", "A")
    local B = te.placeholder({2, 48, 32}, "float16", "B")
    local k = te.reduce_axis({0, 32}, "k")
    local C = te.compute({2, 64, 48}, function(b, i, j)
      return te.sum(te.cast("float32", A[{b, i, k}]) * te.cast("float32", B[{b, j, k}]), {k})
    end, "bmm")
    local f = te.create_prim_func({A, B, C})
    for _, ins in ipairs({"mma.m16n8k16", "wmma.m16n16k16"}) do
      local sch, o = tc.auto_tensorize(f, ins, "bmm")
      assert.are.equal(64, o.BM)
      U.assert_equiv(f, sch.mod, {rtol = 2e-3, atol = 2e-3, trials = 1})
      assert.matches("blockIdx.z", tir.build(sch.mod, "cuda -arch=sm_90"):get_source("cuda"))
    end
    U.expect_error(function() tc.auto_tensorize(f, "mma.m8n8k4", "bmm") end, "unknown instruction")
    U.expect_error(function() tc.auto_tensorize(tc.workload(32, 32, 32, "float32"), "mma.m16n8k16") end,
      "multiplies float32 into float32")
    local fb = tc.workload(32, 32, 32, "bfloat16")
    local sb, ob = tc.auto_tensorize(fb, "mma.m16n8k16")
    assert.are.equal("bfloat16", ob.dtype)
    U.assert_equiv(fb, sb.mod, {rtol = 2e-2, atol = 2e-2, trials = 1})
    U.expect_error(function() tc.auto_tensorize(tc.workload(40, 32, 32), "mma.m16n8k16") end, "must be multiples of 16")
  end)

  it("frag_pipeline: the next k16 step's fragments load during this step's mma (nested pipeline), results unchanged", function()
    local f = tc.workload(128, 128, 128, "float16", "float16")
    local sch = tc.schedule(f, {intrin = "mma", BM = 64, BN = 64, BK = 32, warp_m = 32, warp_n = 32, epilogue = "D", stages = 3,
                                frag_pipeline = true})
    U.assert_equiv(f, sch.mod, {rtol = 2e-2, atol = 2e-2, trials = 1})
    local m = tir.build(sch.mod, "cuda -arch=sm_80")
    tir.simulate(m, tir.testing.random_args(f, 2), {reference = f, rtol = 1e-2, atol = 1e-2})
    assert.is_nil(m:get_source("ptx"):find("ld%.local"))
  end)

  it("refuses warp-wide builtins in blocks that are not whole warps", function()
    -- a wmma GEMM with only blockIdx bound: every thread block would be one thread
    local f = tc.workload(32, 32, 32)
    local sch = tir.Schedule(f)
    local blk = sch:get_block("C")
    local i, j, kk = sch:get_loops(blk)
    local i0, i1 = sch:split(i, {nil, 16}); local j0, j1 = sch:split(j, {nil, 16}); local k0, k1 = sch:split(kk, {nil, 16})
    sch:reorder(i0, j0, k0, i1, j1, k1)
    local As, Bs = sch:cache_read(blk, 0, "shared"), sch:cache_read(blk, 1, "shared")
    local Aw, Bw = sch:cache_read(blk, 0, "wmma.matrix_a"), sch:cache_read(blk, 1, "wmma.matrix_b")
    local Cw = sch:cache_write(blk, 0, "wmma.accumulator")
    sch:compute_at(Aw, k0); sch:compute_at(Bw, k0); sch:compute_at(As, k0); sch:compute_at(Bs, k0)
    sch:reverse_compute_at(Cw, j0)
    -- bound before decompose_reduction: the update without its init is not a reduction block
    sch:bind(i0, "blockIdx.y"); sch:bind(j0, "blockIdx.x")
    local init = sch:decompose_reduction(blk, k0)
    sch:tensorize(i1, "wmma_sync_16x16x16_f16f16f32")
    sch:tensorize(select(3, sch:get_loops(init)), "wmma_fill_16x16x16_f32")
    local la = sch:tensorize(select(4, sch:get_loops(Aw)), "wmma_load_16x16x16_f16_a")
    local lb = sch:tensorize(select(4, sch:get_loops(Bw)), "wmma_load_16x16x16_f16_b")
    local st = sch:tensorize(select(3, sch:get_loops(Cw)), "wmma_store_16x16x16_f32_global")
    local tiled = function(r, c) return r // 16, c // 16, r % 16, c % 16 end
    sch:transform_layout(la, {"write", 0}, tiled); sch:transform_layout(lb, {"write", 0}, tiled)
    sch:transform_layout(st, {"read", 0}, tiled)
    U.assert_equiv(f, sch.mod, {rtol = 1e-3, atol = 1e-3, trials = 1})
    U.expect_error(function() tir.build(sch.mod, "cuda -arch=sm_80", {compile = false}) end, "uses the warp-wide builtin",
      "not whole warps", "bind threadIdx.x to 32 lanes")
  end)

  it("uses dynamic shared memory beyond 48 KB", function()
    local f = tc.workload(256, 256, 64, "float16", "float16")
    local m = tir.build(tc.schedule(f, {intrin = "wmma", epilogue = "D"}).mod, "cuda -arch=sm_90")
    assert.matches("extern __shared__ __align__%(1024%) unsigned char tir_dyn_smem%[%]", m:get_source("cuda"))
    assert.is_true(m:kernels()[1].dyn_smem_bytes > 48 * 1024)
  end)
end)
