/* decompose_reduction.c -- split a reduction's init into its own block placed before a
 * loop (TVM reduction.cc, DecomposeReduction).
 *
 * The init block "<name>_init" gets the spatial iteration variables and copies of the
 * loops at and below `loop` that its bindings use; the original block keeps the update
 * (renamed "<name>_update", its writes added to its reads).  `loop` must be an ancestor of
 * the block and above every loop that a reduction binding uses, and the block a reduction
 * block (TVM CheckReductionBlock: init, spatial/reduction variables, the only writer of its
 * output, reduction variables not indexing it).  Loop kinds, thread tags and annotations of
 * the copied loops and the block's annotations go to the init (as TVM); conjuncts of the
 * predicate on loops the init does not copy are dropped when they hold where the reduction
 * starts (split's guards) and refused otherwise. */
#include <stdlib.h>
#include <string.h>

#include "../dataflow.h"

/* The conjuncts of pred that use none of the loops below[i] with !used[i] (owned); *ok = 0
 * when a dropped conjunct is not provably true with those loops at their minimum. */
static tir_Node *dropped_conjuncts(const SchPath *pb, const tir_For *const *below, int nb, const int *used,
                                   const tir_Node *pred, int *ok) {
  if (pred->kind == TIR_And) {
    tir_Node *a = dropped_conjuncts(pb, below, nb, used, ((const tir_And *)pred)->a, ok);
    tir_Node *b = dropped_conjuncts(pb, below, nb, used, ((const tir_And *)pred)->b, ok);
    if (tir_is_one(a)) {
      tir_release(a);
      return b;
    }
    if (tir_is_one(b)) {
      tir_release(b);
      return a;
    }
    return tir_and(a, b);
  }
  int drop = 0;
  for (int i = 0; i < nb; i++)
    if (!used[i] && tir_uses_var(pred, below[i]->loop_var)) drop = 1;
  if (!drop) return tir_retain(pred);
  tir_Analyzer *an = tir_analyzer_new();
  sch_bind_path(an, pb, pb->n);
  tir_Var *vars[SCH_MAX_DEPTH];
  tir_Node *mins[SCH_MAX_DEPTH];
  int nv = 0;
  for (int i = 0; i < nb; i++)
    if (!used[i]) {
      vars[nv] = below[i]->loop_var;
      mins[nv++] = below[i]->min;
    }
  tir_Node *at_start = tir_substitute(pred, nv, vars, mins);
  if (!tir_can_prove(an, at_start)) *ok = 0;
  tir_release(at_start);
  tir_analyzer_free(an);
  return tir_bool_imm(1);
}

