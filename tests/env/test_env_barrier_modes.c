/* test_env_barrier_modes.c — the environment options of issue 34 item 3 against
 * hand-computed scenarios: barrier_mode reward (a hit scales that step's reward, the
 * position stays, the barriers re-arm), barrier_mode off, max_hold 0 (no time limit)
 * and the turnover penalty. The defaults are test_env_scenarios.c's.
 *
 * Expected values are worked out by hand in the comments and written as literals. */
#include <stdio.h>
#include <string.h>

#include "env_fixtures.h"
#include "test_util.h"

#define SIGMA 0.01f
#define E0 10000.0
#define REL 1e-9   /* double portfolio accounting */
#define FREL 1e-5  /* float quantities (rewards, float prices) */

/* Long through a profit-take under reward mode, frictionless; closes 100, 101, 103,
 * 104, 104; sigma 1%: upper 102, lower 99 (as test_long_profit_take).
 * step 0: all-in long, units 100, cash 0, equity 10100 at 101.
 * step 1: 103 >= 102: profit-take; reward 100 (1.5 ln(103/101) - 1e-4) as when
 *         liquidating, but units stay 100 and cash 0: equity 10300, exposure 1, no
 *         cost, no turnover; barriers re-armed at 103 from step 2: upper
 *         103 (1.02) = 105.06, lower 103 (0.99) = 101.97.
 * step 2: 104 < 105.06: no hit; pnl ln(104/103), r = 100 (ln(104/103) - 1e-4). */
static void test_reward_profit_take(void)
{
    fix_market fm;
    const float close[5] = {100, 101, 103, 104, 104};
    fix_market_init(&fm, 5, close, SIGMA);
    fh_env_config cfg = fix_config_frictionless();
    cfg.barrier_mode = FH_BARRIER_MODE_REWARD;
    fh_episode_state ep;
    fh_step_result r;
    fix_episode_start(&cfg, &fm.m, &ep);

    env_step(&cfg, &fm.m, &ep, FIX_LONG_FULL, &r);
    CHECK(r.barrier_hit == FH_BARRIER_NONE);
    env_step(&cfg, &fm.m, &ep, FIX_LONG_FULL, &r);
    CHECK(r.barrier_hit == FH_BARRIER_PROFIT_TAKE);
    CHECK_CLOSE(r.barrier_scale, 0.5, 0, 0);
    CHECK_CLOSE(r.reward_base, 100.0 * (1.5 * log(103.0 / 101.0) - 1e-4), 0, FREL);
    CHECK_CLOSE(ep.units, 100.0, 0, REL);
    CHECK_CLOSE(ep.cash, 0.0, 1e-9, 0);
    CHECK_CLOSE(ep.equity, 10300.0, 0, REL);
    CHECK_CLOSE(ep.exposure, 1.0, 0, REL);
    CHECK(r.cost == 0.0 && r.turnover == 0.0f);
    CHECK(ep.barrier.direction == 1.0f && ep.barrier.entry == 103.0f);
    CHECK(ep.barrier.entry_step == 2.0f);
    CHECK_CLOSE(ep.barrier.upper, 105.06, 0, FREL);
    CHECK_CLOSE(ep.barrier.lower, 101.97, 0, FREL);
    CHECK(ep.log_barrier_hits[FH_BARRIER_PROFIT_TAKE] == 1);

    env_step(&cfg, &fm.m, &ep, FIX_LONG_FULL, &r);
    CHECK(r.barrier_hit == FH_BARRIER_NONE);
    CHECK_CLOSE(r.pnl, log(104.0 / 103.0), 0, REL);
    CHECK_CLOSE(r.reward_base, 100.0 * (log(104.0 / 103.0) - 1e-4), 0, FREL);
    CHECK_CLOSE(ep.equity, 10400.0, 0, REL);
}

/* Short through a stop-loss under reward mode with SPEC costs (6e-4 at full urgency);
 * closes 100, 101.2, 101.2, 101.2. upper (stop) 101, lower (profit) 98.
 * step 0: short -1: cost 6, units -9994/100 = -99.94, cash 10000 + 9994 - 6 = 19988;
 *         101.2 >= 101: stop-loss; the position stays: equity 19988 - 99.94 * 101.2
 *         = 9874.072; reward 100 (1.5 ln(9873.872 / 10000) - 1e-4); cost 6 only (no
 *         exit); barriers re-armed short at 101.2: upper 101.2 (1.01) = 102.212, lower
 *         101.2 (0.98) = 99.176, entry step 1. */
