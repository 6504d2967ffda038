/* merge.c -- merge sibling loops of one extent into one loop (TVM loop_transformation.cc,
 * Merge):
 *     for i in range(n): A(i)                for i in range(n):
 *     S                          --merge-->    A(i)
 *     for j in range(n): B(j)                  B(i)
 *                                            S'  (see below)
 * Here the loops are items of one sequence (TVM also takes loops deeper under their lowest
 * common ancestor, each the only child of the one above).  The merged loop stands where the
 * last loop stood, so the statements between the loops (S) run before it; its body runs the
 * loop bodies in the order given.  Preconditions: at least two loops, each starting at 0
 * with one constant extent, none bound to a thread or annotated; and, since iterations of
 * different loops now interleave and earlier loops move past S, no two of the loops (nor an
 * earlier loop and S) may have a block that writes a buffer a block of the other reads or
 * writes.  Used to compute the row sums of a quantized GEMM's A in the GEMM's k loop, from
 * the shared tiles it loads (tir.schedules.tc_gemm, option row_sums). */
#include <stdlib.h>
#include <string.h>

#include "../dataflow.h"

/* a block under x writes what a block under y reads or writes, or the other way round */
static int conflict(const tir_Node *x, const tir_Node *y, const tir_Block **bx, const tir_Block **by, const tir_Buffer **hit) {
  const tir_BlockRealize **xs, **ys;
  int nx = sch_child_blocks(x, &xs), ny = sch_child_blocks(y, &ys), found = 0;
  for (int i = 0; i < nx && !found; i++)
    for (int j = 0; j < ny && !found; j++)
      if (sch_touches_what_writes(xs[i]->block, ys[j]->block, hit) || sch_touches_what_writes(ys[j]->block, xs[i]->block, hit)) {
        *bx = xs[i]->block;
        *by = ys[j]->block;
        found = 1;
      }
  free(xs);
  free(ys);
  return found;
}

