/* eval_report.c — see eval_report.h. */
#include "report/eval_report.h"
#include "foxhunt/files.h"
#include "foxhunt/format.h"
#include "report/eval_columns.h"
#include "report/risk_metrics.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PATH_ARRAYS 4 /* equity, exposure, cost, turnover */

void fh_eval_report_free(fh_eval_report *r)
{
    free(r->paths);
    free(r->time);
    free(r->close);
    free(r->barrier_hits);
    r->paths = NULL;
    r->time = NULL;
    r->close = NULL;
    r->barrier_hits = NULL;
}

fh_status fh_eval_report_copy(const fh_eval_report *src, int greedy_flat, fh_eval_report *dst,
                              fh_error *err)
{
    *dst = *src;
    dst->paths = NULL;
    dst->time = NULL;
    dst->close = NULL;
    dst->barrier_hits = NULL;
    int greedy = -1, flat = -1;
    for (int i = 0; i < src->n_policies; i++) {
        greedy = src->kinds[i] == FH_POLICY_GREEDY ? i : greedy;
        flat = src->kinds[i] == FH_POLICY_FLAT ? i : flat;
    }
    if (greedy_flat && (greedy < 0 || flat < 0))
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: a report without greedy or flat",
                            __FILE__, __LINE__);
    if (greedy_flat)
        dst->metrics[greedy] = src->metrics[flat];
    if (!src->paths)
        return FH_OK;
    size_t per_policy = PATH_ARRAYS * src->bars;
    dst->paths = malloc((size_t)src->n_policies * per_policy * sizeof(double));
    dst->time = malloc(src->bars * sizeof(int64_t));
    if (!dst->paths || !dst->time) {
        fh_eval_report_free(dst);
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
    }
    memcpy(dst->paths, src->paths, (size_t)src->n_policies * per_policy * sizeof(double));
    memcpy(dst->time, src->time, src->bars * sizeof(int64_t));
    if (greedy_flat)
        memcpy(dst->paths + (size_t)greedy * per_policy, src->paths + (size_t)flat * per_policy,
               per_policy * sizeof(double));
    size_t steps = src->bars - 1;
    if (src->close && !(dst->close = malloc(src->bars * sizeof *dst->close)))
        goto out_of_memory;
    if (src->close)
        memcpy(dst->close, src->close, src->bars * sizeof *dst->close);
    if (src->barrier_hits &&
        !(dst->barrier_hits = malloc((size_t)src->n_policies * steps * sizeof(int))))
        goto out_of_memory;
    if (src->barrier_hits) {
        memcpy(dst->barrier_hits, src->barrier_hits, (size_t)src->n_policies * steps * sizeof(int));
        if (greedy_flat)
            memcpy(dst->barrier_hits + (size_t)greedy * steps,
                   src->barrier_hits + (size_t)flat * steps, steps * sizeof(int));
    }
    return FH_OK;
out_of_memory:
    fh_eval_report_free(dst);
    return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
}

/* The i-th policy's slices of r's paths (r->paths set; r->bars bars). */
static fh_backtest_path policy_path(const fh_eval_report *r, int i)
{
    const size_t n = r->bars;
    double *base = r->paths + (size_t)i * PATH_ARRAYS * n;
    return (fh_backtest_path){
        .equity = base, .exposure = base + n, .cost = base + 2 * n, .turnover = base + 3 * n,
        .barrier_hit = r->barrier_hits ? r->barrier_hits + (size_t)i * (n - 1) : NULL};
}

