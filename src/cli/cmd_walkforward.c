/* cmd_walkforward.c — `foxhunt walkforward`: K folds x S seeds of training, each fold
 * trading its own out-of-sample segment, the segments stitched into one out-of-sample
 * path per seed; per-fold and aggregate tables against buy-and-hold, with standard
 * errors and the deflated Sharpe of the best seed (docs/EVALUATION.md, "Walk-forward").
 *
 * OUT/fold<k>_seed<s>/ is an ordinary run directory (config, metrics, checkpoints,
 * validation.csv, best.safetensors, eval.json, returns.csv); OUT/ gets walkforward.json,
 * walkforward.md (the tables), and per seed the stitched path as returns_seed<s>.csv,
 * eval_seed<s>.json (eval.json's format) and report_seed<s>.html; walkforward.json last,
 * so that it marks a finished walk-forward.
 *
 * Resume (issue 32, item 7; docs/WALKFORWARD.md, "A killed walk-forward"): a fold run
 * that finished writes OUT/fold<k>_seed<s>/walkforward_fold.json last
 * (cli/walkforward_record.h). A rerun with the same --out keeps every run whose record
 * holds, was made by the same settings and data, and whose model still reproduces the
 * recorded test returns (its test backtest is recomputed from the model: the stitched
 * result never takes a number from the record); it retrains the others from scratch,
 * their partial files moved into their superseded-<time>/. A finished run made by other
 * settings or data is refused, not mixed in. OUT is locked for the whole walk-forward. */
#define _DEFAULT_SOURCE /* open_memstream */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/commands.h"
#include "cli/config_flags.h"
#include "cli/walkforward_record.h"
#include "cli/walkforward_stitch.h"
#include "foxhunt/files.h"
#include "foxhunt/format.h"
#include "foxhunt/hash.h"
#include "foxhunt/safetensors.h"
#include "foxhunt/timing.h"
#include "foxhunt/train_loop.h"
#include "report/eval_report.h"
#include "report/tear_sheet.h"

typedef struct {
    int folds, seeds;
    fh_eval_report *reports;  /* (folds, seeds) */
    fh_split_bounds *bounds;  /* (folds) */
    char (*split_text)[1024]; /* (folds) each fold's splits with dates */
    int64_t *chosen_iteration; /* (folds, seeds): 0 = the last iteration's model */
    double *validation_sharpe; /* (folds, seeds) */
    double *train_seconds;     /* (folds, seeds) */
    fh_eval_report *stitched;  /* (seeds) */
    char data_description[sizeof ((fh_run_data *)0)->description];
    int kept;                  /* runs kept from an earlier, killed walk-forward */
} walkforward;

static void walkforward_free(walkforward *w)
{
    for (int i = 0; w->reports && i < w->folds * w->seeds; i++)
        fh_eval_report_free(&w->reports[i]);
    for (int s = 0; w->stitched && s < w->seeds; s++)
        fh_eval_report_free(&w->stitched[s]);
    free(w->reports);
    free(w->bounds);
    free(w->split_text);
    free(w->chosen_iteration);
    free(w->validation_sharpe);
    free(w->train_seconds);
    free(w->stitched);
}

static const fh_backtest_metrics *policy(const fh_eval_report *r, fh_policy_kind kind)
{
    for (int i = 0; i < r->n_policies; i++)
        if (r->kinds[i] == kind)
            return &r->metrics[i];
    return NULL;
}

/* The configuration of fold k's run with seed index s, in OUT/fold<k>_seed<seed>. */
static void fold_config(const fh_train_config *base, int k, int s, fh_train_config *cfg)
{
    *cfg = *base;
    cfg->walkforward_fold = k;
    cfg->seed = base->seed + (uint64_t)s;
    cfg->eval_at_end = 0;
    snprintf(cfg->out, sizeof cfg->out, "%.400s/fold%d_seed%llu", base->out, k + 1,
             (unsigned long long)cfg->seed);
}

