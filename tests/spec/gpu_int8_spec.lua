-- gpu_int8_spec.lua -- the int8 tensor-core GEMMs on a real GPU (#gpu): IMMA (mma.sync m16n8k32)
-- and int8 WMMA schedules of tir.schedules.tc_gemm, in every layout, padded odd sizes, LLM
-- shapes and u8 x s8, checked bit-exactly against a CUDA-core int32 kernel of the same compute
-- (one thread per element, no tensor cores) and on samples against int64 arithmetic on the CPU.
-- Without a GPU: pending.
local tir = require("tir")
local tc = require("tir.schedules.tc_gemm")

local dev = tir.device("cuda", 0)
-- a copy of an NDArray on another device (NDArray:copyfrom copies across devices)
local function copy_to(x, dev)
  local y = tir.nd.empty(x:shape(), x:dtype(), dev)
  y:copyfrom(x)
  return y
end
local has_gpu, why = dev:exists()

-- the plain kernel: C's loops bound to 16x16 thread blocks
local function reference_module(f)
  local s = tir.Schedule(f)
  local blk = s:get_block("C")
  local l = {s:get_loops(blk)}
  local i, j = l[#l - 2], l[#l - 1]
  local io, ii = s:split(i, {nil, 16})
  local jo, ji = s:split(j, {nil, 16})
  s:reorder(io, jo, ii, ji)
  s:bind(io, "blockIdx.y"); s:bind(jo, "blockIdx.x"); s:bind(ii, "threadIdx.y"); s:bind(ji, "threadIdx.x")
  return tir.build(s.mod, "cuda")
end

local function check(m, n, k, dtype, layout, o)
  local divides = m % o.BM == 0 and n % o.BN == 0 and k % o.BK == 0
  local f = tc.workload(m, n, k, dtype, "int32", not divides and {o.BM, o.BN, o.BK} or nil, layout)
  local mod = tir.build(tc.schedule(f, o).mod, "cuda")
  local plain = tc.workload(m, n, k, dtype, "int32", nil, layout)
  local ref = reference_module(plain)
  local args, host = {}, {}
  for i = 1, 2 do
    local p = plain.params[i]
    local shape = {p.shape[1].value, p.shape[2].value}
    local lo, hi = p.dtype == "uint8" and 0 or -128, p.dtype == "uint8" and 255 or 127
    host[i] = tir.nd.random(shape, p.dtype, tir.cpu(), {seed = 11 * i + m, low = lo, high = hi})
    args[i] = copy_to(host[i], dev)
  end
  local c = tir.nd.empty({m, n}, "int32", dev)
  local r = tir.nd.empty({m, n}, "int32", dev)
  mod(args[1], args[2], c)
  ref(args[1], args[2], r)
  local ch, rh = copy_to(c, tir.cpu()), copy_to(r, tir.cpu())
  local bad = 0
  for e = 0, m * n - 1 do if ch:get(e) ~= rh:get(e) then bad = bad + 1 end end
  assert.are.equal(0, bad)
  local ta, tb = layout:sub(1, 1) == "T", layout:sub(2, 2) == "T"
  for s = 0, 63 do
    local i, j = (s * 7919) % m, (s * 104729) % n
    local acc = 0
    for kk = 0, k - 1 do
      local av = ta and host[1]:get(kk, i) or host[1]:get(i, kk)
      local bv = tb and host[2]:get(j, kk) or host[2]:get(kk, j)
      acc = acc + av * bv
    end
    assert.are.equal(acc, ch:get(i, j))
  end
end

describe("#gpu int8 tensor-core GEMM", function()
  if not has_gpu then
    it("is skipped: " .. tostring(why), function() pending("no GPU: " .. tostring(why)) end)
    return
  end
  local big = {intrin = "mma", BM = 128, BN = 128, BK = 64, warp_m = 64, warp_n = 64, stages = 3}
  local small = {intrin = "mma", BM = 64, BN = 64, BK = 64, warp_m = 32, warp_n = 32, stages = 2}
  for _, s in ipairs({{1024, 1024, 1024}, {4096, 4096, 4096}, {16, 11008, 4096}, {128, 11008, 4096}, {1000, 1000, 1000}, {100, 130, 70}}) do
    it(("IMMA m16n8k32, NT, %dx%dx%d is bit-exact"):format(s[1], s[2], s[3]), function()
      check(s[1], s[2], s[3], "int8", "NT", s[1] < 128 and small or big)
    end)
  end
  for _, lay in ipairs({"NN", "TN", "TT"}) do
    it(("IMMA, layout %s (operands made k-major in shared memory), 512x384x256 is bit-exact"):format(lay), function()
      check(512, 384, 256, "int8", lay, big)
    end)
  end
  it("IMMA u8 x s8 and u8 x u8, 1024x512x768, bit-exact", function()
    check(1024, 512, 768, {"uint8", "int8"}, "NT", big)
    check(1024, 512, 768, "uint8", "NT", big)
  end)
  it("int8 WMMA m16n16k16 (NN, NT) and m32n8k16 (NT), 512x512x512, bit-exact", function()
    local w = {intrin = "wmma", BM = 128, BN = 128, BK = 32, warp_m = 64, warp_n = 64, stages = 2}
    check(512, 512, 512, "int8", "NN", w)
    check(512, 512, 512, "int8", "NT", w)
    w.wmma_shape = {32, 8, 16}
    check(512, 512, 512, "int8", "NT", w)
  end)
  it("fused quantized GEMM with per-column zb (row sums of A in the IMMA kernel), 256x128x512, = the int64 oracle", function()
    local qm = tir.ops.quantized_matmul
    local qg = require("tir.schedules.qgemm")
    for _, adt in ipairs({"int8", "uint8"}) do
      local o = {M = 256, N = 128, K = 512, a_dtype = adt, a_zero_point = adt == "uint8" and 255 or -128,
                 b_zero_point = "per_column", b_sums = "input", bias = true, scale = "per_channel", out_zero_point = 5}
      local f = qm(o)
      local mod = tir.build(qg.schedule(f, {intrin = "mma", tc = {BM = 128, BN = 128, BK = 128, warp_m = 64, warp_n = 64,
                                                                stages = 3}}).mod, "cuda")
      assert.are.equal(1, #mod:kernels())
      local lo, hi = adt == "uint8" and 0 or -128, adt == "uint8" and 255 or 127
      local a = tir.nd.random({256, 512}, adt, tir.cpu(), {seed = 3, low = lo, high = hi})
      local b = tir.nd.random({128, 512}, "int8", tir.cpu(), {seed = 4, low = -128, high = 127})
      local zb = tir.nd.random({128}, "int32", tir.cpu(), {seed = 5, low = -128, high = 127})
      local bias = tir.nd.random({128}, "int32", tir.cpu(), {seed = 6, low = -100000, high = 100000})
      local scale = tir.nd.random({128}, "float32", tir.cpu(), {seed = 7, low = 1e-6, high = 1e-5})
      local bsum = qm.col_sums(b, "NK")
      local out = tir.nd.empty({256, 128}, "int8", dev)
      mod(copy_to(a, dev), copy_to(b, dev), copy_to(zb, dev), copy_to(bias, dev), copy_to(scale, dev), copy_to(bsum, dev), out)
      local ro = {}
      for k, v in pairs(o) do ro[k] = v end
      ro.four_term, ro.accum_dtype, ro.b_sums = false, "int64", nil
      local ref = tir.nd.empty({256, 128}, "int8")
      tir.interpret(qm(ro), {a, b, zb, bias, scale, ref})
      assert.are.same(ref:to_table(), copy_to(out, tir.cpu()):to_table())
    end
  end)
end)
