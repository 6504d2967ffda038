/* test_core.c -- the C API without Lua: build a matmul with te, schedule it, lower and
 * generate CUDA C, interpret it, check errors, and check that every node is released
 * (the live-node count returns to where it started). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tir/arith.h"
#include "tir/codegen.h"
#include "tir/error.h"
#include "tir/extern.h"
#include "tir/interp.h"
#include "tir/schedule.h"
#include "tir/te.h"

#include "check.h"

static tir_PrimFunc *make_matmul(int M, int N, int K) {
  tir_Buffer *A = tir_buffer_new("A", TIR_FLOAT32, tir_array_of(2, tir_i32(M), tir_i32(K)), NULL, NULL, NULL);
  tir_Buffer *B = tir_buffer_new("B", TIR_FLOAT32, tir_array_of(2, tir_i32(K), tir_i32(N)), NULL, NULL, NULL);
  tir_Buffer *C = tir_buffer_new("C", TIR_FLOAT32, tir_array_of(2, tir_i32(M), tir_i32(N)), NULL, NULL, NULL);
  tir_IterVar *i = tir_iter_var(tir_var_new("i", TIR_INT32), tir_range(tir_i32(0), tir_i32(M)), TIR_ITER_DATA_PAR, "");
  tir_IterVar *j = tir_iter_var(tir_var_new("j", TIR_INT32), tir_range(tir_i32(0), tir_i32(N)), TIR_ITER_DATA_PAR, "");
  tir_IterVar *k = tir_iter_var(tir_var_new("k", TIR_INT32), tir_range(tir_i32(0), tir_i32(K)), TIR_ITER_COMM_REDUCE, "");
  tir_Node *a = tir_buffer_load(R(A), tir_array_of(2, R(&i->var->hdr), R(&k->var->hdr)));
  tir_Node *b = tir_buffer_load(R(B), tir_array_of(2, R(&k->var->hdr), R(&j->var->hdr)));
  tir_Node *body = tir_reduce("sum", tir_mul(a, b), tir_array_of(1, R(&k->hdr)), NULL);
  tir_ComputeOp *op = tir_compute_op("C", tir_array_of(2, R(&i->hdr), R(&j->hdr)), body, (tir_Buffer *)R(C));
  tir_Array *params = tir_array_of(3, &A->hdr, &B->hdr, &C->hdr);
  tir_Array *ops = tir_array_of(1, &op->hdr);
  tir_PrimFunc *f = tir_te_create_prim_func(params, ops, "main");
  tir_release(params);
  tir_release(ops);
  tir_release(i);
  tir_release(j);
  tir_release(k);
  return f;
}

static double run_and_compare(const tir_PrimFunc *f, int M, int N, int K) {
  tir_Device cpu = {TIR_DEV_CPU, 0};
  int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
  tir_NDArray *a = tir_nd_empty(sa, 2, TIR_FLOAT32, cpu), *b = tir_nd_empty(sb, 2, TIR_FLOAT32, cpu);
  tir_NDArray *c = tir_nd_empty(sc, 2, TIR_FLOAT32, cpu), *ref = tir_nd_empty(sc, 2, TIR_FLOAT64, cpu);
  tir_nd_fill_random(a, 1, -1, 1);
  tir_nd_fill_random(b, 2, -1, 1);
  tir_InterpArg args[3] = {{a, 0, 0}, {b, 0, 0}, {c, 0, 0}};
  double err = INFINITY;
  if (tir_interpret(f, args, 3) == 0 && tir_ref_gemm_host(a, b, ref, 0, 0) == 0) {
    err = 0;
    for (int64_t x = 0; x < (int64_t)M * N; x++) {
      double e = fabs(tir_nd_get_f(c, x) - tir_nd_get_f(ref, x));
      if (!(e <= err)) err = e;
    }
  }
  tir_nd_release(a), tir_nd_release(b), tir_nd_release(c), tir_nd_release(ref);
  return err;
}

static void test_schedule_and_lower(void) {
  long base = tir_node_live_count();
  {
    tir_PrimFunc *f = make_matmul(30, 20, 10);
    CHECK(f != NULL);
    CHECK(run_and_compare(f, 30, 20, 10) < 1e-5);
    tir_Schedule *s = tir_schedule_new(f);
    int64_t blk = tir_sched_get_block(s, "C");
    CHECK(blk > 0);
    tir_Array *loops = tir_sched_get_loops(s, blk);
    CHECK(loops && loops->size == 3);
    int64_t f16[2] = {-1, 16};
    tir_Array *is = tir_sched_split(s, (tir_Var *)loops->items[0], f16, 2);
    tir_Array *js = tir_sched_split(s, (tir_Var *)loops->items[1], f16, 2);
    CHECK(is && js);
    tir_Var *order[5] = {(tir_Var *)is->items[0], (tir_Var *)js->items[0], (tir_Var *)is->items[1],
                         (tir_Var *)js->items[1], (tir_Var *)loops->items[2]};
    CHECK(tir_sched_reorder(s, order, 5) == 0);
    CHECK(tir_sched_bind(s, order[0], "blockIdx.y") == 0);
    CHECK(tir_sched_bind(s, order[1], "blockIdx.x") == 0);
    CHECK(tir_sched_bind(s, order[2], "threadIdx.y") == 0);
    CHECK(tir_sched_bind(s, order[3], "threadIdx.x") == 0);
    /* a failing primitive leaves a ScheduleError and the function unchanged */
    const tir_PrimFunc *before = tir_schedule_func(s);
    int64_t bad[2] = {2, 2};
    CHECK(tir_sched_split(s, (tir_Var *)loops->items[2], bad, 2) == NULL);
    CHECK(tir_error_get()->kind == TIR_ERR_SCHEDULE);
    CHECK(strstr(tir_error_get()->message, "less than the extent 10") != NULL);
    tir_error_clear();
    CHECK(tir_schedule_func(s) == before);
    const tir_PrimFunc *scheduled = tir_schedule_func(s);
    CHECK(run_and_compare(scheduled, 30, 20, 10) < 1e-5);
    tir_BuildOptions o;
    memset(&o, 0, sizeof o);
    o.skip_compile = 1;
    tir_BuiltModule *m = tir_build(scheduled, &o);
    CHECK(m != NULL);
    if (m) {
      const char *src = tir_module_source(m, "cuda");
      CHECK(src && strstr(src, "__global__ void __launch_bounds__(256) main_kernel"));
      CHECK(run_and_compare(tir_module_lowered(m), 30, 20, 10) < 1e-5);
      tir_module_free(m);
    }
    tir_release(is);
    tir_release(js);
    tir_release(loops);
    tir_schedule_free(s);
    tir_release(f);
  }
  CHECK(tir_node_live_count() == base);
}

