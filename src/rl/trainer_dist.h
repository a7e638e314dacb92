/* trainer_dist.h — the PPO trainer's data-parallel side (issue 22, docs/SCALING.md):
 * the hooks trainer.c calls where a rank of a run differs from one process
 * (trainer_dist.c). Built without NCCL (FH_HAVE_NCCL 0) every hook gives the one-process
 * answer, so trainer.c holds no #if of its own. */
#ifndef FOXHUNT_RL_TRAINER_DIST_H
#define FOXHUNT_RL_TRAINER_DIST_H

#include <stdint.h>

#include "dist/dist_settings.h"
#include "dist/partition.h"
#include "foxhunt/trainer.h"
#include "rl/iteration_sums.h"

struct fh_dist; /* dist/dist.h: only with NCCL, so the hooks take it opaque */

/* This process's share of a data-parallel run, from cfg's [dist] keys. */
typedef struct {
    int on;               /* 1: one rank of a run */
    fh_dist_settings ds;
    fh_partition part;
} fh_rank_plan;

/* The episodes a checkpoint holds: one process's, or every rank's gathered. */
typedef struct {
    int n;
    fh_episode_state *episodes;
    double *episode_return;
    int32_t *episode_length;
} fh_episode_set;

/* ---- init ---- */

/* rp from cfg's [dist] keys: rp->on 0 for one process; FH_ERR_INPUT for the launcher's
 * flags (a trainer is one of its ranks) and, built without NCCL, for any rank. */
fh_status fh_trainer_dist_plan(const fh_train_config *cfg, fh_rank_plan *rp, fh_error *err);
/* A rank (rp->on) meets the others before the rest of init, so that a failure of any
 * later step is told to them: its GPU chosen into t->device, the communicator made. */
fh_status fh_trainer_dist_join(fh_trainer *t, const fh_rank_plan *rp, struct fh_dist **out,
                               fh_error *err);
/* init failed after the join (err says why): the others told, d freed. */
void fh_trainer_dist_abandon(struct fh_dist *d, const fh_error *err);
/* init succeeded: d handed to t's GPU update, which owns it from then on (and releases
 * it after a failure too). A rank without the GPU update is a bug: d abandoned. */
fh_status fh_trainer_dist_attach(fh_trainer *t, struct fh_dist *d, fh_error *err);

/* ---- the run ---- */

/* 1 when this process is a rank of a data-parallel run (also of one rank). */
int fh_trainer_dist_present(const fh_trainer *t);
/* The ranks of the run (1 for one process). */
int fh_trainer_dist_world(const fh_trainer *t);
/* The run's environment steps per iteration: every rank's episodes (t->share holds this
 * rank's share) x the steps. */
static inline int64_t fh_trainer_dist_run_steps(const fh_trainer *t)
{
    return (int64_t)t->share.episodes * t->cfg.steps * fh_trainer_dist_world(t);
}
/* 1 on the rank that writes the run directory (rank 0, or the one process). */
int fh_trainer_dist_leads(const fh_trainer *t);
/* After a failure on this rank: the others are told and stop (dist.h). */
void fh_trainer_dist_fail(const fh_trainer *t, const fh_error *err);
/* After the run failed on this rank: when another rank's failure stopped it, err holds
 * that cause, then this rank's message. */
void fh_trainer_dist_blame(const fh_trainer *t, fh_error *err);

/* The iteration's metric sums over every rank's episodes (sums, so the metrics are the
 * run's); nothing for one process. */
fh_status fh_trainer_dist_reduce_sums(const fh_trainer *t, fh_iteration_sums *s,
                                      fh_error *err);
/* *stop set on every rank when it is set on any (every rank must stop after the same
 * iteration, or the others would wait in the next one's collectives). */
fh_status fh_trainer_dist_agree_stop(const fh_trainer *t, int *stop, fh_error *err);
/* FH_OK while every rank is there (dist.h); nothing for one process. */
fh_status fh_trainer_dist_check(const fh_trainer *t, fh_error *err);
/* After the run's last collective: the communicator closed everywhere. */
fh_status fh_trainer_dist_finish(fh_trainer *t, fh_error *err);

/* Rank 0's line on the run's ranks (each one's share, the NCCL library; run: the run's
 * settings), or "" for one process. */
void fh_trainer_dist_describe(const fh_trainer *t, const fh_train_config *run, char *out,
                              size_t n);
/* Without CUDA graphs, the update's time in its all-reduces this iteration, for the
 * progress line; else "". */
void fh_trainer_dist_progress(const fh_trainer *t, double update_seconds, char *out, size_t n);

/* ---- checkpoints ---- */

/* After the host's copy of t was brought back (every rank at the same iterations):
 * every rank's episodes gathered (for rank 0's file) and the ranks' networks checked
 * equal; nothing for one process. */
fh_status fh_trainer_dist_gather(fh_trainer *t, fh_error *err);
/* The episodes the last gather collected, into *e (the run's N); e left as it is for
 * one process. */
fh_status fh_trainer_dist_gathered(const fh_trainer *t, fh_episode_set *e, fh_error *err);

#endif
