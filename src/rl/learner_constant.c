/* learner_constant.c — the smallest learner (learner.h; issue 33): it learns which one
 * action to take at every bar, by the cross-entropy method over the 45 actions.
 *
 * Each iteration gives each of the N episodes one action drawn from the current
 * distribution p and holds it for L steps of the environment (the same env_step, costs
 * and barriers as every learner). Each action drawn is judged by the mean total reward
 * of the episodes that held it (not episode by episode: the best single episodes are
 * the luckiest of the most volatile actions, full long or short, while the mean says
 * which action pays); the best ELITE_FRACTION of the actions drawn pull p towards them
 * (p = (1 - SMOOTHING) p + SMOOTHING uniform over the elite, floored at P_FLOOR so no
 * action dies out). The policy is an actor network whose
 * weights are zero and whose last bias is log p: argmax is the likeliest action, so
 * validation, eval, walk-forward and the tear sheet treat it as any actor. It is also a
 * sanity baseline: the best fixed exposure on the training split, after costs.
 *
 * It exists to show what a learner costs: this file, one line in learners.c and one in
 * CMakeLists.txt. Resume takes the policy and the iteration from the checkpoint; the
 * episodes start afresh (it keeps no other state worth saving). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "env/common_device_functions.cuh"
#include "foxhunt/checkpoint.h"
#include "foxhunt/env.h"
#include "foxhunt/timing.h"
#include "rl/learners.h"

#define ELITE_FRACTION 0.2
#define SMOOTHING 0.5
#define P_FLOOR 1e-3
#define STREAM_ACTIONS (1ULL << 61) /* the action draws' stream, above any episode's */

/* An action's mean total reward this iteration, sorted elite first. */
typedef struct {
    double ret;
    int action;
} ranked_action;

typedef struct {
    fh_run_data data;
    fh_market_view view;
    fh_vec_env env;
    fh_mlp actor;        /* zero weights; the last bias is log p */
    fh_rng rng;
    fh_device_info device;
    fh_data_identity identity;
    char *config_json;
    int *actions;        /* (N) */
    double *returns;     /* (N) */

    float *states, *rewards;
    int *dones, *terminals, *truncations;
} constant_state;

static const fh_metric_column COLUMNS[] = {
    {"best_action", "action", "%.0f"},
    {"best_probability", "p", "%.2f"},
    {"elite_return", "elite return", "%.4g"},
};
enum { N_COLUMNS = sizeof COLUMNS / sizeof COLUMNS[0] };

static constant_state *cs(const fh_learner *l) { return l->state; }
static float *log_p(constant_state *s) { return s->actor.params + FH_ACTOR_OFF_B2; }

