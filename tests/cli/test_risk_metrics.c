/* test_risk_metrics.c — the risk section's arithmetic (src/report/risk_metrics.c, issue 36
 * item 6). Hand-computed cases: the drawdowns of a short hourly path (peak, valley,
 * recovery, depth, hours; deepest first, ties in time order; one still open at the end),
 * VaR and CVaR at a quantile that falls on a value and between two, alpha and beta of
 * r = 2 b + c (beta 2, alpha c P), calendar days, months and years across a year's end.
 * Random returns (3,000 hourly bars, fat-tailed): each number against a float64
 * reference written here another way (rank counting for the quantile, long double
 * moments for beta, fh_ts_monthly for the months, the backtest metrics' maximum drawdown
 * for the deepest drawdown), to 1e-12 relative. eval.json's numbers are recomputed from
 * returns.csv by tests/cli/check_risk.py (test_eval_returns). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "foxhunt/metrics.h"
#include "report/risk_metrics.h"
#include "report/tear_sheet_series.h"
#include "test_util.h"

#define HOUR 3600
#define T2021 1609459200 /* 2021-01-01 00:00 UTC */

static void test_drawdowns(void)
{
    enum { N = 9 };
    double eq[N] = {100, 110, 99, 105, 121, 110, 115, 130, 120};
    int64_t time[N];
    for (int t = 0; t < N; t++)
        time[t] = T2021 + (int64_t)t * HOUR;
    fh_drawdown_period d[5];
    int n = fh_risk_drawdowns(time, eq, N, d, 5);
    CHECK(n == 3);
    /* 110 -> 99 -> back at 121 (bar 4); 121 -> 110 -> 130 (bar 7); 130 -> 120 open */
    CHECK(d[0].start == 1 && d[0].valley == 2 && d[0].end == 4 && d[0].recovered);
    CHECK_CLOSE(d[0].depth, 0.1, 1e-15, 0);
    CHECK_CLOSE(d[0].days, 3.0 / 24, 1e-15, 0);
    CHECK(d[1].start == 4 && d[1].valley == 5 && d[1].end == 7 && d[1].recovered);
    CHECK_CLOSE(d[1].depth, 1 - 110.0 / 121, 1e-15, 0);
    CHECK(d[2].start == 7 && d[2].valley == 8 && d[2].end == 8 && !d[2].recovered);
    CHECK_CLOSE(d[2].depth, 1 - 120.0 / 130, 1e-15, 0);
    CHECK_CLOSE(d[2].days, 1.0 / 24, 1e-15, 0);
    CHECK_CLOSE(fh_risk_longest_drawdown_days(time, eq, N), 3.0 / 24, 1e-15, 0);
    CHECK(fh_risk_drawdowns(time, eq, N, d, 2) == 2 && d[1].start == 4); /* the two deepest */
    /* equal depths: the earlier first; a path that never falls: none, 0 days */
    double tie[5] = {100, 90, 100, 90, 100}, rising[3] = {1, 2, 3};
    CHECK(fh_risk_drawdowns(time, tie, 5, d, 5) == 2 && d[0].start == 0 && d[1].start == 2);
    CHECK(fh_risk_drawdowns(time, rising, 3, d, 5) == 0);
    CHECK(fh_risk_longest_drawdown_days(time, rising, 3) == 0);
}

static void test_var(void)
{
    double r[21], scratch[21], cvar;
    for (int k = 0; k < 21; k++) /* -0.10 .. 0.10, shuffled */
        r[(k * 8) % 21] = (k - 10) / 100.0;
    /* 5% of 20 intervals: position 1.0, the second smallest */
    CHECK_CLOSE(fh_risk_historical_var(r, 21, 0.95, scratch, &cvar), -0.09, 1e-15, 0);
    CHECK_CLOSE(cvar, -0.095, 1e-15, 0);
    double x[11] = {5, 0, 9, 1, 8, 2, 7, 3, 6, 4, 10};
    /* position 0.5: halfway between 0 and 1; the tail at or below it is {0} */
    CHECK_CLOSE(fh_risk_historical_var(x, 11, 0.95, scratch, &cvar), 0.5, 1e-15, 0);
    CHECK_CLOSE(cvar, 0.0, 1e-15, 0);
    CHECK(isnan(fh_risk_historical_var(x, 0, 0.95, scratch, &cvar)) && isnan(cvar));
}

static void test_alpha_beta(void)
{
    double b[50], r[50], alpha, beta;
    for (int t = 0; t < 50; t++) {
        b[t] = 0.01 * sin(1.3 * t);
        r[t] = 2 * b[t] + 0.001;
    }
    fh_risk_alpha_beta(r, b, 50, 252, &alpha, &beta);
    CHECK_CLOSE(beta, 2.0, 1e-12, 0);
    CHECK_CLOSE(alpha, 0.001 * 252, 1e-12, 0);
    double still[50] = {0};
    fh_risk_alpha_beta(r, still, 50, 252, &alpha, &beta); /* a benchmark that never moves */
    CHECK(isnan(alpha) && isnan(beta));
}

