/* trainer.c — the training loop of `foxhunt train` (include/foxhunt/trainer.h). */
#include "foxhunt/trainer.h"

#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "env/common_device_functions.cuh"
#include "foxhunt/checkpoint.h"
#include "foxhunt/run_dir.h"
#include "foxhunt/timing.h"
#include "rl/collector.h"

/* Streams of the run seed: episodes use 0..N-1, these sit far above any N. */
#define STREAM_UPDATE (1ULL << 62)
#define INIT_SEED_ACTOR 0x9E3779B97F4A7C15ULL
#define INIT_SEED_CRITIC 0xBF58476D1CE4E5B9ULL
#define INIT_SEED_CURIOSITY 0x94D049BB133111EBULL

/* ---- checkpoints ---- */

/* The tensors beyond networks/norm/seed/iteration that a bit-identical resume needs. */
typedef struct {
    fh_checkpoint ck;
    fh_checkpoint_extra extras[4];
    uint64_t *rng;     /* (N, 2) episode streams, for readers of rng.episodes */
    uint64_t seed;
    int64_t iteration;
} checkpoint_view;

static void checkpoint_view_make(checkpoint_view *v, fh_trainer *t, uint64_t *rng_buf)
{
    memset(v, 0, sizeof *v);
    int N = t->cfg.episodes;
    v->ck.nets[FH_NET_ACTOR] = &t->actor;
    v->ck.nets[FH_NET_CRITIC] = &t->critic;
    v->ck.nets[FH_NET_CURIOSITY] = &t->curiosity;
    v->ck.norm = &t->data.market.norm;
    v->seed = t->cfg.seed;
    v->iteration = t->iteration;
    v->ck.seed = &v->seed;
    v->ck.iteration = &v->iteration;
    v->rng = rng_buf;
    v->ck.rng_state = rng_buf;
    v->ck.rng_rows = (size_t)N;
    v->ck.rng_cols = 2;
    fh_checkpoint_extra *e = v->extras;
    e[0] = (fh_checkpoint_extra){"env.episodes", FH_DTYPE_U8, 2,
                                 {N, (int64_t)sizeof(fh_episode_state)}, t->episodes, 0, 0};
    e[1] = (fh_checkpoint_extra){"ppo.update_rng", FH_DTYPE_U64, 1, {2}, &t->update_rng, 0, 0};
    e[2] = (fh_checkpoint_extra){"trainer.episode_return", FH_DTYPE_F64, 1, {N},
                                 t->episode_return, 0, 0};
    e[3] = (fh_checkpoint_extra){"trainer.episode_length", FH_DTYPE_I32, 1, {N},
                                 t->episode_length, 0, 0};
    v->ck.extras = e;
    v->ck.n_extras = 4;
}

fh_status fh_trainer_save(const fh_trainer *t_const, const char *path, fh_error *err)
{
    fh_trainer *t = (fh_trainer *)t_const; /* the checkpoint API takes mutable views */
    int N = t->cfg.episodes;
    uint64_t *rng = malloc((size_t)N * 2 * sizeof(uint64_t));
    if (!rng)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
    for (int n = 0; n < N; n++) {
        rng[2 * n] = t->episodes[n].rng.state;
        rng[2 * n + 1] = t->episodes[n].rng.inc;
    }
    checkpoint_view v;
    checkpoint_view_make(&v, t, rng);
    fh_status st = fh_checkpoint_save(path, &v.ck, t->config_json, err);
    free(rng);
    return st;
}

fh_status fh_checkpoint_read_config(const char *path, fh_train_config *cfg, fh_error *err)
{
    fh_checkpoint ck;
    memset(&ck, 0, sizeof ck);
    char *json = NULL;
    fh_status st = fh_checkpoint_load(path, &ck, &json, err);
    if (st != FH_OK)
        return st;
    if (!json)
        return fh_error_set(err, FH_ERR_INPUT, "%s: the checkpoint holds no config", path);
    st = fh_train_config_from_json(json, cfg, err);
    if (st != FH_OK)
        fh_error_prefix(err, "%s: ", path);
    free(json);
    return st;
}

