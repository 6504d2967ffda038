-- embed_kernel.lua -- the Lua half of scripts/examples/embed.c (CTest embed_example):
-- the C host loads this file, calls make_matmul(M, N, K) to get a scheduled function and a
-- module built for CUDA, then creates arrays and launches from C (on the GPU when one
-- exists, else through the interpreter) and checks the result against a C reference.
local te = tir.te

function make_matmul(M, N, K)
  local A = te.placeholder({M, K}, "float32", "A")
  local B = te.placeholder({K, N}, "float32", "B")
  local k = te.reduce_axis({0, K}, "k")
  local C = te.compute({M, N}, function(i, j) return te.sum(A[{i, k}] * B[{k, j}], {k}) end, "C")
  local sch = tir.Schedule(te.create_prim_func({A, B, C}))
  local i, j, kk = sch:get_loops(sch:get_block("C"))
  local bi, ti = sch:split(i, {nil, 8})
  local bj, tj = sch:split(j, {nil, 8})
  sch:reorder(bi, bj, ti, tj, kk)
  sch:bind(bi, "blockIdx.y"); sch:bind(bj, "blockIdx.x")
  sch:bind(ti, "threadIdx.y"); sch:bind(tj, "threadIdx.x")
  local has_gpu = tir.device("cuda", 0):exists()
  -- without a GPU, still run codegen but skip NVRTC when it is missing too
  local nvrtc = tir.core.nvrtc_available()
  return sch.mod, tir.build(sch.mod, "cuda", {compile = has_gpu or nvrtc})
end

-- DLPack (include/tir/dlpack_interop.h): the C host hands over a tensor of its own memory as a
-- DLManagedTensor pointer; tirlua views it without copying, doubles it in place with a kernel
-- run on the interpreter, and hands back a new tensor (its deleter is the host's to call).
function double_dlpack(ptr)
  local x = tir.nd.from_dlpack(ptr)               -- no copy: x is the host's memory
  local n = x:shape()[1]
  local X = te.placeholder({n}, "float32", "X")
  local Y = te.compute({n}, function(i) return X[{i}] * 2.0 end, "Y")
  local y = tir.nd.empty({n}, "float32")
  tir.interpret(te.create_prim_func({X, Y}), {x, y})
  x:copyfrom(y)                                   -- written back into the host's buffer
  return y:to_dlpack():release()                  -- a DLManagedTensor* the host now owns
end
