/* vec_env.c — N episodes stepped on the CPU with the shared environment code (env.h).
 *
 * Each OpenMP iteration owns one episode (its state and random stream), and finished
 * episodes' logs are appended serially in slot order after the parallel loop, so the
 * results are bit-identical for any number of threads. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "env/common_device_functions.cuh"
#include "foxhunt/env.h"

fh_env_market fh_env_market_from_view(const fh_market_view *view)
{
    fh_env_market m;
    m.features = view->features;
    m.close = view->close;
    m.sigma = view->sigma;
    m.n_bars = view->n > (size_t)0x7fffffff ? 0x7fffffff : (int)view->n;
    m.n_segments = view->n_segments;
    m.segment_ends = view->segment_ends;
    return m;
}

fh_status fh_env_market_validate(const fh_env_market *m, fh_error *err)
{
    if (!m->features || !m->close || !m->sigma)
        return fh_error_set(err, FH_ERR_INPUT, "environment market: missing array");
    if (m->n_bars < 2)
        return fh_error_set(err, FH_ERR_INPUT,
                            "environment market: %d bars; an episode needs at least 2",
                            m->n_bars);
    for (int k = 0; m->n_segments > 1 && k < m->n_segments; k++) {
        int begin = k ? m->segment_ends[k - 1] : 0;
        if (!m->segment_ends || m->segment_ends[k] - begin < 2)
            return fh_error_set(err, FH_ERR_INPUT,
                                "environment market: segment %d has %d bars; each needs at "
                                "least 2", k, m->segment_ends ? m->segment_ends[k] - begin : 0);
    }
    if (m->n_segments > 1 && m->segment_ends[m->n_segments - 1] != m->n_bars)
        return fh_error_set(err, FH_ERR_INPUT,
                            "environment market: the last segment ends at %d, not at the "
                            "market's %d bars", m->segment_ends[m->n_segments - 1], m->n_bars);
    for (int i = 0; i < m->n_bars; i++) {
        if (!isfinite(m->close[i]) || m->close[i] <= 0.0f)
            return fh_error_set(err, FH_ERR_INPUT,
                                "environment market: close[%d] = %g is not a positive price",
                                i, (double)m->close[i]);
        if (!isfinite(m->sigma[i]) || m->sigma[i] < 0.0f)
            return fh_error_set(err, FH_ERR_INPUT,
                                "environment market: sigma[%d] = %g is not a volatility", i,
                                (double)m->sigma[i]);
        const float *f = m->features + (size_t)i * FH_N_MARKET_FEATURES;
        for (int j = 0; j < FH_N_MARKET_FEATURES; j++)
            if (!isfinite(f[j]))
                return fh_error_set(err, FH_ERR_INPUT,
                                    "environment market: feature[%d][%d] is not finite", i, j);
    }
    return FH_OK;
}

fh_status fh_vec_env_init_market(fh_vec_env *env, int n_episodes, const fh_env_config *cfg,
                                 const fh_env_market *market, uint64_t seed, fh_error *err)
{
    memset(env, 0, sizeof *env);
    if (n_episodes < 1)
        return fh_error_set(err, FH_ERR_INPUT, "environment: %d episodes; need at least 1",
                            n_episodes);
    fh_status st = fh_env_config_validate(cfg, err);
    if (st != FH_OK)
        return st;
    st = fh_env_market_validate(market, err);
    if (st != FH_OK)
        return st;
    env->episodes = calloc((size_t)n_episodes, sizeof *env->episodes);
    env->pending = calloc((size_t)n_episodes, sizeof *env->pending);
    if (!env->episodes || !env->pending) {
        fh_vec_env_free(env);
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory for %d episodes",
                            __FILE__, __LINE__, n_episodes);
    }
    env->n_episodes = n_episodes;
    env->cfg = *cfg;
    env->market = *market;
    for (int i = 0; i < n_episodes; i++)
        env_episode_init(&env->cfg, &env->market, &env->episodes[i], seed,
                         (unsigned long long)i);
    return FH_OK;
}

fh_status fh_vec_env_init(fh_vec_env *env, int n_episodes, const fh_env_config *cfg,
                          const fh_market_view *market, uint64_t seed, fh_error *err)
{
    fh_env_market m = fh_env_market_from_view(market);
    if (market->n > (size_t)0x7fffffff) {
        memset(env, 0, sizeof *env);
        return fh_error_set(err, FH_ERR_INPUT, "environment market: %zu bars is too many",
                            market->n);
    }
    return fh_vec_env_init_market(env, n_episodes, cfg, &m, seed, err);
}

void fh_vec_env_free(fh_vec_env *env)
{
    free(env->episodes);
    free(env->pending);
    free(env->logs);
    memset(env, 0, sizeof *env);
}

void fh_vec_env_observe(const fh_vec_env *env, float *states)
{
    for (int i = 0; i < env->n_episodes; i++)
        env_observe(&env->cfg, &env->market, &env->episodes[i],
                    states + (size_t)i * FH_STATE_DIM);
}

void fh_vec_env_reset(fh_vec_env *env, float *states)
{
    for (int i = 0; i < env->n_episodes; i++)
        env_episode_reset(&env->cfg, &env->market, &env->episodes[i]);
    fh_vec_env_observe(env, states);
}

static void episode_log_fill(fh_episode_log *out, int slot, const fh_episode_state *ep,
                             const fh_step_result *r)
{
    memset(out, 0, sizeof *out);
    out->slot = slot;
    out->start_bar = ep->start_bar;
    out->length = ep->step;
    out->terminal = r->terminal;
    out->truncated = r->truncated;
    out->reversals = ep->log_reversals;
    for (int k = 0; k < FH_BARRIER_N_KINDS; k++)
        out->barrier_hits[k] = ep->log_barrier_hits[k];
    out->episode_return = ep->log_reward;
    out->final_equity = ep->equity;
    out->log_growth = ep->equity > 0.0 ? log(ep->equity / ep->initial_equity) : -INFINITY;
    out->costs = ep->log_cost;
    out->turnover = ep->log_turnover;
}

static fh_status logs_reserve(fh_vec_env *env, size_t extra, fh_error *err)
{
    if (env->n_logs + extra <= env->cap_logs)
        return FH_OK;
    size_t cap = env->cap_logs ? env->cap_logs : 256;
    while (cap < env->n_logs + extra)
        cap *= 2;
    fh_episode_log *grown = realloc(env->logs, cap * sizeof *grown);
    if (!grown)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory for %zu episode logs",
                            __FILE__, __LINE__, cap);
    env->logs = grown;
    env->cap_logs = cap;
    return FH_OK;
}

void fh_vec_env_set_threads(fh_vec_env *env, int n_threads)
{
    env->n_threads = n_threads > 0 ? n_threads : 0;
}

/* The team of one step: the env's thread count, else OpenMP's default. */
static int step_team(const fh_vec_env *env)
{
#ifdef _OPENMP
    return env->n_threads > 0 ? env->n_threads : omp_get_max_threads();
#else
    (void)env;
    return 1;
#endif
}