fh_status fh_eval_report_run(fh_eval_report *r, const fh_mlp *actor,
                             const fh_train_config *cfg, const fh_run_data *data,
                             fh_split split, uint64_t seed, int keep_paths, fh_error *err)
{
    memset(r, 0, sizeof *r);
    fh_market_view view = fh_market_view_of(&data->market, split);
    if (view.n < 2)
        return fh_error_set(err, FH_ERR_INPUT,
                            "the %s split holds %zu bars: nothing to backtest (%s)",
                            fh_split_name(split), view.n,
                            split == FH_SPLIT_VALIDATION
                                ? "the run has no validation split: validation_fraction 0"
                                : "use more data or other split fractions");
    r->bars = view.n;
    snprintf(r->split, sizeof r->split, "%s", fh_split_name(split));
    r->in_sample = split == FH_SPLIT_TRAIN || split == FH_SPLIT_ALL;
    if (view.n > 0 && view.time) {
        fh_format_utc(r->first_time, sizeof r->first_time, view.time[0]);
        fh_format_utc(r->last_time, sizeof r->last_time, view.time[view.n - 1]);
    }
    r->periods_per_year = cfg->periods_per_year > 0
                              ? cfg->periods_per_year
                              : fh_periods_per_year(data->market.interval_seconds);
    if (keep_paths && view.n >= 2) {
        r->paths = malloc((size_t)FH_POLICY_COUNT * PATH_ARRAYS * view.n * sizeof(double));
        r->time = malloc(view.n * sizeof(int64_t));
        r->close = malloc(view.n * sizeof(double));
        r->barrier_hits = calloc((size_t)FH_POLICY_COUNT * (view.n - 1), sizeof(int));
        if (!r->paths || !r->time || !r->close || !r->barrier_hits) {
            fh_eval_report_free(r);
            return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory for the paths of "
                                "%zu bars", __FILE__, __LINE__, view.n);
        }
        memcpy(r->time, view.time, view.n * sizeof(int64_t));
        for (size_t t = 0; t < view.n; t++)
            r->close[t] = view.close[t];
    }
    double *equity = malloc(view.n * sizeof *equity); /* without paths: one policy's */
    if (!equity) {
        fh_eval_report_free(r);
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
    }
    const double *oracle = view.expected_return;
    /* the classical baselines choose their parameters on validation: the same bars
     * that choose the agent's model (best.safetensors) */
    fh_market_view validation = fh_market_view_of(&data->market, FH_SPLIT_VALIDATION);
    r->validation_bars = validation.n >= 2 ? validation.n : 0;
    for (int k = 0; k < FH_POLICY_COUNT; k++) {
        if (k == FH_POLICY_ORACLE && !oracle)
            continue;
        if ((k == FH_POLICY_GREEDY || k == FH_POLICY_SAMPLED) && !actor)
            continue;
        /* the equity path at least: the longest drawdown's length in time needs it */
        fh_backtest_path path = {.equity = equity};
        if (r->paths) {
            path = policy_path(r, r->n_policies);
        }
        fh_backtest_path *pp = &path;
        fh_status st;
        if (fh_policy_is_baseline((fh_policy_kind)k)) {
            fh_baseline_choice *c = &r->baselines[k - FH_POLICY_VOL_TARGET];
            st = fh_baseline_choose(c, (fh_policy_kind)k, &cfg->env, &validation,
                                    r->periods_per_year, err);
            if (st == FH_OK)
                st = fh_baseline_backtest(&r->metrics[r->n_policies], &c->chosen, &cfg->env,
                                          &view, r->periods_per_year, pp, err);
        } else {
            st = fh_backtest_run_path(&r->metrics[r->n_policies], (fh_policy_kind)k, actor,
                                      &cfg->env, &view, oracle, r->periods_per_year, seed, pp,
                                      err);
        }
        if (st != FH_OK) {
            free(equity);
            fh_eval_report_free(r);
            return st;
        }
        if (view.time)
            r->metrics[r->n_policies].max_drawdown_days =
                fh_risk_longest_drawdown_days(view.time, path.equity, view.n);
        r->kinds[r->n_policies++] = (fh_policy_kind)k;
    }
    free(equity);
    return FH_OK;
}

