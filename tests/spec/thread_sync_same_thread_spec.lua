-- thread_sync_same_thread_spec.lua -- where thread_sync.c puts __syncthreads for shared memory: TVM's
-- same-thread rule (ThreadSyncPlanner::FindConflict, thread_storage_sync.cc): a thread's own
-- element (an index of thread indices only, using threadIdx.x) updated in every step of a loop
-- needs no barrier per step (tc_gemm's row sums of A in the quantized GEMM), while an index that
-- also uses the loop variable, or no thread index at all, still gets its barriers.
local tir = require("tir")
local T = tir.script

-- 64 threads of one CTA: S[idx] = 0, then 16 steps of S[idx] += A[tx, k], then O[tx] = S[63 - tx]
-- (another thread's element: a barrier must come before it).  idx(tx, k): the element a step updates.
local function kernel(idx)
  return T.prim_func("rs", {A = T.Buffer({64, 16}, "int32"), O = T.Buffer({64}, "int32")}, function(A, O)
    T.block("root", function()
      local S = T.alloc_buffer({80}, "int32", {scope = "shared"})
      for bx in T.thread_binding(1, "blockIdx.x") do
        for tx in T.thread_binding(64, "threadIdx.x") do
          S[{tx}] = T.int32(0)
          for k in T.serial(16) do S[{idx(tx, k)}] = S[{idx(tx, k)}] + A[{tx, k}] end
          O[{tx}] = S[{63 - tx}]
        end
      end
    end)
  end)
end

local function body_of(f)
  local src = tir.build(f, "cuda", {compile = false}):get_source("cuda")
  local loop = src:match("for %(int k = 0; k < 16; %+%+k%) (%b{})")
  local after = src:match("for %(int k = 0; k < 16; %+%+k%) %b{}(.-)O%[")
  assert.is_truthy(loop and after, src)
  return loop, after
end

describe("thread_sync same-thread rule", function()
  it("a thread's own element updated in each step of a loop: no barrier in the loop, one before another thread reads it", function()
    local f = kernel(function(tx) return tx end)
    local loop, after = body_of(f)
    assert.is_falsy(loop:find("__syncthreads", 1, true))
    assert.is_truthy(after:find("__syncthreads", 1, true))
    -- the simulator (which reports shared-memory races) runs it race-free: O[tx] = the sum of row 63 - tx
    -- (the interpreter runs the thread loop's iterations one after the other, so it is no oracle here)
    local m = tir.build(f, "cuda", {compile = false})
    local args = tir.testing.random_args(f, 7)
    tir.simulate(m, args)
    local a, o = args[1]:to_table(), args[2]:to_table()
    for tx = 1, 64 do
      local want = 0
      for k = 1, 16 do want = want + a[65 - tx][k] end
      assert.are.equal(want, o[tx])
    end
  end)

  it("an index using the loop variable is another thread's element in the next step: a barrier in the loop", function()
    local loop = body_of(kernel(function(tx, k) return tx + k end))
    assert.is_truthy(loop:find("__syncthreads", 1, true))
  end)

  it("an index without threadIdx.x (every thread's same element) keeps its barriers", function()
    local f = T.prim_func("one", {A = T.Buffer({64}, "int32"), O = T.Buffer({64}, "int32")}, function(A, O)
      T.block("root", function()
        local S = T.alloc_buffer({1}, "int32", {scope = "shared"})
        for bx in T.thread_binding(1, "blockIdx.x") do
          for tx in T.thread_binding(64, "threadIdx.x") do
            T.If(T.eq(tx, 0), function() S[{0}] = A[{3}] end)
            O[{tx}] = S[{0}] + A[{tx}]
          end
        end
      end)
    end)
    local src = tir.build(f, "cuda", {compile = false}):get_source("cuda")
    assert.is_truthy(src:find("S%[0%] = A%[3%];%s*}%s*__syncthreads%(%);%s*O%["), src)
  end)
end)
