-- schedule_blockize_spec.lua -- blockize: the IR after it equals a T script (cases from TVM
-- tests/python/tir-schedule/test_tir_schedule_blockize.py, written anew), interpreter
-- equivalence before/after (also after lowering: nested blocks go through the passes),
-- trace replay, and one test per precondition.
local tir = require("tir")
local T = tir.script
local U = require("spec_util")

local function assert_ir(got, want)
  local eq, diff = tir.structural_equal(got, want)
  assert(eq, ("IR differs: %s\n-- got:\n%s\n-- want:\n%s"):format(tostring(diff), tostring(got), tostring(want)))
end

-- interpreter on the scheduled function and on its lowered form, exact
local function assert_lowered_equiv(f, g)
  U.assert_equiv(f, g)
  local args = tir.testing.random_args(f, 7)
  local a2 = tir.testing.copy_args(args)
  tir.interpret(f, args)
  tir.interpret(tir.lower(g), a2)
  for i = 1, #args do assert.are.same(args[i]:to_table(), a2[i]:to_table()) end
end

local function assert_replay(f, sch)
  local s2 = tir.Schedule(f)
  s2:apply_trace(sch:trace())
  assert_ir(s2.mod, sch.mod)
end

local function elementwise()
  return T.prim_func("main", {A = T.Buffer({128, 128}, "float32"), B = T.Buffer({128, 128}, "float32")}, function(A, B)
    for i, j in T.grid(128, 128) do
      T.block("B", function()
        local vi, vj = T.axis.remap("SS", {i, j})
        B[{vi, vj}] = A[{vi, vj}] * 2.0
      end)
    end
  end)
end

