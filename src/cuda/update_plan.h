/* update_plan.h — every choice the PPO update on the GPU makes, in one pure function
 * (as fast_plan.h is for the collection): from the device and the problem (batch size,
 * minibatch, epochs, precision) the launch shapes of the update's kernels and how its
 * steps are grouped into CUDA graphs. gpu_ppo_update.c carries it out; `foxhunt bench`
 * and `foxhunt info --device cuda` print it; tests/cuda/test_update_plan.c checks it on
 * the CPU. Pure C: no CUDA headers. */
#ifndef FOXHUNT_CUDA_UPDATE_PLAN_H
#define FOXHUNT_CUDA_UPDATE_PLAN_H

#include <stdio.h>

#include "foxhunt/error.h"

/* Steps per captured graph at most: a graph of S steps has ~40 S nodes; instantiating
 * tens of thousands costs seconds and memory for no gain over relaunching. */
#define FH_UPDATE_GRAPH_MAX_STEPS 64

typedef struct {
    int sm_count;
    long long batch;        /* N * L samples */
    int minibatch;          /* rows per step (the last of an epoch may have fewer) */
    int epochs;             /* PPO epochs */
    int curiosity_epochs;   /* the curiosity fit's */
    int precision;               /* fh_precision of the matmuls (0: fp32) */
    int cc_major;                /* the device's compute capability (its major) */
    int plain_launches;          /* 1: no programmatic dependent launch even where the
                                    device has it (the override update_pdl=0) */
} fh_update_problem;

typedef struct {
    fh_update_problem problem;
    int minibatches_per_epoch; /* ceil(batch / minibatch) */
    int full_steps;            /* steps of `minibatch` rows an epoch */
    int tail_rows;             /* rows of the epoch's last step when short, else 0 */
    int graph_steps;           /* full steps per graph: the largest divisor of full_steps
                                  up to FH_UPDATE_GRAPH_MAX_STEPS */
    int graph_launches;        /* full-step graphs launched an epoch */
    int gather_threads, gather_grid;       /* one warp a row */
    int tail_gather_grid;
    int loss_threads, loss_grid; /* ppo_loss_kernel: one warp a row */
    int tail_loss_grid;
    int head_grad_threads, head_grad_grid; /* ppo_head_grad_kernel: a warp a column */
    int mse_threads;           /* mse_loss_kernel: one block */
    int sumsq_blocks;          /* grad_sumsq_kernel's partial sums (fixed: determinism) */
    int reduce_threads;        /* grad_sumsq, explained variance */
    int adam_threads, adam_grid, curiosity_adam_grid;
    /* the (4, ppo_params) buffer: params | grads | Adam m | v, the actor at 0 and the
     * critic at critic_offset: the actor's count rounded up to 64 floats, and ppo_params
     * the critic's end rounded likewise, so that every tensor and each of the four
     * blocks starts 256-byte aligned (unaligned, the critic took cuBLAS's align1 matmul
     * kernels: session 19's profile). The padding stays zero: no gradient, no step. */
    long long critic_offset, ppo_params, curiosity_params;
    /* our kernels launched with programmatic dependent launch (kernels/pdl.cuh), so
     * each may be scheduled while the one before it finishes: on compute capability 9.0
     * and later (earlier GPUs do not have it) */
    int pdl;
    /* bf16: the minibatch's hidden layers' bias gradients by bias_grad_bf16_wide_kernel
     * (fh_update_bias_wide) */
    int bias_wide;
    /* the critic's backward (it has a weight-gradient stream): its chain only masks each
     * hidden layer's gradient (relu_mask_kernel) and the bias gradients are summed on the
     * weight gradients' stream (fh_update_split_bias) */
    int split_bias;
    /* NVRTC options, in the order passed */
    int n_options;
    const char *options[4];
} fh_update_plan;

/* FH_ERR_INPUT when the problem cannot be run (a minibatch of 0 rows, or larger than
 * the batch, no epochs); the message says which field. */
fh_status fh_update_plan_make(const fh_update_problem *prob, fh_update_plan *out,
                              fh_error *err);
void fh_update_plan_print(FILE *f, const fh_update_plan *p);
/* The plan's `pdl` rule, for the Q update too (it plans its own steps): 1 from compute
 * capability 9.0 unless plain_launches. */
int fh_update_pdl(int cc_major, int plain_launches);
/* 1 when a bf16 layer of `rows` rows and an even width takes bias_grad_bf16_wide_kernel
 * (two columns a thread, chunks of 128 rows), else bias_grad_bf16_kernel (one column,
 * chunks of 64): from FH_BIAS_WIDE_MIN_ROWS rows. Measured in the product (session 23,
 * run 3): the update at 16,384 rows 26.63 -> 26.17 ms with the wide form, at 512 rows
 * (SPEC defaults) 121.2 -> 138.7 ms; the lab (dev/cuda/bias_grad_bf16) agrees at 16,384
 * (22.7 -> 14.9 us at a width of 512). 8,192 is the crossover of a cost model (a thread
 * waits ~chunk / 32 load round trips over its rows, the last block ~chunks / 32 over the
 * partials), not a measured point. */
#define FH_BIAS_WIDE_MIN_ROWS 8192
int fh_update_bias_wide(int rows, int width);
/* 1 when a minibatch of `rows` rows takes split_bias: below FH_SPLIT_BIAS_MAX_ROWS.
 * Measured in the product (session 24, run 5, the update's ms against the fused kernels,
 * 3 rounds alternating): at 512 rows (SPEC defaults) fp32 184.8 -> 183.2, bf16 121.9 ->
 * 118.5; at 16,384 rows (the throughput configuration) bf16 25.48 -> 25.61 and TF32
 * 38.1 -> 39.2: there the masks are cheaper on the chain (ncu: 4.5-12 us against 10-26)
 * but the weight gradients' stream, now summing the biases too, finishes last. 8,192 is
 * FH_BIAS_WIDE_MIN_ROWS's crossover again, not a measured point. */
#define FH_SPLIT_BIAS_MAX_ROWS 8192
int fh_update_split_bias(int rows);

#endif
