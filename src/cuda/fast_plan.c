/* fast_plan.c — the fast path's choices (fast_plan.h). Each tuning constant names the
 * measurement it came from (docs/BENCHMARKS.md; the variants it beat in dev/cuda/). */
#include "cuda/fast_plan.h"

#include <string.h>

#include "cuda/critic_chunks.h"
#include "cuda/kernels/fast_layout.h"
#include "foxhunt/shapes.h"
#include "foxhunt/precision.h"

/* Mapping crossovers (H200, session 2): the block mapping up to 2 episodes per SM (a
 * step's latency sets the time), the lane mapping from 72 (the SMs' issue rate does). */
#define BLOCK_MAX_EPISODES_PER_SM 2
#define LANE_MIN_EPISODES_PER_SM 72
/* The pair kernel (a book-keeping warp beside each mover) up to 8 episodes per SM:
 * N 1024 rollout 2.57 against 2.62 ms; N 2048 5.05 against 4.22, the book-keepers' issue
 * slots then cost more than they save (session 4). */
#define PAIR_MAX_EPISODES_PER_SM 8
/* Critic input rows padded from 54 to 56 floats (224 B, 16-byte aligned rows; session 2):
 * the state rounded up to whole float4s. */
#define CRITIC_IN_STRIDE ((FH_STATE_DIM + 3) / 4 * 4)
_Static_assert(CRITIC_IN_STRIDE >= FH_STATE_DIM && CRITIC_IN_STRIDE % 4 == 0,
               "critic_layer0.cu, curiosity.cu and the critic's matmuls read rows of "
               "in_stride floats, 16-byte aligned");
/* Rows per batched-critic chunk: 2^22 measured 1.2 ms faster than 2^20 at N 16384
 * (session 6); the two activation buffers take at most a quarter of free memory. */
#define CHUNK_ROWS (1ll << 22)
#define CHUNK_ROW_STEP 4096 /* memory-capped chunks in whole steps (the tuned alignments) */
/* The factored first critic layer pays in fp32 when the market has at most half as many
 * bars as the critic has rows (its projection costs a layer-0 matmul over the bars); in
 * TF32 the layer-0 matmul is cheaper than the look-up (session 4), and bf16 reads a bf16
 * copy of the rows, which the look-up does not make. Table capped at 1 GiB,
 * split into column slices of at most 16 MiB (half an H200's L2: each half serves its
 * own SMs). */
#define FACTOR_MAX_BARS_PER_ROW 0.5
#define FACTOR_MAX_TABLE_BYTES (1ull << 30)
#define L0_SLICE_BYTES (16ull << 20)
/* The actor table: where the market has at most N*L bars, up to 256 MiB (session 7:
 * N 1024 2.52 -> 2.19 ms rollout). */
#define ACTOR_TABLE_MAX_BYTES (256ull << 20)
/* The pipeline from 2^22 critic rows (N 16384 x L 500: 141.35 -> 140.77 ms; N 1024:
 * 10.50 -> 10.69, so not below; session 6), its first chunk 2^17 rows growing 4x, at
 * most 64 chunks (each an event and a few graph nodes). */
#define PIPELINE_MIN_ROWS (1ll << 22)
#define PIPELINE_FIRST_ROWS (1 << 17)
#define PIPELINE_GROWTH 4
#define PIPELINE_MAX_CHUNKS 64
/* curiosity_fused_kernel: two transitions per thread, hidden blocks of 8 (200 registers,
 * two blocks an SM; N 16384 140.53 -> 139.70 ms, session 6). */
#define CURIOSITY_BLOCKS_PER_SM 2
/* GAE: one warp per episode row, staged in shared memory when a warp's row fits the
 * default 48 KB, up to 4 warps a block. */
#define GAE_MAX_WARPS 4
#define GAE_SMEM_BYTES (48u << 10)
#define GEMM_TUNE_CANDIDATES 8

typedef struct {
    const char *kernel;
    int unit_episodes, unit_threads, unit_floats, max_units;
} rollout_shape;

static const rollout_shape SHAPES[] = {
    [FH_ROLLOUT_WARP] = {"ppo_rollout_fast_kernel", 1, FH_WARP, FH_FAST_SM_PER_WARP,
                         FH_FAST_MAX_WARPS},
    [FH_ROLLOUT_BLOCK] = {"ppo_rollout_block_kernel", 1, FH_BLOCK_EP_ALL_THREADS,
                          FH_BLOCK_SM_PER_EPISODE, FH_BLOCK_MAX_EPISODES},
    [FH_ROLLOUT_LANE] = {"ppo_rollout_lane_kernel", FH_LANE_BLOCK_EPISODES, FH_LANE_BLOCK_THREADS,
                         FH_LANE_SM_PER_BLOCK, 1},
};
static const rollout_shape PAIR_SHAPE = {"ppo_rollout_pair_kernel", 1, FH_PAIR_THREADS,
                                         FH_PAIR_SM_PER_EPISODE, FH_PAIR_MAX_EPISODES};

