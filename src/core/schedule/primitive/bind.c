/* bind.c -- bind a loop to a GPU thread axis (TVM for_kind.cc, Bind).
 * The loop becomes a thread-binding loop; lowering turns it into a launch dimension.
 * Blocks under it may bind only data-parallel iteration variables through it
 * (cross-thread reductions are not lowered by tirlua yet). */
#include <string.h>

#include "../sched_internal.h"

static const char *const valid_tags[] = {"blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y",
                                         "threadIdx.z", "vthread", "vthread.x", "vthread.y", "vthread.z", NULL};

int tir_sched_bind(tir_Schedule *s, const tir_Var *v, const char *tag) {
  const char *P = "bind";
  const tir_For *f = tir_sched_loop(s, v, P);
  if (!f) return -1;
  int ok = 0;
  for (int i = 0; valid_tags[i]; i++)
    if (strcmp(valid_tags[i], tag) == 0) ok = 1;
  if (!ok)
    return sch_error(s, P, &f->hdr, "this loop",
                     "unknown thread tag '%s'; expected one of blockIdx.x/y/z, threadIdx.x/y/z, vthread", tag);
  if (f->kind == TIR_FOR_THREAD_BINDING && strcmp(f->thread_tag, tag) != 0)
    return sch_error(s, P, &f->hdr, "this loop", "loop %s is already bound to %s", v->name, f->thread_tag);
  if (sch_check_iter_types_under(s, P, f, 0) != 0) return -1;
  return sch_set_loop_kind(s, P, v, TIR_FOR_THREAD_BINDING, tag);
}