static void test_reward_stop_loss_short(void)
{
    fix_market fm;
    const float close[4] = {100, 101.2f, 101.2f, 101.2f};
    fix_market_init(&fm, 4, close, SIGMA);
    fh_env_config cfg = fix_config_frictionless();
    cfg.half_spread = 1e-4f;
    cfg.impact = 5e-4f;
    cfg.barrier_mode = FH_BARRIER_MODE_REWARD;
    fh_episode_state ep;
    fh_step_result r;
    fix_episode_start(&cfg, &fm.m, &ep);
    env_step(&cfg, &fm.m, &ep, FIX_SHORT_FULL, &r);
    double p1 = (double)101.2f;
    double equity = 19988.0 - 99.94 * p1;
    CHECK(r.barrier_hit == FH_BARRIER_STOP_LOSS);
    CHECK_CLOSE(ep.units, -99.94, 0, REL);
    CHECK_CLOSE(ep.cash, 19988.0, 0, REL);
    CHECK_CLOSE(ep.equity, equity, 0, REL);
    CHECK_CLOSE(r.cost, 6.0, 0, FREL); /* the rate is a float: 6e-4f */
    CHECK_CLOSE(r.turnover, 1.0, 0, FREL);
    CHECK_CLOSE(r.reward_base, 100.0 * (1.5 * log(equity / E0) - 1e-4), 0, FREL);
    CHECK(ep.barrier.direction == -1.0f && ep.barrier.entry_step == 1.0f);
    CHECK_CLOSE(ep.barrier.upper, 102.212, 0, FREL);
    CHECK_CLOSE(ep.barrier.lower, 99.176, 0, FREL);
}

/* Under reward mode the time limit re-arms without a scale: flat price, max_hold 2:
 * the long opened at step 0 hits the limit at the end of step 1 (barrier_scale 0, the
 * position stays), re-armed with entry step 2, and hits again at the end of step 3. */
static void test_reward_time_limit(void)
{
    fix_market fm;
    float close[8];
    for (int i = 0; i < 8; i++)
        close[i] = 100.0f;
    fix_market_init(&fm, 8, close, SIGMA);
    fh_env_config cfg = fix_config_frictionless();
    cfg.barrier_mode = FH_BARRIER_MODE_REWARD;
    cfg.max_hold = 2;
    fh_episode_state ep;
    fh_step_result r;
    fix_episode_start(&cfg, &fm.m, &ep);
    const int expect[4] = {FH_BARRIER_NONE, FH_BARRIER_TIME_LIMIT, FH_BARRIER_NONE,
                           FH_BARRIER_TIME_LIMIT};
    for (int t = 0; t < 4; t++) {
        env_step(&cfg, &fm.m, &ep, FIX_LONG_FULL, &r);
        CHECK(r.barrier_hit == expect[t]);
        CHECK(r.barrier_scale == 0.0f);
        CHECK_CLOSE(ep.units, 100.0, 0, REL);
        CHECK_CLOSE(r.reward_base, -100.0 * 1e-4, 0, FREL); /* pnl 0, risk 1e-4 */
    }
    CHECK(ep.barrier.entry_step == 4.0f);
    CHECK(ep.log_barrier_hits[FH_BARRIER_TIME_LIMIT] == 2);
}

/* barrier_mode off: the price path of test_long_profit_take (103 >= 102) and a fall
 * through the stop (95 <= 99): no hit, the long stays all the way, and equity follows
 * the price: 10300 then 9500; the reward is the plain log return less risk. Its
 * barrier state is still kept (the entry at 100) but never checked. */
static void test_off(void)
{
    fix_market fm;
    const float close[5] = {100, 101, 103, 95, 95};
    fix_market_init(&fm, 5, close, SIGMA);
    fh_env_config cfg = fix_config_frictionless();
    cfg.barrier_mode = FH_BARRIER_MODE_OFF;
    fh_episode_state ep;
    fh_step_result r;
    fix_episode_start(&cfg, &fm.m, &ep);
    const double equity[3] = {10100.0, 10300.0, 9500.0};
    const double prev[3] = {10000.0, 10100.0, 10300.0};
    for (int t = 0; t < 3; t++) {
        env_step(&cfg, &fm.m, &ep, FIX_LONG_FULL, &r);
        CHECK(r.barrier_hit == FH_BARRIER_NONE && r.barrier_scale == 0.0f);
        CHECK_CLOSE(ep.equity, equity[t], 0, REL);
        CHECK_CLOSE(r.reward_base, 100.0 * (log(equity[t] / prev[t]) - 1e-4), 0, FREL);
    }
    CHECK_CLOSE(ep.units, 100.0, 0, REL);
    CHECK(ep.barrier.entry == 100.0f);
}

