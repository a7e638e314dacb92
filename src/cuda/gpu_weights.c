/* gpu_weights.c — see gpu_weights.h. */
#include "cuda/gpu_weights.h"

#include <string.h>

#include "cuda/cuda_check.h"

fh_status fh_gpu_weights_alloc(fh_gpu_weights *w, fh_error *err)
{
    memset(w, 0, sizeof *w);
    CUDA_CHECK(cudaMalloc((void **)&w->actor, FH_ACTOR_N_PARAMS * sizeof(float)), err);
    CUDA_CHECK(cudaMalloc((void **)&w->critic, FH_CRITIC_N_PARAMS * sizeof(float)), err);
    CUDA_CHECK(cudaMalloc((void **)&w->curiosity, FH_CURIOSITY_N_PARAMS * sizeof(float)), err);
    return FH_OK;
fail:
    fh_gpu_weights_free(w);
    return err->status;
}

fh_status fh_gpu_weights_sync(fh_gpu_weights *w, const fh_mlp *actor, const fh_mlp *critic,
                              const fh_mlp *curiosity, cudaStream_t stream, fh_error *err)
{
    if (actor->n_params != FH_ACTOR_N_PARAMS || critic->n_params != FH_CRITIC_N_PARAMS ||
        curiosity->n_params != FH_CURIOSITY_N_PARAMS)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: network sizes do not match shapes.h",
                            __FILE__, __LINE__);
    CUDA_CHECK(cudaMemcpyAsync(w->actor, actor->params, actor->n_params * sizeof(float),
                               cudaMemcpyHostToDevice, stream), err);
    CUDA_CHECK(cudaMemcpyAsync(w->critic, critic->params, critic->n_params * sizeof(float),
                               cudaMemcpyHostToDevice, stream), err);
    CUDA_CHECK(cudaMemcpyAsync(w->curiosity, curiosity->params,
                               curiosity->n_params * sizeof(float), cudaMemcpyHostToDevice,
                               stream), err);
    return FH_OK;
fail:
    return err->status;
}

void fh_gpu_weights_free(fh_gpu_weights *w)
{
    cudaFree(w->actor);
    cudaFree(w->critic);
    cudaFree(w->curiosity);
    memset(w, 0, sizeof *w);
}
