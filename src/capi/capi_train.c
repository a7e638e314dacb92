/* capi_train.c — training from another language (capi.h, issue 36): `foxhunt train`'s
 * one loop (train_loop.h) behind a handle, with a callback per iteration that gets the
 * iteration's metrics.csv row and may stop the run.
 *
 * The handle does what cmd_train.c does before and around fh_train_loop_run (validate,
 * name the run directory, create the learner, open the run directory), so a run started
 * here leaves the CLI's run directory: config.json, metrics.csv/.jsonl, checkpoints,
 * final.safetensors (interrupted.safetensors after a stop), with eval_every validation.csv
 * and best.safetensors. The test-split evaluation that `foxhunt train` prints at the end
 * is the CLI's (fh_api_eval_run does it on any checkpoint). One process, one rank: the
 * data-parallel settings are refused. */
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "capi/capi_internal.h"
#include "foxhunt/run_dir.h"
#include "foxhunt/train_loop.h"

struct fh_api_trainer {
    fh_api_object obj;
    fh_train_loop loop;
    int ran;            /* fh_api_trainer_run was called: a loop runs once */
    int stopped;        /* the callback stopped the run */
};

void fh_api_trainer_free(fh_api_trainer *t)
{
    if (!capi_object_of(t, CAPI_TRAINER))
        return;
    capi_object_kill(&t->obj);
    fh_train_loop_free(&t->loop); /* releases the run directory's lock */
    free(t);
}

fh_api_trainer *fh_api_trainer_create(const fh_api_config *config, int flags, char *err,
                                      size_t err_cap)
{
    const fh_api_config *c = (const fh_api_config *)capi_object_of(config, CAPI_CONFIG);
    if (!c)
        return capi_fail_out(err, err_cap, "trainer: config: %s", fh_api_last_error(NULL));
    if (flags & ~(FH_API_TRAIN_FORCE | FH_API_TRAIN_ALLOW_OTHER_DATA))
        return capi_fail_out(err, err_cap, "trainer: flags 0x%x: only FH_API_TRAIN_FORCE (1) "
                             "and FH_API_TRAIN_ALLOW_OTHER_DATA (2) exist", (unsigned)flags);
    fh_train_config cfg = c->cfg;
    /* the CLI's --force and --allow-other-data: flags of a run, never saved with it */
    cfg.force = (flags & FH_API_TRAIN_FORCE) != 0;
    cfg.allow_other_data = (flags & FH_API_TRAIN_ALLOW_OTHER_DATA) != 0;
    if (cfg.gpus > 1 || cfg.world > 1)
        return capi_fail_out(err, err_cap, "trainer: gpus = %d, world = %d: a data-parallel "
                             "run has one process per GPU; start it with `foxhunt train "
                             "--gpus K` (docs/SCALING.md)", cfg.gpus, cfg.world);
    fh_api_trainer *t = calloc(1, sizeof *t);
    if (!t)
        return capi_fail_out(err, err_cap, "trainer: out of memory");
    capi_object_init(&t->obj, CAPI_TRAINER);
    t->loop.run.lock_fd = -1;
    fh_status st = fh_train_config_validate(&cfg, &t->obj.err);
    /* no out: a new runs/<data>__<algo>__<seed>__<time>/, as the CLI names it */
    if (st == FH_OK && !cfg.out[0])
        st = fh_run_dir_new_name(cfg.out, sizeof cfg.out, &cfg, NULL, &t->obj.err);
    if (st == FH_OK)
        st = fh_train_loop_init(&t->loop, &cfg, &t->obj.err);
    if (st == FH_OK)
        st = fh_train_loop_open_run(&t->loop, &t->obj.err);
    if (st != FH_OK) {
        capi_error_out(err, err_cap, &t->obj.err);
        fh_api_trainer_free(t);
        return NULL;
    }
    return t;
}

const char *fh_api_trainer_out(const fh_api_trainer *trainer)
{
    const fh_api_trainer *t = (const fh_api_trainer *)capi_object_of(trainer, CAPI_TRAINER);
    return t ? t->loop.learner.cfg.out : NULL;
}

int64_t fh_api_trainer_iteration(const fh_api_trainer *trainer)
{
    const fh_api_trainer *t = (const fh_api_trainer *)capi_object_of(trainer, CAPI_TRAINER);
    return t ? t->loop.learner.iteration : -1;
}

const char *fh_api_trainer_checkpoint(const fh_api_trainer *trainer)
{
    const fh_api_trainer *t = (const fh_api_trainer *)capi_object_of(trainer, CAPI_TRAINER);
    return t ? t->loop.last_checkpoint : NULL;
}

const char *fh_api_trainer_best_checkpoint(const fh_api_trainer *trainer)
{
    const fh_api_trainer *t = (const fh_api_trainer *)capi_object_of(trainer, CAPI_TRAINER);
    return t && t->loop.has_best ? t->loop.best_checkpoint : NULL;
}

int fh_api_trainer_stopped(const fh_api_trainer *trainer)
{
    const fh_api_trainer *t = (const fh_api_trainer *)capi_object_of(trainer, CAPI_TRAINER);
    return t ? t->stopped : -1;
}

typedef struct {
    fh_api_trainer *trainer;
    fh_api_train_callback callback;
    void *user;
    volatile sig_atomic_t stop;
} run_context;

/* The loop's hook: the row as metrics.csv writes it (after it was written), to the
 * caller's callback, whose 0 stops the run after this iteration. */
static void on_iteration(const fh_train_loop *loop, const fh_iteration_metrics *m, void *user)
{
    run_context *ctx = user;
    if (!ctx->callback)
        return;
    const char *names[FH_RUN_DIR_MAX_COLUMNS];
    double values[FH_RUN_DIR_MAX_COLUMNS];
    int n = fh_run_dir_row(&loop->run, m, names, values);
    for (int i = 0; i < n; i++) /* the csv leaves a non-finite cell empty */
        if (!isfinite(values[i]))
            values[i] = NAN;
    if (ctx->callback(n, names, values, ctx->user) == 0) {
        ctx->stop = 1;
        ctx->trainer->stopped = 1;
    }
}

int fh_api_trainer_run(fh_api_trainer *trainer, fh_api_train_callback callback, void *user)
{
    CAPI_ENTER(fh_api_trainer, t, trainer, CAPI_TRAINER);
    if (t->ran)
        return fh_error_set(&t->obj.err, FH_ERR_INPUT, "trainer: this run already ran (to "
                            "iteration %lld); to go on, create a trainer with resume = %s",
                            (long long)t->loop.learner.iteration, t->loop.last_checkpoint);
    t->ran = 1;
    run_context ctx = {t, callback, user, 0};
    return fh_train_loop_run(&t->loop, &ctx.stop, on_iteration, &ctx, &t->obj.err);
}
