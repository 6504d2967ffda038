/* unroll.c -- mark a loop for unrolling (TVM for_kind.cc, Unroll).  No checks: any loop
 * can be unrolled, a thread-bound one too (it loses its binding, as in TVM); codegen emits
 * "#pragma unroll" and the unroll pass expands small constant loops. */
#include "../sched_internal.h"

int tir_sched_unroll(tir_Schedule *s, const tir_Var *v) {
  if (!tir_sched_loop(s, v, "unroll")) return -1;
  return sch_set_loop_kind(s, "unroll", v, TIR_FOR_UNROLLED, NULL);
}
