-- device_print_spec.lua -- tir.print / T.print (include/tir/device_print.h): the interpreter and
-- the simulator print the same text for the same threads, the CUDA C calls printf with the
-- same format (integer conversions widened to ll), formats are checked against the values,
-- and (#gpu) the GPU prints exactly what the interpreter prints.
local tir = require("tir")

local function kernel(print_line)
  return tir.script.parse(([[
T.prim_func("main", {A = T.Buffer({64}, "float32"), B = T.Buffer({64}, "int8")}, function(A, B)
  for i_0 in T.thread_binding(2, "blockIdx.x") do
    for i_1 in T.thread_binding(32, "threadIdx.x") do
      T.block("B", function()
        local v_i = T.axis.spatial(64, i_0 * 32 + i_1)
        T.reads(A[{v_i}], B[{v_i}])
        T.writes(B[{v_i}])
        B[{v_i}] = T.cast("int8", A[{v_i}] * T.float32(-4.0))
        %s
      end)
    end
  end
end)
]]):format(print_line))
end

local function inputs()
  local t = {}
  for i = 1, 64 do t[i] = (i - 1) * 0.25 end
  return tir.nd.array(t, "float32"), tir.nd.empty({64}, "int8")
end

local function both(f)
  local a, b = inputs()
  local interp = tir.capture_prints(function() tir.interpret(f, {a, b}) end)
  local mod = tir.build(f, "cuda -arch=sm_80", {compile = false})
  local a2, b2 = inputs()
  local sim = tir.capture_prints(function() tir.simulate(mod, {a2, b2}) end)
  return interp, sim, mod
end

describe("tir.print", function()
  it("prints from thread 0 of block 0 by default, the same on the interpreter and the simulator", function()
    local interp, sim, mod = both(kernel('T.print("i=%d A=%.2f B=%d\\n", v_i, A[{v_i}], B[{v_i}])'))
    assert.are.equal("i=0 A=0.00 B=0\n", interp)
    assert.are.equal(interp, sim)
    local cuda = mod:get_source("cuda")
    assert.truthy(cuda:find('printf("i=%lld A=%.2f B=%lld\\n"', 1, true), cuda)
    assert.truthy(cuda:find("(int)threadIdx.x == 0 && (int)threadIdx.y == 0", 1, true))
  end)

  it("prints from the threads and blocks a filter selects, in the same order", function()
    local interp, sim = both(kernel('T.print("b%d t%02d %x %+.1e|%5d|%-4c|\\n", i_0, i_1, v_i * 7, A[{v_i}], B[{v_i}], 65 + i_1, ' ..
                                    '{thread = "all", block = {1}})'))
    local lines = {}
    for l in interp:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.are.equal(32, #lines)
    assert.are.equal("b1 t00 e0 +8.0e+00|  -32|A   |", lines[1])
    assert.are.equal("b1 t31 1b9 +1.6e+01|  -63|`   |", lines[32])
    assert.are.equal(interp, sim)
  end)

  it("refuses formats that do not fit the values, and bad filters", function()
    local function err(...)
      local ok, e = pcall(tir.print, ...)
      assert.is_false(ok)
      return e.kind .. ": " .. e.message
    end
    local x, y = tir.var("x", "int32"), tir.var("y", "float32")
    assert.truthy(err("%d", y):find("value 1 is a float but conversion 1 is '%d'", 1, true))
    assert.truthy(err("%f", x):find("value 1 is an integer but conversion 1 is '%f'", 1, true))
    assert.truthy(err("%d %d", x):find("more conversions than the 1 value", 1, true))
    assert.truthy(err("%d", x, x):find("1 conversion(s) but 2 value(s)", 1, true))
    assert.truthy(err("%s", x):find("conversion '%s' is not supported", 1, true))
    assert.truthy(err("%ld", x):find("conversion '%l' is not supported", 1, true))
    assert.truthy(err("%", x):find("ends inside a conversion", 1, true))
    assert.truthy(err(42):find("TypeError: the format must be a string", 1, true))
    assert.truthy(err("%d", x, {thread = {1.5}}):find("filter thread[1] must be an integer", 1, true))
    assert.truthy(err("%d", x, {threads = "all"}):find("did you mean 'thread'", 1, true))
    assert.are.equal("100%\n", tir.capture_prints(function()
      tir.interpret(tir.script.parse([[
T.prim_func("p", {}, function()
  T.print("%d%%\n", 100)
end)]]), {})
    end))
  end)

  it("#gpu prints on the GPU exactly what the interpreter prints", function()
    local exe = io.popen("readlink /proc/$PPID/exe"):read("*l") -- the tirlua running this spec
    local script = os.tmpname()
    local f = assert(io.open(script, "w"))
    f:write([[
local tir = require("tir")
local fh = assert(io.open(arg[1]))
local f = tir.script.parse(fh:read("a"))
fh:close()
local t = {}
for i = 1, 64 do t[i] = (i - 1) * 0.25 end
local dev = tir.device("cuda", 0)
local a, b = tir.nd.array(t, "float32"):to(dev), tir.nd.empty({64}, "int8", dev)
if arg[2] == "gpu" then tir.build(f, "cuda")(a, b) else tir.interpret(f, {a:to("cpu"), b:to("cpu")}) end
]])
    f:close()
    for _, line in ipairs({'T.print("i=%d A=%.3f B=%d %g %e\\n", v_i, A[{v_i}], B[{v_i}], A[{v_i}] / T.float32(3.0), A[{v_i}] * T.float32(1e20))',
                           'T.print("b%d t%02d %x\\n", i_0, i_1, v_i * 7, {thread = {7}, block = "all"})'}) do
      local srcfile = os.tmpname()
      local sf = assert(io.open(srcfile, "w"))
      sf:write(tostring(kernel(line)))
      sf:close()
      local function run(where)
        local p = io.popen(("'%s' '%s' '%s' %s"):format(exe, script, srcfile, where))
        local out = p:read("a")
        p:close()
        return out
      end
      local cpu, gpu = run("cpu"), run("gpu")
      os.remove(srcfile)
      assert.truthy(#cpu > 0, cpu)
      assert.are.equal(cpu, gpu)
    end
    os.remove(script)
  end)
end)
