/* gpu_ppo_update.h — the PPO update and the curiosity fit on the GPU (issue 17; design
 * note: update_mlp). The networks live on the device between updates (params, grads,
 * Adam moments in nn.h's layout, actor and critic in one buffer so that clipping and
 * Adam are one pass); the collector reads their params in place; the host sees only a
 * summary of each update (a few hundred bytes) unless it asks for the record.
 *
 * Semantics are the CPU update's (ppo_update.c): the same minibatch order for the same
 * update stream (minibatch_order.cuh), per-minibatch advantage normalisation, clipped
 * surrogate and value losses, entropy bonus, global gradient-norm clipping, Adam with
 * bias correction, target-KL early stop after an epoch, the curiosity model's MSE fit
 * with its own Adam, and the same failures (a loss or gradient that is not finite stops
 * the update before its step). Sums run in other orders and the matmuls are cuBLAS's,
 * so results agree within the tolerances of tests/cuda/test_gpu_update.c; on one GPU
 * they are bit-identical run to run (fixed reduction trees, fixed cuBLAS algorithms). */
#ifndef FOXHUNT_GPU_PPO_UPDATE_H
#define FOXHUNT_GPU_PPO_UPDATE_H

#include <stddef.h>

#include <cuda_runtime_api.h>

#include "cuda/gpu_update_settings.h"
#include "cuda/gpu_weights.h"
#include "cuda/kernels/update_args.h"
#include "cuda/overrides.h"
#include "cuda/update_plan.h"
#include "foxhunt/device.h"
#include "foxhunt/env.h"
#include "foxhunt/ppo.h"
#include "foxhunt/rollout.h"

typedef struct fh_gpu_ppo_update fh_gpu_ppo_update;

/* For updates of s (minibatch, epochs, losses' coefficients) over batches of
 * batch_size samples; precision: the matmuls' (precision.h); overrides: NULL (the
 * product: the environment's, overrides.h) or the caller's (tests; update_pdl). */
fh_status fh_gpu_ppo_update_create(fh_gpu_ppo_update **out, const fh_device_info *dev,
                                   fh_gpu_ppo_settings s, long long batch_size, int precision,
                                   const fh_gpu_overrides *overrides, fh_error *err);
void fh_gpu_ppo_update_destroy(fh_gpu_ppo_update *u);
const fh_update_plan *fh_gpu_ppo_update_plan(const fh_gpu_ppo_update *u);

/* The three networks' params, Adam moments and steps, host -> device (start, resume)
 * and device -> host (checkpoints, evaluation, the end of a run; the host copies are
 * then checked for NaN and infinities). */
fh_status fh_gpu_ppo_update_upload(fh_gpu_ppo_update *u, const fh_mlp *actor,
                                   const fh_mlp *critic, const fh_mlp *curiosity, fh_error *err);
fh_status fh_gpu_ppo_update_download(fh_gpu_ppo_update *u, fh_mlp *actor, fh_mlp *critic,
                                     fh_mlp *curiosity, fh_error *err);
/* Where the params live on the device (for the collector). */
fh_gpu_weights fh_gpu_ppo_update_weights(const fh_gpu_ppo_update *u);
/* The gradients of the last step (params' layout: actor, critic, curiosity), host
 * copies (tests: the first step's gradient against the CPU's). */
fh_status fh_gpu_ppo_update_download_grads(fh_gpu_ppo_update *u, float *actor, float *critic,
                                           float *curiosity, fh_error *err);

/* One update on the device batch b (features: the market's (n_bars, 51) on the device,
 * for the curiosity targets). lr, ent_coef: this iteration's (the device state carries
 * them to the captured graphs' kernels); rng: the update's stream (advanced
 * as the CPU update advances it). max_steps > 0 stops after that many PPO steps and
 * skips the curiosity fit (tests); 0 runs the whole update. trace: NULL, or filled as
 * fh_ppo_update fills it. */
fh_status fh_gpu_ppo_update_run(fh_gpu_ppo_update *u, fh_ppo_stats *stats,
                                const fh_device_batch *b, const float *features, double lr,
                                double ent_coef, fh_rng *rng, int max_steps,
                                fh_ppo_trace *trace, fh_error *err);
/* The iteration's metrics on the device (iteration_metrics_kernel): the episodes'
 * running returns and lengths and their lifetime totals at the last call live here.
 * set_episodes: from the host (start, resume): the totals as fh_episode_totals_of
 * (src/rl/iteration_sums.h) computes them;
 * get_episode_stats: the running returns and lengths back (checkpoints);
 * iteration_sums: the sums of the collection whose rewards, actions, dones (N, L) and
 * episodes (N) lie at the given device pointers (~500 bytes come back). */
