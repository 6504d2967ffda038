/* dlpack_interop.h -- tirlua NDArrays as DLPack tensors and back, without copying.
 *
 * DLPack (https://dmlc.github.io/dlpack): DLManagedTensor (0.x) and DLManagedTensorVersioned
 * (1.0; declared here when the installed dlpack.h predates it -- Debian 12 ships 0.6).
 *
 * Import (tir_nd_from_dlpack*): the NDArray views the tensor's memory and owns the managed
 * tensor: releasing the last reference calls its deleter, exactly once.  On failure nothing is
 * taken: the caller still owns the tensor (and must call its deleter).  Accepted: devices kDLCPU
 * and kDLCUDA (device id = CUDA ordinal), dtypes int8..64, uint8..64, float16/32/64, bfloat16,
 * bool (kDLBool, 8 bits), one lane; compact row-major strides (NULL, or equal to the row-major
 * ones; dimensions of extent 1 may have any stride); data + byte_offset aligned to the element
 * size (CPU) or to 16 bytes (CUDA: tirlua's kernels use 16-byte vector accesses); at most
 * TIR_MAX_NDIM dimensions; not read-only (versioned flag): tirlua arrays are writable.
 * Errors: ValueError / TypeError naming the reason (the stride, the dtype code, ...).
 *
 * Export (tir_nd_to_dlpack*): a managed tensor whose manager_ctx holds a reference to the array
 * (shape points into the array, strides NULL: compact); its deleter releases that reference and
 * frees the struct.  The consumer must call the deleter once.
 */
#ifndef TIR_DLPACK_INTEROP_H
#define TIR_DLPACK_INTEROP_H

#include <dlpack/dlpack.h>

#include "tir/runtime.h"

#ifndef DLPACK_MAJOR_VERSION /* DLPack < 1.0: the 1.0 types (DLPack's dlpack.h, v1.0) */
typedef struct {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;
typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned *self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;
#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)
#endif
#define TIR_DLPACK_BOOL_CODE 6 /* kDLBool (DLPack >= 0.8) */

tir_NDArray *tir_nd_from_dlpack(DLManagedTensor *t);
tir_NDArray *tir_nd_from_dlpack_versioned(DLManagedTensorVersioned *t);
DLManagedTensor *tir_nd_to_dlpack(tir_NDArray *a);
DLManagedTensorVersioned *tir_nd_to_dlpack_versioned(tir_NDArray *a);

#endif
