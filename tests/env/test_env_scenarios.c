/* test_env_scenarios.c — hand-computed scenarios for every mechanic of SPEC §3
 * (issue 3): actions, RNG, networks, barriers long and short (profit-take, stop-loss,
 * time limit), reversal, partial urgency, diversity, ruin, truncations, reset.
 *
 * Expected values are worked out by hand in the comments and written as literals; the
 * environment code is only ever compared against them. */
#include <stdint.h>
#include <stdio.h>

#include "env_fixtures.h"
#include "test_util.h"

#define SIGMA 0.01f
#define E0 10000.0
#define REL 1e-9   /* double portfolio accounting */
#define FREL 1e-5  /* float quantities (rewards, float prices) */

static void test_actions(void)
{
    fh_env_config cfg = fh_env_config_default();
    for (int e = 0; e < FH_N_EXPOSURES; e++) {
        for (int k = 0; k < FH_N_URGENCIES; k++) {
            int a = 5 * e + k; /* SPEC: a = 5 e + k */
            CHECK_CLOSE(action_to_exposure(a), -1.0 + 0.25 * e, 1e-7, 0);
            CHECK_CLOSE(action_to_urgency(a), 0.2 * (k + 1), 1e-7, 0);
            CHECK_CLOSE(action_to_tx_cost(a, &cfg), 1e-4 + 5e-4 * 0.2 * (k + 1), 1e-10, 1e-6);
        }
    }
    CHECK(action_to_exposure(0) == -1.0f && action_to_exposure(44) == 1.0f);
    CHECK(action_to_exposure(20) == 0.0f);
}

static void test_rng(void)
{
    /* PCG32 reference output (pcg32-demo, seed 42, sequence 54). */
    const unsigned int want[6] = {0xa15c02b7u, 0x7b47f409u, 0xba1d3330u,
                                  0x83d2f293u, 0xbfa4784bu, 0xcbed606eu};
    fh_rng rng;
    rng_seed(&rng, 42u, 54u);
    for (int i = 0; i < 6; i++) {
        unsigned int got = pcg32(&rng);
        CHECK_MSG(got == want[i], "draw %d: 0x%08x, want 0x%08x", i, got, want[i]);
    }
    fh_rng a, b;
    rng_seed(&a, 7u, 3u);
    rng_seed(&b, 7u, 3u);
    int in_range = 1, match = 1;
    double mean = 0.0;
    const int n = 100000;
    for (int i = 0; i < n; i++) {
        unsigned int raw = pcg32(&b);
        float u = gpu_random(&a);
        in_range &= u >= 0.0f && u < 1.0f;
        match &= u == (float)(raw >> 8) * (1.0f / 16777216.0f);
        mean += u;
    }
    CHECK(in_range);
    CHECK(match);
    CHECK_CLOSE(mean / n, 0.5, 0.005, 0);
    fh_rng c, d;
    rng_seed(&c, 7u, 3u);
    rng_seed(&d, 7u, 4u); /* another episode's stream differs */
    CHECK(pcg32(&c) != pcg32(&d));
    int bounded = 1;
    for (int i = 0; i < 1000; i++) {
        int k = rng_uniform_int(&c, 7);
        bounded &= k >= 0 && k < 7;
    }
    CHECK(bounded);
}

static void test_matvec(void)
{
    /* W = [[1, -2], [0.5, 0.5], [-1, -1]], b = [0.5, 0, 1], x = [1, 2]
     * pre-activation = [1 - 4 + 0.5, 0.5 + 1, -3 + 1] = [-2.5, 1.5, -2] */
    const float W[6] = {1.0f, -2.0f, 0.5f, 0.5f, -1.0f, -1.0f};
    const float b[3] = {0.5f, 0.0f, 1.0f};
    const float x[2] = {1.0f, 2.0f};
    float out[3];
    matvec_leaky_relu(out, W, b, x, 3, 2, FH_MATVEC_RELU, 0.1f);
    CHECK(out[0] == 0.0f && out[1] == 1.5f && out[2] == 0.0f);
    matvec_leaky_relu(out, W, b, x, 3, 2, FH_MATVEC_LEAKY_RELU, 0.1f);
    CHECK_CLOSE(out[0], -0.25, 1e-7, 0);
    CHECK_CLOSE(out[1], 1.5, 1e-7, 0);
    CHECK_CLOSE(out[2], -0.2, 1e-7, 0);
    matvec_linear(out, W, b, x, 3, 2);
    CHECK(out[0] == -2.5f && out[1] == 1.5f && out[2] == -2.0f);
    CHECK(leaky_relu(-2.0f, 0.01f) == -0.02f && leaky_relu(3.0f, 0.01f) == 3.0f);
}

