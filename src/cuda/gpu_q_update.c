/* gpu_q_update.c — see gpu_q_update.h. One stream (a second one takes the weight
 * gradients, as in the PPO update); each step enqueued by pqn_step / dqn_step (gather or
 * sample, forward, loss, backward, norm, Adam, and for DQN the target), a fixed number
 * of them captured into a CUDA graph and replayed; the step's position, the Adam step
 * and DQN's sampling position live on the device (q_update_args.h), so every replay of
 * a graph is the same graph. The host's part of a run is a few small copies: the state
 * and the epoch keys up, the summary back. The module, the stream, the checked launches,
 * the graphs and the optimiser's step are gpu_update_engine.h's, as the PPO update's. */
#include "cuda/gpu_q_update.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_check.h"
#include "cuda/gpu_update_engine.h"
#include "cuda/overrides.h"
#include "cuda/update_layers.h"
#include "cuda/update_plan.h"
#include "env/common_device_functions.cuh"
#include "env/minibatch_order.cuh"
#include "foxhunt/nn.h" /* fh_mlp_check_finite */

#define Q_KERNEL_FILE "q_update.cu"

/* Launch shapes. Row kernels: one warp a row, FH_Q_ROWS_PER_BLOCK rows a block. */
#define ROW_THREADS (32 * FH_Q_ROWS_PER_BLOCK)
#define SCAN_THREADS 128   /* q_lambda_kernel: one thread an episode row */
#define SUMSQ_BLOCKS 128   /* grad_sumsq_kernel's partial sums: fixed (determinism) */
#define REDUCE_THREADS 256
#define ADAM_THREADS 256
#define ELEMENT_THREADS 256
/* PQN's pass over the collection's next states (no gradient): rows per forward. */
#define EVAL_CHUNK 16384
/* Steps per captured graph at most (a step is ~25 nodes; update_plan.h's reasoning). */
#define GRAPH_MAX_STEPS 64
#define DQN_GRAPH_STEPS 16
/* DQN has no epochs: its position's minibatch counts steps. */
#define DQN_STEPS_PER_EPOCH (1 << 30)

typedef enum {
    K_GATHER, K_LOSS, K_HIDDEN_FWD, K_HIDDEN_BWD, K_MAX, K_LAMBDA, K_PUSH, K_SAMPLE,
    K_DOUBLE_DQN, K_TARGET, K_SUMMARY, K_BIAS_GRAD, K_BIAS_ACT, K_SUMSQ, K_ADAM, K_COUNT
} kernel_id;

static const char *const kernel_names[] = FH_Q_UPDATE_ENTRIES;
_Static_assert(sizeof kernel_names / sizeof kernel_names[0] == K_COUNT,
               "FH_Q_UPDATE_ENTRIES names every kernel_id, in order");

enum { G_FULL, G_TAIL, G_COUNT }; /* eng's graph slots. PQN: graph_steps full steps, one
                                     tail step; DQN: DQN_GRAPH_STEPS steps, one step */
_Static_assert(G_COUNT <= FH_UPDATE_ENGINE_MAX_GRAPHS && K_COUNT <= FH_UPDATE_ENGINE_MAX_KERNELS,
               "the engine holds every graph and kernel");

/* The settings baked into captured graphs: a run with others captures again. */
typedef struct {
    double max_grad_norm;
    float beta1, beta2, eps, huber_delta, weight_decay;
    int pqn_huber;
} baked_config;

struct fh_gpu_q_update {
    fh_device_info dev;
    fh_gpu_q_settings cfg;
    fh_net_kind net;
    int pqn;
    int n_episodes, n_steps;
    long long batch;           /* N * L */
    int minibatch, epochs;     /* PQN's epochs */
    /* PQN's step plan */
    int minibatches_per_epoch, full_steps, tail_rows, graph_steps;
    long long P;               /* the Q-network's params */
    long long stride;          /* P rounded up to 64 floats: each block of mem starts
                                  256-byte aligned (cuBLAS's vectorised kernels), the
                                  padding zero (no gradient, no step) */
    int adam_grid;
    fh_update_engine eng;      /* the module, its kernels, the main stream, the graphs */
    cudaStream_t side;
    fh_update_blas blas, blas_dw;
    float *mem;                /* (4, stride): params | grads | m | v */
    float *target;             /* (P) DQN's target network */
    fh_device_mlp train;       /* the online network, minibatch rows, with gradients */
    fh_device_mlp eval;        /* forward only: PQN's next-state pass, DQN's online Q(s') */
    fh_device_mlp teval;       /* DQN: the target network's Q(s') */
    int eval_rows;
    float *mb_states, *mb_targets, *dq;      /* (M, 54), (M), (M, 45) */
    int *mb_actions;
    float *mb_next, *mb_returns, *mb_discounts; /* DQN: (M, 54), (M), (M) */
    int *mb_slots;
    float *next_max, *returns; /* PQN: (N*L) */
    fh_gpu_replay ring;        /* DQN */
    double *partials, *loss_partials;
    unsigned *counter;
    fh_q_state *state, *h_state;
    unsigned long long *keys, *h_keys;
    double *records;
    long long records_rows;    /* capacity */
    fh_q_summary *summary, *h_summary;
    /* the binding of eng's graphs (batch pointers and baked settings) */
    const float *bound_states;
    const int *bound_actions;
    baked_config baked;
    int64_t adam_step;
    long long grad_steps;
};

