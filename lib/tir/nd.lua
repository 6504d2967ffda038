--- tir.nd: arrays on the host or a CUDA device (tir.NDArray), and devices.
local core = require("tir.core")
local util = require("tir.util")
local nd = {}

local Device = {}
Device.__index = Device
Device.__tostring = function(d) return d.type == "cpu" and "cpu" or ("cuda:" .. d.id) end
Device.__eq = function(a, b) return a.type == b.type and a.id == b.id end

--- tir.device("cuda", 0) or tir.device("cpu").  Creating a device does not touch the GPU;
-- dev:exists() says whether it is usable (and why not), dev:info() describes it.  Without an id
-- a CUDA device is tir.config.device (tirlua --device=N), else 0.
function nd.device(kind, id)
  kind = kind or "cpu"
  if kind == "gpu" then kind = "cuda" end
  if kind ~= "cpu" and kind ~= "cuda" then util.raise("ValueError", "device", "unknown device type '%s' (cpu or cuda)", tostring(kind)) end
  if id == nil then
    local t = package.loaded["tir"]
    id = kind == "cuda" and type(t) == "table" and type(t.config) == "table" and t.config.device or 0
  end
  if math.type(id) ~= "integer" or id < 0 then util.raise("ValueError", "device", "id must be a non-negative integer") end
  return setmetatable({type = kind, id = id}, Device)
end
function nd.cpu(id) return nd.device("cpu", id or 0) end
function nd.cuda(id) return nd.device("cuda", id) end

function Device:exists()
  if self.type == "cpu" then return true end
  local ok, why = core.cuda_available()
  if not ok then return false, why end
  if self.id >= core.cuda_device_count() then return false, ("no CUDA device %d"):format(self.id) end
  return true
end

function Device:info()
  if self.type == "cpu" then return {name = "host CPU"} end
  return core.cuda_device_info(self.id)
end

local function dev_arg(dev) return dev or nd.cpu() end

-- A negative dimension is a ValueError naming it (the type checks stay with the binding: TypeError).
local function check_shape(prim, shape)
  if type(shape) ~= "table" then return end
  for i, v in ipairs(shape) do
    if math.type(v) == "integer" and v < 0 then
      local t = {}
      for j, x in ipairs(shape) do t[j] = tostring(x) end
      util.raise("ValueError", prim, "shape[%d] is %d: a dimension is a count of elements, >= 0 (shape {%s})", i, v, table.concat(t, ", "))
    end
  end
end

--- Uninitialized array (host arrays start as NaN / 0x5a bytes so unwritten outputs show).
function nd.empty(shape, dtype, dev)
  util.check_dtype(dtype, "nd.empty")
  check_shape("nd.empty", shape)
  return util.guard("nd.empty", core.nd_empty, shape, dtype or "float32", dev_arg(dev))
end

--- Array from a (nested) Lua table of numbers.
function nd.array(t, dtype, dev)
  if type(t) == "userdata" and getmetatable(t) and t.to then return t:to(dev_arg(dev)) end
  util.check_dtype(dtype, "nd.array")
  return util.guard("nd.array", core.nd_array, t, dtype or "float32", dev_arg(dev))
end

--- Random array: opts = {seed = 0, low = , high = } (defaults: floats in [-1, 1), int8 in
-- [-128, 127], ...); deterministic for a seed.
function nd.random(shape, dtype, dev, opts)
  opts = util.check_opts("nd.random", opts, {seed = "integer", low = "number", high = "number"})
  for _, k in ipairs({"low", "high"}) do
    if opts[k] and (opts[k] == math.huge or opts[k] == -math.huge) then
      util.raise("ValueError", "nd.random", "option %s must be finite, got %s", k, tostring(opts[k]))
    end
  end
  util.check_dtype(dtype, "nd.random")
  check_shape("nd.random", shape)
  local a = util.guard("nd.random", core.nd_empty, shape, dtype or "float32", dev_arg(dev))
  return util.guard("nd.random", a.fill_random, a, opts.seed or 0, opts.low, opts.high)
end

