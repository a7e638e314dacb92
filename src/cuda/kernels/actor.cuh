/* actor.cuh — the actor's forward pass in each rollout mapping, from the weights held in
 * shared memory (fast_load_actor): fast_actor (one warp, E episodes), block_actor (four
 * warps an episode), pair_split_actor (the pair's two warps), lane_dense (one lane an
 * episode); with the actor table (FH_ACTOR_TABLE) layer 0 starts from the bar's row. */
#ifndef FOXHUNT_ACTOR_CUH
#define FOXHUNT_ACTOR_CUH

/* The sizes these mappings are written for (also checked without CUDA:
 * src/cuda/size_checks.c). */
static_assert(FH_STATE_DIM % 2 == 0, "fast_actor, block_actor, pair_split_actor: layer 0 "
              "reads the state two inputs at a time (even and odd sums)");
static_assert(FH_N_MARKET_FEATURES % 2 == 1 && FH_N_PORTFOLIO_FEATURES == 3,
              "FH_ACTOR_TABLE: the portfolio inputs join the table's split sums as odd, "
              "even, odd (an odd market feature count)");
static_assert(FH_ACTOR_H1 == 4 * FH_WARP && FH_ACTOR_H2 == 2 * FH_WARP,
              "fast_actor, pair_split_actor: a float4 of h1 and a float2 of h2 a lane");
static_assert(FH_BLOCK_EP_THREADS == FH_ACTOR_H1 && FH_BLOCK_EP_THREADS == 2 * FH_ACTOR_H2 &&
                  FH_ACTOR_H2 % (4 * FH_BLOCK_EP_WARPS) == 0,
              "block_actor: one h1 output a thread, layer 1 in two halves, the output "
              "layer in four quarters");
static_assert(FH_ACTOR_H1 % 4 == 0 && (FH_ACTOR_H2 / 2) % 4 == 0,
              "layers 1 and 2 read their inputs as float4s");
static_assert(FH_WARP < FH_N_ACTIONS && FH_N_ACTIONS <= FH_FAST_OUT_PAD &&
                  FH_FAST_OUT_PAD <= 2 * FH_WARP,
              "the output layer: a lane owns actions lane and lane + 32");
static_assert(FH_ACTOR_H1 % FH_LANE_OUT_BLOCK == 0 && FH_ACTOR_H2 % FH_LANE_OUT_BLOCK == 0 &&
                  FH_FAST_OUT_PAD % FH_LANE_OUT_BLOCK == 0 && FH_LANE_OUT_BLOCK % 4 == 0,
              "lane_dense: outputs in blocks of FH_LANE_OUT_BLOCK float4s");
static_assert(FH_STATE_DIM <= FH_FAST_SM_H1 && FH_FAST_SM_H1 % 4 == 0,
              "fast_layout.h: the state's shared-memory slot (before h1) holds the state");

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

/* logits for actions lane and lane + 32 (the second only when < FH_N_ACTIONS) of the
 * warp's E episodes (episode e's scratch at scratch + e * stride), one warp. Each
 * weight read from shared memory feeds all E episodes: eight warps per SM each reading
 * the whole actor (72 KB) every step made the warp mapping's actor bound by shared-
 * memory bandwidth (dev/cuda/README.md). Each dot product is split into independent
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
/* The actor of the pair kernel's episode over both its warps (one episode a pair; half 0:
 * the mover, which gets the logits of actions lane and lane + 32 as fast_actor's; half
 * 1: the book-keeper, which the step's chain otherwise leaves idle). A step's actor is
 * bound by one warp's dependent chain, not by the SM's issue rate or shared-memory
 * bandwidth (ncu, dev/cuda/README.md), so each warp takes half of every layer:
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

#endif
