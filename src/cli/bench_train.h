/* bench_train.h — `foxhunt bench --train` (bench_train.c). */
#ifndef FOXHUNT_CLI_BENCH_TRAIN_H
#define FOXHUNT_CLI_BENCH_TRAIN_H

#include "foxhunt/error.h"

/* The algorithms a --train run times (fh_bench_train_options.algos, bits). */
enum { FH_BENCH_PPO = 1, FH_BENCH_PQN = 2, FH_BENCH_DQN = 4, FH_BENCH_ALL = 7 };

typedef struct {
    int episodes, steps, epochs, minibatch, repeats, threads;
    const char *precision;
    unsigned algos;      /* FH_BENCH_* bits; 0: FH_BENCH_PPO */
    double replay_ratio; /* DQN's gradient steps per transition; 0: [q]'s default */
    unsigned q_kernels;  /* PQN/DQN GPU rows: FH_BENCH_KERNEL_* bits; 0: fast */
} fh_bench_train_options;

/* The DQN/PQN collection's kernels a GPU row is timed with, side by side. */
enum { FH_BENCH_KERNEL_FAST = 1, FH_BENCH_KERNEL_REFERENCE = 2 };

/* "ppo,dqn" -> FH_BENCH_* bits; FH_ERR_INPUT naming text on an unknown or empty list. */
fh_status fh_bench_parse_algos(const char *text, unsigned *algos, fh_error *err);

/* Rows for the GPU (use_gpu) and the CPU (with_cpu), each algorithm in turn (PPO, PQN,
 * DQN), printed as they finish. */
fh_status fh_bench_train(const fh_bench_train_options *o, int use_gpu, int with_cpu,
                         fh_error *err);

#endif
