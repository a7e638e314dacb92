/* gpu_ppo_collector.c — see gpu_ppo_collector.h. */
#include "cuda/gpu_ppo_collector.h"

#include <stdlib.h>
#include <string.h>

#include "cuda/gpu_market.h"
#include "cuda/gpu_ppo_collector_internal.h"
#include "foxhunt/precision.h"

#define KERNEL_FILE "ppo_experience_kernel.cu"
#define REFERENCE_ENTRY "ppo_full_experience_kernel"
/* One thread per episode; small blocks spread the episodes over more SMs. */
#define REFERENCE_BLOCK 32


static void free_outputs(fh_ppo_outputs *o)
{
    void *ptrs[] = {o->states, o->actions, o->log_probs, o->values, o->rewards, o->dones,
                    o->terminals, o->trunc_values, o->advantages, o->returns, o->exposures,
                    o->bars, o->last_values};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++)
        cudaFree(ptrs[i]);
    memset(o, 0, sizeof *o);
}

void fh_gpu_ppo_collector_destroy(fh_gpu_ppo_collector *c)
{
    if (!c)
        return;
    if (c->use_fast) { /* these alias the fast path's buffers */
        c->out.states = NULL;
        c->out.values = NULL;
        c->out.last_values = NULL;
    }
    fh_fast_path_free(c);
    free_outputs(&c->out);
    for (int k = 0; k < 2; k++)
        if (c->pinned[k])
            cudaHostUnregister(c->pinned[k]);
    if (!c->external_weights)
        fh_gpu_weights_free(&c->weights);
    cudaFree(c->d_features);
    cudaFree(c->d_close);
    cudaFree(c->d_sigma);
    cudaFree(c->d_episodes);
    free(c->h_episodes);
    fh_cuda_module_free(&c->module);
    if (c->ev_begin) cudaEventDestroy(c->ev_begin);
    if (c->ev_kernel_begin) cudaEventDestroy(c->ev_kernel_begin);
    if (c->ev_kernel_end) cudaEventDestroy(c->ev_kernel_end);
    if (c->ev_end) cudaEventDestroy(c->ev_end);
    if (c->stream) cudaStreamDestroy(c->stream);
    free(c);
}

