--- tir.intrin.dp4a: DP4A tensor intrinsics (the 4-element int8 dot product of one thread,
-- accumulated into an int32 scalar), registered in tir.TensorIntrin on require; the shape of
-- TVM's python/tvm/tir/tensor_intrin/dp4a.py.
--
--   desc: C[0] += int32(A[k]) * int32(B[k]) for k < 4       (A, B int8/uint8; C int32)
--   impl: C[0] = ptx_dp4a(pack4(A[0..3]), pack4(B[0..3]), C[0], atype, btype)
--
-- ptx_dp4a is PTX's dp4a.atype.btype (sm_61+; .s32 operands hold signed bytes, .u32 unsigned);
-- pack4 builds the 32-bit register holding four consecutive k of an operand with three
-- ptx_prmt (prmt.b32) from the four bytes, whatever the storage order: with `k` the operand's
-- trailing dimension (A row-major [i][k], B as [j][k]: desc buffers of shape {4}) or with
-- k-major storage ([k][i], [k][j]: desc buffers of shape {4, 1}, a row stride apart).
-- The "_word" impls (k trailing only) take each operand's four k as one aligned 32-bit load
-- (reinterpret of an int8x4 load) instead: no prmt where the bytes are already in k order.
-- Names: dp4a_<a><b>s32[_kmajor][_word]_<scope>, a/b in s8/u8 (u8 x s8 is dp4a.u32.s32, s8 x u8
-- dp4a.s32.u32), scope the operands' ("shared" or "local"); C is "local".
local tir = require("tir")
local T = tir.script
local M = {}

local function prmt(a, b, sel) return T.call("int32", "ptx_prmt", a, b, sel) end

--- pack4(x0, x1, x2, x3): the int32 whose bytes 0..3 are the low bytes of x0..x3 (8-bit
-- values; their int32 casts keep the bits in the low byte), with prmt.b32:
--   lo = prmt(x0, x1, 0x0040) -> bytes (x0, x1, x0, x0); hi likewise for x2, x3;
--   prmt(lo, hi, 0x5410)      -> (lo.b0, lo.b1, hi.b0, hi.b1) = (x0, x1, x2, x3)
function M.pack4(x0, x1, x2, x3)
  local function w(x) return T.cast("int32", x) end
  local lo = prmt(w(x0), w(x1), 0x0040)
  local hi = prmt(w(x2), w(x3), 0x0040)
  return prmt(lo, hi, 0x5410)
end

local SIGN = {int8 = "s32", uint8 = "u32"}
local SHORT = {int8 = "s8", uint8 = "u8"}

--- The intrinsic's name for operand dtypes a_dtype, b_dtype ("int8" | "uint8"), k-major
-- operands or not, and the operands' scope.
function M.name(a_dtype, b_dtype, kmajor, scope, load)
  return ("dp4a_%s%ss32%s%s_%s"):format(SHORT[a_dtype], SHORT[b_dtype], kmajor and "_kmajor" or "", load == "word" and "_word" or "",
                                         scope or "shared")
end

--- Registers (override) the intrinsic; opts.pack_a / opts.pack_b replace pack4 for an operand
-- (the planted-bug specs give one a wrong byte order), opts.name the name.  Returns the name.
function M.register(a_dtype, b_dtype, kmajor, scope, opts)
  opts = opts or {}
  scope = scope or "shared"
  local word = opts.load == "word"
  if word and kmajor then error("tir.intrin.dp4a: load = \"word\" needs k trailing (kmajor = false)", 2) end
  local name = opts.name or M.name(a_dtype, b_dtype, kmajor, scope, opts.load)
  local pack_a, pack_b = opts.pack_a or M.pack4, opts.pack_b or M.pack4
  -- the word form: the four bytes are one 32-bit load
  local function operand(buf, pack)
    if word then return T.call("int32", "reinterpret", buf[{T.Ramp(0, 1, 4)}]) end
    local function at4(q) if kmajor then return buf[{q, 0}] end return buf[{q}] end
    return pack(at4(0), at4(1), at4(2), at4(3))
  end
  local shape = kmajor and {4, 1} or {4}
  local function at(buf, q) if kmajor then return buf[{q, 0}] end return buf[{q}] end
  local function region(buf) if kmajor then return buf[{{0, 4}, 0}] end return buf[{{0, 4}}] end
  local function sig(strided)
    local function opts()
      local o = {scope = scope, offset_factor = 1}
      if strided and kmajor then o.strides = {tir.var("ld", "int32"), 1} end
      return o
    end
    return {A = T.Buffer(shape, a_dtype, opts()), B = T.Buffer(shape, b_dtype, opts()),
            C = T.Buffer({1}, "int32", {scope = "local", offset_factor = 1})}
  end
  local desc = T.prim_func(name, sig(false), function(A, B, C)
    T.block("root", function()
      T.reads(C[{0}], region(A), region(B))
      T.writes(C[{0}])
      for k in T.grid(4) do
        T.block("update", function()
          local vk = T.axis.remap("R", {k})
          C[{0}] = C[{0}] + T.cast("int32", at(A, vk)) * T.cast("int32", at(B, vk))
        end)
      end
    end)
  end)
  local impl = T.prim_func(name .. "_impl", sig(true), function(A, B, C)
    T.block("root", function()
      T.reads(C[{0}], region(A), region(B))
      T.writes(C[{0}])
      C[{0}] = T.call("int32", "ptx_dp4a", operand(A, pack_a), operand(B, pack_b), C[{0}], SIGN[a_dtype], SIGN[b_dtype])
    end)
  end)
  tir.TensorIntrin.register(name, desc, impl, true)
  return name
