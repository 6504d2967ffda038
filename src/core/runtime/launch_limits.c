/* launch_limits.c -- CUDA's launch-dimension limits, checked in one place: at lowering for
 * constant dimensions (split_host_device), at launch for symbolic ones (build.c) and in the
 * simulator (sim.c).
 *
 * The limits are those of every compute capability tirlua targets (5.0 .. 9.0): CUDA C++
 * Programming Guide, "Compute Capabilities", table "Technical Specifications per Compute
 * Capability": maximum x-dimension of a grid of thread blocks 2^31 - 1, maximum y- or
 * z-dimension 65535, maximum x- or y-dimension of a block 1024, z-dimension 64, maximum
 * number of threads per block 1024. */
#include <stdio.h>
#include <string.h>

#include "tir/error.h"
#include "tir/runtime.h"

const int64_t tir_cuda_max_grid[3] = {2147483647, 65535, 65535};
const int64_t tir_cuda_max_block[3] = {1024, 1024, 64};

int tir_check_launch_dims(int err_kind, const char *who, const char *kernel, const int64_t grid[3],
                          const int64_t block[3], int advise) {
  const char *gh = advise ? ": split the loop bound to blockIdx (bind its outer part to another blockIdx axis) or let each block do more of the work" : "";
  const char *bh = advise ? ": bind fewer iterations to threadIdx" : "";
  static const char axis[3] = {'x', 'y', 'z'};
  for (int d = 0; d < 3; d++) {
    if (grid[d] != TIR_LAUNCH_DIM_UNKNOWN && (grid[d] < 1 || grid[d] > tir_cuda_max_grid[d]))
      return tir_error_set((tir_ErrorKind)err_kind, who,
                           "kernel %s would launch gridDim.%c = %lld (the extent bound to blockIdx.%c); CUDA allows "
                           "1..%lld on blockIdx.%c (x: 2^31-1, y and z: 65535; CUDA C++ Programming Guide, compute "
                           "capability table)%s",
                           kernel, axis[d], (long long)grid[d], axis[d], (long long)tir_cuda_max_grid[d], axis[d],
                           grid[d] > 0 ? gh : "");
    if (block[d] != TIR_LAUNCH_DIM_UNKNOWN && (block[d] < 1 || block[d] > tir_cuda_max_block[d]))
      return tir_error_set((tir_ErrorKind)err_kind, who,
                           "kernel %s would launch blockDim.%c = %lld (the extent bound to threadIdx.%c); CUDA allows "
                           "1..%lld on threadIdx.%c (x, y: 1024, z: 64; CUDA C++ Programming Guide, compute "
                           "capability table)%s",
                           kernel, axis[d], (long long)block[d], axis[d], (long long)tir_cuda_max_block[d], axis[d],
                           block[d] > 0 ? bh : "");
  }
  if (block[0] != TIR_LAUNCH_DIM_UNKNOWN && block[1] != TIR_LAUNCH_DIM_UNKNOWN && block[2] != TIR_LAUNCH_DIM_UNKNOWN &&
      block[0] * block[1] * block[2] > TIR_CUDA_MAX_THREADS_PER_BLOCK)
    return tir_error_set((tir_ErrorKind)err_kind, who,
                         "kernel %s would launch %lld x %lld x %lld = %lld threads per block; CUDA allows at most %d "
                         "(CUDA C++ Programming Guide, compute capability table)%s",
                         kernel, (long long)block[0], (long long)block[1], (long long)block[2],
                         (long long)(block[0] * block[1] * block[2]), TIR_CUDA_MAX_THREADS_PER_BLOCK, bh);
  return 0;
}

int tir_check_warp_launch(int err_kind, const char *who, const char *kernel, const char *op, const int64_t block[3]) {
  if (!op || block[0] == TIR_LAUNCH_DIM_UNKNOWN || block[0] % 32 == 0) return 0;
  char dims[96];
  snprintf(dims, sizeof dims, "threadIdx.x = %lld", (long long)block[0]);
  for (int d = 1; d < 3; d++)
    if (block[d] != 1) {
      size_t n = strlen(dims);
      if (block[d] == TIR_LAUNCH_DIM_UNKNOWN) snprintf(dims + n, sizeof dims - n, ", threadIdx.%c symbolic", 'x' + d);
      else snprintf(dims + n, sizeof dims - n, ", threadIdx.%c = %lld", 'x' + d, (long long)block[d]);
    }
  return tir_error_set((tir_ErrorKind)err_kind, who,
                       "kernel %s uses the warp-wide builtin %s (a tensor-core instruction) but launches %s, not whole "
                       "warps of consecutive threadIdx.x lanes: a warp is 32 consecutive threadIdx.x lanes (then y, z) "
                       "and the intrinsic gives each warp lanes 0..31 of one tile, so blockDim.x must be a multiple of "
                       "32 -- bind threadIdx.x to 32 lanes (e.g. in the cooperative copies) and number the warps with "
                       "threadIdx.y/z (docs/TENSOR_CORES.md)",
                       kernel, op, dims);
}