const char *fh_rollout_mapping_name(fh_rollout_mapping m)
{
    switch (m) {
    case FH_ROLLOUT_WARP: return "warp";
    case FH_ROLLOUT_BLOCK: return "block";
    case FH_ROLLOUT_LANE: return "lane";
    default: return "auto";
    }
}

static size_t smem_bytes(const rollout_shape *s, int units)
{
    return (size_t)(FH_FAST_SM_WEIGHTS + (long long)units * s->unit_floats) * sizeof(float);
}

static int pick(int override_value, int automatic)
{
    return override_value == FH_AUTO ? automatic : override_value;
}

static void add_option(fh_fast_plan *p, const char *opt)
{
    snprintf(p->options[p->n_options++], FH_PLAN_OPTION_CHARS, "%s", opt);
}

/* The rollout: mapping, kernel, block packing, shared memory. */
static fh_status plan_rollout(const fh_plan_device *dev, const fh_plan_problem *prob,
                              const fh_gpu_overrides *ov, fh_fast_plan *p, fh_error *err)
{
    int N = prob->n_episodes, sms = dev->sm_count;
    int lane_fits = smem_bytes(&SHAPES[FH_ROLLOUT_LANE], 1) <= dev->shared_mem_per_block_optin;
    p->mapping = prob->mapping;
    if (p->mapping == FH_ROLLOUT_AUTO) /* the lane mapping's block (216 KiB) needs Hopper's limit */
        p->mapping = N <= BLOCK_MAX_EPISODES_PER_SM * sms ? FH_ROLLOUT_BLOCK
                     : N >= LANE_MIN_EPISODES_PER_SM * sms && lane_fits ? FH_ROLLOUT_LANE
                                                                        : FH_ROLLOUT_WARP;
    rollout_shape shape = SHAPES[p->mapping];
    p->pair = p->mapping == FH_ROLLOUT_WARP &&
              pick(ov->warp_book, N <= PAIR_MAX_EPISODES_PER_SM * sms);
    p->warp_episodes = 1;
    if (p->mapping == FH_ROLLOUT_WARP) {
        if (p->pair)
            shape = PAIR_SHAPE;
        /* two episodes a warp where the pair kernel is not used (rollout N 2048: 3.46
         * against 4.14 ms; N 4096: 5.38 against 8.30), one with it (N 1024: 2.52 against
         * 2.96: at eight episodes per SM a step's latency sets the time; session 5) */
        p->warp_episodes = pick(ov->warp_episodes, p->pair ? 1 : 2);
        shape.unit_episodes = p->warp_episodes;
        shape.unit_floats *= p->warp_episodes;
    }
    p->kernel = shape.kernel;
    /* spread the units over the SMs first, then pack them into blocks sharing the actor,
     * no more a block than the device's shared memory holds */
    int units = (N + shape.unit_episodes - 1) / shape.unit_episodes;
    int per_sm = (units + sms - 1) / sms;
    int per_block = per_sm < 1 ? 1 : per_sm > shape.max_units ? shape.max_units : per_sm;
    long long fit = ((long long)(dev->shared_mem_per_block_optin / sizeof(float)) -
                     FH_FAST_SM_WEIGHTS) / shape.unit_floats;
    if (per_block > fit && fit >= 1)
        per_block = (int)fit;
    p->grid = (units + per_block - 1) / per_block;
    p->episodes_per_block = per_block * shape.unit_episodes;
    p->threads_per_block = per_block * shape.unit_threads;
    p->rollout_smem = smem_bytes(&shape, per_block);
    if (p->rollout_smem > dev->shared_mem_per_block_optin)
        return fh_error_set(err, FH_ERR_FAILURE, "the %s rollout kernel needs %zu B of shared "
                            "memory per block; %s allows %zu (choose another --kernel)",
                            fh_rollout_mapping_name(p->mapping), p->rollout_smem, dev->name,
                            dev->shared_mem_per_block_optin);
    long long NL = (long long)N * prob->n_steps;
    p->actor_table_split = p->mapping != FH_ROLLOUT_LANE;
    p->actor_table_bytes = (size_t)prob->n_bars * sizeof(float) *
                           (p->actor_table_split ? FH_ACTOR_TABLE_SPLIT_ROW
                                                 : FH_ACTOR_TABLE_SEQ_ROW);
    if (prob->noisy_obs && ov->actor_table == 1)
        return fh_error_set(err, FH_ERR_INPUT, "FOXHUNT_ACTOR_FACTOR=1 with obs_noise > 0: the "
                            "per-bar table holds the noiseless features; unset it");
    p->actor_table = pick(ov->actor_table, !prob->noisy_obs && prob->n_bars <= NL &&
                                               p->actor_table_bytes <= ACTOR_TABLE_MAX_BYTES);
    return FH_OK;
}