static void record_path(const fh_train_config *fold_cfg, char *out, size_t n)
{
    snprintf(out, n, "%.900s/%s", fold_cfg->out, FH_RUN_DIR_FOLD_RECORD);
}

/* Fold k's splits, from its first run's data. */
static void fold_header(walkforward *w, int k, const fh_run_data *data)
{
    w->bounds[k] = data->market.split;
    fh_run_data_describe_splits(data, w->split_text[k], sizeof w->split_text[k]);
    snprintf(w->data_description, sizeof w->data_description, "%s", data->description);
    printf("fold %d/%d: %s\n", k + 1, w->folds, w->split_text[k]);
}

static void print_run(const walkforward *w, const fh_train_config *cfg, int i,
                      const char *how, int has_best)
{
    const fh_backtest_metrics *g = policy(&w->reports[i], FH_POLICY_GREEDY);
    const fh_backtest_metrics *b = policy(&w->reports[i], FH_POLICY_BUY_AND_HOLD);
    printf("  seed %llu: %s, model of iteration %lld%s; test %s .. %s: greedy Sharpe %.2f "
           "+- %.2f, buy-and-hold %.2f +- %.2f\n",
           (unsigned long long)cfg->seed, how, (long long)w->chosen_iteration[i],
           has_best ? " (best on validation)" : " (the last)", w->reports[i].first_time,
           w->reports[i].last_time, g ? g->sharpe : NAN, g ? g->sharpe_se : NAN,
           b ? b->sharpe : NAN, b ? b->sharpe_se : NAN);
    char warning[320];
    if (cfg->eval_every > 0 &&
        fh_validation_choice_warning(has_best, w->validation_sharpe[i], warning, sizeof warning))
        printf("  warning: fold %d, seed %llu: %s\n", i / w->seeds + 1,
               (unsigned long long)cfg->seed, warning);
    fflush(stdout);
}

/* The fold run's record, written last: the model file chosen and its hash, the test
 * returns' hash, what made the run. */
static fh_status write_record(const fh_learner *l, const fh_train_config *cfg,
                              const char *model_path, const char *returns_csv,
                              double train_seconds, fh_error *err)
{
    fh_walkforward_record rec;
    memset(&rec, 0, sizeof rec);
    const char *base = strrchr(model_path, '/');
    base = base ? base + 1 : model_path;
    if (strcmp(base, "best.safetensors") != 0 && strcmp(base, "final.safetensors") != 0)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: the chosen model %s is neither "
                            "best.safetensors nor final.safetensors", __FILE__, __LINE__,
                            model_path);
    char *bytes = NULL;
    size_t len = 0;
    fh_status st = fh_read_regular_file(model_path, "checkpoint", 0, &bytes, &len, err);
    if (st != FH_OK)
        return st;
    rec.model_hash = fh_fnv1a(bytes, len, FH_FNV1A_OFFSET);
    free(bytes);
    rec.fold = cfg->walkforward_fold + 1;
    rec.seed = cfg->seed;
    snprintf(rec.version, sizeof rec.version, "%s", FH_VERSION);
    rec.config_json = (char *)l->config_json; /* borrowed: rec is not freed here */
    rec.data = *l->data_identity;
    snprintf(rec.model, sizeof rec.model, "%.31s", base);
    rec.returns_hash = fh_fnv1a(returns_csv, strlen(returns_csv), FH_FNV1A_OFFSET);
    rec.train_seconds = train_seconds;
    char path[FH_RUN_DIR_PATH_MAX];
    record_path(cfg, path, sizeof path);
    return fh_walkforward_record_write(path, &rec, err);
}

/* Trains fold k with seed index s from scratch (files of an unfinished or superseded
 * run in its directory move into its superseded-<time>/), backtests its chosen model on
 * the fold's test segment and writes the run's record. */
