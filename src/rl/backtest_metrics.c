/* backtest_metrics.c — backtest statistics (include/foxhunt/metrics.h). */
#include "foxhunt/metrics.h"

#include <math.h>
#include <string.h>

#define DAILY_INTERVAL_MIN_SECONDS (20.0 * 3600.0)
#define TRADING_DAYS_PER_YEAR 252.0
#define SECONDS_PER_YEAR (365.0 * 24.0 * 3600.0)
#define TRADED_EPSILON 1e-12

double fh_periods_per_year(double interval_seconds)
{
    if (!(interval_seconds > 0))
        return TRADING_DAYS_PER_YEAR;
    if (interval_seconds >= DAILY_INTERVAL_MIN_SECONDS)
        return TRADING_DAYS_PER_YEAR;
    return SECONDS_PER_YEAR / interval_seconds;
}

void fh_backtest_metrics_compute(const double *equity, const double *turnover,
                                 const double *costs, const double *exposure_held, int T,
                                 double periods_per_year, fh_backtest_metrics *m)
{
    memset(m, 0, sizeof *m);
    m->max_drawdown_days = NAN; /* bars carry no time here: the report sets it */
    m->steps = T;
    m->final_equity = T >= 0 ? equity[T] : 0;
    if (T <= 0)
        return;
    double sum = 0, sum_sq = 0, down_sq = 0, cost_sum = 0, turn = 0;
    int in_market = 0, hits = 0;
    double peak = equity[0], max_dd = 0;
    int run = 0, max_run = 0;
    for (int t = 0; t < T; t++) {
        double r = equity[t + 1] / equity[t] - 1.0;
        sum += r;
        sum_sq += r * r;
        if (r < 0)
            down_sq += r * r;
        cost_sum += costs[t] / equity[t];
        turn += turnover[t];
        if (turnover[t] > TRADED_EPSILON)
            m->trades++;
        if (fabs(exposure_held[t]) > TRADED_EPSILON) {
            in_market++;
            if (r > 0)
                hits++;
        }
        double e = equity[t + 1];
        if (e >= peak) {
            peak = e;
            run = 0;
        } else {
            run++;
            if (run > max_run)
                max_run = run;
            double dd = 1.0 - e / peak;
            if (dd > max_dd)
                max_dd = dd;
        }
    }
    double mean = sum / T;
    double var = sum_sq / T - mean * mean;
    double sd = var > 0 ? sqrt(var) : 0;
    /* the third and fourth central moments, for the Sharpe's standard error */
    double m3 = 0, m4 = 0, expo = 0, abs_expo = 0;
    for (int t = 0; t < T; t++) {
        double d = (equity[t + 1] / equity[t] - 1.0) - mean;
        m3 += d * d * d;
        m4 += d * d * d * d;
        expo += exposure_held[t];
        abs_expo += fabs(exposure_held[t]);
    }
    if (sd > 0) {
        double skew = m3 / T / (sd * sd * sd), kurt = m4 / T / (var * var);
        double sr = mean / sd;
        m->skewness = skew;
        m->kurtosis = kurt;
        double v = (1.0 - skew * sr + (kurt - 1.0) / 4.0 * sr * sr) / T;
        m->sharpe_se = v > 0 ? sqrt(v) * sqrt(periods_per_year) : 0;
    }
    m->time_in_market = (double)in_market / T;
    m->mean_exposure = expo / T;
    m->mean_abs_exposure = abs_expo / T;
    /* round trips: runs of steps holding a position of one sign */
    int trips = 0, trip_hits = 0, open_at = -1, open_sign = 0;
    for (int t = 0; t <= T; t++) {
        double x = t < T ? exposure_held[t] : 0.0;
        int sign = fabs(x) > TRADED_EPSILON ? (x > 0 ? 1 : -1) : 0;
        if (open_sign != 0 && sign != open_sign) { /* the trip of steps [open_at, t) closes */
            trips++;
            if (equity[t] / equity[open_at] - 1.0 > 0)
                trip_hits++;
            open_sign = 0;
        }
        if (sign != 0 && open_sign == 0) {
            open_at = t;
            open_sign = sign;
        }
    }
    m->round_trips = trips;
    m->round_trip_hit_rate = trips > 0 ? (double)trip_hits / trips : 0;
    double downside = sqrt(down_sq / T);
    double sqrt_p = sqrt(periods_per_year);
    m->cumulative_return = equity[T] / equity[0] - 1.0;
    m->annualised_return = equity[T] > 0
        ? pow(equity[T] / equity[0], periods_per_year / T) - 1.0 : -1.0;
    m->annualised_volatility = sd * sqrt_p;
    m->sharpe = sd > 0 ? mean / sd * sqrt_p : 0;
    m->sortino = downside > 0 ? mean / downside * sqrt_p : 0;
    m->max_drawdown = max_dd;
    m->max_drawdown_duration = max_run;
    m->calmar = max_dd > 0 ? m->annualised_return / max_dd : 0;
    m->turnover = turn;
    m->turnover_per_year = turn * periods_per_year / T;
    m->hit_rate = in_market > 0 ? (double)hits / in_market : 0;
    m->costs = cost_sum;
}
