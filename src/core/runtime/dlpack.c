/* dlpack.c -- DLPack import/export of NDArrays (include/tir/dlpack_interop.h). */
#include <stdlib.h>
#include <string.h>

#include "tir/dlpack_interop.h"
#include "tir/error.h"

/* DLPack dtype -> tirlua dtype; -1 with the error set when tirlua has no such type. */
static int dtype_from_dl(DLDataType t, tir_DType *out, const char *prim) {
  if (t.lanes != 1)
    return tir_error_set(TIR_ERR_TYPE, prim, "the tensor has %d lanes per element; tirlua arrays hold scalars", t.lanes);
  switch (t.code) {
    case kDLInt:
    case kDLUInt:
      if (t.bits == 8 || t.bits == 16 || t.bits == 32 || t.bits == 64) {
        *out = tir_dtype(t.code == kDLInt ? TIR_DT_INT : TIR_DT_UINT, t.bits, 1);
        return 0;
      }
      break;
    case kDLFloat:
      if (t.bits == 16 || t.bits == 32 || t.bits == 64) {
        *out = tir_dtype(TIR_DT_FLOAT, t.bits, 1);
        return 0;
      }
      break;
    case kDLBfloat:
      if (t.bits == 16) {
        *out = tir_dtype(TIR_DT_BFLOAT, 16, 1);
        return 0;
      }
      break;
    case TIR_DLPACK_BOOL_CODE:
      if (t.bits == 8) {
        *out = TIR_BOOL;
        return 0;
      }
      break;
    default:
      break;
  }
  return tir_error_set(TIR_ERR_TYPE, prim, "DLPack dtype (code %d, %d bits) has no tirlua counterpart "
                       "(int/uint 8..64, float16/32/64, bfloat16, bool)", t.code, t.bits);
}

static DLDataType dtype_to_dl(tir_DType t) {
  DLDataType d;
  d.lanes = 1;
  d.bits = (uint8_t)t.bits;
  switch (t.code) {
    case TIR_DT_INT: d.code = kDLInt; break;
    case TIR_DT_UINT: d.code = kDLUInt; break;
    case TIR_DT_BFLOAT: d.code = kDLBfloat; break;
    case TIR_DT_BOOL: d.code = TIR_DLPACK_BOOL_CODE; d.bits = 8; break;
    default: d.code = kDLFloat; break;
  }
  return d;
}

/* A new NDArray viewing t (not owning anything yet), or NULL with the error set. */
static tir_NDArray *view(const DLTensor *t, const char *prim) {
  tir_DType dt;
  tir_Device dev;
  if (t->device.device_type == kDLCPU)
    dev.type = TIR_DEV_CPU;
  else if (t->device.device_type == kDLCUDA)
    dev.type = TIR_DEV_CUDA;
  else {
    tir_error_set(TIR_ERR_VALUE, prim, "the tensor is on DLPack device type %d; tirlua takes kDLCPU (1) and kDLCUDA (2)",
                  (int)t->device.device_type);
    return NULL;
  }
  dev.id = dev.type == TIR_DEV_CPU ? 0 : t->device.device_id;
  if (dtype_from_dl(t->dtype, &dt, prim) != 0) return NULL;
  if (t->ndim < 0 || t->ndim > TIR_MAX_NDIM) {
    tir_error_set(TIR_ERR_VALUE, prim, "the tensor has %d dimensions (tirlua arrays have at most %d)", t->ndim, TIR_MAX_NDIM);
    return NULL;
  }
  if (t->ndim > 0 && t->shape == NULL) {
    tir_error_set(TIR_ERR_VALUE, prim, "the tensor has %d dimensions but no shape", t->ndim);
    return NULL;
  }
  int64_t expect = 1, n = 1;
  for (int i = t->ndim - 1; i >= 0; i--) {
    if (t->shape[i] < 0) {
      tir_error_set(TIR_ERR_VALUE, prim, "dimension %d of the tensor is negative (%lld)", i, (long long)t->shape[i]);
      return NULL;
    }
    if (t->strides && t->shape[i] != 1 && t->strides[i] != expect) {
      tir_error_set(TIR_ERR_VALUE, prim, "the tensor is not compact row-major: dimension %d has stride %lld where %lld was "
                    "expected (make a contiguous copy first)", i, (long long)t->strides[i], (long long)expect);
      return NULL;
    }
    if (__builtin_mul_overflow(expect, t->shape[i], &expect) || __builtin_mul_overflow(n, t->shape[i], &n)) {
      tir_error_set(TIR_ERR_VALUE, prim, "the tensor's size overflows");
      return NULL;
    }
  }
  int esize = tir_dtype_bytes(dt);
  uintptr_t addr = (uintptr_t)t->data + (uintptr_t)t->byte_offset;
  uintptr_t align = dev.type == TIR_DEV_CUDA ? 16 : (uintptr_t)esize;
  if (n > 0 && addr % align != 0) {
    tir_error_set(TIR_ERR_VALUE, prim, "the tensor's data (+ byte_offset) is at 0x%llx, not aligned to %d bytes%s",
                  (unsigned long long)addr, (int)align, dev.type == TIR_DEV_CUDA ? " (tirlua's kernels use 16-byte vector accesses)" : "");
    return NULL;
  }
  tir_NDArray *a = calloc(1, sizeof *a);
  a->refcount = 1;
  a->dtype = dt;
  a->ndim = t->ndim;
  for (int i = 0; i < t->ndim; i++) a->shape[i] = t->shape[i];
  a->dev = dev;
  a->nbytes = (size_t)n * (size_t)esize;
  if (dev.type == TIR_DEV_CPU)
    a->data = (void *)addr;
  else
    a->dptr = (uint64_t)addr;
  return a;
}