static long long ceil_div(long long a, long long b)
{
    return (a + b - 1) / b;
}

static fh_status launch_rows(fh_gpu_q_update *u, kernel_id id, long long rows, void *args,
                             fh_error *err)
{
    return fh_update_engine_launch(&u->eng, id, (unsigned)ceil_div(rows, FH_Q_ROWS_PER_BLOCK),
                                   ROW_THREADS, args, err);
}

/* ---- one step ---- */

/* grad_sumsq_kernel then adam_kernel over the Q-network's buffer. */
static fh_status optimizer_step(fh_gpu_q_update *u, fh_error *err)
{
    fh_update_optimizer o = {
        .sumsq_kernel = K_SUMSQ, .adam_kernel = K_ADAM, .mem = u->mem, .n = u->stride,
        .partials = u->partials, .sumsq_blocks = SUMSQ_BLOCKS, .reduce_threads = REDUCE_THREADS,
        .adam_grid = u->adam_grid, .adam_threads = ADAM_THREADS, .state = &u->state->base,
        .curiosity = 0,
        .max_norm = u->baked.max_grad_norm > 0 ? u->baked.max_grad_norm : INFINITY,
        .beta1 = u->baked.beta1, .beta2 = u->baked.beta2, .eps = u->baked.eps,
        .weight_decay = u->baked.weight_decay, .records = u->records};
    return fh_update_engine_optimizer_step(&u->eng, &o, err);
}

/* The online network's forward on the minibatch, the loss, the backward, Adam. */
static fh_status train_step(fh_gpu_q_update *u, int rows, int huber, fh_error *err)
{
    fh_status st = fh_device_mlp_forward(&u->blas, &u->train, u->mb_states, rows, err);
    if (st != FH_OK)
        return st;
    fh_q_loss_args l = {
        .state = u->state, .q = fh_device_mlp_output(&u->train), .actions = u->mb_actions,
        .targets = u->mb_targets, .rows = rows,
        .minibatches_per_epoch = u->pqn ? u->minibatches_per_epoch : DQN_STEPS_PER_EPOCH,
        .huber = huber, .delta = u->baked.huber_delta, .dq = u->dq, .records = u->records,
        .partials = u->loss_partials, .counter = u->counter};
    if ((st = launch_rows(u, K_LOSS, rows, &l, err)) != FH_OK ||
        (st = fh_device_mlp_backward(&u->blas, &u->blas_dw, &u->train, u->dq, rows, err)) != FH_OK)
        return st;
    return optimizer_step(u, err);
}

/* One PQN step of `rows` rows at the device's position (bound_states: the batch). */
static fh_status pqn_step(fh_gpu_q_update *u, int rows, fh_error *err)
{
    fh_q_gather_args g = {
        .states = u->bound_states, .actions = u->bound_actions, .returns = u->returns,
        .state = u->state, .keys = u->keys, .n = u->batch, .minibatch = u->minibatch,
        .rows = rows, .mb_states = u->mb_states, .mb_actions = u->mb_actions,
        .mb_targets = u->mb_targets};
    fh_status st = launch_rows(u, K_GATHER, rows, &g, err);
    if (st != FH_OK)
        return st;
    return train_step(u, rows, u->baked.pqn_huber, err);
}

/* One DQN step: draw and gather a minibatch from the ring, the Double DQN targets, the
 * Huber step, the target network's schedule. */
static fh_status dqn_step(fh_gpu_q_update *u, fh_error *err)
{
    const int M = u->minibatch;
    fh_q_sample_args s = {
        .ring = u->ring.view, .state = u->state, .rows = M, .states = u->mb_states,
        .next_states = u->mb_next, .actions = u->mb_actions, .returns = u->mb_returns,
        .discounts = u->mb_discounts, .slots = u->mb_slots};
    fh_status st = launch_rows(u, K_SAMPLE, M, &s, err);
    if (st == FH_OK)
        st = fh_device_mlp_forward(&u->blas, &u->eval, u->mb_next, M, err);
    if (st == FH_OK)
        st = fh_device_mlp_forward(&u->blas, &u->teval, u->mb_next, M, err);
    if (st != FH_OK)
        return st;
    fh_q_double_dqn_args d = {
        .q_online = fh_device_mlp_output(&u->eval), .q_target = fh_device_mlp_output(&u->teval),
        .returns = u->mb_returns, .discounts = u->mb_discounts, .targets = u->mb_targets,
        .rows = M};
    if ((st = launch_rows(u, K_DOUBLE_DQN, M, &d, err)) != FH_OK ||
        (st = train_step(u, M, 1, err)) != FH_OK)
        return st;
    fh_q_target_args t = {.state = u->state, .params = u->mem, .target = u->target, .n = u->P,
                          .every = u->cfg.target_update_every, .tau = (float)u->cfg.tau};
    return fh_update_engine_launch(&u->eng, K_TARGET, (unsigned)ceil_div(u->P, ELEMENT_THREADS),
                                   ELEMENT_THREADS, &t, err);
}

