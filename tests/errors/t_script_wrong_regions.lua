-- expect: t_script_wrong_regions.lua:5: ValueError in T.block: block 'B' reads A[{vi, vj}], but its declared T.reads(B[{vi, vj}]) does not list A
local T = tir.script
T.prim_func("main", {A = T.Buffer({16, 16}, "float32"), B = T.Buffer({16, 16}, "float32")}, function(A, B)
  for i, j in T.grid(16, 16) do
    T.block("B", function()
      local vi, vj = T.axis.remap("SS", {i, j})
      T.reads(B[{vi, vj}])
      T.writes(A[{vi, vj}])
      B[{vi, vj}] = A[{vi, vj}] * 2.0
    end)
  end
end)