fh_status fh_eval_report_set_greedy_ensemble(fh_eval_report *r, const fh_mlp *const *actors,
                                             int n_actors, const fh_train_config *cfg,
                                             const fh_run_data *data, fh_split split,
                                             uint64_t seed, fh_error *err)
{
    fh_market_view view = fh_market_view_of(&data->market, split);
    int greedy = -1;
    for (int i = 0; i < r->n_policies; i++)
        if (r->kinds[i] == FH_POLICY_GREEDY)
            greedy = i;
    if (greedy < 0 || view.n != r->bars || strcmp(r->split, fh_split_name(split)) != 0)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: the report has no greedy policy on "
                            "the %s split's %zu bars", __FILE__, __LINE__,
                            fh_split_name(split), view.n);
    fh_backtest_path path = {0}, *pp = NULL;
    if (r->paths) {
        path = policy_path(r, greedy);
        pp = &path;
    }
    fh_status st = fh_backtest_run_ensemble(&r->metrics[greedy], actors, n_actors, &cfg->env,
                                            &view, r->periods_per_year, seed, pp, err);
    if (st == FH_OK && pp && view.time)
        r->metrics[greedy].max_drawdown_days =
            fh_risk_longest_drawdown_days(view.time, path.equity, view.n);
    return st;
}

const fh_baseline_choice *fh_eval_report_baseline(const fh_eval_report *r,
                                                  fh_policy_kind kind)
{
    if (!fh_policy_is_baseline(kind))
        return NULL;
    const fh_baseline_choice *c = &r->baselines[kind - FH_POLICY_VOL_TARGET];
    for (int i = 0; i < r->n_policies; i++)
        if (r->kinds[i] == kind) /* a stitched walk-forward path records no choice */
            return c->n_trials > 0 ? c : NULL;
    return NULL;
}

static const fh_backtest_metrics *find(const fh_eval_report *r, fh_policy_kind kind)
{
    for (int i = 0; i < r->n_policies; i++)
        if (r->kinds[i] == kind)
            return &r->metrics[i];
    return NULL;
}

/* Two standard errors of the difference, the errors taken as independent (the two
 * paths share the market's moves, so this overstates the error: a verdict of "beat" or
 * "lost" is the more conservative for it). */
#define VERDICT_STANDARD_ERRORS 2.0

void fh_eval_report_verdict(const fh_eval_report *r, char *out, size_t size)
{
    const fh_backtest_metrics *g = find(r, FH_POLICY_GREEDY), *b = find(r, FH_POLICY_BUY_AND_HOLD);
    const char *prefix = r->in_sample ? "IN-SAMPLE (trained on these bars, says nothing about "
                                        "new data): " : "";
    if (!g || !b) {
        snprintf(out, size, "%sno verdict: the greedy policy or buy-and-hold is missing", prefix);
        return;
    }
    double d = g->sharpe - b->sharpe;
    double se = sqrt(g->sharpe_se * g->sharpe_se + b->sharpe_se * b->sharpe_se);
    const char *word = d > VERDICT_STANDARD_ERRORS * se ? "BEAT"
                       : d < -VERDICT_STANDARD_ERRORS * se ? "LOST TO"
                                                           : "is NOT DISTINGUISHABLE from";
    snprintf(out, size, "%sverdict: the greedy policy %s buy-and-hold on the %s split "
             "(Sharpe %.2f +- %.2f against %.2f +- %.2f; difference %+.2f, %s 2 standard "
             "errors = %.2f)", prefix, word, r->split, g->sharpe, g->sharpe_se, b->sharpe,
             b->sharpe_se, d, fabs(d) > VERDICT_STANDARD_ERRORS * se ? "beyond" : "within",
             VERDICT_STANDARD_ERRORS * se);
}

/* One table, its columns (eval_columns.h: the tear sheet shows the same) right-aligned. */
static void print_table(const fh_eval_report *r, fh_eval_table table, const char *corner,
                        FILE *out)
{
    int columns = fh_eval_column_count(table);
    fprintf(out, "%-13s", corner);
    for (int c = 0; c < columns; c++) {
        const fh_eval_column *col = fh_eval_column_at(table, c);
        fprintf(out, " %*s", col->width, col->header);
    }
    fputc('\n', out);
    for (int i = 0; i < r->n_policies; i++) {
        fprintf(out, "%-13s", fh_policy_name(r->kinds[i]));
        for (int c = 0; c < columns; c++) {
            char cell[64];
            fh_eval_cell(table, c, &r->metrics[i], cell, sizeof cell);
            fprintf(out, " %*s", fh_eval_column_at(table, c)->width, cell);
        }
        fputc('\n', out);
    }
}

