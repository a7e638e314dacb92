/* gpu_dqn_collector.c — see gpu_dqn_collector.h. */
#include "cuda/gpu_dqn_collector.h"

#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_check.h"
#include "cuda/cuda_module.h"
#include "cuda/gpu_market.h"
#include "env/dqn_device_functions.cuh"

#define KERNEL_FILE "dqn_experience_kernel.cu"
#define ENTRY "dqn_experience_kernel"
#define BLOCK 32 /* one thread per episode; small blocks spread them over the SMs */

struct fh_gpu_dqn_collector {
    int n_episodes, n_steps, layer_norm;
    fh_env_config cfg;
    fh_cuda_module module;
    cudaKernel_t kernel;
    cudaStream_t stream;
    float *d_features, *d_close, *d_sigma;
    fh_env_market d_market;
    fh_episode_state *d_episodes;
    float *d_qnet, *d_curiosity;
    size_t qnet_capacity;
    fh_dqn_outputs out; /* device buffers */
};

void fh_gpu_dqn_collector_destroy(fh_gpu_dqn_collector *c)
{
    if (!c)
        return;
    void *ptrs[] = {c->d_features, c->d_close, c->d_sigma, c->d_episodes, c->d_qnet,
                    c->d_curiosity, c->out.states, c->out.next_states, c->out.actions,
                    c->out.rewards, c->out.terminal, c->out.truncated, c->out.q_taken,
                    c->out.exposures, c->out.bars};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++)
        cudaFree(ptrs[i]);
    fh_cuda_module_free(&c->module);
    if (c->stream)
        cudaStreamDestroy(c->stream);
    free(c);
}

fh_status fh_gpu_dqn_collector_create(fh_gpu_dqn_collector **out, const fh_device_info *dev,
                                      int n_episodes, int n_steps, const fh_env_config *cfg,
                                      const fh_market_view *market, uint64_t seed,
                                      int layer_norm, fh_error *err)
{
    *out = NULL;
    fh_gpu_dqn_collector *c = calloc(1, sizeof *c);
    fh_episode_state *h_episodes = calloc((size_t)n_episodes, sizeof *h_episodes);
    if (!c || !h_episodes) {
        free(c);
        free(h_episodes);
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
    }
    c->n_episodes = n_episodes;
    c->n_steps = n_steps;
    c->layer_norm = layer_norm;
    c->cfg = *cfg;
    const size_t nl = (size_t)n_episodes * (size_t)n_steps;
    fh_env_market host_market = fh_env_market_from_view(market);
    fh_status st = fh_env_market_validate(&host_market, err);
    if (st != FH_OK)
        goto fail_status;
    CUDA_CHECK(cudaSetDevice(dev->device_index), err);
    CUDA_CHECK(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking), err);
    /* no fused multiply-adds: the sums round as the CPU's do (SPEC §9) */
    const char *options[] = {"--fmad=false", "-lineinfo"};
    if ((st = fh_cuda_module_load(&c->module, dev, KERNEL_FILE, options, 2, err)) != FH_OK ||
        (st = fh_cuda_module_kernel(&c->module, ENTRY, &c->kernel, err)) != FH_OK)
        goto fail_status;

    if ((st = fh_gpu_market_upload(&c->d_features, &c->d_close, &c->d_sigma, &c->d_market,
                                   market, err)) != FH_OK)
        goto fail_status;

    for (int n = 0; n < n_episodes; n++)
        env_episode_init(&c->cfg, &host_market, &h_episodes[n], seed, (unsigned long long)n);
    CUDA_CHECK(cudaMalloc((void **)&c->d_episodes, (size_t)n_episodes * sizeof(fh_episode_state)), err);
    CUDA_CHECK(cudaMemcpy(c->d_episodes, h_episodes, (size_t)n_episodes * sizeof(fh_episode_state),
                          cudaMemcpyHostToDevice), err);

    fh_dqn_outputs *o = &c->out;
    CUDA_CHECK(cudaMalloc((void **)&o->states, nl * FH_STATE_DIM * sizeof(float)), err);
    CUDA_CHECK(cudaMalloc((void **)&o->next_states, nl * FH_STATE_DIM * sizeof(float)), err);
    CUDA_CHECK(cudaMalloc((void **)&o->actions, nl * sizeof(int)), err);
    CUDA_CHECK(cudaMalloc((void **)&o->rewards, nl * sizeof(float)), err);
    CUDA_CHECK(cudaMalloc((void **)&o->terminal, nl), err);
    CUDA_CHECK(cudaMalloc((void **)&o->truncated, nl), err);
    CUDA_CHECK(cudaMalloc((void **)&o->q_taken, nl * sizeof(float)), err);
    CUDA_CHECK(cudaMalloc((void **)&o->exposures, nl * sizeof(float)), err);
    CUDA_CHECK(cudaMalloc((void **)&o->bars, nl * sizeof(int)), err);
    CUDA_CHECK(cudaMalloc((void **)&c->d_curiosity, FH_CURIOSITY_N_PARAMS * sizeof(float)), err);
    free(h_episodes);
    *out = c;
    return FH_OK;
