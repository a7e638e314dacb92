/* gpu_ppo_update.c — see gpu_ppo_update.h. The plan (update_plan.c) carried out: one
 * stream; each step enqueued by ppo_step / curiosity_step (gather, forward, loss,
 * backward, norm, Adam), `graph_steps` of them captured into one CUDA graph, replayed
 * until the epochs are done; the step's position and the Adam step live on the device
 * (update_args.h), so every replay of a graph is the same graph. The module, the stream,
 * the checked launches, the graphs and the optimiser's step are gpu_update_engine.h's,
 * shared with gpu_q_update.c and gpu_curiosity.c. Data-parallel (a reducer set: issue
 * 22), the steps also hold the all-reduces over the ranks (gpu_ppo_update.h). */
#include "cuda/gpu_ppo_update_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "env/common_device_functions.cuh"
#include "env/minibatch_order.cuh"

static void release_reducer(fh_gpu_ppo_update *u);

enum { G_PPO_FULL, G_PPO_TAIL, G_CUR_FULL, G_CUR_TAIL }; /* eng's graph slots */
_Static_assert(G_CUR_TAIL < FH_UPDATE_ENGINE_MAX_GRAPHS && K_COUNT <= FH_UPDATE_ENGINE_MAX_KERNELS,
               "the engine holds every graph and kernel");

/* grad_sumsq_kernel then adam_kernel over one phase's buffer. */
static fh_status optimizer_step(fh_gpu_ppo_update *u, int curiosity, fh_error *err)
{
    const fh_update_plan *p = &u->plan;
    fh_update_optimizer o = {
        .sumsq_kernel = K_SUMSQ, .adam_kernel = K_ADAM,
        .mem = curiosity ? u->cur_mem : u->ppo_mem,
        .n = curiosity ? p->curiosity_params : p->ppo_params, .partials = u->partials,
        .sumsq_blocks = p->sumsq_blocks, .reduce_threads = p->reduce_threads,
        .adam_grid = curiosity ? p->curiosity_adam_grid : p->adam_grid,
        .adam_threads = p->adam_threads, .state = u->state, .curiosity = curiosity,
        .max_norm = curiosity ? INFINITY
                              : (u->cfg.max_grad_norm > 0 ? u->cfg.max_grad_norm : INFINITY),
        .beta1 = 0.9f, .beta2 = 0.999f,
        .eps = curiosity ? 1e-8f : (float)u->cfg.adam_eps,
        .weight_decay = curiosity ? 0.0f : (float)u->cfg.weight_decay,
        .records = curiosity ? NULL : u->records,
        .params16 = curiosity ? u->cur16 : u->ppo16,
        .n_padded = curiosity ? u->n_cur_padded : u->n_ppo_padded};
    for (int k = 0; k < o.n_padded; k++)
        o.padded[k] = curiosity ? u->cur_padded[k] : u->ppo_padded[k];
    return fh_update_engine_optimizer_step(&u->eng, &o, err);
}

/* ---- data parallelism (gpu_ppo_update.h) ---- */

static int distributed(const fh_gpu_ppo_update *u)
{
    return u->reducer.allreduce != NULL;
}

/* In place over the ranks, on the update's stream. */
static fh_status reduce(fh_gpu_ppo_update *u, void *buf, size_t count, fh_reduce_type type,
                        fh_reduce_op op, fh_error *err)
{
    return u->reducer.allreduce(u->reducer.ctx, buf, count, type, op, u->eng.stream, err);
}

/* Without graphs: an event before and after each reduction (reduce_ms). */
static fh_status reduce_mark(fh_gpu_ppo_update *u, fh_error *err)
{
    if (u->reducer.graphs || u->reduce_used >= u->reduce_capacity)
        return FH_OK;
    CUDA_CHECK(cudaEventRecord(u->reduce_events[u->reduce_used++], u->eng.stream), err);
    return FH_OK;
fail:
    return err->status;
}

/* The minibatch's advantage sums over every rank's rows, then the normalisation. */
static fh_status reduce_advantages(fh_gpu_ppo_update *u, int rows, fh_error *err)
{
    fh_adv_finish_args f = {.state = u->state, .sums = u->dist_sums + DIST_ADV,
                            .rows = (long long)rows * u->reducer.world};
    fh_status st;
    if ((st = reduce_mark(u, err)) != FH_OK ||
        (st = reduce(u, u->dist_sums + DIST_ADV, 2, FH_REDUCE_F64, FH_REDUCE_SUM, err)) != FH_OK ||
        (st = reduce_mark(u, err)) != FH_OK)
        return st;
    return fh_update_engine_launch(&u->eng, K_ADV_FINISH, 1, 32, &f, err);
}

/* After the backward pass: the loss's sums and the gradients over the ranks in one
 * group, then the step's end (ppo_loss_finish_kernel) before the optimiser. */
static fh_status reduce_step(fh_gpu_ppo_update *u, const fh_ppo_loss_args *l, fh_error *err)
{
    long long P = u->plan.ppo_params;
    fh_status st;
    if ((st = reduce_mark(u, err)) != FH_OK ||
        (st = u->reducer.group(u->reducer.ctx, 1, err)) != FH_OK)
        return st;
    st = reduce(u, u->dist_sums + DIST_LOSS, FH_LOSS_STATS, FH_REDUCE_F64, FH_REDUCE_SUM, err);
    if (st == FH_OK)
        st = reduce(u, u->ppo_mem + P, (size_t)P, FH_REDUCE_F32, FH_REDUCE_AVG, err);
    fh_error ignored; /* the group is closed either way; the first failure is the one told */
    fh_status end = u->reducer.group(u->reducer.ctx, 0, st == FH_OK ? err : &ignored);
    if (st != FH_OK)
        return st;
    if (end != FH_OK || (st = reduce_mark(u, err)) != FH_OK)
        return end != FH_OK ? end : st;
    fh_ppo_loss_args f = *l;
    return fh_update_engine_launch(&u->eng, K_LOSS_FINISH, 1, 32, &f, err);
}

