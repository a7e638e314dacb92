/* test_data_synth.c — the synthetic market (SPEC §2, docs/FEATURES.md): bit-identical
 * for a seed, different across seeds, valid OHLCV on a regular clock, fat tails
 * (kurtosis of log returns > 3), volatility clustering (autocorrelation of |r| > 0 at
 * lags 1..5, each beyond 5 standard errors), and a real predictable component:
 * expected_return[i] correlates with the realised r[i+1] (z > 5), is its conditional
 * mean (regression slope 1 within 4 standard errors), an oracle trading its sign earns
 * a positive Sharpe after 6 bp costs, and the trend features reveal it. */
#include <string.h>

#include "foxhunt/data.h"
#include "test_util.h"

#define N_BARS 200000

static int bars_equal(const fh_bars *a, const fh_bars *b)
{
    size_t n = a->n;
    return a->n == b->n && !memcmp(a->time, b->time, n * 8) && !memcmp(a->open, b->open, n * 8) &&
           !memcmp(a->high, b->high, n * 8) && !memcmp(a->low, b->low, n * 8) &&
           !memcmp(a->close, b->close, n * 8) && !memcmp(a->volume, b->volume, n * 8);
}

static double corr(const double *x, const double *y, size_t n)
{
    double mx = 0, my = 0, sxy = 0, sxx = 0, syy = 0;
    for (size_t i = 0; i < n; i++) {
        mx += x[i] / n;
        my += y[i] / n;
    }
    for (size_t i = 0; i < n; i++) {
        sxy += (x[i] - mx) * (y[i] - my);
        sxx += (x[i] - mx) * (x[i] - mx);
        syy += (y[i] - my) * (y[i] - my);
    }
    return sxy / sqrt(sxx * syy);
}

