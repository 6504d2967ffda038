-- helper.lua -- loaded by busted before the specs (.busted: helper).
-- Under tirlua, tir.core is preloaded.  Under a stock `busted` (lua5.4) it is the C module
-- <build>/tir/core.so, so let require find it there.
local build = os.getenv("TIRLUA_BUILD_DIR") or "build"
if not package.cpath:find(build .. "/?.so", 1, true) then
  package.cpath = build .. "/?.so;" .. package.cpath
end

-- Shared helpers for the specs: require("spec_util") (tests/spec is on the path below).
package.path = "tests/spec/?.lua;" .. package.path
