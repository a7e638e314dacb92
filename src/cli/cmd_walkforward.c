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

#include "cli/walkforward.h"

static void walkforward_free(walkforward *w)
{
    for (int i = 0; w->reports && i < w->folds * w->seeds; i++)
        fh_eval_report_free(&w->reports[i]);
    for (int s = 0; w->stitched && s < w->seeds; s++)
        fh_eval_report_free(&w->stitched[s]);
    for (int s = 0; w->deployed && s < w->seeds; s++)
        fh_eval_report_free(&w->deployed[s]);
    free(w->deployed);
    free(w->validation_psr);
    free(w->deploy);
    free(w->reports);
    free(w->bounds);
    free(w->split_text);
    free(w->chosen_iteration);
    free(w->validation_sharpe);
    free(w->train_seconds);
    free(w->stitched);
    free(w->model_path);
    free(w->ensemble_validation_sharpe);
    free(w->ensemble_validation_psr);
    free(w->ensemble_deploy);
    fh_eval_report_free(&w->ensemble);
    fh_eval_report_free(&w->ensemble_deployed);
}

/* The configuration of fold k's run with seed index s, in OUT/fold<k>_seed<seed>. */
void fh_wf_fold_config(const fh_train_config *base, int k, int s, fh_train_config *cfg)
{
    *cfg = *base;
    cfg->fold = k + 1;
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
    const fh_backtest_metrics *g = fh_wf_policy(&w->reports[i], FH_POLICY_GREEDY);
    const fh_backtest_metrics *b = fh_wf_policy(&w->reports[i], FH_POLICY_BUY_AND_HOLD);
    printf("  seed %llu: %s, model of iteration %lld%s; test %s .. %s: greedy Sharpe %.2f "
           "+- %.2f, buy-and-hold %.2f +- %.2f\n",
           (unsigned long long)cfg->seed, how, (long long)w->chosen_iteration[i],
           has_best ? " (best on validation)" : " (the last)", w->reports[i].first_time,
           w->reports[i].last_time, g ? g->sharpe : NAN, g ? g->sharpe_se : NAN,
           b ? b->sharpe : NAN, b ? b->sharpe_se : NAN);
    char warning[320], gate[320];
    if (cfg->eval_every > 0 &&
        fh_validation_choice_warning(has_best, w->validation_sharpe[i], warning, sizeof warning))
        printf("  warning: fold %d, seed %llu: %s\n", i / w->seeds + 1,
               (unsigned long long)cfg->seed, warning);
    fh_deploy_gate(has_best && isfinite(w->validation_sharpe[i]), w->validation_psr[i],
                   cfg->deploy_min_psr, gate, sizeof gate);
    printf("  deployment gate: %s\n", gate);
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
    rec.fold = cfg->fold;
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
    fh_wf_fold_config(base, k, s, &cfg);
    cfg.force = 1; /* this run was judged unfinished (or --force): nothing here is kept */
    const int i = k * w->seeds + s;
    fh_train_loop loop;
    double t0 = fh_clock_seconds();
    fh_status st = fh_train_loop_init(&loop, &cfg, err);
    const fh_learner *l = &loop.learner;
    if (st == FH_OK)
        fh_run_record_set_command(&loop.record, "foxhunt", w->argc, w->argv);
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
        w->validation_psr[i] = loop.has_best ? loop.best_psr : NAN;
        snprintf(w->model_path[i], sizeof w->model_path[i], "%s", model);
        char json[FH_CONFIG_STRING_MAX + 32], returns[FH_CONFIG_STRING_MAX + 32];
        snprintf(json, sizeof json, "%s/eval.json", cfg.out);
        snprintf(returns, sizeof returns, "%s/returns.csv", cfg.out);
        st = fh_eval_report_run(&w->reports[i], chosen, &cfg, l->data, FH_SPLIT_TEST, cfg.seed,
                                1, err);
        if (st == FH_OK) /* the fold's test numbers beside its training curves */
            fh_eval_report_log_tensorboard(&w->reports[i], &loop.run,
                                           l->iteration * l->run_steps, "eval");
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
    fh_tfevents_close(&loop.run.tb);
    if (loop.run.tb.failed) /* a warning: the fold's record is its csv and json files */
        fprintf(stderr, "  warning: %s\n", loop.run.tb.warning);
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
                        double *psr, char *why, size_t n)
{
    *psr = NAN;
    if (strcmp(rec->model, "best.safetensors") == 0) {
        /* validation.psr: from before the gate none (NaN: the gate reads it as unknown) */
        const char *pv = fh_st_metadata(f, "validation.psr");
        char *end = NULL;
        double v = pv ? strtod(pv, &end) : NAN;
        if (pv && !*end && v >= 0 && v <= 1)
            *psr = v;
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
    fh_wf_fold_config(base, k, s, &cfg);
    const int i = k * w->seeds + s;
    char path[FH_RUN_DIR_PATH_MAX];
    snprintf(path, sizeof path, "%.900s/%s", cfg.out, rec->model);
    fh_error err;
    fh_st_file f;
    memset(&f, 0, sizeof f);
    int64_t chosen = 0;
    double sharpe = NAN, psr = NAN;
    int ok = fh_st_read(&f, path, &err) == FH_OK;
    if (!ok)
        snprintf(why, n, "%s", err.message);
    else if (fh_fnv1a(f.file, f.file_len, FH_FNV1A_OFFSET) != rec->model_hash)
        ok = 0, snprintf(why, n, "%s is not the model the run chose (its bytes changed)", path);
    else
        ok = model_choice(&f, rec, &cfg, &chosen, &sharpe, &psr, why, n);
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
        w->validation_psr[i] = psr;
        snprintf(w->model_path[i], sizeof w->model_path[i], "%s", path);
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
            fh_wf_fold_config(base, k, s, &cfg);
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
    fh_wf_fold_config(base, 0, 0, &cfg);
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
        fh_wf_fold_config(base, i / w->seeds, i % w->seeds, &cfg);
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
    if (strchr(cfg.data, ',')) {
        fh_error_set(&err, FH_ERR_INPUT, "--data \"%s\" names several assets: a walk-forward "
                     "trains on one asset; run it per asset, or train on several with "
                     "foxhunt train (docs/REAL_DATA.md, \"Training on several assets\")",
                     cfg.data);
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
    w.argc = argc;
    w.argv = argv;
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
    w.deployed = calloc((size_t)w.seeds, sizeof *w.deployed);
    w.validation_psr = calloc(runs, sizeof *w.validation_psr);
    w.deploy = calloc(runs, sizeof *w.deploy);
    w.model_path = calloc(runs, sizeof *w.model_path);
    w.ensemble_validation_sharpe = calloc((size_t)w.folds, sizeof(double));
    w.ensemble_validation_psr = calloc((size_t)w.folds, sizeof(double));
    w.ensemble_deploy = calloc((size_t)w.folds, sizeof(int));
    fh_walkforward_record *records = calloc(runs, sizeof *records);
    fh_walkforward_record_state *state = calloc(runs, sizeof *state);
    fh_status st = FH_OK;
    if (!w.reports || !w.bounds || !w.split_text || !w.chosen_iteration ||
        !w.validation_sharpe || !w.train_seconds || !w.stitched || !w.deployed ||
        !w.validation_psr || !w.deploy || !w.model_path || !w.ensemble_validation_sharpe ||
        !w.ensemble_validation_psr || !w.ensemble_deploy || !records || !state)
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
        st = fh_walkforward_gate(&w, &cfg, &err);
    if (st == FH_OK)
        st = fh_walkforward_ensemble(&w, &cfg, &err);
    if (st == FH_OK)
        st = fh_walkforward_write_outputs(&w, &cfg, &err);
    int rc = 0;
    if (st != FH_OK) {
        rc = fh_cli_report("walkforward", &err);
    } else {
        printf("\n");
        fh_walkforward_write_tables(&w, &cfg, stdout);
        printf("\n%d runs (%d kept from before, %d trained) in %.1f s; written to "
               "%s/walkforward.md, walkforward.json, returns_seed*.csv, eval_seed*.json%s\n",
               (int)runs, w.kept, (int)runs - w.kept, fh_clock_seconds() - t0, cfg.out,
               fh_tear_sheet_available(&err) == FH_OK ? ", report_seed*.html" : "");
    }
    walkforward_free(&w);
    fh_run_dir_close(&lock);
    return rc;
}
