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
 *      epilogue), and the curiosity model over the N*L transitions
 *      (curiosity_input_kernel, matmuls, curiosity_reward_kernel adds the bonus);
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
/* Per-warp scratch: state (padded to 64), h1, h2, the episode's bar. */
#define FH_FAST_SM_STATE 0
#define FH_FAST_SM_H1 64
#define FH_FAST_SM_H2 (FH_FAST_SM_H1 + FH_ACTOR_H1)
#define FH_FAST_SM_MISC (FH_FAST_SM_H2 + FH_ACTOR_H2)
#define FH_FAST_SM_PER_WARP (FH_FAST_SM_MISC + 8)
#define FH_FAST_MAX_WARPS 16

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)

/* The 51 market features of `bar`, two per lane (j = lane, lane + 32): loaded into
 * registers ahead of use, so the load overlaps the step that lane 0 runs alone. */
__device__ __forceinline__ void fast_load_features(float *f0, float *f1, const fh_env_market *m,
                                                   int bar, int lane)
{
    const float *f = m->features + (long long)bar * FH_N_MARKET_FEATURES;
    *f0 = f[lane];
    *f1 = lane + FH_WARP < FH_N_MARKET_FEATURES ? f[lane + FH_WARP] : 0.0f;
}

/* One observation: the market features from the lanes' registers, the 3 portfolio
 * features from lane 0's episode state (the shared env_portfolio_features); written
 * to dst (global) and to the warp's shared-memory state. */
__device__ __forceinline__ void fast_observe(float *dst, float *sm_state, const fh_env_config *cfg,
                                             const fh_env_market *m, const fh_episode_state *ep,
                                             float f0, float f1, int lane)
{
    sm_state[lane] = f0;
    if (lane + FH_WARP < FH_N_MARKET_FEATURES)
        sm_state[lane + FH_WARP] = f1;
    if (lane == 0)
        env_portfolio_features(cfg, m, ep, sm_state + FH_N_MARKET_FEATURES);
    __syncwarp();
    for (int j = lane; j < FH_STATE_DIM; j += FH_WARP)
        dst[j] = sm_state[j];
}

/* logits for actions lane and lane + 32 (the second only when < FH_N_ACTIONS).
 * Each dot product is split into independent partial sums (over k modulo 2 or 4):
 * one warp per SM at small N issues from a single dependent chain, and ncu showed it
 * stalled on FMA latency (4.2 cycles per instruction, 42% fixed-latency stalls). */
