/* q_trainer.c — `foxhunt train --algo dqn|pqn` (include/foxhunt/q_trainer.h). */
#include "foxhunt/q_trainer.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "env/common_device_functions.cuh"
#include "foxhunt/timing.h"
#include "rl/q_trainer_resume.h"
#include "rl/q_backend.h"

#define INIT_SEED_Q 0xD6E8FEB86659FD93ULL
#define INIT_SEED_CURIOSITY 0x94D049BB133111EBULL /* PPO's: the same curiosity start */
#define STREAM_Q_UPDATE 0x51ULL

int fh_q_net_of_algo(const char *algo)
{
    if (strcmp(algo, "dqn") == 0)
        return FH_NET_QNET;
    if (strcmp(algo, "pqn") == 0)
        return FH_NET_PQN;
    return -1;
}

void fh_q_trainer_free(fh_q_trainer *t)
{
    fh_q_backend_destroy(t);
    fh_mlp_free(&t->q);
    fh_mlp_free(&t->target);
    fh_mlp_free(&t->curiosity);
    fh_transition_batch_free(&t->batch);
    fh_q_workspace_free(&t->ws);
    fh_ppo_workspace_free(&t->curiosity_ws);
    fh_replay_free(&t->ring);
    fh_replay_minibatch_free(&t->mb);
    fh_run_data_free(&t->data);
    free(t->episodes);
    free(t->episode_return);
    free(t->episode_length);
    free(t->config_json);
    memset(t, 0, sizeof *t);
}

fh_status fh_q_trainer_init(fh_q_trainer *t, const fh_train_config *cfg, fh_error *err)
{
    memset(t, 0, sizeof *t);
    t->cfg = *cfg;
    fh_status st = fh_train_config_validate(cfg, err);
    if (st != FH_OK)
        return st;
    int net = fh_q_net_of_algo(cfg->algo);
    if (net < 0)
        return fh_error_set(err, FH_ERR_INPUT, "algo %s is not a Q-learning algorithm",
                            cfg->algo);
    /* a resume: the checkpoint's algorithm, normalisation and ring shape, before the
     * data and buffers are built from them (q_trainer_resume.c) */
    fh_q_resume_plan plan;
    if (cfg->resume[0] && (st = fh_q_resume_prepare(cfg, &plan, err)) != FH_OK)
        return st;
    t->ring_save_max = FH_Q_RING_SAVE_MAX_BYTES;
    t->net = (fh_net_kind)net;
    t->pqn = t->net == FH_NET_PQN;
    if (cfg->threads > 0) {
        fh_nn_set_threads(cfg->threads);
        omp_set_num_threads(cfg->threads);
    }
    if ((st = fh_run_data_load(&t->data, cfg, cfg->resume[0] ? &plan.norm : NULL, err)) != FH_OK)
        return st;
    if ((st = fh_run_data_train_split(&t->data, &t->train_view, &t->train_market, err)) != FH_OK)
        return st;
    char source[FH_CONFIG_STRING_MAX + 64];
    fh_run_data_source(cfg, source, sizeof source);
    fh_run_data_identity(&t->data, source, &t->data_identity);

    const int N = cfg->episodes, L = cfg->steps;
    if ((st = fh_mlp_init(&t->q, t->net, err)) != FH_OK ||
        (st = fh_mlp_init(&t->curiosity, FH_NET_CURIOSITY, err)) != FH_OK)
        return st;
    fh_mlp_init_orthogonal(&t->q, cfg->seed ^ INIT_SEED_Q);
    fh_mlp_init_orthogonal(&t->curiosity, cfg->seed ^ INIT_SEED_CURIOSITY);
    if (!t->pqn) {
        if ((st = fh_mlp_init(&t->target, t->net, err)) != FH_OK ||
            (st = fh_replay_init(&t->ring, cfg->replay_capacity, err)) != FH_OK ||
            (st = fh_replay_minibatch_alloc(&t->mb, cfg->minibatch, err)) != FH_OK)
            return st;
        fh_q_target_update(&t->target, &t->q, 1.0f);
    }
    rng_seed(&t->update_rng, cfg->seed, STREAM_Q_UPDATE);
    t->episodes = calloc((size_t)N, sizeof *t->episodes);
    t->episode_return = calloc((size_t)N, sizeof(double));
    t->episode_length = calloc((size_t)N, sizeof(int32_t));
    t->config_json = fh_train_config_to_json(cfg);
    if (!t->episodes || !t->episode_return || !t->episode_length || !t->config_json)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
    if ((st = fh_transition_batch_alloc(&t->batch, N, L, err)) != FH_OK ||
        (st = fh_q_workspace_init(&t->ws, t->net, cfg->minibatch, t->pqn ? (int64_t)N * L : 0,
                                  err)) != FH_OK ||
        (st = fh_ppo_workspace_init(&t->curiosity_ws, cfg->minibatch, (int64_t)N * L, err)) != FH_OK)
        return st;
    if ((st = fh_device_select(cfg->device, &t->device, err)) != FH_OK)
        return st;
    for (int n = 0; n < N; n++)
        env_episode_init(&cfg->env, &t->train_market, &t->episodes[n], cfg->seed,
                         (unsigned long long)n);
    if (t->device.use_gpu)
        st = fh_q_backend_create_collector(t, err);
    if (st == FH_OK && cfg->resume[0])
        st = fh_q_resume_load(t, &plan, err);
    if (st == FH_OK && t->gpu) /* the update on the device, from the host's weights */
        st = fh_q_backend_create_update(t, err);
    return st;
}