fh_status fh_gpu_ppo_collector_create(fh_gpu_ppo_collector **out, const fh_device_info *dev,
                                      int n_episodes, int n_steps, const fh_env_config *cfg,
                                      const fh_market_view *market, uint64_t seed,
                                      const char *kernel, const char *precision,
                                      const fh_gpu_overrides *overrides, fh_error *err)
{
    *out = NULL;
    fh_rollout_mapping mapping = FH_ROLLOUT_AUTO;
    if (strcmp(kernel, "fast/warp") == 0)
        mapping = FH_ROLLOUT_WARP;
    else if (strcmp(kernel, "fast/block") == 0)
        mapping = FH_ROLLOUT_BLOCK;
    else if (strcmp(kernel, "fast/lane") == 0)
        mapping = FH_ROLLOUT_LANE;
    else if (strcmp(kernel, "reference") != 0 && strcmp(kernel, "fast") != 0)
        return fh_error_set(err, FH_ERR_INPUT, "--kernel %s: expected fast, reference, fast/warp, "
                            "fast/block or fast/lane", kernel);
    if (fh_precision_parse(precision) < 0)
        return fh_error_set(err, FH_ERR_INPUT, "--precision %s: expected fp32, tf32 or bf16",
                            precision);
    fh_gpu_overrides ov; /* NULL: the product's path, the user's settings */
    fh_status ost = fh_gpu_overrides_or_env(overrides, &ov, err);
    if (ost != FH_OK)
        return ost;
    fh_gpu_ppo_collector *c = calloc(1, sizeof *c);
    if (!c)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
    c->overrides = ov;
    c->dev = *dev;
    c->n_episodes = n_episodes;
    c->n_steps = n_steps;
    c->cfg = *cfg;
    c->cfg.noise_seed = seed; /* obs_noise's key, as the CPU collector's */
    c->use_fast = strncmp(kernel, "fast", 4) == 0;
    c->rollout_mapping = mapping;
    c->precision = fh_precision_parse(precision);
    size_t nl = (size_t)n_episodes * (size_t)n_steps;
    fh_env_market host_market = fh_env_market_from_view(market);
    fh_status st = fh_env_market_validate(&host_market, err);
    if (st != FH_OK)
        goto fail_status;

    CUDA_CHECK(cudaSetDevice(dev->device_index), err);
    CUDA_CHECK(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking), err);
    CUDA_CHECK(cudaEventCreate(&c->ev_begin), err);
    CUDA_CHECK(cudaEventCreate(&c->ev_kernel_begin), err);
    CUDA_CHECK(cudaEventCreate(&c->ev_kernel_end), err);
    CUDA_CHECK(cudaEventCreate(&c->ev_end), err);

    /* The reference kernel is compiled with --fmad=false: no fused multiply-adds, so its
     * sums round like the CPU's and sampled actions agree (SPEC §9). */
    const char *options[] = {"--fmad=false", "-lineinfo"};
    st = fh_cuda_module_load(&c->module, dev, KERNEL_FILE, options, 2, err);
    if (st != FH_OK)
        goto fail_status;
    c->timing.from_cache = c->module.from_cache;
    c->timing.compile_seconds = c->module.compile_seconds;
    if ((st = fh_cuda_module_kernel(&c->module, REFERENCE_ENTRY, &c->reference, err)) != FH_OK)
        goto fail_status;

    /* the market split, once */
    if ((st = fh_gpu_market_upload(&c->d_features, &c->d_close, &c->d_sigma, &c->d_market,
                                   market, err)) != FH_OK)
        goto fail_status;

    /* episodes start exactly as the CPU collector's (same seeds, same code) */
    c->h_episodes = calloc((size_t)n_episodes, sizeof *c->h_episodes);
    if (!c->h_episodes) {
        st = fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
        goto fail_status;
    }
    for (int n = 0; n < n_episodes; n++)
        env_episode_init(&c->cfg, &host_market, &c->h_episodes[n], seed, (unsigned long long)n);
    CUDA_CHECK(cudaMalloc((void **)&c->d_episodes, (size_t)n_episodes * sizeof(fh_episode_state)), err);
    CUDA_CHECK(cudaMemcpy(c->d_episodes, c->h_episodes, (size_t)n_episodes * sizeof(fh_episode_state),
                          cudaMemcpyHostToDevice), err);

    if ((st = fh_gpu_weights_alloc(&c->weights, err)) != FH_OK)
        goto fail_status;
    fh_ppo_outputs *o = &c->out;
    if (!c->use_fast) {
        CUDA_CHECK(cudaMalloc((void **)&o->states, nl * FH_STATE_DIM * sizeof(float)), err);
        c->states_pitch = FH_STATE_DIM;
        CUDA_CHECK(cudaMalloc((void **)&o->values, nl * sizeof(float)), err);
        CUDA_CHECK(cudaMalloc((void **)&o->last_values, (size_t)n_episodes * sizeof(float)), err);
    }
    CUDA_CHECK(cudaMalloc((void **)&o->actions, nl * sizeof(int)), err);
    CUDA_CHECK(cudaMalloc((void **)&o->log_probs, nl * sizeof(float)), err);
    CUDA_CHECK(cudaMalloc((void **)&o->rewards, nl * sizeof(float)), err);
    CUDA_CHECK(cudaMalloc((void **)&o->dones, nl * sizeof(int)), err);
    CUDA_CHECK(cudaMalloc((void **)&o->terminals, nl * sizeof(int)), err);
    CUDA_CHECK(cudaMalloc((void **)&o->trunc_values, nl * sizeof(float)), err);
    CUDA_CHECK(cudaMalloc((void **)&o->advantages, nl * sizeof(float)), err);
    CUDA_CHECK(cudaMalloc((void **)&o->returns, nl * sizeof(float)), err);
    CUDA_CHECK(cudaMalloc((void **)&o->exposures, nl * sizeof(float)), err);
    if (!c->use_fast) /* the fast path's holds every critic row's bar (fh_fast_path_init) */
        CUDA_CHECK(cudaMalloc((void **)&o->bars, nl * sizeof(int)), err);
    if (c->use_fast && (st = fh_fast_path_init(c, err)) != FH_OK)
        goto fail_status;
    /* the uploads and fills above ran on the legacy stream, which the non-blocking
     * collection stream does not wait for: finish them before any collection */
    CUDA_CHECK(cudaDeviceSynchronize(), err);
    *out = c;
    return FH_OK;
