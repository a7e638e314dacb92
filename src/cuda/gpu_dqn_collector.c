/* gpu_dqn_collector.c — see gpu_dqn_collector.h. */
#include "cuda/gpu_dqn_collector.h"

#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_check.h"
#include "cuda/cuda_module.h"
#include "cuda/gpu_market.h"
#include "cuda/gpu_q_update.h"
#include "cuda/update_layers.h"
#include "env/dqn_device_functions.cuh"

#define KERNEL_FILE "dqn_experience_kernel.cu"
#define ENTRY "dqn_experience_kernel"
#define Q_KERNEL_FILE "q_update.cu" /* the stepped mapping's layers: the update's own */

/* The stepped mapping's forward: the update's layer kernels and matmul engines. */
typedef struct {
    fh_cuda_module module;
    cudaKernel_t observe, step;                   /* dqn_experience_kernel.cu's */
    cudaKernel_t hidden_fwd, hidden_bwd, bias_grad, bias_act; /* q_update.cu's */
    fh_update_blas blas;                          /* fp32: the plain kernel's arithmetic */
    fh_device_mlp mlp;                            /* forward only, N rows */
    float *d_x;                                   /* (N, 54) the step's observations */
    float *d_epsilon, *h_epsilon;                 /* read by the graph; pinned staging */
    cudaGraphExec_t graph;                        /* the L steps */
    const float *graph_qnet, *graph_curiosity;    /* the weights it was captured on */
} stepped_mapping;

struct fh_gpu_dqn_collector {
    int n_episodes, n_steps, layer_norm;
    fh_env_config cfg;
    fh_dqn_plan plan;
    fh_cuda_module module;
    cudaKernel_t kernel;
    cudaStream_t stream;
    stepped_mapping stepped;
    float *d_features, *d_close, *d_sigma;
    fh_env_market d_market;
    fh_episode_state *d_episodes;
    float *d_qnet, *d_curiosity;
    size_t qnet_capacity;
    fh_dqn_outputs out; /* device buffers */
};

static void stepped_free(stepped_mapping *m)
{
    if (m->graph)
        cudaGraphExecDestroy(m->graph);
    fh_device_mlp_free(&m->mlp);
    fh_update_blas_free(&m->blas);
    cudaFree(m->d_x);
    cudaFree(m->d_epsilon);
    if (m->h_epsilon)
        cudaFreeHost(m->h_epsilon);
    fh_cuda_module_free(&m->module);
}

