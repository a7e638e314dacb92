/* trainer.c — PPO's state, its iteration, checkpoints and resume
 * (include/foxhunt/trainer.h); the loop around it is train_loop.c's.
 *
 * Data-parallel (issue 22, docs/SCALING.md), this process is one rank of a run: it runs
 * its rank's share of the episodes and of every minibatch, and the hooks of
 * trainer_dist.h do what a rank does beyond one process (meet the others, sum the
 * metrics, agree when to stop, gather the episodes for rank 0's checkpoints); built
 * without NCCL, or run as one process, they do nothing. Rank 0 alone writes the run
 * directory. */
#include "foxhunt/trainer.h"

#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "env/common_device_functions.cuh"
#include "foxhunt/checkpoint.h"
#include "foxhunt/run_dir.h"
#include "foxhunt/timing.h"
#include "rl/ppo_backend.h"
#include "rl/iteration_sums.h"
#include "rl/resume_checks.h"
#include "rl/trainer_dist.h"

/* Streams of the run seed: episodes use 0..N-1, these sit far above any N. */
#define STREAM_UPDATE (1ULL << 62)
#define INIT_SEED_ACTOR 0x9E3779B97F4A7C15ULL
#define INIT_SEED_CRITIC 0xBF58476D1CE4E5B9ULL
#define INIT_SEED_CURIOSITY 0x94D049BB133111EBULL

fh_status fh_trainer_sync(fh_trainer *t, fh_error *err)
{
    fh_status st = fh_ppo_backend_sync_host(t, err);
    if (st != FH_OK)
        return st;
    return fh_trainer_dist_gather(t, err);
}

/* The episodes a checkpoint of t holds now: one process's, or every rank's gathered. */
static fh_status saved_episodes(const fh_trainer *t, fh_episode_set *e, fh_error *err)
{
    *e = (fh_episode_set){t->share.episodes, t->episodes, t->episode_return, t->episode_length};
    return fh_trainer_dist_gathered(t, e, err);
}

/* ---- checkpoints ---- */

/* The tensors beyond networks/norm/seed/iteration that a bit-identical resume needs. */
typedef struct {
    fh_checkpoint ck;
    fh_checkpoint_extra extras[4];
    uint64_t *rng;     /* (N, 2) episode streams, for readers of rng.episodes */
    uint64_t seed;
    int64_t iteration;
} checkpoint_view;

static void checkpoint_view_make(checkpoint_view *v, fh_trainer *t, const fh_episode_set *eps,
                                 uint64_t *rng_buf)
{
    memset(v, 0, sizeof *v);
    int N = eps->n;
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
                                 {N, (int64_t)sizeof(fh_episode_state)}, eps->episodes, 0, 0};
    e[1] = (fh_checkpoint_extra){"ppo.update_rng", FH_DTYPE_U64, 1, {2}, &t->update_rng, 0, 0};
    e[2] = (fh_checkpoint_extra){"trainer.episode_return", FH_DTYPE_F64, 1, {N},
                                 eps->episode_return, 0, 0};
    e[3] = (fh_checkpoint_extra){"trainer.episode_length", FH_DTYPE_I32, 1, {N},
                                 eps->episode_length, 0, 0};
    v->ck.extras = e;
    v->ck.n_extras = 4;
    v->ck.data = &t->data_identity;
}

fh_status fh_trainer_save(const fh_trainer *t, const char *path, fh_error *err)
{
    return fh_trainer_save_with(t, path, NULL, 0, NULL, NULL, 0, err);
}

