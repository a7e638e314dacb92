/* features.c — the 51 causal market features (SPEC §2; the table is docs/FEATURES.md).
 *
 * Row i uses bars <= i only. Windowed features are computed from their window alone,
 * so rows are independent and run in parallel; the exponential averages (sigma, the
 * EMAs behind MACD and dist_ema_20) are one sequential pass seeded at bar 0. All maths
 * in double, output float. Look-backs are at most FH_FEATURE_WARMUP bars; rows before
 * it are 0. Degenerate denominators (zero range, zero volume, zero spread) give the
 * documented neutral value instead of NaN/Inf; a last guard maps any non-finite value
 * to 0 and clamps magnitudes to FEATURE_MAX_ABS. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "foxhunt/data.h"

#define TINY 1e-12              /* denominators at or below this are degenerate */
#define FEATURE_MAX_ABS 1e9     /* last-resort clamp before the float conversion */
#define PI 3.14159265358979323846

enum {
    F_RET_1, F_RET_2, F_RET_5, F_GAP, F_RANGE, F_BODY, F_UPPER_SHADOW, F_LOWER_SHADOW,
    F_CLOSE_LOCATION, F_VOL_CHANGE, F_VOL_Z_20, F_VOL_RATIO_5_20, F_RSI_14, F_STOCH_K_14,
    F_STOCH_D_3, F_WILLIAMS_R_28, F_CCI_20, F_MACD_HIST, F_RET_10, F_ROC_15, F_TREND_Z_10,
    F_BOLL_POS_20, F_DIST_SMA_10, F_DIST_SMA_20, F_DIST_EMA_20, F_SIGMA_EWM_20,
    F_PARKINSON_20, F_GARMAN_KLASS_20, F_RV_20, F_RET_20, F_DD_20, F_MACD,
    /* 32..50: slower features, not predicted by the curiosity model */
    F_MACD_SIGNAL, F_RET_50, F_RET_100, F_TREND_Z_50, F_RV_RATIO_5_50, F_DIST_SMA_50,
    F_DIST_SMA_200, F_BOLL_WIDTH_20, F_SKEW_20, F_KURT_20, F_SKEW_60, F_KURT_60, F_DD_50,
    F_DD_200, F_RISE_FROM_LOW_50, F_HOUR_SIN, F_HOUR_COS, F_DOW_SIN, F_DOW_COS,
    F_COUNT
};
_Static_assert(F_COUNT == FH_N_MARKET_FEATURES,
               "feature table must have FH_N_MARKET_FEATURES entries");

static const char *const FEATURE_NAMES[FH_N_MARKET_FEATURES] = {
    "ret_1", "ret_2", "ret_5", "gap", "range", "body", "upper_shadow", "lower_shadow",
    "close_location", "vol_change", "vol_z_20", "vol_ratio_5_20", "rsi_14", "stoch_k_14",
    "stoch_d_3", "williams_r_28", "cci_20", "macd_hist", "ret_10", "roc_15", "trend_z_10",
    "boll_pos_20", "dist_sma_10", "dist_sma_20", "dist_ema_20", "sigma_ewm_20",
    "parkinson_20", "garman_klass_20", "rv_20", "ret_20", "dd_20", "macd",
    "macd_signal", "ret_50", "ret_100", "trend_z_50", "rv_ratio_5_50", "dist_sma_50",
    "dist_sma_200", "boll_width_20", "skew_20", "kurt_20", "skew_60", "kurt_60", "dd_50",
    "dd_200", "rise_from_low_50", "hour_sin", "hour_cos", "dow_sin", "dow_cos"};

const char *fh_feature_name(int index)
{
    if (index < 0 || index >= FH_N_MARKET_FEATURES)
        return NULL;
    return FEATURE_NAMES[index];
}

int fh_feature_index(const char *name)
{
    for (int k = 0; k < FH_N_MARKET_FEATURES; k++)
        if (strcmp(FEATURE_NAMES[k], name) == 0)
            return k;
    return -1;
}