static void test_curiosity(void)
{
    fh_env_config cfg = fh_env_config_default();
    static float w[FH_CURIOSITY_N_PARAMS];
    memset(w, 0, sizeof w);
    /* Zero weights: prediction = fc2 bias; bias 1 on output 0, targets all 0 except
     * target 1 = 2. mse = (1 + 4) / 32. */
    w[FH_CURIOSITY_OFF_B1 + 0] = 1.0f;
    float state[FH_STATE_DIM] = {0};
    float next[FH_CURIOSITY_TARGET_DIM] = {0};
    next[1] = 2.0f;
    float mse = curiosity_inference(w, state, 7, 0.3f, next);
    CHECK_CLOSE(mse, 5.0 / 32.0, 1e-7, 0);
    CHECK_CLOSE(curiosity_bonus(&cfg, mse), 0.01 * 5.0 / 32.0, 1e-9, 0);
    CHECK_CLOSE(curiosity_bonus(&cfg, 7.0f), 0.01, 1e-9, 0); /* min(mse, 1) */

    /* The three action inputs reach the model: hidden unit 0 reads x(a), unit 1 u(a),
     * unit 2 e'; output j = hidden j. a = 5*6 + 2: x = 0.5, u = 0.6, e' = -0.4
     * (ReLU kills it). Targets 0: mse = (0.25 + 0.36) / 32. */
    memset(w, 0, sizeof w);
    for (int h = 0; h < 3; h++) {
        w[FH_CURIOSITY_OFF_W0 + h * FH_CURIOSITY_INPUT_DIM + FH_CURIOSITY_TARGET_DIM + h] = 1.0f;
        w[FH_CURIOSITY_OFF_W1 + h * FH_CURIOSITY_HIDDEN + h] = 1.0f;
    }
    next[1] = 0.0f;
    mse = curiosity_inference(w, state, 32, -0.4f, next);
    CHECK_CLOSE(mse, (0.25 + 0.36) / 32.0, 1e-7, 0);
}

/* Long through a profit-take, frictionless. closes 100, 101, 103; sigma 1%:
 * upper = 100 (1 + 2 * 0.01) = 102, lower = 100 (1 - 0.01) = 99.
 * step 0: all-in long, units 100, cash 0; 101 < 102: no hit; pnl ln(1.01);
 *         risk = (1 * 0.01)^2 = 1e-4; r = 100 (ln 1.01 - 1e-4).
 * step 1: no trade; 103 >= 102: profit-take, sold at 103: cash 10300;
 *         r = 100 (1.5 ln(103/101) - 1e-4). */
static void test_long_profit_take(void)
{
    fix_market fm;
    const float close[4] = {100, 101, 103, 103};
    fix_market_init(&fm, 4, close, SIGMA);
    fh_env_config cfg = fix_config_frictionless();
    fh_episode_state ep;
    fh_step_result r;
    fix_episode_start(&cfg, &fm.m, &ep);

    env_step(&cfg, &fm.m, &ep, FIX_LONG_FULL, &r);
    CHECK_CLOSE(ep.units, 100.0, 0, REL);
    CHECK_CLOSE(ep.cash, 0.0, 1e-9, 0);
    CHECK(ep.barrier.direction == 1.0f && ep.barrier.entry == 100.0f);
    CHECK_CLOSE(ep.barrier.upper, 102.0, 0, FREL);
    CHECK_CLOSE(ep.barrier.lower, 99.0, 0, FREL);
    CHECK(r.barrier_hit == FH_BARRIER_NONE && r.reversal == 0 && !r.done);
    CHECK_CLOSE(r.pnl, log(1.01), 0, REL);
    CHECK_CLOSE(r.risk_penalty, 1e-4, 0, FREL);
    CHECK_CLOSE(r.reward_base, 100.0 * (log(1.01) - 1e-4), 0, FREL);
    CHECK_CLOSE(ep.equity, 10100.0, 0, REL);

    env_step(&cfg, &fm.m, &ep, FIX_LONG_FULL, &r);
    CHECK(r.barrier_hit == FH_BARRIER_PROFIT_TAKE);
    CHECK_CLOSE(r.barrier_scale, 0.5, 0, 0);
    CHECK_CLOSE(ep.cash, 10300.0, 0, REL);
    CHECK(ep.units == 0.0 && ep.exposure == 0.0 && ep.barrier.direction == 0.0f);
    CHECK_CLOSE(r.pnl, log(103.0 / 101.0), 0, REL);
    CHECK_CLOSE(r.reward_base, 100.0 * (1.5 * log(103.0 / 101.0) - 1e-4), 0, FREL);
    CHECK(ep.log_barrier_hits[FH_BARRIER_PROFIT_TAKE] == 1);
}