static fh_status resume_from(fh_trainer *t, const char *path, fh_error *err)
{
    int N = t->cfg.episodes;
    uint64_t *rng = malloc((size_t)N * 2 * sizeof(uint64_t));
    if (!rng)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
    checkpoint_view v;
    checkpoint_view_make(&v, t, rng);
    fh_feature_norm norm;
    v.ck.norm = &norm; /* the data was built with the checkpoint's norm already */
    fh_status st = fh_checkpoint_load(path, &v.ck, NULL, err);
    free(rng);
    if (st != FH_OK)
        return st;
    if (v.seed != t->cfg.seed)
        return fh_error_set(err, FH_ERR_INPUT, "%s: run seed %llu differs from --seed %llu",
                            path, (unsigned long long)v.seed, (unsigned long long)t->cfg.seed);
    t->iteration = v.iteration;
    return FH_OK;
}

/* ---- init / free ---- */

void fh_trainer_free(fh_trainer *t)
{
    fh_collector_destroy(t);
    fh_trajectory_batch_free(&t->batch);
    fh_ppo_workspace_free(&t->ws);
    fh_mlp_free(&t->actor);
    fh_mlp_free(&t->critic);
    fh_mlp_free(&t->curiosity);
    fh_run_data_free(&t->data);
    free(t->episode_return);
    free(t->episode_length);
    free(t->config_json);
    fh_run_dir_close(&t->run);
    memset(t, 0, sizeof *t);
}

fh_status fh_trainer_init(fh_trainer *t, const fh_train_config *cfg, fh_error *err)
{
    return fh_trainer_init_norm(t, cfg, NULL, err);
}

/* A checkpoint's episodes were stepped on the data the run had then; flags may have
 * changed the data since (--data, --train-fraction, --synthetic-bars): every restored
 * episode must still sit inside the training split. */
static fh_status check_resumed_episodes(const fh_trainer *t, fh_error *err)
{
    int last = t->train_market.n_bars - 2; /* a step reads bar + 1 */
    for (int n = 0; n < t->cfg.episodes; n++) {
        const fh_episode_state *ep = &t->episodes[n];
        if (ep->bar < 0 || ep->bar > last || ep->start_bar < 0 || ep->start_bar > ep->bar)
            return fh_error_set(err, FH_ERR_INPUT,
                                "%s: episode %d is at bar %d, outside this run's training split "
                                "(%d bars): the data changed since the checkpoint; resume with the "
                                "same --data, --train-fraction and --synthetic-bars",
                                t->cfg.resume, n, ep->bar, t->train_market.n_bars);
    }
    return FH_OK;
}

