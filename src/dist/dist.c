/* dist.c — see dist.h. */
#include "dist/dist.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cuda/cuda_check.h"
#include "dist/nccl_check.h"
#include "dist/rendezvous.h"
#include "foxhunt/timing.h"

#define WATCHDOG_SECONDS 0.1
#define REASON_MAX 640

enum { WD_IDLE, WD_FORMING, WD_RUNNING, WD_STOPPING };

struct fh_dist {
    fh_nccl nccl;
    ncclComm_t comm;
    int world, rank, device;
    char rendezvous[FH_RDV_PATH_CHARS];
    double timeout_s;
    int graphs;
    cudaStream_t stream;       /* the host's reductions */
    void *scratch;             /* device bytes for them */
    size_t scratch_bytes;
    void *slots[FH_DIST_SLOTS]; /* gathered host buffers */
    size_t slot_bytes[FH_DIST_SLOTS];
    /* the watchdog */
    pthread_t watchdog;
    int watchdog_started;
    atomic_int phase;
    double forming_deadline;
    pthread_mutex_t lock;      /* the abort, from either thread */
    atomic_int aborted;        /* the communicator was aborted: reason says why */
    int finished;              /* the communicator was destroyed by fh_dist_finish */
    char reason[REASON_MAX];
};

/* ---- NCCL's names for the reducer's types ---- */

static ncclDataType_t nccl_type(fh_reduce_type t)
{
    switch (t) {
    case FH_REDUCE_F32: return ncclFloat32;
    case FH_REDUCE_F64: return ncclFloat64;
    case FH_REDUCE_I32: return ncclInt32;
    case FH_REDUCE_I64: return ncclInt64;
    case FH_REDUCE_U64: return ncclUint64;
    case FH_REDUCE_U8: return ncclUint8;
    }
    return ncclFloat32;
}

static size_t type_bytes(fh_reduce_type t)
{
    switch (t) {
    case FH_REDUCE_F32: case FH_REDUCE_I32: return 4;
    case FH_REDUCE_F64: case FH_REDUCE_I64: case FH_REDUCE_U64: return 8;
    case FH_REDUCE_U8: return 1;
    }
    return 4;
}

static ncclRedOp_t nccl_op(fh_reduce_op op)
{
    switch (op) {
    case FH_REDUCE_SUM: return ncclSum;
    case FH_REDUCE_AVG: return ncclAvg;
    case FH_REDUCE_MIN: return ncclMin;
    case FH_REDUCE_MAX: return ncclMax;
    }
    return ncclSum;
}

/* ---- the device ---- */

int fh_dist_device_count(fh_error *err)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        fh_error_set(err, FH_ERR_INPUT, "no CUDA device: %s",
                     e == cudaSuccess ? "the driver reports no GPU" : cudaGetErrorString(e));
        cudaGetLastError();
        return 0;
    }
    return count;
}

fh_status fh_dist_select_device(int local_rank, int rank, fh_device_info *info, fh_error *err)
{
    memset(info, 0, sizeof *info);
    info->device_index = -1;
    int count = fh_dist_device_count(err);
    if (count == 0) {
        fh_error_prefix(err, "data-parallel training needs a GPU a rank (rank %d has none): ",
                        rank);
        return FH_ERR_INPUT;
    }
    if (local_rank >= count)
        return fh_error_set(err, FH_ERR_INPUT, "rank %d is local rank %d on a host of %d GPUs: "
                            "start at most %d ranks a host", rank, local_rank, count, count);
    int index = local_rank >= 0 ? local_rank : rank % count;
    if (!fh_device_info_fill(info, index))
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: rank %d: %s", __FILE__, __LINE__, rank,
                            info->reason);
    return FH_OK;
}

/* ---- the watchdog ---- */

/* Aborts the communicator once (either thread), noting why. */
static void abort_comm(fh_dist *d, const char *reason)
{
    pthread_mutex_lock(&d->lock);
    if (!atomic_load(&d->aborted) && d->comm && !d->finished) {
        snprintf(d->reason, sizeof d->reason, "%s", reason);
        atomic_store(&d->aborted, 1);
        d->nccl.ncclCommAbort(d->comm);
        d->comm = NULL;
    }
    pthread_mutex_unlock(&d->lock);
}

