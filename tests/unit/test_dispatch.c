/* test_dispatch.c -- the C API of kernel families (include/tir/dispatch.h) and tir_specialize
 * (include/tir/transform.h), without Lua: B[i, j] = A[i, j] * 2 over a symbolic M, one
 * specialized entry, one range and a fallback; selection, checks, errors, the table, the
 * interpreter on the selected function, and the host-side cost of a selection. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tir/dispatch.h"
#include "tir/error.h"
#include "tir/interp.h"
#include "tir/transform.h"

#include "check.h"

/* for i in range(M): for j in range(4): B[i, j] = A[i, j] * 2 */
static tir_PrimFunc *scale_func(tir_Var *M) {
  tir_Buffer *A = tir_buffer_new("A", TIR_FLOAT32, tir_array_of(2, tir_retain(M), tir_i32(4)), NULL, NULL, "global");
  tir_Buffer *B = tir_buffer_new("B", TIR_FLOAT32, tir_array_of(2, tir_retain(M), tir_i32(4)), NULL, NULL, "global");
  tir_Var *i = tir_var_new("i", TIR_INT32), *j = tir_var_new("j", TIR_INT32);
  tir_Node *load = tir_buffer_load(R(A), tir_array_of(2, tir_retain(i), tir_retain(j)));
  tir_Node *st = tir_buffer_store(R(B), tir_mul(load, tir_float_imm(TIR_FLOAT32, 2.0)), tir_array_of(2, tir_retain(i), tir_retain(j)));
  tir_Node *inner = tir_for(j, tir_i32(0), tir_i32(4), TIR_FOR_SERIAL, NULL, NULL, st);
  tir_Node *outer = tir_for(i, tir_i32(0), tir_retain(M), TIR_FOR_SERIAL, NULL, NULL, inner);
  return tir_prim_func("scale", tir_array_of(2, A, B), outer, NULL);
}

static tir_NDArray *host(int64_t m, int64_t n) {
  int64_t shape[2] = {m, n};
  tir_NDArray *a = tir_nd_empty(shape, 2, TIR_FLOAT32, (tir_Device){TIR_DEV_CPU, 0});
  for (int64_t k = 0; k < m * n; k++) tir_nd_set_f(a, k, (double)k);
  return a;
}

static int has(const char *msg) { return tir_error_get()->message && strstr(tir_error_get()->message, msg) != NULL; }

