/* test_data_splits.c — where train, validation and test lie (data.h, splits.c):
 * layouts computed by hand (with and without validation, walk-forward folds expanding
 * and rolling), the invariants over many random specs (order, gaps of exactly the
 * requested size, test segments that stitch with a one-bar overlap and cover the test
 * part), bad specs as input errors naming what to change, and a market built on a fold:
 * its views sit at the bounds and its normalisation is fitted on that fold's training
 * rows only. */
#include <stdlib.h>
#include <string.h>

#include "foxhunt/data.h"
#include "test_util.h"

#define NF FH_N_MARKET_FEATURES

static fh_split_spec spec_of(double tf, double vf, size_t gap, int folds, int fold,
                             fh_window_kind window)
{
    fh_split_spec s = fh_split_spec_simple(tf);
    s.validation_fraction = vf;
    s.gap = gap;
    s.folds = folds;
    s.fold = fold;
    s.window = window;
    return s;
}

static void check_bounds(const fh_split_bounds *b, size_t tb, size_t te, size_t vb, size_t ve,
                         size_t sb, size_t se)
{
    CHECK_MSG(b->train_begin == tb && b->train_end == te && b->val_begin == vb &&
                  b->val_end == ve && b->test_begin == sb && b->test_end == se,
              "got train [%zu,%zu) val [%zu,%zu) test [%zu,%zu), want [%zu,%zu) [%zu,%zu) "
              "[%zu,%zu)", b->train_begin, b->train_end, b->val_begin, b->val_end,
              b->test_begin, b->test_end, tb, te, vb, ve, sb, se);
}

static void test_by_hand(void)
{
    fh_error err;
    fh_split_bounds b;
    /* n 1000, train 0.7, validation 0.1, gap 50: usable 900 -> train 630, val 90,
     * test 180: [0,630) gap [680,770) gap [820,1000) */
    fh_split_spec s = spec_of(0.7, 0.1, 50, 0, 0, FH_WINDOW_EXPANDING);
    CHECK(fh_split_bounds_make(1000, &s, &b, &err) == FH_OK);
    check_bounds(&b, 0, 630, 680, 770, 820, 1000);
    /* no validation, gap 10, n 100, train 0.5: usable 90 -> [0,45) gap [55,100) */
    s = spec_of(0.5, 0.0, 10, 0, 0, FH_WINDOW_EXPANDING);
    CHECK(fh_split_bounds_make(100, &s, &b, &err) == FH_OK);
    check_bounds(&b, 0, 45, 45, 45, 55, 100);
    /* the old layout: no validation, no gap */
    s = fh_split_spec_simple(0.8);
    CHECK(fh_split_bounds_make(1000, &s, &b, &err) == FH_OK);
    check_bounds(&b, 0, 800, 800, 800, 800, 1000);
    /* walk-forward: n 1000, train 0.5, val 0.1, gap 20, 4 folds: usable 960 -> train0
     * 480, val 96, test part 384 = 4 x 96 from bar 616; fold k tests [616+96k, +97)
     * (the last to 1000), validates [test-116, test-20), trains to test-136 = 480+96k */
    for (int k = 0; k < 4; k++) {
        size_t tb = 616 + 96 * (size_t)k, te = k == 3 ? 1000 : tb + 97;
        s = spec_of(0.5, 0.1, 20, 4, k, FH_WINDOW_EXPANDING);
        CHECK(fh_split_bounds_make(1000, &s, &b, &err) == FH_OK);
        check_bounds(&b, 0, 480 + 96 * (size_t)k, tb - 116, tb - 20, tb, te);
        s.window = FH_WINDOW_ROLLING;
        CHECK(fh_split_bounds_make(1000, &s, &b, &err) == FH_OK);
        check_bounds(&b, 96 * (size_t)k, 480 + 96 * (size_t)k, tb - 116, tb - 20, tb, te);
    }
}

static void test_invariants(void)
{
    uint64_t state = 12345;
    int ok = 1, tried = 0, made = 0;
    for (int trial = 0; trial < 4000; trial++) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        size_t n = 50 + (size_t)((state >> 33) % 20000);
        double tf = 0.05 + 0.9 * (double)((state >> 13) % 1000) / 1000.0;
        double vf = (state >> 40) % 3 == 0 ? 0.0 : 0.3 * (double)((state >> 20) % 1000) / 1000.0;
        size_t gap = (size_t)((state >> 45) % 300);
        int folds = (int)((state >> 50) % 8);
        fh_window_kind window = (state >> 55) & 1 ? FH_WINDOW_ROLLING : FH_WINDOW_EXPANDING;
        fh_split_bounds prev;
        memset(&prev, 0, sizeof prev);
        size_t first_test = 0;
        for (int k = 0; k < (folds < 1 ? 1 : folds); k++) {
            fh_split_spec s = spec_of(tf, vf, gap, folds, k, window);
            fh_split_bounds b;
            fh_error err;
            tried++;
            if (fh_split_bounds_make(n, &s, &b, &err) != FH_OK) {
                ok &= k == 0 && err.message[0] != 0; /* a layout fails as a whole */
                break;
            }
            made++;
            ok &= b.train_begin < b.train_end && b.train_end <= b.val_begin &&
                  b.val_begin <= b.val_end && b.val_end <= b.test_begin &&
                  b.test_begin + 2 <= b.test_end && b.test_end <= n;
            if (vf > 0)
                ok &= b.val_begin - b.train_end == gap && b.test_begin - b.val_end == gap &&
                      b.val_end - b.val_begin >= 2;
            else
                ok &= b.val_begin == b.val_end && b.test_begin - b.train_end == gap;
            if (k == 0)
                first_test = b.test_begin;
            else /* consecutive segments share one bar; training grows with the folds */
                ok &= prev.test_end == b.test_begin + 1 && b.train_end > prev.train_end &&
                      (window == FH_WINDOW_ROLLING
                           ? b.train_end - b.train_begin == prev.train_end - prev.train_begin
                           : b.train_begin == 0);
            if (k == (folds < 1 ? 1 : folds) - 1)
                ok &= b.test_end == n && first_test > 0;
            prev = b;
        }
    }
    CHECK_MSG(ok, "an invariant failed over %d layouts", tried);
    CHECK_MSG(made > 1000, "only %d of %d random layouts were valid", made, tried);
}

