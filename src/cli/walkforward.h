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
    double *validation_psr;    /* (folds, seeds) the chosen model's (NaN: unknown) */
    int *deploy;               /* (folds, seeds) 1: the gate let the model trade */
    fh_eval_report *deployed;  /* (seeds) the gated folds stitched: greedy is the
                                  deployed policy (flat on a closed fold) */
    char data_description[sizeof ((fh_run_data *)0)->description];
    int kept;                  /* runs kept from an earlier, killed walk-forward */
} walkforward;

/* The metrics of policy kind in r, or NULL. */
const fh_backtest_metrics *fh_wf_policy(const fh_eval_report *r, fh_policy_kind kind);

/* The deployment gate (walkforward_gate.c; issue 34): w->deploy from each run's
 * validation PSR(0) against cfg->deploy_min_psr, and per seed the folds' deployed paths
 * stitched into w->deployed. */
fh_status fh_walkforward_gate(walkforward *w, const fh_train_config *cfg, fh_error *err);

/* walkforward.md's tables (also printed at the end). */
void fh_walkforward_write_tables(const walkforward *w, const fh_train_config *cfg, FILE *out);
/* returns_seed<s>.csv, eval_seed<s>.json, report_seed<s>.html, walkforward.md and, last
 * (it marks the walk-forward finished), walkforward.json, under cfg->out. */
fh_status fh_walkforward_write_outputs(walkforward *w, const fh_train_config *cfg,
                                       fh_error *err);

#endif
