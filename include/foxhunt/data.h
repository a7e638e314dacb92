/* data.h — market data: OHLCV bars, the synthetic market, the 51 causal features,
 * normalisation and time-ordered splits (SPEC §2; docs/FEATURES.md).
 *
 * Flow: bars (CSV or synthetic) -> fh_market_build (features, sigma, warm-up dropped,
 * train/validation/test splits with gaps, z-score fitted on train, clip +-5) ->
 * fh_market_view per split, which is all the environment reads. */
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
    size_t *line;      /* (n) the bar's line in its CSV file (1-based); NULL when the bars
                          did not come from a file (synthetic, or built by hand) */
    int reversed;      /* 1 when the file was in descending order and was reversed */
    int headerless_klines; /* 1 when the file had no header row and was read as exchange
                              klines (open time, open, high, low, close, volume, ...) */
} fh_bars;

/* Minimum number of bars a market needs: the feature warm-up plus room for episodes. */
#define FH_MIN_BARS 300

/* Longest CSV field (after trimming spaces and quotes) the loader reads; a longer one
 * is an error, never truncated (a 100,000-digit price would otherwise parse as its
 * first digits). */
#define FH_CSV_FIELD_MAX 127

/* Loads a Yahoo-style or kline-style CSV (SPEC §2), or an exchange kline dump with no
 * header row (six or more numeric fields: open time in Unix milliseconds or
 * microseconds, open, high, low, close, volume, ...; bars->headerless_klines). On error returns FH_ERR_INPUT with
 * "FILE:LINE:COLUMN: what is wrong; what to do" and leaves *bars empty. Refused: a path
 * that is not a regular file (a FIFO, a directory, a device: before reading from it),
 * a field longer than FH_CSV_FIELD_MAX, a value that is not a finite decimal number, a
 * price that is not > 0 or does not fit a 32-bit float (the market stores prices as
 * float: [FLT_MIN, FLT_MAX], 1.2e-38 .. 3.4e38), a negative volume, high < low, an open
 * or close outside [low, high], duplicate or unordered times. */
fh_status fh_bars_load_csv(const char *path, fh_bars *bars, fh_error *err);
fh_status fh_bars_alloc(fh_bars *bars, size_t n, fh_error *err);
void fh_bars_free(fh_bars *bars);
/* ---- plausibility: one-bar moves (docs/FEATURES.md, "Implausible moves") ----
 * The default of the [run] key max_bar_move_sigmas. The largest move in the real data
 * foxhunt was checked on is 37.9 sigmas (BTC/USDT hourly, 2023-08-29 14:00, the high);
 * SPY daily 1993-2020 peaks at 11.1; a misplaced decimal point or a 1e6x bad tick
 * measures in the hundreds to thousands. */
#define FH_DEFAULT_MAX_BAR_MOVE_SIGMAS 100.0
/* Refuses (FH_ERR_INPUT) bars whose open, high, low or close lies more than
 * max_sigmas sigmas from the previous bar's close, in log terms: |ln(p_i / close_i-1)|
 * / s_i-1, where s is the EWMA (span FH_SIGMA_SPAN) of squared close-to-close log
 * returns, started at and never below a quarter of the whole series' robust scale
 * (1.4826 x the median absolute log return), so that a quiet stretch or the first bars
 * do not make an ordinary move look huge. max_sigmas <= 0: no check. The message names
 * the largest such move (and how many bars exceed): source is the CSV path (with
 * bars->line, "FILE:LINE: ...") or a description ("synthetic market ...: bar I"), and
 * says how to accept such moves. */
fh_status fh_bars_check_moves(const fh_bars *bars, double max_sigmas, const char *source,
                              fh_error *err);
/* The largest one-bar move in sigmas as fh_bars_check_moves measures it (0 when fewer
 * than two bars or nothing moves); *at (may be NULL) gets its bar index. */
double fh_bars_largest_move(const fh_bars *bars, size_t *at);
/* Median spacing of consecutive bars in seconds (86400 daily, 3600 hourly). */
double fh_bars_interval_seconds(const fh_bars *bars);
/* Gaps in time (docs/FEATURES.md, "Gaps"): spacings longer than the series' usual ones.
 * A market that trades on weekends (over 5% of its bars on a UTC Saturday or Sunday, or
 * a span under two weeks: crypto) has a gap wherever a spacing exceeds 1.5x the median,
 * and missing_bars counts the bars that would fill them; a market with regular closures
 * (nights, weekends, holidays) has a gap only where a spacing exceeds its 99th
 * percentile, and missing_bars is 0 (unknown without the exchange's calendar). */
