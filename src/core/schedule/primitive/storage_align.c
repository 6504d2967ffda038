/* storage_align.c -- pad a buffer's strides against shared-memory bank conflicts (TVM
 * block_annotate.cc, StorageAlign).  Records (buffer_index, axis, factor, offset) in the
 * writing block's "buffer_dim_align" annotation; compact_buffer_allocation then makes the
 * stride of `axis` the smallest value >= the dense stride with stride % factor == offset.
 * Example: fp16 32x32 shared tile, storage_align(blk, 0, axis 0, 32, 8): row stride 40.
 * Checks (TVM StorageAlign*Error, NonAllocatedBufferError): index into the block's writes,
 * -ndim <= axis < ndim, factor > 0, 0 <= offset < factor, a buffer allocated by a block, a
 * well-formed existing annotation. */
#include "../dataflow.h"

int tir_sched_storage_align(tir_Schedule *s, int64_t uid, int index, int axis, int factor, int offset) {
  const char *P = "storage_align";
  const tir_BlockRealize *br = tir_sched_block_realize(s, uid, P);
  if (!br) return -1;
  const tir_Block *blk = br->block;
  const tir_Buffer *buf = sch_write_buffer(s, P, br, index);
  if (!buf) return -1;
  int nd = buf->shape->size;
  if (axis < -nd || axis >= nd)
    return sch_error(s, P, &br->hdr, "this block", "axis %d is out of range for %s, which has %d dimensions", axis, buf->name, nd);
  if (axis < 0) axis += nd;
  if (factor <= 0) return sch_error(s, P, &br->hdr, "this block", "factor must be positive, got %d", factor);
  if (offset < 0 || offset >= factor)
    return sch_error(s, P, &br->hdr, "this block", "offset must be in [0, factor), got %d", offset);
  if (sch_is_param_buffer(s->func, buf))
    return sch_error(s, P, &br->hdr, "this block", "%s is a function parameter; only buffers allocated in the function can be aligned",
                     buf->name);
  if (!sch_buffer_allocated(s->func->body, buf))
    return sch_error(s, P, &br->hdr, "this block",
                     "%s is not allocated by a block (it is a match_buffer view); align the buffer it views", buf->name);
  /* annotation value: list of {buffer_index, axis, factor, offset}, one entry per (buffer, axis) */
  int64_t key[2] = {index, axis};
  tir_Array *list = sch_ann_tuples_without(blk, "buffer_dim_align", 4, 2, key);
  if (!list)
    return sch_error(s, P, &br->hdr, "this block",
                     "block '%s' has a malformed buffer_dim_align annotation: expected a list of {buffer_index, axis, "
                     "factor, offset}",
                     blk->name);
  list = tir_array_push(list, &tir_array_of(4, tir_i32(index), tir_i32(axis), tir_i32(factor), tir_i32(offset))->hdr);
  sch_set_ann_tuples(s, blk, "buffer_dim_align", list);
  return 0;
}