static double safe_div(double a, double b, double fallback)
{
    return fabs(b) > TINY ? a / b : fallback;
}

typedef struct {
    const fh_bars *bars;
    const double *logc;    /* (n) ln close */
    const double *ret;     /* (n) ln(C_i / C_{i-1}), 0 at i = 0 */
    const double *logv;    /* (n) ln(1 + volume) */
    const double *sigma;   /* (n) */
    const double *ema12, *ema26, *ema20, *signal; /* (n) */
} feature_inputs;

static double mean_of(const double *x, size_t end, int w) /* x[end-w+1 .. end] */
{
    double s = 0.0;
    for (int k = 0; k < w; k++)
        s += x[end - k];
    return s / w;
}

static double pop_std_of(const double *x, size_t end, int w)
{
    double m = mean_of(x, end, w), s = 0.0;
    for (int k = 0; k < w; k++)
        s += (x[end - k] - m) * (x[end - k] - m);
    return sqrt(s / w);
}

static double rms_of(const double *x, size_t end, int w)
{
    double s = 0.0;
    for (int k = 0; k < w; k++)
        s += x[end - k] * x[end - k];
    return sqrt(s / w);
}

static double max_of(const double *x, size_t end, int w)
{
    double m = x[end];
    for (int k = 1; k < w; k++)
        m = x[end - k] > m ? x[end - k] : m;
    return m;
}

static double min_of(const double *x, size_t end, int w)
{
    double m = x[end];
    for (int k = 1; k < w; k++)
        m = x[end - k] < m ? x[end - k] : m;
    return m;
}

/* skewness m3/m2^1.5 and excess kurtosis m4/m2^2 - 3 of returns over w bars */
static void moments_of(const double *r, size_t end, int w, double *skew, double *kurt)
{
    double m = mean_of(r, end, w), m2 = 0, m3 = 0, m4 = 0;
    for (int k = 0; k < w; k++) {
        double d = r[end - k] - m, d2 = d * d;
        m2 += d2;
        m3 += d2 * d;
        m4 += d2 * d2;
    }
    m2 /= w;
    m3 /= w;
    m4 /= w;
    *skew = m2 > TINY * TINY ? m3 / (m2 * sqrt(m2)) : 0.0;
    *kurt = m2 > TINY * TINY ? m4 / (m2 * m2) - 3.0 : 0.0;
}

static double stoch_k(const fh_bars *b, size_t i, int w)
{
    double hh = max_of(b->high, i, w), ll = min_of(b->low, i, w);
    return safe_div(100.0 * (b->close[i] - ll), hh - ll, 50.0);
}

