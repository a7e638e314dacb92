/* baselines.c — the classical baselines' rules, grids and parameter choice
 * (include/foxhunt/baselines.h; docs/EVALUATION.md, "Classical baselines"). */
#include "foxhunt/baselines.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env/common_device_functions.cuh" /* FH_EXPOSURE_STEP */

#define MONTHS_PER_YEAR 12.0
#define MAX_TARGET_VOL 10.0 /* 1000% a year: beyond it a target is a typo */

int fh_policy_is_baseline(fh_policy_kind kind)
{
    return kind == FH_POLICY_VOL_TARGET || kind == FH_POLICY_TSMOM ||
           kind == FH_POLICY_MA_CROSSOVER;
}

/* Defaults: one month of realised volatility as Moreira & Muir; Moskowitz, Ooi &
 * Pedersen's 12-month look-back; the 50/200-day crossover, in months (2.5 / 10). */
fh_baseline_params fh_baseline_default(fh_policy_kind kind)
{
    fh_baseline_params p = {kind, 0, 0, 0, 0};
    if (kind == FH_POLICY_VOL_TARGET)
        p.vol_months = 1, p.target_vol = 0.20;
    else if (kind == FH_POLICY_TSMOM)
        p.window_months = 12, p.vol_months = 1, p.target_vol = 0.20;
    else if (kind == FH_POLICY_MA_CROSSOVER)
        p.window_months = 2.5, p.slow_months = 10;
    return p;
}

/* The grids (docs/EVALUATION.md): small, so that the trials a deflated Sharpe counts
 * stay few. Three volatility targets: 10% scales daily SPY (15-20% a year) to about
 * half, 40% hourly crypto (50-80%) to about half, 20% lies between. */
static const double TARGET_VOLS[] = {0.10, 0.20, 0.40};
static const double VOL_WINDOWS[] = {1, 3};        /* vol_target, months */
static const double MOMENTUM_WINDOWS[] = {1, 3, 12}; /* tsmom, months */
static const double MA_PAIRS[][2] = {{0.5, 2}, {1, 4}, {2.5, 10}}; /* fast, slow months */
#define LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))

int fh_baseline_grid(fh_policy_kind kind, fh_baseline_params *out)
{
    int n = 0;
    if (kind == FH_POLICY_VOL_TARGET) {
        for (int w = 0; w < LEN(VOL_WINDOWS); w++)
            for (int v = 0; v < LEN(TARGET_VOLS); v++)
                out[n++] = (fh_baseline_params){kind, 0, 0, VOL_WINDOWS[w], TARGET_VOLS[v]};
    } else if (kind == FH_POLICY_TSMOM) {
        for (int w = 0; w < LEN(MOMENTUM_WINDOWS); w++)
            for (int v = 0; v < LEN(TARGET_VOLS); v++)
                out[n++] = (fh_baseline_params){kind, MOMENTUM_WINDOWS[w], 0, 1, TARGET_VOLS[v]};
    } else if (kind == FH_POLICY_MA_CROSSOVER) {
        for (int w = 0; w < LEN(MA_PAIRS); w++)
            out[n++] = (fh_baseline_params){kind, MA_PAIRS[w][0], MA_PAIRS[w][1], 0, 0};
    }
    return n;
}

size_t fh_baseline_bars(double months, double periods_per_year)
{
    double bars = floor(months * periods_per_year / MONTHS_PER_YEAR + 0.5);
    return bars >= 1.0 ? (size_t)bars : 1;
}

size_t fh_baseline_history_needed(const fh_baseline_params *p, double ppy)
{
    size_t vol = p->kind == FH_POLICY_MA_CROSSOVER ? 0 : fh_baseline_bars(p->vol_months, ppy);
    if (p->kind == FH_POLICY_TSMOM) {
        size_t w = fh_baseline_bars(p->window_months, ppy);
        return w > vol ? w : vol;
    }
    if (p->kind == FH_POLICY_MA_CROSSOVER)
        return fh_baseline_bars(p->slow_months, ppy) - 1; /* closes t-S+1 .. t */
    return vol; /* vol returns need vol + 1 closes */
}

void fh_baseline_describe(const fh_baseline_params *p, double ppy, char *out, size_t size)
{
    if (p->kind == FH_POLICY_MA_CROSSOVER)
        snprintf(out, size, "fast %g mo (%zu bars), slow %g mo (%zu bars), long/flat",
                 p->window_months, fh_baseline_bars(p->window_months, ppy), p->slow_months,
                 fh_baseline_bars(p->slow_months, ppy));
    else if (p->kind == FH_POLICY_TSMOM)
        snprintf(out, size, "look-back %g mo (%zu bars), vol %g mo (%zu bars), target %g%%",
                 p->window_months, fh_baseline_bars(p->window_months, ppy), p->vol_months,
                 fh_baseline_bars(p->vol_months, ppy), 100 * p->target_vol);
    else
        snprintf(out, size, "vol %g mo (%zu bars), target %g%%", p->vol_months,
                 fh_baseline_bars(p->vol_months, ppy), 100 * p->target_vol);
}

