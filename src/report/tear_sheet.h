/* tear_sheet.h — `foxhunt eval --report FILE.html`: one self-contained HTML page (no
 * network needed to view it) with the evaluation's tables and verdict, charts drawn by
 * dygraphs (embedded in the page with its licence): equity of every policy against
 * buy-and-hold, drawdown, rolling Sharpe, exposure, the distribution of per-bar returns,
 * the run's training curves; monthly returns as a coloured table; the settings.
 * docs/EVALUATION.md describes every chart. */
#ifndef FOXHUNT_TEAR_SHEET_H
#define FOXHUNT_TEAR_SHEET_H

#include "report/eval_report.h"

typedef struct {
    const char *title;       /* the page's heading */
    const char *source;      /* the checkpoint evaluated */
    const char *data;        /* what it was evaluated on (fh_run_data.description), or NULL */
    const char *metrics_csv; /* the run's metrics.csv, for the training curves, or NULL */
    const char *config_json; /* the resolved configuration, or NULL */
} fh_tear_sheet_info;

/* FH_OK when this binary carries dygraphs (Debian's libjs-dygraphs at configure time);
 * else err says what to install. */
fh_status fh_tear_sheet_available(fh_error *err);

/* Writes the page to path (atomically: PATH.tmp then rename). r needs its paths
 * (fh_eval_report_run with keep_paths). */
fh_status fh_tear_sheet_write(const char *path, const fh_eval_report *r,
                              const fh_tear_sheet_info *info, fh_error *err);

#endif
