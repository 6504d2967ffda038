-- decl_buffer_spec.lua -- T.decl_buffer (TVM's DeclBuffer): a buffer view with its own shape,
-- strides and elem_offset over an allocation's or a parameter's data.  The printer prints it,
-- it loads back structurally equal, the interpreter, lowering (plan/compact/flatten), the
-- simulator and the CUDA codegen honour it, and views that do not fit are refused.
local tir = require("tir")
local T = tir.script
local U = require("spec_util")

local function roundtrip(f)
  local g = T.parse(tostring(f))
  local eq, diff = tir.structural_equal(f, g)
  assert(eq, tostring(diff) .. "\n" .. tostring(f))
end

-- interpreter before == interpreter after lowering, bit-exact
local function lowered_equal(f)
  local args = tir.testing.random_args(f, 5)
  local a2 = tir.testing.copy_args(args)
  tir.interpret(f, args)
  tir.interpret(tir.lower(f), a2)
  for i = 1, #args do assert.are.same(args[i]:to_table(), a2[i]:to_table()) end
  return args
end

-- B (4 x 8) computed by blocks, then read through a flat 32-element view
local function reshaped_alloc(dt)
  return T.prim_func("main", {A = T.Buffer({4, 8}, dt), C = T.Buffer({32}, dt)}, function(A, C)
    local B = T.alloc_buffer({4, 8}, dt)
    for i, j in T.grid(4, 8) do
      T.block("B", function()
        local vi, vj = T.axis.remap("SS", {i, j})
        B[{vi, vj}] = A[{vi, vj}] + T[dt](3)
      end)
    end
    local Bf = T.decl_buffer({32}, dt, {data = B.data})
    for k in T.serial(32) do
      T.block("C", function()
        local vk = T.axis.remap("S", {k})
        T.reads(Bf[{vk}])
        T.writes(C[{vk}])
        C[{vk}] = Bf[{vk}] * T[dt](2)
      end)
    end
  end)
end

-- the transpose of a 6 x 4 parameter through a strided view (strides {1, 4}), and a column
-- window through elem_offset
local function strided_param()
  return T.prim_func("main", {A = T.Buffer({6, 4}, "int32"), B = T.Buffer({4, 6}, "int32"), C = T.Buffer({6}, "int32")},
                     function(A, B, C)
    local At = T.decl_buffer({4, 6}, "int32", {data = A.data, strides = {1, 4}})
    for i, j in T.grid(4, 6) do
      T.block("B", function()
        local vi, vj = T.axis.remap("SS", {i, j})
        T.reads(At[{vi, vj}])
        T.writes(B[{vi, vj}])
        B[{vi, vj}] = At[{vi, vj}]
      end)
    end
    local col2 = T.decl_buffer({6}, "int32", {data = A.data, strides = {4}, elem_offset = 2})
    for i in T.serial(6) do
      T.block("C", function()
        local vi = T.axis.remap("S", {i})
        T.reads(col2[{vi}])
        T.writes(C[{vi}])
        C[{vi}] = col2[{vi}] + 1
      end)
    end
  end)
end

describe("T.decl_buffer", function()
  it("views an alloc_buffer with another shape: prints, loads back, interprets, lowers", function()
    for _, dt in ipairs({"float32", "int32"}) do
      local f = reshaped_alloc(dt)
      local text = tostring(f)
      assert.truthy(text:find('local Bf = T.decl_buffer({32}, "' .. dt .. '", {data = B.data})', 1, true), text)
      roundtrip(f)
      local args = lowered_equal(f)
      local a, c = args[1]:to_table(), args[2]:to_table()
      for k = 0, 31 do
        local want = (a[k // 8 + 1][k % 8 + 1] + 3) * 2
        if dt == "int32" then assert.are.equal(want, c[k + 1]) else assert.is_true(math.abs(want - c[k + 1]) < 1e-5) end
      end
      -- lowering keeps B whole (the view reads all of it) and allocates it where the view sees it
      local low = tostring(tir.lower(f))
      assert.truthy(low:find('T.allocate({32}, "' .. dt .. '", "global")', 1, true), low)
      assert.truthy(low:find("T.decl_buffer", 1, true), low)
    end
  end)

  it("views a parameter with strides and an elem_offset", function()
    local f = strided_param()
    roundtrip(f)
    assert.truthy(tostring(f):find("strides = {1, 4}", 1, true))
    assert.truthy(tostring(f):find("elem_offset = 2", 1, true))
    local args = lowered_equal(f)
    local a, b, c = args[1]:to_table(), args[2]:to_table(), args[3]:to_table()
    for i = 1, 4 do
      for j = 1, 6 do assert.are.equal(a[j][i], b[i][j]) end
    end
    for i = 1, 6 do assert.are.equal(a[i][3] + 1, c[i]) end
  end)

  it("is honoured by the CUDA codegen and the simulator", function()
    local f = T.prim_func("main", {A = T.Buffer({64, 4}, "float32"), B = T.Buffer({64}, "float32")}, function(A, B)
      local col = T.decl_buffer({64}, "float32", {data = A.data, strides = {4}, elem_offset = 1})
      for bx in T.thread_binding(2, "blockIdx.x") do
        for tx in T.thread_binding(32, "threadIdx.x") do
          T.block("B", function()
            local vi = T.axis.spatial(64, bx * 32 + tx)
            T.reads(col[{vi}])
            T.writes(B[{vi}])
            B[{vi}] = col[{vi}] * T.float32(2)
          end)
        end
      end
    end)
    roundtrip(f)
    local mod = tir.build(f, "cuda", {compile = false})
    local src = mod:get_source("cuda")
    -- the view's accesses index A's pointer (the kernel parameter) with stride 4, offset 1
    assert.truthy(src:find("[(((((int)blockIdx.x) * 128) + (((int)threadIdx.x) * 4)) + 1)]", 1, true), src)
    if tir.core.nvrtc_available() then assert.truthy(tir.build(f, "cuda"):get_source("ptx"):find("ld.global", 1, true)) end
    local rep = tir.simulate(mod, tir.testing.random_args(f, 3), {reference = f})
    assert.are.equal(0, rep.n_issues)
  end)

  it("scopes the rest of its block, or a body function", function()
    local f = T.prim_func("main", {A = T.Buffer({8}, "int32"), B = T.Buffer({8}, "int32")}, function(A, B)
      T.decl_buffer({2, 4}, "int32", {data = A.data}, function(A2)
        for i, j in T.grid(2, 4) do
          T.block("B", function()
            local vi, vj = T.axis.remap("SS", {i, j})
            T.reads(A2[{vi, vj}])
            T.writes(B[{vi * 4 + vj}])
            B[{vi * 4 + vj}] = A2[{vi, vj}] + vi
          end)
        end
      end)
    end)
    roundtrip(f)
    lowered_equal(f)
  end)

  it("refuses views that do not fit, bad offsets and extents, and data that is not a buffer's", function()
    local function mk(shape, opts)
      return function()
        T.prim_func("main", {A = T.Buffer({4, 8}, "float32")}, function(A)
          local V = T.decl_buffer(shape, "float32", opts(A))
          for i in T.serial(1) do
            T.block("V", function()
              T.reads()
              T.writes(V[{0}])
              V[{0}] = T.float32(1)
            end)
          end
        end)
      end
    end
    U.expect_error(mk({33}, function(A) return {data = A.data} end), "ValueError in T.decl_buffer", "spans 33 elements",
                   "A holds 32 elements")
    U.expect_error(mk({8}, function(A) return {data = A.data, elem_offset = 25} end), "spans 33 elements")
    U.expect_error(mk({4, 8}, function(A) return {data = A.data, strides = {9, 1}} end), "spans 35 elements")
    U.expect_error(mk({8}, function(A) return {data = A.data, elem_offset = -1} end), "elem_offset -1 is negative")
    U.expect_error(mk({0}, function(A) return {data = A.data} end), "extent 0")
    U.expect_error(mk({8}, function(A) return {data = 5} end), "TypeError in T.decl_buffer", "data")
    U.expect_error(mk({8}, function(A) return {data = tir.var("x")} end), "data must be a buffer's data variable")
    U.expect_error(mk({8}, function(A) return {data = A.data, scope = "shared"} end), "the view has scope 'shared'")
    U.expect_error(mk({8}, function(A) return {data = A.data, bogus = 1} end), "unknown option")
    -- a float64 view of 20 elements is 160 bytes, over A's 128
    U.expect_error(function()
      T.prim_func("main", {A = T.Buffer({4, 8}, "float32")}, function(A)
        T.decl_buffer({20}, "float64", {data = A.data})
      end)
    end, "(160 bytes)", "(128 bytes)")
    -- negative strides walk down from elem_offset: below the data start is refused, a flipped
    -- view with the offset at its last row fits (and reads the rows in reverse)
    U.expect_error(mk({4, 8}, function(A) return {data = A.data, strides = {-8, 1}} end),
                   "the view reaches element -24, before the start of A's data", "elem_offset of at least 24")
    U.expect_error(mk({4, 8}, function(A) return {data = A.data, strides = {-8, 2}, elem_offset = 24} end), "spans 39 elements")
    U.expect_error(mk({8}, function(A) return {data = A.data, dtype = "float32"} end), "unknown option")
    U.expect_error(function()
      T.prim_func("main", {A = T.Buffer({4, 8}, "float32")}, function(A) T.decl_buffer({8}, "floaty", {data = A.data}) end)
    end, "TypeError in T.decl_buffer", "unknown dtype 'floaty'")
    local flip = T.prim_func("main", {A = T.Buffer({4, 8}, "float32"), B = T.Buffer({4, 8}, "float32")}, function(A, B)
      local V = T.decl_buffer({4, 8}, "float32", {data = A.data, strides = {-8, 1}, elem_offset = 24})
      for i, j in T.grid(4, 8) do B[{i, j}] = V[{i, j}] end
    end)
    local a = tir.nd.random({4, 8}, "float32", nil, {seed = 3})
    local b = tir.nd.empty({4, 8}, "float32")
    tir.interpret(flip, a, b)
    for i = 0, 3 do for j = 0, 7 do assert.are.equal(a:get({3 - i, j}), b:get({i, j})) end end
  end)

  it("is refused by tir.Schedule (primitives follow data flow through buffers, not views)", function()
    U.expect_error(function() tir.Schedule(reshaped_alloc("int32")) end, "ScheduleError in Schedule", "declares the view Bf",
                   "cannot be scheduled")
  end)

  it("without data allocates, as T.allocate", function()
    local f = T.prim_func("main", {A = T.Buffer({8}, "int32")}, function(A)
      local V = T.decl_buffer({8}, "int32", {scope = "global"})
      for i in T.serial(8) do
        V[{i}] = A[{i}]
        A[{i}] = V[{i}] + 1
      end
    end)
    assert.truthy(tostring(f):find('T.allocate({8}, "int32", "global")', 1, true))
    roundtrip(f)
  end)

  it("the interpreter checks views whose size is only known when it runs", function()
    local f = T.prim_func("main", {A = T.Buffer({8}, "int32"), B = T.Buffer({8}, "int32"), n = T.int32()}, function(A, B, n)
      local V = T.decl_buffer({n}, "int32", {data = A.data})
      for i in T.serial(8) do
        T.block("B", function()
          local vi = T.axis.remap("S", {i})
          T.reads(V[{0}])
          T.writes(B[{vi}])
          B[{vi}] = V[{0}]
        end)
      end
    end)
    local a, b = tir.nd.empty({8}, "int32"), tir.nd.empty({8}, "int32")
    tir.interpret(f, {a, b, 8})
    U.expect_error(function() tir.interpret(f, {a, b, 9}) end, "decl_buffer", "needs 9 elements", "holds 8")
  end)
end)
