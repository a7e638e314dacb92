/* bars.c — OHLCV bar arrays: allocation, release and the bar spacing (data.h). */
#include <stdlib.h>
#include <string.h>

#include "foxhunt/data.h"

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
