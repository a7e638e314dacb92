/* iteration_sums.c — see iteration_sums.h. */
#include "rl/iteration_sums.h"

#include <math.h>
#include <string.h>

void fh_life_totals_of(fh_life_totals *out, const fh_episode_state *eps, int n_episodes)
{
    memset(out, 0, sizeof *out);
    for (int n = 0; n < n_episodes; n++) {
        out->cost += eps[n].life_cost / eps[n].initial_equity;
        out->turnover += eps[n].life_turnover;
        out->reversals += eps[n].life_reversals;
        for (int k = 0; k < FH_BARRIER_N_KINDS; k++)
            out->hits[k] += eps[n].life_barrier_hits[k];
    }
}

void fh_episode_totals_of(double *totals, long long *int_totals, const fh_episode_state *eps,
                          int n_episodes)
{
    for (int n = 0; n < n_episodes; n++) {
        totals[(size_t)n * FH_EPISODE_TOTALS] = eps[n].life_cost / eps[n].initial_equity;
        totals[(size_t)n * FH_EPISODE_TOTALS + 1] = eps[n].life_turnover;
        long long *it = int_totals + (size_t)n * (1 + FH_BARRIER_N_KINDS);
        it[0] = eps[n].life_reversals;
        for (int k = 0; k < FH_BARRIER_N_KINDS; k++)
            it[1 + k] = eps[n].life_barrier_hits[k];
    }
}

void fh_iteration_sums_host(fh_iteration_sums *s, const fh_trajectory_batch *b,
                            const fh_life_totals *before, const fh_life_totals *after,
                            double *episode_return, int32_t *episode_length)
{
    memset(s, 0, sizeof *s);
    int N = b->n_episodes, L = b->n_steps;
    for (int n = 0; n < N; n++) {
        for (int t = 0; t < L; t++) {
            int64_t i = (int64_t)n * L + t;
            s->reward_sum += b->rewards[i];
            s->action_counts[b->actions[i]]++;
            episode_return[n] += b->rewards[i];
            episode_length[n] += 1;
            if (b->dones[i]) {
                s->return_sum += episode_return[n];
                s->length_sum += episode_length[n];
                s->finished++;
                episode_return[n] = 0;
                episode_length[n] = 0;
            }
        }
    }
    s->cost = after->cost - before->cost;
    s->turnover = after->turnover - before->turnover;
    s->reversals = after->reversals - before->reversals;
    for (int k = 0; k < FH_BARRIER_N_KINDS; k++)
        s->hits[k] = after->hits[k] - before->hits[k];
}

void fh_iteration_metrics_from_sums(fh_iteration_metrics *m, const fh_iteration_sums *s,
                                    int64_t samples)
{
    double total = (double)samples, h = 0;
    for (int a = 0; a < FH_N_ACTIONS; a++)
        if (s->action_counts[a])
            h -= s->action_counts[a] / total * log(s->action_counts[a] / total);
    m->mean_reward = s->reward_sum / total;
    m->episodes_finished = (long)s->finished;
    m->mean_episode_return = s->finished ? s->return_sum / s->finished : NAN;
    m->mean_episode_length = s->finished ? s->length_sum / s->finished : NAN;
    m->action_entropy = h;
    m->costs = s->cost;
    m->turnover = s->turnover / total;
    m->reversals = (long)s->reversals;
    m->barrier_profit_take = (long)s->hits[FH_BARRIER_PROFIT_TAKE];
    m->barrier_stop_loss = (long)s->hits[FH_BARRIER_STOP_LOSS];
    m->barrier_time_limit = (long)s->hits[FH_BARRIER_TIME_LIMIT];
}
