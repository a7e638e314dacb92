/* q_update_args.h — the host/device contract of the DQN/PQN update on the GPU (issue
 * 18; gpu_q_update.c, q_update.cu): the update's state on the device, one argument
 * struct per kernel (passed by value, `void *args[] = {&a}`), the record columns, and
 * the PCG32 jump-ahead that lets a kernel make the CPU's replay draws out of order.
 * Plain C, included by the kernels (NVRTC, after common_device_functions.cuh and
 * update_args.h) and by the host.
 *
 * As in the PPO update (update_args.h), what changes from step to step lives on the
 * device so that every replay of a captured graph is the same graph: fh_q_state holds
 * PPO's fh_update_state (its `ppo` phase is the Q-network's, so adam_kernel and
 * grad_sumsq_kernel of adam.cu serve unchanged) plus DQN's sampling position, gradient
 * steps and ring size. q_loss_kernel (its last block) owns the state: it decides
 * whether the step applies, records it and advances the position. */
#ifndef FOXHUNT_Q_UPDATE_ARGS_H
#define FOXHUNT_Q_UPDATE_ARGS_H

#ifndef __CUDACC_RTC__ /* the host; NVRTC has them from the program's earlier text */
#include "cuda/kernels/update_args.h"
#include "env/common_device_functions.cuh"
#endif

/* Record columns (a row of FH_UREC_COLS doubles per applied step, update_args.h's
 * layout so that adam_kernel writes the step's gradient norm into FH_UREC_GRAD_NORM). */
#define FH_QREC_EPOCH FH_UREC_EPOCH         /* PQN: epoch; DQN: 0 */
#define FH_QREC_MINIBATCH FH_UREC_MINIBATCH /* PQN: minibatch of the epoch; DQN: the step */
#define FH_QREC_SAMPLES FH_UREC_SAMPLES
#define FH_QREC_MEAN_Q 3                    /* mean Q(s, a) of the minibatch */
#define FH_QREC_MEAN_TARGET 4               /* mean y */
#define FH_QREC_GRAD_NORM FH_UREC_GRAD_NORM /* pre-clip norm (adam_kernel's) */
#define FH_QREC_LOSS FH_UREC_LOSS           /* the minibatch's TD loss */

/* Why an update stopped: update_args.h's codes (FH_UFAIL_VALUE_LOSS: the TD loss). */
#define FH_QFAIL_LOSS FH_UFAIL_VALUE_LOSS

/* Rows a block of the row-wise kernels (one warp a row). */
#define FH_Q_ROWS_PER_BLOCK 8

typedef struct {
    fh_update_state base;         /* base.ppo: the Q-network's phase; base.lr */
    unsigned long long rng_state; /* DQN: the update stream at the run's start */
    unsigned long long rng_inc;
    long long step;               /* DQN: steps run this run (the sampling position) */
    long long grad_steps;         /* DQN: gradient steps since the ring began (copies) */
    int ring_size;                /* DQN: filled slots, fixed during a run */
} fh_q_state;

/* What the host reads back after a run (q_summary_kernel). */
typedef struct {
    double loss, mean_q, mean_target, grad_norm; /* means over the applied steps */
    int minibatches;
    int failed, failed_epoch, failed_minibatch;  /* FH_UFAIL_*, 0-based position */
    long long adam_step, grad_steps;
} fh_q_summary;

/* q_gather_kernel (PQN): rows [0, rows) of the step's minibatch in the keyed order of
 * minibatch_order.cuh, one warp a row: states, actions and the Q(lambda) targets. */
typedef struct {
    const float *states;            /* (n, 54) the collection's */
    const int *actions;             /* (n) */
    const float *returns;           /* (n) the Q(lambda) returns */
    const fh_q_state *state;
    const unsigned long long *keys; /* (epochs) */
    long long n;
    int minibatch, rows;
    float *mb_states;               /* (rows, 54) */
    int *mb_actions;
    float *mb_targets;
} fh_q_gather_args;

/* q_loss_kernel (one warp a row, FH_Q_ROWS_PER_BLOCK rows a block): the loss on
 * Q(s, a) only, PQN's 0.5 (Q - y)^2 or DQN's Huber(delta), its gradient / rows on the
 * action's column (the others 0), and in the last block the sums, the record, the
 * decision and the next position. */
#define FH_Q_LOSS_STATS 3 /* loss, Q(s, a), y */
typedef struct {
    fh_q_state *state;
    const float *q;       /* (rows, 45) */
    const int *actions;
    const float *targets;
    int rows, minibatches_per_epoch;
    int huber;
    float delta;
    float *dq;            /* (rows, 45) */
    double *records;      /* (steps, FH_UREC_COLS) */
    double *partials;     /* (blocks, FH_Q_LOSS_STATS) */
    unsigned *counter;
} fh_q_loss_args;

/* q_hidden_forward_kernel (one warp a row): y = leaky_relu(LN(x)) with LayerNorm, else
 * leaky_relu(x) (y may be x then); mean and rstd (rows) written for the backward. */
