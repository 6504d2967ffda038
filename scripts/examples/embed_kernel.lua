-- embed_kernel.lua -- the script scripts/examples/embed.c runs (CTest embed_example).
-- The host loads this file with tirlua_dofile, then calls run_checks() and expects true.
-- `tir` is the global tirlua_openlibs sets.

function run_checks()
  local i = tir.var("i")
  local e = (i * 16 + 3) // 16 -- an IR expression built through the metamethods
  return tostring(e) ~= ""
end
