/* learner.h — a training algorithm behind the one training loop (train_loop.h; issue 33).
 *
 * The loop (collect -> update -> metrics -> checkpoint -> validate -> stop, written
 * once in src/rl/train_loop.c) drives a learner through this ops table, in the manner of
 * ggml's backend interface: the loop never knows which algorithm runs or where (CPU or
 * GPU: each learner keeps that choice in its own backend file). PPO, DQN and PQN are
 * learners (src/rl/learner_ppo.c, learner_q.c), and so is `constant`, the smallest
 * possible one (learner_constant.c: what adding a learner costs). A new learner is a
 * file defining an fh_learner_ops and one line in src/rl/learners.c's table; it gets
 * the run directory, metrics, checkpoints, resume, Ctrl-C, validation with best-model
 * selection, walk-forward, eval and the tear sheet from the loop.
 *
 * Metrics: every learner's rows have the common columns (fh_iteration_metrics) followed
 * by its own, named in ops->columns; iterate writes their values into m->own. */
#ifndef FOXHUNT_LEARNER_H
#define FOXHUNT_LEARNER_H

#include <stddef.h>
#include <stdint.h>

#include "foxhunt/checkpoint.h"
#include "foxhunt/device.h"
#include "foxhunt/iteration_metrics.h"
#include "foxhunt/nn.h"
#include "foxhunt/run_data.h"
#include "foxhunt/train_config.h"

typedef struct fh_learner fh_learner;

/* A learner's own metrics column: its name in metrics.csv / .jsonl, and how the
 * progress line shows it (label NULL: not shown). */
typedef struct {
    const char *name;
    const char *label;
    const char *format; /* printf format of one double, e.g. "%.4f" */
} fh_metric_column;

/* What a save writes beyond the learner's state: __metadata__ strings (validation's
 * best.safetensors records its iteration and Sharpe). */
typedef struct {
    const char *const *keys;
    const char *const *values;
    int n;
} fh_save_meta;

/* The data-parallel side of a learner whose update all-reduces across ranks (a rank of
 * a run; docs/SCALING.md). A learner without it runs as one process. */
typedef struct {
    int (*present)(const fh_learner *l);  /* 1: this process is a rank of a run */
    int (*leads)(const fh_learner *l);    /* 1: the rank that writes the run directory */
    /* *stop set on every rank when it is set on any */
    fh_status (*agree_stop)(fh_learner *l, int *stop, fh_error *err);
    /* after the run's last collective: the communicator closed everywhere */
    fh_status (*finish)(fh_learner *l, fh_error *err);
    /* the run failed on this rank: another rank's cause put first, the others told */
    void (*failed)(fh_learner *l, fh_error *err);
    /* rank 0's line on the ranks (shares, library) for the start of a run */
    void (*describe)(const fh_learner *l, char *out, size_t n);
    /* extra text for an iteration's progress line ("" for none) */
    void (*progress)(const fh_learner *l, const fh_iteration_metrics *m, char *out, size_t n);
} fh_learner_ranks;

typedef struct {
    const char *name;                 /* the config's algo */
    const fh_metric_column *columns;  /* its own metrics columns */
    int n_columns;                    /* at most FH_METRICS_MAX_OWN */
    /* Builds l's state from l->cfg: fresh, or from l->cfg.resume (checked before use).
     * Fills l->data, l->data_identity, l->device, l->config_json, l->data_identity_unchecked,
     * l->data_other, l->iteration and l->note. On failure l->ops->destroy frees what
     * was made. */
    fh_status (*create)(fh_learner *l, fh_error *err);
    /* One iteration `it` (= l->iteration + 1): collect, update; the common metrics and
     * m->own filled (not the timings: the loop's); on success l->iteration = it. */
    fh_status (*iterate)(fh_learner *l, int64_t it, fh_iteration_metrics *m, fh_error *err);
    /* The host's copy made current (networks, episodes) before a save or a backtest of
     * the policy. Every rank calls it at the same iterations. */
    fh_status (*sync)(fh_learner *l, fh_error *err);
    /* A checkpoint of the current state (after sync) to path, atomically. */
    fh_status (*save)(fh_learner *l, const char *path, const fh_save_meta *meta,
                      fh_error *err);
    /* The network whose argmax is the greedy policy (validation and eval backtest it;
     * current after sync), and its kind (under which a checkpoint stores it). */
    const fh_mlp *(*policy)(const fh_learner *l);
    fh_net_kind policy_net;
    /* Where collection and update run, for the start of a run ("collection on the GPU;
     * update on the GPU"). */
    void (*describe)(const fh_learner *l, char *out, size_t n);
    void (*destroy)(fh_learner *l);
    const fh_learner_ranks *ranks;    /* NULL: one process only */
} fh_learner_ops;

#define FH_LEARNER_NOTE_MAX 512

struct fh_learner {
    const fh_learner_ops *ops;
    void *state;                      /* the learner's own (its ops' file knows it) */
    fh_train_config cfg;              /* the run's settings, as resolved */
    /* set by create, kept current by iterate */
    const fh_run_data *data;          /* bars, market, splits (in state) */
    const fh_data_identity *data_identity; /* of data, as checkpoints record it */
    const fh_device_info *device;
    const char *config_json;          /* what checkpoints and config.json hold */
    int64_t iteration;                /* completed iterations */
    int64_t run_steps;                /* environment steps per iteration, every rank's */
    /* resume: the checkpoint recorded no data identity (unchecked), or was trained on
     * other data and cfg.allow_other_data let it go on (episodes restarted) */
    int data_identity_unchecked, data_other;
    char note[FH_LEARNER_NOTE_MAX];   /* anything else the start of a run should say */
};

/* The learners' names, "|"-separated, in the table's order (learners.c, beside the
 * table; a test checks they agree): the settings table's choices for `algo`. */
extern const char FH_LEARNER_CHOICES[];

/* The learner named `algo` (the table of src/rl/learners.c), or NULL. */
const fh_learner_ops *fh_learner_find(const char *algo);
/* The learners' names joined by sep ("ppo|dqn|pqn|constant"), for help and errors. */
void fh_learner_names(char *out, size_t n, const char *sep);
/* The network a checkpoint of `algo` keeps its greedy policy under (FH_NET_ACTOR for
 * ppo, the Q-network for dqn/pqn); FH_NET_ACTOR for an unknown name. */
fh_net_kind fh_learner_policy_net(const char *algo);

/* Loads the greedy policy's network of a checkpoint trained by `algo` (its config's)
 * into *policy (made here: fh_mlp_free it, also after a failure) and its normalisation
 * into *norm; config_json (or NULL) gets the config it holds (free it); actor_only (or
 * NULL) whether the file is an actor-only export (checkpoint.h). */
fh_status fh_learner_policy_load(const char *checkpoint, const char *algo, fh_mlp *policy,
                                 fh_feature_norm *norm, char **config_json, int *actor_only,
                                 fh_error *err);

#endif
