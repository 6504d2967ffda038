--- tir.ops: ready-made operators that build PrimFuncs (te computes) to schedule and build.
--   tir.ops.quantized_matmul{...}   quantized int8 GEMM with zero points, bias and requantization
--                                   (TVM relay qnn.dense / qnn.batch_matmul + qnn.requantize)
local ops = {}
ops.quantized_matmul = require("tir.ops.quantized_matmul")
return ops
