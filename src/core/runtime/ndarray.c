/* ndarray.c -- dense row-major arrays on the host or a CUDA device. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tir/error.h"
#include "tir/runtime.h"

int64_t tir_nd_numel(const tir_NDArray *a) {
  int64_t n = 1;
  for (int i = 0; i < a->ndim; i++) n *= a->shape[i];
  return n;
}

static void poison(void *p, tir_DType t, int64_t n) {
  if (tir_dtype_is_float(t)) {
    for (int64_t i = 0; i < n * t.lanes; i++) tir_store_scalar_f(p, tir_dtype_element(t), i, NAN);
  } else {
    memset(p, 0x5a, (size_t)(n * tir_dtype_bytes(t)));
  }
}

tir_NDArray *tir_nd_empty(const int64_t *shape, int ndim, tir_DType dtype, tir_Device dev) {
  if (ndim < 0 || ndim > TIR_MAX_NDIM) {
    tir_error_set(TIR_ERR_VALUE, "nd.empty", "%d dimensions (at most %d)", ndim, TIR_MAX_NDIM);
    return NULL;
  }
  if (tir_dtype_is_void(dtype) || tir_dtype_is_handle(dtype)) {
    tir_error_set(TIR_ERR_TYPE, "nd.empty", "arrays cannot hold void or handle values");
    return NULL;
  }
  int64_t n = 1;
  for (int i = 0; i < ndim; i++) {
    if (shape[i] < 0) {
      tir_error_set(TIR_ERR_VALUE, "nd.empty", "dimension %d is negative (%lld)", i + 1, (long long)shape[i]);
      return NULL;
    }
    if (__builtin_mul_overflow(n, shape[i], &n) || n > ((int64_t)1 << 40)) {
      tir_error_set(TIR_ERR_VALUE, "nd.empty", "array too large");
      return NULL;
    }
  }
  tir_NDArray *a = calloc(1, sizeof *a);
  a->refcount = 1;
  a->dtype = dtype;
  a->ndim = ndim;
  for (int i = 0; i < ndim; i++) a->shape[i] = shape[i];
  a->dev = dev;
  a->nbytes = (size_t)n * (size_t)tir_dtype_bytes(dtype);
  if (dev.type == TIR_DEV_CPU) {
    size_t sz = (a->nbytes + 63) / 64 * 64;
    a->data = aligned_alloc(64, sz ? sz : 64);
    if (!a->data) {
      tir_error_set(TIR_ERR_RUNTIME, "nd.empty", "out of host memory (%zu bytes)", a->nbytes);
      free(a);
      return NULL;
    }
    poison(a->data, dtype, n);
  } else if (dev.type == TIR_DEV_CUDA) {
    if (tir_cuda_malloc(dev.id, a->nbytes, &a->dptr) != 0) {
      free(a);
      return NULL;
    }
  } else {
    free(a);
    tir_error_set(TIR_ERR_VALUE, "nd.empty", "unknown device type %d", dev.type);
    return NULL;
  }
  return a;
}

void tir_nd_retain(tir_NDArray *a) {
  if (a) a->refcount++;
}

void tir_nd_release(tir_NDArray *a) {
  if (!a || --a->refcount > 0) return;
  if (a->owner_free) a->owner_free(a->owner);
  else if (a->dev.type == TIR_DEV_CPU) free(a->data);
  else tir_cuda_free(a->dev.id, a->dptr);
  free(a);
}

static void release_base(void *base) { tir_nd_release(base); }

tir_NDArray *tir_nd_reshape(tir_NDArray *a, const int64_t *shape, int ndim) {
  if (ndim < 0 || ndim > TIR_MAX_NDIM) {
    tir_error_set(TIR_ERR_VALUE, "nd.reshape", "%d dimensions (at most %d)", ndim, TIR_MAX_NDIM);
    return NULL;
  }
  int64_t n = 1;
  for (int i = 0; i < ndim; i++) {
    if (shape[i] < 0 || __builtin_mul_overflow(n, shape[i], &n)) {
      tir_error_set(TIR_ERR_VALUE, "nd.reshape", "dimension %d (%lld) is not a valid extent", i + 1, (long long)shape[i]);
      return NULL;
    }
  }
  if (n != tir_nd_numel(a)) {
    tir_error_set(TIR_ERR_VALUE, "nd.reshape", "the new shape has %lld elements, the array %lld", (long long)n, (long long)tir_nd_numel(a));
    return NULL;
  }
  tir_NDArray *v = calloc(1, sizeof *v);
  *v = *a;
  v->refcount = 1;
  v->ndim = ndim;
  for (int i = 0; i < TIR_MAX_NDIM; i++) v->shape[i] = i < ndim ? shape[i] : 0;
  tir_nd_retain(a); /* the view keeps the memory's owner alive */
  v->owner_free = release_base;
  v->owner = a;
  return v;
}

