-- Port of TVM tests/python/s_tir/schedule/test_tir_schedule_cache_read_write.py
-- (cache_read, cache_write).  128 -> 16 (tiles 8x8 of 16x16 -> 2x2 of 8x8; the predicate
-- case 120 of 16x8 -> 15 of 4x4).  Not ported: cache_inplace, reindex_cache_read/write
-- (no such primitives); the tvm_load_matrix_sync/tvm_access_ptr parts of opaque_access;
-- the symbolic blocked matmul (symbolic split, see the awaits case).
local tir = require("tir")
local V = require("tvm.tvm_util")
local T = V.T
local F32 = "float32"
local N = 16
local function awaits(topic, fn) return function() V.awaits(function(m) pending(m) end, topic, fn) end end

-- an elementwise 2-D block "name": out[vi, vj] = f(in...) over n x m
local function ew(name, n, m, body)
  for i, j in T.grid(n, m) do
    T.block(name, function()
      local vi, vj = T.axis.remap("SS", {i, j})
      body(vi, vj)
    end)
  end
end

local function copy(name, dst, src, n, m)
  ew(name, n or N, m or N, function(vi, vj) dst[{vi, vj}] = src[{vi, vj}] end)
end

local function elementwise()
  return T.prim_func("main", {A = T.Buffer({N, N}, F32), C = T.Buffer({N, N}, F32)}, function(A, C)
    local B = T.alloc_buffer({N, N}, F32)
    ew("B", N, N, function(vi, vj) B[{vi, vj}] = A[{vi, vj}] * 2.0 end)
    ew("C", N, N, function(vi, vj) C[{vi, vj}] = B[{vi, vj}] + 1.0 end)
  end)
end

-- A is produced in 8x8 tiles under a block "scope"; C reads all of A after
local function access_under_scope()
  return T.prim_func("main", {B = T.Buffer({N, N}, F32), C = T.Buffer({N, N}, F32)}, function(B, C)
    local A = T.alloc_buffer({N, N}, F32)
    for i0, j0 in T.grid(2, 2) do
      T.block("scope", function()
        local i, j = T.axis.remap("SS", {i0, j0})
        for x, y in T.grid(8, 8) do
          T.block("A", function()
            local vi = T.axis.spatial(N, i * 8 + x)
            local vj = T.axis.spatial(N, j * 8 + y)
            A[{vi, vj}] = T.float32(1)
          end)
        end
        for x, y in T.grid(8, 8) do
          T.block("B", function()
            local vi = T.axis.spatial(N, i * 8 + x)
            local vj = T.axis.spatial(N, j * 8 + y)
            B[{vi, vj}] = A[{vi, vj}] + 1.0
          end)
        end
      end)
    end
    ew("C", N, N, function(vi, vj) C[{vi, vj}] = A[{vi, vj}] * 2.0 end)
  end)
end

-- A produced in 4 chunks of 4 with B consuming each chunk; C reads A after (TVM: 8 x 16)
local function func_multi_consumer(out)
  return T.prim_func("main", {Out = T.Buffer({N}, F32)}, function(Out)
    local A = T.alloc_buffer({N}, F32)
    local B = T.alloc_buffer({N}, F32)
    local C = T.alloc_buffer({N}, F32)
    for i in T.serial(4) do
      for j in T.serial(4) do
        T.block("A", function() local vi = T.axis.spatial(N, i * 4 + j) A[{vi}] = T.float32(1) end)
      end
      for j in T.serial(4) do
        T.block("B", function() local vi = T.axis.spatial(N, i * 4 + j) B[{vi}] = A[{vi}] + 1.0 end)
      end
    end
    for i in T.serial(N) do
      T.block("C", function() local vi = T.axis.spatial(N, i) C[{vi}] = A[{vi}] end)
    end
    -- TVM's function has no outputs; here the results land in Out so the interpreter sees them
    for i in T.serial(N) do
      T.block("out", function() local vi = T.axis.spatial(N, i) Out[{vi}] = B[{vi}] + C[{vi}] end)
    end
  end)
end