static void sleep_seconds(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static void *watchdog_main(void *arg)
{
    fh_dist *d = arg;
    char message[REASON_MAX - 64], reason[REASON_MAX];
    for (;;) {
        sleep_seconds(WATCHDOG_SECONDS);
        int phase = atomic_load(&d->phase);
        if (phase == WD_STOPPING)
            return NULL;
        int told = fh_rendezvous_abort_read(d->rendezvous, message, sizeof message);
        if (phase == WD_FORMING) { /* ncclCommInitRank cannot be aborted: end the process */
            if (told) {
                fprintf(stderr, "foxhunt train: rank %d: stopped while the ranks connected: "
                        "%s\n", d->rank, message);
                _exit(1);
            }
            if (fh_clock_seconds() > d->forming_deadline) {
                snprintf(reason, sizeof reason, "rank %d: NCCL's communicator did not form "
                         "within %.0f s (--dist-timeout)", d->rank, d->timeout_s);
                fh_error ignored;
                fh_rendezvous_abort_write(d->rendezvous, reason, &ignored);
                fprintf(stderr, "foxhunt train: %s\n", reason);
                _exit(1);
            }
            continue;
        }
        if (phase != WD_RUNNING)
            continue;
        if (told) {
            snprintf(reason, sizeof reason, "the run was stopped: %s", message);
            abort_comm(d, reason);
            return NULL;
        }
        ncclResult_t async = ncclSuccess;
        pthread_mutex_lock(&d->lock);
        int live = d->comm && !atomic_load(&d->aborted) && !d->finished;
        if (live && d->nccl.ncclCommGetAsyncError(d->comm, &async) != ncclSuccess)
            async = ncclSuccess; /* the query itself failing says nothing of the peers */
        pthread_mutex_unlock(&d->lock);
        if (live && async != ncclSuccess && async != ncclInProgress) {
            snprintf(reason, sizeof reason, "rank %d: NCCL reported an error between the ranks: "
                     "%s", d->rank, d->nccl.ncclGetErrorString(async));
            fh_error ignored;
            fh_rendezvous_abort_write(d->rendezvous, reason, &ignored);
            abort_comm(d, reason);
            return NULL;
        }
    }
}

static void watchdog_stop(fh_dist *d)
{
    atomic_store(&d->phase, WD_STOPPING);
    if (d->watchdog_started)
        pthread_join(d->watchdog, NULL);
    d->watchdog_started = 0;
}

/* ---- create / free ---- */

void fh_dist_free(fh_dist *d)
{
    if (!d)
        return;
    watchdog_stop(d);
    if (d->stream)
        cudaStreamSynchronize(d->stream);
    if (d->comm && !atomic_load(&d->aborted) && !d->finished)
        d->nccl.ncclCommDestroy(d->comm);
    if (d->stream)
        cudaStreamDestroy(d->stream);
    cudaFree(d->scratch);
    for (int i = 0; i < FH_DIST_SLOTS; i++)
        free(d->slots[i]);
    pthread_mutex_destroy(&d->lock);
    /* NCCL stays loaded: its threads may outlive a communicator (dlclose would pull the
     * code from under them); the process's end unloads it */
    free(d);
}

/* The ranks meet: rank 0 makes the id and writes it, the others read it; every rank
 * arrives and waits for all. */
static fh_status meet(fh_dist *d, ncclUniqueId *id, fh_error *err)
{
    fh_status st;
    if (d->rank == 0) {
        NCCL_CHECK(d->nccl.ncclGetUniqueId(id), &d->nccl, NULL, err);
        st = fh_rendezvous_publish(d->rendezvous, d->world, id, sizeof *id, err);
    } else {
        st = fh_rendezvous_wait(d->rendezvous, d->world, id, sizeof *id, d->timeout_s, err);
    }
    if (st != FH_OK)
        return st;
    uint64_t nonce = fh_rendezvous_nonce(id, sizeof *id);
    if ((st = fh_rendezvous_arrive(d->rendezvous, d->rank, nonce, err)) != FH_OK)
        return st;
    return fh_rendezvous_barrier(d->rendezvous, d->world, nonce, d->timeout_s, err);
fail:
    return err->status;
}

fh_status fh_dist_create(fh_dist **out, const fh_dist_options *o, const fh_device_info *dev,
                         fh_error *err)
{
    *out = NULL;
    if (!o->rendezvous || strlen(o->rendezvous) >= FH_RDV_PATH_CHARS)
        return fh_error_set(err, FH_ERR_INPUT, "--rendezvous: a path of at most %d characters "
                            "is needed", FH_RDV_PATH_CHARS - 1);
    fh_dist *d = calloc(1, sizeof *d);
    if (!d)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
    pthread_mutex_init(&d->lock, NULL);
    atomic_init(&d->phase, WD_IDLE);
    atomic_init(&d->aborted, 0);
    d->world = o->world;
    d->rank = o->rank;
    d->device = dev->device_index;
    d->timeout_s = o->timeout_s;
    d->graphs = o->graphs;
    snprintf(d->rendezvous, sizeof d->rendezvous, "%s", o->rendezvous);
    fh_search_env env;
    fh_search_env_read(&env);
    fh_status st = fh_nccl_load(&d->nccl, o->nccl_library, &env, err);
    if (st != FH_OK)
        goto fail_status;
    CUDA_CHECK(cudaSetDevice(d->device), err);
    ncclUniqueId id;
    if ((st = meet(d, &id, err)) != FH_OK)
        goto fail_status;
    /* ncclCommInitRank blocks until every rank joins and cannot be aborted: the
     * watchdog ends the process past the timeout (dist.h) */
    d->forming_deadline = fh_clock_seconds() + d->timeout_s;
    atomic_store(&d->phase, WD_FORMING);
    if (pthread_create(&d->watchdog, NULL, watchdog_main, d) != 0) {
        st = fh_error_set(err, FH_ERR_FAILURE, "%s:%d: cannot start the watchdog thread: %s",
                          __FILE__, __LINE__, strerror(errno));
        goto fail_status;
    }
    d->watchdog_started = 1;
    NCCL_CHECK(d->nccl.ncclCommInitRank(&d->comm, d->world, id, d->rank), &d->nccl, NULL, err);
    atomic_store(&d->phase, WD_RUNNING);
    if (d->rank == 0) /* every rank is past the files: the path is free for the next run */
        fh_rendezvous_remove(d->rendezvous, d->world);
    CUDA_CHECK(cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking), err);
    *out = d;
    return FH_OK;
fail:
fail_status:
    watchdog_stop(d); /* its exit must not pre-empt this error */
    fh_dist_fail(d, err->message);
    fh_dist_free(d);
    return err->status;
}

