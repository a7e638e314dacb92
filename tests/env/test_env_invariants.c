/* test_env_invariants.c — invariants of SPEC §3 over long random-action runs (issue 3):
 * double accounting (equity = cash + units * price and E' = E - cost + units * dp, to
 * 1e-9 relative), pnl = ln(E'/E), exposure in [-1, 1], costs >= 0, no NaN/Inf in
 * states or rewards, barrier levels consistent with the entry bar's price and sigma,
 * barrier active exactly while a position is open, time limit respected; every state
 * about to be stepped passes fh_episode_state_validate (no false refusals).
 *
 * The validator (issue 19; a checkpoint's states are untrusted): a table of single-field
 * edits of real states (head = 1e9, head = -100000, a ring value of 200, NaN equity, ...)
 * each refused with a message naming the field and value; and random byte edits: every
 * edited state the validator accepts is stepped 60 times with random actions and must
 * keep finite rewards and observations and pass the validator after each step (under
 * ASan this also shows that no accepted state indexes out of bounds).
 *
 * Markets: a synthetic random walk with switching volatility built here; the closes of
 * the real files in FH_SHARED_DATA_DIR (test-local reader: close column only, sigma =
 * EWMA span 20, random features), and, when the data layer was found at configure time
 * (FH_TEST_DATA_LAYER), the same files through fh_bars_load_csv + fh_market_build. */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "env_fixtures.h"
#include "test_util.h"

#define REL 1e-9

typedef struct {
    float *close;
    float *sigma;
    float *features;
    int n;
} owned_market;

static void owned_market_free(owned_market *om)
{
    free(om->close);
    free(om->sigma);
    free(om->features);
    memset(om, 0, sizeof *om);
}

static double normal(fh_rng *rng)
{
    /* Box-Muller on two draws in (0, 1] */
    double u1 = 1.0 - (double)gpu_random(rng);
    double u2 = (double)gpu_random(rng);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2);
}

/* sigma[i]: EWMA (span FH_SIGMA_SPAN) of squared log returns up to bar i, sqrt. */
static void fill_sigma_features(owned_market *om, uint64_t seed)
{
    const double alpha = 2.0 / (FH_SIGMA_SPAN + 1.0);
    double var = 0.0;
    om->sigma[0] = 0.0f; /* no return yet: exercises the sigma floor */
    for (int i = 1; i < om->n; i++) {
        double r = log((double)om->close[i] / (double)om->close[i - 1]);
        var = i == 1 ? r * r : alpha * r * r + (1.0 - alpha) * var;
        om->sigma[i] = (float)sqrt(var);
    }
    fh_rng rng;
    rng_seed(&rng, seed, 99u);
    for (size_t k = 0; k < (size_t)om->n * FH_N_MARKET_FEATURES; k++)
        om->features[k] = (float)normal(&rng);
}

static int owned_market_alloc(owned_market *om, int n)
{
    om->n = n;
    om->close = malloc(sizeof(float) * (size_t)n);
    om->sigma = malloc(sizeof(float) * (size_t)n);
    om->features = malloc(sizeof(float) * (size_t)n * FH_N_MARKET_FEATURES);
    return om->close && om->sigma && om->features;
}

/* Random walk, volatility switching between 0.5% and 3% per bar, occasional 5-sigma
 * jumps, so barriers, ruin and reversals all happen. */
static void make_random_walk(owned_market *om, int n, uint64_t seed)
{
    if (!owned_market_alloc(om, n)) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    fh_rng rng;
    rng_seed(&rng, seed, 7u);
    double p = 100.0, vol = 0.01;
    for (int i = 0; i < n; i++) {
        om->close[i] = (float)p;
        if (gpu_random(&rng) < 0.01f)
            vol = gpu_random(&rng) < 0.5f ? 0.005 : 0.03;
        double z = normal(&rng);
        if (gpu_random(&rng) < 0.002f)
            z *= 5.0;
        p *= exp(vol * z);
    }
    fill_sigma_features(om, seed);
}

