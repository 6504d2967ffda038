-- schedule_transform_layout_spec.lua -- transform_layout (a buffer's layout) and
-- transform_block_layout (a block's iteration space): the IR after each equals a T script
-- (cases after TVM tests/python/tir-schedule/test_tir_schedule_transform_layout.py, written
-- anew at smaller sizes), interpreter equivalence (exact for int32), trace replay, and one
-- test per precondition.
local tir = require("tir")
local T = tir.script
local U = require("spec_util")

local F32, I32 = "float32", "int32"

local function assert_ir(got, want)
  local eq, diff = tir.structural_equal(got, want)
  assert(eq, ("IR differs: %s\n-- got:\n%s\n-- want:\n%s"):format(tostring(diff), tostring(got), tostring(want)))
end

-- IR (when want is given), interpreter equivalence before/after (also lowered), trace replay
local function assert_all(f, sch, want, opts)
  if want then assert_ir(sch.mod, want) end
  U.assert_equiv(f, sch.mod, opts)
  local args = tir.testing.random_args(f, 3)
  local a2 = tir.testing.copy_args(args)
  tir.interpret(f, args)
  tir.interpret(tir.lower(sch.mod), a2)
  for i = 1, #args do
    if opts and opts.rtol then tir.testing.assert_allclose(a2[i], args[i], {rtol = opts.rtol})
    else assert.are.same(args[i]:to_table(), a2[i]:to_table()) end
  end
  local s2 = tir.Schedule(f)
  s2:apply_trace(sch:trace())
  assert_ir(s2.mod, sch.mod)
end

-- ---------------------------------------------------------------------------------------
-- workloads

local function elementwise(dt)
  dt = dt or F32
  return T.prim_func("main", {A = T.Buffer({16, 8}, dt), B = T.Buffer({16, 8}, dt)}, function(A, B)
    for i, j in T.grid(16, 8) do
      T.block("B", function()
        local vi, vj = T.axis.remap("SS", {i, j})
        B[{vi, vj}] = A[{vi, vj}] * (dt == F32 and 2.0 or 2)
      end)
    end
  end)
end

-- two stages through an intermediate buffer B (what transform_layout can change)
local function two_elementwise(dt)
  dt = dt or F32
  local two, one = dt == F32 and 2.0 or 2, dt == F32 and 1.0 or 1
  return T.prim_func("main", {A = T.Buffer({32, 32}, dt), C = T.Buffer({32, 32}, dt)}, function(A, C)
    local B = T.alloc_buffer({32, 32}, dt)
    for i, j in T.grid(32, 32) do
      T.block("B", function()
        local vi, vj = T.axis.remap("SS", {i, j})
        B[{vi, vj}] = A[{vi, vj}] * two
      end)
    end
    for i, j in T.grid(32, 32) do
      T.block("C", function()
        local vi, vj = T.axis.remap("SS", {i, j})
        C[{vi, vj}] = B[{vi, vj}] + one
      end)
    end
  end)
end

-- conv2d NHWC with padding (TVM's conv2d_nhwc at 14x14, 8 output channels)
local function conv_params(dt) return {Input = T.Buffer({1, 14, 14, 3}, dt), Weight = T.Buffer({7, 7, 3, 8}, dt),
                                       Conv = T.Buffer({1, 7, 7, 8}, dt)} end

local function pad_stage(Input, PadInput, dt)
  for i0, i1, i2, i3 in T.grid(1, 20, 20, 3) do
    T.block("PadInput", function()
      local a, b, c, d = T.axis.remap("SSSS", {i0, i1, i2, i3})
      PadInput[{a, b, c, d}] = T.if_then_else(T.And(T.And(T.ge(b, 3), T.lt(b, 17)), T.And(T.ge(c, 3), T.lt(c, 17))),
                                              Input[{a, b - 3, c - 3, d}], dt == F32 and T.float32(0) or T.int32(0))
    end)
  end
end

local function conv2d(dt)
  dt = dt or F32
  return T.prim_func("main", conv_params(dt), function(Input, Weight, Conv)
    local PadInput = T.alloc_buffer({1, 20, 20, 3}, dt)
    pad_stage(Input, PadInput, dt)
    for i0, i1, i2, i3, i4, i5, i6 in T.grid(1, 7, 7, 8, 7, 7, 3) do
      T.block("conv2d_nhwc", function()
        local n, h, w, co, rh, rw, rc = T.axis.remap("SSSSRRR", {i0, i1, i2, i3, i4, i5, i6})
        T.init(function() Conv[{n, h, w, co}] = dt == F32 and T.float32(0) or T.int32(0) end)
        Conv[{n, h, w, co}] = Conv[{n, h, w, co}] + PadInput[{n, h * 2 + rh, w * 2 + rw, co // 64 * 3 + rc}] * Weight[{rh, rw, rc, co}]
      end)
    end
  end)
end

local CONV_MAP = function(n, h, w, co, rh, rw, rc) return n * 49 + h * 7 + w, co, rh * 21 + rw * 3 + rc end

-- ---------------------------------------------------------------------------------------
describe("transform_block_layout", function()
  it("fuses a block's two iteration variables into one (TVM elementwise)", function()
    local want = T.prim_func("main", {A = T.Buffer({16, 8}, F32), B = T.Buffer({16, 8}, F32)}, function(A, B)
      for ax0 in T.serial(128) do
        T.block("B", function()
          local v0 = T.axis.remap("S", {ax0})
          B[{v0 // 8, v0 % 8}] = A[{v0 // 8, v0 % 8}] * 2.0
        end)
      end
    end)
    for _, form in ipairs({"handle", "name"}) do
      local f = elementwise()
      local sch = tir.Schedule(f)
      sch:transform_block_layout(form == "handle" and sch:get_block("B") or "B", function(i, j) return i * 8 + j end)
      assert_all(f, sch, want)
    end
    -- the trace replays as Lua text
    local sch = tir.Schedule(elementwise())
    sch:transform_block_layout(sch:get_block("B"), function(i, j) return i * 8 + j end)
    assert.matches("sch:transform_block_layout%(b0, function%(i, j%) return i %* 8 %+ j end%)", sch:trace())
  end)

  it("turns conv2d into an implicit GEMM (rows n*h*w, columns co, reduction rh*rw*rc)", function()
    local want = T.prim_func("main", conv_params(F32), function(Input, Weight, Conv)
      local PadInput = T.alloc_buffer({1, 20, 20, 3}, F32)
      pad_stage(Input, PadInput, F32)
      for ax0, ax1, ax2 in T.grid(49, 8, 147) do
        T.block("conv2d_nhwc", function()
          local v0, v1, v2 = T.axis.remap("SSR", {ax0, ax1, ax2})
          T.init(function() Conv[{0, v0 // 7, v0 % 7, v1}] = T.float32(0) end)
          Conv[{0, v0 // 7, v0 % 7, v1}] = Conv[{0, v0 // 7, v0 % 7, v1}]
            + PadInput[{0, v0 // 7 * 2 + v2 // 21, v0 % 7 * 2 + v2 // 3 % 7, v2 % 3}] * Weight[{v2 // 21, v2 // 3 % 7, v2 % 3, v1}]
        end)
      end
    end)
    local f = conv2d(F32)
    local sch = tir.Schedule(f)
    sch:transform_block_layout("conv2d_nhwc", CONV_MAP)
    assert_all(f, sch, want, {rtol = 1e-5})
    -- int32: bit-exact, also after tiling the GEMM view
    local g = conv2d(I32)
    local s2 = tir.Schedule(g)
    s2:transform_block_layout("conv2d_nhwc", CONV_MAP)
    assert_all(g, s2)
    local m, n, k = s2:get_loops(s2:get_block("conv2d_nhwc"))
    local mo, mi = s2:split(m, {nil, 8})
    local ko, ki = s2:split(k, {nil, 16})
    s2:reorder(mo, n, ko, mi, ki)
    assert_all(g, s2)
  end)

  it("permutes iteration variables, unit ones included (TVM unit_dim)", function()
    local f = T.prim_func("main", {A = T.Buffer({1, 16}, F32), C = T.Buffer({1, 16}, F32)}, function(A, C)
      local B = T.alloc_buffer({1, 16}, F32)
      for i, j in T.grid(1, 16) do
        T.block("B", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          B[{vi, vj}] = A[{vi, vj}] * 2.0
        end)
      end
      for i, j in T.grid(1, 16) do
        T.block("C", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          C[{vi, vj}] = B[{vi, vj}] + 1.0
        end)
      end
    end)
    local want = T.prim_func("main", {A = T.Buffer({1, 16}, F32), C = T.Buffer({1, 16}, F32)}, function(A, C)
      local B = T.alloc_buffer({1, 16}, F32)
      for ax0, ax1 in T.grid(16, 1) do
        T.block("B", function()
          local vj, vi = T.axis.remap("SS", {ax0, ax1})
          B[{0, vj}] = A[{0, vj}] * 2.0
        end)
      end
      for i, j in T.grid(1, 16) do
        T.block("C", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          C[{vi, vj}] = B[{vi, vj}] + 1.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    sch:transform_block_layout("B", function(i, j) return j, i end)
    assert_all(f, sch, want)
  end)

  it("splits and regroups digits (i // 4, i % 4 * 8 + j), reductions and int64 domains", function()
    local want = T.prim_func("main", {A = T.Buffer({16, 8}, I32), B = T.Buffer({16, 8}, I32)}, function(A, B)
      for ax0, ax1 in T.grid(4, 32) do
        T.block("B", function()
          local v0, v1 = T.axis.remap("SS", {ax0, ax1})
          B[{v1 // 8 + v0 * 4, v1 % 8}] = A[{v1 // 8 + v0 * 4, v1 % 8}] * 2
        end)
      end
    end)
    local f = elementwise(I32)
    local sch = tir.Schedule(f)
    sch:transform_block_layout("B", function(i, j) return i // 4, i % 4 * 8 + j end)
    assert_all(f, sch, want)
    -- a matmul: spatial (j, i) fused, the reduction split in two digits, all permuted
    local g = U.matmul(12, 10, 16, I32)
    local s2 = tir.Schedule(g)
    s2:transform_block_layout("C", function(i, j, k) return k % 4, j * 12 + i, k // 4 end)
    local blk = s2:get(s2:get_block("C"))
    local kinds = {}
    for n, iv in ipairs(blk.iter_vars) do kinds[n] = iv.iter_type end
    assert.are.same({2, 0, 2}, kinds) -- reduce, spatial, reduce
    assert_all(g, s2)
    -- int64 iteration variables (TVM int64_extent): new variables and loops are int64
    local h = T.prim_func("main", {A = T.Buffer({T.int64(16), T.int64(8)}, F32), B = T.Buffer({T.int64(16), T.int64(8)}, F32)},
                          function(A, B)
      for i, j in T.grid(T.int64(16), T.int64(8)) do
        T.block("B", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          B[{vi, vj}] = A[{vi, vj}] * 2.0
        end)
      end
    end)
    local want64 = T.prim_func("main", {A = T.Buffer({T.int64(16), T.int64(8)}, F32), B = T.Buffer({T.int64(16), T.int64(8)}, F32)},
                               function(A, B)
      for ax0 in T.serial(T.int64(128)) do
        T.block("B", function()
          local v0 = T.axis.remap("S", {ax0})
          B[{v0 // T.int64(8), v0 % T.int64(8)}] = A[{v0 // T.int64(8), v0 % T.int64(8)}] * 2.0
        end)
      end
    end)
    local s3 = tir.Schedule(h)
    s3:transform_block_layout("B", function(i, j) return i * 8 + j end)
    assert_all(h, s3, want64)
  end)

  it("remaps an outer block (after blockize) and an init block (after decompose_reduction)", function()
    local f = T.prim_func("main", {A = T.Buffer({8, 12}, I32), B = T.Buffer({8, 12}, I32)}, function(A, B)
      for i, j in T.grid(8, 12) do
        T.block("B", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          B[{vi, vj}] = A[{vi, vj}] * 3 + 1
        end)
      end
    end)
    local sch = tir.Schedule(f)
    local i, j = sch:get_loops(sch:get_block("B"))
    local io, ii = sch:split(i, {nil, 4})
    local jo, ji = sch:split(j, {nil, 4})
    sch:reorder(io, jo, ii, ji)
    local o = sch:blockize(ii)
    sch:transform_block_layout(o, function(a, b) return b * 2 + a end)
    local s = tostring(sch.mod)
    assert.truthy(s:find("B[{v0 % 2 * 4 + vi_i, v0 // 2 * 4 + vj_i}]", 1, true), s)
    assert_all(f, sch)
    local g = U.matmul(8, 6, 8, I32)
    local s2 = tir.Schedule(g)
    local c = s2:get_block("C")
    local init = s2:decompose_reduction(c, (s2:get_loops(c)))
    s2:transform_block_layout(init, function(a, b) return b, a end)
    assert_all(g, s2)
  end)

  it("computes inverses with tir.arith.iter_map_inverse", function()
    local i, j, k = tir.var("i"), tir.var("j"), tir.var("k")
    local a, b, c = tir.var("a"), tir.var("b"), tir.var("c")
    local inv, ranges = tir.arith.iter_map_inverse({j * 4 + k // 4, i, k % 4}, {{i, 3}, {j, 5}, {k, 16}}, {a, b, c})
    assert.are.same({{0, 20}, {0, 3}, {0, 4}}, ranges)
    -- enumerate: the inverse of the image of every point is the point
    local function value(e, env)
      local r = tir.simplify(tir.substitute(e, env))
      return r.value
    end
    for x = 0, 2 do
      for y = 0, 4 do
        for z = 0, 15 do
          local env = {a, tir.const(y * 4 + z // 4, "int32"), b, tir.const(x, "int32"), c, tir.const(z % 4, "int32")}
          assert.are.same({x, y, z}, {value(inv[1], env), value(inv[2], env), value(inv[3], env)})
        end
      end
    end
    assert.are.equal("b", tostring(inv[1]))
    assert.is_nil((tir.arith.iter_map_inverse({i + j}, {{i, 4}, {j, 4}}, {a})))
    local _, why = tir.arith.iter_map_inverse({i // 2}, {{i, 4}}, {a})
    assert.matches("not a bijection", why)
    local _, r = tir.arith.iter_map_inverse({i * 4 + j + 1}, {{i, 4}, {j, 4}}, {a})
    assert.are.same({{1, 16}}, r)
  end)

  -- ---- preconditions: one test each ----
  it("rejects a map that is not affine (TVM fail_non_affine)", function()
    local sch = tir.Schedule(elementwise())
    U.expect_error(function() sch:transform_block_layout("B", function(i, j) return i + j end) end,
                   "ScheduleError in transform_block_layout", "is not a bijective affine map", "this block")
  end)

  it("rejects a map that is affine but not one-to-one or onto", function()
    local sch = tir.Schedule(elementwise())
    U.expect_error(function() sch:transform_block_layout("B", function(i, j) return i * 4 + j end) end,
                   "is not a bijective affine map", "scales do not chain")
    U.expect_error(function() sch:transform_block_layout("B", function(i, j) return i // 2, j end) end,
                   "is not a bijective affine map")
    U.expect_error(function() sch:transform_block_layout("B", function(i, j) return i, j, i end) end,
                   "is not a bijective affine map")
  end)

  it("rejects a new variable mixing spatial and reduction variables (TVM fail_mixed_iter_type)", function()
    local sch = tir.Schedule(conv2d(F32))
    U.expect_error(function()
      sch:transform_block_layout("conv2d_nhwc", function(n, h, w, co, rh, rw, rc) return n * 49 + h * 7 + w, co * 7 + rh, rw * 3 + rc end)
    end, "uses iteration variables of different kinds", "co is spatial, rh is reduction")
  end)

  it("rejects a map whose arity differs from the block's iteration variables", function()
    local sch = tir.Schedule(elementwise())
    U.expect_error(function() sch:transform_block_layout("B", function(i) return i end) end,
                   "ScheduleError in transform_block_layout", "takes 1 index(es), but block 'B' has 2 iteration variable(s)")
    U.expect_error(function() sch:transform_block_layout("B", function(i, j, k) return i, j, k end) end,
                   "takes 3 index(es)")
    U.expect_error(function() sch:transform_block_layout("B", "i * 8 + j") end, "TypeError", "must be a Lua function")
  end)

  it("rejects an output that does not start at 0", function()
    local sch = tir.Schedule(elementwise())
    U.expect_error(function() sch:transform_block_layout("B", function(i, j) return i * 8 + j + 1 end) end,
                   "output 0 of the index map", "ranges over [1, 129)")
  end)

  it("rejects loops that do not start at 0", function()
    local f = T.prim_func("main", {A = T.Buffer({16}, F32)}, function(A)
      for i in T.serial(2, 18) do
        T.block("B", function()
          local vi = T.axis.spatial({2, 18}, i)
          A[{vi - 2}] = 1.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:transform_block_layout("B", function(i) return i end) end,
                   "loop i starts at 2", "this loop")
  end)

  it("rejects a loop nest holding another block", function()
    local f = T.prim_func("main", {A = T.Buffer({16}, F32), B = T.Buffer({16}, F32)}, function(A, B)
      for i in T.serial(16) do
        T.block("A", function()
          local vi = T.axis.remap("S", {i})
          A[{vi}] = 1.0
        end)
        T.block("B", function()
          local vi = T.axis.remap("S", {i})
          B[{vi}] = A[{vi}]
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:transform_block_layout("B", function(i) return i end) end,
                   "must have only one child block, but holds 2", "this loop")
  end)

  it("rejects loops that are not perfectly nested", function()
    local f = T.prim_func("main", {A = T.Buffer({16, 4}, F32)}, function(A)
      for i in T.serial(16) do
        T.If(T.lt(i, 8), function()
          for j in T.serial(4) do
            T.block("B", function()
              local vi, vj = T.axis.remap("SS", {i, j})
              A[{vi, vj}] = 1.0
            end)
          end
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:transform_block_layout("B", function(i, j) return j, i end) end,
                   "must be perfectly nested", "IfThenElse")
  end)

  it("rejects bound, unrolled or annotated loops (their kind would be lost)", function()
    local sch = tir.Schedule(elementwise())
    local i = sch:get_loops(sch:get_block("B"))
    sch:bind(i, "threadIdx.x")
    U.expect_error(function() sch:transform_block_layout("B", function(a, b) return b, a end) end,
                   "loop i is not serial", "this loop")
    local s2 = tir.Schedule(elementwise())
    local _, j = s2:get_loops(s2:get_block("B"))
    s2:annotate(j, "pragma_x", 1)
    U.expect_error(function() s2:transform_block_layout("B", function(a, b) return b, a end) end, "loop j is annotated")
  end)

  it("rejects bindings that are not the loop variables in order (TVM NotTrivialBinding)", function()
    local sch = tir.Schedule(elementwise())
    local i = sch:get_loops(sch:get_block("B"))
    sch:split(i, {nil, 4})
    U.expect_error(function() sch:transform_block_layout("B", function(a, b) return b, a end) end,
                   "not a trivial binding", "2 iteration variable(s) under 3 loop(s)")
    local s2 = tir.Schedule(elementwise())
    local a, b = s2:get_loops(s2:get_block("B"))
    s2:reorder(b, a)
    U.expect_error(function() s2:transform_block_layout("B", function(x, y) return y, x end) end,
                   "not a trivial binding", "iteration variable vi is bound to i, not to loop j")
  end)

  it("rejects a block with a predicate", function()
    local f = T.prim_func("main", {A = T.Buffer({16}, F32)}, function(A)
      for i in T.serial(16) do
        T.block("B", function()
          local vi = T.axis.remap("S", {i})
          T.where(T.lt(i, 10))
          A[{vi}] = 1.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:transform_block_layout("B", function(x) return x end) end, "has a predicate")
  end)

  it("rejects loops that do not cover the domain, symbolic extents and blocks without iteration variables", function()
    local f = T.prim_func("main", {A = T.Buffer({16}, F32)}, function(A)
      for i in T.serial(8) do
        T.block("B", function()
          local vi = T.axis.spatial(16, i)
          A[{vi}] = 1.0
        end)
      end
    end)
    local sch = tir.Schedule(f)
    U.expect_error(function() sch:transform_block_layout("B", function(x) return x end) end,
                   "loop i does not run over the whole domain of iteration variable vi")
    local g = U.elementwise(tir.var("n"), 8)
    local s2 = tir.Schedule(g)
    U.expect_error(function() s2:transform_block_layout("B", function(x, y) return y, x end) end, "needs constant extents")
    local h = T.prim_func("main", {A = T.Buffer({1}, F32)}, function(A)
      T.block("B", function() A[{0}] = 1.0 end)
    end)
    local s3 = tir.Schedule(h)
    U.expect_error(function() s3:transform_block_layout("B", function() return 0 end) end, "has no iteration variables")
  end)

  it("rejects a block handle that is gone, leaving the function unchanged after any error", function()
    local f = two_elementwise()
    local sch = tir.Schedule(f)
    local b = sch:get_block("B")
    sch:compute_inline(b)
    U.expect_error(function() sch:transform_block_layout(b, function(i, j) return j, i end) end,
                   "ScheduleError in transform_block_layout", "no longer refers to a block")
    local s2 = tir.Schedule(elementwise())
    local before = s2.mod
    pcall(function() s2:transform_block_layout("B", function(i, j) return i + j end) end)
    assert_ir(s2.mod, before)
    assert.are.equal("local b0 = sch:get_block(\"B\")\n", s2:trace())
  end)
end)

-- ---------------------------------------------------------------------------------------
describe("transform_layout", function()
  it("transposes an intermediate buffer", function()
    local want = T.prim_func("main", {A = T.Buffer({32, 32}, F32), C = T.Buffer({32, 32}, F32)}, function(A, C)
      local B = T.alloc_buffer({32, 32}, F32)
      for i, j in T.grid(32, 32) do
        T.block("B", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          B[{vj, vi}] = A[{vi, vj}] * 2.0
        end)
      end
      for i, j in T.grid(32, 32) do
        T.block("C", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          C[{vi, vj}] = B[{vj, vi}] + 1.0
        end)
      end
    end)
    for _, buf in ipairs({{"write", 0}, "B"}) do
      local f = two_elementwise()
      local sch = tir.Schedule(f)
      sch:transform_layout("B", buf, function(i, j) return j, i end)
      assert_all(f, sch, want)
    end
    -- named by a reader of the buffer
    local f = two_elementwise(I32)
    local sch = tir.Schedule(f)
    sch:transform_layout("C", {"read", 0}, function(i, j) return j, i end)
    assert_all(f, sch)
    assert.matches('sch:transform_layout%(b0, {"read", 0}, function%(i, j%) return j, i end%)', sch:trace())
  end)

  it("tiles a buffer (i // 16, j // 16, i % 16, j % 16) (TVM two_elementwise_transformed_intermediate_buffer)", function()
    local want = T.prim_func("main", {A = T.Buffer({32, 32}, F32), C = T.Buffer({32, 32}, F32)}, function(A, C)
      local B = T.alloc_buffer({2, 2, 16, 16}, F32)
      for i, j in T.grid(32, 32) do
        T.block("B", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          B[{vi // 16, vj // 16, vi % 16, vj % 16}] = A[{vi, vj}] * 2.0
        end)
      end
      for i, j in T.grid(32, 32) do
        T.block("C", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          C[{vi, vj}] = B[{vi // 16, vj // 16, vi % 16, vj % 16}] + 1.0
        end)
      end
    end)
    local f = two_elementwise()
    local sch = tir.Schedule(f)
    sch:transform_layout(sch:get_block("B"), {"write", 0}, function(m, n) return m // 16, n // 16, m % 16, n % 16 end)
    assert_all(f, sch, want)
    local g = two_elementwise(I32)
    local s2 = tir.Schedule(g)
    s2:transform_layout("B", "B", function(m, n) return m // 16, n // 16, m % 16, n % 16 end)
    assert_all(g, s2)
  end)

  it("swizzles a buffer with XOR (i, j // 8, (j % 8) ~ (i % 8)) and keeps the result exact", function()
    local f = two_elementwise(I32)
    local sch = tir.Schedule(f)
    sch:transform_layout("B", "B", function(i, j) return i, j // 8, (j % 8) ~ (i % 8) end)
    local s = tostring(sch.mod)
    assert.matches('T.alloc_buffer%({32, 4, 8}, "int32"%)', s)
    assert.truthy(s:find("B[{vi, vj // 8, vj % 8 ~ vi % 8}] = A[{vi, vj}] * 2", 1, true))
    assert_all(f, sch)
  end)

  it("works on a cache of a parameter and on a reduction's output", function()
    local f = U.matmul(16, 16, 16, I32)
    local sch = tir.Schedule(f)
    local c = sch:get_block("C")
    local cl = sch:cache_write(c, 0, "local")
    sch:transform_layout(c, {"write", 0}, function(i, j) return j // 4, i, j % 4 end)
    local cr = sch:cache_read(c, 0, "shared") -- A (reads: A, B; the init means C_local is not read)
    sch:transform_layout(cr, {"write", 0}, function(i, k) return k, i end)
    assert(cl and cr)
    assert_all(f, sch)
  end)

  it("rejects a map that is not one-to-one", function()
    local sch = tir.Schedule(two_elementwise())
    U.expect_error(function() sch:transform_layout("B", "B", function(i, j) return i // 2, j end) end,
                   "ScheduleError in transform_layout", "not one-to-one", "two inputs map to the same element")
    U.expect_error(function() sch:transform_layout("B", "B", function(i, j) return (i + j) // 2, j end) end, "not one-to-one")
  end)

  it("rejects a map with negative outputs", function()
    local sch = tir.Schedule(two_elementwise())
    U.expect_error(function() sch:transform_layout("B", "B", function(i, j) return i - 1, j end) end,
                   "output 0 of the index map reaches -1", "indices must be >= 0")
  end)

  it("transforms a parameter: the signature takes the new shape (TVM two_elementwise_transform_input/output_buffer)", function()
    local f = two_elementwise("int32")
    local sch = tir.Schedule(f)
    sch:transform_layout("B", {"read", 0}, function(i, j) return j, i end)          -- A is passed transposed
    sch:transform_layout("C", "C", function(i, j) return i // 16, j, i % 16 end)     -- C comes back tiled
    local g = sch.mod
    assert.are.same({32, 32}, {g.params[1].shape[1].value, g.params[1].shape[2].value})
    local cs = g.params[2].shape
    assert.are.same({2, 32, 16}, {cs[1].value, cs[2].value, cs[3].value})
    U.assert_roundtrip(g)
    -- the same results once the caller passes / reads the new layouts
    for seed = 1, 2 do
      local a = tir.nd.random({32, 32}, "int32", tir.nd.cpu(), {seed = seed})
      local c = tir.nd.empty({32, 32}, "int32", tir.nd.cpu())
      tir.interpret(f, {a, c})
      local at, ct = {}, {}
      local av, cv = a:to_table(), c:to_table()
      for i = 1, 32 do
        at[i] = {}
        for j = 1, 32 do at[i][j] = av[j][i] end
      end
      local a2 = tir.nd.array(at, "int32")
      local c2 = tir.nd.empty({2, 32, 16}, "int32", tir.nd.cpu())
      for _, fn in ipairs({g, (tir.lower(g))}) do
        tir.interpret(fn, {a2, c2})
        local got = c2:to_table()
        for i = 0, 31 do
          for j = 0, 31 do ct[#ct + 1] = got[i // 16 + 1][j + 1][i % 16 + 1] == cv[i + 1][j + 1] end
        end
      end
      for _, ok in ipairs(ct) do assert.is_true(ok) end
    end
    -- arguments in the old layout are refused before running
    U.expect_error(function() tir.interpret(g, {tir.nd.empty({32, 32}, "int32"), tir.nd.empty({32, 32}, "int32")}) end,
                   "argument 2 (C)")
    local r = tir.Schedule(f):apply_trace(sch:trace())
    assert.is_true(tir.structural_equal(g, r.mod))
  end)

  it("rejects a map of the wrong arity, a missing buffer and a map that is not a function", function()
    local sch = tir.Schedule(two_elementwise())
    U.expect_error(function() sch:transform_layout("B", "B", function(i) return i end) end,
                   "ValueError", "takes 1 parameter(s), but the buffer has 2 dimension(s)")
    U.expect_error(function() sch:transform_layout("B", {"read", 3}, function(i, j) return j, i end) end, "has no read buffer 3")
    U.expect_error(function() sch:transform_layout("B", "Nope", function(i, j) return j, i end) end,
                   "neither reads nor writes a buffer named 'Nope'")
    U.expect_error(function() sch:transform_layout("B", "B", 7) end, "TypeError", "must be a Lua function")
    U.expect_error(function() sch:transform_layout("B", "B", function(i, j) return "x" end) end,
                   "output 1 must be an integer expression")
    U.expect_error(function() sch:transform_layout("B", "B", function(i, j) return i * tir.var("n"), j end) end,
                   "ScheduleError in transform_layout", "cannot be evaluated")
  end)

  it("rejects a storage_align recorded for the old axes", function()
    local sch = tir.Schedule(two_elementwise())
    sch:storage_align("B", 0, 0, 16, 4)
    U.expect_error(function() sch:transform_layout("B", "B", function(i, j) return j, i end) end,
                   "has a storage_align for it")
  end)
end)

describe("transform_layout, bound-aware indices", function()
  -- B of 192 elements as (2, 3, 32): the digits of the index become plain per-dimension
  -- indices, and lowering flattens them back to the original index (TVM's TransformLayout
  -- simplifies with the block's iteration domains; canonical_simplify merges the digits)
  local function chain(dt)
    return T.prim_func("main", {A = T.Buffer({192}, dt), C = T.Buffer({192}, dt)}, function(A, C)
      local B = T.alloc_buffer({192}, dt)
      for i in T.serial(192) do
        T.block("B", function()
          local vi = T.axis.remap("S", {i})
          B[{vi}] = A[{vi}] + (dt == F32 and 2.0 or 2)
        end)
      end
      for i in T.serial(96) do
        T.block("C", function()
          local vi = T.axis.remap("S", {i})
          C[{vi}] = B[{vi}] * (dt == F32 and 3.0 or 3)
        end)
      end
    end)
  end
  it("drops digits that the domain makes constant and flattens back to the plain index", function()
    for _, dt in ipairs({F32, I32}) do
      local f = chain(dt)
      local sch = tir.Schedule(f)
      sch:transform_layout("B", {"write", 0}, function(i) return i // 96, i // 32 % 3, i % 32 end)
      local text = tostring(sch.mod)
      -- C's vi < 96: vi // 96 is 0 and vi // 32 % 3 is vi // 32
      assert.truthy(text:find("B[{0, vi_1 // 32, vi_1 % 32}]", 1, true), text)
      assert.truthy(text:find("B[{vi // 96, vi // 32 % 3, vi % 32}]", 1, true), text)
      local low = tostring(tir.lower(sch.mod))
      assert.truthy(low:find("B[{i}] = ", 1, true), low)
      assert.truthy(low:find("B[{i_1}]", 1, true), low)
      assert_all(f, sch)
    end
  end)
end)

describe("compute_at after transform_layout", function()
  -- B (192) as (2, 3, 32); C's loop split by 32: under i_0 C reads B[i_0 // 3, i_0 % 3, 0:32],
  -- the digits of one index, so B's block needs 32 iterations (vi = i_0 * 32 + ax0), as TVM
  -- gives, not the 96 the highest digit alone would allow
  local function chain(dt)
    return T.prim_func("main", {A = T.Buffer({192}, dt), C = T.Buffer({192}, dt)}, function(A, C)
      local B = T.alloc_buffer({192}, dt)
      for i in T.serial(192) do
        T.block("B", function()
          local vi = T.axis.remap("S", {i})
          B[{vi}] = A[{vi}] * (dt == F32 and 2.0 or 2)
        end)
      end
      for i in T.serial(192) do
        T.block("C", function()
          local vi = T.axis.remap("S", {i})
          C[{vi}] = B[{vi}] + (dt == F32 and 1.0 or 1)
        end)
      end
    end)
  end
  it("solves the producer's domain from all digits of its index", function()
    for _, dt in ipairs({F32, I32}) do
      local f = chain(dt)
      local sch = tir.Schedule(f)
      sch:transform_layout("B", {"write", 0}, function(i) return i // 96, i // 32 % 3, i % 32 end)
      local io = sch:split(sch:get_loops("C"), {nil, 32})
      sch:compute_at(sch:get_block("B"), io)
      local text = tostring(sch.mod)
      assert.truthy(text:find("for ax0 in T.serial(32) do", 1, true), text)
      assert.truthy(text:find("T.axis.spatial(192, i_0 * 32 + ax0)", 1, true), text)
      assert_all(f, sch)
    end
  end)
end)