/* The same long trade with SPEC default costs: rate = 1 bp + 5 bp * 1 = 6e-4.
 * step 0: cost 10000 * 6e-4 = 6; units = 9994 / 100 = 99.94; cash 0;
 *         equity at 101 = 10093.94.
 * step 1: no trade; exit at 103 at full urgency: value 10293.82, cost 6.176292;
 *         cash 10287.643708; pnl ln(10287.643708 / 10093.94). */
static void test_long_profit_take_with_costs(void)
{
    fix_market fm;
    const float close[4] = {100, 101, 103, 103};
    fix_market_init(&fm, 4, close, SIGMA);
    fh_env_config cfg = fh_env_config_default();
    fh_episode_state ep;
    fh_step_result r;
    fix_episode_start(&cfg, &fm.m, &ep);
    env_step(&cfg, &fm.m, &ep, FIX_LONG_FULL, &r);
    CHECK_CLOSE(r.cost, 6.0, 0, 1e-6);
    CHECK_CLOSE(ep.units, 99.94, 0, 1e-6);
    CHECK_CLOSE(ep.equity, 10093.94, 0, 1e-6);
    CHECK_CLOSE(r.pnl, log(10093.94 / 10000.0), 1e-9, 1e-5);
    env_step(&cfg, &fm.m, &ep, FIX_LONG_FULL, &r);
    CHECK(r.barrier_hit == FH_BARRIER_PROFIT_TAKE);
    CHECK_CLOSE(r.cost, 6.176292, 1e-9, 1e-6);
    CHECK_CLOSE(ep.cash, 10287.643708, 0, 1e-6);
    CHECK_CLOSE(r.pnl, log(10287.643708 / 10093.94), 1e-9, 1e-5);
    CHECK_CLOSE(ep.log_cost, 12.176292, 0, 1e-6);
}

/* Short through a profit-take: closes 100, 99, 97.5. units -100, cash 20000;
 * lower (profit-take) 98, upper (stop-loss) 101. At 99 equity 10100 and the short
 * has drifted to -9900 / 10100; the second full-urgency short tops it up to -1:
 * units -10100 / 99, cash 20200. At 97.5 the profit-take buys back:
 * cash 20200 - 97.5 * 10100 / 99 = 10253.030303... */
static void test_short_profit_take(void)
{
    fix_market fm;
    const float close[4] = {100, 99, 97.5f, 97.5f};
    fix_market_init(&fm, 4, close, SIGMA);
    fh_env_config cfg = fix_config_frictionless();
    fh_episode_state ep;
    fh_step_result r;
    fix_episode_start(&cfg, &fm.m, &ep);
    env_step(&cfg, &fm.m, &ep, FIX_SHORT_FULL, &r);
    CHECK_CLOSE(ep.units, -100.0, 0, REL);
    CHECK_CLOSE(ep.cash, 20000.0, 0, REL);
    CHECK(ep.barrier.direction == -1.0f);
    CHECK_CLOSE(ep.barrier.lower, 98.0, 0, FREL);
    CHECK_CLOSE(ep.barrier.upper, 101.0, 0, FREL);
    CHECK(r.barrier_hit == FH_BARRIER_NONE);
    CHECK_CLOSE(ep.equity, 10100.0, 0, REL);
    CHECK_CLOSE(r.exposure, -1.0, 0, 0);
    env_step(&cfg, &fm.m, &ep, FIX_SHORT_FULL, &r);
    CHECK(r.barrier_hit == FH_BARRIER_PROFIT_TAKE);
    CHECK_CLOSE(r.units_held, -10100.0 / 99.0, 0, REL);
    CHECK_CLOSE(ep.cash, 20200.0 - 97.5 * 10100.0 / 99.0, 0, REL);
    CHECK(ep.units == 0.0);
    CHECK_CLOSE(r.reward_base,
                100.0 * (1.5 * log((20200.0 - 97.5 * 10100.0 / 99.0) / 10100.0) - 1e-4), 0,
                FREL);
}

/* Long stop-loss: closes 100, 99.5, 98.9; lower 99. Equity 9950 then 9890:
 * r = 100 (1.5 ln(9890 / 9950) - 1e-4) (sl_scale 0.5 amplifies the loss). */
