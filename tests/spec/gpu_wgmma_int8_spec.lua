-- gpu_wgmma_int8_spec.lua -- 8-bit integer GEMMs on Hopper's wgmma on a real sm_90 GPU (#gpu):
-- tc_gemm intrin = "wgmma" (m64nNk32, s8/u8 into s32, target "cuda -arch=sm_90a") on K-major
-- operands (A M x K, B N x K) at real sizes, each result exact: s8 x s8 against cuBLASLt
-- (CUDA_R_8I, TN), s8/u8 mixes and the padded workload (odd M, N, K) against an int32 CUDA-core
-- kernel of the unpadded workload.  Without an sm_90 GPU: pending.
local tir = require("tir")
local tc = require("tir.schedules.tc_gemm")

local dev = tir.device("cuda", 0)
local has_gpu, why = dev:exists()
if has_gpu and dev:info().arch ~= "sm_90" then has_gpu, why = false, "the GPU is " .. dev:info().arch .. ", wgmma needs sm_90" end

local function rand(shape, dt, seed)
  return tir.nd.random(shape, dt, dev, {seed = seed, low = dt == "uint8" and 0 or -128, high = dt == "uint8" and 255 or 127})
end

-- C = A B^T with int32 multiply-adds on CUDA cores, 8 x 8 outputs a thread block of 64
local function cuda_core_ref(m, n, k, dtype, a, b)
  local rs = tir.Schedule(tc.workload(m, n, k, dtype, "int32", nil, "NT"))
  local i, j = rs:get_loops(rs:get_block("C"))
  local io, ii = rs:split(i, {nil, 8})
  local jo, ji = rs:split(j, {nil, 8})
  rs:reorder(io, jo, ii, ji)
  rs:bind(io, "blockIdx.y"); rs:bind(jo, "blockIdx.x"); rs:bind(ii, "threadIdx.y"); rs:bind(ji, "threadIdx.x")
  local r = tir.nd.empty({m, n}, "int32", dev)
  tir.build(rs.mod, "cuda")(a, b, r)
  return r
end

