/* train_loop.c — the one training loop (include/foxhunt/train_loop.h): collect, update,
 * metrics, checkpoint, validate, stop, for any learner (learner.h).
 *
 * Data-parallel (docs/SCALING.md), this process is one rank of a run: the learner's
 * iterate does the rank's share (and its all-reduces), and its ranks hooks agree when to
 * stop and close the communicator; rank 0 alone writes the run directory. */
#include "foxhunt/train_loop.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "foxhunt/timing.h"
#include "rl/run_tensorboard.h"
#include "rl/validation.h"

static int ranked(const fh_learner *l) { return l->ops->ranks && l->ops->ranks->present(l); }

int fh_train_loop_leads(const fh_train_loop *loop)
{
    const fh_learner *l = &loop->learner;
    return !ranked(l) || l->ops->ranks->leads(l);
}

fh_status fh_train_loop_init_with(fh_train_loop *loop, const fh_learner_ops *ops,
                                  const fh_train_config *cfg, fh_error *err)
{
    memset(loop, 0, sizeof *loop);
    loop->run.lock_fd = -1;
    loop->learner.ops = ops;
    loop->learner.cfg = *cfg;
    fh_status st = fh_train_config_validate(cfg, err);
    if (st == FH_OK)
        st = ops->create(&loop->learner, err);
    if (st == FH_OK) /* the learner's configuration: a resume's is the checkpoint's */
        fh_run_record_init(&loop->record, &loop->learner.cfg, loop->learner.device);
    return st;
}

fh_status fh_train_loop_init(fh_train_loop *loop, const fh_train_config *cfg, fh_error *err)
{
    const fh_learner_ops *ops = fh_learner_find(cfg->algo);
    if (!ops) {
        memset(loop, 0, sizeof *loop);
        char names[128];
        fh_learner_names(names, sizeof names, ", ");
        return fh_error_set(err, FH_ERR_INPUT, "algo = %s: expected one of %s", cfg->algo,
                            names);
    }
    return fh_train_loop_init_with(loop, ops, cfg, err);
}

fh_status fh_train_loop_open_run(fh_train_loop *loop, fh_error *err)
{
    const fh_learner *l = &loop->learner;
    const char *own[FH_METRICS_MAX_OWN];
    for (int i = 0; i < l->ops->n_columns; i++)
        own[i] = l->ops->columns[i].name;
    /* config.json: the configuration and, beside it, the record of what made the run */
    char *config_json = fh_run_record_add_to_json(&loop->record, l->config_json);
    if (!config_json)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: the resolved configuration does not "
                            "parse as JSON, or out of memory", __FILE__, __LINE__);
    fh_status st = fh_run_dir_open(&loop->run, &l->cfg, config_json, l->iteration, own,
                                   l->ops->n_columns, err);
    free(config_json);
    return st;
}

void fh_train_loop_free(fh_train_loop *loop)
{
    if (loop->learner.ops && loop->learner.ops->destroy)
        loop->learner.ops->destroy(&loop->learner);
    fh_mlp_free(&loop->best_policy);
    fh_run_dir_close(&loop->run);
    memset(loop, 0, sizeof *loop);
}

const fh_mlp *fh_train_loop_chosen(const fh_train_loop *loop, const char **source)
{
    if (source)
        *source = loop->has_best ? loop->best_checkpoint : loop->last_checkpoint;
    return loop->has_best ? &loop->best_policy : loop->learner.ops->policy(&loop->learner);
}

/* After a failed iteration: no checkpoint is written; which one the run can go on from. */
static void note_last_checkpoint(const fh_train_loop *loop, fh_error *err)
{
    fh_run_dir_note_last_checkpoint(err, loop->last_checkpoint, loop->learner.cfg.resume);
}

/* The host's copy made current, then (on the process that writes) saved to path. */
static fh_status save_to(fh_train_loop *loop, const char *path, int lead, fh_error *err)
{
    fh_learner *l = &loop->learner;
    fh_status st = l->ops->sync(l, err);
    fh_save_meta record = fh_run_record_meta(&loop->record);
    if (st == FH_OK && lead)
        st = l->ops->save(l, path, &record, err);
    if (st == FH_OK)
        snprintf(loop->last_checkpoint, sizeof loop->last_checkpoint, "%s", path);
    return st;
}

