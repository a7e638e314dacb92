/* walkforward_stitch.h — the walk-forward folds' test backtests joined into one
 * out-of-sample path per policy (docs/EVALUATION.md, "Walk-forward"). */
#ifndef FOXHUNT_WALKFORWARD_STITCH_H
#define FOXHUNT_WALKFORWARD_STITCH_H

#include "report/eval_report.h"

/* folds: the folds' test reports in time order, each with paths (keep_paths), the same
 * policies in the same order, fold k's last bar the first bar of fold k+1 (data.h's
 * layout). out: one report over every step, the policies' equity compounded across the
 * folds from the first fold's initial equity (each fold starts flat: a position held
 * at a fold's end is closed there, as its backtest ended), costs kept as the same share
 * of equity, exposure and turnover as they were; metrics recomputed over the whole
 * path. Frees nothing of folds; free out with fh_eval_report_free. */
fh_status fh_walkforward_stitch(const fh_eval_report *folds, int n_folds, fh_eval_report *out,
                                fh_error *err);

#endif
