/* iteration_metrics.h — one training iteration's metrics: a row of metrics.csv / metrics.jsonl:
 * the columns every learner has, then the learner's own (learner.h). */
#ifndef FOXHUNT_ITERATION_METRICS_H
#define FOXHUNT_ITERATION_METRICS_H

#include <stdint.h>

/* The most columns of its own a learner may write (learner.h). */
#define FH_METRICS_MAX_OWN 16

typedef struct {
    int64_t iteration;
    int64_t global_step;             /* transitions collected so far */
    double lr;
    double collect_seconds;
    double update_seconds;
    double steps_per_second;         /* N*L / (collect + update) */
    double collect_steps_per_second; /* N*L / collect */
    long episodes_finished;
    double mean_episode_return;      /* NaN when no episode finished this iteration */
    double mean_episode_length;
    double mean_reward;
    double costs;                    /* transaction costs paid / initial equity, summed over episodes */
    double turnover;                 /* mean |exposure traded| per step */
    long reversals;
    long barrier_profit_take, barrier_stop_loss, barrier_time_limit;
    double action_entropy;           /* entropy of the batch's action histogram (nats) */
    /* the learner's own columns (learner.h: ops->columns names them), in its order */
    double own[FH_METRICS_MAX_OWN];
} fh_iteration_metrics;

#endif
