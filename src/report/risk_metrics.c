/* risk_metrics.c — see risk_metrics.h. */
#include "report/risk_metrics.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SECONDS_PER_DAY 86400.0

const char *fh_period_name(fh_period p)
{
    static const char *const names[FH_PERIOD_COUNT] = {"day", "month", "year"};
    return p >= 0 && p < FH_PERIOD_COUNT ? names[p] : "?";
}

static int period_key(int64_t t, fh_period period)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (!gmtime_r(&tt, &tm))
        return 0;
    int year = tm.tm_year + 1900, month = tm.tm_mon + 1, day = tm.tm_mday;
    return period == FH_PERIOD_YEAR ? year * 10000
         : period == FH_PERIOD_MONTH ? year * 10000 + month * 100
                                     : year * 10000 + month * 100 + day;
}

size_t fh_risk_period_returns(const int64_t *time, const double *equity, size_t n,
                              fh_period period, int *key, double *ret, size_t cap)
{
    size_t count = 0, start = 0; /* the bar the current period's first step starts from */
    for (size_t t = 1; t < n; t++) {
        int k = period_key(time[t], period);
        if (t + 1 < n && period_key(time[t + 1], period) == k)
            continue;
        /* bar t closes its period */
        if (count < cap) {
            key[count] = k;
            ret[count] = equity[t] / equity[start] - 1.0;
        }
        count++;
        start = t;
    }
    return count < cap ? count : cap;
}

/* Inserts d into out (count kept, deepest first, at most cap): a strictly deeper one
 * goes before, so of equal depths the earlier stays first. */
static void keep_deepest(fh_drawdown_period *out, int *count, int cap, fh_drawdown_period d)
{
    int at = *count;
    while (at > 0 && d.depth > out[at - 1].depth)
        at--;
    if (at >= cap)
        return;
    int last = *count < cap ? *count : cap - 1;
    memmove(out + at + 1, out + at, (size_t)(last - at) * sizeof *out);
    out[at] = d;
    if (*count < cap)
        (*count)++;
}

int fh_risk_drawdowns(const int64_t *time, const double *equity, size_t n,
                      fh_drawdown_period *out, int cap)
{
    int count = 0;
    if (cap <= 0)
        return 0;
    size_t peak = 0;
    int under = 0;
    fh_drawdown_period d = {0};
    for (size_t t = 0; t < n; t++) {
        if (equity[t] >= equity[peak]) { /* at or above the peak: any drawdown is over */
            if (under) {
                d.end = t;
                d.recovered = 1;
                d.depth = 1.0 - equity[d.valley] / equity[d.start];
                keep_deepest(out, &count, cap, d);
                under = 0;
            }
            peak = t;
            continue;
        }
        if (!under) {
            d = (fh_drawdown_period){.start = peak, .valley = t};
            under = 1;
        }
        if (equity[t] < equity[d.valley])
            d.valley = t;
    }
    if (under) {
        d.end = n - 1;
        d.recovered = 0;
        d.depth = 1.0 - equity[d.valley] / equity[d.start];
        keep_deepest(out, &count, cap, d);
    }
    for (int k = 0; k < count; k++) {
        fh_drawdown_period *p = &out[k];
        p->days = (double)(time[p->end] - time[p->start]) / SECONDS_PER_DAY;
    }
    return count;
}

double fh_risk_longest_drawdown_days(const int64_t *time, const double *equity, size_t n)
{
    size_t peak = 0;
    int64_t longest = 0;
    for (size_t t = 0; t < n; t++) {
        int under = equity[t] < equity[peak];
        if (under || t > peak + 1) /* under water, or just recovered from it */
            longest = time[t] - time[peak] > longest ? time[t] - time[peak] : longest;
        if (!under)
            peak = t;
    }
    return (double)longest / SECONDS_PER_DAY;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double fh_risk_historical_var(const double *r, size_t n, double level, double *scratch,
                              double *cvar)
{
    *cvar = NAN;
    if (n == 0)
        return NAN;
    memcpy(scratch, r, n * sizeof *r);
    qsort(scratch, n, sizeof *scratch, compare_doubles);
    double pos = (1.0 - level) * (double)(n - 1);
    size_t lo = (size_t)floor(pos);
    size_t hi = lo + 1 < n ? lo + 1 : lo;
    double var = scratch[lo] + (pos - (double)lo) * (scratch[hi] - scratch[lo]);
    double sum = 0;
    size_t tail = 0;
    for (; tail < n && scratch[tail] <= var; tail++) /* scratch[lo] <= var: tail >= 1 */
        sum += scratch[tail];
    *cvar = sum / (double)tail;
    return var;
}

void fh_risk_alpha_beta(const double *r, const double *b, size_t n, double periods_per_year,
                        double *alpha, double *beta)
{
    *alpha = *beta = NAN;
    if (n < 2)
        return;
    double mr = 0, mb = 0;
    for (size_t t = 0; t < n; t++) {
        mr += r[t];
        mb += b[t];
    }
    mr /= (double)n;
    mb /= (double)n;
    double cov = 0, var = 0;
    for (size_t t = 0; t < n; t++) {
        cov += (r[t] - mr) * (b[t] - mb);
        var += (b[t] - mb) * (b[t] - mb);
    }
    /* a benchmark that never moves (a variance at rounding level) explains nothing */
    if (!(var > 1e-24 * (double)n))
        return;
    *beta = cov / var;
    *alpha = (mr - *beta * mb) * periods_per_year;
}

static void step_returns(const double *equity, size_t n, double *out)
{
    for (size_t t = 1; t < n; t++)
        out[t - 1] = equity[t] / equity[t - 1] - 1.0;
}

fh_status fh_risk_compute(const int64_t *time, const double *equity, const double *benchmark,
                          size_t n, double periods_per_year, fh_risk_metrics *out,
                          fh_error *err)
{
    memset(out, 0, sizeof *out);
    out->var = out->cvar = out->alpha = out->beta = NAN;
    for (int p = 0; p < FH_PERIOD_COUNT; p++)
        out->best[p] = out->worst[p] = NAN;
    if (n < 2)
        return FH_OK;
    size_t steps = n - 1;
    double *r = malloc(steps * sizeof *r), *scratch = malloc(steps * sizeof *scratch);
    int *key = malloc(steps * sizeof *key);
    if (!r || !scratch || !key) {
        free(r);
        free(scratch);
        free(key);
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory for the risk metrics "
                            "of %zu bars", __FILE__, __LINE__, n);
    }
    out->n_drawdowns = fh_risk_drawdowns(time, equity, n, out->drawdowns, FH_RISK_TOP_DRAWDOWNS);
    step_returns(equity, n, r);
    out->var = fh_risk_historical_var(r, steps, FH_RISK_VAR_LEVEL, scratch, &out->cvar);
    if (benchmark) {
        step_returns(benchmark, n, scratch);
        fh_risk_alpha_beta(r, scratch, steps, periods_per_year, &out->alpha, &out->beta);
    }
    for (int p = 0; p < FH_PERIOD_COUNT; p++) {
        size_t m = fh_risk_period_returns(time, equity, n, (fh_period)p, key, scratch, steps);
        out->periods[p] = (int)m;
        for (size_t k = 0; k < m; k++) {
            if (k == 0 || scratch[k] > out->best[p])
                out->best[p] = scratch[k];
            if (k == 0 || scratch[k] < out->worst[p])
                out->worst[p] = scratch[k];
        }
    }
    free(r);
    free(scratch);
    free(key);
    return FH_OK;
}
