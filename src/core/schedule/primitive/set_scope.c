/* set_scope.c -- change the storage scope of a buffer a block writes (TVM
 * block_annotate.cc, SetScope).  The buffer must be allocated by a block of the function
 * (not a parameter, not a match_buffer view) and the scope valid; every use is rewritten
 * to the re-scoped buffer, and views matched from it (match_buffer) take the scope too. */
#include <stdlib.h>

#include "../dataflow.h"

typedef struct {
  const tir_Buffer *src;
  tir_Buffer **views;
  int n, cap;
} ViewCtx;

static int collect_views(const tir_Node *n, void *p) {
  ViewCtx *c = p;
  if (tir_is_expr(n)) return 1;
  if (n->kind == TIR_MatchBufferRegion) {
    const tir_MatchBufferRegion *m = (const tir_MatchBufferRegion *)n;
    if (m->source->buffer == c->src) {
      if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 4;
        c->views = realloc(c->views, sizeof *c->views * (size_t)c->cap);
      }
      c->views[c->n++] = m->buffer;
    }
  }
  return 0;
}

int tir_sched_set_scope(tir_Schedule *s, int64_t uid, int index, const char *scope) {
  const char *P = "set_scope";
  const tir_BlockRealize *br = tir_sched_block_realize(s, uid, P);
  if (!br) return -1;
  if (sch_check_scope(s, P, &br->hdr, scope)) return -1;
  tir_Buffer *buf = sch_write_buffer(s, P, br, index);
  if (!buf) return -1;
  if (sch_is_param_buffer(s->func, buf))
    return sch_error(s, P, &br->hdr, "this block", "%s is a function parameter; only buffers allocated in the function can change scope",
                     buf->name);
  if (!sch_buffer_allocated(s->func->body, buf))
    return sch_error(s, P, &br->hdr, "this block",
                     "%s is not allocated by a block (it is a match_buffer view); set the scope of the buffer it views", buf->name);
  tir_Buffer *nb = (tir_Buffer *)tir_node_copy(&buf->hdr);
  tir_node_set_str(&nb->scope, scope);
  tir_Node *body = tir_substitute_buffers(s->func->body, 1, &buf, &nb);
  /* views of the buffer live in the same memory */
  ViewCtx vc = {nb, NULL, 0, 0};
  tir_visit(body, collect_views, &vc);
  if (vc.n) {
    tir_Buffer **to = calloc((size_t)vc.n, sizeof *to);
    for (int i = 0; i < vc.n; i++) {
      to[i] = (tir_Buffer *)tir_node_copy(&vc.views[i]->hdr);
      tir_node_set_str(&to[i]->scope, scope);
    }
    tir_Node *b2 = tir_substitute_buffers(body, vc.n, vc.views, to);
    for (int i = 0; i < vc.n; i++) tir_release(to[i]);
    free(to);
    tir_release(body);
    body = b2;
  }
  free(vc.views);
  tir_release(nb);
  tir_PrimFunc *f = (tir_PrimFunc *)tir_node_copy(&s->func->hdr);
  tir_release(f->body);
  f->body = body;
  tir_schedule_set_func(s, f);
  tir_release(f);
  return 0;
}
