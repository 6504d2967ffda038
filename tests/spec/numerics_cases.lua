-- numerics_cases.lua -- the cases of the numerics specs (numerics_spec.lua: interpreter vs
-- simulator vs the emitted CUDA C; gpu_numerics_spec.lua: the GPU vs the interpreter): every
-- cast between two dtypes, every math builtin of tir.core.math_builtins() on every float dtype,
-- the binary operators on every dtype, the bit operations, and edge values (ties x.5 and -x.5,
-- +-0, +-inf, NaN, subnormals, the limits of every integer type and the float values around
-- them) plus seeded random bit patterns and random moderate values.  docs/ARCHITECTURE.md
-- "Numerics" states the rules the cases check.
local tir = require("tir")
local te = tir.te
local C = {}

C.DTYPES = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "bfloat16", "float32",
            "float64", "bool"}
C.FLOATS = {"float16", "bfloat16", "float32", "float64"}
C.INTS = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}

local function is_float(dt) return dt:match("^b?float") ~= nil end
local function bits_of(dt) return dt == "bool" and 8 or tonumber(dt:match("(%d+)$")) end
C.is_float, C.bits_of = is_float, bits_of

-- float formats: exponent and mantissa bits
local FMT = {float16 = {5, 10}, bfloat16 = {8, 7}, float32 = {8, 23}, float64 = {11, 52}}

-- bit pattern of a float of format dt from sign, biased exponent, mantissa
local function fbits(dt, sign, e, m)
  local eb, mb = FMT[dt][1], FMT[dt][2]
  return (sign << (eb + mb)) | (e << mb) | m
end

