/* learner_ppo.c — PPO as a learner (learner.h): fh_trainer (trainer.h) in the training
 * loop, its update's statistics as its own metrics columns, its data-parallel hooks
 * (trainer_dist.h) as the learner's ranks. Where it runs (CPU or GPU) is ppo_backend.c's. */
#include <stdlib.h>
#include <string.h>

#include "foxhunt/learner.h"
#include "foxhunt/trainer.h"
#include "rl/ppo_backend.h"
#include "rl/learners.h"
#include "rl/trainer_dist.h"

static const fh_metric_column PPO_COLUMNS[] = {
    {"policy_loss", NULL, NULL},
    {"value_loss", NULL, NULL},
    {"entropy", "entropy", "%.3f"},
    {"approx_kl", "kl", "%.4f"},
    {"old_approx_kl", NULL, NULL},
    {"clip_fraction", "clip", "%.3f"},
    {"explained_variance", "ev", "%.2f"},
    {"curiosity_loss", NULL, NULL},
    {"grad_norm", NULL, NULL},
    {"epochs_run", NULL, NULL},
};
enum { N_PPO_COLUMNS = sizeof PPO_COLUMNS / sizeof PPO_COLUMNS[0] };

static fh_trainer *ppo(const fh_learner *l) { return l->state; }

fh_trainer *fh_learner_ppo_trainer(const fh_learner *l)
{
    return l->ops == &fh_learner_ppo ? ppo(l) : NULL;
}

static fh_status create(fh_learner *l, fh_error *err)
{
    fh_trainer *t = calloc(1, sizeof *t);
    if (!t)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
    l->state = t;
    fh_status st = fh_trainer_init(t, &l->cfg, err);
    l->data = &t->data;
    l->data_identity = &t->data_identity;
    l->device = &t->device;
    l->config_json = t->config_json;
    l->iteration = t->iteration;
    l->run_steps = fh_trainer_dist_run_steps(t);
    l->data_identity_unchecked = t->data_identity_unchecked;
    l->data_other = t->data_other;
    return st;
}

static fh_status iterate(fh_learner *l, int64_t it, fh_iteration_metrics *m, fh_error *err)
{
    fh_ppo_stats s;
    fh_status st = fh_trainer_iterate(ppo(l), it, m, &s, err);
    if (st != FH_OK)
        return st;
    const double own[N_PPO_COLUMNS] = {s.policy_loss, s.value_loss, s.entropy, s.approx_kl,
                                       s.old_approx_kl, s.clip_fraction, s.explained_variance,
                                       s.curiosity_loss, s.grad_norm, (double)s.epochs_run};
    memcpy(m->own, own, sizeof own);
    l->iteration = it;
    return FH_OK;
}

static fh_status sync(fh_learner *l, fh_error *err) { return fh_trainer_sync(ppo(l), err); }

static fh_status save(fh_learner *l, const char *path, const fh_save_meta *meta,
                      fh_error *err)
{
    return fh_trainer_save_with(ppo(l), path, NULL, 0, meta ? meta->keys : NULL,
                                meta ? meta->values : NULL, meta ? meta->n : 0, err);
}

static const fh_mlp *policy(const fh_learner *l) { return &ppo(l)->actor; }

static void describe(const fh_learner *l, char *out, size_t n)
{
    const fh_trainer *t = ppo(l);
    snprintf(out, n, "%s; ppo update on the %s", t->gpu ? "collection on the GPU" :
             "collection on the CPU", fh_ppo_backend_update_device(t));
}

static void destroy(fh_learner *l)
{
    if (l->state)
        fh_trainer_free(ppo(l));
    free(l->state);
    l->state = NULL;
}

/* ---- a rank of a data-parallel run ---- */

static int present(const fh_learner *l) { return fh_trainer_dist_present(ppo(l)); }
static int leads(const fh_learner *l) { return fh_trainer_dist_leads(ppo(l)); }

static fh_status agree_stop(fh_learner *l, int *stop, fh_error *err)
{
    return fh_trainer_dist_agree_stop(ppo(l), stop, err);
}

static fh_status finish(fh_learner *l, fh_error *err)
{
    return fh_trainer_dist_finish(ppo(l), err);
}

static void failed(fh_learner *l, fh_error *err)
{
    fh_trainer_dist_blame(ppo(l), err); /* another rank's failure may have stopped this one */
    fh_trainer_dist_fail(ppo(l), err);
}

static void describe_ranks(const fh_learner *l, char *out, size_t n)
{
    fh_trainer_dist_describe(ppo(l), &l->cfg, out, n);
}

static void progress(const fh_learner *l, const fh_iteration_metrics *m, char *out, size_t n)
{
    fh_trainer_dist_progress(ppo(l), m->update_seconds, out, n);
}

static const fh_learner_ranks PPO_RANKS = {present, leads, agree_stop, finish, failed,
                                           describe_ranks, progress};

const fh_learner_ops fh_learner_ppo = {
    .name = "ppo",
    .columns = PPO_COLUMNS,
    .n_columns = N_PPO_COLUMNS,
    .create = create,
    .iterate = iterate,
    .sync = sync,
    .save = save,
    .policy = policy,
    .policy_net = FH_NET_ACTOR,
    .describe = describe,
    .destroy = destroy,
    .ranks = &PPO_RANKS,
};
