/* error.c -- the thread's error record (see error.h). */
#include "tir/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tir/strbuf.h"

static _Thread_local tir_Error err;

static void clear_fields(void) {
  free(err.message);
  free(err.detail);
  tir_release(err.ir);
  for (int i = 0; i < err.n_marks; i++) free(err.mark_labels[i]);
  memset(&err, 0, sizeof err);
}

int tir_error_set(tir_ErrorKind kind, const char *primitive, const char *fmt, ...) {
  clear_fields();
  err.kind = kind;
  snprintf(err.primitive, sizeof err.primitive, "%s", primitive ? primitive : "");
  tir_StrBuf sb;
  tir_sb_init(&sb);
  va_list ap;
  va_start(ap, fmt);
  tir_sb_vprintf(&sb, fmt, ap);
  va_end(ap);
  err.message = tir_sb_take(&sb);
  return -1;
}

void tir_error_set_ir(const tir_Node *ir) {
  tir_retain(ir);
  tir_release(err.ir);
  err.ir = (tir_Node *)ir;
}

void tir_error_mark(const tir_Node *node, const char *label) {
  if (!node || err.n_marks >= TIR_MAX_MARKS) return;
  err.mark_labels[err.n_marks] = label ? tir_strdup(label) : NULL;
  err.marks[err.n_marks].node = node;
  err.marks[err.n_marks].label = err.mark_labels[err.n_marks];
  err.n_marks++;
}

void tir_error_set_detail(const char *detail) {
  free(err.detail);
  err.detail = detail ? tir_strdup(detail) : NULL;
}

void tir_error_set_primitive(const char *primitive) {
  snprintf(err.primitive, sizeof err.primitive, "%s", primitive ? primitive : "");
}

tir_Error *tir_error_get(void) { return &err; }
int tir_error_occurred(void) { return err.kind != TIR_ERR_NONE; }
void tir_error_clear(void) { clear_fields(); }

const char *tir_error_kind_name(tir_ErrorKind k) {
  switch (k) {
    case TIR_ERR_NONE: return "NoError";
    case TIR_ERR_TYPE: return "TypeError";
    case TIR_ERR_VALUE: return "ValueError";
    case TIR_ERR_SCHEDULE: return "ScheduleError";
    case TIR_ERR_LOWER: return "LoweringError";
    case TIR_ERR_CODEGEN: return "CodegenError";
    case TIR_ERR_NVRTC: return "NvrtcError";
    case TIR_ERR_CUDA: return "CudaError";
    case TIR_ERR_RUNTIME: return "RuntimeError";
    case TIR_ERR_IO: return "IOError";
    case TIR_ERR_INTERNAL: return "InternalError";
    case TIR_ERR_SIMULATION: return "SimulationError";
  }
  return "Error";
}

char *tir_error_render(const tir_Error *e) {
  tir_StrBuf sb;
  tir_sb_init(&sb);
  tir_sb_puts(&sb, tir_error_kind_name(e->kind));
  if (e->primitive[0]) tir_sb_printf(&sb, " in %s", e->primitive);
  tir_sb_printf(&sb, ": %s", e->message ? e->message : "");
  if (e->kind == TIR_ERR_INTERNAL) tir_sb_puts(&sb, " (this is a bug in tirlua; please report it)");
  if (e->ir) {
    char *ir = tir_print_marked(e->ir, e->marks, e->n_marks);
    tir_sb_printf(&sb, "\n-- the IR%s:\n%s", e->n_marks ? " (marked: ^^^)" : "", ir);
    free(ir);
    if (sb.len && sb.data[sb.len - 1] == '\n') sb.data[--sb.len] = 0;
  }
  if (e->detail) tir_sb_printf(&sb, "\n%s", e->detail);
  return tir_sb_take(&sb);
}
