-- amos_cost_spec.lua -- tir.amos's cost model: the ranking uses the weights in force
-- (amos.COST, fitted by bench/amos_calibrate.lua on measured H200 times), the fitted constants
-- carry their provenance, and they reproduce the fit's recorded statistics on the stored data.
local tir = require("tir")
local U = require("spec_util")
local W = require("amos_workloads")

-- runs fn with the weights of wt in force: the fields of amos.COST changed in place (the table
-- tir.amos shows is the module's own), restored after
local function with_cost(wt, fn)
  local cost, saved = tir.amos.COST, {}
  for k in pairs(tir.amos.COST_UNCALIBRATED) do saved[k], cost[k] = cost[k], wt[k] end
  local ok, err = pcall(fn)
  for k, v in pairs(saved) do cost[k] = v end
  if not ok then error(err, 0) end
end

describe("amos cost model", function()
  it("predicts every candidate with amos.predict on its features and the weights in force, ranked by it", function()
    local cands = tir.amos.mappings(W.conv2d(8, 28, 28, 128, 128, 3, 3, {pad = 2, dilation = 2}), "conv", "mma.m16n8k16")
    assert.is_true(#cands > 2)
    for i, c in ipairs(cands) do
      assert.are.equal(tir.amos.predict(c.features), c.predicted)
      assert.are.equal(tir.amos.predict(c.features, tir.amos.COST), c.predicted)
      if i > 1 then assert.is_true(cands[i - 1].predicted <= c.predicted) end
    end
  end)

  it("the weights in force are the fitted ones, with their provenance", function()
    local cost, un = tir.amos.COST, tir.amos.COST_UNCALIBRATED
    local differ = false
    for k, v in pairs(un) do
      assert.is_number(cost[k], k)
      if cost[k] ~= v then differ = true end
    end
    assert.is_true(differ, "amos.COST is still the uncalibrated model")
    local p = cost.provenance
    assert.is_table(p)
    for _, k in ipairs({"machine", "commit", "date", "data", "fit"}) do assert.is_string(p[k], k) end
    assert.matches("H200", p.machine)
    assert.matches("^%x%x%x%x%x%x%x", p.commit)
    assert.matches("^%d%d%d%d%-%d%d%-%d%d$", p.date)
  end)

  it("the ranking follows the weights: other weights, another order", function()
    local f = W.conv2d(8, 28, 28, 128, 128, 3, 3, {pad = 1, layout = "NCHW"})
    local function order()
      local t = {}
      for i, c in ipairs(tir.amos.mappings(f, "conv", "mma.m16n8k16")) do t[i] = c:describe() .. tostring(c.swap) end
      return table.concat(t, "|")
    end
    local fitted = order()
    local un
    with_cost(tir.amos.COST_UNCALIBRATED, function() un = order() end)
    -- the fitted weights reorder this NCHW convolution's candidates (gathers weigh more)
    assert.are_not.equal(fitted, un)
    -- weights that make the operand tiles' L2 traffic and the gathers' contiguity all that counts
    local steep = {}
    for k, v in pairs(tir.amos.COST) do steep[k] = v end
    steep.gather, steep.l2 = 3, 64
    with_cost(steep, function()
      assert.are_not.equal(fitted, order())
      local cands = tir.amos.mappings(f, "conv", "mma.m16n8k16")
      for i = 2, #cands do assert.is_true(cands[i - 1].predicted <= cands[i].predicted) end
      assert.are.equal(tir.amos.predict(cands[1].features, steep), cands[1].predicted)
    end)
    assert.are.equal(fitted, order()) -- restored
  end)

  it("reproduces the fit's recorded statistics on the stored measurements", function()
    local F = dofile("bench/amos_fit.lua")
    local p = tir.amos.COST.provenance
    local set = F.load(p.data)
    assert.are.equal(14, #set.order)
    local r0, m0 = F.score(set, tir.amos.COST_UNCALIBRATED)
    local r1, m1 = F.score(set, tir.amos.COST)
    assert.near(p.spearman_uncalibrated, r0, 5e-4)
    assert.near(p.spearman_fitted, r1, 5e-4)
    assert.near(p.mse_log_uncalibrated, m0, 5e-4)
    assert.near(p.mse_log_fitted, m1, 5e-4)
    assert.is_true(r1 > r0 and m1 < m0)
    -- and they are what the fit finds again
    local w = F.fit(set)
    for _, k in ipairs(F.KEYS) do assert.near(tir.amos.COST[k], w[k], 1e-9 * math.abs(w[k]) + 1e-12, k) end
  end)

  it("refuses features or weights that are not a candidate's", function()
    U.expect_error(function() tir.amos.predict({}) end, "TypeError in amos.predict", "features.t_mma_useful must be a number")
    local c = tir.amos.mappings(W.matmul(64, 64, 64, "NN"), "C", "mma.m16n8k16")[1]
    U.expect_error(function() tir.amos.predict(c.features, {mma = 1}) end, "weights.", "must be a number (the keys of amos.COST)")
    U.expect_error(function() tir.amos.predict(c.features, "fast") end, "weights must be a table like amos.COST, got")
    U.expect_error(function() tir.amos.predict(c.features, nil, 1) end, "amos.predict")
  end)
end)