/* One PPO step of `rows` rows at the device's position. Three streams, joined before
 * the optimiser (in the graph: parallel branches): the actor's forward and backward
 * beside the critic's, the critic's weight gradients beside its chain of input
 * gradients. */
static fh_status ppo_step(fh_gpu_ppo_update *u, int rows, fh_error *err)
{
    const fh_update_plan *p = &u->plan;
    cudaStream_t s0 = u->eng.stream, s1 = u->blas_actor.stream;
    fh_ppo_gather_args g = {
        .batch = u->bound, .state = u->state, .keys = u->keys, .minibatch = p->problem.minibatch,
        .rows = rows, .states = u->mb_states, .states16 = u->mb_states16,
        .actions = u->mb_actions,
        .old_logp = u->mb_old_logp, .adv = u->mb_adv, .returns = u->mb_returns,
        .old_values = u->mb_old_values, .norm_adv = u->cfg.norm_adv,
        .partials = u->gather_partials, .counter = &u->counters[0],
        .dist_sums = distributed(u) ? u->dist_sums + DIST_ADV : NULL};
    int tail = rows != p->problem.minibatch;
    unsigned grid = (unsigned)(tail ? p->tail_gather_grid : p->gather_grid);
    fh_status st = fh_update_engine_launch(&u->eng, K_PPO_GATHER, grid,
                                           (unsigned)p->gather_threads, &g, err);
    if (st != FH_OK)
        return st;
    CUDA_CHECK(cudaEventRecord(u->ev_fork, s0), err);
    CUDA_CHECK(cudaStreamWaitEvent(s1, u->ev_fork, 0), err);
    if (distributed(u) && u->cfg.norm_adv && (st = reduce_advantages(u, rows, err)) != FH_OK)
        return st;
    if ((st = fh_device_mlp_forward(&u->blas_actor, &u->actor, u->mb_states, rows, err)) != FH_OK)
        return st;
    CUDA_CHECK(cudaEventRecord(u->ev_actor_fwd, s1), err);
    if ((st = fh_device_mlp_forward_hidden(&u->blas, &u->critic, u->mb_states, rows, err)) != FH_OK)
        return st;
    CUDA_CHECK(cudaStreamWaitEvent(s0, u->ev_actor_fwd, 0), err);
    fh_device_mlp_head head = fh_device_mlp_head_view(&u->critic);
    unsigned loss_grid = (unsigned)(tail ? p->tail_loss_grid : p->loss_grid);
    fh_ppo_loss_args l = {
        .state = u->state, .logits = fh_device_mlp_output(&u->actor), .values = head.values,
        .actions = u->mb_actions,
        .old_logp = u->mb_old_logp, .adv = u->mb_adv, .returns = u->mb_returns,
        .old_values = u->mb_old_values, .rows = rows,
        .minibatches_per_epoch = p->minibatches_per_epoch,
        .clip_coef = (float)u->cfg.clip,
        .vclip_coef = u->cfg.clip_vloss ? (float)u->cfg.clip : 0.0f,
        .vf_coef = (float)u->cfg.vf_coef,
        .norm_adv = u->cfg.norm_adv, .target_kl = u->cfg.target_kl > 0 ? u->cfg.target_kl : 0.0,
        .dlogits = u->dlogits, .head_in = head.in, .head_in16 = head.in16, .head_w = head.w,
        .head_b = head.b, .hidden_dz = head.hidden_dz, .hidden_dz16 = head.hidden_dz16,
        .head_partials = u->head_partials, .records = u->records,
        .partials = u->loss_partials, .counter = &u->counters[1],
        .dist_sums = distributed(u) ? u->dist_sums + DIST_LOSS : NULL,
        .total_rows = (long long)rows * u->reducer.world};
    if ((st = fh_update_engine_launch(&u->eng, K_PPO_LOSS, loss_grid,
                                      (unsigned)p->loss_threads, &l, err)) != FH_OK)
        return st;
    CUDA_CHECK(cudaEventRecord(u->ev_loss, s0), err);
    CUDA_CHECK(cudaStreamWaitEvent(s1, u->ev_loss, 0), err);
    /* the value head's gradients from the loss's block sums, on the weight gradients'
     * stream (before the critic's weight gradients there) */
    CUDA_CHECK(cudaStreamWaitEvent(u->blas_dw.stream, u->ev_loss, 0), err);
    fh_ppo_head_grad_args hg = {.partials = u->head_partials, .blocks = (int)loss_grid,
                                .head_dw = head.dw, .head_db = head.db,
                                .hidden_db = head.hidden_db};
    if ((st = fh_update_engine_launch_on(&u->eng, u->blas_dw.stream, K_HEAD_GRAD,
                                         (unsigned)p->head_grad_grid,
                                         (unsigned)p->head_grad_threads, &hg, err)) != FH_OK)
        return st;
    if ((st = fh_device_mlp_backward(&u->blas_actor, NULL, &u->actor, u->dlogits, rows,
                                     err)) != FH_OK)
        return st;
    CUDA_CHECK(cudaEventRecord(u->ev_actor_bwd, s1), err);
    if ((st = fh_device_mlp_backward_hidden(&u->blas, &u->blas_dw, &u->critic, rows,
                                            err)) != FH_OK)
        return st;
    CUDA_CHECK(cudaStreamWaitEvent(s0, u->ev_actor_bwd, 0), err);
    if (distributed(u) && (st = reduce_step(u, &l, err)) != FH_OK)
        return st;
    return optimizer_step(u, 0, err);
fail:
    return err->status;
}

