/* bench_train.h — `foxhunt bench --train` (bench_train.c). */
#ifndef FOXHUNT_CLI_BENCH_TRAIN_H
#define FOXHUNT_CLI_BENCH_TRAIN_H

#include "foxhunt/error.h"

typedef struct {
    int episodes, steps, epochs, minibatch, repeats, threads;
    const char *precision;
} fh_bench_train_options;

/* Rows for the GPU (use_gpu) and the CPU (with_cpu), printed as they finish. */
fh_status fh_bench_train(const fh_bench_train_options *o, int use_gpu, int with_cpu,
                         fh_error *err);

#endif
