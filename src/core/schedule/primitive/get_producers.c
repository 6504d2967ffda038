/* get_producers.c -- the blocks of the same scope that write what a block reads before it
 * (TVM get_block_loop.cc, GetProducers: the sources of RAW edges; a block that writes the
 * buffer only after the reader ran is a WAR edge, no producer).  uids in scope order. */
#include <stdlib.h>

#include "../sched_util.h"

tir_Array *sch_dependents(tir_Schedule *s, int64_t uid, int producers, const char *prim) {
  SchPath pb;
  const tir_BlockRealize *br = sch_find_block(s->func->body, uid, &pb);
  if (!br) {
    tir_sched_block_realize(s, uid, prim);
    return NULL;
  }
  int sidx = sch_scope_index(&pb);
  tir_Array *out = tir_array_empty();
  if (sidx < 0) return out;
  const tir_BlockRealize **all;
  int n = sch_child_blocks(pb.nodes[sidx], &all);
  int self = 0;
  while (self < n && all[self]->block != br->block) self++;
  for (int i = 0; i < n; i++) {
    const tir_Block *b = all[i]->block;
    if (producers ? i >= self : i <= self) continue; /* producers run before, consumers after */
    if (producers ? sch_is_producer_of(b, br->block) : sch_is_producer_of(br->block, b))
      out = tir_array_push(out, tir_int_imm(TIR_INT64, b->uid));
  }
  free(all);
  return out;
}

tir_Array *tir_sched_get_producers(tir_Schedule *s, int64_t uid) { return sch_dependents(s, uid, 1, "get_producers"); }
