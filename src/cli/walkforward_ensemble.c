/* walkforward_ensemble.c — the seed ensemble over a walk-forward (issue 34 item 3;
 * walkforward.h): in each fold the S seeds' chosen models trade as one greedy policy,
 * each network run on the ensemble's own state, their actions averaged into one
 * (evaluate.h's fh_ensemble_action). It is a policy a user can deploy: the S files. It
 * is gated as a single model is, on its own backtest of the fold's validation split
 * (PSR(0) against deploy_min_psr), and its test segments are stitched ungated and gated
 * as the seeds' are (walkforward_gate.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/walkforward.h"
#include "cli/walkforward_stitch.h"
#include "foxhunt/learner.h"
#include "foxhunt/train_loop.h"

/* Fold k: the ensemble's validation backtest and gate, and its test report (seed 1's
 * report with the greedy policy replaced) into *test and, gated, *gated. */
static fh_status fold_ensemble(walkforward *w, const fh_train_config *base, int k,
                               fh_eval_report *test, fh_eval_report *gated, fh_error *err)
{
    fh_train_config cfg;
    fh_wf_fold_config(base, k, 0, &cfg);
    fh_mlp nets[FH_ENSEMBLE_MAX];
    const fh_mlp *set[FH_ENSEMBLE_MAX];
    memset(nets, 0, sizeof nets);
    fh_feature_norm norm;
    fh_run_data data;
    memset(&data, 0, sizeof data);
    fh_status st = FH_OK;
    int loaded = 0;
    for (; st == FH_OK && loaded < w->seeds; loaded++) {
        /* every seed's normalisation is the fold's training split's: the last one read
         * is used */
        st = fh_learner_policy_load(w->model_path[k * w->seeds + loaded], cfg.algo,
                                    &nets[loaded], &norm, NULL, NULL, err);
        set[loaded] = &nets[loaded];
    }
    if (st == FH_OK)
        st = fh_run_data_load(&data, &cfg, &norm, err);
    const fh_eval_report *r0 = &w->reports[k * w->seeds];
    double ppy = r0->periods_per_year;
    fh_market_view validation = fh_market_view_of(&data.market, FH_SPLIT_VALIDATION);
    w->ensemble_validation_sharpe[k] = NAN;
    w->ensemble_validation_psr[k] = NAN;
    if (st == FH_OK && validation.n >= 2) {
        fh_backtest_metrics vm;
        st = fh_backtest_run_ensemble(&vm, set, w->seeds, &cfg.env, &validation, ppy,
                                      cfg.seed, NULL, err);
        w->ensemble_validation_sharpe[k] = vm.sharpe;
        w->ensemble_validation_psr[k] = fh_backtest_psr(&vm, ppy);
    }
    char why[320];
    w->ensemble_deploy[k] = fh_deploy_gate(isfinite(w->ensemble_validation_sharpe[k]),
                                           w->ensemble_validation_psr[k],
                                           cfg.deploy_min_psr, why, sizeof why);
    if (st == FH_OK)
        st = fh_eval_report_copy(r0, 0, test, err);
    if (st == FH_OK)
        st = fh_eval_report_set_greedy_ensemble(test, set, w->seeds, &cfg, &data,
                                                FH_SPLIT_TEST, cfg.seed, err);
    if (st == FH_OK)
        st = fh_eval_report_copy(test, !w->ensemble_deploy[k], gated, err);
    if (st != FH_OK)
        fh_error_prefix(err, "the seed ensemble of fold %d: ", k + 1);
    for (int i = 0; i < loaded; i++)
        fh_mlp_free(&nets[i]);
    fh_run_data_free(&data);
    return st;
}

fh_status fh_walkforward_ensemble(walkforward *w, const fh_train_config *cfg, fh_error *err)
{
    w->has_ensemble = 0;
    if (w->seeds < 2)
        return FH_OK;
    if (w->seeds > FH_ENSEMBLE_MAX) {
        printf("note: no seed ensemble: %d seeds, the ensemble takes at most %d\n", w->seeds,
               FH_ENSEMBLE_MAX);
        return FH_OK;
    }
    fh_eval_report *test = calloc((size_t)w->folds, sizeof *test);
    fh_eval_report *gated = calloc((size_t)w->folds, sizeof *gated);
    fh_status st = test && gated ? FH_OK
                                 : fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory",
                                                __FILE__, __LINE__);
    for (int k = 0; st == FH_OK && k < w->folds; k++)
        st = fold_ensemble(w, cfg, k, &test[k], &gated[k], err);
    if (st == FH_OK)
        st = fh_walkforward_stitch(test, w->folds, &w->ensemble, err);
    if (st == FH_OK)
        st = fh_walkforward_stitch(gated, w->folds, &w->ensemble_deployed, err);
    w->has_ensemble = st == FH_OK;
    for (int k = 0; k < w->folds && test && gated; k++) {
        fh_eval_report_free(&test[k]);
        fh_eval_report_free(&gated[k]);
    }
    free(test);
    free(gated);
    return st;
}
