/* rollout_step.cuh — one rollout step's pieces shared by the warp, pair and block
 * mappings: the bar's loads, the observation, the warp-wide softmax sample, the step's
 * stores, the book-keeping warp, and an episode's begin (the lane mapping steps one
 * episode per thread with the shared device functions instead). */
#ifndef FOXHUNT_ROLLOUT_STEP_CUH
#define FOXHUNT_ROLLOUT_STEP_CUH

/* Every rollout mapping's body takes fh_rollout_args' fields as parameters (so that the
 * pointers keep their __restrict__), and its entry point unpacks the struct into them. */
#define FH_ROLLOUT_PARAMS                                                                 \
    const float *__restrict__ actor_w, fh_env_config cfg, fh_env_market market,          \
        fh_episode_state *episodes, int n_episodes, int n_steps, int k_slots,             \
        float *critic_in, int in_stride, int *trunc_step, fh_ppo_outputs out,             \
        long long *clocks, const float *__restrict__ actor_table
#define FH_ROLLOUT_ENTRY(name, bounds)                                                     \
    extern "C" __global__ void bounds name(const fh_rollout_args a)                       \
    {                                                                                     \
        name##_body(a.actor_w, a.cfg, a.market, a.episodes, a.n_episodes, a.n_steps,      \
                    a.k_slots, a.critic_in, a.in_stride, a.trunc_step, a.out, a.clocks,   \
                    a.actor_table);                                                       \
    }

/* One bar over the warp's lanes: the 51 market features two per lane (j = lane,
 * lane + 32) and, in the free second slots, the prices env_step_at needs. Issued a step
 * ahead, so the loads overlap the actor and the step that lane 0 runs alone. */
static_assert(FH_WARP < FH_N_MARKET_FEATURES && FH_N_MARKET_FEATURES <= 2 * FH_WARP &&
                  FH_FAST_LANE_SIGMA < FH_WARP,
              "fast_load_bar, fast_observe: features two per lane, prices in free slots");
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
 * written to dst (global) and to the episode's shared-memory state. With obs_noise, each
 * lane adds its features' noise (the shared env_obs_noise, keyed by the owner's episode:
 * `ended` 1 where the owner has already counted the episode's end, as
 * env_observe_train_as). Warp-wide. */
__device__ __forceinline__ void fast_observe(float *dst, float *sm_state, const fh_env_config *cfg,
                                             const fh_episode_state *ep, float f0, float f1,
                                             int lane, int owner, int ended)
{
    float sigma = __shfl_sync(FH_FULL_MASK, f1, FH_FAST_LANE_SIGMA);
    if (cfg->obs_noise != 0.0f) { /* a kernel argument: the whole warp takes this branch */
        unsigned long long stream = __shfl_sync(FH_FULL_MASK, ep->rng.inc, owner);
        int episode = __shfl_sync(FH_FULL_MASK, ep->episodes_done - ended, owner);
        int step = __shfl_sync(FH_FULL_MASK, ep->step, owner);
        f0 += env_obs_noise(cfg, stream, episode, step, lane);
        if (lane + FH_WARP < FH_N_MARKET_FEATURES)
            f1 += env_obs_noise(cfg, stream, episode, step, lane + FH_WARP);
    }
    sm_state[lane] = f0;
    if (lane + FH_WARP < FH_N_MARKET_FEATURES)
        sm_state[lane + FH_WARP] = f1;
    if (lane == owner)
        env_portfolio_features_at(cfg, ep, sigma, sm_state + FH_N_MARKET_FEATURES);
    __syncwarp();
    for (int j = lane; j < FH_STATE_DIM; j += FH_WARP)
        dst[j] = sm_state[j];
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
static_assert(FH_WARP < FH_N_ACTIONS && FH_N_ACTIONS <= 2 * FH_WARP,
              "fast_softmax_sample: a lane holds actions lane and lane + 32");
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
                     scratch + e * stride + FH_FAST_SM_STATE, cfg, ep, r[e].f0, r[e].f1, lane, e,
                     0);
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
            env_step_move(cfg, env_episode_end(m, ep), ep, my_action, &my_px, &rec->mv);
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
        env_step_at_div(cfg, env_episode_end(m, ep), ep, div, my_action, &my_px, &res);
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
                         lane, e, 1); /* the owner counted the episode's end above */
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
 * one episode a pair: the actor's weights in shared memory; the episode's scratch at
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
        if (split_w && t < n_steps)
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

#endif
