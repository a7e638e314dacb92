/* trainer_dist.c — the PPO trainer's data-parallel side (trainer_dist.h; issue 22,
 * docs/SCALING.md: cfg's [dist] keys make this process one rank of a run).
 *
 * The trainer runs its rank's share of the episodes (global indices [r N/K, (r+1) N/K),
 * the same random streams as one process's) and of every minibatch; the update averages
 * the ranks' gradients (its reducer, src/dist/dist.c, which it owns); the iteration's
 * metric sums are summed over the ranks; before a checkpoint every rank's episodes are
 * gathered, so rank 0 writes the file one process with all N episodes would write (the
 * config's N and minibatch are the run's), and a resume at any world size takes its
 * share of them. Rank 0 alone writes the run directory.
 *
 * Built without NCCL there is no rank: every hook gives the one-process answer (the
 * section at the end), and the plan refuses a rank. */
#include "rl/trainer_dist.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#if FH_HAVE_NCCL
#include "cuda/gpu_ppo_update.h"
#include "dist/dist.h"
#include "foxhunt/hash.h"
#endif

/* fh_trainer_dist_reduce_sums reduces the sums as two runs, one of doubles and one of
 * long longs: the layout it relies on. */
_Static_assert(offsetof(fh_iteration_sums, finished) == 5 * sizeof(double) &&
                   sizeof(fh_iteration_sums) ==
                       offsetof(fh_iteration_sums, finished) +
                           (2 + FH_BARRIER_N_KINDS + FH_N_ACTIONS) * sizeof(long long),
               "fh_iteration_sums: 5 doubles, then long longs only");

fh_status fh_trainer_dist_plan(const fh_train_config *cfg, fh_rank_plan *rp, fh_error *err)
{
    memset(rp, 0, sizeof *rp);
    fh_status st = fh_dist_settings_of_process(cfg, &rp->ds, err);
    if (st != FH_OK || rp->ds.mode == FH_DIST_OFF)
        return st;
    if (rp->ds.mode == FH_DIST_LAUNCH)
        return fh_error_set(err, FH_ERR_INPUT, "--gpus %d: `foxhunt train` starts the ranks; a "
                            "trainer is one of them (--world, --rank, --rendezvous)",
                            rp->ds.gpus);
#if !FH_HAVE_NCCL
    return fh_error_set(err, FH_ERR_INPUT, "--world %d: this foxhunt was built without NCCL's "
                        "header (nccl.h), so data-parallel training is unavailable: rebuild "
                        "with the CUDA toolkit and nccl.h (docs/SCALING.md)", rp->ds.world);
#else
    rp->on = 1;
    return fh_partition_make(rp->ds.world, rp->ds.rank, cfg->episodes, cfg->minibatch,
                             &rp->part, err);
#endif
}

#if FH_HAVE_NCCL

/* The host buffers a checkpoint's gather fills (dist.h's slots). */
enum { SLOT_EPISODES, SLOT_RETURNS, SLOT_LENGTHS, SLOT_HEADER };

/* What each rank tells the others before a checkpoint: where it is, and a hash of its
 * networks (params, Adam moments and steps), which must be the same on every rank. */
typedef struct {
    int64_t iteration;
    uint64_t weights;
} rank_header;

/* This rank's context (the update owns it: fh_gpu_ppo_update_set_reducer); NULL when
 * the run is one process. */
static fh_dist *trainer_dist(const fh_trainer *t)
{
    const fh_update_reducer *r = t->gpu_update ? fh_gpu_ppo_update_reducer(t->gpu_update) : NULL;
    return r ? r->ctx : NULL;
}

/* A hash of the three networks' params, Adam moments and steps. */
static uint64_t weights_hash(const fh_trainer *t)
{
    const fh_mlp *nets[3] = {&t->actor, &t->critic, &t->curiosity};
    uint64_t h = FH_FNV1A_OFFSET;
    for (int k = 0; k < 3; k++) {
        const fh_mlp *m = nets[k];
        h = fh_fnv1a(m->params, m->n_params * sizeof(float), h);
        h = fh_fnv1a(m->adam_m, m->n_params * sizeof(float), h);
        h = fh_fnv1a(m->adam_v, m->n_params * sizeof(float), h);
        h = fh_fnv1a(&m->adam_step, sizeof m->adam_step, h);
    }
    return h;
}