/* One step of the curiosity fit. */
static fh_status curiosity_step(fh_gpu_ppo_update *u, int rows, fh_error *err)
{
    const fh_update_plan *p = &u->plan;
    fh_curiosity_gather_args g = {
        .batch = u->bound, .features = u->bound_features, .state = u->state,
        .keys = u->keys + p->problem.epochs, .minibatch = p->problem.minibatch, .rows = rows,
        .inputs = u->cur_in, .targets = u->cur_target};
    unsigned grid = (unsigned)(((long long)rows * 32 + p->gather_threads - 1) / p->gather_threads);
    fh_status st = fh_update_engine_launch(&u->eng, K_CUR_GATHER, grid,
                                           (unsigned)p->gather_threads, &g, err);
    if (st == FH_OK)
        st = fh_device_mlp_forward(&u->blas, &u->curiosity, u->cur_in, rows, err);
    if (st != FH_OK)
        return st;
    fh_mse_loss_args l = {
        .state = u->state, .pred = fh_device_mlp_output(&u->curiosity), .target = u->cur_target,
        .rows = rows, .minibatches_per_epoch = p->minibatches_per_epoch, .dpred = u->cur_dpred};
    if ((st = fh_update_engine_launch(&u->eng, K_MSE_LOSS, 1, (unsigned)p->mse_threads, &l,
                                      err)) != FH_OK)
        return st;
    if ((st = fh_device_mlp_backward(&u->blas, NULL, &u->curiosity, u->cur_dpred, rows,
                                     err)) != FH_OK)
        return st;
    if (distributed(u)) { /* the gradients averaged over the ranks */
        long long C = p->curiosity_params;
        if ((st = reduce_mark(u, err)) != FH_OK ||
            (st = reduce(u, u->cur_mem + C, (size_t)C, FH_REDUCE_F32, FH_REDUCE_AVG,
                         err)) != FH_OK ||
            (st = reduce_mark(u, err)) != FH_OK)
            return st;
    }
    return optimizer_step(u, 1, err);
}

/* The steps as the engine captures them (ctx: the update). */
static fh_status ppo_step_fn(void *u, int rows, fh_error *err)
{
    return ppo_step(u, rows, err);
}

static fh_status curiosity_step_fn(void *u, int rows, fh_error *err)
{
    return curiosity_step(u, rows, err);
}

/* `steps` steps of `rows` rows of one phase captured into graph slot `slot`. */
static fh_status capture(fh_gpu_ppo_update *u, int curiosity, int steps, int rows, int slot,
                         fh_error *err)
{
    return fh_update_engine_capture(&u->eng, slot, curiosity ? curiosity_step_fn : ppo_step_fn,
                                    u, steps, rows, err);
}

static int same_batch(const fh_device_batch *a, const fh_device_batch *b)
{
    return a->states == b->states && a->states_pitch == b->states_pitch &&
           a->actions == b->actions && a->log_probs == b->log_probs && a->values == b->values &&
           a->advantages == b->advantages && a->returns == b->returns &&
           a->exposures == b->exposures && a->bars == b->bars && a->n == b->n;
}

/* The graphs for batch b (kept while the same buffers come back). */
static fh_status bind_batch(fh_gpu_ppo_update *u, const fh_device_batch *b,
                            const float *features, fh_error *err)
{
    if (distributed(u) && !u->reducer.graphs) { /* steps launched one by one: no graphs */
        u->bound = *b;
        u->bound_features = features;
        return FH_OK;
    }
    if (u->eng.graphs[G_PPO_FULL] && same_batch(&u->bound, b) &&
        u->bound_features == features)
        return FH_OK;
    fh_update_engine_drop_graphs(&u->eng);
    u->bound = *b;
    u->bound_features = features;
    const fh_update_plan *p = &u->plan;
    int M = p->problem.minibatch;
    fh_status st = FH_OK;
    if (p->full_steps > 0)
        st = capture(u, 0, p->graph_steps, M, G_PPO_FULL, err);
    if (st == FH_OK && p->tail_rows)
        st = capture(u, 0, 1, p->tail_rows, G_PPO_TAIL, err);
    if (st == FH_OK && p->problem.curiosity_epochs > 0 && p->full_steps > 0)
        st = capture(u, 1, p->graph_steps, M, G_CUR_FULL, err);
    if (st == FH_OK && p->problem.curiosity_epochs > 0 && p->tail_rows)
        st = capture(u, 1, 1, p->tail_rows, G_CUR_TAIL, err);
    if (st != FH_OK)
        fh_update_engine_drop_graphs(&u->eng);
    return st;
}

/* ---- create / destroy ---- */

void fh_gpu_ppo_update_destroy(fh_gpu_ppo_update *u)
{
    if (!u)
        return;
    fh_update_engine_stop(&u->eng);
    release_reducer(u); /* after the graphs that name its communicator */
    fh_device_mlp_free(&u->actor);
    fh_device_mlp_free(&u->critic);
    fh_device_mlp_free(&u->curiosity);
    fh_update_blas_free(&u->blas);
    fh_update_blas_free(&u->blas_actor);
    fh_update_blas_free(&u->blas_dw);
    cudaEvent_t evs[] = {u->ev_fork, u->ev_actor_fwd, u->ev_loss, u->ev_actor_bwd};
    for (size_t i = 0; i < sizeof evs / sizeof evs[0]; i++)
        if (evs[i])
            cudaEventDestroy(evs[i]);
    for (int i = 0; i < 2; i++)
        if (u->side[i])
            cudaStreamDestroy(u->side[i]);
    void *bufs[] = {u->ppo_mem, u->cur_mem, u->mb_states, u->mb_old_logp, u->mb_adv,
                    u->mb_returns, u->mb_old_values, u->mb_actions, u->dlogits, u->head_partials,
                    u->cur_in, u->cur_target, u->cur_dpred, u->partials, u->records, u->state,
                    u->keys, u->summary, u->gather_partials, u->loss_partials, u->counters,
                    u->episode_return, u->totals, u->metric_partials, u->episode_length,
                    u->int_totals, u->metric_counter, u->sums, u->dist_sums, u->ppo16,
                    u->cur16, u->mb_states16};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        cudaFree(bufs[i]);
    cudaFreeHost(u->h_state);
    cudaFreeHost(u->h_keys);
    cudaFreeHost(u->h_summary);
    cudaFreeHost(u->h_sums);
    fh_update_engine_free(&u->eng);
    free(u);
}

