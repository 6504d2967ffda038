/* bind.c -- bind a loop to a GPU thread axis (TVM for_kind.cc, Bind).
 * The loop becomes a thread-binding loop; lowering turns it into a launch dimension.  As
 * parallel: the subtree must have compact data flow, and blocks under it may bind only
 * data-parallel iteration variables through it, except to threadIdx: a reduction loop bound
 * to threadIdx is a cross-thread reduction (TVM allows it the same way; lowered by
 * lower_cross_thread_reduction.c).  A loop already bound is re-bound to the new axis, as in TVM. */
#include <stdlib.h>
#include <string.h>

#include "../dataflow.h"

static const char *const valid_tags[] = {"blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y",
                                         "threadIdx.z", NULL};

/* Nested loops bound to one tag are the same hardware index: lower_thread_binding maps
 * them all to one thread variable, each guarded by "thread < its extent", so only the
 * diagonal of their iterations runs.  That is the same computation only when the block
 * depends on at most one of them (a cooperative fetch: its own inner loop), that one is
 * the innermost (lowering rejects a body that uses an outer one), and no other loop of
 * the tag is shorter (its guard would cut iterations of the used one).  Blocks nested in
 * blocks see the loops above their outer blocks too, and depend on a loop when any
 * realize between it and them (their own or an outer block's) uses it. */
static int collect_realizes(const tir_Node *n, void *p) {
  if (tir_is_expr(n)) return 1;
  if (n->kind == TIR_BlockRealize) {
    struct { const tir_BlockRealize **a; int n, cap; } *c = p;
    if (c->n == c->cap) {
      c->cap = c->cap ? c->cap * 2 : 16;
      c->a = realloc(c->a, sizeof *c->a * (size_t)c->cap);
    }
    c->a[c->n++] = (const tir_BlockRealize *)n;
  }
  return 0;
}

static int realize_uses(const tir_BlockRealize *br, const tir_Var *v) {
  return tir_uses_var(&br->iter_values->hdr, v) || tir_uses_var(br->predicate, v);
}

static int check_same_tag(tir_Schedule *s, const tir_For *f, const char *tag) {
  struct { const tir_BlockRealize **a; int n, cap; } all = {NULL, 0, 0};
  tir_visit(f->body, collect_realizes, &all);
  int rc = 0;
  for (int i = 0; i < all.n && !rc; i++) {
    const tir_BlockRealize *br = all.a[i];
    SchPath p;
    sch_path_to(s->func->body, &br->hdr, &p);
    const tir_For *same[SCH_MAX_DEPTH];
    int ns = 0, used = -1;
    for (int k = 0; k < p.n - 1 && !rc; k++) {
      if (p.nodes[k]->kind != TIR_For) continue;
      const tir_For *l = (const tir_For *)p.nodes[k];
      if (!(l == f || (l->kind == TIR_FOR_THREAD_BINDING && strcmp(l->thread_tag, tag) == 0))) continue;
      int uses = 0;
      for (int j = k + 1; j < p.n && !uses; j++)
        if (p.nodes[j]->kind == TIR_BlockRealize) uses = realize_uses((const tir_BlockRealize *)p.nodes[j], l->loop_var);
      if (uses) {
        if (used >= 0)
          rc = sch_error(s, "bind", &l->hdr, "also used",
                         "block '%s' depends on loops %s and %s, which would both be %s: one thread index cannot run both; "
                         "bind one of them to another axis",
                         br->block->name, same[used]->loop_var->name, l->loop_var->name, tag);
        used = ns;
      }
      same[ns++] = l;
    }
    if (rc || used < 0 || ns < 2) continue;
    if (used != ns - 1) {
      rc = sch_error(s, "bind", &same[used]->hdr, "this loop",
                     "block '%s' depends on loop %s, and loop %s inside it would also be %s: the inner loop's iterations "
                     "would take the thread index from it; bind the inner loop to another axis",
                     br->block->name, same[used]->loop_var->name, same[ns - 1]->loop_var->name, tag);
      continue;
    }
    for (int k = 0; k < ns - 1 && !rc; k++) {
      tir_Node *le = tir_cmp(TIR_LE, R(same[used]->extent), R(same[k]->extent));
      if (!tir_can_prove(NULL, le)) {
        char *ek = tir_print_expr(same[k]->extent), *eu = tir_print_expr(same[used]->extent);
        rc = sch_error(s, "bind", &same[k]->hdr, "this loop",
                       "loop %s (extent %s) encloses loop %s (extent %s), which block '%s' uses; both would be %s, so "
                       "the outer loop's guard would skip iterations of the inner one",
                       same[k]->loop_var->name, ek, same[used]->loop_var->name, eu, br->block->name, tag);
        free(ek);
        free(eu);
      }
      tir_release(le);
    }
  }
  free(all.a);
  return rc;
}

int tir_sched_bind(tir_Schedule *s, const tir_Var *v, const char *tag) {
  const char *P = "bind";
  const tir_For *f = tir_sched_loop(s, v, P);
  if (!f) return -1;
  int ok = 0;
  for (int i = 0; valid_tags[i]; i++)
    if (strcmp(valid_tags[i], tag) == 0) ok = 1;
  if (!ok)
    return sch_error(s, P, &f->hdr, "this loop", "%s thread tag '%s'; expected one of blockIdx.x/y/z, threadIdx.x/y/z", 
                     strncmp(tag, "vthread", 7) == 0 ? "tirlua does not lower virtual threads yet:" : "unknown", tag);
  if (sch_check_compact_dataflow(s, P, f) != 0) return -1;
  if (sch_check_iter_types_under(s, P, f, strncmp(tag, "threadIdx.", 10) == 0) != 0) return -1;
  if (check_same_tag(s, f, tag) != 0) return -1;
  return sch_set_loop_kind(s, P, v, TIR_FOR_THREAD_BINDING, tag);
}
