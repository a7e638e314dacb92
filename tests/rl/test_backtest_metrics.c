/* test_backtest_metrics.c — backtest statistics against values worked out by hand. */
#include "foxhunt/metrics.h"
#include "test_util.h"

static void test_hand_computed(void)
{
    /* equity 100 -> 110 -> 99 -> 108.9 -> 108.9: returns +10%, -10%, +10%, 0% */
    const double equity[5] = {100, 110, 99, 108.9, 108.9};
    const double turnover[4] = {1.0, 0.0, 0.5, 0.0};
    const double costs[4] = {0.1, 0.0, 0.05, 0.0};
    const double exposure[4] = {1.0, 1.0, 0.5, 0.0};
    fh_backtest_metrics m;
    fh_backtest_metrics_compute(equity, turnover, costs, exposure, 4, 252.0, &m);
    double mean = (0.1 - 0.1 + 0.1 + 0.0) / 4; /* 0.025 */
    double var = (0.01 + 0.01 + 0.01 + 0.0) / 4 - mean * mean; /* 0.006875 */
    double sd = sqrt(var);
    CHECK_CLOSE(m.cumulative_return, 0.089, 1e-12, 1e-12);
    CHECK_CLOSE(m.annualised_return, pow(1.089, 252.0 / 4) - 1, 1e-9, 1e-9);
    CHECK_CLOSE(m.annualised_volatility, sd * sqrt(252.0), 1e-12, 1e-12);
    CHECK_CLOSE(m.sharpe, mean / sd * sqrt(252.0), 1e-12, 1e-12);
    CHECK_CLOSE(m.sortino, mean / sqrt(0.01 / 4) * sqrt(252.0), 1e-12, 1e-12);
    CHECK_CLOSE(m.max_drawdown, 0.1, 1e-12, 1e-12);     /* 110 -> 99 */
    CHECK(m.max_drawdown_duration == 3);                /* 99, 108.9, 108.9 below 110 */
    CHECK_CLOSE(m.calmar, m.annualised_return / 0.1, 1e-9, 1e-12);
    CHECK_CLOSE(m.turnover, 1.5, 1e-12, 0);
    CHECK_CLOSE(m.turnover_per_year, 1.5 * 252 / 4, 1e-12, 0);
    CHECK(m.trades == 2);
    CHECK_CLOSE(m.hit_rate, 2.0 / 3.0, 1e-12, 0);      /* 3 steps in market, 2 up */
    CHECK_CLOSE(m.costs, 0.1 / 100 + 0.05 / 99, 1e-15, 1e-12); /* cost / equity then */
}

/* The additions of issue 20 on the same path and on one with a reversal:
 *   exposures 1, 1, 0.5, 0: in market 3 of 4 steps, mean 2.5/4, one long round trip over
 *   steps 0-2 (equity 100 -> 108.9: a hit);
 *   Sharpe's standard error from the returns' moments (worked out below). */
static void test_positions_and_sharpe_se(void)
{
    const double equity[5] = {100, 110, 99, 108.9, 108.9};
    const double zero[4] = {0, 0, 0, 0};
    const double exposure[4] = {1.0, 1.0, 0.5, 0.0};
    fh_backtest_metrics m;
    fh_backtest_metrics_compute(equity, zero, zero, exposure, 4, 252.0, &m);
    CHECK_CLOSE(m.time_in_market, 0.75, 1e-15, 0);
    CHECK_CLOSE(m.mean_exposure, 0.625, 1e-15, 0);
    CHECK_CLOSE(m.mean_abs_exposure, 0.625, 1e-15, 0);
    CHECK(m.round_trips == 1);
    CHECK_CLOSE(m.round_trip_hit_rate, 1.0, 0, 0);
    /* r = 0.1, -0.1, 0.1, 0 (to rounding): mean 0.025, deviations 0.075, -0.125, 0.075,
     * -0.025; var = 0.006875; m3 = (3 0.075^3 ... ) / 4 */
    double r[4] = {0.1, -0.1, 0.1, 0.0}, mean = 0.025, var = 0.006875, m3 = 0, m4 = 0;
    for (int t = 0; t < 4; t++) {
        double d = r[t] - mean;
        m3 += d * d * d / 4;
        m4 += d * d * d * d / 4;
    }
    double sd = sqrt(var), sr = mean / sd, skew = m3 / (sd * sd * sd), kurt = m4 / (var * var);
    double want = sqrt((1 - skew * sr + (kurt - 1) / 4 * sr * sr) / 4) * sqrt(252.0);
    CHECK_CLOSE(m.sharpe_se, want, 1e-9, 1e-9);
    /* a normal-like check of the formula: skew 0, kurt 3 gives sqrt((1 + SR^2/2)/T) */
    CHECK_CLOSE(sqrt((1 - 0 * sr + (3 - 1) / 4.0 * sr * sr) / 4), sqrt((1 + sr * sr / 2) / 4),
                1e-15, 0);

    /* long 2 steps, reversal to short 2 steps, flat, long to the end:
     * equity 100 101 102 | 101 100 | 100 | 99: trips long [0,2) 102/100 (hit), short
     * [2,4) 100/102 (miss), long [5,6) 99/100 (miss) */
    const double eq2[7] = {100, 101, 102, 101, 100, 100, 99};
    const double ex2[6] = {1, 1, -1, -0.5, 0, 0.25};
    fh_backtest_metrics_compute(eq2, zero, zero, ex2, 4, 252.0, &m); /* the first 4 steps */
    CHECK(m.round_trips == 2);               /* long [0,2), short [2,4) closed at the end */
    CHECK_CLOSE(m.round_trip_hit_rate, 0.5, 0, 0);
    double z6[6] = {0, 0, 0, 0, 0, 0};
    fh_backtest_metrics_compute(eq2, z6, z6, ex2, 6, 252.0, &m);
    CHECK(m.round_trips == 3);
    CHECK_CLOSE(m.round_trip_hit_rate, 1.0 / 3.0, 1e-15, 0);
    CHECK_CLOSE(m.time_in_market, 5.0 / 6.0, 1e-15, 0);
    CHECK_CLOSE(m.mean_exposure, (1 + 1 - 1 - 0.5 + 0 + 0.25) / 6, 1e-15, 0);
    CHECK_CLOSE(m.mean_abs_exposure, (1 + 1 + 1 + 0.5 + 0 + 0.25) / 6, 1e-15, 0);
}

static void test_periods_per_year(void)
{
    CHECK_CLOSE(fh_periods_per_year(86400), 252, 0, 0);
    CHECK_CLOSE(fh_periods_per_year(3600), 8760, 1e-9, 0);
    CHECK_CLOSE(fh_periods_per_year(300), 105120, 1e-9, 0);
}

static void test_flat_path(void)
{
    const double equity[3] = {1, 1, 1};
    const double zero[2] = {0, 0};
    fh_backtest_metrics m;
    fh_backtest_metrics_compute(equity, zero, zero, zero, 2, 252, &m);
    CHECK(m.sharpe == 0 && m.max_drawdown == 0 && m.trades == 0 && m.hit_rate == 0);
    CHECK(isfinite(m.calmar) && isfinite(m.sortino));
}

int main(void)
{
    test_positions_and_sharpe_se();
    test_hand_computed();
    test_periods_per_year();
    test_flat_path();
    return fh_test_finish();
}
