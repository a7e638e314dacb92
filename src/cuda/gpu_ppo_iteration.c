/* gpu_ppo_iteration.c — the PPO update's per-iteration side (gpu_ppo_update.h): the
 * iteration's metrics summed on the device from the collection (iteration_metrics_kernel,
 * the reference is rl/iteration_sums.c), and a host batch uploaded for the update (the
 * CPU collection with the GPU update). Split from gpu_ppo_update.c, which keeps the
 * update itself. */
#include "cuda/gpu_ppo_update_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- the iteration's metrics ---- */

static void free_metrics(fh_gpu_ppo_update *u)
{
    void *bufs[] = {u->episode_return, u->totals, u->metric_partials, u->episode_length,
                    u->int_totals, u->metric_counter, u->sums};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        cudaFree(bufs[i]);
    cudaFreeHost(u->h_sums);
    u->episode_return = u->totals = u->metric_partials = NULL;
    u->episode_length = NULL;
    u->int_totals = NULL;
    u->metric_counter = NULL;
    u->sums = u->h_sums = NULL;
    u->n_episodes = 0;
}

fh_status fh_gpu_ppo_update_set_episodes(fh_gpu_ppo_update *u, const double *totals,
                                         const long long *int_totals,
                                         const double *episode_return,
                                         const int32_t *episode_length, int n_episodes,
                                         fh_error *err)
{
    size_t N = (size_t)n_episodes;
    if (n_episodes < 1)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: %d episodes", __FILE__, __LINE__,
                            n_episodes);
    if (u->n_episodes != n_episodes) {
        free_metrics(u);
        size_t blocks = (N + METRICS_THREADS - 1) / METRICS_THREADS;
        CUDA_CHECK(cudaMalloc((void **)&u->episode_return, N * sizeof(double)), err);
        CUDA_CHECK(cudaMalloc((void **)&u->episode_length, N * sizeof(int)), err);
        CUDA_CHECK(cudaMalloc((void **)&u->totals, N * FH_EPISODE_TOTALS * sizeof(double)), err);
        CUDA_CHECK(cudaMalloc((void **)&u->int_totals,
                              N * (1 + FH_BARRIER_N_KINDS) * sizeof(long long)), err);
        CUDA_CHECK(cudaMalloc((void **)&u->metric_partials,
                              blocks * FH_METRIC_SUMS * sizeof(double)), err);
        CUDA_CHECK(cudaMalloc((void **)&u->metric_counter, sizeof(unsigned)), err);
        CUDA_CHECK(cudaMemset(u->metric_counter, 0, sizeof(unsigned)), err);
        CUDA_CHECK(cudaMalloc((void **)&u->sums, sizeof *u->sums), err);
        CUDA_CHECK(cudaMallocHost((void **)&u->h_sums, sizeof *u->h_sums), err);
        u->n_episodes = n_episodes;
    }
    _Static_assert(sizeof(int32_t) == sizeof(int), "episode lengths are int on the device");
    struct { void *dst; const void *src; size_t bytes; } copies[] = {
        {u->totals, totals, N * FH_EPISODE_TOTALS * sizeof(double)},
        {u->int_totals, int_totals, N * (1 + FH_BARRIER_N_KINDS) * sizeof(long long)},
        {u->episode_return, episode_return, N * sizeof(double)},
        {u->episode_length, episode_length, N * sizeof(int)}};
    for (size_t i = 0; i < sizeof copies / sizeof copies[0]; i++)
        CUDA_CHECK(cudaMemcpy(copies[i].dst, copies[i].src, copies[i].bytes,
                              cudaMemcpyHostToDevice), err);
    return FH_OK;
fail:
    free_metrics(u);
    return err->status;
}

fh_status fh_gpu_ppo_update_get_episode_stats(fh_gpu_ppo_update *u, double *episode_return,
                                              int32_t *episode_length, fh_error *err)
{
    size_t N = (size_t)u->n_episodes;
    if (N == 0)
        return FH_OK;
    CUDA_CHECK(cudaMemcpy(episode_return, u->episode_return, N * sizeof(double),
                          cudaMemcpyDeviceToHost), err);
    CUDA_CHECK(cudaMemcpy(episode_length, u->episode_length, N * sizeof(int),
                          cudaMemcpyDeviceToHost), err);
    return FH_OK;
fail:
    return err->status;
}

