/* get_consumers.c -- the blocks of the same scope that read what a block writes (TVM
 * get_block_loop.cc, GetConsumers).  uids in scope order. */
#include "../sched_util.h"

tir_Array *tir_sched_get_consumers(tir_Schedule *s, int64_t uid) { return sch_dependents(s, uid, 0, "get_consumers"); }
