-- schedule_argmax_spec.lua -- two-buffer (argmax / argmin) reductions, written as TVM's
-- te.comm_reducer lowers them: one block with an init storing the index and the value, a
-- body of two lets (Select on the value comparison) and two stores.  The interpreter,
-- decompose_reduction, rfactor (TVM's multi-buffer rfactor), lowering and the CUDA codegen
-- are checked against a reference computed in Lua; one test per refusal.
local tir = require("tir")
local T = tir.script
local U = require("spec_util")

local M, N = 8, 24
local FMAX = 3.4028234663852886e+38

-- op "ge": argmax (first index of the largest value); "le": argmin
local function arg_reduce(op)
  return T.prim_func("main", {idx = T.Buffer({M, N}, "int32"), val = T.Buffer({M, N}, "float32"),
                              out_i = T.Buffer({M}, "int32"), out_v = T.Buffer({M}, "float32")},
    function(idx, val, out_i, out_v)
      for i, k in T.grid(M, N) do
        T.block("argmax", function()
          local vi, vk = T.axis.remap("SR", {i, k})
          T.init(function()
            out_i[{vi}] = -1
            out_v[{vi}] = T.float32(op == "ge" and -FMAX or FMAX)
          end)
          local keep = T[op](out_v[{vi}], val[{vi, vk}])
          local v0 = T.let("v_out_i", T.Select(keep, out_i[{vi}], idx[{vi, vk}]))
          local v1 = T.let("v_out_v", T.Select(keep, out_v[{vi}], val[{vi, vk}]))
          out_i[{vi}] = v0
          out_v[{vi}] = v1
        end)
      end
    end)
end

-- inputs: idx[i, k] = k, distinct random values (ties would make the reduction order matter)
local function inputs(seed)
  local idx = {}
  for i = 1, M do
    idx[i] = {}
    for k = 1, N do idx[i][k] = k - 1 end
  end
  return {tir.nd.array(idx, "int32"), tir.nd.random({M, N}, "float32", tir.nd.cpu(), {seed = seed}),
          tir.nd.empty({M}, "int32", tir.nd.cpu()), tir.nd.empty({M}, "float32", tir.nd.cpu())}
end

local function reference(args, op)
  local v = args[2]:to_table()
  local ri, rv = {}, {}
  for i = 1, M do
    local best, at = v[i][1], 0
    for k = 2, N do
      if (op == "ge" and v[i][k] > best) or (op == "le" and v[i][k] < best) then best, at = v[i][k], k - 1 end
    end
    ri[i], rv[i] = at, best
  end
  return ri, rv
end

-- the #gpu case's schedule: k split by 4, rfactor'ed (rows on blocks), the rf buffers reduced
-- by one thread per row
local function rf_blocks_threads(f)
  local sch = tir.Schedule(f)
  local _, k = sch:get_loops("argmax")
  local _, ki = sch:split(k, {nil, 4})
  local rf = sch:rfactor(ki, 1)
  sch:bind(sch:get_loops(rf), "blockIdx.x")
  sch:bind(sch:get_loops("argmax"), "threadIdx.x")
  return sch
end

local function check(f, op, lowered)
  for seed = 1, 3 do
    local args = inputs(seed)
    tir.interpret(lowered and tir.lower(f) or f, args)
    local ri, rv = reference(args, op)
    assert.are.same(ri, args[3]:to_table())
    local got = args[4]:to_table()
    for i = 1, M do assert.are.equal(rv[i], got[i]) end
  end
end

describe("argmax / argmin (two-buffer reductions)", function()
  it("interpret, lower and decompose_reduction as a reduction over both buffers", function()
    for _, op in ipairs({"ge", "le"}) do
      local f = arg_reduce(op)
      check(f, op)
      check(f, op, true)
      U.assert_roundtrip(f)
      local sch = tir.Schedule(f)
      local _, k = sch:get_loops("argmax")
      local init = sch:decompose_reduction("argmax", k)
      local ib = sch:get(init)
      assert.are.equal(2, #ib.writes)
      check(sch.mod, op)
      check(sch.mod, op, true)
    end
  end)

  it("rfactor into two rf buffers (TVM multi-buffer rfactor), then reduce them", function()
    for _, op in ipairs({"ge", "le"}) do
      for _, axis in ipairs({0, 1}) do
        local f = arg_reduce(op)
        local sch = tir.Schedule(f)
        local _, k = sch:get_loops("argmax")
        local _, ki = sch:split(k, {nil, 4})
        local rf = sch:rfactor(ki, axis)
        local s = tostring(sch.mod)
        local shape = axis == 0 and "{4, 8}" or "{8, 4}"
        assert.matches('local out_i_rf = T.alloc_buffer%(' .. shape .. ', "int32"%)', s)
        assert.matches('local out_v_rf = T.alloc_buffer%(' .. shape .. ', "float32"%)', s)
        local rb = sch:get(rf)
        assert.are.equal("argmax_rf", rb.name)
        assert.are.equal(2, #rb.writes)
        assert.is_not_nil(rb.init)
        check(sch.mod, op)
        check(sch.mod, op, true)
        local r = tir.Schedule(f):apply_trace(sch:trace())
        assert.is_true(tir.structural_equal(sch.mod, r.mod))
      end
    end
  end)

  it("rfactor of the whole reduction loop leaves plain stores in the rf block", function()
    local f = arg_reduce("ge")
    local sch = tir.Schedule(f)
    local _, k = sch:get_loops("argmax")
    local rf = sch:rfactor(k, 1)
    local rb = sch:get(rf)
    assert.is_nil(rb.init)
    assert.matches("out_i_rf%[{vi, vk}%] = idx%[{vi, vk}%]", tostring(sch.mod))
    check(sch.mod, "ge")
  end)

  it("binds the row loop to threads and generates CUDA C storing both buffers", function()
    local f = arg_reduce("ge")
    local sch = tir.Schedule(f)
    local i, k = sch:get_loops("argmax")
    local _, ki = sch:split(k, {nil, 4})
    local rf = sch:rfactor(ki, 1)
    local ri = sch:get_loops(rf)
    sch:bind(ri, "threadIdx.x")
    sch:bind(sch:get_loops("argmax"), "threadIdx.x")
    check(sch.mod, "ge")
    local src = tir.build(sch.mod, "cuda", {compile = false}):get_source("cuda")
    assert.matches("int v_out_i = ", src)
    assert.matches("float v_out_v = ", src)
    assert.matches("out_i%[", src)
  end)

  it("refuses to rfactor what is not TVM's argmax/argmin form", function()
    -- a strict comparison: not the registered pattern
    local g = T.prim_func("main", {val = T.Buffer({M, N}, "float32"), out_i = T.Buffer({M}, "int32"), out_v = T.Buffer({M}, "float32")},
      function(val, out_i, out_v)
        for i, k in T.grid(M, N) do
          T.block("B", function()
            local vi, vk = T.axis.remap("SR", {i, k})
            T.init(function() out_i[{vi}] = -1; out_v[{vi}] = T.float32(-FMAX) end)
            local keep = T.gt(out_v[{vi}], val[{vi, vk}])
            local v0 = T.let("v0", T.Select(keep, out_i[{vi}], vk))
            local v1 = T.let("v1", T.Select(keep, out_v[{vi}], val[{vi, vk}]))
            out_i[{vi}] = v0
            out_v[{vi}] = v1
          end)
        end
      end)
    local s1 = tir.Schedule(g)
    U.expect_error(function() s1:rfactor(select(2, s1:get_loops("B")), 0) end, "ScheduleError in rfactor",
                   "must each be one store to its single output, or be TVM's two-buffer argmax/argmin")
    -- the wrong identity for the index
    local h = T.prim_func("main", {val = T.Buffer({M, N}, "float32"), out_i = T.Buffer({M}, "int32"), out_v = T.Buffer({M}, "float32")},
      function(val, out_i, out_v)
        for i, k in T.grid(M, N) do
          T.block("B", function()
            local vi, vk = T.axis.remap("SR", {i, k})
            T.init(function() out_i[{vi}] = 0; out_v[{vi}] = T.float32(-FMAX) end)
            local keep = T.ge(out_v[{vi}], val[{vi, vk}])
            local v0 = T.let("v0", T.Select(keep, out_i[{vi}], vk))
            local v1 = T.let("v1", T.Select(keep, out_v[{vi}], val[{vi, vk}]))
            out_i[{vi}] = v0
            out_v[{vi}] = v1
          end)
        end
      end)
    local s2 = tir.Schedule(h)
    U.expect_error(function() s2:rfactor(select(2, s2:get_loops("B")), 0) end,
                   "the init value 0 of block 'B' is not the identity of its reduction (argmax needs -1 and the lowest value)")
    assert.is_true(tir.structural_equal(h, s2.mod))
  end)
end)

describe("argmax kernels and nvcc's non-coherent loads", function()
  local function nvrtc() return (tir.core.nvrtc_available and tir.core.nvrtc_available()) ~= false end

  -- nvcc made Select(c, out_i[i], out_i_rf[j]) one ld.global.nc from a selected address while
  -- out_i is stored by the same kernel (stale values: the H200 run of the #gpu case below);
  -- buffers in such arms are emitted without __restrict__, and the PTX has no .nc load
  it("emits no __restrict__ on buffers loaded in a Select whose arms load a stored buffer", function()
    local f = arg_reduce("ge")
    local sch = rf_blocks_threads(f)
    local mod = tir.build(sch.mod, "cuda", {compile = nvrtc()})
    local src = mod:get_source("cuda")
    assert.matches("main_kernel%(int%* idx, float%* val, int%* out_i_rf, float%* out_v_rf%)", src)
    assert.matches("main_kernel1%(int%* out_i, float%* out_v, float%* out_v_rf, int%* out_i_rf%)", src)
    assert.is_nil(src:find("__restrict__", 1, true))
    if nvrtc() then
      local ptx = mod:get_source("ptx")
      assert.is_truthy(ptx:find("ld.global", 1, true))
      assert.is_nil(ptx:find("ld.global.nc", 1, true))
    end
    assert.are.equal(0, tir.simulate(mod, inputs(5), {reference = f}).n_issues)
    -- a kernel whose Selects load only buffers it does not store keeps __restrict__ (and .nc)
    local g = T.prim_func("main", {val = T.Buffer({M, N}, "float32"), out = T.Buffer({M, N}, "float32")}, function(val, out)
      for i, j in T.grid(M, N) do
        T.block("B", function()
          local vi, vj = T.axis.remap("SS", {i, j})
          out[{vi, vj}] = T.Select(T.ge(val[{vi, vj}], T.float32(0.5)), val[{vi, vj}], val[{vi, (vj + 1) % N}])
        end)
      end
    end)
    local s2 = tir.Schedule(g)
    local gi, gj = s2:get_loops("B")
    s2:bind(gi, "blockIdx.x"); s2:bind(gj, "threadIdx.x")
    local src2 = tir.build(s2.mod, "cuda", {compile = false}):get_source("cuda")
    assert.matches("float%* __restrict__ val, float%* __restrict__ out", src2)
    -- the same rule for an if / else whose branches load the stored buffer and another one
    -- (nvcc also merges those two loads); the one only read outside the branches keeps it
    local h = T.prim_func("main", {val = T.Buffer({M, N}, "float32"), w = T.Buffer({M}, "float32"),
                                   out = T.Buffer({M}, "float32")}, function(val, w, out)
      for i, j in T.grid(M, N) do
        T.block("B", function()
          local vi, vj = T.axis.remap("SR", {i, j})
          T.init(function() out[{vi}] = w[{vi}] end)
          T.If(T.ge(out[{vi}], val[{vi, vj}]), function() out[{vi}] = out[{vi}] * 0.5 end,
               function() out[{vi}] = val[{vi, vj}] end)
        end)
      end
    end)
    local s3 = tir.Schedule(h)
    s3:bind(s3:get_loops("B"), "threadIdx.x")
    local mod3 = tir.build(s3.mod, "cuda", {compile = false})
    assert.matches("main_kernel%(float%* val, float%* __restrict__ w, float%* out%)", mod3:get_source("cuda"))
    local a3 = {tir.nd.random({M, N}, "float32", tir.cpu(), {seed = 4}), tir.nd.random({M}, "float32", tir.cpu(), {seed = 5}),
                tir.nd.empty({M}, "float32", tir.cpu())}
    assert.are.equal(0, tir.simulate(mod3, a3, {reference = h}).n_issues)
  end)
end)

describe("the warp simulator runs these kernels as the interpreter does", function()
  it("an rfactor'ed argmax bound to blocks and threads, and a symbolic split for several n", function()
    local f = arg_reduce("ge")
    local sch = rf_blocks_threads(f)
    local rep = tir.simulate(tir.build(sch.mod, "cuda", {compile = false}), inputs(2), {reference = f})
    assert.are.equal(0, rep.n_issues)
    local te = tir.te
    local n = tir.var("n")
    local A = te.placeholder({n}, "float32", "A")
    local B = te.compute({n}, function(x) return A[{x}] * 2.0 + 1.0 end, "B")
    local g = te.create_prim_func({A, B})
    local s2 = tir.Schedule(g)
    local bo, bi = s2:split(s2:get_loops("B"), {nil, 64})
    s2:bind(bo, "blockIdx.x"); s2:bind(bi, "threadIdx.x")
    local mod = tir.build(s2.mod, "cuda", {compile = false})
    for _, nv in ipairs({1, 65, 300}) do
      local args = {tir.nd.random({nv}, "float32", tir.cpu(), {seed = nv}), tir.nd.empty({nv}, "float32", tir.cpu())}
      assert.are.equal(0, tir.simulate(mod, args, {reference = g}).n_issues)
    end
  end)
end)

-- On the GPU machine (with busted carried in .carry/lua):
--   build/tirlua tests/run_busted.lua --run=gpu tests/spec/schedule_argmax_spec.lua
describe("#gpu argmax, symbolic split and a transformed parameter on the device", function()
  local dev = tir.device("cuda", 0)
  local has_gpu, why = dev:exists()
  if not has_gpu then
    it("is skipped: " .. tostring(why), function() pending("no GPU: " .. tostring(why)) end)
    return
  end

  it("runs an rfactor'ed argmax (rows on blocks, partial maxima on threads) like the interpreter", function()
    local f = arg_reduce("ge")
    local sch = rf_blocks_threads(f)
    local mod = tir.build(sch.mod, "cuda")
    local args = inputs(5)
    local dargs = {args[1]:to(dev), args[2]:to(dev), tir.nd.empty({M}, "int32", dev), tir.nd.empty({M}, "float32", dev)}
    mod(table.unpack(dargs))
    local ri_, rv = reference(args, "ge")
    assert.are.same(ri_, dargs[3]:to(tir.cpu()):to_table())
    local got = dargs[4]:to(tir.cpu()):to_table()
    for r = 1, M do assert.are.equal(rv[r], got[r]) end
  end)

  it("runs a split of a symbolic extent for several n (grid ceildiv(n, 64), tail predicated)", function()
    local te = tir.te
    local n = tir.var("n")
    local A = te.placeholder({n}, "float32", "A")
    local B = te.compute({n}, function(x) return A[{x}] * 2.0 + 1.0 end, "B")
    local f = te.create_prim_func({A, B})
    local sch = tir.Schedule(f)
    local bo, bi = sch:split(sch:get_loops("B"), {nil, 64})
    sch:bind(bo, "blockIdx.x"); sch:bind(bi, "threadIdx.x")
    local mod = tir.build(sch.mod, "cuda")
    for _, nv in ipairs({1, 63, 64, 65, 1000}) do
      local a = tir.nd.random({nv}, "float32", tir.cpu(), {seed = nv})
      local want = tir.nd.empty({nv}, "float32", tir.cpu())
      tir.interpret(f, {a, want})
      local b = tir.nd.empty({nv}, "float32", dev)
      mod(a:to(dev), b)
      assert.are.same(want:to_table(), b:to(tir.cpu()):to_table())
    end
  end)

  it("expects a transformed parameter in its new layout", function()
    local f = T.prim_func("main", {A = T.Buffer({32, 16}, "float32"), B = T.Buffer({32, 16}, "float32")}, function(A, B)
      for i, j in T.grid(32, 16) do
        T.block("B", function() local vi, vj = T.axis.remap("SS", {i, j}) B[{vi, vj}] = A[{vi, vj}] + 1.0 end)
      end
    end)
    local sch = tir.Schedule(f)
    sch:transform_layout("B", "A", function(i, j) return j, i end)
    local i, j = sch:get_loops("B")
    sch:bind(i, "blockIdx.x"); sch:bind(j, "threadIdx.x")
    local mod = tir.build(sch.mod, "cuda")
    local at = tir.nd.random({16, 32}, "float32", tir.cpu(), {seed = 3})
    local want = tir.nd.empty({32, 16}, "float32", tir.cpu())
    tir.interpret(sch.mod, {at, want})
    local b = tir.nd.empty({32, 16}, "float32", dev)
    mod(at:to(dev), b)
    assert.are.same(want:to_table(), b:to(tir.cpu()):to_table())
    U.expect_error(function() mod(tir.nd.empty({32, 16}, "float32", dev), b) end, "A")
  end)
end)