typedef struct {
    size_t count;          /* number of gaps */
    size_t missing_bars;   /* bars a market that never closes would have had in them */
    int64_t threshold;     /* a spacing longer than this (seconds) is a gap */
    int64_t longest;       /* the longest spacing (seconds), 0 without gaps */
    size_t longest_after;  /* index of the bar that ends the longest gap */
    int closes;            /* 1: the market has regular closures */
} fh_bar_gaps;
fh_bar_gaps fh_bars_gaps(const fh_bars *bars);
/* One line for people: "no gaps", or "12 gaps, 43 bars missing, the longest 9 h from
 * 2023-03-24 12:00" (times UTC). */
void fh_bars_describe_gaps(const fh_bars *bars, char *out, size_t cap);

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
    size_t history;         /* bars of the market before this view (earlier splits, gaps):
                               close[-history .. -1] may be read by a causal look-back (the
                               classical baselines, baselines.h); 0 for a view made by hand */
    int n_segments;         /* several assets' training splits end to end (run_data.h):
                               segment_ends (n_segments) as fh_env_market's; 0: one */
    const int *segment_ends;
} fh_market_view;

/* ---- splits: where training, validation and test lie in time (docs/EVALUATION.md) ----
 * Over the n bars left after the warm-up: train, a gap, validation, a gap, test (no
 * validation: train, a gap, test). The fractions are of the bars left once the gaps are
 * taken out; test is the rest. A gap of at least FH_FEATURE_WARMUP bars keeps every
 * feature window of a later split off the earlier split's bars.
 * Walk-forward (folds K >= 2): the test part of that layout is cut into K consecutive
 * segments; fold k tests on segment k and trains (and validates) on what lies before it,
 * the gaps kept: an expanding window starts at bar 0, a rolling one keeps the first
 * fold's training length. Segment k ends one bar into segment k+1 (that bar only marks
 * the last position to market), so the K test paths stitch into one out-of-sample path
 * that covers every price move of the test part. */
typedef enum { FH_WINDOW_EXPANDING = 0, FH_WINDOW_ROLLING = 1 } fh_window_kind;

typedef struct {
    double train_fraction;      /* (0, 1) */
    double validation_fraction; /* [0, 1); 0: no validation split */
    size_t gap;                 /* bars dropped between consecutive splits */
    int folds;                  /* walk-forward folds; 0 or 1: one test split */
    int fold;                   /* 0 .. folds-1 */
    fh_window_kind window;
} fh_split_spec;

typedef struct {
    size_t train_begin, train_end; /* [begin, end) in the bars after the warm-up */
    size_t val_begin, val_end;     /* empty (begin == end) without validation */
    size_t test_begin, test_end;
} fh_split_bounds;

/* train_fraction, no validation, no gap, one fold: unit tests and `foxhunt features`. */
fh_split_spec fh_split_spec_simple(double train_fraction);
/* The bounds of spec->fold over n bars; FH_ERR_INPUT naming what does not fit (too few
 * bars for the gaps, an empty split, folds shorter than 2 bars) and what to change. */
fh_status fh_split_bounds_make(size_t n, const fh_split_spec *spec, fh_split_bounds *b,
                               fh_error *err);

typedef struct {
    size_t n;           /* bars after the warm-up was dropped */
    fh_split_bounds split;
    float *features;    /* (n, 51) normalised with norm */
    float *close;       /* (n) */
    float *sigma;       /* (n) */
    int64_t *time;      /* (n) */
    double *expected_return; /* (n) synthetic only (else NULL): oracle signal */
    fh_feature_norm norm;
    double interval_seconds;
} fh_market;

/* Builds a market from bars: features, sigma, drops FH_FEATURE_WARMUP rows, places the
 * splits (fh_split_bounds_make), fits the normalisation on the training rows (or uses
 * *norm when norm != NULL, as evaluation does with a checkpoint's statistics), applies
 * it and clips. expected_return may be NULL. */
fh_status fh_market_build(const fh_bars *bars, const double *expected_return,
                          const fh_split_spec *split, const fh_feature_norm *norm,
                          fh_market *market, fh_error *err);
void fh_market_free(fh_market *market);

typedef enum {
    FH_SPLIT_TRAIN = 0,
    FH_SPLIT_TEST = 1,
    FH_SPLIT_ALL = 2,
    FH_SPLIT_VALIDATION = 3
} fh_split;
/* "train", "validation", "test", "all". */
const char *fh_split_name(fh_split split);
/* The split's bars (n 0 for an absent validation split). */
fh_market_view fh_market_view_of(const fh_market *market, fh_split split);

#endif
