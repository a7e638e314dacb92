/* baselines.h — the classical, causal baselines a quant compares a trading agent with
 * (issue 34, item 1; docs/EVALUATION.md, "Classical baselines"):
 *   vol_target    volatility-targeted long (Moreira & Muir 2017):
 *                 x_t = min(1, target_vol / vol_t);
 *   tsmom         time-series momentum with volatility scaling (Moskowitz, Ooi &
 *                 Pedersen 2012): x_t = sign(ln(c_t / c_{t-L})) * min(1, target_vol / vol_t);
 *   ma_crossover  moving-average crossover, long or flat: x_t = 1 while the mean close of
 *                 the last F bars is above that of the last S bars (F < S), else 0.
 * vol_t = sqrt(P / V * sum of the last V squared log returns r_i = ln(c_i / c_{i-1}),
 * i <= t): the annualised realised volatility (not demeaned), P the periods per year.
 * Every rule reads closes up to bar t only (the bar it trades at, as the agent sees it)
 * and the bars before the split (earlier splits and gaps: fh_market_view.history); a
 * rule without enough bars for its look-back holds 0 (flat) until it has them. Look-backs
 * are set in months and turned into bars with P (round(months * P / 12), at least 1), so
 * one grid serves daily SPY (21 bars a month) and hourly crypto (730).
 * The backtester (evaluate.h) trades each bar to the exposure of the action grid nearest
 * to x_t (-1 .. +1 in steps of 0.25, ties away from zero) at full urgency, in the same
 * environment, costs and barriers as the agent.
 * Parameters: chosen on the validation split from a small grid by the backtest's Sharpe
 * (fh_baseline_choose); the grid's size is the trials count of the deflated Sharpe. */
#ifndef FOXHUNT_BASELINES_H
#define FOXHUNT_BASELINES_H

#include <stddef.h>

#include "foxhunt/data.h"
#include "foxhunt/env.h"
#include "foxhunt/evaluate.h"
#include "foxhunt/metrics.h"

#define FH_BASELINE_COUNT 3 /* FH_POLICY_VOL_TARGET .. FH_POLICY_MA_CROSSOVER */
#define FH_BASELINE_MAX_TRIALS 9
#define FH_BASELINE_EXPOSURE_CAP 1.0 /* the environment's largest exposure: no leverage */

typedef struct {
    fh_policy_kind kind;  /* FH_POLICY_VOL_TARGET, FH_POLICY_TSMOM, FH_POLICY_MA_CROSSOVER */
    double window_months; /* tsmom: the momentum look-back; ma_crossover: the fast mean */
    double slow_months;   /* ma_crossover: the slow mean (else 0) */
    double vol_months;    /* vol_target, tsmom: the realised-volatility window (else 0) */
    double target_vol;    /* vol_target, tsmom: annualised, 0.2 = 20% (else 0) */
} fh_baseline_params;

/* 1 for the three baseline kinds. */
int fh_policy_is_baseline(fh_policy_kind kind);
/* The parameters used where no validation split can choose them. */
fh_baseline_params fh_baseline_default(fh_policy_kind kind);
/* The kind's grid (docs/EVALUATION.md): writes up to FH_BASELINE_MAX_TRIALS settings,
 * returns their number (0 for a kind that is not a baseline). */
int fh_baseline_grid(fh_policy_kind kind, fh_baseline_params *out);
/* A look-back in bars: round(months * P / 12), at least 1. */
size_t fh_baseline_bars(double months, double periods_per_year);
/* Bars of history a setting needs before its first bar to have its look-back. */
size_t fh_baseline_history_needed(const fh_baseline_params *p, double periods_per_year);
/* "vol 1 mo (21 bars), target 20%": the setting, for tables. */
void fh_baseline_describe(const fh_baseline_params *p, double periods_per_year, char *out,
                          size_t size);
/* Checks a setting: FH_ERR_INPUT naming the field (a look-back not > 0, a fast window
 * not shorter than the slow one, a target volatility not in (0, 10]). */
fh_status fh_baseline_validate(const fh_baseline_params *p, fh_error *err);

/* The rule's target exposure at each bar of the view (view->n values), from
 * view->close[-view->history .. t] only. */
fh_status fh_baseline_targets(const fh_baseline_params *p, const fh_market_view *view,
                              double periods_per_year, double *target, fh_error *err);
/* The action that trades to the grid exposure nearest to target at full urgency. */
int fh_baseline_action(double target);

/* One backtest of a setting (evaluate.h's fh_backtest_run_targets on its targets). */
fh_status fh_baseline_backtest(fh_backtest_metrics *m, const fh_baseline_params *p,
                               const fh_env_config *cfg, const fh_market_view *view,
                               double periods_per_year, const fh_backtest_path *path,
                               fh_error *err);

/* How a baseline's parameters were chosen. */
typedef struct {
    fh_baseline_params chosen;
    int on_validation;  /* 1: the best of the grid on validation; 0: the defaults */
    char why_default[160]; /* on_validation 0: why */
    int n_trials;       /* settings backtested on validation (1 with the defaults) */
    int best;           /* on_validation 1: the chosen one's index in trial[] */
    fh_baseline_params trial[FH_BASELINE_MAX_TRIALS];
    double trial_sharpe[FH_BASELINE_MAX_TRIALS]; /* annualised, on validation */
    int trial_steps;    /* the validation backtest's steps */
    double sharpe_variance; /* of the trials' per-step Sharpe ratios (0 under 2 trials) */
    int skipped;        /* grid settings left out: longer look-back than the history */
} fh_baseline_choice;

/* Chooses kind's parameters on `validation` (n < 2: none; its history must hold a
 * setting's look-back for the setting to be tried): every setting of the grid is
 * backtested and the highest Sharpe wins (the first of equals, in grid order). Without
 * a validation split, or when no setting fits its history, the defaults, saying why. */
fh_status fh_baseline_choose(fh_baseline_choice *c, fh_policy_kind kind,
                             const fh_env_config *cfg, const fh_market_view *validation,
                             double periods_per_year, fh_error *err);
/* The deflated Sharpe (metrics.h) of m, a backtest of c's chosen setting: n_trials
 * trials of variance sharpe_variance; with one trial it is PSR(0). */
double fh_baseline_deflated_sharpe(const fh_baseline_choice *c, const fh_backtest_metrics *m,
                                   double periods_per_year);

#endif