int fh_dist_rank(const fh_dist *d)
{
    return d->rank;
}

int fh_dist_world(const fh_dist *d)
{
    return d->world;
}

const fh_nccl *fh_dist_nccl(const fh_dist *d)
{
    return &d->nccl;
}

/* ---- health ---- */

fh_status fh_dist_check(fh_dist *d, fh_error *err)
{
    if (atomic_load(&d->aborted))
        return fh_error_set(err, FH_ERR_FAILURE, "rank %d: %s", d->rank, d->reason);
    if (d->finished || !d->comm)
        return fh_error_set(err, FH_ERR_FAILURE, "rank %d: the ranks' communicator is closed",
                            d->rank);
    return FH_OK;
}

int fh_dist_aborted(const fh_dist *d)
{
    return atomic_load(&((fh_dist *)d)->aborted);
}

void fh_dist_fail(fh_dist *d, const char *message)
{
    if (!d)
        return;
    char reason[REASON_MAX];
    snprintf(reason, sizeof reason, "rank %d failed: %.500s", d->rank, message);
    int by_another = atomic_load(&d->aborted); /* then the cause is told already */
    abort_comm(d, reason); /* first: the watchdog then takes the file below as told */
    if (!by_another) {
        fh_error ignored;
        fh_rendezvous_abort_write(d->rendezvous, reason, &ignored);
    }
}

fh_status fh_dist_finish(fh_dist *d, fh_error *err)
{
    fh_status st = fh_dist_check(d, err);
    if (st != FH_OK)
        return st;
    watchdog_stop(d);
    CUDA_CHECK(cudaStreamSynchronize(d->stream), err);
    pthread_mutex_lock(&d->lock);
    ncclResult_t r = d->nccl.ncclCommDestroy(d->comm);
    d->comm = NULL;
    d->finished = 1;
    pthread_mutex_unlock(&d->lock);
    if (r != ncclSuccess)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: ncclCommDestroy failed: %s", __FILE__,
                            __LINE__, d->nccl.ncclGetErrorString(r));
    return FH_OK;
fail:
    return err->status;
}

/* ---- the host's reductions ---- */

static fh_status scratch_reserve(fh_dist *d, size_t bytes, fh_error *err)
{
    if (bytes <= d->scratch_bytes)
        return FH_OK;
    cudaFree(d->scratch);
    d->scratch = NULL;
    d->scratch_bytes = 0;
    CUDA_CHECK(cudaMalloc(&d->scratch, bytes), err);
    d->scratch_bytes = bytes;
    return FH_OK;
fail:
    return err->status;
}

