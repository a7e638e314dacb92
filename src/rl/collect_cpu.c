/* collect_cpu.c — collect_rollouts on the CPU (include/foxhunt/rollout.h).
 *
 * The environment and the sampling are the shared device functions (the same source
 * the GPU kernels compile); the networks are OpenBLAS-batched: the actor over the N
 * episodes of each step, the critic and the curiosity model once over all N*L states
 * after the rollout (the environment never reads them). Observations are
 * env_observe_train's: with obs_noise, the stored state is the noisy one the actor saw. */
#include "foxhunt/rollout.h"

#include <stdlib.h>
#include <string.h>

#include "env/common_device_functions.cuh"
#include "env/ppo_device_functions.cuh"

fh_status fh_trajectory_batch_alloc(fh_trajectory_batch *b, int n_episodes, int n_steps,
                                    fh_error *err)
{
    memset(b, 0, sizeof *b);
    size_t nl = (size_t)n_episodes * (size_t)n_steps;
    size_t n_float = nl * (FH_STATE_DIM + 7) + (size_t)n_episodes;
    size_t n_int = nl * 4;
    b->mem = malloc(n_float * sizeof(float));
    b->imem = malloc(n_int * sizeof(int32_t));
    if (!b->mem || !b->imem) {
        fh_trajectory_batch_free(b);
        return fh_error_set(err, FH_ERR_FAILURE,
                            "cannot allocate a trajectory batch of %d x %d steps (%.1f MB)",
                            n_episodes, n_steps, (double)(n_float * 4 + n_int * 4) / 1e6);
    }
    b->n_episodes = n_episodes;
    b->n_steps = n_steps;
    float *f = b->mem;
    b->states = f; f += nl * FH_STATE_DIM;
    b->log_probs = f; f += nl;
    b->values = f; f += nl;
    b->rewards = f; f += nl;
    b->trunc_values = f; f += nl;
    b->advantages = f; f += nl;
    b->returns = f; f += nl;
    b->exposures = f; f += nl;
    b->last_values = f;
    int32_t *i = b->imem;
    b->actions = i; i += nl;
    b->dones = i; i += nl;
    b->terminals = i; i += nl;
    b->bars = i;
    return FH_OK;
}

void fh_trajectory_batch_free(fh_trajectory_batch *b)
{
    free(b->mem);
    free(b->imem);
    memset(b, 0, sizeof *b);
}

void fh_cpu_collector_free(fh_cpu_collector *c)
{
    free(c->episodes);
    fh_mlp_ws_free(&c->actor_ws);
    fh_mlp_ws_free(&c->critic_ws);
    fh_mlp_ws_free(&c->curiosity_ws);
    free(c->obs);
    free(c->logits);
    free(c->final_states);
    free(c->final_index);
    free(c->chunk);
    free(c->chunk_out);
    memset(c, 0, sizeof *c);
}

fh_status fh_cpu_collector_init(fh_cpu_collector *c, int n_episodes, int n_steps,
                                const fh_env_config *cfg, const fh_market_view *market,
                                uint64_t seed, fh_error *err)
{
    memset(c, 0, sizeof *c);
    c->n_episodes = n_episodes;
    c->n_steps = n_steps;
    c->cfg = *cfg;
    c->cfg.noise_seed = seed; /* obs_noise's key (env_observe_train) */
    c->market = fh_env_market_from_view(market);
    fh_status st = fh_env_market_validate(&c->market, err);
    if (st != FH_OK)
        return st;
    /* An episode truncates at most once per horizon (plus one partial episode) when a
     * start leaves a full horizon of data; on shorter data any step may truncate. */
    int k = c->market.n_bars - 1 - cfg->horizon >= 0 ? n_steps / cfg->horizon + 2 : n_steps;
    c->final_capacity = (int64_t)n_episodes * (k < n_steps ? k : n_steps);
    c->episodes = calloc((size_t)n_episodes, sizeof *c->episodes);
    c->obs = malloc((size_t)n_episodes * FH_STATE_DIM * sizeof(float));
    c->logits = malloc((size_t)n_episodes * FH_N_ACTIONS * sizeof(float));
    c->final_states = malloc((size_t)c->final_capacity * FH_STATE_DIM * sizeof(float));
    c->final_index = malloc((size_t)c->final_capacity * sizeof(int64_t));
    c->chunk = malloc((size_t)FH_COLLECT_CHUNK * FH_CURIOSITY_INPUT_DIM * sizeof(float));
    c->chunk_out = malloc((size_t)FH_COLLECT_CHUNK * FH_CURIOSITY_TARGET_DIM * sizeof(float));
    if (!c->episodes || !c->obs || !c->logits || !c->final_states || !c->final_index ||
        !c->chunk || !c->chunk_out) {
        fh_cpu_collector_free(c);
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory for %d x %d collector",
                            __FILE__, __LINE__, n_episodes, n_steps);
    }
    const fh_net_kind kinds[3] = {FH_NET_ACTOR, FH_NET_CRITIC, FH_NET_CURIOSITY};
    fh_mlp_ws *wss[3] = {&c->actor_ws, &c->critic_ws, &c->curiosity_ws};
    const int batch[3] = {n_episodes, FH_COLLECT_CHUNK, FH_COLLECT_CHUNK};
    for (int k = 0; k < 3; k++) {
        st = fh_mlp_ws_init_kind(wss[k], kinds[k], batch[k], err);
        if (st != FH_OK) {
            fh_cpu_collector_free(c);
            return st;
        }
    }
    for (int n = 0; n < n_episodes; n++)
        env_episode_init(&c->cfg, &c->market, &c->episodes[n], seed, (unsigned long long)n);
    return FH_OK;
}

