/* test_baselines.c — the classical baselines (baselines.h; docs/EVALUATION.md,
 * "Classical baselines") against references written here, not taken from the code:
 *  - hand-computed targets and actions on series whose volatility and trend are known
 *    (P = 120 bars a year, so a month is 10 bars);
 *  - a float64 reference of each rule (every window summed afresh, no prefix sums) on a
 *    random walk with a history before the view: every setting of every grid, every bar;
 *  - the action grid: nearest exposure, ties away from zero, full urgency;
 *  - causality: the closes after bar t0 perturbed, nothing before t0 changes (targets,
 *    exposures held, equity), through the backtester itself;
 *  - the choice: the grids as documented, every setting backtested on validation by
 *    brute force, the chosen one the highest Sharpe; settings whose look-back does not
 *    fit the bars before validation left out; no validation: the defaults;
 *  - bad settings refused with a message naming the field. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "foxhunt/baselines.h"
#include "foxhunt/data.h"
#include "foxhunt/env.h"
#include "test_util.h"

static uint64_t rng = 12345;
static double uniform(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return ((double)(rng >> 11) + 0.5) / 9007199254740992.0;
}

/* ---- the float64 reference of the rules (baselines.h's definitions) ---- */
static size_t ref_bars(double months, double P)
{
    long b = lround(months * P / 12.0);
    return b < 1 ? 1 : (size_t)b;
}

/* annualised realised vol of the V log returns ending at index j; -1 without them */
static double ref_vol(const double *c, size_t j, size_t V, double P)
{
    if (j < V)
        return -1;
    double s = 0;
    for (size_t i = j - V + 1; i <= j; i++)
        s += log(c[i] / c[i - 1]) * log(c[i] / c[i - 1]);
    return sqrt(s / (double)V * P);
}

static double ref_scale(double vol, double target)
{
    if (vol < 0)
        return 0;
    return vol == 0 ? 1.0 : fmin(1.0, target / vol);
}

static double ref_mean(const double *c, size_t j, size_t n)
{
    double s = 0;
    for (size_t i = j + 1 - n; i <= j; i++)
        s += c[i];
    return s / (double)n;
}

/* target at index j of the closes c (history included) */
static double ref_target(const fh_baseline_params *p, const double *c, size_t j, double P)
{
    switch (p->kind) {
    case FH_POLICY_VOL_TARGET:
        return ref_scale(ref_vol(c, j, ref_bars(p->vol_months, P), P), p->target_vol);
    case FH_POLICY_TSMOM: {
        size_t L = ref_bars(p->window_months, P);
        if (j < L)
            return 0;
        double past = c[j] - c[j - L]; /* the sign of the log return is the sign of this */
        double s = past > 0 ? 1 : past < 0 ? -1 : 0;
        return s * ref_scale(ref_vol(c, j, ref_bars(p->vol_months, P), P), p->target_vol);
    }
    case FH_POLICY_MA_CROSSOVER: {
        size_t F = ref_bars(p->window_months, P), S = ref_bars(p->slow_months, P);
        if (j + 1 < S)
            return 0;
        return ref_mean(c, j, F) > ref_mean(c, j, S) ? 1 : 0;
    }
    default: return NAN;
    }
}

/* a view over closes[H .. H+n) with H bars of history (no features: targets only) */
static fh_market_view view_of(const float *close, size_t H, size_t n)
{
    fh_market_view v;
    memset(&v, 0, sizeof v);
    v.n = n;
    v.close = close + H;
    v.history = H;
    return v;
}

static double exposure_of_action(int a)
{
    return -1.0 + 0.25 * (double)(a / FH_N_URGENCIES);
}