/* The classical baselines' parameters: how each was chosen, and its deflated Sharpe. */
static void print_baselines(const fh_eval_report *r, FILE *out)
{
    int any = 0;
    for (int i = 0; i < r->n_policies; i++) {
        const fh_baseline_choice *c = fh_eval_report_baseline(r, r->kinds[i]);
        if (!c)
            continue;
        if (!any++) {
            if (r->validation_bars)
                fprintf(out, "baselines: parameters chosen on the validation split (%zu bars) "
                        "by Sharpe; DSR counts the settings tried as trials%s\n",
                        r->validation_bars, strcmp(r->split, "validation") == 0
                            ? " (IN-SAMPLE for them: this is the split that chose them)" : "");
            else
                fprintf(out, "baselines: default parameters (no validation split to choose "
                        "them on)\n");
        }
        char what[160];
        fh_baseline_describe(&c->chosen, r->periods_per_year, what, sizeof what);
        fprintf(out, "  %-13s %s; ", fh_policy_name(r->kinds[i]), what);
        if (c->on_validation)
            fprintf(out, "best of %d on validation (Sharpe %.2f)", c->n_trials,
                    c->trial_sharpe[c->best]);
        else if (r->validation_bars) /* else the heading said why */
            fprintf(out, "defaults: %s", c->why_default);
        else
            fprintf(out, "defaults");
        fprintf(out, "; DSR %.3f\n", fh_baseline_deflated_sharpe(c, &r->metrics[i],
                                                                 r->periods_per_year));
    }
}

void fh_eval_report_print(const fh_eval_report *r, const char *title, FILE *out)
{
    if (r->in_sample)
        fprintf(out, "*** IN-SAMPLE: the %s split holds the bars the policy was trained on; "
                "these numbers say nothing about unseen data (use --split test) ***\n",
                r->split);
    if (strcmp(r->split, "validation") == 0)
        fprintf(out, "note: the validation split is unseen in training but chooses the model "
                "(eval_every, best.safetensors): the test split is the unbiased estimate\n");
    fprintf(out, "%s: %s split, %zu bars from %s to %s, %.0f periods/year\n", title, r->split,
            r->bars, r->first_time[0] ? r->first_time : "?", r->last_time[0] ? r->last_time : "?",
            r->periods_per_year);
    print_table(r, FH_EVAL_TABLE_PERFORMANCE, "policy", out);
    print_table(r, FH_EVAL_TABLE_POSITIONS, "positions", out);
    print_baselines(r, out);
    char verdict[512];
    fh_eval_report_verdict(r, verdict, sizeof verdict);
    fprintf(out, "%s\n", verdict);
}

fh_status fh_write_text_atomically(const char *path, const char *text, fh_error *err)
{
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%.1000s.tmp", path);
    /* a FIFO or a device named PATH.tmp is refused, not written into (issue 32) */
    FILE *f = fh_fopen_regular(tmp, "temporary file", O_WRONLY | O_CREAT | O_TRUNC, err);
    if (!f) { /* an output path the user gave: exit 2, as any bad path */
        if (err)
            err->status = FH_ERR_INPUT;
        return FH_ERR_INPUT;
    }
    errno = 0;
    int e = fh_replace_with_tmp(f, fputs(text, f) >= 0, 0, tmp, path);
    if (e)
        return fh_error_set(err, FH_ERR_INPUT, "cannot write %s: %s%s", path, strerror(e),
                            fh_write_error_hint(e));
    return FH_OK;
}