static void test_periods(void)
{
    /* 2021-12-31 22:00, 23:00, 2022-01-01 00:00, 01:00 */
    int64_t time[4] = {1640988000, 1640991600, 1640995200, 1640998800};
    double eq[4] = {100, 101, 102, 103}, ret[4];
    int key[4];
    for (int p = 0; p < FH_PERIOD_COUNT; p++) {
        size_t n = fh_risk_period_returns(time, eq, 4, (fh_period)p, key, ret, 4);
        int want_old = p == FH_PERIOD_YEAR ? 20210000 : p == FH_PERIOD_MONTH ? 20211200 : 20211231;
        int want_new = p == FH_PERIOD_YEAR ? 20220000 : p == FH_PERIOD_MONTH ? 20220100 : 20220101;
        CHECK_MSG(n == 2 && key[0] == want_old && key[1] == want_new, "%s: %zu periods, "
                  "keys %d %d", fh_period_name((fh_period)p), n, key[0], key[1]);
        CHECK_CLOSE(ret[0], 0.01, 1e-15, 0);            /* the step into Dec 31 23:00 */
        CHECK_CLOSE(ret[1], 103.0 / 101 - 1, 1e-15, 0); /* the two steps into Jan 1 */
    }
}

/* xorshift64*: uniform in (0, 1) */
static double uniform(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return ((double)((*s * 2685821657736338717ull) >> 11) + 0.5) / 9007199254740992.0;
}

static void test_random(void)
{
    enum { N = 3000 };
    static double eq[N], bench[N], r[N], b[N], scratch[N];
    static int64_t time[N];
    static fh_ts_month months[N];
    uint64_t s = 12345;
    eq[0] = bench[0] = 1e4;
    time[0] = T2021 + 7 * HOUR;
    for (int t = 1; t < N; t++) {
        /* fat tails: a Gaussian scaled by a random volatility regime */
        double z = sqrt(-2 * log(uniform(&s))) * cos(6.283185307179586 * uniform(&s));
        double vol = uniform(&s) < 0.1 ? 0.03 : 0.008;
        b[t - 1] = vol * z + 0.0002;
        r[t - 1] = 0.6 * b[t - 1] + 0.004 * (uniform(&s) - 0.5);
        bench[t] = bench[t - 1] * (1 + b[t - 1]);
        eq[t] = eq[t - 1] * (1 + r[t - 1]);
        time[t] = time[t - 1] + HOUR;
    }
    fh_risk_metrics m;
    CHECK(fh_risk_compute(time, eq, bench, N, 8760, &m, NULL) == FH_OK);
    /* VaR: the (lo)th and (lo + 1)th smallest by counting ranks, interpolated */
    double pos = 0.05 * (N - 2);
    int lo = (int)floor(pos);
    double kth[2] = {NAN, NAN};
    for (int i = 0; i < N - 1; i++) {
        int below = 0, equal = 0;
        for (int j = 0; j < N - 1; j++) {
            below += r[j] < r[i];
            equal += r[j] == r[i];
        }
        for (int k = 0; k < 2; k++)
            if (below <= lo + k && lo + k < below + equal)
                kth[k] = r[i];
    }
    double var = kth[0] + (pos - lo) * (kth[1] - kth[0]), tail = 0;
    int in_tail = 0;
    for (int i = 0; i < N - 1; i++)
        if (r[i] <= var) {
            tail += r[i];
            in_tail++;
        }
    CHECK_CLOSE(m.var, var, 0, 1e-12);
    CHECK_CLOSE(m.cvar, tail / in_tail, 0, 1e-12);
    /* beta and alpha from long double moments of the step returns recomputed from equity */
    long double mr = 0, mb = 0, cov = 0, vb = 0;
    for (int t = 1; t < N; t++) {
        mr += (long double)eq[t] / eq[t - 1] - 1;
        mb += (long double)bench[t] / bench[t - 1] - 1;
    }
    mr /= N - 1;
    mb /= N - 1;
    for (int t = 1; t < N; t++) {
        long double x = (long double)eq[t] / eq[t - 1] - 1 - mr;
        long double y = (long double)bench[t] / bench[t - 1] - 1 - mb;
        cov += x * y;
        vb += y * y;
    }
    double beta = (double)(cov / vb);
    CHECK_CLOSE(m.beta, beta, 0, 1e-10);
    CHECK_CLOSE(m.alpha, (double)((mr - beta * mb) * 8760), 1e-12, 1e-8);
    /* months against the monthly table's own function */
    size_t nm = fh_ts_monthly(time, eq, N, months, N);
    double best = -INFINITY, worst = INFINITY;
    for (size_t k = 0; k < nm; k++) {
        best = fmax(best, months[k].ret);
        worst = fmin(worst, months[k].ret);
    }
    CHECK(m.periods[FH_PERIOD_MONTH] == (int)nm);
    CHECK_CLOSE(m.best[FH_PERIOD_MONTH], best, 0, 1e-12);
    CHECK_CLOSE(m.worst[FH_PERIOD_MONTH], worst, 0, 1e-12);
    /* steps end from Jan 1 08:00 to 2,999 hours after 07:00 (May 6 06:00): 126 days */
    CHECK(m.periods[FH_PERIOD_DAY] == 126 && m.periods[FH_PERIOD_YEAR] == 1);
    /* the deepest drawdown is the backtest metrics' maximum drawdown */
    static double zeros[N];
    fh_backtest_metrics bm;
    fh_backtest_metrics_compute(eq, zeros, zeros, zeros, N - 1, 8760, &bm);
    CHECK(m.n_drawdowns == 5);
    CHECK_CLOSE(m.drawdowns[0].depth, bm.max_drawdown, 0, 1e-12);
    for (int k = 1; k < m.n_drawdowns; k++)
        CHECK(m.drawdowns[k].depth <= m.drawdowns[k - 1].depth);
    (void)scratch;
}

int main(void)
{
    test_drawdowns();
    test_var();
    test_alpha_beta();
    test_periods();
    test_random();
    return fh_test_finish();
}
