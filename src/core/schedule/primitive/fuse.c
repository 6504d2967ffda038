/* fuse.c -- fuse perfectly nested loops into one (TVM loop_transformation.cc, Fuse).
 *
 * for i in range(a): for j in range(b): body(i, j)   --fuse(i, j)-->
 * for i_j_fused in range(a * b): body(i_j_fused // b, i_j_fused % b)
 * Preconditions: at least two loops, each the only child of the previous one, each
 * starting at 0, none bound to a thread or annotated, no extent using an outer var.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../sched_internal.h"
#include "tir/strbuf.h"

tir_Var *tir_sched_fuse(tir_Schedule *s, tir_Var *const *vars, int n) {
  const char *P = "fuse";
  if (n < 2) {
    tir_error_set(TIR_ERR_SCHEDULE, P, "fuse needs at least 2 loops, got %d", n);
    return NULL;
  }
  const tir_For **loops = calloc((size_t)n, sizeof *loops);
  SchPath path;
  tir_Var *result = NULL;
  for (int i = 0; i < n; i++) {
    loops[i] = sch_find_loop(s->func->body, vars[i], i == 0 ? &path : NULL);
    if (!loops[i]) {
      tir_sched_loop(s, vars[i], P);
      goto done;
    }
    for (int j = 0; j < i; j++)
      if (loops[j] == loops[i]) {
        sch_error(s, P, &loops[i]->hdr, "this loop", "loop %s is given twice (as loops %d and %d)", loops[i]->loop_var->name,
                  j + 1, i + 1);
        goto done;
      }
  }
  for (int i = 0; i < n; i++) {
    const tir_For *l = loops[i];
    if (i + 1 < n && l->body != &loops[i + 1]->hdr) {
      const tir_For *nx = loops[i + 1];
      SchPath sub;
      if (sch_path_to(&nx->hdr, &l->hdr, &sub))
        sch_error(s, P, &l->hdr, "this loop", "loop %s is inside loop %s: give the loops outer to inner", l->loop_var->name,
                  nx->loop_var->name);
      else if (sch_path_to(&l->hdr, &nx->hdr, &sub))
        sch_error(s, P, &nx->hdr, "not the only child",
                  "loop %s is not the only statement directly inside loop %s; fuse needs perfectly nested loops",
                  nx->loop_var->name, l->loop_var->name);
      else {
        sch_error(s, P, &nx->hdr, "this loop", "loops %s and %s are not nested in one another (they are in different loop nests)",
                  l->loop_var->name, nx->loop_var->name);
        tir_error_mark(&l->hdr, "the other loop");
      }
      goto done;
    }
    if (l->kind == TIR_FOR_THREAD_BINDING || l->annotations->size) {
      sch_error(s, P, &l->hdr, "this loop", "loop %s is bound to a thread or annotated", l->loop_var->name);
      goto done;
    }
    if (!tir_is_zero(l->min)) {
      sch_error(s, P, &l->hdr, "this loop", "loop %s does not start at 0", l->loop_var->name);
      goto done;
    }
    for (int j = 0; j < i; j++)
      if (tir_uses_var(l->extent, loops[j]->loop_var)) {
        sch_error(s, P, &l->hdr, "this loop", "the extent of loop %s depends on loop %s", l->loop_var->name,
                  loops[j]->loop_var->name);
        goto done;
      }
  }
  {
    tir_DType t = loops[0]->loop_var->hdr.dtype;
    /* the fused extent must fit the fused variable's type (constant extents only; a
     * wrapped product would silently drop iterations) */
    int64_t limit = t.bits >= 64 ? INT64_MAX : ((int64_t)1 << (t.bits - 1)) - 1, prod = 1;
    for (int i = 0; i < n; i++) {
      int64_t e;
      if (!tir_is_const_int(loops[i]->extent, &e)) continue;
      if (__builtin_mul_overflow(prod, e, &prod) || prod > limit) {
        sch_error(s, P, &loops[i]->hdr, "this loop",
                  "the fused extent (the product of the loop extents) does not fit the %d-bit loop variable (at most %lld)",
                  t.bits, (long long)limit);
        goto done;
      }
    }
    tir_StrBuf name;
    tir_sb_init(&name);
    for (int i = 0; i < n; i++) tir_sb_printf(&name, "%s_", loops[i]->loop_var->name);
    tir_sb_puts(&name, "fused");
    tir_Var *fv = tir_var_new(name.data, t);
    tir_sb_free(&name);
    tir_Node *extent = tir_int_imm(t, 1);
    for (int i = 0; i < n; i++) extent = tir_mul(extent, tir_cast(t, R(loops[i]->extent)));
    /* old var k = (fused // prod(extents after k)) % extent_k */
    tir_Var **olds = calloc((size_t)n, sizeof *olds);
    tir_Node **news = calloc((size_t)n, sizeof *news);
    tir_Node *inner = tir_int_imm(t, 1);
    for (int k = n - 1; k >= 0; k--) {
      olds[k] = loops[k]->loop_var;
      tir_Node *e = tir_floordiv(R(&fv->hdr), R(inner));
      if (k > 0) e = tir_floormod(e, tir_cast(t, R(loops[k]->extent)));
      news[k] = e;
      inner = tir_mul(inner, tir_cast(t, R(loops[k]->extent)));
    }
    tir_release(inner);
    tir_Node *body = tir_substitute(loops[n - 1]->body, n, olds, news);
    for (int k = 0; k < n; k++) tir_release(news[k]);
    free(olds);
    free(news);
    tir_Node *simp_ext = tir_simplify(NULL, extent);
    tir_release(extent);
    tir_Node *nf = tir_for((tir_Var *)R(fv), tir_int_imm(t, 0), simp_ext, TIR_FOR_SERIAL, NULL, NULL, body);
    path.n--;
    tir_Node *simp = sch_simplify_bindings(nf, &path);
    tir_release(nf);
    sch_replace(s, &loops[0]->hdr, simp);
    result = fv;
  }
done:
  free(loops);
  return result;
}