static void test_long_stop_loss(void)
{
    fix_market fm;
    const float close[4] = {100, 99.5f, 98.9f, 98.9f};
    fix_market_init(&fm, 4, close, SIGMA);
    fh_env_config cfg = fix_config_frictionless();
    fh_episode_state ep;
    fh_step_result r;
    fix_episode_start(&cfg, &fm.m, &ep);
    env_step(&cfg, &fm.m, &ep, FIX_LONG_FULL, &r);
    CHECK(r.barrier_hit == FH_BARRIER_NONE);
    env_step(&cfg, &fm.m, &ep, FIX_LONG_FULL, &r);
    CHECK(r.barrier_hit == FH_BARRIER_STOP_LOSS);
    CHECK_CLOSE(r.barrier_scale, 0.5, 0, 0);
    CHECK_CLOSE(ep.cash, 100.0 * (double)98.9f, 0, REL);
    CHECK_CLOSE(r.reward_base, 100.0 * (1.5 * log(9890.0 / 9950.0) - 1e-4), 0, FREL);
    CHECK(ep.log_barrier_hits[FH_BARRIER_STOP_LOSS] == 1);
}

/* Short stop-loss: closes 100, 100.5, 101.2; upper 101. Equity 9950 at 100.5;
 * topped up to -1: units -9950 / 100.5, cash 19900; at 101.2 the stop buys back:
 * cash 19900 - 101.2 * 9950 / 100.5 = 9880.6965... */
static void test_short_stop_loss(void)
{
    fix_market fm;
    const float close[4] = {100, 100.5f, 101.2f, 101.2f};
    fix_market_init(&fm, 4, close, SIGMA);
    fh_env_config cfg = fix_config_frictionless();
    fh_episode_state ep;
    fh_step_result r;
    fix_episode_start(&cfg, &fm.m, &ep);
    env_step(&cfg, &fm.m, &ep, FIX_SHORT_FULL, &r);
    CHECK(r.barrier_hit == FH_BARRIER_NONE);
    CHECK_CLOSE(ep.equity, 9950.0, 0, REL);
    env_step(&cfg, &fm.m, &ep, FIX_SHORT_FULL, &r);
    CHECK(r.barrier_hit == FH_BARRIER_STOP_LOSS);
    double cash = 19900.0 - (double)101.2f * 9950.0 / (double)100.5f;
    CHECK_CLOSE(ep.cash, cash, 0, REL);
    CHECK_CLOSE(r.reward_base, 100.0 * (1.5 * log(cash / 9950.0) - 1e-4), 0, FREL);
}

/* Time limit with max_hold 3 on a flat price: the position opened at step 0 is
 * closed at the end of step 2 (3 steps held), barrier_scale 0; long and short. */
static void test_time_limit(int action)
{
    fix_market fm;
    float close[8];
    for (int i = 0; i < 8; i++)
        close[i] = 100.0f;
    fix_market_init(&fm, 8, close, SIGMA);
    fh_env_config cfg = fix_config_frictionless();
    cfg.max_hold = 3;
    fh_episode_state ep;
    fh_step_result r;
    fix_episode_start(&cfg, &fm.m, &ep);
    env_step(&cfg, &fm.m, &ep, action, &r);
    CHECK(r.barrier_hit == FH_BARRIER_NONE);
    env_step(&cfg, &fm.m, &ep, action, &r);
    CHECK(r.barrier_hit == FH_BARRIER_NONE);
    CHECK(ep.barrier.entry_step == 0.0f); /* same side: the entry is kept */
    env_step(&cfg, &fm.m, &ep, action, &r);
    CHECK(r.barrier_hit == FH_BARRIER_TIME_LIMIT);
    CHECK(r.barrier_scale == 0.0f);
    CHECK(ep.units == 0.0 && ep.barrier.direction == 0.0f);
    CHECK_CLOSE(ep.cash, E0, 0, REL);
    CHECK_CLOSE(r.reward_base, -100.0 * 1e-4, 0, FREL); /* pnl 0, risk (1 * 0.01)^2 */
    CHECK(ep.log_barrier_hits[FH_BARRIER_TIME_LIMIT] == 1);
    /* the next step reopens with a fresh entry */
    env_step(&cfg, &fm.m, &ep, action, &r);
    CHECK(ep.barrier.entry_step == 3.0f && ep.barrier.direction != 0.0f);
}