fh_status fh_trainer_dist_join(fh_trainer *t, const fh_rank_plan *rp, struct fh_dist **out,
                               fh_error *err)
{
    const fh_train_config *cfg = &t->cfg;
    fh_dist_options o = {rp->ds.world, rp->ds.rank, cfg->rendezvous, cfg->nccl_library,
                         (double)cfg->dist_timeout, cfg->dist_graphs};
    fh_status st = fh_dist_select_device(rp->ds.local_rank, rp->ds.rank, &t->device, err);
    if (st != FH_OK)
        return st;
    return fh_dist_create(out, &o, &t->device, err);
}

void fh_trainer_dist_abandon(struct fh_dist *d, const fh_error *err)
{
    fh_dist_fail(d, err->message);
    fh_dist_free(d);
}

fh_status fh_trainer_dist_attach(fh_trainer *t, struct fh_dist *d, fh_error *err)
{
    if (!t->gpu_update) { /* dist_settings.c refuses the CPU update: a bug if here */
        fh_status st = fh_error_set(err, FH_ERR_FAILURE, "%s:%d: a rank without the GPU update",
                                    __FILE__, __LINE__);
        fh_trainer_dist_abandon(d, err);
        return st;
    }
    fh_update_reducer r = fh_dist_reducer(d);
    return fh_gpu_ppo_update_set_reducer(t->gpu_update, &r, err);
}

int fh_trainer_dist_present(const fh_trainer *t)
{
    return trainer_dist(t) != NULL;
}

int fh_trainer_dist_world(const fh_trainer *t)
{
    fh_dist *d = trainer_dist(t);
    return d ? fh_dist_world(d) : 1;
}

int fh_trainer_dist_leads(const fh_trainer *t)
{
    fh_dist *d = trainer_dist(t);
    return d ? fh_dist_rank(d) == 0 : 1;
}

void fh_trainer_dist_fail(const fh_trainer *t, const fh_error *err)
{
    fh_dist *d = trainer_dist(t);
    if (d)
        fh_dist_fail(d, err ? err->message : "failed");
}

void fh_trainer_dist_blame(const fh_trainer *t, fh_error *err)
{
    fh_dist *d = trainer_dist(t);
    if (!d || !fh_dist_aborted(d))
        return;
    /* another rank's failure stopped this one: that is the cause to report */
    char here[FH_ERROR_MESSAGE_MAX / 2];
    snprintf(here, sizeof here, "%.500s", err->message);
    fh_dist_check(d, err);
    size_t used = strlen(err->message);
    if (used + 32 < sizeof err->message)
        snprintf(err->message + used, sizeof err->message - used, " (here then: %.*s)",
                 (int)(sizeof err->message - used - 16), here);
}

fh_status fh_trainer_dist_reduce_sums(const fh_trainer *t, fh_iteration_sums *s,
                                      fh_error *err)
{
    fh_dist *d = trainer_dist(t);
    if (!d)
        return FH_OK;
    size_t n_ints = (sizeof *s - offsetof(fh_iteration_sums, finished)) / sizeof(long long);
    fh_status st = fh_dist_allreduce_host(d, &s->reward_sum, 5, FH_REDUCE_F64, FH_REDUCE_SUM,
                                          err);
    if (st == FH_OK)
        st = fh_dist_allreduce_host(d, &s->finished, n_ints, FH_REDUCE_I64, FH_REDUCE_SUM, err);
    return st;
}

fh_status fh_trainer_dist_agree_stop(const fh_trainer *t, int *stop, fh_error *err)
{
    fh_dist *d = trainer_dist(t);
    if (!d)
        return FH_OK;
    int32_t flag = *stop;
    fh_status st = fh_dist_allreduce_host(d, &flag, 1, FH_REDUCE_I32, FH_REDUCE_MAX, err);
    *stop = flag != 0;
    return st;
}

