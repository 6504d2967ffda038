/* dataflow.h -- block properties, dependence checks and cache-stage placement shared by
 * the primitives that move, inline or stage blocks (compute_at, reverse_compute_at,
 * compute_inline, reverse_compute_inline, cache_read, cache_write).  Each check returns 0,
 * or -1 with a ScheduleError set for primitive `prim` that names the rule and marks the
 * block involved.
 *
 * Facts from TVM src/s_tir/schedule/analysis/analysis.cc (IsCompleteBlock,
 * CheckReductionBlockErrorCode, IsDominantBlock) and state.cc (a scope is a "stage
 * pipeline" when no block writes what an earlier block of the scope read). */
#ifndef TIR_SCHED_DATAFLOW_H
#define TIR_SCHED_DATAFLOW_H

#include "sched_util.h"

/* The block of `br` is the only block of scope `scope` (direct child blocks) writing each
 * of its written buffers (TVM "dominant"). */
int sch_check_dominant(tir_Schedule *s, const char *prim, const tir_Block *scope, const tir_BlockRealize *br);

/* Complete block (TVM IsCompleteBlock): spatial iteration variables only, dominant, and it
 * reads none of the buffers it writes. */
int sch_check_complete(tir_Schedule *s, const char *prim, const tir_Block *scope, const tir_BlockRealize *br);

/* Complete, or a reduction block (TVM CheckReductionBlockErrorCode): an init, spatial and
 * reduction variables only, dominant, reduction variables not indexing the written
 * buffers. */
int sch_check_complete_or_reduction_block(tir_Schedule *s, const char *prim, const tir_Block *scope,
                                          const tir_BlockRealize *br);

/* TVM CheckSubtreeCompactDataflow for a loop (what parallel, vectorize and bind require):
 * every child block under `loop` is a complete block (spatial iteration variables only, no
 * buffer both read and written) or a reduction block (an init, bindings affine in the loops
 * above it -- checked when those loops have constant ranges --, spatial and reduction
 * variables only, reduction variables not indexing the written buffers).  TVM's
 * loop-rooted check collects no writers for leaf blocks, so dominance is not checked here.
 * The error names the loop and marks it and the block. */
int sch_check_compact_dataflow(tir_Schedule *s, const char *prim, const tir_For *loop);

/* Index of br among blocks[0..n) (the scope's child blocks in execution order), or -1. */
int sch_block_index(const tir_BlockRealize *const *blocks, int n, const tir_BlockRealize *br);

/* True when the first block writes a buffer the second one reads (any of them). */
int sch_writes_what_reads(const tir_Block *writer, const tir_Block *reader, const tir_Buffer **buf);
/* True when the first block reads or writes a buffer the second one writes. */
int sch_touches_what_writes(const tir_Block *toucher, const tir_Block *writer, const tir_Buffer **buf);

/* True when the realize's predicate only restates the iteration domains: every conjunct
 * is `binding_k < c` / `binding_k <= c` / `c <= binding_k` / ... with binding_k the
 * binding of an iteration variable whose domain already implies it (what split adds for
 * non-dividing factors).  Such predicates can be dropped when a block's loops are
 * regenerated from its iteration domain. */
int sch_predicate_implied_by_domain(const tir_BlockRealize *br);

/* Binds in `an` the ranges of the loops and the iteration domains of the blocks among the
 * first n nodes of a path (what is known about the variables there). */
void sch_bind_path(tir_Analyzer *an, const SchPath *p, int n);

/* True when some block under root allocates buf (alloc_buffers): not a parameter, not a
 * match_buffer view (TVM NonAllocatedBufferError). */
int sch_buffer_allocated(const tir_Node *root, const tir_Buffer *buf);

/* True when `buf` (or its data variable) occurs anywhere under root. */
int sch_mentions_buffer(const tir_Node *root, const tir_Buffer *buf);

#endif

/* ---- cache stages (cache_read / cache_write; TVM cache_read_write.cc) ---- */

/* Where a cache stage goes (TVM CacheLocDetector): in the lowest loop (or the scope block)
 * whose body sequence holds the writer and, after it, a related block (cache_read: the
 * readers; cache_write: the writer's consumers), at the position of the first item holding
 * a related block.  Without a writer (a function input): position 0 of the scope body;
 * without related blocks: the end of the scope body.  *host is the For or Block whose body
 * receives the stage. */
void sch_cache_location(const tir_Block *scope, const tir_BlockRealize *writer, const int64_t *related, int n_related,
                        const tir_Node **host, int *pos);

/* The region of buf a cache stage at `host` copies: the writer's write region relaxed over
 * the loops between host and the writer (honouring its predicate) and clipped to buf's
 * shape; without a writer, what the scope block reads of buf (all of it at the root).
 * root: the function body (what is known above host).
 * Owned Array of Range. */
tir_Array *sch_cache_region(const tir_Node *root, const tir_Block *scope, const tir_Node *host,
                            const tir_BlockRealize *writer, const tir_Buffer *buf);

/* Loops ax0, ax1, ... over the region and a block `name` doing dst[v] = src[v] with
 * v = region.min + ax (iteration domains: the whole buffer).  Owned; *uid gets the block's. */
tir_Node *sch_make_region_copy_nest(const char *name, const tir_Buffer *src, const tir_Buffer *dst, const tir_Array *region,
                                    int64_t *uid);

/* root with the blocks of the given uids (and their predicates) reading `to` instead of
 * `from` (owned). */
tir_Node *sch_redirect_readers(const tir_Node *root, const int64_t *uids, int n, tir_Buffer *from, tir_Buffer *to);

/* scope (a copy, owned) with stmt (stolen) inserted at position pos of host's body. */
tir_Node *sch_insert_at(const tir_Block *scope, const tir_Node *host, int pos, tir_Node *stmt);
