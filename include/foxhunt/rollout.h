/* rollout.h — one PPO experience collection (SPEC §5; design note "trajectory batch").
 *
 * A collection steps N episodes for L steps each and returns, episode-major (N, L),
 * everything the PPO update needs. Two collectors fill the same batch: the CPU one
 * here (fh_cpu_collector) and the GPU one (gpu_ppo_collector, src/cuda). Episode state
 * (portfolio, barriers, diversity window, random stream, position in the data)
 * persists across collections, so an episode can span several of them.
 *
 * CPU collection order (collect_rollouts): for each step, all N observations -> one
 * batched actor forward (sgemm) -> per episode softmax_sample + env_step (OpenMP);
 * after the L steps the critic runs as one large batched forward over all N*L states
 * (plus the final observations of truncated episodes and s_L), the curiosity model
 * likewise, and compute_gae_backward scans each row. The environment never reads the
 * critic or curiosity outputs, so this order gives the same numbers as the GPU
 * reference kernel's step-by-step order (up to float rounding). One difference in
 * episode state only: the reference kernel adds the curiosity bonus to the episode's
 * log_reward (env_add_bonus), the CPU collector and the fast path add it to the batch's
 * rewards alone; the trainer reads returns from the batch, never from log_reward. */
#ifndef FOXHUNT_ROLLOUT_H
#define FOXHUNT_ROLLOUT_H

#include <stdint.h>

#include "foxhunt/data.h"
#include "foxhunt/env.h"
#include "foxhunt/error.h"
#include "foxhunt/nn.h"

typedef struct {
    int n_episodes;       /* N */
    int n_steps;          /* L */
    float *states;        /* (N, L, 54) observation s_t acted on */
    int32_t *actions;     /* (N, L) */
    float *log_probs;     /* (N, L) log pi_old(a_t | s_t) */
    float *values;        /* (N, L) V(s_t) */
    float *rewards;       /* (N, L) SPEC §3.7, curiosity bonus included */
    int32_t *dones;       /* (N, L) 1 when the episode ended at step t (then reset) */
    int32_t *terminals;   /* (N, L) 1 when it ended by ruin */
    float *trunc_values;  /* (N, L) V(final observation) where truncated, else 0 */
    float *last_values;   /* (N) V(s_L): bootstrap of rows that end mid-episode */
    float *advantages;    /* (N, L) GAE */
    float *returns;       /* (N, L) advantages + values */
    float *exposures;     /* (N, L) e' after the trade (curiosity input) */
    int32_t *bars;        /* (N, L) bar index of s_t in the split (next bar = +1) */
    float *mem;           /* the only float allocation: N*L*(54+7) + N floats */
    int32_t *imem;        /* the only int allocation: N*L*4 ints */
} fh_trajectory_batch;

fh_status fh_trajectory_batch_alloc(fh_trajectory_batch *b, int n_episodes, int n_steps,
                                    fh_error *err);
void fh_trajectory_batch_free(fh_trajectory_batch *b);

/* The networks and coefficients a collection uses. */
typedef struct {
    const fh_mlp *actor;
    const fh_mlp *critic;
    const fh_mlp *curiosity;
    float gamma;
    float gae_lambda;
} fh_collect_params;

/* ---- the CPU collector ---- */
typedef struct {
    int n_episodes, n_steps;
    fh_env_config cfg;
    fh_env_market market;
    fh_episode_state *episodes; /* (N) persists across collections */
    fh_mlp_ws actor_ws;         /* batch N */
    fh_mlp_ws critic_ws;        /* batch FH_COLLECT_CHUNK */
    fh_mlp_ws curiosity_ws;     /* batch FH_COLLECT_CHUNK */
    float *obs;                 /* (N, 54) current observations */
    float *logits;              /* (N, 45) */
    float *final_states;        /* (final_capacity, 54) final observations of truncations */
    int64_t *final_index;       /* (final_capacity) batch index of each final observation */
    int64_t final_capacity;     /* N * (L / horizon + 2), the most truncations possible */
    float *chunk;               /* (FH_COLLECT_CHUNK, 54) gather buffer */
    float *chunk_out;           /* (FH_COLLECT_CHUNK, 32) */
} fh_cpu_collector;

/* Rows per batched critic/curiosity forward on the CPU. */
#define FH_COLLECT_CHUNK 4096

/* Seeds episode n with (seed, n) (env_episode_init) and resets it. */
fh_status fh_cpu_collector_init(fh_cpu_collector *c, int n_episodes, int n_steps,
                                const fh_env_config *cfg, const fh_market_view *market,
                                uint64_t seed, fh_error *err);
void fh_cpu_collector_free(fh_cpu_collector *c);
/* collect_rollouts: fills batch (N, L as at init). */
fh_status fh_cpu_collect_rollouts(fh_cpu_collector *c, const fh_collect_params *p,
                                  fh_trajectory_batch *batch, fh_error *err);

/* GAE over a whole batch with compute_gae_backward (the kernel's Phase B code). */
void fh_batch_compute_gae(fh_trajectory_batch *b, float gamma, float gae_lambda);

#endif
