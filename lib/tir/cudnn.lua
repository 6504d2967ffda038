--- tir.cudnn: cuDNN 9's convolution as a reference (src/core/runtime/cudnn.c; dlopen'd, found
-- through $TIRLUA_CUDNN, the loader's path or a Python site-packages nvidia/cudnn/lib).
--   tir.cudnn.available() -> true, path | false, why
--   tir.cudnn.version()   -> cudnnGetVersion() (e.g. 90100), 0 without cuDNN
--   local plan = tir.cudnn.conv2d_plan(x, w, y, {stride = 1, padding = 1, dilation = 1, groups = 1})
--   plan:run(x, w, y); plan:algo() -> "eng12 TILE_SIZE=5 ...", "IMPLICIT_PRECOMP_GEMM", ...; plan:path();
--   plan:candidates(); plan:tensor_ops(); plan:find_ms()
--   tir.cudnn.conv2d(x, w, y, opts) -> the algorithm's name (plans, runs once)
-- x [N, H, W, C], w [K, R, S, C / groups] (cuDNN's NHWC filter: tir.ops.conv's kernel_layout
-- "OHWI"), y [N, P, Q, K]; float16 CUDA arrays, fp32 accumulation; stride, padding (symmetric)
-- and dilation are a number or {h, w}.  The plan keeps the fastest of cuDNN's backend engine
-- configurations and legacy algorithms (opts.path), each timed here.
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

-- the search paths (include/tir/runtime.h TIR_CUDNN_PATH_*)
local PATHS = {best = 0, backend = 1, legacy = 2, legacy_ex = 3}

local function plan(P, x, w, y, opts)
  local o = util.check_opts(P, opts, {stride = "any", padding = "any", dilation = "any", groups = "positive", path = "string",
                                      max_configs = "positive", rtc = "boolean", workspace_limit = "positive"})
  local s, p, d = pair(P, "stride", o.stride, 1), pair(P, "padding", o.padding, 0), pair(P, "dilation", o.dilation, 1)
  local g = o.groups or 1
  if g > 0x7fffffff then util.raise("ValueError", P, "groups is too large: %s", util.show(g)) end
  local path = PATHS[o.path or "best"]
  if not path then
    util.raise("ValueError", P, "path must be one of best, backend, legacy, legacy_ex; got %s", util.show(o.path))
  end
  if o.max_configs and o.max_configs > 128 then util.raise("ValueError", P, "max_configs must be at most 128, got %d", o.max_configs) end
  return core.cudnn_conv2d_plan(x, w, y, s[1], s[2], p[1], p[2], d[1], d[2], g, path, o.max_configs or 0, o.rtc or false,
                                o.workspace_limit or 0)
end
--- tir.cudnn.conv2d_plan(x, w, y [, opts]) -> plan: the fastest of what cuDNN offers for these
-- shapes, every candidate run and timed on the given arrays (y is overwritten), run with
-- plan:run(x, w, y).  x [N, H, W, C], w [K, R, S, C / groups] (OHWI), y [N, P, Q, K]: float16
-- CUDA arrays; opts stride, padding, dilation (an integer or {h, w}), groups, and the search:
--   path = "best" (default: the backend API's engine configurations and the legacy FindEx
--     algorithms), "backend" (engine heuristics mode A + fallback, one execution plan each),
--     "legacy" (cudnnFindConvolutionForwardAlgorithm's first: the earlier reference),
--     "legacy_ex" (cudnnFindConvolutionForwardAlgorithmEx with a workspace);
--   max_configs (backend configurations timed, default 32), rtc (also runtime-compiled
--   engines, default false: cuDNN compiles each with NVRTC), workspace_limit (bytes, 512 MiB).
-- plan:algo() names the chosen one ("eng<index> KNOB=value ..." or a legacy algorithm),
-- plan:path() its path, plan:candidates() lists everything tried ({path, heuristic, rank,
-- name, ms, find_ms, workspace_bytes, note}), plan:find_ms() its time.  CudaError without
-- cuDNN or a GPU, or when no candidate ran.
function M.conv2d_plan(x, w, y, opts) return plan("cudnn.conv2d_plan", x, w, y, opts) end

--- tir.cudnn.conv2d(x, w, y [, opts]) -> the algorithm's name: conv2d_plan, then one run.
function M.conv2d(x, w, y, opts)
  local pl = plan("cudnn.conv2d", x, w, y, opts)
  pl:run(x, w, y)
  return pl:algo()
end

util.strict_all(M, "cudnn.")
return M
