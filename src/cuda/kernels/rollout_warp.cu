/* rollout_warp.cu — the warp mapping (one warp per episode or two: ppo_rollout_fast_kernel)
 * and its pair kernel (a book-keeping warp beside each mover, ppo_rollout_pair_kernel). */
#ifndef FOXHUNT_ROLLOUT_WARP_CU
#define FOXHUNT_ROLLOUT_WARP_CU

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
                                           long long *clocks, int observed_id,
                                           const float *table, int lane)
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
        if (BOOKS)
            episode_barrier(observed_id, FH_PAIR_THREADS); /* with the book-keeper */
        FH_CLOCK_MARK(FH_CLOCK_OBSERVE);
        float l0[E], l1[E];
        if (BOOKS && FH_WARP_EPISODES == 1) /* E is 1: the actor over both warps */
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
                     lane, e, 0);
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
static_assert(1 + FH_PAIR_MAX_EPISODES <= 16 && FH_FAST_MAX_WARPS * FH_WARP <= 1024,
              "the pair kernel's named barriers 1..15, at most 1024 threads a block");
__device__ __forceinline__ void ppo_rollout_fast_kernel_body(FH_ROLLOUT_PARAMS)
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
                                            trunc_step, out, clocks, 0,
                                            actor_table, lane);
    else /* the last warp, with fewer episodes */
        warp_mover<1, false>(w, scratch, stride, &cfg, &market, episodes, n0, n_episodes,
                             n_steps, k_slots, critic_in, in_stride, trunc_step, out, clocks, 0,
                             actor_table, lane);
}

/* Phase 1, warp mapping with a book-keeping warp (the pair kernel; FOXHUNT_WARP_BOOK):
 * two warps per FH_WARP_EPISODES episodes and up to FH_PAIR_MAX_EPISODES such pairs per
 * block sharing the actor. The first runs the warp mapping's steps with env_step_move
 * only (warp_mover); the second keeps the books one step behind (fast_book_keeper, one
 * lane per episode), as the block mapping's fifth warp does, the two meeting once a
 * step at the pair's named barrier. Same arguments as the warp mapping. */
__device__ __forceinline__ void ppo_rollout_pair_kernel_body(FH_ROLLOUT_PARAMS)
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
                                           trunc_step, out, clocks, observed_id, actor_table,
                                           lane);
    } else { /* the last pair, with fewer episodes */
        warp_mover<1, true>(w, scratch, stride, &cfg, &market, episodes, n0, n_episodes, n_steps,
                            k_slots, critic_in, in_stride, trunc_step, out, clocks, observed_id,
                            actor_table, lane);
    }
}

FH_ROLLOUT_ENTRY(ppo_rollout_fast_kernel, __launch_bounds__(FH_FAST_MAX_WARPS * FH_WARP))

FH_ROLLOUT_ENTRY(ppo_rollout_pair_kernel, __launch_bounds__(FH_FAST_MAX_WARPS * FH_WARP))

#endif
