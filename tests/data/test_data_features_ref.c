/* test_data_features_ref.c — every one of the 51 features and sigma against an
 * independent float64 reference written here from the formulas of docs/FEATURES.md
 * (naive loops, no code shared with src/data/features.c), on real bars (the first
 * 4000 hourly BTC bars and all SPY daily bars, when ../shared/data is present), on the
 * synthetic market, and on a degenerate market (flat prices, zero volume) where the
 * documented neutral values apply.
 *
 * Tolerance: |got - ref| <= 1e-6 + 1e-5 * |ref|. The library computes in double and
 * rounds to float (relative error <= 6e-8), so anything larger is a formula mismatch. */
#include <string.h>
#include <sys/stat.h>

#include "foxhunt/data.h"
#include "test_util.h"

#define NF FH_N_MARKET_FEATURES
#define ATOL 1e-6
#define RTOL 1e-5
#define TINY 1e-12
#define TWO_PI 6.283185307179586476925

static double sdiv(double a, double b, double fb) { return fabs(b) > TINY ? a / b : fb; }

/* EWMA with alpha = 2 / (span + 1), first value x_0 */
static void ref_ema(const double *x, size_t n, double span, double *out)
{
    double a = 2.0 / (span + 1.0);
    out[0] = x[0];
    for (size_t i = 1; i < n; i++)
        out[i] = a * x[i] + (1.0 - a) * out[i - 1];
}

static double window_mean(const double *x, size_t i, int w)
{
    double s = 0;
    for (size_t j = i + 1 - (size_t)w; j <= i; j++)
        s += x[j];
    return s / w;
}

static double window_sd(const double *x, size_t i, int w)
{
    double m = window_mean(x, i, w), s = 0;
    for (size_t j = i + 1 - (size_t)w; j <= i; j++)
        s += (x[j] - m) * (x[j] - m);
    return sqrt(s / w);
}

static double window_max(const double *x, size_t i, int w)
{
    double m = -INFINITY;
    for (size_t j = i + 1 - (size_t)w; j <= i; j++)
        m = fmax(m, x[j]);
    return m;
}

static double window_min(const double *x, size_t i, int w)
{
    double m = INFINITY;
    for (size_t j = i + 1 - (size_t)w; j <= i; j++)
        m = fmin(m, x[j]);
    return m;
}

/* returns r_j = ln(C_j / C_{j-1}) for j in the window */
static double rms_ret(const double *c, size_t i, int w)
{
    double s = 0;
    for (size_t j = i + 1 - (size_t)w; j <= i; j++)
        s += pow(log(c[j] / c[j - 1]), 2);
    return sqrt(s / w);
}

static void ret_moments(const double *c, size_t i, int w, double *skew, double *kurt)
{
    double r[64], m = 0;
    for (int k = 0; k < w; k++) {
        r[k] = log(c[i - k] / c[i - k - 1]);
        m += r[k] / w;
    }
    double m2 = 0, m3 = 0, m4 = 0;
    for (int k = 0; k < w; k++) {
        m2 += pow(r[k] - m, 2) / w;
        m3 += pow(r[k] - m, 3) / w;
        m4 += pow(r[k] - m, 4) / w;
    }
    *skew = m2 > TINY * TINY ? m3 / pow(m2, 1.5) : 0.0;
    *kurt = m2 > TINY * TINY ? m4 / (m2 * m2) - 3.0 : 0.0;
}

static double ref_stoch(const fh_bars *b, size_t i, int w)
{
    double hh = window_max(b->high, i, w), ll = window_min(b->low, i, w);
    return sdiv(100.0 * (b->close[i] - ll), hh - ll, 50.0);
}

