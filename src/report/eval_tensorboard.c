/* eval_tensorboard.c — an evaluation's headline numbers into the run's TensorBoard event
 * file (eval_report.h, fh_eval_report_log_tensorboard; rl/run_tensorboard.h). */
#include "report/eval_report.h"
#include "rl/run_tensorboard.h"

void fh_eval_report_log_tensorboard(const fh_eval_report *r, fh_run_dir *rd, int64_t step,
                                    const char *group)
{
    const fh_backtest_metrics *model = NULL, *buy_and_hold = NULL;
    for (int i = 0; i < r->n_policies; i++) {
        if (r->kinds[i] == FH_POLICY_GREEDY)
            model = &r->metrics[i];
        else if (r->kinds[i] == FH_POLICY_BUY_AND_HOLD)
            buy_and_hold = &r->metrics[i];
    }
    if (model)
        fh_run_tensorboard_eval(rd, step, group, model,
                                fh_backtest_psr(model, r->periods_per_year), buy_and_hold);
}