fh_status fh_gpu_ppo_update_iteration_sums(fh_gpu_ppo_update *u, const float *rewards,
                                           const int *actions, const int *dones,
                                           const fh_episode_state *episodes, int n_steps,
                                           fh_iteration_sums *out, fh_error *err)
{
    if (u->n_episodes < 1)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: the episodes were never set",
                            __FILE__, __LINE__);
    fh_iteration_metrics_args a = {
        .rewards = rewards, .actions = actions, .dones = dones, .episodes = episodes,
        .n_episodes = u->n_episodes, .n_steps = n_steps, .episode_return = u->episode_return,
        .episode_length = u->episode_length, .totals = u->totals, .int_totals = u->int_totals,
        .partials = u->metric_partials, .counter = u->metric_counter, .out = u->sums};
    unsigned grid = (unsigned)((u->n_episodes + METRICS_THREADS - 1) / METRICS_THREADS);
    CUDA_CHECK(cudaMemsetAsync(u->sums, 0, sizeof *u->sums, u->eng.stream), err);
    fh_status st = fh_update_engine_launch(&u->eng, K_METRICS, grid, METRICS_THREADS, &a, err);
    if (st != FH_OK)
        return st;
    CUDA_CHECK(cudaMemcpyAsync(u->h_sums, u->sums, sizeof *u->sums, cudaMemcpyDeviceToHost,
                               u->eng.stream), err);
    CUDA_CHECK(cudaStreamSynchronize(u->eng.stream), err);
    *out = *u->h_sums;
    return FH_OK;
fail:
    return err->status;
}

/* ---- a host batch on the device ---- */

void fh_gpu_batch_free(fh_gpu_batch *g)
{
    cudaFree(g->mem);
    memset(g, 0, sizeof *g);
}

fh_status fh_gpu_batch_upload(fh_gpu_batch *g, const fh_trajectory_batch *b,
                              const fh_env_market *market, fh_error *err)
{
    memset(g, 0, sizeof *g);
    size_t n = (size_t)b->n_episodes * b->n_steps;
    size_t features = (size_t)market->n_bars * FH_N_MARKET_FEATURES;
    /* one allocation: states, then 7 columns of n, then the features (all 4-byte) */
    size_t floats = n * FH_STATE_DIM + 7 * n + features;
    CUDA_CHECK(cudaMalloc(&g->mem, floats * sizeof(float)), err);
    float *f = g->mem;
    struct { float *dst; const void *src; size_t count; } parts[] = {
        {f, b->states, n * FH_STATE_DIM},
        {f + n * FH_STATE_DIM, b->actions, n},
        {f + n * (FH_STATE_DIM + 1), b->log_probs, n},
        {f + n * (FH_STATE_DIM + 2), b->values, n},
        {f + n * (FH_STATE_DIM + 3), b->advantages, n},
        {f + n * (FH_STATE_DIM + 4), b->returns, n},
        {f + n * (FH_STATE_DIM + 5), b->exposures, n},
        {f + n * (FH_STATE_DIM + 6), b->bars, n},
        {f + n * (FH_STATE_DIM + 7), market->features, features}};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        CUDA_CHECK(cudaMemcpy(parts[i].dst, parts[i].src, parts[i].count * sizeof(float),
                              cudaMemcpyHostToDevice), err);
    g->view = (fh_device_batch){
        .states = f, .states_pitch = FH_STATE_DIM, .actions = (const int *)parts[1].dst,
        .log_probs = parts[2].dst, .values = parts[3].dst, .advantages = parts[4].dst,
        .returns = parts[5].dst, .exposures = parts[6].dst, .bars = (const int *)parts[7].dst,
        .n = (long long)n};
    g->features = parts[8].dst;
    return FH_OK;
fail:
    fh_gpu_batch_free(g);
    return err->status;
}
