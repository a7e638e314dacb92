/* ppo_backend.c — where PPO runs: CPU/GPU dispatch for the trainer (ppo_backend.h). */
#include "rl/ppo_backend.h"

#include <stdlib.h>
#include <string.h>

#if FH_HAVE_CUDA
#include "cuda/gpu_ppo_collector.h"
#include "cuda/gpu_ppo_update.h"
#include "rl/gpu_update_settings.h"
#include "foxhunt/precision.h"
#endif

fh_status fh_ppo_backend_create(fh_trainer *t, fh_error *err)
{
    const fh_train_config *cfg = &t->cfg;
#if FH_HAVE_CUDA
    if (t->device.use_gpu) {
        fh_status st = fh_gpu_ppo_collector_create(&t->gpu, &t->device, t->share.episodes,
                                                   cfg->steps, &cfg->env, &t->train_view,
                                                   cfg->seed, cfg->kernel, cfg->precision, NULL, err);
        if (st != FH_OK)
            return st;
        t->episodes = fh_gpu_ppo_collector_episodes(t->gpu);
        if (strcmp(cfg->update_device, "cpu") != 0) {
            /* the update's minibatch: this process's rows of each (the run's / ranks) */
            fh_gpu_ppo_settings settings = fh_gpu_ppo_settings_of(cfg);
            settings.minibatch = t->share.minibatch;
            st = fh_gpu_ppo_update_create(&t->gpu_update, &t->device, settings,
                                          (long long)t->share.episodes * cfg->steps,
                                          fh_precision_parse(cfg->precision), NULL, err);
            if (st != FH_OK)
                return st;
            fh_gpu_weights w = fh_gpu_ppo_update_weights(t->gpu_update);
            fh_gpu_ppo_collector_use_weights(t->gpu, &w);
        }
        return FH_OK;
    }
#endif
    fh_status st = fh_cpu_collector_init(&t->cpu, t->share.episodes, cfg->steps, &cfg->env,
                                         &t->train_view, cfg->seed, err);
    if (st == FH_OK)
        t->episodes = t->cpu.episodes;
    return st;
}

fh_status fh_ppo_backend_collect(fh_trainer *t, const fh_collect_params *p, fh_error *err)
{
#if FH_HAVE_CUDA
    if (t->gpu)
        return fh_gpu_ppo_collector_collect(t->gpu, p, &t->batch, err);
#endif
    return fh_cpu_collect_rollouts(&t->cpu, p, &t->batch, err);
}

fh_status fh_ppo_backend_collect_for_update(fh_trainer *t, const fh_collect_params *p,
                                          fh_iteration_sums *sums, fh_error *err)
{
#if FH_HAVE_CUDA
    if (t->gpu && t->gpu_update) {
        fh_status st = fh_gpu_ppo_collector_collect_on_device(t->gpu, p, &t->batch, err);
        if (st != FH_OK)
            return st;
        const float *rewards;
        const int *actions, *dones;
        const fh_episode_state *episodes;
        fh_gpu_ppo_collector_device_outputs(t->gpu, &rewards, &actions, &dones, &episodes);
        return fh_gpu_ppo_update_iteration_sums(t->gpu_update, rewards, actions, dones, episodes,
                                                t->cfg.steps, sums, err);
    }
#endif
    fh_life_totals before, after;
    fh_life_totals_of(&before, t->episodes, t->share.episodes);
    fh_status st = fh_ppo_backend_collect(t, p, err);
    if (st != FH_OK)
        return st;
    fh_life_totals_of(&after, t->episodes, t->share.episodes);
    fh_iteration_sums_host(sums, &t->batch, &before, &after, t->episode_return,
                           t->episode_length);
    return FH_OK;
}