static void compute_row(const feature_inputs *in, size_t i, double *f)
{
    const fh_bars *b = in->bars;
    const double *lc = in->logc, *r = in->ret;
    double C = b->close[i], O = b->open[i], H = b->high[i], L = b->low[i];
    double sig = in->sigma[i];

    f[F_RET_1] = r[i];
    f[F_RET_2] = lc[i] - lc[i - 2];
    f[F_RET_5] = lc[i] - lc[i - 5];
    f[F_RET_10] = lc[i] - lc[i - 10];
    f[F_RET_20] = lc[i] - lc[i - 20];
    f[F_RET_50] = lc[i] - lc[i - 50];
    f[F_RET_100] = lc[i] - lc[i - 100];
    f[F_ROC_15] = 100.0 * (C / b->close[i - 15] - 1.0);
    f[F_TREND_Z_10] = safe_div(f[F_RET_10], sig * sqrt(10.0), 0.0);
    f[F_TREND_Z_50] = safe_div(f[F_RET_50], sig * sqrt(50.0), 0.0);

    /* candle shape */
    double range = H - L;
    f[F_GAP] = log(O / b->close[i - 1]);
    f[F_RANGE] = log(H / L);
    f[F_BODY] = safe_div(C - O, range, 0.0);
    f[F_UPPER_SHADOW] = safe_div(H - (O > C ? O : C), range, 0.0);
    f[F_LOWER_SHADOW] = safe_div((O < C ? O : C) - L, range, 0.0);
    f[F_CLOSE_LOCATION] = safe_div(C - L, range, 0.5);

    /* volume */
    const double *lv = in->logv;
    f[F_VOL_CHANGE] = lv[i] - lv[i - 1];
    f[F_VOL_Z_20] = safe_div(lv[i] - mean_of(lv, i, 20), pop_std_of(lv, i, 20), 0.0);
    f[F_VOL_RATIO_5_20] = safe_div(mean_of(b->volume, i, 5), mean_of(b->volume, i, 20), 1.0);

    /* oscillators */
    double gain = 0.0, loss = 0.0;
    for (int k = 0; k < 14; k++) {
        double d = b->close[i - k] - b->close[i - k - 1];
        if (d > 0)
            gain += d;
        else
            loss -= d;
    }
    f[F_RSI_14] = safe_div(100.0 * gain, gain + loss, 50.0);
    f[F_STOCH_K_14] = stoch_k(b, i, 14);
    f[F_STOCH_D_3] = (f[F_STOCH_K_14] + stoch_k(b, i - 1, 14) + stoch_k(b, i - 2, 14)) / 3.0;
    double hh28 = max_of(b->high, i, 28), ll28 = min_of(b->low, i, 28);
    f[F_WILLIAMS_R_28] = safe_div(-100.0 * (hh28 - C), hh28 - ll28, -50.0);
    double tp[20], tp_mean = 0.0, tp_dev = 0.0;
    for (int k = 0; k < 20; k++) {
        tp[k] = (b->high[i - k] + b->low[i - k] + b->close[i - k]) / 3.0;
        tp_mean += tp[k];
    }
    tp_mean /= 20.0;
    for (int k = 0; k < 20; k++)
        tp_dev += fabs(tp[k] - tp_mean);
    tp_dev /= 20.0;
    f[F_CCI_20] = safe_div(tp[0] - tp_mean, 0.015 * tp_dev, 0.0);
    f[F_MACD] = log(in->ema12[i] / in->ema26[i]);
    f[F_MACD_SIGNAL] = in->signal[i];
    f[F_MACD_HIST] = f[F_MACD] - in->signal[i];

    /* moving averages and Bollinger bands */
    double sma20 = mean_of(b->close, i, 20), sd20 = pop_std_of(b->close, i, 20);
    f[F_DIST_SMA_10] = log(C / mean_of(b->close, i, 10));
    f[F_DIST_SMA_20] = log(C / sma20);
    f[F_DIST_SMA_50] = log(C / mean_of(b->close, i, 50));
    f[F_DIST_SMA_200] = log(C / mean_of(b->close, i, 200));
    f[F_DIST_EMA_20] = log(C / in->ema20[i]);
    f[F_BOLL_POS_20] = safe_div(C - sma20, 2.0 * sd20, 0.0);
    f[F_BOLL_WIDTH_20] = 4.0 * sd20 / sma20;

    /* volatility */
    f[F_SIGMA_EWM_20] = sig;
    double pk = 0.0, gk = 0.0;
    for (int k = 0; k < 20; k++) {
        double hl = log(b->high[i - k] / b->low[i - k]);
        double co = log(b->close[i - k] / b->open[i - k]);
        pk += hl * hl;
        gk += 0.5 * hl * hl - (2.0 * log(2.0) - 1.0) * co * co;
    }
    f[F_PARKINSON_20] = sqrt(pk / (20.0 * 4.0 * log(2.0)));
    f[F_GARMAN_KLASS_20] = gk > 0 ? sqrt(gk / 20.0) : 0.0;
    f[F_RV_20] = rms_of(r, i, 20);
    f[F_RV_RATIO_5_50] = safe_div(rms_of(r, i, 5), rms_of(r, i, 50), 1.0);

    /* higher moments of returns */
    moments_of(r, i, 20, &f[F_SKEW_20], &f[F_KURT_20]);
    moments_of(r, i, 60, &f[F_SKEW_60], &f[F_KURT_60]);

    /* drawdown from rolling highs, rise from rolling low (closes) */
    f[F_DD_20] = log(C / max_of(b->close, i, 20));
    f[F_DD_50] = log(C / max_of(b->close, i, 50));
    f[F_DD_200] = log(C / max_of(b->close, i, 200));
    f[F_RISE_FROM_LOW_50] = log(C / min_of(b->close, i, 50));

    /* calendar (UTC) */
    int64_t t = b->time[i];
    int64_t days = t >= 0 ? t / 86400 : -((-t + 86399) / 86400);
    double hour = (double)(t - days * 86400) / 3600.0;
    int64_t dow = ((days + 3) % 7 + 7) % 7; /* 0 = Monday; 1970-01-01 was a Thursday */
    f[F_HOUR_SIN] = sin(2.0 * PI * hour / 24.0);
    f[F_HOUR_COS] = cos(2.0 * PI * hour / 24.0);
    f[F_DOW_SIN] = sin(2.0 * PI * (double)dow / 7.0);
    f[F_DOW_COS] = cos(2.0 * PI * (double)dow / 7.0);
}

