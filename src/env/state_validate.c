/* state_validate.c — fh_episode_state_validate (include/foxhunt/env.h): every field of
 * an episode state checked against what env_step and env_episode_reset can produce, so
 * that a state read from a file (a checkpoint) is never used as an array index, a
 * divisor or a log argument before it has been checked.
 *
 * The checks are the environment's own invariants (tests/env/test_env_invariants.c
 * asserts that every state of long random runs passes them): exact where the code
 * computes a field exactly from others (step = bar - start_bar, the window's head and
 * fill, the barrier's entry price), to 1e-9 relative for the double marks (equity,
 * exposure), to 1e-5 for the window's c ln c sum (the GPU's logf is an ulp or two off). */
#include <float.h>
#include <math.h>
#include <stdio.h>

#include "env/common_device_functions.cuh"
#include "foxhunt/env.h"

#define MARK_REL 1e-9
#define CLOGC_REL 1e-5 /* the GPU's logf differs from glibc's by an ulp or two */

#define FAIL(...)                                                                        \
    do {                                                                                 \
        if (why && n)                                                                    \
            snprintf(why, n, __VA_ARGS__);                                               \
        return 0;                                                                        \
    } while (0)

/* the portfolio: finite, positive where divided by, marked at close[bar] */
static int check_portfolio(const fh_env_market *m, const fh_episode_state *ep, char *why,
                           size_t n)
{
    if (!isfinite(ep->cash))
        FAIL("cash = %.17g is not finite", ep->cash);
    if (!isfinite(ep->units))
        FAIL("units = %.17g is not finite", ep->units);
    if (!(isfinite(ep->initial_equity) && ep->initial_equity > 0.0))
        FAIL("initial_equity = %.17g is not a positive finite number", ep->initial_equity);
    if (!(isfinite(ep->equity) && ep->equity > 0.0))
        FAIL("equity = %.17g is not a positive finite number", ep->equity);
    double growth = ep->equity / ep->initial_equity - 1.0; /* observed as a float */
    if (!(fabs(growth) <= FLT_MAX))
        FAIL("equity / initial_equity = %.17g / %.17g does not fit the observation (a float)",
             ep->equity, ep->initial_equity);
    double p = (double)m->close[ep->bar];
    double value = ep->units * p, mark = ep->cash + value;
    if (!(fabs(ep->equity - mark) <= MARK_REL * (fabs(ep->cash) + fabs(value))))
        FAIL("equity = %.17g differs from cash + units * close[bar] = %.17g (cash %.17g, "
             "units %.17g, close[%d] %.9g)", ep->equity, mark, ep->cash, ep->units, ep->bar, p);
    double exposure = value / ep->equity;
    if (!(isfinite(ep->exposure) &&
          fabs(ep->exposure - exposure) <= MARK_REL * (1.0 + fabs(exposure))))
        FAIL("exposure = %.17g differs from units * close[bar] / equity = %.17g",
             ep->exposure, exposure);
    /* the exposure drifts with the price after each trade (in [-1, 1]), so it has no
     * tighter bound than what the observation (a float, clipped) can take */
    if (!(fabs(ep->exposure) <= FLT_MAX))
        FAIL("exposure = %.17g does not fit the observation (a float)", ep->exposure);
    return 1;
}

