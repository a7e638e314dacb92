/* test_data_market.c — normalisation and the market split (SPEC §2): z-score fitted on
 * the training rows only (checked against a float64 mean/std computed here), clip to
 * +-5, constant features map to 0, the test split cannot move the fitted statistics,
 * a given norm is used verbatim, views cover [0, n_train) and [n_train, n) in time
 * order, close/time/sigma/expected_return are aligned with the bars after the
 * warm-up, and bad arguments are input errors. */
#include <string.h>

#include "foxhunt/data.h"
#include "test_util.h"

#define NF FH_N_MARKET_FEATURES

static void test_norm_unit(void)
{
    /* 4 rows: feature 0 varies, feature 1 constant, feature 2 has an outlier */
    float x[4 * NF];
    memset(x, 0, sizeof x);
    float col0[4] = {1, 2, 3, 4}, col2[4] = {0, 0, 0, 1000};
    for (int i = 0; i < 4; i++) {
        x[i * NF + 0] = col0[i];
        x[i * NF + 1] = 7.0f;
        x[i * NF + 2] = col2[i];
    }
    fh_feature_norm nm;
    fh_feature_norm_fit(&nm, x, 0, 4);
    CHECK_CLOSE(nm.mean[0], 2.5, 1e-6, 0);
    CHECK_CLOSE(nm.std[0], sqrt(1.25), 1e-6, 1e-6);
    CHECK(nm.std[1] == 1.0f); /* floored: constant feature */
    fh_feature_norm_apply(&nm, x, 4);
    CHECK_CLOSE(x[0], (1 - 2.5) / sqrt(1.25), 1e-6, 1e-6);
    CHECK(x[1] == 0.0f && x[3 * NF + 1] == 0.0f);
    /* outlier: (1000 - 250) / 433 = 1.73 < 5; make a sharper one from fitted rows 0..2 */
    float y[4 * NF];
    memset(y, 0, sizeof y);
    for (int i = 0; i < 4; i++)
        y[i * NF + 0] = col0[i];
    y[3 * NF + 0] = 1e6f;
    fh_feature_norm_fit(&nm, y, 0, 3);
    fh_feature_norm_apply(&nm, y, 4);
    CHECK(y[3 * NF + 0] == FH_FEATURE_CLIP);
}

