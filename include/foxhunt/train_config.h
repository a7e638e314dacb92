/* train_config.h — every hyper-parameter of a training run, in one struct, with one
 * table that drives the defaults, the `--flag` names, the INI config file keys and the
 * resolved-config JSON saved with the run (so the three can never disagree).
 *
 * Precedence: defaults < config file (--config FILE, INI: [run] [ppo] [q] [env] sections;
 * a key may also appear outside any section) < flags on the command line. */
#ifndef FOXHUNT_TRAIN_CONFIG_H
#define FOXHUNT_TRAIN_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "foxhunt/data.h"
#include "foxhunt/env.h"
#include "foxhunt/error.h"

#define FH_CONFIG_STRING_MAX 512

typedef struct {
    /* [run] */
    char data[FH_CONFIG_STRING_MAX];   /* CSV path; "" = the synthetic market */
    char algo[16];                     /* a learner's name (learner.h) */
    char device[8];                    /* auto | cpu | cuda */
    char kernel[16];                   /* fast | reference (GPU collection) */
    char precision[8];                 /* fp32 | tf32 (GPU matmuls: batched critic and
                                          curiosity, the update; precision.h) */
    char update_device[8];             /* same (the collection's device) | cpu */
    char out[FH_CONFIG_STRING_MAX];    /* run directory */
    char resume[FH_CONFIG_STRING_MAX]; /* checkpoint to resume from; "" = fresh */
    int episodes;                      /* N */
    int steps;                         /* L */
    int iterations;                    /* K: collections + updates */
    uint64_t seed;
    int checkpoint_every;              /* iterations between checkpoints (0: end only) */
    double train_fraction;             /* time-ordered splits (data.h, fh_split_spec): */
    double validation_fraction;        /*   shares of the bars left after the gaps; */
    int split_gap;                     /*   bars dropped between consecutive splits */
    int walkforward_folds;             /* 0: one test split; K: this run is one fold */
    int fold;                          /*   1 .. K, as the folders fold<k>_seed<s> */
    char walkforward_window[16];       /*   expanding | rolling */
    int walkforward_seeds;             /*   `foxhunt walkforward`: seeds seed .. seed+S-1 */
    int synthetic_bars;
    uint64_t synthetic_seed;
    int threads;                       /* CPU threads (0: OpenMP default) */
    int eval_at_end;                   /* 1: print the test-split evaluation when done */
    int eval_every;                    /* iterations between validation backtests, the best
                                          kept as best.safetensors (0: none) */
    double deploy_min_psr;             /* the deployment gate: the chosen model trades the
                                          test split only when its validation PSR(0) is at
                                          least this (issue 34) */
    double periods_per_year;           /* annualisation of the evaluation's figures (0: from
                                          the bar spacing, fh_periods_per_year) */
    double max_bar_move_sigmas;        /* refuse data with a one-bar move beyond this many
                                          sigmas (0: no check; data.h, fh_bars_check_moves) */
    int tensorboard;                   /* 1: a TensorBoard event file in the run directory
                                          (rl/run_tensorboard.h) */
    /* [ppo] (CleanRL defaults, SPEC §6) */
    double lr;
    int anneal_lr;
    int epochs;
    int minibatch;
    double gamma;
    double gae_lambda;
    double clip;
    double vf_coef;
    double ent_coef;
    int anneal_ent;                    /* ent_coef decays linearly to 0 as anneal_lr's lr */
    double max_grad_norm;
    int clip_vloss;
    double target_kl;                  /* <= 0: no early stop */
    int norm_adv;
    double adam_eps;
    double weight_decay;               /* AdamW's decoupled decay of actor and critic
                                          (and DQN/PQN's Q-network); 0: plain Adam */
    double curiosity_lr;
    int curiosity_epochs;
    /* [q] DQN and PQN (issue 18; they share [ppo]'s lr, anneal_lr, weight_decay, gamma,
     * epochs (PQN), minibatch, max_grad_norm, adam_eps, curiosity_lr and
     * curiosity_epochs) */
    double epsilon_start, epsilon_end;  /* epsilon-greedy schedule: linear from start */
    double epsilon_fraction;           /*   to end over this share of the run's steps */
    double q_lambda;                   /* PQN: Q(lambda) */
    int n_step;                        /* DQN: n-step returns */
    int replay_capacity;               /* DQN: transitions in the ring */
    double replay_ratio;               /* DQN: gradient steps per collected transition */
    int learning_starts;               /* DQN: transitions in the ring before updates */
    int target_update_every;           /* DQN: gradient steps between hard copies (0: Polyak) */
    double tau;                        /* DQN: Polyak rate when target_update_every = 0 */
    double huber_delta;                /* DQN: Huber loss threshold */
    int pqn_huber;                     /* PQN: Huber (huber_delta) instead of the squared loss */
    /* [env] (SPEC §3) */
    fh_env_config env;
    /* [dist] data-parallel training over NCCL (issue 22, docs/SCALING.md): how this
     * invocation is launched. Never saved with the run (fh_train_config_to_json writes
     * [run] [ppo] [q] [env] only), so a checkpoint resumes at any world size. */
    int gpus;                          /* this host: launch this many ranks, one a GPU (0: off) */
    int world;                         /* a launcher of yours: ranks in all (0: off) */
    int rank;                          /* this process's rank (-1: from the launcher's
                                          environment: dist/dist_env.h) */
    char rendezvous[FH_CONFIG_STRING_MAX];   /* file carrying NCCL's id (with world) */
    char nccl_library[FH_CONFIG_STRING_MAX]; /* libnccl.so.2 to load ("": search) */
    int dist_timeout;                  /* seconds a rank waits for the others to start */
    int dist_graphs;                   /* 1: the all-reduces inside the update's CUDA graphs */
    /* This invocation's permissions, never saved with the run (not in the field table;
     * `foxhunt train --force`, `--allow-other-data`): reuse a non-empty run directory;
     * resume a checkpoint on data other than the one it was trained on. */
    int force;
    int allow_other_data;
} fh_train_config;

