/* bench_features.c — load + features for 1,000,000 bars (issue 2; docs/BENCHMARKS.md).
 * Writes a 1M-row kline-style CSV of the synthetic market to /tmp (or argv[1]), then
 * times fh_bars_load_csv and fh_features_compute separately, 5 runs each, and prints
 * the median. Measures only; asserts nothing. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "foxhunt/data.h"
#include "foxhunt/format.h"
#include "foxhunt/timing.h"

#define N_BARS 1000000
#define RUNS 5

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "/tmp/foxhunt_bench_1m.csv";
    fh_synth_config cfg;
    fh_synth_config_default(&cfg);
    cfg.n_bars = N_BARS;
    fh_bars bars;
    fh_error err;
    if (fh_synth_generate(&cfg, &bars, NULL, &err) != FH_OK) {
        fprintf(stderr, "bench_features: %s\n", err.message);
        return 1;
    }
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return 1;
    }
    fprintf(f, "timestamp,open,high,low,close,volume\n");
    for (size_t i = 0; i < bars.n; i++) {
        char ts[32];
        fh_time_format(bars.time[i], ts, sizeof ts);
        fprintf(f, "%s,%.6f,%.6f,%.6f,%.6f,%.4f\n", ts, bars.open[i], bars.high[i],
                bars.low[i], bars.close[i], bars.volume[i]);
    }
    if (fclose(f) != 0) {
        perror(path);
        return 1;
    }
    fh_bars_free(&bars);

    double t_load[RUNS], t_feat[RUNS];
    float *features = malloc((size_t)N_BARS * FH_N_MARKET_FEATURES * sizeof *features);
    float *sigma = malloc((size_t)N_BARS * sizeof *sigma);
    for (int r = 0; r < RUNS; r++) {
        double t0 = fh_clock_seconds();
        if (fh_bars_load_csv(path, &bars, &err) != FH_OK) {
            fprintf(stderr, "bench_features: %s\n", err.message);
            return 1;
        }
        double t1 = fh_clock_seconds();
        if (fh_features_compute(&bars, features, sigma, &err) != FH_OK) {
            fprintf(stderr, "bench_features: %s\n", err.message);
            return 1;
        }
        double t2 = fh_clock_seconds();
        t_load[r] = t1 - t0;
        t_feat[r] = t2 - t1;
        fh_bars_free(&bars);
    }
    double ml = fh_median_inplace(t_load, RUNS), mf = fh_median_inplace(t_feat, RUNS);
    printf("bars %d, %s, OpenMP threads %d, median of %d runs\n", N_BARS, path,
           omp_get_max_threads(), RUNS);
    printf("| stage | median s | bars/s |\n|---|---|---|\n");
    printf("| load CSV | %.3f | %.2fM |\n", ml, N_BARS / ml / 1e6);
    printf("| 51 features + sigma | %.3f | %.2fM |\n", mf, N_BARS / mf / 1e6);
    printf("| total | %.3f | %.2fM |\n", ml + mf, N_BARS / (ml + mf) / 1e6);
    free(features);
    free(sigma);
    remove(path);
    return 0;
}