fail:
fail_status:
    free(h_episodes);
    fh_gpu_dqn_collector_destroy(c);
    return err->status;
}

static fh_status check_collect(const fh_gpu_dqn_collector *c, float epsilon,
                               const fh_transition_batch *out, fh_error *err)
{
    if (out && (out->n_episodes != c->n_episodes || out->n_steps != c->n_steps))
        return fh_error_set(err, FH_ERR_INPUT, "a %d x %d batch for a %d x %d collector",
                            out->n_episodes, out->n_steps, c->n_episodes, c->n_steps);
    if (!(epsilon >= 0.0f && epsilon <= 1.0f))
        return fh_error_set(err, FH_ERR_INPUT, "epsilon %g is outside [0, 1]", (double)epsilon);
    return FH_OK;
}

/* One launch of the kernel on device weights only. */
static fh_status launch_resident(fh_gpu_dqn_collector *c, const float *d_qnet,
                                 const float *d_curiosity, float epsilon, fh_error *err)
{
    int N = c->n_episodes, L = c->n_steps, ln = c->layer_norm;
    void *args[] = {&d_qnet, &d_curiosity, &c->cfg, &c->d_market, &c->d_episodes,
                    &N, &L, &epsilon, &ln, &c->out};
    dim3 grid = {(unsigned)((N + BLOCK - 1) / BLOCK), 1, 1};
    dim3 block = {BLOCK, 1, 1};
    CUDA_CHECK(cudaLaunchKernel((const void *)c->kernel, grid, block, args, 0, c->stream), err);
    CUDA_CHECK(cudaGetLastError(), err);
    return FH_OK;
fail:
    return err->status;
}

/* The curiosity model's params up, then one launch of the kernel on d_qnet's weights. */
static fh_status launch_collection(fh_gpu_dqn_collector *c, const float *d_qnet,
                                   const float *curiosity, float epsilon, fh_error *err)
{
    CUDA_CHECK(cudaMemcpyAsync(c->d_curiosity, curiosity, FH_CURIOSITY_N_PARAMS * sizeof(float),
                               cudaMemcpyHostToDevice, c->stream), err);
    return launch_resident(c, d_qnet, c->d_curiosity, epsilon, err);
fail:
    return err->status;
}

static fh_status download_batch(fh_gpu_dqn_collector *c, fh_transition_batch *out,
                                fh_error *err);

fh_status fh_gpu_dqn_collect(fh_gpu_dqn_collector *c, const float *qnet, size_t n_qnet,
                             const float *curiosity, float epsilon, fh_transition_batch *out,
                             fh_error *err)
{
    fh_status st = check_collect(c, epsilon, out, err);
    if (st != FH_OK)
        return st;
    if (n_qnet > c->qnet_capacity) {
        cudaFree(c->d_qnet);
        c->d_qnet = NULL;
        c->qnet_capacity = 0;
        CUDA_CHECK(cudaMalloc((void **)&c->d_qnet, n_qnet * sizeof(float)), err);
        c->qnet_capacity = n_qnet;
    }
    CUDA_CHECK(cudaMemcpyAsync(c->d_qnet, qnet, n_qnet * sizeof(float), cudaMemcpyHostToDevice,
                               c->stream), err);
    if ((st = launch_collection(c, c->d_qnet, curiosity, epsilon, err)) != FH_OK)
        return st;
    return download_batch(c, out, err);
fail:
    return err->status;
}

fh_status fh_gpu_dqn_collect_device(fh_gpu_dqn_collector *c, const float *d_qnet,
                                    const float *curiosity, float epsilon,
                                    fh_transition_batch *out, fh_error *err)
{
    fh_status st = check_collect(c, epsilon, out, err);
    if (st == FH_OK)
        st = launch_collection(c, d_qnet, curiosity, epsilon, err);
    if (st != FH_OK)
        return st;
    if (out)
        return download_batch(c, out, err);
    CUDA_CHECK(cudaStreamSynchronize(c->stream), err);
    return FH_OK;
fail:
    return err->status;
}

fh_dqn_device_batch fh_gpu_dqn_collector_batch(const fh_gpu_dqn_collector *c)
{
    const fh_dqn_outputs *o = &c->out;
    fh_dqn_device_batch b = {c->n_episodes, c->n_steps, o->states, o->next_states, o->actions,
                             o->rewards, o->terminal, o->truncated, o->q_taken, o->exposures,
                             o->bars};
    return b;
}