/* One step as the engine captures it (ctx: the update). */
static fh_status q_step(void *ctx, int rows, fh_error *err)
{
    fh_gpu_q_update *u = ctx;
    return u->pqn ? pqn_step(u, rows, err) : dqn_step(u, err);
}

/* ---- graphs ---- */

/* `steps` steps of `rows` rows captured into graph slot `slot`. */
static fh_status capture(fh_gpu_q_update *u, int steps, int rows, int slot, fh_error *err)
{
    return fh_update_engine_capture(&u->eng, slot, q_step, u, steps, rows, err);
}

static baked_config baked_of(const fh_q_update_config *qc)
{
    baked_config b = {qc->max_grad_norm, qc->adam.beta1, qc->adam.beta2, qc->adam.eps,
                      qc->huber_delta, qc->adam.weight_decay, qc->pqn_huber};
    return b;
}

static int same_baked(const baked_config *a, const baked_config *b)
{
    return a->max_grad_norm == b->max_grad_norm && a->beta1 == b->beta1 &&
           a->beta2 == b->beta2 && a->eps == b->eps && a->huber_delta == b->huber_delta &&
           a->weight_decay == b->weight_decay && a->pqn_huber == b->pqn_huber;
}

/* The graphs for this batch and these settings (kept while the same come back). */
static fh_status bind(fh_gpu_q_update *u, const fh_dqn_device_batch *b,
                      const fh_q_update_config *qc, fh_error *err)
{
    baked_config k = baked_of(qc);
    const float *states = b ? b->states : NULL;
    const int *actions = b ? b->actions : NULL;
    if (u->eng.graphs[G_FULL] && same_baked(&u->baked, &k) && u->bound_states == states &&
        u->bound_actions == actions)
        return FH_OK;
    fh_update_engine_drop_graphs(&u->eng);
    u->baked = k;
    u->bound_states = states;
    u->bound_actions = actions;
    fh_status st = FH_OK;
    if (u->pqn) {
        if (u->full_steps > 0)
            st = capture(u, u->graph_steps, u->minibatch, G_FULL, err);
        if (st == FH_OK && u->tail_rows)
            st = capture(u, 1, u->tail_rows, G_TAIL, err);
    } else {
        st = capture(u, DQN_GRAPH_STEPS, u->minibatch, G_FULL, err);
        if (st == FH_OK)
            st = capture(u, 1, u->minibatch, G_TAIL, err);
    }
    if (st != FH_OK)
        fh_update_engine_drop_graphs(&u->eng);
    return st;
}

/* ---- create / destroy ---- */

void fh_gpu_q_update_destroy(fh_gpu_q_update *u)
{
    if (!u)
        return;
    fh_update_engine_stop(&u->eng);
    fh_device_mlp_free(&u->train);
    fh_device_mlp_free(&u->eval);
    fh_device_mlp_free(&u->teval);
    fh_update_blas_free(&u->blas);
    fh_update_blas_free(&u->blas_dw);
    fh_gpu_replay_free(&u->ring);
    void *bufs[] = {u->mem, u->target, u->mb_states, u->mb_targets, u->dq, u->mb_actions,
                    u->mb_next, u->mb_returns, u->mb_discounts, u->mb_slots, u->next_max,
                    u->returns, u->partials, u->loss_partials, u->counter, u->state, u->keys,
                    u->records, u->summary};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        cudaFree(bufs[i]);
    cudaFreeHost(u->h_state);
    cudaFreeHost(u->h_keys);
    cudaFreeHost(u->h_summary);
    if (u->side)
        cudaStreamDestroy(u->side);
    fh_update_engine_free(&u->eng);
    free(u);
}

/* The DQN records' capacity: at least `rows` (the graphs bake the pointer). */
static fh_status reserve_records(fh_gpu_q_update *u, long long rows, fh_error *err)
{
    if (rows <= u->records_rows)
        return FH_OK;
    fh_update_engine_drop_graphs(&u->eng);
    cudaFree(u->records);
    u->records = NULL;
    u->records_rows = 0;
    CUDA_CHECK(cudaMalloc((void **)&u->records, (size_t)rows * FH_UREC_COLS * sizeof(double)), err);
    u->records_rows = rows;
    return FH_OK;
fail:
    return err->status;
}

/* PQN's steps: an epoch is minibatches_per_epoch steps, the last short when the batch is
 * not a multiple of the minibatch; graph_steps full steps a graph, the largest divisor
 * of the epoch's full steps up to GRAPH_MAX_STEPS (update_plan.c's rule). */
