/* run_data.h — the market a run trains or evaluates on: a CSV (--data) or the
 * synthetic market, built into features, splits and normalisation in one call, so
 * train, eval, collect and bench all see the same data for the same config. */
#ifndef FOXHUNT_RUN_DATA_H
#define FOXHUNT_RUN_DATA_H

#include "foxhunt/data.h"
#include "foxhunt/error.h"
#include "foxhunt/train_config.h"

typedef struct {
    fh_bars bars;
    double *expected_return; /* (bars.n) synthetic only, else NULL */
    fh_market market;
    int synthetic;
    char description[448];   /* "synthetic market (seed 42, 20000 bars)" or the path */
} fh_run_data;

/* Refuses bars with a one-bar move beyond cfg->max_bar_move_sigmas (fh_bars_check_moves,
 * 0: no check), the CSV's and the synthetic market's alike.
 * norm: the training statistics to apply (from a checkpoint), or NULL to fit them on
 * the training split. */
fh_status fh_run_data_load(fh_run_data *d, const fh_train_config *cfg,
                           const fh_feature_norm *norm, fh_error *err);
void fh_run_data_free(fh_run_data *d);
/* The training split's view and its environment market; FH_ERR_INPUT under 2 bars. */
fh_status fh_run_data_train_split(const fh_run_data *d, fh_market_view *view,
                                  fh_env_market *market, fh_error *err);
/* What a checkpoint's data identity names as the source: the CSV path, or
 * "synthetic seed=S bars=N". */
void fh_run_data_source(const fh_train_config *cfg, char *out, size_t size);
/* One line naming each split with its bars and dates: "train 69860 bars (first .. last),
 * gap 200, validation 9980 bars (..), gap 200, test 19560 bars (..)". */
void fh_run_data_describe_splits(const fh_run_data *d, char *out, size_t size);

#endif
