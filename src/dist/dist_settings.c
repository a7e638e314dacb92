/* dist_settings.c — see dist_settings.h. */
#include "dist/dist_settings.h"

#include <stdio.h>
#include <string.h>

#include "dist/partition.h"

/* What every data-parallel run needs of the rest of the configuration. */
static fh_status check_run(const fh_train_config *cfg, const char *flag, int world,
                           fh_error *err)
{
    if (strcmp(cfg->algo, "ppo") != 0)
        return fh_error_set(err, FH_ERR_INPUT, "%s: data-parallel training is PPO's; --algo %s "
                            "trains on one GPU (leave %s out)", flag, cfg->algo, flag);
    if (strcmp(cfg->device, "cpu") == 0)
        return fh_error_set(err, FH_ERR_INPUT, "%s: data-parallel training runs on GPUs; "
                            "--device cpu contradicts it (use --device cuda or auto)", flag);
    if (strcmp(cfg->update_device, "cpu") == 0)
        return fh_error_set(err, FH_ERR_INPUT, "%s: the gradients are averaged on the GPUs; "
                            "--update-device cpu contradicts it (leave it at same)", flag);
    fh_partition p;
    fh_status st = fh_partition_make(world, 0, cfg->episodes, cfg->minibatch, &p, err);
    if (st != FH_OK)
        fh_error_prefix(err, "%s %d: ", flag, world);
    return st;
}

fh_status fh_dist_settings_resolve(const fh_train_config *cfg, const fh_launcher_env *env,
                                   fh_dist_settings *out, fh_error *err)
{
    memset(out, 0, sizeof *out);
    out->mode = FH_DIST_OFF;
    out->local_rank = -1;
    int has_rank = cfg->rank >= 0, has_rdv = cfg->rendezvous[0] != '\0';
    if (cfg->gpus > 0) {
        if (cfg->world > 0 || has_rank || has_rdv)
            return fh_error_set(err, FH_ERR_INPUT, "--gpus %d starts its ranks itself: leave "
                                "out %s (--world, --rank and --rendezvous are for a launcher "
                                "of your own)", cfg->gpus,
                                cfg->world > 0 ? "--world" : has_rank ? "--rank" : "--rendezvous");
        fh_status st = check_run(cfg, "--gpus", cfg->gpus, err);
        if (st != FH_OK)
            return st;
        out->mode = FH_DIST_LAUNCH;
        out->gpus = cfg->gpus;
        return FH_OK;
    }
    if (cfg->world == 0) {
        if (has_rank || has_rdv)
            return fh_error_set(err, FH_ERR_INPUT, "%s needs --world K (the number of ranks); "
                                "or use --gpus K on one host",
                                has_rank ? "--rank" : "--rendezvous");
        return FH_OK;
    }
    int world = cfg->world, rank = cfg->rank;
    if (has_rank) {
        snprintf(out->rank_source, sizeof out->rank_source, "--rank");
    } else if (env->rank >= 0) {
        rank = env->rank;
        snprintf(out->rank_source, sizeof out->rank_source, "%s", env->source);
    } else {
        return fh_error_set(err, FH_ERR_INPUT, "--world %d: this process has no rank: give "
                            "--rank R (0 .. %d), or start it with a launcher that sets one "
                            "(mpirun: OMPI_COMM_WORLD_RANK or PMI_RANK; srun: SLURM_PROCID)",
                            world, world - 1);
    }
    if (!has_rank && env->world >= 0 && env->world != world)
        return fh_error_set(err, FH_ERR_INPUT, "--world %d, but %s started %d ranks: give "
                            "--world %d", world, env->source, env->world, env->world);
    if (rank >= world)
        return fh_error_set(err, FH_ERR_INPUT, "rank %d (%s) is outside 0..%d for --world %d",
                            rank, out->rank_source, world - 1, world);
    if (!has_rdv)
        return fh_error_set(err, FH_ERR_INPUT, "--world %d needs --rendezvous FILE: a path "
                            "every rank can reach, through which rank 0 hands out NCCL's id",
                            world);
    fh_status st = check_run(cfg, "--world", world, err);
    if (st != FH_OK)
        return st;
    out->mode = FH_DIST_RANK;
    out->world = world;
    out->rank = rank;
    /* the launcher's local rank names this process's GPU only when its rank came from
     * the launcher too (the --gpus launcher's ranks give --rank: GPU rank % count) */
    out->local_rank = has_rank ? -1 : env->local_rank;
    return FH_OK;
}

fh_status fh_dist_settings_of_process(const fh_train_config *cfg, fh_dist_settings *out,
                                      fh_error *err)
{
    fh_launcher_env env;
    memset(&env, 0, sizeof env);
    env.rank = env.world = env.local_rank = -1;
    if (cfg->gpus == 0 && cfg->world > 0 && cfg->rank < 0) {
        fh_status st = fh_launcher_env_read(&env, err);
        if (st != FH_OK)
            return st;
    }
    return fh_dist_settings_resolve(cfg, &env, out, err);
}