static void test_arith(void) {
  long base = tir_node_live_count();
  {
    tir_Var *i = tir_var_new("i", TIR_INT32), *j = tir_var_new("j", TIR_INT32);
    tir_Analyzer *a = tir_analyzer_new();
    tir_analyzer_bind_bound(a, i, 0, 7);
    tir_analyzer_bind_bound(a, j, 0, 15);
    tir_Node *e = tir_floordiv(tir_add(tir_mul(R(&i->hdr), tir_i32(16)), R(&j->hdr)), tir_i32(16));
    tir_Node *s = tir_simplify(a, e);
    CHECK(s == &i->hdr);
    tir_Node *cond = tir_cmp(TIR_LT, tir_add(tir_mul(R(&i->hdr), tir_i32(16)), R(&j->hdr)), tir_i32(128));
    CHECK(tir_can_prove(a, cond));
    tir_release(cond);
    tir_release(s);
    tir_release(e);
    tir_analyzer_free(a);
    tir_release(i);
    tir_release(j);
  }
  CHECK(tir_node_live_count() == base);
}

static void test_printer_and_equality(void) {
  tir_PrimFunc *f = make_matmul(4, 4, 4), *g = make_matmul(4, 4, 4), *h = make_matmul(4, 4, 2);
  char *txt = tir_print(&f->hdr);
  CHECK(strstr(txt, "T.axis.remap(\"SSR\", {i, j, k})") != NULL);
  free(txt);
  char diff[512];
  CHECK(tir_structural_equal(&f->hdr, &g->hdr));
  CHECK(!tir_structural_diff(&f->hdr, &h->hdr, diff, sizeof diff, 0));
  CHECK(strstr(diff, "differ") != NULL);
  CHECK(tir_structural_hash(&f->hdr) == tir_structural_hash(&g->hdr));
  tir_release(f);
  tir_release(g);
  tir_release(h);
}

