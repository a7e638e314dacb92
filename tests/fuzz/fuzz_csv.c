/* fuzz_csv.c — libFuzzer harness: an arbitrary file given as `--data` (issue 19).
 *
 * The input is written to a scratch file and read with fh_bars_load_csv, then, when it
 * loads, through fh_bars_check_moves (the implausible-move check, at its default of 100
 * sigmas), fh_features_compute and fh_market_build, the path `foxhunt train --data`
 * takes (the market is built whatever the move check said, to reach more of it). Beyond
 * "no crash, no leak, no undefined behaviour" it checks what data.h promises:
 *  - a rejected file: FH_ERR_INPUT (or FH_ERR_FAILURE for memory) and a message that
 *    names the file;
 *  - loaded bars (docs/FEATURES.md, "Refused as impossible"): n >= FH_MIN_BARS, times
 *    strictly increasing, prices within a float's normal range [FLT_MIN, FLT_MAX],
 *    low <= open, close <= high, volume finite and >= 0;
 *  - features and sigma: finite, sigma >= 0;
 *  - the market: close finite and > 0 as a float (the environment divides by it),
 *    sigma finite and >= 0, normalised features finite and within +-FH_FEATURE_CLIP. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "foxhunt/data.h"
#include "foxhunt/format.h"
#include "fuzz_util.h"

static void check_market(const fh_market *m, size_t n_bars)
{
    FUZZ_REQUIRE(m->n == n_bars - FH_FEATURE_WARMUP, "market n %zu from %zu bars", m->n,
                 n_bars);
    FUZZ_REQUIRE(m->split.train_end >= 1 && m->split.train_end <= m->n, "train end %zu of %zu", m->split.train_end, m->n);
    for (size_t i = 0; i < m->n; i++) {
        FUZZ_REQUIRE(isfinite(m->close[i]) && m->close[i] > 0.0f,
                     "market close[%zu] = %g: the environment needs a finite price > 0", i,
                     (double)m->close[i]);
        FUZZ_REQUIRE(isfinite(m->sigma[i]) && m->sigma[i] >= 0.0f, "market sigma[%zu] = %g", i,
                     (double)m->sigma[i]);
        for (int k = 0; k < FH_N_MARKET_FEATURES; k++) {
            float x = m->features[i * FH_N_MARKET_FEATURES + k];
            FUZZ_REQUIRE(isfinite(x) && fabsf(x) <= FH_FEATURE_CLIP,
                         "market feature %d (%s) of bar %zu = %g", k, fh_feature_name(k), i,
                         (double)x);
        }
    }
    fh_market_view train = fh_market_view_of(m, FH_SPLIT_TRAIN);
    fh_market_view test = fh_market_view_of(m, FH_SPLIT_TEST);
    FUZZ_REQUIRE(train.n + test.n == m->n, "splits %zu + %zu != %zu", train.n, test.n, m->n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_scratch("csv", ".csv", data, size);
    fh_bars bars;
    fh_error err;
    memset(&bars, 0, sizeof bars);
    fh_error_clear(&err);
    fh_status st = fh_bars_load_csv(path, &bars, &err);
    if (st != FH_OK) {
        FUZZ_REQUIRE(st == FH_ERR_INPUT || st == FH_ERR_FAILURE, "status %d", (int)st);
        FUZZ_REQUIRE(strstr(err.message, path) != NULL, "the message does not name the file: %s",
                     err.message);
        FUZZ_REQUIRE(bars.n == 0, "a rejected file left %zu bars", bars.n);
        fh_bars_free(&bars);
        return 0;
    }
    size_t n = bars.n;
    FUZZ_REQUIRE(n >= FH_MIN_BARS, "loaded with %zu bars", n);
    for (size_t i = 0; i < n; i++) {
        FUZZ_REQUIRE(i == 0 || bars.time[i] > bars.time[i - 1], "time not increasing at bar %zu",
                     i);
        const double p[4] = {bars.open[i], bars.high[i], bars.low[i], bars.close[i]};
        for (int k = 0; k < 4; k++)
            FUZZ_REQUIRE(p[k] >= FLT_MIN && p[k] <= FLT_MAX, "bar %zu price %d = %g", i, k, p[k]);
        FUZZ_REQUIRE(bars.low[i] <= bars.open[i] && bars.open[i] <= bars.high[i] &&
                         bars.low[i] <= bars.close[i] && bars.close[i] <= bars.high[i],
                     "bar %zu: open %g close %g outside [low %g, high %g]", i, bars.open[i],
                     bars.close[i], bars.low[i], bars.high[i]);
        FUZZ_REQUIRE(isfinite(bars.volume[i]) && bars.volume[i] >= 0.0, "bar %zu volume %g", i,
                     bars.volume[i]);
    }
    (void)fh_bars_interval_seconds(&bars);
    (void)fh_bars_largest_move(&bars, NULL);
    st = fh_bars_check_moves(&bars, 100.0, path, &err); /* what fh_run_data_load applies */
    FUZZ_REQUIRE(st == FH_OK || (st == FH_ERR_INPUT && strstr(err.message, path)),
                 "an implausible move refused without naming the file: %s", err.message);
    char when[32];
    fh_time_format(bars.time[0], when, sizeof when);
    fh_time_format(bars.time[n - 1], when, sizeof when);

    float *features = malloc(n * FH_N_MARKET_FEATURES * sizeof *features);
    float *sigma = malloc(n * sizeof *sigma);
    FUZZ_REQUIRE(features && sigma, "out of memory for %zu bars", n);
    st = fh_features_compute(&bars, features, sigma, &err);
    FUZZ_REQUIRE(st == FH_OK, "features of loaded bars failed: %s", err.message);
    for (size_t i = 0; i < n; i++) {
        FUZZ_REQUIRE(isfinite(sigma[i]) && sigma[i] >= 0.0f, "sigma[%zu] = %g", i,
                     (double)sigma[i]);
        for (int k = 0; k < FH_N_MARKET_FEATURES; k++)
            FUZZ_REQUIRE(isfinite(features[i * FH_N_MARKET_FEATURES + k]),
                         "feature %d of bar %zu is not finite", k, i);
    }
    free(features);
    free(sigma);

    {
        fh_market market;
        st = fh_market_build(&bars, NULL, &(fh_split_spec){.train_fraction = 0.8}, NULL, &market, &err);
        if (st == FH_OK) {
            check_market(&market, n);
            fh_market_free(&market);
        } else {
            FUZZ_REQUIRE(st == FH_ERR_INPUT, "market build failed: %s", err.message);
        }
    }
    fh_bars_free(&bars);
    return 0;
}
