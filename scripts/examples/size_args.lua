-- size_args.lua -- shared by the int8 examples (qgemm.lua, gemm_dp4a.lua): their [M N K]
-- arguments as positive integers; a word that is not one, or a fourth argument, prints the
-- usage line and exits 1 (never the default size in its place).
--   local M, N, K = dofile(dir .. "size_args.lua")("qgemm", default)
return function(name, default)
  local function usage()
    io.stderr:write(("usage: tirlua scripts/examples/%s.lua [M N K]  (positive integers)\n"):format(name))
    os.exit(1)
  end
  if arg[4] ~= nil then usage() end
  local function size(i, fallback)
    local a = arg[i]
    if a == nil then return fallback end
    local v = math.tointeger(tonumber(a))
    if not v or v <= 0 then usage() end
    return v
  end
  local M = size(1, default)
  local N = size(2, M)
  return M, N, size(3, M)
end
