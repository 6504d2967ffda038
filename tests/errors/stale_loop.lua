-- expect: loop 'i' is no longer in the function
local te = tir.te
local A = te.placeholder({64}, "float32", "A")
local C = te.compute({64}, function(i) return A[{i}] * 2.0 end, "C")
local sch = tir.Schedule(te.create_prim_func({A, C}))
local i = sch:get_loops(sch:get_block("C"))
sch:split(i, {nil, 8})
sch:bind(i, "threadIdx.x")