static fh_status plan_pqn(fh_gpu_q_update *u, fh_error *err)
{
    if (u->minibatch > u->batch)
        return fh_error_set(err, FH_ERR_INPUT, "PQN minibatch %d is larger than the collection "
                            "(%lld = episodes x steps)", u->minibatch, u->batch);
    if (u->epochs < 1)
        return fh_error_set(err, FH_ERR_INPUT, "PQN needs at least 1 epoch, got %d", u->epochs);
    u->minibatches_per_epoch = (int)ceil_div(u->batch, u->minibatch);
    u->full_steps = (int)(u->batch / u->minibatch);
    u->tail_rows = (int)(u->batch % u->minibatch);
    u->graph_steps = 1;
    for (int s = GRAPH_MAX_STEPS; s >= 1; s--)
        if (u->full_steps % s == 0) {
            u->graph_steps = s;
            break;
        }
    return FH_OK;
}

fh_status fh_gpu_q_update_create(fh_gpu_q_update **out, const fh_device_info *dev,
                                 fh_net_kind net, int n_episodes, int n_steps,
                                 fh_gpu_q_settings s, fh_error *err)
{
    *out = NULL;
    if (net != FH_NET_PQN && net != FH_NET_QNET)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: network kind %d is not a Q-network",
                            __FILE__, __LINE__, (int)net);
    if (n_episodes < 1 || n_steps < 1 || s.minibatch < 1)
        return fh_error_set(err, FH_ERR_INPUT, "a Q update of %d x %d steps, minibatch %d",
                            n_episodes, n_steps, s.minibatch);
    fh_gpu_q_update *u = calloc(1, sizeof *u);
    if (!u)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
    u->dev = *dev;
    u->cfg = s;
    u->net = net;
    u->pqn = net == FH_NET_PQN;
    u->n_episodes = n_episodes;
    u->n_steps = n_steps;
    u->batch = (long long)n_episodes * n_steps;
    u->minibatch = s.minibatch;
    u->epochs = s.epochs;
    u->P = (long long)fh_net_desc_get(net)->n_params;
    u->stride = ceil_div(u->P, 64) * 64;
    int waves = dev->sm_count > 0 ? 4 * dev->sm_count : 4;
    long long adam_blocks = ceil_div(u->stride, ADAM_THREADS);
    u->adam_grid = (int)(adam_blocks < waves ? adam_blocks : waves);
    fh_status st = u->pqn ? plan_pqn(u, err) : FH_OK;
    if (st != FH_OK)
        goto fail_status;
    const int precision = s.precision;
    if (precision == FH_PRECISION_BF16) {
        st = fh_error_set(err, FH_ERR_INPUT, "--precision bf16 is the PPO update's; PQN and "
                          "DQN take fp32 or tf32");
        goto fail_status;
    }
    const long long P = u->P;
    const size_t M = (size_t)u->minibatch, n = (size_t)u->batch;
    const char *const options[] = FH_Q_UPDATE_OPTIONS;
    if ((st = fh_update_engine_init(&u->eng, dev, Q_KERNEL_FILE, options,
                                    (int)(sizeof options / sizeof options[0]), kernel_names,
                                    K_COUNT, err)) != FH_OK)
        goto fail_status;
    CUDA_CHECK(cudaStreamCreateWithFlags(&u->side, cudaStreamNonBlocking), err);
    const cudaKernel_t *k = u->eng.k;
    if ((st = fh_update_blas_init(&u->blas, u->eng.stream, precision, k[K_BIAS_GRAD], k[K_BIAS_ACT],
                                  err)) != FH_OK ||
        (st = fh_update_blas_init(&u->blas_dw, u->side, precision, k[K_BIAS_GRAD], k[K_BIAS_ACT],
                                  err)) != FH_OK)
        goto fail_status;
    fh_update_blas_set_hidden(&u->blas, k[K_HIDDEN_FWD], k[K_HIDDEN_BWD]);
    fh_update_blas_set_hidden(&u->blas_dw, k[K_HIDDEN_FWD], k[K_HIDDEN_BWD]);
    /* programmatic dependent launch by the PPO update's rule (update_plan.h); every
     * kernel of q_update.cu and layer_elementwise.cu waits at its top (pdl.cuh) */
    fh_gpu_overrides ov;
    if ((st = fh_gpu_overrides_from_env(&ov, err)) != FH_OK)
        goto fail_status;
    u->eng.pdl = fh_update_pdl(dev->cc_major, ov.update_pdl == 0);
    fh_update_blas_set_pdl(&u->blas, u->eng.pdl);
    fh_update_blas_set_pdl(&u->blas_dw, u->eng.pdl);

    CUDA_CHECK(cudaMalloc((void **)&u->mem, 4 * (size_t)u->stride * sizeof(float)), err);
    CUDA_CHECK(cudaMemset(u->mem, 0, 4 * (size_t)u->stride * sizeof(float)), err);
    CUDA_CHECK(cudaMalloc((void **)&u->mb_states, M * FH_STATE_DIM * sizeof(float)), err);
    CUDA_CHECK(cudaMalloc((void **)&u->mb_targets, M * sizeof(float)), err);
    CUDA_CHECK(cudaMalloc((void **)&u->mb_actions, M * sizeof(int)), err);
    CUDA_CHECK(cudaMalloc((void **)&u->dq, M * FH_N_ACTIONS * sizeof(float)), err);
    CUDA_CHECK(cudaMalloc((void **)&u->partials, SUMSQ_BLOCKS * sizeof(double)), err);
    CUDA_CHECK(cudaMalloc((void **)&u->loss_partials, (size_t)ceil_div((long long)M,
               FH_Q_ROWS_PER_BLOCK) * FH_Q_LOSS_STATS * sizeof(double)), err);
    CUDA_CHECK(cudaMalloc((void **)&u->counter, sizeof(unsigned)), err);
    CUDA_CHECK(cudaMemset(u->counter, 0, sizeof(unsigned)), err);
    CUDA_CHECK(cudaMalloc((void **)&u->state, sizeof *u->state), err);
    CUDA_CHECK(cudaMalloc((void **)&u->summary, sizeof *u->summary), err);
    CUDA_CHECK(cudaMallocHost((void **)&u->h_state, sizeof *u->h_state), err);
    CUDA_CHECK(cudaMallocHost((void **)&u->h_summary, sizeof *u->h_summary), err);
    if ((st = fh_device_mlp_init(&u->train, net, u->mem, u->mem + u->stride, NULL, (int)M, err)) != FH_OK)
        goto fail_status;
    if (u->pqn) {
        int keys = u->epochs;
        CUDA_CHECK(cudaMalloc((void **)&u->keys, (size_t)keys * sizeof(unsigned long long)), err);
        CUDA_CHECK(cudaMallocHost((void **)&u->h_keys, (size_t)keys * sizeof(unsigned long long)), err);
        CUDA_CHECK(cudaMalloc((void **)&u->next_max, n * sizeof(float)), err);
        CUDA_CHECK(cudaMalloc((void **)&u->returns, n * sizeof(float)), err);
        u->eval_rows = (int)(u->batch < EVAL_CHUNK ? u->batch : EVAL_CHUNK);
        if ((st = fh_device_mlp_init(&u->eval, net, u->mem, NULL, NULL, u->eval_rows, err)) != FH_OK ||
            (st = reserve_records(u, (long long)u->epochs * u->minibatches_per_epoch,
                                  err)) != FH_OK)
            goto fail_status;
    } else {
        CUDA_CHECK(cudaMalloc((void **)&u->target, (size_t)P * sizeof(float)), err);
        CUDA_CHECK(cudaMemset(u->target, 0, (size_t)P * sizeof(float)), err);
        CUDA_CHECK(cudaMalloc((void **)&u->mb_next, M * FH_STATE_DIM * sizeof(float)), err);
        CUDA_CHECK(cudaMalloc((void **)&u->mb_returns, M * sizeof(float)), err);
        CUDA_CHECK(cudaMalloc((void **)&u->mb_discounts, M * sizeof(float)), err);
        CUDA_CHECK(cudaMalloc((void **)&u->mb_slots, M * sizeof(int)), err);
        CUDA_CHECK(cudaMemset(u->mb_slots, 0, M * sizeof(int)), err);
        u->eval_rows = (int)M;
        long long per_iteration = llround(s.replay_ratio * (double)u->batch);
        if ((st = fh_device_mlp_init(&u->eval, net, u->mem, NULL, NULL, (int)M, err)) != FH_OK ||
            (st = fh_device_mlp_init(&u->teval, net, u->target, NULL, NULL, (int)M, err)) != FH_OK ||
            (st = fh_gpu_replay_init(&u->ring, s.replay_capacity, err)) != FH_OK ||
            (st = reserve_records(u, per_iteration > 1 ? per_iteration : 1, err)) != FH_OK)
            goto fail_status;
    }
    CUDA_CHECK(cudaDeviceSynchronize(), err); /* the memsets ran on the legacy stream */
    *out = u;
    return FH_OK;