int main(void)
{
    fh_synth_config cfg;
    fh_synth_config_default(&cfg);
    CHECK(cfg.seed == 42 && cfg.n_bars == 20000 && cfg.interval == 3600);
    CHECK(cfg.signal_strength > 0);
    cfg.n_bars = N_BARS;
    fh_bars a, b, c;
    fh_error err;
    double *er = malloc(N_BARS * sizeof *er), *er2 = malloc(N_BARS * sizeof *er2);
    CHECK(fh_synth_generate(&cfg, &a, er, &err) == FH_OK);
    CHECK(fh_synth_generate(&cfg, &b, er2, &err) == FH_OK);
    CHECK_MSG(bars_equal(&a, &b) && !memcmp(er, er2, N_BARS * sizeof *er),
              "same seed, different bars");
    fh_synth_config cfg2 = cfg;
    cfg2.seed = 43;
    CHECK(fh_synth_generate(&cfg2, &c, NULL, &err) == FH_OK);
    size_t differ = 0;
    for (size_t i = 1; i < N_BARS; i++)
        differ += a.close[i] != c.close[i];
    CHECK_MSG(differ > N_BARS * 99 / 100, "seeds 42 and 43 share %zu closes", N_BARS - differ);

    /* valid bars */
    size_t bad = 0;
    for (size_t i = 0; i < N_BARS; i++) {
        bad += !(a.high[i] >= fmax(a.open[i], a.close[i]) &&
                 a.low[i] <= fmin(a.open[i], a.close[i]) && a.low[i] > 0 &&
                 a.volume[i] > 0 && isfinite(a.high[i]));
        bad += i && a.time[i] - a.time[i - 1] != cfg.interval;
    }
    CHECK_MSG(bad == 0, "%zu invalid bars", bad);

    /* returns: fat tails and volatility clustering */
    size_t m = N_BARS - 1;
    double *r = malloc(m * sizeof *r), *ar = malloc(m * sizeof *ar);
    double mean = 0, m2 = 0, m4 = 0;
    for (size_t i = 0; i < m; i++) {
        r[i] = log(a.close[i + 1] / a.close[i]);
        ar[i] = fabs(r[i]);
        mean += r[i] / m;
    }
    for (size_t i = 0; i < m; i++) {
        m2 += pow(r[i] - mean, 2) / m;
        m4 += pow(r[i] - mean, 4) / m;
    }
    double kurt = m4 / (m2 * m2);
    printf("per-bar vol %.5f, kurtosis %.2f\n", sqrt(m2), kurt);
    CHECK_MSG(kurt > 3.0, "kurtosis %.3f", kurt);
    for (int lag = 1; lag <= 5; lag++) {
        double ac = corr(ar, ar + lag, m - lag);
        printf("acf(|r|, lag %d) = %.3f\n", lag, ac);
        CHECK_MSG(ac > 5.0 / sqrt((double)m), "acf |r| lag %d = %.4f", lag, ac);
    }

    /* the predictable component: er[i] predicts r[i] = ln(C[i+1]/C[i]) */
    double ce = corr(er, r, m), z = ce * sqrt((double)m);
    printf("corr(expected_return, next return) = %.4f (z = %.1f)\n", ce, z);
    CHECK_MSG(z > 5.0, "corr %.4f, z %.2f", ce, z);
    double sxy = 0, sxx = 0, me = 0, mr = 0;
    for (size_t i = 0; i < m; i++) {
        me += er[i] / m;
        mr += r[i] / m;
    }
    for (size_t i = 0; i < m; i++) {
        sxy += (er[i] - me) * (r[i] - mr);
        sxx += (er[i] - me) * (er[i] - me);
    }
    double slope = sxy / sxx, resid = 0;
    for (size_t i = 0; i < m; i++)
        resid += pow(r[i] - mr - slope * (er[i] - me), 2);
    double se = sqrt(resid / (m - 2) / sxx);
    printf("regression of next return on expected_return: slope %.3f +- %.3f\n", slope, se);
    CHECK_MSG(fabs(slope - 1.0) < 4.0 * se, "slope %.3f, se %.3f", slope, se);

    /* oracle: position sign(er[i]) held over bar i -> i+1, 6 bp per unit traded */
    double s = 0, s2 = 0, prev = 0;
    for (size_t i = 0; i < m; i++) {
        double pos = er[i] > 0 ? 1 : er[i] < 0 ? -1 : 0;
        double pnl = pos * r[i] - 6e-4 * fabs(pos - prev);
        prev = pos;
        s += pnl / m;
        s2 += pnl * pnl / m;
    }
    double sharpe = s / sqrt(s2 - s * s) * sqrt(8760.0);
    printf("oracle Sharpe after 6 bp costs (annualised, hourly): %.2f\n", sharpe);
    CHECK_MSG(sharpe > 2.0, "oracle Sharpe %.2f", sharpe);

    /* the features reveal it: trend_z_50 correlates with the hidden drift */
    float *f = malloc((size_t)N_BARS * FH_N_MARKET_FEATURES * sizeof *f);
    CHECK(fh_features_compute(&a, f, NULL, &err) == FH_OK);
    int k = fh_feature_index("trend_z_50");
    CHECK(k >= 0);
    size_t nt = N_BARS - FH_FEATURE_WARMUP;
    double *tz = malloc(nt * sizeof *tz);
    for (size_t i = 0; i < nt; i++)
        tz[i] = f[(i + FH_FEATURE_WARMUP) * FH_N_MARKET_FEATURES + k];
    double cf = corr(tz, er + FH_FEATURE_WARMUP, nt);
    printf("corr(trend_z_50, expected_return) = %.3f\n", cf);
    CHECK_MSG(cf > 0.2, "corr %.3f", cf);

    free(tz);
    free(f);
    free(r);
    free(ar);
    free(er);
    free(er2);
    fh_bars_free(&a);
    fh_bars_free(&b);
    fh_bars_free(&c);
    return fh_test_finish();
}