fh_status fh_eval_report_returns_csv(const fh_eval_report *r, char **csv, fh_error *err)
{
    *csv = NULL;
    if (!r->paths)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: the report kept no paths", __FILE__,
                            __LINE__);
    size_t n = r->bars, cap = 4096 + n * (size_t)r->n_policies * 5 * 26 + n * 50;
    char *text = malloc(cap);
    if (!text)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
    size_t used = (size_t)snprintf(text, cap, r->close ? "time,close" : "time");
    const char *cols[5] = {"equity", "return", "exposure", "cost", "turnover"};
    for (int i = 0; i < r->n_policies; i++)
        for (int c = 0; c < 5; c++)
            used += (size_t)snprintf(text + used, cap - used, ",%s_%s",
                                     fh_policy_name(r->kinds[i]), cols[c]);
    used += (size_t)snprintf(text + used, cap - used, "\n");
    /* row t: bar t's time and equity; the return, exposure, cost and turnover of the step
     * into bar t (empty at bar 0) */
    for (size_t t = 0; t < n && used < cap; t++) {
        char when[32];
        fh_format_utc(when, sizeof when, r->time[t]);
        used += (size_t)snprintf(text + used, cap - used, "%s", when);
        if (r->close) /* the float32 price, exactly, as every column: 17 digits */
            used += (size_t)snprintf(text + used, cap - used, ",%.17g", r->close[t]);
        for (int i = 0; i < r->n_policies; i++) {
            const double *base = r->paths + (size_t)i * PATH_ARRAYS * n;
            const double *eq = base, *ex = base + n, *co = base + 2 * n, *tu = base + 3 * n;
            if (t == 0)
                used += (size_t)snprintf(text + used, cap - used, ",%.17g,,,,", eq[0]);
            else
                used += (size_t)snprintf(text + used, cap - used, ",%.17g,%.17g,%.17g,%.17g,%.17g",
                                         eq[t], eq[t] / eq[t - 1] - 1.0, ex[t - 1],
                                         co[t - 1] / eq[t - 1], tu[t - 1]);
        }
        used += (size_t)snprintf(text + used, cap - used, "\n");
    }
    if (used >= cap) {
        free(text);
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: the returns table outgrew its buffer",
                            __FILE__, __LINE__);
    }
    *csv = text;
    return FH_OK;
}

fh_status fh_eval_report_write_returns(const fh_eval_report *r, const char *path,
                                       fh_error *err)
{
    char *text;
    fh_status st = fh_eval_report_returns_csv(r, &text, err);
    if (st == FH_OK)
        st = fh_write_text_atomically(path, text, err);
    free(text);
    return st;
}

static void add_number(cJSON *o, const char *key, double v)
{
    if (isfinite(v))
        cJSON_AddNumberToObject(o, key, v);
    else
        cJSON_AddNullToObject(o, key);
}

static cJSON *params_json(const fh_baseline_params *p, double ppy)
{
    cJSON *o = cJSON_CreateObject();
    char what[160];
    fh_baseline_describe(p, ppy, what, sizeof what);
    cJSON_AddStringToObject(o, "description", what);
    if (p->kind != FH_POLICY_VOL_TARGET) {
        cJSON_AddNumberToObject(o, "window_months", p->window_months);
        cJSON_AddNumberToObject(o, "window_bars", (double)fh_baseline_bars(p->window_months, ppy));
    }
    if (p->kind == FH_POLICY_MA_CROSSOVER) {
        cJSON_AddNumberToObject(o, "slow_months", p->slow_months);
        cJSON_AddNumberToObject(o, "slow_bars", (double)fh_baseline_bars(p->slow_months, ppy));
    } else {
        cJSON_AddNumberToObject(o, "vol_months", p->vol_months);
        cJSON_AddNumberToObject(o, "vol_bars", (double)fh_baseline_bars(p->vol_months, ppy));
        cJSON_AddNumberToObject(o, "target_vol", p->target_vol);
    }
    return o;
}

