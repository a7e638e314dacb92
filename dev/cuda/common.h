/* common.h — what the dev/cuda programs share (llm.c's dev/cuda/common.h in spirit):
 * the product's sizes (include/foxhunt/shapes.h, included by a relative path so that a
 * program builds alone with one nvcc line), a checked CUDA call, a seeded RNG for
 * random inputs, a tolerance check that names the first mismatch, and a median-of-runs
 * timer on CUDA events.
 *
 * These programs are a lab, not the product: each holds a kernel's versions as the
 * product had them (or has them), a float64 CPU reference, a validation of every
 * version against it, and a timer. Their numbers are theirs; the product's figures
 * are in docs/BENCHMARKS.md. */
#ifndef FOXHUNT_DEV_CUDA_COMMON_H
#define FOXHUNT_DEV_CUDA_COMMON_H

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- sizes: the product's own header (no includes of its own), found relative to this
 * file, so a program still builds alone with one nvcc line ---- */
#include "../../include/foxhunt/shapes.h"
/* the product's critic input row: the state padded to whole float4s, 54 -> 56
 * (src/cuda/fast_plan.c's CRITIC_IN_STRIDE) */
#define FH_CRITIC_IN_STRIDE ((FH_STATE_DIM + 3) / 4 * 4)
/* src/env/common_device_functions.cuh */
#define FH_EXPOSURE_MIN (-1.0f)
#define FH_EXPOSURE_STEP 0.25f
#define FH_URGENCY_STEP 0.2f
#define FH_CURIOSITY_MSE_CAP 1.0f

/* ---- the sizes the product runs: N episodes x L 500 steps ---- */
#define DEV_STEPS 500
/* bars of the default synthetic market's train split (the ncu run at 21c0e55:
 * "15,840 bars of the train split") */
#define DEV_N_BARS 15840
static const int DEV_EPISODES[3] = {128, 1024, 16384}; /* N*L: 64,000, 512,000, 8,192,000 */

/* ---- checked calls: the call's text, file:line and CUDA's message; exit 1 ---- */
#define cudaCheck(call)                                                                    \
    do {                                                                                   \
        cudaError_t e_ = (call);                                                           \
        if (e_ != cudaSuccess) {                                                           \
            fprintf(stderr, "%s:%d: %s: %s (%s)\n", __FILE__, __LINE__, #call,             \
                    cudaGetErrorString(e_), cudaGetErrorName(e_));                         \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)
#define cudaCheckLaunch() cudaCheck(cudaGetLastError())

static inline void *host_alloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "out of host memory (%zu bytes)\n", bytes);
        exit(1);
    }
    return p;
}

/* ---- random inputs (splitmix64: seeded, the same on every machine) ---- */
typedef struct {
    uint64_t s;
} dev_rng;

static inline uint64_t dev_rng_next(dev_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* uniform in [lo, hi) */
static inline float dev_rng_uniform(dev_rng *r, float lo, float hi)
{
    return lo + (hi - lo) * (float)((dev_rng_next(r) >> 40) * (1.0 / 16777216.0));
}

/* uniform integer in [0, n) */
static inline int dev_rng_int(dev_rng *r, int n)
{
    return (int)(dev_rng_next(r) % (uint64_t)n);
}

/* Episodes' bars as the rollout writes them: row n * L + t holds bar start[n] + t, the
 * start uniform so that a whole episode (and its next bar) stays inside the market. */
static inline void dev_episode_bars(int *bars, int n_episodes, int n_steps, int n_bars, dev_rng *r)
{
    for (int n = 0; n < n_episodes; n++) {
        int start = dev_rng_int(r, n_bars - n_steps - 1);
        for (int t = 0; t < n_steps; t++)
            bars[(long long)n * n_steps + t] = start + t;
    }
}

/* ---- validation: |got - want| <= atol + rtol |want|, NaN only where NaN is wanted ---- */
typedef struct {
    long long checked, failed;
    double max_abs;         /* largest |got - want| seen */
    long long first_bad;    /* index of the first mismatch, -1 if none */
    double first_got, first_want;
} dev_check;

static inline void dev_check_one(dev_check *c, long long index, float got, double want,
                                 double atol, double rtol)
{
    c->checked++;
    int ok;
    if (isnan(want) || isnan(got)) {
        ok = isnan(want) && isnan(got);
    } else {
        double d = fabs((double)got - want);
        if (d > c->max_abs)
            c->max_abs = d;
        ok = d <= atol + rtol * fabs(want);
    }
    if (!ok) {
        if (c->failed == 0) {
            c->first_bad = index;
            c->first_got = got;
            c->first_want = want;
        }
        c->failed++;
    }
}

static inline void dev_check_init(dev_check *c)
{
    memset(c, 0, sizeof *c);
    c->first_bad = -1;
}

/* ---- timing: median of `runs` runs of fn(ctx) after one warm-up, CUDA events ---- */
static inline int dev_cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

#define DEV_MAX_RUNS 64
static inline float dev_time_median_ms(void (*fn)(void *), void *ctx, int runs)
{
    float ms[DEV_MAX_RUNS];
    if (runs > DEV_MAX_RUNS)
        runs = DEV_MAX_RUNS;
    cudaEvent_t start, stop;
    cudaCheck(cudaEventCreate(&start));
    cudaCheck(cudaEventCreate(&stop));
    fn(ctx); /* warm-up */
    cudaCheck(cudaDeviceSynchronize());
    for (int i = 0; i < runs; i++) {
        cudaCheck(cudaEventRecord(start));
        fn(ctx);
        cudaCheck(cudaEventRecord(stop));
        cudaCheck(cudaEventSynchronize(stop));
        cudaCheck(cudaEventElapsedTime(&ms[i], start, stop));
    }
    cudaCheck(cudaEventDestroy(start));
    cudaCheck(cudaEventDestroy(stop));
    qsort(ms, (size_t)runs, sizeof ms[0], dev_cmp_float);
    return ms[runs / 2];
}

static inline void dev_print_device(void)
{
    int dev = 0;
    cudaDeviceProp p;
    cudaCheck(cudaGetDevice(&dev));
    cudaCheck(cudaGetDeviceProperties(&p, dev));
    printf("device %d: %s, %d SMs, sm_%d%d, %.0f MB L2, %.1f GiB\n", dev, p.name,
           p.multiProcessorCount, p.major, p.minor, p.l2CacheSize / 1048576.0,
           p.totalGlobalMem / 1073741824.0);
}

static inline int dev_sm_count(void)
{
    int dev = 0, n = 0;
    cudaCheck(cudaGetDevice(&dev));
    cudaCheck(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
    return n;
}

#endif /* FOXHUNT_DEV_CUDA_COMMON_H */
