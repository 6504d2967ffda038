/* lower_init_block.c -- a reduction block's init runs when every reduction iteration
 * variable is at the start of its domain (TVM src/tir/transforms/lower_init_block.cc):
 *   block { init: S0; body: S1 }  ->  block { if (vk == k_min && ...) S0; S1 }
 * The written buffers join the reads (TVM leaves reads as they are; tirlua's later passes
 * take dependences from block regions). */
#include "pass_util.h"
#include "tir/analysis.h"

static tir_Node *mut(const tir_Node *n, void *p) {
  (void)p;
  if (tir_is_expr(n)) return tir_retain(n);
  if (n->kind != TIR_Block) return NULL;
  const tir_Block *b = (const tir_Block *)n;
  tir_Node *body = tir_mutate(b->body, mut, p);
  if (!b->init) {
    if (body == b->body) {
      tir_release(body);
      return tir_retain(n);
    }
    return &tir_block_with_body(b, body)->hdr;
  }
  tir_Node *cond = tir_bool_imm(1);
  for (int i = 0; i < b->iter_vars->size; i++) {
    const tir_IterVar *iv = (const tir_IterVar *)b->iter_vars->items[i];
    if (iv->iter_type != TIR_ITER_COMM_REDUCE) continue;
    cond = tir_and(cond, tir_cmp(TIR_EQ, R(&iv->var->hdr), R(iv->dom->min)));
  }
  tir_Node *init = tir_mutate(b->init, mut, p);
  tir_Block *nb = tir_block_with_body(b, tir_seq2(tir_if(cond, init, NULL), body));
  tir_release(nb->init);
  nb->init = NULL;
  /* without the init the block reads what it writes (C = C + ...): the passes that follow
   * (pipeline dependences, scope checks) must see that read */
  tir_Array *reads = tir_reads_with_writes(b->reads, b->writes);
  tir_release(nb->reads);
  nb->reads = reads;
  return &nb->hdr;
}

tir_PrimFunc *tir_pass_lower_init_block(const tir_PrimFunc *f) { return pass_with_body(f, tir_mutate(f->body, mut, NULL)); }
