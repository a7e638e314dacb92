/* train_loop.h — the one training loop of `foxhunt train` and `walkforward` (issue 33):
 * collect, update, log, checkpoint, validate, stop, for any learner (learner.h).
 *
 * A run directory (cfg.out) holds config.json (the resolved configuration),
 * metrics.csv and metrics.jsonl (one row per iteration: the common columns, then the
 * learner's own), checkpoint_NNNNNN.safetensors every cfg.checkpoint_every iterations
 * and final.safetensors at the end (interrupted.safetensors after a stop). With
 * cfg.eval_every > 0 the greedy policy is backtested on the validation split every
 * eval_every iterations and at the last: validation.csv gets the row, and the best
 * Sharpe so far is kept as best.safetensors (a full checkpoint). The test split is never
 * read here. With cfg.tensorboard the run directory also gets a TensorBoard event file
 * of the same numbers (rl/run_tensorboard.h). */
#ifndef FOXHUNT_TRAIN_LOOP_H
#define FOXHUNT_TRAIN_LOOP_H

#include <signal.h>

#include "foxhunt/learner.h"
#include "foxhunt/metrics.h"
#include "foxhunt/run_dir.h"
#include "foxhunt/run_record.h"

typedef struct {
    fh_learner learner;
    fh_run_dir run;                    /* once opened (fh_train_loop_open_run) */
    char last_checkpoint[FH_RUN_DIR_PATH_MAX];
    /* model selection on the validation split (cfg.eval_every) */
    int validated;                     /* 1 when the last iteration ran a validation */
    fh_backtest_metrics validation;    /* its greedy backtest */
    double validation_psr;             /* its PSR(0) (the assets' mean) */
    int has_best;
    int64_t best_iteration;
    double best_sharpe;
    double best_psr;                   /* its validation PSR(0) (NaN: unknown) */
    fh_mlp best_policy;                /* the policy network of best.safetensors */
    char best_checkpoint[FH_RUN_DIR_PATH_MAX];
    /* what made the run (run_record.h): filled by init, its command line by the caller
     * (fh_run_record_set_command) before fh_train_loop_open_run; config.json and every
     * checkpoint carry it */
    fh_run_record record;
} fh_train_loop;

/* The learner cfg->algo names, created from cfg (fresh or cfg->resume). Safe to
 * fh_train_loop_free on failure. */
fh_status fh_train_loop_init(fh_train_loop *loop, const fh_train_config *cfg, fh_error *err);
/* The same with the learner given (a learner outside the table: tests). */
fh_status fh_train_loop_init_with(fh_train_loop *loop, const fh_learner_ops *ops,
                                  const fh_train_config *cfg, fh_error *err);
/* Creates the run directory (cfg.out), writes config.json and opens the metrics files
 * (on resume keeping the rows up to the checkpoint's iteration). Without it a run
 * writes no metrics. Rank 0 alone calls it. */
fh_status fh_train_loop_open_run(fh_train_loop *loop, fh_error *err);
void fh_train_loop_free(fh_train_loop *loop);

/* 1 on the process that writes the run directory and prints (not a rank other than 0). */
int fh_train_loop_leads(const fh_train_loop *loop);

typedef void (*fh_train_callback)(const fh_train_loop *loop, const fh_iteration_metrics *m,
                                  void *user);

/* Runs iterations learner.iteration+1 .. cfg.iterations; stops after the current
 * iteration when *stop becomes non-zero (Ctrl-C), writing a final checkpoint either way
 * (unless an iteration failed: then err says which checkpoint the run can go on from). */
fh_status fh_train_loop_run(fh_train_loop *loop, volatile sig_atomic_t *stop,
                            fh_train_callback on_iteration, void *user, fh_error *err);

/* The deployment gate (issue 34, do no harm): 1 when the model chosen on validation may
 * trade the test split: its validation PSR(0) is at least min_psr (min_psr <= 0: always);
 * else the deployed policy stays flat. why gets the sentence that says so. */
int fh_deploy_gate(int has_best, double validation_psr, double min_psr, char *why, size_t n);

/* A warning about the model validation chose (issue 34: do no harm), or 0 and out ""
 * when there is none to give: its validation Sharpe is not positive (flat, which loses
 * nothing, was better), or no validation gave a finite Sharpe (has_best 0). */
int fh_validation_choice_warning(int has_best, double validation_sharpe, char *out,
                                 size_t n);

/* The policy to evaluate after the run: best.safetensors' when validation chose one,
 * else the last; *source gets its checkpoint's path. */
const fh_mlp *fh_train_loop_chosen(const fh_train_loop *loop, const char **source);

#endif
