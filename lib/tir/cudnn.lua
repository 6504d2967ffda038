--- tir.cudnn: cuDNN 9's convolution as a reference (src/core/runtime/cudnn.c; dlopen'd, found
-- through $TIRLUA_CUDNN, the loader's path or a Python site-packages nvidia/cudnn/lib).
--   tir.cudnn.available() -> true, path | false, why
--   tir.cudnn.version()   -> cudnnGetVersion() (e.g. 90100), 0 without cuDNN
--   local plan = tir.cudnn.conv2d_plan(x, w, y, {stride = 1, padding = 1, dilation = 1, groups = 1})
--   plan:run(x, w, y); plan:algo() -> "IMPLICIT_PRECOMP_GEMM", ...; plan:tensor_ops(); plan:find_ms()
--   tir.cudnn.conv2d(x, w, y, opts) -> the algorithm's name (plans, runs once)
-- x [N, H, W, C], w [K, R, S, C / groups] (cuDNN's NHWC filter: tir.ops.conv's kernel_layout
-- "OHWI"), y [N, P, Q, K]; float16 CUDA arrays, fp32 accumulation; stride, padding (symmetric)
-- and dilation are a number or {h, w}.  cudnnFindConvolutionForwardAlgorithm picks the algorithm.
-- Errors: CudaError when cuDNN is absent (with where it was looked for) or a call fails,
-- ValueError / TypeError for shapes, devices, dtypes and options.
local core = require("tir.core")
local util = require("tir.util")
local M = {}

function M.available() return core.cudnn_available() end
function M.version() return core.cudnn_version() end

local function pair(P, name, given, min)
  local v = given
  if v == nil then v = name == "padding" and 0 or 1 end
  if math.type(v) == "integer" then v = {v, v} end
  if type(v) ~= "table" or #v ~= 2 or util.count_keys(v) ~= 2 or math.type(v[1]) ~= "integer" or math.type(v[2]) ~= "integer" or
     v[1] < min or v[2] < min or v[1] > 0x7fffffff or v[2] > 0x7fffffff then
    util.raise("ValueError", P, "%s must be an integer >= %d or {h, w} of them, got %s", name, min, util.show(given))
  end
  return v
end

local function plan(P, x, w, y, opts)
  local o = util.check_opts(P, opts, {stride = "any", padding = "any", dilation = "any", groups = "positive"})
  local s, p, d = pair(P, "stride", o.stride, 1), pair(P, "padding", o.padding, 0), pair(P, "dilation", o.dilation, 1)
  local g = o.groups or 1
  if g > 0x7fffffff then util.raise("ValueError", P, "groups is too large: %s", util.show(g)) end
  return core.cudnn_conv2d_plan(x, w, y, s[1], s[2], p[1], p[2], d[1], d[2], g)
end
--- tir.cudnn.conv2d_plan(x, w, y [, opts]) -> plan: cuDNN's fastest forward algorithm for these
-- shapes (cudnnFindConvolutionForwardAlgorithm), run with plan:run(x, w, y).  x [N, H, W, C],
-- w [K, R, S, C / groups] (OHWI), y [N, P, Q, K]: float16 CUDA arrays; opts stride, padding,
-- dilation (an integer or {h, w}), groups.  CudaError without cuDNN or a GPU.
function M.conv2d_plan(x, w, y, opts) return plan("cudnn.conv2d_plan", x, w, y, opts) end

--- tir.cudnn.conv2d(x, w, y [, opts]) -> the algorithm's name: conv2d_plan, then one run.
function M.conv2d(x, w, y, opts)
  local pl = plan("cudnn.conv2d", x, w, y, opts)
  pl:run(x, w, y)
  return pl:algo()
end

util.strict_all(M, "cudnn.")
return M
