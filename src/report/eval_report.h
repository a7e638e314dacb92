/* eval_report.h — the evaluation table printed by `foxhunt eval` and at the end of
 * `foxhunt train`: every policy of evaluate.h on one split, as a table and as JSON. */
#ifndef FOXHUNT_EVAL_REPORT_H
#define FOXHUNT_EVAL_REPORT_H

#include <stdio.h>

#include "foxhunt/baselines.h"
#include "foxhunt/evaluate.h"
#include "foxhunt/run_data.h"
#include "foxhunt/run_dir.h"
#include "foxhunt/train_config.h"

typedef struct {
    int n_policies;
    fh_policy_kind kinds[FH_POLICY_COUNT];
    fh_backtest_metrics metrics[FH_POLICY_COUNT];
    double periods_per_year;
    size_t bars;
    char split[16];             /* train | validation | test | all */
    int in_sample;              /* the split holds training bars (train, all) */
    char first_time[32], last_time[32]; /* the split's first and last bar, UTC */
    int64_t *time;              /* (bars) with paths */
    double *paths;              /* with paths: per policy (4, bars): equity, exposure,
                                   cost, turnover (the last three over bars - 1 steps) */
    double *close;              /* (bars) with paths: the close price (NULL in a stitched
                                   walk-forward path) */
    int *barrier_hits;          /* (n_policies, bars - 1) with paths: the barrier that
                                   closed the position at the end of each step
                                   (evaluate.h's fh_backtest_path), or NULL */
    /* the classical baselines' parameters (baselines.h), chosen on the run's validation
     * split: [kind - FH_POLICY_VOL_TARGET] */
    fh_baseline_choice baselines[FH_BASELINE_COUNT]; /* n_trials 0: none recorded (a
                                                        stitched walk-forward path) */
    size_t validation_bars;     /* the split they were chosen on (0: none, defaults) */
    /* the deployment gate of the model evaluated (train_loop.h's fh_deploy_gate; set by
     * `train` with validation, else gated 0): eval.json's "deployment_gate" */
    int gated, deploy;
    double gate_psr, gate_min_psr;
    char gate_why[320];
} fh_eval_report;

/* The choice of a baseline's parameters (NULL for another kind, or when the report did
 * not backtest it). */
const fh_baseline_choice *fh_eval_report_baseline(const fh_eval_report *r,
                                                  fh_policy_kind kind);

/* Backtests the actor (greedy and sampled) and the baselines on `split`, the classical
 * ones with the parameters chosen on the validation split (fh_baseline_choose); keep_paths:
 * also each policy's path bar by bar (for fh_eval_report_write_returns). */
fh_status fh_eval_report_run(fh_eval_report *r, const fh_mlp *actor,
                             const fh_train_config *cfg, const fh_run_data *data,
                             fh_split split, uint64_t seed, int keep_paths, fh_error *err);
void fh_eval_report_free(fh_eval_report *r);
/* The greedy policy of r (a report of `split` from fh_eval_report_run) replaced by the
 * seed ensemble of actors (evaluate.h's fh_backtest_run_ensemble): its metrics and, with
 * paths, its path; the other policies are left as they were. */
fh_status fh_eval_report_set_greedy_ensemble(fh_eval_report *r, const fh_mlp *const *actors,
                                             int n_actors, const fh_train_config *cfg,
                                             const fh_run_data *data, fh_split split,
                                             uint64_t seed, fh_error *err);
/* A copy of src, paths included (free dst); with greedy_flat its greedy policy stays
 * flat: its metrics and path are flat's (the deployment gate closed: train_loop.h's
 * fh_deploy_gate). */
fh_status fh_eval_report_copy(const fh_eval_report *src, int greedy_flat, fh_eval_report *dst,
                              fh_error *err);
/* The one-line verdict of the greedy policy against buy-and-hold (docs/EVALUATION.md):
 * better or worse by more than two standard errors of the Sharpe difference, else not
 * distinguishable; prefixed IN-SAMPLE where the split is. */
void fh_eval_report_verdict(const fh_eval_report *r, char *out, size_t size);
/* Per bar, time and the close price (when the report has it), then per policy equity,
 * return, exposure, cost (a share of the equity) and turnover, as CSV (atomically: PATH.tmp then rename); needs keep_paths. */
fh_status fh_eval_report_write_returns(const fh_eval_report *r, const char *path,
                                       fh_error *err);
/* The same table as text (*csv malloc'd; the caller frees it). */
fh_status fh_eval_report_returns_csv(const fh_eval_report *r, char **csv, fh_error *err);
void fh_eval_report_print(const fh_eval_report *r, const char *title, FILE *out);
/* The report's headline numbers (the greedy policy's Sharpe, PSR(0), return, drawdown,
 * costs; buy-and-hold's Sharpe and return) into the run's TensorBoard event file under
 * group/ at step (rl/run_tensorboard.h; nothing when it is not open). */
void fh_eval_report_log_tensorboard(const fh_eval_report *r, fh_run_dir *rd, int64_t step,
                                    const char *group);
/* text into PATH.tmp, then renamed over PATH: a failure never leaves a partial file
 * under the real name (the report's files, walkforward.json). */
fh_status fh_write_text_atomically(const char *path, const char *text, fh_error *err);
/* A baseline's choice as eval.json writes it under "baselines": how it was chosen, the
 * parameters, the grid with each setting's validation Sharpe; with m (a backtest of the
 * chosen setting, else NULL) its PSR(0) and deflated Sharpe. */
struct cJSON;
struct cJSON *fh_baseline_choice_json(const fh_baseline_choice *c,
                                      const fh_backtest_metrics *m, double periods_per_year);
/* Writes the report as JSON (atomically: PATH.tmp then rename); with paths, each
 * policy's risk metrics (risk_metrics.h) against buy-and-hold too. */
fh_status fh_eval_report_write_json(const fh_eval_report *r, const char *source,
                                    const char *path, fh_error *err);

#endif