fh_status fh_gpu_ppo_update_create(fh_gpu_ppo_update **out, const fh_device_info *dev,
                                   fh_gpu_ppo_settings s, long long batch_size, int precision,
                                   const fh_gpu_overrides *overrides, fh_error *err)
{
    *out = NULL;
    fh_gpu_overrides ov;
    fh_status ost = fh_gpu_overrides_or_env(overrides, &ov, err);
    if (ost != FH_OK)
        return ost;
    fh_gpu_ppo_update *u = calloc(1, sizeof *u);
    if (!u)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
    u->dev = *dev;
    u->cfg = s;
    fh_update_problem prob = {dev->sm_count, batch_size, s.minibatch, s.epochs,
                              s.curiosity_epochs, precision, dev->cc_major,
                              .plain_launches = ov.update_pdl == 0};
    fh_status st = fh_update_plan_make(&prob, &u->plan, err);
    if (st != FH_OK)
        goto fail_status;
    const fh_update_plan *p = &u->plan;
    if ((st = fh_update_engine_init(&u->eng, dev, UPDATE_KERNEL_FILE, p->options, p->n_options,
                                    kernel_names, K_COUNT, err)) != FH_OK)
        goto fail_status;
    for (int i = 0; i < 2; i++)
        CUDA_CHECK(cudaStreamCreateWithFlags(&u->side[i], cudaStreamNonBlocking), err);
    cudaEvent_t *evs[] = {&u->ev_fork, &u->ev_actor_fwd, &u->ev_loss, &u->ev_actor_bwd};
    for (size_t i = 0; i < sizeof evs / sizeof evs[0]; i++)
        CUDA_CHECK(cudaEventCreateWithFlags(evs[i], cudaEventDisableTiming), err);
    cudaKernel_t bg = u->eng.k[K_BIAS_GRAD], ba = u->eng.k[K_BIAS_ACT];
    if ((st = fh_update_blas_init(&u->blas, u->eng.stream, precision, bg, ba, err)) != FH_OK ||
        (st = fh_update_blas_init(&u->blas_actor, u->side[0], precision, bg, ba, err)) != FH_OK ||
        (st = fh_update_blas_init(&u->blas_dw, u->side[1], precision, bg, ba, err)) != FH_OK)
        goto fail_status;
    fh_update_blas *engines[] = {&u->blas, &u->blas_actor, &u->blas_dw};
    u->eng.pdl = p->pdl;
    for (int i = 0; i < 3; i++) {
        fh_update_blas_set_bf16(engines[i], u->eng.k[K_TO_BF16], u->eng.k[K_BIAS_GRAD_BF16],
                                u->eng.k[K_BIAS_GRAD_BF16_WIDE]);
        fh_update_blas_set_pdl(engines[i], p->pdl);
    }
    fh_update_blas_set_split_bias(&u->blas, u->eng.k[K_RELU_MASK], p->split_bias);
    long long P = p->ppo_params, C = p->curiosity_params;
    size_t M = (size_t)p->problem.minibatch;
    if (precision == FH_PRECISION_BF16) {
        size_t states16 = M * FH_BF16_LD(FH_STATE_DIM) * sizeof(unsigned short);
        CUDA_CHECK(cudaMalloc((void **)&u->ppo16, (size_t)P * sizeof(unsigned short)), err);
        CUDA_CHECK(cudaMalloc((void **)&u->cur16, (size_t)C * sizeof(unsigned short)), err);
        CUDA_CHECK(cudaMalloc((void **)&u->mb_states16, states16), err);
        CUDA_CHECK(cudaMemset(u->mb_states16, 0, states16), err); /* the padding stays 0 */
    }
    int total_keys = p->problem.epochs + p->problem.curiosity_epochs;
    size_t records = (size_t)p->problem.epochs * p->minibatches_per_epoch * FH_UREC_COLS;
    CUDA_CHECK(cudaMalloc((void **)&u->ppo_mem, 4 * (size_t)P * sizeof(float)), err);
    CUDA_CHECK(cudaMalloc((void **)&u->cur_mem, 4 * (size_t)C * sizeof(float)), err);
    CUDA_CHECK(cudaMemset(u->ppo_mem, 0, 4 * (size_t)P * sizeof(float)), err);
    CUDA_CHECK(cudaMemset(u->cur_mem, 0, 4 * (size_t)C * sizeof(float)), err);
    CUDA_CHECK(cudaMalloc((void **)&u->mb_states, M * FH_STATE_DIM * sizeof(float)), err);
    CUDA_CHECK(cudaMalloc((void **)&u->mb_actions, M * sizeof(int)), err);
    float **vecs[] = {&u->mb_old_logp, &u->mb_adv, &u->mb_returns, &u->mb_old_values};
    for (size_t i = 0; i < sizeof vecs / sizeof vecs[0]; i++)
        CUDA_CHECK(cudaMalloc((void **)vecs[i], M * sizeof(float)), err);
    CUDA_CHECK(cudaMalloc((void **)&u->dlogits, M * FH_N_ACTIONS * sizeof(float)), err);
    CUDA_CHECK(cudaMalloc((void **)&u->cur_in, M * FH_CURIOSITY_INPUT_DIM * sizeof(float)), err);
    CUDA_CHECK(cudaMalloc((void **)&u->cur_target, M * FH_CURIOSITY_TARGET_DIM * sizeof(float)), err);
    CUDA_CHECK(cudaMalloc((void **)&u->cur_dpred, M * FH_CURIOSITY_TARGET_DIM * sizeof(float)), err);
    CUDA_CHECK(cudaMalloc((void **)&u->partials, (size_t)p->sumsq_blocks * sizeof(double)), err);
    CUDA_CHECK(cudaMalloc((void **)&u->records, records * sizeof(double)), err);
    CUDA_CHECK(cudaMalloc((void **)&u->gather_partials, 2 * (size_t)p->gather_grid *
                                                            sizeof(double)), err);
    CUDA_CHECK(cudaMalloc((void **)&u->loss_partials, FH_LOSS_STATS * (size_t)p->loss_grid *
                                                          sizeof(double)), err);
    CUDA_CHECK(cudaMalloc((void **)&u->head_partials, FH_LOSS_HEAD_SUMS * (size_t)p->loss_grid *
                                                          sizeof(double)), err);
    CUDA_CHECK(cudaMalloc((void **)&u->counters, 2 * sizeof(unsigned)), err);
    CUDA_CHECK(cudaMemset(u->counters, 0, 2 * sizeof(unsigned)), err);
    CUDA_CHECK(cudaMalloc((void **)&u->state, sizeof *u->state), err);
    CUDA_CHECK(cudaMalloc((void **)&u->keys, (size_t)(total_keys > 0 ? total_keys : 1) *
                                                 sizeof(unsigned long long)), err);
    CUDA_CHECK(cudaMalloc((void **)&u->summary, sizeof *u->summary), err);
    CUDA_CHECK(cudaMallocHost((void **)&u->h_state, sizeof *u->h_state), err);
    CUDA_CHECK(cudaMallocHost((void **)&u->h_keys, (size_t)(total_keys > 0 ? total_keys : 1) *
                                                       sizeof(unsigned long long)), err);
    CUDA_CHECK(cudaMallocHost((void **)&u->h_summary, sizeof *u->h_summary), err);
    if ((st = fh_device_mlp_init(&u->actor, FH_NET_ACTOR, u->ppo_mem, u->ppo_mem + P, u->ppo16,
                                 (int)M, err)) != FH_OK ||
        (st = fh_device_mlp_init(&u->critic, FH_NET_CRITIC, u->ppo_mem + p->critic_offset,
                                 u->ppo_mem + P + p->critic_offset,
                                 u->ppo16 ? u->ppo16 + p->critic_offset : NULL, (int)M,
                                 err)) != FH_OK ||
        (st = fh_device_mlp_init(&u->curiosity, FH_NET_CURIOSITY, u->cur_mem, u->cur_mem + C,
                                 u->cur16, (int)M, err)) != FH_OK)
        goto fail_status;
    if (u->mb_states16) { /* the gather writes both networks' bf16 input */
        fh_device_mlp_set_input16(&u->actor, u->mb_states16);
        fh_device_mlp_set_input16(&u->critic, u->mb_states16);
    }
    u->n_ppo_padded = fh_device_mlp_padded_w0(&u->actor, u->ppo_mem, &u->ppo_padded[0]);
    u->n_ppo_padded += fh_device_mlp_padded_w0(&u->critic, u->ppo_mem,
                                               &u->ppo_padded[u->n_ppo_padded]);
    u->n_cur_padded = fh_device_mlp_padded_w0(&u->curiosity, u->cur_mem, &u->cur_padded[0]);
    CUDA_CHECK(cudaDeviceSynchronize(), err); /* the memsets ran on the legacy stream */
    *out = u;
    return FH_OK;
fail:
fail_status:
    fh_gpu_ppo_update_destroy(u);
    return err->status;
}

