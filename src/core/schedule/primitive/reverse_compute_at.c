/* reverse_compute_at.c -- move a consumer block under a loop of its producers (TVM
 * compute_at.cc, ReverseComputeAt): it then consumes exactly the region the producers
 * under the loop write.  The work is in ../compute_location.c. */
#include "../sched_util.h"

int tir_sched_reverse_compute_at(tir_Schedule *s, int64_t block, const tir_Var *loop, int preserve_unit_loops, int index,
                                 int prior_producers) {
  return sch_compute_location(s, "reverse_compute_at", block, loop, preserve_unit_loops, index, prior_producers ? 3 : 1);
}