int64_t tir_sched_decompose_reduction(tir_Schedule *s, int64_t uid, const tir_Var *lv) {
  const char *P = "decompose_reduction";
  SchPath pb;
  const tir_BlockRealize *br = sch_find_block(s->func->body, uid, &pb);
  if (!br) return tir_sched_block_realize(s, uid, P) ? 0 : -1;
  const tir_Block *blk = br->block;
  if (!blk->init)
    return sch_error(s, P, &br->hdr, "this block", "block '%s' has no init: it is not a reduction block", blk->name);
  int lpos = -1;
  for (int i = 0; i < pb.n; i++)
    if (pb.nodes[i]->kind == TIR_For && ((const tir_For *)pb.nodes[i])->loop_var == lv) lpos = i;
  if (lpos < 0) {
    if (!tir_sched_loop(s, lv, P)) return -1;
    return sch_error(s, P, &br->hdr, "this block", "loop %s is not an ancestor of block '%s'", lv->name, blk->name);
  }
  int sidx = sch_scope_index(&pb);
  if (lpos < sidx) return sch_error(s, P, pb.nodes[lpos], "this loop", "loop %s is outside the block's scope", lv->name);
  if (sidx >= 0 && sch_check_complete_or_reduction_block(s, P, (const tir_Block *)pb.nodes[sidx], br)) return -1;
  /* loops from `loop` down to the block */
  const tir_For *below[SCH_MAX_DEPTH];
  int nb = 0;
  for (int i = lpos; i < pb.n - 1; i++)
    if (pb.nodes[i]->kind == TIR_For) below[nb++] = (const tir_For *)pb.nodes[i];
  /* reduction bindings may only use loops at/below `loop` */
  for (int k = 0; k < blk->iter_vars->size; k++) {
    const tir_IterVar *iv = (const tir_IterVar *)blk->iter_vars->items[k];
    if (iv->iter_type != TIR_ITER_COMM_REDUCE) continue;
    for (int i = sidx + 1; i < lpos; i++)
      if (pb.nodes[i]->kind == TIR_For && tir_uses_var(br->iter_values->items[k], ((const tir_For *)pb.nodes[i])->loop_var))
        return sch_error(s, P, pb.nodes[lpos], "this loop",
                         "reduction variable %s of block '%s' is bound to loop %s, which is above loop %s; decompose at %s or higher",
                         iv->var->name, blk->name, ((const tir_For *)pb.nodes[i])->loop_var->name, lv->name,
                         ((const tir_For *)pb.nodes[i])->loop_var->name);
  }
  /* the init block: spatial vars; copies of the loops below that spatial bindings use */
  int nv = blk->iter_vars->size;
  tir_Array *ivs = tir_array_empty(), *vals = tir_array_empty();
  int *used = calloc((size_t)nb + 1, sizeof *used);
  for (int k = 0; k < nv; k++) {
    const tir_IterVar *iv = (const tir_IterVar *)blk->iter_vars->items[k];
    if (iv->iter_type != TIR_ITER_DATA_PAR) continue;
    for (int i = 0; i < nb; i++) used[i] |= tir_uses_var(br->iter_values->items[k], below[i]->loop_var);
  }
  /* a loop bound to no iteration variable repeats the whole reduction, which re-runs its
   * init each time (the reduction variables start again); one init split off above it
   * would be followed by every repetition's updates */
  for (int i = 0; i < nb; i++) {
    int any = 0;
    int64_t ext;
    for (int k = 0; k < nv && !any; k++) any = tir_uses_var(br->iter_values->items[k], below[i]->loop_var);
    if (any || (tir_is_const_int(below[i]->extent, &ext) && ext <= 1)) continue;
    free(used);
    tir_release(ivs);
    tir_release(vals);
    return sch_error(s, P, &below[i]->hdr, "this loop",
                     "loop %s repeats block '%s' without being bound to any of its iteration variables: with the init "
                     "split off before loop %s, each repetition would add to the previous one's result; decompose at a "
                     "loop inside %s",
                     below[i]->loop_var->name, blk->name, lv->name, below[i]->loop_var->name);
  }
  tir_Var **olds = calloc((size_t)nb + 1, sizeof *olds);
  tir_Node **news = calloc((size_t)nb + 1, sizeof *news);
  int nn = 0;
  for (int i = 0; i < nb; i++)
    if (used[i]) {
      char *name = tir_strprintf("%s_init", below[i]->loop_var->name);
      olds[nn] = below[i]->loop_var;
      news[nn] = &tir_var_new(name, below[i]->loop_var->hdr.dtype)->hdr;
      free(name);
      nn++;
    }
  /* a new variable per spatial iter var (block isolation: the two blocks own their vars) */
  tir_Var **bv_old = calloc((size_t)nv + 1, sizeof *bv_old);
  tir_Node **bv_new = calloc((size_t)nv + 1, sizeof *bv_new);
  int nbv = 0;
  for (int k = 0; k < nv; k++) {
    const tir_IterVar *iv = (const tir_IterVar *)blk->iter_vars->items[k];
    if (iv->iter_type != TIR_ITER_DATA_PAR) continue;
    char *name = tir_strprintf("%s_init", iv->var->name);
    tir_Var *nvv = tir_var_new(name, iv->var->hdr.dtype);
    free(name);
    bv_old[nbv] = iv->var;
    bv_new[nbv++] = &nvv->hdr;
    ivs = tir_array_push(ivs, &tir_iter_var((tir_Var *)R(nvv), (tir_Range *)R(iv->dom), TIR_ITER_DATA_PAR, "")->hdr);
    vals = tir_array_push(vals, tir_substitute(br->iter_values->items[k], nn, olds, news));
  }
  tir_Node *init_body = tir_substitute(blk->init, nbv, bv_old, bv_new);
  char *iname = tir_strprintf("%s_init", blk->name);
  char *uname = sch_unique_name(s->func, iname);
  free(iname);
  tir_Block *ib = tir_block_new(uname, ivs, NULL, NULL, init_body, NULL, NULL, (tir_Array *)R(blk->annotations), NULL);
  free(uname);
  /* a block's init is its body here: move it */
  ib->body = ib->init;
  ib->init = NULL;
  tir_Block *ibd = tir_block_with_detected_access(ib);
  tir_release(ib);
  int64_t new_uid = ibd->uid;
  tir_Node *pred = tir_retain(br->predicate);
  if (!tir_is_one(pred)) {
    /* as TVM (RemakePredicate): conjuncts on loops the init does not copy are dropped; that
     * is right only when they hold where the reduction starts, which is checked */
    int ok = 1;
    tir_Node *kept = dropped_conjuncts(&pb, below, nb, used, pred, &ok);
    tir_Node *np = ok ? tir_substitute(kept, nn, olds, news) : NULL;
    tir_release(kept);
    tir_release(pred);
    if (!ok) {
      tir_release(ibd);
      tir_release(vals);
      for (int i = 0; i < nn; i++) tir_release(news[i]);
      for (int i = 0; i < nbv; i++) tir_release(bv_new[i]);
      free(used), free(olds), free(news), free(bv_old), free(bv_new);
      return sch_error(s, P, &br->hdr, "this block",
                       "the predicate of block '%s' restricts a reduction loop where the reduction starts; the init "
                       "block cannot keep it",
                       blk->name);
    }
    pred = np;
  }
  tir_Node *init_nest = tir_block_realize(vals, pred, ibd);
  for (int i = nb - 1, k = nn - 1; i >= 0; i--) {
    if (!used[i]) continue;
    const tir_For *f = below[i];
    init_nest = tir_for((tir_Var *)R(news[k]), R(f->min), R(f->extent), (int)f->kind, f->thread_tag,
                        (tir_Array *)R(f->annotations), init_nest);
    k--;
  }
  for (int i = 0; i < nn; i++) tir_release(news[i]);
  for (int i = 0; i < nbv; i++) tir_release(bv_new[i]);
  free(used), free(olds), free(news), free(bv_old), free(bv_new);
  /* the update block */
  tir_Block *ub = (tir_Block *)tir_node_copy(&blk->hdr);
  tir_release(ub->init);
  ub->init = NULL;
  char *un = tir_strprintf("%s_update", blk->name);
  tir_node_set_str(&ub->name, un);
  free(un);
  /* without its init the update block reads what it writes (C = C + ...): as TVM's
   * DecomposeReductionBlockReplacer, the written regions go back in front of the reads */
  tir_release(ub->reads);
  ub->reads = tir_reads_with_writes(blk->reads, blk->writes);
  const tir_Node *target = pb.nodes[lpos];
  tir_Node *nrealize = sch_realize_with_block(br, ub);
  tir_Node *newloop = tir_replace_stmt(target, &br->hdr, nrealize);
  tir_Node *pair = tir_seq2(init_nest, newloop);
  sch_replace(s, target, pair);
  return new_uid;
}
