/* dist_settings.h — the [dist] settings of a `foxhunt train` invocation checked and
 * resolved (issue 22): one process as before, the launcher of `--gpus K` (one host: it
 * starts K ranks of itself, dist/launch.h), or one rank of a data-parallel run (`--world
 * K` with --rank or a launcher's environment, and --rendezvous; the --gpus launcher
 * starts its ranks this way too). Pure: the launcher's environment is passed in, so
 * tests/dist/test_dist_settings.c checks every refusal on the CPU. */
#ifndef FOXHUNT_DIST_SETTINGS_H
#define FOXHUNT_DIST_SETTINGS_H

#include "dist/dist_env.h"
#include "foxhunt/train_config.h"

typedef enum {
    FH_DIST_OFF,    /* one process, no NCCL: today's path */
    FH_DIST_LAUNCH, /* --gpus K: start K ranks on this host and wait for them */
    FH_DIST_RANK    /* one rank of a run of `world` */
} fh_dist_mode;

typedef struct {
    fh_dist_mode mode;
    int gpus;               /* FH_DIST_LAUNCH */
    int world, rank;        /* FH_DIST_RANK */
    int local_rank;         /* the launcher's (-1: none; the rank then picks GPU rank % count) */
    char rank_source[128];  /* "--rank" or the launcher variable it came from */
} fh_dist_settings;

/* cfg's [dist] keys and env (the launcher's, fh_launcher_env_read): FH_ERR_INPUT naming
 * the flags when they contradict each other, when a rank has no rank or no rendezvous
 * file, when the run is not PPO with its update on a GPU, or when the episodes and the
 * minibatch do not split evenly over the ranks (dist/partition.h). */
fh_status fh_dist_settings_resolve(const fh_train_config *cfg, const fh_launcher_env *env,
                                   fh_dist_settings *out, fh_error *err);
/* The same with this process's environment, read only when cfg asks for it (--world
 * without --rank): a launcher's odd variable never troubles a run that is not one. */
fh_status fh_dist_settings_of_process(const fh_train_config *cfg, fh_dist_settings *out,
                                      fh_error *err);

#endif