fh_status fh_trainer_save_with(const fh_trainer *t_const, const char *path,
                               const fh_checkpoint_extra *more, int n_more,
                               const char *const *meta_keys, const char *const *meta_values,
                               int n_meta, fh_error *err)
{
    fh_trainer *t = (fh_trainer *)t_const; /* the checkpoint API takes mutable views */
    if (n_more < 0 || n_more > FH_CHECKPOINT_MAX_EXTRAS - 4)
        return fh_error_set(err, FH_ERR_FAILURE, "%s: not saved: %d further tensors (at most "
                            "%d)", path, n_more, FH_CHECKPOINT_MAX_EXTRAS - 4);
    fh_episode_set eps = {0, NULL, NULL, NULL};
    fh_status st = saved_episodes(t, &eps, err);
    if (st != FH_OK)
        return st;
    int N = eps.n;
    uint64_t *rng = malloc((size_t)N * 2 * sizeof(uint64_t));
    if (!rng)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
    for (int n = 0; n < N; n++) {
        rng[2 * n] = eps.episodes[n].rng.state;
        rng[2 * n + 1] = eps.episodes[n].rng.inc;
    }
    checkpoint_view v;
    checkpoint_view_make(&v, t, &eps, rng);
    fh_checkpoint_extra all[FH_CHECKPOINT_MAX_EXTRAS];
    memcpy(all, v.extras, (size_t)v.ck.n_extras * sizeof all[0]);
    for (int i = 0; i < n_more; i++)
        all[v.ck.n_extras + i] = more[i];
    v.ck.extras = all;
    v.ck.n_extras += n_more;
    v.ck.meta_keys = meta_keys;
    v.ck.meta_values = meta_values;
    v.ck.n_meta = n_meta;
    st = fh_checkpoint_save(path, &v.ck, t->config_json, err);
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

/* ---- resume: a checkpoint is untrusted input ---- */

/* Loads cfg->resume into t (networks, Adam, iteration, episodes, streams, running
 * returns) and checks all of it before the run uses any: the seed, the iteration, the
 * Adam moments, the update stream, the data's identity, every episode. On other data
 * with cfg->allow_other_data the episodes restart (docs/CHECKPOINTS.md). The file holds
 * the run's n_total episodes; t runs episodes [first, first + t->share.episodes) of them
 * (data-parallel: its rank's share; else all). */
static fh_status resume_from(fh_trainer *t, const char *path, int first, int n_total,
                             fh_error *err)
{
    int N = t->share.episodes;
    int share = n_total != N; /* read all into buffers of their own, keep the share */
    fh_episode_set all = {n_total, t->episodes, t->episode_return, t->episode_length};
    if (share) {
        all.episodes = calloc((size_t)n_total, sizeof *all.episodes);
        all.episode_return = calloc((size_t)n_total, sizeof *all.episode_return);
        all.episode_length = calloc((size_t)n_total, sizeof *all.episode_length);
    }
    uint64_t *rng = malloc((size_t)n_total * 2 * sizeof(uint64_t));
    const fh_train_config *run_cfg = &t->cfg; /* the checks see the run's episodes, by global
                                                * index */
    checkpoint_view v;
    fh_status st = FH_OK;
    if (!rng || !all.episodes || !all.episode_return || !all.episode_length) {
        st = fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
        goto done;
    }
    checkpoint_view_make(&v, t, &all, rng);
    fh_feature_norm norm;
    v.ck.norm = &norm; /* the data was built with the checkpoint's norm already */
    fh_data_identity saved;
    v.ck.data = &saved;
    st = fh_checkpoint_load(path, &v.ck, NULL, err);
    if (st != FH_OK)
        goto done;
    if (v.seed != t->cfg.seed) {
        st = fh_error_set(err, FH_ERR_INPUT, "%s: run seed %llu differs from --seed %llu",
                          path, (unsigned long long)v.seed, (unsigned long long)t->cfg.seed);
        goto done;
    }
    if (v.iteration < 0) {
        st = fh_error_set(err, FH_ERR_INPUT, "%s: run.iteration = %lld is negative", path,
                          (long long)v.iteration);
        goto done;
    }
    const fh_mlp *nets[3] = {&t->actor, &t->critic, &t->curiosity};
    if ((st = fh_resume_check_second_moments(nets, 3, path, err)) != FH_OK)
        goto done;
    fh_rng expect_update;
    rng_seed(&expect_update, t->cfg.seed, STREAM_UPDATE);
    if (t->update_rng.inc != expect_update.inc) {
        st = fh_error_set(err, FH_ERR_INPUT, "%s: ppo.update_rng's stream %llu is not the "
                          "update's (%llu); the file was edited or damaged", path,
                          t->update_rng.inc, expect_update.inc);
        goto done;
    }
    fh_resume_episodes eps = {run_cfg, &t->train_market, all.episodes, all.episode_return,
                              all.episode_length};
    st = fh_resume_check_data(&eps, v.ck.data_present ? &saved : NULL, &t->data_identity, "",
                              &t->data_identity_unchecked, &t->data_other, path, err);
    if (st != FH_OK || t->data_other)
        goto done;
    st = fh_resume_check_episodes(&eps, rng, path, err);
done:
    if (st == FH_OK && share) {
        memcpy(t->episodes, all.episodes + first, (size_t)N * sizeof *all.episodes);
        memcpy(t->episode_return, all.episode_return + first,
               (size_t)N * sizeof *all.episode_return);
        memcpy(t->episode_length, all.episode_length + first,
               (size_t)N * sizeof *all.episode_length);
    }
    if (share) {
        free(all.episodes);
        free(all.episode_return);
        free(all.episode_length);
    }
    free(rng);
    if (st == FH_OK)
        t->iteration = v.iteration;
    return st;
}

/* ---- init / free ---- */

void fh_trainer_free(fh_trainer *t)
{
    fh_ppo_backend_destroy(t);
    fh_trajectory_batch_free(&t->batch);
    fh_ppo_workspace_free(&t->ws);
    fh_mlp_free(&t->actor);
    fh_mlp_free(&t->critic);
    fh_mlp_free(&t->curiosity);
    fh_run_data_free(&t->data);
    free(t->episode_return);
    free(t->episode_length);
    free(t->config_json);
    memset(t, 0, sizeof *t);
}

fh_status fh_trainer_init(fh_trainer *t, const fh_train_config *cfg, fh_error *err)
{
    return fh_trainer_init_norm(t, cfg, NULL, err);
}

/* Everything of init from the data to the collector; select_device: choose it here
 * (one process; a rank's was chosen with its communicator). */
static fh_status init_run(fh_trainer *t, const fh_train_config *run_cfg,
                          const fh_feature_norm *norm_in, int select_device, fh_error *err)
{
    const fh_train_config *cfg = &t->cfg;
    /* on resume the data is normalised with the checkpoint's statistics */
    fh_feature_norm resume_norm;
    const fh_feature_norm *norm = norm_in;
    fh_status st;
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
    if ((st = fh_run_data_train_split(&t->data, &t->train_view, &t->train_market, err)) != FH_OK)
        return st;
    char source[FH_CONFIG_STRING_MAX + 64];
    fh_run_data_source(cfg, source, sizeof source);
    fh_run_data_identity(&t->data, source, &t->data_identity);

    int N = t->share.episodes, L = cfg->steps;
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
    t->config_json = fh_train_config_to_json(run_cfg);
    if (!t->episode_return || !t->episode_length || !t->config_json)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
    if ((st = fh_trajectory_batch_alloc(&t->batch, N, L, err)) != FH_OK ||
        (st = fh_ppo_workspace_init(&t->ws, t->share.minibatch, (int64_t)N * L, err)) != FH_OK)
        return st;
    if (select_device && (st = fh_device_select(cfg->device, &t->device, err)) != FH_OK)
        return st;
    return fh_ppo_backend_create(t, err);
}

fh_status fh_trainer_init_norm(fh_trainer *t, const fh_train_config *run_cfg,
                               const fh_feature_norm *norm_in, fh_error *err)
{
    memset(t, 0, sizeof *t);
    t->cfg = *run_cfg;
    fh_status st = fh_train_config_validate(run_cfg, err);
    fh_rank_plan rp;
    if (st != FH_OK || (st = fh_trainer_dist_plan(run_cfg, &rp, err)) != FH_OK)
        return st;
    t->share = rp.on ? (fh_trainer_share){rp.part.episodes, rp.part.minibatch,
                                          rp.part.first_episode}
                     : (fh_trainer_share){run_cfg->episodes, run_cfg->minibatch, 0};
    const fh_train_config *cfg = &t->cfg;
    if (cfg->threads > 0) { /* both pools: OpenBLAS (networks) and OpenMP (collection) */
        fh_nn_set_threads(cfg->threads);
        omp_set_num_threads(cfg->threads);
    }
    /* a rank meets the others first: a failure of any later step is then told to them */
    struct fh_dist *dist = NULL;
    if (rp.on && (st = fh_trainer_dist_join(t, &rp, &dist, err)) != FH_OK)
        return st;
    st = init_run(t, run_cfg, norm_in, !rp.on, err);
    if (dist && st != FH_OK) {
        fh_trainer_dist_abandon(dist, err);
        return st;
    }
    /* from here the update owns dist (and releases it after a failure too) */
    if (dist && (st = fh_trainer_dist_attach(t, dist, err)) != FH_OK)
        return st;
    if (st == FH_OK && rp.on && rp.part.first_episode > 0) {
        /* this rank's episodes are the run's [first, first + N): their global indices
         * name their random streams, as in one process with every episode */
        for (int n = 0; n < t->share.episodes; n++)
            env_episode_init(&cfg->env, &t->train_market, &t->episodes[n], cfg->seed,
                             (unsigned long long)(rp.part.first_episode + n));
        st = fh_ppo_backend_set_episodes(t, err);
    }
    if (st == FH_OK && cfg->resume[0]) {
        int first = rp.on ? rp.part.first_episode : 0;
        int n_total = rp.on ? rp.part.total_episodes : cfg->episodes;
        if ((st = resume_from(t, cfg->resume, first, n_total, err)) == FH_OK)
            st = fh_ppo_backend_set_episodes(t, err);
    }
    if (st == FH_OK)
        st = fh_ppo_backend_set_networks(t, err);
    if (st != FH_OK)
        fh_trainer_dist_fail(t, err);
    return st;
}

/* ---- an iteration ---- */

fh_status fh_trainer_iterate(fh_trainer *t, int64_t it, fh_iteration_metrics *m,
                             fh_ppo_stats *stats, fh_error *err)
{
    const fh_train_config *cfg = &t->cfg;
    int64_t per_iteration = fh_trainer_dist_run_steps(t);
    double t0 = fh_clock_seconds();
    fh_collect_params params = {&t->actor, &t->critic, &t->curiosity,
                                (float)cfg->gamma, (float)cfg->gae_lambda};
    fh_iteration_sums sums;
    fh_status st = fh_ppo_backend_collect_for_update(t, &params, &sums, err);
    if (st != FH_OK)
        return st;
    m->collect_seconds = fh_clock_seconds() - t0;
    if ((st = fh_trainer_dist_reduce_sums(t, &sums, err)) != FH_OK)
        return st;
    fh_iteration_metrics_from_sums(m, &sums, per_iteration);
    if (!isfinite(m->mean_reward)) /* a NaN reward would reach every weight */
        return fh_error_set(err, FH_ERR_FAILURE, "the collected batch's mean reward is %s (a "
                            "reward is not finite); stopped before the update",
                            isnan(m->mean_reward) ? "NaN" : "infinite");
    memset(stats, 0, sizeof *stats);
    if ((st = fh_ppo_backend_update(t, stats, m->lr, fh_train_config_ent_coef(cfg, it), NULL,
                                    0, err)) != FH_OK ||
        (st = fh_trainer_dist_check(t, err)) != FH_OK)
        return st;
    t->iteration = it;
    return FH_OK;
}