void fh_gpu_dqn_collector_destroy(fh_gpu_dqn_collector *c)
{
    if (!c)
        return;
    stepped_free(&c->stepped);
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

/* The stepped mapping's kernels, engines and buffers (the graph is captured at the
 * first collection, on its weights). */
static fh_status stepped_init(fh_gpu_dqn_collector *c, const fh_device_info *dev,
                              fh_error *err)
{
    stepped_mapping *m = &c->stepped;
    const char *const q_options[] = FH_Q_UPDATE_OPTIONS;
    fh_status st;
    if ((st = fh_cuda_module_kernel(&c->module, "dqn_observe_kernel", &m->observe, err)) != FH_OK ||
        (st = fh_cuda_module_kernel(&c->module, "dqn_step_kernel", &m->step, err)) != FH_OK ||
        (st = fh_cuda_module_load(&m->module, dev, Q_KERNEL_FILE, q_options,
                                  (int)(sizeof q_options / sizeof q_options[0]), err)) != FH_OK ||
        (st = fh_cuda_module_kernel(&m->module, "q_hidden_forward_kernel", &m->hidden_fwd,
                                    err)) != FH_OK ||
        (st = fh_cuda_module_kernel(&m->module, "q_hidden_backward_kernel", &m->hidden_bwd,
                                    err)) != FH_OK ||
        (st = fh_cuda_module_kernel(&m->module, "bias_grad_kernel", &m->bias_grad, err)) != FH_OK ||
        (st = fh_cuda_module_kernel(&m->module, "bias_act_kernel", &m->bias_act, err)) != FH_OK ||
        (st = fh_update_blas_init(&m->blas, c->stream, 0, m->bias_grad, m->bias_act, err)) != FH_OK)
        return st;
    fh_update_blas_set_hidden(&m->blas, m->hidden_fwd, m->hidden_bwd);
    /* params are set per collection (the caller's device weights) */
    if ((st = fh_device_mlp_init(&m->mlp, c->layer_norm ? FH_NET_PQN : FH_NET_QNET, NULL, NULL,
                                 NULL, c->n_episodes, err)) != FH_OK)
        return st;
    CUDA_CHECK(cudaMalloc((void **)&m->d_x, (size_t)c->n_episodes * FH_STATE_DIM * sizeof(float)),
               err);
    CUDA_CHECK(cudaMalloc((void **)&m->d_epsilon, sizeof(float)), err);
    CUDA_CHECK(cudaMallocHost((void **)&m->h_epsilon, sizeof(float)), err);
    return FH_OK;
fail:
    return err->status;
}

fh_status fh_gpu_dqn_collector_create(fh_gpu_dqn_collector **out, const fh_device_info *dev,
                                      int n_episodes, int n_steps, const fh_env_config *cfg,
                                      const fh_market_view *market, uint64_t seed,
                                      int layer_norm, fh_error *err)
{
    return fh_gpu_dqn_collector_create_kernel(out, dev, n_episodes, n_steps, cfg, market, seed,
                                              layer_norm, "reference", err);
}

fh_status fh_gpu_dqn_collector_create_kernel(fh_gpu_dqn_collector **out,
                                             const fh_device_info *dev, int n_episodes,
                                             int n_steps, const fh_env_config *cfg,
                                             const fh_market_view *market, uint64_t seed,
                                             int layer_norm, const char *kernel, fh_error *err)
{
    *out = NULL;
    if (strcmp(kernel, "fast") != 0 && strcmp(kernel, "reference") != 0)
        return fh_error_set(err, FH_ERR_INPUT, "--kernel %s: the DQN/PQN collection takes fast "
                            "or reference", kernel);
    fh_plan_device plan_dev = {dev->name, dev->sm_count, 0, 0};
    fh_dqn_plan plan;
    fh_status pst = fh_dqn_plan_make(&plan_dev, n_episodes, n_steps,
                                     strcmp(kernel, "reference") == 0, &plan, err);
    if (pst != FH_OK)
        return pst;
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
    c->plan = plan;
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
    if (plan.mapping == FH_DQN_STEPPED && (st = stepped_init(c, dev, err)) != FH_OK)
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

static fh_status launch_per_episode(fh_gpu_dqn_collector *c, cudaKernel_t kernel, void **args,
                                    fh_error *err)
{
    dim3 grid = {(unsigned)c->plan.grid, 1, 1}, block = {(unsigned)c->plan.threads_per_block, 1, 1};
    CUDA_CHECK(cudaLaunchKernel((const void *)kernel, grid, block, args, 0, c->stream), err);
    CUDA_CHECK(cudaGetLastError(), err);
    return FH_OK;
fail:
    return err->status;
}

/* The stepped mapping's L steps on the stream (captured once into the graph): observe,
 * then per step the forward and dqn_step_kernel. */
static fh_status stepped_enqueue(fh_gpu_dqn_collector *c, const float *d_qnet,
                                 const float *d_curiosity, fh_error *err)
{
    stepped_mapping *m = &c->stepped;
    int N = c->n_episodes, L = c->n_steps;
    m->mlp.params = (float *)d_qnet; /* read only: forward */
    void *obs_args[] = {&c->cfg, &c->d_market, &c->d_episodes, &N, &m->d_x};
    fh_status st = launch_per_episode(c, m->observe, obs_args, err);
    for (int t = 0; t < L && st == FH_OK; t++) {
        if ((st = fh_device_mlp_forward(&m->blas, &m->mlp, m->d_x, N, err)) != FH_OK)
            break;
        const float *q = fh_device_mlp_output(&m->mlp);
        void *args[] = {&q, &d_curiosity, &c->cfg, &c->d_market, &c->d_episodes, &N, &L, &t,
                        &m->d_epsilon, &m->d_x, &c->out};
        st = launch_per_episode(c, m->step, args, err);
    }
    return st;
}

/* The stepped mapping: epsilon up, then the graph (captured on first use, and again
 * when the weights live elsewhere). */
static fh_status launch_stepped(fh_gpu_dqn_collector *c, const float *d_qnet,
                                const float *d_curiosity, float epsilon, fh_error *err)
{
    stepped_mapping *m = &c->stepped;
    fh_status st = FH_OK;
    if (m->graph && (m->graph_qnet != d_qnet || m->graph_curiosity != d_curiosity)) {
        CUDA_CHECK(cudaGraphExecDestroy(m->graph), err);
        m->graph = NULL;
    }
    if (!m->graph) {
        cudaGraph_t graph = NULL;
        CUDA_CHECK(cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal), err);
        st = stepped_enqueue(c, d_qnet, d_curiosity, err);
        cudaError_t end = cudaStreamEndCapture(c->stream, &graph); /* ends it either way */
        if (st != FH_OK) {
            if (graph)
                cudaGraphDestroy(graph);
            return st;
        }
        CUDA_CHECK(end, err);
        cudaError_t inst = cudaGraphInstantiate(&m->graph, graph, 0);
        cudaGraphDestroy(graph);
        CUDA_CHECK(inst, err);
        m->graph_qnet = d_qnet;
        m->graph_curiosity = d_curiosity;
    }
    *m->h_epsilon = epsilon;
    CUDA_CHECK(cudaMemcpyAsync(m->d_epsilon, m->h_epsilon, sizeof(float),
                               cudaMemcpyHostToDevice, c->stream), err);
    CUDA_CHECK(cudaGraphLaunch(m->graph, c->stream), err);
    return FH_OK;
fail:
    return err->status;
}

/* One collection on device weights only, by the plan's mapping. */
static fh_status launch_resident(fh_gpu_dqn_collector *c, const float *d_qnet,
                                 const float *d_curiosity, float epsilon, fh_error *err)
{
    if (c->plan.mapping == FH_DQN_STEPPED)
        return launch_stepped(c, d_qnet, d_curiosity, epsilon, err);
    int N = c->n_episodes, L = c->n_steps, ln = c->layer_norm;
    void *args[] = {&d_qnet, &d_curiosity, &c->cfg, &c->d_market, &c->d_episodes,
                    &N, &L, &epsilon, &ln, &c->out};
    return launch_per_episode(c, c->kernel, args, err);
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
static fh_status finish_collection(fh_gpu_dqn_collector *c, fh_transition_batch *out,
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
    return st == FH_OK ? finish_collection(c, out, err) : st;
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

/* After a launch: the transitions into out, or (out NULL: they stay on the device for
 * the update) a wait for the stream. */
static fh_status finish_collection(fh_gpu_dqn_collector *c, fh_transition_batch *out,
                                   fh_error *err)
{
    if (out)
        return download_batch(c, out, err);
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
    return st == FH_OK ? finish_collection(c, out, err) : st;
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

const fh_dqn_plan *fh_gpu_dqn_collector_plan(const fh_gpu_dqn_collector *c)
{
    return &c->plan;
}
