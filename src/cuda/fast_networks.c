/* fast_networks.c — the fast path's batched networks after the rollout: the critic over
 * every critic row (cublasLt matmuls; the first layer factored through the market where
 * the plan says so; with the pipeline, that layer chunk by chunk on a side stream
 * beside the matmuls; under bf16, bf16 copies of the weights and rows and bf16
 * activations) and the curiosity model's bonus (one fused kernel). */
#include "cuda/gpu_ppo_collector_internal.h"
#include "cuda/kernels/bf16_convert.h"

/* the factored first layer's grid per SM: run alone, and beside the pipeline's
 * matmuls (bound by its writes; fewer blocks leave the matmuls room; session 6) */
#define L0_BLOCKS_PER_SM 16
#define PIPELINE_L0_BLOCKS_PER_SM 2

static const int CRITIC_DIMS[FH_CRITIC_N_LAYERS + 1] = {
    FH_STATE_DIM, FH_CRITIC_H1, FH_CRITIC_H2, FH_CRITIC_H3, FH_CRITIC_H4, FH_CRITIC_H5, 1};
static const int CRITIC_W[FH_CRITIC_N_LAYERS] = {FH_CRITIC_OFF_W0, FH_CRITIC_OFF_W1,
                                                 FH_CRITIC_OFF_W2, FH_CRITIC_OFF_W3,
                                                 FH_CRITIC_OFF_W4, FH_CRITIC_OFF_W5};
static const int CRITIC_B[FH_CRITIC_N_LAYERS] = {FH_CRITIC_OFF_B0, FH_CRITIC_OFF_B1,
                                                 FH_CRITIC_OFF_B2, FH_CRITIC_OFF_B3,
                                                 FH_CRITIC_OFF_B4, FH_CRITIC_OFF_B5};

/* This collection's market projection (factored first layer): market_proj (n_bars, 512)
 * = the bars' features (zero-padded to in_stride) times W0's market columns. */
static fh_status market_projection(fh_gpu_ppo_collector *c, cudaStream_t stream, fh_error *err)
{
    fh_fast_path *f = &c->fast;
    return fh_gemm_dense(&f->gemm, stream, f->market_proj, f->market_in, f->critic_w0, NULL,
                         f->plan.in_stride, FH_CRITIC_H1, c->d_market.n_bars, 0, err);
}

/* cols / 4 threads a row must divide the block, for every slice count the plan picks
 * (1, 2 or 4; src/cuda/size_checks.c states it too) */
_Static_assert(FH_CRITIC_H1 % 16 == 0 && FH_L0_THREADS % (FH_CRITIC_H1 / 4) == 0,
               "critic_layer0_factored: whole rows of cols / 4 threads in a block");
/* The first critic layer factored through the market (critic_layer0_factored_kernel)
 * into y for `rows` (<= chunk_rows) rows x at bars `bars`: one launch per column slice. */
static fh_status critic_layer0_factored(fh_gpu_ppo_collector *c, cudaStream_t stream, float *y,
                                        const float *x, const int *bars, long long rows,
                                        int blocks_per_sm, fh_error *err)
{
    fh_fast_path *f = &c->fast;
    int cols = FH_CRITIC_H1 / f->plan.l0_slices;
    long long rows_per_block = (long long)FH_L0_THREADS / (cols / 4) * FH_L0_ROWS_PER_THREAD;
    long long blocks = (rows + rows_per_block - 1) / rows_per_block;
    long long cap = (long long)c->dev.sm_count * blocks_per_sm;
    fh_critic_layer0_args a = {.y = y, .proj = f->market_proj, .bars = bars, .states = x,
                               .in_stride = f->plan.in_stride,
                               .w0 = c->weights.critic + FH_CRITIC_OFF_W0,
                               .w0_stride = FH_STATE_DIM,
                               .b0 = c->weights.critic + FH_CRITIC_OFF_B0,
                               .n_bars = c->d_market.n_bars, .rows = rows, .col0 = 0,
                               .cols = cols};
    for (a.col0 = 0; a.col0 < FH_CRITIC_H1; a.col0 += cols) {
        fh_status st = fh_fast_launch(stream, f->layer0, (unsigned)(blocks < cap ? blocks : cap),
                                      FH_L0_THREADS, 0, &a, err);
        if (st != FH_OK)
            return st;
    }
    return FH_OK;
}