/* Reversal with default costs (6e-4 at full urgency), closes 100, 101, 101, 101.
 * step 0: long, cost 6, units 99.94, equity at 101 = 10093.94.
 * step 1: target -1: turnover 2 (both legs), cost 2 * 10093.94 * 6e-4 = 12.112728;
 *         equity 10081.827272; units -10081.827272 / 101; reversal; barrier restarts
 *         short at 101: upper 101 * 1.01 = 102.01, lower 101 * 0.98 = 98.98, entry step 1. */
static void test_reversal(void)
{
    fix_market fm;
    const float close[5] = {100, 101, 101, 101, 101};
    fix_market_init(&fm, 5, close, SIGMA);
    fh_env_config cfg = fh_env_config_default();
    fh_episode_state ep;
    fh_step_result r;
    fix_episode_start(&cfg, &fm.m, &ep);
    env_step(&cfg, &fm.m, &ep, FIX_LONG_FULL, &r);
    CHECK(ep.barrier.direction == 1.0f && ep.barrier.entry == 100.0f);
    env_step(&cfg, &fm.m, &ep, FIX_SHORT_FULL, &r);
    CHECK(r.reversal == 1);
    CHECK_CLOSE(r.turnover, 2.0, 1e-6, 0);
    CHECK_CLOSE(r.cost, 12.112728, 0, 1e-6);
    CHECK_CLOSE(ep.equity, 10081.827272, 0, 1e-6);
    CHECK_CLOSE(ep.units, -10081.827272 / 101.0, 0, 1e-6);
    CHECK_CLOSE(r.exposure, -1.0, 0, 0);
    CHECK(ep.barrier.direction == -1.0f && ep.barrier.entry == 101.0f);
    CHECK(ep.barrier.entry_step == 1.0f);
    CHECK_CLOSE(ep.barrier.upper, 102.01, 0, FREL);
    CHECK_CLOSE(ep.barrier.lower, 98.98, 0, FREL);
    CHECK(ep.log_reversals == 1);
    CHECK_CLOSE(ep.log_cost, 18.112728, 0, 1e-6);
    /* going flat clears the barrier, is not a reversal */
    env_step(&cfg, &fm.m, &ep, FIX_FLAT(FH_N_URGENCIES - 1), &r);
    CHECK(r.reversal == 0 && ep.barrier.direction == 0.0f && ep.units == 0.0);
    CHECK(ep.log_reversals == 1);
}

/* Urgency 0.2 moves a fifth of the gap each step (flat prices, no costs):
 * 0 -> 0.2 -> 0.36; then target 0 at urgency 0.4: 0.36 * 0.6 = 0.216. The position
 * stays long, so the entry (step 0, price 100) is kept. */
static void test_partial_urgency(void)
{
    fix_market fm;
    float close[6];
    for (int i = 0; i < 6; i++)
        close[i] = 100.0f;
    fix_market_init(&fm, 6, close, SIGMA);
    fh_env_config cfg = fix_config_frictionless();
    fh_episode_state ep;
    fh_step_result r;
    fix_episode_start(&cfg, &fm.m, &ep);
    int slow_long = fix_action(FH_N_EXPOSURES - 1, 0);
    env_step(&cfg, &fm.m, &ep, slow_long, &r);
    CHECK_CLOSE(r.exposure, 0.2, 1e-7, 0);
    CHECK_CLOSE(r.turnover, 0.2, 1e-7, 0);
    CHECK_CLOSE(ep.units, 20.0, 0, 1e-7);
    CHECK_CLOSE(r.risk_penalty, (0.2 * 0.01) * (0.2 * 0.01), 0, FREL);
    env_step(&cfg, &fm.m, &ep, slow_long, &r);
    CHECK_CLOSE(r.exposure, 0.36, 1e-7, 0);
    CHECK_CLOSE(ep.exposure, 0.36, 1e-7, 0);
    env_step(&cfg, &fm.m, &ep, FIX_FLAT(1), &r);
    CHECK_CLOSE(r.exposure, 0.216, 1e-7, 0);
    CHECK(ep.barrier.direction == 1.0f && ep.barrier.entry_step == 0.0f);
    /* with costs: rate 1 bp + 5 bp * 0.2 = 2e-4 on turnover 0.2 of 10000: cost 0.4 */
    fh_env_config costly = fh_env_config_default();
    fix_episode_start(&costly, &fm.m, &ep);
    env_step(&costly, &fm.m, &ep, slow_long, &r);
    CHECK_CLOSE(r.cost, 0.4, 1e-9, 1e-6);
}

