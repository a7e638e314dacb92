/* gpu_dqn_collector.h — the DQN/PQN collection on the GPU (issue 18): N x L
 * epsilon-greedy transitions per collection, with no host round trip per timestep; the
 * episodes live on the device between collections. Two mappings
 * (dqn_experience_kernel.cu; the plan, fast_plan.h's fh_dqn_plan_make, picks one):
 *  - plain, the reference: one launch of dqn_experience_kernel, one thread an episode.
 *    Episodes start as the CPU collector's (env_episode_init, the same seeds), and the
 *    kernel is compiled with --fmad=false, so a collection equals fh_dqn_collect_cpu's
 *    for the same weights (tests/dqn/test_dqn_parity.c);
 *  - stepped (--kernel fast): per step the Q forward over all N as fp32 matmuls, then
 *    dqn_step_kernel; the same environment code, but the Q-values' sums run in cuBLAS's
 *    order, so an action may differ from the plain mapping's where two Q-values tie to
 *    within rounding (tests/cuda/test_dqn_stepped.c measures how close they are).
 * Available when FH_HAVE_CUDA. */
#ifndef FOXHUNT_GPU_DQN_COLLECTOR_H
#define FOXHUNT_GPU_DQN_COLLECTOR_H

#include "cuda/fast_plan.h"
#include "foxhunt/data.h"
#include "foxhunt/device.h"
#include "foxhunt/dqn.h"
#include "foxhunt/env.h"

typedef struct fh_gpu_dqn_collector fh_gpu_dqn_collector;

/* A collector with kernel "fast" (the plan's mapping) or "reference" (plain). */
fh_status fh_gpu_dqn_collector_create_kernel(fh_gpu_dqn_collector **out,
                                             const fh_device_info *dev, int n_episodes,
                                             int n_steps, const fh_env_config *cfg,
                                             const fh_market_view *market, uint64_t seed,
                                             int layer_norm, const char *kernel, fh_error *err);
/* fh_gpu_dqn_collector_create_kernel with "reference": the plain mapping. */
fh_status fh_gpu_dqn_collector_create(fh_gpu_dqn_collector **out, const fh_device_info *dev,
                                      int n_episodes, int n_steps, const fh_env_config *cfg,
                                      const fh_market_view *market, uint64_t seed,
                                      int layer_norm, fh_error *err);
/* Uploads the weights (qnet: n_qnet floats, FH_NET_QNET's or FH_NET_PQN's layout;
 * curiosity: FH_CURIOSITY_N_PARAMS), collects, and downloads the transitions into out
 * (N x L). */
fh_status fh_gpu_dqn_collect(fh_gpu_dqn_collector *c, const float *qnet, size_t n_qnet,
                             const float *curiosity, float epsilon, fh_transition_batch *out,
                             fh_error *err);
/* The last collection where it lies on the device (N x L, fh_transition_batch's
 * layout), for the update on the GPU (gpu_q_update.h) to read without a copy. Valid
 * until the next collection or the collector's destruction. */
typedef struct {
    int n_episodes, n_steps;
    const float *states;             /* (N*L, 54) */
    const float *next_states;        /* (N*L, 54) */
    const int *actions;              /* (N*L) */
    const float *rewards;            /* (N*L) */
    const unsigned char *terminal;   /* (N*L) */
    const unsigned char *truncated;  /* (N*L) */
    const float *q_taken, *exposures; /* (N*L) */
    const int *bars;                 /* (N*L) */
} fh_dqn_device_batch;

fh_dqn_device_batch fh_gpu_dqn_collector_batch(const fh_gpu_dqn_collector *c);
/* fh_gpu_dqn_collect with the Q-network's params already on the device (d_qnet: the
 * update's, fh_gpu_q_update_params; read in place, so the update and the collection
 * share one copy of the weights); out NULL leaves the transitions on the device only
 * (fh_gpu_dqn_collector_batch), else they are also downloaded into out. Returns when
 * the collection is done. */
fh_status fh_gpu_dqn_collect_device(fh_gpu_dqn_collector *c, const float *d_qnet,
                                    const float *curiosity, float epsilon,
                                    fh_transition_batch *out, fh_error *err);
/* The device's episode states, downloaded into episodes (N). */
fh_status fh_gpu_dqn_collector_episodes(fh_gpu_dqn_collector *c, fh_episode_state *episodes,
                                        fh_error *err);
/* Uploads episodes (N, the host's validated states: a resume) over the device's, so the
 * next collection continues them. */
fh_status fh_gpu_dqn_collector_set_episodes(fh_gpu_dqn_collector *c,
                                            const fh_episode_state *episodes, fh_error *err);
void fh_gpu_dqn_collector_destroy(fh_gpu_dqn_collector *c);
/* The plan the collector carries out (fh_dqn_plan_print prints it). */
const fh_dqn_plan *fh_gpu_dqn_collector_plan(const fh_gpu_dqn_collector *c);

/* fh_gpu_dqn_collect_device with the curiosity model's params on the device too
 * (d_curiosity: FH_CURIOSITY_N_PARAMS floats, fh_gpu_curiosity_params), both read in
 * place: nothing goes up. out NULL leaves the transitions on the device only. Returns
 * when the collection is done, so the updates may then write either network. */
fh_status fh_gpu_dqn_collect_resident(fh_gpu_dqn_collector *c, const float *d_qnet,
                                      const float *d_curiosity, float epsilon,
                                      fh_transition_batch *out, fh_error *err);
/* The training split's market features on the device, (n_bars, 51), as the collector
 * uploaded them (the curiosity fit's targets: gpu_curiosity.h). Stable for the
 * collector's life. */
const float *fh_gpu_dqn_collector_market_features(const fh_gpu_dqn_collector *c);
/* The last collection's actions, rewards, terminal and truncated flags into out (the
 * iteration's metrics: ~10 bytes a transition, the rest stays on the device). */
fh_status fh_gpu_dqn_collector_download_summary(fh_gpu_dqn_collector *c,
                                                fh_transition_batch *out, fh_error *err);

#endif