fh_status fh_dist_allreduce_host(fh_dist *d, void *buf, size_t count, fh_reduce_type type,
                                 fh_reduce_op op, fh_error *err)
{
    size_t bytes = count * type_bytes(type);
    fh_status st = fh_dist_check(d, err);
    if (st != FH_OK || count == 0)
        return st;
    if ((st = scratch_reserve(d, bytes, err)) != FH_OK)
        return st;
    CUDA_CHECK(cudaMemcpyAsync(d->scratch, buf, bytes, cudaMemcpyHostToDevice, d->stream), err);
    NCCL_CHECK(d->nccl.ncclAllReduce(d->scratch, d->scratch, count, nccl_type(type),
                                     nccl_op(op), d->comm, d->stream), &d->nccl, d->comm, err);
    CUDA_CHECK(cudaMemcpyAsync(buf, d->scratch, bytes, cudaMemcpyDeviceToHost, d->stream), err);
    CUDA_CHECK(cudaStreamSynchronize(d->stream), err);
    return fh_dist_check(d, err); /* an abort meanwhile leaves buf meaningless */
fail:
    if (atomic_load(&d->aborted))
        fh_dist_check(d, err);
    return err->status;
}

void *fh_dist_allgather_host(fh_dist *d, int slot, const void *send, size_t bytes,
                             fh_error *err)
{
    size_t all = bytes * (size_t)d->world;
    if (slot < 0 || slot >= FH_DIST_SLOTS) {
        fh_error_set(err, FH_ERR_FAILURE, "%s:%d: slot %d", __FILE__, __LINE__, slot);
        return NULL;
    }
    if (fh_dist_check(d, err) != FH_OK || scratch_reserve(d, all + bytes, err) != FH_OK)
        return NULL;
    if (d->slot_bytes[slot] != all) {
        free(d->slots[slot]);
        d->slot_bytes[slot] = 0;
        if (!(d->slots[slot] = malloc(all ? all : 1))) {
            fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
            return NULL;
        }
        d->slot_bytes[slot] = all;
    }
    char *sendbuf = (char *)d->scratch + all;
    CUDA_CHECK(cudaMemcpyAsync(sendbuf, send, bytes, cudaMemcpyHostToDevice, d->stream), err);
    NCCL_CHECK(d->nccl.ncclAllGather(sendbuf, d->scratch, bytes, ncclUint8, d->comm, d->stream),
               &d->nccl, d->comm, err);
    CUDA_CHECK(cudaMemcpyAsync(d->slots[slot], d->scratch, all, cudaMemcpyDeviceToHost,
                               d->stream), err);
    CUDA_CHECK(cudaStreamSynchronize(d->stream), err);
    if (fh_dist_check(d, err) != FH_OK)
        return NULL;
    return d->slots[slot];
fail:
    if (atomic_load(&d->aborted))
        fh_dist_check(d, err);
    return NULL;
}

const void *fh_dist_gathered(const fh_dist *d, int slot, size_t *bytes)
{
    if (slot < 0 || slot >= FH_DIST_SLOTS) {
        *bytes = 0;
        return NULL;
    }
    *bytes = d->slot_bytes[slot];
    return d->slots[slot];
}

/* ---- the update's reducer ---- */

static fh_status reducer_allreduce(void *ctx, void *buf, size_t count, fh_reduce_type type,
                                   fh_reduce_op op, cudaStream_t stream, fh_error *err)
{
    fh_dist *d = ctx;
    fh_status st = fh_dist_check(d, err);
    if (st != FH_OK)
        return st;
    NCCL_CHECK(d->nccl.ncclAllReduce(buf, buf, count, nccl_type(type), nccl_op(op), d->comm,
                                     stream), &d->nccl, d->comm, err);
    return FH_OK;
fail:
    return err->status;
}

static fh_status reducer_group(void *ctx, int begin, fh_error *err)
{
    fh_dist *d = ctx;
    if (begin)
        NCCL_CHECK(d->nccl.ncclGroupStart(), &d->nccl, NULL, err);
    else
        NCCL_CHECK(d->nccl.ncclGroupEnd(), &d->nccl, NULL, err);
    return FH_OK;
fail:
    return err->status;
}

static fh_status reducer_finish(void *ctx, fh_error *err)
{
    return fh_dist_finish(ctx, err);
}

/* The update is done with d: when the run did not reach its end (fh_dist_finish), this
 * rank stops early, and the others are told. */
static void reducer_release(void *ctx)
{
    fh_dist *d = ctx;
    if (d && !d->finished && !atomic_load(&d->aborted))
        fh_dist_fail(d, "it stopped before the run's end");
    fh_dist_free(d);
}

fh_update_reducer fh_dist_reducer(fh_dist *d)
{
    fh_update_reducer r = {.ctx = d, .world = d->world, .graphs = d->graphs,
                           .allreduce = reducer_allreduce, .group = reducer_group,
                           .finish = reducer_finish, .release = reducer_release};
    return r;
}
