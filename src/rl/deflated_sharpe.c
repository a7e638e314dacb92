/* deflated_sharpe.c — the probabilistic and deflated Sharpe ratios (metrics.h): how
 * likely a Sharpe ratio is to beat a benchmark given its sample's length, skew and
 * kurtosis, and the benchmark a result chosen as the best of N trials must beat. */
#include <math.h>

#include "foxhunt/metrics.h"

#define EULER_GAMMA 0.57721566490153286
#define SQRT_2PI 2.5066282746310002 /* M_PI and M_E are not C11 */
#define EULER_E 2.7182818284590452

double fh_normal_cdf(double x)
{
    return 0.5 * erfc(-x / sqrt(2.0));
}

double fh_normal_quantile(double p)
{
    if (!(p > 0.0 && p < 1.0))
        return NAN;
    /* Acklam (2003): rational approximations on the central and tail regions */
    static const double a[6] = {-3.969683028665376e+01, 2.209460984245205e+02,
                                -2.759285104469687e+02, 1.383577518672690e+02,
                                -3.066479806614716e+01, 2.506628277459239e+00};
    static const double b[5] = {-5.447609879822406e+01, 1.615858368580409e+02,
                                -1.556989798598866e+02, 6.680131188771972e+01,
                                -1.328068155288572e+01};
    static const double c[6] = {-7.784894002430293e-03, -3.223964580411365e-01,
                                -2.400758277161838e+00, -2.549732539343734e+00,
                                4.374664141464968e+00, 2.938163982698783e+00};
    static const double d[4] = {7.784695709041462e-03, 3.224671290700398e-01,
                                2.445134137142996e+00, 3.754408661907416e+00};
    const double low = 0.02425;
    double x;
    if (p < low || p > 1.0 - low) {
        double q = sqrt(-2.0 * log(p < low ? p : 1.0 - p));
        x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
            ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
        if (p > 1.0 - low)
            x = -x;
    } else {
        double q = p - 0.5, r = q * q;
        x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
            (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0);
    }
    /* one Halley step on Phi(x) - p brings it to double precision */
    double e = fh_normal_cdf(x) - p;
    double u = e * SQRT_2PI * exp(x * x / 2.0);
    return x - u / (1.0 + x * u / 2.0);
}

double fh_probabilistic_sharpe(double sr, double sr_benchmark, int T, double skew,
                               double kurt)
{
    double v = 1.0 - skew * sr + (kurt - 1.0) / 4.0 * sr * sr;
    if (T < 2 || !(v > 0.0))
        return NAN;
    return fh_normal_cdf((sr - sr_benchmark) * sqrt((double)(T - 1)) / sqrt(v));
}

double fh_backtest_psr(const fh_backtest_metrics *m, double periods_per_year)
{
    return fh_probabilistic_sharpe(m->sharpe / sqrt(periods_per_year), 0.0, m->steps,
                                   m->skewness, m->kurtosis);
}

double fh_expected_max_sharpe(int n_trials, double variance)
{
    if (n_trials <= 1 || !(variance > 0.0))
        return 0.0;
    double n = (double)n_trials;
    return sqrt(variance) * ((1.0 - EULER_GAMMA) * fh_normal_quantile(1.0 - 1.0 / n) +
                             EULER_GAMMA * fh_normal_quantile(1.0 - 1.0 / (n * EULER_E)));
}

double fh_deflated_sharpe(double sr, int T, double skew, double kurt, int n_trials,
                          double variance)
{
    return fh_probabilistic_sharpe(sr, fh_expected_max_sharpe(n_trials, variance), T, skew,
                                   kurt);
}
