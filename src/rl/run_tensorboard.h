/* run_tensorboard.h — what a run writes to its TensorBoard event file (issue 36;
 * common's tfevents.h does the encoding), beside metrics.csv, which stays the record: a
 * failure to write it is a warning (fh_run_tensorboard_warning), never a failed run.
 *
 * Tags, in CleanRL's groups, each at step = the run's global environment steps:
 *   charts/<column>      every common metrics.csv column, each iteration
 *   losses/<column>      the learner's own columns (learner.h), each iteration
 *   validation/<name>    each validation backtest (cfg.eval_every): sharpe, sharpe_se,
 *                        psr, cumulative_return, max_drawdown, time_in_market, turnover,
 *                        best_sharpe
 *   eval/<name>          the final test-split evaluation of the chosen model: sharpe,
 *                        sharpe_se, psr, cumulative_return, annualised_return,
 *                        max_drawdown, costs, time_in_market, buy_and_hold_sharpe,
 *                        buy_and_hold_return (eval_<asset>/ for each asset of several)
 *   config               text: the resolved configuration (config.json), once
 * A value that is not finite (an empty csv cell) is left out. */
#ifndef FOXHUNT_RL_RUN_TENSORBOARD_H
#define FOXHUNT_RL_RUN_TENSORBOARD_H

#include "foxhunt/metrics.h"
#include "foxhunt/run_dir.h"

/* With cfg->tensorboard, creates the event file in cfg->out (an open run directory)
 * and writes its config.json as the config text (the file as written: the record of
 * the run included); a resumed run (global_step > 0, the checkpoint's) first marks its
 * restart after global_step, so TensorBoard drops the later steps an earlier file
 * holds. A failure leaves no file and is the warning fh_run_tensorboard_warning gives. */
void fh_run_tensorboard_open(fh_run_dir *rd, const fh_train_config *cfg, int64_t global_step);
/* One iteration: its metrics row (the common columns, then rd's learner's own) and,
 * when validation is not NULL, that validation's numbers; then written to the file. */
void fh_run_tensorboard_iteration(fh_run_dir *rd, const fh_iteration_metrics *m,
                                  const fh_backtest_metrics *validation, double validation_psr,
                                  double best_sharpe);
/* The final evaluation's headline numbers under group/ ("eval", "eval_BTCUSDT", ...):
 * the model's backtest model (psr its PSR(0)) and, when not NULL, buy-and-hold's; then
 * written to the file. */
void fh_run_tensorboard_eval(fh_run_dir *rd, int64_t step, const char *group,
                             const fh_backtest_metrics *model, double psr,
                             const fh_backtest_metrics *buy_and_hold);
/* Why the event file stopped being written, or NULL while all is well. */
const char *fh_run_tensorboard_warning(const fh_run_dir *rd);

#endif
