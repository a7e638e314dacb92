/* gpu_curiosity.c — see gpu_curiosity.h. gpu_ppo_update.c's curiosity phase on its own:
 * one stream; a step is curiosity_gather_kernel -> the model's forward (update_layers.c)
 * -> mse_loss_kernel -> the backward -> grad_sumsq_kernel -> adam_kernel, graph_steps of
 * them captured into one graph and a tail step into another, replayed per epoch. The
 * launch shapes are update_plan.c's (the PPO update's, for a problem of one PPO epoch),
 * so both fits launch the same kernels the same way. The host's part of a fit is the
 * state and keys up (~300 bytes) and the state back. The module, the stream, the checked
 * launches, the graphs and the optimiser's step are gpu_update_engine.h's. */
#include "cuda/gpu_curiosity.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_check.h"
#include "cuda/gpu_update_engine.h"
#include "cuda/kernels/update_args.h"
#include "cuda/overrides.h"
#include "cuda/update_layers.h"
#include "cuda/update_plan.h"
#include "env/common_device_functions.cuh"
#include "env/minibatch_order.cuh"
#include "foxhunt/nn.h" /* fh_mlp_check_finite */

/* ppo_update.c's bound on the keys a fit draws (train_config.c's on curiosity_epochs). */
#define MAX_EPOCHS 1000

typedef enum { K_GATHER, K_MSE_LOSS, K_BIAS_GRAD, K_BIAS_ACT, K_SUMSQ, K_ADAM, K_COUNT } kernel_id;

static const char *const kernel_names[] = FH_GPU_CURIOSITY_ENTRIES;
_Static_assert(sizeof kernel_names / sizeof kernel_names[0] == K_COUNT,
               "FH_GPU_CURIOSITY_ENTRIES names every kernel_id, in order");
_Static_assert(FH_CURIOSITY_TARGET_DIM == 32, "curiosity_gather_kernel: one lane a target");

enum { G_FULL, G_TAIL, G_COUNT }; /* eng's graph slots */
_Static_assert(G_COUNT <= FH_UPDATE_ENGINE_MAX_GRAPHS && K_COUNT <= FH_UPDATE_ENGINE_MAX_KERNELS,
               "the engine holds every graph and kernel");

struct fh_gpu_curiosity {
    fh_device_info dev;
    int64_t max_rows;
    int minibatch;             /* s.minibatch, at most max_rows */
    int epochs, precision;
    int plain_launches;        /* the override update_pdl=0 (the environment's) */
    float lr;
    fh_adam_config adam;       /* betas and eps: fh_adam_config_default_curiosity's */
    fh_update_plan plan;       /* for the bound n (plan.problem.batch) */
    fh_update_engine eng;      /* the module, its kernels, the stream, the graphs */
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
    /* the binding of eng's graphs (their pointers are baked in) */
    fh_device_batch bound;
    const float *bound_features;
};

/* One step of `rows` rows at the device's position (gpu_ppo_update.c's curiosity_step
 * and optimizer_step with curiosity = 1; ctx: the fit, as the engine captures it). */
static fh_status fit_step(void *ctx, int rows, fh_error *err)
{
    fh_gpu_curiosity *c = ctx;
    const fh_update_plan *p = &c->plan;
    fh_curiosity_gather_args g = {
        .batch = c->bound, .features = c->bound_features, .state = c->state, .keys = c->keys,
        .minibatch = p->problem.minibatch, .rows = rows, .inputs = c->in, .targets = c->target};
    unsigned grid = (unsigned)(((long long)rows * 32 + p->gather_threads - 1) / p->gather_threads);
    fh_status st = fh_update_engine_launch(&c->eng, K_GATHER, grid, (unsigned)p->gather_threads,
                                           &g, err);
    if (st == FH_OK)
        st = fh_device_mlp_forward(&c->blas, &c->net, c->in, rows, err);
    if (st != FH_OK)
        return st;
    fh_mse_loss_args l = {
        .state = c->state, .pred = fh_device_mlp_output(&c->net), .target = c->target,
        .rows = rows, .minibatches_per_epoch = p->minibatches_per_epoch, .dpred = c->dpred};
    if ((st = fh_update_engine_launch(&c->eng, K_MSE_LOSS, 1, (unsigned)p->mse_threads, &l,
                                      err)) != FH_OK ||
        (st = fh_device_mlp_backward(&c->blas, NULL, &c->net, c->dpred, rows, err)) != FH_OK)
        return st;
    fh_update_optimizer o = {
        .sumsq_kernel = K_SUMSQ, .adam_kernel = K_ADAM, .mem = c->mem, .n = p->curiosity_params,
        .partials = c->partials, .sumsq_blocks = p->sumsq_blocks,
        .reduce_threads = p->reduce_threads, .adam_grid = p->curiosity_adam_grid,
        .adam_threads = p->adam_threads, .state = c->state, .curiosity = 1,
        .max_norm = INFINITY, /* the CPU's fit clips nothing */
        .beta1 = c->adam.beta1, .beta2 = c->adam.beta2, .eps = c->adam.eps, .records = NULL};
    return fh_update_engine_optimizer_step(&c->eng, &o, err);
}

