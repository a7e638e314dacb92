/* validation.c — model selection on the validation split (issue 20; trainer.h,
 * docs/EVALUATION.md): every cfg.eval_every iterations the greedy actor is backtested on
 * the validation split, the row goes to OUT/validation.csv, and the best Sharpe so far
 * is kept as OUT/best.safetensors (a full checkpoint: it resumes and evaluates like any
 * other). The test split is never read here. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "foxhunt/metrics.h"
#include "foxhunt/files.h"
#include "foxhunt/safetensors.h"
#include "foxhunt/trainer.h"
#include "rl/trainer_dist.h"

#define VALIDATION_HEADER                                                                 \
    "iteration,global_step,sharpe,sharpe_se,cumulative_return,max_drawdown,"              \
    "time_in_market,turnover,best\n"

static void path_in_out(const fh_trainer *t, const char *name, char *out, size_t size)
{
    snprintf(out, size, "%s/%s", t->cfg.out, name);
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

/* The best so far from an existing best.safetensors (its actor and its metadata). */
static fh_status read_best(fh_trainer *t, const char *path, fh_error *err)
{
    fh_st_file f;
    memset(&f, 0, sizeof f);
    fh_status st = fh_st_read(&f, path, err);
    if (st != FH_OK)
        return st;
    const char *sharpe = fh_st_metadata(&f, "validation.sharpe");
    const char *iteration = fh_st_metadata(&f, "validation.iteration");
    char *end1 = NULL, *end2 = NULL;
    double s = sharpe ? strtod(sharpe, &end1) : NAN;
    long long it = iteration ? strtoll(iteration, &end2, 10) : -1;
    int valid = sharpe && iteration && !*end1 && !*end2 && isfinite(s) && it >= 1 &&
                it <= t->iteration;
    fh_st_file_free(&f); /* the strings (and end1, end2) point into f */
    if (!valid)
        return fh_error_set(err, FH_ERR_INPUT,
                            "%s: its validation.sharpe / validation.iteration metadata is "
                            "missing or invalid; move the file away to start the selection "
                            "afresh", path);
    fh_checkpoint ck;
    memset(&ck, 0, sizeof ck);
    ck.nets[FH_NET_ACTOR] = &t->best_actor;
    if ((st = fh_checkpoint_load(path, &ck, NULL, err)) != FH_OK)
        return st;
    t->has_best = 1;
    t->best_sharpe = s;
    t->best_iteration = it;
    snprintf(t->best_checkpoint, sizeof t->best_checkpoint, "%s", path);
    return FH_OK;
}

fh_status fh_trainer_validation_start(fh_trainer *t, fh_error *err)
{
    fh_market_view view = fh_market_view_of(&t->data.market, FH_SPLIT_VALIDATION);
    if (view.n < 2)
        return fh_error_set(err, FH_ERR_INPUT,
                            "eval_every %d needs a validation split, and this run has none "
                            "(validation_fraction %g); set --validation-fraction (e.g. 0.1) or "
                            "--eval-every 0", t->cfg.eval_every, t->cfg.validation_fraction);
    fh_status st = FH_OK;
    if (!t->best_actor.mem && (st = fh_mlp_init(&t->best_actor, FH_NET_ACTOR, err)) != FH_OK)
        return st;
    if (t->iteration == 0)
        return FH_OK;
    char path[FH_RUN_DIR_PATH_MAX];
    path_in_out(t, "validation.csv", path, sizeof path);
    if ((st = trim_rows(path, t->iteration, err)) != FH_OK)
        return st;
    path_in_out(t, "best.safetensors", path, sizeof path);
    struct stat sb; /* no open: a FIFO there is refused by fh_st_read, never read */
    if (lstat(path, &sb) != 0 && errno == ENOENT)
        return FH_OK;
    return read_best(t, path, err);
}

static fh_status append_row(const fh_trainer *t, const fh_backtest_metrics *m, int best,
                            fh_error *err)
{
    char path[FH_RUN_DIR_PATH_MAX];
    path_in_out(t, "validation.csv", path, sizeof path);
    int fd = fh_open_regular(path, "validation file", O_WRONLY | O_CREAT | O_APPEND, err);
    if (fd < 0)
        return err ? err->status : FH_ERR_FAILURE;
    struct stat sb;
    int fresh = fstat(fd, &sb) == 0 && sb.st_size == 0;
    char row[1024];
    snprintf(row, sizeof row, "%s%lld,%lld,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%d\n",
             fresh ? VALIDATION_HEADER : "", (long long)t->iteration,
             (long long)(t->iteration * fh_trainer_dist_run_steps(t)), m->sharpe,
             m->sharpe_se, m->cumulative_return, m->max_drawdown, m->time_in_market,
             m->turnover, best);
    fh_status st = fh_append_whole(fd, path, row, err); /* whole or not at all */
    if (close(fd) != 0 && st == FH_OK) {
        int e = errno;
        st = fh_error_set(err, FH_ERR_FAILURE, "writing %s failed: %s%s", path, strerror(e),
                          fh_write_error_hint(e));
    }
    return st;
}

fh_status fh_trainer_validate(fh_trainer *t, fh_error *err)
{
    const fh_train_config *cfg = &t->cfg;
    fh_market_view view = fh_market_view_of(&t->data.market, FH_SPLIT_VALIDATION);
    double ppy = cfg->periods_per_year > 0 ? cfg->periods_per_year
                                           : fh_periods_per_year(t->data.market.interval_seconds);
    fh_backtest_metrics m;
    fh_status st = fh_backtest_run(&m, FH_POLICY_GREEDY, &t->actor, &cfg->env, &view, NULL,
                                   ppy, cfg->seed, NULL, err);
    if (st != FH_OK)
        return st;
    /* a NaN Sharpe (a flat policy: no variance) never counts as a best */
    int best = isfinite(m.sharpe) && (!t->has_best || m.sharpe > t->best_sharpe);
    if (best) {
        char path[FH_RUN_DIR_PATH_MAX], sharpe[40], iteration[32];
        path_in_out(t, "best.safetensors", path, sizeof path);
        snprintf(sharpe, sizeof sharpe, "%.17g", m.sharpe);
        snprintf(iteration, sizeof iteration, "%lld", (long long)t->iteration);
        const char *keys[2] = {"validation.sharpe", "validation.iteration"};
        const char *values[2] = {sharpe, iteration};
        if ((st = fh_trainer_save_with(t, path, NULL, 0, keys, values, 2, err)) != FH_OK)
            return st;
        fh_mlp_copy(&t->best_actor, &t->actor);
        t->has_best = 1;
        t->best_sharpe = m.sharpe;
        t->best_iteration = t->iteration;
        snprintf(t->best_checkpoint, sizeof t->best_checkpoint, "%s", path);
    }
    if ((st = append_row(t, &m, best, err)) != FH_OK)
        return st;
    t->validation = m;
    t->validated = 1;
    return FH_OK;
}
