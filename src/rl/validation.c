/* validation.c — model selection on the validation split (issue 20; train_loop.h,
 * docs/EVALUATION.md): every cfg.eval_every iterations the greedy policy (any learner's:
 * learner.h's policy) is backtested on
 * the validation split, the row goes to OUT/validation.csv, and the best Sharpe so far
 * is kept as OUT/best.safetensors (a full checkpoint: it resumes and evaluates like any
 * other). The test split is never read here.
 * Several assets (run_data.h): each asset's validation split is backtested on its own;
 * the row's metrics are the assets' means (a flat asset, NaN Sharpe, counts as Sharpe 0
 * and PSR 0), the mean Sharpe picks best.safetensors, the mean PSR(0) is what the
 * deployment gate reads, and the row ends with each asset's Sharpe and PSR(0). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "foxhunt/metrics.h"
#include "foxhunt/evaluate.h"
#include "foxhunt/files.h"
#include "foxhunt/safetensors.h"
#include "rl/validation.h"

#define VALIDATION_HEADER                                                                 \
    "iteration,global_step,sharpe,sharpe_se,cumulative_return,max_drawdown,"              \
    "time_in_market,turnover,psr,best\n"

static void path_in_out(const fh_train_loop *t, const char *name, char *out, size_t size)
{
    snprintf(out, size, "%s/%s", t->learner.cfg.out, name);
}

/* Keeps the header and the rows of iterations <= keep (a resume in place): written to
 * PATH.tmp and renamed, so a failure leaves the file as it was. */
static fh_status trim_rows(const char *path, int64_t keep, fh_error *err)
{
    fh_error open_err;
    FILE *in = fh_fopen_regular(path, "validation file", O_RDONLY, &open_err);
    if (!in) {
        if (errno == ENOENT)
            return FH_OK;
        if (err)
            *err = open_err;
        return open_err.status;
    }
    char tmp[FH_RUN_DIR_PATH_MAX + 8];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *out = fh_fopen_regular(tmp, "validation file's temporary file",
                                 O_WRONLY | O_CREAT | O_TRUNC, err);
    if (!out) {
        fclose(in);
        return err ? err->status : FH_ERR_FAILURE;
    }
    char line[512];
    int first = 1, ok = 1;
    while (fgets(line, sizeof line, in)) {
        char *end;
        long long it = strtoll(line, &end, 10);
        if (first || (end != line && *end == ',' && it <= keep))
            ok &= fputs(line, out) >= 0;
        first = 0;
    }
    int read_errno = ferror(in) ? (errno ? errno : EIO) : 0;
    fclose(in);
    int e = read_errno ? read_errno : fh_replace_with_tmp(out, ok, 0, tmp, path);
    if (read_errno)
        fh_replace_with_tmp(out, 0, 0, tmp, path); /* keep the file as it was */
    if (e)
        return fh_error_set(err, FH_ERR_FAILURE, "cannot rewrite %s: %s%s (it is as it was)",
                            path, strerror(e), fh_write_error_hint(e));
    return FH_OK;
}

/* The best so far from an existing best.safetensors (its policy and its metadata). */
static fh_status read_best(fh_train_loop *t, const char *path, fh_error *err)
{
    fh_st_file f;
    memset(&f, 0, sizeof f);
    fh_status st = fh_st_read(&f, path, err);
    if (st != FH_OK)
        return st;
    const char *sharpe = fh_st_metadata(&f, "validation.sharpe");
    const char *iteration = fh_st_metadata(&f, "validation.iteration");
    /* validation.psr: optional (a best.safetensors from before the gate has none: NaN,
     * which the gate reads as unknown) */
    const char *psr_text = fh_st_metadata(&f, "validation.psr");
    char *end1 = NULL, *end2 = NULL, *end3 = NULL;
    double psr = psr_text ? strtod(psr_text, &end3) : NAN;
    if (psr_text && (*end3 || !(psr >= 0 && psr <= 1)))
        psr = NAN;
    double s = sharpe ? strtod(sharpe, &end1) : NAN;
    long long it = iteration ? strtoll(iteration, &end2, 10) : -1;
    int valid = sharpe && iteration && !*end1 && !*end2 && isfinite(s) && it >= 1 &&
                it <= t->learner.iteration;
    fh_st_file_free(&f); /* the strings (and end1, end2) point into f */
    if (!valid)
        return fh_error_set(err, FH_ERR_INPUT,
                            "%s: its validation.sharpe / validation.iteration metadata is "
                            "missing or invalid; move the file away to start the selection "
                            "afresh", path);
    fh_checkpoint ck;
    memset(&ck, 0, sizeof ck);
    ck.nets[t->learner.ops->policy_net] = &t->best_policy;
    if ((st = fh_checkpoint_load(path, &ck, NULL, err)) != FH_OK)
        return st;
    t->has_best = 1;
    t->best_sharpe = s;
    t->best_psr = psr;
    t->best_iteration = it;
    snprintf(t->best_checkpoint, sizeof t->best_checkpoint, "%s", path);
    return FH_OK;
}

