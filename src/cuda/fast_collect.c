/* fast_collect.c — the fast collection path (issue 7; docs/ARCHITECTURE.md): the plan
 * (fast_plan.c) carried out. One stream; actor table -> rollout kernel -> batched critic
 * and curiosity (fast_networks.c) -> truncation values -> GAE, captured once into a
 * CUDA graph and replayed per collection (one launch, no host round trip inside). */
#include <stdlib.h>
#include <string.h>

#include "cuda/critic_chunks.h"
#include "cuda/gpu_ppo_collector_internal.h"
#include "cuda/overrides.h"

#define FAST_KERNEL_FILE "fast_kernels.cu"
#define ELEMENTWISE_BLOCK 256

_Static_assert(sizeof(fh_diversity) <= FH_FAST_SM_DIV_FLOATS * sizeof(float) &&
                   sizeof(fh_diversity) <= FH_LANE_SM_DIV_FLOATS * sizeof(float) &&
                   sizeof(fh_diversity) % 8 == 0,
               "the rollout kernels' shared-memory slots for fh_diversity are too small");
_Static_assert(2 * sizeof(fh_book_record) <= FH_BLOCK_SM_BOOK_FLOATS * sizeof(float) &&
                   FH_BLOCK_SM_BOOK % 2 == 0 && FH_BLOCK_SM_PER_EPISODE % 2 == 0 &&
                   FH_PAIR_SM_BOOK % 2 == 0 && FH_PAIR_SM_PER_EPISODE % 2 == 0,
               "the block mapping's two book record slots are too small or misaligned");

void fh_fast_path_free(fh_gpu_ppo_collector *c)
{
    fh_fast_path *f = &c->fast;
    if (f->graph_exec)
        cudaGraphExecDestroy(f->graph_exec);
    if (f->graph)
        cudaGraphDestroy(f->graph);
    fh_gemm_free(&f->gemm);
    void *buffers[] = {f->actor_table, f->clocks, f->critic_in, f->critic_w0, f->market_in,
                       f->market_proj, f->values_all, f->trunc_step, f->act_a, f->act_b, f->h0,
                       f->critic16, f->critic_w0_16};
    for (size_t i = 0; i < sizeof buffers / sizeof buffers[0]; i++)
        cudaFree(buffers[i]);
    for (int k = 0; f->ev_chunk && k < f->plan.n_chunks; k++)
        if (f->ev_chunk[k])
            cudaEventDestroy(f->ev_chunk[k]);
    free(f->ev_chunk);
    free(f->chunk_begin);
    cudaEvent_t events[] = {f->ev_rollout, f->ev_join, f->ev_phase[0], f->ev_phase[1],
                            f->ev_phase[2], f->ev_phase[3]};
    for (size_t i = 0; i < sizeof events / sizeof events[0]; i++)
        if (events[i])
            cudaEventDestroy(events[i]);
    if (f->side)
        cudaStreamDestroy(f->side);
    fh_cuda_module_free(&f->module);
    memset(f, 0, sizeof *f);
}

/* The plan for this collector's device and problem. */
static fh_status make_plan(fh_gpu_ppo_collector *c, fh_error *err)
{
    size_t free_bytes = 0, total_bytes = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes), err);
    fh_plan_device dev = {c->dev.name, c->dev.sm_count, c->dev.shared_mem_per_block_optin,
                          free_bytes};
    fh_plan_problem prob = {c->n_episodes, c->n_steps, c->d_market.n_bars, c->cfg.horizon,
                            c->precision, c->rollout_mapping, c->cfg.obs_noise > 0.0f};
    return fh_fast_plan_make(&dev, &prob, &c->overrides, &c->fast.plan, err);
fail:
    return err->status;
}

/* The kernel module, compiled with the plan's options (or from the cache). */
static fh_status load_kernels(fh_gpu_ppo_collector *c, fh_error *err)
{
    fh_fast_path *f = &c->fast;
    const char *options[FH_PLAN_MAX_OPTIONS];
    for (int i = 0; i < f->plan.n_options; i++)
        options[i] = f->plan.options[i];
    fh_status st = fh_cuda_module_load(&f->module, &c->dev, FAST_KERNEL_FILE, options,
                                       f->plan.n_options, err);
    if (st != FH_OK)
        return st;
    struct { cudaKernel_t *k; const char *name; } entries[] = {
        {&f->rollout, f->plan.kernel}, {&f->actor_table_k, "actor_table_kernel"},
        {&f->layer0, "critic_layer0_factored_kernel"}, {&f->curiosity, "curiosity_fused_kernel"},
        {&f->scatter, "scatter_trunc_values_kernel"}, {&f->gae, "gae_kernel"},
        {&f->to_bf16, "to_bf16_kernel"}};
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++)
        if ((st = fh_cuda_module_kernel(&f->module, entries[i].name, entries[i].k, err)) != FH_OK)
            return st;
    CUDA_CHECK(cudaKernelSetAttributeForDevice(f->rollout,
                                               cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               (int)f->plan.rollout_smem, c->dev.device_index),
               err);
    return FH_OK;
