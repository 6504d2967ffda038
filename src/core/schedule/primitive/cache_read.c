/* cache_read.c -- stage a buffer through a cache (TVM cache_read_write.cc, CacheRead).
 *
 * A new buffer <buf>_<scope> (same shape and dtype) and a block of that name copying buf
 * into it are placed where TVM's CacheLocDetector puts them: in the lowest loop (or the
 * scope block) whose body holds buf's writer and, after it, a reader -- before the first
 * item holding a reader; at the start of the scope for a function input.  The copy covers
 * what the writer writes there (its write region relaxed over the loops between it and the
 * stage), or all of buf for an input; compute_at then shrinks it to a tile.  The readers
 * (all blocks of the scope other than the writer that read buf, or the given consumer blocks)
 * read the copy.
 * Checks: a valid scope, an index into the block's reads, at most one writer of buf in the
 * scope, readers that do not also write buf and do not run before the writer -- except a
 * function input whose readers all run before its writer (TVM's in-place cache_read: the
 * copy comes first). */
#include <stdlib.h>
#include <string.h>

#include "../dataflow.h"

int64_t tir_sched_cache_read(tir_Schedule *s, int64_t uid, int index, const char *scope, const int64_t *consumers,
                             int n_consumers) {
  const char *P = "cache_read";
  SchPath pb;
  const tir_BlockRealize *br = sch_find_block(s->func->body, uid, &pb);
  if (!br) return tir_sched_block_realize(s, uid, P) ? 0 : -1;
  const tir_Block *blk = br->block;
  if (sch_check_scope(s, P, &br->hdr, scope)) return -1;
  if (index < 0 || index >= blk->reads->size) {
    tir_StrBuf sb;
    tir_sb_init(&sb);
    for (int i = 0; i < blk->reads->size; i++)
      tir_sb_printf(&sb, "%s%d: %s", i ? ", " : "", i, ((const tir_BufferRegion *)blk->reads->items[i])->buffer->name);
    sch_error(s, P, &br->hdr, "this block", "read_buffer_index %d is out of range: block '%s' reads %s", index, blk->name,
              sb.data ? sb.data : "nothing");
    tir_sb_free(&sb);
    return -1;
  }
  tir_Buffer *buf = ((const tir_BufferRegion *)blk->reads->items[index])->buffer;
  if (sch_block_writes(blk, buf))
    return sch_error(s, P, &br->hdr, "this block", "block '%s' both reads and writes %s; a read cache would not see its writes",
                     blk->name, buf->name);
  int sidx = sch_scope_index(&pb);
  if (sidx < 0) return sch_error(s, P, &br->hdr, "this block", "block '%s' has no enclosing scope", blk->name);
  const tir_Block *scope_blk = (const tir_Block *)pb.nodes[sidx];
  const tir_BlockRealize **all;
  int n_all = sch_child_blocks(&scope_blk->hdr, &all);
  int64_t *readers = calloc((size_t)n_all + (size_t)n_consumers + 1, sizeof *readers);
  int n_readers = 0, widx = -1, n_after = 0;
  const tir_BlockRealize *writer = NULL, *first_before = NULL;
  for (int i = 0; i < n_all; i++)
    if (sch_block_writes(all[i]->block, buf)) {
      if (writer) {
        sch_error(s, P, &all[i]->hdr, "a second writer", "%s has more than one writer in the scope ('%s' and '%s'); cache_read needs one",
                  buf->name, writer->block->name, all[i]->block->name);
        goto fail;
      }
      writer = all[i];
      widx = i;
    }
  for (int i = 0; i < n_all; i++) {
    const tir_Block *b = all[i]->block;
    int chosen = 0;
    if (n_consumers > 0) {
      for (int k = 0; k < n_consumers; k++) chosen |= consumers[k] == b->uid;
    } else {
      /* the writer may read what it writes (a reduction, or a scope block holding both
       * ends): it is not a reader of the finished buffer */
      chosen = sch_block_reads(b, buf) && !(writer && b == writer->block);
    }
    if (!chosen) continue;
    if (!sch_block_reads(b, buf)) {
      sch_error(s, P, &all[i]->hdr, "does not read it", "consumer block '%s' does not read %s", b->name, buf->name);
      goto fail;
    }
    if (sch_block_writes(b, buf)) {
      sch_error(s, P, &all[i]->hdr, "reads and writes it", "block '%s' both reads and writes %s; a read cache would not see its writes",
                b->name, buf->name);
      goto fail;
    }
    if (writer && i < widx) {
      if (!first_before) first_before = all[i];
    } else {
      n_after++;
    }
    readers[n_readers++] = b->uid;
  }
  /* readers that run before the writer: for a function input all of them may (TVM's
   * in-place cache_read: the copy of the input comes first, the later writer overwrites the
   * buffer after the readers ran); otherwise they would read what is not written yet */
  if (first_before && (n_after > 0 || !sch_is_param_buffer(s->func, buf))) {
    sch_error(s, P, &first_before->hdr, "reads it first", "block '%s' reads %s before its writer '%s' runs; the cache is filled after it",
              first_before->block->name, buf->name, writer->block->name);
    goto fail;
  }
  if (first_before) writer = NULL; /* the input's copy, at the start of the scope */
  if (n_consumers > 0 && n_readers != n_consumers) {
    sch_error(s, P, &br->hdr, "this block", "some consumer blocks given are not in the scope of block '%s'", blk->name);
    goto fail;
  }
  {
    const tir_Node *host;
    int pos;
    sch_cache_location(scope_blk, writer, readers, n_readers, &host, &pos);
    tir_Buffer *nb = sch_cache_buffer(s->func, buf, scope);
    tir_Array *region = sch_cache_region(s->func->body, scope_blk, host, writer, buf);
    int64_t new_uid;
    tir_Node *nest = sch_make_region_copy_nest(nb->name, buf, nb, region, &new_uid);
    tir_release(region);
    /* place the copy first (blocks still have their identities), then redirect readers */
    tir_Node *placed = sch_insert_at(scope_blk, host, pos, nest);
    tir_Node *mapped = sch_redirect_readers(placed, readers, n_readers, buf, nb);
    tir_release(placed);
    tir_Block *nscope = (tir_Block *)mapped;
    nscope->alloc_buffers = tir_array_push(nscope->alloc_buffers, &nb->hdr);
    sch_replace(s, &scope_blk->hdr, &nscope->hdr);
    free(all);
    free(readers);
    return new_uid;
  }
fail:
  free(all);
  free(readers);
  return -1;
}