/* Reads the "close" column (case-insensitive header match) of a CSV. Returns 0 when
 * the file is absent. Ascending order is assumed (both shared files are). */
static int load_closes(const char *path, owned_market *om)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[4096];
    int close_col = -1;
    if (fgets(line, sizeof line, f)) {
        int col = 0;
        for (char *tok = strtok(line, ",\r\n"); tok; tok = strtok(NULL, ",\r\n"), col++) {
            char lower[64] = {0};
            for (int k = 0; tok[k] && k < 63; k++)
                lower[k] = (char)tolower((unsigned char)tok[k]);
            if (strcmp(lower, "close") == 0)
                close_col = col;
        }
    }
    size_t cap = 1024, n = 0;
    float *close = malloc(cap * sizeof *close);
    while (close_col >= 0 && close && fgets(line, sizeof line, f)) {
        char *p = line;
        for (int col = 0; col < close_col && p; col++) {
            p = strchr(p, ',');
            if (p)
                p++;
        }
        if (!p)
            continue;
        errno = 0;
        double v = strtod(p, NULL);
        if (errno || !(v > 0.0))
            continue;
        if (n == cap) {
            cap *= 2;
            float *grown = realloc(close, cap * sizeof *close);
            if (!grown)
                break;
            close = grown;
        }
        close[n++] = (float)v;
    }
    fclose(f);
    if (close_col < 0 || n < 2) {
        free(close);
        return 0;
    }
    om->n = (int)n;
    om->close = close;
    om->sigma = malloc(sizeof(float) * n);
    om->features = malloc(sizeof(float) * n * FH_N_MARKET_FEATURES);
    if (!om->sigma || !om->features)
        return 0;
    fill_sigma_features(om, 5u);
    return 1;
}

typedef struct {
    long steps;
    long episodes;
    long hits[FH_BARRIER_N_KINDS];
    long reversals;
    long terminals;
    long truncations;
} run_counts;

static int sign_of(double v)
{
    return (v > 0.0) - (v < 0.0);
}

/* Steps n_episodes episodes n_steps times each with uniform random actions and checks
 * every invariant at every step; the first violation per check is printed. */
