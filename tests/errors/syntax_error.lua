-- expect: tirlua:
-- A script that does not compile must fail with a tirlua: message and status 1.
local x = = 1
