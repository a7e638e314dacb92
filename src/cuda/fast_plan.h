/* fast_plan.h — every choice the fast collection path makes, in one pure function.
 *
 * From the device's properties, the problem (N, L, the market's bars, the horizon,
 * precision, free device memory) and the overrides (overrides.h), fh_fast_plan_make
 * returns a plan value: the rollout mapping and its launch shape, the actor table, the
 * critic's row chunks, first layer and pipeline, the curiosity and GAE launches, and
 * the NVRTC options the kernels are compiled with. The collector (fast_collect.c)
 * only carries it out; `foxhunt bench` and `foxhunt info --device cuda` print it; a
 * unit test checks it on the CPU. Pure C: no CUDA headers. */
#ifndef FOXHUNT_CUDA_FAST_PLAN_H
#define FOXHUNT_CUDA_FAST_PLAN_H

#include <stddef.h>
#include <stdio.h>

#include "cuda/overrides.h"
#include "foxhunt/error.h"

/* The rollout mappings ("fast", "fast/warp", "fast/block", "fast/lane"). */
typedef enum {
    FH_ROLLOUT_AUTO = 0,
    FH_ROLLOUT_WARP = 1,  /* one warp per episode or two (the pair kernel: and a book warp) */
    FH_ROLLOUT_BLOCK = 2, /* four warps per episode and a book warp */
    FH_ROLLOUT_LANE = 3   /* one lane per episode, 32 x 2 episodes per group of four warps */
} fh_rollout_mapping;

/* What the plan needs to know of the device. */
typedef struct {
    const char *name;
    int sm_count;
    size_t shared_mem_per_block_optin; /* bytes */
    size_t free_bytes;                 /* device memory free before the fast path's buffers */
} fh_plan_device;

/* The problem. */
typedef struct {
    int n_episodes, n_steps;
    int n_bars;      /* the market's */
    int horizon;     /* the environment's truncation horizon */
    int precision;        /* fh_precision of the critic's matmuls (0: fp32) */
    fh_rollout_mapping mapping; /* FH_ROLLOUT_AUTO, or forced by --kernel */
    int noisy_obs;   /* obs_noise > 0: a state's market features are not its bar's, so
                        neither first layer can be factored through the market */
} fh_plan_problem;

#define FH_PLAN_MAX_OPTIONS 8
#define FH_PLAN_OPTION_CHARS 40

typedef struct {
    fh_plan_device device;      /* the inputs, kept for printing */
    fh_plan_problem problem;
    /* rollout */
    fh_rollout_mapping mapping; /* never AUTO */
    int pair;                   /* the warp mapping's pair kernel (a book-keeping warp) */
    int warp_episodes;          /* episodes per warp (warp and pair kernels), else 1 */
    const char *kernel;         /* the rollout kernel's entry point */
    int episodes_per_block, threads_per_block, grid;
    size_t rollout_smem;        /* bytes of dynamic shared memory per block */
    int actor_table;            /* the actor's first layer from a per-bar table */
    int actor_table_split;      /* 1: even and odd inputs' sums apart (256 floats a bar) */
    size_t actor_table_bytes;
    /* critic */
    int k_slots;                /* truncation final-observation slots per episode */
    long long critic_rows;      /* N*L + N*K + N */
    long long chunk_rows;       /* rows per batched-critic chunk */
    int in_stride;              /* floats between critic input rows */
    int critic_factor;          /* the first layer factored through the market */
    int l0_slices;              /* its output columns in 1, 2 or 4 slices (L2-sized tables) */
    int pipeline;               /* the first layer on a side stream, chunk by chunk */
    long long pipeline_first_rows;
    int pipeline_growth;        /* each chunk this many times the last, up to chunk_rows */
    int n_chunks;               /* with the pipeline: its chunks (fh_critic_chunk_schedule) */
    /* curiosity and GAE */
    int curiosity_grid;
    int gae_warps, gae_staged, gae_grid;
    size_t gae_smem;
    int gemm_tune, gemm_tune_candidates;
    int rollout_clocks, block_shared_barriers;
    /* NVRTC options, in the order passed */
    int n_options;
    char options[FH_PLAN_MAX_OPTIONS][FH_PLAN_OPTION_CHARS];
} fh_fast_plan;

/* The plan for `prob` on `dev` with overrides `ov` (NULL: none). FH_ERR_INPUT when an
 * override cannot be carried out (naming it); FH_ERR_FAILURE when the device cannot run
 * the problem at all (shared memory). */
fh_status fh_fast_plan_make(const fh_plan_device *dev, const fh_plan_problem *prob,
                            const fh_gpu_overrides *ov, fh_fast_plan *plan, fh_error *err);
/* A few lines: each choice and why. */
void fh_fast_plan_print(FILE *f, const fh_fast_plan *plan);
const char *fh_rollout_mapping_name(fh_rollout_mapping m);

/* ---- the DQN/PQN collection (gpu_dqn_collector.c, dqn_experience_kernel.cu) ---- */

typedef enum {
    FH_DQN_PLAIN = 0,  /* the reference: one thread an episode runs the whole step */
    FH_DQN_STEPPED = 1 /* per step the Q forward as matmuls over all N, then one thread an
                          episode for the rest; the L steps one CUDA graph */
} fh_dqn_mapping;

typedef struct {
    fh_plan_device device; /* the inputs, kept for printing */
    int n_episodes, n_steps;
    int reference;         /* --kernel reference: the plain mapping whatever N */
    fh_dqn_mapping mapping;
    int threads_per_block, grid; /* the per-episode kernels' launch */
} fh_dqn_plan;

/* The DQN/PQN collection's plan for N x L on dev; reference (--kernel reference) forces
 * the plain mapping. FH_ERR_INPUT for a non-positive N, L or SM count. */
fh_status fh_dqn_plan_make(const fh_plan_device *dev, int n_episodes, int n_steps,
                           int reference, fh_dqn_plan *plan, fh_error *err);
void fh_dqn_plan_print(FILE *f, const fh_dqn_plan *plan);
const char *fh_dqn_mapping_name(fh_dqn_mapping m);

#endif