cJSON *fh_baseline_choice_json(const fh_baseline_choice *c, const fh_backtest_metrics *m,
                               double ppy)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "chosen_on", c->on_validation ? "validation" : "defaults");
    if (!c->on_validation)
        cJSON_AddStringToObject(o, "why_default", c->why_default);
    cJSON_AddItemToObject(o, "parameters", params_json(&c->chosen, ppy));
    cJSON_AddNumberToObject(o, "trials", c->n_trials);
    cJSON_AddNumberToObject(o, "skipped", c->skipped);
    add_number(o, "trials_sharpe_variance", c->sharpe_variance);
    cJSON *grid = cJSON_AddArrayToObject(o, "grid");
    for (int i = 0; c->on_validation && i < c->n_trials; i++) {
        cJSON *t = params_json(&c->trial[i], ppy);
        add_number(t, "validation_sharpe", c->trial_sharpe[i]);
        cJSON_AddItemToArray(grid, t);
    }
    if (c->on_validation)
        cJSON_AddNumberToObject(o, "validation_steps", c->trial_steps);
    if (m) {
        add_number(o, "psr", fh_backtest_psr(m, ppy));
        add_number(o, "deflated_sharpe", fh_baseline_deflated_sharpe(c, m, ppy));
    }
    return o;
}

/* A policy's risk section (risk_metrics.h): drawdowns with their UTC dates, VaR, CVaR,
 * alpha and beta, the best and worst periods and each year's return. */
static fh_status add_risk(cJSON *p, const fh_eval_report *r, int i, int benchmark,
                          fh_error *err)
{
    const double *eq = r->paths + (size_t)i * PATH_ARRAYS * r->bars;
    const double *bench = benchmark >= 0 ? r->paths + (size_t)benchmark * PATH_ARRAYS * r->bars
                                         : NULL;
    fh_risk_metrics m;
    fh_status st = fh_risk_compute(r->time, eq, bench, r->bars, r->periods_per_year, &m, err);
    int *key = malloc(r->bars * sizeof *key);
    double *ret = malloc(r->bars * sizeof *ret);
    if (st == FH_OK && (!key || !ret))
        st = fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
    if (st != FH_OK) {
        free(key);
        free(ret);
        return st;
    }
    cJSON *o = cJSON_AddObjectToObject(p, "risk");
    add_number(o, "var_95", m.var);
    add_number(o, "cvar_95", m.cvar);
    add_number(o, "alpha", m.alpha);
    add_number(o, "beta", m.beta);
    for (int k = 0; k < FH_PERIOD_COUNT; k++) {
        char name[32];
        snprintf(name, sizeof name, "best_%s", fh_period_name((fh_period)k));
        add_number(o, name, m.best[k]);
        snprintf(name, sizeof name, "worst_%s", fh_period_name((fh_period)k));
        add_number(o, name, m.worst[k]);
    }
    cJSON *dds = cJSON_AddArrayToObject(o, "worst_drawdowns");
    for (int k = 0; k < m.n_drawdowns; k++) {
        const fh_drawdown_period *d = &m.drawdowns[k];
        cJSON *dj = cJSON_CreateObject();
        char when[32];
        fh_format_utc(when, sizeof when, r->time[d->start]);
        cJSON_AddStringToObject(dj, "start", when);
        fh_format_utc(when, sizeof when, r->time[d->valley]);
        cJSON_AddStringToObject(dj, "valley", when);
        fh_format_utc(when, sizeof when, r->time[d->end]);
        cJSON_AddStringToObject(dj, "end", when);
        cJSON_AddBoolToObject(dj, "recovered", d->recovered);
        add_number(dj, "depth", d->depth);
        add_number(dj, "days", d->days);
        cJSON_AddItemToArray(dds, dj);
    }
    cJSON *years = cJSON_AddObjectToObject(o, "yearly_returns");
    size_t n = fh_risk_period_returns(r->time, eq, r->bars, FH_PERIOD_YEAR, key, ret, r->bars);
    for (size_t k = 0; k < n; k++) {
        char year[16];
        snprintf(year, sizeof year, "%d", key[k] / 10000);
        add_number(years, year, ret[k]);
    }
    free(key);
    free(ret);
    return FH_OK;
}

