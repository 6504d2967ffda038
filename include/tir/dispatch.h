/* dispatch.h -- kernel families dispatched by shape at call time (the seed's
 * multi_kernel_tir; TVM builds such families with PrimFunc.specialize + a host-side switch).
 *
 * A dispatcher has a signature: a PrimFunc whose parameter buffers have symbolic dimensions
 * (te.var / tir.var M in A[M, K]) -- the family's variables, each read from the first
 * parameter dimension that is exactly it (or from an integer scalar parameter).  Its entries
 * are kernels with the signature's parameters (same count, kinds, dtypes and ranks; constant
 * dimensions equal), each either
 *   - specialized: a dimension that is a variable in the signature is a constant in the entry
 *     (tir_specialize); the entry fits when the argument has that extent;
 *   - symbolic, for the values in its ranges (lo <= M <= hi; none: any value); or
 *   - the fallback: symbolic, no ranges, tried after every other entry (at most one).
 * Selection reads the variables from the arguments' shapes and takes the first entry, in the
 * order they were added, whose conditions hold; the entry's own checks (tir_check_args:
 * dtypes, ranks, every dimension) then run before its launch.  Selection costs a few integer
 * compares per entry: no allocation, no IR walk (docs/DISPATCH.md has the measured overhead).
 *
 * Errors (tir_Error, primitive "dispatch <name>"): ValueError for entries that do not match
 * the signature, that can never fit (a range without the entry's constant) or a second
 * fallback; RuntimeError at a call: wrong argument count, a non-array where a variable is
 * read, a wrong rank, no entry for the values (the message lists every entry's condition).
 */
#ifndef TIR_DISPATCH_H
#define TIR_DISPATCH_H

#include <stdint.h>

#include "tir/codegen.h"

#define TIR_DISPATCH_MAX_VARS 8

/* lo <= value of variable `var` (an index of tir_dispatcher_var) <= hi; INT64_MIN / INT64_MAX
 * leave a side open. */
typedef struct {
  int var;
  int64_t lo, hi;
} tir_DispatchRange;

typedef struct tir_Dispatcher tir_Dispatcher;

/* A dispatcher named `name` for the parameters of `signature` (borrowed; retained).  NULL
 * with a ValueError when it has more than TIR_DISPATCH_MAX_VARS variables. */
tir_Dispatcher *tir_dispatcher_new(const char *name, const tir_PrimFunc *signature);
void tir_dispatcher_free(tir_Dispatcher *d);
const char *tir_dispatcher_name(const tir_Dispatcher *d);
const tir_PrimFunc *tir_dispatcher_signature(const tir_Dispatcher *d);
int tir_dispatcher_num_vars(const tir_Dispatcher *d);
const tir_Var *tir_dispatcher_var(const tir_Dispatcher *d, int i);

/* Adds an entry; returns its index (0-based), or -1 with the error set.
 *   label: its name in the table (NULL: the function's name); note: how it was scheduled
 *   (free text for the table, may be NULL); func: the entry's (scheduled) PrimFunc, borrowed
 *   and retained -- NULL takes mod's function; mod: its built module (borrowed: it must outlive
 *   the dispatcher; NULL for an entry that is only interpreted or simulated);
 *   ranges: n_ranges conditions on the variables (all must hold); fallback: 1 for the fallback.
 * A specialized entry gets the condition var == constant by itself. */
int tir_dispatcher_add(tir_Dispatcher *d, const char *label, const char *note, const tir_PrimFunc *func, tir_BuiltModule *mod,
                       int n_ranges, const tir_DispatchRange *ranges, int fallback);

int tir_dispatcher_num_entries(const tir_Dispatcher *d);
/* Entry i's fields (borrowed; any out pointer may be NULL).  calls: how often it was selected. */
void tir_dispatcher_entry(const tir_Dispatcher *d, int i, const char **label, const char **note, const tir_PrimFunc **func,
                          tir_BuiltModule **mod, long *calls);
/* Entry i's condition as text ("M = 16", "17 <= M <= 128", "fallback"); malloc'd. */
char *tir_dispatcher_entry_when(const tir_Dispatcher *d, int i);

/* The entry for these arguments (index), -1 with a RuntimeError when none fits.  values (may be
 * NULL): receives the variables' values (tir_dispatcher_num_vars of them).  Does not check the
 * arguments beyond what selection reads (ranks, the variables' dimensions). */
int tir_dispatcher_select(tir_Dispatcher *d, const tir_InterpArg *args, int nargs, int64_t *values);
/* select + the entry's full argument check (tir_check_args; require_dev as there, -1: any). */
int tir_dispatcher_check(tir_Dispatcher *d, const tir_InterpArg *args, int nargs, int require_dev);
/* select + tir_module_run of the entry (checks, launches, synchronizes); the index or -1. */
int tir_dispatcher_run(tir_Dispatcher *d, const tir_InterpArg *args, int nargs);
/* select + tir_module_launch (no synchronization); the index or -1. */
int tir_dispatcher_launch(tir_Dispatcher *d, const tir_InterpArg *args, int nargs);

/* The table: signature, variables, one row per entry (#, when, kernel, schedule note, built
 * arch or "not built", calls).  malloc'd. */
char *tir_dispatcher_describe(const tir_Dispatcher *d);

#endif
