/* gpu_curiosity.c — see gpu_curiosity.h. gpu_ppo_update.c's curiosity phase on its own:
 * one stream; a step is curiosity_gather_kernel -> the model's forward (update_layers.c)
 * -> mse_loss_kernel -> the backward -> grad_sumsq_kernel -> adam_kernel, graph_steps of
 * them captured into one graph and a tail step into another, replayed per epoch. The
 * launch shapes are update_plan.c's (the PPO update's, for a problem of one PPO epoch),
 * so both fits launch the same kernels the same way. The host's part of a fit is the
 * state and keys up (~300 bytes) and the state back. */
#include "cuda/gpu_curiosity.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_check.h"
#include "cuda/cuda_module.h"
#include "cuda/kernels/update_args.h"
#include "cuda/update_layers.h"
#include "cuda/update_plan.h"
#include "env/common_device_functions.cuh"
#include "env/minibatch_order.cuh"
#include "foxhunt/ppo.h" /* fh_mlp_check_finite */

/* ppo_update.c's bound on the keys a fit draws (train_config.c's on curiosity_epochs). */
#define MAX_EPOCHS 1000

typedef enum { K_GATHER, K_MSE_LOSS, K_BIAS_GRAD, K_BIAS_ACT, K_SUMSQ, K_ADAM, K_COUNT } kernel_id;

static const char *const kernel_names[] = FH_GPU_CURIOSITY_ENTRIES;
_Static_assert(sizeof kernel_names / sizeof kernel_names[0] == K_COUNT,
               "FH_GPU_CURIOSITY_ENTRIES names every kernel_id, in order");
_Static_assert(FH_CURIOSITY_TARGET_DIM == 32, "curiosity_gather_kernel: one lane a target");

enum { G_FULL, G_TAIL, G_COUNT };

struct fh_gpu_curiosity {
    fh_device_info dev;
    int64_t max_rows;
    int minibatch;             /* cfg->minibatch, at most max_rows */
    int epochs, tf32;
    float lr;
    fh_adam_config adam;       /* betas and eps: fh_adam_config_default_curiosity's */
    fh_update_plan plan;       /* for the bound n (plan.problem.batch) */
    fh_cuda_module module;
    cudaKernel_t k[K_COUNT];
    cudaStream_t stream;
    cudaEvent_t ev_begin, ev_end;
    fh_update_blas blas;
    float *mem;                /* (4, C): params | grads | m | v */
    fh_device_mlp net;         /* minibatch rows, with gradients */
    int64_t adam_step;         /* the device's, mirrored */
    float *in, *target, *dpred; /* (M, 35), (M, 32), (M, 32) */
    double *partials;          /* (sumsq_blocks) */
    fh_update_state *state;    /* only its curiosity phase is used (ppo stays zero) */
    unsigned long long *keys;  /* (epochs) */
    fh_update_state *h_state;  /* page-locked */
    unsigned long long *h_keys;
    /* the graphs' binding (their pointers are baked in) */
    fh_device_batch bound;
    const float *bound_features;
    cudaGraphExec_t graphs[G_COUNT];
    float last_ms;
};

static fh_status launch(fh_gpu_curiosity *c, kernel_id id, unsigned grid, unsigned block,
                        void *args, fh_error *err)
{
    void *params[] = {args};
    dim3 g = {grid, 1, 1}, b = {block, 1, 1};
    CUDA_CHECK(cudaLaunchKernel((const void *)c->k[id], g, b, params, 0, c->stream), err);
    CUDA_CHECK(cudaGetLastError(), err);
    return FH_OK;
fail:
    return err->status;
}

/* One step of `rows` rows at the device's position (gpu_ppo_update.c's curiosity_step
 * and optimizer_step with curiosity = 1). */
