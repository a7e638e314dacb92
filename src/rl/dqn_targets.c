/* dqn_targets.c — DQN's and PQN's targets, the Huber loss and the epsilon schedule
 * (issue 18; SPEC §7). Pure functions over arrays: the Q-values come in already
 * computed, so the same code serves the CPU update and checks the GPU's. */
#include <math.h>

#include "foxhunt/dqn.h"
#include "foxhunt/shapes.h"

void fh_double_dqn_targets(const float *G, const float *d, const float *q_online_next,
                           const float *q_target_next, int B, float *y_out)
{
    for (int i = 0; i < B; i++) {
        const float *qo = q_online_next + (size_t)i * FH_N_ACTIONS;
        int best = 0;
        for (int a = 1; a < FH_N_ACTIONS; a++)
            if (qo[a] > qo[best]) /* strict: the lowest index wins a tie */
                best = a;
        double q = (double)q_target_next[(size_t)i * FH_N_ACTIONS + best];
        y_out[i] = (float)((double)G[i] + (double)d[i] * q);
    }
}

void fh_q_lambda_returns(const float *rewards, const uint8_t *terminal,
                         const uint8_t *truncated, const float *q_next_max, int N, int L,
                         float gamma, float lambda, float *out)
{
    const double g = (double)gamma, lam = (double)lambda;
    for (int n = 0; n < N; n++) {
        const size_t row = (size_t)n * (size_t)L;
        double next = 0.0; /* G_{t+1}, in double across the scan */
        for (int t = L - 1; t >= 0; t--) {
            const size_t i = row + (size_t)t;
            const double r = (double)rewards[i], q = (double)q_next_max[i];
            double G;
            if (terminal[i])
                G = r;
            else if (truncated[i] || t == L - 1)
                G = r + g * q; /* the episode (or the row) ends: bootstrap only */
            else
                G = r + g * ((1.0 - lam) * q + lam * next);
            out[i] = (float)G;
            next = G;
        }
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
        const double x = (double)pred[i] - (double)target[i];
        const double ax = fabs(x);
        double gx;
        if (ax <= dl) {
            sum += 0.5 * x * x;
            gx = x;
        } else {
            sum += dl * (ax - 0.5 * dl);
            gx = x > 0.0 ? dl : -dl;
        }
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