static void test_errors(void)
{
    fh_error err;
    fh_split_bounds b;
    fh_split_spec s = spec_of(0.7, 0.1, 200, 0, 0, FH_WINDOW_EXPANDING);
    CHECK(fh_split_bounds_make(300, &s, &b, &err) == FH_ERR_INPUT);
    CHECK(strstr(err.message, "--split-gap") != NULL);
    s = spec_of(0.7, 0.3, 0, 0, 0, FH_WINDOW_EXPANDING);
    CHECK(fh_split_bounds_make(1000, &s, &b, &err) == FH_ERR_INPUT);
    CHECK(strstr(err.message, "no test") != NULL);
    s = spec_of(0.0, 0.1, 0, 0, 0, FH_WINDOW_EXPANDING);
    CHECK(fh_split_bounds_make(1000, &s, &b, &err) == FH_ERR_INPUT);
    s = spec_of(0.5, 0.1, 0, 3, 3, FH_WINDOW_EXPANDING);
    CHECK(fh_split_bounds_make(1000, &s, &b, &err) == FH_ERR_INPUT);
    CHECK(strstr(err.message, "fold 3") != NULL);
    s = spec_of(0.5, 0.1, 0, 300, 0, FH_WINDOW_EXPANDING); /* 400 test bars, 300 folds */
    CHECK(fh_split_bounds_make(1000, &s, &b, &err) == FH_ERR_INPUT);
    CHECK(strstr(err.message, "300 folds") != NULL);
    s = spec_of(0.5, 0.001, 0, 0, 0, FH_WINDOW_EXPANDING);
    CHECK(fh_split_bounds_make(1000, &s, &b, &err) == FH_ERR_INPUT);
    CHECK(strstr(err.message, "under 2 bars") != NULL);
}

static void test_market_on_a_fold(void)
{
    fh_synth_config cfg;
    fh_synth_config_default(&cfg);
    cfg.n_bars = 4000;
    fh_bars bars;
    fh_error err;
    CHECK(fh_synth_generate(&cfg, &bars, NULL, &err) == FH_OK);
    fh_split_spec s = spec_of(0.4, 0.1, FH_FEATURE_WARMUP, 3, 1, FH_WINDOW_ROLLING);
    fh_market mk;
    CHECK(fh_market_build(&bars, NULL, &s, NULL, &mk, &err) == FH_OK);
    fh_split_bounds want;
    CHECK(fh_split_bounds_make(bars.n - FH_FEATURE_WARMUP, &s, &want, &err) == FH_OK);
    CHECK(memcmp(&mk.split, &want, sizeof want) == 0);
    CHECK(want.train_begin > 0); /* rolling, fold 1 */
    const fh_split kinds[3] = {FH_SPLIT_TRAIN, FH_SPLIT_VALIDATION, FH_SPLIT_TEST};
    const size_t begin[3] = {want.train_begin, want.val_begin, want.test_begin};
    const size_t end[3] = {want.train_end, want.val_end, want.test_end};
    for (int i = 0; i < 3; i++) {
        fh_market_view v = fh_market_view_of(&mk, kinds[i]);
        CHECK(v.n == end[i] - begin[i] && v.close == mk.close + begin[i] &&
              v.time == mk.time + begin[i] && v.features == mk.features + begin[i] * NF);
    }
    CHECK(!strcmp(fh_split_name(FH_SPLIT_VALIDATION), "validation"));
    /* the normalisation is that of this fold's training rows, fitted on raw features */
    float *raw = malloc(bars.n * NF * sizeof *raw), *sig = malloc(bars.n * sizeof *sig);
    CHECK(fh_features_compute(&bars, raw, sig, &err) == FH_OK);
    fh_feature_norm ref;
    fh_feature_norm_fit(&ref, raw + FH_FEATURE_WARMUP * NF, want.train_begin, want.train_end);
    CHECK(memcmp(&ref, &mk.norm, sizeof ref) == 0);
    free(raw);
    free(sig);
    fh_market_free(&mk);
    fh_bars_free(&bars);
}

int main(void)
{
    test_by_hand();
    test_invariants();
    test_errors();
    test_market_on_a_fold();
    return fh_test_finish();
}
