-- run_error_scripts.lua -- scripts that must fail cleanly:
--   build/tirlua tests/run_error_scripts.lua <path-to-tirlua>
-- Each tests/errors/*.lua starts with "-- expect: <substring>"; running it with tirlua
-- must exit with status 1 and print the substring (stdout and stderr together).

local tirlua = arg[1] or arg[-1] -- default: the interpreter running this script
local dir = (arg[0]:match("^(.*)/") or ".") .. "/errors"

local function quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

local function lines_of(cmd)
  local p = assert(io.popen(cmd))
  local t = {}
  for l in p:lines() do t[#t + 1] = l end
  p:close()
  return t
end

local passed, failed = 0, 0
for _, file in ipairs(lines_of("ls " .. quote(dir) .. "/*.lua 2>/dev/null")) do
  local f = assert(io.open(file))
  local expect = (f:read("l") or ""):match("^%-%-%s*expect:%s*(.-)%s*$")
  f:close()
  local p = assert(io.popen(quote(tirlua) .. " " .. quote(file) .. " 2>&1"))
  local out = p:read("a")
  local _, how, code = p:close()
  local why
  if not expect or expect == "" then
    why = "first line is not '-- expect: <substring>'"
  elseif how ~= "exit" or code ~= 1 then
    why = ("exit status %s %s, expected exit 1"):format(how, code)
  elseif not out:find(expect, 1, true) then
    why = ("output lacks %q"):format(expect)
  end
  if why then
    failed = failed + 1
    print(("FAIL %s: %s\n%s"):format(file, why, out))
  else
    passed = passed + 1
    print(("ok   %s"):format(file))
  end
end
print(("%d passed, %d failed"):format(passed, failed))
os.exit(failed == 0 and passed > 0 and 0 or 1, true) -- close the state (leak checks)
