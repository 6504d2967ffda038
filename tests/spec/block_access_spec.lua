-- block_access_spec.lua -- TVM's read rule for block regions (TVM src/tir/analysis/
-- block_access_region_detector.cc, GetBlockAccessRegion): a block with an init does not list
-- the buffers it writes among its reads, for te blocks and T-script blocks alike; a block
-- without one (an update block, an in-place accumulation) does.  Read indices of the
-- primitives follow, and the passes after lower_init_block still see the update's read.
local tir = require("tir")
local T = tir.script
local te = tir.te
local U = require("spec_util")

local function names(regions)
  local out = {}
  for i = 1, #regions do out[i] = regions[i].buffer.name end
  return table.concat(out, ",")
end

local function block_of(func, name)
  return tir.Schedule(func):get(name)
end

describe("block reads (TVM's rule)", function()
  it("a te reduction reads A, B and writes C", function()
    local b = block_of(U.matmul(8, 8, 8), "C")
    assert.are.equal("A,B", names(b.reads))
    assert.are.equal("C", names(b.writes))
    -- a reduction with a condition and a non-zero start: still no read of its output
    local A = te.placeholder({8, 8}, "int32", "A")
    local k = te.reduce_axis({2, 6}, "k")
    local S = te.compute({8}, function(i) return te.sum(A[{i, k}], {k}) end, "S")
    assert.are.equal("A", names(block_of(te.create_prim_func({A, S}), "S").reads))
  end)

  it("a T-script block with T.init infers A, B; one without an init infers C, A, B", function()
    local f = T.prim_func("main", {A = T.Buffer({8, 8}, "int32"), B = T.Buffer({8, 8}, "int32"),
                                   C = T.Buffer({8, 8}, "int32"), E = T.Buffer({8, 8}, "int32")}, function(A, B, C, E)
      for i, j, k in T.grid(8, 8, 8) do
        T.block("C", function()
          local vi, vj, vk = T.axis.remap("SSR", {i, j, k})
          T.init(function() C[{vi, vj}] = 0 end)
          C[{vi, vj}] = C[{vi, vj}] + A[{vi, vk}] * B[{vk, vj}]
        end)
      end
      for i, j in T.grid(8, 8) do
        T.block("E", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          E[{vi, vj}] = E[{vi, vj}] + C[{vi, vj}]
        end)
      end
    end)
    assert.are.equal("A,B", names(block_of(f, "C").reads))
    assert.are.equal("E,C", names(block_of(f, "E").reads))
    assert.matches("T.reads%(A%[{vi, vk}%], B%[{vk, vj}%]%)", tostring(f))
    U.assert_roundtrip(f)
  end)

  it("read index 0 of a matmul block is A (cache_read, reindex, transform_layout)", function()
    local f = U.matmul(16, 16, 16, "int32")
    local sch = tir.Schedule(f)
    local a = sch:cache_read("C", 0, "shared")
    local b = sch:cache_read("C", 1, "local")
    assert.are.equal("A_shared", sch:get(a).name)
    assert.are.equal("B_local", sch:get(b).name)
    U.expect_error(function() sch:cache_read("C", 2, "shared") end, "read_buffer_index 2 is out of range",
                   "block 'C' reads 0: A_shared, 1: B_local")
    U.assert_equiv(f, sch.mod)
    local s2 = tir.Schedule(f)
    assert.are.equal("A_reindex", s2:get(s2:reindex("C", {"read", 0})).name)
    U.assert_equiv(f, s2.mod)
  end)

  it("decompose_reduction's update block reads what it writes, in front (TVM's order)", function()
    local f = U.matmul(16, 16, 16, "int32")
    local sch = tir.Schedule(f)
    local init = sch:decompose_reduction("C", (sch:get_loops(sch:get_block("C"))))
    local upd = sch:get("C_update")
    assert.are.equal("C,A,B", names(upd.reads))
    assert.are.equal("", names(sch:get(init).reads))
    -- the init block is now a producer of the update (read after write of C)
    local prods = sch:get_producers("C_update")
    assert.are.equal(1, #prods)
    assert.are.equal("C_init", sch:get(prods[1]).name)
    -- read index 0 of the update is C now
    U.expect_error(function() sch:cache_read("C_update", 0, "local") end, "ScheduleError in cache_read",
                   "block 'C_update' both reads and writes C")
    assert.are.equal("A_local", sch:get(sch:cache_read("C_update", 1, "local")).name)
    U.assert_equiv(f, sch.mod)
  end)

  it("rfactor and blockize: blocks with an init do not read their output, the inner update does", function()
    local f = U.matmul(16, 16, 16, "int32")
    local sch = tir.Schedule(f)
    local _, _, k = sch:get_loops(sch:get_block("C"))
    local _, ki = sch:split(k, {nil, 4})
    local rf = sch:rfactor(ki, 0)
    assert.are.equal("A,B", names(sch:get(rf).reads))
    assert.are.equal("C_rf", names(sch:get("C").reads))
    U.assert_equiv(f, sch.mod)
    local s2 = tir.Schedule(f)
    local _, j = s2:get_loops(s2:get_block("C"))
    local outer = s2:blockize(j)
    assert.are.equal("A,B", names(s2:get(outer).reads))
    assert.are.equal("C,A,B", names(s2:get("C").reads)) -- the inner block lost its init to the outer one
    U.assert_equiv(f, s2.mod)
  end)

  it("lower_init_block gives the lowered block its read of the output back", function()
    local f = U.matmul(8, 8, 8, "int32")
    local _, dumps = tir.lower(f, {dump = true})
    local after
    for _, d in ipairs(dumps) do
      if d.pass == "lower_init_block" then after = d.ir end
    end
    assert.is_truthy(after)
    assert.matches("T.reads%(C%[{v_i, v_j}%], A%[{v_i, v_k}%], B%[{v_k, v_j}%]%)", after)
  end)

  it("verify_memory_scope still sees a reduction with an init update its output in place", function()
    -- C (with an init) runs in every thread of a kernel that binds threadIdx.x for D: every
    -- thread would redo the reduction into global C.  The check needs C's read of C.
    local A = te.placeholder({2, 5, 3}, "int32", "A")
    local B = te.placeholder({2, 3, 6}, "int32", "B")
    local k = te.reduce_axis({0, 3}, "k")
    local C = te.compute({2, 5, 6}, function(b, i, j) return te.sum(A[{b, i, k}] * B[{b, k, j}], {k}) end, "C")
    local D = te.compute({2, 5, 6}, function(b, i, j) return C[{b, i, j}] + 1 end, "D")
    local f = te.create_prim_func({A, B, D})
    local sch = tir.Schedule(f)
    local b = sch:get_loops(sch:get_block("C"))
    sch:bind(b, "blockIdx.x")
    sch:reverse_compute_at("D", b)
    local _, _, dj = sch:get_loops(sch:get_block("D"))
    sch:bind(dj, "threadIdx.x")
    U.assert_equiv(f, sch.mod)
    U.expect_error(function() tir.lower(sch.mod) end, "LoweringError in verify_memory_scope",
                   "block 'C' updates C in place", "every thread would apply the update again")
  end)
end)

-- ======================================================================================
-- T.reads / T.writes are checked against the body (declared regions must cover every
-- access, as TVM requires of them); omitted lists are inferred; over-approximation is legal.
describe("T-script region declarations", function()
  local F32 = "float32"

  it("refuse a declaration naming the wrong buffers (reads B, writes A; the body reads A, writes B)", function()
    U.expect_error(function()
      T.prim_func("main", {A = T.Buffer({16, 16}, F32), B = T.Buffer({16, 16}, F32)}, function(A, B)
        for i, j in T.grid(16, 16) do
          T.block("B", function()
            local vi, vj = T.axis.remap("SS", {i, j})
            T.reads(B[{vi, vj}])
            T.writes(B[{vi, vj}], A[{vi, vj}])
            B[{vi, vj}] = A[{vi, vj}] * 2.0
          end)
        end
      end)
    end, "ValueError in T.block", "block 'B' reads A[{vi, vj}], but its declared T.reads(B[{vi, vj}]) does not list A",
       "omit T.reads to have it inferred", "B[{vi, vj}] = A[{vi, vj}] * T.float32(2.0)", "^^^^^^^^^^^ this access")
    U.expect_error(function()
      T.prim_func("main", {A = T.Buffer({16, 16}, F32), B = T.Buffer({16, 16}, F32)}, function(A, B)
        for i, j in T.grid(16, 16) do
          T.block("B", function()
            local vi, vj = T.axis.remap("SS", {i, j})
            T.reads(A[{vi, vj}])
            T.writes(A[{vi, vj}])
            B[{vi, vj}] = A[{vi, vj}] * 2.0
          end)
        end
      end)
    end, "block 'B' writes B[{vi, vj}], but its declared T.writes(A[{vi, vj}]) does not list B")
  end)

  it("refuse an under-declared region (a write of 4 elements declared as 1)", function()
    U.expect_error(function()
      T.prim_func("main", {A = T.Buffer({16}, F32), B = T.Buffer({64}, F32)}, function(A, B)
        for i in T.serial(16) do
          T.block("B", function()
            local vi = T.axis.spatial(16, i)
            T.reads(A[{vi}])
            T.writes(B[{vi * 4}])
            for j in T.serial(4) do B[{vi * 4 + j}] = A[{vi}] * 2.0 end
          end)
        end
      end)
    end, "ValueError in T.block", "block 'B' writes B[{{vi * 4, vi * 4 + 4}}], which its declared T.writes(B[{vi * 4}]) does not cover")
    -- a read shifted by one, and an outer block whose region misses what its nested block reads
    U.expect_error(function()
      T.prim_func("main", {A = T.Buffer({17}, F32), B = T.Buffer({16}, F32)}, function(A, B)
        for i in T.serial(16) do
          T.block("B", function()
            local vi = T.axis.spatial(16, i)
            T.reads(A[{vi}])
            T.writes(B[{vi}])
            B[{vi}] = A[{vi}] + A[{vi + 1}]
          end)
        end
      end)
    end, "block 'B' reads A[{vi + 1}], which its declared T.reads(A[{vi}]) does not cover")
    U.expect_error(function()
      T.prim_func("main", {A = T.Buffer({16}, F32), B = T.Buffer({16}, F32)}, function(A, B)
        T.block("outer", function()
          T.reads(A[{{0, 8}}])
          T.writes(B[{{0, 16}}])
          for i in T.serial(16) do
            T.block("B", function()
              local vi = T.axis.spatial(16, i)
              B[{vi}] = A[{vi}]
            end)
          end
        end)
      end)
    end, "block 'outer' reads A[{{0, 16}}], which its declared T.reads(A[{{0, 8}}]) does not cover",
       'T.block("B", function()', "this access")
  end)

  it("refuse a view whose source neither list covers", function()
    U.expect_error(function()
      T.prim_func("main", {A = T.Buffer({16, 16}, F32), B = T.Buffer({16, 16}, F32)}, function(A, B)
        for io in T.serial(4) do
          T.block("tile", function()
            local vo = T.axis.spatial(4, io)
            T.reads(A[{{vo * 4, vo * 4 + 4}, {0, 16}}])
            T.writes(B[{{vo * 4, vo * 4 + 2}, {0, 16}}])
            local Bv = T.match_buffer(B[{{vo * 4, vo * 4 + 4}, {0, 16}}], {4, 16}, F32)
            for ii, j in T.grid(4, 16) do Bv[{ii, j}] = A[{vo * 4 + ii, j}] end
          end)
        end
      end)
    end, "ValueError in T.block", "block 'tile' views B[{{vo * 4, vo * 4 + 4}, {0, 16}}]",
       "neither its declared T.reads nor T.writes covers", "this block")
  end)

  it("infer what is omitted (TVM's read rule included), and check only what is declared", function()
    local function mm(decl)
      return T.prim_func("main", {A = T.Buffer({8, 8}, "int32"), B = T.Buffer({8, 8}, "int32"),
                                  C = T.Buffer({8, 8}, "int32")}, function(A, B, C)
        for i, j, k in T.grid(8, 8, 8) do
          T.block("C", function()
            local vi, vj, vk = T.axis.remap("SSR", {i, j, k})
            if decl == "writes" then T.writes(C[{vi, vj}]) end
            if decl == "reads" then T.reads(A[{vi, vk}], B[{vk, vj}]) end
            T.init(function() C[{vi, vj}] = 0 end)
            C[{vi, vj}] = C[{vi, vj}] + A[{vi, vk}] * B[{vk, vj}]
          end)
        end
      end)
    end
    for _, decl in ipairs({"none", "reads", "writes"}) do
      local f = mm(decl)
      local b = tir.Schedule(f):get("C")
      assert.are.equal("A,B", names(b.reads), decl)
      assert.are.equal("C", names(b.writes), decl)
      assert.is_true(tir.structural_equal(f, mm("none")), decl)
      U.assert_equiv(U.matmul(8, 8, 8, "int32"), f)
    end
  end)

  it("accept over-approximations (whole buffers, the output of a reduction, an unused buffer)", function()
    local f = T.prim_func("main", {A = T.Buffer({8, 8}, "int32"), B = T.Buffer({8, 8}, "int32"),
                                   C = T.Buffer({8, 8}, "int32"), X = T.Buffer({4}, "int32")}, function(A, B, C, X)
      for i, j, k in T.grid(8, 8, 8) do
        T.block("C", function()
          local vi, vj, vk = T.axis.remap("SSR", {i, j, k})
          T.reads(C[{vi, vj}], A[{vi, {0, 8}}], B[{{0, 8}, {0, 8}}], X[{{0, 4}}])
          T.writes(C[{{0, 8}, vj}])
          T.init(function() C[{vi, vj}] = 0 end)
          C[{vi, vj}] = C[{vi, vj}] + A[{vi, vk}] * B[{vk, vj}]
        end)
      end
    end)
    local b = tir.Schedule(f):get("C")
    assert.are.equal("C,A,B,X", names(b.reads)) -- kept as declared
    local args = tir.testing.random_args(f, 4)
    tir.interpret(f, args)
    local ref = tir.testing.random_args(U.matmul(8, 8, 8, "int32"), 4)
    tir.interpret(U.matmul(8, 8, 8, "int32"), ref)
    assert.are.same(ref[3]:to_table(), args[3]:to_table())
    -- schedules work on it: A staged in shared memory per row, interpreter-equivalent
    local sch = tir.Schedule(f)
    local a = sch:cache_read("C", 1, "shared")
    sch:compute_at(a, (sch:get_loops(sch:get_block("C"))))
    U.assert_equiv(f, sch.mod)
    U.assert_roundtrip(sch.mod)
  end)

  it("accept an opaque block reading back what it declares to write; refuse that elsewhere", function()
    -- TVM's test_var_args_sugar writes its summation so: T.reads(A), T.writes(B), B[0] += ...
    local f = T.prim_func("main", {A = T.Buffer({8}, F32), B = T.Buffer({1}, F32)}, function(A, B)
      T.block("sum", function()
        T.reads(A[{{0, 8}}])
        T.writes(B[{0}])
        B[{0}] = T.float32(0)
        for i in T.serial(8) do B[{0}] = B[{0}] + A[{i}] end
      end)
    end)
    U.assert_roundtrip(f)
    -- the update of a block with iteration variables must declare its read
    U.expect_error(function()
      T.prim_func("main", {A = T.Buffer({8, 8}, F32), B = T.Buffer({8}, F32)}, function(A, B)
        for i, k in T.grid(8, 8) do
          T.block("upd", function()
            local vi, vk = T.axis.remap("SR", {i, k})
            T.reads(A[{vi, vk}])
            T.writes(B[{vi}])
            B[{vi}] = B[{vi}] + A[{vi, vk}]
          end)
        end
      end)
    end, "block 'upd' reads B[{vi}], but its declared T.reads(A[{vi, vk}]) does not list B")
  end)

  it("get_producers/get_consumers count write-after-write (TVM's GetProducers): a write before a reduction", function()
    local f = T.prim_func("main", {A = T.Buffer({8, 8}, "int32"), B = T.Buffer({8, 8}, "int32"),
                                   E = T.Buffer({8, 8}, "int32")}, function(A, B, E)
      local C = T.alloc_buffer({8, 8}, "int32")
      for i, j in T.grid(8, 8) do
        T.block("X", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          C[{vi, vj}] = A[{vi, vj}] * 5
        end)
      end
      for i, j, k in T.grid(8, 8, 8) do
        T.block("R", function()
          local vi, vj, vk = T.axis.remap("SSR", {i, j, k})
          T.init(function() C[{vi, vj}] = 0 end)
          C[{vi, vj}] = C[{vi, vj}] + A[{vi, vk}] * B[{vk, vj}]
        end)
      end
      for i, j in T.grid(8, 8) do
        T.block("D", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          E[{vi, vj}] = C[{vi, vj}] + 1
        end)
      end
    end)
    local sch = tir.Schedule(f)
    assert.are.equal("A,B", names(sch:get("R").reads)) -- R does not read X's values
    local function block_names(list)
      local out = {}
      for i, b in ipairs(list) do out[i] = sch:get(b).name end
      return table.concat(out, ",")
    end
    assert.are.equal("X", block_names(sch:get_producers("R")))
    assert.are.equal("R,D", block_names(sch:get_consumers("X")))
    assert.are.equal("X,R", block_names(sch:get_producers("D")))
    -- moving X past R would clobber R's result: refused (two writers of C)
    U.expect_error(function() sch:compute_at("X", (sch:get_loops(sch:get_block("D")))) end, "ScheduleError in compute_at",
                   "block 'R' also writes C")
  end)
end)