fail:
fail_status:
    fh_gpu_q_update_destroy(u);
    return err->status;
}

const float *fh_gpu_q_update_params(const fh_gpu_q_update *u)
{
    return u->mem;
}

long long fh_gpu_q_update_grad_steps(const fh_gpu_q_update *u)
{
    return u->grad_steps;
}

void fh_gpu_q_update_set_grad_steps(fh_gpu_q_update *u, long long grad_steps)
{
    u->grad_steps = grad_steps;
}

const fh_gpu_replay *fh_gpu_q_update_ring(const fh_gpu_q_update *u)
{
    return &u->ring;
}

fh_status fh_gpu_q_update_download_ring(fh_gpu_q_update *u, fh_replay *out, fh_error *err)
{
    if (u->pqn)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: PQN has no replay ring", __FILE__,
                            __LINE__);
    return fh_gpu_replay_download(&u->ring, out, err);
}

fh_status fh_gpu_q_update_upload_ring(fh_gpu_q_update *u, const fh_replay *in, fh_error *err)
{
    if (u->pqn)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: PQN has no replay ring", __FILE__,
                            __LINE__);
    return fh_gpu_replay_upload(&u->ring, in, err);
}

float fh_gpu_q_update_last_ms(const fh_gpu_q_update *u)
{
    return u->eng.last_ms;
}

