/* iteration_sums.h — an iteration's metrics from their sums (fh_iteration_sums,
 * src/cuda/kernels/iteration_sums.h): the host's computation of the sums from a
 * downloaded batch (the CPU path, and the reference for the device's
 * iteration_metrics_kernel), and the metrics the trainer logs from either. */
#ifndef FOXHUNT_RL_ITERATION_SUMS_H
#define FOXHUNT_RL_ITERATION_SUMS_H

#include <stdint.h>

#include "foxhunt/env_types.h"
#include "foxhunt/iteration_metrics.h"
#include "foxhunt/rollout.h"
#include "foxhunt/shapes.h"
#include "cuda/kernels/iteration_sums.h"

/* The episodes' lifetime totals, summed. */
typedef struct {
    double cost, turnover;
    long long reversals, hits[FH_BARRIER_N_KINDS];
} fh_life_totals;

void fh_life_totals_of(fh_life_totals *out, const fh_episode_state *eps, int n_episodes);
/* Each episode's totals as iteration_metrics_kernel keeps them: totals (N,
 * FH_EPISODE_TOTALS) and int_totals (N, 1 + FH_BARRIER_N_KINDS). */
void fh_episode_totals_of(double *totals, long long *int_totals, const fh_episode_state *eps,
                          int n_episodes);

/* The sums of batch b (walked episode by episode, step by step, carrying each
 * episode's running return and length across collections: updated), and the change of
 * the life totals from before to after. */
void fh_iteration_sums_host(fh_iteration_sums *s, const fh_trajectory_batch *b,
                            const fh_life_totals *before, const fh_life_totals *after,
                            double *episode_return, int32_t *episode_length);

/* The metrics of m that come from the sums (samples = N*L). */
void fh_iteration_metrics_from_sums(fh_iteration_metrics *m, const fh_iteration_sums *s,
                                    int64_t samples);

#endif
