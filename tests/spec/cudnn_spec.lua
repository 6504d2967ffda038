-- cudnn_spec.lua -- the cuDNN conv2d reference (tir.cudnn; src/core/runtime/cudnn.c): finding the
-- library, clean errors without it or without a GPU, option checks; on the GPU (#gpu) results
-- against the float64 reference for 1x1, 3x3 strided/padded, dilated, grouped and 7x7 layers.
local tir = require("tir")
local U = require("spec_util")

describe("tir.cudnn without a GPU", function()
  it("says whether cuDNN opens and where it came from, and refuses a bad TIRLUA_CUDNN in a child", function()
    local ok, where = tir.cudnn.available()
    assert.is_boolean(ok)
    assert.is_string(where)
    if ok then
      assert.matches("libcudnn", where)
      assert.is_true(tir.cudnn.version() >= 90000)
    else
      assert.matches("cuDNN", where)
      assert.are.equal(0, tir.cudnn.version())
    end
    -- an explicit override that does not exist is reported, not silently replaced
    local exe = (os.getenv("TIRLUA_BUILD_DIR") or "build") .. "/tirlua"
    local p = io.popen(("TIRLUA_CUDNN=/nonexistent/libcudnn.so.9 %s -e 'print(tir.cudnn.available())' 2>&1"):format(exe))
    local out = p:read("a")
    p:close()
    assert.matches("false%s+TIRLUA_CUDNN=/nonexistent/libcudnn.so.9: cannot open cuDNN there", out)
  end)

  it("checks the options and the arrays before calling cuDNN", function()
    local x = tir.nd.empty({1, 8, 8, 16}, "float16", tir.cpu())
    local w = tir.nd.empty({32, 3, 3, 16}, "float16", tir.cpu())
    local y = tir.nd.empty({1, 8, 8, 32}, "float16", tir.cpu())
    U.expect_error(function() tir.cudnn.conv2d(x, w, y, {stride = 0}) end, "ValueError in cudnn.conv2d", "stride must be an integer >= 1 or {h, w}")
    U.expect_error(function() tir.cudnn.conv2d(x, w, y, {padding = {1}}) end, "padding must be an integer >= 0 or {h, w} of them, got table")
    U.expect_error(function() tir.cudnn.conv2d(x, w, y, {strides = 1}) end, "did you mean 'stride'")
    U.expect_error(function() tir.cudnn.conv2d(x, w, "y") end, "y must be a tir.NDArray, got string")
    U.expect_error(function() tir.cudnn.conv2d_plan(x, w, y, {path = "fastest"}) end,
                   "path must be one of best, backend, legacy, legacy_ex; got 'fastest'")
    U.expect_error(function() tir.cudnn.conv2d_plan(x, w, y, {max_configs = 0}) end, "max_configs")
    U.expect_error(function() tir.cudnn.conv2d_plan(x, w, y, {max_configs = 500}) end, "max_configs must be at most 128, got 500")
    U.expect_error(function() tir.cudnn.conv2d_plan(x, w, y, {rtc = 1}) end, "rtc")
    U.expect_error(function() tir.cudnn.conv2d_plan(x, w, y, {workspace_limit = -1}) end, "workspace_limit")
    local ok = tir.cudnn.available()
    if ok then -- the library is here but these are host arrays
      U.expect_error(function() tir.cudnn.conv2d(x, w, y, {padding = 1}) end, "x (N, H, W, C) must be a CUDA array")
    else
      U.expect_error(function() tir.cudnn.conv2d(x, w, y, {padding = 1}) end, "CudaError in cudnn.conv2d", "cuDNN")
    end
  end)
end)

-- On the GPU machine: build/tirlua tests/run_busted.lua --run=gpu tests/spec/cudnn_spec.lua
describe("#gpu tir.cudnn.conv2d", function()
  local dev = U.gpu_or_pending(it, function(why) pending(why) end)
  if not dev then return end
  local have, where = tir.cudnn.available()
  if not have then
    it("is skipped: " .. where, function() pending("no cuDNN: " .. where) end)
    return
  end
  local cases = {
    {name = "1x1", n = 2, h = 14, w = 14, c = 64, k = 32, r = 1, stride = 1, pad = 0},
    {name = "3x3 stride 2", n = 2, h = 15, w = 15, c = 32, k = 64, r = 3, stride = 2, pad = 1},
    {name = "7x7 stride 2, C = 3", n = 1, h = 32, w = 32, c = 3, k = 16, r = 7, stride = 2, pad = 3},
    {name = "3x3 dilated", n = 1, h = 16, w = 16, c = 16, k = 16, r = 3, stride = 1, pad = 2, dil = 2},
    {name = "3x3 grouped", n = 1, h = 8, w = 8, c = 32, k = 32, r = 3, stride = 1, pad = 1, groups = 4},
  }
  for _, cs in ipairs(cases) do
    it("matches the float64 reference: " .. cs.name, function()
      local g, dil = cs.groups or 1, cs.dil or 1
      local p = (cs.h + 2 * cs.pad - dil * (cs.r - 1) - 1) // cs.stride + 1
      local q = (cs.w + 2 * cs.pad - dil * (cs.r - 1) - 1) // cs.stride + 1
      local x = tir.nd.random({cs.n, cs.h, cs.w, cs.c}, "float16", tir.cpu(), {seed = 1})
      local w = tir.nd.random({cs.k, cs.r, cs.r, cs.c // g}, "float16", tir.cpu(), {seed = 2})
      local y = tir.nd.empty({cs.n, p, q, cs.k}, "float16", dev)
      local ref = tir.testing.ref_conv(x, w, {stride = cs.stride, padding = cs.pad, dilation = dil, groups = g, data_layout = "NHWC",
                                              kernel_layout = "OHWI"})
      local xd, wd = x:to(dev), w:to(dev)
      -- every search path: the chosen engine / algorithm is right, and it is the fastest it timed
      for _, path in ipairs({"best", "backend", "legacy", "legacy_ex"}) do
        local plan = tir.cudnn.conv2d_plan(xd, wd, y, {stride = cs.stride, padding = cs.pad, dilation = dil, groups = g, path = path})
        assert.is_string(plan:algo())
        local cands = plan:candidates()
        assert.is_true(#cands >= 1)
        local fastest
        for _, c in ipairs(cands) do if c.ms and (not fastest or c.ms < fastest) then fastest = c.ms end end
        if path ~= "legacy" then assert.near(fastest, plan:find_ms(), 1e-3 * fastest) end -- legacy: Find's first, as before
        if path == "backend" then assert.are.equal("backend", plan:path()) end
        if path == "legacy" then assert.are.equal("legacy Find", plan:path()) end
        if path == "legacy_ex" then assert.are.equal("legacy FindEx", plan:path()) end
        print(("cuDNN %s %s: %s, %s (%.4f ms, %d candidates)"):format(cs.name, path, plan:path(), plan:algo(), plan:find_ms(), #cands))
        y:copyfrom(tir.nd.random(y:shape(), "float16", tir.cpu(), {seed = 7})) -- garbage the run must overwrite
        plan:run(xd, wd, y)
        tir.testing.assert_allclose(y:to(tir.cpu()), ref, {rtol = 1e-2, atol = 2e-2 * math.sqrt(cs.c * cs.r * cs.r / g / 64)})
      end
      local plan = tir.cudnn.conv2d_plan(xd, wd, y, {stride = cs.stride, padding = cs.pad, dilation = dil, groups = g})
      -- a plan is for its shapes
      U.expect_error(function() plan:run(x:to(dev), w:to(dev), tir.nd.empty({cs.n, p, q, cs.k}, "float32", dev)) end, "must be float16")
    end)
  end
  it("refuses an output of the wrong shape", function()
    local x = tir.nd.empty({1, 8, 8, 16}, "float16", dev)
    local w = tir.nd.empty({32, 3, 3, 16}, "float16", dev)
    U.expect_error(function() tir.cudnn.conv2d(x, w, tir.nd.empty({1, 7, 7, 32}, "float16", dev), {padding = 1}) end,
                   "y must be (N, P, Q, K) = (1, 8, 8, 32)")
  end)
end)