/* dst (n) = bf16(src) on `stream` (to_bf16_kernel, a grid-stride loop). */
static fh_status to_bf16(fh_gpu_ppo_collector *c, cudaStream_t stream, unsigned short *dst,
                         const float *src, long long n, fh_error *err)
{
    fh_to_bf16_args a = {.src = src, .dst = dst, .n = n};
    long long blocks = (n + 255) / 256, cap = (long long)c->dev.sm_count * 8;
    return fh_fast_launch(stream, c->fast.to_bf16, (unsigned)(blocks < cap ? blocks : cap), 256,
                          0, &a, err);
}

/* bf16: this collection's bf16 copies of the critic's parameters and of its zero-padded
 * first layer (critic_w0, written by the rollout's phase), on `stream`. */
static fh_status critic_weights_bf16(fh_gpu_ppo_collector *c, cudaStream_t stream, fh_error *err)
{
    fh_fast_path *f = &c->fast;
    fh_status st = to_bf16(c, stream, f->critic16, c->weights.critic, FH_CRITIC_N_PARAMS, err);
    return st != FH_OK ? st
                       : to_bf16(c, stream, f->critic_w0_16, f->critic_w0,
                                 (long long)FH_CRITIC_H1 * f->plan.in_stride, err);
}

/* The bf16 critic (precision.h) over `rows` (<= chunk_rows) critic input rows x into
 * values: x copied to bf16 into act_b, then six bf16 matmuls with fp32 accumulation, the
 * hidden activations in bf16 (act_a, act_b, reused at half their fp32 size), the bias
 * epilogues reading the bf16 copy of the biases, the value layer's output and bias fp32. */
static fh_status critic_chain_bf16(fh_gpu_ppo_collector *c, cudaStream_t stream, const float *x,
                                   long long rows, float *values, fh_error *err)
{
    fh_fast_path *f = &c->fast;
    unsigned short *x16 = (unsigned short *)f->act_b;
    fh_status st = to_bf16(c, stream, x16, x, rows * f->plan.in_stride, err);
    for (int l = 0; st == FH_OK && l < FH_CRITIC_N_LAYERS; l++) {
        int last = l == FH_CRITIC_N_LAYERS - 1;
        void *y = last ? (void *)values : l % 2 == 0 ? (void *)f->act_a : (void *)f->act_b;
        const unsigned short *w = l == 0 ? f->critic_w0_16 : f->critic16 + CRITIC_W[l];
        const void *b = last ? (const void *)(c->weights.critic + CRITIC_B[l])
                             : (const void *)(f->critic16 + CRITIC_B[l]);
        st = fh_gemm_dense_typed(&f->gemm, stream, y, !last, x16, w, b,
                                 l == 0 ? f->plan.in_stride : CRITIC_DIMS[l], CRITIC_DIMS[l + 1],
                                 rows, !last, err);
        x16 = (unsigned short *)y;
    }
    return st;
}

/* The critic's layers from first_layer (0 or 1) over `rows` (<= chunk_rows) input rows
 * x at bars `bars`, into values, on `stream`. From layer 0, x is critic input rows
 * (in_stride floats apart) and the first layer is the factored kernel with the plan's
 * critic_factor (the market projection made this collection), else a matmul; from
 * layer 1, x is the first layer's output (512 floats a row, the pipeline's h0). */
