-- lower_spec.lua -- every lowering pass keeps the program's meaning: the interpreter runs
-- the function before and after each pass on the same random inputs (exact equality).
local tir = require("tir")
local te = tir.te
local U = require("spec_util")

local PASSES = {"lower_init_block", "lower_opaque_block", "simplify", "flatten_buffer", "simplify", "unroll_loop",
                "lower_thread_binding", "simplify"}

local function check_pipeline(f)
  local cur = f
  for _, p in ipairs(PASSES) do
    local nxt = tir.core.run_pass(p, cur)
    U.assert_equiv(f, nxt, {trials = 1})
    cur = nxt
  end
  return cur
end

local function scheduled_matmul(M, N, K)
  local sch = tir.Schedule(U.matmul(M, N, K))
  U.bind_2d(sch, "C", 8, 8)
  local k = select(5, sch:get_loops(sch:get_block("C")))
  local ko, ki = sch:split(k, {nil, 4})
  sch:unroll(ki)
  return sch.mod
end

describe("lowering passes", function()
  it("keep a scheduled matmul equivalent, including predicated tiles", function()
    check_pipeline(scheduled_matmul(16, 16, 8))
    local out = check_pipeline(scheduled_matmul(13, 10, 7))
    local s = tostring(out)
    assert.matches('T.launch_thread%("blockIdx.y", 2%)', s)
    assert.matches('T.launch_thread%("threadIdx.x", 8%)', s)
    assert.is_nil(s:find("T.block"))
  end)

  it("keep an unscheduled reduction chain equivalent", function()
    local A = te.placeholder({6, 5}, "float32", "A")
    local k = te.reduce_axis({0, 5}, "k")
    local S = te.compute({6}, function(i) return te.sum(A[{i, k}] * A[{i, k}], k) end, "S")
    local T = te.compute({6}, function(i) return S[{i}] + 1.0 end, "T")
    local f = te.create_prim_func({A, T})
    local cur = f
    for _, p in ipairs({"lower_init_block", "lower_opaque_block", "simplify", "flatten_buffer", "simplify"}) do
      cur = tir.core.run_pass(p, cur)
      U.assert_equiv(f, cur, {trials = 1})
    end
    assert.matches('T.allocate%({6}, "float32", "global"%)', tostring(cur))
  end)

  it("turn init into a guarded statement and flatten accesses", function()
    local f = U.matmul(4, 3, 2)
    local g = tir.core.run_pass("lower_init_block", f)
    assert.matches("T.If%(T.eq%(v_k, 0%), function%(%)", tostring(g))
    local h = tir.core.run_pass("flatten_buffer", tir.core.run_pass("lower_opaque_block", g))
    local s = tostring(h)
    assert.matches('local C_1 = T.Buffer%({12}, "float32", {data = C.data}%)', s)
    assert.matches("C_1%[{i %* 3 %+ j}%]", tostring(tir.core.run_pass("simplify", h)))
  end)

  it("makes each separately bound loop nest its own kernel region", function()
    local A = te.placeholder({32}, "float32", "A")
    local B = te.compute({32}, function(i) return A[{i}] * 3.0 end, "B")
    local C = te.compute({16}, function(i) return B[{i}] + B[{i + 16}] end, "C")
    local sch = tir.Schedule(te.create_prim_func({A, C}))
    sch:bind(sch:get_loops(sch:get_block("B")), "threadIdx.x")
    sch:bind(sch:get_loops(sch:get_block("C")), "threadIdx.x")
    local lowered = tir.lower(sch.mod)
    local s = tostring(lowered)
    assert.matches('T.launch_thread%("threadIdx.x", 32, function%(threadIdx_x%)', s)
    assert.matches('T.launch_thread%("threadIdx.x", 16%)', s)
    U.assert_equiv(sch.mod, lowered)
    local mod = tir.build(sch.mod, "cuda", {compile = false})
    assert.are.equal(2, #mod:kernels())
    assert.matches("allocate B", mod:get_source("host"))
  end)

  it("records the IR after each pass that changed it", function()
    local _, dumps = tir.lower(scheduled_matmul(16, 16, 8), {dump = true})
    local names = {}
    for _, d in ipairs(dumps) do names[#names + 1] = d.pass end
    assert.are.same({"input", "lower_init_block", "lower_opaque_block", "flatten_buffer", "simplify", "unroll_loop",
                     "lower_thread_binding"}, names)
  end)
end)
