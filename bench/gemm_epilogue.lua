-- bench/gemm_epilogue.lua -- the wgmma GEMM with a fused bias + relu epilogue
--   D[i, j] = cast(out, max(sum_k A[i, k] B[j, k] (fp32) + float(bias[j]), 0))   A: M x K, B: N x K (NT), fp16 or bf16
-- against (a) our plain GEMM (tc_gemm_wgmma.pick's default, D = cast(C): what the fused epilogue costs) and
-- (b) cuBLASLt with CUBLASLT_EPILOGUE_RELU_BIAS (bias in D's dtype: cuBLASLt's default bias type), in one
-- process on the same random inputs; every fused result is checked against cuBLASLt's first.
--   tirlua bench/gemm_epilogue.lua [MxNxK ...]   (default 4096^3, 8192^3, 4096x11008x4096)
--   TIRLUA_BENCH_VARIANTS=a,b,...                which variants (VARIANTS below; default all)
--   TIRLUA_BENCH_DTYPES=float16,bfloat16         (default both)
--   TIRLUA_BENCH_OUT=file                        append the markdown table to that file
-- Rows go to bench/results.jsonl (bench/common.lua) with registers and shared bytes (Module:resources).
local tir = require("tir")
local core = tir.core
local tc = require("tir.schedules.tc_gemm")
local common = dofile("bench/common.lua")

local dev = common.device("bench/gemm_epilogue.lua")
if not dev then return end
local lt_ok, lt_why = core.cublaslt_available()
if not lt_ok then print("bench/gemm_epilogue.lua: skipped: " .. tostring(lt_why)); return end

-- the workload: the GEMM C and the epilogue D (bias + relu, or the plain cast)
local function workload(m, n, k, dt, epi)
  if epi ~= "plain" then return require("tir.schedules.tc_gemm_wgmma_epilogue").workload(m, n, k, dt, "relu") end
  -- our plain GEMM: D = cast(C) fused into the store (fp16), C itself in fp32 (bf16: no fused bf16 store)
  return tc.workload(m, n, k, dt, dt == "float16" and "float16" or nil, nil, "NT")
end

-- opts = nil: tc_gemm_wgmma.pick's choice for the shape (tc_gemm.schedule without tile options)
local WSP = {BM = 128, BN = 128, BK = 64, tma = true, warp_specialize = true, persistent = true}
local function with(t, u)
  local r = {}
  for k, v in pairs(t) do r[k] = v end
  for k, v in pairs(u) do r[k] = v end
  return r
end
local VARIANTS = {
  {"plain", "plain", nil, "our plain GEMM (pick's default): fp16 D = cast(C) fused into the store; bf16: C in fp32 (no fused bf16 cast store)"},
  {"bias_relu", "bias_relu", nil, "bias + relu, pick's choice for an epilogue"},
  {"br_256_s4_tma", "bias_relu", {BM = 128, BN = 256, BK = 64, stages = 4, tma = true, epilogue_store = "tma"},
   "bias + relu, 128x256x64, 4 TMA stages, one CTA a tile, staged epilogue + TMA store"},
  {"br_256_s4_tma_v8", "bias_relu", {BM = 128, BN = 256, BK = 64, stages = 4, tma = true, epilogue_store = "tma", epilogue_vec = 8},
   "as br_256_s4_tma, 8 outputs a thread (16-byte shared stores)"},
  {"br_256_s4_staged", "bias_relu", {BM = 128, BN = 256, BK = 64, stages = 4, tma = true},
   "bias + relu, 128x256x64, 4 TMA stages, one CTA a tile, staged epilogue, direct stores"},
  {"br_128_s3_ws_p_tma", "bias_relu", with(WSP, {stages = 3, epilogue_store = "tma"}),
   "bias + relu, 128x128x64, 3 stages, warp-specialized, persistent, staged epilogue + TMA store"},
  {"br_128_s3_ws_p_tma_v8", "bias_relu", with(WSP, {stages = 3, epilogue_store = "tma", epilogue_vec = 8}),
   "as br_128_s3_ws_p_tma, 8 outputs a thread (16-byte shared stores)"},
  {"br_128_s3_ws_p_staged", "bias_relu", with(WSP, {stages = 3}),
   "bias + relu, 128x128x64, 3 stages, warp-specialized, persistent, staged epilogue, direct stores"},
  {"br_128_s4_ws_p_staged", "bias_relu", with(WSP, {stages = 4}),
   "bias + relu, 128x128x64, 4 stages, warp-specialized, persistent, staged epilogue, direct stores"},
  {"br_64x256_s3_ws_p_tma", "bias_relu", {BM = 64, BN = 256, BK = 64, stages = 3, tma = true, warp_specialize = true, persistent = true,
                                          epilogue_store = "tma"},
   "bias + relu, 64x256x64 (one consumer warpgroup), 3 stages, warp-specialized, persistent, staged epilogue + TMA store"},
  {"br_128_s3_ws_tma", "bias_relu", {BM = 128, BN = 128, BK = 64, stages = 3, tma = true, warp_specialize = true, epilogue_store = "tma"},
   "bias + relu, 128x128x64, 3 stages, warp-specialized, one CTA a tile, staged epilogue + TMA store"},
}
local want = os.getenv("TIRLUA_BENCH_VARIANTS")
local sel = {}
for _, v in ipairs(VARIANTS) do
  if not want or want == "" or ("," .. want .. ","):find("," .. v[1] .. ",", 1, true) then sel[#sel + 1] = v end
end
local dtypes = {}
for d in (os.getenv("TIRLUA_BENCH_DTYPES") or "float16,bfloat16"):gmatch("[^,]+") do dtypes[#dtypes + 1] = d end
local shapes = {}
for _, a in ipairs(arg or {}) do
  local m, n, k = a:match("^(%d+)x(%d+)x(%d+)$")
  if m then shapes[#shapes + 1] = {tonumber(m), tonumber(n), tonumber(k)} end
end
if #shapes == 0 then shapes = {{4096, 4096, 4096}, {8192, 8192, 8192}, {4096, 11008, 4096}} end

local info = dev:info()
local rows, wrong = {}, 0
print(("%-22s %-8s %-16s %8s %8s %8s %7s %8s %7s %5s %6s"):format("variant", "dtype", "MxNxK", "ms", "TFLOP/s", "plain ms", "/plain",
  "Lt ms", "Lt/ours", "regs", "smem"))
for _, s in ipairs(shapes) do
  local m, n, k = s[1], s[2], s[3]
  local flops = 2.0 * m * n * k
  for _, dt in ipairs(dtypes) do
    collectgarbage()
    local a = tir.nd.random({m, k}, dt, dev, {seed = 31})
    local b = tir.nd.random({n, k}, dt, dev, {seed = 32})
    local bias = tir.nd.random({n}, dt, dev, {seed = 33})
    local dlt = tir.nd.empty({m, n}, dt, dev)
    core.cublaslt_gemm_epilogue(a, b, bias, dlt, true)
    core.cuda_sync(0)
    local tlt = core.cuda_time(function() core.cublaslt_gemm_epilogue(a, b, bias, dlt, true) end, 0, 3, 10, 7)
    local tplain
    for _, v in ipairs(sel) do
      local name, epi, opts = v[1], v[2], v[3]
      local f = workload(m, n, k, dt, epi)
      local o = {intrin = "wgmma", epilogue = (epi ~= "plain" or dt == "float16") and "D" or nil}
      for key, x in pairs(opts or {}) do o[key] = x end
      local why = opts and require("tir.json").encode(opts) or "pick"
      local okb, mod = pcall(function()
        local sch = tc.schedule(f, o)
        return tir.build(sch.mod, "cuda -arch=sm_90a")
      end)
      if not okb then
        print(("%-22s %-8s %-16s  not built: %s"):format(name, dt, ("%dx%dx%d"):format(m, n, k), tostring(mod):match("[^\n]*")))
        goto next
      end
      local d = tir.nd.empty({m, n}, (epi ~= "plain" or dt == "float16") and dt or "float32", dev)
      local args = epi == "plain" and {a, b, d} or {a, b, bias, d}
      mod(table.unpack(args))
      if epi ~= "plain" then
        local okc, e = pcall(tir.testing.assert_allclose, d, dlt, {rtol = 2e-2, atol = 2e-2 * math.sqrt(k / 64)})
        if not okc then
          wrong = wrong + 1
          print(("%-22s %-8s %-16s  WRONG vs cuBLASLt (not timed): %s"):format(name, dt, ("%dx%dx%d"):format(m, n, k), tostring(e):match("[^\n]*")))
          goto next
        end
      end
      do
        local t = mod:time_evaluator({number = 10, repeat_ = 7, warmup = 3})(table.unpack(args))
        if epi == "plain" then tplain = t end
        local r = mod:resources()
        local row = {v = name, dt = dt, shape = ("%dx%dx%d"):format(m, n, k), t = t, tplain = tplain, tlt = tlt, regs = r.registers,
                     spill = r.local_bytes, smem = r.static_smem_bytes + (r.dynamic_smem_bytes or 0), config = why}
        rows[#rows + 1] = row
        common.record{bench = "gemm_epilogue", variant = name, shape = row.shape, dtype = dt, layout = "NT", ms = t * 1e3,
                      tflops = flops / t / 1e12, ref = "cuBLASLt bias+relu", -- (the plain rows too: what our GEMM without the epilogue is worth against it)
                      ref_ms = tlt * 1e3, ref_tflops = flops / tlt / 1e12, gpu = info.name, registers = row.regs, spill_bytes = row.spill,
                      smem_bytes = row.smem, plain_ms = tplain and tplain * 1e3 or nil,
                      vs_plain = tplain and t / tplain or nil, config = why, epilogue = epi}
        print(("%-22s %-8s %-16s %8.4f %8.1f %8s %7s %8.4f %7.3f %5d %6d %s"):format(name, dt, row.shape, t * 1e3, flops / t / 1e12,
          tplain and ("%.4f"):format(tplain * 1e3) or "-", tplain and ("%.3f"):format(t / tplain) or "-", tlt * 1e3, tlt / t, row.regs,
          row.smem, why or ""))
      end
      ::next::
    end
  end
end

local items = {}
for _, v in ipairs(sel) do items[#items + 1] = ("`%s`: %s"):format(v[1], v[4]) end
common.markdown_report("wgmma GEMM + bias + relu vs our plain GEMM and cuBLASLt (CUBLASLT_EPILOGUE_RELU_BIAS)",
  ("%s, %s (%d SMs), commit %s; CUDA events, median of 7 x 10 launches after 3 warm-ups; fused results checked " ..
   "against cuBLASLt's."):format(common.date(), info.name, info.sm_count, common.commit()), items,
  {"variant", "dtype", "MxNxK", "ms", "/ plain", "cuBLASLt ms", "cuBLASLt / ours", "registers", "spill", "smem bytes", "config"}, rows,
  function(r)
    return {r.v, r.dt, r.shape, ("%.4f"):format(r.t * 1e3), r.tplain and ("%.3f"):format(r.t / r.tplain) or "-", ("%.4f"):format(r.tlt * 1e3),
            ("%.3f"):format(r.tlt / r.t), ("%d"):format(r.regs), ("%d"):format(r.spill), ("%d"):format(r.smem), r.config or ""}
  end)
if wrong > 0 then error(("bench/gemm_epilogue.lua: %d configuration(s) differ from cuBLASLt (see WRONG above)"):format(wrong)) end