fh_status fh_gpu_ppo_update_set_episodes(fh_gpu_ppo_update *u, const double *totals,
                                         const long long *int_totals,
                                         const double *episode_return,
                                         const int32_t *episode_length, int n_episodes,
                                         fh_error *err);
fh_status fh_gpu_ppo_update_get_episode_stats(fh_gpu_ppo_update *u, double *episode_return,
                                              int32_t *episode_length, fh_error *err);
fh_status fh_gpu_ppo_update_iteration_sums(fh_gpu_ppo_update *u, const float *rewards,
                                           const int *actions, const int *dones,
                                           const fh_episode_state *episodes, int n_steps,
                                           fh_iteration_sums *out, fh_error *err);

/* Device milliseconds of the last run (events around it). */
float fh_gpu_ppo_update_last_ms(const fh_gpu_ppo_update *u);

/* ---- data parallelism (issue 22, docs/SCALING.md) ----
 * How the update combines the ranks of a data-parallel run: a table of reductions over
 * the ranks (src/dist/dist.c makes one over NCCL), enqueued on the update's stream,
 * inside its CUDA graphs when `graphs`. With one set, each PPO step all-reduces its
 * advantage sums (then adv_finish_kernel) and, after the backward pass, its loss sums
 * and its gradients (sum; average: every rank's share of the minibatch is equal) in one
 * group, then ppo_loss_finish_kernel and the optimiser; each curiosity step averages its
 * gradients; an update all-reduces the explained variance's sums and averages the
 * curiosity loss. So K ranks of N/K episodes each take the steps one GPU takes with N
 * episodes, within the all-reduce's rounding, and the same decisions (target KL,
 * failures) on every rank. None set: one process, today's path, bit for bit. */
typedef enum {
    FH_REDUCE_F32, FH_REDUCE_F64, FH_REDUCE_I32, FH_REDUCE_I64, FH_REDUCE_U64, FH_REDUCE_U8
} fh_reduce_type;
typedef enum { FH_REDUCE_SUM, FH_REDUCE_AVG, FH_REDUCE_MIN, FH_REDUCE_MAX } fh_reduce_op;

typedef struct {
    void *ctx;
    int world;
    int graphs; /* 1: the reductions are captured into the update's graphs; 0: its steps
                   are launched one by one (no capture), with the reductions timed */
    /* in place over count elements of buf, on stream */
    fh_status (*allreduce)(void *ctx, void *buf, size_t count, fh_reduce_type type,
                           fh_reduce_op op, cudaStream_t stream, fh_error *err);
    fh_status (*group)(void *ctx, int begin, fh_error *err); /* NCCL's group start/end */
    fh_status (*finish)(void *ctx, fh_error *err); /* the run's last reduction is done */
    void (*release)(void *ctx);                    /* ctx freed (the update owns it) */
} fh_update_reducer;

/* u reduces over r's ranks from now on. u owns r->ctx from this call on, also when it
 * fails (released at destroy). Allocates the sums' buffer, warms the communicator up
 * with one eager reduction of each kind a step holds (NCCL connects lazily, which
 * must not happen inside a capture) and drops any graphs, so the next update captures
 * them with the reductions. */
fh_status fh_gpu_ppo_update_set_reducer(fh_gpu_ppo_update *u, const fh_update_reducer *r,
                                        fh_error *err);
/* The reducer set, or NULL. */
const fh_update_reducer *fh_gpu_ppo_update_reducer(const fh_gpu_ppo_update *u);
/* The run's reductions are over: the update's graphs (which hold them) dropped, then
 * the reducer's finish (the communicator destroyed, on every rank at once). Later
 * updates fail. */
fh_status fh_gpu_ppo_update_finish_reducer(fh_gpu_ppo_update *u, fh_error *err);
/* Device milliseconds the last update spent in its reductions (events around each,
 * recorded when the reducer runs without graphs; 0 otherwise). */
float fh_gpu_ppo_update_reduce_ms(const fh_gpu_ppo_update *u);

/* A host batch copied to the device (tests, `foxhunt update --device cuda`). */
typedef struct {
    fh_device_batch view;
    float *features; /* the market's, on the device */
    void *mem;
} fh_gpu_batch;

fh_status fh_gpu_batch_upload(fh_gpu_batch *g, const fh_trajectory_batch *b,
                              const fh_env_market *market, fh_error *err);
void fh_gpu_batch_free(fh_gpu_batch *g);

#endif
