-- expect: bind its loops to blockIdx/threadIdx
local te = tir.te
local A = te.placeholder({8}, "float32", "A")
local B = te.compute({8}, function(i) return A[{i}] + 1.0 end, "B")
tir.build(te.create_prim_func({A, B}), "cuda")
