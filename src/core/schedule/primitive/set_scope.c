/* set_scope.c -- change the storage scope of a buffer a block writes (TVM
 * block_annotate.cc, SetScope).  The buffer must be allocated inside the function (not
 * a parameter); every use is rewritten to the re-scoped buffer. */
#include "../sched_util.h"

int tir_sched_set_scope(tir_Schedule *s, int64_t uid, int index, const char *scope) {
  const char *P = "set_scope";
  const tir_BlockRealize *br = tir_sched_block_realize(s, uid, P);
  if (!br) return -1;
  const tir_Block *blk = br->block;
  if (!sch_valid_scope(scope)) return sch_error(s, P, &br->hdr, "this block", "invalid storage scope '%s'", scope);
  if (index < 0 || index >= blk->writes->size)
    return sch_error(s, P, &br->hdr, "this block", "write_buffer_index %d is out of range: block '%s' writes %d buffer(s)", index,
                     blk->name, blk->writes->size);
  tir_Buffer *buf = ((const tir_BufferRegion *)blk->writes->items[index])->buffer;
  if (sch_is_param_buffer(s->func, buf))
    return sch_error(s, P, &br->hdr, "this block", "%s is a function parameter; only buffers allocated in the function can change scope",
                     buf->name);
  tir_Buffer *nb = (tir_Buffer *)tir_node_copy(&buf->hdr);
  tir_node_set_str(&nb->scope, scope);
  tir_Node *body = tir_substitute_buffers(s->func->body, 1, &buf, &nb);
  tir_release(nb);
  tir_PrimFunc *f = (tir_PrimFunc *)tir_node_copy(&s->func->hdr);
  tir_release(f->body);
  f->body = body;
  tir_schedule_set_func(s, f);
  tir_release(f);
  return 0;
}