fh_status fh_trainer_dist_check(const fh_trainer *t, fh_error *err)
{
    fh_dist *d = trainer_dist(t);
    return d ? fh_dist_check(d, err) : FH_OK;
}

fh_status fh_trainer_dist_finish(fh_trainer *t, fh_error *err)
{
    return trainer_dist(t) ? fh_gpu_ppo_update_finish_reducer(t->gpu_update, err) : FH_OK;
}

fh_status fh_trainer_dist_gather(fh_trainer *t, fh_error *err)
{
    fh_dist *d = trainer_dist(t);
    if (!d)
        return FH_OK;
    int N = t->share.episodes, K = fh_dist_world(d);
    rank_header mine = {t->iteration, weights_hash(t)};
    const rank_header *all = fh_dist_allgather_host(d, SLOT_HEADER, &mine, sizeof mine, err);
    if (!all)
        return err->status;
    for (int r = 0; r < K; r++) {
        if (all[r].iteration != mine.iteration)
            return fh_error_set(err, FH_ERR_FAILURE, "rank %d is at iteration %lld, rank %d at "
                                "%lld: the ranks fell out of step", r,
                                (long long)all[r].iteration, fh_dist_rank(d),
                                (long long)mine.iteration);
        if (all[r].weights != all[0].weights)
            return fh_error_set(err, FH_ERR_FAILURE, "after iteration %lld rank %d's networks "
                                "differ from rank 0's (hash %016llx, %016llx): the all-reduced "
                                "gradients were not the same on every rank; stopped rather "
                                "than train %d different models", (long long)mine.iteration, r,
                                (unsigned long long)all[r].weights,
                                (unsigned long long)all[0].weights, K);
    }
    if (!fh_dist_allgather_host(d, SLOT_EPISODES, t->episodes,
                                (size_t)N * sizeof(fh_episode_state), err) ||
        !fh_dist_allgather_host(d, SLOT_RETURNS, t->episode_return, (size_t)N * sizeof(double),
                                err) ||
        !fh_dist_allgather_host(d, SLOT_LENGTHS, t->episode_length,
                                (size_t)N * sizeof(int32_t), err))
        return err->status;
    return FH_OK;
}

fh_status fh_trainer_dist_gathered(const fh_trainer *t, fh_episode_set *e, fh_error *err)
{
    fh_dist *d = trainer_dist(t);
    if (!d)
        return FH_OK;
    size_t bytes[4];
    const void *eps = fh_dist_gathered(d, SLOT_EPISODES, &bytes[0]);
    const void *ret = fh_dist_gathered(d, SLOT_RETURNS, &bytes[1]);
    const void *len = fh_dist_gathered(d, SLOT_LENGTHS, &bytes[2]);
    const rank_header *h = fh_dist_gathered(d, SLOT_HEADER, &bytes[3]);
    size_t n = (size_t)t->share.episodes * (size_t)fh_dist_world(d);
    if (!eps || !h || h->iteration != t->iteration || bytes[0] != n * sizeof(fh_episode_state) ||
        bytes[1] != n * sizeof(double) || bytes[2] != n * sizeof(int32_t))
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: the ranks' episodes were not "
                            "gathered at iteration %lld before this checkpoint", __FILE__,
                            __LINE__, (long long)t->iteration);
    *e = (fh_episode_set){(int)n, (fh_episode_state *)eps, (double *)ret, (int32_t *)len};
    return FH_OK;
}