static void run_invariants(const char *name, const fh_env_market *m, const fh_env_config *cfg,
                           int n_episodes, int n_steps, run_counts *counts)
{
    memset(counts, 0, sizeof *counts);
    int bad_accounting = 0, bad_mark = 0, bad_pnl = 0, bad_exposure = 0, bad_cost = 0;
    int bad_finite = 0, bad_barrier = 0, bad_hold = 0, bad_bar = 0, bad_valid = 0;
    char why[512];
    float state[FH_STATE_DIM];
    for (int e = 0; e < n_episodes; e++) {
        fh_episode_state ep;
        env_episode_init(cfg, m, &ep, 2024u, (unsigned long long)e);
        fh_rng actions;
        rng_seed(&actions, 77u, (unsigned long long)e);
        int a = 0;
        for (int t = 0; t < n_steps; t++) {
            /* sticky random actions: hold a target for a while so positions live long
             * enough to meet their barriers */
            if (t == 0 || gpu_random(&actions) < 0.3f)
                a = rng_uniform_int(&actions, FH_N_ACTIONS);
            if (!fh_episode_state_validate(cfg, m, &ep, why, sizeof why) && !bad_valid++)
                fprintf(stderr, "%s: ep %d step %d: a reachable state refused: %s\n", name, e,
                        t, why);
            double e_before = ep.equity;
            int bar0 = ep.bar;
            fh_step_result r;
            env_step(cfg, m, &ep, a, &r);
            counts->steps++;
            double p0 = m->close[bar0], p1 = m->close[ep.bar];
            double expect = e_before - r.cost + r.units_held * (p1 - p0);
            double scale = fabs(e_before) + fabs(r.units_held * p1) + fabs(r.cost);
            if (fabs(ep.equity - expect) > REL * scale && !bad_accounting++)
                fprintf(stderr, "%s: ep %d step %d: equity %.17g, E - cost + units dp = %.17g\n",
                        name, e, t, ep.equity, expect);
            double mark = ep.cash + ep.units * p1;
            double mscale = fabs(ep.cash) + fabs(ep.units * p1);
            if (fabs(ep.equity - mark) > REL * mscale && !bad_mark++)
                fprintf(stderr, "%s: ep %d step %d: equity %.17g != cash + units p %.17g\n",
                        name, e, t, ep.equity, mark);
            if (ep.equity > 0.0 && !fh_close(ep.equity, e_before * exp(r.pnl), 0, REL) &&
                !bad_pnl++)
                fprintf(stderr, "%s: ep %d step %d: E' %.17g vs E exp(pnl) %.17g\n", name, e, t,
                        ep.equity, e_before * exp(r.pnl));
            if (!(fabsf(r.exposure) <= 1.0f) && !bad_exposure++)
                fprintf(stderr, "%s: ep %d step %d: e' = %g\n", name, e, t, r.exposure);
            if (!(r.cost >= 0.0) || !(r.turnover >= 0.0f)) {
                if (!bad_cost++)
                    fprintf(stderr, "%s: ep %d step %d: cost %g turnover %g\n", name, e, t,
                            r.cost, r.turnover);
            }
            env_observe(cfg, m, &ep, state);
            int finite = isfinite(r.reward) && isfinite(r.pnl) && isfinite(r.cost) &&
                         isfinite(ep.cash) && isfinite(ep.units);
            for (int j = 0; j < FH_STATE_DIM; j++)
                finite &= isfinite(state[j]);
            finite &= state[FH_N_MARKET_FEATURES + 1] >= -1.0f &&
                      state[FH_N_MARKET_FEATURES + 1] <= 1.0f;
            finite &= state[FH_N_MARKET_FEATURES + 2] >= 0.0f &&
                      state[FH_N_MARKET_FEATURES + 2] <= FH_SPREAD_FEATURE_MAX;
            if (!finite && !bad_finite++)
                fprintf(stderr, "%s: ep %d step %d: non-finite or out-of-range value\n", name,
                        e, t);
            /* barrier active exactly while a position is open; levels from the entry
             * bar's close and sigma */
            const fh_barrier *b = &ep.barrier;
            int dir = (int)b->direction;
            int ok = dir == sign_of(ep.units);
            if (dir != 0) {
                int entry_bar = ep.start_bar + (int)b->entry_step;
                float s = fmaxf(m->sigma[entry_bar], FH_SIGMA_FLOOR);
                float hi_k = dir > 0 ? cfg->pt : cfg->sl, lo_k = dir > 0 ? cfg->sl : cfg->pt;
                ok &= entry_bar >= ep.start_bar && entry_bar < ep.bar;
                ok &= b->entry == m->close[entry_bar];
                ok &= b->upper == b->entry * (1.0f + hi_k * s);
                ok &= b->lower == b->entry * (1.0f - lo_k * s);
                ok &= b->lower < b->entry && b->entry < b->upper;
                if ((float)ep.step - b->entry_step >= (float)cfg->max_hold && !bad_hold++)
                    fprintf(stderr, "%s: ep %d step %d: held past max_hold\n", name, e, t);
            }
            if (!ok && !bad_barrier++)
                fprintf(stderr, "%s: ep %d step %d: barrier {%g %g %g %g %g} units %g\n", name,
                        e, t, b->entry, b->upper, b->lower, b->entry_step, b->direction,
                        ep.units);
            if ((ep.bar != ep.start_bar + ep.step || ep.bar >= m->n_bars) && !bad_bar++)
                fprintf(stderr, "%s: ep %d step %d: bar %d start %d\n", name, e, t, ep.bar,
                        ep.start_bar);
            counts->hits[r.barrier_hit]++;
            counts->reversals += r.reversal;
            if (r.done) {
                counts->episodes++;
                counts->terminals += r.terminal;
                counts->truncations += r.truncated;
                if ((r.terminal && r.truncated) || r.done != (r.terminal || r.truncated))
                    bad_bar++;
                env_episode_reset(cfg, m, &ep);
            }
        }
    }
    CHECK_MSG(bad_accounting == 0, "%s: %d accounting violations", name, bad_accounting);
    CHECK_MSG(bad_mark == 0, "%s: %d mark-to-market violations", name, bad_mark);
    CHECK_MSG(bad_pnl == 0, "%s: %d pnl violations", name, bad_pnl);
    CHECK_MSG(bad_exposure == 0, "%s: %d exposure violations", name, bad_exposure);
    CHECK_MSG(bad_cost == 0, "%s: %d cost violations", name, bad_cost);
    CHECK_MSG(bad_finite == 0, "%s: %d non-finite states", name, bad_finite);
    CHECK_MSG(bad_barrier == 0, "%s: %d barrier violations", name, bad_barrier);
    CHECK_MSG(bad_hold == 0, "%s: %d time-limit violations", name, bad_hold);
    CHECK_MSG(bad_bar == 0, "%s: %d bar/done violations", name, bad_bar);
    CHECK_MSG(bad_valid == 0, "%s: %d reachable states refused by the validator", name,
              bad_valid);
    printf("%s: %ld steps, %ld episodes (%ld terminal, %ld truncated), hits pt %ld sl %ld "
           "time %ld, reversals %ld\n",
           name, counts->steps, counts->episodes, counts->terminals, counts->truncations,
           counts->hits[FH_BARRIER_PROFIT_TAKE], counts->hits[FH_BARRIER_STOP_LOSS],
           counts->hits[FH_BARRIER_TIME_LIMIT], counts->reversals);
}

