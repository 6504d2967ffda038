/* test_dlpack.c -- DLPack import/export (include/tir/dlpack_interop.h): no copies, the
 * deleter contract (called exactly once, never on a refused import), dtypes, devices,
 * strides, alignment, read-only and version checks, round trips. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tir/dlpack_interop.h"
#include "tir/error.h"

#include "check.h"

/* A producer: a DLManagedTensor over its own buffer, counting deleter calls. */
typedef struct {
  DLManagedTensor mt;
  DLManagedTensorVersioned mtv;
  int64_t shape[4], strides[4];
  float data[64] __attribute__((aligned(64)));
  int deleted;
} Producer;

static void prod_deleter(DLManagedTensor *t) { ((Producer *)t->manager_ctx)->deleted++; }
static void prod_deleter_v(DLManagedTensorVersioned *t) { ((Producer *)t->manager_ctx)->deleted++; }

static void producer_init(Producer *p, int ndim, const int64_t *shape, DLDataType dt) {
  memset(p, 0, sizeof *p);
  for (int i = 0; i < 64; i++) p->data[i] = (float)i;
  for (int i = 0; i < ndim; i++) p->shape[i] = shape[i];
  DLTensor t = {p->data, {kDLCPU, 0}, ndim, dt, p->shape, NULL, 0};
  p->mt.dl_tensor = t;
  p->mt.manager_ctx = p;
  p->mt.deleter = prod_deleter;
  p->mtv.version.major = 1;
  p->mtv.version.minor = 0;
  p->mtv.dl_tensor = t;
  p->mtv.manager_ctx = p;
  p->mtv.deleter = prod_deleter_v;
}

static const DLDataType F32 = {kDLFloat, 32, 1};

static void test_import(void) {
  Producer p;
  int64_t shape[2] = {2, 3};
  producer_init(&p, 2, shape, F32);
  tir_NDArray *a = tir_nd_from_dlpack(&p.mt);
  CHECK(a != NULL);
  CHECK(a->data == (void *)p.data); /* no copy */
  CHECK(a->ndim == 2 && a->shape[0] == 2 && a->shape[1] == 3);
  CHECK(tir_dtype_eq(a->dtype, TIR_FLOAT32) && a->nbytes == 24);
  CHECK(tir_nd_get_f(a, 4) == 4.0);
  tir_nd_set_f(a, 5, 42.0);
  CHECK(p.data[5] == 42.0f); /* writes go to the producer's memory */
  tir_nd_retain(a);
  tir_nd_release(a);
  CHECK(p.deleted == 0);
  tir_nd_release(a);
  CHECK(p.deleted == 1); /* once, at the last release */

  /* byte_offset and extent-1 dimensions with any stride */
  producer_init(&p, 2, (int64_t[]){1, 4}, F32);
  p.strides[0] = 999;
  p.strides[1] = 1;
  p.mt.dl_tensor.strides = p.strides;
  p.mt.dl_tensor.byte_offset = 8;
  a = tir_nd_from_dlpack(&p.mt);
  CHECK(a != NULL && tir_nd_get_f(a, 0) == 2.0);
  tir_nd_release(a);
  CHECK(p.deleted == 1);

  /* versioned */
  producer_init(&p, 1, (int64_t[]){8}, F32);
  a = tir_nd_from_dlpack_versioned(&p.mtv);
  CHECK(a != NULL && tir_nd_get_f(a, 7) == 7.0);
  tir_nd_release(a);
  CHECK(p.deleted == 1);
}

/* Each refusal names its reason and takes nothing (the deleter is not called). */
static void expect_refused(Producer *p, int versioned, const char *what) {
  tir_NDArray *a = versioned ? tir_nd_from_dlpack_versioned(&p->mtv) : tir_nd_from_dlpack(&p->mt);
  CHECK(a == NULL);
  CHECK(p->deleted == 0);
  const tir_Error *e = tir_error_get();
  int ok = e->message && strstr(e->message, what) != NULL;
  if (!ok) fprintf(stderr, "expected '%s' in: %s\n", what, e->message ? e->message : "(none)");
  CHECK(ok);
  tir_error_clear();
  if (a) tir_nd_release(a);
}