fail:
    return err->status;
}

/* cudaMalloc of `bytes`, zero-filled on c->stream when `zero`. */
static fh_status device_alloc(fh_gpu_ppo_collector *c, void **p, size_t bytes, int zero,
                              fh_error *err)
{
    CUDA_CHECK(cudaMalloc(p, bytes), err);
    if (zero)
        CUDA_CHECK(cudaMemsetAsync(*p, 0, bytes, c->stream), err);
    return FH_OK;
fail:
    return err->status;
}

/* The buffers, streams and events the plan needs. */
static fh_status allocate(fh_gpu_ppo_collector *c, fh_error *err)
{
    fh_fast_path *f = &c->fast;
    const fh_fast_plan *p = &f->plan;
    int N = c->n_episodes, n_bars = c->d_market.n_bars;
    size_t stride_bytes = (size_t)p->in_stride * sizeof(float);
    fh_status st;
    /* every critic row's bar: the states' (written with the other per-step outputs),
     * then the final observations' and s_L's; 0 where a slot stays unused */
    if ((st = device_alloc(c, (void **)&c->out.bars, (size_t)p->critic_rows * sizeof(int), 1,
                           err)) != FH_OK ||
        (st = device_alloc(c, (void **)&f->critic_in, (size_t)p->critic_rows * stride_bytes, 1,
                           err)) != FH_OK || /* the padding stays 0 */
        (st = device_alloc(c, (void **)&f->critic_w0, FH_CRITIC_H1 * stride_bytes, 1, err)) !=
            FH_OK ||
        (st = device_alloc(c, (void **)&f->values_all, (size_t)p->critic_rows * sizeof(float), 0,
                           err)) != FH_OK ||
        (st = device_alloc(c, (void **)&f->trunc_step, (size_t)N * p->k_slots * sizeof(int), 0,
                           err)) != FH_OK)
        return st;
    if (p->rollout_clocks &&
        (st = device_alloc(c, (void **)&f->clocks, (size_t)N * FH_CLOCK_STRIDE * sizeof(long long),
                           0, err)) != FH_OK)
        return st;
    if (p->actor_table &&
        (st = device_alloc(c, (void **)&f->actor_table, p->actor_table_bytes, 0, err)) != FH_OK)
        return st;
    if (p->critic_factor) { /* the bars' features, zero-padded like the critic's input rows */
        if ((st = device_alloc(c, (void **)&f->market_in, (size_t)n_bars * stride_bytes, 1,
                               err)) != FH_OK ||
            (st = device_alloc(c, (void **)&f->market_proj,
                               (size_t)n_bars * FH_CRITIC_H1 * sizeof(float), 0, err)) != FH_OK)
            return st;
        CUDA_CHECK(cudaMemcpy2DAsync(f->market_in, stride_bytes, c->d_features,
                                     FH_N_MARKET_FEATURES * sizeof(float),
                                     FH_N_MARKET_FEATURES * sizeof(float), (size_t)n_bars,
                                     cudaMemcpyDeviceToDevice, c->stream), err);
    }
    if (p->pipeline) {
        f->chunk_begin = malloc((size_t)(p->n_chunks + 1) * sizeof *f->chunk_begin);
        f->ev_chunk = calloc((size_t)p->n_chunks, sizeof *f->ev_chunk);
        if (!f->chunk_begin || !f->ev_chunk)
            return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of host memory", __FILE__,
                                __LINE__);
        fh_critic_chunk_schedule(p->critic_rows, p->pipeline_first_rows, p->chunk_rows,
                                 p->pipeline_growth, f->chunk_begin);
        for (int k = 0; k < p->n_chunks; k++)
            CUDA_CHECK(cudaEventCreateWithFlags(&f->ev_chunk[k], cudaEventDisableTiming), err);
        CUDA_CHECK(cudaEventCreateWithFlags(&f->ev_rollout, cudaEventDisableTiming), err);
        CUDA_CHECK(cudaEventCreateWithFlags(&f->ev_join, cudaEventDisableTiming), err);
        CUDA_CHECK(cudaStreamCreateWithFlags(&f->side, cudaStreamNonBlocking), err);
        if (p->critic_factor &&
            (st = device_alloc(c, (void **)&f->h0,
                               (size_t)p->critic_rows * FH_CRITIC_H1 * sizeof(float), 0, err)) !=
                FH_OK)
            return st;
    }
    size_t act_bytes =
        (size_t)p->chunk_rows * (f->h0 ? FH_CRITIC_H2 : FH_CRITIC_H1) * sizeof(float);
    if ((st = device_alloc(c, (void **)&f->act_a, act_bytes, 0, err)) != FH_OK ||
        (st = device_alloc(c, (void **)&f->act_b, act_bytes, 0, err)) != FH_OK)
        return st;
    if (p->problem.precision == FH_PRECISION_BF16 &&
        ((st = device_alloc(c, (void **)&f->critic16, FH_CRITIC_N_PARAMS * sizeof(unsigned short),
                            1, err)) != FH_OK ||
         (st = device_alloc(c, (void **)&f->critic_w0_16,
                            (size_t)FH_CRITIC_H1 * p->in_stride * sizeof(unsigned short), 1,
                            err)) != FH_OK)) /* zeroed: the start-up timing reads them */
        return st;
    for (int i = 0; i < 4; i++)
        CUDA_CHECK(cudaEventCreate(&f->ev_phase[i]), err);
    return FH_OK;
