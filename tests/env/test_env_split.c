/* test_env_split.c — the step split in two, as the GPU block mapping runs it (issue 7):
 * one copy of an episode moves the portfolio (env_step_move, env_episode_reset_move),
 * another keeps the books (env_step_book, env_episode_reset_book) with its own
 * diversity window, and each step's result and the merged state
 * (env_copy_move + env_copy_book + the window) must equal, bit for bit, an episode run
 * with the whole step (env_step, env_episode_reset), over long random-action runs on a
 * random-walk market with costs, barriers, resets and ruin, from a stored episode whose
 * initial equity is not the config's, and on the last bar without a reset. A field that
 * neither copy helper knows shows up as a mismatch of the merged state. env_step is
 * itself the two parts on one copy, so this checks the protocol; the step's numbers are
 * pinned by the hand-computed scenarios (test_env_scenarios.c). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "env/common_device_functions.cuh"
#include "foxhunt/env.h"
#include "test_util.h"

#define N_BARS 3000

static float close_[N_BARS], sigma_[N_BARS], features_[N_BARS * FH_N_MARKET_FEATURES];

/* A random walk whose volatility switches every 200 bars (so barriers and ruin happen),
 * sigma = |return| smoothed, features uniform noise. */
static fh_env_market make_market(uint64_t seed)
{
    fh_rng rng;
    rng_seed(&rng, seed, 7u);
    double price = 100.0, var = 1e-4;
    for (int i = 0; i < N_BARS; i++) {
        double vol = (i / 200) % 2 ? 0.04 : 0.005;
        double r = vol * (2.0 * (double)gpu_random(&rng) - 1.0);
        price *= exp(r);
        var = 0.9 * var + 0.1 * r * r;
        close_[i] = (float)price;
        sigma_[i] = (float)sqrt(var);
    }
    for (int k = 0; k < N_BARS * FH_N_MARKET_FEATURES; k++)
        features_[k] = gpu_random(&rng) - 0.5f;
    fh_env_market m = {features_, close_, sigma_, N_BARS, 0, NULL};
    return m;
}

typedef struct {
    int dones, terminals, barrier_hits;
} split_counts;

/* One step both ways: the whole step on *whole, the split on *mover and *books; counts
 * the step results and merged states that differ. */
static void step_both(const fh_env_config *cfg, const fh_env_market *m, fh_episode_state *whole,
                      fh_episode_state *mover, fh_episode_state *books, fh_diversity *window,
                      int action, int reset, int *bad_steps, int *bad_states, split_counts *n)
{
    fh_step_result want, got;
    memset(&want, 0, sizeof want);
    memset(&got, 0, sizeof got);
    env_step(cfg, m, whole, action, &want);
    fh_bar_prices px = env_bar_prices(m, mover->bar);
    fh_step_move mv;
    env_step_move(cfg, m->n_bars, mover, action, &px, &mv);
    env_step_book(cfg, books, window, action, &mv, &got);
    *bad_steps += memcmp(&want, &got, sizeof want) != 0;
    n->terminals += want.terminal;
    n->barrier_hits += want.barrier_hit != FH_BARRIER_NONE;
    if (want.done && reset) {
        n->dones++;
        whole->episodes_done++;
        mover->episodes_done++;
        env_episode_reset(cfg, m, whole);
        env_episode_reset_move(cfg, m, mover);
        env_episode_reset_book(cfg, books, window);
    }
    fh_episode_state merged;
    memset(&merged, 0, sizeof merged);
    env_copy_move(&merged, mover);
    env_copy_book(&merged, books);
    merged.diversity = *window;
    *bad_states += memcmp(&merged, whole, sizeof merged) != 0;
    /* the book-keeper's own initial equity (its log-return floor) follows the mover's */
    *bad_states += books->initial_equity != mover->initial_equity;
}

static void run_split(uint64_t seed, int steps, float ruin)
{
    fh_env_market m = make_market(seed);
    fh_env_config cfg = fh_env_config_default();
    cfg.horizon = 97;
    cfg.max_hold = 13;
    cfg.ruin = ruin;
    fh_episode_state whole, mover, books;
    fh_diversity window;
    memset(&whole, 0, sizeof whole);
    env_episode_init(&cfg, &m, &whole, seed, 3u);
    /* a stored episode from a run with another initial equity: resets switch to cfg's */
    whole.initial_equity *= 2.0;
    whole.cash *= 2.0;
    whole.equity *= 2.0;
    mover = whole;
    books = whole;
    window = whole.diversity;
    fh_rng actions;
    rng_seed(&actions, seed, 11u);
    int bad_steps = 0, bad_states = 0;
    split_counts n = {0, 0, 0};
    for (int t = 0; t < steps; t++)
        step_both(&cfg, &m, &whole, &mover, &books, &window,
                  rng_uniform_int(&actions, FH_N_ACTIONS), 1, &bad_steps, &bad_states, &n);
    CHECK_MSG(bad_steps == 0, "seed %llu: %d of %d step results differ",
              (unsigned long long)seed, bad_steps, steps);
    CHECK_MSG(bad_states == 0, "seed %llu: %d of %d merged states differ",
              (unsigned long long)seed, bad_states, steps);
    /* the run must exercise resets, barrier exits and (with a high ruin level) ruin */
    CHECK_MSG(n.dones > steps / 200 && n.barrier_hits > steps / 100,
              "seed %llu: %d episode ends, %d barrier hits in %d steps", (unsigned long long)seed,
              n.dones, n.barrier_hits, steps);
    if (ruin > 0.9f)
        CHECK_MSG(n.terminals > 10, "seed %llu: only %d ruins", (unsigned long long)seed,
                  n.terminals);
}

/* Stepping on the last bar without a reset moves nothing and reports truncated: the same
 * both ways, with nothing changed in either copy. */
static void past_the_data(void)
{
    fh_env_market m = make_market(5);
    fh_env_config cfg = fh_env_config_default();
    fh_episode_state whole, mover, books;
    fh_diversity window;
    memset(&whole, 0, sizeof whole);
    env_episode_init(&cfg, &m, &whole, 5, 1u);
    whole.bar = m.n_bars - 1;
    mover = whole;
    books = whole;
    window = whole.diversity;
    int bad_steps = 0, bad_states = 0;
    split_counts n = {0, 0, 0};
    for (int k = 0; k < 3; k++)
        step_both(&cfg, &m, &whole, &mover, &books, &window, k * 7, 0, &bad_steps, &bad_states, &n);
    CHECK(bad_steps == 0);
    CHECK(bad_states == 0);
    CHECK(whole.bar == m.n_bars - 1 && n.terminals == 0);
}

int main(void)
{
    for (uint64_t seed = 1; seed <= 4; seed++)
        run_split(seed, 20000, 0.5f);
    run_split(9, 20000, 0.97f); /* ruin often: terminal resets */
    past_the_data();
    return fh_test_finish();
}
