/* q_backend.c — where DQN's and PQN's work runs (q_backend.h): the GPU's collector, update
 * and curiosity fit when the trainer chose the device, else the host's reference code. */
#include "rl/q_backend.h"

#if FH_HAVE_CUDA
#include "cuda/gpu_curiosity.h"
#include "cuda/gpu_dqn_collector.h"
#include "cuda/gpu_q_update.h"
#include "rl/gpu_update_settings.h"
#endif

#if FH_HAVE_CUDA

fh_status fh_q_backend_create_collector(fh_q_trainer *t, fh_error *err)
{
    const fh_train_config *cfg = &t->cfg;
    return fh_gpu_dqn_collector_create_kernel(&t->gpu, &t->device, cfg->episodes, cfg->steps,
                                              &cfg->env, &t->train_view, cfg->seed, t->pqn,
                                              cfg->kernel, err);
}

fh_status fh_q_backend_create_update(fh_q_trainer *t, fh_error *err)
{
    const fh_train_config *cfg = &t->cfg;
    const int N = cfg->episodes, L = cfg->steps;
    fh_status st = fh_gpu_q_update_create(&t->gpu_update, &t->device, t->net, N, L,
                                          fh_gpu_q_settings_of(cfg), err);
    if (st == FH_OK)
        st = fh_gpu_q_update_upload(t->gpu_update, &t->q, t->pqn ? NULL : &t->target, err);
    if (st == FH_OK)
        st = fh_gpu_curiosity_create(&t->gpu_curiosity, &t->device, (int64_t)N * L,
                                     fh_gpu_curiosity_settings_of(cfg), err);
    if (st == FH_OK)
        st = fh_gpu_curiosity_upload(t->gpu_curiosity, &t->curiosity, err);
    if (st == FH_OK && !t->pqn) {
        fh_gpu_q_update_set_grad_steps(t->gpu_update, t->grad_steps);
        if (t->ring.size > 0)
            st = fh_gpu_q_update_upload_ring(t->gpu_update, &t->ring, err);
    }
    return st;
}

fh_status fh_q_backend_set_episodes(fh_q_trainer *t, fh_error *err)
{
    return t->gpu ? fh_gpu_dqn_collector_set_episodes(t->gpu, t->episodes, err) : FH_OK;
}

fh_status fh_q_backend_collect(fh_q_trainer *t, float epsilon, fh_error *err)
{
    /* both networks' device weights, read in place; only what the iteration's metrics
     * need comes back */
    if (t->gpu_update) {
        fh_status st = fh_gpu_dqn_collect_resident(t->gpu, fh_gpu_q_update_params(t->gpu_update),
                                                   fh_gpu_curiosity_params(t->gpu_curiosity),
                                                   epsilon, NULL, err);
        return st == FH_OK ? fh_gpu_dqn_collector_download_summary(t->gpu, &t->batch, err) : st;
    }
    return fh_dqn_collect_cpu(t->q.params, t->pqn, t->curiosity.params, &t->cfg.env,
                              &t->train_market, t->episodes, epsilon, &t->batch, err);
}

fh_status fh_q_backend_update(fh_q_trainer *t, const fh_q_update_config *qc,
                              fh_q_stats *stats, fh_error *err)
{
    if (t->gpu_update) {
        fh_dqn_device_batch db = fh_gpu_dqn_collector_batch(t->gpu);
        if (t->pqn)
            return fh_gpu_pqn_update_run(t->gpu_update, &db, qc, &t->update_rng, 0, stats, err);
        fh_status st = fh_gpu_dqn_update_run(t->gpu_update, &db, qc, &t->update_rng, stats, err);
        t->grad_steps = fh_gpu_q_update_grad_steps(t->gpu_update);
        return st;
    }
    return t->pqn ? fh_pqn_update(stats, &t->q, &t->ws, &t->batch, qc, &t->update_rng, err)
                  : fh_q_dqn_iteration(t, qc, stats, err);
}