static fh_status fit_step(fh_gpu_curiosity *c, int rows, fh_error *err)
{
    const fh_update_plan *p = &c->plan;
    const long long C = p->curiosity_params;
    fh_curiosity_gather_args g = {
        .batch = c->bound, .features = c->bound_features, .state = c->state, .keys = c->keys,
        .minibatch = p->problem.minibatch, .rows = rows, .inputs = c->in, .targets = c->target};
    unsigned grid = (unsigned)(((long long)rows * 32 + p->gather_threads - 1) / p->gather_threads);
    fh_status st = launch(c, K_GATHER, grid, (unsigned)p->gather_threads, &g, err);
    if (st == FH_OK)
        st = fh_device_mlp_forward(&c->blas, &c->net, c->in, rows, err);
    if (st != FH_OK)
        return st;
    fh_mse_loss_args l = {
        .state = c->state, .pred = fh_device_mlp_output(&c->net), .target = c->target,
        .rows = rows, .minibatches_per_epoch = p->minibatches_per_epoch, .dpred = c->dpred};
    if ((st = launch(c, K_MSE_LOSS, 1, (unsigned)p->mse_threads, &l, err)) != FH_OK ||
        (st = fh_device_mlp_backward(&c->blas, NULL, &c->net, c->dpred, rows, err)) != FH_OK)
        return st;
    fh_grad_sumsq_args s = {.grads = c->mem + C, .n = C, .partials = c->partials};
    if ((st = launch(c, K_SUMSQ, (unsigned)p->sumsq_blocks, (unsigned)p->reduce_threads, &s,
                     err)) != FH_OK)
        return st;
    fh_adam_args a = {
        .state = c->state, .curiosity = 1, .params = c->mem, .grads = c->mem + C,
        .adam_m = c->mem + 2 * C, .adam_v = c->mem + 3 * C, .n = C, .partials = c->partials,
        .n_partials = p->sumsq_blocks, .max_norm = INFINITY, /* the CPU's fit clips nothing */
        .beta1 = c->adam.beta1, .beta2 = c->adam.beta2, .eps = c->adam.eps, .records = NULL};
    return launch(c, K_ADAM, (unsigned)p->curiosity_adam_grid, (unsigned)p->adam_threads, &a,
                  err);
}

/* `steps` steps of `rows` rows captured into *exec. */
static fh_status capture(fh_gpu_curiosity *c, int steps, int rows, cudaGraphExec_t *exec,
                         fh_error *err)
{
    cudaGraph_t graph = NULL;
    CUDA_CHECK(cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal), err);
    fh_status st = FH_OK;
    for (int s = 0; s < steps && st == FH_OK; s++)
        st = fit_step(c, rows, err);
    cudaError_t end = cudaStreamEndCapture(c->stream, &graph);
    if (st != FH_OK) {
        if (graph)
            cudaGraphDestroy(graph);
        return st;
    }
    CUDA_CHECK(end, err);
    CUDA_CHECK(cudaGraphInstantiate(exec, graph, 0), err);
    cudaGraphDestroy(graph);
    return FH_OK;
fail:
    if (graph)
        cudaGraphDestroy(graph);
    return err->status;
}

static void drop_graphs(fh_gpu_curiosity *c)
{
    for (int i = 0; i < G_COUNT; i++)
        if (c->graphs[i])
            cudaGraphExecDestroy(c->graphs[i]);
    memset(c->graphs, 0, sizeof c->graphs);
}

/* The plan for n rows: update_plan.c's shapes for one PPO epoch (unused) and this fit's
 * epochs, minibatches of at most n rows (the CPU's fit then takes all n at once). */
static fh_status make_plan(fh_update_plan *p, const fh_gpu_curiosity *c, int64_t n, fh_error *err)
{
    fh_update_problem prob = {c->dev.sm_count, (long long)n,
                              (int)(c->minibatch < n ? c->minibatch : n), 1, c->epochs, c->tf32};
    return fh_update_plan_make(&prob, p, err);
}

