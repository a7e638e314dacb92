/* capi_eval.c — `foxhunt eval` from the C API (capi.h): the same steps as
 * src/cli/cmd_eval.c (the checkpoint's configuration, its policy network and
 * normalisation, the data rebuilt, fh_eval_report_run over every policy with the paths
 * kept), the report held by the handle for a binding to read column by column. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capi/capi_internal.h"
#include "foxhunt/checkpoint.h"
#include "foxhunt/learner.h"
#include "foxhunt/trainer.h"
#include "report/eval_report.h"

#define PATH_ARRAYS 4 /* eval_report.c's per-policy layout: equity, exposure, cost, turnover */

struct fh_api_eval {
    fh_api_object obj;
    fh_eval_report report;
    char verdict[512];
};

/* eval.json's keys (eval_report.c), then the return distribution's shape */
typedef struct {
    const char *name;
    size_t offset;
    int is_int;
} metric_field;

#define DBL(f) {#f, offsetof(fh_backtest_metrics, f), 0}
#define INT(f) {#f, offsetof(fh_backtest_metrics, f), 1}
static const metric_field k_metrics[] = {
    DBL(cumulative_return), DBL(annualised_return), DBL(annualised_volatility), DBL(sharpe),
    DBL(sortino), DBL(calmar), DBL(max_drawdown), INT(max_drawdown_duration), DBL(turnover),
    DBL(turnover_per_year), INT(trades), DBL(hit_rate), DBL(costs), DBL(final_equity),
    INT(steps), DBL(sharpe_se), DBL(time_in_market), DBL(mean_exposure),
    DBL(mean_abs_exposure), INT(round_trips), DBL(round_trip_hit_rate), DBL(skewness),
    DBL(kurtosis), DBL(max_drawdown_days)};
#undef DBL
#undef INT
#define N_METRICS ((int)(sizeof k_metrics / sizeof k_metrics[0]))

void fh_api_eval_free(fh_api_eval *ev)
{
    if (!capi_object_of(ev, CAPI_EVAL))
        return;
    capi_object_kill(&ev->obj);
    fh_eval_report_free(&ev->report);
    free(ev);
}

static fh_status run(fh_api_eval *ev, const char *checkpoint, const char *data_csv,
                     fh_split split, uint64_t seed, double periods_per_year)
{
    fh_error *err = &ev->obj.err;
    fh_train_config cfg;
    fh_train_config_default(&cfg);
    fh_status st = fh_checkpoint_read_config(checkpoint, &cfg, err);
    if (st != FH_OK)
        return st;
    if (data_csv)
        snprintf(cfg.data, sizeof cfg.data, "%s", data_csv);
    if (periods_per_year > 0)
        cfg.periods_per_year = periods_per_year;
    /* the policy network the checkpoint's learner trained (learner.h), as cmd_eval.c */
    fh_mlp actor;
    fh_feature_norm norm;
    fh_run_data rd;
    memset(&rd, 0, sizeof rd);
    if ((st = fh_learner_policy_load(checkpoint, cfg.algo, &actor, &norm, NULL, NULL, err)) == FH_OK &&
        (st = fh_run_data_load(&rd, &cfg, &norm, err)) == FH_OK)
        st = fh_eval_report_run(&ev->report, &actor, &cfg, &rd, split, seed, 1, err);
    if (st == FH_OK)
        fh_eval_report_verdict(&ev->report, ev->verdict, sizeof ev->verdict);
    fh_run_data_free(&rd);
    fh_mlp_free(&actor);
    return st;
}

fh_api_eval *fh_api_eval_run(const char *checkpoint, const char *data_csv, const char *split,
                             uint64_t seed, double periods_per_year, char *err, size_t err_cap)
{
    if (!checkpoint)
        return capi_fail_out(err, err_cap, "eval: the checkpoint path is NULL");
    fh_split s;
    if (!capi_split_parse(split, &s))
        return capi_fail_out(err, err_cap, "eval: split \"%.64s\": use test, validation, "
                             "train or all", split ? split : "(NULL)");
    /* NaN compares false with everything: "<= 0 takes the checkpoint's" would take it
     * for a NaN without a word, and infinity would annualise every figure to nonsense */
    const fh_config_field *ppy = capi_config_field("periods_per_year");
    if (!isfinite(periods_per_year) || periods_per_year > ppy->max)
        return capi_fail_out(err, err_cap, "eval: periods_per_year = %g; give the bars per "
                             "year (a finite number up to %g), or 0 for the checkpoint's "
                             "setting", periods_per_year, ppy->max);
    fh_api_eval *ev = calloc(1, sizeof *ev);
    if (!ev)
        return capi_fail_out(err, err_cap, "eval: out of memory");
    capi_object_init(&ev->obj, CAPI_EVAL);
    if (run(ev, checkpoint, data_csv, s, seed, periods_per_year) != FH_OK) {
        capi_error_out(err, err_cap, &ev->obj.err);
        fh_api_eval_free(ev);
        return NULL;
    }
    return ev;
}

