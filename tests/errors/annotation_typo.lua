-- expect: annotation_typo.lua:7: ValueError in annotate: annotation key 'software_pipeline_stages'
-- a misspelled pipeline annotation would silently give no pipeline: refused with "did you mean"
local te = tir.te
local A = te.placeholder({64}, "float32", "A")
local B = te.compute({64}, function(i) return A[{i}] * 2.0 end, "B")
local sch = tir.Schedule(te.create_prim_func({A, B}))
sch:annotate(sch:get_loops(sch:get_block("B")), "software_pipeline_stages", {0, 1})
