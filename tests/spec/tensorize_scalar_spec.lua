-- tensorize_scalar_spec.lua -- per-thread intrinsics whose output is one element of an outer
-- block's buffer (TVM's dp4a desc `C[0] += A[k] * B[k]`, k < 4, against `C[vi, vj]`): a desc
-- buffer views the trailing dimensions of the block's buffer with an offset fixed over the
-- intrinsic, and loops of extent 1 (in desc or in the nest) are matched by neither side.
local tir = require("tir")
local T = tir.script
local te = tir.te
local U = require("spec_util")

local function buf(shape, dtype) return T.Buffer(shape, dtype, {offset_factor = 1}) end

-- desc: C[0] += A[k] * B[k] over k < 4 (TVM python/tvm/tir/tensor_intrin/dp4a.py's shape)
local function dot4_desc(a_index)
  return T.prim_func("dot4_desc", {A = buf({4}, "int8"), B = buf({4}, "int8"), C = buf({1}, "int32")}, function(A, B, C)
    T.block("root", function()
      T.reads(C[{0}], A[{{0, 4}}], B[{{0, 4}}])
      T.writes(C[{0}])
      for k in T.grid(4) do
        T.block("update", function()
          local vk = T.axis.remap("R", {k})
          C[{0}] = C[{0}] + T.cast("int32", A[{a_index and a_index(vk) or vk}]) * T.cast("int32", B[{vk}])
        end)
      end
    end)
  end)
end

-- the same written with unit spatial loops and 2-D buffers: C[i, j] += A[i, k] * B[k, j] over (1, 1, 4)
local function dot4_desc_2d()
  local sig = {A = buf({1, 4}, "int8"), B = buf({4, 1}, "int8"), C = buf({1, 1}, "int32")}
  return T.prim_func("dot4_desc_2d", sig, function(A, B, C)
    T.block("root", function()
      T.reads(C[{0, 0}], A[{0, {0, 4}}], B[{{0, 4}, 0}])
      T.writes(C[{0, 0}])
      for i, j, k in T.grid(1, 1, 4) do
        T.block("update", function()
          local vi, vj, vk = T.axis.remap("SSR", {i, j, k})
          C[{vi, vj}] = C[{vi, vj}] + T.cast("int32", A[{vi, vk}]) * T.cast("int32", B[{vk, vj}])
        end)
      end
    end)
  end)
end

-- impl: a scalar loop doing the same (the spec checks matching and the interpreter, not a builtin)
local function dot4_impl(shapes)
  local sig = {A = buf(shapes[1], "int8"), B = buf(shapes[2], "int8"), C = buf(shapes[3], "int32")}
  return T.prim_func("dot4_impl", sig, function(A, B, C)
    T.block("root", function()
      T.evaluate(T.call("void", "tir_lane_id"))
    end)
  end)
end

tir.TensorIntrin.register("spec_dot4", dot4_desc(), dot4_impl({{4}, {4}, {1}}), true)
tir.TensorIntrin.register("spec_dot4_rev", dot4_desc(function(vk) return 3 - vk end), dot4_impl({{4}, {4}, {1}}), true)
tir.TensorIntrin.register("spec_dot4_2d", dot4_desc_2d(), dot4_impl({{1, 4}, {4, 1}, {1, 1}}), true)

-- int8 matmul, int32 out; B as N x K ("NT") or K x N ("NN")
local function int8_matmul(M, N, K, layout)
  local A = te.placeholder({M, K}, "int8", "A")
  local B = layout == "NN" and te.placeholder({K, N}, "int8", "B") or te.placeholder({N, K}, "int8", "B")
  local k = te.reduce_axis({0, K}, "k")
  local C = te.compute({M, N}, function(i, j)
    local b = layout == "NN" and B[{k, j}] or B[{j, k}]
    return te.sum(te.cast("int32", A[{i, k}]) * te.cast("int32", b), {k})
  end, "C")
  return te.create_prim_func({A, B, C})
end

local function split_k(f, by_one)
  local sch = tir.Schedule(f)
  local blk = sch:get_block("C")
  local i, j, k = sch:get_loops(blk)
  local ko, ki = sch:split(k, {nil, 4})
  if by_one then
    local i0, i1 = sch:split(i, {nil, 1})
    local j0, j1 = sch:split(j, {nil, 1})
    sch:reorder(i0, j0, ko, i1, j1, ki)
  end
  sch:decompose_reduction(blk, ko)
  return sch, blk, ki
end

describe("tensorize: scalar outputs of an outer block", function()
  it("matches C[0] += A[k] * B[k] against C[vi, vj] (NT), interpreter-equivalent", function()
    local f = int8_matmul(8, 12, 16, "NT")
    local sch, blk, ki = split_k(f)
    local o = sch:tensorize(ki, "spec_dot4")
    local s = tostring(sch.mod)
    -- the scalar view of C sits at (i, j); A's and B's views cover four consecutive k
    assert.matches('T.match_buffer%(C%[{i, j}%], {1}, "int32"%)', s)
    assert.matches('T.match_buffer%(A%[{i, {k_0 %* 4, k_0 %* 4 %+ 4}}%], {4}, "int8"%)', s)
    assert.matches('T.match_buffer%(B%[{j, {k_0 %* 4, k_0 %* 4 %+ 4}}%], {4}, "int8"%)', s)
    assert.are.equal("C_update_o", o.name)
    U.assert_equiv(f, sch.mod)
    -- the block handle form takes the innermost loop
    local sch2, blk2 = split_k(f)
    sch2:tensorize(blk2, "spec_dot4")
    assert.is_true((tir.structural_equal(sch.mod, sch2.mod)))
  end)

  it("matches a desc written with unit spatial loops, against a nest with or without them", function()
    local f = int8_matmul(8, 12, 16, "NN")
    for _, by_one in ipairs({false, true}) do
      local sch, _, ki = split_k(f, by_one)
      local loops = {sch:get_loops(sch:get_block("C_update"))}
      -- with unit loops in the nest, tensorize the outermost of (i1, j1, ki)
      local at = by_one and loops[#loops - 2] or ki
      sch:tensorize(at, "spec_dot4_2d")
      local s = tostring(sch.mod)
      assert.matches('T.match_buffer%(B%[{{k_0 %* 4, k_0 %* 4 %+ 4}, j[_0]*}%], {4, 1}, "int8"%)', s)
      U.assert_equiv(f, sch.mod)
    end
  end)

  it("refuses a K x N operand for a 1-D desc buffer, naming the dimension that moves", function()
    local sch, _, ki = split_k(int8_matmul(8, 12, 16, "NN"))
    U.expect_error(function() sch:tensorize(ki, "spec_dot4") end, "ScheduleError in tensorize",
                   "the block's B[{v_k, v_j}] does not map onto desc's B[{v_k}]", "trailing dimensions", "reindex or transform_layout B")
  end)

  it("refuses a desc whose element order differs (a planted reversal)", function()
    local sch, _, ki = split_k(int8_matmul(8, 12, 16, "NT"))
    local f0 = tostring(sch.mod)
    U.expect_error(function() sch:tensorize(ki, "spec_dot4_rev") end, "does not map onto desc's A", "varies")
    assert.are.equal(f0, tostring(sch.mod))
  end)

  it("refuses a nest whose k extent is not desc's, counting loops of extent > 1", function()
    local f = int8_matmul(8, 12, 16, "NT")
    local sch = tir.Schedule(f)
    local blk = sch:get_block("C")
    local _, _, k = sch:get_loops(blk)
    local ko, ki = sch:split(k, {nil, 8})
    sch:decompose_reduction(blk, ko)
    U.expect_error(function() sch:tensorize(ki, "spec_dot4") end, "desc 'spec_dot4' loop 1 (k) has extent 4, loop k_1 has extent 8")
    U.expect_error(function() sch:tensorize(ko, "spec_dot4") end, "has 1 loop(s) around its block, but this nest has 2",
                   "loops of extent 1 not counted")
  end)
end)
