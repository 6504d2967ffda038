-- script_spec.lua -- writing TIR directly (tir.script) and the print -> load -> equal round trip.
local tir = require("tir")
local T = tir.script
local U = require("spec_util")

local function roundtrip(f)
  local text = tostring(f)
  local g = T.parse(text)
  local eq, diff = tir.structural_equal(f, g)
  assert(eq, (diff or "") .. "\n" .. text)
  assert.are.equal(text, tostring(g)) -- names survive too
  return g
end

describe("T script", function()
  it("builds the matmul of the issue and computes it", function()
    local mm = T.prim_func("mm", {A = T.Buffer({16, 16}, "float16"), B = T.Buffer({16, 16}, "float16"),
                                  C = T.Buffer({16, 16}, "float32")}, function(A, B, C)
      for i, j, k in T.grid(16, 16, 16) do
        T.block("C", function()
          local vi, vj, vk = T.axis.remap("SSR", {i, j, k})
          T.init(function() C[{vi, vj}] = 0 end)
          C[{vi, vj}] = C[{vi, vj}] + T.cast("float32", A[{vi, vk}]) * T.cast("float32", B[{vk, vj}])
        end)
      end
    end)
    local s = tostring(mm)
    assert.matches('T.prim_func%("mm", {A = T.Buffer%({16, 16}, "float16"%)', s)
    assert.matches("T.reads%(A%[{vi, vk}%], B%[{vk, vj}%]%)", s) -- inferred; with an init C is no read (TVM)
    roundtrip(mm)
    local args = tir.testing.random_args(mm, 1)
    tir.interpret(mm, args)
    tir.testing.assert_allclose(args[3], tir.testing.ref_matmul(args[1], args[2]), {rtol = 1e-5, atol = 1e-5})
  end)

  it("is structurally equal to te's matmul", function()
    local f = T.prim_func("main", {A = T.Buffer({8, 4}, "float32"), B = T.Buffer({4, 6}, "float32"),
                                   C = T.Buffer({8, 6}, "float32")}, function(A, B, C)
      for i, j, k in T.grid(8, 6, 4) do
        T.block("C", function()
          local v_i, v_j, v_k = T.axis.remap("SSR", {i, j, k})
          T.reads(A[{v_i, v_k}], B[{v_k, v_j}])
          T.writes(C[{v_i, v_j}])
          T.init(function() C[{v_i, v_j}] = T.float32(0) end)
          C[{v_i, v_j}] = C[{v_i, v_j}] + A[{v_i, v_k}] * B[{v_k, v_j}]
        end)
      end
    end)
    assert.is_true(tir.structural_equal(U.matmul(8, 6, 4), f))
  end)

  it("covers loops of every kind, predicates, allocations, annotations and nested blocks", function()
    local f = T.prim_func("f", {A = T.Buffer({64}, "float32"), B = T.Buffer({64}, "float32"), n = T.int32()}, function(A, B, n)
      T.func_attr({tag = "demo"})
      local S = T.alloc_buffer({64}, "float32", {scope = "shared"})
      for bx in T.thread_binding(2, "blockIdx.x") do
        for tx in T.thread_binding(0, 32, "threadIdx.x") do
          T.block("copy", function()
            local v = T.axis.spatial(64, bx * 32 + tx)
            S[{v}] = A[{v}] * 2.0
          end)
          for u in T.unroll(2, {annotations = {pragma = 1}}) do
            T.block("use", function()
              local v = T.axis.spatial({0, 64}, bx * 32 + tx)
              local w = T.axis.opaque(2, u)
              T.where(T.lt(tx, n))
              T.block_attr({note = "x"})
              T.If(T.eq(w, 0), function()
                B[{v}] = S[{v}]
              end, function()
                B[{v}] = B[{v}] + T.float32(1)
              end)
            end)
          end
        end
      end
      for p in T.parallel(4) do
        for q in T.vectorized(4) do
          T.evaluate(T.call("int32", "noop", p, q))
        end
      end
    end)
    roundtrip(f)
    local s = tostring(f)
    assert.matches('T.block%("root", function%(%)', s)
    assert.matches('local S = T.alloc_buffer%({64}, "float32", {scope = "shared"}%)', s)
    assert.matches('for u in T.unroll%(2, {annotations = {%["pragma"%] = 1}}%) do', s)
    assert.matches("T.where%(T.lt%(tx, n%)%)", s)
  end)

  it("round-trips functions whose parameter shapes or strides name variables", function()
    -- a scalar parameter in a shape (T.Buffer({4, n}) with n = T.int32()) used to print before
    -- n existed and load back as a 1-D buffer; a free shape variable (te) and a symbolic
    -- stride (tensor intrinsics) likewise
    local n = tir.var("n")
    local f = T.prim_func("f", {A = T.Buffer({4, n}, "float32"), n = n}, function(A, n)
      for i, j in T.grid(4, n) do A[{i, j}] = T.float32(1) end
    end)
    local g = roundtrip(f)
    assert.are.equal(2, #g.params[1].shape)
    assert.matches('^%(function%(%) local n = tir.var%("n", "int32"%) return T.prim_func', tostring(f))
    local m = tir.var("m", "int64")
    local X = tir.te.placeholder({m, 2}, "float32", "X")
    local Y = tir.te.compute({m, 2}, function(i, j) return X[{i, j}] * 2.0 end, "Y")
    roundtrip(tir.te.create_prim_func({X, Y}))
    local ld = tir.var("ld")
    roundtrip(T.prim_func("s", {S = T.Buffer({4, 4}, "float32", {strides = {ld, 1}})}, function(S) S[{0, 0}] = T.float32(0) end))
    roundtrip(T.ir_module({f, g}))
  end)

  it("round-trips lowered code: views, launch threads, allocate, let", function()
    local sch = tir.Schedule(U.matmul(50, 40, 30))
    U.bind_2d(sch, "C")
    local _, dumps = tir.lower(sch.mod, {dump = true})
    for _, d in ipairs(dumps) do roundtrip(T.parse(d.ir)) end
    local g = T.prim_func("g", {A = T.Buffer({8}, "int32")}, function(A)
      local tx = T.launch_thread("threadIdx.x", 8)
      local tmp = T.allocate({4}, "int32", "local")
      local x = T.let("x", tx * 2)
      tmp[{0}] = x
      A[{tx}] = tmp[{0}] + 1
    end)
    roundtrip(g)
    local a = tir.nd.array({0, 0, 0, 0, 0, 0, 0, 0}, "int32")
    tir.interpret(g, {a})
    assert.are.same({1, 3, 5, 7, 9, 11, 13, 15}, a:to_table())
  end)

  it("round-trips every function of a schedule's steps and int64 loops", function()
    local sch = tir.Schedule(U.matmul(64, 32, 16))
    local i, j, k = sch:get_loops(sch:get_block("C"))
    roundtrip(sch.mod)
    local a, b = sch:split(i, {nil, 8}); roundtrip(sch.mod)
    sch:fuse(a, b); roundtrip(sch.mod)
    sch:reorder(k, j); roundtrip(sch.mod)
    local h = T.prim_func("h", {A = T.Buffer({T.int64(16)}, "float32")}, function(A)
      for i in T.serial(T.int64(16)) do
        T.block("b", function()
          local v = T.axis.spatial(T.int64(16), i)
          A[{v}] = T.float32(1)
        end)
      end
    end)
    roundtrip(h)
  end)

  it("reports mistakes clearly", function()
    U.expect_error(function() T.block("x", function() end) end, "inside T.prim_func")
    U.expect_error(function()
      T.prim_func("f", {A = T.Buffer({4}, "float32")}, function(A, B) end)
    end, "1 parameter declarations but the body takes 2 parameters")
    U.expect_error(function()
      T.prim_func("f", {A = T.Buffer({4}, "float32")}, function(A)
        for i in T.serial(4) do
          T.block("b", function() local v = T.axis.remap("S", {3}) end)
        end
      end)
    end, "not the variable of an enclosing loop")
    U.expect_error(function()
      T.prim_func("f", {A = T.Buffer({4}, "float32")}, function(A)
        for i in T.serial(4) do
          if i then break end
        end
      end)
    end, "a scope was left early")
  end)

  it("escapes names, keys and strings, so loading a printed function never runs other code", function()
    local te = tir.te
    local A = te.placeholder({4}, "float32", "A")
    local evil = 'x", function() end) error("ran") T.block("y'
    local B = te.compute({4}, function(i) return A[{i}] + 1 end, evil)
    local f = te.create_prim_func({A, B}, 'f" .. error("ran") .. "\nline2')
    local s = tir.Schedule(f)
    s:annotate(s:get_block(evil), 'k"] = 1, [error("ran") or "z', "v\1w")
    local g = tir.script.parse(tostring(s.mod))
    assert.is_true((tir.structural_equal(s.mod, g)))
    assert.are.equal(evil, s:get(s:get_block(evil)).name)
    s:bind(s:get_loops(s:get_block(evil)), "threadIdx.x")
    local h = tir.Schedule(te.create_prim_func({A, B}, "k(){} __global__ void evil"))
    h:bind(h:get_loops(h:get_block(evil)), "threadIdx.x")
    local src = tir.build(h.mod, "cuda", {compile = false}):get_source("cuda")
    assert.matches("void __launch_bounds__%(4%) k_______global___void_evil_kernel%(", src)
  end)
end)