/* The reference for all rows >= 200: ref (n, 51), sigma (n). */
static void reference(const fh_bars *b, double *ref, double *sigma)
{
    size_t n = b->n;
    const double *C = b->close, *O = b->open, *H = b->high, *L = b->low, *V = b->volume;
    double *e12 = malloc(n * sizeof *e12), *e26 = malloc(n * sizeof *e26);
    double *e20 = malloc(n * sizeof *e20), *macd = malloc(n * sizeof *macd);
    double *sig9 = malloc(n * sizeof *sig9), *lv = malloc(n * sizeof *lv);
    ref_ema(C, n, 12, e12);
    ref_ema(C, n, 26, e26);
    ref_ema(C, n, 20, e20);
    for (size_t i = 0; i < n; i++) {
        macd[i] = log(e12[i] / e26[i]);
        lv[i] = log(1.0 + V[i]);
    }
    ref_ema(macd, n, 9, sig9);
    double v = 0, a = 2.0 / 21.0;
    for (size_t i = 0; i < n; i++) {
        double r = i ? log(C[i] / C[i - 1]) : 0.0;
        v = a * r * r + (1 - a) * v;
        sigma[i] = sqrt(v);
    }
    for (size_t i = FH_FEATURE_WARMUP; i < n; i++) {
        double *f = ref + i * NF, s = sigma[i];
#define R(k) log(C[i] / C[i - (k)])
        int k = 0;
        double rng = H[i] - L[i];
        f[k++] = R(1);
        f[k++] = R(2);
        f[k++] = R(5);
        f[k++] = log(O[i] / C[i - 1]);
        f[k++] = log(H[i] / L[i]);
        f[k++] = sdiv(C[i] - O[i], rng, 0.0);
        f[k++] = sdiv(H[i] - fmax(O[i], C[i]), rng, 0.0);
        f[k++] = sdiv(fmin(O[i], C[i]) - L[i], rng, 0.0);
        f[k++] = sdiv(C[i] - L[i], rng, 0.5);
        f[k++] = log((1.0 + V[i]) / (1.0 + V[i - 1]));
        f[k++] = sdiv(lv[i] - window_mean(lv, i, 20), window_sd(lv, i, 20), 0.0);
        f[k++] = sdiv(window_mean(V, i, 5), window_mean(V, i, 20), 1.0);
        double up = 0, down = 0;
        for (size_t j = i - 13; j <= i; j++) {
            up += fmax(C[j] - C[j - 1], 0.0);
            down += fmax(C[j - 1] - C[j], 0.0);
        }
        f[k++] = sdiv(100.0 * up, up + down, 50.0);
        f[k++] = ref_stoch(b, i, 14);
        f[k++] = (ref_stoch(b, i, 14) + ref_stoch(b, i - 1, 14) + ref_stoch(b, i - 2, 14)) / 3;
        double hh = window_max(H, i, 28), ll = window_min(L, i, 28);
        f[k++] = sdiv(-100.0 * (hh - C[i]), hh - ll, -50.0);
        double tp[20], tpm = 0, md = 0;
        for (int q = 0; q < 20; q++)
            tpm += (tp[q] = (H[i - q] + L[i - q] + C[i - q]) / 3.0) / 20.0;
        for (int q = 0; q < 20; q++)
            md += fabs(tp[q] - tpm) / 20.0;
        f[k++] = sdiv(tp[0] - tpm, 0.015 * md, 0.0);
        f[k++] = macd[i] - sig9[i];
        f[k++] = R(10);
        f[k++] = 100.0 * (C[i] - C[i - 15]) / C[i - 15];
        f[k++] = sdiv(R(10), s * sqrt(10.0), 0.0);
        f[k++] = sdiv(C[i] - window_mean(C, i, 20), 2.0 * window_sd(C, i, 20), 0.0);
        f[k++] = log(C[i] / window_mean(C, i, 10));
        f[k++] = log(C[i] / window_mean(C, i, 20));
        f[k++] = log(C[i] / e20[i]);
        f[k++] = s;
        double pk = 0, gk = 0;
        for (size_t j = i - 19; j <= i; j++) {
            pk += pow(log(H[j] / L[j]), 2) / (4.0 * log(2.0)) / 20.0;
            gk += (0.5 * pow(log(H[j] / L[j]), 2) -
                   (2.0 * log(2.0) - 1.0) * pow(log(C[j] / O[j]), 2)) / 20.0;
        }
        f[k++] = sqrt(pk);
        f[k++] = gk > 0 ? sqrt(gk) : 0.0;
        f[k++] = rms_ret(C, i, 20);
        f[k++] = R(20);
        f[k++] = log(C[i] / window_max(C, i, 20));
        f[k++] = macd[i];
        /* 32.. */
        f[k++] = sig9[i];
        f[k++] = R(50);
        f[k++] = R(100);
        f[k++] = sdiv(R(50), s * sqrt(50.0), 0.0);
        f[k++] = sdiv(rms_ret(C, i, 5), rms_ret(C, i, 50), 1.0);
        f[k++] = log(C[i] / window_mean(C, i, 50));
        f[k++] = log(C[i] / window_mean(C, i, 200));
        f[k++] = 4.0 * window_sd(C, i, 20) / window_mean(C, i, 20);
        ret_moments(C, i, 20, &f[k], &f[k + 1]);
        k += 2;
        ret_moments(C, i, 60, &f[k], &f[k + 1]);
        k += 2;
        f[k++] = log(C[i] / window_max(C, i, 50));
        f[k++] = log(C[i] / window_max(C, i, 200));
        f[k++] = log(C[i] / window_min(C, i, 50));
        /* calendar from gmtime-free arithmetic: 1970-01-01 was a Thursday (Mon = 0) */
        long long t = b->time[i];
        long long day = (long long)floor((double)t / 86400.0);
        double hour = (double)(t - day * 86400) / 3600.0;
        int dow = (int)(((day % 7) + 7 + 3) % 7);
        f[k++] = sin(TWO_PI * hour / 24);
        f[k++] = cos(TWO_PI * hour / 24);
        f[k++] = sin(TWO_PI * dow / 7);
        f[k++] = cos(TWO_PI * dow / 7);
#undef R
        if (k != NF) {
            fprintf(stderr, "reference wrote %d features\n", k);
            exit(1);
        }
    }
    free(e12);
    free(e26);
    free(e20);
    free(macd);
    free(sig9);
    free(lv);
}