static void call_deleter(void *owner) {
  DLManagedTensor *t = owner;
  if (t->deleter) t->deleter(t);
}

static void call_deleter_versioned(void *owner) {
  DLManagedTensorVersioned *t = owner;
  if (t->deleter) t->deleter(t);
}

/* The NDArray viewing `tensor` that owns `owner` (freed by owner_free at its last release), or
** NULL with the error set and nothing taken. */
static tir_NDArray *adopt(const void *owner, const DLTensor *tensor, void (*owner_free)(void *)) {
  if (!owner) {
    tir_error_set(TIR_ERR_VALUE, "nd.from_dlpack", "no tensor (NULL)");
    return NULL;
  }
  tir_NDArray *a = view(tensor, "nd.from_dlpack");
  if (!a) return NULL;
  a->owner = (void *)owner;
  a->owner_free = owner_free;
  return a;
}

tir_NDArray *tir_nd_from_dlpack(DLManagedTensor *t) { return adopt(t, t ? &t->dl_tensor : NULL, call_deleter); }

tir_NDArray *tir_nd_from_dlpack_versioned(DLManagedTensorVersioned *t) {
  if (t && t->version.major != 1) {
    tir_error_set(TIR_ERR_VALUE, "nd.from_dlpack", "DLPack version %u.%u: tirlua reads version 1.x", t->version.major,
                  t->version.minor);
    return NULL;
  }
  if (t && (t->flags & DLPACK_FLAG_BITMASK_READ_ONLY)) {
    tir_error_set(TIR_ERR_VALUE, "nd.from_dlpack", "the tensor is read-only; tirlua arrays are writable (copy it first)");
    return NULL;
  }
  return adopt(t, t ? &t->dl_tensor : NULL, call_deleter_versioned);
}

static void fill_tensor(DLTensor *d, tir_NDArray *a) {
  d->data = a->dev.type == TIR_DEV_CPU ? a->data : (void *)(uintptr_t)a->dptr;
  d->device.device_type = a->dev.type == TIR_DEV_CPU ? kDLCPU : kDLCUDA;
  d->device.device_id = a->dev.type == TIR_DEV_CPU ? 0 : a->dev.id;
  d->ndim = a->ndim;
  d->dtype = dtype_to_dl(a->dtype);
  d->shape = a->shape; /* the array is retained while the tensor lives */
  d->strides = NULL;   /* compact row-major */
  d->byte_offset = 0;
}

static void export_deleter(DLManagedTensor *t) {
  tir_nd_release(t->manager_ctx);
  free(t);
}

static void export_deleter_versioned(DLManagedTensorVersioned *t) {
  tir_nd_release(t->manager_ctx);
  free(t);
}

DLManagedTensor *tir_nd_to_dlpack(tir_NDArray *a) {
  DLManagedTensor *t = calloc(1, sizeof *t);
  if (!t) {
    tir_error_set(TIR_ERR_RUNTIME, "nd.to_dlpack", "out of memory");
    return NULL;
  }
  tir_nd_retain(a);
  fill_tensor(&t->dl_tensor, a);
  t->manager_ctx = a;
  t->deleter = export_deleter;
  return t;
}

DLManagedTensorVersioned *tir_nd_to_dlpack_versioned(tir_NDArray *a) {
  DLManagedTensorVersioned *t = calloc(1, sizeof *t);
  if (!t) {
    tir_error_set(TIR_ERR_RUNTIME, "nd.to_dlpack", "out of memory");
    return NULL;
  }
  tir_nd_retain(a);
  t->version.major = 1; /* flags 0: writable, not a copy */
  fill_tensor(&t->dl_tensor, a);
  t->manager_ctx = a;
  t->deleter = export_deleter_versioned;
  return t;
}