typedef enum {
    FH_FIELD_STRING,
    FH_FIELD_CHOICE,
    FH_FIELD_INT,
    FH_FIELD_U64,
    FH_FIELD_DOUBLE,
    FH_FIELD_FLOAT,
    FH_FIELD_BOOL, /* int 0/1; INI and flags accept 0/1/true/false */
    FH_FIELD_ENUM  /* int: the index of its name in choices; written as the name */
} fh_field_type;

typedef struct {
    const char *section; /* "run", "ppo", "q", "env" */
    const char *key;     /* INI key and JSON key; the flag is --key with '_' -> '-' */
    fh_field_type type;
    size_t offset;       /* into fh_train_config */
    size_t size;         /* for strings: capacity */
    const char *choices; /* "a|b|c" for FH_FIELD_CHOICE and FH_FIELD_ENUM */
    double min, max;     /* inclusive range for numbers */
    const char *help;
} fh_config_field;

extern const fh_config_field fh_train_config_fields[];
extern const int fh_train_config_n_fields;

/* The field of key ("episodes"), or NULL when the table has none. */
const fh_config_field *fh_config_field_find(const char *key);

void fh_train_config_default(fh_train_config *cfg);
/* 1 when value is one of choices ("a|b|c"). */
int fh_config_choice_ok(const char *choices, const char *value);
/* value's position among choices ("b" in "a|b|c" is 1), or -1. */
int fh_config_choice_index(const char *choices, const char *value);
/* Sets one field from text (as an INI value or flag value). FH_ERR_INPUT on a bad
 * value, with a message naming the key and the accepted range/choices. */
fh_status fh_config_field_set(const fh_config_field *f, fh_train_config *cfg,
                              const char *value, fh_error *err);
/* Formats one field's current value as text. */
void fh_config_field_format(const fh_config_field *f, const fh_train_config *cfg,
                            char *out, size_t out_size);
/* Reads an INI file into cfg; errors name FILE:LINE and the key. */
fh_status fh_train_config_load_ini(const char *path, fh_train_config *cfg, fh_error *err);
/* Cross-field checks (minibatch divides nothing required, ranges, env). */
fh_status fh_train_config_validate(const fh_train_config *cfg, fh_error *err);
/* The split layout the config describes (train, validation, gap, walk-forward fold). */
fh_split_spec fh_train_config_split_spec(const fh_train_config *cfg);
/* The learning rate of (1-based) iteration `iteration`: cfg->lr, or with anneal_lr
 * CleanRL's linear decay (1 - (iteration - 1) / iterations) * lr, as the trainer uses. */
double fh_train_config_lr(const fh_train_config *cfg, int64_t iteration);
/* The entropy coefficient of (1-based) iteration `iteration`: cfg->ent_coef, or with
 * anneal_ent the same linear decay (1 - (iteration - 1) / iterations) * ent_coef. */
double fh_train_config_ent_coef(const fh_train_config *cfg, int64_t iteration);
/* FH_ERR_INPUT when AdamW's per-step factor 1 - lr * weight_decay (as the optimisers
 * compute it, in float) is not positive: the check of the config, and of a learning rate
 * given on its own (foxhunt update --lr). */
fh_status fh_train_config_check_decay(double lr, double weight_decay, fh_error *err);
/* The resolved config as a JSON object text (malloc'd): {"run":{...},"ppo":{...},"env":{...}}. */
char *fh_train_config_to_json(const fh_train_config *cfg);
/* Parses what fh_train_config_to_json wrote (checkpoints carry it). */
fh_status fh_train_config_from_json(const char *json, fh_train_config *cfg, fh_error *err);

#endif
