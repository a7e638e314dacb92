/* capi_vec_env.c — the CPU vector environment (capi.h): fh_vec_env (env.h) wrapped, not
 * re-implemented, so Python steps the very code `foxhunt train` collects with. The
 * handle adds the split's view, byte-wide done flags for numpy, the optional curiosity
 * params and a read position into the finished-episode logs. */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "capi/capi_internal.h"
#include "env/common_device_functions.cuh" /* the observation's clips */
#include "foxhunt/env.h"

_Static_assert(sizeof(int) == sizeof(int32_t), "actions pass as int32 to fh_vec_env_step");
_Static_assert(FH_BARRIER_N_KINDS == 4, "fh_api_episode_log holds four barrier counters");
_Static_assert(sizeof(fh_api_episode_log) == 80, "fh_api_episode_log is documented as 80 bytes");
_Static_assert(offsetof(fh_api_episode_log, episode_return) == 40,
               "fh_api_episode_log: ten int32, then the doubles");

struct fh_api_vec_env {
    fh_api_object obj;
    fh_api_market *market; /* a reference: env's views point into its data */
    fh_env_config cfg;
    fh_market_view view;
    fh_vec_env env;
    int *flags;            /* (3, N) dones, terminals, truncations as fh_vec_env writes them */
    float *curiosity;      /* (FH_CURIOSITY_N_PARAMS) or NULL */
    size_t logs_taken;     /* env's logs before this index were handed out */
    int threads;           /* OpenMP threads of a step (0: all cores), kept across seeds */
};

void fh_api_vec_env_free(fh_api_vec_env *e)
{
    if (!capi_object_of(e, CAPI_VEC_ENV))
        return;
    capi_object_kill(&e->obj);
    fh_vec_env_free(&e->env);
    if (e->market)
        capi_market_release(e->market);
    free(e->flags);
    free(e->curiosity);
    free(e);
}

fh_api_vec_env *fh_api_vec_env_create(fh_api_market *market, const fh_api_config *config,
                                      const char *split, int n_episodes, uint64_t seed,
                                      char *err, size_t err_cap)
{
    fh_api_market *m = (fh_api_market *)capi_object_of(market, CAPI_MARKET);
    if (!m)
        return capi_fail_out(err, err_cap, "vector env: market: %s", fh_api_last_error(NULL));
    const fh_api_config *c = NULL;
    if (config && !(c = (const fh_api_config *)capi_object_of(config, CAPI_CONFIG)))
        return capi_fail_out(err, err_cap, "vector env: config: %s", fh_api_last_error(NULL));
    fh_split s;
    if (!capi_split_parse(split, &s))
        return capi_fail_out(err, err_cap, "vector env: split \"%.64s\": use train, "
                             "validation, test or all", split ? split : "(NULL)");
    if (n_episodes < 1)
        return capi_fail_out(err, err_cap, "vector env: %d episodes; need at least 1",
                             n_episodes);
    fh_api_vec_env *e = calloc(1, sizeof *e);
    if (!e)
        return capi_fail_out(err, err_cap, "vector env: out of memory");
    capi_object_init(&e->obj, CAPI_VEC_ENV);
    capi_market_retain(m);
    e->market = m;
    e->cfg = c ? c->cfg.env : m->cfg.env;
    e->view = fh_market_view_of(&m->data.market, s);
    e->flags = calloc((size_t)n_episodes * 3, sizeof *e->flags);
    fh_status st = e->flags ? FH_OK
                            : fh_error_set(&e->obj.err, FH_ERR_FAILURE, "out of memory for "
                                           "%d episodes", n_episodes);
    if (st == FH_OK && e->view.n < 2)
        st = fh_error_set(&e->obj.err, FH_ERR_INPUT, "the %s split of %s holds %zu bars; an "
                          "episode needs at least 2 (choose another split, or more data)",
                          fh_split_name(s), m->data.description, e->view.n);
    if (st == FH_OK)
        st = fh_vec_env_init(&e->env, n_episodes, &e->cfg, &e->view, seed, &e->obj.err);
    e->threads = 1; /* one thread unless asked: see fh_api_vec_env_set_threads */
    fh_vec_env_set_threads(&e->env, e->threads);
    if (st != FH_OK) {
        capi_error_out(err, err_cap, &e->obj.err);
        fh_api_vec_env_free(e);
        return NULL;
    }
    return e;
}

