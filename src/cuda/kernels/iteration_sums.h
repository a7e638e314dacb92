/* iteration_sums.h — the sums an iteration's metrics are made of (src/rl/
 * iteration_sums.c turns them into fh_iteration_metrics): computed on the host from a
 * downloaded batch (fh_iteration_sums_host), or on the device by
 * iteration_metrics_kernel when the batch stays there (the GPU update). Plain C, for
 * both; include after foxhunt/shapes.h and foxhunt/env_types.h. */
#ifndef FOXHUNT_ITERATION_SUMS_H
#define FOXHUNT_ITERATION_SUMS_H

/* Each episode's lifetime totals, as the sums keep them between collections. */
#define FH_EPISODE_TOTALS 2 /* life_cost / initial_equity, life_turnover */

typedef struct {
    double reward_sum;              /* of the batch's N*L rewards */
    double return_sum, length_sum;  /* of the episodes that ended in the batch */
    double cost, turnover;          /* the change of the episodes' life totals */
    long long finished;             /* episodes that ended in the batch */
    long long reversals;            /* the change of life_reversals */
    long long hits[FH_BARRIER_N_KINDS];
    long long action_counts[FH_N_ACTIONS];
} fh_iteration_sums;

#endif
