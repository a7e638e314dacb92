/* gpu_ppo_collector.h — PPO experience collection on the GPU (issue 6; design note:
 * gpu_ppo_collector). Owns the module, the stream, the device market, episode states,
 * weights and output buffers. One collect = weight sync, the collection (the reference
 * kernel, or the fast path's CUDA graph: N x L steps, no host round trip per step), one
 * download of the batch. Episode states stay on the device across collections; a host
 * copy is refreshed after each collect. */
#ifndef FOXHUNT_GPU_PPO_COLLECTOR_H
#define FOXHUNT_GPU_PPO_COLLECTOR_H

#include "foxhunt/data.h"
#include "foxhunt/device.h"
#include "foxhunt/env.h"
#include "foxhunt/rollout.h"
#include "cuda/fast_plan.h"
#include "cuda/gpu_weights.h"
#include "cuda/kernels/update_args.h"
#include "cuda/overrides.h"

typedef struct fh_gpu_ppo_collector fh_gpu_ppo_collector;

/* Parts of a rollout step the cycle counters split (= FH_CLOCK_PARTS of the kernels). */
#define FH_ROLLOUT_CLOCK_PARTS 5

/* kernel: "reference" (one thread per episode) or "fast" (its rollout mapping chosen
 * from N and the device; "fast/block", "fast/warp" or "fast/lane" force one);
 * precision "fp32", "tf32" or "bf16" (the fast path's batched critic: bf16 copies of its
 * weights and rows, bf16 activations, precision.h; the reference kernel is fp32 always);
 * overrides: the fast path's (overrides.h), NULL for the user's, read from the
 * environment (fh_gpu_overrides_from_env). */
fh_status fh_gpu_ppo_collector_create(fh_gpu_ppo_collector **out, const fh_device_info *dev,
                                      int n_episodes, int n_steps, const fh_env_config *cfg,
                                      const fh_market_view *market, uint64_t seed,
                                      const char *kernel, const char *precision,
                                      const fh_gpu_overrides *overrides, fh_error *err);
/* The fast path's plan (fh_fast_plan_print shows it), or NULL for the reference kernel. */
const fh_fast_plan *fh_gpu_ppo_collector_plan(const fh_gpu_ppo_collector *c);
void fh_gpu_ppo_collector_destroy(fh_gpu_ppo_collector *c);

/* collect_rollouts on the GPU into batch (host). */
fh_status fh_gpu_ppo_collector_collect(fh_gpu_ppo_collector *c, const fh_collect_params *p,
                                       fh_trajectory_batch *batch, fh_error *err);
/* The same, the batch and the episode states left on the device for the GPU update
 * (fh_gpu_ppo_collector_device_batch) and its metrics (..._device_outputs): nothing is
 * downloaded, and the host copy of the episodes is stale until
 * fh_gpu_ppo_collector_download_episodes. */
fh_status fh_gpu_ppo_collector_collect_on_device(fh_gpu_ppo_collector *c,
                                                 const fh_collect_params *p,
                                                 fh_trajectory_batch *batch, fh_error *err);
/* From now on the collection reads its networks' params at w (the GPU update's), not
 * from p's host networks; w must outlive the collector. */
void fh_gpu_ppo_collector_use_weights(fh_gpu_ppo_collector *c, const fh_gpu_weights *w);
/* The episode states' host copy brought up to date (before a checkpoint). */
fh_status fh_gpu_ppo_collector_download_episodes(fh_gpu_ppo_collector *c, fh_error *err);
/* What the iteration's metrics read, on the device: rewards, actions, dones (N, L) and
 * the episode states (N). */
void fh_gpu_ppo_collector_device_outputs(const fh_gpu_ppo_collector *c, const float **rewards,
                                         const int **actions, const int **dones,
                                         const fh_episode_state **episodes);
/* The last collection's batch where it lies on the device, and the market's features. */
void fh_gpu_ppo_collector_device_batch(const fh_gpu_ppo_collector *c, fh_device_batch *b,
                                       const float **features);
/* Host copy of the episode states (N): current after each collect; edit it and call
 * upload_episodes to push it (resume). */
fh_episode_state *fh_gpu_ppo_collector_episodes(fh_gpu_ppo_collector *c);
fh_status fh_gpu_ppo_collector_upload_episodes(fh_gpu_ppo_collector *c, fh_error *err);

/* Fills every device output buffer with a NaN bit pattern (tests: a buffer the kernel
 * fails to write shows up). */
fh_status fh_gpu_ppo_collector_poison(fh_gpu_ppo_collector *c, fh_error *err);

typedef struct {
    float rollout_ms;   /* the whole collection on the device (kernels, GEMMs), events */
    float total_ms;     /* weight sync + collection + download of the batch */
    /* fast path with profiling on (fh_gpu_ppo_collector_set_profile): the phases */
    float phase_rollout_ms;  /* actor + sampling + env over L steps */
    float phase_networks_ms; /* batched critic + curiosity */
    float phase_gae_ms;      /* truncation values + GAE */
    /* with the override rollout_clocks, after a profiled collect: mean cycles per step
     * on an episode's first lane in observe, actor, sample, env, tail (FH_CLOCK_*);
     * rollout_clock_parts is 0 otherwise */
    int rollout_clock_parts;
    double rollout_cycles[FH_ROLLOUT_CLOCK_PARTS];
    int from_cache;     /* module loaded from the disk cache */
    double compile_seconds;
} fh_gpu_collect_timing;

/* profile = 1: the fast path runs eagerly (not as one graph) with events between its
 * phases, so fh_gpu_ppo_collector_timing reports them. */
void fh_gpu_ppo_collector_set_profile(fh_gpu_ppo_collector *c, int profile);
/* Timing of the last collect. */
fh_gpu_collect_timing fh_gpu_ppo_collector_timing(const fh_gpu_ppo_collector *c);

#endif
