/* walkforward_output.c — what a walk-forward writes (walkforward.h): per seed the
 * stitched returns, eval JSON and tear sheet; walkforward.md's tables (per fold, the
 * baselines' settings, the stitched paths with PSR and DSR, the verdicts) and
 * walkforward.json. */
#define _DEFAULT_SOURCE /* open_memstream */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/walkforward.h"
#include "foxhunt/format.h"
#include "report/tear_sheet.h"

const fh_backtest_metrics *fh_wf_policy(const fh_eval_report *r, fh_policy_kind kind)
{
    for (int i = 0; i < r->n_policies; i++)
        if (r->kinds[i] == kind)
            return &r->metrics[i];
    return NULL;
}

/* The per-step Sharpe ratios of the seeds' stitched greedy paths: their variance is
 * the spread among the trials the best was chosen from. */
static double greedy_sharpe_variance(const walkforward *w)
{
    if (w->seeds < 2)
        return 0.0;
    double sum = 0, sum_sq = 0;
    for (int s = 0; s < w->seeds; s++) {
        const fh_eval_report *r = &w->stitched[s];
        double sr = fh_wf_policy(r, FH_POLICY_GREEDY)->sharpe / sqrt(r->periods_per_year);
        sum += sr;
        sum_sq += sr * sr;
    }
    double n = w->seeds, mean = sum / n;
    return (sum_sq - n * mean * mean) / (n - 1);
}

/* The trials behind a stitched baseline: each fold chose its own setting from the
 * grid on its own validation segment. The trials are the most settings any fold tried,
 * their variance the folds' mean (the per-step Sharpe ratios of one fold's settings). */
static fh_baseline_choice stitched_choice(const walkforward *w, fh_policy_kind kind)
{
    fh_baseline_choice all;
    memset(&all, 0, sizeof all);
    all.n_trials = 1;
    for (int k = 0; k < w->folds; k++) {
        const fh_baseline_choice *c = fh_eval_report_baseline(&w->reports[k * w->seeds], kind);
        if (!c)
            continue;
        all.n_trials = c->n_trials > all.n_trials ? c->n_trials : all.n_trials;
        all.sharpe_variance += c->sharpe_variance / w->folds;
    }
    return all;
}

static double stitched_baseline_dsr(const walkforward *w, fh_policy_kind kind,
                                    const fh_eval_report *r, const fh_backtest_metrics *m)
{
    fh_baseline_choice all = stitched_choice(w, kind);
    return fh_baseline_deflated_sharpe(&all, m, r->periods_per_year);
}

/* Each fold's baseline settings, chosen on that fold's validation segment. */
static void write_baseline_choices(const walkforward *w, FILE *out)
{
    fprintf(out, "\n### Classical baselines: the settings each fold chose on its validation "
            "segment (by Sharpe; docs/EVALUATION.md)\n\n| fold |");
    for (int b = 0; b < FH_BASELINE_COUNT; b++)
        fprintf(out, " %s |", fh_policy_name((fh_policy_kind)(FH_POLICY_VOL_TARGET + b)));
    fprintf(out, "\n|---|");
    for (int b = 0; b < FH_BASELINE_COUNT; b++)
        fprintf(out, "---|");
    fprintf(out, "\n");
    for (int k = 0; k < w->folds; k++) {
        const fh_eval_report *r0 = &w->reports[k * w->seeds];
        fprintf(out, "| %d |", k + 1);
        for (int b = 0; b < FH_BASELINE_COUNT; b++) {
            const fh_baseline_choice *c =
                fh_eval_report_baseline(r0, (fh_policy_kind)(FH_POLICY_VOL_TARGET + b));
            char what[160] = "";
            if (c)
                fh_baseline_describe(&c->chosen, r0->periods_per_year, what, sizeof what);
            if (c && c->on_validation)
                fprintf(out, " %s (best of %d) |", what, c->n_trials);
            else
                fprintf(out, " %s%s%s |", what, c ? "; defaults: " : "", c ? c->why_default : "");
        }
        fprintf(out, "\n");
    }
}

