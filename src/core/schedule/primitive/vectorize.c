/* vectorize.c -- mark a loop vectorized (TVM for_kind.cc, Vectorize; the same conditions
 * as parallel).  Lowering turns a constant-extent vectorized loop into vector
 * (Ramp/Broadcast) expressions where the accesses allow it, and otherwise keeps a serial
 * loop (the result is the same).  A thread-bound loop loses its binding, as in TVM. */
#include "../dataflow.h"

int tir_sched_vectorize(tir_Schedule *s, const tir_Var *v) {
  const tir_For *f = tir_sched_loop(s, v, "vectorize");
  if (!f) return -1;
  if (sch_check_compact_dataflow(s, "vectorize", f) != 0) return -1;
  if (sch_check_iter_types_under(s, "vectorize", f, 0) != 0) return -1;
  return sch_set_loop_kind(s, "vectorize", v, TIR_FOR_VECTORIZED, NULL);
}
