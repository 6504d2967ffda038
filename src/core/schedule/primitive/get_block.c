/* get_block.c -- getters: get_block, get_loops, get_child_blocks, and handle resolution
 * (TVM src/tir/schedule/primitive/get_block_loop.cc).  No IR changes. */
#include <stdlib.h>
#include <string.h>

#include "../sched_internal.h"
#include "tir/strbuf.h"

typedef struct {
  const char *name;
  const tir_Block *found[2];
  int count;
} NameCtx;

static int find_name(const tir_Node *n, void *p) {
  NameCtx *c = p;
  if (n->kind == TIR_Block && strcmp(((const tir_Block *)n)->name, c->name) == 0) {
    if (c->count < 2) c->found[c->count] = (const tir_Block *)n;
    c->count++;
  }
  return tir_is_expr(n) ? 1 : 0;
}

static int list_names(const tir_Node *n, void *p) {
  tir_StrBuf *sb = p;
  if (n->kind == TIR_Block && strcmp(((const tir_Block *)n)->name, "root") != 0)
    tir_sb_printf(sb, "%s'%s'", sb->len ? ", " : "", ((const tir_Block *)n)->name);
  return tir_is_expr(n) ? 1 : 0;
}

int64_t tir_sched_get_block(tir_Schedule *s, const char *name) {
  NameCtx c = {name, {NULL, NULL}, 0};
  tir_visit(s->func->body, find_name, &c);
  if (c.count == 1) return c.found[0]->uid;
  if (c.count == 0) {
    /* list the blocks that do exist */
    tir_StrBuf names;
    tir_sb_init(&names);
    tir_visit(s->func->body, list_names, &names);
    tir_error_set(TIR_ERR_SCHEDULE, "get_block", "no block named '%s' in function '%s' (blocks: %s)", name, s->func->name,
                  names.data ? names.data : "none");
    tir_sb_free(&names);
    tir_error_set_ir(&s->func->hdr);
    return -1;
  }
  sch_error(s, "get_block", &c.found[1]->hdr, "second block with this name",
            "found %d blocks named '%s'; names must be unique to look a block up", c.count, name);
  return -1;
}

const tir_BlockRealize *tir_sched_block_realize(tir_Schedule *s, int64_t uid, const char *primitive) {
  const tir_BlockRealize *br = sch_find_block(s->func->body, uid, NULL);
  if (!br) {
    tir_error_set(TIR_ERR_SCHEDULE, primitive,
                  "the block handle no longer refers to a block of the function (it was removed or "
                  "replaced by an earlier step, e.g. compute_inline or blockize)");
    tir_error_set_ir(&s->func->hdr);
  }
  return br;
}

const tir_For *tir_sched_loop(tir_Schedule *s, const tir_Var *v, const char *primitive) {
  const tir_For *f = sch_find_loop(s->func->body, v, NULL);
  if (!f) {
    tir_error_set(TIR_ERR_SCHEDULE, primitive,
                  "loop '%s' is no longer in the function: an earlier step (split, fuse, compute_at, ...) "
                  "replaced it; use the loops that step returned",
                  v->name);
    tir_error_set_ir(&s->func->hdr);
  }
  return f;
}

tir_Array *tir_sched_get_loops(tir_Schedule *s, int64_t block) {
  SchPath p;
  if (!sch_find_block(s->func->body, block, &p)) {
    tir_sched_block_realize(s, block, "get_loops");
    return NULL;
  }
  const tir_For *loops[SCH_MAX_DEPTH];
  int n = sch_loops_above(&p, loops, SCH_MAX_DEPTH);
  tir_Array *out = tir_array_new(n);
  for (int i = 0; i < n; i++) out->items[i] = tir_retain(loops[i]->loop_var);
  return out;
}

tir_Array *tir_sched_get_child_blocks(tir_Schedule *s, int64_t block, const tir_Var *loop) {
  const tir_Node *root;
  if (loop) {
    const tir_For *f = tir_sched_loop(s, loop, "get_child_blocks");
    if (!f) return NULL;
    root = f->body;
  } else {
    const tir_BlockRealize *br = tir_sched_block_realize(s, block, "get_child_blocks");
    if (!br) return NULL;
    root = &br->block->hdr;
  }
  const tir_BlockRealize **blocks;
  int n = sch_child_blocks(root, &blocks);
  tir_Array *out = tir_array_new(n);
  for (int i = 0; i < n; i++) out->items[i] = tir_int_imm(TIR_INT64, blocks[i]->block->uid);
  free(blocks);
  return out;
}