const fh_update_plan *fh_gpu_ppo_update_plan(const fh_gpu_ppo_update *u)
{
    return &u->plan;
}

float fh_gpu_ppo_update_last_ms(const fh_gpu_ppo_update *u)
{
    return u->eng.last_ms;
}

fh_gpu_weights fh_gpu_ppo_update_weights(const fh_gpu_ppo_update *u)
{
    fh_gpu_weights w = {u->ppo_mem, u->ppo_mem + u->plan.critic_offset, u->cur_mem};
    return w;
}

/* ---- data parallelism ---- */

static void release_reducer(fh_gpu_ppo_update *u)
{
    if (u->reducer.release)
        u->reducer.release(u->reducer.ctx);
    memset(&u->reducer, 0, sizeof u->reducer);
    for (int i = 0; i < u->reduce_capacity; i++)
        if (u->reduce_events[i])
            cudaEventDestroy(u->reduce_events[i]);
    free(u->reduce_events);
    u->reduce_events = NULL;
    u->reduce_capacity = u->reduce_used = 0;
}

fh_status fh_gpu_ppo_update_set_reducer(fh_gpu_ppo_update *u, const fh_update_reducer *r,
                                        fh_error *err)
{
    fh_update_engine_stop(&u->eng); /* idle, and no graph without the reductions */
    release_reducer(u);
    u->reducer = *r;
    if (!r->allreduce || !r->group || r->world < 1) {
        release_reducer(u);
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: a reducer needs allreduce, group and "
                            "a world size", __FILE__, __LINE__);
    }
    const fh_update_plan *p = &u->plan;
    long long P = p->ppo_params, C = p->curiosity_params;
    if (!u->dist_sums)
        CUDA_CHECK(cudaMalloc((void **)&u->dist_sums, DIST_SUMS * sizeof(double)), err);
    CUDA_CHECK(cudaMemsetAsync(u->dist_sums, 0, DIST_SUMS * sizeof(double), u->eng.stream), err);
    if (!r->graphs) { /* a pair of events around each reduction of an update */
        long long mbs = p->minibatches_per_epoch;
        long long sites = 2 * p->problem.epochs * mbs + p->problem.curiosity_epochs * mbs + 3;
        u->reduce_capacity = (int)(2 * sites < (1 << 20) ? 2 * sites : 1 << 20);
        u->reduce_events = calloc((size_t)u->reduce_capacity, sizeof *u->reduce_events);
        if (!u->reduce_events) {
            u->reduce_capacity = 0;
            fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
            goto fail;
        }
        for (int i = 0; i < u->reduce_capacity; i++)
            CUDA_CHECK(cudaEventCreate(&u->reduce_events[i]), err);
    }
    /* the warm-up: one of each kind a step holds, outside any capture (the gradients are
     * the last step's or zero: a mean of them is never applied) */
    fh_status st;
    if ((st = reduce(u, u->dist_sums, DIST_SUMS, FH_REDUCE_F64, FH_REDUCE_SUM, err)) != FH_OK ||
        (st = reduce(u, u->ppo_mem + P, (size_t)P, FH_REDUCE_F32, FH_REDUCE_AVG, err)) != FH_OK ||
        (st = reduce(u, u->cur_mem + C, (size_t)C, FH_REDUCE_F32, FH_REDUCE_AVG, err)) != FH_OK) {
        cudaStreamSynchronize(u->eng.stream);
        release_reducer(u);
        return st;
    }
    CUDA_CHECK(cudaStreamSynchronize(u->eng.stream), err);
    return FH_OK;
