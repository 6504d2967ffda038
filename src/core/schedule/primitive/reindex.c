#include "../sched_util.h"
int64_t tir_sched_reindex(tir_Schedule *s, int64_t block, int is_write, int index) {
  (void)s; (void)block; (void)is_write; (void)index;
  return tir_error_set(TIR_ERR_SCHEDULE, "reindex", "not implemented yet");
}