fh_status fh_ppo_backend_update(fh_trainer *t, fh_ppo_stats *stats, double lr,
                                double ent_coef, fh_ppo_trace *trace, int batch_from_host,
                                fh_error *err)
{
#if FH_HAVE_CUDA
    if (t->gpu_update) {
        if (!batch_from_host) {
            fh_device_batch b;
            const float *features;
            fh_gpu_ppo_collector_device_batch(t->gpu, &b, &features);
            return fh_gpu_ppo_update_run(t->gpu_update, stats, &b, features, lr, ent_coef,
                                         &t->update_rng, 0, trace, err);
        }
        fh_gpu_batch g;
        fh_status st = fh_gpu_batch_upload(&g, &t->batch, &t->train_market, err);
        if (st != FH_OK)
            return st;
        st = fh_gpu_ppo_update_run(t->gpu_update, stats, &g.view, g.features, lr, ent_coef,
                                   &t->update_rng, 0, trace, err);
        fh_gpu_batch_free(&g);
        return st;
    }
#endif
    (void)batch_from_host;
    /* one process only (a rank's update is on the GPU): cfg's minibatch is its share */
    return fh_ppo_update(stats, &t->actor, &t->critic, &t->curiosity, &t->ws, &t->batch,
                         &t->train_market, &t->cfg, lr, ent_coef, &t->update_rng, trace,
                         err);
}

fh_status fh_ppo_backend_set_episodes(fh_trainer *t, fh_error *err)
{
#if FH_HAVE_CUDA
    if (t->gpu)
        return fh_gpu_ppo_collector_upload_episodes(t->gpu, err);
#endif
    (void)t;
    (void)err;
    return FH_OK; /* the CPU collector reads t->episodes directly */
}

fh_status fh_ppo_backend_set_networks(fh_trainer *t, fh_error *err)
{
#if FH_HAVE_CUDA
    if (t->gpu_update) {
        fh_status st = fh_gpu_ppo_update_upload(t->gpu_update, &t->actor, &t->critic,
                                                &t->curiosity, err);
        if (st != FH_OK)
            return st;
        int N = t->share.episodes;
        double *totals = malloc((size_t)N * FH_EPISODE_TOTALS * sizeof(double));
        long long *int_totals = malloc((size_t)N * (1 + FH_BARRIER_N_KINDS) * sizeof(long long));
        if (!totals || !int_totals)
            st = fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
        if (st == FH_OK) {
            fh_episode_totals_of(totals, int_totals, t->episodes, N);
            st = fh_gpu_ppo_update_set_episodes(t->gpu_update, totals, int_totals,
                                                t->episode_return, t->episode_length, N, err);
        }
        free(totals);
        free(int_totals);
        return st;
    }
#endif
    (void)t;
    (void)err;
    return FH_OK;
}

fh_status fh_ppo_backend_sync_host(fh_trainer *t, fh_error *err)
{
#if FH_HAVE_CUDA
    if (t->gpu_update) {
        fh_status st = fh_gpu_ppo_update_download(t->gpu_update, &t->actor, &t->critic,
                                                  &t->curiosity, err);
        if (st == FH_OK)
            st = fh_gpu_ppo_update_get_episode_stats(t->gpu_update, t->episode_return,
                                                     t->episode_length, err);
        if (st == FH_OK)
            st = fh_gpu_ppo_collector_download_episodes(t->gpu, err);
        return st;
    }
#endif
    (void)t;
    (void)err;
    return FH_OK;
}

const char *fh_ppo_backend_update_device(const fh_trainer *t)
{
#if FH_HAVE_CUDA
    if (t->gpu_update)
        return "gpu";
#endif
    (void)t;
    return "cpu";
}

void fh_ppo_backend_destroy(fh_trainer *t)
{
#if FH_HAVE_CUDA
    /* the collector reads the update's weights: it goes first */
    if (t->gpu)
        fh_gpu_ppo_collector_destroy(t->gpu);
    t->gpu = NULL;
    if (t->gpu_update)
        fh_gpu_ppo_update_destroy(t->gpu_update);
    t->gpu_update = NULL;
#endif
    fh_cpu_collector_free(&t->cpu);
    t->episodes = NULL;
}