fail:
    release_reducer(u);
    return err->status;
}

const fh_update_reducer *fh_gpu_ppo_update_reducer(const fh_gpu_ppo_update *u)
{
    return distributed(u) ? &u->reducer : NULL;
}

fh_status fh_gpu_ppo_update_finish_reducer(fh_gpu_ppo_update *u, fh_error *err)
{
    if (!distributed(u))
        return FH_OK;
    fh_update_engine_stop(&u->eng); /* the graphs hold the communicator's work */
    return u->reducer.finish ? u->reducer.finish(u->reducer.ctx, err) : FH_OK;
}

float fh_gpu_ppo_update_reduce_ms(const fh_gpu_ppo_update *u)
{
    return u->reduce_ms;
}

/* ---- host <-> device ---- */

static fh_status check_sizes(const fh_mlp *actor, const fh_mlp *critic,
                             const fh_mlp *curiosity, fh_error *err)
{
    if (actor->n_params != FH_ACTOR_N_PARAMS || critic->n_params != FH_CRITIC_N_PARAMS ||
        curiosity->n_params != FH_CURIOSITY_N_PARAMS)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: network sizes do not match shapes.h",
                            __FILE__, __LINE__);
    if (actor->adam_step != critic->adam_step)
        return fh_error_set(err, FH_ERR_INPUT, "the actor has taken %lld Adam steps and the "
                            "critic %lld; one update steps both", (long long)actor->adam_step,
                            (long long)critic->adam_step);
    return FH_OK;
}

fh_status fh_gpu_ppo_update_upload(fh_gpu_ppo_update *u, const fh_mlp *actor,
                                   const fh_mlp *critic, const fh_mlp *curiosity, fh_error *err)
{
    fh_status st = check_sizes(actor, critic, curiosity, err);
    if (st != FH_OK)
        return st;
    long long P = u->plan.ppo_params, C = u->plan.curiosity_params;
    fh_update_engine *e = &u->eng;
    if ((st = fh_update_engine_copy_net(e, u->ppo_mem, P, 0, (fh_mlp *)actor, 1, err)) != FH_OK ||
        (st = fh_update_engine_copy_net(e, u->ppo_mem, P, u->plan.critic_offset,
                                        (fh_mlp *)critic, 1, err)) != FH_OK ||
        (st = fh_update_engine_copy_net(e, u->cur_mem, C, 0, (fh_mlp *)curiosity, 1,
                                        err)) != FH_OK)
        return st;
    CUDA_CHECK(cudaStreamSynchronize(e->stream), err);
    u->adam_step = actor->adam_step;
    u->curiosity_adam_step = curiosity->adam_step;
    return FH_OK;
fail:
    return err->status;
}

fh_status fh_gpu_ppo_update_download(fh_gpu_ppo_update *u, fh_mlp *actor, fh_mlp *critic,
                                     fh_mlp *curiosity, fh_error *err)
{
    fh_status st = check_sizes(actor, critic, curiosity, err);
    if (st != FH_OK)
        return st;
    long long P = u->plan.ppo_params, C = u->plan.curiosity_params;
    fh_update_engine *e = &u->eng;
    if ((st = fh_update_engine_copy_net(e, u->ppo_mem, P, 0, actor, 0, err)) != FH_OK ||
        (st = fh_update_engine_copy_net(e, u->ppo_mem, P, u->plan.critic_offset, critic, 0,
                                        err)) != FH_OK ||
        (st = fh_update_engine_copy_net(e, u->cur_mem, C, 0, curiosity, 0, err)) != FH_OK)
        return st;
    CUDA_CHECK(cudaStreamSynchronize(e->stream), err);
    actor->adam_step = critic->adam_step = u->adam_step;
    curiosity->adam_step = u->curiosity_adam_step;
    for (int k = 0; k < 3 && st == FH_OK; k++)
        st = fh_mlp_check_finite(k == 0 ? actor : k == 1 ? critic : curiosity, err);
    return st;
fail:
    return err->status;
}

fh_status fh_gpu_ppo_update_download_grads(fh_gpu_ppo_update *u, float *actor, float *critic,
                                           float *curiosity, fh_error *err)
{
    long long P = u->plan.ppo_params, C = u->plan.curiosity_params;
    cudaStream_t stream = u->eng.stream;
    CUDA_CHECK(cudaMemcpyAsync(actor, u->ppo_mem + P, FH_ACTOR_N_PARAMS * sizeof(float),
                               cudaMemcpyDeviceToHost, stream), err);
    CUDA_CHECK(cudaMemcpyAsync(critic, u->ppo_mem + P + u->plan.critic_offset,
                               FH_CRITIC_N_PARAMS * sizeof(float), cudaMemcpyDeviceToHost,
                               stream), err);
    CUDA_CHECK(cudaMemcpyAsync(curiosity, u->cur_mem + C, C * sizeof(float),
                               cudaMemcpyDeviceToHost, stream), err);
    CUDA_CHECK(cudaStreamSynchronize(stream), err);
    return FH_OK;
fail:
    return err->status;
}

