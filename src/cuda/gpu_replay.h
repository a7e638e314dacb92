/* gpu_replay.h — DQN's replay ring on the device (issue 18): replay.c's ring, its
 * layout (states, actions, n-step returns, bootstrap states, discounts; `capacity`
 * slots) and its rules, with the transitions in device memory so that a collection
 * goes into it and minibatches come out of it without passing through the host.
 *
 * A push (replay_push_kernel, q_update.cu) turns each (episode n, step t) of a
 * collection on the device into fh_replay_push_batch's n-step transition, in the same
 * slots: the ring's bookkeeping (head, size, n_pushed) is the host's, computed as
 * replay.c computes it, so nothing comes back. Sampling and gathering are a step of the
 * update (q_sample_kernel, gpu_q_update.c). Available when FH_HAVE_CUDA. */
#ifndef FOXHUNT_CUDA_GPU_REPLAY_H
#define FOXHUNT_CUDA_GPU_REPLAY_H

#include <cuda_runtime_api.h>

#include "cuda/gpu_dqn_collector.h"
#include "cuda/kernels/q_update_args.h"
#include "foxhunt/dqn.h"

typedef struct {
    fh_replay_view view; /* the device buffers (capacity C) */
    int size;            /* filled slots, <= C */
    int head;            /* the next slot written; the oldest once size == C */
    int64_t n_pushed;    /* transitions pushed since init */
} fh_gpu_replay;

/* An empty ring of capacity >= 1 transitions (~444 bytes each) on the current device. */
fh_status fh_gpu_replay_init(fh_gpu_replay *r, int capacity, fh_error *err);
/* Safe on a zeroed or half-built ring. */
void fh_gpu_replay_free(fh_gpu_replay *r);
/* fh_replay_push_batch of the collection b (on the device) on stream, with push the
 * replay_push_kernel of the update's module. Asynchronous: b must stay as it is until
 * the stream has run it. */
fh_status fh_gpu_replay_push(fh_gpu_replay *r, cudaKernel_t push, cudaStream_t stream,
                             const fh_dqn_device_batch *b, int n_step, float gamma,
                             fh_error *err);
/* The ring into a host ring of the same capacity (checkpoints; tests: against
 * replay.c's), and a host ring (a resume's, validated) onto the device. */
fh_status fh_gpu_replay_download(const fh_gpu_replay *r, fh_replay *out, fh_error *err);
fh_status fh_gpu_replay_upload(fh_gpu_replay *r, const fh_replay *in, fh_error *err);

#endif
