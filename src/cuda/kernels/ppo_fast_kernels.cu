/* ppo_fast_kernels.cu — the fast PPO collection path (issue 7; docs/ARCHITECTURE.md).
 *
 * The design note's single kernel does everything per thread. Here the work is split
 * by what is sequential in time and what is not, all on one stream and captured into
 * one CUDA graph per collector (one launch per collection, no host round trip inside):
 *
 *   1. ppo_rollout_fast_kernel: the only sequential part — observe, actor forward,
 *      sample, env_step — with one warp per episode and the actor's weights held in
 *      shared memory (transposed, so each lane reads consecutive outputs). It writes
 *      every state the critic must value into one buffer: the N*L states, the final
 *      observations of truncated episodes (K slots per episode) and s_L.
 *   2. the critic over all those rows at once (cublasLt matmuls with a bias+ReLU
 *      epilogue; the first layer factored through the market in fp32), and the
 *      curiosity model over the N*L transitions (curiosity_fused_kernel, which adds the
 *      bonus);
 *   3. scatter_trunc_values_kernel and gae_kernel (a warp scan per row over
 *      gae_step_terms, the terms compute_gae_backward uses).
 *
 * The environment and sampling arithmetic are the shared device functions
 * (common_device_functions.cuh, ppo_experience_kernel.cu); only the matrix-vector
 * products and the softmax reductions are spread over the warp's lanes, so sums are
 * ordered differently from the reference and results agree within SPEC §9's
 * tolerances (sampled actions identical except at CDF boundaries). */
#ifndef FOXHUNT_PPO_FAST_KERNELS_CU
#define FOXHUNT_PPO_FAST_KERNELS_CU

#include "ppo_experience_kernel.cu"

#define FH_WARP 32
#define FH_FULL_MASK 0xffffffffu
/* The actor in shared memory, transposed: W0T (54, 128), b0, W1T (128, 64), b1,
 * W2T (64, 48) with outputs padded to 48, b2 (48). */
#define FH_FAST_OUT_PAD 48
#define FH_FAST_SM_W0 0
#define FH_FAST_SM_B0 (FH_FAST_SM_W0 + FH_STATE_DIM * FH_ACTOR_H1)
#define FH_FAST_SM_W1 (FH_FAST_SM_B0 + FH_ACTOR_H1)
#define FH_FAST_SM_B1 (FH_FAST_SM_W1 + FH_ACTOR_H1 * FH_ACTOR_H2)
#define FH_FAST_SM_W2 (FH_FAST_SM_B1 + FH_ACTOR_H2)
#define FH_FAST_SM_B2 (FH_FAST_SM_W2 + FH_ACTOR_H2 * FH_FAST_OUT_PAD)
#define FH_FAST_SM_WEIGHTS (FH_FAST_SM_B2 + FH_FAST_OUT_PAD)
/* Per-episode scratch after the weights (floats). Both mappings use the state (padded
 * to 64) and a misc area (the bar after a reset); the warp mapping keeps h1 and h2,
 * the block mapping h1, the two halves of layer 1's sums and the four warps' partial
 * logits. */
#define FH_FAST_SM_STATE 0
#define FH_FAST_SM_H1 64
#define FH_FAST_SM_H2 (FH_FAST_SM_H1 + FH_ACTOR_H1)
#define FH_FAST_SM_MISC (FH_FAST_SM_H2 + FH_ACTOR_H2)
/* the episode's diversity window (fh_diversity, 168 B; offsets stay even, so its double
 * is 8-byte aligned): in shared memory, nothing of the episode's state that lane 0
 * carries is indexed at run time, and it stays in registers instead of local memory */
#define FH_FAST_SM_DIV_FLOATS 48
#define FH_FAST_SM_DIV (FH_FAST_SM_MISC + 8)
/* the actor table's row of the bar observed next (FH_ACTOR_TABLE; 16-byte aligned) */
#define FH_FAST_SM_TABLE (FH_FAST_SM_DIV + FH_FAST_SM_DIV_FLOATS)
#define FH_FAST_SM_PER_WARP (FH_FAST_SM_TABLE + FH_ACTOR_TABLE_SPLIT_ROW)
#define FH_FAST_MAX_WARPS 16
/* The actor's first layer factored through the market (FH_ACTOR_TABLE=1; the host's
 * FOXHUNT_ACTOR_FACTOR): a state's first 51 floats are its bar's features, so the
 * layer's sums over them are a table over the bars, made once per collection
 * (actor_table_kernel) in the order each mapping sums, and a step adds only the 3
 * portfolio inputs, bit for bit the sums it replaces. Rows: the even and the odd
 * inputs' sums apart (fast_actor, block_actor, pair_split_actor: 2 x 128 floats), or
 * one sum in input order (lane_dense: 128). */
#ifndef FH_ACTOR_TABLE
#define FH_ACTOR_TABLE 0
#endif
#define FH_ACTOR_TABLE_SPLIT_ROW (2 * FH_ACTOR_H1)
#define FH_ACTOR_TABLE_SEQ_ROW FH_ACTOR_H1
#define FH_BLOCK_EP_WARPS 4                          /* actor warps per episode, block mapping */
#define FH_BLOCK_EP_THREADS (FH_BLOCK_EP_WARPS * FH_WARP)
#define FH_BLOCK_BOOK_WARP FH_BLOCK_EP_WARPS         /* and a fifth that keeps the books */
#define FH_BLOCK_EP_ALL_THREADS (FH_BLOCK_EP_THREADS + FH_WARP)
#define FH_BLOCK_SM_P1 (FH_FAST_SM_H1 + FH_ACTOR_H1) /* (2, 64) layer-1 half sums */
#define FH_BLOCK_SM_P2 (FH_BLOCK_SM_P1 + 2 * FH_ACTOR_H2) /* (4, 48) partial logits */
#define FH_BLOCK_SM_MISC (FH_BLOCK_SM_P2 + FH_BLOCK_EP_WARPS * FH_FAST_OUT_PAD)
#define FH_BLOCK_SM_DIV (FH_BLOCK_SM_MISC + 8)
#define FH_BLOCK_SM_BOOK (FH_BLOCK_SM_DIV + FH_FAST_SM_DIV_FLOATS) /* fh_book_record */
#define FH_BLOCK_SM_BOOK_FLOATS 48 /* two fh_book_record slots of 24 floats */
#define FH_BLOCK_SM_TABLE (FH_BLOCK_SM_BOOK + FH_BLOCK_SM_BOOK_FLOATS) /* as FH_FAST_SM_TABLE */
#define FH_BLOCK_SM_PER_EPISODE (FH_BLOCK_SM_TABLE + FH_ACTOR_TABLE_SPLIT_ROW)
#define FH_BLOCK_MAX_EPISODES 2 /* named barriers 1..4: two per episode */
/* The warp mapping with a book-keeping warp ("pair"): two warps per episode; the warp
 * mapping's scratch, then the two book record slots. */
#define FH_PAIR_SM_BOOK FH_FAST_SM_PER_WARP
/* the split actor's hand-overs (FH_PAIR_SPLIT): layer-1 partial sums, partial logits */
#define FH_PAIR_SM_XCH1 (FH_PAIR_SM_BOOK + FH_BLOCK_SM_BOOK_FLOATS)
#define FH_PAIR_SM_XCH2 (FH_PAIR_SM_XCH1 + FH_ACTOR_H2)
#define FH_PAIR_SM_PER_EPISODE (FH_PAIR_SM_XCH2 + FH_ACTOR_H2)
#define FH_PAIR_THREADS (2 * FH_WARP)
/* Episodes per warp in the warp and pair kernels (FOXHUNT_WARP_EPISODES on the host):
 * each weight read from shared memory then feeds that many episodes. */
#ifndef FH_WARP_EPISODES
#define FH_WARP_EPISODES 1
#endif
/* The pair kernel's actor over both its warps (FH_PAIR_SPLIT=1; FOXHUNT_PAIR_SPLIT on the
 * host): pair_split_actor. One episode per pair only. */
#ifndef FH_PAIR_SPLIT
#define FH_PAIR_SPLIT 0
#endif
#define FH_PAIR_MAX_EPISODES (FH_FAST_MAX_WARPS / 2) /* named barriers 1..8 */
/* The racecheck build (-DFH_BLOCK_SHARED_BARRIERS, FOXHUNT_BLOCK_SHARED_BARRIERS=1 on the
 * host): the book-keeping warp also meets the actor warps at the actor's barriers, all
 * under one barrier id, which puts its work back on the chain but keeps every hand-off
 * as it is. compute-sanitizer's racecheck flags the book record's hand-off between the
 * usual build's two barrier ids although the observation barrier orders it; with one id
 * it reports nothing (docs/BENCHMARKS.md). */
#ifdef FH_BLOCK_SHARED_BARRIERS
#define FH_BLOCK_ACTOR_THREADS FH_BLOCK_EP_ALL_THREADS
#define FH_BLOCK_ACTOR_BARRIER(group) (1 + FH_BLOCK_MAX_EPISODES + (group))
#else
#define FH_BLOCK_ACTOR_THREADS FH_BLOCK_EP_THREADS
#define FH_BLOCK_ACTOR_BARRIER(group) (1 + (group))
#endif
/* Lane mapping (large N): a block holds 128 episodes in groups; a group is
 * FH_LANE_PER_LANE x 32 episodes, one per thread of its first warps for observing,
 * sampling and env_step, and four warps for the layers, where lane j takes episodes
 * j, j + 32, ... (FH_LANE_PER_LANE of them). Per group, k-major scratch (element k of
 * episode j at k * FH_LANE_GROUP_EPISODES + j, so a warp's accesses hit 32 banks): the
 * state (54), h1 (128; later the logits, 48) and h2 (64). FH_LANE_PER_LANE trades
 * shared-memory traffic (each broadcast weight feeds 32 x FH_LANE_PER_LANE
 * multiply-adds) against warps per SM (512 / FH_LANE_PER_LANE threads per block);
 * measured in docs/BENCHMARKS.md. */
#ifndef FH_LANE_PER_LANE
#define FH_LANE_PER_LANE 2
#endif
#define FH_LANE_BLOCK_EPISODES 128
#define FH_LANE_GROUP_EPISODES (FH_LANE_PER_LANE * FH_WARP)
#define FH_LANE_GROUP_WARPS 4
#define FH_LANE_GROUP_THREADS (FH_LANE_GROUP_WARPS * FH_WARP)
#define FH_LANE_GROUPS (FH_LANE_BLOCK_EPISODES / FH_LANE_GROUP_EPISODES)
#define FH_LANE_BLOCK_THREADS (FH_LANE_GROUPS * FH_LANE_GROUP_THREADS)
#define FH_LANE_SM_STATE 0
#define FH_LANE_SM_H1 (FH_STATE_DIM * FH_LANE_GROUP_EPISODES)
#define FH_LANE_SM_H2 (FH_LANE_SM_H1 + FH_ACTOR_H1 * FH_LANE_GROUP_EPISODES)
#define FH_LANE_SM_DIV (FH_LANE_SM_H2 + FH_ACTOR_H2 * FH_LANE_GROUP_EPISODES)
#define FH_LANE_SM_DIV_FLOATS 42 /* one fh_diversity (168 B, a multiple of 8) per episode */
#define FH_LANE_SM_BARS (FH_LANE_SM_DIV + FH_LANE_SM_DIV_FLOATS * FH_LANE_GROUP_EPISODES)
#define FH_LANE_SM_PER_GROUP (FH_LANE_SM_BARS + FH_LANE_GROUP_EPISODES) /* the bars (int) */
#define FH_LANE_SM_PER_BLOCK (FH_LANE_GROUPS * FH_LANE_SM_PER_GROUP)
#define FH_LANE_OUT_BLOCK 16 /* outputs accumulated in registers at once */
/* Lanes whose second feature slot is free (51 features = 32 + 19) load the bar's
 * prices for env_step_at: close, next close, sigma. */
#define FH_FAST_LANE_CLOSE 19
#define FH_FAST_LANE_NEXT_CLOSE 20
#define FH_FAST_LANE_SIGMA 21
/* Rollout clock counters (compiled in with -DFH_ROLLOUT_CLOCKS; FOXHUNT_ROLLOUT_CLOCKS
 * on the host): cycles per episode in each part of a step, on its first lane. */
#define FH_CLOCK_OBSERVE 0 /* observation written (block mapping: and the barrier) */
#define FH_CLOCK_ACTOR 1   /* the three layers (block mapping: with their barriers) */
#define FH_CLOCK_SAMPLE 2  /* softmax and the draw */
#define FH_CLOCK_ENV 3     /* env_step and the step's outputs */
#define FH_CLOCK_TAIL 4    /* truncation observation, reset, next bar */
#define FH_CLOCK_PARTS 5
#define FH_CLOCK_STRIDE 8  /* counters per episode in the clocks buffer */
/* How long segment_wait_kernel waits for a rollout segment before giving up */
#define FH_SEGMENT_WAIT_NS 20000000000ull /* 20 s */
/* Block shapes of the batched kernels the host launches (launch bounds here):
 * critic_layer0_factored_kernel's threads and rows per thread, curiosity_fused_kernel's
 * threads. */
#define FH_L0_THREADS 256
#define FH_L0_ROWS_PER_THREAD 4
#define FH_CUR_THREADS 128
#define FH_ACTOR_TABLE_BARS 32 /* actor_table_kernel: bars per block (FH_ACTOR_H1 threads) */

