-- gpu_xthread_spec.lua -- cross-thread reductions on a real GPU (#gpu): row sum, row max and a
-- softmax-like pair (row max, then the sum of exp(A - max)) over 4096 x 1000, with the k loop's
-- inner part bound to threadIdx.x (warp shuffles, shared memory across warps, the shared-memory
-- tree for 48 threads), against the interpreter of the unscheduled function (int32 exact, float
-- with a tolerance for the summation order).  Without a GPU every test is pending.
-- On the GPU machine: TIRLUA_LUA_MODULES=.carry/lua build/tirlua tests/run_busted.lua --run=gpu tests/spec/gpu_xthread_spec.lua
local tir = require("tir")

local dev = tir.device("cuda", 0)
local has_gpu, why = dev:exists()

local M, N = 4096, 1000

local W = require("xthread_workloads")
local function row_reduce(dtype, op) return W.row_reduce(M, N, dtype, op) end
local bind_rows = W.bind_rows
local function softmax_like(threads) return W.softmax_like(M, N, threads) end

local function run(f, sch, dtype, tol)
  local mod = tir.build(sch.mod, "cuda")
  assert.truthy(mod:get_source("ptx"):find("shfl.sync", 1, true) or not mod:get_source("cuda"):find("__shfl", 1, true))
  local a = tir.nd.random({M, N}, dtype, tir.cpu(), {seed = 3})
  local want = tir.nd.empty({M}, dtype)
  tir.interpret(f, {a, want})
  local got = tir.nd.empty({M}, dtype, dev)
  local ga = a:to(dev)
  mod(ga, got)
  if tol then tir.testing.assert_allclose(got, want, tol)
  else assert.are.same(want:to_table(), got:to_table()) end
  local t = mod:time_evaluator({number = 20, repeat_ = 3})(ga, got)
  print(("    %-40s %8.2f us  %7.1f GB/s"):format(sch.mod.name or "", t * 1e6, M * N * (dtype == "float64" and 8 or 4) / t / 1e9))
  return t
end

describe("#gpu cross-thread reductions (4096 x 1000)", function()
  if not has_gpu then
    it("is skipped: " .. tostring(why), function() pending("no GPU: " .. tostring(why)) end)
    return
  end
  for _, n in ipairs({32, 48, 64, 128, 256, 1024}) do
    it(("row sum, int32 exact and float32, %d threads"):format(n), function()
      local fi = row_reduce("int32", "sum")
      run(fi, bind_rows(fi, n), "int32")
      local ff = row_reduce("float32", "sum")
      run(ff, bind_rows(ff, n), "float32", {rtol = 1e-4, atol = 1e-3})
    end)
    it(("row max, float32 exact, %d threads"):format(n), function()
      local f = row_reduce("float32", "max")
      run(f, bind_rows(f, n), "float32")
    end)
  end
  for _, n in ipairs({128, 256, 48}) do
    it(("softmax-like (max then sum of exp), %d threads"):format(n), function()
      local f, sch = softmax_like(n)
      run(f, sch, "float32", {rtol = 1e-4, atol = 1e-4})
    end)
  end
end)
