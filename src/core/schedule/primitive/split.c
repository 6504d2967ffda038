/* split.c -- split a loop into nested loops (TVM loop_transformation.cc, Split).
 *
 * for i in range(n): body(i)   --split(i, [f0, f1, ..., fk])-->
 * for i_0 in range(f0): for i_1 in range(f1): ... body(((i_0 * f1 + i_1) * f2 + ...) )
 * Preconditions: the loop starts at 0, has no annotation or thread binding; factors are
 * positive constants with at most one inferred (-1 -> ceildiv(n, product of the others),
 * an expression when n is symbolic); their product is (provably) at least n.  When the
 * product is not provably n, every child block gets the predicate (fused index < n), so no
 * iteration runs past the original range.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../dataflow.h"
#include "tir/strbuf.h"

static tir_Node *add_predicate(const tir_Node *body, const tir_Node *cond);

typedef struct {
  const tir_Node *cond;
} PredCtx;

static tir_Node *pred_fn(const tir_Node *n, void *p) {
  PredCtx *c = p;
  if (tir_is_expr(n)) return tir_retain(n);
  if (n->kind == TIR_BlockRealize) {
    const tir_BlockRealize *br = (const tir_BlockRealize *)n;
    tir_BlockRealize *r = (tir_BlockRealize *)tir_node_copy(n);
    tir_release(r->predicate);
    r->predicate = tir_and(R(br->predicate), R((tir_Node *)c->cond));
    return &r->hdr;
  }
  return NULL;
}

static tir_Node *add_predicate(const tir_Node *body, const tir_Node *cond) {
  PredCtx c = {cond};
  return tir_mutate(body, pred_fn, &c);
}

tir_Array *tir_sched_split(tir_Schedule *s, const tir_Var *v, const int64_t *factors, int n) {
  const char *P = "split";
  SchPath path;
  const tir_For *loop = sch_find_loop(s->func->body, v, &path);
  if (!loop) {
    tir_sched_loop(s, v, P);
    return NULL;
  }
  if (n < 2) {
    sch_error(s, P, &loop->hdr, "this loop", "split needs at least 2 factors, got %d", n);
    return NULL;
  }
  if (loop->kind == TIR_FOR_THREAD_BINDING || loop->annotations->size) {
    sch_error(s, P, &loop->hdr, "this loop", "loop %s is bound to a thread or annotated; split it before bind/annotate",
              loop->loop_var->name);
    return NULL;
  }
  if (!tir_is_zero(loop->min)) {
    sch_error(s, P, &loop->hdr, "this loop", "loop %s does not start at 0", loop->loop_var->name);
    return NULL;
  }
  int infer = -1;
  int64_t prod = 1;
  for (int i = 0; i < n; i++) {
    if (factors[i] == -1) {
      if (infer >= 0) {
        sch_error(s, P, &loop->hdr, "this loop", "at most one factor may be inferred (nil / -1); got two (factors %d and %d)",
                  infer + 1, i + 1);
        return NULL;
      }
      infer = i;
      continue;
    }
    if (factors[i] <= 0) {
      sch_error(s, P, &loop->hdr, "this loop", "factor %d is %lld; factors must be positive", i + 1, (long long)factors[i]);
      return NULL;
    }
    if (__builtin_mul_overflow(prod, factors[i], &prod)) {
      sch_error(s, P, &loop->hdr, "this loop", "the product of the factors overflows a 64-bit integer (factor %d is %lld)",
                i + 1, (long long)factors[i]);
      return NULL;
    }
  }
  int64_t extent;
  int const_extent = tir_is_const_int(loop->extent, &extent);
  tir_DType t = loop->loop_var->hdr.dtype;
  int64_t *f = malloc(sizeof(int64_t) * (size_t)n);
  memcpy(f, factors, sizeof(int64_t) * (size_t)n);
  /* every given factor must fit the loop variable's type */
  int64_t limit = t.bits >= 64 ? INT64_MAX : ((int64_t)1 << (t.bits - 1)) - 1;
  for (int i = 0; i < n; i++)
    if (f[i] > limit) {
      sch_error(s, P, &loop->hdr, "this loop", "factor %d is %lld, which does not fit the %d-bit loop variable %s (at most %lld)",
                i + 1, (long long)f[i], t.bits, loop->loop_var->name, (long long)limit);
      free(f);
      return NULL;
    }
  /* A symbolic extent n (TVM Split): the inferred factor is ceildiv(n, product of the
   * others) -- (n + p - 1) // p --, and without one the product must be provably >= n; the
   * predicate (fused index < n) guards the tail unless the product provably equals n. */
  tir_Node *inferred = NULL;
  int exact = const_extent; /* the product is provably the extent (constants: checked below) */
  if (!const_extent) {
    tir_Analyzer *an = tir_analyzer_new();
    sch_bind_path(an, &path, path.n - 1);
    if (infer >= 0) {
      tir_Node *num = tir_sub(tir_add(R(loop->extent), tir_int_imm(t, prod)), tir_int_imm(t, 1));
      tir_Node *q = tir_floordiv(num, tir_int_imm(t, prod));
      inferred = tir_simplify(an, q);
      tir_release(q);
      /* no tail when the factors provably multiply to n (n = 32 * m split by 32) */
      tir_Node *eq = tir_cmp(TIR_EQ, tir_mul(tir_int_imm(t, prod), R(inferred)), R(loop->extent));
      exact = tir_can_prove(an, eq);
      tir_release(eq);
    } else {
      tir_Node *ge = tir_cmp(TIR_GE, tir_int_imm(t, prod), R(loop->extent));
      int ok = tir_can_prove(an, ge);
      tir_release(ge);
      tir_Node *eq = tir_cmp(TIR_EQ, tir_int_imm(t, prod), R(loop->extent));
      exact = tir_can_prove(an, eq);
      tir_release(eq);
      if (!ok) {
        char *e = tir_print_expr(loop->extent);
        sch_error(s, P, &loop->hdr, "this loop",
                  "the factors multiply to %lld, which is not provably at least the extent %s of loop %s; infer one factor "
                  "(nil or -1) to cover a symbolic extent",
                  (long long)prod, e, loop->loop_var->name);
        free(e);
        tir_analyzer_free(an);
        free(f);
        return NULL;
      }
    }
    tir_analyzer_free(an);
  } else {
    if (infer >= 0) {
      /* ceildiv without forming extent + prod - 1, which can overflow */
      f[infer] = extent / prod + (extent % prod != 0);
      int64_t others = prod;
      if (__builtin_mul_overflow(others, f[infer], &prod)) {
        sch_error(s, P, &loop->hdr, "this loop",
                  "the inferred factor %d is %lld; times the other factors (%lld) it overflows a 64-bit integer", infer + 1,
                  (long long)f[infer], (long long)others);
        free(f);
        return NULL;
      }
      if (f[infer] > limit) {
        sch_error(s, P, &loop->hdr, "this loop",
                  "factor %d is %lld, which does not fit the %d-bit loop variable %s (at most %lld)", infer + 1,
                  (long long)f[infer], t.bits, loop->loop_var->name, (long long)limit);
        free(f);
        return NULL;
      }
    }
    if (prod > limit && prod > extent) {
      sch_error(s, P, &loop->hdr, "this loop", "the factors multiply to %lld, which does not fit the %d-bit loop variable %s",
                (long long)prod, t.bits, loop->loop_var->name);
      free(f);
      return NULL;
    }
    if (prod < extent) {
      tir_StrBuf sb;
      tir_sb_init(&sb);
      for (int i = 0; i < n; i++) tir_sb_printf(&sb, "%s%lld", i ? " * " : "", (long long)f[i]);
      sch_error(s, P, &loop->hdr, "this loop", "the factors multiply to %s = %lld, less than the extent %lld of loop %s",
                sb.data, (long long)prod, (long long)extent, loop->loop_var->name);
      tir_sb_free(&sb);
      free(f);
      return NULL;
    }
  }
  /* Build: new vars, the index expression, the nest. */
  tir_Node **fe = malloc(sizeof *fe * (size_t)n); /* the factors as expressions (owned) */
  for (int i = 0; i < n; i++) fe[i] = i == infer && inferred ? R(inferred) : tir_int_imm(t, f[i]);
  tir_Array *vars = tir_array_new(n);
  for (int i = 0; i < n; i++) {
    char *name = tir_strprintf("%s_%d", loop->loop_var->name, i);
    vars->items[i] = &tir_var_new(name, t)->hdr;
    free(name);
  }
  tir_Node *idx = tir_retain(vars->items[0]);
  for (int i = 1; i < n; i++) idx = tir_add(tir_mul(idx, R(fe[i])), tir_retain(vars->items[i]));
  tir_Var *old = loop->loop_var;
  tir_Node *body = tir_substitute(loop->body, 1, &old, &idx);
  if (!exact || (const_extent && prod != extent)) {
    tir_Node *cond = tir_cmp(TIR_LT, R(idx), R(loop->extent));
    tir_Node *pb = add_predicate(body, cond);
    tir_release(cond);
    tir_release(body);
    body = pb;
  }
  tir_release(idx);
  for (int i = n - 1; i >= 0; i--) body = tir_for((tir_Var *)R(vars->items[i]), tir_int_imm(t, 0), fe[i], TIR_FOR_SERIAL, NULL, NULL, body);
  free(fe);
  tir_release(inferred);
  free(f);
  /* keep bindings and predicates in simplest form */
  path.n--; /* the loop itself is being replaced */
  tir_Node *simp = sch_simplify_bindings(body, &path);
  tir_release(body);
  sch_replace(s, &loop->hdr, simp);
  return vars;
}