static void run_market(const char *name, const fh_env_market *m, int expect_ruin)
{
    fh_env_config cfg = fh_env_config_default();
    run_counts c;
    run_invariants(name, m, &cfg, 32, 4000, &c);
    /* the run must actually exercise the mechanics it checks */
    CHECK_MSG(c.hits[FH_BARRIER_PROFIT_TAKE] > 0 && c.hits[FH_BARRIER_STOP_LOSS] > 0,
              "%s: profit-takes and stop-losses should hit", name);
    CHECK_MSG(c.reversals > 0 && c.truncations > 0, "%s: reversals and truncations", name);
    /* with the default pt/sl a random position meets its price barriers long before 50
     * steps; a short time limit makes the third kind happen too */
    cfg.max_hold = 3;
    run_invariants(name, m, &cfg, 8, 4000, &c);
    CHECK_MSG(c.hits[FH_BARRIER_TIME_LIMIT] > 0, "%s: time limits should hit", name);
    cfg.max_hold = fh_env_config_default().max_hold;
    /* high leverage on the same market: ruin happens and is handled */
    if (expect_ruin) {
        cfg.ruin = 0.97f;
        run_invariants(name, m, &cfg, 8, 4000, &c);
        CHECK_MSG(c.terminals > 0, "%s: ruin at 0.97 should happen", name);
    }
}

/* ---- the validator against edited states ---- */

/* Steps one long episode (horizon 400) with sticky random actions and keeps up to max
 * states about to be stepped, every `every` steps; *full gets one with a full window and
 * an open position, *partial one with a partly filled window and a position. */
static int sample_states(const fh_env_market *m, const fh_env_config *cfg, fh_episode_state *pool,
                         int max, fh_episode_state *full, fh_episode_state *partial)
{
    fh_episode_state ep;
    env_episode_init(cfg, m, &ep, 11u, 3u);
    fh_rng actions;
    rng_seed(&actions, 5u, 1u);
    int a = 0, n = 0, have_full = 0, have_partial = 0;
    for (int t = 0; t < 20000 && (n < max || !have_full || !have_partial); t++) {
        if (n < max && t % 37 == 0)
            pool[n++] = ep;
        if (ep.barrier.direction != 0.0f && ep.diversity.fill == FH_DIVERSITY_WINDOW &&
            ep.log_reversals > 0 && !have_full) {
            *full = ep;
            have_full = 1;
        }
        if (ep.barrier.direction != 0.0f && ep.step > 30 && ep.step < 60 && !have_partial) {
            *partial = ep;
            have_partial = 1;
        }
        if (t == 0 || gpu_random(&actions) < 0.2f)
            a = rng_uniform_int(&actions, FH_N_ACTIONS);
        fh_step_result r;
        env_step(cfg, m, &ep, a, &r);
        if (r.done)
            env_episode_reset(cfg, m, &ep);
    }
    return have_full && have_partial ? n : -1;
}

