/* parallel.c -- mark a loop parallel (TVM for_kind.cc, Parallel): iterations independent;
 * only data-parallel block iterations may depend on it. */
#include "../sched_internal.h"

int tir_sched_parallel(tir_Schedule *s, const tir_Var *v) {
  const tir_For *f = tir_sched_loop(s, v, "parallel");
  if (!f) return -1;
  if (f->kind == TIR_FOR_THREAD_BINDING)
    return sch_error(s, "parallel", &f->hdr, "this loop", "loop %s is bound to %s", v->name, f->thread_tag);
  if (sch_check_iter_types_under(s, "parallel", f, 0) != 0) return -1;
  return sch_set_loop_kind(s, "parallel", v, TIR_FOR_PARALLEL, NULL);
}
