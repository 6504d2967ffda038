/* get_producers.c -- the blocks of the same scope that write, before it, what a block reads
 * or writes (TVM get_block_loop.cc / analysis.cc, GetProducers: the sources of RAW and WAW
 * edges; a block that writes the buffer only after the reader ran is a WAR edge, no
 * producer).  WAW matters since a block with an init does not read what it writes: a block
 * writing C before a reduction into C is its producer.  uids in scope order. */
#include <stdlib.h>

#include "../sched_util.h"

/* a writes a buffer b writes (write-after-write when a runs first) */
static int writes_what_writes(const tir_Block *a, const tir_Block *b) {
  for (int i = 0; i < a->writes->size; i++)
    if (sch_block_writes(b, ((const tir_BufferRegion *)a->writes->items[i])->buffer)) return 1;
  return 0;
}

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
    const tir_Block *first = producers ? b : br->block, *second = producers ? br->block : b;
    if (sch_is_producer_of(first, second) || writes_what_writes(first, second))
      out = tir_array_push(out, tir_int_imm(TIR_INT64, b->uid));
  }
  free(all);
  return out;
}

tir_Array *tir_sched_get_producers(tir_Schedule *s, int64_t uid) { return sch_dependents(s, uid, 1, "get_producers"); }
