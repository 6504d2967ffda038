-- expect: argument 2 (B): expected shape (8, 8), got (8, 4)
local te = tir.te
local A = te.placeholder({8, 8}, "float32", "A")
local B = te.compute({8, 8}, function(i, j) return A[{i, j}] + 1.0 end, "B")
local sch = tir.Schedule(te.create_prim_func({A, B}))
local i, j = sch:get_loops(sch:get_block("B"))
sch:bind(i, "blockIdx.x"); sch:bind(j, "threadIdx.x")
local mod = tir.build(sch.mod, "cuda", {compile = false})
mod(tir.nd.random({8, 8}), tir.nd.empty({8, 4}))
