/* dqn_targets.c — DQN's and PQN's targets, the Huber loss and the epsilon schedule
 * (issue 18; SPEC §7). Pure functions over arrays: the Q-values come in already
 * computed, so the same code serves the CPU update and checks the GPU's. The formulas
 * themselves are env/q_targets.cuh's, which the GPU update (q_update.cu) runs too. */
#include <math.h>

#include "env/q_targets.cuh"
#include "foxhunt/dqn.h"
#include "foxhunt/shapes.h"

void fh_double_dqn_targets(const float *G, const float *d, const float *q_online_next,
                           const float *q_target_next, int B, float *y_out)
{
    for (int i = 0; i < B; i++) {
        /* strict: the lowest index wins a tie */
        int best = argmax_first(q_online_next + (size_t)i * FH_N_ACTIONS, FH_N_ACTIONS);
        y_out[i] = fh_q_double_dqn_target(G[i], d[i],
                                          q_target_next[(size_t)i * FH_N_ACTIONS + best]);
    }
}

void fh_q_lambda_returns(const float *rewards, const uint8_t *terminal,
                         const uint8_t *truncated, const float *q_next_max, int N, int L,
                         float gamma, float lambda, float *out)
{
    for (int n = 0; n < N; n++) {
        const size_t row = (size_t)n * (size_t)L;
        fh_q_lambda_row(out + row, rewards + row, terminal + row, truncated + row,
                        q_next_max + row, L, gamma, lambda);
    }
}

float fh_huber_loss(const float *pred, const float *target, int n, float delta,
                    float *grad_out)
{
    if (n < 1 || !(delta > 0.0f))
        return NAN;
    const double dl = (double)delta, inv_n = 1.0 / (double)n;
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        double gx;
        sum += fh_q_huber((double)pred[i] - (double)target[i], dl, &gx);
        if (grad_out)
            grad_out[i] = (float)(gx * inv_n);
    }
    return (float)(sum * inv_n);
}

float fh_epsilon_at(int64_t step, int64_t total_steps, float eps_start, float eps_end,
                    float fraction)
{
    const double duration = (double)fraction * (double)total_steps;
    if (!(duration > 0.0) || (double)step >= duration)
        return eps_end;
    if (step <= 0)
        return eps_start;
    const double slope = ((double)eps_end - (double)eps_start) / duration;
    return (float)((double)eps_start + slope * (double)step);
}