/* ---- host <-> device ---- */

static fh_status check_net(const fh_gpu_q_update *u, const fh_mlp *m, const char *what,
                           fh_error *err)
{
    if (m->desc->kind != u->net || (long long)m->n_params != u->P)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: the %s is a %s (%zu params), the update "
                            "a %s", __FILE__, __LINE__, what, m->desc->name, m->n_params,
                            fh_net_desc_get(u->net)->name);
    return FH_OK;
}

/* The Q-network's params, m and v, and DQN's target's params, up (target NULL: a copy of
 * q) or back (target NULL: not downloaded), then a wait. */
static fh_status copy_nets(fh_gpu_q_update *u, fh_mlp *q, fh_mlp *target, int upload,
                           fh_error *err)
{
    fh_status st = check_net(u, q, "Q-network", err);
    if (st == FH_OK && target && !u->pqn)
        st = check_net(u, target, "target network", err);
    if (st == FH_OK)
        st = fh_update_engine_copy_net(&u->eng, u->mem, u->stride, 0, q, upload, err);
    if (st != FH_OK)
        return st;
    const size_t bytes = (size_t)u->P * sizeof(float);
    if (upload && !u->pqn)
        CUDA_CHECK(cudaMemcpyAsync(u->target, target ? target->params : q->params, bytes,
                                   cudaMemcpyHostToDevice, u->eng.stream), err);
    if (!upload && target && !u->pqn)
        CUDA_CHECK(cudaMemcpyAsync(target->params, u->target, bytes, cudaMemcpyDeviceToHost,
                                   u->eng.stream), err);
    CUDA_CHECK(cudaStreamSynchronize(u->eng.stream), err);
    return FH_OK;
fail:
    return err->status;
}

fh_status fh_gpu_q_update_upload(fh_gpu_q_update *u, const fh_mlp *q, const fh_mlp *target,
                                 fh_error *err)
{
    fh_status st = copy_nets(u, (fh_mlp *)q, (fh_mlp *)target, 1, err);
    if (st == FH_OK)
        u->adam_step = q->adam_step;
    return st;
}

fh_status fh_gpu_q_update_download(fh_gpu_q_update *u, fh_mlp *q, fh_mlp *target,
                                   fh_error *err)
{
    fh_status st = copy_nets(u, q, target, 0, err);
    if (st != FH_OK)
        return st;
    q->adam_step = u->adam_step;
    st = fh_mlp_check_finite(q, err);
    if (st == FH_OK && target && !u->pqn)
        st = fh_mlp_check_finite(target, err);
    return st;
}

fh_status fh_gpu_q_update_download_returns(fh_gpu_q_update *u, float *next_max,
                                           float *returns, fh_error *err)
{
    if (!u->pqn)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: a DQN update has no Q(lambda) returns",
                            __FILE__, __LINE__);
    size_t bytes = (size_t)u->batch * sizeof(float);
    if (next_max)
        CUDA_CHECK(cudaMemcpyAsync(next_max, u->next_max, bytes, cudaMemcpyDeviceToHost,
                                   u->eng.stream), err);
    if (returns)
        CUDA_CHECK(cudaMemcpyAsync(returns, u->returns, bytes, cudaMemcpyDeviceToHost,
                                   u->eng.stream), err);
    CUDA_CHECK(cudaStreamSynchronize(u->eng.stream), err);
    return FH_OK;
fail:
    return err->status;
}

fh_status fh_gpu_q_update_download_grads(fh_gpu_q_update *u, float *grads, fh_error *err)
{
    CUDA_CHECK(cudaMemcpyAsync(grads, u->mem + u->stride, (size_t)u->P * sizeof(float),
                               cudaMemcpyDeviceToHost, u->eng.stream), err);
    CUDA_CHECK(cudaStreamSynchronize(u->eng.stream), err);
    return FH_OK;
fail:
    return err->status;
}

fh_status fh_gpu_q_update_download_minibatch(fh_gpu_q_update *u, float *states,
                                             int32_t *actions, float *targets,
                                             int32_t *slots, fh_error *err)
{
    const size_t M = (size_t)u->minibatch;
    _Static_assert(sizeof(int32_t) == sizeof(int), "actions and slots are int on the device");
    if (states)
        CUDA_CHECK(cudaMemcpyAsync(states, u->mb_states, M * FH_STATE_DIM * sizeof(float),
                                   cudaMemcpyDeviceToHost, u->eng.stream), err);
    if (actions)
        CUDA_CHECK(cudaMemcpyAsync(actions, u->mb_actions, M * sizeof(int),
                                   cudaMemcpyDeviceToHost, u->eng.stream), err);
    if (targets)
        CUDA_CHECK(cudaMemcpyAsync(targets, u->mb_targets, M * sizeof(float),
                                   cudaMemcpyDeviceToHost, u->eng.stream), err);
    if (slots && u->mb_slots)
        CUDA_CHECK(cudaMemcpyAsync(slots, u->mb_slots, M * sizeof(int), cudaMemcpyDeviceToHost,
                                   u->eng.stream), err);
    CUDA_CHECK(cudaStreamSynchronize(u->eng.stream), err);
    return FH_OK;
fail:
    return err->status;
}

