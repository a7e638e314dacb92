/* q_trainer.c — `foxhunt train --algo dqn|pqn` (include/foxhunt/q_trainer.h). */
#include "foxhunt/q_trainer.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "env/common_device_functions.cuh"
#include "foxhunt/timing.h"
#include "rl/q_trainer_resume.h"
#if FH_HAVE_CUDA
#include "cuda/gpu_dqn_collector.h"
#include "cuda/gpu_curiosity.h"
#include "cuda/gpu_q_update.h"
#include "rl/gpu_update_settings.h"
#endif

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
#if FH_HAVE_CUDA
    fh_gpu_curiosity_destroy(t->gpu_curiosity);
    fh_gpu_q_update_destroy(t->gpu_update);
    fh_gpu_dqn_collector_destroy(t->gpu);
#endif
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
    fh_run_dir_close(&t->run);
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
    if (cfg->eval_every > 0)
        return fh_error_set(err, FH_ERR_INPUT, "--eval-every with algo %s: model selection on "
                            "the validation split is implemented for ppo only (docs/DQN.md); "
                            "train without it and evaluate checkpoints with foxhunt eval "
                            "--split validation", cfg->algo);
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
    fh_data_identity_of(&t->data_identity, &t->data.bars, source);

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
    if (t->device.use_gpu) {
#if FH_HAVE_CUDA
        st = fh_gpu_dqn_collector_create_kernel(&t->gpu, &t->device, N, L, &cfg->env,
                                                &t->train_view, cfg->seed, t->pqn, cfg->kernel,
                                                err);
#else
        st = fh_error_set(err, FH_ERR_FAILURE, "this build has no CUDA");
#endif
    }
    if (st == FH_OK && cfg->resume[0])
        st = fh_q_resume_load(t, &plan, err);
#if FH_HAVE_CUDA
    /* the update on the device, from the host's weights (fresh or resumed) */
    if (st == FH_OK && t->gpu)
        st = fh_gpu_q_update_create(&t->gpu_update, &t->device, t->net, N, L, fh_gpu_q_settings_of(cfg), err);
    if (st == FH_OK && t->gpu_update)
        st = fh_gpu_q_update_upload(t->gpu_update, &t->q, t->pqn ? NULL : &t->target, err);
    if (st == FH_OK && t->gpu)
        st = fh_gpu_curiosity_create(&t->gpu_curiosity, &t->device, (int64_t)N * L, fh_gpu_curiosity_settings_of(cfg), err);
    if (st == FH_OK && t->gpu_curiosity)
        st = fh_gpu_curiosity_upload(t->gpu_curiosity, &t->curiosity, err);
    if (st == FH_OK && t->gpu_update && !t->pqn) {
        fh_gpu_q_update_set_grad_steps(t->gpu_update, t->grad_steps);
        if (t->ring.size > 0)
            st = fh_gpu_q_update_upload_ring(t->gpu_update, &t->ring, err);
    }
#endif
    return st;
}

fh_status fh_q_trainer_open_run(fh_q_trainer *t, fh_error *err)
{
    return fh_run_dir_open(&t->run, &t->cfg, t->config_json, t->iteration, err);
}