static fh_status run_one(walkforward *w, const fh_train_config *base, int k, int s,
                         fh_error *err)
{
    fh_train_config cfg;
    fold_config(base, k, s, &cfg);
    cfg.force = 1; /* this run was judged unfinished (or --force): nothing here is kept */
    const int i = k * w->seeds + s;
    fh_train_loop loop;
    double t0 = fh_clock_seconds();
    fh_status st = fh_train_loop_init(&loop, &cfg, err);
    const fh_learner *l = &loop.learner;
    if (st == FH_OK)
        st = fh_train_loop_open_run(&loop, err);
    if (st == FH_OK && s == 0)
        fold_header(w, k, l->data);
    if (st == FH_OK && loop.run.note[0]) { /* the force is this command's, not the user's */
        const char *note = loop.run.note, *forced = "--force: ";
        if (!base->force && strncmp(note, forced, strlen(forced)) == 0)
            note += strlen(forced);
        printf("  seed %llu: retrained from scratch: %s\n", (unsigned long long)cfg.seed, note);
    }
    if (st == FH_OK)
        st = fh_train_loop_run(&loop, NULL, NULL, NULL, err);
    w->train_seconds[i] = fh_clock_seconds() - t0;
    char *returns_csv = NULL;
    if (st == FH_OK) {
        const char *model;
        const fh_mlp *chosen = fh_train_loop_chosen(&loop, &model);
        w->chosen_iteration[i] = loop.has_best ? loop.best_iteration : l->iteration;
        w->validation_sharpe[i] = loop.has_best ? loop.best_sharpe : NAN;
        char json[FH_CONFIG_STRING_MAX + 32], returns[FH_CONFIG_STRING_MAX + 32];
        snprintf(json, sizeof json, "%s/eval.json", cfg.out);
        snprintf(returns, sizeof returns, "%s/returns.csv", cfg.out);
        st = fh_eval_report_run(&w->reports[i], chosen, &cfg, l->data, FH_SPLIT_TEST, cfg.seed,
                                1, err);
        if (st == FH_OK)
            st = fh_eval_report_write_json(&w->reports[i], model, json, err);
        if (st == FH_OK)
            st = fh_eval_report_returns_csv(&w->reports[i], &returns_csv, err);
        if (st == FH_OK)
            st = fh_write_text_atomically(returns, returns_csv, err);
        if (st == FH_OK) /* last: it marks the run finished */
            st = write_record(l, &cfg, model, returns_csv, w->train_seconds[i], err);
    }
    free(returns_csv);
    if (st == FH_OK) {
        char how[96];
        snprintf(how, sizeof how, "trained, %d iterations in %.1f s (%s)", cfg.iterations,
                 w->train_seconds[i], l->device->use_gpu ? "GPU" : "CPU");
        print_run(w, &cfg, i, how, loop.has_best);
    } else {
        fh_error_prefix(err, "fold %d, seed %llu (%s): ", k + 1, (unsigned long long)cfg.seed,
                        cfg.out);
    }
    fh_train_loop_free(&loop);
    return st;
}

/* The chosen model's iteration and validation Sharpe, from the model file itself. */
static int model_choice(const fh_st_file *f, const fh_walkforward_record *rec,
                        const fh_train_config *cfg, int64_t *iteration, double *sharpe,
                        char *why, size_t n)
{
    if (strcmp(rec->model, "best.safetensors") == 0) {
        const char *sv = fh_st_metadata(f, "validation.sharpe");
        const char *iv = fh_st_metadata(f, "validation.iteration");
        char *end1 = NULL, *end2 = NULL;
        *sharpe = sv ? strtod(sv, &end1) : NAN;
        long long it = iv ? strtoll(iv, &end2, 10) : -1;
        if (!sv || !iv || *end1 || *end2 || !isfinite(*sharpe) || it < 1 ||
            it > cfg->iterations) {
            snprintf(why, n, "%s: its validation.sharpe / validation.iteration metadata is "
                     "missing or invalid", rec->model);
            return 0;
        }
        *iteration = it;
        return 1;
    }
    const fh_st_tensor *x = fh_st_find(f, "run.iteration");
    int64_t it = -1;
    if (x && x->dtype == FH_DTYPE_I64 && x->nbytes == sizeof it)
        memcpy(&it, x->data, sizeof it);
    if (it != cfg->iterations) {
        snprintf(why, n, "%s: its run.iteration is not the run's last iteration %d",
                 rec->model, cfg->iterations);
        return 0;
    }
    *iteration = it;
    *sharpe = NAN;
    return 1;
}

