-- profile_qgemm_zb.lua -- the fused quantized GEMM on wgmma at 4096^3 for ncu: za only, then with a
-- per-column zb (row sums of A in the kernel, before the step's wgmma group), then with the sums after
-- it (row_sums_after), then split over two threads a row (row_sums_split = 2; and after the issue), then as an extra wgmma against ones (a_sums = "ones"); each built, its CUDA C
-- written to $OUT, launched once (arguments: the names of the runs to make, default all):
--   ncu --section SpeedOfLight --section WarpStateStats -k regex:qgemm tirlua scripts/gpu/profile_qgemm_zb.lua [qgemm_zb_ones ...]
local tir = require("tir")
local qm = tir.ops.quantized_matmul
local qg = require("tir.schedules.qgemm")
local m = 4096
local dev = tir.device("cuda", 0)
local out = os.getenv("OUT") or "."
local a = tir.nd.random({m, m}, "int8", dev, {seed = 31})
local b = tir.nd.random({m, m}, "int8", dev, {seed = 32})
local o8 = tir.nd.empty({m, m}, "int8", dev)
local bias = tir.nd.random({m}, "int32", dev, {seed = 33, low = -20000, high = 20000})
local scale = tir.nd.random({m}, "float32", dev, {seed = 34, low = 1 / (m * 4096), high = 1 / (m * 256)})
local bsum = tir.nd.random({m}, "int32", dev, {seed = 36, low = -20000, high = 20000})
local zb = tir.nd.random({m}, "int32", dev, {seed = 35, low = -128, high = 127})
local function q(o)
  for k, v in pairs({M = m, N = m, K = m, a_zero_point = 3, b_sums = "input", bias = true, scale = "per_channel", out_zero_point = -7,
                     out_dtype = "int8"}) do if o[k] == nil then o[k] = v end end
  return qm(o)
end
local tiles = {BM = 128, BN = 256, BK = 128, stages = 4, tma = true}
local after = {row_sums_after = true}
for k, v in pairs(tiles) do after[k] = v end
local split2 = {row_sums_split = 2}
for k, v in pairs(tiles) do split2[k] = v end
-- split and after the step's wgmma group (row_sums_split = 2, row_sums_after)
local split2a = {row_sums_split = 2, row_sums_after = true}
for k, v in pairs(tiles) do split2a[k] = v end
-- split, between the step's wgmma commit and its wait (row_sums_in_flight)
local split2f = {row_sums_split = 2, row_sums_in_flight = true}
for k, v in pairs(tiles) do split2f[k] = v end
local ones_tiles = {}
for k, v in pairs(tiles) do ones_tiles[k] = v end
local all = {
  {"qgemm_za", qg.schedule(q{name = "qgemm_za", b_zero_point = 0}, {intrin = "wgmma", tc = tiles}), {a, b, bias, scale, bsum, o8}},
  {"qgemm_zb", qg.schedule(q{name = "qgemm_zb", b_zero_point = "per_column"}, {intrin = "wgmma", tc = tiles}), {a, b, zb, bias, scale, bsum, o8}},
  {"qgemm_zb_after", qg.schedule(q{name = "qgemm_zb_after", b_zero_point = "per_column"}, {intrin = "wgmma", tc = after}),
   {a, b, zb, bias, scale, bsum, o8}},
  -- each row's k step summed by two threads of its warpgroup (row_sums_split = 2)
  {"qgemm_zb_split2", qg.schedule(q{name = "qgemm_zb_split2", b_zero_point = "per_column"}, {intrin = "wgmma", tc = split2}),
   {a, b, zb, bias, scale, bsum, o8}},
  {"qgemm_zb_split2_after", qg.schedule(q{name = "qgemm_zb_split2_after", b_zero_point = "per_column"}, {intrin = "wgmma", tc = split2a}),
   {a, b, zb, bias, scale, bsum, o8}},
  {"qgemm_zb_split2_inflight", qg.schedule(q{name = "qgemm_zb_split2_inflight", b_zero_point = "per_column"}, {intrin = "wgmma", tc = split2f}),
   {a, b, zb, bias, scale, bsum, o8}},
  -- the row sums as one more wgmma m64n8k32 per 32 columns against a ones tile (a_sums = "ones")
  {"qgemm_zb_ones", qg.schedule(q{name = "qgemm_zb_ones", b_zero_point = "per_column", a_sums = "ones"}, {intrin = "wgmma", tc = ones_tiles}),
   {a, b, zb, bias, scale, bsum, o8}},
}
-- arguments: the runs to make (qgemm_za qgemm_zb ...; default all)
local runs = {}
for _, r in ipairs(all) do
  local want = #arg == 0
  for i = 1, #arg do want = want or arg[i] == r[1] end
  if want then runs[#runs + 1] = r end
end
for _, r in ipairs(runs) do
  local mod = tir.build(r[2].mod, "cuda -arch=sm_90a")
  local f = io.open(out .. "/" .. r[1] .. ".cu", "w")
  f:write(mod:get_source("cuda")); f:close()
  local res = mod:resources()
  mod(table.unpack(r[3]))
  tir.core.cuda_sync(0)
  print(("%-15s registers %d, local bytes %d, dynamic smem %d"):format(r[1], res.registers, res.local_bytes,
    res.dynamic_smem_bytes))
end