fh_status fh_validation_start(fh_train_loop *t, fh_error *err)
{
    const fh_learner *l = &t->learner;
    fh_market_view view = fh_market_view_of(&fh_run_data_asset(l->data, 0)->market,
                                            FH_SPLIT_VALIDATION);
    if (view.n < 2)
        return fh_error_set(err, FH_ERR_INPUT,
                            "eval_every %d needs a validation split, and this run has none "
                            "(validation_fraction %g); set --validation-fraction (e.g. 0.1) or "
                            "--eval-every 0", l->cfg.eval_every, l->cfg.validation_fraction);
    fh_status st = FH_OK;
    if (!t->best_policy.mem &&
        (st = fh_mlp_init(&t->best_policy, l->ops->policy_net, err)) != FH_OK)
        return st;
    if (l->iteration == 0)
        return FH_OK;
    char path[FH_RUN_DIR_PATH_MAX];
    path_in_out(t, "validation.csv", path, sizeof path);
    if ((st = trim_rows(path, l->iteration, err)) != FH_OK)
        return st;
    path_in_out(t, "best.safetensors", path, sizeof path);
    struct stat sb; /* no open: a FIFO there is refused by fh_st_read, never read */
    if (lstat(path, &sb) != 0 && errno == ENOENT)
        return FH_OK;
    return read_best(t, path, err);
}

static fh_status append_row(const fh_train_loop *t, const fh_backtest_metrics *m, double psr,
                            const fh_backtest_metrics *per_asset, const double *asset_psr,
                            int best, fh_error *err)
{
    char path[FH_RUN_DIR_PATH_MAX];
    path_in_out(t, "validation.csv", path, sizeof path);
    int fd = fh_open_regular(path, "validation file", O_WRONLY | O_CREAT | O_APPEND, err);
    if (fd < 0)
        return err ? err->status : FH_ERR_FAILURE;
    struct stat sb;
    int fresh = fstat(fd, &sb) == 0 && sb.st_size == 0;
    const fh_run_data *data = t->learner.data;
    const int n_assets = data->assets ? data->n_assets : 0;
    char header[4096] = "", row[4096];
    if (fresh) {
        size_t used = (size_t)snprintf(header, sizeof header, "%s", VALIDATION_HEADER);
        if (n_assets)
            header[--used] = 0; /* the per-asset columns go before the newline */
        for (int k = 0; k < n_assets && used < sizeof header; k++) {
            char name[96];
            fh_run_data_asset_name(&data->assets[k], name, sizeof name);
            used += (size_t)snprintf(header + used, sizeof header - used, ",sharpe_%s,psr_%s",
                                     name, name);
        }
        if (n_assets && used < sizeof header)
            snprintf(header + used, sizeof header - used, "\n");
    }
    size_t used = (size_t)snprintf(row, sizeof row,
                                   "%s%lld,%lld,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%d",
                                   header, (long long)t->learner.iteration,
                                   (long long)(t->learner.iteration * t->learner.run_steps),
                                   m->sharpe, m->sharpe_se, m->cumulative_return,
                                   m->max_drawdown, m->time_in_market, m->turnover, psr, best);
    for (int k = 0; k < n_assets && used < sizeof row; k++)
        used += (size_t)snprintf(row + used, sizeof row - used, ",%.17g,%.17g",
                                 per_asset[k].sharpe, asset_psr[k]);
    if (used < sizeof row)
        snprintf(row + used, sizeof row - used, "\n");
    fh_status st = fh_append_whole(fd, path, row, err); /* whole or not at all */
    if (close(fd) != 0 && st == FH_OK) {
        int e = errno;
        st = fh_error_set(err, FH_ERR_FAILURE, "writing %s failed: %s%s", path, strerror(e),
                          fh_write_error_hint(e));
    }
    return st;
}

int fh_deploy_gate(int has_best, double validation_psr, double min_psr, char *why, size_t n)
{
    int deploy = min_psr <= 0 || (has_best && validation_psr >= min_psr);
    if (min_psr <= 0)
        snprintf(why, n, "the gate is off (deploy_min_psr 0): the chosen model trades");
    else if (!has_best)
        snprintf(why, n, "no model was chosen on validation: the deployed policy stays flat");
    else if (!isfinite(validation_psr))
        snprintf(why, n, "the chosen model's validation PSR(0) is unknown (a best.safetensors "
                 "from before the gate): the deployed policy stays flat");
    else
        snprintf(why, n, "the chosen model's validation PSR(0) %.3f is %s deploy_min_psr %.2f: "
                 "%s", validation_psr, deploy ? ">=" : "<", min_psr,
                 deploy ? "it trades the test split" : "the deployed policy stays flat");
    return deploy;
}

int fh_validation_choice_warning(int has_best, double validation_sharpe, char *out,
                                 size_t n)
{
    if (n)
        out[0] = 0;
    if (!has_best)
        snprintf(out, n, "no validation backtest gave a finite Sharpe (the greedy policy "
                 "never traded, or its returns had no variance): the last model is "
                 "evaluated, and nothing says it beats doing nothing");
    else if (!(validation_sharpe > 0))
        snprintf(out, n, "the model chosen on the validation split has validation Sharpe "
                 "%.2f <= 0: on validation it did worse than staying flat, which loses "
                 "nothing; do not trade it (docs/EVALUATION.md)", validation_sharpe);
    else
        return 0;
    return 1;
}

