/* learner_q.c — DQN and PQN as learners (learner.h): fh_q_trainer (q_trainer.h) in the
 * training loop; the greedy policy is argmax Q, so validation, eval and walk-forward
 * backtest the Q-network itself. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "foxhunt/q_trainer.h"
#include "rl/learners.h"

static const fh_metric_column Q_COLUMNS[] = {
    {"td_loss", "TD loss", "%.4g"},
    {"grad_norm", NULL, NULL},
    {"grad_steps", "grad steps", "%.0f"},
    {"epsilon", "epsilon", "%.3f"},
    {"curiosity_loss", NULL, NULL},
};
enum { N_Q_COLUMNS = sizeof Q_COLUMNS / sizeof Q_COLUMNS[0] };

static fh_q_trainer *qt(const fh_learner *l) { return l->state; }

static fh_status create(fh_learner *l, fh_error *err)
{
    fh_q_trainer *t = calloc(1, sizeof *t);
    if (!t)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
    l->state = t;
    fh_status st = fh_q_trainer_init(t, &l->cfg, err);
    l->data = &t->data;
    l->data_identity = &t->data_identity;
    l->device = &t->device;
    l->config_json = t->config_json;
    l->iteration = t->iteration;
    l->run_steps = (int64_t)l->cfg.episodes * l->cfg.steps;
    l->data_identity_unchecked = t->data_identity_unchecked;
    l->data_other = t->data_other;
    if (st == FH_OK && t->data_other && !t->pqn)
        snprintf(l->note, sizeof l->note, "the replay ring starts empty (other data)");
    else if (st == FH_OK && t->ring_restarted)
        snprintf(l->note, sizeof l->note, "the checkpoint holds no replay ring (it was above "
                 "the checkpoint's ring limit): the ring starts empty and learning_starts "
                 "applies again, so this run is not identical to an uninterrupted one");
    return st;
}

static fh_status iterate(fh_learner *l, int64_t it, fh_iteration_metrics *m, fh_error *err)
{
    fh_q_trainer *t = qt(l);
    fh_q_stats s;
    fh_status st = fh_q_trainer_iterate(t, it, m, &s, err);
    if (st != FH_OK)
        return st;
    const double own[N_Q_COLUMNS] = {s.loss, s.grad_norm, (double)s.minibatches, t->epsilon,
                                     t->curiosity_loss};
    memcpy(m->own, own, sizeof own);
    l->iteration = it;
    return FH_OK;
}

static fh_status sync(fh_learner *l, fh_error *err) { return fh_q_trainer_sync(qt(l), err); }

static fh_status save(fh_learner *l, const char *path, const fh_save_meta *meta,
                      fh_error *err)
{
    return fh_q_trainer_save(qt(l), path, meta ? meta->keys : NULL, meta ? meta->values : NULL,
                             meta ? meta->n : 0, err);
}

static const fh_mlp *policy(const fh_learner *l) { return &qt(l)->q; }

static void describe(const fh_learner *l, char *out, size_t n)
{
    const fh_q_trainer *t = qt(l);
    snprintf(out, n, "collection on the %s; %s update on the %s", t->gpu ? "GPU" : "CPU",
             l->cfg.algo, t->gpu_update ? "GPU" : "CPU");
}

static void destroy(fh_learner *l)
{
    if (l->state)
        fh_q_trainer_free(qt(l));
    free(l->state);
    l->state = NULL;
}

/* DQN and PQN differ in their name and network: one table each, the same functions */
#define Q_LEARNER(NAME, NET)                                                     \
    {.name = NAME, .columns = Q_COLUMNS, .n_columns = N_Q_COLUMNS,      \
     .create = create, .iterate = iterate, .sync = sync, .save = save, .policy = policy,   \
     .policy_net = NET, .describe = describe, .destroy = destroy}

/* dqn: Double DQN with a replay ring and a target network (van Hasselt et al. 2016);
 * pqn: Q(lambda) with LayerNorm, no replay (Gallici et al. 2024) */
const fh_learner_ops fh_learner_dqn = Q_LEARNER("dqn", FH_NET_QNET);
const fh_learner_ops fh_learner_pqn = Q_LEARNER("pqn", FH_NET_PQN);
