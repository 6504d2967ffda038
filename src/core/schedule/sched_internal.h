/* sched_internal.h -- state and helpers shared by the schedule primitives. */
#ifndef TIR_SCHED_INTERNAL_H
#define TIR_SCHED_INTERNAL_H

#include "tir/analysis.h"
#include "tir/arith.h"
#include "tir/error.h"
#include "tir/schedule.h"

struct tir_Schedule {
  tir_PrimFunc *func; /* owned */
};

#define SCH_MAX_DEPTH 1024
typedef struct {
  const tir_Node *nodes[SCH_MAX_DEPTH]; /* nodes[0] is the function body ... nodes[n-1] the target */
  int n;
} SchPath;

/* Child statements of a statement (For body, SeqStmt items, block init/body, ...). */
int sch_stmt_children(const tir_Node *s, const tir_Node **out, int max);
/* Finds target (by identity) under root; fills the path.  Returns 1 if found. */
int sch_path_to(const tir_Node *root, const tir_Node *target, SchPath *p);
/* Finds the For of loop var v / the BlockRealize of block uid; path optional. */
const tir_For *sch_find_loop(const tir_Node *root, const tir_Var *v, SchPath *p);
const tir_BlockRealize *sch_find_block(const tir_Node *root, int64_t uid, SchPath *p);
/* Replaces stmt `old` (identity) with `repl` (stolen) in the schedule's function. */
void sch_replace(tir_Schedule *s, const tir_Node *old, tir_Node *repl);
/* Sets a ScheduleError for primitive `prim` with the function printed and `mark` underlined. */
int sch_error(tir_Schedule *s, const char *prim, const tir_Node *mark, const char *label, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* BlockRealizes under stmt that are not nested inside another block (borrowed; malloc'd array). */
int sch_child_blocks(const tir_Node *stmt, const tir_BlockRealize ***out);
/* Loops (outer to inner) between the block at the end of path and the nearest block above. */
int sch_loops_above(const SchPath *p, const tir_For **out, int max);
/* Checks a loop kind change: every child block iter bound through the loop must be
 * data-parallel (or, if allow_reduce, a reduction). */
int sch_check_iter_types_under(tir_Schedule *s, const char *prim, const tir_For *loop, int allow_reduce);
/* Sets the kind (and thread tag) of a loop. */
int sch_set_loop_kind(tir_Schedule *s, const char *prim, const tir_Var *v, int kind, const char *tag);
/* Simplifies the bindings and predicates of child blocks under stmt, with the loop ranges
 * along the path (stmt itself included) known.  Owned result. */
tir_Node *sch_simplify_bindings(const tir_Node *stmt, const SchPath *outer);

#endif