local function func_multi_producer()
  return T.prim_func("main", {Out = T.Buffer({N}, F32)}, function(Out)
    local A = T.alloc_buffer({N}, F32)
    for i in T.serial(N) do T.block("A0", function() local vi = T.axis.spatial(N, i) A[{vi}] = T.float32(1) end) end
    for i in T.serial(N) do T.block("A1", function() local vi = T.axis.spatial(N, i) A[{vi}] = T.float32(2) end) end
    for i in T.serial(N) do T.block("B", function() local vi = T.axis.spatial(N, i) Out[{vi}] = A[{vi}] end) end
  end)
end

local function func_with_block_predicate()
  return T.prim_func("main", {Out = T.Buffer({15}, F32)}, function(Out)
    local A = T.alloc_buffer({15}, F32)
    for i, j in T.grid(4, 4) do
      T.block("producer", function()
        T.where(T.lt(i * 4 + j, 15))
        local ax = T.axis.spatial(15, i * 4 + j)
        A[{ax}] = T.float32(0)
      end)
    end
    for i, j in T.grid(4, 4) do
      T.block("consumer", function()
        T.where(T.lt(i * 4 + j, 15))
        local ax = T.axis.spatial(15, i * 4 + j)
        Out[{ax}] = A[{ax}] + 1.0
      end)
    end
  end)
end

