/* trainer.h — `foxhunt train`: collect, update, log, checkpoint, repeat (issue 5).
 *
 * A run directory (cfg.out) holds config.json (the resolved configuration),
 * metrics.csv and metrics.jsonl (one row per iteration, same fields), and
 * checkpoint_NNNNNN.safetensors every cfg.checkpoint_every iterations plus
 * final.safetensors at the end. A checkpoint holds everything a bit-identical resume
 * needs (docs/CHECKPOINTS.md): networks with Adam state, normalisation, config,
 * iteration, every episode's full state (portfolio, barriers, window, random stream),
 * the update's shuffling stream and the running episode returns. */
#ifndef FOXHUNT_TRAINER_H
#define FOXHUNT_TRAINER_H

#include <signal.h>
#include <stdio.h>

#include "foxhunt/checkpoint.h"
#include "foxhunt/device.h"
#include "foxhunt/evaluate.h"
#include "foxhunt/iteration_metrics.h"
#include "foxhunt/nn.h"
#include "foxhunt/ppo.h"
#include "foxhunt/rollout.h"
#include "foxhunt/run_data.h"
#include "foxhunt/run_dir.h"
#include "foxhunt/train_config.h"

struct fh_gpu_ppo_collector;
struct fh_gpu_ppo_update;

typedef struct {
    fh_train_config cfg;
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
    fh_run_dir run;                    /* the run directory, once opened (fh_trainer_open_run) */
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
    char last_checkpoint[1100];
    /* model selection on the validation split (cfg.eval_every, validation.c) */
    int validated;                     /* 1 when the last iteration ran a validation */
    fh_backtest_metrics validation;    /* its greedy backtest */
    int has_best;
    int64_t best_iteration;
    double best_sharpe;
    fh_mlp best_actor;                 /* the actor of best.safetensors */
    char best_checkpoint[1100];
} fh_trainer;

/* Loads data, builds networks (fresh, or from cfg->resume), picks the device and
 * builds the collector. Safe to fh_trainer_free on failure. */
fh_status fh_trainer_init(fh_trainer *t, const fh_train_config *cfg, fh_error *err);
/* The same with the feature normalisation given (a checkpoint's, when collecting with
 * its weights); norm NULL fits it on the training split (or takes --resume's). */
fh_status fh_trainer_init_norm(fh_trainer *t, const fh_train_config *cfg,
                               const fh_feature_norm *norm, fh_error *err);
/* Creates the run directory (cfg.out), writes config.json and opens the metrics files
 * (on resume keeping the rows up to the checkpoint's iteration). Without it, a run
 * writes no metrics (`foxhunt collect` and tests use the trainer that way). */
fh_status fh_trainer_open_run(fh_trainer *t, fh_error *err);
void fh_trainer_free(fh_trainer *t);

typedef void (*fh_iteration_callback)(const fh_trainer *t, const fh_iteration_metrics *m,
                                      void *user);

/* Runs iterations t->iteration+1 .. cfg.iterations; stops after the current iteration
 * when *stop becomes non-zero (Ctrl-C), writing a final checkpoint either way. */
fh_status fh_trainer_run(fh_trainer *t, volatile sig_atomic_t *stop,
                         fh_iteration_callback on_iteration, void *user, fh_error *err);
/* Model selection (cfg.eval_every > 0; validation.c). Prepares it: refuses a run without
 * a validation split, and on a resume in place keeps validation.csv's rows up to the
 * resumed iteration and takes the best so far from them and best.safetensors. */
fh_status fh_trainer_validation_start(fh_trainer *t, fh_error *err);
/* Backtests the greedy actor on the validation split (the host's weights: sync first),
 * appends the row to OUT/validation.csv and, when its Sharpe is the best so far, saves
 * OUT/best.safetensors (its metadata records the iteration and the Sharpe). */
fh_status fh_trainer_validate(fh_trainer *t, fh_error *err);
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