fh_status fh_gpu_q_update_download_records(fh_gpu_q_update *u, double *records, int max_rows,
                                           int *n_rows, fh_error *err)
{
    CUDA_CHECK(cudaStreamSynchronize(u->eng.stream), err);
    int n = u->h_summary->minibatches < max_rows ? u->h_summary->minibatches : max_rows;
    *n_rows = n;
    if (n > 0)
        CUDA_CHECK(cudaMemcpy(records, u->records, (size_t)n * FH_UREC_COLS * sizeof(double),
                              cudaMemcpyDeviceToHost), err);
    return FH_OK;
fail:
    return err->status;
}

/* ---- a run ---- */

/* The state a run starts from: position 0, the Adam step, this iteration's lr. */
static void start_state(fh_gpu_q_update *u, const fh_q_update_config *qc)
{
    fh_q_state *s = u->h_state;
    memset(s, 0, sizeof *s);
    s->base.ppo.adam_step = u->adam_step;
    s->base.lr = qc->adam.lr;
    s->base.epochs = u->pqn ? u->epochs : 0;
    s->grad_steps = u->grad_steps;
    s->ring_size = u->ring.size;
}

/* The summary kernel, its copy back, and the wait; fills stats, or fails naming the
 * step that stopped the run. */
static fh_status finish_run(fh_gpu_q_update *u, fh_q_stats *stats, fh_error *err)
{
    fh_q_summary_args sa = {.state = u->state, .records = u->records, .summary = u->summary};
    fh_status st = fh_update_engine_launch(&u->eng, K_SUMMARY, 1, 32, &sa, err);
    if (st == FH_OK)
        st = fh_update_engine_end(&u->eng, u->h_summary, u->summary, sizeof *u->summary, err);
    if (st != FH_OK)
        return st;
    const fh_q_summary *s = u->h_summary;
    u->adam_step = s->adam_step;
    u->grad_steps = s->grad_steps;
    if (s->failed) {
        const char *what = s->failed == FH_QFAIL_LOSS ? "TD loss" : "gradient norm";
        if (u->pqn)
            return fh_error_set(err, FH_ERR_FAILURE, "PQN epoch %d: the %s is not finite "
                                "(minibatch %d of the epoch); the update stopped before that "
                                "step", s->failed_epoch + 1, what, s->failed_minibatch + 1);
        return fh_error_set(err, FH_ERR_FAILURE, "DQN step %d: the %s is not finite; the update "
                            "stopped before that step", s->failed_minibatch + 1, what);
    }
    stats->loss = s->loss;
    stats->mean_q = s->mean_q;
    stats->mean_target = s->mean_target;
    stats->grad_norm = s->grad_norm;
    stats->minibatches = s->minibatches;
    return FH_OK;
}

static fh_status check_batch(const fh_gpu_q_update *u, const fh_dqn_device_batch *b,
                             fh_error *err)
{
    if (b->n_episodes != u->n_episodes || b->n_steps != u->n_steps || !b->states ||
        !b->next_states || !b->actions || !b->rewards || !b->terminal || !b->truncated)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: a %d x %d collection for a %d x %d "
                            "update (or a buffer missing)", __FILE__, __LINE__, b->n_episodes,
                            b->n_steps, u->n_episodes, u->n_steps);
    return FH_OK;
}

/* PQN's targets: max_a Q(s', a) chunk by chunk with the network as it is, then the scan. */
static fh_status pqn_targets(fh_gpu_q_update *u, const fh_dqn_device_batch *b,
                             const fh_q_update_config *qc, fh_error *err)
{
    fh_status st = FH_OK;
    for (long long r = 0; r < u->batch && st == FH_OK; r += u->eval_rows) {
        int rows = (int)(u->batch - r < u->eval_rows ? u->batch - r : u->eval_rows);
        st = fh_device_mlp_forward(&u->blas, &u->eval, b->next_states + r * FH_STATE_DIM, rows,
                                   err);
        fh_q_max_args m = {.q = fh_device_mlp_output(&u->eval), .out = u->next_max + r,
                           .rows = rows};
        if (st == FH_OK)
            st = launch_rows(u, K_MAX, rows, &m, err);
    }
    if (st != FH_OK)
        return st;
    fh_q_lambda_args l = {
        .rewards = b->rewards, .terminal = b->terminal, .truncated = b->truncated,
        .next_max = u->next_max, .n_episodes = u->n_episodes, .n_steps = u->n_steps,
        .gamma = qc->gamma, .lambda = qc->lambda, .out = u->returns};
    return fh_update_engine_launch(&u->eng, K_LAMBDA,
                                   (unsigned)ceil_div(u->n_episodes, SCAN_THREADS), SCAN_THREADS,
                                   &l, err);
}