/* Keeps fold k's run with seed index s from an earlier walk-forward: its model file
 * (the hash in the record) backtested again on the fold's test segment, which must give
 * the recorded returns to the bit. 1 when kept; 0 with why when the run must be
 * retrained. */
static int keep_one(walkforward *w, const fh_train_config *base, int k, int s,
                    const fh_walkforward_record *rec, char *why, size_t n)
{
    fh_train_config cfg;
    fold_config(base, k, s, &cfg);
    const int i = k * w->seeds + s;
    char path[FH_RUN_DIR_PATH_MAX];
    snprintf(path, sizeof path, "%.900s/%s", cfg.out, rec->model);
    fh_error err;
    fh_st_file f;
    memset(&f, 0, sizeof f);
    int64_t chosen = 0;
    double sharpe = NAN;
    int ok = fh_st_read(&f, path, &err) == FH_OK;
    if (!ok)
        snprintf(why, n, "%s", err.message);
    else if (fh_fnv1a(f.file, f.file_len, FH_FNV1A_OFFSET) != rec->model_hash)
        ok = 0, snprintf(why, n, "%s is not the model the run chose (its bytes changed)", path);
    else
        ok = model_choice(&f, rec, &cfg, &chosen, &sharpe, why, n);
    fh_st_file_free(&f);
    if (!ok)
        return 0;

    fh_mlp actor; /* the greedy policy's network: the actor, or a Q-network */
    memset(&actor, 0, sizeof actor);
    fh_feature_norm norm;
    fh_run_data data;
    memset(&data, 0, sizeof data);
    fh_eval_report report;
    memset(&report, 0, sizeof report);
    char *returns_csv = NULL;
    ok = fh_learner_policy_load(path, cfg.algo, &actor, &norm, NULL, NULL, &err) == FH_OK &&
         fh_run_data_load(&data, &cfg, &norm, &err) == FH_OK &&
         fh_eval_report_run(&report, &actor, &cfg, &data, FH_SPLIT_TEST, cfg.seed, 1,
                            &err) == FH_OK &&
         fh_eval_report_returns_csv(&report, &returns_csv, &err) == FH_OK;
    if (!ok)
        snprintf(why, n, "%s", err.message);
    else if (fh_fnv1a(returns_csv, strlen(returns_csv), FH_FNV1A_OFFSET) != rec->returns_hash)
        ok = 0, snprintf(why, n, "backtested again, its model does not give the test returns "
                         "the record holds");
    if (ok) {
        if (s == 0)
            fold_header(w, k, &data);
        w->reports[i] = report; /* the walk-forward owns its paths now */
        memset(&report, 0, sizeof report);
        w->chosen_iteration[i] = chosen;
        w->validation_sharpe[i] = sharpe;
        w->train_seconds[i] = rec->train_seconds;
        w->kept++;
        char how[160];
        snprintf(how, sizeof how, "kept: finished before (its %s; trained in %.1f s)",
                 FH_RUN_DIR_FOLD_RECORD, rec->train_seconds);
        print_run(w, &cfg, i, how, strcmp(rec->model, "best.safetensors") == 0);
    }
    free(returns_csv);
    fh_eval_report_free(&report);
    fh_run_data_free(&data);
    fh_mlp_free(&actor);
    return ok;
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
        double sr = policy(r, FH_POLICY_GREEDY)->sharpe / sqrt(r->periods_per_year);
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

static void write_tables(const walkforward *w, const fh_train_config *cfg, FILE *out)
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
            policy(&w->reports[0], FH_POLICY_ORACLE) ? " oracle |" : "");
    for (int b = 0; b < FH_BASELINE_COUNT; b++)
        fprintf(out, " %s |", fh_policy_name((fh_policy_kind)(FH_POLICY_VOL_TARGET + b)));
    fprintf(out, "\n|---|---|---|---|");
    for (int s = 0; s < w->seeds; s++)
        fprintf(out, "---|");
    fprintf(out, "---|%s", policy(&w->reports[0], FH_POLICY_ORACLE) ? "---|" : "");
    for (int b = 0; b < FH_BASELINE_COUNT; b++)
        fprintf(out, "---|");
    fprintf(out, "\n");
    for (int k = 0; k < w->folds; k++) {
        const fh_eval_report *r0 = &w->reports[k * w->seeds];
        fprintf(out, "| %d | %.10s | %.10s | %zu |", k + 1, r0->first_time, r0->last_time,
                r0->bars);
        for (int s = 0; s < w->seeds; s++) {
            const fh_backtest_metrics *g = policy(&w->reports[k * w->seeds + s],
                                                  FH_POLICY_GREEDY);
            fprintf(out, " %.2f ± %.2f |", g->sharpe, g->sharpe_se);
        }
        const fh_backtest_metrics *b = policy(r0, FH_POLICY_BUY_AND_HOLD);
        fprintf(out, " %.2f ± %.2f |", b->sharpe, b->sharpe_se);
        const fh_backtest_metrics *o = policy(r0, FH_POLICY_ORACLE);
        if (o)
            fprintf(out, " %.2f ± %.2f |", o->sharpe, o->sharpe_se);
        for (int b = 0; b < FH_BASELINE_COUNT; b++) {
            const fh_backtest_metrics *m = policy(r0, (fh_policy_kind)(FH_POLICY_VOL_TARGET + b));
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
            double psr = fh_probabilistic_sharpe(sr, 0.0, T, m->skewness, m->kurtosis);
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
    cJSON_AddNumberToObject(o, "psr", fh_probabilistic_sharpe(m->sharpe / sqrt(periods_per_year),
                                                              0.0, m->steps, m->skewness,
                                                              m->kurtosis));
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
        const fh_backtest_metrics *g = policy(r, FH_POLICY_GREEDY);
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
        cJSON_AddItemToArray(stitched, o);
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
    fh_status st = fh_write_text_atomically(path, text, err);
    free(text);
    return st;
}

static fh_status write_outputs(walkforward *w, const fh_train_config *cfg, fh_error *err)
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
        write_tables(w, cfg, f);
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

/* Resume: each fold run's record read and checked (cli/walkforward_record.h). A record
 * that does not hold is reported and its run retrained; one of another configuration or
 * other data refuses the walk-forward before anything is trained or moved. */
static fh_status read_records(const walkforward *w, const fh_train_config *base,
                              fh_walkforward_record *records,
                              fh_walkforward_record_state *state, fh_error *err)
{
    const int runs = w->folds * w->seeds;
    int finished = 0;
    for (int k = 0; k < w->folds; k++)
        for (int s = 0; s < w->seeds; s++) {
            const int i = k * w->seeds + s;
            fh_train_config cfg;
            fold_config(base, k, s, &cfg);
            char path[FH_RUN_DIR_PATH_MAX], why[1100];
            record_path(&cfg, path, sizeof path);
            state[i] = fh_walkforward_record_read(path, k + 1, cfg.seed, &records[i], why,
                                                  sizeof why);
            if (state[i] == FH_WALKFORWARD_RECORD_INVALID)
                printf("note: %s is not trusted (%s): fold %d, seed %llu is retrained\n",
                       path, why, k + 1, (unsigned long long)cfg.seed);
            finished += state[i] == FH_WALKFORWARD_RECORD_OK;
        }
    if (!finished)
        return FH_OK;
    /* the data's identity, as the fold runs' checkpoints record it */
    fh_train_config cfg;
    fold_config(base, 0, 0, &cfg);
    fh_run_data data;
    fh_status st = fh_run_data_load(&data, &cfg, NULL, err);
    if (st != FH_OK)
        return st;
    char source[FH_CONFIG_STRING_MAX + 64];
    fh_run_data_source(&cfg, source, sizeof source);
    fh_data_identity now;
    fh_data_identity_of(&now, &data.bars, source);
    fh_run_data_free(&data);
    for (int i = 0; st == FH_OK && i < runs; i++) {
        if (state[i] != FH_WALKFORWARD_RECORD_OK)
            continue;
        fold_config(base, i / w->seeds, i % w->seeds, &cfg);
        char *json = fh_train_config_to_json(&cfg), why[2048];
        if (!json)
            return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
        if (!fh_walkforward_record_compare(&records[i], json, &now, why, sizeof why)) {
            char path[FH_RUN_DIR_PATH_MAX];
            record_path(&cfg, path, sizeof path);
            st = fh_error_set(err, FH_ERR_INPUT,
                              "%s: fold %d, seed %llu finished with other settings or data "
                              "than these (%s); resuming would stitch runs of two "
                              "configurations. Rerun with the settings it was made with, "
                              "choose a new --out, or pass --force to retrain every fold "
                              "(each fold's files then move into its superseded-<time>/)",
                              path, i / w->seeds + 1, (unsigned long long)cfg.seed, why);
        }
        free(json);
    }
    if (st == FH_OK)
        printf("resuming: %d of %d fold runs finished before and are kept (each checked "
               "against its model), %d to train\n", finished, runs, runs - finished);
    return st;
}

int fh_cmd_walkforward(int argc, char **argv)
{
    fh_train_config cfg;
    fh_error err;
    fh_error_clear(&err);
    int help = 0;
    /* the table's keys, with walk-forward's own default: 5 folds */
    static const fh_key_flag defaults[] = {{.key = "walkforward_folds", .value = "5"}};
    if (fh_config_from_flags_with(&cfg, "walkforward",
                                  "Walk-forward evaluation: K folds (--walkforward-folds, default 5) of\n"
                                  "training on the bars before each fold's test segment (expanding or\n"
                                  "rolling window, model chosen on the validation split before it),\n"
                                  "--walkforward-seeds seeds each; the segments stitched into one\n"
                                  "out-of-sample path per seed, reported against buy-and-hold with\n"
                                  "standard errors and the deflated Sharpe. Takes every train flag.\n"
                                  "Killed half-way, it resumes when rerun with the same --out and\n"
                                  "settings: the fold runs that finished are kept, the others retrained\n"
                                  "(docs/WALKFORWARD.md); --force retrains every fold.",
                                  defaults, 1, argc, argv, &help, &err) != FH_OK)
        return fh_cli_report("walkforward", &err);
    if (help)
        return 0;
    if (cfg.resume[0]) {
        fh_error_set(&err, FH_ERR_INPUT, "--resume does not apply: a walk-forward killed "
                     "half-way resumes when rerun with the same --out and settings (its "
                     "finished fold runs kept; docs/WALKFORWARD.md)");
        return fh_cli_report("walkforward", &err);
    }
    if (cfg.walkforward_folds < 2) {
        fh_error_set(&err, FH_ERR_INPUT, "--walkforward-folds %d: a walk-forward needs 2 "
                     "folds or more (default 5)", cfg.walkforward_folds);
        return fh_cli_report("walkforward", &err);
    }
    if (fh_train_config_validate(&cfg, &err) != FH_OK)
        return fh_cli_report("walkforward", &err);
    if (!cfg.out[0] &&
        fh_run_dir_new_name(cfg.out, sizeof cfg.out, &cfg, "walkforward", &err) != FH_OK)
        return fh_cli_report("walkforward", &err);
    char probe[FH_CONFIG_STRING_MAX + 32];
    snprintf(probe, sizeof probe, "%s/walkforward.json", cfg.out);
    struct stat sb;
    if (stat(probe, &sb) == 0 && !cfg.force) {
        fh_error_set(&err, FH_ERR_INPUT, "%s holds a walk-forward already (%s: it finished); "
                     "choose a new --out, or --force (every fold is then retrained, each "
                     "fold's run directory moving its files into superseded-<time>/)",
                     cfg.out, probe);
        return fh_cli_report("walkforward", &err);
    }
    if (fh_make_dirs(cfg.out, &err) != FH_OK)
        return fh_cli_report("walkforward", &err);
    fh_run_dir lock; /* one walk-forward at a time in OUT: a resume decides what to keep */
    if (fh_run_dir_lock(&lock, cfg.out, &err) != FH_OK)
        return fh_cli_report("walkforward", &err);
    if (lock.note[0])
        printf("note: %s\n", lock.note);
    fh_config_print(&cfg, stdout);
    printf("walk-forward: %d folds x %d seeds into %s\n", cfg.walkforward_folds,
           cfg.walkforward_seeds, cfg.out);

    walkforward w;
    memset(&w, 0, sizeof w);
    w.folds = cfg.walkforward_folds;
    w.seeds = cfg.walkforward_seeds;
    size_t runs = (size_t)w.folds * (size_t)w.seeds;
    w.reports = calloc(runs, sizeof *w.reports);
    w.bounds = calloc((size_t)w.folds, sizeof *w.bounds);
    w.split_text = calloc((size_t)w.folds, sizeof *w.split_text);
    w.chosen_iteration = calloc(runs, sizeof *w.chosen_iteration);
    w.validation_sharpe = calloc(runs, sizeof *w.validation_sharpe);
    w.train_seconds = calloc(runs, sizeof *w.train_seconds);
    w.stitched = calloc((size_t)w.seeds, sizeof *w.stitched);
    fh_walkforward_record *records = calloc(runs, sizeof *records);
    fh_walkforward_record_state *state = calloc(runs, sizeof *state);
    fh_status st = FH_OK;
    if (!w.reports || !w.bounds || !w.split_text || !w.chosen_iteration ||
        !w.validation_sharpe || !w.train_seconds || !w.stitched || !records || !state)
        st = fh_error_set(&err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
    if (st == FH_OK && !cfg.force)
        st = read_records(&w, &cfg, records, state, &err);
    double t0 = fh_clock_seconds();
    for (int k = 0; st == FH_OK && k < w.folds; k++)
        for (int s = 0; st == FH_OK && s < w.seeds; s++) {
            const int i = k * w.seeds + s;
            char why[1200] = "";
            if (state[i] == FH_WALKFORWARD_RECORD_OK &&
                keep_one(&w, &cfg, k, s, &records[i], why, sizeof why))
                continue;
            if (state[i] == FH_WALKFORWARD_RECORD_OK)
                printf("  seed %llu: not kept: %s; retraining it\n",
                       (unsigned long long)(cfg.seed + (uint64_t)s), why);
            st = run_one(&w, &cfg, k, s, &err);
        }
    for (size_t i = 0; records && i < runs; i++)
        fh_walkforward_record_free(&records[i]);
    free(records);
    free(state);
    /* per seed: the folds' reports in time order, stitched */
    fh_eval_report *column = st == FH_OK ? calloc((size_t)w.folds, sizeof *column) : NULL;
    if (st == FH_OK && !column)
        st = fh_error_set(&err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
    for (int s = 0; st == FH_OK && s < w.seeds; s++) {
        for (int k = 0; k < w.folds; k++)
            column[k] = w.reports[k * w.seeds + s];
        st = fh_walkforward_stitch(column, w.folds, &w.stitched[s], &err);
    }
    free(column);
    if (st == FH_OK)
        st = write_outputs(&w, &cfg, &err);
    int rc = 0;
    if (st != FH_OK) {
        rc = fh_cli_report("walkforward", &err);
    } else {
        printf("\n");
        write_tables(&w, &cfg, stdout);
        printf("\n%d runs (%d kept from before, %d trained) in %.1f s; written to "
               "%s/walkforward.md, walkforward.json, returns_seed*.csv, eval_seed*.json%s\n",
               (int)runs, w.kept, (int)runs - w.kept, fh_clock_seconds() - t0, cfg.out,
               fh_tear_sheet_available(&err) == FH_OK ? ", report_seed*.html" : "");
    }
    walkforward_free(&w);
    fh_run_dir_close(&lock);
    return rc;
}
