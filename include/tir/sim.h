/* sim.h -- the warp-accurate GPU simulator: runs lowered device code on the CPU.
 *
 * Input is what the CUDA codegen receives: the kernels of a function's host/device split
 * (split_host_device) after thread binding, flattening, pipelining and barrier insertion.
 * Every CTA of each launch (or a chosen subset) runs its threads in lockstep, statement by
 * statement, with an active-thread mask for divergent ifs and loops whose trip count differs
 * by thread.  Scalars and "local"/"warp" buffers are per thread ("warp": a 32nd of the
 * logical size per lane, as the codegen declares it), wmma fragments per warp, shared
 * memory per CTA, global memory shared by all CTAs.  Warp-level builtins (ldmatrix, mma.sync,
 * wmma.*) follow the PTX ISA's per-lane fragment layouts; cp.async data lands when a
 * cp.async.wait_group of the issuing thread covers its group.
 *
 * Checks (each a "issue"): shared-memory races (a read of an address another thread wrote,
 * or a write of an address another thread read, in the same barrier interval), accesses to
 * data with a cp.async still in flight, cp.async never waited for, out-of-bounds accesses to
 * any buffer, __syncthreads under divergent control flow, warp-wide instructions executed by
 * part of a warp or with operands that differ across lanes, misaligned vector accesses.
 * docs/SIMULATOR.md lists what is modeled, with PTX ISA sections, and the limits.
 */
#ifndef TIR_SIM_H
#define TIR_SIM_H

#include "tir/interp.h"
#include "tir/transform.h"

/* CTAs to run for one kernel (kernel == NULL: every kernel).  Coordinates (x, y, z). */
typedef struct {
  const char *kernel;
  const int64_t (*cta)[3];
  int n;
} tir_SimCtaSel;

typedef struct {
  int check;                 /* 1: stop at the first issue, with the error set (kind SimulationError) */
  int max_issues;            /* issues kept in the report (0: 100); later ones are only counted */
  const tir_SimCtaSel *sel;  /* CTA selections (NULL / 0: every CTA of every kernel) */
  int n_sel;
  /* Optional oracle: expected[i] (a CPU array, or NULL) is compared with argument i after
   * the run (|got - want| <= atol + rtol * |want|; exact when both are 0, NaN equals NaN);
   * differences are an issue of kind "mismatch" naming the thread and statement that last
   * wrote each differing element. */
  tir_NDArray *const *expected;
  double rtol, atol;
  /* the target's compute capability (90 for sm_90a), for its shared memory a block
   * (tir_check_shared_memory); 0: unknown, held to the largest limit */
  int sm;
} tir_SimOptions;

typedef struct {
  char kind[24];            /* race, async_race, async_not_waited, out_of_bounds, divergent_barrier,
                               warp_divergence, misaligned, mismatch */
  char *message;            /* the whole explanation (malloc'd) */
  char *kernel;             /* malloc'd; NULL for mismatches */
  int64_t cta[3];           /* -1 when not about one CTA */
  int thread[3];            /* threadIdx of the thread involved, -1 when none */
  int other_thread[3];      /* the other access of a race, -1 when none */
  char *statement;          /* first line of the statement's text (malloc'd or NULL) */
  char *other_statement;
  char *buffer;             /* the buffer involved (malloc'd or NULL) */
  int64_t index, extent;    /* element index and the buffer's extent (out_of_bounds); -1 otherwise */
} tir_SimIssue;

typedef struct {
  int64_t kernels, ctas;
  int64_t statements;        /* statements executed (once per CTA step, all active threads together) */
  int64_t thread_statements; /* the same, summed over active threads */
  int64_t barriers, warp_ops, cp_async, shared_reads, shared_writes;
  int64_t tma_copies, mbarrier_waits; /* TMA loads issued; waits that had to complete a phase */
  /* warp-specialized kernels (docs/SIMULATOR.md "Divergent branches that wait on each other"): the
   * cooperative tasks made for divergent branches, the switches between them, named-barrier
   * instructions (bar.sync / bar.arrive) executed */
  int64_t tasks, task_switches, named_barriers;
  /* cp.async per warp instruction (the lanes of one warp executing one ptx_cp_async): requests,
   * the distinct 32-byte global sectors they read, and those sectors whose bytes land in more
   * than one 32-byte shared sector (buffers placed as on the GPU: global ones 256-aligned,
   * shared ones 128-aligned).  Padded rows split half the sectors of a tile; a chunk swizzle
   * keeps each sector's two 16-byte halves in one shared sector.  On the H200 split sectors cost
   * 19 L1 sectors per request instead of 16 and +48% L2 reads (bench/RESULTS.md, issue 12). */
  int64_t cp_async_requests, cp_async_sectors, cp_async_split;
  int64_t n_issues;          /* all issues found (issues[] keeps the first max_issues) */
  tir_SimIssue *issues;
  int n_kept;
  char **hints;              /* likely causes noticed on the way (e.g. an mma operand that is not a
                                16x16 tile of its shared buffer): appended to mismatch messages */
  int n_hints;
} tir_SimReport;

/* Simulates the kernels of `lowered` (the output of tir_lower) split against `host` (the
 * function whose parameters args match; `lowered` itself or the function it was lowered
 * from).  args are CPU arrays / scalars as for tir_interpret; arrays are updated in place.
 * Returns 0 when the run completed (issues, if check == 0, are in rep), -1 with the error
 * set on an issue in check mode (kind SimulationError, naming the kernel, statement and
 * thread, the kernel's IR with the statements marked) or on a program the simulator cannot
 * run (RuntimeError).  rep is filled in both cases; free it with tir_sim_report_free. */
int tir_simulate(const tir_PrimFunc *lowered, const tir_PrimFunc *host, const tir_InterpArg *args, int nargs,
                 const tir_SimOptions *opts, tir_SimReport *rep);
void tir_sim_report_free(tir_SimReport *rep);

#endif