int tir_nd_copy(tir_NDArray *dst, const tir_NDArray *src) {
  if (!tir_dtype_eq(dst->dtype, src->dtype)) {
    char a[32], b[32];
    return tir_error_set(TIR_ERR_VALUE, "nd.copy", "the arrays differ in dtype: the destination is %s, the source %s",
                         tir_dtype_str(dst->dtype, a), tir_dtype_str(src->dtype, b));
  }
  if (dst->nbytes != src->nbytes)
    return tir_error_set(TIR_ERR_VALUE, "nd.copy", "the arrays differ in size (%zu vs %zu bytes)", dst->nbytes, src->nbytes);
  int sd = src->dev.type, dd = dst->dev.type;
  if (sd == TIR_DEV_CPU && dd == TIR_DEV_CPU) {
    memcpy(dst->data, src->data, src->nbytes);
    return 0;
  }
  if (sd == TIR_DEV_CPU) return tir_cuda_memcpy_htod(dst->dev.id, dst->dptr, src->data, src->nbytes);
  if (dd == TIR_DEV_CPU) return tir_cuda_memcpy_dtoh(src->dev.id, dst->data, src->dptr, src->nbytes);
  if (src->dev.id != dst->dev.id) {
    /* through the host: simple and rare */
    void *tmp = malloc(src->nbytes ? src->nbytes : 1);
    int rc = tir_cuda_memcpy_dtoh(src->dev.id, tmp, src->dptr, src->nbytes);
    if (!rc) rc = tir_cuda_memcpy_htod(dst->dev.id, dst->dptr, tmp, src->nbytes);
    free(tmp);
    return rc;
  }
  return tir_cuda_memcpy_dtod(dst->dev.id, dst->dptr, src->dptr, src->nbytes);
}

tir_NDArray *tir_nd_to(const tir_NDArray *src, tir_Device dev) {
  tir_NDArray *a = tir_nd_empty(src->shape, src->ndim, src->dtype, dev);
  if (!a) return NULL;
  if (tir_nd_copy(a, src) != 0) {
    tir_nd_release(a);
    return NULL;
  }
  return a;
}

/* ---- scalar access by dtype ---- */
double tir_load_scalar_f(const void *base, tir_DType t, int64_t i) {
  switch (t.code) {
    case TIR_DT_FLOAT:
      if (t.bits == 32) return ((const float *)base)[i];
      if (t.bits == 64) return ((const double *)base)[i];
      return tir_f16_to_f32(((const uint16_t *)base)[i]);
    case TIR_DT_BFLOAT: return tir_bf16_to_f32(((const uint16_t *)base)[i]);
    default: return (double)tir_load_scalar_i(base, t, i);
  }
}

int64_t tir_load_scalar_i(const void *base, tir_DType t, int64_t i) {
  switch (t.code) {
    case TIR_DT_INT:
      switch (t.bits) {
        case 8: return ((const int8_t *)base)[i];
        case 16: return ((const int16_t *)base)[i];
        case 32: return ((const int32_t *)base)[i];
        default: return ((const int64_t *)base)[i];
      }
    case TIR_DT_UINT:
      switch (t.bits) {
        case 8: return ((const uint8_t *)base)[i];
        case 16: return ((const uint16_t *)base)[i];
        case 32: return ((const uint32_t *)base)[i];
        default: return (int64_t)((const uint64_t *)base)[i];
      }
    case TIR_DT_BOOL: return ((const uint8_t *)base)[i] != 0;
    default: {
      double v = tir_load_scalar_f(base, t, i);
      if (v != v) return 0;
      if (v >= 9.2e18) return INT64_MAX;
      if (v <= -9.2e18) return INT64_MIN;
      return (int64_t)v;
    }
  }
}

void tir_store_scalar_f(void *base, tir_DType t, int64_t i, double v) {
  switch (t.code) {
    case TIR_DT_FLOAT:
      if (t.bits == 32) ((float *)base)[i] = (float)v;
      else if (t.bits == 64) ((double *)base)[i] = v;
      else ((uint16_t *)base)[i] = tir_f64_to_f16(v);
      return;
    case TIR_DT_BFLOAT: ((uint16_t *)base)[i] = tir_f64_to_bf16(v); return;
    default: {
      int64_t x;
      if (v != v) x = 0;
      else if (v >= 9.2e18) x = INT64_MAX;
      else if (v <= -9.2e18) x = INT64_MIN;
      else x = (int64_t)v;
      tir_store_scalar_i(base, t, i, x);
    }
  }
}

