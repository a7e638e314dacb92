/* data.h — market data: OHLCV bars, the synthetic market, the 51 causal features,
 * normalisation and time-ordered splits (SPEC §2; docs/FEATURES.md).
 *
 * Flow: bars (CSV or synthetic) -> fh_market_build (features, sigma, warm-up dropped,
 * train/test split, z-score fitted on train, clip +-5) -> fh_market_view per split,
 * which is all the environment reads. */
#ifndef FOXHUNT_DATA_H
#define FOXHUNT_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "foxhunt/error.h"
#include "foxhunt/shapes.h"

/* ---- bars ---- */
typedef struct {
    size_t n;          /* number of bars */
    int64_t *time;     /* (n) Unix seconds, UTC, strictly increasing */
    double *open;      /* (n) */
    double *high;      /* (n) */
    double *low;       /* (n) */
    double *close;     /* (n) */
    double *volume;    /* (n) >= 0 */
    int reversed;      /* 1 when the file was in descending order and was reversed */
} fh_bars;

/* Minimum number of bars a market needs: the feature warm-up plus room for episodes. */
#define FH_MIN_BARS 300

/* Loads a Yahoo-style or kline-style CSV (SPEC §2). On error returns FH_ERR_INPUT with
 * "FILE:LINE:COLUMN: what is wrong; what to do" and leaves *bars empty. */
fh_status fh_bars_load_csv(const char *path, fh_bars *bars, fh_error *err);
fh_status fh_bars_alloc(fh_bars *bars, size_t n, fh_error *err);
void fh_bars_free(fh_bars *bars);
/* Median spacing of consecutive bars in seconds (86400 daily, 3600 hourly). */
double fh_bars_interval_seconds(const fh_bars *bars);
/* Writes t as "YYYY-MM-DD HH:MM:SS" (UTC) into out (cap >= 20). */
void fh_time_format(int64_t unix_seconds, char *out, size_t cap);

/* ---- synthetic market (docs/FEATURES.md, "Synthetic market") ---- */
typedef struct {
    uint64_t seed;
    size_t n_bars;          /* default 20000 */
    int64_t start_time;     /* Unix seconds of bar 0 */
    int64_t interval;       /* seconds between bars (default 3600) */
    double signal_strength; /* scale of the predictable component (default documented) */
} fh_synth_config;

void fh_synth_config_default(fh_synth_config *cfg);
/* Fills bars deterministically from cfg->seed. expected_return, when not NULL, gets
 * (n_bars) the predictable part of the next bar's log return known at bar i
 * (E[ln(close[i+1]/close[i]) | information at i]): what an oracle knows. */
fh_status fh_synth_generate(const fh_synth_config *cfg, fh_bars *bars,
                            double *expected_return, fh_error *err);

/* ---- features ---- */
/* Bars needed before feature values are defined; rows < FH_FEATURE_WARMUP are
 * written as 0 and never used by fh_market_build. */
#define FH_FEATURE_WARMUP 200
/* Span of the EWMA of log returns that gives sigma (SPEC §3.3). */
#define FH_SIGMA_SPAN 20

const char *fh_feature_name(int index); /* NULL outside 0..50 */
int fh_feature_index(const char *name);  /* -1 when no feature has that name */
/* features: (n, FH_N_MARKET_FEATURES) raw (unnormalised), causal: row i uses bars <= i.
 * sigma: (n) EWMA volatility of log returns (span FH_SIGMA_SPAN), causal; may be NULL. */
fh_status fh_features_compute(const fh_bars *bars, float *features, float *sigma,
                              fh_error *err);

/* ---- normalisation ---- */
#define FH_FEATURE_CLIP 5.0f
typedef struct {
    float mean[FH_N_MARKET_FEATURES];
    float std[FH_N_MARKET_FEATURES];
} fh_feature_norm;

/* Fits mean/std over rows [begin, end) of features (n, 51). */
void fh_feature_norm_fit(fh_feature_norm *norm, const float *features, size_t begin,
                         size_t end);
/* z-scores n rows in place and clips to +-FH_FEATURE_CLIP. */
void fh_feature_norm_apply(const fh_feature_norm *norm, float *features, size_t n);

/* ---- market: what the environment reads ---- */
typedef struct {
    size_t n;               /* bars in this view */
    const float *features;  /* (n, 51) normalised */
    const float *close;     /* (n) close prices */
    const float *sigma;     /* (n) EWMA volatility of log returns at each bar */
    const int64_t *time;    /* (n) */
    const double *expected_return; /* (n) synthetic only (else NULL): oracle signal */
} fh_market_view;

typedef struct {
    size_t n;           /* bars after the warm-up was dropped */
    size_t n_train;     /* bars [0, n_train) are the training split, the rest test */
    float *features;    /* (n, 51) normalised with norm */
    float *close;       /* (n) */
    float *sigma;       /* (n) */
    int64_t *time;      /* (n) */
    double *expected_return; /* (n) synthetic only (else NULL): oracle signal */
    fh_feature_norm norm;
    double interval_seconds;
} fh_market;

/* Builds a market from bars: features, sigma, drops FH_FEATURE_WARMUP rows, splits at
 * train_fraction of the remaining rows (by time), fits the normalisation on the
 * training rows (or uses *norm when norm != NULL, as evaluation does with a
 * checkpoint's statistics), applies it and clips. expected_return may be NULL. */
fh_status fh_market_build(const fh_bars *bars, const double *expected_return,
                          double train_fraction, const fh_feature_norm *norm,
                          fh_market *market, fh_error *err);
void fh_market_free(fh_market *market);

typedef enum { FH_SPLIT_TRAIN = 0, FH_SPLIT_TEST = 1, FH_SPLIT_ALL = 2 } fh_split;
fh_market_view fh_market_view_of(const fh_market *market, fh_split split);

#endif
