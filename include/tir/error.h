/* error.h -- the error record of the C core.
 *
 * The core never calls the Lua API and never longjmps: a failing function sets the
 * thread's error record and returns NULL (pointers) or -1 (status ints).  Only the Lua
 * bindings turn the record into a raised tir.Error.  The record names the kind, the
 * primitive or pass, a message, optionally the IR involved with nodes to underline, and
 * a detail text (e.g. the NVRTC log).
 */
#ifndef TIR_ERROR_H
#define TIR_ERROR_H

#include "tir/ir.h"

typedef enum {
  TIR_ERR_NONE = 0,
  TIR_ERR_TYPE,      /* wrong dtype / argument type */
  TIR_ERR_VALUE,     /* bad value: shapes, factors, names */
  TIR_ERR_SCHEDULE,  /* a schedule primitive's precondition failed */
  TIR_ERR_LOWER,     /* a lowering pass cannot handle the program */
  TIR_ERR_CODEGEN,   /* codegen cannot emit the program */
  TIR_ERR_NVRTC,     /* NVRTC failed; detail holds its log */
  TIR_ERR_CUDA,      /* CUDA driver call failed */
  TIR_ERR_RUNTIME,   /* argument checks before launch, interpreter faults */
  TIR_ERR_IO,        /* files */
  TIR_ERR_INTERNAL,  /* a bug in tirlua: please report */
  TIR_ERR_SIMULATION /* tir.simulate found a race, an out-of-bounds access, a divergent barrier, ... */
} tir_ErrorKind;

#define TIR_MAX_MARKS 4
typedef struct {
  tir_ErrorKind kind;
  char primitive[64];         /* "split", "flatten_buffer", "cuLaunchKernel", ... */
  char *message;              /* malloc'd */
  char *detail;               /* malloc'd or NULL */
  tir_Node *ir;               /* retained IR to render (function or statement) or NULL */
  tir_Mark marks[TIR_MAX_MARKS];
  char *mark_labels[TIR_MAX_MARKS];
  int n_marks;
} tir_Error;

/* Sets the thread's error (replacing any previous one).  Always returns -1. */
int tir_error_set(tir_ErrorKind kind, const char *primitive, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Attaches the IR to render (retained) and marks a node in it (borrowed pointer, label copied). */
void tir_error_set_ir(const tir_Node *ir);
void tir_error_mark(const tir_Node *node, const char *label);
void tir_error_set_detail(const char *detail);
/* Prefixes the message with "context: " (used when a pass reports through a caller). */
void tir_error_set_primitive(const char *primitive);
tir_Error *tir_error_get(void);
int tir_error_occurred(void);
void tir_error_clear(void);
const char *tir_error_kind_name(tir_ErrorKind k);
/* Renders the record: the IR with marks (if any), then "<Kind> in <primitive>: message",
 * then the detail.  malloc'd. */
char *tir_error_render(const tir_Error *e);

#endif
