/* dist.h — one rank of a data-parallel run (issue 22, docs/SCALING.md): NCCL loaded
 * (nccl_loader.h), the ranks met through the rendezvous file (rendezvous.h), the
 * communicator, a stream and scratch for the host's reductions (the iteration's metric
 * sums, the stop flag, the episodes gathered for a checkpoint), and a watchdog thread.
 * Built with the CUDA toolkit and nccl.h (FH_HAVE_NCCL).
 *
 * Failure, so that no rank hangs: a rank that fails calls fh_dist_fail (the others are
 * told through PATH.abort, and its communicator aborted); each rank's watchdog polls
 * PATH.abort and NCCL's asynchronous error every 100 ms and aborts the communicator
 * (ncclCommAbort: NCCL's kernels waiting for a dead peer return), so a rank blocked in
 * a collective comes back and fh_dist_check reports why. While the communicator forms
 * (ncclCommInitRank blocks and cannot be aborted) the watchdog ends the process after
 * the timeout, or at once on PATH.abort, with the reason on stderr. */
#ifndef FOXHUNT_DIST_DIST_H
#define FOXHUNT_DIST_DIST_H

#include <stddef.h>

#include "cuda/gpu_ppo_update.h" /* fh_update_reducer, fh_reduce_type, fh_reduce_op */
#include "dist/nccl_loader.h"
#include "foxhunt/device.h"
#include "foxhunt/error.h"

typedef struct fh_dist fh_dist;

typedef struct {
    int world, rank;
    const char *rendezvous;   /* the id file (rendezvous.h) */
    const char *nccl_library; /* --nccl-library, or NULL/"" to search */
    double timeout_s;         /* rendezvous and communicator */
    int graphs;               /* the update's reductions inside its graphs */
} fh_dist_options;

/* The GPU this rank uses: local_rank when the launcher gave one, else rank % the GPUs
 * on this host; info as fh_device_select fills it. FH_ERR_INPUT when there is none. */
fh_status fh_dist_select_device(int local_rank, int rank, fh_device_info *info, fh_error *err);
/* CUDA devices on this host (0 with the reason in err when none). */
int fh_dist_device_count(fh_error *err);

/* Loads NCCL, meets the other ranks, makes the communicator on dev. On failure
 * everything is released and, once the rendezvous file was read, the others are told
 * (PATH.abort). */
fh_status fh_dist_create(fh_dist **out, const fh_dist_options *o, const fh_device_info *dev,
                         fh_error *err);
/* Safe on NULL; destroys the communicator unless it was aborted or finished. */
void fh_dist_free(fh_dist *d);

int fh_dist_rank(const fh_dist *d);
int fh_dist_world(const fh_dist *d);
const fh_nccl *fh_dist_nccl(const fh_dist *d);

/* The update's reducer over d (gpu_ppo_update.h); the update owns d from then on. */
fh_update_reducer fh_dist_reducer(fh_dist *d);

/* Blocking, on d's stream, host memory in and out: all-reduce in place over count
 * elements, all-gather of `bytes` from each rank into slot `slot` (< FH_DIST_SLOTS) of
 * d's host buffers (world * bytes, rank order), returned, valid until that slot is
 * gathered again (fh_dist_gathered reads it back). */
#define FH_DIST_SLOTS 4
fh_status fh_dist_allreduce_host(fh_dist *d, void *buf, size_t count, fh_reduce_type type,
                                 fh_reduce_op op, fh_error *err);
void *fh_dist_allgather_host(fh_dist *d, int slot, const void *send, size_t bytes,
                             fh_error *err);
const void *fh_dist_gathered(const fh_dist *d, int slot, size_t *bytes);

/* FH_OK while the run's ranks are all there; else why not (the abort's reason). */
fh_status fh_dist_check(fh_dist *d, fh_error *err);
/* 1 once the communicator was aborted (another rank failed, NCCL reported an error, or
 * fh_dist_fail): fh_dist_check says why. */
int fh_dist_aborted(const fh_dist *d);
/* This rank failed with `message`: PATH.abort written for the others, the communicator
 * aborted. */
void fh_dist_fail(fh_dist *d, const char *message);
/* The run's last collective is done: the communicator destroyed (every rank calls it at
 * the same point), the watchdog stopped. */
fh_status fh_dist_finish(fh_dist *d, fh_error *err);

#endif