/* ---- one update ---- */

static const char *failure_name(int code)
{
    switch (code) {
    case FH_UFAIL_POLICY_LOSS: return "policy loss";
    case FH_UFAIL_VALUE_LOSS: return "value loss";
    case FH_UFAIL_ENTROPY: return "entropy";
    case FH_UFAIL_APPROX_KL: return "approximate KL";
    case FH_UFAIL_GRAD_NORM: return "gradient norm";
    case FH_UFAIL_CURIOSITY_LOSS: return "curiosity loss";
    case FH_UFAIL_CURIOSITY_GRAD: return "curiosity gradient";
    default: return "update";
    }
}

/* The padded copies (update_layers.h) of a phase's first layers, from its params `mem`. */
static fh_status refresh_padded(fh_gpu_ppo_update *u, const float *mem, const fh_bf16_padded *q,
                                int n, fh_error *err)
{
    fh_status st = FH_OK;
    for (int k = 0; k < n && st == FH_OK; k++) {
        fh_to_bf16_args w = {.src = mem + q[k].begin, .dst = q[k].dst,
                             .n = (long long)q[k].rows * q[k].cols, .cols = q[k].cols,
                             .src_ld = q[k].cols, .dst_ld = q[k].ld};
        st = fh_update_engine_launch(&u->eng, K_TO_BF16, (unsigned)u->plan.adam_grid,
                                     (unsigned)u->plan.adam_threads, &w, err);
    }
    return st;
}

/* bf16: the weights' bf16 copies from the fp32 params (uploaded, or loaded, since the
 * last update); Adam keeps them current from here. */
static fh_status refresh_bf16_weights(fh_gpu_ppo_update *u, fh_error *err)
{
    if (!u->ppo16)
        return FH_OK;
    fh_to_bf16_args a = {.src = u->ppo_mem, .dst = u->ppo16, .n = u->plan.ppo_params};
    fh_to_bf16_args c = {.src = u->cur_mem, .dst = u->cur16, .n = u->plan.curiosity_params};
    fh_status st = fh_update_engine_launch(&u->eng, K_TO_BF16, (unsigned)u->plan.adam_grid,
                                           (unsigned)u->plan.adam_threads, &a, err);
    if (st == FH_OK)
        st = fh_update_engine_launch(&u->eng, K_TO_BF16, (unsigned)u->plan.curiosity_adam_grid,
                                     (unsigned)u->plan.adam_threads, &c, err);
    if (st == FH_OK)
        st = refresh_padded(u, u->ppo_mem, u->ppo_padded, u->n_ppo_padded, err);
    if (st == FH_OK)
        st = refresh_padded(u, u->cur_mem, u->cur_padded, u->n_cur_padded, err);
    return st;
}

/* The PPO epochs (or max_steps steps, eagerly), then the curiosity fit's. */
static fh_status launch_epochs(fh_gpu_ppo_update *u, int max_steps, fh_error *err)
{
    const fh_update_plan *p = &u->plan;
    int M = p->problem.minibatch;
    fh_status st = FH_OK;
    if (max_steps > 0) { /* tests: eagerly, step by step, no curiosity fit */
        for (int s = 0; s < max_steps && st == FH_OK; s++) {
            int last = s % p->minibatches_per_epoch == p->minibatches_per_epoch - 1;
            st = ppo_step(u, last && p->tail_rows ? p->tail_rows : M, err);
        }
        return st;
    }
    if (distributed(u) && !u->reducer.graphs) { /* the graphs' steps, one by one */
        int mbs = p->minibatches_per_epoch;
        for (int phase = 0; phase < 2; phase++) {
            int epochs = phase == 0 ? p->problem.epochs : p->problem.curiosity_epochs;
            for (int s = 0; s < epochs * mbs && st == FH_OK; s++) {
                int rows = s % mbs == mbs - 1 && p->tail_rows ? p->tail_rows : M;
                st = phase == 0 ? ppo_step(u, rows, err) : curiosity_step(u, rows, err);
            }
        }
        return st;
    }
    for (int phase = 0; phase < 2; phase++) {
        int epochs = phase == 0 ? p->problem.epochs : p->problem.curiosity_epochs;
        int full = phase == 0 ? G_PPO_FULL : G_CUR_FULL;
        int tail = phase == 0 ? G_PPO_TAIL : G_CUR_TAIL;
        for (int e = 0; e < epochs && st == FH_OK; e++)
            st = fh_update_engine_replay_epoch(&u->eng, full, p->graph_launches, tail, err);
    }
    return st;
}

/* The explained variance of the batch's values against its returns: one pass, or
 * data-parallel three with the sums all-reduced between them (update_summary.cu). */
static fh_status explained_variance(fh_gpu_ppo_update *u, const fh_device_batch *b,
                                    fh_error *err)
{
    fh_explained_variance_args ev = {.values = b->values, .returns = b->returns, .n = b->n,
                                     .summary = u->summary};
    if (!distributed(u))
        return fh_update_engine_launch(&u->eng, K_EXPLAINED_VARIANCE, 1, 1024, &ev, err);
    double *d = u->dist_sums + DIST_EV;
    ev.dist_sums = d;
    ev.n_total = b->n * u->reducer.world;
    fh_status st = FH_OK;
    for (int pass = 0; pass < 3 && st == FH_OK; pass++) {
        ev.pass = pass;
        st = fh_update_engine_launch(&u->eng, K_EXPLAINED_VARIANCE, 1, 1024, &ev, err);
        if (st == FH_OK && pass < 2 &&
            ((st = reduce_mark(u, err)) != FH_OK ||
             (st = reduce(u, d + 2 * pass, 2, FH_REDUCE_F64, FH_REDUCE_SUM, err)) != FH_OK))
            return st;
        if (st == FH_OK && pass < 2)
            st = reduce_mark(u, err);
    }
    return st;
}

