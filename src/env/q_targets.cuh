/* q_targets.cuh — the Q-learning targets, written once for the CPU update and the GPU
 * update (issue 33; SPEC §7; docs/DQN.md): the n-step return of a replay entry, the
 * Q(lambda) return scan of PQN, the double-DQN target and Huber's loss of one element.
 *
 * Conventions of common_device_functions.cuh (FH_DEVICE, the common subset of C11 and
 * C++17), as ppo_device_functions.cuh shares GAE: gcc includes it as
 * "env/q_targets.cuh" (src/rl/replay.c, src/rl/dqn_targets.c), NVRTC as the embedded
 * header "q_targets.cuh" (q_update.cu). Both sides run this text with the same types
 * and operation order (no fused multiply-adds: C11 mode and q_update.cu's --fmad=false),
 * so CPU and GPU targets are bit-identical (tests/dqn/test_gpu_q_update.c); the sums
 * and the scan run in double so that long horizons lose nothing to float rounding. */
#ifndef FOXHUNT_Q_TARGETS_CUH
#define FOXHUNT_Q_TARGETS_CUH

#include "common_device_functions.cuh"

/* The n-step window of step t in a row of L steps (arrays at the row's start):
 * G = sum_{j<k} gamma^j r_{t+j} over the k rewards up to the first terminal, truncation
 * or the row's end, or n_step of them. Returns G; sets *d = gamma^k (0 after a
 * terminal: no bootstrap) and *last, the step whose next state is the bootstrap state. */
FH_DEVICE double fh_q_n_step_window(const float *rewards, const unsigned char *terminal,
                                    const unsigned char *truncated, int L, int t, int n_step,
                                    double gamma, double *d, int *last)
{
    double g = 0.0, discount = 1.0; /* discount = gamma^j before r_{t+j} */
    int u = t;
    for (int j = 0; j < n_step; j++) {
        u = t + j;
        g += discount * (double)rewards[u];
        discount *= gamma;
        if (terminal[u]) {
            *d = 0.0;
            *last = u;
            return g;
        }
        if (truncated[u] || u == L - 1)
            break; /* the episode was cut, or the row ends: bootstrap from here */
    }
    *d = discount; /* gamma^k, k the rewards taken */
    *last = u;
    return g;
}

/* PQN's Q(lambda) returns over one row of L steps, backwards (arrays at the row's
 * start; out may alias rewards or q_next_max: step t reads both before writing):
 *   G_t = r_t                                          at a terminal,
 *   G_t = r_t + gamma Q_max(s_{t+1})                   where the episode or the row ends,
 *   G_t = r_t + gamma ((1 - lambda) Q_max(s_{t+1}) + lambda G_{t+1})   otherwise,
 * carried in double across the scan. */
FH_DEVICE void fh_q_lambda_row(float *out, const float *rewards, const unsigned char *terminal,
                               const unsigned char *truncated, const float *q_next_max, int L,
                               float gamma, float lambda)
{
    const double g = (double)gamma, lam = (double)lambda;
    double next = 0.0; /* G_{t+1} */
    for (int t = L - 1; t >= 0; t--) {
        const double r = (double)rewards[t], q = (double)q_next_max[t];
        double G;
        if (terminal[t])
            G = r;
        else if (truncated[t] || t == L - 1)
            G = r + g * q; /* bootstrap only */
        else
            G = r + g * ((1.0 - lam) * q + lam * next);
        out[t] = (float)G;
        next = G;
    }
}

/* The double-DQN target y = G + d Q_target(s', a*), a* the online network's greedy
 * action at s' (chosen by the caller: argmax_first, or a warp's reduction to the same
 * index), in double. */
FH_DEVICE float fh_q_double_dqn_target(float G, float d, float q_target_best)
{
    return (float)((double)G + (double)d * (double)q_target_best);
}

/* Huber's loss of one error x = Q - y with threshold dl (> 0): returns the loss,
 * 0.5 x^2 inside [-dl, dl] and dl (|x| - 0.5 dl) outside; *grad = its derivative,
 * x clamped to [-dl, dl]. */
FH_DEVICE double fh_q_huber(double x, double dl, double *grad)
{
    const double ax = fabs(x);
    if (ax <= dl) {
        *grad = x;
        return 0.5 * x * x;
    }
    *grad = x > 0.0 ? dl : -dl;
    return dl * (ax - 0.5 * dl);
}

#endif