/* a C model of an extern device function: x * x + y */
static int sq_plus_model(void *ctx, const char *name, int nargs, const tir_ExternValue *args, tir_ExternValue *ret, char *err,
                         size_t errlen) {
  (*(int *)ctx)++;
  if (nargs != 2) {
    snprintf(err, errlen, "%s takes 2 arguments, got %d", name, nargs);
    return -1;
  }
  ret->i = args[0].i * args[0].i + args[1].i;
  return 0;
}

/* call_pure_extern through a te compute: refused without a model, run with one */
static void test_extern_model(void) {
  int N = 6;
  tir_Buffer *A = tir_buffer_new("A", TIR_INT32, tir_array_of(1, tir_i32(N)), NULL, NULL, NULL);
  tir_Buffer *B = tir_buffer_new("B", TIR_INT32, tir_array_of(1, tir_i32(N)), NULL, NULL, NULL);
  tir_IterVar *i = tir_iter_var(tir_var_new("i", TIR_INT32), tir_range(tir_i32(0), tir_i32(N)), TIR_ITER_DATA_PAR, "");
  tir_Node *a = tir_buffer_load(R(A), tir_array_of(1, R(&i->var->hdr)));
  tir_Node *body = tir_call(TIR_INT32, "call_pure_extern", tir_array_of(3, tir_string_imm("test_sq_plus"), a, tir_i32(7)));
  tir_ComputeOp *op = tir_compute_op("B", tir_array_of(1, R(&i->hdr)), body, (tir_Buffer *)R(B));
  tir_Array *params = tir_array_of(2, &A->hdr, &B->hdr);
  tir_Array *ops = tir_array_of(1, &op->hdr);
  tir_PrimFunc *f = tir_te_create_prim_func(params, ops, "ext");
  tir_release(params);
  tir_release(ops);
  tir_release(i);
  tir_Device cpu = {TIR_DEV_CPU, 0};
  int64_t sh[1] = {N};
  tir_NDArray *x = tir_nd_empty(sh, 1, TIR_INT32, cpu), *y = tir_nd_empty(sh, 1, TIR_INT32, cpu);
  for (int k = 0; k < N; k++) tir_nd_set_i(x, k, k - 2);
  tir_InterpArg args[2] = {{x, 0, 0}, {y, 0, 0}};
  CHECK(tir_interpret(f, args, 2) != 0);
  CHECK(strstr(tir_error_get()->message, "register a CPU model") != NULL);
  tir_error_clear();
  int calls = 0;
  CHECK(tir_extern_register("test_sq_plus", NULL, sq_plus_model, &calls, NULL) == 0);
  CHECK(tir_interpret(f, args, 2) == 0);
  CHECK(calls == N);
  for (int k = 0; k < N; k++) CHECK(tir_nd_get_i(y, k) == (k - 2) * (k - 2) + 7);
  CHECK(tir_extern_register("1bad", NULL, NULL, NULL, NULL) != 0);
  tir_error_clear();
  tir_extern_clear();
  tir_nd_release(x), tir_nd_release(y);
  tir_release(f);
}

int main(void) {
  long base = tir_node_live_count();
  test_schedule_and_lower();
  test_arith();
  test_printer_and_equality();
  test_extern_model();
  CHECK(tir_node_live_count() == base);
  printf("%d passed, %d failed\n", checks - failures, failures);
  return failures ? 1 : 0;
}