/* The graphs for batch b of n rows (kept while the same pointers and n come back). */
static fh_status bind_batch(fh_gpu_curiosity *c, const fh_device_batch *b, const float *features,
                            fh_error *err)
{
    const fh_device_batch *o = &c->bound;
    if ((c->graphs[G_FULL] || c->graphs[G_TAIL]) && o->states == b->states &&
        o->actions == b->actions && o->exposures == b->exposures && o->bars == b->bars &&
        o->n == b->n && c->bound_features == features)
        return FH_OK;
    drop_graphs(c);
    fh_status st = make_plan(&c->plan, c, b->n, err);
    if (st != FH_OK)
        return st;
    c->bound = *b;
    c->bound_features = features;
    const fh_update_plan *p = &c->plan;
    if (p->full_steps > 0)
        st = capture(c, p->graph_steps, p->problem.minibatch, &c->graphs[G_FULL], err);
    if (st == FH_OK && p->tail_rows)
        st = capture(c, 1, p->tail_rows, &c->graphs[G_TAIL], err);
    if (st != FH_OK) {
        drop_graphs(c);
        memset(&c->bound, 0, sizeof c->bound);
    }
    return st;
}

/* ---- create / destroy ---- */

void fh_gpu_curiosity_destroy(fh_gpu_curiosity *c)
{
    if (!c)
        return;
    if (c->stream)
        cudaStreamSynchronize(c->stream);
    drop_graphs(c);
    fh_device_mlp_free(&c->net);
    fh_update_blas_free(&c->blas);
    void *bufs[] = {c->mem, c->in, c->target, c->dpred, c->partials, c->state, c->keys};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        cudaFree(bufs[i]);
    cudaFreeHost(c->h_state);
    cudaFreeHost(c->h_keys);
    if (c->ev_begin)
        cudaEventDestroy(c->ev_begin);
    if (c->ev_end)
        cudaEventDestroy(c->ev_end);
    if (c->stream)
        cudaStreamDestroy(c->stream);
    fh_cuda_module_free(&c->module);
    free(c);
}

