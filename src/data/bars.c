/* bars.c — OHLCV bar arrays: allocation, release, the bar spacing and the check for
 * implausible one-bar moves (data.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "foxhunt/data.h"
#include "foxhunt/format.h" /* fh_time_format */

fh_status fh_bars_alloc(fh_bars *bars, size_t n, fh_error *err)
{
    memset(bars, 0, sizeof *bars);
    if (n == 0)
        return FH_OK;
    bars->time = malloc(n * sizeof *bars->time);
    bars->open = malloc(n * sizeof *bars->open);
    bars->high = malloc(n * sizeof *bars->high);
    bars->low = malloc(n * sizeof *bars->low);
    bars->close = malloc(n * sizeof *bars->close);
    bars->volume = malloc(n * sizeof *bars->volume);
    if (!bars->time || !bars->open || !bars->high || !bars->low || !bars->close ||
        !bars->volume) {
        fh_bars_free(bars);
        return fh_error_set(err, FH_ERR_FAILURE, "out of memory allocating %zu bars", n);
    }
    bars->n = n;
    return FH_OK;
}

void fh_bars_free(fh_bars *bars)
{
    if (!bars)
        return;
    free(bars->time);
    free(bars->open);
    free(bars->high);
    free(bars->low);
    free(bars->close);
    free(bars->volume);
    free(bars->line);
    memset(bars, 0, sizeof *bars);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

double fh_bars_interval_seconds(const fh_bars *bars)
{
    if (!bars || bars->n < 2)
        return 0.0;
    size_t m = bars->n - 1;
    int64_t *d = malloc(m * sizeof *d);
    if (!d)
        return (double)(bars->time[1] - bars->time[0]);
    for (size_t i = 0; i < m; i++)
        d[i] = bars->time[i + 1] - bars->time[i];
    qsort(d, m, sizeof *d, cmp_i64);
    double med = (m % 2) ? (double)d[m / 2] : 0.5 * ((double)d[m / 2 - 1] + (double)d[m / 2]);
    free(d);
    return med;
}

/* The k-th smallest of the n spacings (0-based), by sorting a copy; -1 without memory. */
static int64_t spacing_rank(const fh_bars *bars, size_t k)
{
    if (bars->n < 2)
        return -1;
    size_t m = bars->n - 1;
    int64_t *d = malloc(m * sizeof *d);
    if (!d)
        return -1;
    for (size_t i = 0; i < m; i++)
        d[i] = bars->time[i + 1] - bars->time[i];
    qsort(d, m, sizeof *d, cmp_i64);
    int64_t v = d[k < m ? k : m - 1];
    free(d);
    return v;
}

/* 1 when at most 5% of the bars fall on a Saturday or Sunday (UTC) over two weeks or
 * more: a market with regular closures (equities, futures, forex). Crypto trades every
 * day, ~29% of its bars on weekends, however many bars an outage took: the count of
 * long spacings cannot tell 500 missing hours from a market's nights. */
static int closes_on_weekends(const fh_bars *bars)
{
    if (bars->time[bars->n - 1] - bars->time[0] < 14 * 86400)
        return 0;
    size_t weekend = 0;
    for (size_t i = 0; i < bars->n; i++) {
        int64_t t = bars->time[i];
        int64_t day = t >= 0 ? t / 86400 : -((-t + 86399) / 86400);
        int64_t dow = ((day + 3) % 7 + 7) % 7; /* 1970-01-01 was a Thursday; 0 Monday */
        weekend += dow >= 5;
    }
    return weekend * 20 <= bars->n;
}

fh_bar_gaps fh_bars_gaps(const fh_bars *bars)
{
    fh_bar_gaps g;
    memset(&g, 0, sizeof g);
    if (!bars || bars->n < 3)
        return g;
    size_t m = bars->n - 1;
    double median = fh_bars_interval_seconds(bars);
    if (!(median > 0))
        return g;
    g.closes = closes_on_weekends(bars);
    /* a market that closes: only what is longer than its usual closures (nights,
     * weekends, holidays: the 99th percentile spacing) is a gap */
    g.threshold = g.closes ? spacing_rank(bars, m - 1 - m / 100) : (int64_t)(1.5 * median);
    if (g.threshold < 0)
        return g; /* out of memory: no claim either way */
    for (size_t i = 0; i < m; i++) {
        int64_t dt = bars->time[i + 1] - bars->time[i];
        if (dt <= g.threshold)
            continue;
        g.count++;
        if (!g.closes)
            g.missing_bars += (size_t)llround((double)dt / median) - 1;
        if (dt > g.longest) {
            g.longest = dt;
            g.longest_after = i + 1;
        }
    }
    return g;
}

/* "9 h", "3 days" */
static void format_span(int64_t seconds, char *out, size_t cap)
{
    if (seconds >= 2 * 86400)
        snprintf(out, cap, "%.1f days", (double)seconds / 86400.0);
    else if (seconds >= 3600)
        snprintf(out, cap, "%.1f h", (double)seconds / 3600.0);
    else
        snprintf(out, cap, "%lld s", (long long)seconds);
}

void fh_bars_describe_gaps(const fh_bars *bars, char *out, size_t cap)
{
    fh_bar_gaps g = fh_bars_gaps(bars);
    if (g.count == 0) {
        snprintf(out, cap, "no gaps");
        return;
    }
    char longest[32], threshold[32], from[32];
    format_span(g.longest, longest, sizeof longest);
    format_span(g.threshold, threshold, sizeof threshold);
    fh_time_format(bars->time[g.longest_after - 1], from, sizeof from);
    if (g.closes)
        snprintf(out, cap, "%zu gap%s longer than the market's usual closures (%s), the "
                 "longest %s from %s UTC", g.count, g.count == 1 ? "" : "s", threshold,
                 longest, from);
    else
        snprintf(out, cap, "%zu gap%s, %zu bar%s missing, the longest %s from %s UTC",
                 g.count, g.count == 1 ? "" : "s", g.missing_bars,
                 g.missing_bars == 1 ? "" : "s", longest, from);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The series' robust scale of close-to-close log returns: 1.4826 x their median
 * absolute value (a normal's sigma), from at most 65536 evenly spaced bars so that a
 * 67-million-bar market costs no more than a small one; when more than half the bars
 * do not move, the mean absolute move (x sqrt(pi/2)) of all four prices instead.
 * 0 when nothing moves at all. */
static double robust_scale(const fh_bars *bars)
{
    size_t n = bars->n, m = n - 1, stride = m / 65536 + 1, k = 0;
    double *r = malloc((m / stride + 1) * sizeof *r);
    double s = 0.0;
    if (r) {
        for (size_t i = 1; i < n; i += stride)
            r[k++] = fabs(log(bars->close[i] / bars->close[i - 1]));
        qsort(r, k, sizeof *r, cmp_double);
        s = 1.4826 * (k % 2 ? r[k / 2] : 0.5 * (r[k / 2 - 1] + r[k / 2]));
        free(r);
    }
    if (s > 0.0)
        return s;
    double sum = 0.0;
    for (size_t i = 1; i < n; i++) {
        const double *px[4] = {bars->open, bars->high, bars->low, bars->close};
        for (int j = 0; j < 4; j++)
            sum += fabs(log(px[j][i] / bars->close[i - 1]));
    }
    return sum / (4.0 * (double)m) * 1.2533141373155003; /* sqrt(pi / 2) */
}

/* One pass over the bars: the largest move in sigmas, where, which price, the sigma
 * then, and how many bars move beyond limit (when limit > 0). */
typedef struct {
    double sigmas;
    size_t at;
    int price; /* 0 open, 1 high, 2 low, 3 close */
    double sigma;
    size_t n_beyond;
} largest_move;

static largest_move find_largest_move(const fh_bars *bars, double limit)
{
    largest_move lm = {0.0, 0, 3, 0.0, 0};
    if (bars->n < 2)
        return lm;
    const double scale = robust_scale(bars);
    if (!(scale > 0.0))
        return lm; /* nothing moves */
    const double floor_sigma = 0.25 * scale, a = 2.0 / (FH_SIGMA_SPAN + 1.0);
    const double *px[4] = {bars->open, bars->high, bars->low, bars->close};
    double var = scale * scale;
    for (size_t i = 1; i < bars->n; i++) {
        const double prev = bars->close[i - 1];
        double sig = sqrt(var);
        if (sig < floor_sigma)
            sig = floor_sigma;
        double bar_max = 0.0;
        for (int j = 0; j < 4; j++) {
            double mv = fabs(log(px[j][i] / prev)) / sig;
            if (mv > bar_max)
                bar_max = mv;
            if (mv > lm.sigmas) {
                lm.sigmas = mv;
                lm.at = i;
                lm.price = j;
                lm.sigma = sig;
            }
        }
        lm.n_beyond += limit > 0.0 && bar_max > limit;
        double r = log(bars->close[i] / prev);
        var = (1.0 - a) * var + a * r * r;
    }
    return lm;
}

double fh_bars_largest_move(const fh_bars *bars, size_t *at)
{
    largest_move lm = find_largest_move(bars, 0.0);
    if (at)
        *at = lm.at;
    return lm.sigmas;
}

fh_status fh_bars_check_moves(const fh_bars *bars, double max_sigmas, const char *source,
                              fh_error *err)
{
    if (!(max_sigmas > 0.0))
        return FH_OK;
    largest_move lm = find_largest_move(bars, max_sigmas);
    if (!(lm.sigmas > max_sigmas))
        return FH_OK;
    static const char *const names[4] = {"open", "high", "low", "close"};
    const double *px[4] = {bars->open, bars->high, bars->low, bars->close};
    size_t i = lm.at;
    char when[32], where[600], others[96] = "";
    fh_time_format(bars->time[i], when, sizeof when);
    if (bars->line)
        snprintf(where, sizeof where, "%s:%zu", source, bars->line[i]);
    else
        snprintf(where, sizeof where, "%s: bar %zu", source, i);
    if (lm.n_beyond > 1)
        snprintf(others, sizeof others, " (the largest of %zu such bars)", lm.n_beyond);
    return fh_error_set(
        err, FH_ERR_INPUT,
        "%s: implausible move at %s: %s %.10g is %.0f sigmas from the previous close "
        "%.10g%s, beyond max_bar_move_sigmas = %g (a sigma here: %.3g%% of the price); a bad "
        "tick, a misplaced decimal point, an unadjusted split? Fix the row, or accept such "
        "moves with max_bar_move_sigmas = 0 (no check) or a larger value in [run] of the "
        "config (--max-bar-move-sigmas)",
        where, when, names[lm.price], px[lm.price][i], lm.sigmas, bars->close[i - 1], others,
        max_sigmas, 100.0 * lm.sigma);
}