fh_status fh_baseline_validate(const fh_baseline_params *p, fh_error *err)
{
    const char *name = fh_policy_name(p->kind);
    if (!fh_policy_is_baseline(p->kind))
        return fh_error_set(err, FH_ERR_INPUT, "policy %s is not a classical baseline "
                            "(vol_target, tsmom, ma_crossover)", name);
    int vol_scaled = p->kind != FH_POLICY_MA_CROSSOVER;
    if (vol_scaled && !(p->vol_months > 0 && isfinite(p->vol_months)))
        return fh_error_set(err, FH_ERR_INPUT, "%s: the volatility window %g months is not "
                            "> 0", name, p->vol_months);
    if (vol_scaled && !(p->target_vol > 0 && p->target_vol <= MAX_TARGET_VOL))
        return fh_error_set(err, FH_ERR_INPUT, "%s: the target volatility %g is not in (0, "
                            "%g] (a share a year: 0.2 is 20%%)", name, p->target_vol,
                            MAX_TARGET_VOL);
    if (p->kind != FH_POLICY_VOL_TARGET && !(p->window_months > 0 && isfinite(p->window_months)))
        return fh_error_set(err, FH_ERR_INPUT, "%s: the look-back %g months is not > 0", name,
                            p->window_months);
    if (p->kind == FH_POLICY_MA_CROSSOVER &&
        !(p->slow_months > p->window_months && isfinite(p->slow_months)))
        return fh_error_set(err, FH_ERR_INPUT, "%s: the slow mean's %g months are not more "
                            "than the fast mean's %g", name, p->slow_months, p->window_months);
    return FH_OK;
}

/* min(cap, target / vol) of the V squared returns ending at closes index j (sq: prefix
 * sums of squared log returns, sq[j] = sum over i = 1..j); 0 without V returns yet. */
static double vol_scale(const double *sq, size_t j, size_t V, double target, double ppy)
{
    if (j < V)
        return 0.0;
    double vol = sqrt(fmax(sq[j] - sq[j - V], 0.0) * ppy / (double)V);
    return vol > 0.0 ? fmin(FH_BASELINE_EXPOSURE_CAP, target / vol) : FH_BASELINE_EXPOSURE_CAP;
}

fh_status fh_baseline_targets(const fh_baseline_params *p, const fh_market_view *view,
                              double ppy, double *target, fh_error *err)
{
    fh_status st = fh_baseline_validate(p, err);
    if (st != FH_OK)
        return st;
    if (!(ppy > 0) || !view->close)
        return fh_error_set(err, FH_ERR_INPUT, "%s: %s", fh_policy_name(p->kind),
                            view->close ? "periods per year must be > 0" : "no close prices");
    const size_t H = view->history, N = H + view->n;
    const float *c = view->close - H; /* (N) closes: the history, then the view */
    /* prefix sums in float64: sum[j] over closes 0 .. j-1, sq[j] of the squared log
     * returns r_1 .. r_j (r_i = ln(c_i / c_i-1)); every window a difference of two,
     * O(N) for any look-back */
    double *sum = malloc((N + 1) * sizeof *sum), *sq = malloc((N + 1) * sizeof *sq);
    if (!sum || !sq) {
        free(sum);
        free(sq);
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
    }
    sum[0] = sq[0] = 0.0;
    for (size_t j = 0; j < N; j++) {
        sum[j + 1] = sum[j] + (double)c[j];
        if (j > 0) {
            double r = log((double)c[j] / (double)c[j - 1]);
            sq[j] = sq[j - 1] + r * r;
        }
    }
    const size_t V = fh_baseline_bars(p->vol_months, ppy);
    const size_t L = fh_baseline_bars(p->window_months, ppy);
    const size_t S = fh_baseline_bars(p->slow_months, ppy);
    for (size_t t = 0; t < view->n; t++) {
        size_t j = H + t; /* bar t's index in c: nothing after it is read */
        double x = 0.0;
        if (p->kind == FH_POLICY_VOL_TARGET) {
            x = vol_scale(sq, j, V, p->target_vol, ppy);
        } else if (p->kind == FH_POLICY_TSMOM) {
            if (j >= L) {
                double past = log((double)c[j] / (double)c[j - L]);
                double sign = past > 0 ? 1.0 : past < 0 ? -1.0 : 0.0;
                x = sign * vol_scale(sq, j, V, p->target_vol, ppy);
            }
        } else if (j + 1 >= S) { /* ma_crossover: means of closes j-F+1 .. j, j-S+1 .. j */
            double fast = (sum[j + 1] - sum[j + 1 - L]) / (double)L;
            double slow = (sum[j + 1] - sum[j + 1 - S]) / (double)S;
            x = fast > slow ? 1.0 : 0.0;
        }
        target[t] = x;
    }
    free(sum);
    free(sq);
    return FH_OK;
}