static fh_status critic_chain(fh_gpu_ppo_collector *c, cudaStream_t stream, const float *x,
                              const int *bars, long long rows, float *values, int first_layer,
                              fh_error *err)
{
    fh_fast_path *f = &c->fast;
    if (f->critic16 && first_layer == 0 && !f->plan.critic_factor)
        return critic_chain_bf16(c, stream, x, rows, values, err);
    if (f->critic16) /* the plan refuses the factor under bf16 */
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: the bf16 critic from a factored first "
                            "layer (an internal error)", __FILE__, __LINE__);
    if (f->h0 && first_layer == 0) /* the activation buffers are 384 wide with h0 */
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: the critic from its first layer with "
                            "the pipeline's h0 (an internal error)", __FILE__, __LINE__);
    for (int l = first_layer; l < FH_CRITIC_N_LAYERS; l++) {
        int last = l == FH_CRITIC_N_LAYERS - 1;
        float *y = last ? values : (l % 2 == 0 ? f->act_a : f->act_b);
        fh_status st;
        if (l == 0 && f->plan.critic_factor)
            st = critic_layer0_factored(c, stream, y, x, bars, rows, L0_BLOCKS_PER_SM, err);
        else /* layer 0 reads the padded rows with the zero-padded weights */
            st = fh_gemm_dense(&f->gemm, stream, y, x,
                               l == 0 ? f->critic_w0 : c->weights.critic + CRITIC_W[l],
                               c->weights.critic + CRITIC_B[l],
                               l == 0 ? f->plan.in_stride : CRITIC_DIMS[l], CRITIC_DIMS[l + 1],
                               rows, !last, err);
        if (st != FH_OK)
            return st;
        x = y;
    }
    return FH_OK;
}

/* The curiosity model over the N*L transitions, its bonus added to the rewards, on
 * `stream`: one fused kernel in fp32 whatever the precision (it is latency- and
 * FMA-bound, not a matmul: two matmuls and two element-wise passes took 0.35 ms at
 * N 1024). */
static fh_status curiosity(fh_gpu_ppo_collector *c, cudaStream_t stream, fh_error *err)
{
    fh_fast_path *f = &c->fast;
    fh_curiosity_args a = {.rewards = c->out.rewards, .states = f->critic_in,
                           .in_stride = f->plan.in_stride, .actions = c->out.actions,
                           .exposures = c->out.exposures, .bars = c->out.bars,
                           .weights = c->weights.curiosity, .cfg = c->cfg,
                           .market = c->d_market, .n = (long long)c->n_episodes * c->n_steps};
    return fh_fast_launch(stream, f->curiosity, (unsigned)f->plan.curiosity_grid, FH_CUR_THREADS,
                          0, &a, err);
}

/* Without the pipeline: the critic over every row in chunks, then the curiosity model. */
static fh_status batched_networks(fh_gpu_ppo_collector *c, fh_error *err)
{
    fh_fast_path *f = &c->fast;
    fh_status st;
    if (f->plan.critic_factor && (st = market_projection(c, c->stream, err)) != FH_OK)
        return st;
    for (long long r0 = 0; r0 < f->plan.critic_rows; r0 += f->plan.chunk_rows) {
        long long rows = f->plan.critic_rows - r0 < f->plan.chunk_rows ? f->plan.critic_rows - r0
                                                                       : f->plan.chunk_rows;
        if ((st = critic_chain(c, c->stream, f->critic_in + r0 * f->plan.in_stride,
                               c->out.bars + r0, rows, f->values_all + r0, 0, err)) != FH_OK)
            return st;
    }
    return curiosity(c, c->stream, err);
}

/* The pipeline's chunk k on c->stream: with the factor, layers 1-5 over its rows of h0;
 * without, all six over its critic input rows. */
static fh_status pipeline_chunk(fh_gpu_ppo_collector *c, int k, fh_error *err)
{
    fh_fast_path *f = &c->fast;
    long long r0 = f->chunk_begin[k], rows = f->chunk_begin[k + 1] - r0;
    int factor = f->plan.critic_factor;
    const float *x = factor ? f->h0 + r0 * FH_CRITIC_H1 : f->critic_in + r0 * f->plan.in_stride;
    return critic_chain(c, c->stream, x, c->out.bars + r0, rows, f->values_all + r0, factor, err);
}