static fh_status run_loop(fh_train_loop *loop, volatile sig_atomic_t *stop,
                          fh_train_callback on_iteration, void *user, fh_error *err)
{
    fh_learner *l = &loop->learner;
    const fh_train_config *cfg = &l->cfg;
    int lead = fh_train_loop_leads(loop);
    fh_status st = lead ? fh_make_dirs(cfg->out, err) : FH_OK; /* checkpoints land there */
    if (st != FH_OK)
        return st;
    if (lead && cfg->eval_every > 0 && (st = fh_validation_start(loop, err)) != FH_OK)
        return st;
    /* the event file beside the opened run directory's metrics; a failure to create it
     * is a warning (fh_run_tensorboard_warning): metrics.csv is the record */
    if (lead && loop->run.metrics_open && !loop->run.tb.open)
        fh_run_tensorboard_open(&loop->run, cfg, l->iteration * l->run_steps);
    char path[FH_RUN_DIR_PATH_MAX];
    /* one process stops on its own flag, before an iteration too; ranks on their
     * agreement after each */
    int solo = !ranked(l);
    int stopping = 0;
    while (l->iteration < cfg->iterations && !stopping && !(solo && stop && *stop)) {
        int64_t it = l->iteration + 1;
        fh_iteration_metrics m;
        memset(&m, 0, sizeof m);
        m.iteration = it;
        m.global_step = it * l->run_steps;
        m.lr = fh_train_config_lr(cfg, it);
        double t0 = fh_clock_seconds(), t1 = t0;
        m.collect_seconds = -1; /* the learner sets it, or the whole step counts as update */
        if ((st = l->ops->iterate(l, it, &m, err)) != FH_OK) {
            fh_error_prefix(err, "iteration %lld: ", (long long)it);
            note_last_checkpoint(loop, err);
            break;
        }
        double t2 = fh_clock_seconds();
        if (m.collect_seconds >= 0)
            t1 = t0 + m.collect_seconds;
        m.collect_seconds = t1 - t0;
        m.update_seconds = t2 - t1;
        m.steps_per_second = (double)l->run_steps / (t2 - t0);
        m.collect_steps_per_second = (double)l->run_steps / (t1 - t0);
        if ((st = fh_run_dir_write_metrics(&loop->run, &m, err)) != FH_OK) {
            note_last_checkpoint(loop, err);
            break;
        }
        loop->validated = 0;
        if (cfg->eval_every > 0 && (it % cfg->eval_every == 0 || it == cfg->iterations) &&
            ((st = l->ops->sync(l, err)) != FH_OK ||
             (lead && (st = fh_validation_run(loop, err)) != FH_OK))) {
            fh_error_prefix(err, "iteration %lld: validation: ", (long long)it);
            break;
        }
        fh_run_tensorboard_iteration(&loop->run, &m, loop->validated ? &loop->validation : NULL,
                                     loop->validation_psr, loop->best_sharpe);
        if (on_iteration && lead)
            on_iteration(loop, &m, user);
        if (cfg->checkpoint_every > 0 && it % cfg->checkpoint_every == 0 &&
            it < cfg->iterations) {
            snprintf(path, sizeof path, "%s/checkpoint_%06lld.safetensors", cfg->out, (long long)it);
            if ((st = save_to(loop, path, lead, err)) != FH_OK) {
                note_last_checkpoint(loop, err);
                break;
            }
        }
        stopping = stop && *stop; /* ranks: set on any, so all stop after this one */
        if (!solo && (st = l->ops->ranks->agree_stop(l, &stopping, err)) != FH_OK)
            break;
    }
    /* a final checkpoint whatever stopped the loop, unless the loop failed; the ranks'
     * last collective is the sync's gather, so the communicator closes before rank 0
     * writes */
    if (st == FH_OK) {
        snprintf(path, sizeof path, "%s/%s.safetensors", cfg->out,
                 l->iteration >= cfg->iterations ? "final" : "interrupted");
        st = l->ops->sync(l, err);
        if (st == FH_OK && !solo)
            st = l->ops->ranks->finish(l, err);
        fh_save_meta record = fh_run_record_meta(&loop->record);
        if (st == FH_OK && lead && (st = l->ops->save(l, path, &record, err)) != FH_OK)
            note_last_checkpoint(loop, err);
        if (st == FH_OK)
            snprintf(loop->last_checkpoint, sizeof loop->last_checkpoint, "%s", path);
    }
    return st;
}

fh_status fh_train_loop_run(fh_train_loop *loop, volatile sig_atomic_t *stop,
                            fh_train_callback on_iteration, void *user, fh_error *err)
{
    fh_status st = run_loop(loop, stop, on_iteration, user, err);
    if (st != FH_OK && ranked(&loop->learner))
        loop->learner.ops->ranks->failed(&loop->learner, err);
    return st;
}