/* The batched critic: rows, chunks, first layer, pipeline. */
static fh_status plan_critic(const fh_plan_device *dev, const fh_plan_problem *prob,
                             const fh_gpu_overrides *ov, fh_fast_plan *p, fh_error *err)
{
    int N = prob->n_episodes, L = prob->n_steps;
    /* an episode truncates at most once per horizon (plus one partial episode) when its
     * start leaves a full horizon of data; on shorter data any step may */
    p->k_slots = prob->n_bars - 1 - prob->horizon >= 0 ? L / prob->horizon + 2 : L;
    if (p->k_slots > L)
        p->k_slots = L;
    p->critic_rows = (long long)N * L + (long long)N * p->k_slots + N;
    p->in_stride = CRITIC_IN_STRIDE;
    p->chunk_rows = p->critic_rows < CHUNK_ROWS ? p->critic_rows : CHUNK_ROWS;
    long long fit = (long long)(dev->free_bytes / 4 / (2 * FH_CRITIC_H1 * sizeof(float)));
    fit = fit / CHUNK_ROW_STEP * CHUNK_ROW_STEP;
    if (p->chunk_rows > fit) /* at least one step, never more than there are rows */
        p->chunk_rows = fit > CHUNK_ROW_STEP ? fit : CHUNK_ROW_STEP;
    if (p->chunk_rows > p->critic_rows)
        p->chunk_rows = p->critic_rows;
    size_t proj_bytes = (size_t)prob->n_bars * FH_CRITIC_H1 * sizeof(float);
    if (prob->noisy_obs && ov->critic_factor == 1)
        return fh_error_set(err, FH_ERR_INPUT, "FOXHUNT_CRITIC_FACTOR=1 with obs_noise > 0: the "
                            "market projection holds the noiseless features; unset it");
    if (prob->precision == FH_PRECISION_BF16 && ov->critic_factor == 1)
        return fh_error_set(err, FH_ERR_INPUT, "FOXHUNT_CRITIC_FACTOR=1 with --precision bf16: "
                            "the factored first layer writes fp32 and the bf16 critic reads "
                            "bf16; unset it, or choose fp32");
    p->critic_factor = pick(ov->critic_factor,
                            !prob->noisy_obs && !prob->precision &&
                                prob->n_bars <= FACTOR_MAX_BARS_PER_ROW * (double)p->critic_rows &&
                                proj_bytes <= FACTOR_MAX_TABLE_BYTES);
    p->l0_slices = 1;
    while (p->critic_factor && p->l0_slices < 4 && proj_bytes / p->l0_slices > L0_SLICE_BYTES)
        p->l0_slices *= 2;
    p->pipeline_first_rows = pick(ov->pipeline_first_rows, PIPELINE_FIRST_ROWS);
    p->pipeline_growth = PIPELINE_GROWTH;
    int n_chunks = fh_critic_chunk_schedule(p->critic_rows, p->pipeline_first_rows,
                                            p->chunk_rows, p->pipeline_growth, NULL);
    if (ov->critic_pipeline == 1 && n_chunks > PIPELINE_MAX_CHUNKS)
        return fh_error_set(err, FH_ERR_INPUT, "FOXHUNT_CRITIC_PIPELINE=1: %lld critic rows in "
                            "chunks of at most %lld make %d chunks, more than %d; raise "
                            "FOXHUNT_CRITIC_PIPELINE_FIRST", p->critic_rows, p->chunk_rows,
                            n_chunks, PIPELINE_MAX_CHUNKS);
    /* its h0 holds every row's first-layer output: only where that takes at most a
     * quarter of the free memory, beside the activation buffers' quarter */
    size_t h0_bytes = (size_t)p->critic_rows * FH_CRITIC_H1 * sizeof(float);
    p->pipeline = pick(ov->critic_pipeline, p->critic_factor &&
                                                p->critic_rows >= PIPELINE_MIN_ROWS &&
                                                h0_bytes <= dev->free_bytes / 4 &&
                                                n_chunks <= PIPELINE_MAX_CHUNKS);
    p->n_chunks = p->pipeline ? n_chunks : 0;
    return FH_OK;
}