/* The pipeline: the side stream forks, makes the market projection (beside the rollout
 * it slowed the rollout at N 128: 1.20 -> 1.38 ms), each chunk's factored first layer
 * into h0, then the curiosity model; on c->stream each chunk's other layers once its
 * first is written, so that the first layer's writes and the curiosity model run beside
 * the matmuls; then c->stream joins the side stream. Without the factor the side stream
 * runs the curiosity model only. */
static fh_status pipelined_networks(fh_gpu_ppo_collector *c, fh_error *err)
{
    fh_fast_path *f = &c->fast;
    int factor = f->plan.critic_factor;
    fh_status st;
    CUDA_CHECK(cudaEventRecord(f->ev_rollout, c->stream), err);
    CUDA_CHECK(cudaStreamWaitEvent(f->side, f->ev_rollout, 0), err);
    /* the side stream's one matmul shares the GEMM workspace with the main stream's:
     * safe because every main-stream matmul here waits for ev_chunk[0], recorded after
     * it; another matmul on the side stream would need a workspace of its own */
    if (factor && (st = market_projection(c, f->side, err)) != FH_OK)
        return st;
    for (int k = 0; factor && k < f->plan.n_chunks; k++) {
        long long r0 = f->chunk_begin[k], rows = f->chunk_begin[k + 1] - r0;
        if ((st = critic_layer0_factored(c, f->side, f->h0 + r0 * FH_CRITIC_H1,
                                         f->critic_in + r0 * f->plan.in_stride, c->out.bars + r0,
                                         rows, PIPELINE_L0_BLOCKS_PER_SM, err)) != FH_OK)
            return st;
        CUDA_CHECK(cudaEventRecord(f->ev_chunk[k], f->side), err);
    }
    if ((st = curiosity(c, f->side, err)) != FH_OK)
        return st;
    CUDA_CHECK(cudaEventRecord(f->ev_join, f->side), err);
    for (int k = 0; k < f->plan.n_chunks; k++) {
        if (factor)
            CUDA_CHECK(cudaStreamWaitEvent(c->stream, f->ev_chunk[k], 0), err);
        if ((st = pipeline_chunk(c, k, err)) != FH_OK)
            return st;
    }
    CUDA_CHECK(cudaStreamWaitEvent(c->stream, f->ev_join, 0), err);
    return FH_OK;
fail:
    return err->status;
}

fh_status fh_fast_networks(fh_gpu_ppo_collector *c, fh_error *err)
{
    fh_status st;
    if (c->fast.critic16 && (st = critic_weights_bf16(c, c->stream, err)) != FH_OK)
        return st;
    return c->fast.plan.pipeline ? pipelined_networks(c, err) : batched_networks(c, err);
}

fh_status fh_fast_tune_gemms(fh_gpu_ppo_collector *c, fh_error *err)
{
    fh_fast_path *f = &c->fast;
    const fh_fast_plan *p = &f->plan;
    fh_status st;
    if (p->critic_factor && (st = market_projection(c, c->stream, err)) != FH_OK)
        return st;
    for (int k = 0; p->pipeline && k < p->n_chunks; k++)
        if ((st = pipeline_chunk(c, k, err)) != FH_OK)
            return st;
    if (!p->pipeline) { /* a full chunk and the last one, on the zeroed or unset buffers:
                           only the time matters; the first collection overwrites them */
        long long sizes[2] = {p->critic_rows < p->chunk_rows ? p->critic_rows : p->chunk_rows,
                              p->critic_rows > p->chunk_rows ? p->critic_rows % p->chunk_rows : 0};
        for (int i = 0; i < 2; i++)
            if (sizes[i] > 0 &&
                (st = critic_chain(c, c->stream, f->critic_in, c->out.bars, sizes[i],
                                   f->values_all, 0, err)) != FH_OK)
                return st;
    }
    CUDA_CHECK(cudaStreamSynchronize(c->stream), err);
    return FH_OK;
fail:
    return err->status;
}