/* edit k of a state; returns the text the refusal must contain (NULL: no more edits) */
static const char *edit_state(fh_episode_state *ep, int k, int n_bars)
{
    static char want[64];
    fh_diversity *d = &ep->diversity;
    switch (k) {
    case 0: d->head = 1000000000; return "diversity.head = 1000000000 is outside [0, 100)";
    case 1: d->head = -100000; return "diversity.head = -100000";
    case 2: d->ring[17] = 200; return "diversity.ring[17] = 200 is not an action";
    case 3: d->fill = 101; return "diversity.fill = 101";
    case 4: d->fill -= 1; return "diversity.fill";
    case 5: d->head = (d->head + 1) % FH_DIVERSITY_WINDOW; return "diversity.head";
    case 6: d->counts[d->ring[0]]++; return "diversity.counts[";
    case 7: d->counts[44] = 255; return "diversity.counts[44] = 255";
    case 8: d->clogc = NAN; return "diversity.clogc = nan";
    case 9: d->clogc += 1.0; return "diversity.clogc";
    case 10: d->pad_[1] = 1; return "diversity.pad_[1] = 1";
    case 11: ep->equity = NAN; return "equity = nan is not a positive finite number";
    case 12: ep->equity = -1.0; return "equity = -1 is not";
    case 13: ep->equity = INFINITY; return "equity = inf";
    case 14: ep->initial_equity = 0.0; return "initial_equity = 0 is not";
    case 15: ep->initial_equity = 1e-300; return "does not fit the observation";
    case 16: ep->cash = NAN; return "cash = nan";
    case 17: ep->units *= 2.0; return "differs from cash + units * close[bar]";
    case 18: ep->units = -INFINITY; return "units = -inf";
    case 19: ep->exposure = NAN; return "exposure = nan";
    case 20: ep->exposure += 0.5; return "differs from units * close[bar] / equity";
    case 21: ep->bar = n_bars - 1; snprintf(want, sizeof want, "bar = %d is outside", n_bars - 1); return want;
    case 22: ep->bar = -1; return "bar = -1 is outside";
    case 23: ep->bar = 1000000000; return "bar = 1000000000";
    case 24: ep->start_bar = ep->bar + 1; return "start_bar = ";
    case 25: ep->start_bar = -5; return "start_bar = -5";
    case 26: ep->step += 1; return "step = ";
    case 27: ep->step = -1; return "step = -1";
    case 28: ep->rng.inc &= ~1ULL; return "rng.inc = ";
    case 29: ep->barrier.direction = 0.5f; return "barrier.direction = 0.5 is not";
    case 30: ep->barrier.direction = -ep->barrier.direction; return "barrier.direction = ";
    case 31: ep->barrier.entry = NAN; return "barrier.entry = nan is not finite";
    case 32: ep->barrier.entry_step = -1.0f; return "barrier.entry_step = -1 is not";
    case 33: ep->barrier.entry_step = (float)ep->step + 5.0f; return "barrier.entry_step = ";
    case 34: ep->barrier.entry_step = 1e9f; return "barrier.entry_step = 1e+09";
    case 35: ep->barrier.entry_step += 0.5f; return "barrier.entry_step = ";
    case 36: ep->barrier.entry *= 1.01f; return "barrier.entry = ";
    case 37: ep->barrier.upper = ep->barrier.entry * 0.5f; return "barrier levels";
    case 38: ep->log_cost = -1.0; return "log_cost = -1";
    case 39: ep->log_reward = INFINITY; return "log_reward = inf";
    case 40: ep->log_turnover = NAN; return "log_turnover = nan";
    case 41: ep->life_cost = NAN; return "life_cost = nan";
    case 42: ep->life_turnover = -1.0; return "life_turnover = -1";
    case 43: ep->log_barrier_hits[0] = 1; return "log_barrier_hits[0] = 1";
    case 44: ep->log_barrier_hits[2] = -3; return "log_barrier_hits[2] = -3";
    case 45: ep->life_barrier_hits[0] = 2; return "life_barrier_hits[0] = 2";
    case 46: ep->life_barrier_hits[1] = ep->log_barrier_hits[1] - 1; return "life_barrier_hits[1]";
    case 47: ep->log_reversals = ep->step + 1; return "log_reversals = ";
    case 48: ep->life_reversals = ep->log_reversals - 1; return "life_reversals = ";
    case 49: ep->episodes_done = -1; return "episodes_done = -1";
    case 50: ep->segment_end = 7; return "segment_end = 7";
    default: return NULL;
    }
}

