/* unroll.c -- mark a loop for unrolling (TVM for_kind.cc, Unroll).  No checks: any loop
 * can be unrolled; codegen emits "#pragma unroll" and the unroll pass expands small
 * constant loops. */
#include "../sched_internal.h"

int tir_sched_unroll(tir_Schedule *s, const tir_Var *v) {
  const tir_For *f = tir_sched_loop(s, v, "unroll");
  if (!f) return -1;
  if (f->kind == TIR_FOR_THREAD_BINDING)
    return sch_error(s, "unroll", &f->hdr, "this loop", "loop %s is bound to %s and cannot be unrolled", v->name,
                     f->thread_tag);
  return sch_set_loop_kind(s, "unroll", v, TIR_FOR_UNROLLED, NULL);
}