fh_status fh_trainer_init_norm(fh_trainer *t, const fh_train_config *cfg,
                               const fh_feature_norm *norm_in, fh_error *err)
{
    memset(t, 0, sizeof *t);
    t->cfg = *cfg;
    fh_status st = fh_train_config_validate(cfg, err);
    if (st != FH_OK)
        return st;
    if (cfg->threads > 0) { /* both pools: OpenBLAS (networks) and OpenMP (collection) */
        fh_nn_set_threads(cfg->threads);
        omp_set_num_threads(cfg->threads);
    }

    /* on resume the data is normalised with the checkpoint's statistics */
    fh_feature_norm resume_norm;
    const fh_feature_norm *norm = norm_in;
    if (cfg->resume[0]) {
        fh_checkpoint ck;
        memset(&ck, 0, sizeof ck);
        ck.norm = &resume_norm;
        if ((st = fh_checkpoint_load(cfg->resume, &ck, NULL, err)) != FH_OK)
            return st;
        norm = &resume_norm;
    }
    if ((st = fh_run_data_load(&t->data, cfg, norm, err)) != FH_OK)
        return st;
    t->train_view = fh_market_view_of(&t->data.market, FH_SPLIT_TRAIN);
    t->train_market = fh_env_market_from_view(&t->train_view);
    if (t->train_view.n < 2)
        return fh_error_set(err, FH_ERR_INPUT, "the training split has %zu bars: too few",
                            t->train_view.n);

    int N = cfg->episodes, L = cfg->steps;
    if ((st = fh_mlp_init(&t->actor, FH_NET_ACTOR, err)) != FH_OK ||
        (st = fh_mlp_init(&t->critic, FH_NET_CRITIC, err)) != FH_OK ||
        (st = fh_mlp_init(&t->curiosity, FH_NET_CURIOSITY, err)) != FH_OK)
        return st;
    fh_mlp_init_orthogonal(&t->actor, cfg->seed ^ INIT_SEED_ACTOR);
    fh_mlp_init_orthogonal(&t->critic, cfg->seed ^ INIT_SEED_CRITIC);
    fh_mlp_init_orthogonal(&t->curiosity, cfg->seed ^ INIT_SEED_CURIOSITY);
    rng_seed(&t->update_rng, cfg->seed, STREAM_UPDATE);

    t->episode_return = calloc((size_t)N, sizeof(double));
    t->episode_length = calloc((size_t)N, sizeof(int32_t));
    t->config_json = fh_train_config_to_json(cfg);
    if (!t->episode_return || !t->episode_length || !t->config_json)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
    if ((st = fh_trajectory_batch_alloc(&t->batch, N, L, err)) != FH_OK ||
        (st = fh_ppo_workspace_init(&t->ws, cfg->minibatch, (int64_t)N * L, err)) != FH_OK)
        return st;
    if ((st = fh_device_select(cfg->device, &t->device, err)) != FH_OK)
        return st;
    if ((st = fh_collector_create(t, err)) != FH_OK)
        return st;
    if (cfg->resume[0]) {
        if ((st = resume_from(t, cfg->resume, err)) != FH_OK ||
            (st = check_resumed_episodes(t, err)) != FH_OK)
            return st;
        if ((st = fh_collector_set_episodes(t, err)) != FH_OK)
            return st;
    }

    return FH_OK;
}

fh_status fh_trainer_open_run(fh_trainer *t, fh_error *err)
{
    return fh_run_dir_open(&t->run, &t->cfg, t->config_json, t->iteration, err);
}

/* ---- the loop ---- */

typedef struct {
    double cost, turnover;
    long reversals, hits[FH_BARRIER_N_KINDS];
} env_totals;

static void sum_totals(const fh_episode_state *eps, int N, env_totals *out)
{
    memset(out, 0, sizeof *out);
    for (int n = 0; n < N; n++) {
        out->cost += eps[n].life_cost / eps[n].initial_equity;
        out->turnover += eps[n].life_turnover;
        out->reversals += eps[n].life_reversals;
        for (int k = 0; k < FH_BARRIER_N_KINDS; k++)
            out->hits[k] += eps[n].life_barrier_hits[k];
    }
}

static void batch_metrics(fh_trainer *t, fh_iteration_metrics *m)
{
    const fh_trajectory_batch *b = &t->batch;
    int N = b->n_episodes, L = b->n_steps;
    double reward_sum = 0, ret_sum = 0, len_sum = 0;
    long finished = 0, counts[FH_N_ACTIONS] = {0};
    for (int n = 0; n < N; n++) {
        for (int s = 0; s < L; s++) {
            int64_t i = (int64_t)n * L + s;
            reward_sum += b->rewards[i];
            counts[b->actions[i]]++;
            t->episode_return[n] += b->rewards[i];
            t->episode_length[n] += 1;
            if (b->dones[i]) {
                ret_sum += t->episode_return[n];
                len_sum += t->episode_length[n];
                finished++;
                t->episode_return[n] = 0;
                t->episode_length[n] = 0;
            }
        }
    }
    double total = (double)N * L, h = 0;
    for (int a = 0; a < FH_N_ACTIONS; a++)
        if (counts[a])
            h -= counts[a] / total * log(counts[a] / total);
    m->mean_reward = reward_sum / total;
    m->episodes_finished = finished;
    m->mean_episode_return = finished ? ret_sum / finished : NAN;
    m->mean_episode_length = finished ? len_sum / finished : NAN;
    m->action_entropy = h;
}

