/* gpu_replay.c — see gpu_replay.h. */
#include "cuda/gpu_replay.h"

#include <string.h>

#include "cuda/cuda_check.h"

#define PUSH_THREADS 256 /* one warp a transition */

fh_status fh_gpu_replay_init(fh_gpu_replay *r, int capacity, fh_error *err)
{
    memset(r, 0, sizeof *r);
    if (capacity < 1)
        return fh_error_set(err, FH_ERR_INPUT,
                            "replay capacity must be at least 1 transition, got %d", capacity);
    size_t c = (size_t)capacity;
    fh_replay_view *v = &r->view;
    CUDA_CHECK(cudaMalloc((void **)&v->states, c * FH_STATE_DIM * sizeof(float)), err);
    CUDA_CHECK(cudaMalloc((void **)&v->next_states, c * FH_STATE_DIM * sizeof(float)), err);
    CUDA_CHECK(cudaMalloc((void **)&v->actions, c * sizeof(int)), err);
    CUDA_CHECK(cudaMalloc((void **)&v->returns, c * sizeof(float)), err);
    CUDA_CHECK(cudaMalloc((void **)&v->discounts, c * sizeof(float)), err);
    v->capacity = capacity;
    return FH_OK;
fail:
    fh_error_prefix(err, "a device replay ring of %d transitions (%.1f MB): ", capacity,
                    (double)c * (2 * FH_STATE_DIM + 3) * 4 / 1e6);
    fh_gpu_replay_free(r);
    return err->status;
}

void fh_gpu_replay_free(fh_gpu_replay *r)
{
    void *bufs[] = {r->view.states, r->view.next_states, r->view.actions, r->view.returns,
                    r->view.discounts};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        cudaFree(bufs[i]);
    memset(r, 0, sizeof *r);
}

fh_status fh_gpu_replay_push(fh_gpu_replay *r, cudaKernel_t push, cudaStream_t stream,
                             const fh_dqn_device_batch *b, int n_step, float gamma,
                             fh_error *err)
{
    if (!r->view.states || r->view.capacity < 1)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: a push into a device ring that was "
                            "not initialised", __FILE__, __LINE__);
    if (b->n_episodes < 1 || b->n_steps < 1 || !b->states)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: a push of an empty collection (%d x %d)",
                            __FILE__, __LINE__, b->n_episodes, b->n_steps);
    if (n_step < 1)
        return fh_error_set(err, FH_ERR_INPUT, "n-step must be at least 1, got %d", n_step);
    if (!(gamma >= 0.0f && gamma <= 1.0f))
        return fh_error_set(err, FH_ERR_INPUT, "gamma must lie in [0, 1], got %g",
                            (double)gamma);
    const int C = r->view.capacity;
    const int64_t nl = (int64_t)b->n_episodes * b->n_steps;
    /* replay.c: the first nl - C would be overwritten within this push */
    const int64_t first = nl > C ? nl - C : 0;
    fh_replay_push_args a = {
        .ring = r->view, .states = b->states, .next_states = b->next_states,
        .actions = b->actions, .rewards = b->rewards, .terminal = b->terminal,
        .truncated = b->truncated, .n_steps = b->n_steps, .first = first, .n = nl,
        .head = r->head, .n_step = n_step, .gamma = gamma};
    void *params[] = {&a};
    long long warps = nl - first, per_block = PUSH_THREADS / 32;
    dim3 grid = {(unsigned)((warps + per_block - 1) / per_block), 1, 1};
    dim3 block = {PUSH_THREADS, 1, 1};
    CUDA_CHECK(cudaLaunchKernel((const void *)push, grid, block, params, 0, stream), err);
    CUDA_CHECK(cudaGetLastError(), err);
    r->head = (int)(((int64_t)r->head + nl) % C);
    r->size = (int)(r->size + nl < C ? r->size + nl : C);
    r->n_pushed += nl;
    return FH_OK;
fail:
    return err->status;
}

fh_status fh_gpu_replay_download(const fh_gpu_replay *r, fh_replay *out, fh_error *err)
{
    if (out->capacity != r->view.capacity)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: a host ring of %d slots for a device "
                            "ring of %d", __FILE__, __LINE__, out->capacity, r->view.capacity);
    size_t c = (size_t)r->view.capacity;
    CUDA_CHECK(cudaDeviceSynchronize(), err); /* the pushes on any stream */
    CUDA_CHECK(cudaMemcpy(out->states, r->view.states, c * FH_STATE_DIM * sizeof(float),
                          cudaMemcpyDeviceToHost), err);
    CUDA_CHECK(cudaMemcpy(out->next_states, r->view.next_states, c * FH_STATE_DIM * sizeof(float),
                          cudaMemcpyDeviceToHost), err);
    CUDA_CHECK(cudaMemcpy(out->actions, r->view.actions, c * sizeof(int32_t),
                          cudaMemcpyDeviceToHost), err);
    CUDA_CHECK(cudaMemcpy(out->returns, r->view.returns, c * sizeof(float),
                          cudaMemcpyDeviceToHost), err);
    CUDA_CHECK(cudaMemcpy(out->discounts, r->view.discounts, c * sizeof(float),
                          cudaMemcpyDeviceToHost), err);
    out->size = r->size;
    out->head = r->head;
    out->n_pushed = r->n_pushed;
    return FH_OK;
fail:
    return err->status;
}

fh_status fh_gpu_replay_upload(fh_gpu_replay *r, const fh_replay *in, fh_error *err)
{
    if (in->capacity != r->view.capacity || in->size < 0 || in->size > in->capacity ||
        in->head < 0 || in->head >= in->capacity)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: a host ring of %d slots (size %d, head "
                            "%d) for a device ring of %d", __FILE__, __LINE__, in->capacity,
                            in->size, in->head, r->view.capacity);
    size_t c = (size_t)r->view.capacity;
    CUDA_CHECK(cudaDeviceSynchronize(), err); /* no push in flight */
    CUDA_CHECK(cudaMemcpy(r->view.states, in->states, c * FH_STATE_DIM * sizeof(float),
                          cudaMemcpyHostToDevice), err);
    CUDA_CHECK(cudaMemcpy(r->view.next_states, in->next_states, c * FH_STATE_DIM * sizeof(float),
                          cudaMemcpyHostToDevice), err);
    CUDA_CHECK(cudaMemcpy(r->view.actions, in->actions, c * sizeof(int32_t),
                          cudaMemcpyHostToDevice), err);
    CUDA_CHECK(cudaMemcpy(r->view.returns, in->returns, c * sizeof(float),
                          cudaMemcpyHostToDevice), err);
    CUDA_CHECK(cudaMemcpy(r->view.discounts, in->discounts, c * sizeof(float),
                          cudaMemcpyHostToDevice), err);
    r->size = in->size;
    r->head = in->head;
    r->n_pushed = in->n_pushed;
    return FH_OK;
fail:
    return err->status;
}
