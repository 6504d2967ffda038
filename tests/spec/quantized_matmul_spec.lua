-- quantized_matmul_spec.lua -- tir.ops.quantized_matmul (qnn.dense + requantize): the 4-term
-- rewrite against the direct compute accumulated in int64 (the oracle), bit-exact on random
-- inputs with extreme values and zero points at the ends of their ranges, round-half-to-even
-- ties, saturation, ReLU, every parameter form; bad options as tir.Errors.
local tir = require("tir")
local U = require("spec_util")
local qm = tir.ops.quantized_matmul

-- deterministic inputs: uniform in [lo, hi] with the first rows/columns at the extremes
local lcg, matrix = U.lcg, U.extreme_matrix

-- the arguments of f (a quantized_matmul PrimFunc) built from the options
local function inputs(o, seed)
  local rnd = lcg(seed)
  local args = {matrix(o.M, o.K, o.a_dtype or "int8", rnd)}
  args[2] = (o.b_layout or "NK") == "NK" and matrix(o.N, o.K, o.b_dtype or "int8", rnd) or matrix(o.K, o.N, o.b_dtype or "int8", rnd)
  local function vec(n, lo, hi, ends)
    local t = {}
    for i = 1, n do t[i] = i == 1 and ends[1] or i == 2 and ends[2] or rnd(lo, hi) end
    return tir.nd.array(t, "int32")
  end
  if o.a_zero_point == "per_row" then args[#args + 1] = vec(o.M, 0, 255, {0, 255}) end
  if o.b_zero_point == "per_column" then args[#args + 1] = vec(o.N, -128, 127, {-128, 127}) end
  if o.bias then args[#args + 1] = vec(o.N, -5000, 5000, {-2 ^ 20 // 1, 2 ^ 20 // 1}) end
  if o.scale == "per_tensor" or o.scale == "per_channel" then
    local n = o.scale == "per_tensor" and 1 or o.N
    local t = {}
    -- scales around 1 / (K * 64) with a few exact halves (ties of the rounding)
    for i = 1, n do t[i] = i % 3 == 0 and 0.5 or (rnd(1, 1000) / 1000) / (o.K * 128) end
    args[#args + 1] = tir.nd.array(t, "float32")
  end
  return args
end

-- four_term vs the direct compute in int64: the same arguments, bit-exact outputs
local function check(o, seeds)
  local f = qm(o)
  local ref_o = {}
  for k, v in pairs(o) do ref_o[k] = v end
  ref_o.four_term, ref_o.accum_dtype, ref_o.b_sums, ref_o.a_sums = false, "int64", nil, nil
  local ref = qm(ref_o)
  local out_dt = o.out_dtype or "int8"
  for _, seed in ipairs(seeds or {1, 2}) do
    local args = inputs(o, seed)
    local out_ref = tir.nd.empty({o.M, o.N}, out_dt)
    local ra = {table.unpack(args)}
    ra[#ra + 1] = out_ref
    tir.interpret(ref, ra)
    local fa = {table.unpack(args)}
    if o.b_sums == "input" then fa[#fa + 1] = qm.col_sums(args[2], o.b_layout or "NK") end
    if o.a_sums == "input" then
      local rs = tir.nd.empty({o.M}, "int32")
      tir.interpret(qm.row_sums_func(o.M, o.K, o.a_dtype or "int8"), {args[1], rs})
      fa[#fa + 1] = rs
    end
    local out = tir.nd.empty({o.M, o.N}, out_dt)
    fa[#fa + 1] = out
    tir.interpret(f, fa)
    assert.are.same(out_ref:to_table(), out:to_table())
  end
  return f
end

-- a one-kernel qgemm module (b_sums = "input", int8 out) simulated on inputs(o, seed) and the
-- column sums of B: the simulator against the interpreter on f, the output against the direct
-- compute in int64
local function simulate_vs_oracle(o, f, mod, seed)
  local args = inputs(o, seed)
  args[#args + 1] = qm.col_sums(args[2], "NK")
  args[#args + 1] = tir.nd.empty({o.M, o.N}, "int8")
  local rep = tir.simulate(mod, args, {reference = f})
  assert.are.equal(0, rep.n_issues)
  assert.are.equal(1, rep.kernels)
  local ro = {}
  for k, v in pairs(o) do ro[k] = v end
  ro.four_term, ro.accum_dtype, ro.b_sums = false, "int64", nil
  local ra = {}
  for q = 1, #args - 2 do ra[q] = args[q] end
  local ref_out = tir.nd.empty({o.M, o.N}, "int8")
  ra[#ra + 1] = ref_out
  tir.interpret(qm(ro), ra)
  assert.are.same(ref_out:to_table(), args[#args]:to_table())
  return rep
end

describe("tir.ops.quantized_matmul", function()
  it("prints the 4-term rewrite: a pure int8 GEMM, row sums of A, column sums of B, one epilogue", function()
    local f = qm{M = 16, N = 8, K = 32, a_dtype = "uint8", a_zero_point = 7, b_zero_point = -3, bias = true, scale = 0.25}
    local s = tostring(f)
    assert.matches('%+ T.cast%("int32", A%[{v_[%w_]+, v_k}%]%) %* T.cast%("int32", B%[{v_[%w_]+, v_k}%]%)', s)
    assert.matches('T.block%("a_row_sum"', s)
    assert.matches('T.block%("b_col_sum"', s)
    -- - zb * sum a - za * sum b + K za zb, then bias
    assert.matches('C%[{v_[%w_]+, v_[%w_]+}%] %- %(%-3%) %* a_row_sum%[{v_[%w_]+}%] %- 7 %* b_col_sum%[{v_[%w_]+}%] %+ %(%-672%)', s)
    assert.matches('T%.round%(', s) -- round half to even (docs/BUILTINS.md)
    -- terms a zero point of 0 removes are left out
    local g = tostring(qm{M = 16, N = 8, K = 32})
    assert.is_nil(g:find("a_row_sum", 1, true))
    assert.is_nil(g:find("b_col_sum", 1, true))
    U.assert_roundtrip(f)
  end)

  it("is bit-exact against the direct int64 compute: zero points at the ends, extremes, per-channel forms", function()
    check({M = 9, N = 7, K = 20, a_dtype = "uint8", a_zero_point = 255, b_zero_point = -128, scale = "per_channel",
           bias = true, out_zero_point = 3})
    check({M = 8, N = 6, K = 16, a_dtype = "uint8", a_zero_point = 0, b_zero_point = 127, scale = "per_tensor"})
    check({M = 5, N = 12, K = 24, a_dtype = "int8", a_zero_point = -128, b_zero_point = "per_column", scale = "per_channel",
           bias = true, out_dtype = "uint8", out_zero_point = 128})
    check({M = 6, N = 5, K = 8, a_zero_point = "per_row", b_zero_point = "per_column", b_layout = "KN", scale = 0.001,
           out_zero_point = -128, relu = true})
    check({M = 7, N = 9, K = 12, a_dtype = "uint8", a_zero_point = 128, b_zero_point = 5, b_sums = "input", scale = "per_channel"})
    check({M = 7, N = 9, K = 12, a_dtype = "uint8", a_zero_point = 128, b_zero_point = "per_column", b_sums = "input",
           a_sums = "input", scale = "per_channel", bias = true})
  end)

  it("a_sums = \"ones\": the row sums of A as a product with a ones matrix, bit-exact against the int64 compute", function()
    -- printed: block a_ones (int8 [8, 32] of ones), block a_row_sum [M, 8] = sum A * a_ones, the epilogue at column j % 8
    local f = qm{M = 16, N = 24, K = 64, a_zero_point = 3, b_zero_point = -2, a_sums = "ones"}
    local s = tostring(f)
    assert.matches('T.block%("a_ones"', s)
    assert.matches('a_ones%[{v_[%w_]+, v_[%w_]+}%] = T.int8%(1%)', s)
    assert.matches('T.cast%("int32", A%[{v_i, v_kao %* 32 %+ v_kai}%]%) %* T.cast%("int32", a_ones%[{v_j, v_kai}%]%)', s)
    assert.matches('a_row_sum%[{v_[%w_]+, v_[%w_]+ %% 8}%]', s)
    U.assert_roundtrip(f)
    -- extremes, zero points at the ends, uint8 A, per-row za, relu, uint8 out
    check({M = 9, N = 10, K = 64, a_dtype = "uint8", a_zero_point = 255, b_zero_point = -128, a_sums = "ones", scale = "per_channel",
           bias = true, out_zero_point = 3})
    check({M = 6, N = 17, K = 32, a_dtype = "int8", a_zero_point = -128, b_zero_point = 127, a_sums = "ones", b_sums = "input",
           scale = "per_tensor"})
    check({M = 5, N = 8, K = 96, a_zero_point = "per_row", b_zero_point = "per_column", a_sums = "ones", scale = 0.001,
           out_dtype = "uint8", out_zero_point = 0, relu = true})
    -- zb = 0 needs no row sums: the option leaves nothing behind
    assert.is_nil(tostring(qm{M = 4, N = 4, K = 32, a_zero_point = 3, a_sums = "ones"}):find("a_ones", 1, true))
    U.expect_error(function() qm{M = 4, N = 4, K = 40, b_zero_point = 1, a_sums = "ones"} end, "ValueError in quantized_matmul",
                   "K = 40 must be a multiple of 32")
    U.expect_error(function() qm{M = 4, N = 4, K = 32, b_zero_point = 1, a_sums = "ones", four_term = false} end,
                   'a_sums = "ones" needs four_term')
    U.expect_error(function() qm{M = 4, N = 4, K = 32, a_sums = "all"} end, "a_sums must be one of compute, input, ones")
  end)

  it("rounds half to even and saturates at the output range", function()
    -- A = 1, B = 1, zero points 0: acc = K; scale 0.5 puts acc = odd on ties
    local f = qm{M = 1, N = 4, K = 3, b_layout = "KN", scale = "per_channel", out_zero_point = 0}
    local a = tir.nd.array({{1, 1, 1}}, "int8")
    local b = tir.nd.array({{1, 1, 1, 127}, {0, 1, 1, 127}, {0, 0, 1, 127}}, "int8")
    local scale = tir.nd.array({0.5, 0.5, 0.5, 1.0}, "float32")
    local out = tir.nd.empty({1, 4}, "int8")
    tir.interpret(f, {a, b, scale, out})
    -- 0.5 -> 0, 1.0 -> 1, 1.5 -> 2, 381 -> 127 (saturated)
    assert.are.same({{0, 1, 2, 127}}, out:to_table())
    -- ReLU with a zero point: the floor is the zero point
    local g = qm{M = 1, N = 2, K = 1, b_layout = "KN", scale = 1.0, out_zero_point = 10, relu = true}
    local o2 = tir.nd.empty({1, 2}, "int8")
    tir.interpret(g, {tir.nd.array({{-100}}, "int8"), tir.nd.array({{1, -1}}, "int8"), o2})
    assert.are.same({{10, 110}}, o2:to_table())
  end)

  it("has int32, float16 and float32 (dequantized) outputs", function()
    for _, dt in ipairs({"int32", "float16", "float32"}) do
      check({M = 4, N = 5, K = 8, a_dtype = "uint8", a_zero_point = 17, b_zero_point = "per_column", bias = true, out_dtype = dt,
             scale = dt == "int32" and 1.0 or "per_channel"})
    end
  end)

  it("refuses bad options with tir.Errors naming the op", function()
    local base = {M = 4, N = 4, K = 8}
    local function with(k, v)
      local o = {}
      for kk, vv in pairs(base) do o[kk] = vv end
      o[k] = v
      return function() qm(o) end
    end
    U.expect_error(with("a_zero_point", 1.5), "quantized_matmul", "a_zero_point must be an integer", "1.5 (a float)")
    U.expect_error(with("b_zero_point", 200), "b_zero_point = 200 is outside the range of int8")
    U.expect_error(with("a_dtype", "float16"), "a_dtype must be one of int8, uint8")
    U.expect_error(with("out_dtype", "int4"), "out_dtype must be one of")
    U.expect_error(with("M", 0), "M must be a positive integer")
    U.expect_error(with("K", 2.5), "K must be a positive integer")
    U.expect_error(with("zero_point", 1), "unknown option 'zero_point'")
    U.expect_error(with("out_zero_point", 300), "out_zero_point = 300 is outside the range of int8")
    U.expect_error(with("scale", "per_row"), "scale must be a number")
    U.expect_error(with("relu", 1), "relu must be a boolean")
    U.expect_error(function() qm(3) end, "expects a table of options")
    U.expect_error(function() qm{M = 4, N = 4, K = 8, accum_dtype = "int64"} end, "accum_dtype int64 is for the direct compute")
    U.expect_error(with("scale", 0), "scale must be positive, got 0")
    U.expect_error(with("scale", -0.25), "scale must be positive")
    -- every option's type is checked (util.check_opts): a non-string name used to be accepted
    U.expect_error(with("name", 1), "TypeError in quantized_matmul", "option name must be an identifier string", "got 1")
    U.expect_error(with("name", "my kernel"), "option name must be an identifier string")
    U.expect_error(with("bias", "yes"), "option bias must be a boolean")
    U.expect_error(with("four_term", 0), "option four_term must be a boolean")
    U.expect_error(with("out_zero_point", 1.0), "option out_zero_point must be an integer", "1.0 (a float)")
    U.expect_error(with("b_layout", 1), "option b_layout must be a string")
    U.expect_error(with("scale", {}), "option scale must be a number")
    assert.are.equal("my_q", qm{M = 4, N = 4, K = 8, name = "my_q"}.name)
  end)

  it("refuses a K whose sum can leave the int32 accumulator, from the dtypes and zero points", function()
    -- int8 x int8, zero points 0: |a b| <= 128 * 128, so K * 16384 <= 2^31 - 1 up to K = 131071
    assert.is_truthy(qm{M = 2, N = 2, K = 131071})
    U.expect_error(function() qm{M = 2, N = 2, K = 131072} end, "quantized_matmul", "K = 131072 can overflow the int32 accumulator",
                   "K * 128 * 128 = 2147483648", "the largest K is 131071")
    -- uint8 A with za = 0 (|a| <= 255) x int8 B with a per-column zb (|b - zb| <= 255): 33025
    assert.is_truthy(qm{M = 2, N = 2, K = 33025, a_dtype = "uint8", b_zero_point = "per_column"})
    U.expect_error(function() qm{M = 2, N = 2, K = 33026, a_dtype = "uint8", b_zero_point = "per_column"} end,
                   "K * 255 * 255", "the largest K is 33025")
    -- a zero point at the end of the range doubles the reach: int8 A with za = 127 -> |a - za| <= 255
    U.expect_error(function() qm{M = 2, N = 2, K = 70000, a_zero_point = 127} end, "K * 255 * 128")
    -- the int64 oracle has no such limit
    assert.is_truthy(qm{M = 2, N = 2, K = 140000, four_term = false, accum_dtype = "int64", a_zero_point = 127})
  end)

  it("tir.schedules.qgemm: one kernel, simulated bit-exact against the int64 oracle; sums computed in the PrimFunc refused", function()
    local qg = require("tir.schedules.qgemm")
    for _, c in ipairs({{M = 64, N = 64, K = 64, opts = {}}, {M = 16, N = 64, K = 32,
                        opts = {BM = 16, TY = 4, BN = 64, TX = 16, BK = 32, vec = 2}}}) do
      local o = {M = c.M, N = c.N, K = c.K, a_dtype = "uint8", a_zero_point = 200, b_sums = "input", bias = true,
                 scale = "per_channel", out_zero_point = 9}
      local f = qm(o)
      simulate_vs_oracle(o, f, tir.build(qg.schedule(f, c.opts).mod, "cuda", {compile = false}), 4)
    end
    -- on tensor cores (IMMA through tc_gemm, the epilogue inlined into the staged write-back)
    for _, adt in ipairs({"int8", "uint8"}) do
      local o = {M = 128, N = 64, K = 128, a_dtype = adt, a_zero_point = adt == "uint8" and 255 or -128, b_sums = "input",
                 bias = true, scale = "per_channel", out_zero_point = 9}
      local f = qm(o)
      local sch = qg.schedule(f, {intrin = "mma", tc = {BM = 64, BN = 64, BK = 64, warp_m = 32, warp_n = 32, stages = 2}})
      local mod = tir.build(sch.mod, "cuda -arch=sm_80", {compile = false})
      local args = inputs(o, 5)
      args[#args + 1] = qm.col_sums(args[2], "NK")
      args[#args + 1] = tir.nd.empty({o.M, o.N}, "int8")
      local rep = tir.simulate(mod, args, {reference = f})
      assert.are.equal(0, rep.n_issues)
      assert.are.equal(1, rep.kernels)
      assert.is_true(rep.warp_ops > 0)
    end
    U.expect_error(function() qg.schedule(qm{M = 64, N = 64, K = 64, b_zero_point = 3}) end, "qgemm",
                   "block a_row_sum is computed in the PrimFunc", "a_sums = \"input\"")
    -- zb != 0 with both sums as inputs: one kernel for the quantized GEMM
    local o = {M = 64, N = 64, K = 64, a_dtype = "uint8", a_zero_point = 3, b_zero_point = -5, b_sums = "input", a_sums = "input",
               bias = true, scale = "per_channel", out_zero_point = 9}
    local f = qm(o)
    for _, intrin in ipairs({"dp4a", "mma"}) do
      local sch = qg.schedule(f, {intrin = intrin, tc = intrin == "mma" and {BM = 64, BN = 64, BK = 64, warp_m = 32, warp_n = 32} or nil})
      local mod = tir.build(sch.mod, "cuda -arch=sm_80", {compile = false})
      local rep = tir.simulate(mod, tir.testing.random_args(f, 3), {reference = f})
      assert.are.equal(0, rep.n_issues)
      assert.are.equal(1, rep.kernels)
    end
    U.expect_error(function() qg.schedule(qm{M = 64, N = 64, K = 64}, {BX = 1}) end, "unknown option 'BX'")
  end)

  it("IMMA with zb != 0 is one kernel: the row sums of A from the GEMM's shared tiles, bit-exact vs the int64 oracle", function()
    local qg = require("tir.schedules.qgemm")
    local cases = {
      {a_dtype = "int8", a_zero_point = 127, b_zero_point = -128, stages = 3},   -- zero points at the ends
      {a_dtype = "uint8", a_zero_point = 0, b_zero_point = 127, stages = 2},
      {a_dtype = "uint8", a_zero_point = "per_row", b_zero_point = "per_column", stages = 1},
      {a_dtype = "int8", a_zero_point = 0, b_zero_point = "per_column", stages = 2, relu = true},
    }
    for n, c in ipairs(cases) do
      local o = {M = 128, N = 64, K = 192, a_dtype = c.a_dtype, a_zero_point = c.a_zero_point, b_zero_point = c.b_zero_point,
                 b_sums = "input", bias = true, scale = "per_channel", out_zero_point = -3, relu = c.relu}
      local f = qm(o)
      local sch = qg.schedule(f, {intrin = "mma", tc = {BM = 64, BN = 64, BK = 64, warp_m = 32, warp_n = 32, stages = c.stages}})
      -- the printed IR: the sums' update inside the GEMM's k loop, reading the shared A tile
      local ir = tostring(sch.mod)
      local kloop = ir:find("software_pipeline_stage", 1, true) or ir:find("for ax1_0 in T.serial", 1, true)
      local upd = ir:find('T.block("a_row_sum_update_o"', 1, true)
      local mma = ir:find('T.block("C_update_o"', 1, true)
      assert.is_truthy(upd and mma and (c.stages == 1 or kloop < upd))
      assert.is_truthy(ir:find('"tensor_intrin"] = "dp4a_row_sum64_' .. (c.a_dtype == "uint8" and "u8" or "s8") .. '_shared"', 1, true))
      assert.is_truthy(ir:find("A_shared[{i_0 * 64 + ax0_1 * 64", 1, true))
      local mod = tir.build(sch.mod, "cuda -arch=sm_80", {compile = false})
      assert.are.equal(1, #mod:kernels())
      simulate_vs_oracle(o, f, mod, 10 + n)
    end
    -- the same on XOR-swizzled tiles (tc_gemm swizzle = true, the best measured IMMA layout):
    -- the row sums' 4-byte reads of A (a view's Broadcast + Ramp index) follow the swizzle
    local zo = {M = 128, N = 128, K = 192, a_dtype = "int8", a_zero_point = 5, b_zero_point = "per_column", b_sums = "input",
                bias = true, scale = "per_channel", out_zero_point = -3}
    local zf = qm(zo)
    local zs = qg.schedule(zf, {intrin = "mma", tc = {BM = 64, BN = 64, BK = 64, warp_m = 32, warp_n = 16, stages = 3, swizzle = true}})
    simulate_vs_oracle(zo, zf, tir.build(zs.mod, "cuda -arch=sm_80", {compile = false}), 21)
    -- DP4A with 4-byte tile copies: 32-bit accesses typed unsigned int (NVRTC has no `uint`)
    local pf = qm{M = 128, N = 128, K = 64, out_dtype = "int32"}
    local dsrc = tir.build(qg.schedule(pf, {intrin = "dp4a", BM = 128, BN = 128, vec = 4}).mod, "cuda -arch=sm_80",
                           {compile = false}):get_source("cuda")
    assert.is_truthy(dsrc:find("*(unsigned int*)(A_shared", 1, true))
    assert.is_falsy(dsrc:find("(uint*)", 1, true))
    -- DP4A pipelined (cp.async 4-byte copies, 2 stages) with padded k-group planes: simulated
    -- bit-exact; the planes 16 mod 128 bytes apart make the 4-byte copies conflict-free
    for _, so in ipairs({{stages = 2, pad_planes = true}, {stages = 3}}) do
      local o = {intrin = "dp4a", BM = 128, BN = 128, vec = 4}
      for k2, v in pairs(so) do o[k2] = v end
      local dmod = tir.build(qg.schedule(pf, o).mod, "cuda -arch=sm_80", {compile = false})
      assert.is_truthy(dmod:get_source("cuda"):find("tir_cp_async<4>", 1, true))
      local rep = tir.simulate(dmod, tir.testing.random_args(pf, 8), {reference = pf})
      assert.are.equal(0, rep.n_issues)
      assert.is_true(rep.cp_async > 0)
    end
    local function copy(planes_stride)
      -- one warp of the copy: lane l (tx = l % 16, ty = l // 16) stores k-group tx % 8 of row
      -- 2 ty + tx // 8: plane tx % 8, byte 4 * row
      local lay = tir.layout.shared{shape = {8, 512}, dtype = "int8", row_stride = planes_stride}
      local acc = {}
      for l = 0, 31 do
        local tx, ty = l % 16, l // 16
        acc[l + 1] = {r = tx % 8, c = 4 * (2 * ty + tx // 8), bytes = 4}
      end
      return (lay:conflicts(acc))
    end
    assert.are.equal(8, copy(512))
    assert.are.equal(1, copy(528))
    -- lane_tile = 4 (CUTLASS's SIMT lane layout, rows permuted within the k-group planes):
    -- interpreter-equivalent, simulated bit-exact, and a warp's 16-byte loads of B's plane read
    -- consecutive chunks (lane tx: chunk tx + 16 h) instead of chunks 32 bytes apart
    -- (two tiles of M or N: the permutation is per 128-row tile of the uncompacted buffer -- a
    -- one-tile problem would not see a map that confuses the tiles)
    local cases = {{qm{M = 256, N = 128, K = 64, out_dtype = "int32"}, {stages = 2, pad_planes = true, lane_tile = 4}},
                   {qm{M = 128, N = 256, K = 128, out_dtype = "int32"}, qg.dp4a_options(128, 256)},
                   {pf, {lane_tile = 2, TY = 8, TX = 32}, true},
                   -- one barrier per k step (early_wait): the simulator's race check sees a missing one
                   {qm{M = 128, N = 128, K = 256, out_dtype = "int32"}, {stages = 3, BK = 64, pad_planes = true, lane_tile = 4,
                                                                         early_wait = true}}}
    for _, c in ipairs(cases) do
      local o = {intrin = "dp4a", BM = 128, BN = 128, vec = 4}
      for k2, v in pairs(c[2]) do o[k2] = v end
      local sch = qg.schedule(c[1], o)
      if c[3] then U.assert_equiv(c[1], sch.mod, {trials = 1}) else U.assert_roundtrip(sch.mod) end
      local dmod = tir.build(sch.mod, "cuda -arch=sm_80", {compile = false})
      local rep = tir.simulate(dmod, tir.testing.random_args(c[1], 9), {reference = c[1]})
      assert.are.equal(0, rep.n_issues)
    end
    assert.are.same({intrin = "dp4a"}, qg.dp4a_options(64, 192))
    U.expect_error(function() qg.dp4a_options(0, 128) end, "m must be a positive integer")
    local src = tir.build(qg.schedule(pf, {intrin = "dp4a", BM = 128, BN = 128, vec = 4, lane_tile = 4}).mod, "cuda -arch=sm_80",
                          {compile = false}):get_source("cuda")
    -- C[h * 4 + e] of B's half h = 1, e = 1: byte 16 tx + 256 + 4 of the plane
    assert.is_truthy(src:find("(B_shared + ((((int)threadIdx.x) * 16) + 260))", 1, true))
    local function b_load(lane_tile)
      local lay = tir.layout.shared{shape = {1, 512}, dtype = "int8"}
      local acc = {}
      for l = 0, 31 do
        local tx = l % 16
        acc[l + 1] = {r = 0, c = lane_tile and 16 * tx or 32 * tx, bytes = 16}
      end
      return (lay:conflicts(acc))
    end
    assert.are.equal(2, b_load(false))
    assert.are.equal(1, b_load(true))
    U.expect_error(function() qg.schedule(pf, {intrin = "dp4a", BM = 128, BN = 128, lane_tile = 3}) end, "lane_tile")
    -- the PTX has the dp4a against ones
    local f = qm{M = 128, N = 128, K = 256, a_zero_point = 5, b_zero_point = 9, b_sums = "input"}
    local mod = tir.build(qg.schedule(f, {intrin = "mma", tc = {BK = 128, stages = 3}}).mod, "cuda -arch=sm_80", {compile = false})
    assert.is_truthy(mod:get_source("cuda"):find("16843009", 1, true))
  end)
end)
