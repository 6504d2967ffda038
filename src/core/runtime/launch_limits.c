/* launch_limits.c -- CUDA's launch-dimension limits, checked in one place: at lowering for
 * constant dimensions (split_host_device), at launch for symbolic ones (build.c) and in the
 * simulator (sim.c).
 *
 * The limits are those of every compute capability tirlua targets (5.0 .. 9.0): CUDA C++
 * Programming Guide, "Compute Capabilities", table "Technical Specifications per Compute
 * Capability": maximum x-dimension of a grid of thread blocks 2^31 - 1, maximum y- or
 * z-dimension 65535, maximum x- or y-dimension of a block 1024, z-dimension 64, maximum
 * number of threads per block 1024.
 *
 * Shared memory per thread block, by compute capability: the same table's "Maximum amount of
 * shared memory per thread block" (the opt-in maximum a kernel gets with
 * cudaFuncAttributeMaxDynamicSharedMemorySize, which build.c sets above the 48 KB a block gets
 * without it; split_host_device makes every kernel over 48 KB use dynamic shared memory). */
#include <stdio.h>
#include <string.h>

#include "tir/error.h"
#include "tir/runtime.h"
#include "tir/strbuf.h"
#include "tir/transform.h"

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

static const struct {
  int sm;
  int64_t bytes;
} smem_per_block[] = {
    {50, 48 * 1024},  {52, 48 * 1024},  {53, 48 * 1024},  {60, 48 * 1024},  {61, 48 * 1024},  {62, 48 * 1024},
    {70, 96 * 1024},  {72, 96 * 1024},  {75, 64 * 1024},  {80, 163 * 1024}, {86, 99 * 1024},  {87, 163 * 1024},
    {89, 99 * 1024},  {90, 227 * 1024}, {100, 227 * 1024}, {101, 227 * 1024}, {120, 99 * 1024},
};

int64_t tir_cuda_max_shared_per_block(int sm) {
  for (size_t i = 0; i < sizeof smem_per_block / sizeof smem_per_block[0]; i++)
    if (smem_per_block[i].sm == sm) return smem_per_block[i].bytes;
  return 0;
}

int tir_check_shared_memory(int err_kind, const char *who, const char *kernel, const struct tir_Node *region, int64_t bytes,
                            int sm) {
  int64_t limit = tir_cuda_max_shared_per_block(sm);
  char arch[64];
  if (limit > 0) snprintf(arch, sizeof arch, "sm_%d", sm);
  else {
    limit = TIR_CUDA_MAX_SHARED_ANY;
    snprintf(arch, sizeof arch, sm > 0 ? "any GPU tirlua knows (sm_%d is not in its table)" : "any GPU (the architecture is not known)", sm);
  }
  if (bytes <= limit) return 0;
  /* the buffers, as the plan places them: what to shrink */
  tir_StrBuf sb;
  tir_sb_init(&sb);
  if (region) {
    tir_SharedPlan sp;
    tir_shared_plan(region, &sp);
    for (int i = 0; i < sp.n; i++) {
      const tir_Buffer *b = sp.slots[i].alloc->buffer;
      tir_sb_printf(&sb, "\n  %s (%s): %lld bytes at offset %lld", b->name, b->scope, (long long)tir_shared_slice_bytes(b),
                    (long long)sp.slots[i].offset);
    }
    tir_shared_plan_free(&sp);
  }
  int rc = tir_error_set((tir_ErrorKind)err_kind, who,
                         "kernel %s needs %lld bytes of shared memory a block, but %s allows at most %lld (%lld KB; CUDA C++ "
                         "Programming Guide, technical specifications per compute capability: shared memory per thread "
                         "block): use smaller tiles or fewer pipeline stages.  Its shared buffers:%s",
                         kernel, (long long)bytes, arch, (long long)limit, (long long)(limit / 1024), sb.len ? sb.data : " (none listed)");
  tir_sb_free(&sb);
  return rc;
}
