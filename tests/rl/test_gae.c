/* test_gae.c — GAE (SPEC §5) against an independent float64 reference (issue 5).
 *
 * fh_batch_compute_gae runs compute_gae_backward (the kernel's Phase B, compiled by C)
 * over every row of a batch. The reference below is written from SPEC §5 alone, forward
 * in its reading of V_next and backward in its recursion:
 *   V_next(t) = V(s_{t+1})       inside an episode (not done, t < L-1),
 *             = trunc_values[t]  when step t truncated (done, not terminal),
 *             = last_values[n]   for the last step of the row when it is not done;
 *   delta_t = r_t + gamma V_next (1 - terminal_t) - V(s_t),
 *   A_t = delta_t + gamma lambda (1 - done_t) A_{t+1},  R_t = A_t + V(s_t).
 * Inputs are random: rewards, values, terminals and truncations at several densities,
 * N not a multiple of 32, L in {1, 2, 64, 500}, rows that end mid-episode (crossing the
 * buffer end) and rows whose last step is a done. Tolerance: fp32 recursion vs fp64,
 * |a - b| <= 2e-5 + 2e-5 |b| (values and rewards are O(1), |A| stays below ~60). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "env/common_device_functions.cuh"
#include "env/ppo_device_functions.cuh"
#include "foxhunt/rollout.h"
#include "test_util.h"

#define GAE_ATOL 2e-5
#define GAE_RTOL 2e-5

/* splitmix64: the test's own generator, independent of the code under test. */
static uint64_t g_rng = 0x243F6A8885A308D3ULL;
static double uniform01(void)
{
    uint64_t z = (g_rng += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}
static float uniform_pm(double scale) { return (float)((2.0 * uniform01() - 1.0) * scale); }

/* The float64 reference over one row (SPEC §5). */
static void reference_gae_row(double *adv, double *ret, const float *rewards,
                              const float *values, const int32_t *dones,
                              const int32_t *terminals, const float *trunc_values,
                              float last_value, int L, double gamma, double lambda)
{
    double next_adv = 0.0;
    for (int t = L - 1; t >= 0; t--) {
        double v_next;
        int truncated = dones[t] && !terminals[t];
        if (truncated)
            v_next = trunc_values[t];
        else if (dones[t])
            v_next = 0.0; /* terminal: multiplied by (1 - terminal) = 0 anyway */
        else if (t == L - 1)
            v_next = last_value;
        else
            v_next = values[t + 1];
        double delta = (double)rewards[t] + gamma * v_next * (1.0 - terminals[t]) - values[t];
        double a = delta + gamma * lambda * (1.0 - dones[t]) * next_adv;
        adv[t] = a;
        ret[t] = a + values[t];
        next_adv = a;
    }
}

typedef struct {
    double p_terminal, p_truncated;
} densities;

/* One random batch, compared row by row; prints the first mismatch as [n, t]. */
static void check_random_batch(int N, int L, densities d, double gamma, double lambda)
{
    fh_trajectory_batch b;
    fh_error err;
    fh_error_clear(&err);
    if (fh_trajectory_batch_alloc(&b, N, L, &err) != FH_OK) {
        CHECK_MSG(0, "alloc: %s", err.message);
        return;
    }
    size_t nl = (size_t)N * L;
    int n_term = 0, n_trunc = 0, n_last_done = 0, n_cross = 0;
    for (int n = 0; n < N; n++) {
        for (int t = 0; t < L; t++) {
            size_t i = (size_t)n * L + t;
            b.rewards[i] = uniform_pm(2.0);
            b.values[i] = uniform_pm(3.0);
            int term = uniform01() < d.p_terminal;
            int trunc = uniform01() < d.p_truncated;
            /* rows n % 4 == 1 always end with a done on the last step, alternating
             * terminal and truncation, so both paths at t = L-1 are covered */
            if (t == L - 1 && n % 4 == 1) {
                term = (n / 4) % 2;
                trunc = !term;
            }
            if (t == L - 1 && n % 4 == 2) /* and rows n % 4 == 2 cross the buffer end */
                term = trunc = 0;
            b.terminals[i] = term;
            b.dones[i] = term || trunc;
            /* trunc_values holds V(final observation) where truncated, else 0; a ruin
             * at the horizon is both, and its bootstrap must still be zero */
            b.trunc_values[i] = trunc ? uniform_pm(3.0) : 0.0f;
            b.advantages[i] = NAN; /* must be overwritten */
            b.returns[i] = NAN;
            n_term += term;
            n_trunc += trunc && !term;
        }
        b.last_values[n] = uniform_pm(3.0);
        if (b.dones[(size_t)n * L + L - 1])
            n_last_done++;
        else
            n_cross++;
    }
    fh_batch_compute_gae(&b, (float)gamma, (float)lambda);

    double *adv = malloc(nl * sizeof(double)), *ret = malloc(nl * sizeof(double));
    if (!adv || !ret) {
        CHECK_MSG(0, "out of memory");
        free(adv);
        free(ret);
        fh_trajectory_batch_free(&b);
        return;
    }
    for (int n = 0; n < N; n++) {
        size_t row = (size_t)n * L;
        reference_gae_row(adv + row, ret + row, b.rewards + row, b.values + row, b.dones + row,
                          b.terminals + row, b.trunc_values + row, b.last_values[n], L, gamma,
                          lambda);
    }
    int ok = 1;
    for (size_t i = 0; i < nl && ok; i++) {
        int n = (int)(i / (size_t)L), t = (int)(i % (size_t)L);
        if (!fh_close(b.advantages[i], adv[i], GAE_ATOL, GAE_RTOL)) {
            fprintf(stderr, "N %d L %d p_term %g p_trunc %g: advantage [n %d, t %d] = %.9g, "
                    "reference %.9g (done %d terminal %d)\n", N, L, d.p_terminal,
                    d.p_truncated, n, t, b.advantages[i], adv[i], b.dones[i], b.terminals[i]);
            ok = 0;
        } else if (!fh_close(b.returns[i], ret[i], GAE_ATOL, GAE_RTOL)) {
            fprintf(stderr, "N %d L %d p_term %g p_trunc %g: return [n %d, t %d] = %.9g, "
                    "reference %.9g\n", N, L, d.p_terminal, d.p_truncated, n, t,
                    b.returns[i], ret[i]);
            ok = 0;
        }
    }
    CHECK_MSG(ok, "GAE N %d L %d differs from the float64 reference", N, L);
    /* the inputs really exercised every path */
    CHECK_MSG(n_cross > 0, "N %d L %d: no row crosses the buffer end", N, L);
    CHECK_MSG(n_last_done > 0, "N %d L %d: no row ends with a done", N, L);
    if (d.p_terminal > 0 && L >= 64)
        CHECK_MSG(n_term > 0, "N %d L %d: no terminal drawn", N, L);
    if (d.p_truncated > 0 && L >= 64)
        CHECK_MSG(n_trunc > 0, "N %d L %d: no truncation drawn", N, L);
    free(adv);
    free(ret);
    fh_trajectory_batch_free(&b);
}

/* The same scan called directly on one row (the device function the kernel calls). */
static void check_device_function_row(void)
{
    enum { L = 37 };
    float r[L], v[L], tv[L], a[L], ret[L];
    int d[L], term[L];
    int32_t d32[L], term32[L];
    for (int t = 0; t < L; t++) {
        r[t] = uniform_pm(1.0);
        v[t] = uniform_pm(1.0);
        term[t] = uniform01() < 0.05;
        int trunc = uniform01() < 0.1;
        d[t] = term[t] || trunc;
        tv[t] = trunc ? uniform_pm(1.0) : 0.0f;
        d32[t] = d[t];
        term32[t] = term[t];
    }
    d[L - 1] = d32[L - 1] = 0;
    term[L - 1] = term32[L - 1] = 0;
    tv[L - 1] = 0.0f;
    float last = 0.75f;
    compute_gae_backward(a, ret, r, v, d, term, tv, last, L, 0.97f, 0.9f);
    double ra[L], rr[L];
    reference_gae_row(ra, rr, r, v, d32, term32, tv, last, L, 0.97, 0.9);
    double da[L], dr[L];
    for (int t = 0; t < L; t++) {
        da[t] = a[t];
        dr[t] = ret[t];
    }
    CHECK_ARRAY_CLOSE("compute_gae_backward advantages", da, ra, L, GAE_ATOL, GAE_RTOL);
    CHECK_ARRAY_CLOSE("compute_gae_backward returns", dr, rr, L, GAE_ATOL, GAE_RTOL);
}

/* L = 3 by hand, gamma = lambda = 0.5 (gamma lambda = 0.25): every number is dyadic, so
 * fp32 must reproduce it exactly.
 * Row 0: r = (1, 2, 3), V = (0.5, 1, 1.5), done = (0, 1, 0) truncated at t=1 with
 *        V(final obs) = 2, V(s_L) = 4.
 *   t=2: V_next = V(s_L) = 4:   delta = 3 + 0.5*4 - 1.5 = 3.5; A = 3.5;            R = 5
 *   t=1: V_next = trunc = 2:    delta = 2 + 0.5*2 - 1   = 2;   A = 2 (done: no A_2); R = 3
 *   t=0: V_next = V(s_1) = 1:   delta = 1 + 0.5*1 - 0.5 = 1;   A = 1 + 0.25*2 = 1.5; R = 2
 * Row 1: r = (1, 1, 1), V = (1, 1, 1), terminal at t=2 (last step), V(s_L) = 100 unused.
 *   t=2: delta = 1 + 0 - 1 = 0;        A = 0;                  R = 1
 *   t=1: delta = 1 + 0.5*1 - 1 = 0.5;  A = 0.5 + 0.25*0 = 0.5; R = 1.5
 *   t=0: delta = 0.5;                  A = 0.5 + 0.25*0.5 = 0.625; R = 1.625 */
static void check_hand_computed(void)
{
    fh_trajectory_batch b;
    fh_error err;
    fh_error_clear(&err);
    if (fh_trajectory_batch_alloc(&b, 2, 3, &err) != FH_OK) {
        CHECK_MSG(0, "alloc: %s", err.message);
        return;
    }
    const float r[6] = {1, 2, 3, 1, 1, 1}, v[6] = {0.5f, 1, 1.5f, 1, 1, 1};
    const int32_t dones[6] = {0, 1, 0, 0, 0, 1}, terms[6] = {0, 0, 0, 0, 0, 1};
    const float tv[6] = {0, 2, 0, 0, 0, 0};
    memcpy(b.rewards, r, sizeof r);
    memcpy(b.values, v, sizeof v);
    memcpy(b.dones, dones, sizeof dones);
    memcpy(b.terminals, terms, sizeof terms);
    memcpy(b.trunc_values, tv, sizeof tv);
    b.last_values[0] = 4.0f;
    b.last_values[1] = 100.0f;
    fh_batch_compute_gae(&b, 0.5f, 0.5f);
    const double want_adv[6] = {1.5, 2, 3.5, 0.625, 0.5, 0};
    const double want_ret[6] = {2, 3, 5, 1.625, 1.5, 1};
    double got_adv[6], got_ret[6];
    for (int i = 0; i < 6; i++) {
        got_adv[i] = b.advantages[i];
        got_ret[i] = b.returns[i];
    }
    CHECK_ARRAY_CLOSE("hand-computed advantages [n*3+t]", got_adv, want_adv, 6, 0.0, 0.0);
    CHECK_ARRAY_CLOSE("hand-computed returns [n*3+t]", got_ret, want_ret, 6, 0.0, 0.0);
    fh_trajectory_batch_free(&b);
}

int main(void)
{
    check_hand_computed();
    check_device_function_row();
    const densities dens[] = {
        {0.0, 0.0},     /* no episode ends: every row crosses the buffer end */
        {0.002, 0.004}, /* realistic: horizon 256, rare ruin */
        {0.02, 0.05},
        {0.2, 0.3},     /* dense: many short episodes, ruin at the horizon too */
    };
    const int Ls[] = {1, 2, 64, 500};
    const int Ns[] = {37, 5};
    for (size_t di = 0; di < sizeof dens / sizeof dens[0]; di++)
        for (size_t li = 0; li < sizeof Ls / sizeof Ls[0]; li++)
            for (size_t ni = 0; ni < sizeof Ns / sizeof Ns[0]; ni++)
                check_random_batch(Ns[ni], Ls[li], dens[di], 0.99, 0.95);
    /* other coefficients: lambda 1 (Monte Carlo returns) and gamma lambda small */
    check_random_batch(45, 500, dens[2], 0.999, 1.0);
    check_random_batch(45, 64, dens[3], 0.9, 0.5);
    return fh_test_finish();
}
