/* gpu_q_fixture.h — what test_gpu_q_update.c (PQN) and test_gpu_dqn_update.c (DQN)
 * share: the tolerances, a real GPU collection over the synthetic market, a host batch on
 * the device, and the GPU case runner. */
#ifndef FOXHUNT_TEST_GPU_Q_FIXTURE_H
#define FOXHUNT_TEST_GPU_Q_FIXTURE_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "cuda/gpu_dqn_collector.h"
#include "cuda/gpu_q_update.h"
#include "cuda/kernels/q_update_args.h"
#include "rl/gpu_update_settings.h"
#include "dqn/test_cases.h"
#include "env/common_device_functions.cuh"
#include "env/dqn_device_functions.cuh"
#include "env/minibatch_order.cuh"
#include "foxhunt/device.h"
#include "foxhunt/dqn.h"
#include "foxhunt/nn.h"
#include "foxhunt/run_data.h"
#include "foxhunt/timing.h"
#include "foxhunt/train_config.h"
#include "test_norms.h"
#include "test_util.h"

#define N_EPISODES 64
#define N_STEPS 64
#define MINIBATCH 512
#define EPOCHS 2
#define EPSILON 0.5f
#define DQN_MINIBATCH 256
#define DQN_CAPACITY 6000
#define NEXT_MAX_TOL 1e-5 /* atol and rtol: one matmul chain's rounding */
#define SCAN_REL 1e-6
#define RETURNS_TOL 1e-5
#define FIRST_GRAD_REL 1e-5
#define TARGET_TOL 1e-5
#define STEP_REL 1e-4     /* steps of the first epoch (DQN: the first 10 steps) */
#define LATE_REL 1e-3     /* later steps, whole updates */
#define GRAPH_REL 1e-6    /* the graphs' update against the eager one */
#define COSINE 0.99999
#define TF32_COSINE 0.9

/* the GPU the cases run on (on_gpu sets it): each test binary has its own */
static fh_device_info g_dev;

/* ---- small tools ---- */

static inline fh_q_update_config q_config(const fh_train_config *cfg)
{
    return fh_q_update_config_of(cfg, cfg->lr);
}

static inline void clone(fh_mlp *dst, const fh_mlp *src)
{
    fh_error err;
    memset(dst, 0, sizeof *dst);
    if (fh_mlp_init(dst, src->desc->kind, &err) == FH_OK)
        fh_mlp_copy(dst, src);
}

/* ---- the GPU fixture ---- */

typedef struct {
    fh_train_config cfg;
    fh_run_data data;
    fh_market_view view;
    fh_env_market market;
    fh_mlp curiosity;
} fixture;

static inline fh_status fixture_init(fixture *f, fh_error *err)
{
    memset(f, 0, sizeof *f);
    fh_train_config_default(&f->cfg);
    f->cfg.synthetic_bars = 4000;
    f->cfg.episodes = N_EPISODES;
    f->cfg.steps = N_STEPS;
    f->cfg.epochs = EPOCHS;
    f->cfg.minibatch = MINIBATCH;
    f->cfg.env.horizon = 30;
    snprintf(f->cfg.precision, sizeof f->cfg.precision, "fp32");
    fh_status st = fh_run_data_load(&f->data, &f->cfg, NULL, err);
    if (st != FH_OK)
        return st;
    f->view = fh_market_view_of(&f->data.market, FH_SPLIT_TRAIN);
    f->market = fh_env_market_from_view(&f->view);
    if ((st = fh_mlp_init(&f->curiosity, FH_NET_CURIOSITY, err)) != FH_OK)
        return st;
    fh_mlp_init_orthogonal(&f->curiosity, 22);
    return FH_OK;
}

static inline void fixture_free(fixture *f)
{
    fh_mlp_free(&f->curiosity);
    fh_run_data_free(&f->data);
}

/* A host batch on the device (the NaN case needs one of its own). */
typedef struct {
    fh_dqn_device_batch view;
    void *mem;
} device_copy;

static inline fh_status device_copy_upload(device_copy *d, const fh_transition_batch *b, fh_error *err)
{
    memset(d, 0, sizeof *d);
    size_t n = (size_t)b->n_episodes * b->n_steps;
    size_t bytes = 2 * n * FH_STATE_DIM * 4 + 2 * n * 4 + 2 * n;
    if (cudaMalloc(&d->mem, bytes) != cudaSuccess)
        return fh_error_set(err, FH_ERR_FAILURE, "cudaMalloc of %zu bytes", bytes);
    char *p = d->mem;
    struct { const void *src; size_t bytes; } parts[] = {
        {b->states, n * FH_STATE_DIM * 4}, {b->next_states, n * FH_STATE_DIM * 4},
        {b->actions, n * 4}, {b->rewards, n * 4}, {b->terminal, n}, {b->truncated, n}};
    char *at[6];
    for (int i = 0; i < 6; i++) {
        at[i] = p;
        if (cudaMemcpy(p, parts[i].src, parts[i].bytes, cudaMemcpyHostToDevice) != cudaSuccess)
            return fh_error_set(err, FH_ERR_FAILURE, "cudaMemcpy of part %d", i);
        p += parts[i].bytes;
    }
    d->view = (fh_dqn_device_batch){
        .n_episodes = b->n_episodes, .n_steps = b->n_steps, .states = (const float *)at[0],
        .next_states = (const float *)at[1], .actions = (const int *)at[2],
        .rewards = (const float *)at[3], .terminal = (const unsigned char *)at[4],
        .truncated = (const unsigned char *)at[5]};
    return FH_OK;
}

/* One collection by the GPU collector with the update's device weights, downloaded into
 * b (allocated here) for the CPU; the collector keeps it on the device too. */
static inline fh_status gpu_collection(fh_gpu_dqn_collector *c, const fh_gpu_q_update *u,
                                const fixture *f, fh_transition_batch *b, fh_error *err)
{
    fh_status st = b->states ? FH_OK : fh_transition_batch_alloc(b, N_EPISODES, N_STEPS, err);
    if (st == FH_OK)
        st = fh_gpu_dqn_collect_device(c, fh_gpu_q_update_params(u), f->curiosity.params,
                                       EPSILON, b, err);
    return st;
}

/* A GPU case: g_dev and the fixture, then run(&f); skipped without a GPU. */
static inline void on_gpu(void (*run)(const fixture *f))
{
    fh_error err;
    if (fh_device_select("auto", &g_dev, &err) != FH_OK || !g_dev.use_gpu) {
        fh_test_case_skip("no CUDA device: the GPU Q update needs a GPU (runs in "
                          "scripts/gpu-check.sh)");
        return;
    }
    fixture f;
    fh_status st = fixture_init(&f, &err);
    CHECK_MSG(st == FH_OK, "%s", err.message);
    if (st == FH_OK)
        run(&f);
    fixture_free(&f);
}

#endif
