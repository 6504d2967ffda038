/* storage_swizzle.c -- give a shared buffer an XOR-swizzled physical layout (no TVM
 * primitive; the layout CUTLASS's Swizzle<B, M, S> smem atoms, Triton's shared encodings and
 * TileLang's make_swizzled_layout give, and the PTX ISA's 32/64/128-byte modes of TMA and
 * wgmma).  Records {buffer_index, B, M, S} in the writing block's "buffer_swizzle"
 * annotation, as storage_align records "buffer_dim_align"; compact_buffer_allocation sets the
 * allocated buffer's `swizzle` field and lower_buffer_swizzle applies it to the flat indices
 * of the lowered code.  The buffer keeps its shape and logical indices, so tensorized views
 * of it and the interpreter are unchanged (include/tir/swizzle.h).
 * Checks: index into the block's writes, a shared buffer allocated by a block (not a
 * parameter or a match_buffer view), elements no wider than the swizzle's unit (2^M bytes),
 * a well-formed existing annotation.  sw = 0 removes the swizzle. */
#include "../dataflow.h"
#include "tir/scope.h"
#include "tir/swizzle.h"

int tir_sched_storage_swizzle(tir_Schedule *s, int64_t uid, int index, int64_t sw) {
  const char *P = "storage_swizzle";
  const tir_BlockRealize *br = tir_sched_block_realize(s, uid, P);
  if (!br) return -1;
  const tir_Block *blk = br->block;
  const tir_Buffer *buf = sch_write_buffer(s, P, br, index);
  if (!buf) return -1;
  if (!tir_swizzle_valid(sw)) return sch_error(s, P, &br->hdr, "this block", "not a packed swizzle: %lld", (long long)sw);
  if (sch_is_param_buffer(s->func, buf))
    return sch_error(s, P, &br->hdr, "this block", "%s is a function parameter; only shared buffers allocated in the function can be swizzled",
                     buf->name);
  if (!sch_buffer_allocated(s->func->body, buf))
    return sch_error(s, P, &br->hdr, "this block",
                     "%s is not allocated by a block (it is a match_buffer view); swizzle the buffer it views", buf->name);
  if (!tir_scope_is_shared(buf->scope))
    return sch_error(s, P, &br->hdr, "this block",
                     "%s is in scope \"%s\"; a swizzle permutes shared-memory chunks against bank conflicts, so the buffer must be "
                     "shared (set_scope or cache_read(..., \"shared\") first)",
                     buf->name, buf->scope);
  int esize = tir_dtype_bytes(buf->hdr.dtype);
  if (sw && esize > tir_swizzle_unit(sw))
    return sch_error(s, P, &br->hdr, "this block", "%s has %d-byte elements, wider than the %lld-byte chunks the swizzle moves",
                     buf->name, esize, (long long)tir_swizzle_unit(sw));
  /* annotation value: list of {buffer_index, B, M, S}, one entry per buffer */
  int64_t key = index;
  tir_Array *list = sch_ann_tuples_without(blk, "buffer_swizzle", 4, 1, &key);
  if (!list)
    return sch_error(s, P, &br->hdr, "this block",
                     "block '%s' has a malformed buffer_swizzle annotation: expected a list of {buffer_index, B, M, S}", blk->name);
  if (sw)
    list = tir_array_push(list, &tir_array_of(4, tir_i32(index), tir_i32(tir_swizzle_bits(sw)), tir_i32(tir_swizzle_base(sw)),
                                              tir_i32(tir_swizzle_shift(sw)))->hdr);
  sch_set_ann_tuples(s, blk, "buffer_swizzle", list);
  return 0;
}