fh_status fh_q_backend_curiosity_fit(fh_q_trainer *t, double *loss, fh_error *err)
{
    const int64_t n = (int64_t)t->cfg.episodes * t->cfg.steps;
    if (t->gpu_curiosity) {
        fh_dqn_device_batch db = fh_gpu_dqn_collector_batch(t->gpu);
        return fh_gpu_curiosity_fit(t->gpu_curiosity, db.states, db.actions, db.exposures,
                                    db.bars, fh_gpu_dqn_collector_market_features(t->gpu), n,
                                    &t->update_rng, loss, err);
    }
    return fh_curiosity_fit(loss, &t->curiosity, &t->curiosity_ws, t->batch.states,
                            t->batch.actions, t->batch.exposures, t->batch.bars, n,
                            &t->train_market, &t->cfg, &t->update_rng, err);
}

fh_status fh_q_backend_sync_host(fh_q_trainer *t, fh_error *err)
{
    fh_status st = FH_OK;
    if (t->gpu && (st = fh_gpu_dqn_collector_episodes(t->gpu, t->episodes, err)) != FH_OK)
        return st;
    if (t->gpu_update &&
        ((st = fh_gpu_q_update_download(t->gpu_update, &t->q, t->pqn ? NULL : &t->target,
                                        err)) != FH_OK ||
         (!t->pqn && (st = fh_gpu_q_update_download_ring(t->gpu_update, &t->ring, err)) != FH_OK)))
        return st;
    if (t->gpu_curiosity)
        st = fh_gpu_curiosity_download(t->gpu_curiosity, &t->curiosity, err);
    return st;
}

void fh_q_backend_destroy(fh_q_trainer *t)
{
    fh_gpu_curiosity_destroy(t->gpu_curiosity);
    fh_gpu_q_update_destroy(t->gpu_update);
    fh_gpu_dqn_collector_destroy(t->gpu);
}

#else /* no CUDA: the host's code only (fh_device_select never chooses the GPU) */

fh_status fh_q_backend_create_collector(fh_q_trainer *t, fh_error *err)
{
    (void)t;
    return fh_error_set(err, FH_ERR_FAILURE, "this build has no CUDA");
}

fh_status fh_q_backend_create_update(fh_q_trainer *t, fh_error *err)
{
    (void)t;
    (void)err;
    return FH_OK;
}

fh_status fh_q_backend_set_episodes(fh_q_trainer *t, fh_error *err)
{
    (void)t;
    (void)err;
    return FH_OK;
}

fh_status fh_q_backend_collect(fh_q_trainer *t, float epsilon, fh_error *err)
{
    return fh_dqn_collect_cpu(t->q.params, t->pqn, t->curiosity.params, &t->cfg.env,
                              &t->train_market, t->episodes, epsilon, &t->batch, err);
}

fh_status fh_q_backend_update(fh_q_trainer *t, const fh_q_update_config *qc,
                              fh_q_stats *stats, fh_error *err)
{
    return t->pqn ? fh_pqn_update(stats, &t->q, &t->ws, &t->batch, qc, &t->update_rng, err)
                  : fh_q_dqn_iteration(t, qc, stats, err);
}

fh_status fh_q_backend_curiosity_fit(fh_q_trainer *t, double *loss, fh_error *err)
{
    const int64_t n = (int64_t)t->cfg.episodes * t->cfg.steps;
    return fh_curiosity_fit(loss, &t->curiosity, &t->curiosity_ws, t->batch.states,
                            t->batch.actions, t->batch.exposures, t->batch.bars, n,
                            &t->train_market, &t->cfg, &t->update_rng, err);
}

fh_status fh_q_backend_sync_host(fh_q_trainer *t, fh_error *err)
{
    (void)t;
    (void)err;
    return FH_OK;
}

void fh_q_backend_destroy(fh_q_trainer *t) { (void)t; }

#endif