/* max_hold 0 under the liquidating default: no time limit on a flat price for 6
 * steps (with max_hold 3 it would close at step 2: test_time_limit), while a
 * profit-take still liquidates: closes 100 x 7 then 103. */
static void test_no_time_limit(void)
{
    fix_market fm;
    float close[9];
    for (int i = 0; i < 7; i++)
        close[i] = 100.0f;
    close[7] = close[8] = 103.0f;
    fix_market_init(&fm, 9, close, SIGMA);
    fh_env_config cfg = fix_config_frictionless();
    cfg.max_hold = 0;
    fh_episode_state ep;
    fh_step_result r;
    fix_episode_start(&cfg, &fm.m, &ep);
    for (int t = 0; t < 6; t++) {
        env_step(&cfg, &fm.m, &ep, FIX_LONG_FULL, &r);
        CHECK(r.barrier_hit == FH_BARRIER_NONE);
        CHECK_CLOSE(ep.units, 100.0, 0, REL);
    }
    CHECK(ep.barrier.entry_step == 0.0f);
    env_step(&cfg, &fm.m, &ep, FIX_LONG_FULL, &r);
    CHECK(r.barrier_hit == FH_BARRIER_PROFIT_TAKE);
    CHECK(ep.units == 0.0);
    CHECK_CLOSE(ep.cash, 10300.0, 0, REL);
}

/* turnover_penalty 1e-3, frictionless, closes 100, 101, 101, 101: step 0 buys all-in
 * (turnover 1): r = 100 (ln 1.01 - 1e-4 - 1e-3); step 1 holds (exposure drifted to
 * exactly 1, no trade): r = 100 (0 - 1e-4); step 2 goes flat (turnover 1): r = 100 (0 -
 * 0 - 1e-3). The portfolio is the one without a penalty: it is a reward term only. */
static void test_turnover_penalty(void)
{
    fix_market fm;
    const float close[5] = {100, 101, 101, 101, 101};
    fix_market_init(&fm, 5, close, SIGMA);
    fh_env_config cfg = fix_config_frictionless();
    cfg.turnover_penalty = 1e-3f;
    fh_episode_state ep;
    fh_step_result r;
    fix_episode_start(&cfg, &fm.m, &ep);
    env_step(&cfg, &fm.m, &ep, FIX_LONG_FULL, &r);
    CHECK_CLOSE(r.turnover, 1.0, 0, FREL);
    CHECK_CLOSE(r.reward_base, 100.0 * (log(1.01) - 1e-4 - 1e-3), 0, FREL);
    CHECK_CLOSE(ep.equity, 10100.0, 0, REL);
    env_step(&cfg, &fm.m, &ep, FIX_LONG_FULL, &r);
    CHECK(r.turnover == 0.0f);
    CHECK_CLOSE(r.reward_base, -100.0 * 1e-4, 0, FREL);
    env_step(&cfg, &fm.m, &ep, FIX_FLAT(FH_N_URGENCIES - 1), &r);
    CHECK_CLOSE(r.turnover, 1.0, 0, FREL);
    CHECK_CLOSE(r.reward_base, -100.0 * 1e-3, 0, FREL);
    CHECK_CLOSE(ep.cash, 10100.0, 0, REL);
}

/* The mode is validated like every other coefficient. */
static void test_validate(void)
{
    fh_env_config cfg = fh_env_config_default();
    CHECK(cfg.barrier_mode == FH_BARRIER_MODE_LIQUIDATE);
    fh_error err;
    cfg.barrier_mode = 3;
    CHECK(fh_env_config_validate(&cfg, &err) == FH_ERR_INPUT);
    CHECK(strstr(err.message, "barrier_mode") != NULL);
    cfg.barrier_mode = FH_BARRIER_MODE_OFF;
    cfg.max_hold = -1;
    CHECK(fh_env_config_validate(&cfg, &err) == FH_ERR_INPUT);
    cfg.max_hold = 0;
    CHECK(fh_env_config_validate(&cfg, &err) == FH_OK);
    cfg.turnover_penalty = -1e-3f;
    CHECK(fh_env_config_validate(&cfg, &err) == FH_ERR_INPUT);
    CHECK(strstr(err.message, "turnover_penalty") != NULL);
}

int main(void)
{
    test_reward_profit_take();
    test_reward_stop_loss_short();
    test_reward_time_limit();
    test_off();
    test_no_time_limit();
    test_turnover_penalty();
    test_validate();
    return fh_test_finish();
}
