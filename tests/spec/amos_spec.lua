-- amos_spec.lua -- tir.amos: enumeration, cost ranking, application and errors of AMOS-style
-- mappings onto tensor intrinsics.  Every applied mapping is checked against the interpreter
-- (the original function) and, lowered for sm_80, on the simulator.
local tir = require("tir")
local U = require("spec_util")
local W = require("amos_workloads")

local function check_applied(f, sch, tol)
  local args = tir.testing.random_args(f, 1)
  local ref = tir.testing.copy_args(args)
  tir.interpret(f, ref)
  tir.interpret(sch.mod, args)
  local n = #args
  if tol then
    tir.testing.assert_allclose(args[n], ref[n], {rtol = tol, atol = tol})
  else
    assert.are.same(ref[n]:to_table(), args[n]:to_table())
  end
  local mod = tir.build(sch.mod, "cuda -arch=sm_80", {compile = false})
  tir.simulate(mod, tir.testing.random_args(f, 2), {reference = f, rtol = tol or 0, atol = tol or 0})
end

local function map_and_check(f, block, intrin, choice, tol)
  local cands = tir.amos.mappings(f, block, intrin)
  assert.is_true(#cands > 0, tostring(cands))
  local sch, c = cands:apply(choice)
  check_applied(f, sch, tol)
  return cands, sch, c
end

describe("amos.mappings", function()
  it("enumerates the fusions of a conv2d NHWC, ranked, and prints a table", function()
    local f = W.conv2d(1, 8, 8, 16, 16, 3, 3, {pad = 1})
    local cands = tir.amos.mappings(f, "conv", "mma.m16n8k16")
    -- 3 fusions of the pixels into M (yy*xx, or one of them with the other a batch index),
    -- each also with the roles exchanged (the channels as M)
    assert.are.equal(6, #cands)
    local text = tostring(cands)
    assert.truthy(text:find("mappings of block 'conv' onto mma.m16n8k16", 1, true))
    assert.truthy(text:find("M=yy*xx(64) N=ff(16) K=ry*rx*rc(144)", 1, true))
    assert.truthy(text:find("predicted", 1, true))
    -- the best needs no padding; the ones with a batch dimension pad M from 8 to 16
    assert.are.equal(0, cands[1].waste)
    assert.is_false(cands[1].swap)
    assert.is_true(cands[2].swap)
    assert.truthy(text:find("M=ff(16) N=yy*xx(64) K=ry*rx*rc(144)", 1, true))
    assert.are.equal(0.5, cands[3].waste)
    assert.is_true(cands[3].pad_any)
    -- the gather of the input is contiguous along rw * rc (48 fp16), the weight's along oc
    assert.are.equal(48, cands[1].run_a)
    assert.are.equal("KN", cands[1].layout_b)
  end)

  it("a dilated conv breaks the contiguous run of the gather", function()
    local plain = tir.amos.mappings(W.conv2d(1, 8, 8, 16, 16, 3, 3, {pad = 1}), "conv", "mma.m16n8k16")
    local dil = tir.amos.mappings(W.conv2d(1, 8, 8, 16, 16, 3, 3, {pad = 2, dilation = 2}), "conv", "mma.m16n8k16")
    assert.are.equal(48, plain[1].run_a)
    assert.are.equal(16, dil[1].run_a)
  end)

  it("depthwise conv: no profitable mapping, with the reason", function()
    local f = W.depthwise(1, 8, 8, 16, 3, 3)
    local cands = tir.amos.mappings(f, "conv", "mma.m16n8k16")
    assert.are.equal(0, #cands)
    assert.truthy(cands.reason:find("depthwise", 1, true))
    assert.truthy(tostring(cands):find("no profitable mapping", 1, true))
    U.expect_error(function() tir.amos.apply(f, "conv", "mma.m16n8k16") end, "amos.apply", "no profitable mapping", "N would have extent 1")
  end)

  it("errors name the function and the block", function()
    local f = W.matmul(32, 32, 32, "NN")
    U.expect_error(function() tir.amos.mappings(f, "C", "mma.m16n8k8") end, "amos.mappings", "unknown intrinsic", "mma.m16n8k16")
    U.expect_error(function() tir.amos.mappings(f, "C", 3) end, "amos.mappings", "intrinsic must be a name")
    U.expect_error(function() tir.amos.mappings(f, "C", "mma.m16n8k32") end, "amos.mappings", "block 'C'", "float16", "int8")
    local T = tir.script
    local ew = U.elementwise(32, 32)
    U.expect_error(function() tir.amos.mappings(ew, "B", "mma.m16n8k16") end, "amos.mappings", "block 'B'", "no reduction")
    local te = tir.te
    local A = te.placeholder({32, 32}, "float16", "A")
    local B = te.placeholder({32, 32}, "float16", "B")
    local k = te.reduce_axis({0, 32}, "k")
    local C = te.compute({32, 32}, function(i, j)
      return te.sum(te.cast("float32", A[{i, (k * k) % 32}]) * te.cast("float32", B[{k, j}]), {k})
    end, "C")
    U.expect_error(function() tir.amos.mappings(te.create_prim_func({A, B, C}), "C", "mma.m16n8k16") end, "amos.mappings", "block 'C'",
                   "not affine")
    local D = te.compute({32, 32}, function(i, j)
      return te.sum(te.cast("float32", A[{i, k}]) + te.cast("float32", B[{k, j}]), {k})
    end, "D")
    U.expect_error(function() tir.amos.mappings(te.create_prim_func({A, B, D}), "D", "mma.m16n8k16") end, "amos.mappings", "block 'D'",
                   "multiply-accumulate")
    local cands = tir.amos.mappings(f, "C", "mma.m16n8k16")
    U.expect_error(function() cands:apply(5) end, "amos.apply", "candidate 5 does not exist")
    U.expect_error(function() cands:apply(1, {BM = 32, bogus = 1}) end, "amos.apply", "unknown option")
    U.expect_error(function() tir.amos.mappings(f, "C", "mma.m16n8k16", 4) end, "amos.mappings", "too many arguments")
    U.expect_error(function() tir.amos.mappings(f, 7, "mma.m16n8k16") end, "amos.mappings", "block must be a block name")
    U.expect_error(function() tir.amos.mappings(f, "nope", "mma.m16n8k16") end, "nope")
    U.expect_error(function() cands:apply("best") end, "amos.apply", "choice must be a candidate index")
  end)
end)

describe("amos.measure", function()
  it("a runner's times fill the table; best() is the fastest measured; failures are shown", function()
    local f = W.conv2d(1, 8, 8, 16, 16, 3, 3, {pad = 1})
    local cands = tir.amos.mappings(f, "conv", "mma.m16n8k16")
    local seen = 0
    tir.amos.measure(cands, {top = 3, runner = function(sch, c)
      seen = seen + 1
      assert.truthy(sch:trace():find("tensorize", 1, true))
      if c.index == 3 then error("no luck") end
      return c.index == 2 and 1e-5 or 2e-5
    end})
    assert.are.equal(3, seen)
    assert.are.equal(2, cands:best().index)
    local text = tostring(cands)
    assert.truthy(text:find("10.0 us", 1, true))
    assert.truthy(text:find("best measured: #2", 1, true))
    assert.truthy(text:find("#3 failed to measure", 1, true))
    local sch, c = cands:apply()
    assert.are.equal(2, c.index)
    check_applied(f, sch, 1e-3)
  end)

  it("without a GPU and a runner: a RuntimeError naming amos.measure", function()
    if tir.device("cuda", 0):exists() then return end
    local cands = tir.amos.mappings(W.matmul(32, 32, 32, "NN"), "C", "mma.m16n8k16")
    U.expect_error(function() tir.amos.measure(cands) end, "RuntimeError", "amos.measure", "no CUDA device")
    U.expect_error(function() tir.amos.measure({}) end, "amos.measure", "expected the candidates")
    U.expect_error(function() tir.amos.measure(cands, {topp = 1}) end, "amos.measure", "did you mean 'top'")
  end)
end)

describe("amos.apply", function()
  for _, layout in ipairs({"NN", "NT", "TN", "TT"}) do
    it("matmul " .. layout .. ": no reindex, tc_gemm's layouts", function()
      local f = W.matmul(32, 32, 32, layout)
      local cands, sch = map_and_check(f, "C", "mma.m16n8k16", nil, 1e-3)
      assert.is_false(cands[1].reindex_a or cands[1].reindex_b or cands[1].reindex_c)
      assert.truthy(sch:trace():find("tensorize", 1, true))
    end)
  end

  it("batched matmul, and one with a weight shared by the batch", function()
    map_and_check(W.batch_matmul(2, 32, 16, 32), "C", "mma.m16n8k16", nil, 1e-3)
    map_and_check(W.batch_matmul(2, 16, 16, 32, true), "C", "mma.m16n8k16", nil, 1e-3)
  end)

  it("conv2d NHWC: the gather becomes the shared tile (reindex, transform_block_layout in the trace)", function()
    local f = W.conv2d(1, 8, 8, 16, 16, 3, 3, {pad = 1})
    local _, sch = map_and_check(f, "conv", "mma.m16n8k16", 1, 1e-3)
    local tr = sch:trace()
    for _, step in ipairs({"reindex", "compute_inline", "transform_layout", "transform_block_layout", "tensorize"}) do
      assert.truthy(tr:find(step, 1, true), step)
    end
    -- one kernel: the output's reindex stage is the staged fragment store's epilogue
    local src = tir.build(sch.mod, "cuda -arch=sm_80", {compile = false}):get_source("cuda")
    local _, kernels = src:gsub("__global__", "")
    assert.are.equal(1, kernels)
    -- no im2col matrix in global memory: the gathered operand lives in shared memory
    local text = tostring(sch.mod)
    assert.truthy(text:find('pad_temp_reindex = T.alloc_buffer({64, 144}, "float16", {scope = "shared"})', 1, true))
  end)

  it("conv2d NCHW, dilated, strided, grouped; conv1d; conv3d", function()
    map_and_check(W.conv2d(1, 8, 8, 16, 16, 3, 3, {layout = "NCHW", pad = 1}), "conv", "mma.m16n8k16", nil, 1e-3)
    map_and_check(W.conv2d(2, 8, 8, 16, 32, 3, 3, {pad = 2, dilation = 2}), "conv", "mma.m16n8k16", nil, 1e-3)
    map_and_check(W.conv2d(1, 17, 17, 16, 16, 3, 3, {stride = 2}), "conv", "mma.m16n8k16", nil, 1e-3)
    map_and_check(W.conv2d(1, 8, 8, 32, 32, 1, 1, {groups = 2}), "conv", "mma.m16n8k16", nil, 1e-3)
    map_and_check(W.conv1d(2, 18, 16, 16, 3), "conv", "mma.m16n8k16", nil, 1e-3)
    map_and_check(W.conv3d(1, 4, 6, 6, 16, 16, 1, 3, 3), "conv", "mma.m16n8k16", nil, 1e-3)
  end)

  it("int8 on IMMA (m16n8k32): bit-exact", function()
    map_and_check(W.matmul(32, 32, 64, "NT", "int8"), "C", "mma.m16n8k32")
    map_and_check(W.conv2d(1, 8, 8, 32, 16, 3, 3, {pad = 1, dtype = "int8"}), "conv", "mma.m16n8k32")
  end)

  it("dp4a (SIMT, k-major shared tiles, prmt packing): matmul layouts, padded, conv, batched, bit-exact", function()
    for _, f in ipairs({(W.matmul(32, 32, 64, "NN", "int8")), (W.matmul(32, 48, 64, "TT", "int8")), (W.matmul(30, 20, 27, "NT", "int8"))}) do
      local _, sch = map_and_check(f, "C", "dp4a")
      assert.truthy(sch:trace():find('sch:tensorize(l', 1, true))
      assert.truthy(sch:trace():find('"dp4a_s8s8s32_kmajor_shared"', 1, true))
    end
    map_and_check(W.conv2d(1, 7, 7, 3, 16, 3, 3, {pad = 1, dtype = "int8"}), "conv", "dp4a")
    map_and_check(W.batch_matmul(2, 16, 16, 32, false, "int8"), "C", "dp4a")
    U.expect_error(function() tir.amos.mappings(W.matmul(32, 32, 32, "NN"), "C", "dp4a") end, "amos.mappings", "int8")
    U.expect_error(function() tir.amos.apply(W.matmul(32, 32, 64, "NN", "int8"), "C", "dp4a", nil, {BM = 128}) end, "amos.apply", "dp4a",
                   "must divide")
  end)

  it("the roles exchanged (the weight as the intrinsic's A): conv2d, padded, int8, matmul", function()
    local function swapped(f, block, intrin, tol)
      local cands = tir.amos.mappings(f, block, intrin)
      for _, c in ipairs(cands) do
        if c.swap then
          local sch = cands:apply(c.index)
          check_applied(f, sch, tol)
          return c
        end
      end
      error("no candidate with the roles exchanged")
    end
    assert.are.equal("W", swapped(W.conv2d(1, 8, 8, 16, 16, 3, 3, {pad = 1}), "conv", "mma.m16n8k16", 1e-3).A.buffer.name)
    swapped(W.conv2d(1, 7, 7, 3, 24, 3, 3, {pad = 1}), "conv", "mma.m16n8k16", 1e-3)
    swapped(W.conv2d(1, 8, 8, 32, 16, 3, 3, {pad = 1, dtype = "int8"}), "conv", "mma.m16n8k32")
    swapped(W.matmul(32, 48, 64, "NT"), "C", "mma.m16n8k16", 1e-3)
  end)

  it("wmma", function()
    map_and_check(W.conv2d(1, 8, 8, 16, 16, 3, 3, {pad = 1}), "conv", "wmma.m16n16k16", nil, 1e-3)
  end)

  it("wmma, every candidate: a batched operand's shared rows are padded, not its batch stride", function()
    -- (the padded candidates with a batch dimension once got their batch stride padded: 264
    -- elements, every wmma_load 16 bytes off its 32-byte alignment; the simulator refused them)
    local f = W.conv2d(1, 8, 8, 16, 16, 3, 3, {pad = 1})
    local cands = tir.amos.mappings(f, "conv", "wmma.m16n16k16")
    local batched = 0
    for i, c in ipairs(cands) do
      if #c.groups > 0 then batched = batched + 1 end
      check_applied(f, (cands:apply(i)), 1e-3)
    end
    assert.is_true(batched >= 4)
  end)

  it("padding (pad_einsum): odd matmuls in every layout, a first layer (C = 3, K = 27), a strided conv (M = 49)", function()
    for _, layout in ipairs({"NN", "NT", "TN", "TT"}) do
      local cands, sch = map_and_check(W.matmul(30, 20, 27, layout), "C", "mma.m16n8k16", nil, 1e-3)
      assert.is_true(cands[1].pad_any)
      assert.truthy(sch:trace():find("pad_einsum", 1, true))
    end
    local c1 = map_and_check(W.conv2d(1, 7, 7, 3, 16, 3, 3, {pad = 1}), "conv", "mma.m16n8k16", nil, 1e-3)
    assert.are.same({64, 16, 32}, c1[1].padded)
    map_and_check(W.conv2d(1, 15, 15, 16, 16, 3, 3, {stride = 2}), "conv", "mma.m16n8k16", nil, 1e-3)
    map_and_check(W.conv2d(1, 9, 9, 8, 24, 3, 3, {pad = 2, dilation = 2}), "conv", "mma.m16n8k16", nil, 1e-3)
    -- a candidate with a batch dimension whose M is padded from 8 to 16
    local c2 = map_and_check(W.conv2d(1, 8, 8, 16, 16, 3, 3, {pad = 1}), "conv", "mma.m16n8k16", 3, 1e-3)
    assert.are.equal(0.5, c2[3].waste)
  end)

  it("padding, int8 (bit-exact): a first layer on IMMA", function()
    map_and_check(W.conv2d(1, 7, 7, 3, 16, 3, 3, {pad = 1, dtype = "int8"}), "conv", "mma.m16n8k32")
  end)

  it("an epilogue (fp16 output) moves into the write-back", function()
    local f = W.conv2d(1, 8, 8, 16, 16, 3, 3, {pad = 1, out_dtype = "float16"})
    local _, sch = map_and_check(f, "conv", "mma.m16n8k16", nil, 1e-2)
    assert.truthy(sch:trace():find("reverse_compute_inline", 1, true))
  end)

  it("a Schedule is changed in place; the trace replays", function()
    local f = W.conv2d(1, 8, 8, 16, 16, 3, 3, {pad = 1})
    local sch = tir.Schedule(f)
    local s2, c = tir.amos.apply(sch, "conv", "mma.m16n8k16")
    assert.are.equal(sch, s2)
    assert.are.equal(1, c.index)
    local replay = tir.Schedule(f)
    replay:apply_trace(sch:trace())
    assert.is_true(tir.structural_equal(sch.mod, replay.mod))
  end)
end)
