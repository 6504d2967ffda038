-- helper_args_spec.lua -- the helpers tc_gemm.schedule calls (tc_gemm_wgmma, the wgmma epilogue,
-- split-K, the row sums) are requireable modules: called directly with wrong arguments they raise
-- a TypeError naming themselves and the entry point to call, not a raw Lua error.
local U = require("spec_util")
local tc = require("tir.schedules.tc_gemm")

describe("tc_gemm's helper modules refuse wrong arguments with a tir.Error", function()
  local f = tc.workload(64, 64, 64, "float16")
  local cases = {
    {"tir.schedules.tc_gemm_wgmma", "schedule", "tc_gemm.schedule(func, {intrin = \"wgmma\""},
    {"tir.schedules.tc_gemm_wgmma_epilogue", "validate", "epilogue = ..."},
    {"tir.schedules.tc_gemm_wgmma_epilogue", "inline", "epilogue = ..."},
    {"tir.schedules.tc_gemm_wgmma_epilogue", "schedule_staged", "epilogue = ..."},
    {"tir.schedules.tc_gemm_split_k", "rfactor", "split_k = S"},
    {"tir.schedules.tc_gemm_split_k", "schedule_reduce", "split_k = S"},
    {"tir.schedules.tc_gemm_row_sums", "fuse", "row_sums = name"},
  }
  for _, c in ipairs(cases) do
    it(c[1] .. "." .. c[2], function()
      local fn = require(c[1])[c[2]]
      local prim = c[1]:gsub("^tir%.schedules%.", "") .. "." .. c[2]
      -- a PrimFunc where the Schedule goes, nothing at all, a number
      U.expect_error(function() fn(f, {}) end, "TypeError in " .. prim, "sch must be a tir.Schedule", c[3])
      U.expect_error(function() fn() end, "TypeError in " .. prim)
      U.expect_error(function() fn(3, 4) end, "TypeError in " .. prim)
      -- a Schedule but no options
      if c[2] ~= "rfactor" and c[2] ~= "schedule_reduce" then
        U.expect_error(function() fn(require("tir").Schedule(f), nil) end, "TypeError in " .. prim)
      end
    end)
  end
end)

describe("tir.schedules", function()
  it("loads lib/tir/schedules/<name>.lua on first use (the README's tir.schedules.tc_gemm); nil for other names", function()
    local tir = require("tir")
    assert.are.equal(require("tir.schedules.tc_gemm"), tir.schedules.tc_gemm)
    assert.are.equal(require("tir.schedules.conv2d_tc"), tir.schedules.conv2d_tc)
    assert.is_nil(tir.schedules.no_such_schedule)
    assert.is_nil(tir.schedules[1])
  end)
end)

describe("Module:get_source", function()
  it("refuses an unknown kind and a source the build did not make with tir.Errors", function()
    local tir = require("tir")
    local te = tir.te
    local A = te.placeholder({8}, "float32", "A")
    local B = te.compute({8}, function(i) return A[{i}] + 1 end, "B")
    local s = tir.Schedule(te.create_prim_func({A, B}))
    s:bind(s:get_loops(s:get_block("B")), "threadIdx.x")
    local m = tir.build(s.mod, "cuda", {compile = false})
    assert.truthy(m:get_source():find("__global__", 1, true))
    assert.truthy(m:get_source("ir"):find("T.prim_func", 1, true))
    U.expect_error(function() m:get_source("sass") end, "ValueError in Module:get_source", "kind must be \"cuda\" (default)", "got 'sass'")
    U.expect_error(function() m:get_source("ptx") end, "ValueError in Module:get_source", "no ptx source (built with compile = false?)")
  end)
end)