fail:
    return err->status;
}

fh_status fh_fast_path_init(fh_gpu_ppo_collector *c, fh_error *err)
{
    fh_fast_path *f = &c->fast;
    fh_status st;
    /* the timed algorithms of earlier processes on this GPU model (gemm_cache.h) */
    char dir[900], algo_file[1024] = "";
    if (fh_kernel_cache_dir(dir, sizeof dir))
        fh_gemm_cache_path(algo_file, sizeof algo_file, dir, c->dev.name, cublasLtGetVersion());
    if ((st = make_plan(c, err)) != FH_OK || (st = load_kernels(c, err)) != FH_OK ||
        (st = allocate(c, err)) != FH_OK ||
        (st = fh_gemm_init(&f->gemm, c->precision, f->plan.gemm_tune, f->plan.gemm_tune_candidates,
                           algo_file, err)) != FH_OK ||
        (f->plan.gemm_tune && (st = fh_fast_tune_gemms(c, err)) != FH_OK))
        return st;
    c->out.states = f->critic_in;
    c->states_pitch = f->plan.in_stride;
    c->out.values = f->values_all;
    c->out.last_values = f->values_all + (long long)c->n_episodes * c->n_steps +
                         (long long)c->n_episodes * f->plan.k_slots;
    return FH_OK;
}

/* The rollout: this collection's first critic layer into the padded rows, the actor
 * table where the plan has it, then the rollout kernel. */
static fh_status rollout(fh_gpu_ppo_collector *c, fh_error *err)
{
    fh_fast_path *f = &c->fast;
    const fh_fast_plan *p = &f->plan;
    fh_status st;
    CUDA_CHECK(cudaMemcpy2DAsync(f->critic_w0, (size_t)p->in_stride * sizeof(float),
                                 c->weights.critic + FH_CRITIC_OFF_W0,
                                 FH_STATE_DIM * sizeof(float), FH_STATE_DIM * sizeof(float),
                                 FH_CRITIC_H1, cudaMemcpyDeviceToDevice, c->stream), err);
    if (f->actor_table) {
        int n_bars = c->d_market.n_bars;
        fh_actor_table_args t = {.table = f->actor_table, .features = c->d_features,
                                 .actor_w = c->weights.actor, .n_bars = n_bars,
                                 .split = p->actor_table_split};
        unsigned grid = (unsigned)((n_bars + FH_ACTOR_TABLE_BARS - 1) / FH_ACTOR_TABLE_BARS);
        if ((st = fh_fast_launch(c->stream, f->actor_table_k, grid, FH_ACTOR_H1, 0, &t, err)) !=
            FH_OK)
            return st;
    }
    fh_rollout_args a = {.actor_w = c->weights.actor, .actor_table = f->actor_table,
                         .cfg = c->cfg, .market = c->d_market, .episodes = c->d_episodes,
                         .n_episodes = c->n_episodes, .n_steps = c->n_steps,
                         .k_slots = p->k_slots, .in_stride = p->in_stride,
                         .critic_in = f->critic_in, .trunc_step = f->trunc_step, .out = c->out,
                         .clocks = f->clocks};
    return fh_fast_launch(c->stream, f->rollout, (unsigned)p->grid, (unsigned)p->threads_per_block,
                          p->rollout_smem, &a, err);
fail:
    return err->status;
}