local function names_in_order(sch)
  local out = {}
  local function walk(s)
    if s == nil then return end
    if s.kind == "SeqStmt" then for i = 1, #s.seq do walk(s.seq[i]) end
    elseif s.kind == "For" then walk(s.body)
    elseif s.kind == "BlockRealize" then
      if s.block.name ~= "root" then out[#out + 1] = s.block.name end
      walk(s.block.body)
    end
  end
  walk(sch.mod.body)
  return out
end

local function block_of(sch, name) return sch:get(sch:get_block(name)) end

describe("test_tir_schedule_cache_read_write", function()
  it("test_cache_read_elementwise", function()
    local expected = T.prim_func("main", {A = T.Buffer({N, N}, F32), C = T.Buffer({N, N}, F32)}, function(A, C)
      local B = T.alloc_buffer({N, N}, F32)
      local A_global = T.alloc_buffer({N, N}, F32, {name = "A_global"})
      local B_local = T.alloc_buffer({N, N}, F32, {scope = "local", name = "B_local"})
      copy("A_global", A_global, A)
      ew("B", N, N, function(vi, vj) B[{vi, vj}] = A_global[{vi, vj}] * 2.0 end)
      copy("B_local", B_local, B)
      ew("C", N, N, function(vi, vj) C[{vi, vj}] = B_local[{vi, vj}] + 1.0 end)
    end)
    local before = elementwise()
    local sch = tir.Schedule(before)
    local block_b, block_c = sch:get_block("B"), sch:get_block("C")
    local cached_a = sch:cache_read(block_b, 0, "global")
    local cached_b = sch:cache_read(block_c, 0, "local")
    assert.are.equal(sch:get(cached_a), block_of(sch, "A_global"))
    assert.are.equal(sch:get(cached_b), block_of(sch, "B_local"))
    assert.are.equal(sch:get(block_b), block_of(sch, "B"))
    assert.are.equal(sch:get(block_c), block_of(sch, "C"))
    assert.is_true(V.check(sch, before, expected, {exact = true}))
  end)

  it("test_cache_read_elementwise (buffers by name)", function()
    local before = elementwise()
    local sch = tir.Schedule(before)
    sch:cache_read("B", "A", "global")
    sch:cache_read("C", "B", "local")
    V.check(sch, before)
  end)

  it("test_cache_read_under_scope", function()
    local before = access_under_scope()
    local sch = tir.Schedule(before)
    sch:cache_read("B", 0, "local")
    sch:cache_read("C", 0, "global")
    V.check(sch, before)
    -- A_local is allocated in "scope" and filled with the 8x8 tile after A; A_global after
    -- the scope.  TVM allocates A_local as the tile ((16, 16) of 128); tirlua allocates the
    -- buffer's full shape and indexes it globally: compact_buffer_allocation shrinks it to
    -- the tile when lowering (a deliberate difference)
    assert.are.same({"scope", "A", "A_local", "B", "A_global", "C"}, names_in_order(sch))
    local scope = block_of(sch, "scope")
    assert.are.equal(1, #scope.alloc_buffers)
    assert.are.equal("local", scope.alloc_buffers[1].scope)
    assert.are.same({8, 8}, V.extents(sch, sch:get_block("A_local")))
    assert.are.equal("A_local", block_of(sch, "B").reads[1].buffer.name)
    assert.are.equal("A_global", block_of(sch, "C").reads[1].buffer.name)
  end)

  it("test_cache_read_opaque_access", function()
    -- the load_store part of TVM's opaque_access (fp16)
    local before = T.prim_func("main", {A = T.Buffer({N, N}, "float16"), D = T.Buffer({N, N}, "float16")}, function(A, D)
      copy("load_store", D, A)
    end)
    local sch = tir.Schedule(before)
    sch:cache_read("load_store", 0, "global")
    V.check(sch, before)
    assert.are.same({"A_global", "load_store"}, names_in_order(sch))
    assert.are.equal("float16", block_of(sch, "A_global").writes[1].buffer.dtype)
  end)

  it("test_cache_read_location", function()
    local before = func_multi_consumer()
    -- all consumers: the copy right after A's last writer, inside the i loop
    local sch = tir.Schedule(before)
    sch:cache_read("B", 0, "global")
    V.check(sch, before)
    assert.are.same({"A", "A_global", "B", "C", "out"}, names_in_order(sch))
    assert.are.equal("A_global", block_of(sch, "C").reads[1].buffer.name)
    assert.are.same({4, 4}, V.extents(sch, sch:get_block("A_global")))
    -- only C: the copy of all of A, right before C
    sch = tir.Schedule(before)
    sch:cache_read("B", 0, "global", {"C"})
    V.check(sch, before)
    assert.are.same({"A", "B", "A_global", "C", "out"}, names_in_order(sch))
    assert.are.equal("A", block_of(sch, "B").reads[1].buffer.name)
    assert.are.same({N}, V.extents(sch, sch:get_block("A_global")))
    -- B and C: as unspecified
    sch = tir.Schedule(before)
    sch:cache_read("B", 0, "global", {"B", "C"})
    V.check(sch, before)
    assert.are.same({"A", "A_global", "B", "C", "out"}, names_in_order(sch))
  end)

  it("test_continuous_cache_read", function()
    local before = elementwise()
    local sch = tir.Schedule(before)
    local c = sch:get_block("C")
    sch:cache_read(c, 0, "shared")
    sch:cache_read(c, 0, "local")
    V.check(sch, before)
    assert.are.same({"B", "B_shared", "B_shared_local", "C"}, names_in_order(sch))
    -- TVM names the second copy B_local; tirlua names a cache after the buffer it copies
    assert.are.equal("local", block_of(sch, "C").reads[1].buffer.scope)
  end)

  it("test_cache_read_with_block_predicate", function()
    local before = func_with_block_predicate()
    local sch = tir.Schedule(before)
    sch:cache_read("consumer", 0, "shared")
    V.check(sch, before)
    assert.are.same({"producer", "A_shared", "consumer"}, names_in_order(sch))
    -- one loop over the 15 elements, no predicate (TVM: for ax0 in T.serial(120))
    assert.are.same({15}, V.extents(sch, sch:get_block("A_shared")))
  end)

  it("test_cache_read_non_int32_shape", function()
    local i64 = function(v) return tir.const(v, "int64") end
    local before = T.prim_func("main", {A = T.Buffer({i64(N), i64(N)}, F32), C = T.Buffer({i64(N), i64(N)}, F32)}, function(A, C)
      local B = T.alloc_buffer({i64(N), i64(N)}, F32)
      ew("B", N, N, function(vi, vj) B[{vi, vj}] = A[{vi, vj}] * 2.0 end)
      ew("C", N, N, function(vi, vj) C[{vi, vj}] = B[{vi, vj}] + 1.0 end)
    end)
    local sch = tir.Schedule(before)
    sch:cache_read("B", 0, "global")
    V.check(sch, before)
    local cache = block_of(sch, "A_global").writes[1].buffer
    assert.are.equal("int64", cache.shape[1].dtype)
  end)

  it("test_cache_read_nested_buffer_access", function()
    local i64 = function(v) return tir.const(v, "int64") end
    local before = T.prim_func("main", {A = T.Buffer({i64(7), i64(16)}, F32), B = T.Buffer({i64(1)}, "int32"), C = T.Buffer({i64(1), i64(16)}, F32)},
      function(A, B, C)
        for a0, a1 in T.grid(i64(1), i64(16)) do
          T.block("C", function()
            local v0, v1 = T.axis.remap("SS", {a0, a1})
            C[{v0, v1}] = A[{T.cast("int64", B[{v0}]), v1}]
          end)
        end
      end)
    local sch = tir.Schedule(before)
    sch:cache_read("C", 1, "global")
    local function args(seed)
      local idx = tir.nd.array({3}, "int32")
      return {tir.nd.random({7, 16}, F32, tir.nd.cpu(), {seed = seed}), idx, tir.nd.empty({1, 16}, F32)}
    end
    V.check(sch, before, nil, {args = args})
    assert.are.equal("B_global", block_of(sch, "C").reads[2].buffer.name)
  end)

  it("test_cache_read_fail_multi_producer", function()
    local sch = tir.Schedule(func_multi_producer())
    V.schedule_error(function() sch:cache_read("B", 0, "global") end, "cache_read")
  end)

  it("test_cache_read_fail_index_out_of_bound", function()
    local sch = tir.Schedule(elementwise())
    V.schedule_error(function() sch:cache_read("B", 1, "global") end, "cache_read")
  end)

  it("test_cache_read_fail_invalid_storage_scope", function()
    local sch = tir.Schedule(elementwise())
    V.schedule_error(function() sch:cache_read("B", 0, "test_scope") end, "cache_read", "test_scope")
  end)

  it("test_inplace_cache_read", function()
    -- TVM's inplace_func also has an ext_call block using data_1d's pointer; here the
    -- in-place part: a consumer given explicitly that reads the buffer it is named after
    local before = T.prim_func("main", {data_io = T.Buffer({64}, "int32")}, function(data_io)
      local d1 = T.alloc_buffer({64}, "int32", {name = "data_1d"})
      for i in T.serial(64) do T.block("copy_in", function() local v = T.axis.remap("S", {i}) d1[{v}] = data_io[{v}] end) end
      for i in T.serial(64) do T.block("copy_out", function() local v = T.axis.remap("S", {i}) data_io[{v}] = d1[{v}] + 1 end) end
    end)
    local sch = tir.Schedule(before)
    local block = sch:get_block("copy_in")
    sch:cache_read(block, 0, "local", {block})
    V.check(sch, before)
    assert.are.same({"data_io_local", "copy_in", "copy_out"}, names_in_order(sch))
  end)

  it("test_cache_read_nested_seq", function()
    local before = T.prim_func("main", {B = T.Buffer({N, N}, F32), C = T.Buffer({N, N}, F32)}, function(B, C)
      local A = T.alloc_buffer({N, N}, F32)
      ew("A", N, N, function(vi, vj) A[{vi, vj}] = T.float32(2) end)
      for i, j in T.grid(2, 2) do
        for x, y in T.grid(8, 8) do
          T.block("B0", function()
            local vi = T.axis.spatial(N, i * 8 + x)
            local vj = T.axis.spatial(N, j * 8 + y)
            B[{vi, vj}] = T.float32(1)
          end)
        end
        for x, y in T.grid(8, 8) do
          T.block("B1", function()
            local vi = T.axis.spatial(N, i * 8 + x)
            local vj = T.axis.spatial(N, j * 8 + y)
            B[{vi, vj}] = A[{vi, vj}] + B[{vi, vj}]
          end)
        end
      end
      ew("C", N, N, function(vi, vj) C[{vi, vj}] = A[{vi, vj}] * 2.0 end)
    end)
    local sch = tir.Schedule(before)
    local c = sch:get_block("C")
    sch:cache_read(c, 0, "global", {c})
    V.check(sch, before)
    assert.are.same({"A", "B0", "B1", "A_global", "C"}, names_in_order(sch))
  end)

  it("test_cache_write_elementwise", function()
    local before = elementwise()
    local sch = tir.Schedule(before)
    local block_b, block_c = sch:get_block("B"), sch:get_block("C")
    local cached_b = sch:cache_write(block_b, 0, "local")
    local cached_c = sch:cache_write("C", 0, "global")
    assert.are.equal(sch:get(cached_b), block_of(sch, "B_local"))
    assert.are.equal(sch:get(cached_c), block_of(sch, "C_global"))
    assert.are.equal(sch:get(block_b), block_of(sch, "B"))
    assert.are.equal(sch:get(block_c), block_of(sch, "C"))
    V.check(sch, before)
    -- B computes into B_local, copied to B; C computes into C_global, copied to C
    assert.are.same({"B", "B_local", "C", "C_global"}, names_in_order(sch))
    assert.are.equal("B_local", block_of(sch, "B").writes[1].buffer.name)
    assert.are.equal("local", block_of(sch, "B").writes[1].buffer.scope)
    assert.are.equal("C_global", block_of(sch, "C").writes[1].buffer.name)
  end)

  it("test_cache_write_under_scope", function()
    local before = access_under_scope()
    local sch = tir.Schedule(before)
    sch:cache_write("A", 0, "local")
    sch:cache_write("B", 0, "global")
    sch:cache_write(sch:get_block("scope"), 0, "global")
    V.check(sch, before)
    assert.are.same({"scope", "A", "A_local", "B", "B_global", "A_global", "C"}, names_in_order(sch))
    local scope = block_of(sch, "scope")
    assert.are.equal(2, #scope.alloc_buffers)
  end)

  it("test_cache_write_opaque_access", function()
    local before = T.prim_func("main", {A = T.Buffer({N, N}, "float16"), D = T.Buffer({N, N}, "float16")}, function(A, D)
      copy("load_store", D, A)
    end)
    local sch = tir.Schedule(before)
    sch:cache_write("load_store", 0, "global")
    V.check(sch, before)
    assert.are.same({"load_store", "D_global"}, names_in_order(sch))
  end)

  it("test_cache_write_location", function()
    local before = func_multi_consumer()
    local sch = tir.Schedule(before)
    sch:cache_write("A", 0, "global")
    V.check(sch, before)
    -- TVM: the write-back follows A inside the i loop, B and C read A
    assert.are.same({"A", "A_global", "B", "C", "out"}, names_in_order(sch))
  end)

  it("test_cache_write_location (consumer_blocks)", function()
    local before = func_multi_consumer()
    local sch = tir.Schedule(before)
    sch:cache_write("A", 0, "global", {"B"})
    V.check(sch, before)
    -- B reads the cache, C the original buffer: the write-back comes after the i loop
    assert.are.equal("A_global", block_of(sch, "B").reads[1].buffer.name)
    assert.are.equal("A", block_of(sch, "C").reads[1].buffer.name)
  end)

  it("test_continuous_cache_write", function()
    local before = elementwise()
    local sch = tir.Schedule(before)
    local b = sch:get_block("B")
    sch:cache_write(b, 0, "shared")
    sch:cache_write(b, 0, "local")
    V.check(sch, before)
    assert.are.equal(4, #names_in_order(sch))
    assert.are.equal("local", block_of(sch, "B").writes[1].buffer.scope)
  end)

  it("test_cache_write_with_block_predicate", function()
    local before = func_with_block_predicate()
    local sch = tir.Schedule(before)
    sch:cache_write("producer", 0, "shared")
    V.check(sch, before)
    assert.are.same({"producer", "A_shared", "consumer"}, names_in_order(sch))
    assert.are.same({15}, V.extents(sch, sch:get_block("A_shared")))
    sch = tir.Schedule(before)
    sch:cache_write("consumer", 0, "shared")
    V.check(sch, before)
    assert.are.same({"producer", "consumer", "Out_shared"}, names_in_order(sch))
    assert.are.same({15}, V.extents(sch, sch:get_block("Out_shared")))
  end)

  it("test_cache_write_fail_multi_producer", function()
    local sch = tir.Schedule(func_multi_producer())
    V.schedule_error(function() sch:cache_write("A0", 0, "global") end, "cache_write")
    V.schedule_error(function() sch:cache_write("A1", 0, "global") end, "cache_write")
  end)

  it("test_cache_write_fail_index_out_of_bound", function()
    local sch = tir.Schedule(elementwise())
    V.schedule_error(function() sch:cache_write("B", 1, "global") end, "cache_write")
  end)

  it("test_cache_write_fail_invalid_storage_scope", function()
    local sch = tir.Schedule(elementwise())
    V.schedule_error(function() sch:cache_write("B", 0, "test_scope") end, "cache_write", "test_scope")
  end)

  it("test_symbolic_matmul_blocked_cache_read", awaits("blockize of loops with symbolic ranges (tirlua's affine detection needs constant extents)", function()
    local n = tir.var("n")
    local te = V.te
    local A = te.placeholder({n, 4}, F32, "A")
    local B = te.placeholder({n, 4}, F32, "B")
    local k = te.reduce_axis({0, 4}, "k")
    local C = te.compute({n, n}, function(i, j) return te.sum(A[{i, k}] * B[{j, k}], {k}) end, "matmul")
    local sch = tir.Schedule(te.create_prim_func({A, B, C}))
    local i, j = sch:get_loops(sch:get_block("matmul"))
    local io, ii = sch:split(i, {nil, 32})
    local jo, ji = sch:split(j, {nil, 32})
    sch:reorder(io, jo, ii, ji)
    sch:blockize(ii)
    sch:cache_read("matmul", 0, "shared")
  end))

  local function nested_predicate(two)
    return T.prim_func("main", {A = T.Buffer({6, 12}, F32), C = T.Buffer(two and {6, 12} or {5, 10}, F32)}, function(A, C)
      for i, j in T.grid(6, 12) do
        T.block("compute", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          if two then
            T.block("left", function() T.where(T.lt(vi, 4)) C[{vi, vj}] = A[{vi, vj}] * 2.0 end)
            T.block("top", function() T.where(T.lt(vj, 8)) C[{vi, vj}] = A[{vi, vj}] * 3.0 end)
          else
            T.block("inner", function() T.where(T.And(T.lt(vi, 5), T.lt(vj, 10))) C[{vi, vj}] = A[{vi, vj}] * 2.0 end)
          end
        end)
      end
    end)
  end

  -- TVM's function: A (12, 24), C (10, 20); here (6, 12), (5, 10)
  it("test_cache_write_with_nested_block_predicate", function()
    local before = nested_predicate(false)
    local sch = tir.Schedule(before)
    sch:cache_write(sch:get_block("compute"), 0, "local")
    V.check(sch, before)
    local cache = block_of(sch, "C_local")
    assert.are.same({5, 10}, V.extents(sch, sch:get_block("C_local")))
    assert.is_not_nil(cache)
  end)

  it("test_cache_read_with_nested_block_predicate", awaits("cache regions under nested blocks' predicates (open: tirlua copies the whole 6 x 12, correct but larger)", function()
    local before = nested_predicate(false)
    local sch = tir.Schedule(before)
    sch:cache_read(sch:get_block("compute"), 0, "local")
    V.check(sch, before)
    -- the copy covers what the predicated inner block reads: 5 x 10 of A's 6 x 12
    assert.are.same({5, 10}, V.extents(sch, sch:get_block("A_local")))
  end))

  it("test_cache_write_sibling_nested_block_predicates_use_union", function()
    local before = nested_predicate(true)
    local sch = tir.Schedule(before)
    sch:cache_write(sch:get_block("compute"), 0, "local")
    -- compute declares C[vi, vj] but writes only where a predicate holds: the write-back
    -- copies the whole cache, so C's never-written elements (rows >= 4 and columns >= 8)
    -- receive uninitialized cache contents, as in TVM (the interpreter's allocations are
    -- NaN, which shows it).  The written elements must agree.
    local a = tir.nd.random({6, 12}, F32, tir.nd.cpu(), {seed = 3})
    local c1, c2 = tir.nd.random({6, 12}, F32, tir.nd.cpu(), {seed = 4}), nil
    c2 = c1:to(tir.nd.cpu())
    tir.interpret(before, {a, c1})
    tir.interpret(sch.mod, {a, c2})
    local t1, t2 = c1:to_table(), c2:to_table()
    for r = 1, 6 do
      for c = 1, 12 do
        if r <= 4 or c <= 8 then assert.are.equal(t1[r][c], t2[r][c]) else assert.is_true(t2[r][c] ~= t2[r][c]) end
      end
    end
    V.check_trace(sch, before)
    -- the union of rows < 4 and columns < 8 needs the whole 6 x 12
    local root = block_of(sch, "root")
    local shape
    for _, b in ipairs(root.alloc_buffers) do if b.name == "C_local" then shape = b.shape end end
    assert.are.same({"6", "12"}, {tostring(shape[1]), tostring(shape[2])})
  end)

  it("test_cache_read_sibling_nested_block_predicates_use_union", function()
    local before = nested_predicate(true)
    local sch = tir.Schedule(before)
    sch:cache_read(sch:get_block("compute"), 0, "local")
    V.check(sch, before)
    assert.are.same({6, 12}, V.extents(sch, sch:get_block("A_local")))
  end)
end)
