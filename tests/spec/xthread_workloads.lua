-- xthread_workloads.lua -- the cross-thread reduction workloads and schedules shared by
-- xthread_spec.lua (simulator) and gpu_xthread_spec.lua (#gpu).
local tir = require("tir")
local te = tir.te
local W = {}

--- B[i] = op_k A[i, k] over M rows of N (op: "sum", "max", "min").
function W.row_reduce(M, N, dtype, op)
  local A = te.placeholder({M, N}, dtype, "A")
  local k = te.reduce_axis({0, N}, "k")
  local red = op == "max" and te.max or op == "min" and te.min or te.sum
  local B = te.compute({M}, function(i) return red(A[{i, k}], {k}) end, "B")
  return te.create_prim_func({A, B})
end

--- Rows on blockIdx.x (rows_per_cta > 1: the rows of a CTA on threadIdx.y), the k loop split
-- with its inner part (`threads` wide) on threadIdx.x.
function W.bind_rows(f, threads, rows_per_cta)
  local sch = tir.Schedule(f)
  local i, k = sch:get_loops(sch:get_block("B"))
  if rows_per_cta and rows_per_cta > 1 then
    local bi, ti = sch:split(i, {nil, rows_per_cta})
    sch:bind(bi, "blockIdx.x")
    sch:bind(ti, "threadIdx.y")
  else
    sch:bind(i, "blockIdx.x")
  end
  local _, ki = sch:split(k, {nil, threads})
  sch:bind(ki, "threadIdx.x")
  return sch
end

--- Softmax-like pair in one kernel: mx = row max (shared, computed at S's row loop), then
-- S = row sum of exp(A - mx); both k loops split with `threads` on threadIdx.x.  Returns f, sch.
function W.softmax_like(M, N, threads)
  local A = te.placeholder({M, N}, "float32", "A")
  local k1 = te.reduce_axis({0, N}, "k1")
  local mx = te.compute({M}, function(i) return te.max(A[{i, k1}], {k1}) end, "mx")
  local k2 = te.reduce_axis({0, N}, "k2")
  local s = te.compute({M}, function(i) return te.sum(tir.call("float32", "exp", A[{i, k2}] - mx[{i}]), {k2}) end, "S")
  local f = te.create_prim_func({A, s})
  local sch = tir.Schedule(f)
  local i, k = sch:get_loops("S")
  sch:bind(i, "blockIdx.x")
  local _, ki = sch:split(k, {nil, threads})
  sch:bind(ki, "threadIdx.x")
  sch:compute_at(sch:get_block("mx"), i)
  sch:set_scope("mx", 0, "shared")
  local _, kk = sch:get_loops("mx")
  local _, kki = sch:split(kk, {nil, threads})
  sch:bind(kki, "threadIdx.x")
  return f, sch
end

return W
