/* tear_sheet_series.c — see tear_sheet_series.h. */
#include "report/tear_sheet_series.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

size_t fh_ts_stride(size_t n, size_t max_points)
{
    if (n < 2 || max_points < 2)
        return 1;
    size_t steps = n - 1, room = max_points - 1; /* points past bar 0 */
    return (steps + room - 1) / room;
}

size_t fh_ts_points(size_t n, size_t stride)
{
    return n < 2 ? n : (n - 1 + stride - 1) / stride + 1;
}

size_t fh_ts_point_bar(size_t j, size_t n, size_t stride)
{
    size_t bar = j * stride;
    return bar < n ? bar : n - 1;
}

void fh_ts_downsample(const double *x, size_t n, size_t stride, fh_ts_reduce how, double *out)
{
    size_t points = fh_ts_points(n, stride);
    for (size_t j = 0; j < points; j++) {
        size_t bar = fh_ts_point_bar(j, n, stride);
        if (how == FH_TS_AT || (how == FH_TS_MIN && j == 0)) {
            out[j] = x[bar];
            continue;
        }
        if (j == 0) {
            out[j] = NAN;
            continue;
        }
        size_t from = fh_ts_point_bar(j - 1, n, stride); /* exclusive, as a bar */
        double acc = how == FH_TS_MIN ? INFINITY : 0.0;
        for (size_t t = from + 1; t <= bar; t++) {
            if (how == FH_TS_MIN)
                acc = x[t] < acc ? x[t] : acc;
            else
                acc += x[t - 1]; /* step t - 1 ends at bar t */
        }
        out[j] = how == FH_TS_MIN ? acc : acc / (double)(bar - from);
    }
}

void fh_ts_drawdown(const double *equity, size_t n, double *dd)
{
    double peak = -INFINITY;
    for (size_t t = 0; t < n; t++) {
        peak = equity[t] > peak ? equity[t] : peak;
        dd[t] = peak > 0 ? 1.0 - equity[t] / peak : 0.0;
    }
}

size_t fh_ts_sharpe_window(double periods_per_year, size_t n)
{
    size_t w = (size_t)llround(periods_per_year / 4.0);
    size_t quarter_of_split = n > 1 ? (n - 1) / 4 : 0;
    if (w > quarter_of_split)
        w = quarter_of_split;
    return w < 2 ? 2 : w;
}

/* The rolling Sharpe (volatility 0) or annualised volatility (1) of the last w returns. */
static void rolling_stat(const double *equity, size_t n, size_t w, double periods_per_year,
                         int volatility, double *out)
{
    /* running sums over the window; returns are small, so the sums keep their precision
     * over any split length this program sees */
    double sum = 0, sumsq = 0, annual = sqrt(periods_per_year);
    for (size_t t = 0; t < n; t++) {
        if (t >= 1) {
            double r = equity[t] / equity[t - 1] - 1.0;
            sum += r;
            sumsq += r * r;
        }
        if (t > w) {
            double r = equity[t - w] / equity[t - w - 1] - 1.0;
            sum -= r;
            sumsq -= r * r;
        }
        if (t < w) {
            out[t] = NAN;
            continue;
        }
        double mean = sum / (double)w, second = sumsq / (double)w;
        double var = second - mean * mean;
        /* a variance at rounding level of the second moment is a constant return */
        int constant = !(var > 1e-12 * second);
        if (volatility)
            out[t] = constant ? 0.0 : sqrt(var) * annual;
        else
            out[t] = constant ? 0.0 : mean / sqrt(var) * annual;
    }
}

void fh_ts_rolling_sharpe(const double *equity, size_t n, size_t w, double periods_per_year,
                          double *out)
{
    rolling_stat(equity, n, w, periods_per_year, 0, out);
}

void fh_ts_rolling_volatility(const double *equity, size_t n, size_t w,
                              double periods_per_year, double *out)
{
    rolling_stat(equity, n, w, periods_per_year, 1, out);
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double fh_ts_quantile(const double *x, size_t n, double q, double *scratch)
{
    memcpy(scratch, x, n * sizeof *x);
    qsort(scratch, n, sizeof *scratch, compare_doubles);
    double pos = q * (double)(n - 1);
    size_t k = (size_t)llround(pos < 0 ? 0 : pos);
    return scratch[k < n ? k : n - 1];
}

void fh_ts_histogram(const double *x, size_t n, double lo, double hi, int bins, double *share)
{
    for (int b = 0; b < bins; b++)
        share[b] = 0;
    if (n == 0 || bins < 1)
        return;
    double h = (hi - lo) / bins;
    for (size_t i = 0; i < n; i++) {
        int b = h > 0 ? (int)floor((x[i] - lo) / h) : 0;
        b = b < 0 ? 0 : b >= bins ? bins - 1 : b;
        share[b] += 1.0 / (double)n;
    }
}

static void utc_month(int64_t t, int *year, int *month)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (!gmtime_r(&tt, &tm)) {
        *year = 0;
        *month = 0;
        return;
    }
    *year = tm.tm_year + 1900;
    *month = tm.tm_mon + 1;
}

size_t fh_ts_monthly(const int64_t *time, const double *equity, size_t n, fh_ts_month *out,
                     size_t cap)
{
    size_t count = 0;
    size_t start = 0; /* the bar the current month's first step starts from */
    for (size_t t = 1; t < n; t++) {
        int year, month;
        utc_month(time[t], &year, &month);
        int next_year = 0, next_month = 0;
        if (t + 1 < n)
            utc_month(time[t + 1], &next_year, &next_month);
        if (t + 1 < n && next_year == year && next_month == month)
            continue;
        /* bar t closes its month */
        if (count < cap)
            out[count] = (fh_ts_month){year, month, equity[t] / equity[start] - 1.0};
        count++;
        start = t;
    }
    return count < cap ? count : cap;
}
