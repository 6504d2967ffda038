-- xthread_spec.lua -- cross-thread reductions (a reduction loop bound to threadIdx, lowered by
-- lower_cross_thread_reduction.c as TVM's LowerCrossThreadReduction + LowerThreadAllreduce)
-- and the warp-shuffle builtins (ptx_shfl_sync_*, PTX ISA 9.7.8.6).  The lowered kernels run
-- in the warp-accurate simulator and must match the interpreter of the unlowered function:
-- bit-exact for int32, within a tolerance for float sums (the tree adds in another order).
local tir = require("tir")
local T = tir.script
local te = tir.te
local U = require("spec_util")

local asan = os.getenv("ASAN_OPTIONS") ~= nil
local nvrtc_ok = tir.core.nvrtc_available()

local W = require("xthread_workloads")
local row_reduce = W.row_reduce
local schedule = W.bind_rows

local function simulate(f, sch, opts)
  local mod = tir.build(sch.mod, "cuda", {compile = false})
  local o = {reference = f}
  for k, v in pairs(opts or {}) do o[k] = v end
  local rep = tir.simulate(mod, tir.testing.random_args(f, 11), o)
  assert.are.equal(0, rep.n_issues)
  assert.are.equal(0, rep.races)
  return rep, mod
end

local function lowered_text(sch) return tostring(tir.lower(sch.mod)) end

describe("cross-thread reduction", function()
  local counts = asan and {32, 48, 128, 1024} or {16, 32, 48, 64, 96, 128, 256, 1024}
  for _, n in ipairs(counts) do
    it(("sums int32 rows bit-exactly with %d threads"):format(n), function()
      local f = row_reduce(3, 1000, "int32", "sum")
      local sch = schedule(f, n)
      simulate(f, sch)
      local text = lowered_text(sch)
      local warp = n % 32 == 0 or 32 % n == 0
      assert.are.equal(warp, text:find("ptx_shfl_sync_bfly", 1, true) ~= nil, text)
      if n > 32 or not warp then assert.truthy(text:find('"shared"', 1, true), text) end
    end)
  end
  for _, n in ipairs({32, 48, 256}) do
    it(("sums float32 rows within tolerance, max and min exactly, with %d threads"):format(n), function()
      local f = row_reduce(2, 777, "float32", "sum")
      simulate(f, schedule(f, n), {rtol = 1e-5, atol = 1e-5})
      for _, op in ipairs({"max", "min"}) do
        local g = row_reduce(2, 777, "float32", op)
        simulate(g, schedule(g, n))
      end
    end)
  end
  it("reduces int64 and float64 with warp shuffles", function()
    for _, dt in ipairs({"int64", "float64"}) do
      local f = row_reduce(2, 300, dt, "sum")
      local sch = schedule(f, 64)
      simulate(f, sch, dt == "float64" and {rtol = 1e-12} or nil)
      assert.truthy(lowered_text(sch):find("ptx_shfl_sync_bfly", 1, true))
    end
  end)
  it("keeps the groups of threadIdx.y apart (several rows per CTA)", function()
    for _, cfg in ipairs({{32, 4}, {8, 4}, {64, 2}, {48, 3}, {128, 8}}) do
      local f = row_reduce(10, 200, "int32", "sum") -- 10 rows: the last CTA's extra rows are predicated off
      simulate(f, schedule(f, cfg[1], cfg[2]))
    end
  end)
  it("reduces over threadIdx.x and threadIdx.y together (tree in shared memory)", function()
    local f = row_reduce(3, 500, "int32", "max")
    local sch = tir.Schedule(f)
    local i, k = sch:get_loops("B")
    sch:bind(i, "blockIdx.x")
    local _, ky, kx = sch:split(k, {nil, 4, 32})
    sch:bind(ky, "threadIdx.y")
    sch:bind(kx, "threadIdx.x")
    simulate(f, sch)
    local text = lowered_text(sch)
    assert.is_nil(text:find("ptx_shfl", 1, true))
  end)
  it("whole reduction on threads (no in-thread loop) and a non-identity init", function()
    local f = T.prim_func("main", {A = T.Buffer({4, 64}, "int32"), B = T.Buffer({4}, "int32")}, function(A, B)
      for i, k in T.grid(4, 64) do
        T.block("B", function()
          local vi, vk = T.axis.remap("SR", {i, k})
          T.init(function() B[{vi}] = T.int32(5) end)
          B[{vi}] = B[{vi}] + A[{vi, vk}]
        end)
      end
    end)
    local sch = tir.Schedule(f)
    local i, k = sch:get_loops("B")
    sch:bind(i, "blockIdx.x")
    sch:bind(k, "threadIdx.x")
    simulate(f, sch)
    local text = lowered_text(sch)
    assert.truthy(text:find("B[{blockIdx_x}] = cross_thread_B[{0}] + 5", 1, true), text)
  end)
  it("softmax-like: a row max, then the sum of exp(A - max), in one kernel", function()
    for _, n in ipairs({128, 48}) do
      local f, sch = W.softmax_like(3, 1000, n)
      simulate(f, sch, {rtol = 1e-5})
    end
  end)
  it("writes back from every thread when the output is local", function()
    local M, N = 2, 256
    local A = te.placeholder({M, N}, "float32", "A")
    local k = te.reduce_axis({0, N}, "k")
    local B = te.compute({M}, function(i) return te.sum(A[{i, k}], {k}) end, "B")
    local C = te.compute({M}, function(i) return B[{i}] * 2.0 end, "C")
    local f = te.create_prim_func({A, C})
    local sch = tir.Schedule(f)
    local i = sch:get_loops("C")
    sch:bind(i, "blockIdx.x")
    sch:compute_at(sch:get_block("B"), i)
    sch:set_scope("B", 0, "local")
    local _, kk = sch:get_loops("B")
    local _, ki = sch:split(kk, {nil, 64})
    sch:bind(ki, "threadIdx.x")
    simulate(f, sch, {rtol = 1e-5})
    local text = lowered_text(sch)
    assert.is_nil(text:find("T.eq(threadIdx_x, 0)", 1, true), text)
  end)
  if nvrtc_ok then
    it("emits shfl.sync in the PTX", function()
      local f = row_reduce(4, 1000, "float32", "sum")
      local mod = tir.build(schedule(f, 256).mod, "cuda")
      assert.truthy(mod:get_source("cuda"):find("__shfl_xor_sync", 1, true))
      assert.truthy(mod:get_source("ptx"):find("shfl.sync.bfly.b32", 1, true))
      assert.truthy(mod:get_source("ptx"):find("shfl.sync.idx.b32", 1, true))
    end)
  end
  it("runs in the interpreter before lowering as a plain reduction", function()
    local f = row_reduce(3, 100, "int32", "sum")
    U.assert_equiv(f, schedule(f, 32).mod)
  end)
  it("refuses loops and bodies it cannot lower, naming the block", function()
    -- a spatial loop inside the reduction loops
    local f = T.prim_func("main", {A = T.Buffer({4, 64, 8}, "float32"), B = T.Buffer({4, 8}, "float32")}, function(A, B)
      for i, k, j in T.grid(4, 64, 8) do
        T.block("B", function()
          local vi, vk, vj = T.axis.remap("SRS", {i, k, j})
          T.init(function() B[{vi, vj}] = T.float32(0) end)
          B[{vi, vj}] = B[{vi, vj}] + A[{vi, vk, vj}]
        end)
      end
    end)
    local sch = tir.Schedule(f)
    local i, k = sch:get_loops("B")
    sch:bind(i, "blockIdx.x")
    sch:bind(k, "threadIdx.x")
    U.expect_error(function() tir.lower(sch.mod) end, "lower_cross_thread_reduction", "block 'B'", "not the innermost loops")
    -- the kernel uses threadIdx.y elsewhere
    local A = te.placeholder({4, 64}, "float32", "A")
    local kk = te.reduce_axis({0, 64}, "k")
    local B = te.compute({4}, function(x) return te.sum(A[{x, kk}], {kk}) end, "B")
    local C = te.compute({4, 4}, function(x, y) return B[{x}] + 1.0 end, "C")
    local g = te.create_prim_func({A, C})
    local s2 = tir.Schedule(g)
    local ci, cj = s2:get_loops("C")
    s2:bind(ci, "blockIdx.x")
    s2:bind(cj, "threadIdx.y")
    s2:compute_at(s2:get_block("B"), ci)
    s2:set_scope("B", 0, "shared")
    local _, bk = s2:get_loops("B")
    s2:bind(bk, "threadIdx.x")
    U.expect_error(function() tir.lower(s2.mod) end, "lower_cross_thread_reduction", "threadIdx.y", "every thread of the kernel")
  end)
end)

-- ---------------------------------------------------------------------------------------
-- the shuffle builtins by themselves: one warp, each mode, widths, against values computed here

local function shfl_kernel(op, b, width, n_threads, mask)
  n_threads = n_threads or 32
  mask = mask or 0xffffffff
  return T.prim_func("main", {A = T.Buffer({n_threads}, "int32"), B = T.Buffer({n_threads}, "int32")}, function(A, B)
    for tx in T.thread_binding(n_threads, "threadIdx.x") do
      T.block("S", function()
        local v = T.axis.remap("S", {tx})
        B[{v}] = T.call("int32", op, T.uint32(mask), A[{v}], b, width)
      end)
    end
  end)
end

-- the source lane of each CUDA __shfl_*_sync, for width w (CUDA C++ Programming Guide)
local function expected(op, lane, b, w)
  local base = lane - lane % w
  if op == "ptx_shfl_sync_idx" then return base + b % w end
  if op == "ptx_shfl_sync_bfly" then
    local j = lane ~ b
    return (j < base + w) and j or lane
  end
  if op == "ptx_shfl_sync_up" then return (lane % w >= b) and lane - b or lane end
  return (lane % w + b < w) and lane + b or lane
end

describe("warp shuffle builtins (ptx_shfl_sync_*)", function()
  it("match CUDA's lane rules for every mode and width", function()
    for _, op in ipairs({"ptx_shfl_sync_idx", "ptx_shfl_sync_bfly", "ptx_shfl_sync_up", "ptx_shfl_sync_down"}) do
      for _, w in ipairs({32, 16, 8, 4, 2}) do
        for _, b in ipairs({0, 1, 3, 5, 16}) do
          local f = shfl_kernel(op, b, w)
          local mod = tir.build(f, "cuda", {compile = false})
          local vals = {}
          for l = 1, 32 do vals[l] = 100 + l * 7 end
          local a = tir.nd.array(vals, "int32")
          local out = tir.nd.empty({32}, "int32")
          local rep = tir.simulate(mod, {a, out})
          assert.are.equal(0, rep.n_issues)
          local got = out:to_table()
          for l = 0, 31 do
            local want = vals[expected(op, l, b, w) + 1]
            if got[l + 1] ~= want then
              error(("%s b=%d width=%d lane %d: got %d, want %d"):format(op, b, w, l, got[l + 1], want))
            end
          end
        end
      end
    end
  end)
  it("are refused by the interpreter, which points to tir.simulate", function()
    local f = shfl_kernel("ptx_shfl_sync_bfly", 1, 32)
    local args = tir.testing.random_args(f, 1)
    U.expect_error(function() tir.interpret(f, args) end, "ptx_shfl_sync_bfly", "tir.simulate")
  end)
  it("report a membermask naming lanes that do not execute the shuffle", function()
    -- 16 threads, full mask: lanes 16..31 do not exist
    local f = shfl_kernel("ptx_shfl_sync_bfly", 1, 32, 16)
    local mod = tir.build(f, "cuda", {compile = false})
    U.expect_error(function() tir.simulate(mod, tir.testing.random_args(f, 2)) end, "shfl.sync", "membermask 0xffffffff", "do not execute it together")
    -- with the mask of the 16 lanes it is fine
    local g = shfl_kernel("ptx_shfl_sync_bfly", 1, 16, 16, 0xffff)
    local rep = tir.simulate(tir.build(g, "cuda", {compile = false}), tir.testing.random_args(g, 2))
    assert.are.equal(0, rep.n_issues)
  end)
  if nvrtc_ok then
    it("compile to shfl.sync with every mode", function()
      for mode, op in pairs({idx = "ptx_shfl_sync_idx", bfly = "ptx_shfl_sync_bfly", up = "ptx_shfl_sync_up", down = "ptx_shfl_sync_down"}) do
        local ptx = tir.build(shfl_kernel(op, 1, 32), "cuda"):get_source("ptx")
        assert.truthy(ptx:find("shfl.sync." .. mode .. ".b32", 1, true), mode)
      end
    end)
  end
end)
