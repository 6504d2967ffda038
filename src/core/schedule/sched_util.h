/* sched_util.h -- helpers for primitives that move blocks: scopes, dependences, editing. */
#ifndef TIR_SCHED_UTIL_H
#define TIR_SCHED_UTIL_H

#include "sched_internal.h"
#include "tir/strbuf.h"

/* Index in the path of the nearest Block above the last node (the scope), or -1. */
int sch_scope_index(const SchPath *p);
const tir_Block *sch_scope_block(const SchPath *p);
int sch_block_writes(const tir_Block *b, const tir_Buffer *buf);
int sch_block_reads(const tir_Block *b, const tir_Buffer *buf);
/* p writes a buffer c reads (read-after-write dependence). */
int sch_is_producer_of(const tir_Block *p, const tir_Block *c);
int sch_is_param_buffer(const tir_PrimFunc *f, const tir_Buffer *b);
/* The buffer of the block's write region `index` (TVM's write_buffer_index), or NULL after
 * reporting an index out of range as primitive P's ScheduleError. */
tir_Buffer *sch_write_buffer(tir_Schedule *s, const char *P, const tir_BlockRealize *br, int index);
int sch_contains_stmt(const tir_Node *root, const tir_Node *target);
/* Removes a statement that is an item of some SeqStmt (owned result). */
tir_Node *sch_remove_stmt(const tir_Node *root, const tir_Node *target);
/* The largest subtree around path node idx made of loops with a single child. */
const tir_Node *sch_removable_subtree(const SchPath *p, int idx);
/* body with stmt (stolen) inserted at position pos of its sequence (-1: at the end). */
tir_Node *sch_insert_into(const tir_Node *body, int pos, tir_Node *stmt);
int sch_seq_size(const tir_Node *body);
const tir_Node *sch_seq_item(const tir_Node *body, int i);
/* The region of buf in a list of BufferRegion (borrowed) or NULL. */
tir_Array *sch_region_of(const tir_Array *regions, const tir_Buffer *buf);
/* x with the block's iteration variables replaced by the realize's bindings. */
tir_Node *sch_substitute_bindings(const tir_BlockRealize *br, const tir_Node *x);
/* Domain entry [min, min + extent - 1] of a loop (owned nodes). */
int sch_loop_dom(const tir_For *f, tir_DomEntry *out);
void sch_doms_free(tir_DomEntry *d, int n);
/* region shifted by -mins per dimension (owned). */
tir_Array *sch_rebase_region(const tir_Array *region, const tir_Array *mins);
/* base, or base_1, base_2, ... not used by any block or buffer of f (malloc'd). */
char *sch_unique_name(const tir_PrimFunc *f, const char *base);
tir_Node *sch_realize_with_block(const tir_BlockRealize *br, tir_Block *blk);
/* A copy of b with new reads/writes (stolen; NULL keeps). */
tir_Block *sch_block_with_regions(const tir_Block *b, tir_Array *reads, tir_Array *writes);
int sch_block_is_reduction(const tir_Block *b);
/* A block annotation that is a list of integer tuples of `width` (storage_align's
 * buffer_dim_align, storage_swizzle's buffer_swizzle): the entries of blk's annotation `key`
 * except those whose first nkey integers equal keyv (owned; empty when absent), or NULL when
 * the annotation is malformed. */
tir_Array *sch_ann_tuples_without(const tir_Block *blk, const char *key, int width, int nkey, const int64_t *keyv);
/* blk with annotation `key` set to list (stolen), or removed when list is empty; replaces blk in s. */
void sch_set_ann_tuples(tir_Schedule *s, const tir_Block *blk, const char *key, tir_Array *list);
/* compute_at (reverse = 0) / reverse_compute_at (reverse = 1; 3: producers that run before the
 * loop are allowed too); index -1 = default position. */
int sch_compute_location(tir_Schedule *s, const char *prim, int64_t uid, const tir_Var *loop, int preserve_unit_loops,
                         int index, int reverse);

/* 0 when cache_read/cache_write/set_scope accept `scope` (tir_scope_valid, include/tir/scope.h);
 * else -1 with primitive P's "invalid storage scope" error marking `where`.  (Cache stage
 * placement and regions: dataflow.h.) */
int sch_check_scope(tir_Schedule *s, const char *P, const tir_Node *where, const char *scope);
/* A new buffer like src (shape, dtype) named <src>_<scope>, unique in f (owned). */
tir_Buffer *sch_cache_buffer(const tir_PrimFunc *f, const tir_Buffer *src, const char *scope);
/* The scope block of the leaf block realized by br (path pb), or NULL with primitive P's
 * error (no scope; a block holding blocks). */
const tir_Block *sch_leaf_scope(tir_Schedule *s, const char *P, const tir_BlockRealize *br, const SchPath *pb);
/* Index of the item of body's sequence that contains target, or -1. */
int sch_top_child_index(const tir_Node *body, const tir_Node *target);

/* Rewrites the realizes of the given blocks under root with fn (which returns owned). */
tir_Node *sch_map_blocks(const tir_Node *root, const int64_t *uids, int n,
                         tir_Node *(*fn)(const tir_BlockRealize *br, void *ctx), void *ctx);

/* root without buf in any block's alloc_buffers (owned). */
tir_Node *sch_drop_allocation(const tir_Node *root, const tir_Buffer *buf);

/* Producers (1) or consumers (0) of a block in its scope, as int64 uids (owned). */
tir_Array *sch_dependents(tir_Schedule *s, int64_t uid, int producers, const char *prim);


#endif
