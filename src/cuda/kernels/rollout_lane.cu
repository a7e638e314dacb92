/* rollout_lane.cu — the lane mapping (large N): one thread per episode for the
 * environment, the actor over a group's four warps (lane_dense) (ppo_rollout_lane_kernel). */
#ifndef FOXHUNT_ROLLOUT_LANE_CU
#define FOXHUNT_ROLLOUT_LANE_CU

/* One thread's observation of its episode (the features of ep->bar, with obs_noise
 * their noise keyed by `episode`, and the portfolio features) into column `col` of the
 * group's k-major state and (row-major) into dst unless dst is NULL (a thread past N).
 * No prefetch: at the N this mapping serves, other warps hide the loads. (Not a select
 * between dst and a local dummy row: with that, NVVM (CUDA 13.0) emitted no global
 * stores at all.) */
__device__ __forceinline__ void lane_observe(float *dst, float *sm_state, const fh_env_config *cfg,
                                             const fh_env_market *m, const fh_episode_state *ep,
                                             int episode, int col)
{
    float obs[FH_STATE_DIM];
    env_observe_train_as(cfg, m, ep, episode, obs);
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
__device__ __forceinline__ void ppo_rollout_lane_kernel_body(FH_ROLLOUT_PARAMS)
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
                         ep.episodes_done, gt);
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
        static_assert(FH_FAST_OUT_PAD <= FH_ACTOR_H1, "the logits fit in h1's scratch");
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
        env_step_at_div(&cfg, env_episode_end(&market, &ep), &ep, div, action, &px, &res);
        if (active)
            fast_store_step(out, i, action, log_prob, &res, bar);
        if (res.done)
            ep.episodes_done++;
        FH_CLOCK_MARK(FH_CLOCK_ENV);
        if (res.truncated && n_trunc < k_slots) {
            /* the final observation, before the reset: its value bootstraps the GAE */
            long long slot = (long long)src * k_slots + n_trunc;
            lane_observe(active ? critic_in + (NL + slot) * in_stride : NULL, state, &cfg,
                         &market, &ep, ep.episodes_done - 1, gt); /* its end counted above */
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
        lane_observe(critic_in + last_row * in_stride, state, &cfg, &market, &ep,
                     ep.episodes_done, gt);
        out.bars[last_row] = ep.bar;
        ep.diversity = *div;
        episodes[n] = ep;
        FH_CLOCK_STORE(clocks, n, 0);
    }
}

FH_ROLLOUT_ENTRY(ppo_rollout_lane_kernel, __launch_bounds__(FH_LANE_BLOCK_THREADS))

#endif
