-- expect: ValueError in T script: store to A: A has 2 dimension(s) but was indexed with 1 index(es)
local T = tir.script
T.prim_func("f", {A = T.Buffer({4, 4}, "float32")}, function(A) A[{0}] = 1 end)