int fh_api_eval_policy_count(const fh_api_eval *ev)
{
    const fh_api_eval *h = (const fh_api_eval *)capi_object_of(ev, CAPI_EVAL);
    return h ? h->report.n_policies : -1;
}

const char *fh_api_eval_policy_name(const fh_api_eval *ev, int policy)
{
    const fh_api_eval *h = (const fh_api_eval *)capi_object_of(ev, CAPI_EVAL);
    if (!h || policy < 0 || policy >= h->report.n_policies)
        return NULL;
    return fh_policy_name(h->report.kinds[policy]);
}

int64_t fh_api_eval_bar_count(const fh_api_eval *ev)
{
    const fh_api_eval *h = (const fh_api_eval *)capi_object_of(ev, CAPI_EVAL);
    return h ? (int64_t)h->report.bars : -1;
}

int fh_api_eval_time(fh_api_eval *eval, int64_t *time)
{
    CAPI_ENTER(fh_api_eval, ev, eval, CAPI_EVAL);
    if (!time)
        return fh_error_set(&ev->obj.err, FH_ERR_INPUT, "eval time: the output is NULL");
    memcpy(time, ev->report.time, ev->report.bars * sizeof *time);
    return FH_API_OK;
}

int fh_api_eval_close(fh_api_eval *eval, double *close)
{
    CAPI_ENTER(fh_api_eval, ev, eval, CAPI_EVAL);
    if (!close)
        return fh_error_set(&ev->obj.err, FH_ERR_INPUT, "eval close: the output is NULL");
    memcpy(close, ev->report.close, ev->report.bars * sizeof *close);
    return FH_API_OK;
}

static fh_status policy_ok(fh_api_eval *ev, int policy)
{
    if (policy < 0 || policy >= ev->report.n_policies)
        return fh_error_set(&ev->obj.err, FH_ERR_INPUT, "policy %d is outside [0, %d)",
                            policy, ev->report.n_policies);
    return FH_OK;
}

int fh_api_eval_path(fh_api_eval *eval, int policy, double *equity, double *exposure,
                     double *cost, double *turnover)
{
    CAPI_ENTER(fh_api_eval, ev, eval, CAPI_EVAL);
    if (policy_ok(ev, policy) != FH_OK)
        return FH_API_INPUT;
    size_t n = ev->report.bars;
    const double *base = ev->report.paths + (size_t)policy * PATH_ARRAYS * n;
    double *out[PATH_ARRAYS] = {equity, exposure, cost, turnover};
    for (int k = 0; k < PATH_ARRAYS; k++)
        if (out[k])
            memcpy(out[k], base + (size_t)k * n, (k == 0 ? n : n - 1) * sizeof(double));
    return FH_API_OK;
}

int fh_api_eval_metric_count(void)
{
    return N_METRICS;
}

const char *fh_api_eval_metric_name(int i)
{
    return i >= 0 && i < N_METRICS ? k_metrics[i].name : NULL;
}

int fh_api_eval_metric(fh_api_eval *eval, int policy, const char *name, double *value)
{
    CAPI_ENTER(fh_api_eval, ev, eval, CAPI_EVAL);
    if (policy_ok(ev, policy) != FH_OK)
        return FH_API_INPUT;
    if (!value)
        return fh_error_set(&ev->obj.err, FH_ERR_INPUT, "metric: the output is NULL");
    const unsigned char *m = (const unsigned char *)&ev->report.metrics[policy];
    for (int i = 0; name && i < N_METRICS; i++) {
        if (strcmp(k_metrics[i].name, name) != 0)
            continue;
        if (k_metrics[i].is_int) {
            int v;
            memcpy(&v, m + k_metrics[i].offset, sizeof v);
            *value = v;
        } else {
            memcpy(value, m + k_metrics[i].offset, sizeof *value);
        }
        return FH_API_OK;
    }
    return fh_error_set(&ev->obj.err, FH_ERR_INPUT, "unknown metric \"%.64s\" "
                        "(fh_api_eval_metric_name lists them)", name ? name : "(NULL)");
}

const char *fh_api_eval_split(const fh_api_eval *ev)
{
    const fh_api_eval *h = (const fh_api_eval *)capi_object_of(ev, CAPI_EVAL);
    return h ? h->report.split : NULL;
}

double fh_api_eval_periods_per_year(const fh_api_eval *ev)
{
    const fh_api_eval *h = (const fh_api_eval *)capi_object_of(ev, CAPI_EVAL);
    return h ? h->report.periods_per_year : -1.0;
}

int fh_api_eval_in_sample(const fh_api_eval *ev)
{
    const fh_api_eval *h = (const fh_api_eval *)capi_object_of(ev, CAPI_EVAL);
    return h ? h->report.in_sample : -1;
}

const char *fh_api_eval_verdict(const fh_api_eval *ev)
{
    const fh_api_eval *h = (const fh_api_eval *)capi_object_of(ev, CAPI_EVAL);
    return h ? h->verdict : NULL;
}
