-- expect: ValueError in nd.array: element [2] is 300, outside int8's range [-128, 127]
local a = tir.nd.array({1, 300, 3}, "int8")
print(a)