void fh_trainer_dist_describe(const fh_trainer *t, const fh_train_config *run, char *out,
                              size_t n)
{
    fh_dist *d = trainer_dist(t);
    fh_dist_settings ds;
    fh_error err;
    if (n)
        out[0] = 0;
    if (!d || fh_dist_settings_of_process(run, &ds, &err) != FH_OK)
        return;
    const fh_update_reducer *r = fh_gpu_ppo_update_reducer(t->gpu_update);
    const fh_nccl *nc = fh_dist_nccl(r->ctx);
    char version[32];
    fh_nccl_version_text(nc->version, version, sizeof version);
    snprintf(out, n, "data-parallel: rank 0 of %d (rank from %s); each rank %d episodes and "
             "%d rows of each minibatch (this run: %d and %d); NCCL %s (%s)%s%s%s", ds.world,
             ds.rank_source, t->share.episodes, t->share.minibatch, run->episodes, run->minibatch,
             version, nc->path, r->graphs ? "" : "; the update's steps one by one "
             "(--dist-graphs 0)", nc->note[0] ? "\nnote: " : "", nc->note);
}

void fh_trainer_dist_progress(const fh_trainer *t, double update_seconds, char *out, size_t n)
{
    const fh_update_reducer *r = trainer_dist(t) ? fh_gpu_ppo_update_reducer(t->gpu_update)
                                                 : NULL;
    if (n)
        out[0] = 0;
    if (r && !r->graphs) /* without graphs: the update's time in its all-reduces (events) */
        snprintf(out, n, "  all-reduce %.2f of %.1f ms", fh_gpu_ppo_update_reduce_ms(t->gpu_update),
                 update_seconds * 1e3);
}

#else /* !FH_HAVE_NCCL: one process always (fh_trainer_dist_plan refuses a rank) */

fh_status fh_trainer_dist_join(fh_trainer *t, const fh_rank_plan *rp, struct fh_dist **out,
                               fh_error *err)
{
    (void)t;
    (void)rp;
    (void)err;
    *out = NULL;
    return FH_OK;
}

void fh_trainer_dist_abandon(struct fh_dist *d, const fh_error *err)
{
    (void)d;
    (void)err;
}

fh_status fh_trainer_dist_attach(fh_trainer *t, struct fh_dist *d, fh_error *err)
{
    (void)t;
    (void)d;
    (void)err;
    return FH_OK;
}

int fh_trainer_dist_present(const fh_trainer *t)
{
    (void)t;
    return 0;
}

int fh_trainer_dist_world(const fh_trainer *t)
{
    (void)t;
    return 1;
}

int fh_trainer_dist_leads(const fh_trainer *t)
{
    (void)t;
    return 1;
}

void fh_trainer_dist_fail(const fh_trainer *t, const fh_error *err)
{
    (void)t;
    (void)err;
}

void fh_trainer_dist_blame(const fh_trainer *t, fh_error *err)
{
    (void)t;
    (void)err;
}

fh_status fh_trainer_dist_reduce_sums(const fh_trainer *t, fh_iteration_sums *s,
                                      fh_error *err)
{
    (void)t;
    (void)s;
    (void)err;
    return FH_OK;
}

fh_status fh_trainer_dist_agree_stop(const fh_trainer *t, int *stop, fh_error *err)
{
    (void)t;
    (void)stop;
    (void)err;
    return FH_OK;
}

fh_status fh_trainer_dist_check(const fh_trainer *t, fh_error *err)
{
    (void)t;
    (void)err;
    return FH_OK;
}

fh_status fh_trainer_dist_finish(fh_trainer *t, fh_error *err)
{
    (void)t;
    (void)err;
    return FH_OK;
}

fh_status fh_trainer_dist_gather(fh_trainer *t, fh_error *err)
{
    (void)t;
    (void)err;
    return FH_OK;
}

fh_status fh_trainer_dist_gathered(const fh_trainer *t, fh_episode_set *e, fh_error *err)
{
    (void)t;
    (void)e;
    (void)err;
    return FH_OK;
}

void fh_trainer_dist_describe(const fh_trainer *t, const fh_train_config *run, char *out,
                              size_t n)
{
    (void)t;
    (void)run;
    if (n)
        out[0] = 0;
}

void fh_trainer_dist_progress(const fh_trainer *t, double update_seconds, char *out, size_t n)
{
    (void)t;
    (void)update_seconds;
    if (n)
        out[0] = 0;
}

#endif
