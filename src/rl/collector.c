/* collector.c — CPU/GPU collector dispatch for the trainer (collector.h). */
#include "rl/collector.h"

#include <string.h>

#if FH_HAVE_CUDA
#include "cuda/gpu_ppo_collector.h"
#endif

fh_status fh_collector_create(fh_trainer *t, fh_error *err)
{
    const fh_train_config *cfg = &t->cfg;
#if FH_HAVE_CUDA
    if (t->device.use_gpu) {
        fh_status st = fh_gpu_ppo_collector_create(&t->gpu, &t->device, cfg->episodes,
                                                   cfg->steps, &cfg->env, &t->train_view,
                                                   cfg->seed, cfg->kernel, cfg->precision, NULL, err);
        if (st != FH_OK)
            return st;
        t->episodes = fh_gpu_ppo_collector_episodes(t->gpu);
        return FH_OK;
    }
#endif
    fh_status st = fh_cpu_collector_init(&t->cpu, cfg->episodes, cfg->steps, &cfg->env,
                                         &t->train_view, cfg->seed, err);
    if (st == FH_OK)
        t->episodes = t->cpu.episodes;
    return st;
}

fh_status fh_collector_collect(fh_trainer *t, const fh_collect_params *p, fh_error *err)
{
#if FH_HAVE_CUDA
    if (t->gpu)
        return fh_gpu_ppo_collector_collect(t->gpu, p, &t->batch, err);
#endif
    return fh_cpu_collect_rollouts(&t->cpu, p, &t->batch, err);
}

fh_status fh_collector_set_episodes(fh_trainer *t, fh_error *err)
{
#if FH_HAVE_CUDA
    if (t->gpu)
        return fh_gpu_ppo_collector_upload_episodes(t->gpu, err);
#endif
    (void)t;
    (void)err;
    return FH_OK; /* the CPU collector reads t->episodes directly */
}

void fh_collector_destroy(fh_trainer *t)
{
#if FH_HAVE_CUDA
    if (t->gpu)
        fh_gpu_ppo_collector_destroy(t->gpu);
    t->gpu = NULL;
#endif
    fh_cpu_collector_free(&t->cpu);
    t->episodes = NULL;
}
