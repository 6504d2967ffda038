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