typedef struct {
    const float *x;             /* (rows, width) the linear output */
    float *y;                   /* (rows, width) */
    float *mean, *rstd;         /* (rows), LayerNorm only */
    const float *gamma, *beta;  /* (width), LayerNorm only */
    int rows, width, layer_norm;
    float slope, eps;
} fh_q_hidden_args;

/* q_hidden_backward_kernel (one warp a row), the hidden layer's activation and norm
 * backward: g (rows, width) holds d loss / d y on entry and the LeakyReLU's gradient
 * dy = g * (y > 0 ? 1 : slope) on exit; with LayerNorm also dxhat = dy * xhat (for
 * gamma's gradient) and dx, the gradient at the linear output (fh_layer_norm_backward's
 * arithmetic). The column sums (beta's, gamma's and the bias's gradients) follow as
 * bias_grad_kernel launches. */
typedef struct {
    float *g;
    const float *y;                 /* (rows, width) the forward's output */
    const float *x, *mean, *rstd;   /* the forward's LayerNorm input and statistics */
    const float *gamma;
    float *dxhat, *dx;              /* (rows, width), LayerNorm only */
    int rows, width, layer_norm;
    float slope;
} fh_q_hidden_grad_args;

/* q_max_kernel (one warp a row): out[i] = max_a q[i, a]. */
typedef struct {
    const float *q; /* (rows, 45) */
    float *out;
    long long rows;
} fh_q_max_args;

/* q_lambda_kernel (one thread an episode row): fh_q_lambda_returns's scan. */
typedef struct {
    const float *rewards;
    const unsigned char *terminal, *truncated;
    const float *next_max;
    int n_episodes, n_steps;
    float gamma, lambda;
    float *out;                 /* (N*L) */
} fh_q_lambda_args;

/* The replay ring on the device (gpu_replay.h): replay.c's layout. */
typedef struct {
    float *states;       /* (C, 54) */
    int *actions;        /* (C) */
    float *returns;      /* (C) */
    float *next_states;  /* (C, 54) */
    float *discounts;    /* (C) */
    int capacity;
} fh_replay_view;

/* replay_push_kernel (one warp a transition): transitions i in [first, n) of the
 * collection, each with fh_replay_push_batch's n-step window, into slot
 * (head + i) % capacity. */
typedef struct {
    fh_replay_view ring;
    const float *states, *next_states;
    const int *actions;
    const float *rewards;
    const unsigned char *terminal, *truncated;
    int n_steps;                /* L */
    long long first, n;
    int head, n_step;
    float gamma;
} fh_replay_push_args;

/* q_sample_kernel (DQN, one warp a row): row i of step s draws slot
 * rng_uniform_int(rng, ring_size) with rng the run's stream advanced by s * rows + i
 * outputs (fh_replay_sample's draws, in its order), and gathers it. */
typedef struct {
    fh_replay_view ring;
    const fh_q_state *state;
    int rows;
    float *states, *next_states;  /* (rows, 54) */
    int *actions;
    float *returns, *discounts;
    int *slots;                   /* (rows) the drawn slots (tests) */
} fh_q_sample_args;

/* q_double_dqn_kernel (one warp a row): fh_double_dqn_targets. */
typedef struct {
    const float *q_online, *q_target; /* (rows, 45) at s' */
    const float *returns, *discounts;
    float *targets;
    int rows;
} fh_q_double_dqn_args;

/* q_target_kernel (DQN, after the step's Adam): a hard copy of the params into the
 * target when every > 0 and grad_steps % every == 0, else (every == 0) Polyak with
 * tau; nothing when the step was not applied. */
typedef struct {
    const fh_q_state *state;
    const float *params;
    float *target;
    long long n;
    int every;
    float tau;
} fh_q_target_args;

typedef struct {
    const fh_q_state *state;
    const double *records;
    fh_q_summary *summary;
} fh_q_summary_args;

/* The PCG32 stream `delta` outputs ahead, in O(log delta) (Brown 1994, "Random number
 * generation with arbitrary strides"; pcg_advance_lcg_64 of the PCG library): the
 * LCG's s -> a s + c applied delta times is s -> A s + C with A = a^delta and
 * C = c (a^delta - 1) / (a - 1), both built by squaring. */
FH_DEVICE void fh_pcg32_advance(fh_rng *rng, unsigned long long delta)
{
    unsigned long long cur_mult = FH_PCG_MULT, cur_plus = rng->inc;
    unsigned long long acc_mult = 1ULL, acc_plus = 0ULL;
    while (delta > 0ULL) {
        if (delta & 1ULL) {
            acc_mult *= cur_mult;
            acc_plus = acc_plus * cur_mult + cur_plus;
        }
        cur_plus = (cur_mult + 1ULL) * cur_plus;
        cur_mult *= cur_mult;
        delta >>= 1;
    }
    rng->state = acc_mult * rng->state + acc_plus;
}

#endif