static void per_step(const fh_eval_report *r, const fh_backtest_metrics *m, double *sr, int *T)
{
    *sr = m->sharpe / sqrt(r->periods_per_year);
    *T = m->steps;
}

/* The folds a gate let trade, "1, 3" ("none"): deploy[k * stride] for fold k (a seed's
 * column of w->deploy, stride seeds; the ensemble's w->ensemble_deploy, stride 1). */
static void folds_traded(const int *deploy, int stride, int folds, char *out, size_t n)
{
    out[0] = 0;
    for (int k = 0; k < folds; k++)
        if (deploy[k * stride])
            fh_format_append(out, n, "%s%d", out[0] ? ", " : "", k + 1);
    if (!out[0])
        snprintf(out, n, "none");
}

/* One row of a gated policy's table: its stitched greedy path against flat (the issue's
 * bar: a Sharpe above -1 standard error, never significantly worse than doing nothing). */
static void gated_row(const fh_eval_report *r, const char *name, const char *traded,
                      FILE *out)
{
    const fh_backtest_metrics *m = fh_wf_policy(r, FH_POLICY_GREEDY);
    fprintf(out, "| %s | %s | %.2f ± %.2f | %.1f%% | %.1f%% | %.1f%% | %.1f | %.3f | %s |\n",
            name, traded, m->sharpe, m->sharpe_se, 100 * m->cumulative_return,
            100 * m->max_drawdown, 100 * m->costs, m->turnover_per_year,
            fh_backtest_psr(m, r->periods_per_year),
            m->sharpe < -m->sharpe_se ? "WORSE than flat by more than 1 se"
                                      : "not worse than flat beyond 1 se");
}

/* The deployed (gated) policy's stitched path per seed, against flat: the bar is
 * a Sharpe above -1 standard error (never significantly worse than doing nothing). */
static void write_deployed(const walkforward *w, const fh_train_config *cfg, FILE *out)
{
    fprintf(out, "### The deployed policy (deployment gate: deploy_min_psr %.2f)\n\nEach fold "
            "run's model trades its test segment only when its validation PSR(0) is at least "
            "%.2f; else the deployed policy stays flat there (docs/EVALUATION.md). The "
            "greedy rows above are the ungated models'.\n\n| seed | folds traded | Sharpe "
            "± se | cum. return | max DD | costs | turnover/yr | PSR(0) | against flat |\n"
            "|---|---|---|---|---|---|---|---|---|\n", cfg->deploy_min_psr, cfg->deploy_min_psr);
    for (int s = 0; s < w->seeds; s++) {
        char traded[160], seed[32];
        folds_traded(w->deploy + s, w->seeds, w->folds, traded, sizeof traded);
        snprintf(seed, sizeof seed, "%llu", (unsigned long long)(cfg->seed + (uint64_t)s));
        gated_row(&w->deployed[s], seed, traded, out);
    }
    fprintf(out, "\n");
}

/* The seed ensemble's stitched path, ungated and gated, and its folds' validation. */
static void write_ensemble(const walkforward *w, FILE *out)
{
    if (!w->has_ensemble)
        return;
    char traded[160];
    folds_traded(w->ensemble_deploy, 1, w->folds, traded, sizeof traded);
    fprintf(out, "### The seed ensemble (%d seeds' chosen models, one greedy policy)\n\n"
            "In each fold the seeds' models vote on the ensemble's own state: it trades "
            "to the exposure nearest their mean (docs/WALKFORWARD.md). Gated as one model "
            "is, on its own validation backtest.\n\n| policy | folds traded | Sharpe ± se "
            "| cum. return | max DD | costs | turnover/yr | PSR(0) | against flat |\n"
            "|---|---|---|---|---|---|---|---|---|\n", w->seeds);
    char all[160];
    snprintf(all, sizeof all, "all %d", w->folds);
    gated_row(&w->ensemble, "ensemble (ungated)", all, out);
    gated_row(&w->ensemble_deployed, "ensemble (gated)", traded, out);
    fprintf(out, "\nIts validation per fold (Sharpe, PSR(0)):");
    for (int k = 0; k < w->folds; k++)
        fprintf(out, "%s fold %d %.2f, %.3f", k ? ";" : "", k + 1,
                w->ensemble_validation_sharpe[k], w->ensemble_validation_psr[k]);
    fprintf(out, ".\n\n");
}

