-- expect: unknown thread tag 'threadIdx.w'
local te = tir.te
local A = te.placeholder({100}, "float32", "A")
local C = te.compute({100}, function(i) return A[{i}] * 2.0 end, "C")
local sch = tir.Schedule(te.create_prim_func({A, C}))
sch:bind(sch:get_loops(sch:get_block("C")), "threadIdx.w")