static void test_validator_edits(const fh_env_market *m)
{
    fh_env_config cfg = fh_env_config_default();
    cfg.horizon = 400;
    fh_episode_state pool[64], full, partial;
    int n_pool = sample_states(m, &cfg, pool, 64, &full, &partial);
    CHECK_MSG(n_pool > 0, "no state with a full window and an open position was reached");
    if (n_pool <= 0)
        return;
    char why[512];
    const fh_episode_state *bases[2] = {&full, &partial};
    const char *base_names[2] = {"full window", "partial window"};
    int edits = 0;
    for (int b = 0; b < 2; b++) {
        CHECK_MSG(fh_episode_state_validate(&cfg, m, bases[b], why, sizeof why), "%s: %s",
                  base_names[b], why);
        for (int k = 0;; k++) {
            fh_episode_state ep = *bases[b];
            const char *want = edit_state(&ep, k, m->n_bars);
            if (!want)
                break;
            if (memcmp(&ep, bases[b], sizeof ep) == 0)
                continue; /* the edit changed nothing on this state */
            edits++;
            why[0] = '\0';
            int ok = fh_episode_state_validate(&cfg, m, &ep, why, sizeof why);
            CHECK_MSG(!ok && strstr(why, want) != NULL, "%s, edit %d: validate %d, \"%s\" "
                      "should contain \"%s\"", base_names[b], k, ok, why, want);
        }
    }
    /* an unfilled slot of a partly filled window is not an action either */
    fh_episode_state ep = partial;
    ep.diversity.ring[FH_DIVERSITY_WINDOW - 1] = 200;
    CHECK(!fh_episode_state_validate(&cfg, m, &ep, why, sizeof why) &&
          strstr(why, "diversity.ring[99] = 200"));
    /* an invalid config or market is refused, not read */
    fh_env_config bad = cfg;
    bad.ruin = 2.0f;
    CHECK(!fh_episode_state_validate(&bad, m, &full, why, sizeof why) &&
          strstr(why, "config") != NULL);
    printf("validator: %d single-field edits of 2 real states, each refused by name\n", edits);
}