fh_status fh_gpu_curiosity_create(fh_gpu_curiosity **out, const fh_device_info *dev,
                                  int64_t max_rows, const fh_train_config *cfg, fh_error *err)
{
    *out = NULL;
    if (max_rows < 1 || cfg->minibatch < 1)
        return fh_error_set(err, FH_ERR_INPUT, "curiosity fit: %lld rows, minibatch %d",
                            (long long)max_rows, cfg->minibatch);
    if (cfg->curiosity_epochs < 0 || cfg->curiosity_epochs > MAX_EPOCHS)
        return fh_error_set(err, FH_ERR_INPUT, "curiosity fit: %d epochs (at most %d)",
                            cfg->curiosity_epochs, MAX_EPOCHS);
    fh_gpu_curiosity *c = calloc(1, sizeof *c);
    if (!c)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
    c->dev = *dev;
    c->max_rows = max_rows;
    c->minibatch = (int)(cfg->minibatch < max_rows ? cfg->minibatch : max_rows);
    c->epochs = cfg->curiosity_epochs;
    c->tf32 = strcmp(cfg->precision, "tf32") == 0;
    fh_adam_config_default_curiosity(&c->adam);
    c->lr = (float)cfg->curiosity_lr;
    /* the plan for max_rows: the module's options and the buffers' sizes (a fit of
     * another n plans again: the same options, the same sizes) */
    fh_status st = make_plan(&c->plan, c, max_rows, err);
    if (st != FH_OK)
        goto fail_status;
    const fh_update_plan *p = &c->plan;
    CUDA_CHECK(cudaSetDevice(dev->device_index), err);
    if ((st = fh_cuda_module_load(&c->module, dev, FH_GPU_CURIOSITY_KERNEL_FILE, p->options,
                                  p->n_options, err)) != FH_OK)
        goto fail_status;
    for (int i = 0; i < K_COUNT; i++)
        if ((st = fh_cuda_module_kernel(&c->module, kernel_names[i], &c->k[i], err)) != FH_OK)
            goto fail_status;
    CUDA_CHECK(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking), err);
    CUDA_CHECK(cudaEventCreate(&c->ev_begin), err);
    CUDA_CHECK(cudaEventCreate(&c->ev_end), err);
    if ((st = fh_update_blas_init(&c->blas, c->stream, c->tf32, c->k[K_BIAS_GRAD],
                                  c->k[K_BIAS_ACT], err)) != FH_OK)
        goto fail_status;
    const long long C = p->curiosity_params;
    const size_t M = (size_t)c->minibatch;
    const size_t keys = (size_t)(c->epochs > 0 ? c->epochs : 1);
    CUDA_CHECK(cudaMalloc((void **)&c->mem, 4 * (size_t)C * sizeof(float)), err);
    CUDA_CHECK(cudaMemsetAsync(c->mem, 0, 4 * (size_t)C * sizeof(float), c->stream), err);
    CUDA_CHECK(cudaMalloc((void **)&c->in, M * FH_CURIOSITY_INPUT_DIM * sizeof(float)), err);
    CUDA_CHECK(cudaMalloc((void **)&c->target, M * FH_CURIOSITY_TARGET_DIM * sizeof(float)), err);
    CUDA_CHECK(cudaMalloc((void **)&c->dpred, M * FH_CURIOSITY_TARGET_DIM * sizeof(float)), err);
    CUDA_CHECK(cudaMalloc((void **)&c->partials, (size_t)p->sumsq_blocks * sizeof(double)), err);
    CUDA_CHECK(cudaMalloc((void **)&c->state, sizeof *c->state), err);
    CUDA_CHECK(cudaMalloc((void **)&c->keys, keys * sizeof(unsigned long long)), err);
    CUDA_CHECK(cudaMallocHost((void **)&c->h_state, sizeof *c->h_state), err);
    CUDA_CHECK(cudaMallocHost((void **)&c->h_keys, keys * sizeof(unsigned long long)), err);
    if ((st = fh_device_mlp_init(&c->net, FH_NET_CURIOSITY, c->mem, c->mem + C, (int)M,
                                 err)) != FH_OK)
        goto fail_status;
    CUDA_CHECK(cudaDeviceSynchronize(), err); /* the init's memsets, on any stream */
    *out = c;
    return FH_OK;
fail:
fail_status:
    fh_gpu_curiosity_destroy(c);
    return err->status;
}

const float *fh_gpu_curiosity_params(const fh_gpu_curiosity *c)
{
    return c->mem;
}

float fh_gpu_curiosity_last_ms(const fh_gpu_curiosity *c)
{
    return c->last_ms;
}

/* ---- host <-> device ---- */

/* params, m and v (regions 0, 2, 3 of mem) up or down, then a wait. */
static fh_status copy_model(fh_gpu_curiosity *c, fh_mlp *m, int upload, fh_error *err)
{
    if (m->n_params != FH_CURIOSITY_N_PARAMS || m->desc->kind != FH_NET_CURIOSITY)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: not the curiosity model (%zu params)",
                            __FILE__, __LINE__, m->n_params);
    const size_t C = FH_CURIOSITY_N_PARAMS;
    float *host[3] = {m->params, m->adam_m, m->adam_v};
    const int region[3] = {0, 2, 3};
    for (int k = 0; k < 3; k++) {
        float *dev = c->mem + (size_t)region[k] * C;
        if (upload)
            CUDA_CHECK(cudaMemcpyAsync(dev, host[k], C * sizeof(float), cudaMemcpyHostToDevice,
                                       c->stream), err);
        else
            CUDA_CHECK(cudaMemcpyAsync(host[k], dev, C * sizeof(float), cudaMemcpyDeviceToHost,
                                       c->stream), err);
    }
    CUDA_CHECK(cudaStreamSynchronize(c->stream), err);
    return FH_OK;
fail:
    return err->status;
}

fh_status fh_gpu_curiosity_upload(fh_gpu_curiosity *c, const fh_mlp *curiosity, fh_error *err)
{
    fh_status st = copy_model(c, (fh_mlp *)curiosity, 1, err);
    if (st == FH_OK)
        c->adam_step = curiosity->adam_step;
    return st;
}