/* The plan for n rows: update_plan.c's shapes for one PPO epoch (unused) and this fit's
 * epochs, minibatches of at most n rows (the CPU's fit then takes all n at once). */
static fh_status make_plan(fh_update_plan *p, const fh_gpu_curiosity *c, int64_t n, fh_error *err)
{
    fh_update_problem prob = {c->dev.sm_count, (long long)n,
                              (int)(c->minibatch < n ? c->minibatch : n), 1, c->epochs, c->precision,
                              c->dev.cc_major, c->plain_launches};
    return fh_update_plan_make(&prob, p, err);
}

/* The graphs for batch b of n rows (kept while the same pointers and n come back). */
static fh_status bind_batch(fh_gpu_curiosity *c, const fh_device_batch *b, const float *features,
                            fh_error *err)
{
    const fh_device_batch *o = &c->bound;
    if ((c->eng.graphs[G_FULL] || c->eng.graphs[G_TAIL]) && o->states == b->states &&
        o->actions == b->actions && o->exposures == b->exposures && o->bars == b->bars &&
        o->n == b->n && c->bound_features == features)
        return FH_OK;
    fh_update_engine_drop_graphs(&c->eng);
    fh_status st = make_plan(&c->plan, c, b->n, err);
    if (st != FH_OK)
        return st;
    c->bound = *b;
    c->bound_features = features;
    const fh_update_plan *p = &c->plan;
    if (p->full_steps > 0)
        st = fh_update_engine_capture(&c->eng, G_FULL, fit_step, c, p->graph_steps,
                                      p->problem.minibatch, err);
    if (st == FH_OK && p->tail_rows)
        st = fh_update_engine_capture(&c->eng, G_TAIL, fit_step, c, 1, p->tail_rows, err);
    if (st != FH_OK) {
        fh_update_engine_drop_graphs(&c->eng);
        memset(&c->bound, 0, sizeof c->bound);
    }
    return st;
}

/* ---- create / destroy ---- */

void fh_gpu_curiosity_destroy(fh_gpu_curiosity *c)
{
    if (!c)
        return;
    fh_update_engine_stop(&c->eng);
    fh_device_mlp_free(&c->net);
    fh_update_blas_free(&c->blas);
    void *bufs[] = {c->mem, c->in, c->target, c->dpred, c->partials, c->state, c->keys};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        cudaFree(bufs[i]);
    cudaFreeHost(c->h_state);
    cudaFreeHost(c->h_keys);
    fh_update_engine_free(&c->eng);
    free(c);
}

