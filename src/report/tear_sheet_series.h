/* tear_sheet_series.h — the series the tear sheet plots, from a policy's bar-by-bar path
 * (docs/EVALUATION.md, "Tear sheet"): drawdown, rolling Sharpe, downsampling to a
 * bounded number of points, the histogram of per-bar returns and the returns of UTC
 * calendar months. Pure functions on the caller's arrays. */
#ifndef FOXHUNT_TEAR_SHEET_SERIES_H
#define FOXHUNT_TEAR_SHEET_SERIES_H

#include <stddef.h>
#include <stdint.h>

/* The most points a plotted series has: a longer split is downsampled (the page stays a
 * few MB and draws at once). */
#define FH_TS_MAX_POINTS 5000

/* Downsampling keeps bars 0, s, 2s, ... and the last bar, s the smallest stride that
 * gives at most max_points points. n >= 2. */
size_t fh_ts_stride(size_t n, size_t max_points);
size_t fh_ts_points(size_t n, size_t stride);
size_t fh_ts_point_bar(size_t j, size_t n, size_t stride);

typedef enum {
    FH_TS_AT,        /* x (n bars): the value at the point's bar */
    FH_TS_MIN,       /* x (n bars): the smallest since the previous point (a drawdown,
                        drawn below zero, keeps its deepest) */
    FH_TS_STEP_MEAN  /* x (n - 1 steps, step s into bar s + 1): the mean over the steps
                        since the previous point; NaN at point 0 (exposure) */
} fh_ts_reduce;

/* out (fh_ts_points(n, stride) values) from x. */
void fh_ts_downsample(const double *x, size_t n, size_t stride, fh_ts_reduce how, double *out);

/* dd[t] = 1 - equity[t] / max over s <= t of equity[s], t < n. */
void fh_ts_drawdown(const double *equity, size_t n, double *dd);

/* The rolling Sharpe's window in steps: a quarter of a year of bars (63 daily, 2,190
 * hourly), shortened to a quarter of the split's steps when the split is shorter than a
 * year, at least 2. */
size_t fh_ts_sharpe_window(double periods_per_year, size_t n);
/* out[t], t < n: the Sharpe (mean / population std times sqrt(P), 0 when the std is 0)
 * of the w step returns into bars t - w + 1 .. t; NaN for t < w. */
void fh_ts_rolling_sharpe(const double *equity, size_t n, size_t w, double periods_per_year,
                          double *out);
/* out[t], t < n: the annualised volatility (population std times sqrt(P), 0 for a
 * constant return) of the same w step returns; NaN for t < w. */
void fh_ts_rolling_volatility(const double *equity, size_t n, size_t w,
                              double periods_per_year, double *out);

/* The q-quantile (0..1) of x (n >= 1; nearest rank on a sorted copy in scratch (n)). */
double fh_ts_quantile(const double *x, size_t n, double q, double *scratch);
/* share[b], b < bins: the share of the n values in [lo + b h, lo + (b + 1) h),
 * h = (hi - lo) / bins; values outside [lo, hi] count in the edge bins. */
void fh_ts_histogram(const double *x, size_t n, double lo, double hi, int bins, double *share);

/* One UTC calendar month's return. */
typedef struct {
    int year, month; /* month 1..12 */
    double ret;      /* the product of (1 + r) over the steps into the month's bars, - 1 */
} fh_ts_month;

/* The returns of the months that hold at least one step's end bar, in order; a step
 * belongs to the month of the bar it ends at. Returns the count (at most n - 1; out has
 * room for cap). */
size_t fh_ts_monthly(const int64_t *time, const double *equity, size_t n, fh_ts_month *out,
                     size_t cap);

#endif
