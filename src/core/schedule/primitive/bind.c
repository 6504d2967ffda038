/* bind.c -- bind a loop to a GPU thread axis (TVM for_kind.cc, Bind).
 * The loop becomes a thread-binding loop; lowering turns it into a launch dimension.
 * Blocks under it may bind only data-parallel iteration variables through it
 * (cross-thread reductions are not lowered by tirlua yet). */
#include <stdlib.h>
#include <string.h>

#include "../sched_internal.h"

static const char *const valid_tags[] = {"blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y",
                                         "threadIdx.z", NULL};

/* Two nested loops bound to one tag are the same hardware index: a block may depend on at
 * most one of them, else its iterations would collapse onto the diagonal (the CPU
 * interpreter would still run them all).  Cooperative fetches are fine: their block uses
 * only the inner loop. */
static int check_same_tag(tir_Schedule *s, const tir_For *f, const char *tag) {
  const tir_BlockRealize **blocks;
  int n = sch_child_blocks(f->body, &blocks);
  int rc = 0;
  for (int i = 0; i < n && !rc; i++) {
    SchPath p;
    sch_path_to(s->func->body, &blocks[i]->hdr, &p);
    const tir_For *loops[SCH_MAX_DEPTH];
    int nl = sch_loops_above(&p, loops, SCH_MAX_DEPTH);
    const tir_For *first = NULL;
    for (int k = 0; k < nl && !rc; k++) {
      const tir_For *l = loops[k];
      int same = l == f || (l->kind == TIR_FOR_THREAD_BINDING && strcmp(l->thread_tag, tag) == 0);
      if (!same) continue;
      int used = tir_uses_var(&blocks[i]->iter_values->hdr, l->loop_var) || tir_uses_var(blocks[i]->predicate, l->loop_var);
      if (!used) continue;
      if (first)
        rc = sch_error(s, "bind", &l->hdr, "also used",
                       "block '%s' depends on loops %s and %s, which would both be %s: one thread index cannot run both; "
                       "bind one of them to another axis",
                       blocks[i]->block->name, first->loop_var->name, l->loop_var->name, tag);
      first = l;
    }
  }
  free(blocks);
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
  if (f->kind == TIR_FOR_THREAD_BINDING && strcmp(f->thread_tag, tag) != 0)
    return sch_error(s, P, &f->hdr, "this loop", "loop %s is already bound to %s", v->name, f->thread_tag);
  if (sch_check_iter_types_under(s, P, f, 0) != 0) return -1;
  if (check_same_tag(s, f, tag) != 0) return -1;
  return sch_set_loop_kind(s, P, v, TIR_FOR_THREAD_BINDING, tag);
}
