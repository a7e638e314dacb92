/* gpu_market.c — see gpu_market.h. */
#include "cuda/gpu_market.h"

#include "cuda/cuda_check.h"

fh_status fh_gpu_market_upload(float **features, float **close, float **sigma,
                               fh_env_market *d_market, const fh_market_view *view,
                               fh_error *err)
{
    const size_t nb = view->n;
    /* a market of several segments keeps its segment ends (ints) after sigma's floats,
     * in sigma's allocation, so that freeing sigma frees them too */
    const size_t n_seg = view->n_segments > 1 ? (size_t)view->n_segments : 0;
    _Static_assert(sizeof(int) == sizeof(float), "segment ends share sigma's allocation");
    CUDA_CHECK(cudaMalloc((void **)features, nb * FH_N_MARKET_FEATURES * sizeof(float)), err);
    CUDA_CHECK(cudaMalloc((void **)close, nb * sizeof(float)), err);
    CUDA_CHECK(cudaMalloc((void **)sigma, (nb + n_seg) * sizeof(float)), err);
    CUDA_CHECK(cudaMemcpy(*features, view->features, nb * FH_N_MARKET_FEATURES * sizeof(float),
                          cudaMemcpyHostToDevice), err);
    CUDA_CHECK(cudaMemcpy(*close, view->close, nb * sizeof(float), cudaMemcpyHostToDevice), err);
    CUDA_CHECK(cudaMemcpy(*sigma, view->sigma, nb * sizeof(float), cudaMemcpyHostToDevice), err);
    d_market->features = *features;
    d_market->close = *close;
    d_market->sigma = *sigma;
    d_market->n_bars = (int)nb;
    d_market->n_segments = 0;
    d_market->segment_ends = NULL;
    if (n_seg) {
        int *ends = (int *)(*sigma + nb);
        CUDA_CHECK(cudaMemcpy(ends, view->segment_ends, n_seg * sizeof(int),
                              cudaMemcpyHostToDevice), err);
        d_market->n_segments = (int)n_seg;
        d_market->segment_ends = ends;
    }
    return FH_OK;
fail:
    return err->status;
}