fh_status fh_gpu_curiosity_create(fh_gpu_curiosity **out, const fh_device_info *dev,
                                  int64_t max_rows, fh_gpu_curiosity_settings s, fh_error *err)
{
    *out = NULL;
    if (max_rows < 1 || s.minibatch < 1)
        return fh_error_set(err, FH_ERR_INPUT, "curiosity fit: %lld rows, minibatch %d",
                            (long long)max_rows, s.minibatch);
    if (s.curiosity_epochs < 0 || s.curiosity_epochs > MAX_EPOCHS)
        return fh_error_set(err, FH_ERR_INPUT, "curiosity fit: %d epochs (at most %d)",
                            s.curiosity_epochs, MAX_EPOCHS);
    fh_gpu_overrides ov; /* the environment's (overrides.h) */
    fh_status st = fh_gpu_overrides_from_env(&ov, err);
    if (st != FH_OK)
        return st;
    fh_gpu_curiosity *c = calloc(1, sizeof *c);
    if (!c)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
    c->plain_launches = ov.update_pdl == 0;
    c->dev = *dev;
    c->max_rows = max_rows;
    c->minibatch = (int)(s.minibatch < max_rows ? s.minibatch : max_rows);
    c->epochs = s.curiosity_epochs;
    c->precision = s.precision;
    if (c->precision == FH_PRECISION_BF16) {
        free(c);
        return fh_error_set(err, FH_ERR_INPUT, "--precision bf16 is the PPO update's; the "
                            "curiosity fit beside PQN and DQN takes fp32 or tf32");
    }
    fh_adam_config_default_curiosity(&c->adam);
    c->lr = (float)s.curiosity_lr;
    /* the plan for max_rows: the module's options and the buffers' sizes (a fit of
     * another n plans again: the same options, the same sizes) */
    st = make_plan(&c->plan, c, max_rows, err);
    if (st != FH_OK)
        goto fail_status;
    const fh_update_plan *p = &c->plan;
    if ((st = fh_update_engine_init(&c->eng, dev, FH_GPU_CURIOSITY_KERNEL_FILE, p->options,
                                    p->n_options, kernel_names, K_COUNT, err)) != FH_OK ||
        (st = fh_update_blas_init(&c->blas, c->eng.stream, c->precision, c->eng.k[K_BIAS_GRAD],
                                  c->eng.k[K_BIAS_ACT], err)) != FH_OK)
        goto fail_status;
    c->eng.pdl = p->pdl;
    fh_update_blas_set_pdl(&c->blas, p->pdl);
    const long long C = p->curiosity_params;
    const size_t M = (size_t)c->minibatch;
    const size_t keys = (size_t)(c->epochs > 0 ? c->epochs : 1);
    CUDA_CHECK(cudaMalloc((void **)&c->mem, 4 * (size_t)C * sizeof(float)), err);
    CUDA_CHECK(cudaMemsetAsync(c->mem, 0, 4 * (size_t)C * sizeof(float), c->eng.stream), err);
    CUDA_CHECK(cudaMalloc((void **)&c->in, M * FH_CURIOSITY_INPUT_DIM * sizeof(float)), err);
    CUDA_CHECK(cudaMalloc((void **)&c->target, M * FH_CURIOSITY_TARGET_DIM * sizeof(float)), err);
    CUDA_CHECK(cudaMalloc((void **)&c->dpred, M * FH_CURIOSITY_TARGET_DIM * sizeof(float)), err);
    CUDA_CHECK(cudaMalloc((void **)&c->partials, (size_t)p->sumsq_blocks * sizeof(double)), err);
    CUDA_CHECK(cudaMalloc((void **)&c->state, sizeof *c->state), err);
    CUDA_CHECK(cudaMalloc((void **)&c->keys, keys * sizeof(unsigned long long)), err);
    CUDA_CHECK(cudaMallocHost((void **)&c->h_state, sizeof *c->h_state), err);
    CUDA_CHECK(cudaMallocHost((void **)&c->h_keys, keys * sizeof(unsigned long long)), err);
    if ((st = fh_device_mlp_init(&c->net, FH_NET_CURIOSITY, c->mem, c->mem + C, NULL, (int)M,
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
    return c->eng.last_ms;
}

/* ---- host <-> device ---- */

/* params, m and v (regions 0, 2, 3 of mem) up or down, then a wait. */
static fh_status copy_model(fh_gpu_curiosity *c, fh_mlp *m, int upload, fh_error *err)
{
    if (m->n_params != FH_CURIOSITY_N_PARAMS || m->desc->kind != FH_NET_CURIOSITY)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: not the curiosity model (%zu params)",
                            __FILE__, __LINE__, m->n_params);
    fh_status st = fh_update_engine_copy_net(&c->eng, c->mem, FH_CURIOSITY_N_PARAMS, 0, m, upload,
                                             err);
    if (st != FH_OK)
        return st;
    CUDA_CHECK(cudaStreamSynchronize(c->eng.stream), err);
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
    st = fh_update_engine_begin(&c->eng, c->state, s, sizeof *s, c->keys, c->h_keys,
                                (size_t)c->epochs * sizeof(unsigned long long), err);
    for (int e = 0; e < c->epochs && st == FH_OK; e++)
        st = fh_update_engine_replay_epoch(&c->eng, G_FULL, p->graph_launches, G_TAIL, err);
    if (st == FH_OK)
        st = fh_update_engine_end(&c->eng, s, c->state, sizeof *s, err);
    if (st != FH_OK)
        return st;
    const fh_update_phase *ph = &s->curiosity;
    c->adam_step = ph->adam_step;
    if (ph->failed)
        return fh_error_set(err, FH_ERR_FAILURE, "the curiosity %s is not finite (epoch %d, "
                            "minibatch %d); the fit stopped before that step",
                            ph->failed == FH_UFAIL_CURIOSITY_LOSS ? "loss" : "gradient",
                            ph->failed_epoch + 1, ph->failed_minibatch + 1);
    *loss_out = ph->n_records > 0 ? ph->loss_sum / ph->n_records : 0.0;
    return FH_OK;
}
