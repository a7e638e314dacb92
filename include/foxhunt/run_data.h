/* run_data.h — the market a run trains or evaluates on: a CSV (--data) or the
 * synthetic market, built into features, splits and normalisation in one call, so
 * train, eval, collect and bench all see the same data for the same config.
 *
 * Several assets (issue 34): --data a.csv,b.csv,... loads each CSV as its own market
 * (features, the same split fractions, the normalisation fitted on its own training
 * split only), and the run's market is their training splits laid end to end, one
 * segment each (fh_env_market.segment_ends): episodes start and end inside one asset.
 * That market has no validation or test bars: validation and evaluation go asset by
 * asset (fh_run_data_asset). */
#ifndef FOXHUNT_RUN_DATA_H
#define FOXHUNT_RUN_DATA_H

#include "foxhunt/data.h"
#include "foxhunt/error.h"
#include "foxhunt/checkpoint.h"
#include "foxhunt/train_config.h"

#define FH_MAX_ASSETS 8

typedef struct fh_run_data {
    fh_bars bars;            /* several assets: empty (each asset has its own) */
    double *expected_return; /* (bars.n) synthetic only, else NULL */
    fh_market market;        /* several assets: the training splits end to end, all of it
                                train; norm is the first asset's (what a checkpoint keeps) */
    int synthetic;
    char description[448];   /* "synthetic market (seed 42, 20000 bars)" or the path */
    char path[FH_CONFIG_STRING_MAX]; /* the CSV ("" synthetic): an asset's name */
    int n_assets;            /* 1, or the paths in --data */
    struct fh_run_data *assets; /* (n_assets) when several, each a one-asset run_data */
    int *segment_ends;       /* (n_assets) when several: market's segments */
} fh_run_data;

/* Refuses bars with a one-bar move beyond cfg->max_bar_move_sigmas (fh_bars_check_moves,
 * 0: no check), the CSV's and the synthetic market's alike.
 * norm: the training statistics to apply (from a checkpoint), or NULL to fit them on
 * the training split. Several assets: norm is ignored, each asset's statistics are
 * fitted on its own training split (deterministic: the same as when it was trained). */
fh_status fh_run_data_load(fh_run_data *d, const fh_train_config *cfg,
                           const fh_feature_norm *norm, fh_error *err);
void fh_run_data_free(fh_run_data *d);
/* The training split's view and its environment market; FH_ERR_INPUT under 2 bars. */
fh_status fh_run_data_train_split(const fh_run_data *d, fh_market_view *view,
                                  fh_env_market *market, fh_error *err);
/* Asset k (0 <= k < n_assets) as a one-asset run_data; d itself when there is one. */
const fh_run_data *fh_run_data_asset(const fh_run_data *d, int k);
/* An asset's short name for columns and file names: its CSV's name without the
 * extension, characters other than letters and digits as '_' ("../data/btcusdt_1h.csv"
 * -> "btcusdt_1h"; "synthetic" for the synthetic market). */
void fh_run_data_asset_name(const fh_run_data *asset, char *out, size_t size);
/* The identity a checkpoint keeps: one asset's (fh_data_identity_of), or for several
 * the list of paths as source, their bars summed, the first asset's first time, the
 * latest last time, and a hash over the assets' hashes in order. */
void fh_run_data_identity(const fh_run_data *d, const char *source, fh_data_identity *id);
/* What a checkpoint's data identity names as the source: the CSV path, or
 * "synthetic seed=S bars=N". */
void fh_run_data_source(const fh_train_config *cfg, char *out, size_t size);
/* One line naming each split with its bars and dates: "train 69860 bars (first .. last),
 * gap 200, validation 9980 bars (..), gap 200, test 19560 bars (..)". */
void fh_run_data_describe_splits(const fh_run_data *d, char *out, size_t size);

#endif
