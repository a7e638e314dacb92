/* gpu_market.c — see gpu_market.h. */
#include "cuda/gpu_market.h"

#include "cuda/cuda_check.h"

fh_status fh_gpu_market_upload(float **features, float **close, float **sigma,
                               fh_env_market *d_market, const fh_market_view *view,
                               fh_error *err)
{
    const size_t nb = view->n;
    CUDA_CHECK(cudaMalloc((void **)features, nb * FH_N_MARKET_FEATURES * sizeof(float)), err);
    CUDA_CHECK(cudaMalloc((void **)close, nb * sizeof(float)), err);
    CUDA_CHECK(cudaMalloc((void **)sigma, nb * sizeof(float)), err);
    CUDA_CHECK(cudaMemcpy(*features, view->features, nb * FH_N_MARKET_FEATURES * sizeof(float),
                          cudaMemcpyHostToDevice), err);
    CUDA_CHECK(cudaMemcpy(*close, view->close, nb * sizeof(float), cudaMemcpyHostToDevice), err);
    CUDA_CHECK(cudaMemcpy(*sigma, view->sigma, nb * sizeof(float), cudaMemcpyHostToDevice), err);
    d_market->features = *features;
    d_market->close = *close;
    d_market->sigma = *sigma;
    d_market->n_bars = (int)nb;
    return FH_OK;
fail:
    return err->status;
}
