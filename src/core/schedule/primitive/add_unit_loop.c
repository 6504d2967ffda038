/* add_unit_loop.c -- wrap a block or loop in a loop of extent 1 (TVM
 * loop_transformation.cc, AddUnitLoop); useful to create a place to compute_at or to
 * give a block a loop to blockize. */
#include <string.h>

#include "../sched_util.h"

tir_Var *tir_sched_add_unit_loop(tir_Schedule *s, int64_t uid, const tir_Var *lv) {
  const tir_Node *target;
  if (lv) {
    const tir_For *f = tir_sched_loop(s, lv, "add_unit_loop");
    if (!f) return NULL;
    target = &f->hdr;
  } else {
    const tir_BlockRealize *br = tir_sched_block_realize(s, uid, "add_unit_loop");
    if (!br) return NULL;
    if (strcmp(br->block->name, "root") == 0 && br->block->iter_vars->size == 0 && &br->hdr == s->func->body) {
      sch_error(s, "add_unit_loop", &br->hdr, "the root block", "cannot add a loop on top of the root block");
      return NULL;
    }
    target = &br->hdr;
  }
  tir_Var *u = tir_var_new("u", TIR_INT32);
  tir_Node *loop = tir_for((tir_Var *)R(u), tir_i32(0), tir_i32(1), TIR_FOR_SERIAL, NULL, NULL, tir_retain(target));
  sch_replace(s, target, loop);
  return u;
}
