-- expect: out-of-bounds access A[8]: index 8 of dimension 1 is outside [0, 8)
local te = tir.te
local A = te.placeholder({8}, "float32", "A")
local B = te.compute({8}, function(i) return A[{i + 1}] end, "B")
tir.interpret(te.create_prim_func({A, B}), {tir.nd.random({8}), tir.nd.empty({8})})