fail:
fail_status:
    fh_gpu_ppo_collector_destroy(c);
    return err->status;
}

fh_episode_state *fh_gpu_ppo_collector_episodes(fh_gpu_ppo_collector *c)
{
    return c->h_episodes;
}

fh_status fh_gpu_ppo_collector_upload_episodes(fh_gpu_ppo_collector *c, fh_error *err)
{
    CUDA_CHECK(cudaMemcpy(c->d_episodes, c->h_episodes,
                          (size_t)c->n_episodes * sizeof(fh_episode_state),
                          cudaMemcpyHostToDevice), err);
    return FH_OK;
fail:
    return err->status;
}

fh_status fh_gpu_ppo_collector_poison(fh_gpu_ppo_collector *c, fh_error *err)
{
    size_t nl = (size_t)c->n_episodes * c->n_steps;
    fh_ppo_outputs *o = &c->out;
    /* the states' row padding (fast path) must stay zero: a pitched fill; in the fast
     * path over every critic row (final observations and s_L too, whose values reach
     * trunc_values and last_values) */
    size_t state_rows = c->use_fast ? (size_t)c->fast.plan.critic_rows : nl;
    CUDA_CHECK(cudaMemset2DAsync(o->states, (size_t)c->states_pitch * sizeof(float), 0xFF,
                                 FH_STATE_DIM * sizeof(float), state_rows, c->stream), err);
    struct { void *p; size_t bytes; } bufs[] = {
        {o->actions, nl * 4}, {o->log_probs, nl * 4},
        {o->values, nl * 4}, {o->rewards, nl * 4}, {o->dones, nl * 4}, {o->terminals, nl * 4},
        {o->trunc_values, nl * 4}, {o->advantages, nl * 4}, {o->returns, nl * 4},
        {o->exposures, nl * 4}, {o->bars, state_rows * 4},
        {o->last_values, (size_t)c->n_episodes * 4}};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        CUDA_CHECK(cudaMemsetAsync(bufs[i].p, 0xFF, bufs[i].bytes, c->stream), err);
    if (c->use_fast) /* every row the critic reads, final observations included */
        CUDA_CHECK(cudaMemsetAsync(c->fast.values_all, 0xFF,
                                   (size_t)c->fast.plan.critic_rows * sizeof(float), c->stream), err);
    CUDA_CHECK(cudaStreamSynchronize(c->stream), err);
    return FH_OK;
fail:
    return err->status;
}

const fh_fast_plan *fh_gpu_ppo_collector_plan(const fh_gpu_ppo_collector *c)
{
    return c->use_fast ? &c->fast.plan : NULL;
}

fh_gpu_collect_timing fh_gpu_ppo_collector_timing(const fh_gpu_ppo_collector *c)
{
    return c->timing;
}

void fh_gpu_ppo_collector_set_profile(fh_gpu_ppo_collector *c, int profile)
{
    c->profile = profile;
}

static fh_status launch_reference(fh_gpu_ppo_collector *c, const fh_collect_params *p,
                                  fh_error *err)
{
    const float *actor = c->weights.actor, *critic = c->weights.critic,
                *curiosity = c->weights.curiosity;
    int N = c->n_episodes, L = c->n_steps;
    float gamma = p->gamma, lambda = p->gae_lambda;
    void *args[] = {&actor, &critic, &curiosity, &c->cfg, &c->d_market, &c->d_episodes,
                    &N, &L, &gamma, &lambda, &c->out};
    dim3 grid = {(unsigned)((N + REFERENCE_BLOCK - 1) / REFERENCE_BLOCK), 1, 1};
    dim3 block = {REFERENCE_BLOCK, 1, 1};
    CUDA_CHECK(cudaLaunchKernel((const void *)c->reference, grid, block, args, 0, c->stream), err);
    CUDA_CHECK(cudaGetLastError(), err);
    return FH_OK;
fail:
    return err->status;
}

_Static_assert(FH_ROLLOUT_CLOCK_PARTS == FH_CLOCK_PARTS, "clock parts differ between host and kernels");