/* The truncation values scattered into the batch, then GAE. */
static fh_status advantages(fh_gpu_ppo_collector *c, float gamma, float lambda, fh_error *err)
{
    fh_fast_path *f = &c->fast;
    const fh_fast_plan *p = &f->plan;
    int N = c->n_episodes, L = c->n_steps, K = p->k_slots;
    long long slots = (long long)N * K;
    fh_trunc_values_args s = {.trunc_values = c->out.trunc_values,
                              .slot_values = f->values_all + (long long)N * L,
                              .trunc_step = f->trunc_step, .n_episodes = N, .n_steps = L,
                              .k_slots = K};
    long long blocks = (slots + ELEMENTWISE_BLOCK - 1) / ELEMENTWISE_BLOCK;
    long long cap = (long long)c->dev.sm_count * 16;
    fh_status st = fh_fast_launch(c->stream, f->scatter,
                                  (unsigned)(blocks < 1 ? 1 : blocks > cap ? cap : blocks),
                                  ELEMENTWISE_BLOCK, 0, &s, err);
    if (st != FH_OK)
        return st;
    fh_gae_args g = {.out = c->out, .n_episodes = N, .n_steps = L, .gamma = gamma,
                     .lambda = lambda, .staged = p->gae_staged};
    return fh_fast_launch(c->stream, f->gae, (unsigned)p->gae_grid, (unsigned)(p->gae_warps * 32),
                          p->gae_smem, &g, err);
}

/* The whole collection on c->stream; with_events records the phase events: rollout,
 * networks (critic and curiosity), GAE. */
static fh_status fast_sequence(fh_gpu_ppo_collector *c, float gamma, float lambda,
                               int with_events, fh_error *err)
{
    fh_fast_path *f = &c->fast;
    fh_status st;
    if (with_events)
        CUDA_CHECK(cudaEventRecord(f->ev_phase[0], c->stream), err);
    if ((st = rollout(c, err)) != FH_OK)
        return st;
    if (with_events)
        CUDA_CHECK(cudaEventRecord(f->ev_phase[1], c->stream), err);
    if ((st = fh_fast_networks(c, err)) != FH_OK)
        return st;
    if (with_events)
        CUDA_CHECK(cudaEventRecord(f->ev_phase[2], c->stream), err);
    if ((st = advantages(c, gamma, lambda, err)) != FH_OK)
        return st;
    if (with_events)
        CUDA_CHECK(cudaEventRecord(f->ev_phase[3], c->stream), err);
    return FH_OK;
fail:
    return err->status;
}

fh_status fh_fast_path_run(fh_gpu_ppo_collector *c, const fh_collect_params *p, fh_error *err)
{
    fh_fast_path *f = &c->fast;
    if (c->profile)
        return fast_sequence(c, p->gamma, p->gae_lambda, 1, err);
    if (!f->graph_exec || f->graph_gamma != p->gamma || f->graph_lambda != p->gae_lambda) {
        if (f->graph_exec) {
            cudaGraphExecDestroy(f->graph_exec);
            cudaGraphDestroy(f->graph);
            f->graph_exec = NULL;
            f->graph = NULL;
        }
        CUDA_CHECK(cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal), err);
        fh_status st = fast_sequence(c, p->gamma, p->gae_lambda, 0, err);
        cudaGraph_t graph = NULL;
        cudaError_t end = cudaStreamEndCapture(c->stream, &graph);
        if (st != FH_OK) {
            if (graph)
                cudaGraphDestroy(graph);
            return st;
        }
        CUDA_CHECK(end, err);
        f->graph = graph;
        CUDA_CHECK(cudaGraphInstantiate(&f->graph_exec, f->graph, 0), err);
        f->graph_gamma = p->gamma;
        f->graph_lambda = p->gae_lambda;
    }
    CUDA_CHECK(cudaGraphLaunch(f->graph_exec, c->stream), err);
    return FH_OK;
fail:
    return err->status;
}