/* ---- hand-computed cases ---- */
static void test_hand(void)
{
    const double P = 120; /* a month: 10 bars */
    enum { N = 40 };
    float up[N], zig[N], down[N], line[N];
    double lp = log(100.0), lq = log(100.0);
    for (int i = 0; i < N; i++) {
        zig[i] = (float)exp(lp);             /* +-0.02 alternating: vol 0.02 sqrt(120) */
        down[i] = (float)exp(lq);            /* +0.01, -0.03: falling, the vol of up */
        line[i] = (float)(i + 1);            /* 1, 2, ..., 40 */
        lp += i % 2 ? -0.02 : 0.02;
        lq += i % 2 ? -0.03 : 0.01;
    }
    /* up: log returns +0.03 at odd steps, -0.01 at even ones (closes built step by step) */
    double lu = log(100.0);
    for (int i = 0; i < N; i++) {
        up[i] = (float)exp(lu);
        lu += i % 2 ? -0.01 : 0.03;
    }
    fh_error err;
    double t[N];
    fh_market_view v = view_of(zig, 0, N);

    /* vol_target, vol 1 month (10 bars), target 5%: 0.05 / (0.02 sqrt 120) = 0.228 -> 0.25;
     * flat until 10 returns exist (bar 10) */
    fh_baseline_params vt = {FH_POLICY_VOL_TARGET, 0, 0, 1, 0.05};
    CHECK(fh_baseline_targets(&vt, &v, P, t, &err) == FH_OK);
    CHECK(t[9] == 0.0);
    CHECK_CLOSE(t[10], 0.05 / (0.02 * sqrt(120.0)), 1e-5, 1e-5);
    CHECK_CLOSE(t[39], 0.05 / (0.02 * sqrt(120.0)), 1e-5, 1e-5);
    CHECK(exposure_of_action(fh_baseline_action(t[20])) == 0.25);
    /* target 40%: 1.83 capped at 1 */
    vt.target_vol = 0.40;
    CHECK(fh_baseline_targets(&vt, &v, P, t, &err) == FH_OK);
    CHECK(t[25] == 1.0);

    /* tsmom, 1 month, target 10%: up moves +0.10 over 10 bars, vol sqrt((0.03^2 +
     * 0.01^2)/2 * 120) = 0.2449: 0.408 -> 0.5; down moves -0.10: -0.5 */
    fh_baseline_params ts = {FH_POLICY_TSMOM, 1, 0, 1, 0.10};
    v = view_of(up, 0, N);
    CHECK(fh_baseline_targets(&ts, &v, P, t, &err) == FH_OK);
    double vol = sqrt((0.03 * 0.03 + 0.01 * 0.01) / 2 * 120);
    CHECK(t[9] == 0.0);
    CHECK_CLOSE(t[10], 0.10 / vol, 1e-5, 1e-5);
    CHECK(exposure_of_action(fh_baseline_action(t[30])) == 0.5);
    v = view_of(down, 0, N);
    CHECK(fh_baseline_targets(&ts, &v, P, t, &err) == FH_OK);
    CHECK_CLOSE(t[30], -0.10 / vol, 1e-5, 1e-5);
    CHECK(exposure_of_action(fh_baseline_action(t[30])) == -0.5);

    /* ma_crossover 0.5 / 2 months = 5 / 20 bars on 1, 2, ..., 40: at bar 19 the fast
     * mean 18 > the slow 10.5: long; before bar 19 no slow mean: flat. On the same
     * line reversed (falling): flat throughout. */
    fh_baseline_params ma = {FH_POLICY_MA_CROSSOVER, 0.5, 2, 0, 0};
    v = view_of(line, 0, N);
    CHECK(fh_baseline_targets(&ma, &v, P, t, &err) == FH_OK);
    CHECK(t[18] == 0.0 && t[19] == 1.0 && t[39] == 1.0);
    float rev[N];
    for (int i = 0; i < N; i++)
        rev[i] = line[N - 1 - i];
    v = view_of(rev, 0, N);
    CHECK(fh_baseline_targets(&ma, &v, P, t, &err) == FH_OK);
    int any = 0;
    for (int i = 0; i < N; i++)
        any |= t[i] != 0.0;
    CHECK_MSG(!any, "ma_crossover long on a falling line");
    /* with 19 bars of history the slow mean exists from the view's first bar */
    v = view_of(line, 19, N - 19);
    CHECK(fh_baseline_targets(&ma, &v, P, t, &err) == FH_OK);
    CHECK(t[0] == 1.0);
}

