-- codegen_spec.lua -- CUDA C from lowered TIR, compiled by NVRTC to PTX and CUBIN for sm_80
-- and sm_90 (NVRTC needs no GPU).  The PTX must hold the kernel entry.
local tir = require("tir")
local te = tir.te
local U = require("spec_util")

local nvrtc_ok, nvrtc_why = tir.core.nvrtc_available()

local function bound_matmul(M, N, K)
  local sch = tir.Schedule(U.matmul(M, N, K))
  U.bind_2d(sch, "C")
  return sch.mod
end

describe("CUDA codegen", function()
  it("emits one kernel with launch bounds and flat indices", function()
    local mod = tir.build(bound_matmul(64, 64, 32), "cuda", {compile = false})
    local src = mod:get_source("cuda")
    assert.matches('extern "C" __global__ void __launch_bounds__%(256%) main_kernel%(float%* __restrict__ A, float%* __restrict__ B, float%* __restrict__ C%)', src)
    assert.matches("%(%(int%)threadIdx%.x%)", src)
    assert.matches("for %(int k = 0; k < 32; %+%+k%)", src)
    local k = mod:kernels()[1]
    assert.are.same({4, 4, 1}, k.grid)
    assert.are.same({16, 16, 1}, k.block)
  end)

  it("emits guards for predicated tiles and #pragma unroll for unrolled loops", function()
    local sch = tir.Schedule(U.matmul(50, 50, 64))
    U.bind_2d(sch, "C")
    local k = select(5, sch:get_loops(sch:get_block("C")))
    local ko, ki = sch:split(k, {nil, 32})
    sch:unroll(ki)
    local src = tir.build(sch.mod, "cuda", {compile = false}):get_source("cuda")
    assert.matches("#pragma unroll", src)
    assert.matches("< 50%)", src)
    assert.is_not_nil(ko)
  end)

  it("uses helpers for floor division only when an operand may be negative", function()
    local A = te.placeholder({64}, "int32", "A")
    local B = te.compute({64}, function(i) return (A[{i}] - 32) // 8 + i // 8 end, "B")
    local sch = tir.Schedule(te.create_prim_func({A, B}))
    local bx, tx = sch:split(sch:get_loops(sch:get_block("B")), {nil, 32})
    sch:bind(bx, "blockIdx.x"); sch:bind(tx, "threadIdx.x")
    local src = tir.build(sch.mod, "cuda", {compile = false}):get_source("cuda")
    assert.matches("tir_floordiv<int>%(A%[", src) -- the type explicit: int8 operands promote in C
    assert.is_truthy(src:find("/ 8)", 1, true))
  end)

  it("refuses functions with no thread binding, naming the problem", function()
    U.expect_error(function() tir.build(U.matmul(8, 8, 8), "cuda", {compile = false}) end,
      "LoweringError in split_host_device", "bind its loops to blockIdx/threadIdx")
  end)

  it("rejects unknown targets and architectures", function()
    U.expect_error(function() tir.build(bound_matmul(16, 16, 16), "opencl") end, "unknown target 'opencl'")
    U.expect_error(function() tir.build(bound_matmul(16, 16, 16), "cuda -arch=compute_9") end, "bad architecture 'compute_9'")
  end)

  describe("with NVRTC", function()
    if not nvrtc_ok then
      it("is skipped: " .. tostring(nvrtc_why), function() pending(nvrtc_why) end)
      return
    end
    for _, arch in ipairs({"sm_80", "sm_90"}) do
      it("compiles the matmul for " .. arch .. " and the PTX holds the entry", function()
        local mod = tir.build(bound_matmul(1024, 1024, 1024), "cuda -arch=" .. arch)
        assert.are.equal(arch, mod:arch())
        local ptx = mod:get_source("ptx")
        assert.matches("%.target " .. arch, ptx)
        assert.matches("%.entry main_kernel", ptx)
        assert.matches("ld%.global", ptx)
        assert.matches("fma%.rn%.f32", ptx)
      end)
    end
    it("compiles float16 and int8 kernels", function()
      for _, dt in ipairs({{"float16", "float32"}, {"int8", "int32"}, {"bfloat16", "float32"}}) do
        local sch = tir.Schedule(U.matmul(64, 64, 64, dt[1], dt[2]))
        U.bind_2d(sch, "C")
        local ptx = tir.build(sch.mod, "cuda -arch=sm_90"):get_source("ptx")
        assert.matches("%.entry main_kernel", ptx)
      end
    end)
  end)
end)