static void compare(const char *what, const fh_bars *b)
{
    size_t n = b->n;
    float *got = malloc(n * NF * sizeof *got), *gsig = malloc(n * sizeof *gsig);
    double *ref = calloc(n * NF, sizeof *ref), *rsig = malloc(n * sizeof *rsig);
    fh_error err;
    CHECK(fh_features_compute(b, got, gsig, &err) == FH_OK);
    reference(b, ref, rsig);
    int bad_features = 0;
    for (int k = 0; k < NF; k++) {
        double worst = 0;
        size_t first_bad = (size_t)-1;
        for (size_t i = FH_FEATURE_WARMUP; i < n; i++) {
            double g = got[i * NF + k], r = ref[i * NF + k];
            double excess = fabs(g - r) - (ATOL + RTOL * fabs(r));
            if (!isfinite(g) || excess > 0) {
                if (first_bad == (size_t)-1)
                    first_bad = i;
            }
            worst = fmax(worst, fabs(g - r) / (ATOL + RTOL * fabs(r)));
        }
        if (first_bad != (size_t)-1) {
            bad_features++;
            fprintf(stderr, "%s: feature %d %s: first mismatch at bar %zu: %.10g vs ref %.10g\n",
                    what, k, fh_feature_name(k), first_bad, (double)got[first_bad * NF + k],
                    ref[first_bad * NF + k]);
        }
        CHECK(first_bad == (size_t)-1);
    }
    /* warm-up rows are zero */
    size_t nonzero = 0;
    for (size_t i = 0; i < FH_FEATURE_WARMUP * NF && i < n * NF; i++)
        nonzero += got[i] != 0.0f;
    CHECK_MSG(nonzero == 0, "%s: %zu non-zero warm-up values", what, nonzero);
    double *gs = malloc(n * sizeof *gs);
    for (size_t i = 0; i < n; i++)
        gs[i] = gsig[i];
    CHECK_ARRAY_CLOSE("sigma", gs, rsig, n, 1e-9, 1e-6);
    printf("%s: %zu bars, %d of %d features match the reference\n", what, n, NF - bad_features,
           NF);
    free(gs);
    free(got);
    free(gsig);
    free(ref);
    free(rsig);
}

int main(void)
{
    fh_bars b;
    fh_error err;
    struct stat st;
    int have_real = stat(FH_SHARED_DATA_DIR, &st) == 0;
    if (have_real) {
        if (fh_bars_load_csv(FH_SHARED_DATA_DIR "/btcusdt_1h.csv", &b, &err) == FH_OK) {
            b.n = 4000; /* a prefix is enough; the arrays stay as allocated */
            compare("btcusdt_1h[0:4000]", &b);
            fh_bars_free(&b);
        } else {
            CHECK_MSG(0, "%s", err.message);
        }
        if (fh_bars_load_csv(FH_SHARED_DATA_DIR "/spy_daily.csv", &b, &err) == FH_OK) {
            compare("spy_daily", &b);
            fh_bars_free(&b);
        } else {
            CHECK_MSG(0, "%s", err.message);
        }
    } else {
        printf("note: %s absent: real-data cases not run\n", FH_SHARED_DATA_DIR);
    }

    fh_synth_config cfg;
    fh_synth_config_default(&cfg);
    cfg.n_bars = 3000;
    cfg.seed = 7;
    CHECK(fh_synth_generate(&cfg, &b, NULL, &err) == FH_OK);
    compare("synthetic seed 7", &b);

    /* degenerate: flat prices and zero volume from bar 250 on, a spike at 400 */
    for (size_t i = 250; i < b.n; i++) {
        b.open[i] = b.high[i] = b.low[i] = b.close[i] = 50.0;
        b.volume[i] = 0.0;
    }
    b.high[400] = 80.0;
    b.close[400] = 79.0;
    compare("flat market with zero volume", &b);
    fh_bars_free(&b);
    return fh_test_finish();
}