/* The rollout's cycle counters, averaged over episodes and steps. */
static fh_status read_rollout_clocks(fh_gpu_ppo_collector *c, fh_error *err)
{
    int N = c->n_episodes;
    long long *h = malloc((size_t)N * FH_CLOCK_STRIDE * sizeof *h);
    if (!h)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
    cudaError_t e = cudaMemcpy(h, c->fast.clocks, (size_t)N * FH_CLOCK_STRIDE * sizeof *h,
                               cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) {
        free(h);
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: cudaMemcpy: %s", __FILE__, __LINE__,
                            cudaGetErrorString(e));
    }
    c->timing.rollout_clock_parts = FH_CLOCK_PARTS;
    for (int part = 0; part < FH_CLOCK_PARTS; part++) {
        double sum = 0.0;
        for (int n = 0; n < N; n++)
            sum += (double)h[(size_t)n * FH_CLOCK_STRIDE + part];
        c->timing.rollout_cycles[part] = sum / N / c->n_steps;
    }
    free(h);
    return FH_OK;
}

/* The collection, then the download of the whole batch and the episode states (full),
 * or nothing (the batch stays on the device for the GPU update and its metrics). */
static fh_status collect(fh_gpu_ppo_collector *c, const fh_collect_params *p,
                         fh_trajectory_batch *b, int full, fh_error *err)
{
    int N = c->n_episodes, L = c->n_steps;
    size_t nl = (size_t)N * L;
    if (b->n_episodes != N || b->n_steps != L)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: batch is %dx%d, collector %dx%d",
                            __FILE__, __LINE__, b->n_episodes, b->n_steps, N, L);
    fh_status st;
    const fh_ppo_outputs *o = &c->out;
    if (c->pinned[0] != b->mem) { /* a new batch: page-lock it (best effort) */
        for (int k = 0; k < 2; k++)
            if (c->pinned[k])
                cudaHostUnregister(c->pinned[k]);
        size_t float_bytes = nl * (FH_STATE_DIM + 7) * sizeof(float) + (size_t)N * sizeof(float);
        size_t int_bytes = nl * 4 * sizeof(int32_t);
        c->pinned[0] = cudaHostRegister(b->mem, float_bytes, cudaHostRegisterDefault) == cudaSuccess
                           ? b->mem : NULL;
        c->pinned[1] = cudaHostRegister(b->imem, int_bytes, cudaHostRegisterDefault) == cudaSuccess
                           ? b->imem : NULL;
        cudaGetLastError(); /* an unpinned batch still works, only slower */
    }
    CUDA_CHECK(cudaEventRecord(c->ev_begin, c->stream), err);
    if (!c->external_weights &&
        (st = fh_gpu_weights_sync(&c->weights, p->actor, p->critic, p->curiosity, c->stream,
                                  err)) != FH_OK)
        return st;
    CUDA_CHECK(cudaEventRecord(c->ev_kernel_begin, c->stream), err);
    st = c->use_fast ? fh_fast_path_run(c, p, err) : launch_reference(c, p, err);
    if (st != FH_OK)
        return st;
    CUDA_CHECK(cudaEventRecord(c->ev_kernel_end, c->stream), err);
    struct { void *dst; const void *src; size_t bytes; } copies[] = {
        {b->actions, o->actions, nl * sizeof(int)},
        {b->rewards, o->rewards, nl * sizeof(float)},
        {b->dones, o->dones, nl * sizeof(int)},
        {c->h_episodes, c->d_episodes, (size_t)N * sizeof(fh_episode_state)},
        /* the rest: full downloads only */
        {b->log_probs, o->log_probs, nl * sizeof(float)},
        {b->values, o->values, nl * sizeof(float)},
        {b->terminals, o->terminals, nl * sizeof(int)},
        {b->trunc_values, o->trunc_values, nl * sizeof(float)},
        {b->advantages, o->advantages, nl * sizeof(float)},
        {b->returns, o->returns, nl * sizeof(float)},
        {b->exposures, o->exposures, nl * sizeof(float)},
        {b->bars, o->bars, nl * sizeof(int)},
        {b->last_values, o->last_values, (size_t)N * sizeof(float)}};
    if (full)
        CUDA_CHECK(cudaMemcpy2DAsync(b->states, FH_STATE_DIM * sizeof(float), o->states,
                                     (size_t)c->states_pitch * sizeof(float),
                                     FH_STATE_DIM * sizeof(float), nl, cudaMemcpyDeviceToHost,
                                     c->stream), err);
    size_t n_copies = full ? sizeof copies / sizeof copies[0] : 0;
    for (size_t i = 0; i < n_copies; i++)
        CUDA_CHECK(cudaMemcpyAsync(copies[i].dst, copies[i].src, copies[i].bytes,
                                   cudaMemcpyDeviceToHost, c->stream), err);
    CUDA_CHECK(cudaEventRecord(c->ev_end, c->stream), err);
    CUDA_CHECK(cudaStreamSynchronize(c->stream), err);
    CUDA_CHECK(cudaEventElapsedTime(&c->timing.rollout_ms, c->ev_kernel_begin, c->ev_kernel_end), err);
    CUDA_CHECK(cudaEventElapsedTime(&c->timing.total_ms, c->ev_begin, c->ev_end), err);
    if (c->use_fast && c->profile) {
        fh_fast_path *f = &c->fast;
        CUDA_CHECK(cudaEventElapsedTime(&c->timing.phase_rollout_ms, f->ev_phase[0], f->ev_phase[1]), err);
        CUDA_CHECK(cudaEventElapsedTime(&c->timing.phase_networks_ms, f->ev_phase[1], f->ev_phase[2]), err);
        CUDA_CHECK(cudaEventElapsedTime(&c->timing.phase_gae_ms, f->ev_phase[2], f->ev_phase[3]), err);
        if (f->clocks && (st = read_rollout_clocks(c, err)) != FH_OK)
            return st;
    }
    return FH_OK;