--- An NDArray viewing a DLPack tensor's memory, without copying (include/tir/dlpack_interop.h
-- says what is accepted).  x: a tir.DLPack capsule (a:to_dlpack()) or a light userdata
-- pointer to a DLManagedTensor from C (opts.versioned = true: a DLManagedTensorVersioned).
-- The array owns the tensor from then on: its deleter runs when the array is collected.
-- Raises ValueError/TypeError (non-compact strides, unknown dtype or device, read-only, ...).
function nd.from_dlpack(x, opts)
  opts = util.check_opts("nd.from_dlpack", opts, {versioned = "boolean"})
  if type(x) ~= "userdata" then
    util.raise("TypeError", "nd.from_dlpack", "expected a tir.DLPack capsule or a pointer to a DLManagedTensor, got %s", util.show(x))
  end
  -- a capsule knows which struct it holds: a versioned option that contradicts it is refused,
  -- not ignored (it only chooses the struct of a pointer from C)
  local mt = getmetatable(x)
  if opts.versioned ~= nil and type(mt) == "table" and mt.__name == "tir.DLPack" and x:versioned() ~= opts.versioned then
    util.raise("ValueError", "nd.from_dlpack", "versioned = %s, but the capsule holds a %s", tostring(opts.versioned),
      x:versioned() and "DLManagedTensorVersioned" or "DLManagedTensor")
  end
  return util.guard("nd.from_dlpack", core.nd_from_dlpack, x, opts.versioned or false)
end

--- Loads a .npy file onto dev (host by default).
function nd.load(path, dev) return util.guard("nd.load", core.nd_load, path, dev_arg(dev)) end

-- NDArray methods (C): a bad argument raises a tir.Error naming the method, e.g. "TypeError in
-- NDArray:copyfrom: bad argument #1 (tir.NDArray expected, got table)", not "... to '?'".
-- The methods of fixed arity refuse extra arguments (get and set take any number of indices).
local METHOD_ARGS = {shape = 0, dtype = 0, device = 0, numel = 0, nbytes = 0, to = 1, copyfrom = 1, fill_random = 3,
                     to_table = 0, save = 1}
for name, f in pairs(core.ndarray_methods) do
  local prim = "NDArray:" .. name
  local max = METHOD_ARGS[name]
  local function pass(ok, ...)
    if ok then return ... end
    local e = ...
    if type(e) == "string" then
      e = e:gsub("^[^:\n]+:%d+: ", ""):gsub("bad argument #(%d+) to '[^']*'",
                                             function(k) return ("bad argument #%d"):format(tonumber(k) - 1) end)
      core.raise("TypeError", prim, e)
    end
    error(e, 0)
  end
  core.ndarray_methods[name] = function(...)
    if max and select("#", ...) - 1 > max then
      util.raise("TypeError", prim, "too many arguments: a:%s takes %d, got %d (extra arguments are refused, not ignored)",
                 name, max, select("#", ...) - 1)
    end
    return pass(pcall(f, ...))
  end
end

--- a:to_dlpack([{versioned = true}]) -> a tir.DLPack capsule: a DLManagedTensor (or
-- ...Versioned) of a's memory, holding a reference to a until its deleter runs.  Import it
-- with nd.from_dlpack(capsule), or hand it to C with capsule:release() (a light userdata the
-- C side owns: call its deleter once).  Collected unconsumed, the capsule calls the deleter.
do
  local to_dlpack = core.ndarray_methods.to_dlpack
  core.ndarray_methods.to_dlpack = function(a, opts, ...)
    util.no_extra("NDArray:to_dlpack", "a:to_dlpack([opts])", ...)
    local o = util.check_opts("NDArray:to_dlpack", opts, {versioned = "boolean"})
    return to_dlpack(a, o.versioned or false)
  end
end

-- a call with more arguments than a function's parameters is an error (util.strict)
for _, k in ipairs({"device", "cpu", "cuda", "empty", "array", "random", "load", "from_dlpack"}) do nd[k] = util.strict("nd." .. k, nd[k]) end
for _, k in ipairs({"exists", "info"}) do Device[k] = util.strict("Device:" .. k, Device[k], true) end

--- a:numpy() is not available; a:to_table() returns nested Lua tables, a:save(path) writes .npy.
return nd
