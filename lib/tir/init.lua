-- tir: the Lua face of tirlua.  require("tir") returns this table.
local core = require("tir.core")
local tir = {}
for k, v in pairs(core) do tir[k] = v end
tir.core = core
return tir
