/* bf16_convert.h — the argument of to_bf16_kernel (bf16_convert.cu), which both the PPO
 * update's module and the fast collection's module hold: plain C, included by the
 * kernels (NVRTC) and by the host. */
#ifndef FOXHUNT_BF16_CONVERT_H
#define FOXHUNT_BF16_CONVERT_H

/* to_bf16_kernel: dst[i] = bf16(src[i]), i < n (a grid-stride loop). */
typedef struct {
    const float *src;
    unsigned short *dst;
    long long n;
} fh_to_bf16_args;

#endif
