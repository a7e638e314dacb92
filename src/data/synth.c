/* synth.c — the embedded synthetic market (SPEC §2; docs/FEATURES.md, "Synthetic
 * market"). Deterministic per seed on any IEEE-754 machine: our own integer generator
 * (splitmix64), normals by the Marsaglia polar method (only +, *, /, sqrt and log),
 * fixed draw order, double precision throughout.
 *
 * Model, per bar i -> i+1 (constants below; numbers in docs/FEATURES.md):
 *   vol regime s (calm / normal / turbulent) : Markov, mean duration VOL_REGIME_BARS
 *   GARCH(1,1) variance h: h' = (1-a-b)(sigma_base*scale_s)^2 + a*e^2 + b*h
 *   drift regime d in {-1, 0, +1}            : Markov, mean duration DRIFT_REGIME_BARS
 *   log return r_{i+1} = mu(d_i) + sqrt(h_{i+1}) * t5 / sqrt(5/3)   (unit-variance t_5)
 *   mu(d) = d * signal_strength * sigma_base
 * The drift in effect after bar i is d_i, so E[r_{i+1} | hidden state at i] = mu(d_i)
 * exactly: that is expected_return[i]. The regime persists, so past multi-horizon
 * returns reveal it: the weak, learnable component. */
#include <math.h>
#include <string.h>

#include "foxhunt/data.h"

#define SIGMA_BASE 0.005          /* per-bar log-return volatility of the normal regime */
#define GARCH_A 0.07              /* weight of the last squared shock */
#define GARCH_B 0.90              /* weight of the last variance (persistence a+b 0.97) */
#define T_DOF 5                   /* Student-t degrees of freedom (kurtosis 9) */
#define VOL_REGIME_BARS 400.0     /* mean duration of a volatility regime */
#define DRIFT_REGIME_BARS 75.0    /* mean duration of a drift regime */
#define GAP_SCALE 0.10            /* open gap, in units of the bar's volatility */
#define WICK_SCALE 0.60           /* wick beyond max/min(open, close), same units */
#define VOLUME_BASE 1000.0        /* median volume at normal volatility */
#define START_PRICE 100.0
#define DEFAULT_SIGNAL_STRENGTH 0.15
static const double VOL_SCALE[3] = {0.6, 1.0, 1.8}; /* calm, normal, turbulent */

typedef struct {
    uint64_t state;
    int has_spare;
    double spare;
} synth_rng;

static uint64_t rng_next(synth_rng *g)
{
    uint64_t z = (g->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* uniform in (0, 1): 53 random bits, centred in their cell so 0 never comes out */
static double rng_uniform(synth_rng *g)
{
    return ((double)(rng_next(g) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

static double rng_normal(synth_rng *g)
{
    if (g->has_spare) {
        g->has_spare = 0;
        return g->spare;
    }
    double u, v, s;
    do {
        u = 2.0 * rng_uniform(g) - 1.0;
        v = 2.0 * rng_uniform(g) - 1.0;
        s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    double m = sqrt(-2.0 * log(s) / s);
    g->spare = v * m;
    g->has_spare = 1;
    return u * m;
}

/* Student-t with T_DOF degrees of freedom, scaled to unit variance. */
static double rng_student_t(synth_rng *g)
{
    double z = rng_normal(g), chi2 = 0.0;
    for (int k = 0; k < T_DOF; k++) {
        double x = rng_normal(g);
        chi2 += x * x;
    }
    return z / sqrt(chi2 / T_DOF) * sqrt((T_DOF - 2.0) / T_DOF);
}

/* Stays with probability 1 - 1/mean_bars, else moves to one of the other two states. */
static int markov3_step(synth_rng *g, int state, double mean_bars)
{
    double u = rng_uniform(g);
    if (u >= 1.0 / mean_bars)
        return state;
    return (state + 1 + (rng_uniform(g) < 0.5 ? 0 : 1)) % 3;
}

void fh_synth_config_default(fh_synth_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->seed = 42;
    cfg->n_bars = 20000;
    cfg->start_time = 1577836800; /* 2020-01-01 00:00:00 UTC */
    cfg->interval = 3600;
    cfg->signal_strength = DEFAULT_SIGNAL_STRENGTH;
}

fh_status fh_synth_generate(const fh_synth_config *cfg, fh_bars *bars,
                            double *expected_return, fh_error *err)
{
    memset(bars, 0, sizeof *bars);
    if (cfg->n_bars < 2)
        return fh_error_set(err, FH_ERR_INPUT, "synthetic market: n_bars %zu is too small",
                            cfg->n_bars);
    if (cfg->interval <= 0)
        return fh_error_set(err, FH_ERR_INPUT, "synthetic market: interval must be > 0");
    if (!isfinite(cfg->signal_strength) || cfg->signal_strength < 0)
        return fh_error_set(err, FH_ERR_INPUT,
                            "synthetic market: signal_strength must be finite and >= 0");
    fh_status st = fh_bars_alloc(bars, cfg->n_bars, err);
    if (st != FH_OK)
        return st;

    /* the seed goes through one splitmix round so that seeds 0, 1, 2 start far apart */
    synth_rng g = {cfg->seed, 0, 0.0};
    g.state = rng_next(&g);
    int vol_state = 1;
    int drift = (int)(rng_next(&g) % 3) - 1; /* -1, 0, +1 */
    double mu_unit = cfg->signal_strength * SIGMA_BASE;
    double h = SIGMA_BASE * SIGMA_BASE; /* variance of the next return */
    double close = START_PRICE;

    for (size_t i = 0; i < cfg->n_bars; i++) {
        double vol = sqrt(h), open, r, eps = 0.0;
        if (i == 0) {
            open = close;
        } else {
            eps = rng_student_t(&g);
            double shock = vol * eps;
            r = drift * mu_unit + shock; /* drift d_{i-1}: set after bar i-1 */
            open = close * exp(GAP_SCALE * vol * rng_normal(&g));
            close *= exp(r);
            double target = SIGMA_BASE * VOL_SCALE[vol_state];
            h = (1.0 - GARCH_A - GARCH_B) * target * target + GARCH_A * shock * shock +
                GARCH_B * h;
        }
        double top = open > close ? open : close, bottom = open < close ? open : close;
        bars->time[i] = cfg->start_time + (int64_t)i * cfg->interval;
        bars->open[i] = open;
        bars->close[i] = close;
        bars->high[i] = top * exp(WICK_SCALE * vol * fabs(rng_normal(&g)));
        bars->low[i] = bottom * exp(-WICK_SCALE * vol * fabs(rng_normal(&g)));
        bars->volume[i] = VOLUME_BASE * (vol / SIGMA_BASE) * (0.5 + 0.5 * fabs(eps)) *
                          exp(0.35 * rng_normal(&g));
        /* the hidden state after bar i: these set the law of the next return */
        vol_state = markov3_step(&g, vol_state, VOL_REGIME_BARS);
        drift = markov3_step(&g, drift + 1, DRIFT_REGIME_BARS) - 1;
        if (expected_return)
            expected_return[i] = drift * mu_unit;
    }
    return FH_OK;
}