describe("blockize", function()
  it("makes the whole nest a block (outermost loop)", function()
    local f = elementwise()
    local sch = tir.Schedule(f)
    local i = sch:get_loops(sch:get_block("B"))
    local o = sch:blockize(i)
    assert.are.equal("BlockRV(B_o)", tostring(o))
    local want = T.prim_func("main", {A = T.Buffer({128, 128}, "float32"), B = T.Buffer({128, 128}, "float32")}, function(A, B)
      T.block("B_o", function()
        local vi_o = T.axis.spatial(1, 0)
        local vj_o = T.axis.spatial(1, 0)
        for i, j in T.grid(128, 128) do
          T.block("B", function()
            local vi, vj = T.axis.remap("SS", {i, j})
            B[{vi, vj}] = A[{vi, vj}] * 2.0
          end)
        end
      end)
    end)
    assert_ir(sch.mod, want)
    assert_lowered_equiv(f, sch.mod)
    assert_replay(f, sch)
    -- the old handle names the inner block
    assert.are.equal("B", sch:get(sch:get_block("B")).name)
  end)

  it("splits the iteration space at an inner loop", function()
    local f = elementwise()
    local sch = tir.Schedule(f)
    local _, j = sch:get_loops(sch:get_block("B"))
    sch:blockize(j)
    local want = T.prim_func("main", {A = T.Buffer({128, 128}, "float32"), B = T.Buffer({128, 128}, "float32")}, function(A, B)
      for i in T.serial(128) do
        T.block("B_o", function()
          local vi = T.axis.spatial(128, i)
          local vj_o = T.axis.spatial(1, 0)
          for j in T.serial(128) do
            T.block("B", function()
              local vj = T.axis.remap("S", {j})
              B[{vi, vj}] = A[{vi, vj}] * 2.0
            end)
          end
        end)
      end
    end)
    assert_ir(sch.mod, want)
    assert_lowered_equiv(f, sch.mod)
  end)

  it("blockizes a producer placed by compute_at next to a blockized consumer", function()
    local function before()
      return T.prim_func("main", {A = T.Buffer({128, 128}, "float32"), C = T.Buffer({128, 128}, "float32")}, function(A, C)
        local B = T.alloc_buffer({128, 128}, "float32")
        for i_0, j_0 in T.grid(8, 8) do
          for ax0, ax1 in T.grid(16, 16) do
            T.block("B", function()
              local vi = T.axis.spatial(128, i_0 * 16 + ax0)
              local vj = T.axis.spatial(128, j_0 * 16 + ax1)
              B[{vi, vj}] = A[{vi, vj}] * 2.0
            end)
          end
          T.block("C_o", function()
            local vi_o, vj_o = T.axis.remap("SS", {i_0, j_0})
            for i_1, j_1 in T.grid(16, 16) do
              T.block("C", function()
                local vi_i, vj_i = T.axis.remap("SS", {i_1, j_1})
                C[{vi_o * 16 + vi_i, vj_o * 16 + vj_i}] = B[{vi_o * 16 + vi_i, vj_o * 16 + vj_i}] + 1.0
              end)
            end
          end)
        end
      end)
    end
    local want = T.prim_func("main", {A = T.Buffer({128, 128}, "float32"), C = T.Buffer({128, 128}, "float32")}, function(A, C)
      local B = T.alloc_buffer({128, 128}, "float32")
      for i_0, j_0 in T.grid(8, 8) do
        T.block("B_o", function()
          local vi_o, vj_o = T.axis.remap("SS", {i_0, j_0})
          for ax0, ax1 in T.grid(16, 16) do
            T.block("B", function()
              local vi_i, vj_i = T.axis.remap("SS", {ax0, ax1})
              B[{vi_o * 16 + vi_i, vj_o * 16 + vj_i}] = A[{vi_o * 16 + vi_i, vj_o * 16 + vj_i}] * 2.0
            end)
          end
        end)
        T.block("C_o", function()
          local vi_o, vj_o = T.axis.remap("SS", {i_0, j_0})
          for i_1, j_1 in T.grid(16, 16) do
            T.block("C", function()
              local vi_i, vj_i = T.axis.remap("SS", {i_1, j_1})
              C[{vi_o * 16 + vi_i, vj_o * 16 + vj_i}] = B[{vi_o * 16 + vi_i, vj_o * 16 + vj_i}] + 1.0
            end)
          end
        end)
      end
    end)
    local f = before()
    local sch = tir.Schedule(f)
    local _, _, ax0 = sch:get_loops(sch:get_block("B"))
    sch:blockize(ax0)
    assert_ir(sch.mod, want)
    assert_lowered_equiv(f, sch.mod)
  end)

  it("blockizes a consumer placed by reverse_compute_at", function()
    local f = U.elementwise(32, 32)
    local A = tir.te.placeholder({32, 32}, "float32", "A")
    local Bt = tir.te.compute({32, 32}, function(i, j) return A[{i, j}] * 2.0 end, "B")
    local Ct = tir.te.compute({32, 32}, function(i, j) return Bt[{i, j}] + 1.0 end, "C")
    f = tir.te.create_prim_func({A, Ct})
    local sch = tir.Schedule(f)
    local i, j = sch:get_loops(sch:get_block("B"))
    local io, ii = sch:split(i, {nil, 8})
    local jo, ji = sch:split(j, {nil, 8})
    sch:reorder(io, jo, ii, ji)
    sch:blockize(ii)
    sch:reverse_compute_at(sch:get_block("C"), jo)
    local _, _, ax0 = sch:get_loops(sch:get_block("C"))
    local co = sch:blockize(ax0)
    local s = tostring(sch.mod)
    assert.matches('T.block%("C_o"', s)
    assert.are.equal("C_o", sch:get(co).name)
    assert_lowered_equiv(f, sch.mod)
    assert_replay(f, sch)
  end)

  it("moves a reduction's init to the outer block over the inner spatial loops", function()
    local function rowsum()
      return T.prim_func("main", {A = T.Buffer({128, 128}, "float32"), B = T.Buffer({128}, "float32")}, function(A, B)
        for k, i in T.grid(128, 128) do
          T.block("B", function()
            local vk, vi = T.axis.remap("RS", {k, i})
            T.init(function() B[{vi}] = 0.0 end)
            B[{vi}] = B[{vi}] + A[{vi, vk}]
          end)
        end
      end)
    end
    local want = T.prim_func("main", {A = T.Buffer({128, 128}, "float32"), B = T.Buffer({128}, "float32")}, function(A, B)
      T.block("B_o", function()
        local vk_o = T.axis.reduce(1, 0)
        local vi_o = T.axis.spatial(1, 0)
        T.init(function()
          for i1 in T.serial(128) do
            T.block("B_init", function()
              local vi_init = T.axis.spatial(128, i1)
              B[{vi_init}] = 0.0
            end)
          end
        end)
        for k, i in T.grid(128, 128) do
          T.block("B", function()
            local vk, vi = T.axis.remap("RS", {k, i})
            B[{vi}] = B[{vi}] + A[{vi, vk}]
          end)
        end
      end)
    end)
    local f = rowsum()
    local sch = tir.Schedule(f)
    local k = sch:get_loops(sch:get_block("B"))
    sch:blockize(k)
    assert_ir(sch.mod, want)
    assert_lowered_equiv(f, sch.mod)
  end)

  it("keeps (or drops) unit iteration variables, int64 loops", function()
    local function before()
      return T.prim_func("main", {A = T.Buffer({T.int64(16), T.int64(128)}, "float32"),
                                  B = T.Buffer({T.int64(16), T.int64(128)}, "float32")}, function(A, B)
        for i0, j0, i1, j1 in T.grid(T.int64(1), T.int64(8), T.int64(16), T.int64(16)) do
          T.block("B", function()
            local vi = T.axis.spatial(T.int64(16), i0 * T.int64(16) + i1)
            local vj = T.axis.spatial(T.int64(128), j0 * T.int64(16) + j1)
            B[{vi, vj}] = A[{vi, vj}] + 1.0
          end)
        end
      end)
    end
    local function after(preserve)
      return T.prim_func("main", {A = T.Buffer({T.int64(16), T.int64(128)}, "float32"),
                                  B = T.Buffer({T.int64(16), T.int64(128)}, "float32")}, function(A, B)
        for i0, j0 in T.grid(T.int64(1), T.int64(8)) do
          T.block("B_o", function()
            local vi_o = T.axis.spatial(T.int64(1), preserve and i0 or T.int64(0))
            local vj_o = T.axis.spatial(T.int64(8), j0)
            for i1, j1 in T.grid(T.int64(16), T.int64(16)) do
              T.block("B", function()
                local vi_i, vj_i = T.axis.remap("SS", {i1, j1})
                B[{vi_i, vj_o * T.int64(16) + vj_i}] = A[{vi_i, vj_o * T.int64(16) + vj_i}] + 1.0
              end)
            end
          end)
        end
      end)
    end
    for _, preserve in ipairs({true, false}) do
      local f = before()
      local sch = tir.Schedule(f)
      local _, _, i1 = sch:get_loops(sch:get_block("B"))
      sch:blockize(i1, preserve)
      assert_ir(sch.mod, after(preserve))
      assert_lowered_equiv(f, sch.mod)
      assert_replay(f, sch)
    end
  end)

  it("nests: a tiled matmul blockized at the inner tile, then again at the outer tile", function()
    local f = U.matmul(64, 32, 16)
    local sch = tir.Schedule(f)
    local i, j, k = sch:get_loops(sch:get_block("C"))
    local io, ii = sch:split(i, {nil, 16})
    local jo, ji = sch:split(j, {nil, 8})
    local ko, ki = sch:split(k, {nil, 4})
    sch:reorder(io, jo, ko, ii, ji, ki)
    local inner = sch:blockize(ii)
    local s = tostring(sch.mod)
    -- the outer block reduces over ko, so the inner block's init went to the outer one
    assert.matches('local v_i_o, v_j_o, v_k_o = T.axis.remap%("SSR", {i_0, j_0, k_0}%)', s)
    assert.matches('T.block%("C_init"', s)
    assert_lowered_equiv(f, sch.mod)
    local outer = sch:blockize(jo)
    assert.are.equal("C_o_o", sch:get(outer).name)
    assert.are.equal("C_o", sch:get(inner).name)
    assert_lowered_equiv(f, sch.mod)
    assert_replay(f, sch)
    -- int32 reductions stay bit-exact
    local g = U.matmul(24, 16, 8, "int32")
    local s2 = tir.Schedule(g)
    local a, b, c = s2:get_loops(s2:get_block("C"))
    local ao, ai = s2:split(a, {nil, 8})
    s2:reorder(ao, b, c, ai)
    s2:blockize(c)
    assert_lowered_equiv(g, s2.mod)
  end)

  it("puts the predicate of a non-dividing split on the outer block", function()
    local f = U.matmul(50, 16, 8)
    local sch = tir.Schedule(f)
    local i, j = sch:get_loops(sch:get_block("C"))
    local io, ii = sch:split(i, {nil, 16})
    sch:blockize(j)
    local s = tostring(sch.mod)
    assert.matches('T.block%("C_o", function%(%)\n%s+local v_i_o = T.axis.spatial%(50, i_0 %* 16 %+ i_1%)', s)
    assert.matches('T.where%(T.lt%(i_0 %* 16 %+ i_1, 50%)%)', s)
    assert_lowered_equiv(f, sch.mod)
    assert.is_not_nil(io)
    assert.is_not_nil(ii)
  end)

  it("keeps a predicate that only narrows one loop, on that loop's side", function()
    -- split(3, 4): the binding is i_1 alone and the predicate i_1 < 3 narrows its loop
    for _, at in ipairs({"i_1", "j"}) do
      local f = U.elementwise(3, 8)
      local sch = tir.Schedule(f)
      local i = sch:get_loops(sch:get_block("B"))
      local _, i1 = sch:split(i, {nil, 4})
      local _, _, j = sch:get_loops(sch:get_block("B"))
      sch:blockize(at == "i_1" and i1 or j)
      local s = tostring(sch.mod)
      local outer_where = s:match('T.block%("B_o".-T.block%("B"')
      if at == "i_1" then
        assert.is_nil(outer_where:find("T.where", 1, true))
        assert.matches('T.block%("B", function%(%).-T.where%(T.lt%(i_1, 3%)%)', s)
      else
        assert.matches("T.where%(T.lt%(i_1, 3%)%)", outer_where)
      end
      assert_lowered_equiv(f, sch.mod)
    end
  end)

  it("checks its preconditions", function()
    -- two blocks under the loop
    local A = tir.te.placeholder({16}, "float32", "A")
    local Bt = tir.te.compute({16}, function(i) return A[{i}] * 2.0 end, "B")
    local Ct = tir.te.compute({16}, function(i) return Bt[{i}] + 1.0 end, "C")
    local sch = tir.Schedule(tir.te.create_prim_func({A, Ct}))
    local ci = sch:get_loops(sch:get_block("C"))
    sch:compute_at(sch:get_block("B"), ci)
    U.expect_error(function() sch:blockize(ci) end, "ScheduleError in blockize", "must contain exactly one block to blockize, found 2",
                   "^^^")
    -- statements between the loop and the block
    local f2 = T.prim_func("main", {A = T.Buffer({8}, "float32")}, function(A)
      for i in T.serial(8) do
        T.If(T.lt(i, 4), function()
          T.block("B", function()
            local vi = T.axis.spatial(8, i)
            A[{vi}] = 1.0
          end)
        end)
      end
    end)
    local s2 = tir.Schedule(f2)
    U.expect_error(function() s2:blockize(s2:get_loops(s2:get_block("B"))) end, "must be perfectly nested loops; found a IfThenElse")
    -- bindings that do not divide: the inner loop is the outer digit
    local f3 = T.prim_func("main", {A = T.Buffer({32}, "float32")}, function(A)
      for j, i in T.grid(4, 8) do
        T.block("B", function()
          local v = T.axis.spatial(32, i * 4 + j)
          A[{v}] = 1.0
        end)
      end
    end)
    local s3 = tir.Schedule(f3)
    local _, li = s3:get_loops(s3:get_block("B"))
    U.expect_error(function() s3:blockize(li) end, "cannot be divided by the loops starting at i", "from here")
    -- symbolic loop ranges
    local f4 = T.prim_func("main", {A = T.Buffer({64}, "float32"), n = T.int32()}, function(A, n)
      for i in T.serial(n) do
        T.block("B", function()
          local v = T.axis.spatial(64, i)
          A[{v}] = 1.0
        end)
      end
    end)
    local s4 = tir.Schedule(f4)
    U.expect_error(function() s4:blockize(s4:get_loops(s4:get_block("B"))) end, "symbolic range")
    -- a reduction whose predicate uses an inner reduction loop the init does not cover
    local s5 = tir.Schedule(U.matmul(8, 8, 10))
    local _, _, k = s5:get_loops(s5:get_block("C"))
    local ko = s5:split(k, {nil, 4})
    U.expect_error(function() s5:blockize(ko) end, "uses an inner loop that its init does not iterate over")
    -- arguments
    U.expect_error(function() s5:blockize(s5:get_block("C")) end, "blockize: argument 1 must be a loop")
    U.expect_error(function() s5:blockize(ko, 1) end, "preserve_unit_iters must be a boolean")
    -- the failures left the functions unchanged
    assert.is_nil(tostring(s3.mod):find("_o", 1, true))
  end)
end)

