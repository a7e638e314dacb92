/* ppo.h — the PPO update (SPEC §6, CleanRL's ppo.py details) and the curiosity fit.
 *
 * update_mlp: for each epoch, a fresh permutation of the N*L samples (from the
 * update's own PCG stream, so runs and resumes are reproducible); per minibatch the
 * actor and critic forward, fh_ppo_loss (clipped surrogate, optional value clipping,
 * entropy bonus, per-minibatch advantage normalisation), backward, joint global
 * gradient-norm clip over actor+critic, one Adam step each; optional target-KL stop
 * after an epoch. Then the curiosity model is fitted on the collection's (s, a, e')
 * -> next bar's features 0..31 by MSE with its own Adam.
 *
 * Guards (issue 19): a non-finite policy loss, value loss, entropy, approx-KL or gradient
 * norm of a minibatch, or curiosity loss or gradient, stops the update before that
 * minibatch's optimiser step (a NaN input can pass a ReLU as 0 in the forward pass and
 * show only in the gradient) (FH_ERR_FAILURE, "the value loss is NaN (epoch 1, minibatch 3)"); after
 * the last step one pass over the three networks' params and Adam moments
 * (fh_mlp_check_finite) refuses any NaN or infinity there too. The trainer prefixes the
 * iteration and writes no checkpoint after a failed update. */
#ifndef FOXHUNT_PPO_H
#define FOXHUNT_PPO_H

#include "foxhunt/nn.h"
#include "foxhunt/rollout.h"
#include "foxhunt/train_config.h"

typedef struct {
    double policy_loss;
    double value_loss;
    double entropy;
    double approx_kl;
    double old_approx_kl;
    double clip_fraction;
    double explained_variance;
    double curiosity_loss;
    double grad_norm;        /* mean pre-clip global norm */
    int epochs_run;          /* < epochs when target_kl stopped early */
    int minibatches;
} fh_ppo_stats;

typedef struct {
    int minibatch;
    fh_mlp_ws actor_ws, critic_ws, curiosity_ws; /* batch = minibatch */
    float *mb_states;      /* (M, 54) */
    int32_t *mb_actions;   /* (M) */
    float *mb_old_logp, *mb_adv, *mb_returns, *mb_old_values; /* (M) */
    float *mb_logits;      /* (M, 45) */
    float *mb_values;      /* (M) */
    float *mb_dlogits;     /* (M, 45) */
    float *mb_dvalues;     /* (M) */
    float *mb_cur_in;      /* (M, 35) */
    float *mb_cur_target;  /* (M, 32) */
    float *mb_cur_pred;    /* (M, 32) */
    float *mb_cur_dpred;   /* (M, 32) */
    float *scratch;        /* FH_PPO_SCRATCH_FLOATS(M, 45) */
    int64_t *perm;         /* (N*L) */
    int64_t perm_size;
} fh_ppo_workspace;

fh_status fh_ppo_workspace_init(fh_ppo_workspace *w, int minibatch, int64_t batch_size,
                                fh_error *err);
void fh_ppo_workspace_free(fh_ppo_workspace *w);

/* ---- the record of an update, for checking it step by step (`foxhunt update`) ----
 * Given to fh_ppo_update, it receives each epoch's sample order (the permutation the
 * update's stream drew) and one row per minibatch of the values the update computed
 * there anyway; nothing else changes (NULL, as the trainer passes: nothing recorded).
 * Columns of a row, in this order (fh_ppo_trace_columns names them): */
typedef enum {
    FH_PPO_TRACE_EPOCH,          /* 0-based */
    FH_PPO_TRACE_MINIBATCH,      /* 0-based within the epoch */
    FH_PPO_TRACE_SAMPLES,        /* M, the minibatch's size (the last may be short) */
    FH_PPO_TRACE_POLICY_LOSS,    /* clipped surrogate (fh_ppo_loss_stats.pg_loss) */
    FH_PPO_TRACE_VALUE_LOSS,     /* 0.5 mean (clipped) squared error, before vf_coef */
    FH_PPO_TRACE_ENTROPY,
    FH_PPO_TRACE_APPROX_KL,      /* mean((r - 1) - ln r) */
    FH_PPO_TRACE_OLD_APPROX_KL,  /* mean(-ln r) */
    FH_PPO_TRACE_CLIP_FRACTION,
    FH_PPO_TRACE_GRAD_NORM,      /* global actor+critic norm before clipping */
    FH_PPO_TRACE_LR,             /* the learning rate Adam stepped with (as a float) */
    FH_PPO_TRACE_LOSS,           /* pg_loss - ent_coef entropy + vf_coef value_loss */
    FH_PPO_TRACE_COLS
} fh_ppo_trace_column;

extern const char *const fh_ppo_trace_columns[FH_PPO_TRACE_COLS];

typedef struct {
    int64_t batch_size;          /* N*L */
    int max_epochs;              /* cfg->epochs */
    int minibatches_per_epoch;   /* ceil(N*L / minibatch) */
    int64_t *order;              /* (max_epochs, batch_size); rows [0, epochs) filled */
    double *records;             /* (max_epochs * minibatches_per_epoch, FH_PPO_TRACE_COLS) */
    int epochs;                  /* epochs recorded (= stats.epochs_run) */
    int n_records;               /* rows recorded (= stats.minibatches) */
} fh_ppo_trace;

/* Sized for one update of cfg over batch_size samples. */
fh_status fh_ppo_trace_init(fh_ppo_trace *tr, const fh_train_config *cfg, int64_t batch_size,
                            fh_error *err);
void fh_ppo_trace_free(fh_ppo_trace *tr);

/* The curiosity model's fit on n collected rows (s, a, e') -> the next bar's features
 * 0..31, by MSE with its own Adam, cfg->curiosity_epochs passes of w->minibatch rows in
 * the keyed order (PPO's update calls it after its epochs; DQN and PQN after theirs).
 * *loss_out: the mean minibatch loss. */
fh_status fh_curiosity_fit(double *loss_out, fh_mlp *curiosity, fh_ppo_workspace *w,
                           const float *states, const int32_t *actions,
                           const float *exposures, const int32_t *bars, int64_t n,
                           const fh_env_market *market, const fh_train_config *cfg,
                           fh_rng *rng, fh_error *err);

/* update_mlp. lr, ent_coef: this iteration's (annealed: fh_train_config_lr,
 * fh_train_config_ent_coef) learning rate and entropy coefficient; cfg->weight_decay
 * decays actor and critic as AdamW (not the curiosity model). rng: the update's
 * shuffling stream (advanced). market: the split the batch came from (for the
 * curiosity targets). trace: NULL, or a record sized for this update
 * (fh_ppo_trace_init), filled as the update goes (an update that fails leaves the rows
 * of the minibatches before the failure). */
fh_status fh_ppo_update(fh_ppo_stats *stats, fh_mlp *actor, fh_mlp *critic,
                        fh_mlp *curiosity, fh_ppo_workspace *w,
                        const fh_trajectory_batch *b, const fh_env_market *market,
                        const fh_train_config *cfg, double lr, double ent_coef,
                        fh_rng *rng, fh_ppo_trace *trace, fh_error *err);

#endif