int main(void) {
  tir_Var *M = tir_var_new("M", TIR_INT32);
  tir_PrimFunc *f = scale_func(M);

  /* specialize: M = 8 gives constant shapes and the same results */
  tir_Node *eight = tir_i32(8);
  tir_Var *vars[1] = {M};
  tir_Node *vals[1] = {eight};
  tir_PrimFunc *f8 = tir_specialize(f, 1, vars, vals, "scale_M8");
  CHECK(f8 != NULL);
  int64_t d0 = 0;
  CHECK(f8 && tir_is_const_int(((tir_Buffer *)f8->params->items[0])->shape->items[0], &d0) && d0 == 8);
  CHECK(f8 && strcmp(f8->name, "scale_M8") == 0);
  tir_Node *zero = tir_i32(0);
  tir_Node *zv[1] = {zero};
  CHECK(tir_specialize(f, 1, vars, zv, NULL) == NULL && has("must be at least 1"));
  tir_Var *other = tir_var_new("Q", TIR_INT32);
  tir_Var *ov[1] = {other};
  CHECK(tir_specialize(f, 1, ov, vals, NULL) == NULL && has("neither a parameter nor a variable"));

  /* the family: M = 8 specialized, 1 <= M <= 4 on the symbolic function, the fallback */
  tir_Dispatcher *d = tir_dispatcher_new("scale", f);
  CHECK(d && tir_dispatcher_num_vars(d) == 1 && tir_dispatcher_var(d, 0) == M);
  CHECK(tir_dispatcher_add(d, NULL, "specialized", f8, NULL, 0, NULL, 0) == 0);
  tir_DispatchRange small = {0, 1, 4};
  CHECK(tir_dispatcher_add(d, "small", NULL, f, NULL, 1, &small, 0) == 1);
  tir_DispatchRange empty = {0, 5, 4};
  CHECK(tir_dispatcher_add(d, "empty", NULL, f, NULL, 1, &empty, 0) == -1 && has("is empty"));

  tir_NDArray *a8 = host(8, 4), *b8 = host(8, 4), *a3 = host(3, 4), *b3 = host(3, 4), *a9 = host(9, 4), *b9 = host(9, 4);
  tir_InterpArg args8[2] = {{a8, 0, 0}, {b8, 0, 0}}, args3[2] = {{a3, 0, 0}, {b3, 0, 0}}, args9[2] = {{a9, 0, 0}, {b9, 0, 0}};
  int64_t v = 0;
  CHECK(tir_dispatcher_select(d, args8, 2, &v) == 0 && v == 8);
  CHECK(tir_dispatcher_select(d, args3, 2, &v) == 1 && v == 3);
  /* no fallback yet: M = 9 has no kernel, and the message lists the conditions */
  CHECK(tir_dispatcher_select(d, args9, 2, NULL) == -1 && has("no kernel for M = 9: the kernels take M = 8 (scale_M8); 1 <= M <= 4 (small)"));
  CHECK(tir_error_get()->kind == TIR_ERR_RUNTIME && strcmp(tir_error_get()->primitive, "dispatch scale") == 0);
  CHECK(tir_dispatcher_add(d, "any", NULL, f, NULL, 0, NULL, 1) == 2);
  CHECK(tir_dispatcher_add(d, "any2", NULL, f, NULL, 0, NULL, 1) == -1 && has("there is a fallback already"));
  CHECK(tir_dispatcher_select(d, args9, 2, NULL) == 2);
  /* argument count and a wrong shape for the chosen (specialized) entry */
  CHECK(tir_dispatcher_select(d, args8, 1, NULL) == -1 && has("takes 2 argument(s) (A, B), got 1"));
  tir_InterpArg mixed[2] = {{a8, 0, 0}, {b3, 0, 0}};
  CHECK(tir_dispatcher_check(d, mixed, 2, TIR_DEV_CPU) == -1 && has("argument 2 (B): expected shape (8, 4), got (3, 4)"));
  CHECK(strcmp(tir_error_get()->primitive, "dispatch scale -> scale_M8") == 0);

  /* the selected function runs on the interpreter */
  int i = tir_dispatcher_check(d, args3, 2, TIR_DEV_CPU);
  const tir_PrimFunc *fi = NULL;
  tir_dispatcher_entry(d, i, NULL, NULL, &fi, NULL, NULL);
  CHECK(i == 1 && fi && tir_interpret(fi, args3, 2) == 0 && tir_nd_get_f(b3, 5) == 10.0);
  i = tir_dispatcher_check(d, args8, 2, TIR_DEV_CPU);
  tir_dispatcher_entry(d, i, NULL, NULL, &fi, NULL, NULL);
  CHECK(i == 0 && tir_interpret(fi, args8, 2) == 0 && tir_nd_get_f(b8, 31) == 62.0);
  /* no module: a launch is refused with the reason */
  CHECK(tir_dispatcher_run(d, args8, 2) == -1 && has("was not built for the GPU"));

  char *t = tir_dispatcher_describe(d);
  CHECK(strstr(t, "tir.Dispatcher scale(A: float32[M, 4], B: float32[M, 4]): 3 kernel(s) chosen by M") != NULL);
  CHECK(strstr(t, "1 <= M <= 4") != NULL && strstr(t, "fallback") != NULL && strstr(t, "specialized") != NULL);
  free(t);

  /* host-side cost of a selection and of selection + checks (target: <= 2 us) */
  struct timespec t0, t1;
  int reps = 200000;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int r = 0; r < reps; r++) tir_dispatcher_select(d, args9, 2, NULL);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double sel = ((double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec)) / reps;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int r = 0; r < reps; r++) tir_dispatcher_check(d, args9, 2, TIR_DEV_CPU);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double chk = ((double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec)) / reps;
  printf("dispatch: select %.1f ns, select + checks %.1f ns per call (fallback of 3 entries)\n", sel * 1e9, chk * 1e9);
  CHECK(sel < 2e-6 && chk < 2e-6);

  tir_dispatcher_free(d);
  tir_nd_release(a8); tir_nd_release(b8); tir_nd_release(a3); tir_nd_release(b3); tir_nd_release(a9); tir_nd_release(b9);
  tir_release(f8);
  tir_release(f);
  tir_release(M);
  tir_release(other);
  tir_release(eight);
  tir_release(zero);
  tir_error_clear();
  printf("%d passed, %d failed\n", checks - failures, failures);
  return failures ? 1 : 0;
}