tir_Var *tir_sched_merge(tir_Schedule *s, tir_Var *const *vars, int n) {
  const char *P = "merge";
  if (n < 2) {
    tir_error_set(TIR_ERR_SCHEDULE, P, "merge needs at least 2 loops, got %d", n);
    return NULL;
  }
  const tir_For **loops = calloc((size_t)n, sizeof *loops);
  int *pos = calloc((size_t)n, sizeof *pos);
  tir_Var *result = NULL;
  const tir_Node *seq = NULL;
  for (int i = 0; i < n; i++) {
    SchPath p;
    loops[i] = sch_find_loop(s->func->body, vars[i], &p);
    if (!loops[i]) {
      tir_sched_loop(s, vars[i], P);
      goto done;
    }
    for (int j = 0; j < i; j++)
      if (loops[j] == loops[i]) {
        sch_error(s, P, &loops[i]->hdr, "this loop", "loop %s is given twice (as loops %d and %d)", loops[i]->loop_var->name, j + 1,
                  i + 1);
        goto done;
      }
    const tir_Node *parent = p.n >= 2 ? p.nodes[p.n - 2] : NULL;
    if (!parent || parent->kind != TIR_SeqStmt || (seq && parent != seq)) {
      sch_error(s, P, &loops[i]->hdr, "this loop", "loop %s is not in the same sequence of statements as loop %s; merge takes sibling loops",
                loops[i]->loop_var->name, loops[0]->loop_var->name);
      if (i > 0) tir_error_mark(&loops[0]->hdr, "the first loop");
      goto done;
    }
    seq = parent;
    pos[i] = sch_top_child_index(seq, &loops[i]->hdr);
    if (i > 0 && pos[i] <= pos[i - 1]) {
      sch_error(s, P, &loops[i]->hdr, "this loop", "give the loops in their order in the sequence: loop %s comes before loop %s",
                loops[i]->loop_var->name, loops[i - 1]->loop_var->name);
      goto done;
    }
  }
  int64_t ext0 = 0;
  for (int i = 0; i < n; i++) {
    const tir_For *l = loops[i];
    int64_t e;
    if (l->kind == TIR_FOR_THREAD_BINDING || l->annotations->size) {
      sch_error(s, P, &l->hdr, "this loop", "loop %s is bound to a thread or annotated", l->loop_var->name);
      goto done;
    }
    if (!tir_is_zero(l->min) || !tir_is_const_int(l->extent, &e)) {
      sch_error(s, P, &l->hdr, "this loop", "loop %s must start at 0 and have a constant extent", l->loop_var->name);
      goto done;
    }
    if (i == 0) ext0 = e;
    else if (e != ext0) {
      sch_error(s, P, &l->hdr, "this loop", "loop %s has extent %lld, loop %s %lld: merge needs one extent", l->loop_var->name,
                (long long)e, loops[0]->loop_var->name, (long long)ext0);
      tir_error_mark(&loops[0]->hdr, "the first loop");
      goto done;
    }
  }
  /* interleaving the loops, and moving the earlier ones past what stands between them */
  for (int i = 0; i < n; i++) {
    const tir_Block *bx, *by;
    const tir_Buffer *hit;
    for (int j = i + 1; j < n; j++)
      if (conflict(&loops[i]->hdr, &loops[j]->hdr, &bx, &by, &hit)) {
        sch_error(s, P, &loops[j]->hdr, "this loop",
                  "blocks '%s' (under loop %s) and '%s' (under loop %s) both use %s and one writes it; merged, their iterations "
                  "would interleave", bx->name, loops[i]->loop_var->name, by->name, loops[j]->loop_var->name, hit->name);
        tir_error_mark(&loops[i]->hdr, "the other loop");
        goto done;
      }
    for (int k = pos[i] + 1; k < pos[n - 1]; k++) {
      const tir_Node *mid = sch_seq_item(seq, k);
      int is_loop = 0;
      for (int j = 0; j < n; j++) is_loop |= mid == &loops[j]->hdr;
      if (!is_loop && i < n - 1 && pos[i] < k && conflict(&loops[i]->hdr, mid, &bx, &by, &hit)) {
        sch_error(s, P, mid, "this statement",
                  "block '%s' (under loop %s) and block '%s' between the loops both use %s and one writes it; the merged loop "
                  "stands at the last loop's place, after it", bx->name, loops[i]->loop_var->name, by->name, hit->name);
        tir_error_mark(&loops[i]->hdr, "the moved loop");
        goto done;
      }
    }
  }
  {
    tir_Var *v = loops[0]->loop_var;
    tir_Array *bodies = tir_array_new(n);
    for (int i = 0; i < n; i++) {
      if (i == 0) {
        bodies->items[0] = R(loops[0]->body);
      } else {
        tir_Var *ov = loops[i]->loop_var;
        tir_Node *nv = R(&v->hdr);
        bodies->items[i] = tir_substitute(loops[i]->body, 1, &ov, &nv);
        tir_release(nv);
      }
    }
    tir_Node *merged = tir_for((tir_Var *)R(v), tir_int_imm(v->hdr.dtype, 0), R(loops[0]->extent), TIR_FOR_SERIAL, NULL, NULL,
                               tir_seq(bodies));
    /* the sequence without the loops, the merged loop at the last one's place */
    int m = sch_seq_size(seq);
    tir_Array *items = tir_array_new(m - n + 1);
    int k = 0;
    for (int q = 0; q < m; q++) {
      const tir_Node *it = sch_seq_item(seq, q);
      if (q == pos[n - 1]) {
        items->items[k++] = merged;
        continue;
      }
      int drop = 0;
      for (int j = 0; j < n - 1; j++) drop |= q == pos[j];
      if (!drop) items->items[k++] = R((tir_Node *)it);
    }
    result = (tir_Var *)R(v); /* owned; the merged loop holds v too */
    sch_replace(s, seq, tir_seq(items));
  }
done:
  free(loops);
  free(pos);
  return result;
}