fh_status fh_q_trainer_sync(fh_q_trainer *t, fh_error *err)
{
    return fh_q_backend_sync_host(t, err);
}

fh_status fh_q_trainer_save(const fh_q_trainer *t_const, const char *path,
                            const char *const *meta_keys, const char *const *meta_values,
                            int n_meta, fh_error *err)
{
    fh_q_trainer *t = (fh_q_trainer *)t_const; /* the checkpoint API takes mutable views */
    const int N = t->cfg.episodes;
    fh_status st;
    uint64_t *rng = malloc((size_t)N * 2 * sizeof(uint64_t));
    if (!rng)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
    for (int n = 0; n < N; n++) {
        rng[2 * n] = t->episodes[n].rng.state;
        rng[2 * n + 1] = t->episodes[n].rng.inc;
    }
    uint64_t seed = t->cfg.seed;
    int64_t iteration = t->iteration;
    fh_checkpoint ck;
    memset(&ck, 0, sizeof ck);
    ck.nets[t->net] = &t->q;
    ck.nets[FH_NET_CURIOSITY] = &t->curiosity;
    ck.norm = &t->data.market.norm;
    ck.seed = &seed;
    ck.iteration = &iteration;
    ck.rng_state = rng;
    ck.rng_rows = (size_t)N;
    ck.rng_cols = 2;
    ck.data = &t->data_identity;
    fh_checkpoint_extra e[12];
    int n_extras = 0;
    int64_t grad_steps = t->grad_steps;
    e[n_extras++] = (fh_checkpoint_extra){"env.episodes", FH_DTYPE_U8, 2,
                                          {N, (int64_t)sizeof(fh_episode_state)}, t->episodes, 0, 0};
    e[n_extras++] = (fh_checkpoint_extra){"q.update_rng", FH_DTYPE_U64, 1, {2}, &t->update_rng, 0, 0};
    e[n_extras++] = (fh_checkpoint_extra){"trainer.episode_return", FH_DTYPE_F64, 1, {N},
                                          t->episode_return, 0, 0};
    e[n_extras++] = (fh_checkpoint_extra){"trainer.episode_length", FH_DTYPE_I32, 1, {N},
                                          t->episode_length, 0, 0};
    e[n_extras++] = (fh_checkpoint_extra){"q.grad_steps", FH_DTYPE_I64, 1, {1}, &grad_steps, 0, 0};
    /* DQN: the target network and the ring's filled slots [0, size) (in slot order, so
     * head and the oldest transition stay where they were), unless they exceed
     * ring_save_max: then q.replay.state says "not saved" and a resume starts empty */
    const fh_replay *r = &t->ring;
    const int64_t S = r->size;
    const int ring_saved = S * Q_RING_BYTES_PER_TRANSITION <= t->ring_save_max;
    int64_t ring_state[Q_RING_STATE_LEN] = {r->capacity, r->size, r->head, r->n_pushed, ring_saved};
    if (!t->pqn) {
        e[n_extras++] = (fh_checkpoint_extra){"q.target", FH_DTYPE_F32, 1,
                                              {(int64_t)t->target.n_params}, t->target.params, 0, 0};
        e[n_extras++] = (fh_checkpoint_extra){"q.replay.state", FH_DTYPE_I64, 1,
                                              {Q_RING_STATE_LEN}, ring_state, 0, 0};
    }
    if (!t->pqn && ring_saved && S > 0) {
        e[n_extras++] = (fh_checkpoint_extra){"q.replay.states", FH_DTYPE_F32, 2,
                                              {S, FH_STATE_DIM}, r->states, 0, 0};
        e[n_extras++] = (fh_checkpoint_extra){"q.replay.actions", FH_DTYPE_I32, 1, {S},
                                              r->actions, 0, 0};
        e[n_extras++] = (fh_checkpoint_extra){"q.replay.returns", FH_DTYPE_F32, 1, {S},
                                              r->returns, 0, 0};
        e[n_extras++] = (fh_checkpoint_extra){"q.replay.next_states", FH_DTYPE_F32, 2,
                                              {S, FH_STATE_DIM}, r->next_states, 0, 0};
        e[n_extras++] = (fh_checkpoint_extra){"q.replay.discounts", FH_DTYPE_F32, 1, {S},
                                              r->discounts, 0, 0};
    }
    ck.extras = e;
    ck.n_extras = n_extras;
    ck.meta_keys = meta_keys;
    ck.meta_values = meta_values;
    ck.n_meta = n_meta;
    st = fh_checkpoint_save(path, &ck, t->config_json, err);
    free(rng);
    return st;
}