/* Random byte edits of reachable states: what the validator accepts must be safe. */
static void test_validator_random_edits(const fh_env_market *m)
{
    fh_env_config cfg = fh_env_config_default();
    cfg.horizon = 400;
    fh_episode_state pool[64], full, partial;
    int n_pool = sample_states(m, &cfg, pool, 64, &full, &partial);
    if (n_pool <= 0)
        return;
    fh_rng rng;
    rng_seed(&rng, 2025u, 9u);
    int trials = 4000, accepted = 0, bad = 0;
    char why[512];
    float obs[FH_STATE_DIM];
    for (int trial = 0; trial < trials; trial++) {
        fh_episode_state ep = pool[rng_uniform_int(&rng, n_pool)];
        unsigned char *bytes = (unsigned char *)&ep;
        int edits = 1 + rng_uniform_int(&rng, 3);
        for (int e = 0; e < edits; e++)
            bytes[rng_uniform_int(&rng, (int)sizeof ep)] = (unsigned char)pcg32(&rng);
        if (!fh_episode_state_validate(&cfg, m, &ep, why, sizeof why))
            continue;
        accepted++;
        for (int s = 0; s < 60 && !bad; s++) {
            env_observe(&cfg, m, &ep, obs);
            for (int j = 0; j < FH_STATE_DIM; j++)
                if (!isfinite(obs[j]) && !bad++)
                    fprintf(stderr, "trial %d step %d: observation[%d] = %g\n", trial, s, j,
                            (double)obs[j]);
            fh_step_result r;
            env_step(&cfg, m, &ep, rng_uniform_int(&rng, FH_N_ACTIONS), &r);
            if ((!isfinite(r.reward) || !isfinite(r.pnl)) && !bad++)
                fprintf(stderr, "trial %d step %d: reward %g pnl %g\n", trial, s,
                        (double)r.reward, r.pnl);
            if (r.done)
                env_episode_reset(&cfg, m, &ep);
            if (!fh_episode_state_validate(&cfg, m, &ep, why, sizeof why) && !bad++)
                fprintf(stderr, "trial %d step %d: an accepted state stepped into %s\n", trial,
                        s, why);
        }
    }
    CHECK_MSG(bad == 0, "%d accepted edited states went bad", bad);
    CHECK_MSG(accepted > 50 && accepted < trials, "%d of %d edited states accepted", accepted,
              trials);
    printf("validator: %d random byte edits, %d accepted (harmless fields), all stepped "
           "safely\n", trials, accepted);
}

#if FH_TEST_DATA_LAYER
#include "foxhunt/data.h"
static void run_data_layer_file(const char *path)
{
    fh_error err;
    fh_error_clear(&err);
    fh_bars bars;
    memset(&bars, 0, sizeof bars);
    if (fh_bars_load_csv(path, &bars, &err) != FH_OK) {
        CHECK_MSG(0, "fh_bars_load_csv(%s): %s", path, err.message);
        return;
    }
    fh_market market;
    memset(&market, 0, sizeof market);
    if (fh_market_build(&bars, NULL, &(fh_split_spec){.train_fraction = 0.8}, NULL, &market, &err) != FH_OK) {
        CHECK_MSG(0, "fh_market_build(%s): %s", path, err.message);
        fh_bars_free(&bars);
        return;
    }
    fh_market_view view = fh_market_view_of(&market, FH_SPLIT_TRAIN);
    fh_env_market m = fh_env_market_from_view(&view);
    CHECK_MSG(fh_env_market_validate(&m, &err) == FH_OK, "%s: %s", path, err.message);
    char name[1100];
    snprintf(name, sizeof name, "data layer %s", path);
    run_market(name, &m, 0);
    fh_market_free(&market);
    fh_bars_free(&bars);
}
#endif

int main(void)
{
    owned_market om;
    make_random_walk(&om, 6000, 42u);
    fh_env_market m = {om.features, om.close, om.sigma, om.n, 0, NULL};
    fh_error err;
    CHECK(fh_env_market_validate(&m, &err) == FH_OK);
    run_market("synthetic random walk", &m, 1);
    test_validator_edits(&m);
    test_validator_random_edits(&m);
    owned_market_free(&om);

    const char *files[2] = {"spy_daily.csv", "btcusdt_1h.csv"};
    int found = 0;
    for (int k = 0; k < 2; k++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", FH_SHARED_DATA_DIR, files[k]);
        if (!load_closes(path, &om)) {
            printf("note: %s not readable, real-data run skipped\n", path);
            owned_market_free(&om);
            continue;
        }
        found++;
        fh_env_market rm = {om.features, om.close, om.sigma, om.n, 0, NULL};
        CHECK(fh_env_market_validate(&rm, &err) == FH_OK);
        run_market(path, &rm, 0);
        owned_market_free(&om);
#if FH_TEST_DATA_LAYER
        run_data_layer_file(path);
#endif
    }
#if !FH_TEST_DATA_LAYER
    printf("note: data layer not found at configure time; real files read with the "
           "test-local close reader only\n");
#endif
    printf("real files checked: %d\n", found);
    return fh_test_finish();
}
