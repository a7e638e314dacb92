/* eval_report.h — the evaluation table printed by `foxhunt eval` and at the end of
 * `foxhunt train`: every policy of evaluate.h on one split, as a table and as JSON. */
#ifndef FOXHUNT_EVAL_REPORT_H
#define FOXHUNT_EVAL_REPORT_H

#include <stdio.h>

#include "foxhunt/evaluate.h"
#include "foxhunt/run_data.h"
#include "foxhunt/train_config.h"

typedef struct {
    int n_policies;
    fh_policy_kind kinds[FH_POLICY_COUNT];
    fh_backtest_metrics metrics[FH_POLICY_COUNT];
    double periods_per_year;
    size_t bars;
    char split[8];
} fh_eval_report;

/* Backtests the actor (greedy and sampled) and the baselines on `split`. */
fh_status fh_eval_report_run(fh_eval_report *r, const fh_mlp *actor,
                             const fh_train_config *cfg, const fh_run_data *data,
                             fh_split split, uint64_t seed, fh_error *err);
void fh_eval_report_print(const fh_eval_report *r, const char *title, FILE *out);
/* Writes the report as JSON (atomically: PATH.tmp then rename). */
fh_status fh_eval_report_write_json(const fh_eval_report *r, const char *source,
                                    const char *path, fh_error *err);

#endif