-- special float values as bit patterns: zeros, subnormals, normal limits, infinities, NaNs
local function float_specials(dt)
  local eb, mb = FMT[dt][1], FMT[dt][2]
  local emax, mmax = (1 << eb) - 1, (mb == 52) and 0xfffffffffffff or ((1 << mb) - 1)
  local out = {}
  for s = 0, 1 do
    for _, em in ipairs({{0, 0}, {0, 1}, {0, mmax}, {1, 0}, {emax - 1, mmax}, {emax, 0}, {emax, 1 << (mb - 1)}, {emax, 1}}) do
      out[#out + 1] = fbits(dt, s, em[1], em[2])
    end
  end
  return out
end

-- values (as doubles) around the places where rounding and saturation decide
local EDGE_VALUES = {0.5, 1.5, 2.5, 3.5, -0.5, -1.5, -2.5, 0.49999997, -0.49999997, 1, -1, 0.25, 0.75, 1e-3, 3.7, -3.7,
                     126.5, 127, 127.5, 128, 128.5, -127.5, -128, -128.5, -129, 254.5, 255, 255.5, 256, -255.5, 32767,
                     32767.5, 32768, -32768, -32768.5, -32769, 65504, 65519, 65520, 65535, 65535.5, 65536, 2147483520,
                     2147483647, 2147483648, 2147483904, -2147483648, -2147483904, 4294967295, 4294967296, 4294967808,
                     16777217, 9007199254740993, 9223372036854775807, -9223372036854775808, 9223373136366403584,
                     18446744073709551615, 18446744073709551616, 1e30, -1e30, 3.4e38, 1e300, -1e300, 300, -300, 1e-40,
                     -1e-40, 6e-8, -6e-8, 1e-310}

-- integer edge values (Lua integers; masked to the dtype's width by set_bits)
local INT_EDGES = {0, 1, -1, 2, -2, 3, 7, 8, 31, 32, 33, 63, 64, 65, 100, 127, 128, -127, -128, -129, 255, 256, 300, -300,
                   32767, 32768, -32768, -32769, 65535, 65536, 16777217, 0x7fffffff, 0x80000000, -0x80000000, 0xffffffff,
                   0x100000000, 0x20000000000001, math.maxinteger, math.mininteger, math.maxinteger - 1,
                   math.mininteger + 1, -0x100000000}

local function rng(seed)
  local s = seed
  return function(lo, hi)
    s = (s * 6364136223846793005 + 1442695040888963407) -- wraps: Lua integers are 64-bit
    local x = (s >> 11)
    if lo == nil then return s end                        -- 64 random bits
    return lo + x % (hi - lo + 1)
  end
end
C.rng = rng

-- An input array of n elements of dtype dt (host): edge values first, then seeded random bit
-- patterns and random moderate values (uniform in [-scale, scale], with ties and fractions).
function C.input(dt, n, seed, opts)
  opts = opts or {}
  local a = tir.nd.empty({n}, dt)
  local r = rng(seed)
  local k = 0
  local function put_bits(b) if k < n then a:set_bits(k, b); k = k + 1 end end
  local function put_num(v) if k < n then a:set(k, v); k = k + 1 end end
  if opts.first then for _, b in ipairs(opts.first) do put_bits(b) end end
  if dt == "bool" then
    while k < n do put_bits(r(0, 1)) end
    return a
  end
  if is_float(dt) then
    for _, b in ipairs(float_specials(dt)) do put_bits(b) end
    for _, v in ipairs(EDGE_VALUES) do put_num(v) end
  else
    for _, v in ipairs(INT_EDGES) do put_bits(v) end
  end
  local scale = opts.scale or 300
  local bits = bits_of(dt)
  local i = 0
  while k < n do
    i = i + 1
    if i % 3 == 0 or not is_float(dt) and i % 3 == 1 then
      local b = r()
      put_bits(bits < 64 and (b & ((1 << bits) - 1)) or b)
    elseif is_float(dt) then
      local v = r(-scale * 8, scale * 8) / 8 -- multiples of 1/8: many ties
      if i % 3 == 1 then v = v + r(0, 999) / 1000 end
      put_num(v)
    else
      put_bits(r(-scale, scale))
    end
  end
  return a
end

-- ordered integer of a float's bits (sign-magnitude to monotone): ulp distances, +-0 equal
local function ordered(dt, b)
  local sb = bits_of(dt) - 1
  local mag = b & ~(1 << sb)
  if sb == 63 then mag = b & math.maxinteger end
  return ((b >> sb) & 1) == 1 and -mag or mag
end

local function is_nan_bits(dt, b)
  local eb, mb = FMT[dt][1], FMT[dt][2]
  local e = (b >> mb) & ((1 << eb) - 1)
  local m = mb == 52 and (b & 0xfffffffffffff) or (b & ((1 << mb) - 1))
  return e == (1 << eb) - 1 and m ~= 0
end
C.is_nan_bits = is_nan_bits

--- Compares two result arrays of dtype dt element by element: exact (bits; any two NaNs
-- match, their payloads are counted apart) or within `ulp` units in the last place (floats).
-- Returns {mismatches = n, nan_payload = n, max_ulp = u, examples = {{i, a_bits, b_bits}...}}.
function C.compare(dt, a, b, ulp)
  local st = {mismatches = 0, nan_payload = 0, max_ulp = 0, examples = {}}
  local f = is_float(dt)
  for i = 0, a:numel() - 1 do
    local x, y = a:get_bits(i), b:get_bits(i)
    if x ~= y then
      local bad = true
      if f and is_nan_bits(dt, x) and is_nan_bits(dt, y) then
        st.nan_payload = st.nan_payload + 1
        bad = false
      elseif f and ulp and not is_nan_bits(dt, x) and not is_nan_bits(dt, y) then
        local d = math.abs(ordered(dt, x) - ordered(dt, y))
        if d > st.max_ulp then st.max_ulp = d end
        bad = d > ulp
      end
      if bad then
        st.mismatches = st.mismatches + 1
        if #st.examples < 6 then st.examples[#st.examples + 1] = {i, x, y} end
      end
    end
  end
  return st
end

local function hex(dt, b) return ("0x%0" .. (bits_of(dt) // 4) .. "x"):format(bits_of(dt) < 64 and (b & ((1 << bits_of(dt)) - 1)) or b) end
C.hex = hex

-- value shown with its bits (exact for every dtype)
function C.show(arr, i)
  local dt = arr:dtype()
  local v = arr:get(i)
  return ("%s (%s)"):format(type(v) == "number" and ("%.17g"):format(v) or tostring(v), hex(dt, arr:get_bits(i)))
end

-- ---------------------------------------------------------------------------------------
-- the cases: {name, ins = {dtypes}, out = dtype, fn = function(a, b) -> expr, ulp = n | nil
-- (nil: exact), input options per argument, safe = function(args) fixes inputs}

local function cast_cases(out)
  for _, s in ipairs(C.DTYPES) do
    for _, d in ipairs(C.DTYPES) do
      if s ~= d then
        out[#out + 1] = {name = ("cast %s -> %s"):format(s, d), ins = {s}, out = d, fn = function(a) return tir.cast(d, a) end}
      end
    end
  end
end

-- the interpreter computes float32 functions in double and rounds (within 1 ulp of exact, as
-- rounding twice may); CUDA's are within the documented bound (tir.core.math_builtins ulp32 /
-- ulp64: CUDA C++ Programming Guide).  Allowed: CUDA's bound + 1 for float32, + 2 for float64
-- (glibc's double functions are themselves within about 1 ulp); float16 / bfloat16 compute in
-- float32 and round once, so the two can differ only where the float32 results straddle a
-- rounding boundary of the narrow type: 1 ulp.
function C.ulp_bound(b, dt)
  if (b.ulp32 or 0) == 0 and (b.ulp64 or 0) == 0 then return nil end
  if dt == "float16" or dt == "bfloat16" then return 1 end
  return dt == "float64" and b.ulp64 + 2 or b.ulp32 + 1
end

local function math_cases(out)
  for _, b in ipairs(tir.core.math_builtins()) do
    if b.kind == "bits" then
      for _, dt in ipairs(C.INTS) do
        local ins = {}
        for i = 1, b.arity do ins[i] = dt end
        local shifts = b.name:match("^shift") ~= nil
        out[#out + 1] = {name = ("%s %s"):format(b.name, dt), ins = ins, out = dt, shift = shifts,
                         fn = function(x, y) return y and tir.call(dt, b.name, x, y) or tir.call(dt, b.name, x) end}
      end
    else
      for _, dt in ipairs(b.kind == "abs" and C.DTYPES or C.FLOATS) do
        if dt ~= "bool" then
          local ins = {}
          for i = 1, b.arity do ins[i] = dt end
          local od = b.kind == "predicate" and "bool" or dt
          local name = b.name == "abs" and is_float(dt) and "fabs" or b.name
          out[#out + 1] = {name = ("%s %s"):format(b.name, dt), ins = ins, out = od, ulp = C.ulp_bound(b, dt), scale = 20,
                           fn = function(x, y) return y and tir.call(od, name, x, y) or tir.call(od, name, x) end}
        end
      end
    end
  end
end

local BINOPS = {
  {"add", function(a, b) return a + b end}, {"sub", function(a, b) return a - b end},
  {"mul", function(a, b) return a * b end}, {"truncdiv", tir.truncdiv, div = true}, {"truncmod", tir.truncmod, div = true, int = true},
  {"floordiv", tir.floordiv, div = true}, {"floormod", tir.floormod, div = true, int = true},
  {"min", tir.min}, {"max", tir.max},
  {"eq", tir.eq, cmp = true}, {"ne", tir.ne, cmp = true}, {"lt", tir.lt, cmp = true}, {"le", tir.le, cmp = true},
  {"gt", tir.gt, cmp = true}, {"ge", tir.ge, cmp = true},
}

local function binop_cases(out)
  for _, dt in ipairs(C.DTYPES) do
    if dt ~= "bool" then
      for _, op in ipairs(BINOPS) do
        if not (op.int and is_float(dt)) then
          out[#out + 1] = {name = ("%s %s"):format(op[1], dt), ins = {dt, dt}, out = op.cmp and "bool" or dt,
                           div = op.div and not is_float(dt), fn = op[2]}
        end
      end
    end
  end
  out[#out + 1] = {name = "and bool", ins = {"bool", "bool"}, out = "bool", fn = tir.And}
  out[#out + 1] = {name = "or bool", ins = {"bool", "bool"}, out = "bool", fn = tir.Or}
  -- C computes narrow integers in int: the wrap must happen inside expressions too
  for _, dt in ipairs({"int8", "int16", "uint8", "uint16"}) do
    out[#out + 1] = {name = ("(a + b) < 1 %s"):format(dt), ins = {dt, dt}, out = "bool",
                     fn = function(a, b) return tir.lt(a + b, tir.const(1, dt)) end}
    out[#out + 1] = {name = ("(a + b) == 0 %s"):format(dt), ins = {dt, dt}, out = "bool",
                     fn = function(a, b) return tir.eq(a + b, tir.const(0, dt)) end}
    out[#out + 1] = {name = ("int32(a * b) %s"):format(dt), ins = {dt, dt}, out = "int32",
                     fn = function(a, b) return tir.cast("int32", a * b) end}
    out[#out + 1] = {name = ("int32(a - b) // 3 %s"):format(dt), ins = {dt, dt}, out = "int32",
                     fn = function(a, b) return tir.floordiv(tir.cast("int32", a - b), 3) end}
  end
end

function C.cases()
  local out = {}
  cast_cases(out)
  math_cases(out)
  binop_cases(out)
  return out
end

--- The scheduled PrimFunc of a case over n elements (blocks of 64 threads) and its inputs.
function C.build_case(case, n, seed)
  local ph, ins = {}, {}
  for k, dt in ipairs(case.ins) do ph[k] = te.placeholder({n}, dt, ("A%d"):format(k)) end
  local Out = te.compute({n}, function(i)
    local a, b = ph[1][{i}], ph[2] and ph[2][{i}]
    return case.fn(a, b)
  end, "C")
  assert(Out.dtype == case.out, case.name .. ": the expression is " .. tostring(Out.dtype) .. ", not " .. case.out)
  local params = {}
  for k = 1, #ph do params[k] = ph[k] end
  params[#params + 1] = Out
  local sch = tir.Schedule(te.create_prim_func(params))
  local bx, tx = sch:split(sch:get_loops(sch:get_block("C")), {nil, 64})
  sch:bind(bx, "blockIdx.x")
  sch:bind(tx, "threadIdx.x")
  for k, dt in ipairs(case.ins) do
    local first
    if case.div and k == 1 then first = {math.mininteger, math.mininteger, -0x80000000, -0x8000, -0x80} end
    if case.div and k == 2 then first = {-1, 1, -1, -1, -1} end
    local opts = {first = first, scale = case.scale}
    if case.shift and k == 2 then
      local sh = {}
      for s = -3, 70 do sh[#sh + 1] = s end
      sh[#sh + 1] = 0x100000000
      opts = {first = sh, scale = 80}
    end
    ins[k] = C.input(dt, n, seed * 31 + k, opts)
    if case.div and k == 2 then -- integer division by zero is an interpreter error: divisors 0 -> 7
      for i = 0, n - 1 do if ins[k]:get_bits(i) == 0 then ins[k]:set_bits(i, 7) end end
    end
  end
  return sch.mod, ins
end

return C