/* The block mapping's hand-off from the warp that moves the portfolio (warp 0) to the
 * one that keeps the books (warp FH_BLOCK_BOOK_WARP): step t's env_step_move result in
 * slot t & 1 of a two-record ring in shared memory. Warp 0 writes it at the end of step
 * t; the book-keeper reads it after the observation barrier of step t + 1, which all
 * five warps pass, and is done with it before it passes that of step t + 2, after which
 * warp 0 overwrites the slot. Only whole-barrier waits (bar.sync), no arrive/wait pairs. */
typedef struct {
    fh_step_move mv;
    int action;
} fh_book_record;

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)

#ifdef FH_ROLLOUT_CLOCKS
#define FH_CLOCK_DECL long long clk_acc[FH_CLOCK_PARTS] = {0, 0, 0, 0, 0}; long long clk_last = clock64()
#define FH_CLOCK_MARK(part) do { long long now_ = clock64(); clk_acc[part] += now_ - clk_last; clk_last = now_; } while (0)
#define FH_CLOCK_STORE(clocks, n, lane) do { if ((clocks) && (lane) == 0) for (int c_ = 0; c_ < FH_CLOCK_PARTS; c_++) (clocks)[(long long)(n) * FH_CLOCK_STRIDE + c_] = clk_acc[c_]; } while (0)
#else
#define FH_CLOCK_DECL do { } while (0)
#define FH_CLOCK_MARK(part) do { } while (0)
#define FH_CLOCK_STORE(clocks, n, lane) do { } while (0)
#endif

/* acc + w * x per component (four fmaf, in x, y, z, w order) */
__device__ __forceinline__ float4 fh_fma4(float4 w, float x, float4 acc)
{
    acc.x = fmaf(w.x, x, acc.x);
    acc.y = fmaf(w.y, x, acc.y);
    acc.z = fmaf(w.z, x, acc.z);
    acc.w = fmaf(w.w, x, acc.w);
    return acc;
}

/* 16 bytes from global to shared memory without passing through registers (cp.async,
 * sm_80 on; a plain copy before): the actor table's next row lands while the step
 * runs. fh_copy_async_wait waits for the thread's copies; a barrier then shares them. */
__device__ __forceinline__ void fh_copy16_async(float *dst, const float *src)
{
#if __CUDA_ARCH__ >= 800
    unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    size_t g = __cvta_generic_to_global(src);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d), "l"(g) : "memory");
#else
    *(float4 *)dst = __ldg((const float4 *)src);
#endif
}

__device__ __forceinline__ void fh_copy_async_wait(void)
{
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_all;" ::: "memory");
#endif
}

/* Warp-wide: the actor table's (split) row of `bar` into an episode's slot; each lane
 * copies the float4 of the outputs fast_actor gives it (4 lane .. 4 lane + 3) in both
 * halves. */
__device__ __forceinline__ void fast_table_fetch(float *slot, const float *table, int bar,
                                                 int lane)
{
    const float *row = table + (long long)bar * FH_ACTOR_TABLE_SPLIT_ROW;
    fh_copy16_async(slot + 4 * lane, row + 4 * lane);
    fh_copy16_async(slot + FH_ACTOR_H1 + 4 * lane, row + FH_ACTOR_H1 + 4 * lane);
}

/* The actor into shared memory, transposed and padded; every thread of the block helps. */
__device__ __forceinline__ void fast_load_actor(float *w, const float *__restrict__ actor_w)
{
    for (int i = threadIdx.x; i < FH_FAST_SM_WEIGHTS; i += blockDim.x)
        w[i] = 0.0f;
    __syncthreads();
    for (int i = threadIdx.x; i < FH_ACTOR_H1 * FH_STATE_DIM; i += blockDim.x) {
        int o = i / FH_STATE_DIM, k = i % FH_STATE_DIM;
        w[FH_FAST_SM_W0 + k * FH_ACTOR_H1 + o] = actor_w[FH_ACTOR_OFF_W0 + i];
    }
    for (int i = threadIdx.x; i < FH_ACTOR_H2 * FH_ACTOR_H1; i += blockDim.x) {
        int o = i / FH_ACTOR_H1, k = i % FH_ACTOR_H1;
        w[FH_FAST_SM_W1 + k * FH_ACTOR_H2 + o] = actor_w[FH_ACTOR_OFF_W1 + i];
    }
    for (int i = threadIdx.x; i < FH_N_ACTIONS * FH_ACTOR_H2; i += blockDim.x) {
        int o = i / FH_ACTOR_H2, k = i % FH_ACTOR_H2;
        w[FH_FAST_SM_W2 + k * FH_FAST_OUT_PAD + o] = actor_w[FH_ACTOR_OFF_W2 + i];
    }
    for (int i = threadIdx.x; i < FH_ACTOR_H1; i += blockDim.x)
        w[FH_FAST_SM_B0 + i] = actor_w[FH_ACTOR_OFF_B0 + i];
    for (int i = threadIdx.x; i < FH_ACTOR_H2; i += blockDim.x)
        w[FH_FAST_SM_B1 + i] = actor_w[FH_ACTOR_OFF_B1 + i];
    for (int i = threadIdx.x; i < FH_N_ACTIONS; i += blockDim.x)
        w[FH_FAST_SM_B2 + i] = actor_w[FH_ACTOR_OFF_B2 + i];
    __syncthreads();
}

/* One bar over the warp's lanes: the 51 market features two per lane (j = lane,
 * lane + 32) and, in the free second slots, the prices env_step_at needs. Issued a step
 * ahead, so the loads overlap the actor and the step that lane 0 runs alone. */
__device__ __forceinline__ void fast_load_bar(float *f0, float *f1, const fh_env_market *m,
                                              int bar, int lane)
{
    const float *f = m->features + (long long)bar * FH_N_MARKET_FEATURES;
    *f0 = f[lane];
    if (lane + FH_WARP < FH_N_MARKET_FEATURES)
        *f1 = f[lane + FH_WARP];
    else if (lane == FH_FAST_LANE_CLOSE)
        *f1 = m->close[bar];
    else if (lane == FH_FAST_LANE_NEXT_CLOSE)
        *f1 = m->close[bar + 1 < m->n_bars ? bar + 1 : bar];
    else if (lane == FH_FAST_LANE_SIGMA)
        *f1 = m->sigma[bar];
    else
        *f1 = 0.0f;
}

/* The prices of the bar held by fast_load_bar's registers (warp-wide). */
__device__ __forceinline__ fh_bar_prices fast_bar_prices(float f1)
{
    fh_bar_prices px;
    px.close = __shfl_sync(FH_FULL_MASK, f1, FH_FAST_LANE_CLOSE);
    px.next_close = __shfl_sync(FH_FULL_MASK, f1, FH_FAST_LANE_NEXT_CLOSE);
    px.sigma = __shfl_sync(FH_FULL_MASK, f1, FH_FAST_LANE_SIGMA);
    return px;
}

/* One observation: the market features from the lanes' registers, the 3 portfolio
 * features from the episode state on lane `owner` (the shared env_portfolio_features_at);
 * written to dst (global) and to the episode's shared-memory state. Warp-wide. */
__device__ __forceinline__ void fast_observe(float *dst, float *sm_state, const fh_env_config *cfg,
                                             const fh_episode_state *ep, float f0, float f1,
                                             int lane, int owner)
{
    float sigma = __shfl_sync(FH_FULL_MASK, f1, FH_FAST_LANE_SIGMA);
    sm_state[lane] = f0;
    if (lane + FH_WARP < FH_N_MARKET_FEATURES)
        sm_state[lane + FH_WARP] = f1;
    if (lane == owner)
        env_portfolio_features_at(cfg, ep, sigma, sm_state + FH_N_MARKET_FEATURES);
    __syncwarp();
    for (int j = lane; j < FH_STATE_DIM; j += FH_WARP)
        dst[j] = sm_state[j];
}

/* logits for actions lane and lane + 32 (the second only when < FH_N_ACTIONS) of the
 * warp's E episodes (episode e's scratch at scratch + e * stride), one warp. Each
 * weight read from shared memory feeds all E episodes: eight warps per SM each reading
 * the whole actor (72 KB) every step made the warp mapping's actor bound by shared-
 * memory bandwidth (docs/BENCHMARKS.md). Each dot product is split into independent
 * partial sums (over k modulo 2 or 4): one warp per SM at small N issues from a single
 * dependent chain, and ncu showed it stalled on FMA latency (4.2 cycles per
 * instruction, 42% fixed-latency stalls). */
template <int E>
__device__ __forceinline__ void fast_actor(float *l0, float *l1, const float *w, float *scratch,
                                           int stride, int lane)
{
    /* layer 0: lane owns outputs 4*lane .. 4*lane+3; even and odd inputs apart */
    float4 even[E], odd[E];
#if FH_ACTOR_TABLE
    { /* the market's inputs' sums from the table row (even: through input 50, odd: 49),
         then the portfolio's three in the loop's order: 51 odd, 52 even, 53 odd */
        const float *wp = w + FH_FAST_SM_W0 + FH_N_MARKET_FEATURES * FH_ACTOR_H1;
        float4 w51 = ((const float4 *)wp)[lane];
        float4 w52 = ((const float4 *)(wp + FH_ACTOR_H1))[lane];
        float4 w53 = ((const float4 *)(wp + 2 * FH_ACTOR_H1))[lane];
#pragma unroll
        for (int e = 0; e < E; e++) {
            const float *slot = scratch + e * stride + FH_FAST_SM_TABLE;
            const float *state = scratch + e * stride + FH_FAST_SM_STATE;
            even[e] = ((const float4 *)slot)[lane];
            odd[e] = ((const float4 *)(slot + FH_ACTOR_H1))[lane];
            odd[e] = fh_fma4(w51, state[FH_N_MARKET_FEATURES], odd[e]);
            even[e] = fh_fma4(w52, state[FH_N_MARKET_FEATURES + 1], even[e]);
            odd[e] = fh_fma4(w53, state[FH_N_MARKET_FEATURES + 2], odd[e]);
        }
    }
#else
#pragma unroll
    for (int e = 0; e < E; e++) {
        even[e] = ((const float4 *)(w + FH_FAST_SM_B0))[lane];
        odd[e] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
#pragma unroll 9
    for (int k = 0; k < FH_STATE_DIM; k += 2) {
        float4 w0 = ((const float4 *)(w + FH_FAST_SM_W0 + k * FH_ACTOR_H1))[lane];
        float4 w1 = ((const float4 *)(w + FH_FAST_SM_W0 + (k + 1) * FH_ACTOR_H1))[lane];
#pragma unroll
        for (int e = 0; e < E; e++) {
            const float *state = scratch + e * stride + FH_FAST_SM_STATE;
            even[e] = fh_fma4(w0, state[k], even[e]);
            odd[e] = fh_fma4(w1, state[k + 1], odd[e]);
        }
    }
#endif
#pragma unroll
    for (int e = 0; e < E; e++) {
        float4 a0 = make_float4(fmaxf(even[e].x + odd[e].x, 0.0f), fmaxf(even[e].y + odd[e].y, 0.0f),
                                fmaxf(even[e].z + odd[e].z, 0.0f), fmaxf(even[e].w + odd[e].w, 0.0f));
        ((float4 *)(scratch + e * stride + FH_FAST_SM_H1))[lane] = a0;
    }
    __syncwarp();
    /* layer 1: lane owns outputs 2*lane, 2*lane+1; four partial sums over k mod 4 */
    float2 p[E][4];
#pragma unroll
    for (int e = 0; e < E; e++) {
        p[e][0] = ((const float2 *)(w + FH_FAST_SM_B1))[lane];
        p[e][1] = p[e][2] = p[e][3] = make_float2(0.0f, 0.0f);
    }
#pragma unroll 4
    for (int k = 0; k < FH_ACTOR_H1; k += 4) {
        float xs[E][4];
#pragma unroll
        for (int e = 0; e < E; e++) {
            float4 x = *(const float4 *)(scratch + e * stride + FH_FAST_SM_H1 + k);
            xs[e][0] = x.x, xs[e][1] = x.y, xs[e][2] = x.z, xs[e][3] = x.w;
        }
#pragma unroll
        for (int j = 0; j < 4; j++) {
            float2 wk = ((const float2 *)(w + FH_FAST_SM_W1 + (k + j) * FH_ACTOR_H2))[lane];
#pragma unroll
            for (int e = 0; e < E; e++) {
                p[e][j].x = fmaf(wk.x, xs[e][j], p[e][j].x);
                p[e][j].y = fmaf(wk.y, xs[e][j], p[e][j].y);
            }
        }
    }
#pragma unroll
    for (int e = 0; e < E; e++) {
        float2 a1 = make_float2(fmaxf((p[e][0].x + p[e][1].x) + (p[e][2].x + p[e][3].x), 0.0f),
                                fmaxf((p[e][0].y + p[e][1].y) + (p[e][2].y + p[e][3].y), 0.0f));
        ((float2 *)(scratch + e * stride + FH_FAST_SM_H2))[lane] = a1;
    }
    __syncwarp();
    /* output layer: lane owns actions lane and lane + 32; four partial sums each */
    int second = lane + FH_WARP < FH_FAST_OUT_PAD ? lane + FH_WARP : lane;
    float q0[E][4], q1[E][4];
#pragma unroll
    for (int e = 0; e < E; e++) {
        q0[e][0] = w[FH_FAST_SM_B2 + lane];
        q1[e][0] = w[FH_FAST_SM_B2 + second];
        q0[e][1] = q0[e][2] = q0[e][3] = q1[e][1] = q1[e][2] = q1[e][3] = 0.0f;
    }
#pragma unroll 4
    for (int k = 0; k < FH_ACTOR_H2; k += 4) {
        float xs[E][4];
#pragma unroll
        for (int e = 0; e < E; e++) {
            float4 x = *(const float4 *)(scratch + e * stride + FH_FAST_SM_H2 + k);
            xs[e][0] = x.x, xs[e][1] = x.y, xs[e][2] = x.z, xs[e][3] = x.w;
        }
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const float *row = w + FH_FAST_SM_W2 + (k + j) * FH_FAST_OUT_PAD;
            float w0 = row[lane], w1 = row[second];
#pragma unroll
            for (int e = 0; e < E; e++) {
                q0[e][j] = fmaf(w0, xs[e][j], q0[e][j]);
                q1[e][j] = fmaf(w1, xs[e][j], q1[e][j]);
            }
        }
    }
#pragma unroll
    for (int e = 0; e < E; e++) {
        l0[e] = (q0[e][0] + q0[e][1]) + (q0[e][2] + q0[e][3]);
        l1[e] = (q1[e][0] + q1[e][1]) + (q1[e][2] + q1[e][3]);
    }
}