static void test_refusals(void) {
  Producer p;
  int64_t shape[2] = {2, 3};
  producer_init(&p, 2, shape, F32);
  p.strides[0] = 1;
  p.strides[1] = 2; /* column-major */
  p.mt.dl_tensor.strides = p.strides;
  expect_refused(&p, 0, "not compact row-major: dimension 1 has stride 2 where 1");
  producer_init(&p, 2, shape, (DLDataType){kDLComplex, 64, 1});
  expect_refused(&p, 0, "has no tirlua counterpart");
  producer_init(&p, 2, shape, (DLDataType){kDLFloat, 32, 4});
  expect_refused(&p, 0, "4 lanes");
  producer_init(&p, 2, shape, F32);
  p.mt.dl_tensor.device.device_type = kDLOpenCL;
  expect_refused(&p, 0, "DLPack device type 4");
  producer_init(&p, 2, shape, F32);
  p.mt.dl_tensor.byte_offset = 2;
  expect_refused(&p, 0, "not aligned to 4 bytes");
  producer_init(&p, 2, shape, F32);
  p.mtv.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
  expect_refused(&p, 1, "read-only");
  producer_init(&p, 2, shape, F32);
  p.mtv.version.major = 2;
  expect_refused(&p, 1, "version 2.0");
  producer_init(&p, 2, (int64_t[]){-1, 3}, F32);
  expect_refused(&p, 0, "negative");
  CHECK(tir_nd_from_dlpack(NULL) == NULL);
  tir_error_clear();
}

static void test_dtypes(void) {
  struct {
    DLDataType dl;
    tir_DType t;
  } cases[] = {
      {{kDLInt, 8, 1}, tir_dtype(TIR_DT_INT, 8, 1)},     {{kDLUInt, 64, 1}, tir_dtype(TIR_DT_UINT, 64, 1)},
      {{kDLFloat, 16, 1}, tir_dtype(TIR_DT_FLOAT, 16, 1)}, {{kDLBfloat, 16, 1}, tir_dtype(TIR_DT_BFLOAT, 16, 1)},
      {{TIR_DLPACK_BOOL_CODE, 8, 1}, TIR_BOOL},          {{kDLFloat, 64, 1}, TIR_FLOAT64},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    Producer p;
    producer_init(&p, 1, (int64_t[]){4}, cases[i].dl);
    tir_NDArray *a = tir_nd_from_dlpack(&p.mt);
    CHECK(a && tir_dtype_eq(a->dtype, cases[i].t));
    /* and back: the exported tensor has the same DLPack dtype */
    DLManagedTensor *e = a ? tir_nd_to_dlpack(a) : NULL;
    CHECK(e && e->dl_tensor.dtype.code == cases[i].dl.code && e->dl_tensor.dtype.bits == cases[i].dl.bits);
    if (e) e->deleter(e);
    if (a) tir_nd_release(a);
    CHECK(p.deleted == 1);
  }
}

static void test_export_and_round_trip(void) {
  int64_t shape[3] = {2, 3, 4};
  tir_Device cpu = {TIR_DEV_CPU, 0};
  tir_NDArray *a = tir_nd_empty(shape, 3, TIR_FLOAT32, cpu);
  for (int i = 0; i < 24; i++) tir_nd_set_f(a, i, i * 0.5);
  DLManagedTensor *t = tir_nd_to_dlpack(a);
  CHECK(t->dl_tensor.data == a->data && t->dl_tensor.ndim == 3 && t->dl_tensor.shape[2] == 4);
  CHECK(t->dl_tensor.strides == NULL && t->dl_tensor.byte_offset == 0);
  CHECK(t->dl_tensor.device.device_type == kDLCPU && t->dl_tensor.dtype.code == kDLFloat);
  CHECK(a->refcount == 2);
  tir_nd_release(a); /* the tensor keeps the array alive */
  CHECK(((float *)t->dl_tensor.data)[23] == 11.5f);
  /* import our own export: same memory, the export's deleter runs when b goes */
  tir_NDArray *b = tir_nd_from_dlpack(t);
  CHECK(b && b->data == t->dl_tensor.data && tir_nd_get_f(b, 3) == 1.5);
  tir_nd_release(b); /* releases the exported tensor, which releases a */

  a = tir_nd_empty(shape, 3, TIR_INT32, cpu);
  DLManagedTensorVersioned *v = tir_nd_to_dlpack_versioned(a);
  CHECK(v->version.major == 1 && v->flags == 0 && v->dl_tensor.dtype.code == kDLInt);
  tir_NDArray *c = tir_nd_from_dlpack_versioned(v);
  CHECK(c && c->data == a->data);
  tir_nd_release(a);
  tir_nd_release(c);
}

int main(void) {
  test_import();
  test_refusals();
  test_dtypes();
  test_export_and_round_trip();
  printf("%d passed, %d failed\n", checks - failures, failures);
  return failures ? 1 : 0;
}