int fh_baseline_action(double target)
{
    double x = isfinite(target) ? fabs(target) : 0.0;
    int steps = (int)floor(x / (double)FH_EXPOSURE_STEP + 0.5); /* ties away from zero */
    int half = FH_N_EXPOSURES / 2;
    steps = steps > half ? half : steps;
    int e = half + (target < 0 ? -steps : steps);
    return FH_N_URGENCIES * e + (FH_N_URGENCIES - 1); /* full urgency */
}

fh_status fh_baseline_backtest(fh_backtest_metrics *m, const fh_baseline_params *p,
                               const fh_env_config *cfg, const fh_market_view *view,
                               double periods_per_year, const fh_backtest_path *path,
                               fh_error *err)
{
    memset(m, 0, sizeof *m);
    double *target = malloc((view->n ? view->n : 1) * sizeof *target);
    if (!target)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
    fh_status st = fh_baseline_targets(p, view, periods_per_year, target, err);
    if (st == FH_OK)
        st = fh_backtest_run_targets(m, p->kind, target, cfg, view, periods_per_year, path,
                                     err);
    free(target);
    return st;
}

fh_status fh_baseline_choose(fh_baseline_choice *c, fh_policy_kind kind,
                             const fh_env_config *cfg, const fh_market_view *validation,
                             double periods_per_year, fh_error *err)
{
    memset(c, 0, sizeof *c);
    if (!fh_policy_is_baseline(kind))
        return fh_error_set(err, FH_ERR_INPUT, "policy %s is not a classical baseline",
                            fh_policy_name(kind));
    c->chosen = fh_baseline_default(kind);
    c->n_trials = 1;
    if (!validation || validation->n < 2) {
        snprintf(c->why_default, sizeof c->why_default,
                 "no validation split to choose them on (validation_fraction 0)");
        return FH_OK;
    }
    fh_baseline_params grid[FH_BASELINE_MAX_TRIALS];
    int n = fh_baseline_grid(kind, grid), tried = 0, best = -1;
    double sr[FH_BASELINE_MAX_TRIALS];
    for (int g = 0; g < n; g++) {
        /* a look-back longer than the bars before validation would leave the rule flat on
         * part of it: that setting cannot be judged on the whole split */
        if (fh_baseline_history_needed(&grid[g], periods_per_year) > validation->history) {
            c->skipped++;
            continue;
        }
        fh_backtest_metrics m;
        fh_status st = fh_baseline_backtest(&m, &grid[g], cfg, validation, periods_per_year,
                                            NULL, err);
        if (st != FH_OK)
            return st;
        c->trial[tried] = grid[g];
        c->trial_sharpe[tried] = m.sharpe;
        c->trial_steps = m.steps;
        sr[tried] = m.sharpe / sqrt(periods_per_year);
        if (isfinite(m.sharpe) && (best < 0 || m.sharpe > c->trial_sharpe[best]))
            best = tried;
        tried++;
    }
    if (best < 0) { /* no setting fits (a finite Sharpe is all the others give) */
        snprintf(c->why_default, sizeof c->why_default,
                 "%s of the grid's %d settings fit the %zu bars before the validation split",
                 tried ? "no finite Sharpe from any" : "none", n, validation->history);
        c->n_trials = tried > 0 ? tried : 1;
        return FH_OK;
    }
    c->chosen = c->trial[best];
    c->best = best;
    c->on_validation = 1;
    c->n_trials = tried;
    if (tried > 1) { /* the sample variance, as the walk-forward's seeds' (metrics.h) */
        double mean = 0, ss = 0;
        for (int i = 0; i < tried; i++)
            mean += sr[i] / tried;
        for (int i = 0; i < tried; i++)
            ss += (sr[i] - mean) * (sr[i] - mean);
        c->sharpe_variance = ss / (tried - 1);
    }
    return FH_OK;
}

double fh_baseline_deflated_sharpe(const fh_baseline_choice *c, const fh_backtest_metrics *m,
                                   double periods_per_year)
{
    return fh_deflated_sharpe(m->sharpe / sqrt(periods_per_year), m->steps, m->skewness,
                              m->kurtosis, c->n_trials, c->sharpe_variance);
}
