/* gemm_ceiling.h — the device's dense-matmul ceiling, measured: what `foxhunt bench
 * --train` divides the update's achieved FLOP/s by (issue 35). */
#ifndef FOXHUNT_CUDA_GEMM_CEILING_H
#define FOXHUNT_CUDA_GEMM_CEILING_H

#include "foxhunt/error.h"

/* The side of the square matmul timed: large enough that cublasLt reaches its peak. */
#define FH_GEMM_CEILING_SIDE 8192

/* *tflops = the median over `repeats` timed runs (after a warm-up and cublasLt's tuning)
 * of one FH_GEMM_CEILING_SIDE^3 fp32 matmul (2 side^3 FLOP) on the current device, in
 * at `precision` (precision.h): fp32 operands in and out, the compute type the update's
 * matmuls use. */
fh_status fh_gemm_ceiling_tflops(int precision, int repeats, double *tflops, fh_error *err);

#endif
