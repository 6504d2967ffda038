-- expect: use tir.lt/le/gt/ge(a, b)
local i = tir.var("i")
local cond = i < 16
print(cond)