fh_status fh_gpu_pqn_update_run(fh_gpu_q_update *u, const fh_dqn_device_batch *b,
                                const fh_q_update_config *qc, fh_rng *rng, int max_steps,
                                fh_q_stats *stats, fh_error *err)
{
    memset(stats, 0, sizeof *stats);
    if (!u->pqn)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: a PQN run on a DQN update", __FILE__,
                            __LINE__);
    if (qc->epochs != u->epochs || qc->minibatch != u->minibatch)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: %d epochs of %d, created for %d of %d",
                            __FILE__, __LINE__, qc->epochs, qc->minibatch, u->epochs,
                            u->minibatch);
    fh_status st = check_batch(u, b, err);
    if (st == FH_OK)
        st = bind(u, b, qc, err);
    if (st != FH_OK)
        return st;
    /* the keys: every epoch's first, from the update's stream (fh_pqn_update's draws) */
    for (int e = 0; e < u->epochs; e++)
        u->h_keys[e] = fh_minibatch_key(rng);
    start_state(u, qc);
    if ((st = fh_update_engine_begin(&u->eng, u->state, u->h_state, sizeof *u->h_state, u->keys,
                                     u->h_keys, (size_t)u->epochs * sizeof(unsigned long long),
                                     err)) != FH_OK ||
        (st = pqn_targets(u, b, qc, err)) != FH_OK)
        return st;
    if (max_steps > 0) { /* tests: eagerly, step by step */
        for (int s = 0; s < max_steps && st == FH_OK; s++) {
            int last = s % u->minibatches_per_epoch == u->minibatches_per_epoch - 1;
            st = pqn_step(u, last && u->tail_rows ? u->tail_rows : u->minibatch, err);
        }
    } else {
        for (int e = 0; e < u->epochs && st == FH_OK; e++)
            st = fh_update_engine_replay_epoch(&u->eng, G_FULL, u->full_steps / u->graph_steps,
                                               G_TAIL, err);
    }
    if (st != FH_OK)
        return st;
    return finish_run(u, stats, err);
}

fh_status fh_gpu_dqn_push(fh_gpu_q_update *u, const fh_dqn_device_batch *b, fh_error *err)
{
    if (u->pqn)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: a replay push on a PQN update",
                            __FILE__, __LINE__);
    fh_status st = check_batch(u, b, err);
    if (st == FH_OK)
        st = fh_gpu_replay_push(&u->ring, u->eng.k[K_PUSH], u->eng.stream, b, u->cfg.n_step,
                                (float)u->cfg.gamma, err);
    if (st != FH_OK)
        return st;
    CUDA_CHECK(cudaStreamSynchronize(u->eng.stream), err); /* b may be overwritten next */
    return FH_OK;
fail:
    return err->status;
}

fh_status fh_gpu_dqn_steps(fh_gpu_q_update *u, long long n_steps, const fh_q_update_config *qc,
                           fh_rng *rng, fh_q_stats *stats, fh_error *err)
{
    memset(stats, 0, sizeof *stats);
    if (u->pqn)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: DQN steps on a PQN update", __FILE__,
                            __LINE__);
    if (qc->minibatch != u->minibatch)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: minibatch %d, created for %d",
                            __FILE__, __LINE__, qc->minibatch, u->minibatch);
    if (n_steps <= 0)
        return FH_OK;
    if (u->ring.size < 1)
        return fh_error_set(err, FH_ERR_FAILURE, "cannot sample from an empty replay ring: push "
                            "a collection first (learning starts after the ring holds "
                            "transitions)");
    fh_status st = reserve_records(u, n_steps, err);
    if (st == FH_OK)
        st = bind(u, NULL, qc, err);
    if (st != FH_OK)
        return st;
    start_state(u, qc);
    u->h_state->rng_state = rng->state;
    u->h_state->rng_inc = rng->inc;
    if ((st = fh_update_engine_begin(&u->eng, u->state, u->h_state, sizeof *u->h_state, NULL,
                                     NULL, 0, err)) != FH_OK ||
        (st = fh_update_engine_replay(&u->eng, G_FULL, n_steps / DQN_GRAPH_STEPS, err)) != FH_OK ||
        (st = fh_update_engine_replay(&u->eng, G_TAIL, n_steps % DQN_GRAPH_STEPS, err)) != FH_OK)
        return st;
    /* the host's stream where fh_replay_sample's would be: M draws a step */
    fh_pcg32_advance(rng, (unsigned long long)n_steps * (unsigned long long)u->minibatch);
    return finish_run(u, stats, err);
}

fh_status fh_gpu_dqn_update_run(fh_gpu_q_update *u, const fh_dqn_device_batch *b,
                                const fh_q_update_config *qc, fh_rng *rng, fh_q_stats *stats,
                                fh_error *err)
{
    memset(stats, 0, sizeof *stats);
    fh_status st = fh_gpu_dqn_push(u, b, err);
    if (st != FH_OK || u->ring.size < u->cfg.learning_starts)
        return st;
    long long steps = llround(u->cfg.replay_ratio * (double)u->batch);
    return fh_gpu_dqn_steps(u, steps, qc, rng, stats, err);
}