/* A named barrier for the `threads` threads of one episode or group (bar.sync id, n;
 * the intrinsic rather than inline asm with a "memory" clobber). */
__device__ __forceinline__ void episode_barrier(int id, int threads)
{
    __barrier_sync_count((unsigned)id, (unsigned)threads);
}


#define FH_BLOCK_ACTOR_BARRIERS 3 /* barriers inside block_actor */
/* The actor with an episode's four warps (t = thread within the episode, 0..127): layer
 * 0 one output per thread; layer 1 one output and half of the inputs per thread; the
 * output layer a quarter of the inputs per warp. Partial results meet in shared memory
 * at named barriers; warp 0 returns the logits of actions lane and lane + 32. */
__device__ __forceinline__ void block_actor(float *l0, float *l1, const float *w, float *scratch,
                                            int t, int barrier_id)
{
    const float *state = scratch + FH_FAST_SM_STATE;
    float *h1 = scratch + FH_FAST_SM_H1;
    float *p1 = scratch + FH_BLOCK_SM_P1;
    float *p2 = scratch + FH_BLOCK_SM_P2;
    int warp = t / FH_WARP, lane = t % FH_WARP;
    /* layer 0: output t, even and odd inputs apart */
#if FH_ACTOR_TABLE /* the market's sums from the table row, then inputs 51 to 53 */
    const float *slot = scratch + FH_BLOCK_SM_TABLE;
    const float *wp = w + FH_FAST_SM_W0 + FH_N_MARKET_FEATURES * FH_ACTOR_H1 + t;
    float even = slot[t], odd = slot[FH_ACTOR_H1 + t];
    odd = fmaf(wp[0], state[FH_N_MARKET_FEATURES], odd);
    even = fmaf(wp[FH_ACTOR_H1], state[FH_N_MARKET_FEATURES + 1], even);
    odd = fmaf(wp[2 * FH_ACTOR_H1], state[FH_N_MARKET_FEATURES + 2], odd);
#else
    float even = w[FH_FAST_SM_B0 + t], odd = 0.0f;
#pragma unroll
    for (int k = 0; k < FH_STATE_DIM; k += 2) {
        float2 x = *(const float2 *)(state + k);
        even = fmaf(w[FH_FAST_SM_W0 + k * FH_ACTOR_H1 + t], x.x, even);
        odd = fmaf(w[FH_FAST_SM_W0 + (k + 1) * FH_ACTOR_H1 + t], x.y, odd);
    }
#endif
    h1[t] = fmaxf(even + odd, 0.0f);
    episode_barrier(barrier_id, FH_BLOCK_ACTOR_THREADS);
    /* layer 1: output o = t mod 64 over inputs [64 half, 64 half + 64) */
    int o = t % FH_ACTOR_H2, half = t / FH_ACTOR_H2;
    float p[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    const float *h1_half = h1 + half * FH_ACTOR_H2;
    const float *w1 = w + FH_FAST_SM_W1 + half * FH_ACTOR_H2 * FH_ACTOR_H2 + o;
#pragma unroll
    for (int k = 0; k < FH_ACTOR_H2; k += 4) {
        float4 x = *(const float4 *)(h1_half + k);
        p[0] = fmaf(w1[(k + 0) * FH_ACTOR_H2], x.x, p[0]);
        p[1] = fmaf(w1[(k + 1) * FH_ACTOR_H2], x.y, p[1]);
        p[2] = fmaf(w1[(k + 2) * FH_ACTOR_H2], x.z, p[2]);
        p[3] = fmaf(w1[(k + 3) * FH_ACTOR_H2], x.w, p[3]);
    }
    p1[half * FH_ACTOR_H2 + o] = (p[0] + p[1]) + (p[2] + p[3]);
    episode_barrier(barrier_id, FH_BLOCK_ACTOR_THREADS);
    /* output layer: warp w sums inputs [16 w, 16 w + 16); h2 = relu(b1 + both halves) */
    const int quarter = FH_ACTOR_H2 / FH_BLOCK_EP_WARPS;
    int second = lane + FH_WARP < FH_FAST_OUT_PAD ? lane + FH_WARP : lane;
    float q0[2] = {0.0f, 0.0f}, q1[2] = {0.0f, 0.0f};
#pragma unroll
    for (int j = 0; j < quarter; j++) {
        int k = warp * quarter + j;
        float x = fmaxf(w[FH_FAST_SM_B1 + k] + (p1[k] + p1[FH_ACTOR_H2 + k]), 0.0f);
        const float *row = w + FH_FAST_SM_W2 + k * FH_FAST_OUT_PAD;
        q0[j & 1] = fmaf(row[lane], x, q0[j & 1]);
        q1[j & 1] = fmaf(row[second], x, q1[j & 1]);
    }
    p2[warp * FH_FAST_OUT_PAD + lane] = q0[0] + q0[1];
    if (second != lane)
        p2[warp * FH_FAST_OUT_PAD + second] = q1[0] + q1[1];
    episode_barrier(barrier_id, FH_BLOCK_ACTOR_THREADS);
    if (warp == 0) {
        const int s = FH_FAST_OUT_PAD;
        *l0 = w[FH_FAST_SM_B2 + lane] + ((p2[lane] + p2[s + lane]) + (p2[2 * s + lane] + p2[3 * s + lane]));
        *l1 = w[FH_FAST_SM_B2 + second] +
              ((p2[second] + p2[s + second]) + (p2[2 * s + second] + p2[3 * s + second]));
    }
}

#define FH_PAIR_HALF_H1 (FH_ACTOR_H1 / 2) /* layer 1's inputs per warp */
#define FH_PAIR_HALF_H2 (FH_ACTOR_H2 / 2) /* the output layer's inputs per warp */
/* The actor of the pair kernel's episode over both its warps (FH_PAIR_SPLIT; half 0:
 * the mover, which gets the logits of actions lane and lane + 32 as fast_actor's; half
 * 1: the book-keeper, which the step's chain otherwise leaves idle). A step's actor is
 * bound by one warp's dependent chain, not by the SM's issue rate or shared-memory
 * bandwidth (ncu, docs/BENCHMARKS.md), so each warp takes half of every layer:
 * layer 0's outputs [64 half, 64 half + 64), then layer 1 over those inputs for all 64
 * outputs (two per lane, four partial sums), the two halves' sums exchanged in shared
 * memory at the pair's barrier (each warp finishes 32 of h2: mover sum first), then
 * the output layer over its 32 inputs, the book-keeper's partial logits handed to the
 * mover at the barrier once more. Both warps pass `barrier_id` twice here. Sums are
 * ordered differently from fast_actor's; results agree with the reference within SPEC
 * §9's tolerances. */
__device__ __forceinline__ void pair_split_actor(float *l0, float *l1, const float *w,
                                                 float *scratch, int half, int lane,
                                                 int barrier_id)
{
    const float *state = scratch + FH_FAST_SM_STATE;
    float *h1 = scratch + FH_FAST_SM_H1, *h2 = scratch + FH_FAST_SM_H2;
    float *xch1 = scratch + FH_PAIR_SM_XCH1, *xch2 = scratch + FH_PAIR_SM_XCH2;
    /* layer 0: outputs o0, o0 + 1; even and odd inputs apart, as fast_actor's */
    int o0 = FH_PAIR_HALF_H1 * half + 2 * lane;
    float2 even, odd;
#if FH_ACTOR_TABLE
    {
        const float *slot = scratch + FH_FAST_SM_TABLE;
        const float *wp = w + FH_FAST_SM_W0 + FH_N_MARKET_FEATURES * FH_ACTOR_H1 + o0;
        float2 w51 = *(const float2 *)wp, w52 = *(const float2 *)(wp + FH_ACTOR_H1);
        float2 w53 = *(const float2 *)(wp + 2 * FH_ACTOR_H1);
        float x51 = state[FH_N_MARKET_FEATURES], x52 = state[FH_N_MARKET_FEATURES + 1];
        float x53 = state[FH_N_MARKET_FEATURES + 2];
        even = *(const float2 *)(slot + o0);
        odd = *(const float2 *)(slot + FH_ACTOR_H1 + o0);
        odd.x = fmaf(w51.x, x51, odd.x), odd.y = fmaf(w51.y, x51, odd.y);
        even.x = fmaf(w52.x, x52, even.x), even.y = fmaf(w52.y, x52, even.y);
        odd.x = fmaf(w53.x, x53, odd.x), odd.y = fmaf(w53.y, x53, odd.y);
    }
#else
    even = *(const float2 *)(w + FH_FAST_SM_B0 + o0);
    odd = make_float2(0.0f, 0.0f);
#pragma unroll 9
    for (int k = 0; k < FH_STATE_DIM; k += 2) {
        float2 w0 = *(const float2 *)(w + FH_FAST_SM_W0 + k * FH_ACTOR_H1 + o0);
        float2 w1 = *(const float2 *)(w + FH_FAST_SM_W0 + (k + 1) * FH_ACTOR_H1 + o0);
        even.x = fmaf(w0.x, state[k], even.x), even.y = fmaf(w0.y, state[k], even.y);
        odd.x = fmaf(w1.x, state[k + 1], odd.x), odd.y = fmaf(w1.y, state[k + 1], odd.y);
    }
#endif
    *(float2 *)(h1 + o0) = make_float2(fmaxf(even.x + odd.x, 0.0f), fmaxf(even.y + odd.y, 0.0f));
    __syncwarp(); /* each warp reads only the h1 it wrote */
    /* layer 1: outputs 2 lane, 2 lane + 1 over inputs [64 half, 64 half + 64) */
    float2 p[4];
    p[0] = half == 0 ? ((const float2 *)(w + FH_FAST_SM_B1))[lane] : make_float2(0.0f, 0.0f);
    p[1] = p[2] = p[3] = make_float2(0.0f, 0.0f);
#pragma unroll 4
    for (int k = FH_PAIR_HALF_H1 * half; k < FH_PAIR_HALF_H1 * (half + 1); k += 4) {
        float4 x = *(const float4 *)(h1 + k);
        float xs[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
        for (int j = 0; j < 4; j++) {
            float2 wk = ((const float2 *)(w + FH_FAST_SM_W1 + (k + j) * FH_ACTOR_H2))[lane];
            p[j].x = fmaf(wk.x, xs[j], p[j].x);
            p[j].y = fmaf(wk.y, xs[j], p[j].y);
        }
    }
    float2 mine = make_float2((p[0].x + p[1].x) + (p[2].x + p[3].x),
                              (p[0].y + p[1].y) + (p[2].y + p[3].y));
    /* the mover finishes outputs 0..31 (lanes 0..15), the book-keeper 32..63 */
    int keeps = (lane < FH_WARP / 2) == (half == 0);
    if (!keeps)
        ((float2 *)xch1)[lane] = mine;
    episode_barrier(barrier_id, FH_PAIR_THREADS);
    if (keeps) {
        float2 other = ((const float2 *)xch1)[lane];
        float2 a = half == 0 ? mine : other, b = half == 0 ? other : mine;
        ((float2 *)h2)[lane] = make_float2(fmaxf(a.x + b.x, 0.0f), fmaxf(a.y + b.y, 0.0f));
    }
    __syncwarp(); /* each warp reads only the h2 it wrote */
    /* output layer over inputs [32 half, 32 half + 32): actions lane and lane + 32 */
    int second = lane + FH_WARP < FH_FAST_OUT_PAD ? lane + FH_WARP : lane;
    float q0[4] = {0.0f, 0.0f, 0.0f, 0.0f}, q1[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (half == 0) {
        q0[0] = w[FH_FAST_SM_B2 + lane];
        q1[0] = w[FH_FAST_SM_B2 + second];
    }
#pragma unroll 4
    for (int k = FH_PAIR_HALF_H2 * half; k < FH_PAIR_HALF_H2 * (half + 1); k += 4) {
        float4 x = *(const float4 *)(h2 + k);
        float xs[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const float *row = w + FH_FAST_SM_W2 + (k + j) * FH_FAST_OUT_PAD;
            q0[j] = fmaf(row[lane], xs[j], q0[j]);
            q1[j] = fmaf(row[second], xs[j], q1[j]);
        }
    }
    float s0 = (q0[0] + q0[1]) + (q0[2] + q0[3]), s1 = (q1[0] + q1[1]) + (q1[2] + q1[3]);
    if (half == 1) {
        xch2[lane] = s0;
        xch2[FH_WARP + lane] = s1; /* lanes past 15: a copy of s0's action, unused */
    }
    episode_barrier(barrier_id, FH_PAIR_THREADS);
    if (half == 0) {
        *l0 = s0 + xch2[lane];
        *l1 = s1 + xch2[FH_WARP + lane];
    }
}

__device__ __forceinline__ float warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(FH_FULL_MASK, v, o));
    return v;
}

__device__ __forceinline__ float warp_inclusive_scan(float v, int lane)
{
    for (int o = 1; o < FH_WARP; o <<= 1) {
        float u = __shfl_up_sync(FH_FULL_MASK, v, o);
        if (lane >= o)
            v += u;
    }
    return v;
}

/* softmax_sample over the warp: the same rule (first action whose running sum of
 * exp(logit - max) exceeds u * total), with the sums formed by a warp scan. */
__device__ __forceinline__ void fast_softmax_sample(int *action, float *log_prob, float l0,
                                                    float l1, float u, int lane)
{
    int has1 = lane + FH_WARP < FH_N_ACTIONS;
    float m = warp_max(fmaxf(l0, has1 ? l1 : l0));
    float e0 = expf(l0 - m);
    float e1 = has1 ? expf(l1 - m) : 0.0f;
    float p0 = warp_inclusive_scan(e0, lane);
    float total0 = __shfl_sync(FH_FULL_MASK, p0, FH_WARP - 1);
    float p1 = warp_inclusive_scan(e1, lane) + total0;
    float total = __shfl_sync(FH_FULL_MASK, p1, FH_WARP - 1);
    float threshold = u * total;
    unsigned b0 = __ballot_sync(FH_FULL_MASK, p0 > threshold);
    unsigned b1 = __ballot_sync(FH_FULL_MASK, has1 && p1 > threshold);
    int chosen = b0 ? __ffs(b0) - 1 : b1 ? FH_WARP + __ffs(b1) - 1 : FH_N_ACTIONS - 1;
    float logit = __shfl_sync(FH_FULL_MASK, chosen < FH_WARP ? l0 : l1, chosen % FH_WARP);
    *action = chosen;
    *log_prob = logit - m - logf(total);
}

/* One step's per-transition outputs (the fast path leaves values and the curiosity
 * bonus to the batched networks; trunc_values are scattered in after them). */
__device__ __forceinline__ void fast_store_step(fh_ppo_outputs out, long long i, int action,
                                                float log_prob, const fh_step_result *res,
                                                int bar)
{
    out.actions[i] = action;
    out.log_probs[i] = log_prob;
    out.rewards[i] = res->reward;
    out.dones[i] = res->done;
    out.terminals[i] = res->terminal;
    out.trunc_values[i] = 0.0f;
    out.exposures[i] = res->exposure;
    out.bars[i] = bar;
}

/* fast_store_step's outputs of a step whose books are kept elsewhere: all but the
 * reward, which the book-keeper stores (fast_book_step). */
__device__ __forceinline__ void fast_store_move(fh_ppo_outputs out, long long i, int action,
                                                float log_prob, const fh_step_move *mv, int done,
                                                int bar)
{
    out.actions[i] = action;
    out.log_probs[i] = log_prob;
    out.dones[i] = done;
    out.terminals[i] = mv->terminal;
    out.trunc_values[i] = 0.0f;
    out.exposures[i] = (float)mv->e_new;
    out.bars[i] = bar;
}

/* The book-keeping warp's part of step i (block mapping), on lane 0, once warp 0 has
 * written its env_step_move result (*rec): env_step_book on the warp's own copy of the
 * episode's logs and the diversity window, the reward into the outputs, and the books'
 * part of the reset when the episode is done. */
__device__ __forceinline__ void fast_book_step(fh_episode_state *books, fh_diversity *div,
                                               const fh_env_config *cfg,
                                               const fh_book_record *rec, fh_ppo_outputs out,
                                               long long i)
{
    fh_step_result res;
    env_step_book(cfg, books, div, rec->action, &rec->mv, &res);
    out.rewards[i] = res.reward;
    if (res.done)
        env_episode_reset_book(cfg, books, div);
}

/* What one episode's rollout carries between steps besides its fh_episode_state
 * (only lane 0's copy of which evolves): scalars only, so they live in registers. */
typedef struct {
    int bar;      /* the bar observed at this step */
    int n_trunc;  /* final-observation slots used */
    float f0, f1; /* this bar's features and prices (fast_load_bar) */
    float g0, g1; /* the next bar's, loaded ahead */
    int ahead;    /* the bar g0/g1 hold */
} fh_fast_episode;

/* The entry of v that belongs to this lane's episode: a warp with E episodes keeps
 * episode e's fh_episode_state on lane e (lanes past E hold a copy of episode 0's that
 * only feeds warp-wide reads). */
template <int E, typename T>
__device__ __forceinline__ T lane_own(const T *v, int lane)
{
    T x = v[0];
#pragma unroll
    for (int e = 1; e < E; e++)
        if (lane == e)
            x = v[e];
    return x;
}

/* Warp-wide, at the start of step t for the warp's E episodes (episode e: row row[e]
 * + t, scratch at scratch + e * stride): each observation at r[e].bar into the state
 * buffer and critic_in, and the load of the bar after it (the usual next bar). With the
 * actor table, first the wait for the copies of this bar's rows (fast_step_end). */
template <int E>
__device__ __forceinline__ void fast_step_begin(fh_fast_episode *r, const fh_episode_state *ep,
                                                const fh_env_config *cfg, const fh_env_market *m,
                                                float *critic_in, int in_stride,
                                                const long long *row, int t, float *scratch,
                                                int stride, int lane)
{
    if (FH_ACTOR_TABLE)
        fh_copy_async_wait(); /* fast_observe's __syncwarp then shares the rows */
#pragma unroll
    for (int e = 0; e < E; e++) {
        fast_observe(critic_in + (row[e] + t) * in_stride,
                     scratch + e * stride + FH_FAST_SM_STATE, cfg, ep, r[e].f0, r[e].f1, lane, e);
        r[e].ahead = r[e].bar + 1 < m->n_bars ? r[e].bar + 1 : r[e].bar;
        fast_load_bar(&r[e].g0, &r[e].g1, m, r[e].ahead, lane);
    }
}

/* Warp-wide, after the actor, for the warp's E episodes (as in fast_step_begin; their
 * numbers n[e], their shared bar slots at sm_bar + e * stride; with the actor table,
 * their table slots at scratch + e * stride + table_slot): the copies of the table rows
 * of the bars loaded ahead (again, once the in-flight ones are done, where the next bar
 * is another), the draws, sampling
 * (a warp scan per episode), the environment steps on lanes 0..E-1 side by side and
 * the steps' outputs; a truncated episode's final observation into its slot; a reset
 * when done; leaves r[e].bar, f0, f1 at the bar the next step observes. With book NULL
 * the whole step (env_step_at_div, the lane's diversity window *div); else only
 * env_step_move, its result into slot t & 1 of the lane's book ring for the
 * book-keeping warp, which stores the reward and resets the books. */
template <int E>
__device__ __forceinline__ void fast_step_end(fh_fast_episode *r, fh_episode_state *ep,
                                              const fh_env_config *cfg, const fh_env_market *m,
                                              const float *l0, const float *l1,
                                              const long long *row, int t, const int *n,
                                              long long NL, int k_slots, float *critic_in,
                                              int in_stride, int *trunc_step, fh_ppo_outputs out,
                                              float *scratch, int *sm_bar, int stride,
                                              fh_diversity *div, fh_book_record *book,
                                              const float *table, int table_slot, int lane
#ifdef FH_ROLLOUT_CLOCKS
                                              , long long *clk_acc, long long *clk_last
#endif
)
{
    if (FH_ACTOR_TABLE) /* the actor has read the slots (a __syncwarp or barrier ago) */
#pragma unroll
        for (int e = 0; e < E; e++)
            fast_table_fetch(scratch + e * stride + table_slot, table, r[e].ahead, lane);
    int mine = lane < E; /* this lane steps episode `lane` */
    float u = 0.0f;
    if (mine)
        u = gpu_random(&ep->rng);
    int action[E], bar[E];
    float log_prob[E];
    fh_bar_prices px[E];
#pragma unroll
    for (int e = 0; e < E; e++) {
        fast_softmax_sample(&action[e], &log_prob[e], l0[e], l1[e],
                            __shfl_sync(FH_FULL_MASK, u, e), lane);
        px[e] = fast_bar_prices(r[e].f1);
        bar[e] = r[e].bar;
    }
#ifdef FH_ROLLOUT_CLOCKS
    { long long now_ = clock64(); clk_acc[FH_CLOCK_SAMPLE] += now_ - *clk_last; *clk_last = now_; }
#endif
    int my_action = lane_own<E>(action, lane), my_bar = lane_own<E>(bar, lane);
    float my_log_prob = lane_own<E>(log_prob, lane);
    fh_bar_prices my_px = lane_own<E>(px, lane);
    long long i = lane_own<E>(row, lane) + t;
    int truncated = 0, next_bar = 0, done = 0;
    if (book) { /* the portfolio here; the books on the book-keeping warp */
        if (mine) {
            fh_book_record *rec = book + (t & 1);
            env_step_move(cfg, m->n_bars, ep, my_action, &my_px, &rec->mv);
            rec->action = my_action;
            truncated = rec->mv.truncated;
            done = !rec->mv.moved || rec->mv.terminal || rec->mv.truncated;
            fast_store_move(out, i, my_action, my_log_prob, &rec->mv, done, my_bar);
            next_bar = ep->bar;
            if (done)
                ep->episodes_done++;
        }
    } else if (mine) {
        fh_step_result res;
        env_step_at_div(cfg, m->n_bars, ep, div, my_action, &my_px, &res);
        fast_store_step(out, i, my_action, my_log_prob, &res, my_bar);
        truncated = res.truncated;
        done = res.done;
        next_bar = ep->bar;
        if (done)
            ep->episodes_done++;
    }
    int any_done = 0, was_trunc[E], was_done[E], next[E];
#pragma unroll
    for (int e = 0; e < E; e++) {
        was_trunc[e] = __shfl_sync(FH_FULL_MASK, truncated, e);
        was_done[e] = __shfl_sync(FH_FULL_MASK, done, e);
        next[e] = __shfl_sync(FH_FULL_MASK, next_bar, e);
        any_done |= was_done[e];
    }
#ifdef FH_ROLLOUT_CLOCKS
    { long long now_ = clock64(); clk_acc[FH_CLOCK_ENV] += now_ - *clk_last; *clk_last = now_; }
#endif
#pragma unroll
    for (int e = 0; e < E; e++) {
        if (next[e] != r[e].ahead) {
            fast_load_bar(&r[e].g0, &r[e].g1, m, next[e], lane);
            if (FH_ACTOR_TABLE) {
                fh_copy_async_wait(); /* no two copies in flight to one slot */
                fast_table_fetch(scratch + e * stride + table_slot, table, next[e], lane);
            }
        }
        if (was_trunc[e] && r[e].n_trunc < k_slots) {
            /* the final observation, before the reset: its value bootstraps the GAE */
            long long slot = (long long)n[e] * k_slots + r[e].n_trunc;
            fast_observe(critic_in + (NL + slot) * in_stride,
                         scratch + e * stride + FH_FAST_SM_STATE, cfg, ep, r[e].g0, r[e].g1,
                         lane, e);
            if (lane == 0) {
                trunc_step[slot] = t;
                out.bars[NL + slot] = next[e]; /* the critic's first layer reads it */
            }
            r[e].n_trunc++;
        }
    }
    if (any_done) {
        if (mine && done) {
            if (book)
                env_episode_reset_move(cfg, m, ep); /* the book-keeper resets the rest */
            else
                env_episode_reset_div(cfg, m, ep, div);
            sm_bar[lane * stride] = ep->bar;
        }
        __syncwarp();
#pragma unroll
        for (int e = 0; e < E; e++)
            if (was_done[e]) {
                next[e] = sm_bar[e * stride];
                fast_load_bar(&r[e].g0, &r[e].g1, m, next[e], lane);
                if (FH_ACTOR_TABLE) {
                    fh_copy_async_wait();
                    fast_table_fetch(scratch + e * stride + table_slot, table, next[e], lane);
                }
            }
    }
#pragma unroll
    for (int e = 0; e < E; e++) {
        r[e].bar = next[e];
        r[e].f0 = r[e].g0;
        r[e].f1 = r[e].g1;
    }
    __syncwarp();
}

/* The book-keeping warp's whole rollout (block and pair mappings): the books of episode
 * *e (logs, diversity window *div, initial equity) on each lane where `mine` is set (one
 * lane per episode of the mover warp, each with its own e, div, book and row); at each
 * of the n_steps + 1 meetings at barrier `observed_id` (`threads` threads: the episode's
 * warps), step t - 1's record from the ring `book` (fast_book_step), one step behind
 * the warp that moves the portfolio; then the books' fields back into *e (that warp
 * writes the others). In the racecheck build it also meets the actor's
 * `actor_barriers` barriers of each step. With split_w (the pair kernel's split actor,
 * FH_PAIR_SPLIT: the actor's weights in shared memory; the episode's scratch at
 * split_scratch) it first runs its half of each step's actor (pair_split_actor), then
 * the books. */
__device__ __forceinline__ void fast_book_keeper(fh_episode_state *e, fh_diversity *div,
                                                 const fh_env_config *cfg,
                                                 const fh_book_record *book, fh_ppo_outputs out,
                                                 long long row, int n_steps, int observed_id,
                                                 int threads, int actor_barriers, int mine,
                                                 const float *split_w, float *split_scratch,
                                                 int lane)
{
    fh_episode_state books; /* only initial_equity and the book-keeping fields used */
    if (mine) {
        env_copy_book(&books, e);
        books.initial_equity = e->initial_equity; /* reset_book renews it */
        *div = e->diversity;
    }
    for (int t = 0; t <= n_steps; t++) { /* t = n_steps: the mover's final barrier */
        episode_barrier(observed_id, threads);
        if (FH_PAIR_SPLIT && split_w && t < n_steps)
            pair_split_actor(NULL, NULL, split_w, split_scratch, 1, lane, observed_id);
        if (t > 0 && mine)
            fast_book_step(&books, div, cfg, book + ((t - 1) & 1), out, row + t - 1);
        for (int k = 0; t < n_steps && k < actor_barriers; k++)
            episode_barrier(observed_id, threads); /* the actor's */
    }
    if (mine) {
        env_copy_book(e, &books);
        e->diversity = *div;
    }
}

/* Overlap of the critic with the rollout (gpu_fast_collect.c): the rollout counts each
 * episode into seg_done[t / seg_steps] once its state row t, the last of a time segment,
 * and that row's bar are written, so the critic of that segment can start
 * (segment_wait_kernel) while the rollout goes on. Every thread that wrote part of the
 * row calls this (fenced first); seg_done NULL: no overlap. */
__device__ __forceinline__ int fast_segment_ends(const int *seg_done, int t, int seg_steps,
                                                 int n_steps)
{
    return seg_done && ((t + 1) % seg_steps == 0 || t + 1 == n_steps);
}

__device__ __forceinline__ void fast_warp_segment_done(int *seg_done, int t, int seg_steps,
                                                       int n_steps, int *bar_dst, int bar,
                                                       int lane)
{
    if (!fast_segment_ends(seg_done, t, seg_steps, n_steps))
        return;
    if (lane == 0) /* the row's bar too (the factored first layer reads it), ahead of the
                      step's other outputs, which store it again */
        *bar_dst = bar;
    __threadfence();
    __syncwarp();
    if (lane == 0)
        atomicAdd(&seg_done[t / seg_steps], 1);
}

/* Warp-wide: the states of the warp's E episodes n[e] from the device (episode e's on
 * lane e), their truncation slots cleared; *div (the lane's diversity window, NULL to
 * leave it in the state) filled; bar slots at sm_bar + e * stride; with the actor table,
 * the copies of the first bars' rows into the slots at scratch + e * stride + table_slot
 * (sm_bar and the slots relative to the same scratch). */
template <int E>
__device__ __forceinline__ void fast_episode_begin(fh_fast_episode *r, fh_episode_state *ep,
                                                   const fh_env_market *m,
                                                   const fh_episode_state *episodes,
                                                   const int *n, int k_slots, int *trunc_step,
                                                   int *sm_bar, int stride, fh_diversity *div,
                                                   float *scratch, const float *table,
                                                   int table_slot, int lane)
{
    int mine = lane < E;
    *ep = episodes[lane_own<E>(n, lane)]; /* only the owners' copies evolve */
#pragma unroll
    for (int e = 0; e < E; e++) {
        r[e].n_trunc = 0;
        for (int j = lane; j < k_slots; j += FH_WARP)
            trunc_step[(long long)n[e] * k_slots + j] = -1;
    }
    if (mine) {
        sm_bar[lane * stride] = ep->bar;
        if (div) /* the window lives in shared memory until the end */
            *div = ep->diversity;
    }
    __syncwarp();
#pragma unroll
    for (int e = 0; e < E; e++) {
        r[e].bar = sm_bar[e * stride];
        fast_load_bar(&r[e].f0, &r[e].f1, m, r[e].bar, lane);
        if (FH_ACTOR_TABLE)
            fast_table_fetch(scratch + e * stride + table_slot, table, r[e].bar, lane);
    }
}

#ifdef FH_ROLLOUT_CLOCKS
#define FH_FAST_STEP_END_CLOCKS , clk_acc, &clk_last
#else
#define FH_FAST_STEP_END_CLOCKS
#endif

/* The warp mapping's mover: the whole rollout of episodes n0 .. n0 + E - 1 on one warp
 * (observe, actor, sample, the environment on lanes 0..E-1), episode e's scratch at
 * scratch + e * stride. Without BOOKS it runs whole steps on each lane's diversity
 * window and stores the episodes at the end; with BOOKS env_step_move only, handing
 * each step to the book-keeping warp through the episodes' book rings and meeting it
 * at barrier observed_id (FH_PAIR_THREADS) once a step and once after the last, and
 * it stores only the episodes' portfolio fields (the book-keeper the rest). Template
 * parameters, so that each kernel compiles only its own branches. */
template <int E, bool BOOKS>
__device__ __forceinline__ void warp_mover(const float *w, float *scratch, int stride,
                                           const fh_env_config *cfg, const fh_env_market *market,
                                           fh_episode_state *episodes, int n0, int n_episodes,
                                           int n_steps, int k_slots, float *critic_in,
                                           int in_stride, int *trunc_step, fh_ppo_outputs out,
                                           long long *clocks, int *seg_done, int seg_steps,
                                           int observed_id, const float *table, int lane)
{
    int n[E];
    long long row[E];
#pragma unroll
    for (int e = 0; e < E; e++) {
        n[e] = n0 + e;
        row[e] = (long long)n[e] * n_steps;
    }
    long long NL = (long long)n_episodes * n_steps;
    int mine = lane < E, me = mine ? lane : 0;
    float *my_scratch = scratch + me * stride;
    fh_diversity *div = (fh_diversity *)(my_scratch + FH_FAST_SM_DIV);
    fh_book_record *book = BOOKS ? (fh_book_record *)(my_scratch + FH_PAIR_SM_BOOK) : NULL;
    int *sm_bar = (int *)(scratch + FH_FAST_SM_MISC);
    fh_fast_episode r[E];
    fh_episode_state ep;
    fast_episode_begin<E>(r, &ep, market, episodes, n, k_slots, trunc_step, sm_bar, stride,
                          BOOKS ? NULL : div, scratch, table, FH_FAST_SM_TABLE, lane);
    FH_CLOCK_DECL;
    for (int t = 0; t < n_steps; t++) {
        fast_step_begin<E>(r, &ep, cfg, market, critic_in, in_stride, row, t, scratch, stride,
                           lane);
#pragma unroll
        for (int e = 0; e < E; e++)
            fast_warp_segment_done(seg_done, t, seg_steps, n_steps, out.bars + row[e] + t,
                                   r[e].bar, lane);
        if (BOOKS)
            episode_barrier(observed_id, FH_PAIR_THREADS); /* with the book-keeper */
        FH_CLOCK_MARK(FH_CLOCK_OBSERVE);
        float l0[E], l1[E];
        if (BOOKS && FH_PAIR_SPLIT && FH_WARP_EPISODES == 1) /* E is 1 */
            pair_split_actor(l0, l1, w, scratch, 0, lane, observed_id);
        else
            fast_actor<E>(l0, l1, w, scratch, stride, lane);
        FH_CLOCK_MARK(FH_CLOCK_ACTOR);
        fast_step_end<E>(r, &ep, cfg, market, l0, l1, row, t, n, NL, k_slots, critic_in,
                         in_stride, trunc_step, out, scratch, sm_bar, stride,
                         BOOKS ? NULL : div, book, table, FH_FAST_SM_TABLE,
                         lane FH_FAST_STEP_END_CLOCKS);
        FH_CLOCK_MARK(FH_CLOCK_TAIL);
    }
    if (BOOKS)
        episode_barrier(observed_id, FH_PAIR_THREADS); /* the last steps' books */
    if (FH_ACTOR_TABLE)
        fh_copy_async_wait(); /* the rows fetched for a step that never comes */
    long long last_rows = NL + (long long)n_episodes * k_slots;
    int bar[E];
#pragma unroll
    for (int e = 0; e < E; e++) {
        fast_observe(critic_in + (last_rows + n[e]) * in_stride,
                     scratch + e * stride + FH_FAST_SM_STATE, cfg, &ep, r[e].f0, r[e].f1,
                     lane, e);
        bar[e] = r[e].bar;
        FH_CLOCK_STORE(clocks, n[e], lane);
    }
    if (mine) {
        out.bars[last_rows + n0 + me] = lane_own<E>(bar, lane);
        if (BOOKS) {
            env_copy_move(&episodes[n0 + me], &ep); /* the book-keeper writes the rest */
        } else {
            ep.diversity = *div;
            episodes[n0 + me] = ep;
        }
    }
}


/* Phase 1, warp mapping (large N). Grid: ceil(N / (FH_WARP_EPISODES warps)) blocks of
 * `warps` warps; FH_WARP_EPISODES episodes per warp (the last warp may have fewer).
 * critic_in (N*L + N*K + N rows of 54 floats, in_stride >= 54 apart; the padding stays
 * zero): states, truncation final observations (slot j of episode n at row N*L + n*K +
 * j, step in trunc_step[n*K + j], -1 unused), s_L. clocks: NULL, or (N,
 * FH_CLOCK_STRIDE) under FH_ROLLOUT_CLOCKS. */
extern "C" __global__ void __launch_bounds__(FH_FAST_MAX_WARPS * FH_WARP)
ppo_rollout_fast_kernel(const float *__restrict__ actor_w, fh_env_config cfg, fh_env_market market,
                        fh_episode_state *episodes, int n_episodes, int n_steps, int k_slots,
                        float *critic_in, int in_stride, int *trunc_step, fh_ppo_outputs out,
                        long long *clocks, int *seg_done, int seg_steps,
                        const float *__restrict__ actor_table)
{
    extern __shared__ float sm[];
    float *w = sm;
    fast_load_actor(w, actor_w);
    int warp = threadIdx.x / FH_WARP, lane = threadIdx.x % FH_WARP;
    int n0 = (blockIdx.x * (blockDim.x / FH_WARP) + warp) * FH_WARP_EPISODES;
    if (n0 >= n_episodes)
        return; /* no block-wide barrier follows */
    const int stride = FH_FAST_SM_PER_WARP;
    float *scratch = sm + FH_FAST_SM_WEIGHTS + warp * FH_WARP_EPISODES * stride;
    if (FH_WARP_EPISODES == 1 || n0 + FH_WARP_EPISODES <= n_episodes)
        warp_mover<FH_WARP_EPISODES, false>(w, scratch, stride, &cfg, &market, episodes, n0,
                                            n_episodes, n_steps, k_slots, critic_in, in_stride,
                                            trunc_step, out, clocks, seg_done, seg_steps, 0,
                                            actor_table, lane);
    else /* the last warp, with fewer episodes */
        warp_mover<1, false>(w, scratch, stride, &cfg, &market, episodes, n0, n_episodes,
                             n_steps, k_slots, critic_in, in_stride, trunc_step, out, clocks,
                             seg_done, seg_steps, 0, actor_table, lane);
}

/* Phase 1, warp mapping with a book-keeping warp (the pair kernel; FOXHUNT_WARP_BOOK):
 * two warps per FH_WARP_EPISODES episodes and up to FH_PAIR_MAX_EPISODES such pairs per
 * block sharing the actor. The first runs the warp mapping's steps with env_step_move
 * only (warp_mover); the second keeps the books one step behind (fast_book_keeper, one
 * lane per episode), as the block mapping's fifth warp does, the two meeting once a
 * step at the pair's named barrier. Same arguments as the warp mapping. */
extern "C" __global__ void __launch_bounds__(FH_FAST_MAX_WARPS * FH_WARP)
ppo_rollout_pair_kernel(const float *__restrict__ actor_w, fh_env_config cfg, fh_env_market market,
                        fh_episode_state *episodes, int n_episodes, int n_steps, int k_slots,
                        float *critic_in, int in_stride, int *trunc_step, fh_ppo_outputs out,
                        long long *clocks, int *seg_done, int seg_steps,
                        const float *__restrict__ actor_table)
{
    extern __shared__ float sm[];
    float *w = sm;
    fast_load_actor(w, actor_w);
    int slot = threadIdx.x / FH_PAIR_THREADS, lane = threadIdx.x % FH_WARP;
    int keeps_books = (threadIdx.x / FH_WARP) % 2;
    int n0 = (blockIdx.x * (blockDim.x / FH_PAIR_THREADS) + slot) * FH_WARP_EPISODES;
    if (n0 >= n_episodes)
        return; /* the pair's two warps leave together; no block-wide barrier follows */
    const int stride = FH_PAIR_SM_PER_EPISODE;
    float *scratch = sm + FH_FAST_SM_WEIGHTS + slot * FH_WARP_EPISODES * stride;
    int here = n_episodes - n0 < FH_WARP_EPISODES ? n_episodes - n0 : FH_WARP_EPISODES;
    int observed_id = 1 + slot;
    if (keeps_books) {
        int mine = lane < here, me = mine ? lane : 0;
        float *my_scratch = scratch + me * stride;
        fast_book_keeper(&episodes[n0 + me], (fh_diversity *)(my_scratch + FH_FAST_SM_DIV), &cfg,
                         (fh_book_record *)(my_scratch + FH_PAIR_SM_BOOK), out,
                         (long long)(n0 + me) * n_steps, n_steps, observed_id, FH_PAIR_THREADS,
                         0, mine, FH_WARP_EPISODES == 1 ? w : NULL, scratch, lane);
    } else if (FH_WARP_EPISODES == 1 || here == FH_WARP_EPISODES) {
        warp_mover<FH_WARP_EPISODES, true>(w, scratch, stride, &cfg, &market, episodes, n0,
                                           n_episodes, n_steps, k_slots, critic_in, in_stride,
                                           trunc_step, out, clocks, seg_done, seg_steps,
                                           observed_id, actor_table, lane);
    } else { /* the last pair, with fewer episodes */
        warp_mover<1, true>(w, scratch, stride, &cfg, &market, episodes, n0, n_episodes, n_steps,
                            k_slots, critic_in, in_stride, trunc_step, out, clocks, seg_done,
                            seg_steps, observed_id, actor_table, lane);
    }
}

/* Phase 1, block mapping (small N: the step's latency, not the SMs' throughput, sets
 * the time). Five warps per episode and up to FH_BLOCK_MAX_EPISODES episodes per block
 * sharing the actor: the first four run the layers (block_actor); warp 0 also
 * observes, samples and moves the portfolio (fast_step_begin/_end with env_step_move)
 * while the others wait at the episode's named barrier; the fifth keeps the books
 * (fast_book_step: diversity, log return, reward, logs) one step behind, beside the
 * next step's observation and actor, so none of that is on the step's dependent chain.
 * Same arguments as the warp mapping. */
extern "C" __global__ void __launch_bounds__(FH_BLOCK_MAX_EPISODES * FH_BLOCK_EP_ALL_THREADS, 1)
ppo_rollout_block_kernel(const float *__restrict__ actor_w, fh_env_config cfg,
                         fh_env_market market, fh_episode_state *episodes, int n_episodes,
                         int n_steps, int k_slots, float *critic_in, int in_stride, int *trunc_step,
                         fh_ppo_outputs out, long long *clocks, int *seg_done, int seg_steps,
                         const float *__restrict__ actor_table)
{
    extern __shared__ float sm[];
    float *w = sm;
    fast_load_actor(w, actor_w);
    int group = threadIdx.x / FH_BLOCK_EP_ALL_THREADS, t_ep = threadIdx.x % FH_BLOCK_EP_ALL_THREADS;
    int lane = t_ep % FH_WARP, warp = t_ep / FH_WARP;
    int n = blockIdx.x * (blockDim.x / FH_BLOCK_EP_ALL_THREADS) + group;
    if (n >= n_episodes)
        return; /* the episode's warps leave together; no block-wide barrier follows */
    int barrier_id = FH_BLOCK_ACTOR_BARRIER(group);
    float *scratch = sm + FH_FAST_SM_WEIGHTS + group * FH_BLOCK_SM_PER_EPISODE;
    int *sm_bar = (int *)(scratch + FH_BLOCK_SM_MISC);
    fh_diversity *div = (fh_diversity *)(scratch + FH_BLOCK_SM_DIV);
    fh_book_record *book = (fh_book_record *)(scratch + FH_BLOCK_SM_BOOK); /* two slots */
    int observed_id = 1 + FH_BLOCK_MAX_EPISODES + group; /* all five warps */
    long long NL = (long long)n_episodes * n_steps;
    long long row = (long long)n * n_steps;
    if (warp == FH_BLOCK_BOOK_WARP) { /* the books: logs and diversity, one step behind */
#ifdef FH_BLOCK_SHARED_BARRIERS
        int actor_barriers = FH_BLOCK_ACTOR_BARRIERS;
#else
        int actor_barriers = 0;
#endif
        fast_book_keeper(&episodes[n], div, &cfg, book, out, row, n_steps, observed_id,
                         FH_BLOCK_EP_ALL_THREADS, actor_barriers, lane == 0, NULL, NULL, lane);
        return;
    }
    fh_fast_episode r;
    fh_episode_state ep;
    if (warp == 0)
        fast_episode_begin<1>(&r, &ep, &market, episodes, &n, k_slots, trunc_step, sm_bar, 0,
                              NULL, scratch, actor_table, FH_BLOCK_SM_TABLE, lane);
    FH_CLOCK_DECL;
    for (int t = 0; t < n_steps; t++) {
        long long i = row + t;
        if (warp == 0) {
            fast_step_begin<1>(&r, &ep, &cfg, &market, critic_in, in_stride, &row, t, scratch, 0,
                               lane);
            fast_warp_segment_done(seg_done, t, seg_steps, n_steps, out.bars + i, r.bar,
                                   lane);
        }
        episode_barrier(observed_id, FH_BLOCK_EP_ALL_THREADS); /* with the book-keeper */
        FH_CLOCK_MARK(FH_CLOCK_OBSERVE);
        float l0 = 0.0f, l1 = 0.0f;
        block_actor(&l0, &l1, w, scratch, t_ep, barrier_id);
        FH_CLOCK_MARK(FH_CLOCK_ACTOR);
        if (warp == 0)
            fast_step_end<1>(&r, &ep, &cfg, &market, &l0, &l1, &row, t, &n, NL, k_slots,
                             critic_in, in_stride, trunc_step, out, scratch, sm_bar, 0, NULL,
                             book, actor_table, FH_BLOCK_SM_TABLE, lane FH_FAST_STEP_END_CLOCKS);
        FH_CLOCK_MARK(FH_CLOCK_TAIL);
    }
    episode_barrier(observed_id, FH_BLOCK_EP_ALL_THREADS); /* the last step's books */
    if (warp == 0) {
        if (FH_ACTOR_TABLE)
            fh_copy_async_wait(); /* the rows fetched for a step that never comes */
        long long last_row = NL + (long long)n_episodes * k_slots + n;
        fast_observe(critic_in + last_row * in_stride, scratch + FH_FAST_SM_STATE, &cfg, &ep,
                     r.f0, r.f1, lane, 0);
        if (lane == 0) {
            out.bars[last_row] = r.bar;
            env_copy_move(&episodes[n], &ep); /* the book-keeper writes the rest */
        }
        FH_CLOCK_STORE(clocks, n, lane);
    }
}

/* One dense layer for a group's episodes: y[o][e] = act(b[o] + sum_k wT[k][o] x[k][e]),
 * summed in the reference's order (bias, then k ascending); with `table` (the actor
 * table, sequential rows; the group's bars in `bars`) the sums start from the table
 * row of the episode's bar, which holds them through input 50, and go on from 51. Warp w of the group takes
 * output blocks w, w + 4, ... of 16 outputs; lane j the episodes j + 32 e, so each
 * weight read from shared memory (a broadcast; a float4 costs four of its cycles)
 * feeds 32 x FH_LANE_PER_LANE multiply-adds, accumulated in registers. */
__device__ __forceinline__ void lane_dense(float *y, const float *x, const float *wT,
                                           const float *b, int n_in, int n_out, int w_stride,
                                           int relu, int warp, int lane,
                                           const float *table = NULL, const int *bars = NULL)
{
    for (int o0 = warp * FH_LANE_OUT_BLOCK; o0 < n_out;
         o0 += FH_LANE_GROUP_WARPS * FH_LANE_OUT_BLOCK) {
        float acc[FH_LANE_PER_LANE][FH_LANE_OUT_BLOCK];
        if (table) {
#pragma unroll
            for (int e = 0; e < FH_LANE_PER_LANE; e++) {
                const float4 *row = (const float4 *)(table + (long long)bars[e * FH_WARP + lane] *
                                                                 FH_ACTOR_TABLE_SEQ_ROW + o0);
#pragma unroll
                for (int q = 0; q < FH_LANE_OUT_BLOCK / 4; q++) {
                    float4 v = __ldg(row + q);
                    acc[e][4 * q + 0] = v.x, acc[e][4 * q + 1] = v.y;
                    acc[e][4 * q + 2] = v.z, acc[e][4 * q + 3] = v.w;
                }
            }
        } else {
#pragma unroll
            for (int j = 0; j < FH_LANE_OUT_BLOCK; j++) {
                float bj = b[o0 + j];
#pragma unroll
                for (int e = 0; e < FH_LANE_PER_LANE; e++)
                    acc[e][j] = bj;
            }
        }
#pragma unroll 2
        for (int k = table ? FH_N_MARKET_FEATURES : 0; k < n_in; k++) {
            float xe[FH_LANE_PER_LANE];
#pragma unroll
            for (int e = 0; e < FH_LANE_PER_LANE; e++)
                xe[e] = x[k * FH_LANE_GROUP_EPISODES + e * FH_WARP + lane];
            const float4 *wr = (const float4 *)(wT + k * w_stride + o0);
#pragma unroll
            for (int q = 0; q < FH_LANE_OUT_BLOCK / 4; q++) {
                float4 w4 = wr[q];
#pragma unroll
                for (int e = 0; e < FH_LANE_PER_LANE; e++) {
                    acc[e][4 * q + 0] = fmaf(w4.x, xe[e], acc[e][4 * q + 0]);
                    acc[e][4 * q + 1] = fmaf(w4.y, xe[e], acc[e][4 * q + 1]);
                    acc[e][4 * q + 2] = fmaf(w4.z, xe[e], acc[e][4 * q + 2]);
                    acc[e][4 * q + 3] = fmaf(w4.w, xe[e], acc[e][4 * q + 3]);
                }
            }
        }
#pragma unroll
        for (int j = 0; j < FH_LANE_OUT_BLOCK; j++)
#pragma unroll
            for (int e = 0; e < FH_LANE_PER_LANE; e++)
                y[(o0 + j) * FH_LANE_GROUP_EPISODES + e * FH_WARP + lane] =
                    relu ? fmaxf(acc[e][j], 0.0f) : acc[e][j];
    }
}

/* One thread's observation of its episode (the features of ep->bar and the portfolio
 * features) into column `col` of the group's k-major state and (row-major) into dst
 * unless dst is NULL (a thread past N). No prefetch: at the N this mapping serves,
 * other warps hide the loads. (Not a select between dst and a local dummy row: with
 * that, NVVM (CUDA 13.0) emitted no global stores at all.) */
__device__ __forceinline__ void lane_observe(float *dst, float *sm_state, const fh_env_config *cfg,
                                             const fh_env_market *m, const fh_episode_state *ep,
                                             int col)
{
    float obs[FH_STATE_DIM];
    env_observe(cfg, m, ep, obs);
#pragma unroll
    for (int j = FH_ACTOR_TABLE ? FH_N_MARKET_FEATURES : 0; j < FH_STATE_DIM; j++)
        sm_state[j * FH_LANE_GROUP_EPISODES + col] = obs[j]; /* the table has the market's */
    if (dst) {
#pragma unroll
        for (int j = 0; j < FH_STATE_DIM; j++)
            dst[j] = obs[j];
    }
}

/* Phase 1, lane mapping (large N: the SMs' throughput, not a step's latency, sets the
 * time). One thread per episode, as in the design note's kernel, for observing,
 * sampling (the shared softmax_sample) and env_step; the actor for a group's episodes
 * as three lane_dense layers over its four warps, which meet at the group's named
 * barrier. Same arguments as the other mappings; grid ceil(N / 128) blocks of
 * FH_LANE_BLOCK_THREADS threads. */
extern "C" __global__ void __launch_bounds__(FH_LANE_BLOCK_THREADS)
ppo_rollout_lane_kernel(const float *__restrict__ actor_w, fh_env_config cfg,
                        fh_env_market market, fh_episode_state *episodes, int n_episodes,
                        int n_steps, int k_slots, float *critic_in, int in_stride, int *trunc_step,
                        fh_ppo_outputs out, long long *clocks, int *seg_done, int seg_steps,
                        const float *__restrict__ actor_table)
{
    extern __shared__ float sm[];
    float *w = sm;
    fast_load_actor(w, actor_w);
    int group = threadIdx.x / FH_LANE_GROUP_THREADS, gt = threadIdx.x % FH_LANE_GROUP_THREADS;
    int warp = gt / FH_WARP, lane = gt % FH_WARP;
    int first = blockIdx.x * FH_LANE_BLOCK_EPISODES + group * FH_LANE_GROUP_EPISODES;
    if (first >= n_episodes)
        return; /* the whole group leaves; no block-wide barrier follows */
    int barrier_id = 1 + group;
    int steps_env = gt < FH_LANE_GROUP_EPISODES; /* this thread owns an episode */
    int n = first + gt;
    int active = steps_env && n < n_episodes; /* others step a copy of the group's first */
    int src = active ? n : first;
    float *scratch = sm + FH_FAST_SM_WEIGHTS + group * FH_LANE_SM_PER_GROUP;
    float *state = scratch + FH_LANE_SM_STATE, *h1 = scratch + FH_LANE_SM_H1;
    float *h2 = scratch + FH_LANE_SM_H2;
    int *bars = (int *)(scratch + FH_LANE_SM_BARS);
    long long NL = (long long)n_episodes * n_steps;
    long long row = (long long)src * n_steps;
    fh_episode_state ep;
    int n_trunc = 0;
    /* the thread's diversity window, in shared memory (as in the other mappings) */
    fh_diversity *div = (fh_diversity *)(scratch + FH_LANE_SM_DIV) + (steps_env ? gt : 0);
    if (steps_env) {
        ep = episodes[src];
        *div = ep.diversity;
        if (active)
            for (int j = 0; j < k_slots; j++)
                trunc_step[(long long)n * k_slots + j] = -1;
    }
    FH_CLOCK_DECL;
    for (int t = 0; t < n_steps; t++) {
        long long i = row + t;
        int bar = 0;
        float u = 0.0f;
        if (steps_env) {
            lane_observe(active ? critic_in + i * in_stride : NULL, state, &cfg, &market, &ep,
                         gt);
            if (active && fast_segment_ends(seg_done, t, seg_steps, n_steps)) {
                out.bars[i] = ep.bar; /* ahead of fast_store_step, for the factored layer */
                __threadfence();
                atomicAdd(&seg_done[t / seg_steps], 1);
            }
            bar = ep.bar;
            if (FH_ACTOR_TABLE) /* layer 0's table rows */
                bars[gt] = bar;
            u = gpu_random(&ep.rng);
        }
        episode_barrier(barrier_id, FH_LANE_GROUP_THREADS);
        FH_CLOCK_MARK(FH_CLOCK_OBSERVE);
        lane_dense(h1, state, w + FH_FAST_SM_W0, w + FH_FAST_SM_B0, FH_STATE_DIM, FH_ACTOR_H1,
                   FH_ACTOR_H1, 1, warp, lane, FH_ACTOR_TABLE ? actor_table : NULL, bars);
        episode_barrier(barrier_id, FH_LANE_GROUP_THREADS);
        lane_dense(h2, h1, w + FH_FAST_SM_W1, w + FH_FAST_SM_B1, FH_ACTOR_H1, FH_ACTOR_H2,
                   FH_ACTOR_H2, 1, warp, lane);
        episode_barrier(barrier_id, FH_LANE_GROUP_THREADS);
        float *logits_sm = h1; /* h1 is spent */
        lane_dense(logits_sm, h2, w + FH_FAST_SM_W2, w + FH_FAST_SM_B2, FH_ACTOR_H2,
                   FH_FAST_OUT_PAD, FH_FAST_OUT_PAD, 0, warp, lane);
        episode_barrier(barrier_id, FH_LANE_GROUP_THREADS);
        FH_CLOCK_MARK(FH_CLOCK_ACTOR);
        if (!steps_env)
            continue;
        float logits[FH_N_ACTIONS];
#pragma unroll
        for (int a = 0; a < FH_N_ACTIONS; a++)
            logits[a] = logits_sm[a * FH_LANE_GROUP_EPISODES + gt];
        int action;
        float log_prob;
        softmax_sample(&action, &log_prob, logits, FH_N_ACTIONS, u);
        FH_CLOCK_MARK(FH_CLOCK_SAMPLE);
        fh_step_result res;
        fh_bar_prices px = env_bar_prices(&market, ep.bar);
        env_step_at_div(&cfg, market.n_bars, &ep, div, action, &px, &res);
        if (active)
            fast_store_step(out, i, action, log_prob, &res, bar);
        if (res.done)
            ep.episodes_done++;
        FH_CLOCK_MARK(FH_CLOCK_ENV);
        if (res.truncated && n_trunc < k_slots) {
            /* the final observation, before the reset: its value bootstraps the GAE */
            long long slot = (long long)src * k_slots + n_trunc;
            lane_observe(active ? critic_in + (NL + slot) * in_stride : NULL, state, &cfg,
                         &market, &ep, gt);
            if (active) {
                trunc_step[slot] = t;
                out.bars[NL + slot] = ep.bar;
            }
            n_trunc++;
        }
        if (res.done)
            env_episode_reset_div(&cfg, &market, &ep, div);
        FH_CLOCK_MARK(FH_CLOCK_TAIL);
    }
    if (active) {
        long long last_row = NL + (long long)n_episodes * k_slots + n;
        lane_observe(critic_in + last_row * in_stride, state, &cfg, &market, &ep, gt);
        out.bars[last_row] = ep.bar;
        ep.diversity = *div;
        episodes[n] = ep;
        FH_CLOCK_STORE(clocks, n, 0);
    }
}

/* The side stream's gate for time segment `segment` (overlap, gpu_fast_collect.c): one
 * thread waits until all `target` episodes have counted their state rows of the segment
 * in seg_done, so the critic kernels after it read finished rows. The rollout never
 * waits on the critic, so this ends as long as the rollout runs beside it; should the
 * two ever be serialized (a tool that serializes kernels), it gives up after
 * FH_SEGMENT_WAIT_NS and sets *timed_out, which the host reports as an error. */
__device__ __forceinline__ unsigned long long fh_globaltimer(void)
{
    unsigned long long ns;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
    return ns;
}

extern "C" __global__ void segment_wait_kernel(const int *seg_done, int segment, int target,
                                               int *timed_out)
{
    if (threadIdx.x != 0 || blockIdx.x != 0)
        return;
    const volatile int *count = seg_done + segment;
    const volatile int *gave_up = timed_out;
    unsigned long long start = fh_globaltimer();
    while (*count < target && !*gave_up) { /* after one time-out the others do not wait */
        if (fh_globaltimer() - start > FH_SEGMENT_WAIT_NS) {
            atomicExch(timed_out, 1);
            break;
        }
        __nanosleep(256);
    }
    __threadfence();
}

/* dst (n_episodes * seg_len rows, episode-major) = critic_in rows n * n_steps + t for
 * t in [t0, t0 + seg_len): one time segment's states, contiguous for the GEMMs. */
extern "C" __global__ void gather_segment_rows_kernel(float *dst, int *dst_bars,
                                                      const float *__restrict__ critic_in,
                                                      const int *__restrict__ bars,
                                                      int in_stride, int n_episodes, int n_steps,
                                                      int t0, int seg_len)
{
    long long total = (long long)n_episodes * seg_len * in_stride;
    for (long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x; idx < total;
         idx += (long long)gridDim.x * blockDim.x) {
        long long r = idx / in_stride;
        int col = (int)(idx % in_stride);
        long long n = r / seg_len;
        int t = t0 + (int)(r % seg_len);
        dst[idx] = critic_in[(n * n_steps + t) * in_stride + col];
        if (col == 0)
            dst_bars[r] = bars[n * n_steps + t];
    }
}

/* values[n * n_steps + t0 + j] = seg_values[n * seg_len + j]: the segment's values back
 * into the episode-major rows. */
extern "C" __global__ void scatter_segment_values_kernel(float *values,
                                                         const float *__restrict__ seg_values,
                                                         int n_episodes, int n_steps, int t0,
                                                         int seg_len)
{
    long long total = (long long)n_episodes * seg_len;
    for (long long r = blockIdx.x * (long long)blockDim.x + threadIdx.x; r < total;
         r += (long long)gridDim.x * blockDim.x)
        values[(r / seg_len) * n_steps + t0 + r % seg_len] = seg_values[r];
}

/* The actor table (FH_ACTOR_TABLE), made before each rollout from that collection's
 * actor: row `bar` holds the first layer's sums over the bar's 51 market features, in
 * the order the rollout's mapping sums them, so that adding the 3 portfolio inputs gives
 * the same bits as the whole sum. split (fast_actor, block_actor, pair_split_actor): the
 * even inputs' sum from the bias, then the odd inputs' from 0 (FH_ACTOR_TABLE_SPLIT_ROW);
 * else one sum from the bias, inputs ascending (lane_dense; FH_ACTOR_TABLE_SEQ_ROW). A block of
 * FH_ACTOR_H1 threads (thread o: output o, its 51 weights in registers) makes
 * FH_ACTOR_TABLE_BARS rows, their features staged in shared memory (read as
 * broadcasts). The first layer's weights come in through shared memory too: read by
 * rows straight from global memory, each warp-wide load touched 32 rows 216 bytes
 * apart (ncu: 25 us for 20,000 bars). */
extern "C" __global__ void __launch_bounds__(FH_ACTOR_H1)
actor_table_kernel(float *table, const float *__restrict__ features,
                   const float *__restrict__ actor_w, int n_bars, int split)
{
    __shared__ float f_sm[FH_ACTOR_TABLE_BARS * FH_N_MARKET_FEATURES];
    __shared__ float w_sm[FH_ACTOR_H1 * FH_STATE_DIM]; /* W0 as stored: (128, 54) */
    int o = threadIdx.x;
    long long bar0 = (long long)blockIdx.x * FH_ACTOR_TABLE_BARS;
    int bars = n_bars - bar0 < FH_ACTOR_TABLE_BARS ? (int)(n_bars - bar0) : FH_ACTOR_TABLE_BARS;
    for (int i = o; i < bars * FH_N_MARKET_FEATURES; i += FH_ACTOR_H1)
        f_sm[i] = features[bar0 * FH_N_MARKET_FEATURES + i];
    for (int i = o; i < FH_ACTOR_H1 * FH_STATE_DIM; i += FH_ACTOR_H1)
        w_sm[i] = actor_w[FH_ACTOR_OFF_W0 + i];
    float bias = actor_w[FH_ACTOR_OFF_B0 + o];
    __syncthreads();
    float w[FH_N_MARKET_FEATURES];
#pragma unroll
    for (int k = 0; k < FH_N_MARKET_FEATURES; k++)
        w[k] = w_sm[o * FH_STATE_DIM + k];
    for (int b = 0; b < bars; b++) {
        const float *f = f_sm + b * FH_N_MARKET_FEATURES;
        if (split) {
            float even = bias, odd = 0.0f;
#pragma unroll
            for (int k = 0; k < FH_N_MARKET_FEATURES; k += 2) {
                even = fmaf(w[k], f[k], even);
                if (k + 1 < FH_N_MARKET_FEATURES)
                    odd = fmaf(w[k + 1], f[k + 1], odd);
            }
            table[(bar0 + b) * FH_ACTOR_TABLE_SPLIT_ROW + o] = even;
            table[(bar0 + b) * FH_ACTOR_TABLE_SPLIT_ROW + FH_ACTOR_H1 + o] = odd;
        } else {
            float acc = bias;
#pragma unroll
            for (int k = 0; k < FH_N_MARKET_FEATURES; k++)
                acc = fmaf(w[k], f[k], acc);
            table[(bar0 + b) * FH_ACTOR_TABLE_SEQ_ROW + o] = acc;
        }
    }
}

/* The critic's first layer through the market projection (gpu_fast_collect.c). A state's
 * first 51 entries are its bar's features, so W0 s = proj[bar] + W0[:, 51..53] s[51..53]
 * with proj = features W0[:, :51]^T computed once per collection over the market's bars:
 * y[r][j] = relu(proj[bars[r]][j] + b0[j] + sum_k w0[j][51 + k] s[r][51 + k]) for rows r
 * of states (in_stride floats apart; w0 rows w0_stride apart), y rows 512 apart, and
 * output columns j in [col0, col0 + cols): the host splits the columns into slices
 * whose part of the table fits in L2, where a whole 16,000-bar table (33 MB) kept
 * missing. A bar out of range (a row the rollout did not write) gives NaN, as its state
 * would. cols / 4 threads per row, four outputs each, and four rows per thread; the
 * thread's portfolio weights and biases in registers. */
extern "C" __global__ void __launch_bounds__(FH_L0_THREADS)
critic_layer0_factored_kernel(float *y, const float *__restrict__ proj,
                              const int *__restrict__ bars, const float *__restrict__ states,
                              int in_stride, const float *__restrict__ w0, int w0_stride,
                              const float *__restrict__ b0, int n_bars, long long rows, int col0,
                              int cols)
{
    int row_threads = cols / 4;
    int q = col0 / 4 + threadIdx.x % row_threads; /* this thread's float4 of the row */
    /* the thread's columns never change: their portfolio weights and biases stay in
     * registers (no shared memory, so its blocks fit beside the matmuls' on an SM) */
    float4 w[FH_N_PORTFOLIO_FEATURES];
#pragma unroll
    for (int k = 0; k < FH_N_PORTFOLIO_FEATURES; k++) {
        const float *col = w0 + FH_N_MARKET_FEATURES + k;
        w[k] = make_float4(col[(4 * q) * w0_stride], col[(4 * q + 1) * w0_stride],
                           col[(4 * q + 2) * w0_stride], col[(4 * q + 3) * w0_stride]);
    }
    const float4 bias = make_float4(b0[4 * q], b0[4 * q + 1], b0[4 * q + 2], b0[4 * q + 3]);
    /* each thread takes FH_L0_ROWS_PER_THREAD rows at once: their loads in flight together */
    long long stride = (long long)blockDim.x / row_threads;
    long long per_block = stride * FH_L0_ROWS_PER_THREAD;
    for (long long r0 = blockIdx.x * per_block + threadIdx.x / row_threads; r0 < rows;
         r0 += (long long)gridDim.x * per_block) {
        int bar[FH_L0_ROWS_PER_THREAD];
        float4 v[FH_L0_ROWS_PER_THREAD], p[FH_L0_ROWS_PER_THREAD];
#pragma unroll
        for (int u = 0; u < FH_L0_ROWS_PER_THREAD; u++) {
            long long r = r0 + u * stride;
            bar[u] = r < rows ? bars[r] : -1;
            v[u] = bias;
            if (r >= rows)
                continue;
            const float *s = states + r * in_stride + FH_N_MARKET_FEATURES;
#pragma unroll
            for (int k = 0; k < FH_N_PORTFOLIO_FEATURES; k++)
                v[u] = fh_fma4(w[k], s[k], v[u]);
        }
#pragma unroll
        for (int u = 0; u < FH_L0_ROWS_PER_THREAD; u++) {
            if (bar[u] >= 0 && bar[u] < n_bars) {
                const float4 *table_row =
                    reinterpret_cast<const float4 *>(proj + (long long)bar[u] * FH_CRITIC_H1);
                p[u] = __ldg(table_row + q);
            } else {
                float nan = __int_as_float(0x7fffffff);
                p[u] = make_float4(nan, nan, nan, nan);
            }
        }
#pragma unroll
        for (int u = 0; u < FH_L0_ROWS_PER_THREAD; u++) {
            long long r = r0 + u * stride;
            if (r >= rows)
                break;
            float4 o; /* ReLU that keeps a NaN (fmaxf would turn it into 0) */
            o.x = v[u].x + p[u].x < 0.0f ? 0.0f : v[u].x + p[u].x;
            o.y = v[u].y + p[u].y < 0.0f ? 0.0f : v[u].y + p[u].y;
            o.z = v[u].z + p[u].z < 0.0f ? 0.0f : v[u].z + p[u].z;
            o.w = v[u].w + p[u].w < 0.0f ? 0.0f : v[u].w + p[u].w;
            __stcs(reinterpret_cast<float4 *>(y + r * FH_CRITIC_H1) + q, o);
        }
    }
}

/* The curiosity model over all N*L transitions, fused: one thread per transition runs
 * curiosity_inference's arithmetic in its order (bias, then the inputs ascending; SPEC
 * §3.5) and adds curiosity_bonus(MSE against the next bar's features 0..31) to
 * rewards[i]. The weights sit transposed in shared memory, so each float4 read (the same
 * address across the warp: a broadcast) feeds four outputs' multiply-adds; inputs,
 * hidden units and predictions stay in registers. States rows are in_stride apart. */
/* One 16-byte shared-memory read (NVVM splits float4 reads of shared memory into four,
 * which would make the kernel bound by shared-memory instructions, not multiply-adds). */
__device__ __forceinline__ float4 fh_lds4(const float4 *p)
{
    float4 v;
    unsigned a = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "r"(a));
    return v;
}
#define FH_CUR_SM_W0T 0 /* (35, 64) */
#define FH_CUR_SM_B0 (FH_CUR_SM_W0T + FH_CURIOSITY_INPUT_DIM * FH_CURIOSITY_HIDDEN)
#define FH_CUR_SM_W1T (FH_CUR_SM_B0 + FH_CURIOSITY_HIDDEN) /* (64, 32) */
#define FH_CUR_SM_B1 (FH_CUR_SM_W1T + FH_CURIOSITY_HIDDEN * FH_CURIOSITY_TARGET_DIM)
#define FH_CUR_SM_FLOATS (FH_CUR_SM_B1 + FH_CURIOSITY_TARGET_DIM)
/* The curiosity model's forward pass for T transitions at once: pred[e] = b1 +
 * W1 relu(b0 + W0 x[e]), with x and pred in registers and the weights transposed in
 * shared memory (w0t[k]: the 64 hidden units' weights of input k, w1t[o]: the 32
 * predictions' weights of hidden unit o, as float4s): each weight read feeds 4 T
 * multiply-adds. The hidden units run in blocks of FH_CUR_HIDDEN_BLOCK, each added into
 * the predictions once done: every sum keeps curiosity_inference's order (bias, then
 * inputs ascending), and a thread holds one block of hidden units instead of all 64
 * (fewer registers, more warps an SM). */