fh_status fh_vec_env_step(fh_vec_env *env, const int *actions, const float *curiosity_weights,
                          float *states_out, float *rewards, int *dones, int *terminals,
                          int *truncations, float *final_states, fh_error *err)
{
    return fh_vec_env_step_active(env, actions, NULL, curiosity_weights, states_out, rewards,
                                  dones, terminals, truncations, final_states, err);
}

fh_status fh_vec_env_step_active(fh_vec_env *env, const int *actions, const uint8_t *active,
                                 const float *curiosity_weights, float *states_out,
                                 float *rewards, int *dones, int *terminals, int *truncations,
                                 float *final_states, fh_error *err)
{
    const int n = env->n_episodes;
    for (int i = 0; i < n; i++)
        if ((!active || active[i]) && (actions[i] < 0 || actions[i] >= FH_N_ACTIONS))
            return fh_error_set(err, FH_ERR_INPUT,
                                "environment step: action[%d] = %d is outside [0, %d)", i,
                                actions[i], FH_N_ACTIONS);
    /* at most n episodes finish per call: reserve before the parallel loop */
    fh_status st = logs_reserve(env, (size_t)n, err);
    if (st != FH_OK)
        return st;

    const fh_env_config *cfg = &env->cfg;
    const fh_env_market *m = &env->market;
    /* the env's own thread count, not the process's: a Python caller on a busy machine
     * would otherwise get a team of every core spinning for microseconds of work
     * (issue 36: 60 step calls/s against 29,000 with one thread) */
    int team = step_team(env);
    (void)team; /* read by the pragma alone: unused without OpenMP */
#pragma omp parallel for schedule(static) num_threads(team) if (team > 1)
    for (int i = 0; i < n; i++) {
        fh_episode_state *ep = &env->episodes[i];
        float *state = states_out + (size_t)i * FH_STATE_DIM;
        if (active && !active[i]) { /* held: observed, not stepped; its stream untouched */
            env_observe(cfg, m, ep, state);
            if (final_states)
                memcpy(final_states + (size_t)i * FH_STATE_DIM, state,
                       sizeof(float) * FH_STATE_DIM);
            rewards[i] = 0.0f;
            dones[i] = terminals[i] = truncations[i] = 0;
            continue;
        }
        float before[FH_STATE_DIM];
        if (curiosity_weights)
            env_observe(cfg, m, ep, before);
        fh_step_result r;
        env_step(cfg, m, ep, actions[i], &r);
        if (curiosity_weights) {
            const float *next = m->features + (size_t)ep->bar * FH_N_MARKET_FEATURES;
            float mse = curiosity_inference(curiosity_weights, before, actions[i], r.exposure,
                                            next);
            env_add_bonus(ep, &r, curiosity_bonus(cfg, mse));
        }
        env_observe(cfg, m, ep, state);
        if (final_states)
            memcpy(final_states + (size_t)i * FH_STATE_DIM, state, sizeof(float) * FH_STATE_DIM);
        if (r.done) {
            episode_log_fill(&env->pending[i], i, ep, &r);
            ep->episodes_done++;
            env_episode_reset(cfg, m, ep);
            env_observe(cfg, m, ep, state);
        }
        rewards[i] = r.reward;
        dones[i] = r.done;
        terminals[i] = r.terminal;
        truncations[i] = r.truncated;
    }
    for (int i = 0; i < n; i++) {
        if (dones[i])
            env->logs[env->n_logs++] = env->pending[i];
        env->total_steps += !active || active[i];
    }
    return FH_OK;
}

const fh_episode_log *fh_vec_env_logs(const fh_vec_env *env, size_t *n)
{
    *n = env->n_logs;
    return env->logs;
}

void fh_vec_env_clear_logs(fh_vec_env *env)
{
    env->n_logs = 0;
}

void fh_vec_env_summary(const fh_vec_env *env, fh_episode_summary *s)
{
    memset(s, 0, sizeof *s);
    for (size_t i = 0; i < env->n_logs; i++) {
        const fh_episode_log *l = &env->logs[i];
        s->n_episodes++;
        s->n_terminal += l->terminal;
        s->n_truncated += l->truncated;
        s->mean_return += l->episode_return;
        s->mean_length += l->length;
        s->mean_log_growth += l->log_growth;
        s->mean_costs += l->costs;
        s->mean_reversals += l->reversals;
        for (int k = 0; k < FH_BARRIER_N_KINDS; k++)
            s->barrier_hits[k] += l->barrier_hits[k];
    }
    if (s->n_episodes > 0) {
        double inv = 1.0 / (double)s->n_episodes;
        s->mean_return *= inv;
        s->mean_length *= inv;
        s->mean_log_growth *= inv;
        s->mean_costs *= inv;
        s->mean_reversals *= inv;
    }
}
