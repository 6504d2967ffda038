/* unannotate.c -- remove an annotation key from a block or loop (TVM annotate.cc). */
#include "../sched_util.h"

int tir_sched_unannotate(tir_Schedule *s, int64_t uid, const tir_Var *lv, const char *key) {
  const tir_Array *anns;
  const tir_Node *owner;
  if (lv) {
    const tir_For *f = tir_sched_loop(s, lv, "unannotate");
    if (!f) return -1;
    anns = f->annotations, owner = &f->hdr;
  } else {
    const tir_BlockRealize *br = tir_sched_block_realize(s, uid, "unannotate");
    if (!br) return -1;
    anns = br->block->annotations, owner = &br->block->hdr;
  }
  if (!tir_ann_get(anns, key))
    return sch_error(s, "unannotate", owner, "here", "there is no annotation '%s' to remove", key);
  tir_Node *copy = tir_node_copy(owner);
  tir_Array **slot = lv ? &((tir_For *)copy)->annotations : &((tir_Block *)copy)->annotations;
  tir_Array *a = tir_ann_remove(*slot, key);
  tir_release(*slot);
  *slot = a;
  sch_replace(s, owner, copy);
  return 0;
}