/* Diversity: flat actions on a flat price, so reward = diversity penalty exactly. */
static void test_diversity(void)
{
    fix_market fm;
    float close[FIX_MAX_BARS];
    for (int i = 0; i < FIX_MAX_BARS; i++)
        close[i] = 100.0f;
    fix_market_init(&fm, FIX_MAX_BARS, close, SIGMA);
    fh_env_config cfg = fix_config_frictionless();
    fh_episode_state ep;
    fh_step_result r;
    fix_episode_start(&cfg, &fm.m, &ep);
    /* 19 identical actions: fewer than 20 in the window, no penalty */
    for (int t = 0; t < 19; t++) {
        env_step(&cfg, &fm.m, &ep, FIX_FLAT(0), &r);
        CHECK_MSG(r.diversity_penalty == 0.0f && r.reward_base == 0.0f, "step %d", t);
    }
    /* the 20th: H = 0 < 1: penalty -0.01 * (1 - 0) */
    env_step(&cfg, &fm.m, &ep, FIX_FLAT(0), &r);
    CHECK_CLOSE(r.diversity_penalty, -0.01, 1e-9, 0);
    CHECK_CLOSE(r.reward_base, -0.01, 1e-9, 0);

    /* two actions alternating, 20 in the window: H = ln 2 -> -0.01 (1 - ln 2) */
    fix_episode_start(&cfg, &fm.m, &ep);
    for (int t = 0; t < 20; t++)
        env_step(&cfg, &fm.m, &ep, FIX_FLAT(t % 2), &r);
    CHECK_CLOSE(r.diversity_penalty, -0.01 * (1.0 - log(2.0)), 1e-8, 0);
    /* three actions 7/7/6 of 20: H = 1.0889 > 1: no penalty */
    fix_episode_start(&cfg, &fm.m, &ep);
    for (int t = 0; t < 20; t++)
        env_step(&cfg, &fm.m, &ep, FIX_FLAT(t % 3), &r);
    CHECK(r.diversity_penalty == 0.0f);

    /* the ring evicts: 100 x action A then 50 x action B leaves 50 / 50: ln 2 */
    fh_diversity d;
    diversity_reset(&d);
    float pen = 0.0f;
    for (int t = 0; t < 100; t++)
        pen = diversity_entropy(&d, 3, &cfg);
    CHECK_CLOSE(pen, -0.01, 1e-9, 0);
    for (int t = 0; t < 50; t++)
        pen = diversity_entropy(&d, 17, &cfg);
    CHECK(d.fill == 100 && d.counts[3] == 50 && d.counts[17] == 50);
    CHECK_CLOSE(pen, -0.01 * (1.0 - log(2.0)), 1e-8, 0);
    int total = 0;
    for (int a = 0; a < FH_N_ACTIONS; a++)
        total += d.counts[a];
    CHECK(total == 100);
}

/* Ruin: all-in long, price 100 -> 45: equity 4500 < 0.5 * 10000: terminal, not
 * truncated. */
static void test_ruin(void)
{
    fix_market fm;
    const float close[4] = {100, 45, 45, 45};
    fix_market_init(&fm, 4, close, SIGMA);
    fh_env_config cfg = fix_config_frictionless();
    fh_episode_state ep;
    fh_step_result r;
    fix_episode_start(&cfg, &fm.m, &ep);
    env_step(&cfg, &fm.m, &ep, FIX_LONG_FULL, &r);
    CHECK(r.terminal == 1 && r.truncated == 0 && r.done == 1);
    CHECK_CLOSE(r.pnl, log(0.45), 0, REL);
    CHECK_CLOSE(ep.equity, 4500.0, 0, REL);
    /* 60 -> 55% is not ruin */
    const float close2[4] = {100, 55, 55, 55};
    fix_market_init(&fm, 4, close2, SIGMA);
    fix_episode_start(&cfg, &fm.m, &ep);
    env_step(&cfg, &fm.m, &ep, FIX_LONG_FULL, &r);
    CHECK(r.terminal == 0 && r.done == 0);
}

/* Horizon 3: the third step truncates; end of data: n_bars 4, the step that
 * reaches bar 3 truncates. */
