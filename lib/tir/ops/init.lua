--- tir.ops: ready-made operators that build PrimFuncs (te computes) to schedule and build.
--   tir.ops.quantized_matmul{...}   quantized int8 GEMM with zero points, bias and requantization
--                                   (TVM relay qnn.dense / qnn.batch_matmul + qnn.requantize)
--   tir.ops.conv(data, kernel, opts)  convolutions 1-D/2-D/3-D, any layout, groups, bias/activation/
--                                   requantize epilogue (topi.nn.conv); conv2d_nhwc, conv2d_nchw,
--                                   group_conv2d_nhwc/nchw, conv1d_nwc/ncw, conv3d_ndhwc/ncdhw (topi's
--                                   positional forms); conv_plan (sizes); ops/conv.lua
--   tir.ops.im2col(data, opts)        the im2col matrix [N*P*Q, C*R*S]; conv_weight_matrix(kernel, opts)
--                                   the matching [K, F] weight (ops/im2col.lua)
local ops = {}
ops.quantized_matmul = require("tir.ops.quantized_matmul")
local conv = require("tir.ops.conv")
for _, k in ipairs({"conv", "conv_plan", "conv2d_nhwc", "conv2d_nchw", "group_conv2d_nhwc", "group_conv2d_nchw", "conv1d_nwc", "conv1d_ncw",
                    "conv3d_ndhwc", "conv3d_ncdhw"}) do
  ops[k] = require("tir.util").strict(k, conv[k])
end
ops.conv_out_size = conv.out_size
local im2col = require("tir.ops.im2col")
ops.im2col = im2col.im2col
ops.conv_weight_matrix = im2col.conv_weight_matrix
return ops
