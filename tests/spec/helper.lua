-- helper.lua -- loaded by busted before the specs (.busted: helper).
-- Under tirlua, tir.core is preloaded.  Under a stock `busted` (lua5.4) it is the C module
-- <build>/tir/core.so, so let require find it there.
local build = os.getenv("TIRLUA_BUILD_DIR") or "build"
if not package.cpath:find(build .. "/?.so", 1, true) then
  package.cpath = build .. "/?.so;" .. package.cpath
end

-- Shared helpers for the specs: require("spec_util") (tests/spec is on the path below).
package.path = "tests/spec/?.lua;" .. package.path

-- The specs do not read the user's tuning database (tc_gemm.auto_tensorize would take its
-- records for the shapes they schedule): unless TIRLUA_TUNE_DB names one, the default is a
-- file that does not exist.  Specs that need a database pass {db = ...}.
if not os.getenv("TIRLUA_TUNE_DB") then
  local tune = require("tir.tune")
  local none = os.tmpname()
  os.remove(none)
  tune.default_db = function() return none end
end