/* Curiosity and GAE launches. */
static void plan_tail(const fh_plan_device *dev, const fh_plan_problem *prob, fh_fast_plan *p)
{
    long long NL = (long long)prob->n_episodes * prob->n_steps;
    long long blocks = (NL + FH_CUR_THREADS - 1) / FH_CUR_THREADS;
    long long cap = (long long)dev->sm_count * CURIOSITY_BLOCKS_PER_SM;
    p->curiosity_grid = (int)(blocks < 1 ? 1 : blocks < cap ? blocks : cap);
    size_t row_bytes = (size_t)5 * prob->n_steps * sizeof(float); /* 5 words a step */
    int warps = (int)(GAE_SMEM_BYTES / row_bytes);
    p->gae_staged = warps > 0;
    p->gae_warps = warps < 1 ? GAE_MAX_WARPS : warps > GAE_MAX_WARPS ? GAE_MAX_WARPS : warps;
    p->gae_grid = (prob->n_episodes + p->gae_warps - 1) / p->gae_warps;
    p->gae_smem = p->gae_staged ? (size_t)p->gae_warps * row_bytes : 0;
}

fh_status fh_fast_plan_make(const fh_plan_device *dev, const fh_plan_problem *prob,
                            const fh_gpu_overrides *ov, fh_fast_plan *p, fh_error *err)
{
    fh_gpu_overrides none;
    if (!ov) {
        fh_gpu_overrides_default(&none);
        ov = &none;
    }
    memset(p, 0, sizeof *p);
    p->device = *dev;
    p->problem = *prob;
    if (prob->n_episodes < 1 || prob->n_steps < 1 || prob->n_bars < 2 || prob->horizon < 1 ||
        dev->sm_count < 1)
        return fh_error_set(err, FH_ERR_INPUT, "fast path plan: N %d, L %d, %d bars, horizon %d, "
                            "%d SMs: each must be positive (2 bars at least)", prob->n_episodes,
                            prob->n_steps, prob->n_bars, prob->horizon, dev->sm_count);
    fh_status st;
    if ((st = plan_rollout(dev, prob, ov, p, err)) != FH_OK ||
        (st = plan_critic(dev, prob, ov, p, err)) != FH_OK)
        return st;
    plan_tail(dev, prob, p);
    p->gemm_tune = ov->gemm_tune != 0;
    p->gemm_tune_candidates = GEMM_TUNE_CANDIDATES;
    p->rollout_clocks = ov->rollout_clocks == 1;
    p->block_shared_barriers = ov->block_shared_barriers == 1;
    add_option(p, "-lineinfo");
    if (p->rollout_clocks)
        add_option(p, "-DFH_ROLLOUT_CLOCKS=1");
    if (p->block_shared_barriers)
        add_option(p, "-DFH_BLOCK_SHARED_BARRIERS=1");
    if (p->mapping == FH_ROLLOUT_WARP && p->warp_episodes != 1)
        add_option(p, "-DFH_WARP_EPISODES=2");
    if (p->actor_table)
        add_option(p, "-DFH_ACTOR_TABLE=1");
    return FH_OK;
}