void fh_walkforward_write_tables(const walkforward *w, const fh_train_config *cfg, FILE *out)
{
    fprintf(out, "## Walk-forward: %d folds x %d seeds, %s window\n\n", w->folds, w->seeds,
            cfg->walkforward_window);
    fprintf(out, "Data: %s. Out-of-sample segments stitched: %s .. %s (%zu bars, %.0f "
            "periods/year).\n\n", w->data_description, w->stitched[0].first_time,
            w->stitched[0].last_time, w->stitched[0].bars, w->stitched[0].periods_per_year);
    fprintf(out, "### Per fold (test segment; greedy policy of the model chosen on "
            "validation)\n\n| fold | test from | test to | bars |");
    for (int s = 0; s < w->seeds; s++)
        fprintf(out, " greedy seed %llu |", (unsigned long long)(cfg->seed + (uint64_t)s));
    fprintf(out, " buy-and-hold |%s", w->reports[0].n_policies &&
            fh_wf_policy(&w->reports[0], FH_POLICY_ORACLE) ? " oracle |" : "");
    for (int b = 0; b < FH_BASELINE_COUNT; b++)
        fprintf(out, " %s |", fh_policy_name((fh_policy_kind)(FH_POLICY_VOL_TARGET + b)));
    fprintf(out, "\n|---|---|---|---|");
    for (int s = 0; s < w->seeds; s++)
        fprintf(out, "---|");
    fprintf(out, "---|%s", fh_wf_policy(&w->reports[0], FH_POLICY_ORACLE) ? "---|" : "");
    for (int b = 0; b < FH_BASELINE_COUNT; b++)
        fprintf(out, "---|");
    fprintf(out, "\n");
    for (int k = 0; k < w->folds; k++) {
        const fh_eval_report *r0 = &w->reports[k * w->seeds];
        fprintf(out, "| %d | %.10s | %.10s | %zu |", k + 1, r0->first_time, r0->last_time,
                r0->bars);
        for (int s = 0; s < w->seeds; s++) {
            const fh_backtest_metrics *g = fh_wf_policy(&w->reports[k * w->seeds + s],
                                                  FH_POLICY_GREEDY);
            fprintf(out, " %.2f ± %.2f |", g->sharpe, g->sharpe_se);
        }
        const fh_backtest_metrics *b = fh_wf_policy(r0, FH_POLICY_BUY_AND_HOLD);
        fprintf(out, " %.2f ± %.2f |", b->sharpe, b->sharpe_se);
        const fh_backtest_metrics *o = fh_wf_policy(r0, FH_POLICY_ORACLE);
        if (o)
            fprintf(out, " %.2f ± %.2f |", o->sharpe, o->sharpe_se);
        for (int b = 0; b < FH_BASELINE_COUNT; b++) {
            const fh_backtest_metrics *m = fh_wf_policy(r0, (fh_policy_kind)(FH_POLICY_VOL_TARGET + b));
            if (m)
                fprintf(out, " %.2f ± %.2f |", m->sharpe, m->sharpe_se);
            else
                fprintf(out, " |");
        }
        fprintf(out, "\n");
    }
    write_baseline_choices(w, out);
    double var = greedy_sharpe_variance(w);
    fprintf(out, "\n### Stitched out-of-sample path\n\n| policy | seed | Sharpe ± se | "
            "cum. return | max DD | in market | turnover/yr | costs | PSR(0) | DSR |\n"
            "|---|---|---|---|---|---|---|---|---|---|\n");
    for (int s = 0; s < w->seeds; s++) {
        const fh_eval_report *r = &w->stitched[s];
        for (int p = 0; p < r->n_policies; p++) {
            fh_policy_kind kind = r->kinds[p];
            int per_seed = kind == FH_POLICY_GREEDY || kind == FH_POLICY_SAMPLED;
            if (!per_seed && s > 0)
                continue; /* the baselines are the same for every seed (random: seed 1's) */
            const fh_backtest_metrics *m = &r->metrics[p];
            double sr;
            int T;
            per_step(r, m, &sr, &T);
            double psr = fh_backtest_psr(m, r->periods_per_year);
            char dsr[32] = "";
            if (kind == FH_POLICY_GREEDY && w->seeds > 1)
                snprintf(dsr, sizeof dsr, "%.3f",
                         fh_deflated_sharpe(sr, T, m->skewness, m->kurtosis, w->seeds, var));
            if (fh_policy_is_baseline(kind))
                snprintf(dsr, sizeof dsr, "%.3f", stitched_baseline_dsr(w, kind, r, m));
            fprintf(out, "| %s | %s%llu%s | %.2f ± %.2f | %.1f%% | %.1f%% | %.0f%% | %.1f | "
                    "%.1f%% | %.3f | %s |\n", fh_policy_name(kind), per_seed ? "" : "(",
                    (unsigned long long)(cfg->seed + (uint64_t)s), per_seed ? "" : ")",
                    m->sharpe, m->sharpe_se,
                    100 * m->cumulative_return, 100 * m->max_drawdown,
                    100 * m->time_in_market, m->turnover_per_year, 100 * m->costs, psr, dsr);
        }
    }
    fprintf(out, "\nPSR(0): the probability that the true Sharpe ratio is above 0 given the "
            "path's length, skew and kurtosis; DSR: the same against the best Sharpe ratio "
            "expected from %d seeds of no skill (Bailey and Lopez de Prado), and for a "
            "classical baseline from its grid's settings (the most any fold tried; the "
            "variance of their validation Sharpe ratios averaged over the folds); a seed in "
            "brackets: a baseline, the same for every seed.\n\n", w->seeds);
    write_deployed(w, cfg, out);
    write_ensemble(w, out);
    for (int s = 0; s < w->seeds; s++) {
        char verdict[512];
        fh_eval_report_verdict(&w->stitched[s], verdict, sizeof verdict);
        fprintf(out, "- seed %llu: %s\n", (unsigned long long)(cfg->seed + (uint64_t)s),
                verdict);
    }
}