describe("#gpu int8 wgmma GEMM (sm_90a)", function()
  if not has_gpu then
    it("is skipped: " .. tostring(why), function() pending("no sm_90 GPU: " .. tostring(why)) end)
    return
  end

  for _, o in ipairs({{BM = 128, BN = 256, BK = 128, stages = 4, wgmma_pending = 0}, {BM = 128, BN = 256, BK = 128, stages = 3},
                      {BM = 128, BN = 256, BK = 128, stages = 4, tma = true}, {},
                      -- warp-specialized persistent 128 x 128 with the TMA-store epilogue (swizzled boxes, the
                      -- read wait before the next tile's writes), and with the wait right after the store
                      {BM = 128, BN = 128, BK = 128, stages = 5, tma = true, warp_specialize = true, persistent = true, epilogue_store = "tma"},
                      {BM = 128, BN = 128, BK = 128, stages = 4, tma = true, warp_specialize = true, persistent = true, epilogue_store = "tma",
                       tma_store_wait = "store"},
                      -- ping-pong consumers: two warpgroups on alternate 64 x 256 tiles (stop 12)
                      {BM = 64, BN = 256, BK = 128, stages = 5, tma = true, warp_specialize = true, persistent = true, pingpong = true}}) do
    -- {}: the defaults (tc_gemm_wgmma.pick: 128x256x128 s4 TMA warp-specialized persistent)
    local what = o.BM and ("BM=%d BN=%d stages=%d%s%s%s%s"):format(o.BM, o.BN, o.stages, o.tma and " tma" or "",
                             o.wgmma_pending and (" wgmma_pending=" .. o.wgmma_pending) or "",
                             o.epilogue_store and (" ws persistent epilogue_store=" .. o.epilogue_store) or "",
                             o.tma_store_wait and (" tma_store_wait=" .. o.tma_store_wait) or "") ..
                             (o.pingpong and " ws persistent pingpong" or "") or "with the defaults (int8 pick)"
    it(("s8 x s8 4096^3 %s equals cuBLASLt exactly"):format(what), function()
      local ok, w = tir.core.cublaslt_available()
      if not ok then return pending("cuBLASLt: " .. tostring(w)) end
      local m = 4096
      local f = tc.workload(m, m, m, "int8", "int32", nil, "NT")
      local opts = {intrin = "wgmma"}
      for key, v in pairs(o) do opts[key] = v end
      local mod = tir.build(tc.schedule(f, opts).mod, "cuda -arch=sm_90a")
      local a, b = rand({m, m}, "int8", 11), rand({m, m}, "int8", 12)
      local c = tir.nd.random({m, m}, "int32", dev, {seed = 13, low = -9, high = 9})
      local ref = tir.nd.empty({m, m}, "int32", dev)
      mod(a, b, c)
      tir.core.cublaslt_gemm_int8(a, b, ref)
      tir.core.cuda_sync(0)
      tir.testing.assert_allclose(c, ref, {rtol = 0, atol = 0})
    end)
  end


  for _, c in ipairs({
    {{"uint8", "int8"}, {2048, 2048, 2048}, nil, {BM = 128, BN = 256, BK = 128, stages = 4, tma = true}},
    {{"int8", "uint8"}, {1024, 1024, 1024}, nil, {BM = 128, BN = 128, BK = 128, stages = 3}},
    {"uint8", {1024, 512, 2048}, nil, {BM = 64, BN = 128, BK = 64, stages = 3}},
    {"int8", {1000, 1000, 1000}, {128, 128, 128}, {BM = 128, BN = 128, BK = 128, stages = 3}},
    {{"uint8", "int8"}, {4000, 3000, 1000}, {128, 256, 128}, {BM = 128, BN = 256, BK = 128, stages = 3}},
  }) do
    local dt = type(c[1]) == "table" and (c[1][1] .. " x " .. c[1][2]) or c[1]
    it(("%s %dx%dx%d%s equals an int32 CUDA-core kernel exactly"):format(dt, c[2][1], c[2][2], c[2][3], c[3] and " (padded)" or ""), function()
      local m, n, k = c[2][1], c[2][2], c[2][3]
      local f = tc.workload(m, n, k, c[1], "int32", c[3], "NT")
      local opts = {intrin = "wgmma"}
      for key, v in pairs(c[4]) do opts[key] = v end
      local mod = tir.build(tc.schedule(f, opts).mod, "cuda -arch=sm_90a")
      local da = type(c[1]) == "table" and c[1][1] or c[1]
      local db = type(c[1]) == "table" and c[1][2] or c[1]
      local a, b = rand({m, k}, da, 21), rand({n, k}, db, 22)
      local out = tir.nd.random({m, n}, "int32", dev, {seed = 23, low = -9, high = 9})
      mod(a, b, out)
      tir.testing.assert_allclose(out, cuda_core_ref(m, n, k, c[1], a, b), {rtol = 0, atol = 0})
    end)
  end

  -- the quantized GEMM as one wgmma kernel (tir.schedules.qgemm intrin = "wgmma"): zero points at
  -- the ends, per-column zb (row sums of A from the swizzled TMA tiles), ties of the rounding
  -- (scale 0.5 columns), packed int8 / uint8 stores; = the interpreter on the direct int64 compute
  it("fused quantized GEMM (TMA and cp.async, zb per column, uint8 out, row sums on CUDA cores -- one or two threads a row, in the wgmma's shadow -- or as a wgmma against ones, grouped order), 256x256x256, = the int64 oracle", function()
    local qm = tir.ops.quantized_matmul
    local qg = require("tir.schedules.qgemm")
    for q, c in ipairs({{"int8", -128, "per_column", "int8", {BM = 128, BN = 256, BK = 128, stages = 4, tma = true}},
                        {"uint8", 255, 0, "uint8", {BM = 128, BN = 128, BK = 128, stages = 3, wgmma_pending = 1}},
                        {"uint8", 0, 127, "int8", {BM = 128, BN = 128, BK = 64, stages = 3, tma = true}},
                        -- the row sums as one more wgmma m64n8k32 against a ones tile (a_sums = "ones")
                        {"int8", -128, "per_column", "int8", {BM = 128, BN = 256, BK = 128, stages = 4, tma = true}, "ones"},
                        {"uint8", 255, -128, "uint8", {BM = 128, BN = 128, BK = 128, stages = 3, wgmma_pending = 1}, "ones"},
                        {"uint8", 0, 127, "int8", {BM = 64, BN = 128, BK = 64, stages = 3, tma = true}, "ones"},
                        -- qgemm's default form: one CTA a tile in the grouped order (persistent = the 2 tiles),
                        -- the row sums two threads a row (before the step's wgmma group / between its commit and wait)
                        {"int8", -128, "per_column", "int8", {BM = 128, BN = 256, BK = 128, stages = 4, tma = true, persistent = 2,
                                                             row_sums_split = 2}},
                        {"uint8", 255, "per_column", "uint8", {BM = 128, BN = 256, BK = 128, stages = 4, tma = true, persistent = 2,
                                                               row_sums_split = 2, row_sums_in_flight = true}}}) do
      local o = {M = 256, N = 256, K = 256, a_dtype = c[1], a_zero_point = c[2], b_zero_point = c[3], b_sums = "input", bias = true,
                 scale = "per_channel", out_zero_point = c[4] == "uint8" and 0 or 127, out_dtype = c[4], a_sums = c[6]}
      local f = qm(o)
      local mod = tir.build(qg.schedule(f, {intrin = "wgmma", tc = c[5]}).mod, "cuda -arch=sm_90a")
      assert.are.equal(1, #mod:kernels())
      local cpu = tir.cpu()
      local lo, hi = c[1] == "uint8" and 0 or -128, c[1] == "uint8" and 255 or 127
      local a = tir.nd.random({256, 256}, c[1], cpu, {seed = 30 + q, low = lo, high = hi})
      local b = tir.nd.random({256, 256}, "int8", cpu, {seed = 40 + q, low = -128, high = 127})
      local args = {a, b}
      if c[3] == "per_column" then args[#args + 1] = tir.nd.random({256}, "int32", cpu, {seed = 5, low = -128, high = 127}) end
      args[#args + 1] = tir.nd.random({256}, "int32", cpu, {seed = 6, low = -100000, high = 100000})
      local st = {}
      for j = 1, 256 do st[j] = j % 5 == 0 and 0.5 or (1e-6 + j * 3e-8) end
      args[#args + 1] = tir.nd.array(st, "float32")
      local ref = tir.nd.empty({256, 256}, c[4])
      local ro = {}
      for key, v in pairs(o) do ro[key] = v end
      ro.four_term, ro.accum_dtype, ro.b_sums, ro.a_sums = false, "int64", nil, nil
      local ra = {table.unpack(args)}
      ra[#ra + 1] = ref
      tir.interpret(qm(ro), ra)
      local da = {}
      for i, x in ipairs(args) do da[i] = x:to(dev) end
      da[#da + 1] = qm.col_sums(b, "NK"):to(dev)
      local out = tir.nd.random({256, 256}, c[4], dev, {seed = 9})
      da[#da + 1] = out
      mod(table.unpack(da))
      assert.are.same(ref:to_table(), out:to(cpu):to_table())
    end
  end)
end)