fh_status fh_eval_report_write_json(const fh_eval_report *r, const char *source,
                                    const char *path, fh_error *err)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "source", source);
    cJSON_AddStringToObject(root, "split", r->split);
    cJSON_AddNumberToObject(root, "bars", (double)r->bars);
    cJSON_AddNumberToObject(root, "periods_per_year", r->periods_per_year);
    cJSON_AddStringToObject(root, "first_time", r->first_time);
    cJSON_AddStringToObject(root, "last_time", r->last_time);
    cJSON_AddBoolToObject(root, "in_sample", r->in_sample);
    char verdict[512];
    fh_eval_report_verdict(r, verdict, sizeof verdict);
    cJSON_AddStringToObject(root, "verdict", verdict);
    if (r->gated) { /* whether the model may trade, and why (the greedy rows: ungated) */
        cJSON *g = cJSON_AddObjectToObject(root, "deployment_gate");
        cJSON_AddBoolToObject(g, "deploy", r->deploy);
        if (isfinite(r->gate_psr))
            cJSON_AddNumberToObject(g, "validation_psr", r->gate_psr);
        cJSON_AddNumberToObject(g, "deploy_min_psr", r->gate_min_psr);
        cJSON_AddStringToObject(g, "why", r->gate_why);
    }
    cJSON *policies = cJSON_AddObjectToObject(root, "policies");
    int benchmark = -1;
    for (int i = 0; i < r->n_policies; i++)
        benchmark = r->kinds[i] == FH_POLICY_BUY_AND_HOLD ? i : benchmark;
    for (int i = 0; i < r->n_policies; i++) {
        const fh_backtest_metrics *m = &r->metrics[i];
        cJSON *p = cJSON_AddObjectToObject(policies, fh_policy_name(r->kinds[i]));
        add_number(p, "cumulative_return", m->cumulative_return);
        add_number(p, "annualised_return", m->annualised_return);
        add_number(p, "annualised_volatility", m->annualised_volatility);
        add_number(p, "sharpe", m->sharpe);
        add_number(p, "sortino", m->sortino);
        add_number(p, "calmar", m->calmar);
        add_number(p, "max_drawdown", m->max_drawdown);
        add_number(p, "max_drawdown_duration", m->max_drawdown_duration);
        /* a stitched walk-forward path's metrics know no times: from its path */
        double dd_days = m->max_drawdown_days;
        if (!isfinite(dd_days) && r->paths && r->time)
            dd_days = fh_risk_longest_drawdown_days(
                r->time, r->paths + (size_t)i * PATH_ARRAYS * r->bars, r->bars);
        add_number(p, "max_drawdown_days", dd_days);
        add_number(p, "turnover", m->turnover);
        add_number(p, "turnover_per_year", m->turnover_per_year);
        add_number(p, "trades", m->trades);
        add_number(p, "hit_rate", m->hit_rate);
        add_number(p, "costs", m->costs);
        add_number(p, "final_equity", m->final_equity);
        add_number(p, "steps", m->steps);
        add_number(p, "sharpe_se", m->sharpe_se);
        add_number(p, "time_in_market", m->time_in_market);
        add_number(p, "mean_exposure", m->mean_exposure);
        add_number(p, "mean_abs_exposure", m->mean_abs_exposure);
        add_number(p, "round_trips", m->round_trips);
        add_number(p, "round_trip_hit_rate", m->round_trip_hit_rate);
        fh_status st = r->paths && r->time && r->bars >= 2 ? add_risk(p, r, i, benchmark, err)
                                                           : FH_OK;
        if (st != FH_OK) {
            cJSON_Delete(root);
            return st;
        }
    }
    cJSON *baselines = cJSON_AddObjectToObject(root, "baselines");
    cJSON_AddNumberToObject(baselines, "validation_bars", (double)r->validation_bars);
    for (int i = 0; i < r->n_policies; i++) {
        const fh_baseline_choice *c = fh_eval_report_baseline(r, r->kinds[i]);
        if (c)
            cJSON_AddItemToObject(baselines, fh_policy_name(r->kinds[i]),
                                  fh_baseline_choice_json(c, &r->metrics[i],
                                                          r->periods_per_year));
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
    size_t len = strlen(text);
    char *with_newline = malloc(len + 2);
    fh_status st;
    if (!with_newline) {
        st = fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
    } else {
        memcpy(with_newline, text, len);
        with_newline[len] = '\n';
        with_newline[len + 1] = '\0';
        st = fh_write_text_atomically(path, with_newline, err);
    }
    free(with_newline);
    cJSON_free(text);
    return st;
}