static cJSON *metrics_json(const fh_backtest_metrics *m, double periods_per_year)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "sharpe", m->sharpe);
    cJSON_AddNumberToObject(o, "sharpe_se", m->sharpe_se);
    cJSON_AddNumberToObject(o, "cumulative_return", m->cumulative_return);
    cJSON_AddNumberToObject(o, "max_drawdown", m->max_drawdown);
    cJSON_AddNumberToObject(o, "time_in_market", m->time_in_market);
    cJSON_AddNumberToObject(o, "turnover_per_year", m->turnover_per_year);
    cJSON_AddNumberToObject(o, "costs", m->costs);
    cJSON_AddNumberToObject(o, "steps", m->steps);
    cJSON_AddNumberToObject(o, "psr", fh_backtest_psr(m, periods_per_year));
    return o;
}

static cJSON *report_json(const fh_eval_report *r)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "first_time", r->first_time);
    cJSON_AddStringToObject(o, "last_time", r->last_time);
    cJSON_AddNumberToObject(o, "bars", (double)r->bars);
    cJSON *pol = cJSON_AddObjectToObject(o, "policies");
    for (int p = 0; p < r->n_policies; p++)
        cJSON_AddItemToObject(pol, fh_policy_name(r->kinds[p]),
                              metrics_json(&r->metrics[p], r->periods_per_year));
    return o;
}

