-- scripts/gpu/cublas_kernels.lua -- which kernels cuBLAS runs for each GEMM the benchmarks compare
-- against (issue 9: "record the cuBLAS kernel name beside each ratio"; it changes with versions).
-- cuBLAS has no API that names the kernel its heuristic picked, so ncu lists the launches:
--   ncu --csv --metrics gpu__time_duration.sum \
--       tirlua scripts/gpu/cublas_kernels.lua run CALLS [MxNxK ...] > ncu.csv
--   tirlua scripts/gpu/cublas_kernels.lua parse CALLS ncu.csv > kernels.txt
-- "run" calls core.cublas_gemm (as bench/gemm_fp16.lua's wgmma rows do: fp16 -> fp16 and bf16 -> fp32,
-- B as N x K, "NT") twice per shape, each call after a launch of a tiny tirlua kernel
-- (main_kernel) that marks where the call's kernels start, and writes the calls in order to CALLS.
-- "run8" does the same for cuBLASLt's int8 GEMM (core.cublaslt_gemm_int8: int8 A [M, K] x B [N, K] ->
-- int32, the TN layout bench/gemm_int8.lua times), lines "int8 TN <MxNxK>".
-- "parse" assigns the kernels between two markers to the call and writes the lines
-- "<dtype> <layout> <MxNxK> <kernel[+kernel...]>" that bench/gemm_fp16.lua reads from
-- TIRLUA_REF_KERNELS.
local tir = require("tir")
local mode, calls_path = arg[1], arg[2]
if (mode ~= "run" and mode ~= "run8" and mode ~= "parse") or not calls_path then
  io.stderr:write("usage: cublas_kernels.lua run|run8 CALLS [MxNxK ...] | parse CALLS NCU_CSV\n")
  os.exit(2)
end

if mode == "run" or mode == "run8" then
  local dev = tir.device("cuda", 0)
  assert(dev:exists(), "cublas_kernels.lua: no CUDA device")
  local te = tir.te
  local X = te.placeholder({128}, "float32", "X")
  local Y = te.compute({128}, function(i) return X[{i}] + 1.0 end, "Y")
  local sch = tir.Schedule(te.create_prim_func({X, Y}))
  local bi, ti = sch:split(sch:get_loops(sch:get_block("Y")), {nil, 128})
  sch:bind(bi, "blockIdx.x"); sch:bind(ti, "threadIdx.x")
  local marker = tir.build(sch.mod, "cuda")
  local x, y = tir.nd.empty({128}, "float32", dev), tir.nd.empty({128}, "float32", dev)
  local calls = assert(io.open(calls_path, "w"))
  local shapes = {}
  for i = 3, #arg do
    local m, n, k = arg[i]:match("^(%d+)x(%d+)x(%d+)$")
    if not m then m = arg[i]:match("^(%d+)$"); n, k = m, m end
    shapes[#shapes + 1] = {tonumber(m), tonumber(n), tonumber(k)}
  end
  for _, s in ipairs(shapes) do
    local m, n, k = s[1], s[2], s[3]
    for _, c in ipairs(mode == "run8" and {{"int8", "TN", "int32"}} or {{"float16", "NT", "float16"}, {"bfloat16", "NT", "float32"}}) do
      local a = tir.nd.empty({m, k}, c[1], dev)
      local b = tir.nd.empty(c[2] ~= "NN" and {n, k} or {k, n}, c[1], dev)
      local r = tir.nd.empty({m, n}, c[3], dev)
      for _ = 1, 2 do
        marker(x, y)
        if c[1] == "int8" then tir.core.cublaslt_gemm_int8(a, b, r) else tir.core.cublas_gemm(a, b, r, false, c[2] == "NT", 1.0, 0.0) end
      end
      tir.core.cuda_sync(0)
      calls:write(("%s %s %dx%dx%d\n"):format(c[1], c[2], m, n, k))
    end
  end
  marker(x, y)
  tir.core.cuda_sync(0)
  calls:close()
  return
end

-- parse: the CSV rows in launch order; a field named "Kernel Name" (ncu 2022+); with several
-- --metrics a launch has one row per metric, all with the launch's "ID": one name per ID
local csv = assert(io.open((assert(arg[3], "parse needs the ncu CSV"))))
local col, idcol, last_id, names = nil, nil, nil, {}
for l in csv:lines() do
  if l:match('^"') then
    local f = {}
    for v in l:gmatch('"(.-)"') do f[#f + 1] = v end
    if not col then
      for i, v in ipairs(f) do
        if v == "Kernel Name" then col = i elseif v == "ID" then idcol = i end
      end
    elseif f[col] and (not idcol or f[idcol] ~= last_id) then
      names[#names + 1] = f[col]
      last_id = idcol and f[idcol]
    end
  end
end
csv:close()
assert(col, "cublas_kernels.lua: no \"Kernel Name\" column in the ncu CSV")
-- groups of kernels between marker launches: two per call (the call ran twice)
local groups, cur = {}, nil
for _, n in ipairs(names) do
  if n == "main_kernel" then
    cur = {}
    groups[#groups + 1] = cur
  elseif cur then
    cur[#cur + 1] = n
  end
end
local q = 0
for l in assert(io.open(calls_path)):lines() do
  local seen, list = {}, {}
  for g = q + 1, q + 2 do
    for _, n in ipairs(groups[g] or {}) do
      if not seen[n] then seen[n] = true; list[#list + 1] = n end
    end
  end
  q = q + 2
  print(l .. " " .. (#list > 0 and table.concat(list, "+") or "(none seen)"))
end