int fh_api_vec_env_size(const fh_api_vec_env *e)
{
    const fh_api_vec_env *h = (const fh_api_vec_env *)capi_object_of(e, CAPI_VEC_ENV);
    return h ? h->env.n_episodes : -1;
}

static fh_status need(fh_api_vec_env *e, const void *p, const char *what)
{
    return p ? FH_OK : fh_error_set(&e->obj.err, FH_ERR_INPUT, "%s is NULL", what);
}

int fh_api_vec_env_seed(fh_api_vec_env *env, uint64_t seed, float *obs)
{
    CAPI_ENTER(fh_api_vec_env, e, env, CAPI_VEC_ENV);
    if (need(e, obs, "obs") != FH_OK)
        return FH_API_INPUT;
    int n = e->env.n_episodes;
    fh_vec_env_free(&e->env); /* the same inputs create accepted: init cannot refuse them */
    fh_status st = fh_vec_env_init(&e->env, n, &e->cfg, &e->view, seed, &e->obj.err);
    e->logs_taken = 0;
    fh_vec_env_set_threads(&e->env, e->threads);
    if (st == FH_OK)
        fh_vec_env_observe(&e->env, obs);
    return st;
}

int fh_api_vec_env_reset(fh_api_vec_env *env, float *obs)
{
    CAPI_ENTER(fh_api_vec_env, e, env, CAPI_VEC_ENV);
    if (need(e, obs, "obs") != FH_OK)
        return FH_API_INPUT;
    fh_vec_env_reset(&e->env, obs);
    return FH_API_OK;
}

int fh_api_vec_env_observe(fh_api_vec_env *env, float *obs)
{
    CAPI_ENTER(fh_api_vec_env, e, env, CAPI_VEC_ENV);
    if (need(e, obs, "obs") != FH_OK)
        return FH_API_INPUT;
    fh_vec_env_observe(&e->env, obs);
    return FH_API_OK;
}

int fh_api_vec_env_step(fh_api_vec_env *env, const int32_t *actions, float *obs,
                        float *rewards, uint8_t *terminations, uint8_t *truncations,
                        float *final_obs)
{
    return fh_api_vec_env_step_active(env, actions, NULL, obs, rewards, terminations,
                                      truncations, final_obs);
}

int fh_api_vec_env_step_active(fh_api_vec_env *env, const int32_t *actions,
                               const uint8_t *active, float *obs, float *rewards,
                               uint8_t *terminations, uint8_t *truncations, float *final_obs)
{
    CAPI_ENTER(fh_api_vec_env, e, env, CAPI_VEC_ENV);
    if (need(e, actions, "actions") || need(e, obs, "obs") || need(e, rewards, "rewards") ||
        need(e, terminations, "terminations") || need(e, truncations, "truncations"))
        return FH_API_INPUT;
    const int n = e->env.n_episodes;
    int *dones = e->flags, *terms = e->flags + n, *truncs = e->flags + 2 * n;
    fh_status st = fh_vec_env_step_active(&e->env, actions, active, e->curiosity, obs, rewards,
                                          dones, terms, truncs, final_obs, &e->obj.err);
    if (st != FH_OK)
        return st;
    for (int i = 0; i < n; i++) {
        terminations[i] = (uint8_t)(terms[i] != 0);
        truncations[i] = (uint8_t)(truncs[i] != 0);
    }
    return FH_API_OK;
}

int fh_api_vec_env_set_threads(fh_api_vec_env *env, int n_threads)
{
    CAPI_ENTER(fh_api_vec_env, e, env, CAPI_VEC_ENV);
    if (n_threads < 0 || n_threads > FH_API_MAX_THREADS)
        return fh_error_set(&e->obj.err, FH_ERR_INPUT, "threads = %d is outside [0, %d] (0: "
                            "every core, OpenMP's default)", n_threads, FH_API_MAX_THREADS);
    e->threads = n_threads;
    fh_vec_env_set_threads(&e->env, n_threads);
    return FH_API_OK;
}

int fh_api_vec_env_threads(const fh_api_vec_env *env)
{
    const fh_api_vec_env *e = (const fh_api_vec_env *)capi_object_of(env, CAPI_VEC_ENV);
    return e ? e->threads : -1;
}

