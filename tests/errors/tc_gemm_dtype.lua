-- expect: tc_gemm_dtype.lua:6: TypeError in tc_gemm.schedule: block 'C' multiplies float32 into float32
-- tc_gemm validates the block's dtypes against tc_gemm.SUPPORTED before scheduling, and the
-- error points at this line, not into lib/tir/schedules/tc_gemm.lua
local tc = require("tir.schedules.tc_gemm")
local f = tc.workload(64, 64, 64, "float32")
tc.schedule(f, {BM = 64, BN = 64, warp_m = 32, warp_n = 32})
