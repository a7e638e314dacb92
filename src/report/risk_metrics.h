/* risk_metrics.h — the risk section of the evaluation at quantstats' level (issue 36
 * item 6): the worst drawdowns with their dates and length in time, historical VaR and
 * CVaR per bar, alpha and beta against a benchmark (buy-and-hold of the same asset),
 * and the best and worst day, month and year in the data's own calendar (UTC; hourly
 * bars aggregate to days). Computed here so eval.json and the tear sheet carry the
 * same numbers; definitions in docs/EVALUATION.md, "Risk". Pure functions on the
 * caller's arrays. */
#ifndef FOXHUNT_RISK_METRICS_H
#define FOXHUNT_RISK_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "foxhunt/error.h"

#define FH_RISK_TOP_DRAWDOWNS 5
#define FH_RISK_VAR_LEVEL 0.95 /* VaR and CVaR: the worst 5% of per-bar returns */

typedef enum { FH_PERIOD_DAY = 0, FH_PERIOD_MONTH, FH_PERIOD_YEAR, FH_PERIOD_COUNT } fh_period;

const char *fh_period_name(fh_period p); /* "day" | "month" | "year" */

/* One drawdown: from a peak to the bar that regains it. */
typedef struct {
    size_t start;   /* bar of the peak it fell from */
    size_t valley;  /* bar of its deepest point */
    size_t end;     /* the first bar back at (or above) the peak; the last bar when not */
    int recovered;  /* 0: still under water at the split's end */
    double depth;   /* 1 - equity[valley] / equity[start] */
    double days;    /* (time[end] - time[start]) / 86400: its length in time */
} fh_drawdown_period;

typedef struct {
    int n_drawdowns;
    fh_drawdown_period drawdowns[FH_RISK_TOP_DRAWDOWNS]; /* deepest first */
    double var, cvar;     /* per bar, at FH_RISK_VAR_LEVEL: the 5% quantile of the
                             returns (linear interpolation, numpy's default) and the
                             mean of the returns at or below it; losses are negative */
    double alpha, beta;   /* beta = cov(r, b) / var(b); alpha = mean(r - beta b) * P;
                             NaN without a benchmark or when it never moves */
    double best[FH_PERIOD_COUNT], worst[FH_PERIOD_COUNT]; /* compounded returns */
    int periods[FH_PERIOD_COUNT];                         /* periods counted */
} fh_risk_metrics;

/* The returns of the calendar periods (UTC) that hold at least one step's end bar, in
 * order; a step belongs to the period of the bar it ends at (as the monthly table).
 * key[k]: year * 10000 + month * 100 + day, with day (and month) 0 for coarser periods.
 * Returns the count (at most n - 1; key and ret have room for cap). */
size_t fh_risk_period_returns(const int64_t *time, const double *equity, size_t n,
                              fh_period period, int *key, double *ret, size_t cap);

/* The deepest drawdowns of equity (n bars), deepest first (ties: the earlier first);
 * returns how many (at most cap). */
int fh_risk_drawdowns(const int64_t *time, const double *equity, size_t n,
                      fh_drawdown_period *out, int cap);

/* The longest drawdown in time (days): from its peak to the bar that regains it, or to
 * the last bar; 0 when equity never falls below a peak. */
double fh_risk_longest_drawdown_days(const int64_t *time, const double *equity, size_t n);

/* Historical VaR at level (0..1) of the n returns r, and their CVaR into *cvar; scratch
 * holds n values. NaN for n == 0. */
double fh_risk_historical_var(const double *r, size_t n, double level, double *scratch,
                              double *cvar);

/* alpha (annualised by periods_per_year) and beta of returns r against b (n each). */
void fh_risk_alpha_beta(const double *r, const double *b, size_t n, double periods_per_year,
                        double *alpha, double *beta);

/* Everything above for one equity path (n >= 2 bars) against benchmark (n bars, or
 * NULL: alpha and beta NaN). Fails only for want of memory. */
fh_status fh_risk_compute(const int64_t *time, const double *equity, const double *benchmark,
                          size_t n, double periods_per_year, fh_risk_metrics *out,
                          fh_error *err);

#endif