static void test_action_grid(void)
{
    const struct { double target, exposure; } cases[] = {
        {0.0, 0.0},    {0.1, 0.0},   {0.125, 0.25}, {-0.125, -0.25}, {0.124, 0.0},
        {0.3, 0.25},   {0.375, 0.5}, {0.62, 0.5},   {0.9, 1.0},      {1.7, 1.0},
        {-0.7, -0.75}, {-3, -1.0},   {NAN, 0.0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int a = fh_baseline_action(cases[i].target);
        CHECK_MSG(exposure_of_action(a) == cases[i].exposure && a % FH_N_URGENCIES ==
                  FH_N_URGENCIES - 1, "target %g: action %d (exposure %g), want exposure %g "
                  "at full urgency", cases[i].target, a, exposure_of_action(a),
                  cases[i].exposure);
    }
}

/* every setting of every grid against the float64 reference, on a random walk */
static void test_reference(void)
{
    enum { H = 300, N = 900 };
    float close[H + N];
    double c[H + N], lp = log(50.0);
    for (int i = 0; i < H + N; i++) {
        close[i] = (float)exp(lp);
        c[i] = (double)close[i]; /* the reference reads the same float prices */
        lp += 0.02 * (uniform() - 0.5) + 0.0005;
    }
    const double P[] = {252, 2000}; /* a month 21 and 167 bars */
    const fh_policy_kind kinds[] = {FH_POLICY_VOL_TARGET, FH_POLICY_TSMOM, FH_POLICY_MA_CROSSOVER};
    fh_market_view v = view_of(close, H, N);
    double t[N];
    fh_error err;
    int compared = 0;
    for (int q = 0; q < 2; q++)
        for (int k = 0; k < 3; k++) {
            fh_baseline_params grid[FH_BASELINE_MAX_TRIALS + 1]; /* the grid, then the defaults */
            int n = fh_baseline_grid(kinds[k], grid);
            grid[n++] = fh_baseline_default(kinds[k]);
            for (int g = 0; g < n; g++) {
                CHECK(fh_baseline_targets(&grid[g], &v, P[q], t, &err) == FH_OK);
                for (size_t i = 0; i < N; i++) {
                    double want = ref_target(&grid[g], c, H + i, P[q]);
                    if (!fh_close(t[i], want, 1e-9, 1e-9)) {
                        CHECK_MSG(0, "%s setting %d, P %g, bar %zu: target %.17g, reference "
                                  "%.17g", fh_policy_name(kinds[k]), g, P[q], i, t[i], want);
                        return;
                    }
                    /* the action too, unless the reference sits on a tie */
                    double frac = fabs(want) / 0.25 - floor(fabs(want) / 0.25);
                    if (fabs(frac - 0.5) > 1e-6)
                        CHECK(fh_baseline_action(t[i]) == fh_baseline_action(want));
                    compared++;
                }
            }
        }
    printf("reference: %d targets of every grid setting agree to 1e-9\n", compared);
}

/* a synthetic market with validation: train 50%, validation 25%, gaps of 200 bars */
static int market_make(fh_market *mk, fh_bars *bars, size_t n_bars, fh_error *err)
{
    fh_synth_config sc;
    fh_synth_config_default(&sc);
    sc.n_bars = n_bars;
    sc.seed = 7;
    fh_split_spec sp = {.train_fraction = 0.5, .validation_fraction = 0.25, .gap = 200};
    if (fh_synth_generate(&sc, bars, NULL, err) != FH_OK ||
        fh_market_build(bars, NULL, &sp, NULL, mk, err) != FH_OK)
        return 0;
    return 1;
}

/* the closes after bar t0 of the test split perturbed: nothing before t0 changes */
static void test_causality(const fh_market *mk0, const fh_bars *bars)
{
    fh_error err;
    fh_env_config cfg = fh_env_config_default();
    fh_market mk;
    fh_split_spec sp = {.train_fraction = 0.5, .validation_fraction = 0.25, .gap = 200};
    CHECK(fh_market_build(bars, NULL, &sp, NULL, &mk, &err) == FH_OK);
    fh_market_view v0 = fh_market_view_of(mk0, FH_SPLIT_TEST);
    fh_market_view v1 = fh_market_view_of(&mk, FH_SPLIT_TEST);
    const size_t n = v0.n, t0 = n / 2;
    for (size_t j = mk.split.test_begin + t0; j < mk.n; j++)
        mk.close[j] *= (float)(0.5 * (0.9 + 0.2 * uniform())); /* the future: a crash, noisy */
    const fh_policy_kind kinds[] = {FH_POLICY_VOL_TARGET, FH_POLICY_TSMOM, FH_POLICY_MA_CROSSOVER};
    double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    double *ea = malloc(n * sizeof *ea), *eb = malloc(n * sizeof *eb);
    double *xa = malloc(n * sizeof *xa), *xb = malloc(n * sizeof *xb);
    for (int k = 0; k < 3; k++) {
        fh_baseline_params grid[FH_BASELINE_MAX_TRIALS];
        int ng = fh_baseline_grid(kinds[k], grid);
        for (int g = 0; g < ng; g++) {
            CHECK(fh_baseline_targets(&grid[g], &v0, 8760, a, &err) == FH_OK);
            CHECK(fh_baseline_targets(&grid[g], &v1, 8760, b, &err) == FH_OK);
            fh_backtest_path pa = {.equity = ea, .exposure = xa}, pb = {.equity = eb, .exposure = xb};
            fh_backtest_metrics m;
            CHECK(fh_baseline_backtest(&m, &grid[g], &cfg, &v0, 8760, &pa, &err) == FH_OK);
            CHECK(fh_baseline_backtest(&m, &grid[g], &cfg, &v1, 8760, &pb, &err) == FH_OK);
            size_t bad = n;
            for (size_t t = 0; t < t0 && bad == n; t++)
                if (a[t] != b[t] || xa[t] != xb[t] || ea[t] != eb[t])
                    bad = t;
            CHECK_MSG(bad == n, "%s setting %d: bar %zu (before the perturbation at %zu) "
                      "changed: target %g -> %g, exposure %g -> %g", fh_policy_name(kinds[k]),
                      g, bad, t0, bad < n ? a[bad] : 0, bad < n ? b[bad] : 0,
                      bad < n ? xa[bad] : 0, bad < n ? xb[bad] : 0);
            int differs = 0, active = 0; /* the perturbation reached the rule after t0 */
            for (size_t t = t0; t < n; t++)
                differs |= a[t] != b[t], active |= a[t] != 0.0;
            CHECK_MSG(differs || !active, /* a look-back beyond the history: flat throughout */
                      "%s setting %d: the scrambled future changed nothing at all",
                      fh_policy_name(kinds[k]), g);
        }
    }
    free(a), free(b), free(ea), free(eb), free(xa), free(xb);
    fh_market_free(&mk);
}

/* the grids as docs/EVALUATION.md states them */
static void test_grids(void)
{
    fh_baseline_params g[FH_BASELINE_MAX_TRIALS];
    CHECK(fh_baseline_grid(FH_POLICY_VOL_TARGET, g) == 6);
    CHECK(g[0].vol_months == 1 && g[0].target_vol == 0.10 && g[5].vol_months == 3 &&
          g[5].target_vol == 0.40);
    CHECK(fh_baseline_grid(FH_POLICY_TSMOM, g) == 9);
    CHECK(g[0].window_months == 1 && g[8].window_months == 12 && g[8].target_vol == 0.40 &&
          g[4].vol_months == 1);
    CHECK(fh_baseline_grid(FH_POLICY_MA_CROSSOVER, g) == 3);
    CHECK(g[0].window_months == 0.5 && g[0].slow_months == 2 && g[2].window_months == 2.5 &&
          g[2].slow_months == 10);
    CHECK(fh_baseline_grid(FH_POLICY_GREEDY, g) == 0);
}

static size_t ref_need(const fh_baseline_params *p, double P)
{
    if (p->kind == FH_POLICY_MA_CROSSOVER)
        return ref_bars(p->slow_months, P) - 1;
    size_t v = ref_bars(p->vol_months, P);
    size_t w = p->kind == FH_POLICY_TSMOM ? ref_bars(p->window_months, P) : 0;
    return v > w ? v : w;
}

static int same(const fh_baseline_params *a, const fh_baseline_params *b)
{
    return a->kind == b->kind && a->window_months == b->window_months &&
           a->slow_months == b->slow_months && a->vol_months == b->vol_months &&
           a->target_vol == b->target_vol;
}

/* the choice on validation against every setting backtested by brute force */
static void test_choice(const fh_market *mk)
{
    fh_error err;
    fh_env_config cfg = fh_env_config_default();
    fh_market_view val = fh_market_view_of(mk, FH_SPLIT_VALIDATION);
    const fh_policy_kind kinds[] = {FH_POLICY_VOL_TARGET, FH_POLICY_TSMOM, FH_POLICY_MA_CROSSOVER};
    const double P[] = {252, 8760}; /* at 8760 the longer look-backs do not fit */
    for (int q = 0; q < 2; q++)
        for (int k = 0; k < 3; k++) {
            fh_baseline_choice c;
            CHECK(fh_baseline_choose(&c, kinds[k], &cfg, &val, P[q], &err) == FH_OK);
            fh_baseline_params grid[FH_BASELINE_MAX_TRIALS];
            int n = fh_baseline_grid(kinds[k], grid), tried = 0, skipped = 0, best = -1;
            double best_sharpe = -INFINITY;
            for (int g = 0; g < n; g++) {
                if (ref_need(&grid[g], P[q]) > val.history) {
                    skipped++;
                    continue;
                }
                fh_backtest_metrics m;
                CHECK(fh_baseline_backtest(&m, &grid[g], &cfg, &val, P[q], NULL, &err) == FH_OK);
                CHECK(tried < c.n_trials && c.trial_sharpe[tried] == m.sharpe);
                if (m.sharpe > best_sharpe)
                    best_sharpe = m.sharpe, best = g;
                tried++;
            }
            CHECK_MSG(c.skipped == skipped && c.n_trials == (tried ? tried : 1),
                      "%s at P %g: %d tried, %d skipped; want %d and %d",
                      fh_policy_name(kinds[k]), P[q], c.n_trials, c.skipped, tried, skipped);
            if (best >= 0) {
                CHECK(c.best >= 0 && c.best < c.n_trials && same(&c.trial[c.best], &c.chosen));
                CHECK_MSG(c.on_validation && same(&c.chosen, &grid[best]),
                          "%s at P %g: did not choose the best validation Sharpe %.4f",
                          fh_policy_name(kinds[k]), P[q], best_sharpe);
            } else {
                fh_baseline_params d = fh_baseline_default(kinds[k]);
                CHECK(!c.on_validation && same(&c.chosen, &d) && c.why_default[0]);
            }
            printf("%s at %g periods/year: %d of %d settings fit %zu bars of history; chose "
                   "%s (validation Sharpe %.3f)\n", fh_policy_name(kinds[k]), P[q], tried, n,
                   val.history, c.on_validation ? "the best" : "the defaults",
                   best >= 0 ? best_sharpe : NAN);
        }
    /* no validation split: the defaults, one trial, and why */
    fh_market_view none;
    memset(&none, 0, sizeof none);
    fh_baseline_choice c;
    CHECK(fh_baseline_choose(&c, FH_POLICY_TSMOM, &cfg, &none, 252, &err) == FH_OK);
    fh_baseline_params d = fh_baseline_default(FH_POLICY_TSMOM);
    CHECK(!c.on_validation && c.n_trials == 1 && same(&c.chosen, &d) &&
          strstr(c.why_default, "no validation"));
    CHECK(d.window_months == 12 && d.target_vol == 0.20);
}

static void test_bad_input(void)
{
    fh_error err;
    const struct { fh_baseline_params p; const char *says; } bad[] = {
        {{FH_POLICY_VOL_TARGET, 0, 0, 0, 0.2}, "volatility window"},
        {{FH_POLICY_VOL_TARGET, 0, 0, 1, -0.1}, "target volatility"},
        {{FH_POLICY_TSMOM, 0, 0, 1, 0.2}, "look-back"},
        {{FH_POLICY_MA_CROSSOVER, 4, 2, 0, 0}, "slow mean"},
        {{FH_POLICY_GREEDY, 1, 2, 1, 0.2}, "not a classical baseline"},
    };
    float close[4] = {1, 2, 3, 4};
    fh_market_view v = view_of(close, 0, 4);
    double t[4];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fh_error_clear(&err);
        CHECK(fh_baseline_targets(&bad[i].p, &v, 252, t, &err) == FH_ERR_INPUT);
        CHECK_MSG(strstr(err.message, bad[i].says), "case %zu: \"%s\" does not say %s", i,
                  err.message, bad[i].says);
    }
}

