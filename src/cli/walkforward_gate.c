/* walkforward_gate.c — the deployment gate over a walk-forward (issue 34, do no harm;
 * walkforward.h): each fold run's model trades its test segment only when its validation
 * PSR(0) is at least deploy_min_psr (fh_deploy_gate), else the deployed policy stays flat
 * on that segment. Per seed the folds' deployed paths are stitched as the ungated ones
 * are (walkforward_stitch.h); both are reported. */
#include <math.h>
#include <stdlib.h>

#include "cli/walkforward.h"
#include "cli/walkforward_stitch.h"
#include "foxhunt/train_loop.h"

fh_status fh_walkforward_gate(walkforward *w, const fh_train_config *cfg, fh_error *err)
{
    fh_eval_report *column = calloc((size_t)w->folds, sizeof *column);
    if (!column)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
    fh_status st = FH_OK;
    for (int s = 0; st == FH_OK && s < w->seeds; s++) {
        int made = 0;
        for (int k = 0; st == FH_OK && k < w->folds; k++, made++) {
            const int i = k * w->seeds + s;
            char why[320];
            w->deploy[i] = fh_deploy_gate(isfinite(w->validation_sharpe[i]),
                                          w->validation_psr[i], cfg->deploy_min_psr, why,
                                          sizeof why);
            st = fh_eval_report_copy(&w->reports[i], !w->deploy[i], &column[k], err);
        }
        if (st == FH_OK)
            st = fh_walkforward_stitch(column, w->folds, &w->deployed[s], err);
        for (int k = 0; k < made; k++)
            fh_eval_report_free(&column[k]);
    }
    free(column);
    return st;
}