__device__ __forceinline__ void fast_actor(float *l0, float *l1, const float *w, float *scratch,
                                           int lane)
{
    const float *state = scratch + FH_FAST_SM_STATE;
    float *h1 = scratch + FH_FAST_SM_H1;
    float *h2 = scratch + FH_FAST_SM_H2;
    /* layer 0: lane owns outputs 4*lane .. 4*lane+3; even and odd inputs apart */
    float4 even = ((const float4 *)(w + FH_FAST_SM_B0))[lane];
    float4 odd = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll 9
    for (int k = 0; k < FH_STATE_DIM; k += 2) {
        float x0 = state[k], x1 = state[k + 1];
        float4 w0 = ((const float4 *)(w + FH_FAST_SM_W0 + k * FH_ACTOR_H1))[lane];
        float4 w1 = ((const float4 *)(w + FH_FAST_SM_W0 + (k + 1) * FH_ACTOR_H1))[lane];
        even.x = fmaf(w0.x, x0, even.x);
        even.y = fmaf(w0.y, x0, even.y);
        even.z = fmaf(w0.z, x0, even.z);
        even.w = fmaf(w0.w, x0, even.w);
        odd.x = fmaf(w1.x, x1, odd.x);
        odd.y = fmaf(w1.y, x1, odd.y);
        odd.z = fmaf(w1.z, x1, odd.z);
        odd.w = fmaf(w1.w, x1, odd.w);
    }
    float4 a0 = make_float4(fmaxf(even.x + odd.x, 0.0f), fmaxf(even.y + odd.y, 0.0f),
                            fmaxf(even.z + odd.z, 0.0f), fmaxf(even.w + odd.w, 0.0f));
    ((float4 *)h1)[lane] = a0;
    __syncwarp();
    /* layer 1: lane owns outputs 2*lane, 2*lane+1; four partial sums over k mod 4 */
    float2 p[4];
    p[0] = ((const float2 *)(w + FH_FAST_SM_B1))[lane];
    p[1] = p[2] = p[3] = make_float2(0.0f, 0.0f);
#pragma unroll 4
    for (int k = 0; k < FH_ACTOR_H1; k += 4) {
        float4 x = *(const float4 *)(h1 + k);
        float xs[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
        for (int j = 0; j < 4; j++) {
            float2 wk = ((const float2 *)(w + FH_FAST_SM_W1 + (k + j) * FH_ACTOR_H2))[lane];
            p[j].x = fmaf(wk.x, xs[j], p[j].x);
            p[j].y = fmaf(wk.y, xs[j], p[j].y);
        }
    }
    float2 a1 = make_float2(fmaxf((p[0].x + p[1].x) + (p[2].x + p[3].x), 0.0f),
                            fmaxf((p[0].y + p[1].y) + (p[2].y + p[3].y), 0.0f));
    ((float2 *)h2)[lane] = a1;
    __syncwarp();
    /* output layer: lane owns actions lane and lane + 32; four partial sums each */
    int second = lane + FH_WARP < FH_FAST_OUT_PAD ? lane + FH_WARP : lane;
    float q0[4] = {w[FH_FAST_SM_B2 + lane], 0.0f, 0.0f, 0.0f};
    float q1[4] = {w[FH_FAST_SM_B2 + second], 0.0f, 0.0f, 0.0f};
#pragma unroll 4
    for (int k = 0; k < FH_ACTOR_H2; k += 4) {
        float4 x = *(const float4 *)(h2 + k);
        float xs[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const float *row = w + FH_FAST_SM_W2 + (k + j) * FH_FAST_OUT_PAD;
            q0[j] = fmaf(row[lane], xs[j], q0[j]);
            q1[j] = fmaf(row[second], xs[j], q1[j]);
        }
    }
    *l0 = (q0[0] + q0[1]) + (q0[2] + q0[3]);
    *l1 = (q1[0] + q1[1]) + (q1[2] + q1[3]);
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

/* Phase 1. Grid: ceil(N / warps) blocks of `warps` warps; one warp per episode.
 * critic_in (N*L + N*K + N, 54): states, truncation final observations (slot j of
 * episode n at row N*L + n*K + j, step in trunc_step[n*K + j], -1 unused), s_L. */
extern "C" __global__ void __launch_bounds__(FH_FAST_MAX_WARPS * FH_WARP)
ppo_rollout_fast_kernel(const float *__restrict__ actor_w, fh_env_config cfg, fh_env_market market,
                        fh_episode_state *episodes, int n_episodes, int n_steps, int k_slots,
                        float *critic_in, int *trunc_step, fh_ppo_outputs out)
{
    extern __shared__ float sm[];
    float *w = sm;
    /* load the actor transposed (and padded); every thread of the block helps */
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

    int warp = threadIdx.x / FH_WARP, lane = threadIdx.x % FH_WARP;
    int n = blockIdx.x * (blockDim.x / FH_WARP) + warp;
    if (n >= n_episodes)
        return; /* no block-wide barrier follows */
    float *scratch = sm + FH_FAST_SM_WEIGHTS + warp * FH_FAST_SM_PER_WARP;
    int *sm_bar = (int *)(scratch + FH_FAST_SM_MISC);
    long long NL = (long long)n_episodes * n_steps;
    long long row = (long long)n * n_steps;
    fh_episode_state ep = episodes[n]; /* only lane 0's copy evolves */
    int n_trunc = 0;
    for (int j = lane; j < k_slots; j += FH_WARP)
        trunc_step[(long long)n * k_slots + j] = -1;
    if (lane == 0)
        sm_bar[0] = ep.bar;
    __syncwarp();

    int bar = sm_bar[0];
    float f0, f1;
    fast_load_features(&f0, &f1, &market, bar, lane);
    for (int t = 0; t < n_steps; t++) {
        long long i = row + t;
        fast_observe(critic_in + i * FH_STATE_DIM, scratch + FH_FAST_SM_STATE, &cfg, &market, &ep,
                     f0, f1, lane);
        float l0, l1;
        fast_actor(&l0, &l1, w, scratch, lane);
        float u = 0.0f;
        if (lane == 0)
            u = gpu_random(&ep.rng);
        u = __shfl_sync(FH_FULL_MASK, u, 0);
        int action;
        float log_prob;
        fast_softmax_sample(&action, &log_prob, l0, l1, u, lane);
        /* the next bar's features, in flight while lane 0 steps the environment */
        int ahead = bar + 1 < market.n_bars ? bar + 1 : bar;
        float g0, g1;
        fast_load_features(&g0, &g1, &market, ahead, lane);
        int truncated = 0, next_bar = 0, done = 0;
        if (lane == 0) {
            fh_step_result res;
            env_step(&cfg, &market, &ep, action, &res);
            out.actions[i] = action;
            out.log_probs[i] = log_prob;
            out.rewards[i] = res.reward;
            out.dones[i] = res.done;
            out.terminals[i] = res.terminal;
            out.trunc_values[i] = 0.0f;
            out.exposures[i] = res.exposure;
            out.bars[i] = bar;
            truncated = res.truncated;
            done = res.done;
            next_bar = ep.bar;
            if (done)
                ep.episodes_done++;
        }
        truncated = __shfl_sync(FH_FULL_MASK, truncated, 0);
        done = __shfl_sync(FH_FULL_MASK, done, 0);
        next_bar = __shfl_sync(FH_FULL_MASK, next_bar, 0);
        if (next_bar != ahead)
            fast_load_features(&g0, &g1, &market, next_bar, lane);
        if (truncated && n_trunc < k_slots) {
            /* the final observation, before the reset: its value bootstraps the GAE */
            long long slot = (long long)n * k_slots + n_trunc;
            fast_observe(critic_in + (NL + slot) * FH_STATE_DIM, scratch + FH_FAST_SM_STATE, &cfg,
                         &market, &ep, g0, g1, lane);
            if (lane == 0)
                trunc_step[slot] = t;
            n_trunc++;
        }
        if (done) {
            if (lane == 0) {
                env_episode_reset(&cfg, &market, &ep);
                sm_bar[0] = ep.bar;
            }
            __syncwarp();
            next_bar = sm_bar[0];
            fast_load_features(&g0, &g1, &market, next_bar, lane);
        }
        bar = next_bar;
        f0 = g0;
        f1 = g1;
        __syncwarp();
    }
    long long last_row = NL + (long long)n_episodes * k_slots + n;
    fast_observe(critic_in + last_row * FH_STATE_DIM, scratch + FH_FAST_SM_STATE, &cfg, &market,
                 &ep, f0, f1, lane);
    if (lane == 0)
        episodes[n] = ep;
}

/* cin (NL, 35) = [s[0..31], x(a), u(a), e'] per transition (SPEC §3.5). */
extern "C" __global__ void curiosity_input_kernel(float *cin, const float *__restrict__ states,
                                                  const int *__restrict__ actions,
                                                  const float *__restrict__ exposures, long long nl)
{
    long long total = nl * FH_CURIOSITY_INPUT_DIM;
    for (long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x; idx < total;
         idx += (long long)gridDim.x * blockDim.x) {
        long long i = idx / FH_CURIOSITY_INPUT_DIM;
        int j = (int)(idx % FH_CURIOSITY_INPUT_DIM);
        float v;
        if (j < FH_CURIOSITY_TARGET_DIM)
            v = states[i * FH_STATE_DIM + j];
        else if (j == FH_CURIOSITY_TARGET_DIM)
            v = action_to_exposure(actions[i]);
        else if (j == FH_CURIOSITY_TARGET_DIM + 1)
            v = action_to_urgency(actions[i]);
        else
            v = exposures[i];
        cin[idx] = v;
    }
}

/* rewards[i] += curiosity_bonus(MSE(pred[i], next bar's features 0..31)). */
extern "C" __global__ void curiosity_reward_kernel(float *rewards, const float *__restrict__ pred,
                                                   const int *__restrict__ bars, fh_env_config cfg,
                                                   fh_env_market market, long long nl)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < nl;
         i += (long long)gridDim.x * blockDim.x) {
        const float *p = pred + i * FH_CURIOSITY_TARGET_DIM;
        const float *next = market.features + (long long)(bars[i] + 1) * FH_N_MARKET_FEATURES;
        float sum = 0.0f;
        for (int j = 0; j < FH_CURIOSITY_TARGET_DIM; j++) {
            float d = p[j] - next[j];
            sum += d * d;
        }
        rewards[i] += curiosity_bonus(&cfg, sum / (float)FH_CURIOSITY_TARGET_DIM);
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
 * through global memory). */
extern "C" __global__ void gae_kernel(fh_ppo_outputs out, int n_episodes, int n_steps,
                                      float gamma, float lambda)
{
    int n = (int)((blockIdx.x * (long long)blockDim.x + threadIdx.x) / FH_WARP);
    int lane = threadIdx.x % FH_WARP;
    if (n >= n_episodes)
        return; /* whole warps: blockDim is a multiple of 32 */
    long long row = (long long)n * n_steps;
    const float *r = out.rewards + row, *v = out.values + row, *tv = out.trunc_values + row;
    const int *d = out.dones + row, *term = out.terminals + row;
    float last_value = out.last_values[n];
    int chunk = (n_steps + FH_WARP - 1) / FH_WARP;
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
        out.advantages[row + t] = A;
        out.returns[row + t] = A + v[t];
    }
}

#endif
#endif
