/* update_args.h — the host/device contract of the PPO update on the GPU (issue 17;
 * gpu_ppo_update.c): the update's state on the device, one argument struct per kernel
 * (passed by value, `void *args[] = {&a}`), and the record columns. Plain C, included
 * by the kernels (NVRTC, after common_device_functions.cuh) and by the host.
 *
 * The update is a sequence of identical steps replayed from CUDA graphs, so what
 * changes from step to step lives on the device, in fh_update_state: the position
 * (epoch, minibatch), whether this step is applied, the Adam step, the failure that
 * stopped the update; and what changes from update to update (the annealed learning
 * rate and entropy coefficient), written by the host before each update. The loss
 * kernel (one block) owns it: it reads the position the gather used, decides, records,
 * and advances it; the Adam kernel only reads it. */
#ifndef FOXHUNT_UPDATE_ARGS_H
#define FOXHUNT_UPDATE_ARGS_H

#ifndef __CUDACC_RTC__ /* the host; NVRTC has them from common_device_functions.cuh */
#include "foxhunt/env_types.h"
#include "foxhunt/shapes.h"
#endif
#include "bf16_convert.h" /* to_bf16_kernel's argument */
#include "iteration_sums.h"

/* Record columns: the same as fh_ppo_trace's (foxhunt/ppo.h, FH_PPO_TRACE_*). */
#define FH_UREC_EPOCH 0
#define FH_UREC_MINIBATCH 1
#define FH_UREC_SAMPLES 2
#define FH_UREC_POLICY_LOSS 3
#define FH_UREC_VALUE_LOSS 4
#define FH_UREC_ENTROPY 5
#define FH_UREC_APPROX_KL 6
#define FH_UREC_OLD_APPROX_KL 7
#define FH_UREC_CLIP_FRACTION 8
#define FH_UREC_GRAD_NORM 9
#define FH_UREC_LR 10
#define FH_UREC_LOSS 11
#define FH_UREC_COLS 12

/* Why an update stopped (fh_update_state.failed); names in gpu_ppo_update.c. */
#define FH_UFAIL_NONE 0
#define FH_UFAIL_POLICY_LOSS 1
#define FH_UFAIL_VALUE_LOSS 2
#define FH_UFAIL_ENTROPY 3
#define FH_UFAIL_APPROX_KL 4
#define FH_UFAIL_GRAD_NORM 5
#define FH_UFAIL_CURIOSITY_LOSS 6
#define FH_UFAIL_CURIOSITY_GRAD 7

/* One optimisation phase (PPO: actor + critic; curiosity: its fit). */
typedef struct {
    long long adam_step; /* steps taken; the loss kernel increments it before Adam reads */
    int epoch, minibatch; /* the position of the step now running */
    int step_epoch, step_minibatch; /* the position of the last step the loss kernel ran */
    int apply;            /* 1: this step's gradients are applied */
    int stopped;          /* target KL reached: later steps are skipped */
    int n_records;        /* applied steps so far (rows of records) */
    int failed, failed_epoch, failed_minibatch; /* FH_UFAIL_*, 0-based */
    double loss_sum;      /* curiosity: sum of its minibatch losses */
} fh_update_phase;

typedef struct {
    fh_update_phase ppo, curiosity;
    double adv_mean, adv_inv;     /* this PPO step's advantage normalisation (gather's) */
    float lr, curiosity_lr;       /* this update's learning rates */
    float ent_coef;               /* this update's entropy coefficient (anneal_ent) */
    int epochs, curiosity_epochs; /* epochs the host launches */
} fh_update_state;

/* What the host reads back after an update (fh_update_summary_kernel). */
typedef struct {
    double policy_loss, value_loss, entropy, approx_kl, old_approx_kl, clip_fraction,
        grad_norm, explained_variance, curiosity_loss;
    int minibatches, epochs_run;
    int failed, failed_epoch, failed_minibatch;
    int curiosity_failed, curiosity_failed_epoch, curiosity_failed_minibatch;
    long long adam_step, curiosity_adam_step;
} fh_update_summary;

/* The collected batch on the device (n rows; states `states_pitch` floats apart). */
typedef struct {
    const float *states;
    int states_pitch;
    const int *actions;
    const float *log_probs, *values, *advantages, *returns, *exposures;
    const int *bars;
    long long n;
} fh_device_batch;

/* ppo_gather_kernel: rows [0, rows) of this step's minibatch, a warp a chunk of rows. */
typedef struct {
    fh_device_batch batch;
    fh_update_state *state;
    const unsigned long long *keys; /* (epochs) */
    int minibatch;                  /* the full minibatch size (positions per step) */
    int rows;                       /* rows this step (the tail's may be fewer) */
    float *states;                  /* (rows, 54) */
    unsigned short *states16;       /* NULL, or (bf16 update) their copy instead, rows of
                                       FH_BF16_LD(54) = 56 (the padding zero) */
    int *actions;
    float *old_logp, *adv, *returns, *old_values;
    int norm_adv;                   /* the advantages' mean and 1/(std + 1e-8) into state */
    double *partials;               /* (blocks, 2): each block's sum and sum of squares */
    unsigned *counter;              /* blocks done; the last one reduces, resets it to 0 */
    double *dist_sums;              /* NULL: one process; data-parallel (issue 22): the
                                       sums land here (2), for the all-reduce and then
                                       adv_finish_kernel */
} fh_ppo_gather_args;