describe("blockize of a list of blocks (TVM blockize(List[BlockRV]))", function()
  local F32 = "float32"
  -- TVM test_blockize_blocks (128 scaled to 16)
  local function blocks_func()
    return T.prim_func("main", {A = T.Buffer({16, 16}, F32), B = T.Buffer({16, 16}, F32)}, function(A, B)
      for m in T.serial(6) do
        for i, j in T.grid(3, 1) do
          T.block("B", function() local vm, vi, vj = T.axis.remap("SSS", {m, i, j}) B[{vi, vj}] = A[{vi, vj}] * 2.0 end)
        end
        for i, j in T.grid(16, 8) do
          T.block("C", function() local vm, vi, vj = T.axis.remap("SSS", {m, i, j}) B[{vi, vj + 8}] = A[{vi, vj + 8}] * 3.0 end)
        end
      end
    end)
  end

  it("wraps consecutive loop nests in one block binding the loop above (TVM test_blockize_blocks)", function()
    local f = blocks_func()
    local sch = tir.Schedule(f)
    local b, c = sch:get_block("B"), sch:get_block("C")
    local o = sch:blockize({b, "C"}, false)
    local want = T.prim_func("main", {A = T.Buffer({16, 16}, F32), B = T.Buffer({16, 16}, F32)}, function(A, B)
      for m in T.serial(6) do
        T.block("outer_B_C_", function()
          local vm = T.axis.spatial(6, m)
          T.reads(A[{{0, 16}, {0, 16}}])
          T.writes(B[{{0, 16}, {0, 16}}])
          for i, j in T.grid(3, 1) do
            T.block("B", function()
              local vm_i = T.axis.spatial(6, vm)
              local vi, vj = T.axis.remap("SS", {i, j})
              B[{vi, vj}] = A[{vi, vj}] * 2.0
            end)
          end
          for i, j in T.grid(16, 8) do
            T.block("C", function()
              local vm_i = T.axis.spatial(6, vm)
              local vi, vj = T.axis.remap("SS", {i, j})
              B[{vi, vj + 8}] = A[{vi, vj + 8}] * 3.0
            end)
          end
        end)
      end
    end)
    assert_ir(sch.mod, want)
    assert.are.equal("outer_B_C_", sch:get(o).name)
    assert.are.equal("B", sch:get(b).name) -- the handles still name the inner blocks
    U.assert_equiv(f, sch.mod)
    assert_lowered_equiv(f, sch.mod)
    assert_replay(f, sch)
    -- the outer block is a block like any other: its loop can be parallel
    sch:parallel(sch:get_loops(o))
    U.assert_equiv(f, sch.mod)
  end)

  it("keeps a reduction's init inside when the outer loops are spatial", function()
    -- a row sum and its epilogue under the same row loop
    local f = T.prim_func("main", {A = T.Buffer({8, 16}, "int32"), D = T.Buffer({8}, "int32")}, function(A, D)
      local S = T.alloc_buffer({8}, "int32")
      for i in T.serial(8) do
        for k in T.serial(16) do
          T.block("S", function()
            local vi, vk = T.axis.remap("SR", {i, k})
            T.init(function() S[{vi}] = 0 end)
            S[{vi}] = S[{vi}] + A[{vi, vk}]
          end)
        end
        T.block("D", function() local vi = T.axis.remap("S", {i}) D[{vi}] = S[{vi}] * 3 end)
      end
    end)
    local sch = tir.Schedule(f)
    local o = sch:blockize({"S", "D"})
    assert.are.equal("outer_S_D_", sch:get(o).name)
    assert.is_not_nil(sch:get(sch:get_block("S")).init)
    U.assert_equiv(f, sch.mod)
    assert_lowered_equiv(f, sch.mod)
    assert_replay(f, sch)
  end)

  it("refuses blocks that are not consecutive, nested, not alone in their statement, or under a reduction loop", function()
    local f = T.prim_func("main", {A = T.Buffer({8}, F32), B = T.Buffer({8}, F32), C = T.Buffer({8}, F32),
                                   D = T.Buffer({8}, F32)}, function(A, B, C, D)
      for i in T.serial(8) do T.block("B", function() local v = T.axis.remap("S", {i}) B[{v}] = A[{v}] end) end
      for i in T.serial(8) do T.block("C", function() local v = T.axis.remap("S", {i}) C[{v}] = A[{v}] end) end
      for i in T.serial(8) do
        T.block("D", function() local v = T.axis.remap("S", {i}) D[{v}] = A[{v}] end)
        T.block("E", function() local v = T.axis.remap("S", {i}) C[{v}] = C[{v}] + D[{v}] end)
      end
      for i in T.serial(8) do T.block("F", function() local v = T.axis.remap("S", {i}) B[{v}] = B[{v}] + C[{v}] end) end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:blockize({"F", "B"}) end, "ScheduleError in blockize", "must be consecutive statements",
                   "between block 'B' and block 'F'")
    U.expect_error(function() sch:blockize({"C", "D"}) end, "must be alone under perfectly nested loops", "above block 'D'")
    U.expect_error(function() sch:blockize({"B", "B"}) end, "block 'B' is given twice")
    U.expect_error(function() sch:blockize({}) end, "TypeError in blockize", "non-empty list")
    assert.is_true(tir.structural_equal(f, sch.mod))
    -- two blocks right under one loop are fine
    local de = sch:blockize({"D", "E"})
    assert.are.equal("outer_D_E_", sch:get(de).name)
    U.assert_equiv(f, sch.mod)
    -- nested: a block and the block inside it
    local s2 = tir.Schedule(blocks_func())
    local o = s2:blockize({"B", "C"})
    U.expect_error(function() s2:blockize({o, s2:get_block("B")}) end, "must not be nested in one another")
    -- a loop bound to a reduction variable of a block with an init
    local g = T.prim_func("main", {A = T.Buffer({4}, F32), B = T.Buffer({1}, F32), C = T.Buffer({4}, F32)}, function(A, B, C)
      for k in T.serial(4) do
        for u in T.serial(1) do
          T.block("R", function()
            local vk = T.axis.reduce(4, k)
            local vu = T.axis.spatial(1, u)
            T.init(function() B[{vu}] = 0.0 end)
            B[{vu}] = B[{vu}] + A[{vk}]
          end)
        end
        for u in T.serial(1) do
          T.block("S", function() local vk = T.axis.spatial(4, k + u) C[{vk}] = A[{vk}] end)
        end
      end
    end)
    local s3 = tir.Schedule(g)
    U.expect_error(function() s3:blockize({"R", "S"}) end, "loop k is bound to a reduction variable of a block with an init")
  end)
end)