int fh_api_vec_env_set_curiosity(fh_api_vec_env *env, const float *params, int64_t n)
{
    CAPI_ENTER(fh_api_vec_env, e, env, CAPI_VEC_ENV);
    if (!params) {
        free(e->curiosity);
        e->curiosity = NULL;
        return FH_API_OK;
    }
    if (n != FH_CURIOSITY_N_PARAMS)
        return fh_error_set(&e->obj.err, FH_ERR_INPUT, "curiosity params: %lld floats; the "
                            "model has %d (shapes.h's layout: fc1.weight, fc1.bias, "
                            "fc2.weight, fc2.bias)", (long long)n, FH_CURIOSITY_N_PARAMS);
    if (capi_params_finite(&e->obj.err, "curiosity params", FH_NET_CURIOSITY, params) != FH_OK)
        return FH_API_INPUT; /* the params set before, if any, stay */
    if (!e->curiosity && !(e->curiosity = malloc(FH_CURIOSITY_N_PARAMS * sizeof(float))))
        return fh_error_set(&e->obj.err, FH_ERR_FAILURE, "out of memory");
    memcpy(e->curiosity, params, FH_CURIOSITY_N_PARAMS * sizeof(float));
    return FH_API_OK;
}

int fh_api_vec_env_portfolio(fh_api_vec_env *env, double *equity, double *exposure,
                             int32_t *bar, int32_t *step)
{
    CAPI_ENTER(fh_api_vec_env, e, env, CAPI_VEC_ENV);
    for (int i = 0; i < e->env.n_episodes; i++) {
        const fh_episode_state *ep = &e->env.episodes[i];
        if (equity)
            equity[i] = ep->equity;
        if (exposure)
            exposure[i] = ep->exposure;
        if (bar)
            bar[i] = ep->bar;
        if (step)
            step[i] = ep->step;
    }
    return FH_API_OK;
}

int fh_api_observation_bounds(float *low, float *high)
{
    if (!low || !high)
        return FH_API_INPUT;
    for (int j = 0; j < FH_N_MARKET_FEATURES; j++) {
        low[j] = -FH_FEATURE_CLIP;
        high[j] = FH_FEATURE_CLIP;
    }
    /* env_portfolio_features_at: equity / initial - 1 (equity > 0, a float), the
     * exposure and the spread as clipped there */
    low[FH_N_MARKET_FEATURES] = -1.0f;
    high[FH_N_MARKET_FEATURES] = FLT_MAX;
    low[FH_N_MARKET_FEATURES + 1] = FH_EXPOSURE_MIN;
    high[FH_N_MARKET_FEATURES + 1] = FH_EXPOSURE_MAX;
    low[FH_N_MARKET_FEATURES + 2] = 0.0f;
    high[FH_N_MARKET_FEATURES + 2] = FH_SPREAD_FEATURE_MAX;
    return FH_API_OK;
}

size_t fh_api_episode_log_size(void)
{
    return sizeof(fh_api_episode_log);
}

int64_t fh_api_vec_env_take_logs(fh_api_vec_env *env, fh_api_episode_log *out, int64_t cap)
{
    fh_api_vec_env *e = (fh_api_vec_env *)capi_object_of(env, CAPI_VEC_ENV);
    if (!e)
        return -1;
    if (!out || cap < 0) {
        fh_error_set(&e->obj.err, FH_ERR_INPUT, "episode logs: no output array");
        return -1;
    }
    size_t n_logs;
    const fh_episode_log *logs = fh_vec_env_logs(&e->env, &n_logs);
    size_t k = n_logs - e->logs_taken;
    if ((int64_t)k > cap)
        k = (size_t)cap;
    for (size_t i = 0; i < k; i++) {
        const fh_episode_log *l = &logs[e->logs_taken + i];
        fh_api_episode_log *o = &out[i];
        o->slot = l->slot;
        o->start_bar = l->start_bar;
        o->length = l->length;
        o->terminal = l->terminal;
        o->truncated = l->truncated;
        o->reversals = l->reversals;
        for (int b = 0; b < FH_BARRIER_N_KINDS; b++)
            o->barrier_hits[b] = l->barrier_hits[b];
        o->episode_return = l->episode_return;
        o->log_growth = l->log_growth;
        o->final_equity = l->final_equity;
        o->costs = l->costs;
        o->turnover = l->turnover;
    }
    e->logs_taken += k;
    if (e->logs_taken == n_logs) { /* all handed out: the list starts over */
        fh_vec_env_clear_logs(&e->env);
        e->logs_taken = 0;
    }
    return (int64_t)k;
}
