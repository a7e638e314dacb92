/* test_env_split.c — the step split in two, as the GPU block mapping runs it (issue 7):
 * one copy of an episode moves the portfolio (env_step_move, env_episode_reset_move),
 * another keeps the books (env_step_book, env_episode_reset_book) with its own
 * diversity window, and each step's result and the merged state
 * (env_copy_move + env_copy_book + the window) must equal, bit for bit, an episode run
 * with the whole step (env_step, env_episode_reset), over long random-action runs on a
 * random-walk market with costs, barriers, resets and ruin. A field that neither copy
 * helper knows shows up as a mismatch of the merged state. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

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
    fh_env_market m = {features_, close_, sigma_, N_BARS};
    return m;
}

static void run_split(uint64_t seed, int steps, float ruin)
{
    fh_env_market m = make_market(seed);
    fh_env_config cfg = fh_env_config_default();
    cfg.horizon = 97;
    cfg.max_hold = 13;
    cfg.ruin = ruin;
    fh_episode_state whole, mover, books, merged;
    fh_diversity window;
    memset(&whole, 0, sizeof whole);
    env_episode_init(&cfg, &m, &whole, seed, 3u);
    mover = whole;
    books = whole;
    window = whole.diversity;
    fh_rng actions;
    rng_seed(&actions, seed, 11u);
    int mismatched_steps = 0, mismatched_states = 0, dones = 0;
    for (int t = 0; t < steps; t++) {
        int action = rng_uniform_int(&actions, FH_N_ACTIONS);
        fh_step_result want, got;
        memset(&want, 0, sizeof want);
        memset(&got, 0, sizeof got);
        env_step(&cfg, &m, &whole, action, &want);
        fh_bar_prices px = env_bar_prices(&m, mover.bar);
        fh_step_move mv;
        env_step_move(&cfg, m.n_bars, &mover, action, &px, &mv);
        env_step_book(&cfg, &books, &window, action, &mv, &got);
        mismatched_steps += memcmp(&want, &got, sizeof want) != 0;
        if (want.done) {
            dones++;
            whole.episodes_done++;
            mover.episodes_done++;
            env_episode_reset(&cfg, &m, &whole);
            env_episode_reset_move(&cfg, &m, &mover);
            env_episode_reset_book(&books, &window);
        }
        memset(&merged, 0, sizeof merged);
        env_copy_move(&merged, &mover);
        env_copy_book(&merged, &books);
        merged.diversity = window;
        mismatched_states += memcmp(&merged, &whole, sizeof merged) != 0;
    }
    CHECK_MSG(mismatched_steps == 0, "seed %llu: %d of %d step results differ",
              (unsigned long long)seed, mismatched_steps, steps);
    CHECK_MSG(mismatched_states == 0, "seed %llu: %d of %d merged states differ",
              (unsigned long long)seed, mismatched_states, steps);
    CHECK_MSG(dones > steps / 200, "seed %llu: only %d episode ends in %d steps: the run "
              "does not exercise resets", (unsigned long long)seed, dones, steps);
}

int main(void)
{
    for (uint64_t seed = 1; seed <= 4; seed++)
        run_split(seed, 20000, 0.5f);
    run_split(9, 20000, 0.97f); /* ruin often: terminal resets */
    return fh_test_finish();
}
