-- run_busted.lua -- runs Debian's busted inside tirlua, so specs see the preloaded tir
-- (and the sanitizer build covers them):  build/tirlua tests/run_busted.lua [busted args]
-- Run from the repo root (busted reads ./.busted).

-- Debian's Lua 5.4 module directories, in case this Lua's defaults lack them.
local function add(field, entry)
  if not (";" .. package[field] .. ";"):find(";" .. entry .. ";", 1, true) then
    package[field] = package[field] .. ";" .. entry
  end
end
-- On the GPU machine (no Lua installed) busted's modules travel in $TIRLUA_LUA_MODULES
-- (made by scripts/gpu/pack_busted.sh): <dir>/share for .lua files, <dir>/lib for .so.
local carried = os.getenv("TIRLUA_LUA_MODULES")
if carried then
  add("path", carried .. "/share/?.lua")
  add("path", carried .. "/share/?/init.lua")
  add("cpath", carried .. "/lib/?.so")
end
add("path", "/usr/share/lua/5.4/?.lua")
add("path", "/usr/share/lua/5.4/?/init.lua")
add("cpath", "/usr/lib/x86_64-linux-gnu/lua/5.4/?.so")

-- busted parses the global `arg` as its own command line.
local args = { [0] = "busted" }
for i = 1, #arg do args[i] = arg[i] end
arg = args

-- standalone = false: busted returns after a clean run and calls os.exit(1) itself on
-- any failure or error, so the exit status reflects the result.
require("busted.runner")({ standalone = false })