#ifndef FH_CUR_HIDDEN_BLOCK
#define FH_CUR_HIDDEN_BLOCK 8
#endif
#ifndef FH_CUR_PER_THREAD
#define FH_CUR_PER_THREAD 2
#endif
/* y[0..3] += w * x, one fmaf per component (x, y, z, w order) */
__device__ __forceinline__ void fh_acc4(float *y, float4 w, float x)
{
    y[0] = fmaf(w.x, x, y[0]);
    y[1] = fmaf(w.y, x, y[1]);
    y[2] = fmaf(w.z, x, y[2]);
    y[3] = fmaf(w.w, x, y[3]);
}

/* y[e][4q..4q+3] = b[q] for each of the T rows, b read once as a float4 */
template <int T, int W>
__device__ __forceinline__ void fh_rows_from_bias(float (*y)[W], const float4 *b)
{
#pragma unroll
    for (int q = 0; q < W / 4; q++) {
        float4 bq = fh_lds4(b + q);
#pragma unroll
        for (int e = 0; e < T; e++) {
            y[e][4 * q] = bq.x;
            y[e][4 * q + 1] = bq.y;
            y[e][4 * q + 2] = bq.z;
            y[e][4 * q + 3] = bq.w;
        }
    }
}

template <int T>
__device__ __forceinline__ void fh_curiosity_forward(float (*pred)[FH_CURIOSITY_TARGET_DIM],
                                                     const float (*x)[FH_CURIOSITY_INPUT_DIM],
                                                     const float4 *w0t, const float4 *b0,
                                                     const float4 *w1t, const float4 *b1)
{
    constexpr int HB = FH_CUR_HIDDEN_BLOCK, HQ = FH_CURIOSITY_HIDDEN / 4,
                  PQ = FH_CURIOSITY_TARGET_DIM / 4;
    static_assert(FH_CURIOSITY_HIDDEN % HB == 0 && HB % 4 == 0, "hidden blocks of float4s");
    fh_rows_from_bias<T>(pred, b1);
#pragma unroll 1
    for (int o0 = 0; o0 < FH_CURIOSITY_HIDDEN; o0 += HB) {
        float h[T][HB];
        fh_rows_from_bias<T>(h, b0 + o0 / 4);
#pragma unroll
        for (int k = 0; k < FH_CURIOSITY_INPUT_DIM; k++) {
#pragma unroll
            for (int q = 0; q < HB / 4; q++) {
                float4 wv = fh_lds4(w0t + k * HQ + o0 / 4 + q);
#pragma unroll
                for (int e = 0; e < T; e++)
                    fh_acc4(&h[e][4 * q], wv, x[e][k]);
            }
        }
#pragma unroll
        for (int o = 0; o < HB; o++) {
#pragma unroll
            for (int q = 0; q < PQ; q++) {
                float4 wv = fh_lds4(w1t + (o0 + o) * PQ + q);
#pragma unroll
                for (int e = 0; e < T; e++)
                    fh_acc4(&pred[e][4 * q], wv, h[e][o] > 0.0f ? h[e][o] : 0.0f);
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(FH_CUR_THREADS)
curiosity_fused_kernel(float *rewards, const float *__restrict__ states, int in_stride,
                       const int *__restrict__ actions, const float *__restrict__ exposures,
                       const int *__restrict__ bars, const float *__restrict__ cur_w,
                       fh_env_config cfg, fh_env_market market, long long nl)
{
    __shared__ float4 w4[FH_CUR_SM_FLOATS / 4]; /* float4-typed: read as vectors */
    float *w = reinterpret_cast<float *>(w4);
    for (int idx = threadIdx.x; idx < FH_CURIOSITY_INPUT_DIM * FH_CURIOSITY_HIDDEN;
         idx += blockDim.x) {
        int k = idx / FH_CURIOSITY_HIDDEN, o = idx % FH_CURIOSITY_HIDDEN;
        w[FH_CUR_SM_W0T + idx] = cur_w[FH_CURIOSITY_OFF_W0 + o * FH_CURIOSITY_INPUT_DIM + k];
    }
    for (int idx = threadIdx.x; idx < FH_CURIOSITY_HIDDEN * FH_CURIOSITY_TARGET_DIM;
         idx += blockDim.x) {
        int o = idx / FH_CURIOSITY_TARGET_DIM, j = idx % FH_CURIOSITY_TARGET_DIM;
        w[FH_CUR_SM_W1T + idx] = cur_w[FH_CURIOSITY_OFF_W1 + j * FH_CURIOSITY_HIDDEN + o];
    }
    for (int o = threadIdx.x; o < FH_CURIOSITY_HIDDEN; o += blockDim.x)
        w[FH_CUR_SM_B0 + o] = cur_w[FH_CURIOSITY_OFF_B0 + o];
    for (int j = threadIdx.x; j < FH_CURIOSITY_TARGET_DIM; j += blockDim.x)
        w[FH_CUR_SM_B1 + j] = cur_w[FH_CURIOSITY_OFF_B1 + j];
    __syncthreads();
    const float4 *w0t = w4 + FH_CUR_SM_W0T / 4, *b0 = w4 + FH_CUR_SM_B0 / 4;
    const float4 *w1t = w4 + FH_CUR_SM_W1T / 4, *b1 = w4 + FH_CUR_SM_B1 / 4;
    /* a grid-stride loop over transitions, FH_CUR_PER_THREAD at a time (a whole grid's
     * stride apart, so that a warp's loads and stores stay contiguous): the weights are
     * staged once per block; the reads of them are volatile (fh_lds4), or the compiler
     * would hoist all 4,384 out of the loop and spill them */
    constexpr int T = FH_CUR_PER_THREAD;
    long long threads = (long long)gridDim.x * blockDim.x;
    for (long long i0 = blockIdx.x * (long long)blockDim.x + threadIdx.x; i0 < nl;
         i0 += T * threads) {
        float x[T][FH_CURIOSITY_INPUT_DIM];
#pragma unroll
        for (int e = 0; e < T; e++) {
            long long i = i0 + e * threads < nl ? i0 + e * threads : i0; /* a spare: i0 again */
            const float *s = states + i * in_stride;
#pragma unroll
            for (int k = 0; k < FH_CURIOSITY_TARGET_DIM; k++)
                x[e][k] = s[k];
            int a = actions[i];
            x[e][FH_CURIOSITY_TARGET_DIM] = action_to_exposure(a);
            x[e][FH_CURIOSITY_TARGET_DIM + 1] = action_to_urgency(a);
            x[e][FH_CURIOSITY_TARGET_DIM + 2] = exposures[i];
        }
        float pred[T][FH_CURIOSITY_TARGET_DIM];
        fh_curiosity_forward<T>(pred, x, w0t, b0, w1t, b1);
#pragma unroll
        for (int e = 0; e < T; e++) {
            long long i = i0 + e * threads;
            if (i >= nl)
                break;
            const float *next = market.features + (long long)(bars[i] + 1) * FH_N_MARKET_FEATURES;
            float sum = 0.0f;
#pragma unroll
            for (int j = 0; j < FH_CURIOSITY_TARGET_DIM; j++) {
                float d = pred[e][j] - next[j];
                sum += d * d;
            }
            rewards[i] += curiosity_bonus(&cfg, sum / (float)FH_CURIOSITY_TARGET_DIM);
        }
    }
}

/* trunc_values[n, t] = V(final observation in slot j) for every used slot. */
extern "C" __global__ void scatter_trunc_values_kernel(float *trunc_values,
                                                       const float *__restrict__ slot_values,
                                                       const int *__restrict__ trunc_step,
                                                       int n_episodes, int n_steps, int k_slots)
{
    long long total = (long long)n_episodes * k_slots;
    for (long long s = blockIdx.x * (long long)blockDim.x + threadIdx.x; s < total;
         s += (long long)gridDim.x * blockDim.x) {
        int t = trunc_step[s];
        if (t >= 0)
            trunc_values[(s / k_slots) * n_steps + t] = slot_values[s];
    }
}

/* Phase B of the design note, one warp per episode row: the recurrence
 * A_t = delta_t + carry_t A_{t+1} composes as affine maps, so each lane folds its chunk
 * of the row into one map (A_{t0} = P + Q A_{t1}), a warp suffix scan composes the
 * maps of the lanes after it, and each lane then replays its chunk from the A it is
 * handed. The terms are gae_step_terms, as in compute_gae_backward; only the order of
 * the roundings differs (a sequential scan cost 0.25 ms at N 128: 500 dependent steps
 * through global memory). With `staged` (dynamic shared memory of 5 * n_steps words per
 * warp) the warp first copies its row into shared memory with coalesced loads and
 * writes the results back the same way: read in place, each lane's strided walk missed
 * L1 once 124 rows an SM were in flight (0.67 ms at N 16384). Staged, a lane's chunk is
 * odd in length, so that the lanes' reads fall in different banks. */
extern "C" __global__ void gae_kernel(fh_ppo_outputs out, int n_episodes, int n_steps,
                                      float gamma, float lambda, int staged)
{
    extern __shared__ float gae_sm[];
    int n = (int)((blockIdx.x * (long long)blockDim.x + threadIdx.x) / FH_WARP);
    int lane = threadIdx.x % FH_WARP;
    if (n >= n_episodes)
        return; /* whole warps: blockDim is a multiple of 32 */
    long long row = (long long)n * n_steps;
    const float *r = out.rewards + row, *v = out.values + row, *tv = out.trunc_values + row;
    const int *d = out.dones + row, *term = out.terminals + row;
    float *adv = out.advantages + row, *ret = out.returns + row;
    if (staged) {
        float *w = gae_sm + (long long)(threadIdx.x / FH_WARP) * 5 * n_steps;
        float *sr = w, *sv = w + n_steps, *stv = w + 2 * n_steps;
        int *sd = reinterpret_cast<int *>(w + 3 * n_steps), *sterm = sd + n_steps;
        for (int t = lane; t < n_steps; t += FH_WARP) {
            sr[t] = r[t];
            sv[t] = v[t];
            stv[t] = tv[t];
            sd[t] = d[t];
            sterm[t] = term[t];
        }
        __syncwarp();
        r = sr;
        v = sv;
        tv = stv;
        d = sd;
        term = sterm;
        adv = sr; /* a lane writes A_t and R_t over r_t and tv_t once it has read them */
        ret = stv;
    }
    float last_value = out.last_values[n];
    int chunk = (n_steps + FH_WARP - 1) / FH_WARP;
    if (staged)
        chunk |= 1;
    int t0 = lane * chunk < n_steps ? lane * chunk : n_steps;
    int t1 = t0 + chunk < n_steps ? t0 + chunk : n_steps;
    float P = 0.0f, Q = 1.0f;
    for (int t = t1 - 1; t >= t0; t--) {
        float delta, carry;
        gae_step_terms(&delta, &carry, r, v, d, term, tv, last_value, n_steps, t, gamma, lambda);
        P = delta + carry * P;
        Q = carry * Q;
    }
    /* suffix scan: (P, Q) of lanes [lane, 31] composed */
    for (int offset = 1; offset < FH_WARP; offset <<= 1) {
        float Pn = __shfl_down_sync(FH_FULL_MASK, P, offset);
        float Qn = __shfl_down_sync(FH_FULL_MASK, Q, offset);
        if (lane + offset < FH_WARP) {
            P = P + Q * Pn;
            Q = Q * Qn;
        }
    }
    float A = __shfl_down_sync(FH_FULL_MASK, P, 1); /* A at t1: the lanes after this one */
    if (lane == FH_WARP - 1)
        A = 0.0f;
    for (int t = t1 - 1; t >= t0; t--) {
        float delta, carry;
        gae_step_terms(&delta, &carry, r, v, d, term, tv, last_value, n_steps, t, gamma, lambda);
        A = delta + carry * A;
        adv[t] = A;
        ret[t] = A + v[t];
    }
    if (staged) {
        __syncwarp();
        for (int t = lane; t < n_steps; t += FH_WARP) {
            out.advantages[row + t] = adv[t];
            out.returns[row + t] = ret[t];
        }
    }
}

#endif
#endif
