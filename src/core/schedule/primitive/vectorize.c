/* vectorize.c -- mark a loop vectorized (TVM for_kind.cc, Vectorize).  Lowering turns a
 * constant-extent vectorized loop into vector (Ramp/Broadcast) expressions where the
 * accesses allow it, and otherwise keeps a serial loop (the result is the same). */
#include "../sched_internal.h"

int tir_sched_vectorize(tir_Schedule *s, const tir_Var *v) {
  const tir_For *f = tir_sched_loop(s, v, "vectorize");
  if (!f) return -1;
  if (f->kind == TIR_FOR_THREAD_BINDING)
    return sch_error(s, "vectorize", &f->hdr, "this loop", "loop %s is bound to %s", v->name, f->thread_tag);
  if (sch_check_iter_types_under(s, "vectorize", f, 0) != 0) return -1;
  return sch_set_loop_kind(s, "vectorize", v, TIR_FOR_VECTORIZED, NULL);
}
