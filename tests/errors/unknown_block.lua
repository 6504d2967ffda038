-- expect: no block named 'D' in function 'main' (blocks: 'C')
local te = tir.te
local A = te.placeholder({8, 8}, "float32", "A")
local C = te.compute({8, 8}, function(i, j) return A[{i, j}] + 1.0 end, "C")
local sch = tir.Schedule(te.create_prim_func({A, C}))
sch:get_block("D")