static fh_status create(fh_learner *l, fh_error *err)
{
    constant_state *s = calloc(1, sizeof *s);
    if (!s)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
    l->state = s;
    l->data = &s->data;
    l->data_identity = &s->identity;
    l->device = &s->device;
    const fh_train_config *cfg = &l->cfg;
    const int N = cfg->episodes;
    fh_checkpoint ck;
    memset(&ck, 0, sizeof ck);
    fh_feature_norm norm;
    int64_t iteration = 0;
    fh_status st = fh_mlp_init(&s->actor, FH_NET_ACTOR, err);
    if (st == FH_OK && cfg->resume[0]) { /* the policy, the iteration and the norm */
        ck.nets[FH_NET_ACTOR] = &s->actor;
        ck.norm = &norm;
        ck.iteration = &iteration;
        st = fh_checkpoint_load(cfg->resume, &ck, NULL, err);
        if (st == FH_OK && (iteration < 0 || iteration > cfg->iterations))
            st = fh_error_set(err, FH_ERR_INPUT, "%s: run.iteration = %lld is outside [0, %d]",
                              cfg->resume, (long long)iteration, cfg->iterations);
    } else if (st == FH_OK) { /* p uniform */
        memset(s->actor.params, 0, s->actor.n_params * sizeof(float));
        for (int a = 0; a < FH_N_ACTIONS; a++)
            log_p(s)[a] = (float)log(1.0 / FH_N_ACTIONS);
    }
    if (st == FH_OK)
        st = fh_run_data_load(&s->data, cfg, cfg->resume[0] ? &norm : NULL, err);
    if (st != FH_OK)
        return st;
    char source[FH_CONFIG_STRING_MAX + 64];
    fh_run_data_source(cfg, source, sizeof source);
    fh_run_data_identity(&s->data, source, &s->identity);
    fh_env_market unused;
    if ((st = fh_run_data_train_split(&s->data, &s->view, &unused, err)) != FH_OK)
        return st;
    rng_seed(&s->rng, cfg->seed, STREAM_ACTIONS);
    s->device.use_gpu = 0;
    snprintf(s->device.name, sizeof s->device.name, "cpu");
    s->config_json = fh_train_config_to_json(cfg);
    s->actions = calloc((size_t)N, sizeof *s->actions);
    s->returns = calloc((size_t)N, sizeof *s->returns);
    s->states = calloc((size_t)N * FH_STATE_DIM, sizeof *s->states);
    s->rewards = calloc((size_t)N, sizeof *s->rewards);
    s->dones = calloc((size_t)N, sizeof *s->dones);
    s->terminals = calloc((size_t)N, sizeof *s->terminals);
    s->truncations = calloc((size_t)N, sizeof *s->truncations);
    if (!s->config_json || !s->actions || !s->returns || !s->states ||
        !s->rewards || !s->dones || !s->terminals || !s->truncations)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
    if ((st = fh_vec_env_init(&s->env, N, &cfg->env, &s->view, cfg->seed, err)) != FH_OK)
        return st;
    fh_vec_env_observe(&s->env, s->states);
    l->config_json = s->config_json;
    l->iteration = iteration;
    l->run_steps = (int64_t)N * cfg->steps;
    if (cfg->resume[0])
        snprintf(l->note, sizeof l->note, "the constant learner resumes its policy; its "
                 "episodes start afresh");
    return FH_OK;
}

/* Elite first: mean returns descending, then the lower action (a total order). */
static int by_return(const void *a, const void *b)
{
    const ranked_action *x = a, *y = b;
    if (x->ret != y->ret)
        return x->ret > y->ret ? -1 : 1;
    return (x->action > y->action) - (x->action < y->action);
}

