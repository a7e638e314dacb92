/* gpu_update_engine.c — see gpu_update_engine.h. */
#include "cuda/gpu_update_engine.h"

#include <string.h>

#include "cuda/cuda_check.h"
#include "cuda/pdl_launch.h"

fh_status fh_update_engine_init(fh_update_engine *e, const fh_device_info *dev,
                                const char *kernel_file, const char *const *options,
                                int n_options, const char *const *names, int n_kernels,
                                fh_error *err)
{
    memset(e, 0, sizeof *e);
    if (n_kernels < 1 || n_kernels > FH_UPDATE_ENGINE_MAX_KERNELS)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: %d kernels, at most %d", __FILE__,
                            __LINE__, n_kernels, FH_UPDATE_ENGINE_MAX_KERNELS);
    e->names = names;
    e->n_kernels = n_kernels;
    fh_status st = FH_OK;
    CUDA_CHECK(cudaSetDevice(dev->device_index), err);
    if ((st = fh_cuda_module_load(&e->module, dev, kernel_file, options, n_options, err)) !=
        FH_OK)
        goto fail_status;
    for (int i = 0; i < n_kernels; i++)
        if ((st = fh_cuda_module_kernel(&e->module, names[i], &e->k[i], err)) != FH_OK)
            goto fail_status;
    CUDA_CHECK(cudaStreamCreateWithFlags(&e->stream, cudaStreamNonBlocking), err);
    CUDA_CHECK(cudaEventCreate(&e->ev_begin), err);
    CUDA_CHECK(cudaEventCreate(&e->ev_end), err);
    return FH_OK;
fail:
fail_status:
    fh_update_engine_free(e);
    return err->status;
}

void fh_update_engine_stop(fh_update_engine *e)
{
    if (e->stream)
        cudaStreamSynchronize(e->stream);
    fh_update_engine_drop_graphs(e);
}

void fh_update_engine_free(fh_update_engine *e)
{
    fh_update_engine_stop(e);
    if (e->ev_begin)
        cudaEventDestroy(e->ev_begin);
    if (e->ev_end)
        cudaEventDestroy(e->ev_end);
    if (e->stream)
        cudaStreamDestroy(e->stream);
    fh_cuda_module_free(&e->module);
    memset(e, 0, sizeof *e);
}

fh_status fh_update_engine_launch(fh_update_engine *e, int kernel, unsigned grid,
                                  unsigned block, void *args, fh_error *err)
{
    return fh_update_engine_launch_on(e, e->stream, kernel, grid, block, args, err);
}

fh_status fh_update_engine_launch_on(fh_update_engine *e, cudaStream_t stream, int kernel,
                                     unsigned grid, unsigned block, void *args, fh_error *err)
{
    void *params[] = {args};
    dim3 g = {grid, 1, 1}, b = {block, 1, 1};
    CUDA_CHECK(fh_pdl_launch((const void *)e->k[kernel], g, b, params, stream, e->pdl), err);
    CUDA_CHECK(cudaGetLastError(), err);
    return FH_OK;
fail:
    fh_error_prefix(err, "%s: ", e->names[kernel]);
    return err->status;
}

fh_status fh_update_engine_optimizer_step(fh_update_engine *e, const fh_update_optimizer *o,
                                          fh_error *err)
{
    const long long n = o->n;
    fh_grad_sumsq_args s = {.grads = o->mem + n, .n = n, .partials = o->partials};
    fh_status st = fh_update_engine_launch(e, o->sumsq_kernel, (unsigned)o->sumsq_blocks,
                                           (unsigned)o->reduce_threads, &s, err);
    if (st != FH_OK)
        return st;
    fh_adam_args a = {
        .state = o->state, .curiosity = o->curiosity, .params = o->mem, .grads = o->mem + n,
        .adam_m = o->mem + 2 * n, .adam_v = o->mem + 3 * n, .n = n, .partials = o->partials,
        .n_partials = o->sumsq_blocks, .max_norm = o->max_norm, .beta1 = o->beta1,
        .beta2 = o->beta2, .eps = o->eps, .weight_decay = o->weight_decay,
        .records = o->records, .params16 = o->params16, .n_padded = o->n_padded};
    for (int k = 0; k < o->n_padded && k < FH_ADAM_PADDED; k++)
        a.padded[k] = o->padded[k];
    return fh_update_engine_launch(e, o->adam_kernel, (unsigned)o->adam_grid,
                                   (unsigned)o->adam_threads, &a, err);
}

/* ---- graphs ---- */