static void test_truncation(void)
{
    fix_market fm;
    float close[10];
    for (int i = 0; i < 10; i++)
        close[i] = 100.0f;
    fix_market_init(&fm, 10, close, SIGMA);
    fh_env_config cfg = fix_config_frictionless();
    cfg.horizon = 3;
    fh_episode_state ep;
    fh_step_result r;
    fix_episode_start(&cfg, &fm.m, &ep);
    env_step(&cfg, &fm.m, &ep, FIX_FLAT(2), &r);
    CHECK(!r.done);
    env_step(&cfg, &fm.m, &ep, FIX_FLAT(2), &r);
    CHECK(!r.done);
    env_step(&cfg, &fm.m, &ep, FIX_FLAT(2), &r);
    CHECK(r.truncated == 1 && r.terminal == 0 && r.done == 1 && ep.step == 3);

    fix_market_init(&fm, 4, close, SIGMA);
    cfg.horizon = 100;
    fix_episode_start(&cfg, &fm.m, &ep);
    env_step(&cfg, &fm.m, &ep, FIX_FLAT(2), &r);
    env_step(&cfg, &fm.m, &ep, FIX_FLAT(2), &r);
    CHECK(!r.done && ep.bar == 2);
    env_step(&cfg, &fm.m, &ep, FIX_FLAT(2), &r);
    CHECK(r.truncated == 1 && r.terminal == 0 && r.done == 1 && ep.bar == 3);
    /* stepping again without a reset moves nothing and stays done */
    double cash = ep.cash;
    env_step(&cfg, &fm.m, &ep, FIX_LONG_FULL, &r);
    CHECK(r.done && ep.bar == 3 && ep.cash == cash);

    /* start bars: a full horizon after the start when the data allows ... */
    fix_market_init(&fm, 10, close, SIGMA);
    cfg.horizon = 6; /* starts in [0, 3] */
    int lo = 99, hi = -1;
    for (int k = 0; k < 2000; k++) {
        env_episode_reset(&cfg, &fm.m, &ep);
        lo = ep.bar < lo ? ep.bar : lo;
        hi = ep.bar > hi ? ep.bar : hi;
    }
    CHECK_MSG(lo == 0 && hi == 3, "start bars in [%d, %d], want [0, 3]", lo, hi);
    /* ... else anywhere with one step left: [0, n_bars - 2] */
    cfg.horizon = 50;
    lo = 99, hi = -1;
    for (int k = 0; k < 2000; k++) {
        env_episode_reset(&cfg, &fm.m, &ep);
        lo = ep.bar < lo ? ep.bar : lo;
        hi = ep.bar > hi ? ep.bar : hi;
    }
    CHECK_MSG(lo == 0 && hi == 8, "start bars in [%d, %d], want [0, 8]", lo, hi);
}

/* Reset restores a fresh portfolio, barriers, diversity window and logs. */
static void test_reset(void)
{
    fix_market fm;
    const float close[8] = {100, 101, 100, 102, 100, 101, 100, 101};
    fix_market_init(&fm, 8, close, SIGMA);
    fh_env_config cfg = fh_env_config_default();
    cfg.horizon = 4;
    fh_episode_state ep;
    fh_step_result r;
    fix_episode_start(&cfg, &fm.m, &ep);
    env_step(&cfg, &fm.m, &ep, FIX_LONG_FULL, &r);
    env_step(&cfg, &fm.m, &ep, FIX_SHORT_FULL, &r);
    CHECK(ep.units != 0.0 && ep.diversity.fill == 2 && ep.log_cost > 0.0);
    fh_rng rng_before = ep.rng;
    env_episode_reset(&cfg, &fm.m, &ep);
    CHECK(ep.cash == E0 && ep.units == 0.0 && ep.equity == E0 && ep.exposure == 0.0);
    CHECK(ep.initial_equity == E0 && ep.step == 0);
    CHECK(ep.bar == ep.start_bar && ep.bar >= 0 && ep.bar <= 8 - 1 - 4);
    CHECK(ep.barrier.direction == 0.0f && ep.barrier.entry == 0.0f);
    CHECK(ep.diversity.fill == 0 && ep.diversity.head == 0);
    int counts = 0;
    for (int a = 0; a < FH_N_ACTIONS; a++)
        counts += ep.diversity.counts[a];
    CHECK(counts == 0);
    CHECK(ep.log_reward == 0.0 && ep.log_cost == 0.0 && ep.log_turnover == 0.0);
    CHECK(ep.log_reversals == 0 && ep.log_barrier_hits[FH_BARRIER_PROFIT_TAKE] == 0);
    CHECK(ep.rng.state != rng_before.state); /* the stream went on (start-bar draw) */
}

/* The observation: 51 features of the current bar, then equity/initial - 1, exposure,
 * spread = (1 bp + 5 bp * 0.6) / sigma = 4e-4 / 0.01 = 0.04 (clipped to 5). */