static fh_status iterate(fh_learner *l, int64_t it, fh_iteration_metrics *m, fh_error *err)
{
    constant_state *s = cs(l);
    const int N = l->cfg.episodes, L = l->cfg.steps;
    double p[FH_N_ACTIONS];
    for (int a = 0; a < FH_N_ACTIONS; a++)
        p[a] = exp((double)log_p(s)[a]);
    for (int n = 0; n < N; n++) { /* one action per episode, drawn from p */
        double u = gpu_random(&s->rng), c = 0;
        int a = 0;
        while (a < FH_N_ACTIONS - 1 && (c += p[a]) <= u)
            a++;
        s->actions[n] = a;
        s->returns[n] = 0;
    }
    fh_vec_env_clear_logs(&s->env);
    double reward = 0;
    for (int step = 0; step < L; step++) {
        fh_status st = fh_vec_env_step(&s->env, s->actions, NULL, s->states, s->rewards,
                                       s->dones, s->terminals, s->truncations, NULL, err);
        if (st != FH_OK)
            return st;
        for (int n = 0; n < N; n++) {
            s->returns[n] += s->rewards[n];
            reward += s->rewards[n];
        }
    }
    m->collect_seconds = -1; /* collection and update are one */
    if (!isfinite(reward))
        return fh_error_set(err, FH_ERR_FAILURE, "the episodes' rewards sum to %g (a reward is "
                            "not finite)", reward);
    double action_sum[FH_N_ACTIONS] = {0};
    int count[FH_N_ACTIONS] = {0}, drawn = 0;
    for (int n = 0; n < N; n++) {
        action_sum[s->actions[n]] += s->returns[n];
        count[s->actions[n]]++;
    }
    ranked_action ranked[FH_N_ACTIONS];
    for (int a = 0; a < FH_N_ACTIONS; a++)
        if (count[a])
            ranked[drawn++] = (ranked_action){action_sum[a] / count[a], a};
    qsort(ranked, (size_t)drawn, sizeof ranked[0], by_return);
    int elite = (int)ceil(ELITE_FRACTION * drawn);
    double freq[FH_N_ACTIONS] = {0}, elite_return = 0;
    for (int k = 0; k < elite; k++) {
        freq[ranked[k].action] = 1.0 / elite;
        elite_return += ranked[k].ret / elite;
    }
    double total = 0;
    for (int a = 0; a < FH_N_ACTIONS; a++) {
        p[a] = fmax((1 - SMOOTHING) * p[a] + SMOOTHING * freq[a], P_FLOOR);
        total += p[a];
    }
    int best = 0;
    for (int a = 0; a < FH_N_ACTIONS; a++) {
        log_p(s)[a] = (float)log(p[a] / total);
        if (p[a] > p[best])
            best = a;
    }
    fh_episode_summary sum;
    fh_vec_env_summary(&s->env, &sum);
    m->mean_reward = reward / ((double)N * L);
    m->episodes_finished = sum.n_episodes;
    m->mean_episode_return = sum.n_episodes ? sum.mean_return : NAN;
    m->mean_episode_length = sum.n_episodes ? sum.mean_length : NAN;
    m->own[0] = best;
    m->own[1] = p[best] / total;
    m->own[2] = elite_return;
    l->iteration = it;
    return FH_OK;
}

static fh_status sync(fh_learner *l, fh_error *err)
{
    (void)l;
    (void)err;
    return FH_OK; /* everything lives on the host */
}

static fh_status save(fh_learner *l, const char *path, const fh_save_meta *meta,
                      fh_error *err)
{
    constant_state *s = cs(l);
    uint64_t seed = l->cfg.seed;
    int64_t iteration = l->iteration;
    fh_checkpoint ck;
    memset(&ck, 0, sizeof ck);
    ck.nets[FH_NET_ACTOR] = &s->actor;
    ck.norm = &s->data.market.norm;
    ck.seed = &seed;
    ck.iteration = &iteration;
    ck.data = &s->identity;
    if (meta) {
        ck.meta_keys = meta->keys;
        ck.meta_values = meta->values;
        ck.n_meta = meta->n;
    }
    return fh_checkpoint_save(path, &ck, s->config_json, err);
}

static const fh_mlp *policy(const fh_learner *l) { return &cs(l)->actor; }

static void describe(const fh_learner *l, char *out, size_t n)
{
    (void)l;
    snprintf(out, n, "cross-entropy method over constant actions, on the CPU");
}

static void destroy(fh_learner *l)
{
    constant_state *s = cs(l);
    if (!s)
        return;
    fh_vec_env_free(&s->env);
    fh_mlp_free(&s->actor);
    fh_run_data_free(&s->data);
    free(s->config_json);
    free(s->actions);
    free(s->returns);
    free(s->states);
    free(s->rewards);
    free(s->dones);
    free(s->terminals);
    free(s->truncations);
    free(s);
    l->state = NULL;
}

const fh_learner_ops fh_learner_constant = {
    .name = "constant",
    .columns = COLUMNS,
    .n_columns = N_COLUMNS,
    .create = create,
    .iterate = iterate,
    .sync = sync,
    .save = save,
    .policy = policy,
    .policy_net = FH_NET_ACTOR,
    .describe = describe,
    .destroy = destroy,
};