void fh_fast_plan_print(FILE *f, const fh_fast_plan *p)
{
    const fh_plan_problem *prob = &p->problem;
    const fh_plan_device *dev = &p->device;
    fprintf(f, "plan: N %d x L %d, %d bars, %s, on %s (%d SMs, %zu KB shared a block, %.1f GB "
            "free)\n", prob->n_episodes, prob->n_steps, prob->n_bars, fh_precision_name(prob->precision),
            dev->name, dev->sm_count, dev->shared_mem_per_block_optin >> 10,
            (double)dev->free_bytes / 1e9);
    fprintf(f, "  rollout:   %s mapping%s%s (%s), %d blocks x %d threads, %d episodes and %zu B "
            "shared a block\n", fh_rollout_mapping_name(p->mapping),
            p->pair ? " with a book-keeping warp" : "",
            p->warp_episodes == 2 ? ", two episodes a warp" : "", p->kernel, p->grid,
            p->threads_per_block, p->episodes_per_block, p->rollout_smem);
    fprintf(f, "  actor:     first layer %s\n",
            p->actor_table ? (p->actor_table_split ? "from the per-bar table (even/odd sums)"
                                                   : "from the per-bar table")
                           : prob->noisy_obs ? "computed per step (obs_noise: no table)"
                                             : "computed per step");
    fprintf(f, "  critic:    %lld rows (%d truncation slots an episode) in chunks of %lld, "
            "first layer %s%s%s\n", p->critic_rows, p->k_slots, p->chunk_rows,
            p->critic_factor ? "factored through the market" : "a matmul",
            p->critic_factor && p->l0_slices > 1 ? " in column slices" : "",
            p->pipeline ? ", pipelined on a side stream" : "");
    if (p->pipeline)
        fprintf(f, "  pipeline:  %d chunks from %lld rows\n", p->n_chunks, p->pipeline_first_rows);
    fprintf(f, "  curiosity: %d blocks x %d threads; GAE: %d blocks of %d warps%s\n",
            p->curiosity_grid, FH_CUR_THREADS, p->gae_grid, p->gae_warps,
            p->gae_staged ? ", rows staged in shared memory" : "");
    fprintf(f, "  matmuls:   %s%s, %s\n", fh_precision_name(prob->precision),
            prob->precision == FH_PRECISION_BF16
                ? " (the critic's weights and input rows copied to bf16, bf16 activations)"
                : "",
            p->gemm_tune ? "algorithms timed per shape once per GPU model (the cache's gemm-*.bin)"
                        : "cublasLt's first heuristic");
    fprintf(f, "  NVRTC:    ");
    for (int i = 0; i < p->n_options; i++)
        fprintf(f, " %s", p->options[i]);
    fprintf(f, "\n");
}

/* ---- the DQN/PQN collection ---- */

/* The stepped mapping from this many episodes (fewer: the plain kernel; see
 * docs/BENCHMARKS.md, the DQN collection's mappings side by side). */
#define DQN_STEPPED_MIN_EPISODES 1
/* The per-episode kernels: threads a block between these, so that N episodes spread
 * over every SM before blocks grow (a thread's step is long and serial). */
#define DQN_MIN_BLOCK 32
#define DQN_MAX_BLOCK 128

const char *fh_dqn_mapping_name(fh_dqn_mapping m)
{
    return m == FH_DQN_STEPPED ? "stepped" : "plain";
}

fh_status fh_dqn_plan_make(const fh_plan_device *dev, int n_episodes, int n_steps,
                           int reference, fh_dqn_plan *p, fh_error *err)
{
    memset(p, 0, sizeof *p);
    p->device = *dev;
    p->n_episodes = n_episodes;
    p->n_steps = n_steps;
    p->reference = reference != 0;
    if (n_episodes < 1 || n_steps < 1 || dev->sm_count < 1)
        return fh_error_set(err, FH_ERR_INPUT, "DQN collection plan: N %d, L %d, %d SMs: each "
                            "must be positive", n_episodes, n_steps, dev->sm_count);
    p->mapping = !p->reference && n_episodes >= DQN_STEPPED_MIN_EPISODES ? FH_DQN_STEPPED
                                                                          : FH_DQN_PLAIN;
    int per_sm = (n_episodes + dev->sm_count - 1) / dev->sm_count;
    int block = (per_sm + 31) / 32 * 32;
    p->threads_per_block = block < DQN_MIN_BLOCK ? DQN_MIN_BLOCK
                           : block > DQN_MAX_BLOCK ? DQN_MAX_BLOCK : block;
    p->grid = (n_episodes + p->threads_per_block - 1) / p->threads_per_block;
    return FH_OK;
}

void fh_dqn_plan_print(FILE *f, const fh_dqn_plan *p)
{
    fprintf(f, "plan: DQN/PQN collection, N %d x L %d, on %s (%d SMs)\n", p->n_episodes,
            p->n_steps, p->device.name, p->device.sm_count);
    if (p->mapping == FH_DQN_STEPPED)
        fprintf(f, "  rollout:   stepped mapping: per step the Q forward as fp32 matmuls over "
                "the %d episodes, then dqn_step_kernel (%d blocks x %d threads); %d steps in "
                "one CUDA graph\n", p->n_episodes, p->grid, p->threads_per_block, p->n_steps);
    else
        fprintf(f, "  rollout:   plain mapping%s: dqn_experience_kernel, one thread an episode "
                "(%d blocks x %d threads)\n", p->reference ? " (--kernel reference)" : "",
                p->grid, p->threads_per_block);
}