end

--- The row-sum intrinsic's name: n (a multiple of 16) consecutive 8-bit values of one row
-- (a_dtype) added to an int32 scalar, both in `scope` (tc_gemm's row_sums: one k step of the
-- shared A tile into the shared sums).  wait (nil or a group count W, suffix _wgW): the impl ends
-- with wgmma_wait_group W -- the wait of the step's wgmma group, whose intrinsic only commits
-- (tir.intrin.cuda.wgmma pending "commit"), so the sums run while that group is in flight
-- (tc_gemm_wgmma's row_sums_in_flight; every thread of the warpgroup must run it: .sync.aligned).
function M.row_sum_name(a_dtype, n, scope, wait)
  return ("dp4a_row_sum%d_%s_%s%s"):format(n, SHORT[a_dtype], scope or "shared", wait and ("_wg%d"):format(wait) or "")
end

--- Registers the row-sum intrinsic for n values (TVM's dp4a desc shape, the second operand
-- all ones):
--   desc: S[0] += int32(A[k]) for k < n
--   impl: S[0] += c_0 + ... + c_{n/16 - 1},  c_q = dp4a(w_4q+3, 1x4, ... dp4a(w_4q, 1x4, 0))
-- with w_i the 32-bit word of A[4i .. 4i + 3] (one aligned load; the four words of a 16-byte
-- chunk are consecutive loads that nvcc merges into one 16-byte load) and 1x4 = 0x01010101,
-- the int8x4 of ones (dp4a.s32.s32, or dp4a.u32.s32 for uint8 A: exact).  One chain per
-- 16-byte chunk (independent), and one read-modify-write of S per call: a schedule gives the
-- whole k step to one call, so no barrier separates the chunks (thread_sync cannot tell that
-- each thread updates its own S).
function M.register_row_sum(a_dtype, n, scope, wait)
  scope = scope or "shared"
  if n % 16 ~= 0 then error("tir.intrin.dp4a.register_row_sum: n must be a multiple of 16", 2) end
  local name = M.row_sum_name(a_dtype, n, scope, wait)
  local function sig()
    return {A = T.Buffer({n}, a_dtype, {scope = scope, offset_factor = 16}),
            S = T.Buffer({1}, "int32", {scope = scope, offset_factor = 1})}
  end
  local desc = T.prim_func(name, sig(), function(A, S)
    T.block("root", function()
      T.reads(S[{0}], A[{{0, n}}])
      T.writes(S[{0}])
      for k in T.grid(n) do
        T.block("update", function()
          local vk = T.axis.remap("R", {k})
          S[{0}] = S[{0}] + T.cast("int32", A[{vk}])
        end)
      end
    end)
  end)
  local impl = T.prim_func(name .. "_impl", sig(), function(A, S)
    T.block("root", function()
      T.reads(S[{0}], A[{{0, n}}])
      T.writes(S[{0}])
      local total
      for q = 0, n // 16 - 1 do
        local c = T.int32(0)
        for w = 0, 3 do
          local word = T.call("int32", "reinterpret", A[{T.Ramp(16 * q + 4 * w, 1, 4)}])
          c = T.call("int32", "ptx_dp4a", word, T.int32(0x01010101), c, SIGN[a_dtype], "s32")
        end
        total = total and total + c or c
      end
      S[{0}] = S[{0}] + total
      if wait then T.evaluate(T.call("void", "wgmma_wait_group", wait)) end
    end)
  end)
  tir.TensorIntrin.register(name, desc, impl, true)
  return name
end

for _, adt in ipairs({"int8", "uint8"}) do
  for _, n in ipairs({16, 32, 64, 128, 256}) do
    M.register_row_sum(adt, n, "shared")
    M.register_row_sum(adt, n, "shared", 1)
  end
end

for _, ab in ipairs({{"int8", "int8"}, {"uint8", "int8"}, {"int8", "uint8"}}) do
  for _, scope in ipairs({"shared", "local"}) do
    for _, kmajor in ipairs({false, true}) do M.register(ab[1], ab[2], kmajor, scope) end
    M.register(ab[1], ab[2], false, scope, {load = "word"})
  end
end

return M
