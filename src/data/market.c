/* market.c — bars -> the normalised, split market the environment reads (data.h).
 * Rows before FH_FEATURE_WARMUP are dropped; the splits are by time, never shuffled
 * (splits.c); the normalisation is fitted on the training rows only, or taken from the
 * caller (a checkpoint's statistics at evaluation). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "foxhunt/data.h"

void fh_market_free(fh_market *market)
{
    if (!market)
        return;
    free(market->features);
    free(market->close);
    free(market->sigma);
    free(market->time);
    free(market->expected_return);
    memset(market, 0, sizeof *market);
}

fh_status fh_market_build(const fh_bars *bars, const double *expected_return,
                          const fh_split_spec *split, const fh_feature_norm *norm,
                          fh_market *market, fh_error *err)
{
    memset(market, 0, sizeof *market);
    if (bars->n < FH_MIN_BARS)
        return fh_error_set(err, FH_ERR_INPUT,
                            "market has %zu bars; at least %d are needed (%d for the feature "
                            "warm-up plus room for episodes)",
                            bars->n, FH_MIN_BARS, FH_FEATURE_WARMUP);
    size_t n_all = bars->n, n = n_all - FH_FEATURE_WARMUP;
    fh_split_bounds bounds;
    fh_status st = fh_split_bounds_make(n, split, &bounds, err);
    if (st != FH_OK)
        return st;

    float *all = malloc(n_all * FH_N_MARKET_FEATURES * sizeof *all);
    float *sig_all = malloc(n_all * sizeof *sig_all);
    market->features = malloc(n * FH_N_MARKET_FEATURES * sizeof *market->features);
    market->close = malloc(n * sizeof *market->close);
    market->sigma = malloc(n * sizeof *market->sigma);
    market->time = malloc(n * sizeof *market->time);
    if (expected_return)
        market->expected_return = malloc(n * sizeof *market->expected_return);
    if (!all || !sig_all || !market->features || !market->close || !market->sigma ||
        !market->time || (expected_return && !market->expected_return))
        st = fh_error_set(err, FH_ERR_FAILURE, "out of memory building a market of %zu bars",
                          n_all);
    if (st == FH_OK)
        st = fh_features_compute(bars, all, sig_all, err);
    if (st != FH_OK) {
        free(all);
        free(sig_all);
        fh_market_free(market);
        return st;
    }
    const size_t w = FH_FEATURE_WARMUP;
    memcpy(market->features, all + w * FH_N_MARKET_FEATURES,
           n * FH_N_MARKET_FEATURES * sizeof *all);
    memcpy(market->sigma, sig_all + w, n * sizeof *sig_all);
    memcpy(market->time, bars->time + w, n * sizeof *market->time);
    for (size_t i = 0; i < n; i++)
        market->close[i] = (float)bars->close[w + i];
    if (expected_return)
        memcpy(market->expected_return, expected_return + w,
               n * sizeof *market->expected_return);
    free(all);
    free(sig_all);

    market->n = n;
    market->split = bounds;
    if (norm)
        market->norm = *norm;
    else
        fh_feature_norm_fit(&market->norm, market->features, bounds.train_begin,
                            bounds.train_end);
    fh_feature_norm_apply(&market->norm, market->features, n);
    market->interval_seconds = fh_bars_interval_seconds(bars);
    return FH_OK;
}

fh_market_view fh_market_view_of(const fh_market *market, fh_split split)
{
    size_t begin = 0, end = market->n;
    if (split == FH_SPLIT_TRAIN) {
        begin = market->split.train_begin;
        end = market->split.train_end;
    } else if (split == FH_SPLIT_VALIDATION) {
        begin = market->split.val_begin;
        end = market->split.val_end;
    } else if (split == FH_SPLIT_TEST) {
        begin = market->split.test_begin;
        end = market->split.test_end;
    }
    fh_market_view v;
    v.n = end - begin;
    v.features = market->features ? market->features + begin * FH_N_MARKET_FEATURES : NULL;
    v.close = market->close ? market->close + begin : NULL;
    v.sigma = market->sigma ? market->sigma + begin : NULL;
    v.time = market->time ? market->time + begin : NULL;
    v.expected_return = market->expected_return ? market->expected_return + begin : NULL;
    v.history = market->close ? begin : 0;
    v.n_segments = 0;
    v.segment_ends = NULL;
    return v;
}
