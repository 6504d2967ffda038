/* cache_write.c -- write through a cache (TVM cache_read_write.cc, CacheWrite).
 *
 * The block writes (and, for reductions, reads) a new buffer <buf>_<scope> (same shape and
 * dtype) instead of buf; a block of that name copies the cache back to buf.  The copy goes
 * where TVM's CacheLocDetector puts it: in the lowest loop (or the scope block) whose body
 * holds the block and, after it, a consumer of buf -- before the first item holding one --,
 * or at the end of the scope when nothing in it reads buf.  It copies what the block writes
 * there (its write region relaxed over the loops between it and the copy, honouring its
 * predicate), so data of an output the block does not write is left alone;
 * reverse_compute_at then shrinks the copy to a tile.  The block must be buf's only writer
 * in the scope.  Given consumer blocks (TVM consumer_blocks) read the cache instead of buf:
 * the copy then goes before the first of the other consumers (the end of the scope when
 * there is none); each given block must read buf, not write it, and run after the block. */
#include <stdlib.h>

#include "../dataflow.h"

int64_t tir_sched_cache_write(tir_Schedule *s, int64_t uid, int index, const char *scope, const int64_t *consumers,
                              int n_consumers) {
  const char *P = "cache_write";
  SchPath pb;
  const tir_BlockRealize *br = sch_find_block(s->func->body, uid, &pb);
  if (!br) return tir_sched_block_realize(s, uid, P) ? 0 : -1;
  const tir_Block *blk = br->block;
  if (sch_check_scope(s, P, &br->hdr, scope)) return -1;
  tir_Buffer *buf = sch_write_buffer(s, P, br, index);
  if (!buf) return -1;
  /* an update without an init (after decompose_reduction, or an in-place update) starts
   * from values of buf written elsewhere, which the new cache would not hold (a block
   * holding blocks only summarizes them: it may read what it wrote itself) */
  const tir_BlockRealize **kids;
  int n_kids = sch_child_blocks(&blk->hdr, &kids);
  free(kids);
  if (!blk->init && n_kids == 0 && sch_block_reads(blk, buf))
    return sch_error(s, P, &br->hdr, "this block",
                     "block '%s' reads the %s it writes and has no init: it continues from values written elsewhere "
                     "(e.g. an init split off by decompose_reduction), which a cache would not hold",
                     blk->name, buf->name);
  int sidx = sch_scope_index(&pb);
  if (sidx < 0) return sch_error(s, P, &br->hdr, "this block", "block '%s' has no enclosing scope", blk->name);
  const tir_Block *scope_blk = (const tir_Block *)pb.nodes[sidx];
  const tir_BlockRealize **all;
  int n_all = sch_child_blocks(&scope_blk->hdr, &all);
  for (int i = 0; i < n_all; i++)
    if (all[i]->block != blk && sch_block_writes(all[i]->block, buf)) {
      sch_error(s, P, &all[i]->hdr, "another writer", "block '%s' also writes %s; cache_write needs a single writer",
                all[i]->block->name, buf->name);
      free(all);
      return -1;
    }
  int bidx = sch_block_index(all, n_all, br);
  for (int k = 0; k < n_consumers; k++) {
    int c = -1;
    for (int i = 0; i < n_all && c < 0; i++)
      if (all[i]->block->uid == consumers[k]) c = i;
    int rc = 0;
    if (c < 0)
      rc = sch_error(s, P, &br->hdr, "this block", "consumer block %d is not in the scope of block '%s'", k + 1, blk->name);
    else if (c == bidx)
      rc = sch_error(s, P, &br->hdr, "this block", "consumer block %d is block '%s' itself, the writer of the cache", k + 1,
                     blk->name);
    else if (!sch_block_reads(all[c]->block, buf))
      rc = sch_error(s, P, &all[c]->hdr, "this consumer", "consumer block '%s' does not read %s", all[c]->block->name,
                     buf->name);
    else if (sch_block_writes(all[c]->block, buf))
      rc = sch_error(s, P, &all[c]->hdr, "this consumer", "consumer block '%s' also writes %s", all[c]->block->name, buf->name);
    else if (c < bidx)
      rc = sch_error(s, P, &all[c]->hdr, "this consumer", "consumer block '%s' runs before block '%s' writes the cache",
                     all[c]->block->name, blk->name);
    if (rc) {
      free(all);
      return -1;
    }
  }
  /* the copy-back goes after the block, before its first consumer that keeps reading buf
   * (blocks after it reading buf, other than the given consumers) */
  int64_t *rel = calloc((size_t)n_all + 1, sizeof *rel);
  int nrel = 0;
  for (int i = bidx + 1; i < n_all; i++) {
    int given = 0;
    for (int k = 0; k < n_consumers; k++) given |= consumers[k] == all[i]->block->uid;
    if (!given && sch_block_reads(all[i]->block, buf)) rel[nrel++] = all[i]->block->uid;
  }
  free(all);
  const tir_Node *host;
  int pos;
  sch_cache_location(scope_blk, br, rel, nrel, &host, &pos);
  free(rel);
  tir_Buffer *nb = sch_cache_buffer(s->func, buf, scope);
  tir_Array *region = sch_cache_region(s->func->body, scope_blk, host, br, buf);
  int64_t new_uid;
  tir_Node *nest = sch_make_region_copy_nest(nb->name, nb, buf, region, &new_uid);
  tir_release(region);
  tir_Node *placed = sch_insert_at(scope_blk, host, pos, nest);
  tir_Node *nblk = tir_substitute_buffers(&blk->hdr, 1, &buf, &nb);
  tir_Node *nrealize = sch_realize_with_block(br, (tir_Block *)nblk);
  tir_Node *mapped = tir_replace_stmt(placed, &br->hdr, nrealize);
  tir_release(placed);
  if (n_consumers > 0) {
    tir_Node *redirected = sch_redirect_readers(mapped, consumers, n_consumers, buf, nb);
    tir_release(mapped);
    mapped = redirected;
  }
  tir_Block *nscope = (tir_Block *)mapped;
  nscope->alloc_buffers = tir_array_push(nscope->alloc_buffers, &nb->hdr);
  sch_replace(s, &scope_blk->hdr, &nscope->hdr);
  return new_uid;
}