fh_status fh_update_engine_capture(fh_update_engine *e, int slot, fh_update_step_fn step,
                                   void *ctx, int steps, int rows, fh_error *err)
{
    if (slot < 0 || slot >= FH_UPDATE_ENGINE_MAX_GRAPHS || e->graphs[slot])
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: graph slot %d is not an empty slot",
                            __FILE__, __LINE__, slot);
    cudaGraph_t graph = NULL;
    CUDA_CHECK(cudaStreamBeginCapture(e->stream, cudaStreamCaptureModeThreadLocal), err);
    fh_status st = FH_OK;
    for (int s = 0; s < steps && st == FH_OK; s++)
        st = step(ctx, rows, err);
    cudaError_t end = cudaStreamEndCapture(e->stream, &graph);
    if (st != FH_OK) {
        if (graph)
            cudaGraphDestroy(graph);
        return st;
    }
    CUDA_CHECK(end, err);
    CUDA_CHECK(cudaGraphInstantiate(&e->graphs[slot], graph, 0), err);
    cudaGraphDestroy(graph);
    return FH_OK;
fail:
    if (graph)
        cudaGraphDestroy(graph);
    return err->status;
}

void fh_update_engine_drop_graphs(fh_update_engine *e)
{
    for (int i = 0; i < FH_UPDATE_ENGINE_MAX_GRAPHS; i++)
        if (e->graphs[i])
            cudaGraphExecDestroy(e->graphs[i]);
    memset(e->graphs, 0, sizeof e->graphs);
}

fh_status fh_update_engine_replay(fh_update_engine *e, int slot, long long times,
                                  fh_error *err)
{
    for (long long i = 0; i < times; i++)
        CUDA_CHECK(cudaGraphLaunch(e->graphs[slot], e->stream), err);
    return FH_OK;
fail:
    return err->status;
}

fh_status fh_update_engine_replay_epoch(fh_update_engine *e, int full, int launches,
                                        int tail, fh_error *err)
{
    for (int g = 0; g < launches && e->graphs[full]; g++)
        CUDA_CHECK(cudaGraphLaunch(e->graphs[full], e->stream), err);
    if (e->graphs[tail])
        CUDA_CHECK(cudaGraphLaunch(e->graphs[tail], e->stream), err);
    return FH_OK;
fail:
    return err->status;
}

/* ---- a run ---- */

fh_status fh_update_engine_begin(fh_update_engine *e, void *d_state, const void *h_state,
                                 size_t state_bytes, void *d_keys, const void *h_keys,
                                 size_t key_bytes, fh_error *err)
{
    CUDA_CHECK(cudaEventRecord(e->ev_begin, e->stream), err);
    CUDA_CHECK(cudaMemcpyAsync(d_state, h_state, state_bytes, cudaMemcpyHostToDevice,
                               e->stream), err);
    if (d_keys)
        CUDA_CHECK(cudaMemcpyAsync(d_keys, h_keys, key_bytes, cudaMemcpyHostToDevice,
                                   e->stream), err);
    return FH_OK;
fail:
    return err->status;
}

fh_status fh_update_engine_end(fh_update_engine *e, void *h_dst, const void *d_src,
                               size_t bytes, fh_error *err)
{
    CUDA_CHECK(cudaMemcpyAsync(h_dst, d_src, bytes, cudaMemcpyDeviceToHost, e->stream), err);
    CUDA_CHECK(cudaEventRecord(e->ev_end, e->stream), err);
    CUDA_CHECK(cudaStreamSynchronize(e->stream), err);
    CUDA_CHECK(cudaEventElapsedTime(&e->last_ms, e->ev_begin, e->ev_end), err);
    return FH_OK;
fail:
    return err->status;
}

/* ---- host <-> device ---- */

fh_status fh_update_engine_copy_net(fh_update_engine *e, float *mem, long long n,
                                    long long offset, fh_mlp *m, int upload, fh_error *err)
{
    float *host[3] = {m->params, m->adam_m, m->adam_v};
    const int region[3] = {0, 2, 3};
    size_t bytes = m->n_params * sizeof(float);
    for (int k = 0; k < 3; k++) {
        float *dev = mem + region[k] * n + offset;
        if (upload)
            CUDA_CHECK(cudaMemcpyAsync(dev, host[k], bytes, cudaMemcpyHostToDevice, e->stream),
                       err);
        else
            CUDA_CHECK(cudaMemcpyAsync(host[k], dev, bytes, cudaMemcpyDeviceToHost, e->stream),
                       err);
    }
    return FH_OK;
fail:
    return err->status;
}
