/* cuda_check.h — the one check macro for CUDA runtime calls (STYLE habit 6): the
 * call's text, file:line and CUDA's name and message go into the fh_error, then the
 * function jumps to its `fail:` label to release what it holds. */
#ifndef FOXHUNT_CUDA_CHECK_H
#define FOXHUNT_CUDA_CHECK_H

#include <cuda_runtime_api.h>

#include "foxhunt/error.h"

#define CUDA_CHECK(call, err)                                                            \
    do {                                                                                 \
        cudaError_t e_ = (call);                                                         \
        if (e_ != cudaSuccess) {                                                         \
            fh_error_set((err), FH_ERR_FAILURE, "%s:%d: %s failed: %s (%s)", __FILE__,    \
                         __LINE__, #call, cudaGetErrorString(e_), cudaGetErrorName(e_));  \
            goto fail;                                                                   \
        }                                                                                \
    } while (0)


#include <cublas_v2.h>

#define CUBLAS_CHECK(call, err)                                                          \
    do {                                                                                 \
        cublasStatus_t s_ = (call);                                                      \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                               \
            fh_error_set((err), FH_ERR_FAILURE, "%s:%d: %s failed: %s", __FILE__,         \
                         __LINE__, #call, cublasGetStatusString(s_));                     \
            goto fail;                                                                   \
        }                                                                                \
    } while (0)

#endif