/* values[r] = V(states[r]) for r < rows, in chunks of FH_COLLECT_CHUNK. */
static fh_status critic_values(fh_cpu_collector *c, const fh_mlp *critic, const float *states,
                               int64_t rows, float *values, fh_error *err)
{
    for (int64_t r = 0; r < rows; r += FH_COLLECT_CHUNK) {
        int B = (int)(rows - r < FH_COLLECT_CHUNK ? rows - r : FH_COLLECT_CHUNK);
        fh_status st = fh_mlp_forward(values + r, &c->critic_ws, critic,
                                      states + r * FH_STATE_DIM, B, err);
        if (st != FH_OK)
            return st;
    }
    return FH_OK;
}

/* rewards += curiosity_bonus(MSE of the forward model on (s, a, e') vs the next bar's
 * features 0..31), batched. */
static fh_status add_curiosity(fh_cpu_collector *c, const fh_mlp *curiosity,
                               fh_trajectory_batch *b, fh_error *err)
{
    int64_t rows = (int64_t)b->n_episodes * b->n_steps;
    for (int64_t r0 = 0; r0 < rows; r0 += FH_COLLECT_CHUNK) {
        int B = (int)(rows - r0 < FH_COLLECT_CHUNK ? rows - r0 : FH_COLLECT_CHUNK);
        for (int i = 0; i < B; i++) {
            int64_t r = r0 + i;
            float *in = c->chunk + (size_t)i * FH_CURIOSITY_INPUT_DIM;
            memcpy(in, b->states + r * FH_STATE_DIM, FH_CURIOSITY_TARGET_DIM * sizeof(float));
            in[FH_CURIOSITY_TARGET_DIM] = action_to_exposure(b->actions[r]);
            in[FH_CURIOSITY_TARGET_DIM + 1] = action_to_urgency(b->actions[r]);
            in[FH_CURIOSITY_TARGET_DIM + 2] = b->exposures[r];
        }
        fh_status st = fh_mlp_forward(c->chunk_out, &c->curiosity_ws, curiosity, c->chunk, B, err);
        if (st != FH_OK)
            return st;
        #pragma omp parallel for schedule(static)
        for (int i = 0; i < B; i++) {
            int64_t r = r0 + i;
            const float *pred = c->chunk_out + (size_t)i * FH_CURIOSITY_TARGET_DIM;
            const float *next = c->market.features + (int64_t)(b->bars[r] + 1) * FH_N_MARKET_FEATURES;
            float sum = 0.0f;
            for (int j = 0; j < FH_CURIOSITY_TARGET_DIM; j++) {
                float d = pred[j] - next[j];
                sum += d * d;
            }
            b->rewards[r] += curiosity_bonus(&c->cfg, sum / (float)FH_CURIOSITY_TARGET_DIM);
        }
    }
    return FH_OK;
}

