/* partition.h — how a data-parallel run splits one run's work over `world` ranks
 * (issue 22, docs/SCALING.md). Pure functions, no CUDA, no NCCL.
 *
 * K ranks train the model one GPU would train with the same total episodes N and the
 * same seed: rank r runs episodes [r N/K, (r+1) N/K) of that run (the same random
 * streams: env_episode_init's stream is the global episode index) and takes M/K rows of
 * every minibatch of M, so a step's gradient, averaged over the ranks, is the mean over
 * M rows as on one GPU. Both divisions must be exact: ranks with unequal shares would
 * weight their samples unequally in the average, and would run different numbers of
 * steps (every step is a collective). */
#ifndef FOXHUNT_DIST_PARTITION_H
#define FOXHUNT_DIST_PARTITION_H

#include "foxhunt/error.h"

typedef struct {
    int world, rank;
    int total_episodes; /* N: the run's, across ranks (the checkpoint's and config's) */
    int episodes;       /* N / K: this rank's */
    int first_episode;  /* r N / K: the global index of this rank's first episode */
    int total_minibatch; /* M */
    int minibatch;      /* M / K: this rank's rows of every step */
} fh_partition;

/* world >= 1, 0 <= rank < world, total_episodes and total_minibatch multiples of world
 * (at least one episode and one row a rank); else FH_ERR_INPUT naming the setting and
 * the nearest values that divide. */
fh_status fh_partition_make(int world, int rank, int total_episodes, int total_minibatch,
                            fh_partition *out, fh_error *err);

#endif
