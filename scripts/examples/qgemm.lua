-- qgemm.lua -- the fused quantized GEMM (tir.ops.quantized_matmul, TVM's qnn.dense + requantize):
-- uint8 activations with a zero point, symmetric int8 weights (zero point 0) with precomputed
-- column sums, int32 bias, per-channel scale, output zero point, int8 out, all in one kernel
-- (tir.schedules.qgemm on tensor cores: IMMA through tc_gemm).  Prints the 4-term PrimFunc, the scheduled IR
-- and the PTX lines of its instructions; on a GPU runs M x N x K (default 4096^3) and prints
-- TOP/s (bench/gemm_int8.lua compares it with the unfused alternatives); without a GPU runs
-- the simulator at a small size (default 64 x 64 x 64) and checks it bit-exact against the
-- interpreter on the direct (un-rewritten) compute in int64.  Then the same with a zero point per
-- weight column on Hopper's wgmma: timed on an H200 with qgemm's default (the row sums of A by dp4a
-- from the shared A tiles, two threads a row); simulated otherwise with the row sums as one more
-- wgmma m64n8k32 per 32 columns against a ones tile (quantized_matmul a_sums = "ones").
--   tirlua scripts/examples/qgemm.lua [M N K]
local util = require("tir.util")
local qm = tir.ops.quantized_matmul
local qg = require("tir.schedules.qgemm")
local dev = tir.device("cuda", 0)
local has_gpu, why = dev:exists()
local M, N, K = dofile((debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./") .. "size_args.lua")(
  "qgemm", has_gpu and 4096 or 64)
local o = {M = M, N = N, K = K, a_dtype = "uint8", a_zero_point = 131, b_zero_point = 0, b_sums = "input", bias = true,
           scale = "per_channel", out_zero_point = -3}

-- A small problem with scale 0.5 (many exact ties of the rounding; round half to even must
-- agree), run by `run` (the GPU or the simulator) against the interpreter's int64 oracle.
local function ties(run, what)
  local so = {M = 64, N = 64, K = 32, a_dtype = "uint8", bias = true, scale = 0.5, out_zero_point = -3}
  local sf = qm(so)
  local smod = tir.build(qg.schedule(sf, {intrin = "mma", tc = {BM = 64, BN = 64, BK = 32, warp_m = 32, warp_n = 32}}).mod, "cuda",
                         {compile = has_gpu})
  local ha = tir.nd.random({64, 32}, "uint8", nil, {seed = 7, low = 0, high = 3})
  local hb = tir.nd.random({64, 32}, "int8", nil, {seed = 8, low = -3, high = 3})
  local hbias = tir.nd.random({64}, "int32", nil, {seed = 9, low = -50, high = 50})
  local ro = {}
  for k, v in pairs(so) do ro[k] = v end
  ro.four_term, ro.accum_dtype = false, "int64"
  local want = tir.nd.empty({64, 64}, "int8")
  tir.interpret(qm(ro), {ha, hb, hbias, want})
  local got = run(smod, {ha, hb, hbias, tir.nd.empty({64, 64}, "int8")})
  local okc, e = pcall(tir.testing.assert_allclose, got, want, {rtol = 0, atol = 0})
  return okc and ("-- %s vs interpreter (int64 oracle) with rounding ties: bit-exact"):format(what)
             or ("-- %s vs interpreter with rounding ties: DIFFERS (is the codegen's round half-to-even?): %s"):format(what,
                 tostring(e):match("[^\n]*\n[^\n]*"))
end
local f = qm(o)
print(("-- the quantized GEMM %dx%dx%d after the 4-term rewrite (int8 GEMM block C + the epilogue)"):format(M, N, K))
print(f)
-- on tensor cores (IMMA mma.sync m16n8k32 through tc_gemm): 128x128x128 CTAs, 3 stages on a GPU,
-- small tiles for the simulator
local tiles = has_gpu and {BM = 128, BN = 128, BK = 128, warp_m = 64, warp_n = 64, stages = 3}
              or {BM = 64, BN = 64, BK = 64, warp_m = 32, warp_n = 32, stages = 2}
local sch = qg.schedule(f, {intrin = "mma", tc = tiles})
print("-- scheduled (one kernel)")
print(sch.mod)
local mod = tir.build(sch.mod, "cuda", {compile = has_gpu})
if has_gpu then
  local ptx = mod:get_source("ptx") or ""
  print("-- PTX lines with the GEMM's mma.sync, ldmatrix, cp.async, the rounding conversion and the clamp (first of each kind)")
  for _, pat in ipairs({"mma%.sync%.aligned%.m16n8k32[^\n]*", "ldmatrix[^\n]*", "cp%.async[^\n]*", "cvt%.rni[^\n]*", "cvt%.rzi[^\n]*", "max%.f32[^\n]*", "st%.global%.[us]8[^\n]*"}) do
    local first = ptx:match(pat)
    local _, n = ptx:gsub(pat, "")
    if n > 0 then print(("  %4d x  %s"):format(n, first)) end
  end
  local a = tir.nd.random({M, K}, "uint8", dev, {seed = 1})
  local b = tir.nd.random({N, K}, "int8", dev, {seed = 2})
  local bias = tir.nd.random({N}, "int32", dev, {seed = 3, low = -20000, high = 20000})
  local scale = tir.nd.random({N}, "float32", dev, {seed = 4, low = 1 / (K * 8192), high = 1 / (K * 512)})
  local bsum = tir.nd.empty({N}, "int32", dev)
  local cs = tir.Schedule(qm.col_sums_func(N, K, "NK"))
  local bx, tx = cs:split(cs:get_loops(cs:get_block("b_col_sum")), {nil, 128})
  cs:bind(bx, "blockIdx.x"); cs:bind(tx, "threadIdx.x")
  tir.build(cs.mod, "cuda")(b, bsum)
  local out = tir.nd.empty({M, N}, "int8", dev)
  mod(a, b, bias, scale, bsum, out)
  local t = mod:time_evaluator({number = 5, repeat_ = 5, warmup = 2})(a, b, bias, scale, bsum, out)
  print(("-- fused qgemm %dx%dx%d: %.3f ms, %.2f TOP/s"):format(M, N, K, t * 1e3, 2.0 * M * N * K / t / 1e12))
  if dev:info().arch == "sm_90" and M % 128 == 0 and N % 256 == 0 and K % 128 == 0 then
    -- Hopper: the same one kernel on wgmma (qgemm's default there: 128 x 256 x 128 TMA tiles, 4 stages,
    -- one CTA a tile in the grouped order, the accumulators staged in shared memory for the epilogue,
    -- packed 4-byte int8 stores), its output = the IMMA kernel's
    local wmod = tir.build(qg.schedule(f, {intrin = "wgmma"}).mod, "cuda -arch=sm_90a")
    local wout = tir.nd.empty({M, N}, "int8", dev)
    wmod(a, b, bias, scale, bsum, wout)
    tir.testing.assert_allclose(wout, out, {rtol = 0, atol = 0})
    local tw = wmod:time_evaluator({number = 5, repeat_ = 5, warmup = 2})(a, b, bias, scale, bsum, wout)
    print(("-- fused qgemm on wgmma %dx%dx%d: %.3f ms, %.2f TOP/s (= the IMMA kernel's output)"):format(M, N, K, tw * 1e3,
          2.0 * M * N * K / tw / 1e12))
    -- asymmetric weights (a zero point per column): the row sums of A too, in the same kernel, from the
    -- shared A tiles by dp4a, two threads a row (qgemm's default; the a_sums = "ones" form -- one more
    -- wgmma m64n8k32 per 32 columns, simulated above -- measured slower); = the IMMA kernel's output
    local zo = {}
    for k, v in pairs(o) do zo[k] = v end
    zo.b_zero_point = "per_column"
    local zb = tir.nd.random({N}, "int32", dev, {seed = 5, low = -128, high = 127})
    local imod = tir.build(qg.schedule(qm(zo), {intrin = "mma", tc = tiles}).mod, "cuda")
    local iout = tir.nd.empty({M, N}, "int8", dev)
    imod(a, b, zb, bias, scale, bsum, iout)
    local zmod = tir.build(qg.schedule(qm(zo), {intrin = "wgmma"}).mod, "cuda -arch=sm_90a")
    local zout = tir.nd.empty({M, N}, "int8", dev)
    zmod(a, b, zb, bias, scale, bsum, zout)
    tir.testing.assert_allclose(zout, iout, {rtol = 0, atol = 0})
    local tz = zmod:time_evaluator({number = 5, repeat_ = 5, warmup = 2})(a, b, zb, bias, scale, bsum, zout)
    print(("-- with zb per column (row sums of A by dp4a, two threads a row): %.3f ms, %.2f TOP/s (= the IMMA kernel's output)"):format(
          tz * 1e3, 2.0 * M * N * K / tz / 1e12))
  end
  print(ties(function(smod, args)
    local dargs = {}
    for i, x in ipairs(args) do dargs[i] = x:to(dev) end
    smod(table.unpack(dargs))
    return dargs[#dargs]
  end, "GPU"))
else
  print(("-- no GPU (%s): the simulator runs the lowered kernel at %dx%dx%d"):format(why, M, N, K))
  local args = tir.testing.random_args(f, 5)
  local ro = {}
  for k, v in pairs(o) do ro[k] = v end
  ro.four_term, ro.accum_dtype, ro.b_sums = false, "int64", nil
  local ref = qm(ro)
  -- the reference takes no column sums: compute them from B
  args[5] = qm.col_sums(args[2], "NK")
  local ref_args = {args[1], args[2], args[3], args[4], tir.nd.empty({M, N}, "int8")}
  tir.interpret(ref, ref_args)
  local rep = tir.simulate(mod, args)
  local st = tir.testing.assert_allclose(args[6], ref_args[5], {rtol = 0, atol = 0})
  print(("simulator: %s, %s, no issues (%d); bit-exact against the direct int64 compute (max abs error %g)"):format(
    util.count(rep.ctas, "CTA"), util.count(rep.barriers or 0, "barrier"), rep.n_issues, st.max_abs))
  print(ties(function(smod, args)
    tir.simulate(smod, args)
    return args[#args]
  end, "simulator"))
  -- Hopper's wgmma with a zero point per weight column: the row sums of A as one more wgmma
  -- m64n8k32 per 32 columns against a ones tile (a_sums = "ones"), in the same kernel
  local zo = {M = 128, N = 256, K = 256, a_dtype = "uint8", a_zero_point = 131, b_zero_point = "per_column", b_sums = "input",
              bias = true, scale = "per_channel", out_zero_point = -3, a_sums = "ones"}
  local zf = qm(zo)
  local zmod = tir.build(qg.schedule(zf, {intrin = "wgmma", tc = {BM = 128, BN = 256, BK = 128, stages = 2, tma = true}}).mod,
                         "cuda -arch=sm_90a", {compile = false})
  local zargs = tir.testing.random_args(zf, 6)
  zargs[3] = tir.nd.random({256}, "int32", nil, {seed = 7, low = -128, high = 127}) -- zb: int8's range
  zargs[5] = tir.nd.array((function() local t = {} for j = 1, 256 do t[j] = j % 3 == 0 and 0.5 or j * 1e-7 end return t end)(), "float32")
  zargs[6] = qm.col_sums(zargs[2], "NK")
  local zr = {}
  for k, v in pairs(zo) do zr[k] = v end
  zr.four_term, zr.accum_dtype, zr.b_sums, zr.a_sums = false, "int64", nil, nil
  local zwant = tir.nd.empty({128, 256}, "int8")
  tir.interpret(qm(zr), {zargs[1], zargs[2], zargs[3], zargs[4], zargs[5], zwant})
  local zrep = tir.simulate(zmod, zargs)
  local zst = tir.testing.assert_allclose(zargs[7], zwant, {rtol = 0, atol = 0})
  print(("simulator: wgmma with zb per column (row sums as m64n8k32 against ones, %d warp-level ops, %d issues): bit-exact "
         .. "against the direct int64 compute (max abs error %g)"):format(zrep.warp_ops, zrep.n_issues, zst.max_abs))
end
