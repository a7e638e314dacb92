/* walkforward_stitch.c — see walkforward_stitch.h. */
#include "cli/walkforward_stitch.h"

#include <stdlib.h>
#include <string.h>

#define PATH_ARRAYS 4 /* equity, exposure, cost, turnover (eval_report.h) */

static fh_status check_folds(const fh_eval_report *folds, int n_folds, fh_error *err)
{
    if (n_folds < 1)
        return fh_error_set(err, FH_ERR_INPUT, "no folds to stitch");
    for (int k = 0; k < n_folds; k++) {
        const fh_eval_report *f = &folds[k];
        if (!f->paths || !f->time || f->bars < 2)
            return fh_error_set(err, FH_ERR_INPUT, "fold %d has no path to stitch", k + 1);
        if (f->n_policies != folds[0].n_policies ||
            memcmp(f->kinds, folds[0].kinds, sizeof f->kinds) != 0)
            return fh_error_set(err, FH_ERR_INPUT,
                                "fold %d backtested other policies than fold 1", k + 1);
        if (k > 0 && folds[k - 1].time[folds[k - 1].bars - 1] != f->time[0])
            return fh_error_set(err, FH_ERR_INPUT,
                                "fold %d does not start on fold %d's last bar: the folds are "
                                "not consecutive segments of one walk-forward", k + 1, k);
        for (int p = 0; p < f->n_policies; p++) {
            const double *eq = f->paths + (size_t)p * PATH_ARRAYS * f->bars;
            for (size_t j = 0; j < f->bars; j++)
                if (!(eq[j] > 0.0))
                    return fh_error_set(err, FH_ERR_INPUT,
                                        "fold %d, %s: equity %g at bar %zu is not positive",
                                        k + 1, fh_policy_name(f->kinds[p]), eq[j], j);
        }
    }
    return FH_OK;
}

fh_status fh_walkforward_stitch(const fh_eval_report *folds, int n_folds, fh_eval_report *out,
                                fh_error *err)
{
    memset(out, 0, sizeof *out);
    fh_status st = check_folds(folds, n_folds, err);
    if (st != FH_OK)
        return st;
    size_t bars = 1;
    for (int k = 0; k < n_folds; k++)
        bars += folds[k].bars - 1;
    const fh_eval_report *first = &folds[0], *last = &folds[n_folds - 1];
    out->n_policies = first->n_policies;
    memcpy(out->kinds, first->kinds, sizeof out->kinds);
    out->periods_per_year = first->periods_per_year;
    out->bars = bars;
    snprintf(out->split, sizeof out->split, "walk-forward");
    out->in_sample = 0;
    memcpy(out->first_time, first->first_time, sizeof out->first_time);
    memcpy(out->last_time, last->last_time, sizeof out->last_time);
    out->time = malloc(bars * sizeof *out->time);
    out->paths = calloc((size_t)out->n_policies * PATH_ARRAYS * bars, sizeof *out->paths);
    if (!out->time || !out->paths) {
        free(out->time); /* not fh_eval_report_free: the tests link this file alone */
        free(out->paths);
        out->time = NULL;
        out->paths = NULL;
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory for %zu bars", __FILE__,
                            __LINE__, bars);
    }
    size_t t = 0;
    for (int k = 0; k < n_folds; k++)
        for (size_t j = 0; j + 1 < folds[k].bars; j++)
            out->time[t++] = folds[k].time[j];
    out->time[t] = last->time[last->bars - 1];

    for (int p = 0; p < out->n_policies; p++) {
        double *eq = out->paths + (size_t)p * PATH_ARRAYS * bars;
        double *expo = eq + bars, *cost = eq + 2 * bars, *turn = eq + 3 * bars;
        eq[0] = first->paths[(size_t)p * PATH_ARRAYS * first->bars];
        size_t s = 0;
        for (int k = 0; k < n_folds; k++) {
            const size_t n = folds[k].bars;
            const double *feq = folds[k].paths + (size_t)p * PATH_ARRAYS * n;
            const double *fexpo = feq + n, *fcost = feq + 2 * n, *fturn = feq + 3 * n;
            for (size_t j = 0; j + 1 < n; j++, s++) {
                eq[s + 1] = eq[s] * (feq[j + 1] / feq[j]);
                cost[s] = fcost[j] / feq[j] * eq[s];
                expo[s] = fexpo[j];
                turn[s] = fturn[j];
            }
        }
        fh_backtest_metrics_compute(eq, turn, cost, expo, (int)(bars - 1),
                                    out->periods_per_year, &out->metrics[p]);
    }
    return FH_OK;
}
