/* test_data_causality.c — SPEC §2: row i of the features (and sigma) uses bars <= i
 * only. For random bars i of real data, every bar after i is perturbed (prices scaled
 * by a random factor per bar, volume changed), the raw features recomputed, and rows
 * 0..i must be bit-identical; as a control, row i+1 must change. Also perturbs only
 * bar i+1, the tightest case. Falls back to the synthetic market when ../shared/data
 * is absent (and says so). */
#include <string.h>
#include <sys/stat.h>

#include "foxhunt/data.h"
#include "test_util.h"

#define NF FH_N_MARKET_FEATURES
#define TRIALS 10

static uint64_t rng_state = 12345;
static double urand(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
}

static void copy_bars(const fh_bars *src, fh_bars *dst)
{
    fh_error err;
    fh_bars_alloc(dst, src->n, &err);
    memcpy(dst->time, src->time, src->n * sizeof *src->time);
    memcpy(dst->open, src->open, src->n * sizeof *src->open);
    memcpy(dst->high, src->high, src->n * sizeof *src->high);
    memcpy(dst->low, src->low, src->n * sizeof *src->low);
    memcpy(dst->close, src->close, src->n * sizeof *src->close);
    memcpy(dst->volume, src->volume, src->n * sizeof *src->volume);
}

static void run(const char *what, const fh_bars *bars)
{
    size_t n = bars->n;
    float *base = malloc(n * NF * sizeof *base), *pert = malloc(n * NF * sizeof *pert);
    float *sb = malloc(n * sizeof *sb), *sp = malloc(n * sizeof *sp);
    fh_error err;
    CHECK(fh_features_compute(bars, base, sb, &err) == FH_OK);
    for (int t = 0; t < 2 * TRIALS; t++) {
        int only_next = t >= TRIALS;
        size_t i = FH_FEATURE_WARMUP + (size_t)(urand() * (double)(n - FH_FEATURE_WARMUP - 2));
        fh_bars p;
        copy_bars(bars, &p);
        size_t last = only_next ? i + 1 : n - 1;
        for (size_t j = i + 1; j <= last; j++) {
            double s = 0.8 + 0.4 * urand();
            p.open[j] *= s;
            p.high[j] *= s * 1.01;
            p.low[j] *= s * 0.99;
            p.close[j] *= s;
            p.volume[j] = p.volume[j] * 3.0 + 1.0;
        }
        CHECK(fh_features_compute(&p, pert, sp, &err) == FH_OK);
        int same = memcmp(base, pert, (i + 1) * NF * sizeof *base) == 0 &&
                   memcmp(sb, sp, (i + 1) * sizeof *sb) == 0;
        if (!same) {
            for (size_t r = 0; r <= i; r++)
                for (int k = 0; k < NF; k++)
                    if (base[r * NF + k] != pert[r * NF + k]) {
                        fprintf(stderr, "%s: perturbing bars > %zu changed feature %s at bar "
                                "%zu\n", what, i, fh_feature_name(k), r);
                        r = i + 1;
                        break;
                    }
        }
        CHECK_MSG(same, "%s: rows <= %zu changed", what, i);
        CHECK_MSG(memcmp(base + (i + 1) * NF, pert + (i + 1) * NF, NF * sizeof *base) != 0,
                  "%s: control: perturbing bar %zu did not change its row", what, i + 1);
        fh_bars_free(&p);
    }
    printf("%s: %d trials, rows at/before the perturbation unchanged\n", what, 2 * TRIALS);
    free(base);
    free(pert);
    free(sb);
    free(sp);
}

int main(void)
{
    fh_bars b;
    fh_error err;
    struct stat st;
    if (stat(FH_SHARED_DATA_DIR, &st) == 0) {
        const char *files[2] = {FH_SHARED_DATA_DIR "/btcusdt_1h.csv",
                                FH_SHARED_DATA_DIR "/spy_daily.csv"};
        for (int f = 0; f < 2; f++) {
            fh_status s = fh_bars_load_csv(files[f], &b, &err);
            CHECK_MSG(s == FH_OK, "%s", err.message);
            if (s != FH_OK)
                continue;
            if (b.n > 8000)
                b.n = 8000; /* a prefix keeps the sanitizer run short */
            run(files[f], &b);
            fh_bars_free(&b);
        }
    } else {
        printf("note: %s absent: causality checked on the synthetic market only\n",
               FH_SHARED_DATA_DIR);
    }
    fh_synth_config cfg;
    fh_synth_config_default(&cfg);
    cfg.n_bars = 3000;
    CHECK(fh_synth_generate(&cfg, &b, NULL, &err) == FH_OK);
    run("synthetic", &b);
    fh_bars_free(&b);
    return fh_test_finish();
}
