-- profile_int8.lua -- the int8 GEMM kernels of bench/gemm_int8.lua at M x N x K (default 4096^3),
-- each built, written to $OUT (CUDA C) and launched once after one warm-up, for ncu:
--   ncu --section SpeedOfLight --section Occupancy --section WarpStateStats \
--       tirlua scripts/gpu/profile_int8.lua [M N K]
-- Kernels in launch order: imma (tc_gemm mma.sync m16n8k32 128x128x128, 3 stages), qgemm (fused,
-- zb = 0), qgemm_zb (fused, per-column zb: row sums of A in the kernel), dp4a, dp4a_v4.
local tir = require("tir")
local tc = require("tir.schedules.tc_gemm")
local qm = tir.ops.quantized_matmul
local qg = require("tir.schedules.qgemm")
local m, n, k = tonumber(arg[1] or 4096), tonumber(arg[2] or arg[1] or 4096), tonumber(arg[3] or arg[1] or 4096)
local dev = tir.device("cuda", 0)
local out = os.getenv("OUT") or "."
local tiles = {BM = 128, BN = 128, BK = 128, warp_m = 64, warp_n = 64, stages = 3}
local a = tir.nd.random({m, k}, "int8", dev, {seed = 31})
local b = tir.nd.random({n, k}, "int8", dev, {seed = 32})
local c = tir.nd.empty({m, n}, "int32", dev)
local o8 = tir.nd.empty({m, n}, "int8", dev)
local bias = tir.nd.random({n}, "int32", dev, {seed = 33, low = -20000, high = 20000})
local scale = tir.nd.random({n}, "float32", dev, {seed = 34, low = 1 / (k * 4096), high = 1 / (k * 256)})
local bsum = tir.nd.random({n}, "int32", dev, {seed = 36, low = -20000, high = 20000})
local zb = tir.nd.random({n}, "int32", dev, {seed = 35, low = -128, high = 127})
local function q(o) for kk, v in pairs({M = m, N = n, K = k, a_zero_point = 3, b_sums = "input", bias = true, scale = "per_channel",
                                         out_zero_point = -7}) do if o[kk] == nil then o[kk] = v end end return qm(o) end
local imma_o = {intrin = "mma"}
for kk, v in pairs(tiles) do imma_o[kk] = v end
local plain = qm{M = m, N = n, K = k, out_dtype = "int32", name = "gemm_int8"}
local runs = {
  {"imma", tc.schedule(tc.workload(m, n, k, "int8", "int32", nil, "NT"), imma_o), {a, b, c}},
  {"qgemm", qg.schedule(q{name = "qgemm"}, {intrin = "mma", tc = tiles}), {a, b, bias, scale, bsum, o8}},
  {"qgemm_zb", qg.schedule(q{name = "qgemm_zb", b_zero_point = "per_column"}, {intrin = "mma", tc = tiles}), {a, b, zb, bias, scale, bsum, o8}},
  {"dp4a", qg.schedule(plain, {intrin = "dp4a", BM = 128, BN = 128, vec = 16}), {a, b, c}},
  {"dp4a_v4", qg.schedule(plain, {intrin = "dp4a", BM = 128, BN = 128, vec = 4}), {a, b, c}},
}
for _, r in ipairs(runs) do
  local mod = tir.build(r[2].mod, "cuda")
  io.open(out .. "/" .. r[1] .. ".cu", "w"):write(mod:get_source("cuda"))
  local res = mod:resources()
  mod(table.unpack(r[3]))
  tir.core.cuda_sync(0)
  print(("%-9s registers %d, dynamic smem %d, built"):format(r[1], res.registers, res.dynamic_smem_bytes))
  r.mod = mod
end
for _, r in ipairs(runs) do r.mod(table.unpack(r[3])) end
tir.core.cuda_sync(0)
print("launched each once more")