static int check_logs(const fh_episode_state *ep, char *why, size_t n)
{
    if (!isfinite(ep->log_reward))
        FAIL("log_reward = %.17g is not finite", ep->log_reward);
    if (!(isfinite(ep->log_cost) && ep->log_cost >= 0.0))
        FAIL("log_cost = %.17g is not a finite cost >= 0", ep->log_cost);
    if (!(isfinite(ep->log_turnover) && ep->log_turnover >= 0.0))
        FAIL("log_turnover = %.17g is not a finite turnover >= 0", ep->log_turnover);
    if (!(isfinite(ep->life_cost) && ep->life_cost >= 0.0))
        FAIL("life_cost = %.17g is not a finite cost >= 0", ep->life_cost);
    if (!(isfinite(ep->life_turnover) && ep->life_turnover >= 0.0))
        FAIL("life_turnover = %.17g is not a finite turnover >= 0", ep->life_turnover);
    if (ep->log_reversals < 0 || ep->log_reversals > ep->step)
        FAIL("log_reversals = %d is outside [0, step = %d]", ep->log_reversals, ep->step);
    if (ep->life_reversals < ep->log_reversals)
        FAIL("life_reversals = %d is below this episode's log_reversals = %d",
             ep->life_reversals, ep->log_reversals);
    if (ep->log_barrier_hits[FH_BARRIER_NONE] != 0)
        FAIL("log_barrier_hits[0] = %d: the slot of FH_BARRIER_NONE is unused (0)",
             ep->log_barrier_hits[FH_BARRIER_NONE]);
    if (ep->life_barrier_hits[FH_BARRIER_NONE] != 0)
        FAIL("life_barrier_hits[0] = %d: the slot of FH_BARRIER_NONE is unused (0)",
             ep->life_barrier_hits[FH_BARRIER_NONE]);
    long hits = 0;
    for (int k = FH_BARRIER_NONE + 1; k < FH_BARRIER_N_KINDS; k++) {
        if (ep->log_barrier_hits[k] < 0 || ep->log_barrier_hits[k] > ep->step)
            FAIL("log_barrier_hits[%d] = %d is outside [0, step = %d]", k,
                 ep->log_barrier_hits[k], ep->step);
        if (ep->life_barrier_hits[k] < ep->log_barrier_hits[k])
            FAIL("life_barrier_hits[%d] = %d is below this episode's log_barrier_hits[%d] = %d",
                 k, ep->life_barrier_hits[k], k, ep->log_barrier_hits[k]);
        hits += ep->log_barrier_hits[k];
    }
    if (hits > ep->step) /* at most one hit per step */
        FAIL("log_barrier_hits sum to %ld, more than the %d steps taken", hits, ep->step);
    if (ep->episodes_done < 0)
        FAIL("episodes_done = %d is negative", ep->episodes_done);
    return 1;
}

/* active exactly while a position is open; levels around the entry bar's close */
static int check_barrier(const fh_env_market *m, const fh_episode_state *ep, char *why,
                         size_t n)
{
    const fh_barrier *b = &ep->barrier;
    const float f[5] = {b->entry, b->upper, b->lower, b->entry_step, b->direction};
    const char *names[5] = {"entry", "upper", "lower", "entry_step", "direction"};
    for (int k = 0; k < 5; k++)
        if (!isfinite(f[k]))
            FAIL("barrier.%s = %.9g is not finite", names[k], (double)f[k]);
    if (b->direction != 0.0f && b->direction != 1.0f && b->direction != -1.0f)
        FAIL("barrier.direction = %.9g is not -1, 0 or +1", (double)b->direction);
    int dir = (int)b->direction;
    if (dir != env_sign(ep->units))
        FAIL("barrier.direction = %d but units = %.17g (the barrier is active exactly while "
             "a position is open, on its side)", dir, ep->units);
    if (dir == 0) {
        for (int k = 0; k < 4; k++)
            if (f[k] != 0.0f)
                FAIL("barrier.%s = %.9g with no position (an inactive barrier is all 0)",
                     names[k], (double)f[k]);
        return 1;
    }
    if (!(b->entry_step >= 0.0f && b->entry_step < (float)ep->step &&
          b->entry_step == floorf(b->entry_step)))
        FAIL("barrier.entry_step = %.9g is not a step in [0, step = %d)", (double)b->entry_step,
             ep->step);
    int entry_bar = ep->start_bar + (int)b->entry_step;
    if (b->entry != m->close[entry_bar])
        FAIL("barrier.entry = %.9g is not close[%d] = %.9g, the price at its entry step",
             (double)b->entry, entry_bar, (double)m->close[entry_bar]);
    if (!(b->lower <= b->entry && b->entry <= b->upper))
        FAIL("barrier levels lower %.9g, entry %.9g, upper %.9g are not in order",
             (double)b->lower, (double)b->entry, (double)b->upper);
    return 1;
}

