/* gemm_ceiling.c — one large matmul through the same cublasLt path as the networks
 * (gemm.h, tuned), timed with events: the ceiling an update's FLOP/s is measured against. */
#include "cuda/gemm_ceiling.h"

#include <cuda_runtime_api.h>

#include "cuda/cuda_check.h"
#include "cuda/gemm.h"
#include "foxhunt/timing.h"

#define CEILING_MAX_REPEATS 32


fh_status fh_gemm_ceiling_tflops(int precision, int repeats, double *tflops, fh_error *err)
{
    const long long side = FH_GEMM_CEILING_SIDE;
    const size_t bytes = (size_t)(side * side) * sizeof(float);
    float *a = NULL, *b = NULL, *c = NULL;
    cudaEvent_t ev[2] = {NULL, NULL};
    fh_gemm g;
    int have_gemm = 0;
    double ms[CEILING_MAX_REPEATS];
    if (repeats < 1 || repeats > CEILING_MAX_REPEATS)
        return fh_error_set(err, FH_ERR_INPUT, "%s:%d: repeats %d: 1 to %d", __FILE__, __LINE__,
                            repeats, CEILING_MAX_REPEATS);
    CUDA_CHECK(cudaMalloc((void **)&a, bytes), err);
    CUDA_CHECK(cudaMalloc((void **)&b, bytes), err);
    CUDA_CHECK(cudaMalloc((void **)&c, bytes), err);
    /* every float 0x3c3c3c3c, ~0.0115 (and every bf16 0x3c3c, the same at bf16: the
     * operands of a bf16 gemm fill half the buffers): finite, non-zero, no overflow over
     * 8192 terms */
    CUDA_CHECK(cudaMemset(a, 0x3c, bytes), err);
    CUDA_CHECK(cudaMemset(b, 0x3c, bytes), err);
    CUDA_CHECK(cudaEventCreate(&ev[0]), err);
    CUDA_CHECK(cudaEventCreate(&ev[1]), err);
    have_gemm = 1; /* fh_gemm_init zeroes g first: freeing after a failed init is safe */
    if (fh_gemm_init(&g, precision, 1, 8, NULL, err) != FH_OK)
        goto fail;
    /* the first call tunes the shape (times its candidates) and warms up */
    if (fh_gemm_dense_typed(&g, 0, c, 0, a, b, NULL, (int)side, (int)side, side, 0, err) != FH_OK)
        goto fail;
    for (int r = 0; r < repeats; r++) {
        CUDA_CHECK(cudaEventRecord(ev[0], 0), err);
        if (fh_gemm_dense_typed(&g, 0, c, 0, a, b, NULL, (int)side, (int)side, side, 0, err) != FH_OK)
            goto fail;
        CUDA_CHECK(cudaEventRecord(ev[1], 0), err);
        CUDA_CHECK(cudaEventSynchronize(ev[1]), err);
        float t = 0.0f;
        CUDA_CHECK(cudaEventElapsedTime(&t, ev[0], ev[1]), err);
        ms[r] = t;
    }
    *tflops = 2.0 * (double)side * side * side / (fh_median_inplace(ms, repeats) * 1e-3) / 1e12;
    fh_gemm_free(&g);
    cudaEventDestroy(ev[0]);
    cudaEventDestroy(ev[1]);
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    return FH_OK;
fail:
    if (have_gemm)
        fh_gemm_free(&g);
    for (int i = 0; i < 2; i++)
        if (ev[i])
            cudaEventDestroy(ev[i]);
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    return err->status;
}
