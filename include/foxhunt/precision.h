/* precision.h — the GPU matmuls' precision (--precision, the config's `precision`):
 * fp32 (the default and the reference); TF32 tensor cores (cuBLAS's
 * CUBLAS_COMPUTE_32F_FAST_TF32: fp32 operands in memory, their inputs rounded to TF32
 * in the kernel, fp32 accumulation); or bf16 tensor cores for the PPO update (issue
 * 35): bf16 copies of the weights (written by Adam beside the fp32 master weights),
 * bf16 activations and backward gradients, fp32 accumulation, fp32 loss, gradients of
 * the weights, Adam moments. A code is an int in the structs that carry it; 0 is fp32,
 * so `if (precision)` reads "tensor cores".
 *
 * The collection's batched critic under bf16 (session 23) copies its weights and each
 * chunk of its input rows to bf16 and keeps its hidden activations in bf16 (fp32
 * accumulation, fp32 values); its first layer is then a matmul, never the market
 * look-up (fast_plan.c). PQN and DQN refuse bf16. */
#ifndef FOXHUNT_PRECISION_H
#define FOXHUNT_PRECISION_H

#include <string.h>

typedef enum { FH_PRECISION_FP32 = 0, FH_PRECISION_TF32 = 1, FH_PRECISION_BF16 = 2 } fh_precision;

#define FH_PRECISION_CHOICES "fp32|tf32|bf16"

static const char *const fh_precision_names[] = {"fp32", "tf32", "bf16"};

/* The code of "fp32", "tf32" or "bf16"; -1 for anything else. */
static inline int fh_precision_parse(const char *name)
{
    for (int i = 0; i < 3; i++)
        if (name && strcmp(name, fh_precision_names[i]) == 0)
            return i;
    return -1;
}

/* "fp32", "tf32", "bf16" ("?" outside the codes). */
static inline const char *fh_precision_name(int precision)
{
    return precision >= 0 && precision < 3 ? fh_precision_names[precision] : "?";
}

#endif
