/* walkforward.h — `foxhunt walkforward`'s state, shared by its files: cmd_walkforward.c
 * (the folds' runs, kept or trained), walkforward_output.c (the tables, JSON, returns and
 * tear sheets) and walkforward_gate.c (the deployment gate's stitched path). */
#ifndef FOXHUNT_CLI_WALKFORWARD_H
#define FOXHUNT_CLI_WALKFORWARD_H

#include <stdio.h>

#include "report/eval_report.h"

typedef struct {
    int folds, seeds;
    fh_eval_report *reports;  /* (folds, seeds) */
    fh_split_bounds *bounds;  /* (folds) */
    char (*split_text)[1024]; /* (folds) each fold's splits with dates */
    int64_t *chosen_iteration; /* (folds, seeds): 0 = the last iteration's model */
    double *validation_sharpe; /* (folds, seeds) */
    double *train_seconds;     /* (folds, seeds) */
    fh_eval_report *stitched;  /* (seeds) */
    char data_description[sizeof ((fh_run_data *)0)->description];
    int kept;                  /* runs kept from an earlier, killed walk-forward */
} walkforward;

/* The metrics of policy kind in r, or NULL. */
const fh_backtest_metrics *fh_wf_policy(const fh_eval_report *r, fh_policy_kind kind);

/* walkforward.md's tables (also printed at the end). */
void fh_walkforward_write_tables(const walkforward *w, const fh_train_config *cfg, FILE *out);
/* returns_seed<s>.csv, eval_seed<s>.json, report_seed<s>.html, walkforward.md and, last
 * (it marks the walk-forward finished), walkforward.json, under cfg->out. */
fh_status fh_walkforward_write_outputs(walkforward *w, const fh_train_config *cfg,
                                       fh_error *err);

#endif