fh_status fh_gpu_curiosity_download(fh_gpu_curiosity *c, fh_mlp *curiosity, fh_error *err)
{
    fh_status st = copy_model(c, curiosity, 0, err);
    if (st != FH_OK)
        return st;
    curiosity->adam_step = c->adam_step;
    return fh_mlp_check_finite(curiosity, err);
}

/* ---- the fit ---- */

fh_status fh_gpu_curiosity_fit(fh_gpu_curiosity *c, const float *d_states, const int *d_actions,
                               const float *d_exposures, const int *d_bars,
                               const float *d_market_features, int64_t n, fh_rng *rng,
                               double *loss_out, fh_error *err)
{
    if (n < 0 || n > c->max_rows)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: a fit of %lld rows, created for at "
                            "most %lld", __FILE__, __LINE__, (long long)n, (long long)c->max_rows);
    if (n > 0 && (!d_states || !d_actions || !d_exposures || !d_bars || !d_market_features))
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: a column of the collection is NULL",
                            __FILE__, __LINE__);
    /* every epoch's key before the first epoch (fh_curiosity_fit's draw_epoch_keys) */
    for (int e = 0; e < c->epochs; e++)
        c->h_keys[e] = fh_minibatch_key(rng);
    *loss_out = 0.0;
    if (n == 0 || c->epochs == 0)
        return FH_OK;
    fh_device_batch b = {.states = d_states, .states_pitch = FH_STATE_DIM, .actions = d_actions,
                         .exposures = d_exposures, .bars = d_bars, .n = (long long)n};
    fh_status st = bind_batch(c, &b, d_market_features, err);
    if (st != FH_OK)
        return st;
    const fh_update_plan *p = &c->plan;
    fh_update_state *s = c->h_state;
    memset(s, 0, sizeof *s);
    s->curiosity.adam_step = c->adam_step;
    s->curiosity_lr = c->lr;
    s->curiosity_epochs = c->epochs;
    CUDA_CHECK(cudaEventRecord(c->ev_begin, c->stream), err);
    CUDA_CHECK(cudaMemcpyAsync(c->state, s, sizeof *s, cudaMemcpyHostToDevice, c->stream), err);
    CUDA_CHECK(cudaMemcpyAsync(c->keys, c->h_keys, (size_t)c->epochs * sizeof(unsigned long long),
                               cudaMemcpyHostToDevice, c->stream), err);
    for (int e = 0; e < c->epochs; e++) {
        for (int g = 0; g < p->graph_launches && c->graphs[G_FULL]; g++)
            CUDA_CHECK(cudaGraphLaunch(c->graphs[G_FULL], c->stream), err);
        if (c->graphs[G_TAIL])
            CUDA_CHECK(cudaGraphLaunch(c->graphs[G_TAIL], c->stream), err);
    }
    CUDA_CHECK(cudaMemcpyAsync(s, c->state, sizeof *s, cudaMemcpyDeviceToHost, c->stream), err);
    CUDA_CHECK(cudaEventRecord(c->ev_end, c->stream), err);
    CUDA_CHECK(cudaStreamSynchronize(c->stream), err);
    CUDA_CHECK(cudaEventElapsedTime(&c->last_ms, c->ev_begin, c->ev_end), err);
    const fh_update_phase *ph = &s->curiosity;
    c->adam_step = ph->adam_step;
    if (ph->failed)
        return fh_error_set(err, FH_ERR_FAILURE, "the curiosity %s is not finite (epoch %d, "
                            "minibatch %d); the fit stopped before that step",
                            ph->failed == FH_UFAIL_CURIOSITY_LOSS ? "loss" : "gradient",
                            ph->failed_epoch + 1, ph->failed_minibatch + 1);
    *loss_out = ph->n_records > 0 ? ph->loss_sum / ph->n_records : 0.0;
    return FH_OK;
fail:
    return err->status;
}
