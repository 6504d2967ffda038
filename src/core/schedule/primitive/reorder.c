/* reorder.c -- permute loops along one chain (TVM loop_transformation.cc, Reorder).
 *
 * The given loops must be distinct and lie on a single path where each loop between the
 * outermost and innermost given one has exactly one child loop (no branching, no block
 * in between).  Loops of the chain that are not given keep their positions; the given
 * ones fill their positions in the given order.  Blocks under the chain may only have
 * data-parallel or reduction iteration variables (their order of execution changes), and
 * no loop's range may depend on a loop moved inside it.
 */
#include <stdlib.h>
#include <string.h>

#include "../sched_util.h"

int tir_sched_reorder(tir_Schedule *s, tir_Var *const *vars, int n) {
  const char *P = "reorder";
  if (n < 1) return tir_error_set(TIR_ERR_SCHEDULE, P, "reorder needs the loops to put in order");
  int rc = -1;
  const tir_For **loops = calloc((size_t)n, sizeof *loops);
  SchPath *paths = calloc((size_t)n, sizeof *paths);
  const tir_For **chain = NULL;
  for (int i = 0; i < n; i++) {
    loops[i] = sch_find_loop(s->func->body, vars[i], &paths[i]);
    if (!loops[i]) {
      tir_sched_loop(s, vars[i], P);
      goto done;
    }
    for (int j = 0; j < i; j++)
      if (loops[j] == loops[i]) {
        sch_error(s, P, &loops[i]->hdr, "given twice", "loop %s appears more than once", loops[i]->loop_var->name);
        goto done;
      }
  }
  /* the outermost (shortest path) and innermost (longest) */
  int top = 0, bot = 0;
  for (int i = 1; i < n; i++) {
    if (paths[i].n < paths[top].n) top = i;
    if (paths[i].n > paths[bot].n) bot = i;
  }
  /* every given loop must be on the path to the innermost one */
  const SchPath *bp = &paths[bot];
  int top_pos = paths[top].n - 1;
  for (int i = 0; i < n; i++) {
    int pos = paths[i].n - 1;
    if (pos >= bp->n || bp->nodes[pos] != &loops[i]->hdr) {
      sch_error(s, P, &loops[i]->hdr, "not on the chain",
                "loops %s and %s are not nested in one another (they are in different loop nests), so they cannot be reordered",
                loops[i]->loop_var->name, loops[bot]->loop_var->name);
      tir_error_mark(&loops[bot]->hdr, "the other loop");
      goto done;
    }
  }
  int len = bp->n - top_pos;
  chain = calloc((size_t)len, sizeof *chain);
  for (int k = 0; k < len; k++) {
    const tir_Node *nd = bp->nodes[top_pos + k];
    if (nd->kind != TIR_For) {
      sch_error(s, P, nd, "here", "the loops are separated by a %s; reorder needs a chain of directly nested loops",
                tir_kind_name(nd->kind));
      goto done;
    }
    chain[k] = (const tir_For *)nd;
    if (k + 1 < len && chain[k]->body != bp->nodes[top_pos + k + 1]) {
      sch_error(s, P, &chain[k]->hdr, "has several children",
                "loop %s has more than one statement in its body; reorder needs a single-branch chain",
                chain[k]->loop_var->name);
      goto done;
    }
  }
  /* blocks below: only S/R iteration variables, and no moved loop feeding both kinds (the
   * first visit of an output must still have every reduction variable at its start, which
   * is when the init runs) */
  {
    const tir_BlockRealize **blocks;
    int nb = sch_child_blocks(chain[len - 1]->body, &blocks);
    for (int i = 0; i < nb; i++) {
      const tir_Block *b = blocks[i]->block;
      if (!sch_block_is_reduction(b)) continue;
      for (int q = 0; q < n; q++) {
        int sp = 0, rd = 0;
        for (int j = 0; j < b->iter_vars->size; j++) {
          if (!tir_uses_var(blocks[i]->iter_values->items[j], loops[q]->loop_var)) continue;
          if (((const tir_IterVar *)b->iter_vars->items[j])->iter_type == TIR_ITER_COMM_REDUCE) rd = 1;
          else sp = 1;
        }
        if (sp && rd) {
          sch_error(s, P, &loops[q]->hdr, "spatial and reduction",
                    "loop %s feeds both spatial and reduction iteration variables of block '%s' (it came from fusing "
                    "them); reordering it would visit outputs before their reduction starts",
                    loops[q]->loop_var->name, b->name);
          free(blocks);
          goto done;
        }
      }
    }
    for (int i = 0; i < nb; i++)
      for (int j = 0; j < blocks[i]->block->iter_vars->size; j++) {
        const tir_IterVar *iv = (const tir_IterVar *)blocks[i]->block->iter_vars->items[j];
        if (iv->iter_type != TIR_ITER_DATA_PAR && iv->iter_type != TIR_ITER_COMM_REDUCE) {
          sch_error(s, P, &blocks[i]->hdr, "this block",
                    "block '%s' has an iteration variable (%s) that is neither spatial nor reduction; its loops cannot be reordered",
                    blocks[i]->block->name, iv->var->name);
          free(blocks);
          goto done;
        }
      }
    free(blocks);
  }
  /* new order: positions of the given loops, filled in the given order */
  {
    const tir_For **order = calloc((size_t)len, sizeof *order);
    int next = 0;
    for (int k = 0; k < len; k++) {
      int given = 0;
      for (int i = 0; i < n; i++)
        if (loops[i] == chain[k]) given = 1;
      order[k] = given ? loops[next++] : chain[k];
    }
    /* no loop may depend on a loop now inside it */
    for (int k = 0; k < len; k++)
      for (int m = k + 1; m < len; m++)
        if (tir_uses_var(order[k]->min, order[m]->loop_var) || tir_uses_var(order[k]->extent, order[m]->loop_var)) {
          sch_error(s, P, &order[k]->hdr, "depends on an inner loop", "the range of loop %s depends on loop %s, which would be inside it",
                    order[k]->loop_var->name, order[m]->loop_var->name);
          free(order);
          goto done;
        }
    tir_Node *body = tir_retain(chain[len - 1]->body);
    for (int k = len - 1; k >= 0; k--) {
      const tir_For *o = order[k];
      body = tir_for((tir_Var *)R(o->loop_var), R(o->min), R(o->extent), (int)o->kind, o->thread_tag,
                     (tir_Array *)R(o->annotations), body);
    }
    free(order);
    sch_replace(s, &chain[0]->hdr, body);
  }
  rc = 0;
done:
  free(loops);
  free(paths);
  free(chain);
  return rc;
}
