/* compute_at.c -- move a producer block under a loop of its consumers (TVM compute_at.cc).
 * Its loops are regenerated to produce exactly the region the consumers under the loop
 * read (relaxed over the loops between them and the loop; over the CTA's threads too when
 * the buffer is in shared memory).  The work is in ../compute_location.c. */
#include "../sched_util.h"

int tir_sched_compute_at(tir_Schedule *s, int64_t block, const tir_Var *loop, int preserve_unit_loops, int index) {
  return sch_compute_location(s, "compute_at", block, loop, preserve_unit_loops, index, 0);
}