static fh_status write_json(const walkforward *w, const fh_train_config *cfg, const char *path,
                            fh_error *err)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddNumberToObject(root, "folds", w->folds);
    cJSON_AddNumberToObject(root, "seeds", w->seeds);
    cJSON_AddStringToObject(root, "window", cfg->walkforward_window);
    cJSON_AddStringToObject(root, "data", w->data_description);
    cJSON_AddNumberToObject(root, "deploy_min_psr", cfg->deploy_min_psr);
    cJSON *folds = cJSON_AddArrayToObject(root, "fold_results");
    for (int k = 0; k < w->folds; k++) {
        cJSON *f = cJSON_CreateObject();
        cJSON_AddNumberToObject(f, "fold", k + 1);
        cJSON_AddStringToObject(f, "splits", w->split_text[k]);
        /* the same for every seed: they depend on the fold's bars only */
        cJSON *bl = cJSON_AddObjectToObject(f, "baselines");
        const fh_eval_report *r0 = &w->reports[k * w->seeds];
        for (int p = 0; p < r0->n_policies; p++) {
            const fh_baseline_choice *c = fh_eval_report_baseline(r0, r0->kinds[p]);
            if (c)
                cJSON_AddItemToObject(bl, fh_policy_name(r0->kinds[p]),
                                      fh_baseline_choice_json(c, &r0->metrics[p],
                                                              r0->periods_per_year));
        }
        cJSON *runs = cJSON_AddArrayToObject(f, "runs");
        for (int s = 0; s < w->seeds; s++) {
            int i = k * w->seeds + s;
            cJSON *r = report_json(&w->reports[i]);
            cJSON_AddNumberToObject(r, "seed", (double)(cfg->seed + (uint64_t)s));
            cJSON_AddNumberToObject(r, "chosen_iteration", (double)w->chosen_iteration[i]);
            if (isfinite(w->validation_sharpe[i]))
                cJSON_AddNumberToObject(r, "validation_sharpe", w->validation_sharpe[i]);
            cJSON_AddNumberToObject(r, "train_seconds", w->train_seconds[i]);
            if (isfinite(w->validation_psr[i]))
                cJSON_AddNumberToObject(r, "validation_psr", w->validation_psr[i]);
            cJSON_AddBoolToObject(r, "deployed", w->deploy[i]);
            cJSON_AddItemToArray(runs, r);
        }
        cJSON_AddItemToArray(folds, f);
    }
    double var = greedy_sharpe_variance(w);
    cJSON *stitched = cJSON_AddArrayToObject(root, "stitched");
    for (int s = 0; s < w->seeds; s++) {
        const fh_eval_report *r = &w->stitched[s];
        cJSON *o = report_json(r);
        cJSON_AddNumberToObject(o, "seed", (double)(cfg->seed + (uint64_t)s));
        const fh_backtest_metrics *g = fh_wf_policy(r, FH_POLICY_GREEDY);
        if (w->seeds > 1)
            cJSON_AddNumberToObject(o, "greedy_deflated_sharpe",
                                    fh_deflated_sharpe(g->sharpe / sqrt(r->periods_per_year),
                                                       g->steps, g->skewness, g->kurtosis,
                                                       w->seeds, var));
        cJSON *pol = cJSON_GetObjectItemCaseSensitive(o, "policies");
        for (int p = 0; p < r->n_policies; p++) {
            if (!fh_policy_is_baseline(r->kinds[p]))
                continue;
            fh_baseline_choice all = stitched_choice(w, r->kinds[p]);
            cJSON *b = cJSON_GetObjectItemCaseSensitive(pol, fh_policy_name(r->kinds[p]));
            cJSON_AddNumberToObject(b, "trials", all.n_trials);
            cJSON_AddNumberToObject(b, "trials_sharpe_variance", all.sharpe_variance);
            cJSON_AddNumberToObject(b, "deflated_sharpe",
                                    fh_baseline_deflated_sharpe(&all, &r->metrics[p],
                                                                r->periods_per_year));
        }
        char verdict[512];
        fh_eval_report_verdict(r, verdict, sizeof verdict);
        cJSON_AddStringToObject(o, "verdict", verdict);
        /* the gate's path: greedy on the folds it let trade, flat on the others */
        const fh_eval_report *d = &w->deployed[s];
        cJSON *dep = metrics_json(fh_wf_policy(d, FH_POLICY_GREEDY), d->periods_per_year);
        cJSON *traded = cJSON_AddArrayToObject(dep, "folds_traded");
        for (int k = 0; k < w->folds; k++)
            if (w->deploy[k * w->seeds + s])
                cJSON_AddItemToArray(traded, cJSON_CreateNumber(k + 1));
        cJSON_AddItemToObject(o, "deployed", dep);
        cJSON_AddItemToArray(stitched, o);
    }
    if (w->has_ensemble) {
        cJSON *e = cJSON_AddObjectToObject(root, "ensemble");
        cJSON_AddItemToObject(e, "ungated",
                              metrics_json(fh_wf_policy(&w->ensemble, FH_POLICY_GREEDY),
                                           w->ensemble.periods_per_year));
        cJSON *dep = metrics_json(fh_wf_policy(&w->ensemble_deployed, FH_POLICY_GREEDY),
                                  w->ensemble_deployed.periods_per_year);
        cJSON *traded = cJSON_AddArrayToObject(dep, "folds_traded");
        cJSON *val = cJSON_AddArrayToObject(e, "validation");
        for (int k = 0; k < w->folds; k++) {
            if (w->ensemble_deploy[k])
                cJSON_AddItemToArray(traded, cJSON_CreateNumber(k + 1));
            cJSON *v = cJSON_CreateObject();
            cJSON_AddNumberToObject(v, "fold", k + 1);
            if (isfinite(w->ensemble_validation_sharpe[k]))
                cJSON_AddNumberToObject(v, "sharpe", w->ensemble_validation_sharpe[k]);
            if (isfinite(w->ensemble_validation_psr[k]))
                cJSON_AddNumberToObject(v, "psr", w->ensemble_validation_psr[k]);
            cJSON_AddBoolToObject(v, "deployed", w->ensemble_deploy[k]);
            cJSON_AddItemToArray(val, v);
        }
        cJSON_AddItemToObject(e, "deployed", dep);
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
    fh_status st = fh_write_text_atomically(path, text, err);
    free(text);
    return st;
}