fh_status fh_q_trainer_save(const fh_q_trainer *t_const, const char *path, fh_error *err)
{
    fh_q_trainer *t = (fh_q_trainer *)t_const; /* the checkpoint API takes mutable views */
    const int N = t->cfg.episodes;
    fh_status st = FH_OK;
#if FH_HAVE_CUDA
    if (t->gpu && (st = fh_gpu_dqn_collector_episodes(t->gpu, t->episodes, err)) != FH_OK)
        return st;
    if (t->gpu_update &&
        ((st = fh_gpu_q_update_download(t->gpu_update, &t->q, t->pqn ? NULL : &t->target,
                                        err)) != FH_OK ||
         (!t->pqn && (st = fh_gpu_q_update_download_ring(t->gpu_update, &t->ring, err)) != FH_OK)))
        return st;
    if (t->gpu_curiosity &&
        (st = fh_gpu_curiosity_download(t->gpu_curiosity, &t->curiosity, err)) != FH_OK)
        return st;
#endif
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

static fh_status collect(fh_q_trainer *t, float epsilon, fh_error *err)
{
#if FH_HAVE_CUDA
    /* both networks' device weights, read in place; only what the iteration's metrics
     * need comes back */
    if (t->gpu_update) {
        fh_status st = fh_gpu_dqn_collect_resident(t->gpu, fh_gpu_q_update_params(t->gpu_update),
                                                   fh_gpu_curiosity_params(t->gpu_curiosity),
                                                   epsilon, NULL, err);
        return st == FH_OK ? fh_gpu_dqn_collector_download_summary(t->gpu, &t->batch, err) : st;
    }
#endif
    return fh_dqn_collect_cpu(t->q.params, t->pqn, t->curiosity.params, &t->cfg.env,
                              &t->train_market, t->episodes, epsilon, &t->batch, err);
}

/* DQN: the collection into the ring; once it holds learning_starts transitions,
 * replay_ratio * N * L gradient steps, the target network following. */
static fh_status dqn_iteration(fh_q_trainer *t, const fh_q_update_config *qc, fh_q_stats *stats,
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

/* The curiosity model's fit on the collection (after the Q update: the same stream
 * order on both paths): on the device when the collection is there. */
static fh_status curiosity_fit(fh_q_trainer *t, double *loss, fh_error *err)
{
    const int64_t n = (int64_t)t->cfg.episodes * t->cfg.steps;
#if FH_HAVE_CUDA
    if (t->gpu_curiosity) {
        fh_dqn_device_batch db = fh_gpu_dqn_collector_batch(t->gpu);
        return fh_gpu_curiosity_fit(t->gpu_curiosity, db.states, db.actions, db.exposures,
                                    db.bars, fh_gpu_dqn_collector_market_features(t->gpu), n,
                                    &t->update_rng, loss, err);
    }
#endif
    return fh_curiosity_fit(loss, &t->curiosity, &t->curiosity_ws, t->batch.states,
                            t->batch.actions, t->batch.exposures, t->batch.bars, n,
                            &t->train_market, &t->cfg, &t->update_rng, err);
}

/* The iteration's update: on the device when there is one (the collection read where it
 * lies), else fh_pqn_update / dqn_iteration on the host. */
static fh_status q_update(fh_q_trainer *t, const fh_q_update_config *qc, fh_q_stats *stats,
                          fh_error *err)
{
#if FH_HAVE_CUDA
    if (t->gpu_update) {
        fh_dqn_device_batch db = fh_gpu_dqn_collector_batch(t->gpu);
        if (t->pqn)
            return fh_gpu_pqn_update_run(t->gpu_update, &db, qc, &t->update_rng, 0, stats, err);
        fh_status st = fh_gpu_dqn_update_run(t->gpu_update, &db, qc, &t->update_rng, stats, err);
        t->grad_steps = fh_gpu_q_update_grad_steps(t->gpu_update);
        return st;
    }
#endif
    return t->pqn ? fh_pqn_update(stats, &t->q, &t->ws, &t->batch, qc, &t->update_rng, err)
                  : dqn_iteration(t, qc, stats, err);
}

fh_status fh_q_trainer_run(fh_q_trainer *t, volatile sig_atomic_t *stop,
                           fh_q_iteration_callback on_iteration, void *user, fh_error *err)
{
    const fh_train_config *cfg = &t->cfg;
    const int64_t per_iteration = (int64_t)cfg->episodes * cfg->steps;
    const int64_t total = per_iteration * cfg->iterations;
    fh_status st = fh_make_dirs(cfg->out, err);
    if (st != FH_OK)
        return st;
    char path[FH_CONFIG_STRING_MAX + 64];
    while (t->iteration < cfg->iterations && !(stop && *stop)) {
        int64_t it = t->iteration + 1;
        fh_iteration_metrics m;
        memset(&m, 0, sizeof m);
        m.iteration = it;
        m.global_step = it * per_iteration;
        m.lr = fh_train_config_lr(cfg, it);
        t->epsilon = fh_epsilon_at((it - 1) * per_iteration, total, (float)cfg->epsilon_start,
                                   (float)cfg->epsilon_end, (float)cfg->epsilon_fraction);
        double t0 = fh_clock_seconds();
        if ((st = collect(t, (float)t->epsilon, err)) != FH_OK)
            break;
        double t1 = fh_clock_seconds();
        batch_metrics(t, &m);
        fh_q_update_config qc = fh_q_update_config_of(cfg, m.lr);
        fh_q_stats qs;
        st = q_update(t, &qc, &qs, err);
        if (st == FH_OK)
            st = curiosity_fit(t, &m.ppo.curiosity_loss, err);
        if (st != FH_OK) {
            fh_error_prefix(err, "iteration %lld: ", (long long)it);
            break;
        }
        double t2 = fh_clock_seconds();
        t->iteration = it;
        m.ppo.value_loss = qs.loss;
        m.ppo.grad_norm = qs.grad_norm;
        m.ppo.minibatches = qs.minibatches;
        m.ppo.explained_variance = t->epsilon;
        m.collect_seconds = t1 - t0;
        m.update_seconds = t2 - t1;
        m.steps_per_second = (double)per_iteration / (t2 - t0);
        m.collect_steps_per_second = (double)per_iteration / (t1 - t0);
        if ((st = fh_run_dir_write_metrics(&t->run, &m, err)) != FH_OK) {
            fh_run_dir_note_last_checkpoint(err, t->last_checkpoint, t->cfg.resume);
            break;
        }
        if (on_iteration)
            on_iteration(t, &m, user);
        if (cfg->checkpoint_every > 0 && it % cfg->checkpoint_every == 0 && it < cfg->iterations) {
            snprintf(path, sizeof path, "%s/checkpoint_%06lld.safetensors", cfg->out, (long long)it);
            if ((st = fh_q_trainer_save(t, path, err)) != FH_OK) {
                fh_run_dir_note_last_checkpoint(err, t->last_checkpoint, t->cfg.resume);
                break;
            }
            snprintf(t->last_checkpoint, sizeof t->last_checkpoint, "%s", path);
        }
    }
    if (st == FH_OK) {
        snprintf(path, sizeof path, "%s/%s.safetensors", cfg->out,
                 t->iteration >= cfg->iterations ? "final" : "interrupted");
        if ((st = fh_q_trainer_save(t, path, err)) == FH_OK)
            snprintf(t->last_checkpoint, sizeof t->last_checkpoint, "%s", path);
        else
            fh_run_dir_note_last_checkpoint(err, t->last_checkpoint, t->cfg.resume);
    }
    return st;
}
