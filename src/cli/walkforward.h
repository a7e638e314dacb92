/* walkforward.h — `foxhunt walkforward`'s state, shared by its files: cmd_walkforward.c
 * (the folds' runs, kept or trained), walkforward_output.c (the tables, JSON, returns and
 * tear sheets) and walkforward_gate.c (the deployment gate's stitched path). */
#ifndef FOXHUNT_CLI_WALKFORWARD_H
#define FOXHUNT_CLI_WALKFORWARD_H

#include <stdio.h>

#include "foxhunt/run_dir.h"
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
    char (*model_path)[FH_RUN_DIR_PATH_MAX]; /* (folds, seeds) the chosen model's file */
    /* the seed ensemble (walkforward_ensemble.c): each fold's seeds' chosen models as
     * one greedy policy; has_ensemble 0 with one seed */
    int has_ensemble;
    double *ensemble_validation_sharpe; /* (folds) NaN: no validation split */
    double *ensemble_validation_psr;    /* (folds) */
    int *ensemble_deploy;               /* (folds) */
    fh_eval_report ensemble;            /* stitched, ungated */
    fh_eval_report ensemble_deployed;   /* stitched, gated per fold */
    char data_description[sizeof ((fh_run_data *)0)->description];
    int kept;                  /* runs kept from an earlier, killed walk-forward */
    int argc;                  /* the command line, for each run's record (run_record.h) */
    char **argv;
} walkforward;

/* The metrics of policy kind in r, or NULL. */
const fh_backtest_metrics *fh_wf_policy(const fh_eval_report *r, fh_policy_kind kind);

/* The deployment gate (walkforward_gate.c; issue 34): w->deploy from each run's
 * validation PSR(0) against cfg->deploy_min_psr, and per seed the folds' deployed paths
 * stitched into w->deployed. */
fh_status fh_walkforward_gate(walkforward *w, const fh_train_config *cfg, fh_error *err);

/* The configuration of fold k's run with seed index s (cmd_walkforward.c). */
void fh_wf_fold_config(const fh_train_config *base, int k, int s, fh_train_config *cfg);

/* The seed ensemble (walkforward_ensemble.c; issue 34 item 3): per fold the seeds'
 * chosen models (w->model_path) as one greedy policy (evaluate.h's
 * fh_backtest_run_ensemble), gated on its own validation PSR(0) as a single model is,
 * its test segments stitched ungated and gated. Nothing with one seed. */
fh_status fh_walkforward_ensemble(walkforward *w, const fh_train_config *cfg, fh_error *err);

/* walkforward.md's tables (also printed at the end). */
void fh_walkforward_write_tables(const walkforward *w, const fh_train_config *cfg, FILE *out);
/* returns_seed<s>.csv, eval_seed<s>.json, report_seed<s>.html, walkforward.md and, last
 * (it marks the walk-forward finished), walkforward.json, under cfg->out. */
fh_status fh_walkforward_write_outputs(walkforward *w, const fh_train_config *cfg,
                                       fh_error *err);

#endif
