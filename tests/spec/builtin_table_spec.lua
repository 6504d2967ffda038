-- builtin_table_spec.lua -- the core's tables (builtins, storage scopes, tensor-core
-- configurations) as the passes and the docs see them.
local tir = require("tir")
local U = require("spec_util")

local function read(path)
  local f = assert(io.open(path, "r"))
  local s = f:read("a")
  f:close()
  return s
end

describe("the builtin registry (include/tir/builtins.def)", function()
  it("has a row in docs/BUILTINS.md for every builtin", function()
    local doc = read((tir.core.source_dir or ".") .. "/docs/BUILTINS.md")
    local rows = {}
    for line in doc:gmatch("[^\n]+") do
      if line:match("^| `") then
        local first = line:match("^|([^|]*)|")
        for op in first:gmatch("`([^`]+)`") do rows[op] = true end
      end
    end
    local missing = {}
    for _, b in ipairs(tir.core.builtins()) do
      if not rows[b.op] then missing[#missing + 1] = b.op end
    end
    assert.are.same({}, missing)
  end)

  it("carries the attributes the passes query", function()
    local by = {}
    for _, b in ipairs(tir.core.builtins()) do by[b.op] = b end
    assert.is_true(by.ptx_wait_group.async_wait)
    assert.is_false(by.ptx_commit_group.async_wait)
    assert.is_true(by.mma_sync.warp and by.wmma_load.warp and by.mma_ldmatrix.warp)
    assert.is_false(by.ptx_cp_async.warp)
    assert.are.same({0}, by.ptx_cp_async.writes)
    assert.are.same({4}, by.wmma_store.writes)
    assert.are.same({2}, by.mma_ldmatrix.writes)
    assert.are.same({1}, by.mma_store.writes) -- the destination, not the accumulator it reads
    assert.is_true(by.exp.float_math)
    assert.is_false(by.abs.float_math)
    for _, b in ipairs(tir.core.builtins()) do
      assert.is_string(b.doc)
      assert.is_true(b.min_args >= 0 and (b.max_args == -1 or b.max_args >= b.min_args), b.op)
    end
  end)

  it("thread_sync puts a barrier between an mma_store to shared memory and other threads' reads", function()
    -- mma_store writes its destination (argument 2): a later read of that shared tile by other
    -- lanes needs the barrier
    local T = tir.script
    local f = T.prim_func("st", {A = T.Buffer({256}, "float32")}, function(A)
      local tx = T.launch_thread("threadIdx.x", 32)
      local W = T.allocate({256}, "float32", "warp")
      local S = T.allocate({256}, "float32", "shared")
      T.evaluate(T.call("void", "mma_fill", T.address_of(W[{0}]), T.float32(0)))
      T.evaluate(T.call("void", "mma_store", T.address_of(W[{0}]), T.address_of(S[{0}]), 16))
      for i in T.serial(8) do A[{tx * 8 + i}] = S[{(tx * 8 + i + 1) % 256}] end
    end)
    local out = tir.core.run_pass("thread_sync", f)
    assert.matches("tvm_storage_sync", tostring(out))
  end)
end)

describe("the codegen reads the registry", function()
  it("refuses a tensor-core builtin with the wrong number of arguments, with the table's arity and doc", function()
    local T = tir.script
    local f = T.prim_func("bad", {A = T.Buffer({256}, "float32")}, function(A)
      local tx = T.launch_thread("threadIdx.x", 32)
      local W = T.allocate({256}, "float32", "warp")
      T.evaluate(T.call("void", "mma_fill", T.address_of(W[{0}])))
    end)
    U.expect_error(function() tir.build(f, "cuda", {compile = false}) end,
      "mma_fill takes 2 arguments (each lane's accumulator elements = value), not 1")
  end)
end)

describe("storage scopes (include/tir/scope.h)", function()
  it("lists the valid scopes once, for every primitive's message", function()
    for _, s in ipairs({"global", "shared", "shared.dyn", "local", "warp", "wmma.matrix_a", "wmma.matrix_b", "wmma.accumulator",
                        "m16n8k16.matrixA", "m16n8k32.matrixC"}) do
      assert.is_true(tir.core.scope_valid(s), s)
    end
    for _, s in ipairs({"", "register", "wmma.foo", "shared.static", "m16n8k.matrixA", "test_scope"}) do
      assert.is_false(tir.core.scope_valid(s), s)
    end
    local list = tir.core.scope_list()
    local f = U.matmul(32, 32, 32)
    for _, prim in ipairs({"cache_read", "cache_write", "set_scope"}) do
      local sch = tir.Schedule(f)
      U.expect_error(function()
        if prim == "cache_read" then sch:cache_read("C", 0, "bogus")
        elseif prim == "cache_write" then sch:cache_write("C", 0, "bogus")
        else sch:set_scope("C", 0, "bogus") end
      end, prim, "invalid storage scope 'bogus' (" .. list .. ")")
    end
  end)
end)

describe("the tensor-core instruction table (include/tir/mma.h)", function()
  it("has the mma.sync and wmma rows with their shapes, dtypes and registers", function()
    local by = {}
    for _, r in ipairs(tir.core.mma_configs()) do by[r.family .. ":" .. r.name] = r end
    local r = by["mma:m16n8k16.f16.f16.f32"]
    assert.are.same({16, 8, 16, "float16", "float32", 4, 2, 4, 80, 16, 16},
      {r.m, r.n, r.k, r.a, r.c, r.regs_a, r.regs_b, r.regs_c, r.min_sm, r.tile_m, r.tile_n})
    assert.truthy(by["mma:m16n8k16.bf16.bf16.f32"])
    assert.truthy(by["wmma:m16n16k16.f16.f16.f32"])
  end)
end)