void tir_store_scalar_i(void *base, tir_DType t, int64_t i, int64_t v) {
  switch (t.code) {
    case TIR_DT_INT:
    case TIR_DT_UINT:
      switch (t.bits) {
        case 8: ((uint8_t *)base)[i] = (uint8_t)v; return;
        case 16: ((uint16_t *)base)[i] = (uint16_t)v; return;
        case 32: ((uint32_t *)base)[i] = (uint32_t)v; return;
        default: ((uint64_t *)base)[i] = (uint64_t)v; return;
      }
    case TIR_DT_BOOL: ((uint8_t *)base)[i] = v != 0; return;
    default: tir_store_scalar_f(base, t, i, (double)v); return;
  }
}

static int need_cpu(const tir_NDArray *a, const char *what) {
  if (a->dev.type != TIR_DEV_CPU)
    return tir_error_set(TIR_ERR_VALUE, what, "the array is on a CUDA device; copy it to the host first");
  return 0;
}

double tir_nd_get_f(const tir_NDArray *a, int64_t flat) {
  return tir_load_scalar_f(a->data, tir_dtype_element(a->dtype), flat);
}
int64_t tir_nd_get_i(const tir_NDArray *a, int64_t flat) {
  return tir_load_scalar_i(a->data, tir_dtype_element(a->dtype), flat);
}
void tir_nd_set_f(tir_NDArray *a, int64_t flat, double v) { tir_store_scalar_f(a->data, tir_dtype_element(a->dtype), flat, v); }
void tir_nd_set_i(tir_NDArray *a, int64_t flat, int64_t v) { tir_store_scalar_i(a->data, tir_dtype_element(a->dtype), flat, v); }

void tir_nd_default_range(tir_DType t, double *low, double *high) {
  if (tir_dtype_is_float(t)) *low = -1, *high = 1;
  else if (t.code == TIR_DT_BOOL) *low = 0, *high = 1;
  else if (t.code == TIR_DT_INT && t.bits == 8) *low = -128, *high = 127;
  else if (t.code == TIR_DT_UINT && t.bits == 8) *low = 0, *high = 255;
  else if (t.code == TIR_DT_UINT) *low = 0, *high = 100;
  else *low = -100, *high = 100;
}

static uint64_t splitmix64(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

int tir_nd_fill_random(tir_NDArray *a, uint64_t seed, double low, double high) {
  if (high < low) return tir_error_set(TIR_ERR_VALUE, "nd.random", "high (%g) < low (%g)", high, low);
  tir_DType et = tir_dtype_element(a->dtype);
  if (!tir_dtype_is_float(et)) {
    /* integers are drawn from [ceil(low), floor(high)]: that range must hold an integer and lie
     * inside the dtype's (a value outside it would wrap when stored: int8 200 -> -56) */
    double dlo = tir_dtype_min(et), dhi = tir_dtype_max(et);
    char dn[32];
    tir_dtype_str(et, dn);
    if (low < dlo || high > dhi)
      return tir_error_set(TIR_ERR_VALUE, "nd.random", "low = %.15g, high = %.15g: the range of %s values is [%.15g, %.15g]", low, high, dn,
                           dlo, dhi);
    if (ceil(low) > floor(high))
      return tir_error_set(TIR_ERR_VALUE, "nd.random", "low = %.15g, high = %.15g holds no %s value", low, high, dn);
  }
  tir_NDArray *host = a;
  if (a->dev.type != TIR_DEV_CPU) {
    host = tir_nd_empty(a->shape, a->ndim, a->dtype, (tir_Device){TIR_DEV_CPU, 0});
    if (!host) return -1;
  }
  uint64_t s = seed * 0x2545f4914f6cdd1dull + 1;
  int64_t n = tir_nd_numel(a) * a->dtype.lanes;
  tir_DType e = tir_dtype_element(a->dtype);
  for (int64_t i = 0; i < n; i++) {
    double u = (double)(splitmix64(&s) >> 11) * (1.0 / 9007199254740992.0); /* [0, 1) */
    if (tir_dtype_is_float(e)) {
      tir_store_scalar_f(host->data, e, i, low + (high - low) * u);
    } else {
      int64_t lo = (int64_t)ceil(low), hi = (int64_t)floor(high);
      tir_store_scalar_i(host->data, e, i, lo + (int64_t)(u * (double)(hi - lo + 1)));
    }
  }
  int rc = 0;
  if (host != a) {
    rc = tir_nd_copy(a, host);
    tir_nd_release(host);
  }
  (void)need_cpu;
  return rc;
}