/* adv_finish_kernel (data-parallel, one thread): the normalisation from the sums over
 * every rank's rows. */
typedef struct {
    fh_update_state *state;
    const double *sums; /* (2) all-reduced: sum of a, sum of a^2 */
    long long rows;     /* the step's rows over all ranks */
} fh_adv_finish_args;

/* curiosity_gather_kernel: inputs (rows, 35) and targets (rows, 32). */
typedef struct {
    fh_device_batch batch;
    const float *features; /* the market's (n_bars, 51) */
    const fh_update_state *state;
    const unsigned long long *keys; /* (curiosity_epochs) */
    int minibatch, rows;
    float *inputs, *targets;
} fh_curiosity_gather_args;

/* ppo_loss_kernel (one warp a row, FH_LOSS_ROWS rows a block, each warp taking rows
 * a grid's stride apart): the critic's value head (its 1-wide output layer over the last
 * hidden layer, FH_LOSS_HEAD_WIDTH wide), the loss, its gradient with respect to the
 * logits, the head's backward (its weight and bias gradients, the ReLU-masked gradient
 * at the last hidden layer's pre-activation and that layer's bias gradient), and, in
 * the last block to finish, the sums, the record and the position. */
#define FH_LOSS_ROWS 8
#define FH_LOSS_STATS 6
#define FH_LOSS_HEAD_WIDTH FH_CRITIC_H5
#define FH_LOSS_HEAD_SUMS (2 * FH_LOSS_HEAD_WIDTH + 1) /* dW, the hidden db, the head's db */
typedef struct {
    fh_update_state *state;
    const float *logits;  /* (rows, 45) */
    float *values;        /* (rows): written, the head's output */
    const int *actions;
    const float *old_logp, *adv, *returns, *old_values;
    int rows, minibatches_per_epoch;
    float clip_coef, vclip_coef, vf_coef; /* ent_coef: state's (annealed per update) */
    int norm_adv;
    double target_kl;     /* 0: off */
    float *dlogits;       /* (rows, 45) */
    /* the value head: its input (the last hidden layer's ReLU output, fp32 or, for a
     * bf16 critic, bf16), its fp32 weights and bias; out: the gradient at that hidden
     * layer's pre-activation (fp32 or bf16, as the input), and the block sums of the
     * head's weight and bias gradients and the hidden layer's bias gradient
     * (ppo_head_grad_kernel's) */
    const float *head_in;
    const unsigned short *head_in16;
    const float *head_w, *head_b;
    float *hidden_dz;
    unsigned short *hidden_dz16;
    double *head_partials; /* (FH_LOSS_HEAD_SUMS, blocks): a column's blocks together */
    double *records;      /* (epochs * minibatches_per_epoch, FH_UREC_COLS) */
    double *partials;     /* (blocks, FH_LOSS_STATS) */
    unsigned *counter;
    double *dist_sums;    /* NULL: one process; data-parallel (issue 22): the step's sums
                             land here (FH_LOSS_STATS), for the all-reduce and then
                             ppo_loss_finish_kernel, which reads them over total_rows */
    long long total_rows; /* the step's rows over all ranks (data-parallel) */
} fh_ppo_loss_args;

/* ppo_head_grad_kernel (a warp a column of head_partials): the value head's gradients,
 * written, not added. */
typedef struct {
    const double *partials; /* (FH_LOSS_HEAD_SUMS, blocks) */
    int blocks;             /* ppo_loss_kernel's grid */
    float *head_dw, *head_db, *hidden_db;
} fh_ppo_head_grad_args;

/* mse_loss_kernel (one block): the curiosity loss, its gradient, the position. */
typedef struct {
    fh_update_state *state;
    const float *pred, *target; /* (rows, 32) */
    int rows, minibatches_per_epoch;
    float *dpred;
} fh_mse_loss_args;

/* bias_grad_kernel: db = column sums of dz (rows, width); with act, dz is first masked
 * in place by act > 0 (the ReLU's gradient, act its output). Grid (column tiles of 32,
 * chunks of FH_BIAS_GRAD_CHUNK rows); the last chunk to finish a tile adds the tile's
 * partial sums in chunk order. */
#define FH_BIAS_GRAD_CHUNK 64
#define FH_BIAS_GRAD_ROWS 8
/* bias_grad_bf16_wide_kernel: two columns a thread, chunks of FH_BIAS_GRAD_CHUNK2 rows,
 * each thread's rows loaded FH_BIAS_GRAD_BATCH at a time */
