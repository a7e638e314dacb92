/* metrics.h — the statistics of a backtest (issue 5, `foxhunt eval`).
 *
 * Input is one continuous equity path over T steps. Definitions (docs/EVALUATION.md):
 *   r_t = equity[t+1]/equity[t] - 1 (simple step return, costs included);
 *   cumulative = equity[T]/equity[0] - 1; annualised = (1+cumulative)^(P/T) - 1;
 *   volatility = std(r) * sqrt(P) (population std); Sharpe = mean(r)/std(r) * sqrt(P)
 *   (risk-free 0); Sortino = mean(r)/sqrt(mean(min(r,0)^2)) * sqrt(P);
 *   max drawdown = max_t (1 - equity[t]/max_{s<=t} equity[s]); its duration = the longest
 *   run of steps spent below a previous peak; Calmar = annualised / max drawdown;
 *   turnover = sum |delta exposure| (and per year); trades = steps that traded;
 *   hit rate = share of steps holding a position whose return was > 0;
 *   costs = sum_t cost_t / equity[t]: the return given up to costs (a share of the
 *   equity of the moment, so it stays meaningful when equity compounds);
 *   Sharpe's standard error (Mertens 2002, i.i.d. returns, any distribution):
 *   sqrt((1 - skew SR + (kurt - 1)/4 SR^2) / T) * sqrt(P), SR the per-step Sharpe,
 *   skew and kurt (not excess) of r; time in market = share of steps holding a
 *   position; mean exposure (signed) and mean |exposure| over all steps; a round trip =
 *   a run of steps holding a position of one sign (opened from flat or by a reversal,
 *   closed by going flat, a reversal or the end), its return equity[end+1]/equity[start]
 *   - 1 with its costs; round-trip hit rate = share of round trips with return > 0.
 * P (periods per year) comes from the bar interval: fh_periods_per_year. */
#ifndef FOXHUNT_METRICS_H
#define FOXHUNT_METRICS_H

typedef struct {
    int steps;
    double cumulative_return;
    double annualised_return;
    double annualised_volatility;
    double sharpe;
    double sortino;
    double calmar;
    double max_drawdown;
    int max_drawdown_duration; /* steps */
    double turnover;           /* total sum |delta exposure| */
    double turnover_per_year;
    int trades;
    double hit_rate;
    double costs;              /* sum of cost_t / equity[t] */
    double final_equity;
    double sharpe_se;          /* standard error of the annualised Sharpe */
    double time_in_market;     /* share of steps holding a position */
    double mean_exposure;      /* signed, over all steps */
    double mean_abs_exposure;
    int round_trips;
    double round_trip_hit_rate;
    double skewness, kurtosis; /* of r (kurtosis not excess; 0 when r has no variance) */
    double max_drawdown_days;  /* the longest drawdown in time, from its peak to its
                                  recovery or the path's end (days; NaN where the bars'
                                  times are not known: set by the evaluation report) */
} fh_backtest_metrics;

/* 252 for bars of 20 hours or more (trading days), else seconds-per-year / interval
 * (24*365 = 8760 for hourly crypto, which trades around the clock). */
double fh_periods_per_year(double interval_seconds);

/* equity (T+1), turnover (T), costs (T, currency), exposure_held (T, the exposure held
 * over step t after trading). */
void fh_backtest_metrics_compute(const double *equity, const double *turnover,
                                 const double *costs, const double *exposure_held, int T,
                                 double periods_per_year, fh_backtest_metrics *m);

/* ---- results chosen among several trials (deflated_sharpe.c) ----
 * Bailey and Lopez de Prado: the probabilistic Sharpe ratio (2012) and the deflated
 * Sharpe ratio (2014). Sharpe ratios here are PER STEP (annualised / sqrt(P)).
 *   PSR(SR*) = Phi((SR - SR*) sqrt(T - 1) / sqrt(1 - skew SR + (kurt - 1)/4 SR^2));
 *   E[max SR of N trials under the null] = sqrt(V) ((1 - g) Phi^-1(1 - 1/N)
 *                                          + g Phi^-1(1 - 1/(N e))), g Euler's 0.5772...,
 *   V the variance of the N trials' Sharpe ratios; DSR = PSR(E[max]). */
double fh_normal_cdf(double x);
/* Phi^-1(p), p in (0, 1) (NaN outside); Acklam's rational approximation refined by one
 * Halley step: ~1e-15 relative. */
double fh_normal_quantile(double p);
double fh_probabilistic_sharpe(double sr, double sr_benchmark, int T, double skew,
                               double kurt);
/* PSR(0) of a backtest: m's annualised Sharpe made per step with periods_per_year, its
 * steps, skew and kurtosis (NaN where the Sharpe is not finite). */
double fh_backtest_psr(const fh_backtest_metrics *m, double periods_per_year);
/* 0 for n_trials <= 1 (nothing was chosen). */
double fh_expected_max_sharpe(int n_trials, double variance);
double fh_deflated_sharpe(double sr, int T, double skew, double kurt, int n_trials,
                          double variance);

#endif
