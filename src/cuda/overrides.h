/* overrides.h — the GPU path's run-time overrides: one table (overrides.c), read from
 * the process environment in one place, listed by `foxhunt info`.
 *
 * Each entry forces a choice the fast path's plan (fast_plan.h) otherwise makes from the
 * device and the problem, for a user who needs to (memory, a racecheck build) or for
 * the parity tests, which pass them as values (fh_gpu_overrides_set), never through the
 * environment. Pure C: no CUDA headers, built without the toolkit too. */
#ifndef FOXHUNT_CUDA_OVERRIDES_H
#define FOXHUNT_CUDA_OVERRIDES_H

#include <stddef.h>
#include <stdio.h>

#include "foxhunt/error.h"

#define FH_AUTO (-1) /* an override left to the plan */

typedef struct {
    int actor_table;         /* the actor's first layer factored through the market: 0|1 */
    int critic_factor;       /* the critic's first layer factored through the market: 0|1 */
    int critic_pipeline;     /* the critic's chunk pipeline on a second stream: 0|1 */
    int pipeline_first_rows; /* rows of the pipeline's first chunk (FH_AUTO: the plan's) */
    int warp_book;           /* warp mapping with a book-keeping warp (pair kernel): 0|1 */
    int warp_episodes;       /* episodes per warp in the warp and pair kernels: 1|2 */
    int gemm_tune;           /* time cublasLt's candidates per matmul shape: 0|1 */
    int rollout_clocks;      /* compile the rollout's cycle counters in: 0|1 */
    int block_shared_barriers; /* the block mapping's racecheck build: 0|1 */
    int update_pdl;          /* the updates' programmatic dependent launch: 0 (off) | auto */
} fh_gpu_overrides;

/* Every override FH_AUTO (the plan decides; gemm_tune on, the diagnostics off). */
void fh_gpu_overrides_default(fh_gpu_overrides *o);
/* Sets one override by its table name ("warp_book") or its environment name
 * ("FOXHUNT_WARP_BOOK"); "auto" restores FH_AUTO. FH_ERR_INPUT naming the setting, the
 * value and the accepted range when either is unknown or out of range. */
fh_status fh_gpu_overrides_set(fh_gpu_overrides *o, const char *name, const char *value,
                               fh_error *err);
/* "name=value" (fh_gpu_overrides_set). */
fh_status fh_gpu_overrides_parse(fh_gpu_overrides *o, const char *assignment, fh_error *err);
/* The defaults, then every FOXHUNT_* variable of the table that is set and non-empty:
 * the only place the process environment is read for them. */
fh_status fh_gpu_overrides_from_env(fh_gpu_overrides *o, fh_error *err);
/* *out = *given, or the environment's (fh_gpu_overrides_from_env) when given is NULL: the
 * product's path passes NULL, tests their own values. */
fh_status fh_gpu_overrides_or_env(const fh_gpu_overrides *given, fh_gpu_overrides *out,
                                  fh_error *err);
/* "name=value ..." of the overrides that are not FH_AUTO (defaults not listed), or
 * "none". */
void fh_gpu_overrides_describe(const fh_gpu_overrides *o, char *buf, size_t n);
/* The table: each environment name, its values and a line of help. */
void fh_gpu_overrides_print_table(FILE *f);

/* The kernel cache's folder: $FOXHUNT_CACHE_DIR, else $XDG_CACHE_HOME/foxhunt, else
 * $HOME/.cache/foxhunt (created as needed). 0 when none can be made. */
int fh_kernel_cache_dir(char *out, size_t n);

#endif
