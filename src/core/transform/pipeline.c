/* pipeline.c -- the order of the lowering passes (TVM's tir pipeline for CUDA, read
 * top to bottom like Halide's Lower.cpp).  With opts->dump the IR after each pass is
 * recorded (only when the pass changed it). */
#include <stdlib.h>
#include <string.h>

#include "tir/strbuf.h"
#include "tir/transform.h"

static void record(tir_LowerOptions *o, const char *name, const tir_PrimFunc *f) {
  if (!o || !o->dump) return;
  o->pass_names = realloc(o->pass_names, sizeof(char *) * (size_t)(o->n_dumps + 1));
  o->pass_ir = realloc(o->pass_ir, sizeof(char *) * (size_t)(o->n_dumps + 1));
  o->pass_names[o->n_dumps] = tir_strdup(name);
  o->pass_ir[o->n_dumps] = tir_print(&f->hdr);
  o->n_dumps++;
}

tir_PrimFunc *tir_lower(const tir_PrimFunc *f, tir_LowerOptions *opts) {
  int unroll_max = opts && opts->unroll_max_extent > 0 ? opts->unroll_max_extent : 16;
  tir_PrimFunc *cur = (tir_PrimFunc *)tir_retain(f);
  record(opts, "input", cur);
#define RUN(name, call)                       \
  do {                                        \
    tir_PrimFunc *next_ = (call);             \
    if (!next_) {                             \
      tir_release(cur);                       \
      return NULL;                            \
    }                                         \
    int changed_ = next_ != cur && (!opts || !opts->dump || !tir_structural_equal(&next_->hdr, &cur->hdr)); \
    tir_release(cur);                         \
    cur = next_;                              \
    if (changed_) record(opts, name, cur);    \
  } while (0)
  RUN("lower_cross_thread_reduction", tir_pass_lower_cross_thread_reduction(cur));
  RUN("lower_init_block", tir_pass_lower_init_block(cur));
  RUN("lower_grid_tail", tir_pass_lower_grid_tail(cur));
  RUN("lower_persistent_tail", tir_pass_lower_persistent_tail(cur));
  RUN("plan_buffer_allocation", tir_pass_plan_buffer_allocation(cur));
  RUN("verify_memory_scope", tir_pass_verify_memory_scope(cur));
  RUN("compact_buffer_allocation", tir_pass_compact_buffer_allocation(cur));
  RUN("lower_match_buffer", tir_pass_lower_match_buffer(cur));
  RUN("inject_tma_pipeline", tir_pass_inject_tma_pipeline(cur));
  RUN("inject_warp_specialization", tir_pass_inject_warp_specialization(cur));
  RUN("inject_tma_store", tir_pass_inject_tma_store(cur));
  RUN("inject_software_pipeline", tir_pass_inject_software_pipeline(cur));
  RUN("lower_opaque_block", tir_pass_lower_opaque_block(cur));
  RUN("simplify", tir_pass_simplify(cur));
  RUN("flatten_buffer", tir_pass_flatten_buffer(cur));
  RUN("simplify", tir_pass_simplify(cur));
  RUN("lower_wgmma_descriptor", tir_pass_lower_wgmma_descriptor(cur));
  RUN("vectorize_loop", tir_pass_vectorize_loop(cur));
  RUN("inject_ptx_async_copy", tir_pass_inject_ptx_async_copy(cur));
  RUN("unroll_loop", tir_pass_unroll_loop(cur, unroll_max));
  RUN("lower_thread_binding", tir_pass_lower_thread_binding(cur));
  RUN("simplify", tir_pass_simplify(cur));
  RUN("thread_sync", tir_pass_thread_sync(cur));
  RUN("lower_buffer_swizzle", tir_pass_lower_buffer_swizzle(cur));
  RUN("narrow_shared_allocations", tir_pass_narrow_shared_allocations(cur));
  RUN("strength_reduce_modulo", tir_pass_strength_reduce_modulo(cur));
#undef RUN
  return cur;
}

void tir_lower_options_free(tir_LowerOptions *o) {
  if (!o) return;
  for (int i = 0; i < o->n_dumps; i++) {
    free(o->pass_names[i]);
    free(o->pass_ir[i]);
  }
  free(o->pass_names);
  free(o->pass_ir);
  o->pass_names = o->pass_ir = NULL;
  o->n_dumps = 0;
}
