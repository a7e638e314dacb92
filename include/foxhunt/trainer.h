/* trainer.h — PPO's state: data, networks, collector, update (issue 5); the PPO learner
 * (src/rl/learner_ppo.c) runs it in the training loop (train_loop.h), and `foxhunt
 * collect` and `update` use it directly. A checkpoint holds everything a bit-identical resume
 * needs (docs/CHECKPOINTS.md): networks with Adam state, normalisation, config,
 * iteration, every episode's full state (portfolio, barriers, window, random stream),
 * the update's shuffling stream and the running episode returns. */
#ifndef FOXHUNT_TRAINER_H
#define FOXHUNT_TRAINER_H

#include <stdio.h>

#include "foxhunt/checkpoint.h"
#include "foxhunt/device.h"
#include "foxhunt/evaluate.h"
#include "foxhunt/iteration_metrics.h"
#include "foxhunt/nn.h"
#include "foxhunt/ppo.h"
#include "foxhunt/rollout.h"
#include "foxhunt/run_data.h"
#include "foxhunt/train_config.h"

struct fh_gpu_ppo_collector;
struct fh_gpu_ppo_update;

/* This process's share of the run (data-parallel: its rank's; else all of it): beside
 * the settings, never written into them (cfg keeps the run's N and minibatch). */
typedef struct {
    int episodes;      /* the episodes this process runs */
    int minibatch;     /* its rows of each minibatch */
    int first_episode; /* the run's index of its first episode */
} fh_trainer_share;

typedef struct {
    fh_train_config cfg;               /* the run's settings */
    fh_trainer_share share;
    fh_run_data data;
    fh_market_view train_view;
    fh_env_market train_market;
    fh_mlp actor, critic, curiosity;
    fh_device_info device;
    fh_cpu_collector cpu;
    struct fh_gpu_ppo_collector *gpu;  /* NULL on the CPU path */
    struct fh_gpu_ppo_update *gpu_update; /* the update on the GPU (the networks live there
                                             between iterations), or NULL */
    fh_episode_state *episodes;        /* (N) the collector's episode states */
    fh_trajectory_batch batch;
    fh_ppo_workspace ws;
    fh_rng update_rng;
    int64_t iteration;                 /* completed iterations */
    double *episode_return;            /* (N) running return of each slot's episode */
    int32_t *episode_length;           /* (N) */
    fh_data_identity data_identity;    /* of t->data, saved in every checkpoint */
    /* resume (docs/CHECKPOINTS.md, "Data identity"): 1 when the checkpoint records no data
     * identity (written before it was recorded), so the data could not be compared; the
     * library does not print: the caller may warn */
    int data_identity_unchecked;
    /* resume: 1 when the checkpoint was trained on other data and cfg.allow_other_data let
     * it continue: networks, optimiser, iteration and update stream kept, every episode
     * restarted fresh on this data */
    int data_other;
    char *config_json;
} fh_trainer;

/* Loads data, builds networks (fresh, or from cfg->resume), picks the device and
 * builds the collector. Safe to fh_trainer_free on failure. */
fh_status fh_trainer_init(fh_trainer *t, const fh_train_config *cfg, fh_error *err);
/* The same with the feature normalisation given (a checkpoint's, when collecting with
 * its weights); norm NULL fits it on the training split (or takes --resume's). */
fh_status fh_trainer_init_norm(fh_trainer *t, const fh_train_config *cfg,
                               const fh_feature_norm *norm, fh_error *err);
void fh_trainer_free(fh_trainer *t);

/* One PPO iteration `it`: collect, sum the metrics (every rank's), update with learning
 * rate m->lr; m's common metrics and collect_seconds filled, the update's in *stats;
 * t->iteration = it on success. */
fh_status fh_trainer_iterate(fh_trainer *t, int64_t it, fh_iteration_metrics *m,
                             fh_ppo_stats *stats, fh_error *err);
/* Before the host reads t's state (a checkpoint, a validation): the device's networks
 * and episodes brought back; data-parallel, also every rank's episodes gathered (for
 * rank 0's file) and the ranks' networks checked equal. Every rank calls it at the same
 * iterations. */
fh_status fh_trainer_sync(fh_trainer *t, fh_error *err);
/* Writes a checkpoint of the current state to path (atomic). */
fh_status fh_trainer_save(const fh_trainer *t, const char *path, fh_error *err);
/* The same with further tensors (at most FH_CHECKPOINT_MAX_EXTRAS - 4; names must not
 * clash with the checkpoint's) and __metadata__ strings (`foxhunt update`'s record). */
fh_status fh_trainer_save_with(const fh_trainer *t, const char *path,
                               const fh_checkpoint_extra *more, int n_more,
                               const char *const *meta_keys, const char *const *meta_values,
                               int n_meta, fh_error *err);
/* Reads only the resolved config stored in a checkpoint. */
fh_status fh_checkpoint_read_config(const char *path, fh_train_config *cfg, fh_error *err);

#endif
