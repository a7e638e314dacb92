/* gemm_ceiling.h — the device's dense-matmul ceiling, measured: what `foxhunt bench
 * --train` divides the update's achieved FLOP/s by (issue 35). */
#ifndef FOXHUNT_CUDA_GEMM_CEILING_H
#define FOXHUNT_CUDA_GEMM_CEILING_H

#include "foxhunt/error.h"

/* The side of the square matmul timed: large enough that cublasLt reaches its peak. */
#define FH_GEMM_CEILING_SIDE 8192

/* *tflops = the median over `repeats` timed runs (after a warm-up and cublasLt's tuning)
 * of one FH_GEMM_CEILING_SIDE^3 fp32 matmul (2 side^3 FLOP) on the current device, in
 * fp32 or (tf32 = 1) TF32 tensor-core arithmetic, the precisions the update runs in. */
fh_status fh_gemm_ceiling_tflops(int tf32, int repeats, double *tflops, fh_error *err);

#endif