/* The transitions into out (N x L), on the collector's stream, then a wait for it. */
static fh_status download_batch(fh_gpu_dqn_collector *c, fh_transition_batch *out,
                                fh_error *err)
{
    const size_t nl = (size_t)c->n_episodes * c->n_steps;
    const fh_dqn_outputs *o = &c->out;
    CUDA_CHECK(cudaMemcpyAsync(out->states, o->states, nl * FH_STATE_DIM * sizeof(float),
                               cudaMemcpyDeviceToHost, c->stream), err);
    CUDA_CHECK(cudaMemcpyAsync(out->next_states, o->next_states, nl * FH_STATE_DIM * sizeof(float),
                               cudaMemcpyDeviceToHost, c->stream), err);
    CUDA_CHECK(cudaMemcpyAsync(out->actions, o->actions, nl * sizeof(int), cudaMemcpyDeviceToHost,
                               c->stream), err);
    CUDA_CHECK(cudaMemcpyAsync(out->rewards, o->rewards, nl * sizeof(float), cudaMemcpyDeviceToHost,
                               c->stream), err);
    CUDA_CHECK(cudaMemcpyAsync(out->terminal, o->terminal, nl, cudaMemcpyDeviceToHost, c->stream), err);
    CUDA_CHECK(cudaMemcpyAsync(out->truncated, o->truncated, nl, cudaMemcpyDeviceToHost, c->stream), err);
    CUDA_CHECK(cudaMemcpyAsync(out->q_taken, o->q_taken, nl * sizeof(float), cudaMemcpyDeviceToHost,
                               c->stream), err);
    CUDA_CHECK(cudaMemcpyAsync(out->exposures, o->exposures, nl * sizeof(float),
                               cudaMemcpyDeviceToHost, c->stream), err);
    CUDA_CHECK(cudaMemcpyAsync(out->bars, o->bars, nl * sizeof(int), cudaMemcpyDeviceToHost,
                               c->stream), err);
    CUDA_CHECK(cudaStreamSynchronize(c->stream), err);
    return FH_OK;
fail:
    return err->status;
}

fh_status fh_gpu_dqn_collector_episodes(fh_gpu_dqn_collector *c, fh_episode_state *episodes,
                                        fh_error *err)
{
    CUDA_CHECK(cudaMemcpy(episodes, c->d_episodes, (size_t)c->n_episodes * sizeof(fh_episode_state),
                          cudaMemcpyDeviceToHost), err);
    return FH_OK;
fail:
    return err->status;
}

fh_status fh_gpu_dqn_collector_set_episodes(fh_gpu_dqn_collector *c,
                                            const fh_episode_state *episodes, fh_error *err)
{
    CUDA_CHECK(cudaMemcpy(c->d_episodes, episodes,
                          (size_t)c->n_episodes * sizeof(fh_episode_state),
                          cudaMemcpyHostToDevice), err);
    return FH_OK;
fail:
    return err->status;
}

/* ---- both networks resident on the device ---- */

fh_status fh_gpu_dqn_collect_resident(fh_gpu_dqn_collector *c, const float *d_qnet,
                                      const float *d_curiosity, float epsilon,
                                      fh_transition_batch *out, fh_error *err)
{
    fh_status st = check_collect(c, epsilon, out, err);
    if (st == FH_OK && (!d_qnet || !d_curiosity))
        st = fh_error_set(err, FH_ERR_FAILURE, "%s:%d: no device weights", __FILE__, __LINE__);
    if (st == FH_OK)
        st = launch_resident(c, d_qnet, d_curiosity, epsilon, err);
    if (st != FH_OK)
        return st;
    if (out)
        return download_batch(c, out, err);
    CUDA_CHECK(cudaStreamSynchronize(c->stream), err);
    return FH_OK;
fail:
    return err->status;
}

const float *fh_gpu_dqn_collector_market_features(const fh_gpu_dqn_collector *c)
{
    return c->d_features;
}

fh_status fh_gpu_dqn_collector_download_summary(fh_gpu_dqn_collector *c,
                                                fh_transition_batch *out, fh_error *err)
{
    fh_status st = check_collect(c, 0.0f, out, err);
    if (st != FH_OK)
        return st;
    const size_t nl = (size_t)c->n_episodes * c->n_steps;
    const fh_dqn_outputs *o = &c->out;
    CUDA_CHECK(cudaMemcpyAsync(out->actions, o->actions, nl * sizeof(int), cudaMemcpyDeviceToHost,
                               c->stream), err);
    CUDA_CHECK(cudaMemcpyAsync(out->rewards, o->rewards, nl * sizeof(float), cudaMemcpyDeviceToHost,
                               c->stream), err);
    CUDA_CHECK(cudaMemcpyAsync(out->terminal, o->terminal, nl, cudaMemcpyDeviceToHost, c->stream), err);
    CUDA_CHECK(cudaMemcpyAsync(out->truncated, o->truncated, nl, cudaMemcpyDeviceToHost, c->stream), err);
    CUDA_CHECK(cudaStreamSynchronize(c->stream), err);
    return FH_OK;
fail:
    return err->status;
}
