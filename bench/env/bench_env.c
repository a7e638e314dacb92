/* bench_env.c — CPU environment steps per second (issue 3): fh_vec_env_step with
 * uniform random actions, no networks, no curiosity. For each (N, threads): one
 * warm-up run, then the median of 5 timed runs of `steps` vec steps.
 *
 * Market: a 20,000-bar random walk built here (the env reads 51 features, close and
 * sigma per bar; their values do not change the cost of a step).
 * Usage: bench_env [steps (default 2000)] */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env/common_device_functions.cuh"
#include "foxhunt/env.h"
#include "foxhunt/timing.h"

#define N_BARS 20000
#define N_REPEATS 5

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 2000;
    float *close = malloc(sizeof(float) * N_BARS);
    float *sigma = malloc(sizeof(float) * N_BARS);
    float *feat = malloc(sizeof(float) * N_BARS * FH_N_MARKET_FEATURES);
    if (!close || !sigma || !feat || steps < 1)
        return 1;
    fh_rng g;
    rng_seed(&g, 1u, 0u);
    double p = 100.0;
    for (int i = 0; i < N_BARS; i++) {
        close[i] = (float)p;
        sigma[i] = 0.01f;
        p *= 1.0 + 0.02 * ((double)gpu_random(&g) - 0.5);
        for (int j = 0; j < FH_N_MARKET_FEATURES; j++)
            feat[(size_t)i * FH_N_MARKET_FEATURES + j] = gpu_random(&g) - 0.5f;
    }
    fh_env_market m = {feat, close, sigma, N_BARS, 0, NULL};
    fh_env_config cfg = fh_env_config_default();
    const int sizes[2] = {128, 1024};
    const int threads[2] = {1, 2};
    printf("bench_env: %d vec steps per run, median of %d runs\n", steps, N_REPEATS);
    printf("%6s %8s %16s %12s\n", "N", "threads", "env steps/s", "us/vec step");
    for (int si = 0; si < 2; si++) {
        int n = sizes[si];
        float *states = malloc(sizeof(float) * (size_t)n * FH_STATE_DIM);
        float *rewards = malloc(sizeof(float) * (size_t)n);
        int *actions = malloc(sizeof(int) * (size_t)n * (size_t)steps);
        int *dones = malloc(sizeof(int) * (size_t)n), *terms = malloc(sizeof(int) * (size_t)n);
        int *truncs = malloc(sizeof(int) * (size_t)n);
        if (!states || !rewards || !actions || !dones || !terms || !truncs)
            return 1;
        for (size_t k = 0; k < (size_t)n * (size_t)steps; k++)
            actions[k] = rng_uniform_int(&g, FH_N_ACTIONS);
        for (int ti = 0; ti < 2; ti++) {
            omp_set_num_threads(threads[ti]);
            double rates[N_REPEATS];
            for (int rep = -1; rep < N_REPEATS; rep++) {
                fh_vec_env env;
                fh_error err;
                if (fh_vec_env_init_market(&env, n, &cfg, &m, 7u, &err) != FH_OK) {
                    fprintf(stderr, "%s\n", err.message);
                    return 1;
                }
                fh_vec_env_reset(&env, states);
                double t0 = fh_clock_seconds();
                for (int t = 0; t < steps; t++) {
                    fh_vec_env_step(&env, actions + (size_t)t * n, NULL, states, rewards, dones,
                                    terms, truncs, NULL, &err);
                    if (env.n_logs > 100000)
                        fh_vec_env_clear_logs(&env);
                }
                double dt = fh_clock_seconds() - t0;
                if (rep >= 0)
                    rates[rep] = (double)n * steps / dt;
                fh_vec_env_free(&env);
            }
            double med = fh_median_inplace(rates, N_REPEATS);
            printf("%6d %8d %16.0f %12.2f\n", n, threads[ti], med, 1e6 * n / med);
        }
        free(states);
        free(rewards);
        free(actions);
        free(dones);
        free(terms);
        free(truncs);
    }
    free(close);
    free(sigma);
    free(feat);
    return 0;
}
