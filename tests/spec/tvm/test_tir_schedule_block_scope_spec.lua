-- Port of TVM tests/python/s_tir/schedule/test_tir_schedule_block_scope.py.  TVM asks the
-- block scope for dependence edges (RAW/WAW/WAR); tirlua exposes the data-flow ones through
-- get_producers/get_consumers (RAW and WAW edges, as TVM's GetProducers, in program order);
-- the edge kinds are not exposed.  128 -> 16.
local tir = require("tir")
local V = require("tvm.tvm_util")
local T = V.T
local F32 = "float32"
local N = 16

local function names(list)
  local out = {}
  for i, b in ipairs(list) do out[i] = b.name end
  return out
end

describe("test_tir_schedule_block_scope", function()
  it("test_elementwise_dependency", function()
    local f = T.prim_func("main", {A = T.Buffer({N, N}, F32), C = T.Buffer({N, N}, F32)}, function(A, C)
      local B = T.alloc_buffer({N, N}, F32)
      for i, j in T.grid(N, N) do
        T.block("B", function() local vi, vj = T.axis.remap("SS", {i, j}) B[{vi, vj}] = A[{vi, vj}] * 2.0 end)
      end
      for i, j in T.grid(N, N) do
        T.block("C", function() local vi, vj = T.axis.remap("SS", {i, j}) C[{vi, vj}] = B[{vi, vj}] + 1.0 end)
      end
    end)
    local s = tir.Schedule(f)
    assert.are.same({"C"}, names(s:get_consumers("B")))
    assert.are.same({"B"}, names(s:get_producers("C")))
    assert.are.same({}, names(s:get_producers("B")))
  end)

  it("test_matmul_dependency", function()
    local f = T.prim_func("main", {A = T.Buffer({N, N}, F32), B = T.Buffer({N, N}, F32), C = T.Buffer({N, N}, F32)}, function(A, B, C)
      for i, j in T.grid(N, N) do
        T.block("init", function() local vi, vj = T.axis.remap("SS", {i, j}) C[{vi, vj}] = T.float32(0) end)
        for k in T.serial(N) do
          T.block("update", function()
            local vi, vj, vk = T.axis.remap("SSR", {i, j, k})
            C[{vi, vj}] = C[{vi, vj}] + A[{vi, vk}] * B[{vj, vk}]
          end)
        end
      end
    end)
    local s = tir.Schedule(f)
    -- TVM: init -> update is both RAW and WAW; here the RAW edge
    assert.are.same({"update"}, names(s:get_consumers("init")))
    assert.are.same({"init"}, names(s:get_producers("update")))
  end)

  it("test_war_dependency", function()
    -- C reads B before B writes it: TVM records a WAR edge C -> B; there is no data flow
    -- between them (C reads B's old contents), so neither is the other's producer
    local f = T.prim_func("main", {A = T.Buffer({N, N}, F32), B = T.Buffer({N, N}, F32), C = T.Buffer({N, N}, F32)}, function(A, B, C)
      for i, j in T.grid(N, N) do
        T.block("C", function() local vi, vj = T.axis.remap("SS", {i, j}) C[{vi, vj}] = B[{vi, vj}] + 1.0 end)
        T.block("B", function() local vi, vj = T.axis.remap("SS", {i, j}) B[{vi, vj}] = A[{vi, vj}] * 2.0 end)
      end
    end)
    local s = tir.Schedule(f)
    assert.are.same({}, names(s:get_producers("C")))
    assert.are.same({}, names(s:get_consumers("B")))
    -- and the order matters: inlining B into C would read the new values
    V.schedule_error(function() s:compute_inline("B") end, "compute_inline")
  end)
end)