void fh_batch_compute_gae(fh_trajectory_batch *b, float gamma, float gae_lambda)
{
    int L = b->n_steps;
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < b->n_episodes; n++) {
        int64_t row = (int64_t)n * L;
        compute_gae_backward(b->advantages + row, b->returns + row, b->rewards + row,
                             b->values + row, b->dones + row, b->terminals + row,
                             b->trunc_values + row, b->last_values[n], L, gamma, gae_lambda);
    }
}

fh_status fh_cpu_collect_rollouts(fh_cpu_collector *c, const fh_collect_params *p,
                                  fh_trajectory_batch *b, fh_error *err)
{
    const int N = c->n_episodes, L = c->n_steps;
    if (b->n_episodes != N || b->n_steps != L)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: batch is %dx%d, collector %dx%d",
                            __FILE__, __LINE__, b->n_episodes, b->n_steps, N, L);
    int64_t n_final = 0;
    /* Phase A: the rollout. Only the actor, the sampling and the env are sequential. */
    for (int t = 0; t < L; t++) {
        #pragma omp parallel for schedule(static)
        for (int n = 0; n < N; n++) {
            float *s = c->obs + (size_t)n * FH_STATE_DIM;
            env_observe_train(&c->cfg, &c->market, &c->episodes[n], s);
            memcpy(b->states + ((int64_t)n * L + t) * FH_STATE_DIM, s, FH_STATE_DIM * sizeof(float));
        }
        fh_status st = fh_mlp_forward(c->logits, &c->actor_ws, p->actor, c->obs, N, err);
        if (st != FH_OK)
            return st;
        #pragma omp parallel for schedule(static)
        for (int n = 0; n < N; n++) {
            fh_episode_state *ep = &c->episodes[n];
            int64_t i = (int64_t)n * L + t;
            int action;
            float log_prob;
            softmax_sample(&action, &log_prob, c->logits + (size_t)n * FH_N_ACTIONS,
                           FH_N_ACTIONS, gpu_random(&ep->rng));
            int bar = ep->bar;
            fh_step_result res;
            env_step(&c->cfg, &c->market, ep, action, &res);
            b->actions[i] = action;
            b->log_probs[i] = log_prob;
            b->rewards[i] = res.reward;
            b->dones[i] = res.done;
            b->terminals[i] = res.terminal;
            b->trunc_values[i] = 0.0f;
            b->exposures[i] = res.exposure;
            b->bars[i] = bar;
            if (res.done) {
                /* the final observation goes to obs (reused: the actor is done with it) */
                if (res.truncated)
                    env_observe_train(&c->cfg, &c->market, ep, c->obs + (size_t)n * FH_STATE_DIM);
                ep->episodes_done++;
                env_episode_reset(&c->cfg, &c->market, ep);
            }
        }
        /* gather truncations in episode order: deterministic for any thread count */
        for (int n = 0; n < N; n++) {
            int64_t i = (int64_t)n * L + t;
            if (b->dones[i] && !b->terminals[i]) {
                if (n_final == c->final_capacity)
                    return fh_error_set(err, FH_ERR_FAILURE,
                                        "%s:%d: more truncations than the %lld final-observation "
                                        "slots", __FILE__, __LINE__, (long long)c->final_capacity);
                memcpy(c->final_states + n_final * FH_STATE_DIM, c->obs + (size_t)n * FH_STATE_DIM,
                       FH_STATE_DIM * sizeof(float));
                c->final_index[n_final++] = i;
            }
        }
    }
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++)
        env_observe_train(&c->cfg, &c->market, &c->episodes[n], c->obs + (size_t)n * FH_STATE_DIM);

    /* Batched networks over the whole collection. */
    fh_status st = critic_values(c, p->critic, b->states, (int64_t)N * L, b->values, err);
    if (st == FH_OK)
        st = critic_values(c, p->critic, c->obs, N, b->last_values, err);
    if (st == FH_OK && n_final > 0) {
        /* values of final observations land in chunk_out's space via a temporary */
        float *tv = malloc((size_t)n_final * sizeof(float));
        if (!tv)
            return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
        st = critic_values(c, p->critic, c->final_states, n_final, tv, err);
        for (int64_t k = 0; st == FH_OK && k < n_final; k++)
            b->trunc_values[c->final_index[k]] = tv[k];
        free(tv);
    }
    if (st == FH_OK)
        st = add_curiosity(c, p->curiosity, b, err);
    if (st != FH_OK)
        return st;
    /* Phase B: GAE */
    fh_batch_compute_gae(b, p->gamma, p->gae_lambda);
    return FH_OK;
}