static void test_observe(void)
{
    fix_market fm;
    const float close[4] = {100, 101, 101, 101};
    fix_market_init(&fm, 4, close, SIGMA);
    fm.sigma[1] = 1e-5f; /* 4e-4 / 1e-5 = 40 -> clipped to 5 */
    fh_env_config cfg = fix_config_frictionless();
    cfg.half_spread = 1e-4f;
    cfg.impact = 5e-4f;
    fh_episode_state ep;
    fh_step_result r;
    float s[FH_STATE_DIM];
    fix_episode_start(&cfg, &fm.m, &ep);
    env_observe(&cfg, &fm.m, &ep, s);
    CHECK(s[0] == 0.0f && s[50] == 0.5f);
    CHECK(s[FH_N_MARKET_FEATURES] == 0.0f && s[FH_N_MARKET_FEATURES + 1] == 0.0f);
    CHECK_CLOSE(s[FH_N_MARKET_FEATURES + 2], 0.04, 0, 1e-5);
    /* half long at urgency 1: rate 6e-4, cost 0.5 * 10000 * 6e-4 = 3;
     * units 0.5 * 9997 / 100 = 49.985, cash 4998.5; at 101 (below the profit-take at
     * 102) equity = 4998.5 + 49.985 * 101 = 10046.985 */
    env_step(&cfg, &fm.m, &ep, fix_action(6, FH_N_URGENCIES - 1), &r);
    env_observe(&cfg, &fm.m, &ep, s);
    CHECK(s[0] == 1.0f && s[13] == 1.13f);
    CHECK_CLOSE(s[FH_N_MARKET_FEATURES], 10046.985 / 10000.0 - 1.0, 1e-6, 0);
    CHECK_CLOSE(s[FH_N_MARKET_FEATURES + 1], 49.985 * 101.0 / 10046.985, 1e-6, 0);
    CHECK(s[FH_N_MARKET_FEATURES + 2] == 5.0f);
}

/* Barrier boundaries: touching a level hits, one float ulp inside does not. */
static void test_barrier_edges(void)
{
    fh_env_config cfg = fh_env_config_default();
    fh_barrier b;
    barrier_init(&b, 100.0f, 0.01f, 4, 1, &cfg);
    CHECK(barrier_check(&b, b.upper, 5, &cfg) == FH_BARRIER_PROFIT_TAKE);
    CHECK(barrier_check(&b, nextafterf(b.upper, 0.0f), 5, &cfg) == FH_BARRIER_NONE);
    CHECK(barrier_check(&b, b.lower, 5, &cfg) == FH_BARRIER_STOP_LOSS);
    CHECK(barrier_check(&b, nextafterf(b.lower, 1e9f), 5, &cfg) == FH_BARRIER_NONE);
    CHECK(barrier_check(&b, 100.0f, 4 + 49, &cfg) == FH_BARRIER_NONE);
    CHECK(barrier_check(&b, 100.0f, 4 + 50, &cfg) == FH_BARRIER_TIME_LIMIT);
    barrier_init(&b, 100.0f, 0.01f, 0, -1, &cfg);
    CHECK(barrier_check(&b, b.lower, 1, &cfg) == FH_BARRIER_PROFIT_TAKE);
    CHECK(barrier_check(&b, nextafterf(b.lower, 1e9f), 1, &cfg) == FH_BARRIER_NONE);
    CHECK(barrier_check(&b, b.upper, 1, &cfg) == FH_BARRIER_STOP_LOSS);
    CHECK(barrier_check(&b, nextafterf(b.upper, 0.0f), 1, &cfg) == FH_BARRIER_NONE);
    /* sigma 0 (a flat run) is floored: levels stay apart from the entry */
    barrier_init(&b, 100.0f, 0.0f, 0, 1, &cfg);
    CHECK(b.upper > 100.0f && b.lower < 100.0f);
    CHECK(barrier_check(&b, 100.0f, 1, &cfg) == FH_BARRIER_NONE);
    barrier_reset(&b);
    CHECK(barrier_check(&b, 1e6f, 1000, &cfg) == FH_BARRIER_NONE);
}

int main(void)
{
    test_barrier_edges();
    test_actions();
    test_rng();
    test_matvec();
    test_curiosity();
    test_long_profit_take();
    test_long_profit_take_with_costs();
    test_short_profit_take();
    test_long_stop_loss();
    test_short_stop_loss();
    test_time_limit(FIX_LONG_FULL);
    test_time_limit(FIX_SHORT_FULL);
    test_reversal();
    test_partial_urgency();
    test_diversity();
    test_ruin();
    test_truncation();
    test_reset();
    test_observe();
    return fh_test_finish();
}
