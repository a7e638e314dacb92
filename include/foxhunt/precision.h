/* precision.h — the GPU matmuls' precision (--precision, the config's `precision`):
 * fp32 (the default and the reference) or TF32 tensor cores (cuBLAS's
 * CUBLAS_COMPUTE_32F_FAST_TF32: fp32 operands in memory, their inputs rounded to TF32
 * in the kernel, fp32 accumulation). A code is an int in the structs that carry it; 0
 * is fp32, so `if (precision)` reads "tensor cores".
 *
 * No bf16: CUBLAS_COMPUTE_32F_FAST_16BF over the same fp32 operands ran cuBLAS's TF32
 * kernels on the H200 (session 19: the same results to the last bit and the same
 * times as tf32, dev/cuda/update_epilogues and `bench --train`); bf16 tensor cores need
 * bf16 operands in memory (activations, weight copies), which the update does not keep
 * yet. */
#ifndef FOXHUNT_PRECISION_H
#define FOXHUNT_PRECISION_H

#include <string.h>

typedef enum { FH_PRECISION_FP32 = 0, FH_PRECISION_TF32 = 1 } fh_precision;

#define FH_PRECISION_CHOICES "fp32|tf32"

/* The code of "fp32" or "tf32"; -1 for anything else. */
static inline int fh_precision_parse(const char *name)
{
    static const char *const names[] = {"fp32", "tf32"};
    for (int i = 0; i < 2; i++)
        if (name && strcmp(name, names[i]) == 0)
            return i;
    return -1;
}

/* "fp32", "tf32" ("?" outside the codes). */
static inline const char *fh_precision_name(int precision)
{
    return precision == FH_PRECISION_FP32 ? "fp32" : precision == FH_PRECISION_TF32 ? "tf32" : "?";
}

#endif
