-- expect: custom object error
-- Error objects with __tostring (as tir.Error) are printed through tostring.
error(setmetatable({}, { __tostring = function() return "custom object error" end }))
