/* annotate.c -- attach a key/value to a block or loop (TVM annotate.cc).  Keys with
 * meaning downstream: software_pipeline_stage / _order / _async_stages, pragma_*,
 * buffer_dim_align (storage_align), ... */
#include <math.h>

#include "../sched_util.h"

/* A NaN or infinite float anywhere in the value (an annotation is a count, a stage list, a
 * pragma's value: no consumer means anything by them, and NaN != NaN breaks comparisons). */
static int non_finite_fn(const tir_Node *n, void *p) {
  if (n->kind == TIR_FloatImm && !isfinite(((const tir_FloatImm *)n)->value) && !*(const tir_FloatImm **)p)
    *(const tir_FloatImm **)p = (const tir_FloatImm *)n;
  return 0;
}

static int check_finite(tir_Schedule *s, const tir_Node *mark, const char *label, const char *name, const char *key,
                        const tir_Node *value) {
  const tir_FloatImm *bad = NULL;
  tir_visit(value, non_finite_fn, &bad);
  if (!bad) return 0;
  return sch_error(s, "annotate", mark, label, "%s %s: the value of annotation %s holds %s; annotation values must be finite",
                   label + 5, name, key, isnan(bad->value) ? "NaN" : bad->value > 0 ? "inf" : "-inf");
}

int tir_sched_annotate(tir_Schedule *s, int64_t uid, const tir_Var *lv, const char *key, const tir_Node *value) {
  if (lv) {
    const tir_For *f = tir_sched_loop(s, lv, "annotate");
    if (!f) return -1;
    if (check_finite(s, &f->hdr, "this loop", f->loop_var->name, key, value)) return -1;
    tir_For *nf = (tir_For *)tir_node_copy(&f->hdr);
    tir_Array *a = tir_ann_set(nf->annotations, key, tir_retain(value));
    tir_release(nf->annotations);
    nf->annotations = a;
    sch_replace(s, &f->hdr, &nf->hdr);
    return 0;
  }
  const tir_BlockRealize *br = tir_sched_block_realize(s, uid, "annotate");
  if (!br) return -1;
  if (check_finite(s, &br->hdr, "this block", br->block->name, key, value)) return -1;
  tir_Block *nb = (tir_Block *)tir_node_copy(&br->block->hdr);
  tir_Array *a = tir_ann_set(nb->annotations, key, tir_retain(value));
  tir_release(nb->annotations);
  nb->annotations = a;
  sch_replace(s, &br->block->hdr, &nb->hdr);
  return 0;
}