/* Episode returns and lengths through the batch, the reward mean and the histogram's
 * entropy: the metrics a Q-learning collection gives. */
static void batch_metrics(fh_q_trainer *t, fh_iteration_metrics *m)
{
    const fh_transition_batch *b = &t->batch;
    const int N = b->n_episodes, L = b->n_steps;
    double reward = 0, ret = 0, len = 0;
    long finished = 0, counts[FH_N_ACTIONS] = {0};
    for (int n = 0; n < N; n++)
        for (int s = 0; s < L; s++) {
            size_t i = (size_t)n * L + s;
            reward += b->rewards[i];
            counts[b->actions[i]]++;
            t->episode_return[n] += b->rewards[i];
            t->episode_length[n]++;
            if (b->terminal[i] || b->truncated[i]) {
                finished++;
                ret += t->episode_return[n];
                len += t->episode_length[n];
                t->episode_return[n] = 0;
                t->episode_length[n] = 0;
            }
        }
    double total = (double)N * L, entropy = 0;
    for (int k = 0; k < FH_N_ACTIONS; k++)
        if (counts[k]) {
            double p = counts[k] / total;
            entropy -= p * log(p);
        }
    m->mean_reward = reward / total;
    m->episodes_finished = finished;
    m->mean_episode_return = finished ? ret / finished : NAN;
    m->mean_episode_length = finished ? len / finished : NAN;
    m->action_entropy = entropy;
}

/* DQN: the collection into the ring; once it holds learning_starts transitions,
 * replay_ratio * N * L gradient steps, the target network following. */
fh_status fh_q_dqn_iteration(fh_q_trainer *t, const fh_q_update_config *qc, fh_q_stats *stats,
                               fh_error *err)
{
    const fh_train_config *cfg = &t->cfg;
    memset(stats, 0, sizeof *stats);
    fh_status st = fh_replay_push_batch(&t->ring, &t->batch, cfg->n_step, (float)cfg->gamma, err);
    if (st != FH_OK || t->ring.size < cfg->learning_starts)
        return st;
    int64_t steps = llround(cfg->replay_ratio * (double)t->batch.n_episodes * t->batch.n_steps);
    return fh_dqn_steps(stats, &t->q, &t->target, &t->ws, &t->ring, &t->mb, steps,
                        cfg->target_update_every, (float)cfg->tau, &t->grad_steps, qc,
                        &t->update_rng, err);
}

fh_status fh_q_trainer_iterate(fh_q_trainer *t, int64_t it, fh_iteration_metrics *m,
                               fh_q_stats *qs, fh_error *err)
{
    const fh_train_config *cfg = &t->cfg;
    const int64_t per_iteration = (int64_t)cfg->episodes * cfg->steps;
    const int64_t total = per_iteration * cfg->iterations;
    t->epsilon = fh_epsilon_at((it - 1) * per_iteration, total, (float)cfg->epsilon_start,
                               (float)cfg->epsilon_end, (float)cfg->epsilon_fraction);
    double t0 = fh_clock_seconds();
    fh_status st = fh_q_backend_collect(t, (float)t->epsilon, err);
    if (st != FH_OK)
        return st;
    m->collect_seconds = fh_clock_seconds() - t0;
    batch_metrics(t, m);
    fh_q_update_config qc = fh_q_update_config_of(cfg, m->lr);
    if ((st = fh_q_backend_update(t, &qc, qs, err)) != FH_OK ||
        (st = fh_q_backend_curiosity_fit(t, &t->curiosity_loss, err)) != FH_OK)
        return st;
    t->iteration = it;
    return FH_OK;
}