fail:
    return err->status;
}

fh_status fh_gpu_ppo_collector_collect(fh_gpu_ppo_collector *c, const fh_collect_params *p,
                                       fh_trajectory_batch *b, fh_error *err)
{
    return collect(c, p, b, 1, err);
}

fh_status fh_gpu_ppo_collector_collect_on_device(fh_gpu_ppo_collector *c,
                                                 const fh_collect_params *p,
                                                 fh_trajectory_batch *b, fh_error *err)
{
    return collect(c, p, b, 0, err);
}

void fh_gpu_ppo_collector_use_weights(fh_gpu_ppo_collector *c, const fh_gpu_weights *w)
{
    if (!c->external_weights)
        fh_gpu_weights_free(&c->weights);
    c->weights = *w;
    c->external_weights = 1;
    fh_fast_path *f = &c->fast; /* its graph holds the old pointers */
    if (f->graph_exec) {
        cudaGraphExecDestroy(f->graph_exec);
        cudaGraphDestroy(f->graph);
        f->graph_exec = NULL;
        f->graph = NULL;
    }
}

fh_status fh_gpu_ppo_collector_download_episodes(fh_gpu_ppo_collector *c, fh_error *err)
{
    CUDA_CHECK(cudaMemcpyAsync(c->h_episodes, c->d_episodes,
                               (size_t)c->n_episodes * sizeof(fh_episode_state),
                               cudaMemcpyDeviceToHost, c->stream), err);
    CUDA_CHECK(cudaStreamSynchronize(c->stream), err);
    return FH_OK;
fail:
    return err->status;
}

void fh_gpu_ppo_collector_device_outputs(const fh_gpu_ppo_collector *c, const float **rewards,
                                         const int **actions, const int **dones,
                                         const fh_episode_state **episodes)
{
    *rewards = c->out.rewards;
    *actions = c->out.actions;
    *dones = c->out.dones;
    *episodes = c->d_episodes;
}

void fh_gpu_ppo_collector_device_batch(const fh_gpu_ppo_collector *c, fh_device_batch *b,
                                       const float **features)
{
    const fh_ppo_outputs *o = &c->out;
    *b = (fh_device_batch){
        .states = o->states, .states_pitch = c->states_pitch, .actions = o->actions,
        .log_probs = o->log_probs, .values = o->values, .advantages = o->advantages,
        .returns = o->returns, .exposures = o->exposures, .bars = o->bars,
        .n = (long long)c->n_episodes * c->n_steps};
    *features = c->d_features;
}