/* After the update's end (the stream idle): the reductions' device time. */
static fh_status sum_reduce_ms(fh_gpu_ppo_update *u, fh_error *err)
{
    u->reduce_ms = 0.0f;
    for (int i = 0; i + 1 < u->reduce_used; i += 2) {
        float ms = 0.0f;
        CUDA_CHECK(cudaEventElapsedTime(&ms, u->reduce_events[i], u->reduce_events[i + 1]), err);
        u->reduce_ms += ms;
    }
    return FH_OK;
fail:
    return err->status;
}

fh_status fh_gpu_ppo_update_run(fh_gpu_ppo_update *u, fh_ppo_stats *stats,
                                const fh_device_batch *b, const float *features, double lr,
                                double ent_coef, fh_rng *rng, int max_steps,
                                fh_ppo_trace *trace, fh_error *err)
{
    memset(stats, 0, sizeof *stats);
    const fh_update_plan *p = &u->plan;
    int epochs = p->problem.epochs, cur_epochs = p->problem.curiosity_epochs;
    if (b->n != p->problem.batch)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: a batch of %lld samples, planned for "
                            "%lld", __FILE__, __LINE__, b->n, p->problem.batch);
    if (trace && (trace->batch_size != b->n || trace->max_epochs < epochs))
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: a record for %lld samples x %d epochs, "
                            "an update of %lld x %d", __FILE__, __LINE__,
                            (long long)trace->batch_size, trace->max_epochs, b->n, epochs);
    fh_status st = bind_batch(u, b, features, err);
    if (st != FH_OK)
        return st;
    /* the keys: every PPO epoch's, then the curiosity fit's (ppo_update.c's draws) */
    for (int e = 0; e < epochs + cur_epochs; e++)
        u->h_keys[e] = fh_minibatch_key(rng);
    fh_update_state *s = u->h_state;
    memset(s, 0, sizeof *s);
    s->ppo.adam_step = u->adam_step;
    s->curiosity.adam_step = u->curiosity_adam_step;
    s->lr = (float)lr;
    s->ent_coef = (float)ent_coef;
    s->curiosity_lr = (float)u->cfg.curiosity_lr;
    s->epochs = epochs;
    s->curiosity_epochs = cur_epochs;
    if (max_steps > 0)
        s->curiosity_epochs = 0;
    u->reduce_used = 0;
    if ((st = fh_update_engine_begin(&u->eng, u->state, s, sizeof *s, u->keys, u->h_keys,
                                     (size_t)(epochs + cur_epochs) * sizeof(unsigned long long),
                                     err)) != FH_OK ||
        (st = refresh_bf16_weights(u, err)) != FH_OK ||
        (st = launch_epochs(u, max_steps, err)) != FH_OK)
        return st;
    fh_update_summary_args sa = {.state = u->state, .records = u->records, .summary = u->summary};
    if ((st = explained_variance(u, b, err)) != FH_OK ||
        (st = fh_update_engine_launch(&u->eng, K_SUMMARY, 1, 32, &sa, err)) != FH_OK)
        return st;
    if (distributed(u) && /* each rank's mean over equal shares: their mean is the whole's */
        ((st = reduce_mark(u, err)) != FH_OK ||
         (st = reduce(u, &u->summary->curiosity_loss, 1, FH_REDUCE_F64, FH_REDUCE_AVG,
                      err)) != FH_OK ||
         (st = reduce_mark(u, err)) != FH_OK))
        return st;
    if ((st = fh_update_engine_end(&u->eng, u->h_summary, u->summary, sizeof *u->summary,
                                   err)) != FH_OK ||
        (st = sum_reduce_ms(u, err)) != FH_OK)
        return st;
    const fh_update_summary *sum = u->h_summary;
    if (trace) {
        trace->epochs = sum->epochs_run;
        trace->n_records = sum->minibatches;
        for (int e = 0; e < sum->epochs_run; e++)
            for (int64_t i = 0; i < b->n; i++)
                trace->order[(size_t)e * (size_t)b->n + (size_t)i] =
                    fh_minibatch_order(u->h_keys[e], b->n, i);
        if (sum->minibatches > 0)
            CUDA_CHECK(cudaMemcpy(trace->records, u->records, (size_t)sum->minibatches *
                                  FH_UREC_COLS * sizeof(double), cudaMemcpyDeviceToHost), err);
    }
    u->adam_step = sum->adam_step;
    u->curiosity_adam_step = sum->curiosity_adam_step;
    if (sum->failed)
        return fh_error_set(err, FH_ERR_FAILURE, "the %s is not finite (epoch %d, minibatch %d); "
                            "the update stopped before that step", failure_name(sum->failed),
                            sum->failed_epoch + 1, sum->failed_minibatch + 1);
    if (sum->curiosity_failed)
        return fh_error_set(err, FH_ERR_FAILURE, "the %s is not finite (epoch %d, minibatch %d)",
                            failure_name(sum->curiosity_failed),
                            sum->curiosity_failed_epoch + 1, sum->curiosity_failed_minibatch + 1);
    stats->policy_loss = sum->policy_loss;
    stats->value_loss = sum->value_loss;
    stats->entropy = sum->entropy;
    stats->approx_kl = sum->approx_kl;
    stats->old_approx_kl = sum->old_approx_kl;
    stats->clip_fraction = sum->clip_fraction;
    stats->grad_norm = sum->grad_norm;
    stats->explained_variance = sum->explained_variance;
    stats->curiosity_loss = sum->curiosity_loss;
    stats->epochs_run = sum->epochs_run;
    stats->minibatches = sum->minibatches;
    return FH_OK;
fail:
    return err->status;
}
