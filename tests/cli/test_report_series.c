/* test_report_series.c — the tear sheet's arithmetic (src/report/tear_sheet_series.c) on
 * hand-made paths: the downsampling's stride, points and reductions (the value at a
 * point, the deepest of a stretch, a stretch's mean over its steps), drawdown, the
 * rolling Sharpe's window and values against a direct computation (0 for a constant
 * return), quantiles and histogram shares, and calendar months across a year's end. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "report/tear_sheet_series.h"
#include "test_util.h"

static void test_downsampling(void)
{
    CHECK(fh_ts_stride(10, 5000) == 1 && fh_ts_points(10, 1) == 10);
    CHECK(fh_ts_stride(5000, 5000) == 1 && fh_ts_points(5000, 1) == 5000);
    /* 5001 bars: 5000 steps need stride 2 -> bars 0, 2, ..., 5000 */
    CHECK(fh_ts_stride(5001, 5000) == 2 && fh_ts_points(5001, 2) == 2501);
    CHECK(fh_ts_stride(12000, 5000) == 3 && fh_ts_points(12000, 3) == 4001);
    /* 8 bars, stride 3: bars 0, 3, 6 and the last, 7 */
    CHECK(fh_ts_points(8, 3) == 4);
    CHECK(fh_ts_point_bar(0, 8, 3) == 0 && fh_ts_point_bar(2, 8, 3) == 6 &&
          fh_ts_point_bar(3, 8, 3) == 7);
    double x[8] = {0, -1, -3, -2, 0, -5, -4, -6}, out[4];
    fh_ts_downsample(x, 8, 3, FH_TS_AT, out);
    CHECK(out[0] == 0 && out[1] == -2 && out[2] == -4 && out[3] == -6);
    fh_ts_downsample(x, 8, 3, FH_TS_MIN, out); /* bars (0,3], (3,6], (6,7] */
    CHECK(out[0] == 0 && out[1] == -3 && out[2] == -5 && out[3] == -6);
    double steps[7] = {1, 2, 3, 4, 5, 6, 7}; /* step s ends at bar s + 1 */
    fh_ts_downsample(steps, 8, 3, FH_TS_STEP_MEAN, out);
    CHECK(isnan(out[0]));
    CHECK_CLOSE(out[1], 2.0, 1e-15, 0); /* steps 0..2 */
    CHECK_CLOSE(out[2], 5.0, 1e-15, 0); /* steps 3..5 */
    CHECK_CLOSE(out[3], 7.0, 1e-15, 0); /* step 6 */
}

static void test_drawdown(void)
{
    double eq[6] = {100, 110, 99, 121, 110, 130}, dd[6];
    fh_ts_drawdown(eq, 6, dd);
    double want[6] = {0, 0, 0.1, 0, 1 - 110.0 / 121, 0};
    CHECK_ARRAY_CLOSE("drawdown", dd, want, 6, 1e-15, 0);
}

static void test_rolling_sharpe(void)
{
    CHECK(fh_ts_sharpe_window(252, 10000) == 63);
    CHECK(fh_ts_sharpe_window(8760, 100000) == 2190);
    CHECK(fh_ts_sharpe_window(8760, 481) == 120); /* a quarter of 480 steps */
    CHECK(fh_ts_sharpe_window(252, 3) == 2);
    enum { N = 200, W = 20 };
    double eq[N], out[N];
    eq[0] = 100;
    for (int t = 1; t < N; t++)
        eq[t] = eq[t - 1] * (1.0 + 0.01 * sin(0.7 * t) + 0.002);
    fh_ts_rolling_sharpe(eq, N, W, 252, out);
    int bad = 0;
    for (int t = 0; t < N; t++) {
        if (t < W) {
            bad += !isnan(out[t]);
            continue;
        }
        double mean = 0, sq = 0;
        for (int s = t - W + 1; s <= t; s++)
            mean += (eq[s] / eq[s - 1] - 1.0) / W;
        for (int s = t - W + 1; s <= t; s++) {
            double d = eq[s] / eq[s - 1] - 1.0 - mean;
            sq += d * d / W;
        }
        bad += !fh_close(out[t], mean / sqrt(sq) * sqrt(252.0), 1e-9, 1e-9);
    }
    CHECK_MSG(bad == 0, "%d rolling Sharpe values disagree with the direct computation", bad);
    for (int t = 1; t < N; t++)
        eq[t] = eq[t - 1] * 1.001; /* a constant return: std 0, Sharpe 0 */
    fh_ts_rolling_sharpe(eq, N, W, 252, out);
    CHECK(out[W] == 0.0 && out[N - 1] == 0.0);
}

static void test_histogram(void)
{
    double x[5] = {0.3, -2, 0.1, 0.9, 5}, scratch[5], share[4];
    CHECK(fh_ts_quantile(x, 5, 0.0, scratch) == -2 && fh_ts_quantile(x, 5, 0.5, scratch) == 0.3 &&
          fh_ts_quantile(x, 5, 1.0, scratch) == 5);
    fh_ts_histogram(x, 5, 0, 1, 4, share); /* -2 -> bin 0, 5 -> bin 3 */
    double want[4] = {0.4, 0.2, 0.0, 0.4};
    CHECK_ARRAY_CLOSE("histogram", share, want, 4, 1e-15, 0);
}

static void test_months(void)
{
    /* 2020-12-30 00:00 UTC, then daily bars: 30, 31 Dec, 1, 2 Jan, ..., 1 Feb */
    const int64_t start = 1609286400;
    enum { N = 35 };
    int64_t time[N];
    double eq[N];
    for (int t = 0; t < N; t++) {
        time[t] = start + 86400LL * t;
        eq[t] = 100.0 * pow(1.01, t);
    }
    fh_ts_month m[N];
    size_t n = fh_ts_monthly(time, eq, N, m, N);
    /* December: the step into 31 Dec; January: 31 steps; February: the step into 1 Feb
     * and 2 Feb (bars 33, 34) */
    CHECK(n == 3);
    CHECK(m[0].year == 2020 && m[0].month == 12 && m[1].year == 2021 && m[1].month == 1 &&
          m[2].month == 2);
    CHECK_CLOSE(m[0].ret, 0.01, 1e-12, 0);
    CHECK_CLOSE(m[1].ret, pow(1.01, 31) - 1.0, 1e-12, 0);
    CHECK_CLOSE(m[2].ret, pow(1.01, 2) - 1.0, 1e-12, 0);
    /* a first bar alone in its month opens no month */
    size_t k = fh_ts_monthly(time + 1, eq + 1, N - 1, m, N);
    CHECK(k == 2 && m[0].month == 1 && m[0].year == 2021);
    CHECK(fh_ts_monthly(time, eq, N, m, 2) == 2); /* capped */
}

int main(void)
{
    test_downsampling();
    test_drawdown();
    test_rolling_sharpe();
    test_histogram();
    test_months();
    return fh_test_finish();
}