#define FH_BIAS_GRAD_CHUNK2 128
#define FH_BIAS_GRAD_BATCH 4
#if (FH_BIAS_GRAD_CHUNK2 / FH_BIAS_GRAD_ROWS) % FH_BIAS_GRAD_BATCH != 0
#error "bias_grad_bf16_wide_kernel loads a thread's rows in whole batches"
#endif
typedef struct {
    float *dz;
    const float *act;
    float *db;
    int rows, width;
    double *partials;   /* (chunks, width) */
    unsigned *counters; /* (column tiles) */
} fh_bias_grad_args;

/* bias_grad_bf16_kernel (the bf16 update): as bias_grad_kernel over dz16 (rows,
 * width) bf16, masked in place where act16 (bf16) is not positive; or, dz32 given,
 * over the fp32 dz32, whose bf16 copy (masked likewise when act16) goes to dz16.
 * bias_grad_bf16_wide_kernel takes the same: width even, the arrays 4-byte (dz32 8-byte)
 * aligned, grid (width / 64, chunks of FH_BIAS_GRAD_CHUNK2 rows). */
typedef struct {
    const float *dz32;
    unsigned short *dz16;
    const unsigned short *act16;
    float *db;
    int rows, width;
    double *partials;   /* (chunks, width) */
    unsigned *counters; /* (column tiles) */
} fh_bias_grad_bf16_args;

/* relu_mask_kernel: n elements of a backward gradient zeroed in place where the layer's
 * ReLU output was not positive: fp32 dz by act, or bf16 dz16 by act16 (the other pair
 * NULL); 16-byte aligned. */
typedef struct {
    float *dz;
    const float *act;
    unsigned short *dz16;
    const unsigned short *act16;
    long long n;
} fh_relu_mask_args;

/* bias_act_kernel: y (rows, width) += b, then the ReLU where relu (after a cuBLAS
 * matmul, for layers cublasLt's bias epilogue cannot take); y16 (bf16) instead of y
 * when not NULL. */
typedef struct {
    float *y;
    unsigned short *y16;
    const float *b;
    long long rows;
    int width, relu;
} fh_bias_act_args;

/* grad_sumsq_kernel: partials[b] = the sum of g^2 over block b's slice. */
typedef struct {
    const float *grads;
    long long n;
    double *partials;
} fh_grad_sumsq_args;

/* A matrix of the bf16 weight copy also kept with padded rows (FH_BF16_LD: a first
 * layer whose input width is not a multiple of 8, update_layers.c): params [begin,
 * begin + rows * cols) again at dst, row r at dst + r * ld. */
typedef struct {
    long long begin;
    int rows, cols, ld;
    unsigned short *dst;
} fh_bf16_padded;
#define FH_ADAM_PADDED 2 /* the actor's and the critic's first layers */

/* adam_kernel: global-norm clipping (max_norm; INFINITY: none) and Adam, when the
 * phase's step is applied and the norm is finite; block 0 records the norm. */
typedef struct {
    fh_update_state *state;
    int curiosity;          /* 0: the PPO phase, 1: the curiosity phase */
    float *params, *adam_m, *adam_v;
    unsigned short *params16; /* the bf16 update's weight copy (precision.h), or NULL */
    fh_bf16_padded padded[FH_ADAM_PADDED]; /* with params16: its padded matrices */
    int n_padded;
    float *grads;
    long long n;
    const double *partials;
    int n_partials;
    double max_norm;
    float beta1, beta2, eps;
    float weight_decay;     /* AdamW's decoupled decay, p *= 1 - lr weight_decay before
                               the step (fh_adam_decay_factor); 0: plain Adam */
    double *records;        /* PPO: the norm goes into the step's row */
} fh_adam_args;

/* explained_variance_kernel (one block) and update_summary_kernel (one thread). */
typedef struct {
    const float *values, *returns;
    long long n;
    fh_update_summary *summary;
    double *dist_sums;    /* NULL: one pass over this batch; data-parallel (issue 22): pass 0
                             leaves the sums here (2), pass 1 the variances' (2 more) from
                             the means over n_total samples, pass 2 the ratio; all-reduced
                             between the passes */
    int pass;
    long long n_total;
} fh_explained_variance_args;

typedef struct {
    const fh_update_state *state;
    const double *records;
    fh_update_summary *summary;
} fh_update_summary_args;

/* iteration_metrics_kernel: one thread an episode (iteration_metrics.cu). */
#define FH_METRIC_SUMS 5
typedef struct {
    const float *rewards;
    const int *actions, *dones;
    const fh_episode_state *episodes; /* (N) after the collection */
    int n_episodes, n_steps;
    double *episode_return;           /* (N) running, across collections */
    int *episode_length;              /* (N) */
    double *totals;                   /* (N, FH_EPISODE_TOTALS) at the last call */
    long long *int_totals;            /* (N, 1 + FH_BARRIER_N_KINDS): reversals, hits */
    double *partials;                 /* (blocks, FH_METRIC_SUMS) */
    unsigned *counter;
    fh_iteration_sums *out;           /* zeroed before the launch */
} fh_iteration_metrics_args;

#endif
