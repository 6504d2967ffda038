/* annotate.c -- attach a key/value to a block or loop (TVM annotate.cc).  Keys with
 * meaning downstream: software_pipeline_stage / _order / _async_stages, pragma_*,
 * buffer_dim_align (storage_align), ... */
#include "../sched_util.h"

int tir_sched_annotate(tir_Schedule *s, int64_t uid, const tir_Var *lv, const char *key, const tir_Node *value) {
  if (lv) {
    const tir_For *f = tir_sched_loop(s, lv, "annotate");
    if (!f) return -1;
    tir_For *nf = (tir_For *)tir_node_copy(&f->hdr);
    tir_Array *a = tir_ann_set(nf->annotations, key, tir_retain(value));
    tir_release(nf->annotations);
    nf->annotations = a;
    sch_replace(s, &f->hdr, &nf->hdr);
    return 0;
  }
  const tir_BlockRealize *br = tir_sched_block_realize(s, uid, "annotate");
  if (!br) return -1;
  tir_Block *nb = (tir_Block *)tir_node_copy(&br->block->hdr);
  tir_Array *a = tir_ann_set(nb->annotations, key, tir_retain(value));
  tir_release(nb->annotations);
  nb->annotations = a;
  sch_replace(s, &br->block->hdr, &nb->hdr);
  return 0;
}