/* the window: indices first (they index ring and counts), then what is derived */
static int check_diversity(const fh_episode_state *ep, char *why, size_t n)
{
    const fh_diversity *d = &ep->diversity;
    const int W = FH_DIVERSITY_WINDOW;
    if (d->head < 0 || d->head >= W)
        FAIL("diversity.head = %d is outside [0, %d)", d->head, W);
    if (d->fill < 0 || d->fill > W)
        FAIL("diversity.fill = %d is outside [0, %d]", d->fill, W);
    for (int i = 0; i < W; i++)
        if (d->ring[i] >= FH_N_ACTIONS)
            FAIL("diversity.ring[%d] = %d is not an action (0..%d)", i, d->ring[i],
                 FH_N_ACTIONS - 1);
    for (int i = 0; i < 3; i++)
        if (d->pad_[i] != 0)
            FAIL("diversity.pad_[%d] = %d: padding is 0", i, d->pad_[i]);
    int want_fill = ep->step < W ? ep->step : W;
    if (d->fill != want_fill)
        FAIL("diversity.fill = %d, but the episode has taken %d steps (fill = min(step, %d))",
             d->fill, ep->step, W);
    if (d->head != ep->step % W)
        FAIL("diversity.head = %d, but the episode has taken %d steps (head = step mod %d)",
             d->head, ep->step, W);
    int counts[FH_N_ACTIONS] = {0};
    for (int i = 0; i < d->fill; i++) /* filled: slots [0, fill) (all once full) */
        counts[d->ring[i]]++;
    double clogc = 0.0;
    for (int a = 0; a < FH_N_ACTIONS; a++) {
        if (d->counts[a] != counts[a])
            FAIL("diversity.counts[%d] = %d, but action %d occurs %d times in the window",
                 a, d->counts[a], a, counts[a]);
        clogc += (double)diversity_clogc(counts[a]);
    }
    if (!(fabs(d->clogc - clogc) <= CLOGC_REL * (1.0 + clogc)))
        FAIL("diversity.clogc = %.17g, but the counts give sum c ln c = %.17g", d->clogc,
             clogc);
    return 1;
}

int fh_episode_state_validate(const fh_env_config *cfg, const fh_env_market *m,
                              const fh_episode_state *ep, char *why, size_t n)
{
    fh_error err;
    if (!cfg || fh_env_config_validate(cfg, &err) != FH_OK)
        FAIL("the environment config is invalid: %s", cfg ? err.message : "(none)");
    if (!m || !m->close || m->n_bars < 2)
        FAIL("the market is invalid (%d bars)", m ? m->n_bars : 0);
    if (!(ep->rng.inc & 1ULL))
        FAIL("rng.inc = %llu is even (a PCG stream selector is odd)", ep->rng.inc);
    int last = m->n_bars - 2; /* a step reads bar + 1 */
    if (ep->bar < 0 || ep->bar > last)
        FAIL("bar = %d is outside the market's [0, %d] (%d bars; a step reads bar + 1)",
             ep->bar, last, m->n_bars);
    if (ep->start_bar < 0 || ep->start_bar > ep->bar)
        FAIL("start_bar = %d is outside [0, bar = %d]", ep->start_bar, ep->bar);
    /* an episode lives in its start bar's segment (several assets laid end to end) */
    int segment_end = env_segment_end_of(m, ep->start_bar);
    if (ep->segment_end != segment_end)
        FAIL("segment_end = %d, but start_bar %d lies in the segment ending at %d (0: the "
             "market's one segment)", ep->segment_end, ep->start_bar, segment_end);
    if (segment_end > 0 && ep->bar > segment_end - 2)
        FAIL("bar = %d is past its segment's last step (segment ends at %d)", ep->bar,
             segment_end);
    if (ep->step != ep->bar - ep->start_bar)
        FAIL("step = %d, but bar - start_bar = %d (each step moves one bar)", ep->step,
             ep->bar - ep->start_bar);
    return check_portfolio(m, ep, why, n) && check_logs(ep, why, n) &&
           check_barrier(m, ep, why, n) && check_diversity(ep, why, n);
}