/* The rules exit by their own signal, as buy-and-hold: the environment's barriers do not
 * touch them (a tight stop-loss, take-profit and max_hold give the same path), while
 * always_long, which trades in the environment, is changed by them. */
static void test_barriers_out_of_reach(const fh_market *mk)
{
    fh_error err;
    fh_env_config loose = fh_env_config_default(), tight = loose;
    tight.pt = 0.5;
    tight.sl = 0.25;
    tight.max_hold = 5;
    fh_market_view v = fh_market_view_of(mk, FH_SPLIT_TEST);
    const fh_policy_kind kinds[] = {FH_POLICY_VOL_TARGET, FH_POLICY_TSMOM, FH_POLICY_MA_CROSSOVER};
    for (int k = 0; k < 3; k++) {
        fh_baseline_params p = fh_baseline_default(kinds[k]);
        fh_backtest_metrics a, b;
        CHECK(fh_baseline_backtest(&a, &p, &loose, &v, 8760, NULL, &err) == FH_OK);
        CHECK(fh_baseline_backtest(&b, &p, &tight, &v, 8760, NULL, &err) == FH_OK);
        CHECK_MSG(a.final_equity == b.final_equity && a.turnover == b.turnover,
                  "%s: the barriers changed it (equity %.6f against %.6f)",
                  fh_policy_name(kinds[k]), a.final_equity, b.final_equity);
    }
    fh_backtest_metrics a, b;
    CHECK(fh_backtest_run(&a, FH_POLICY_ALWAYS_LONG, NULL, &loose, &v, NULL, 8760, 1, NULL,
                          &err) == FH_OK);
    CHECK(fh_backtest_run(&b, FH_POLICY_ALWAYS_LONG, NULL, &tight, &v, NULL, 8760, 1, NULL,
                          &err) == FH_OK);
    CHECK_MSG(a.turnover != b.turnover, "always_long did not feel the tight barriers: the "
              "check above could not have failed");
}

int main(void)
{
    test_hand();
    test_action_grid();
    test_reference();
    test_grids();
    test_bad_input();
    fh_error err;
    fh_bars bars;
    fh_market mk;
    memset(&bars, 0, sizeof bars);
    memset(&mk, 0, sizeof mk);
    CHECK_MSG(market_make(&mk, &bars, 4000, &err), "market: %s", err.message);
    if (mk.n) {
        test_causality(&mk, &bars);
        test_choice(&mk);
        test_barriers_out_of_reach(&mk);
    }
    fh_market_free(&mk);
    fh_bars_free(&bars);
    return fh_test_finish();
}
