/* env_fixtures.h — small hand-made markets for the environment tests (issue 3).
 *
 * The tests build their own arrays instead of going through src/data, so every number
 * in a scenario can be worked out by hand. */
#ifndef FOXHUNT_TESTS_ENV_FIXTURES_H
#define FOXHUNT_TESTS_ENV_FIXTURES_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "env/common_device_functions.cuh"
#include "foxhunt/env.h"

#define FIX_MAX_BARS 64

typedef struct {
    float close[FIX_MAX_BARS];
    float sigma[FIX_MAX_BARS];
    float features[FIX_MAX_BARS * FH_N_MARKET_FEATURES];
    fh_env_market m;
} fix_market;

/* n bars with the given closes, a constant sigma, feature j of bar i = i + j / 100. */
static inline void fix_market_init(fix_market *fm, int n, const float *close, float sigma)
{
    memset(fm, 0, sizeof *fm);
    for (int i = 0; i < n; i++) {
        fm->close[i] = close[i];
        fm->sigma[i] = sigma;
        for (int j = 0; j < FH_N_MARKET_FEATURES; j++)
            fm->features[i * FH_N_MARKET_FEATURES + j] = (float)i + (float)j / 100.0f;
    }
    fm->m.features = fm->features;
    fm->m.close = fm->close;
    fm->m.sigma = fm->sigma;
    fm->m.n_bars = n;
}

/* A config with no costs and no risk penalty, so scenario numbers stay round. */
static inline fh_env_config fix_config_frictionless(void)
{
    fh_env_config cfg = fh_env_config_default();
    cfg.half_spread = 0.0f;
    cfg.impact = 0.0f;
    return cfg;
}

/* Starts an episode at bar 0 (the scenario's first bar). */
static inline void fix_episode_start(const fh_env_config *cfg, const fh_env_market *m,
                                     fh_episode_state *ep)
{
    memset(ep, 0, sizeof *ep);
    env_episode_init(cfg, m, ep, 1234u, 0u);
    ep->bar = 0;
    ep->start_bar = 0;
}

/* a = FH_N_URGENCIES * e + k for target index e (0..8) and urgency index k (0..4). */
static inline int fix_action(int e, int k)
{
    return FH_N_URGENCIES * e + k;
}
#define FIX_LONG_FULL fix_action(FH_N_EXPOSURES - 1, FH_N_URGENCIES - 1)  /* x +1, u 1 */
#define FIX_SHORT_FULL fix_action(0, FH_N_URGENCIES - 1)                  /* x -1, u 1 */
#define FIX_FLAT(k) fix_action(FH_N_EXPOSURES / 2, (k))                   /* x 0 */

#endif