/* Asset k's greedy backtest on its validation split and its PSR(0). */
static fh_status validate_asset(const fh_learner *l, int k, fh_backtest_metrics *m,
                                double *psr, fh_error *err)
{
    const fh_train_config *cfg = &l->cfg;
    const fh_run_data *asset = fh_run_data_asset(l->data, k);
    fh_market_view view = fh_market_view_of(&asset->market, FH_SPLIT_VALIDATION);
    double ppy = cfg->periods_per_year > 0 ? cfg->periods_per_year
                                           : fh_periods_per_year(asset->market.interval_seconds);
    fh_status st = fh_backtest_run(m, FH_POLICY_GREEDY, l->ops->policy(l), &cfg->env, &view,
                                   NULL, ppy, cfg->seed, NULL, err);
    if (st != FH_OK && l->data->assets)
        fh_error_prefix(err, "validation of %s: ", asset->path);
    *psr = st == FH_OK ? fh_backtest_psr(m, ppy) : NAN;
    return st;
}

/* The assets' mean metrics into *m and mean PSR(0) into *psr; a flat asset (NaN Sharpe)
 * counts as Sharpe 0 and PSR 0, all of them flat leaves the mean NaN. */
static void mean_over_assets(const fh_backtest_metrics *per, const double *psr_per, int n,
                             fh_backtest_metrics *m, double *psr)
{
    memset(m, 0, sizeof *m);
    double se2 = 0.0, psr_sum = 0.0;
    int finite = 0;
    for (int k = 0; k < n; k++) {
        int ok = isfinite(per[k].sharpe);
        finite += ok;
        m->sharpe += ok ? per[k].sharpe / n : 0.0;
        se2 += ok ? per[k].sharpe_se * per[k].sharpe_se : 0.0;
        psr_sum += isfinite(psr_per[k]) ? psr_per[k] : 0.0;
        m->cumulative_return += per[k].cumulative_return / n;
        m->max_drawdown += per[k].max_drawdown / n;
        m->time_in_market += per[k].time_in_market / n;
        m->turnover += per[k].turnover / n;
        m->steps += per[k].steps;
    }
    m->sharpe_se = sqrt(se2) / n; /* of the mean of independent estimates */
    *psr = psr_sum / n;
    if (!finite)
        m->sharpe = m->sharpe_se = *psr = NAN;
}

fh_status fh_validation_run(fh_train_loop *t, fh_error *err)
{
    fh_learner *l = &t->learner;
    const fh_mlp *policy = l->ops->policy(l);
    const int n_assets = l->data->assets ? l->data->n_assets : 1;
    fh_backtest_metrics m, per[FH_MAX_ASSETS];
    double psr, psr_per[FH_MAX_ASSETS];
    fh_status st = FH_OK;
    for (int k = 0; k < n_assets && st == FH_OK; k++)
        st = validate_asset(l, k, &per[k], &psr_per[k], err);
    if (st != FH_OK)
        return st;
    if (n_assets == 1) {
        m = per[0];
        psr = psr_per[0];
    } else {
        mean_over_assets(per, psr_per, n_assets, &m, &psr);
    }
    /* a NaN Sharpe (a flat policy: no variance) never counts as a best */
    int best = isfinite(m.sharpe) && (!t->has_best || m.sharpe > t->best_sharpe);
    if (best) {
        char path[FH_RUN_DIR_PATH_MAX], sharpe[40], iteration[32], psr_text[40];
        path_in_out(t, "best.safetensors", path, sizeof path);
        snprintf(sharpe, sizeof sharpe, "%.17g", m.sharpe);
        snprintf(iteration, sizeof iteration, "%lld", (long long)l->iteration);
        snprintf(psr_text, sizeof psr_text, "%.17g", psr);
        /* its validation, then the record of what made the run (run_record.h) */
        const char *keys[3 + FH_RUN_RECORD_KEYS] = {"validation.sharpe", "validation.iteration",
                                                    "validation.psr"};
        const char *values[3 + FH_RUN_RECORD_KEYS] = {sharpe, iteration, psr_text};
        fh_save_meta record = fh_run_record_meta(&t->record);
        for (int k = 0; k < record.n; k++) {
            keys[3 + k] = record.keys[k];
            values[3 + k] = record.values[k];
        }
        fh_save_meta meta = {keys, values, 3 + record.n};
        if ((st = l->ops->save(l, path, &meta, err)) != FH_OK)
            return st;
        fh_mlp_copy(&t->best_policy, policy);
        t->has_best = 1;
        t->best_sharpe = m.sharpe;
        t->best_psr = psr;
        t->best_iteration = l->iteration;
        snprintf(t->best_checkpoint, sizeof t->best_checkpoint, "%s", path);
    }
    if ((st = append_row(t, &m, psr, per, psr_per, best, err)) != FH_OK)
        return st;
    t->validation = m;
    t->validation_psr = psr;
    t->validated = 1;
    return FH_OK;
}