fh_status fh_features_compute(const fh_bars *bars, float *features, float *sigma_out,
                              fh_error *err)
{
    size_t n = bars->n;
    if (n == 0)
        return FH_OK;
    double *work = malloc(8 * n * sizeof *work);
    if (!work)
        return fh_error_set(err, FH_ERR_FAILURE, "out of memory for features of %zu bars", n);
    double *logc = work, *ret = work + n, *logv = work + 2 * n, *sigma = work + 3 * n;
    double *ema12 = work + 4 * n, *ema26 = work + 5 * n, *ema20 = work + 6 * n,
           *signal = work + 7 * n;

    /* the sequential pass: EWMA(span s) has alpha = 2 / (s + 1), seeded at bar 0 */
    const double a_sig = 2.0 / (FH_SIGMA_SPAN + 1.0), a12 = 2.0 / 13.0, a26 = 2.0 / 27.0,
                 a20 = 2.0 / 21.0, a9 = 2.0 / 10.0;
    double var = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double c = bars->close[i];
        logc[i] = log(c);
        logv[i] = log1p(bars->volume[i]);
        ret[i] = i ? log(c / bars->close[i - 1]) : 0.0;
        var = (1.0 - a_sig) * var + a_sig * ret[i] * ret[i];
        sigma[i] = sqrt(var);
        ema12[i] = i ? ema12[i - 1] + a12 * (c - ema12[i - 1]) : c;
        ema26[i] = i ? ema26[i - 1] + a26 * (c - ema26[i - 1]) : c;
        ema20[i] = i ? ema20[i - 1] + a20 * (c - ema20[i - 1]) : c;
        double macd = log(ema12[i] / ema26[i]);
        signal[i] = i ? signal[i - 1] + a9 * (macd - signal[i - 1]) : macd;
        if (sigma_out)
            sigma_out[i] = (float)sigma[i];
    }

    feature_inputs in = {bars, logc, ret, logv, sigma, ema12, ema26, ema20, signal};
    size_t warm = n < FH_FEATURE_WARMUP ? n : FH_FEATURE_WARMUP;
    memset(features, 0, warm * FH_N_MARKET_FEATURES * sizeof *features);
    long long n_rows = (long long)n;
#pragma omp parallel for schedule(static)
    for (long long ii = (long long)warm; ii < n_rows; ii++) {
        double f[FH_N_MARKET_FEATURES];
        compute_row(&in, (size_t)ii, f);
        float *out = features + (size_t)ii * FH_N_MARKET_FEATURES;
        for (int k = 0; k < FH_N_MARKET_FEATURES; k++) {
            double v = isfinite(f[k]) ? f[k] : 0.0;
            v = v > FEATURE_MAX_ABS ? FEATURE_MAX_ABS : v < -FEATURE_MAX_ABS ? -FEATURE_MAX_ABS : v;
            out[k] = (float)v;
        }
    }
    free(work);
    return FH_OK;
}