fh_status fh_trainer_run(fh_trainer *t, volatile sig_atomic_t *stop,
                         fh_iteration_callback on_iteration, void *user, fh_error *err)
{
    const fh_train_config *cfg = &t->cfg;
    int64_t per_iteration = (int64_t)cfg->episodes * cfg->steps;
    fh_status st = fh_make_dirs(cfg->out, err); /* checkpoints land there */
    if (st != FH_OK)
        return st;
    char path[FH_CONFIG_STRING_MAX + 64];
    while (t->iteration < cfg->iterations && !(stop && *stop)) {
        int64_t it = t->iteration + 1;
        fh_iteration_metrics m;
        memset(&m, 0, sizeof m);
        m.iteration = it;
        m.global_step = it * per_iteration;
        double frac = 1.0 - (double)(it - 1) / (double)cfg->iterations;
        m.lr = cfg->anneal_lr ? frac * cfg->lr : cfg->lr;

        env_totals before, after;
        sum_totals(t->episodes, cfg->episodes, &before);
        double t0 = fh_clock_seconds();
        fh_collect_params params = {&t->actor, &t->critic, &t->curiosity,
                                    (float)cfg->gamma, (float)cfg->gae_lambda};
        if ((st = fh_collector_collect(t, &params, err)) != FH_OK)
            break;
        double t1 = fh_clock_seconds();
        sum_totals(t->episodes, cfg->episodes, &after);
        batch_metrics(t, &m);
        if ((st = fh_ppo_update(&m.ppo, &t->actor, &t->critic, &t->curiosity, &t->ws,
                                &t->batch, &t->train_market, cfg, m.lr, &t->update_rng,
                                err)) != FH_OK)
            break;
        double t2 = fh_clock_seconds();
        t->iteration = it;

        m.collect_seconds = t1 - t0;
        m.update_seconds = t2 - t1;
        m.steps_per_second = (double)per_iteration / (t2 - t0);
        m.collect_steps_per_second = (double)per_iteration / (t1 - t0);
        m.costs = after.cost - before.cost;
        m.turnover = (after.turnover - before.turnover) / (double)per_iteration;
        m.reversals = after.reversals - before.reversals;
        m.barrier_profit_take = after.hits[FH_BARRIER_PROFIT_TAKE] - before.hits[FH_BARRIER_PROFIT_TAKE];
        m.barrier_stop_loss = after.hits[FH_BARRIER_STOP_LOSS] - before.hits[FH_BARRIER_STOP_LOSS];
        m.barrier_time_limit = after.hits[FH_BARRIER_TIME_LIMIT] - before.hits[FH_BARRIER_TIME_LIMIT];
        if ((st = fh_run_dir_write_metrics(&t->run, &m, err)) != FH_OK)
            break;
        if (on_iteration)
            on_iteration(t, &m, user);
        if (cfg->checkpoint_every > 0 && it % cfg->checkpoint_every == 0 &&
            it < cfg->iterations) {
            snprintf(path, sizeof path, "%s/checkpoint_%06lld.safetensors", cfg->out, (long long)it);
            if ((st = fh_trainer_save(t, path, err)) != FH_OK)
                break;
            snprintf(t->last_checkpoint, sizeof t->last_checkpoint, "%s", path);
        }
    }
    /* a final checkpoint whatever stopped the loop, unless the loop failed */
    if (st == FH_OK) {
        snprintf(path, sizeof path, "%s/%s.safetensors", cfg->out,
                 t->iteration >= cfg->iterations ? "final" : "interrupted");
        st = fh_trainer_save(t, path, err);
        if (st == FH_OK)
            snprintf(t->last_checkpoint, sizeof t->last_checkpoint, "%s", path);
    }
    return st;
}