int main(void)
{
    test_norm_unit();
    fh_synth_config cfg;
    fh_synth_config_default(&cfg);
    cfg.n_bars = 3000;
    fh_bars b;
    fh_error err;
    double *er = malloc(cfg.n_bars * sizeof *er);
    CHECK(fh_synth_generate(&cfg, &b, er, &err) == FH_OK);

    fh_market mk;
    CHECK(fh_market_build(&b, er, &(fh_split_spec){.train_fraction = 0.7}, NULL, &mk, &err) == FH_OK);
    size_t n = cfg.n_bars - FH_FEATURE_WARMUP, n_train = (size_t)(0.7 * n);
    CHECK(mk.n == n && mk.split.train_end == n_train);
    CHECK(mk.interval_seconds == 3600.0);

    /* reference statistics from raw features of the training rows */
    float *raw = malloc(cfg.n_bars * NF * sizeof *raw), *sig = malloc(cfg.n_bars * sizeof *sig);
    CHECK(fh_features_compute(&b, raw, sig, &err) == FH_OK);
    int stats_ok = 1, clip_ok = 1, align_ok = 1;
    for (int k = 0; k < NF; k++) {
        double m = 0, v = 0;
        for (size_t i = 0; i < n_train; i++)
            m += raw[(i + FH_FEATURE_WARMUP) * NF + k] / (double)n_train;
        for (size_t i = 0; i < n_train; i++)
            v += pow(raw[(i + FH_FEATURE_WARMUP) * NF + k] - m, 2) / (double)n_train;
        double sd = sqrt(v) < 1e-8 ? 1.0 : sqrt(v);
        if (!fh_close(mk.norm.mean[k], m, 1e-7, 1e-5) || !fh_close(mk.norm.std[k], sd, 1e-9, 1e-5)) {
            fprintf(stderr, "feature %d: norm %g/%g, ref %g/%g\n", k, mk.norm.mean[k],
                    mk.norm.std[k], m, sd);
            stats_ok = 0;
        }
        for (size_t i = 0; i < n; i++) {
            double zr = (raw[(i + FH_FEATURE_WARMUP) * NF + k] - mk.norm.mean[k]) / mk.norm.std[k];
            zr = fmax(-5.0, fmin(5.0, zr));
            float got = mk.features[i * NF + k];
            clip_ok &= fabsf(got) <= FH_FEATURE_CLIP;
            stats_ok &= fh_close(got, zr, 1e-5, 1e-5);
        }
    }
    CHECK_MSG(stats_ok, "normalised features differ from the float64 reference");
    CHECK(clip_ok);
    for (size_t i = 0; i < n; i++) {
        align_ok &= mk.close[i] == (float)b.close[i + FH_FEATURE_WARMUP];
        align_ok &= mk.time[i] == b.time[i + FH_FEATURE_WARMUP];
        align_ok &= mk.sigma[i] == sig[i + FH_FEATURE_WARMUP];
        align_ok &= mk.expected_return[i] == er[i + FH_FEATURE_WARMUP];
    }
    CHECK(align_ok);

    fh_market_view tr = fh_market_view_of(&mk, FH_SPLIT_TRAIN);
    fh_market_view te = fh_market_view_of(&mk, FH_SPLIT_TEST);
    fh_market_view all = fh_market_view_of(&mk, FH_SPLIT_ALL);
    CHECK(tr.n == n_train && te.n == n - n_train && all.n == n);
    CHECK(tr.features == mk.features && te.features == mk.features + n_train * NF);
    CHECK(te.close == mk.close + n_train && te.time == mk.time + n_train);
    CHECK(te.sigma == mk.sigma + n_train && te.expected_return == mk.expected_return + n_train);
    CHECK(tr.time[tr.n - 1] < te.time[0]);

    /* the test split does not move the fitted statistics */
    for (size_t i = FH_FEATURE_WARMUP + n_train + 1; i < b.n; i++) {
        b.close[i] *= 3.0;
        b.open[i] *= 3.0;
        b.high[i] *= 3.0;
        b.low[i] *= 3.0;
        b.volume[i] *= 10.0;
    }
    fh_market mk2;
    CHECK(fh_market_build(&b, NULL, &(fh_split_spec){.train_fraction = 0.7}, NULL, &mk2, &err) == FH_OK);
    CHECK(memcmp(&mk.norm, &mk2.norm, sizeof mk.norm) == 0);
    CHECK(mk2.expected_return == NULL);
    fh_market_free(&mk2);

    /* a given norm is used verbatim (evaluation with a checkpoint's statistics) */
    fh_feature_norm given;
    for (int k = 0; k < NF; k++) {
        given.mean[k] = 0.0f;
        given.std[k] = 1000.0f;
    }
    CHECK(fh_market_build(&b, NULL, &(fh_split_spec){.train_fraction = 0.5}, &given, &mk2, &err) == FH_OK);
    CHECK(memcmp(&mk2.norm, &given, sizeof given) == 0);
    CHECK_CLOSE(mk2.features[0], raw[FH_FEATURE_WARMUP * NF] / 1000.0, 1e-9, 1e-5);
    fh_market_free(&mk2);

    /* bad arguments */
    CHECK(fh_market_build(&b, NULL, &(fh_split_spec){.train_fraction = 0.0}, NULL, &mk2, &err) == FH_ERR_INPUT);
    CHECK(fh_market_build(&b, NULL, &(fh_split_spec){.train_fraction = 1.5}, NULL, &mk2, &err) == FH_ERR_INPUT);
    size_t keep = b.n;
    b.n = FH_MIN_BARS - 1;
    CHECK(fh_market_build(&b, NULL, &(fh_split_spec){.train_fraction = 0.8}, NULL, &mk2, &err) == FH_ERR_INPUT);
    CHECK(strstr(err.message, "299") != NULL);
    b.n = keep;

    fh_market_free(&mk);
    fh_market_free(&mk); /* safe twice */
    free(raw);
    free(sig);
    free(er);
    fh_bars_free(&b);
    return fh_test_finish();
}
