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
    test_hand_computed();
    test_periods_per_year();
    test_flat_path();
    return fh_test_finish();
}
