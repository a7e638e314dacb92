/* rollout_block.cu — the block mapping (small N): four warps run each episode's actor,
 * a fifth keeps its books one step behind (ppo_rollout_block_kernel). */
#ifndef FOXHUNT_ROLLOUT_BLOCK_CU
#define FOXHUNT_ROLLOUT_BLOCK_CU

/* Phase 1, block mapping (small N: the step's latency, not the SMs' throughput, sets
 * the time). Five warps per episode and up to FH_BLOCK_MAX_EPISODES episodes per block
 * sharing the actor: the first four run the layers (block_actor); warp 0 also
 * observes, samples and moves the portfolio (fast_step_begin/_end with env_step_move)
 * while the others wait at the episode's named barrier; the fifth keeps the books
 * (fast_book_step: diversity, log return, reward, logs) one step behind, beside the
 * next step's observation and actor, so none of that is on the step's dependent chain.
 * Same arguments as the warp mapping. */
static_assert(1 + 2 * FH_BLOCK_MAX_EPISODES <= 16 &&
                  FH_BLOCK_MAX_EPISODES * FH_BLOCK_EP_ALL_THREADS <= 1024,
              "two named barriers an episode among 1..15, at most 1024 threads a block");
__device__ __forceinline__ void ppo_rollout_block_kernel_body(FH_ROLLOUT_PARAMS)
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
        if (warp == 0) {
            fast_step_begin<1>(&r, &ep, &cfg, &market, critic_in, in_stride, &row, t, scratch, 0,
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
                     r.f0, r.f1, lane, 0, 0);
        if (lane == 0) {
            out.bars[last_row] = r.bar;
            env_copy_move(&episodes[n], &ep); /* the book-keeper writes the rest */
        }
        FH_CLOCK_STORE(clocks, n, lane);
    }
}

FH_ROLLOUT_ENTRY(ppo_rollout_block_kernel, __launch_bounds__(FH_BLOCK_MAX_EPISODES * FH_BLOCK_EP_ALL_THREADS, 1))

#endif
