/* precision.h — the GPU matmuls' precision (--precision, the config's `precision`):
 * fp32 (the default and the reference), TF32 tensor cores, or bf16 tensor cores. Every
 * form keeps fp32 operands in memory, fp32 accumulation, fp32 master weights, Adam
 * moments and losses; TF32 and bf16 round the matmul's inputs (cuBLAS's
 * CUBLAS_COMPUTE_32F_FAST_TF32 and CUBLAS_COMPUTE_32F_FAST_16BF). A code is an int in
 * the structs that carry it; 0 is fp32, so `if (precision)` reads "tensor cores". */
#ifndef FOXHUNT_PRECISION_H
#define FOXHUNT_PRECISION_H

#include <string.h>

typedef enum { FH_PRECISION_FP32 = 0, FH_PRECISION_TF32 = 1, FH_PRECISION_BF16 = 2 } fh_precision;

#define FH_PRECISION_CHOICES "fp32|tf32|bf16"

/* The code of "fp32", "tf32" or "bf16"; -1 for anything else. */
static inline int fh_precision_parse(const char *name)
{
    static const char *const names[] = {"fp32", "tf32", "bf16"};
    for (int i = 0; i < 3; i++)
        if (name && strcmp(name, names[i]) == 0)
            return i;
    return -1;
}

/* "fp32", "tf32", "bf16" ("?" outside the codes). */
static inline const char *fh_precision_name(int precision)
{
    return precision == FH_PRECISION_FP32   ? "fp32"
           : precision == FH_PRECISION_TF32 ? "tf32"
           : precision == FH_PRECISION_BF16 ? "bf16"
                                            : "?";
}

#endif
