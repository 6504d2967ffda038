-- expect: ScheduleError in split: the factors multiply to 4 * 4 = 16, less than the extent 100 of loop i
local te = tir.te
local A = te.placeholder({100}, "float32", "A")
local C = te.compute({100}, function(i) return A[{i}] * 2.0 end, "C")
local sch = tir.Schedule(te.create_prim_func({A, C}))
sch:split(sch:get_loops(sch:get_block("C")), {4, 4})