fh_status fh_walkforward_write_outputs(walkforward *w, const fh_train_config *cfg,
                                       fh_error *err)
{
    char path[FH_CONFIG_STRING_MAX + 64];
    fh_status st = FH_OK;
    fh_error no_report;
    int reports = fh_tear_sheet_available(&no_report) == FH_OK;
    for (int s = 0; st == FH_OK && s < w->seeds; s++) {
        unsigned long long seed = (unsigned long long)(cfg->seed + (uint64_t)s);
        snprintf(path, sizeof path, "%.400s/returns_seed%llu.csv", cfg->out, seed);
        st = fh_eval_report_write_returns(&w->stitched[s], path, err);
        if (st == FH_OK) { /* eval.json's format: tests/cli/check_returns.py reads both */
            snprintf(path, sizeof path, "%.400s/eval_seed%llu.json", cfg->out, seed);
            st = fh_eval_report_write_json(&w->stitched[s], cfg->out, path, err);
        }
        if (st == FH_OK && reports) {
            char title[600];
            snprintf(path, sizeof path, "%.400s/report_seed%llu.html", cfg->out, seed);
            snprintf(title, sizeof title, "foxhunt walk-forward: %d folds, seed %llu, %.300s",
                     w->folds, seed, w->data_description);
            fh_tear_sheet_info info = {title, cfg->out, w->data_description, NULL, NULL};
            st = fh_tear_sheet_write(path, &w->stitched[s], &info, err);
        }
    }
    if (!reports)
        printf("note: no HTML reports: %s\n", no_report.message);
    /* walkforward.json last: it marks the walk-forward finished (a rerun refuses it) */
    if (st == FH_OK) {
        char *md = NULL;
        size_t md_len = 0;
        FILE *f = open_memstream(&md, &md_len);
        if (!f)
            return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__,
                                __LINE__);
        fh_walkforward_write_tables(w, cfg, f);
        int ok = fclose(f) == 0;
        snprintf(path, sizeof path, "%.400s/walkforward.md", cfg->out);
        st = ok ? fh_write_text_atomically(path, md, err)
                : fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
        free(md);
    }
    if (st == FH_OK) {
        snprintf(path, sizeof path, "%.400s/walkforward.json", cfg->out);
        st = write_json(w, cfg, path, err);
    }
    return st;
}

