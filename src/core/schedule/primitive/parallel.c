/* parallel.c -- mark a loop parallel (TVM for_kind.cc, Parallel): its subtree must have
 * compact data flow (every block under it complete or a reduction) and the blocks under it
 * may bind only data-parallel iteration variables through it.  A thread-bound loop loses
 * its binding, as in TVM. */
#include "../dataflow.h"

int tir_sched_parallel(tir_Schedule *s, const tir_Var *v) {
  const tir_For *f = tir_sched_loop(s, v, "parallel");
  if (!f) return -1;
  if (sch_check_compact_dataflow(s, "parallel", f) != 0) return -1;
  if (sch_check_iter_types_under(s, "parallel", f, 0) != 0) return -1;
  return sch_set_loop_kind(s, "parallel", v, TIR_FOR_PARALLEL, NULL);
}
