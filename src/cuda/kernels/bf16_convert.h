/* bf16_convert.h — the argument of to_bf16_kernel (bf16_convert.cu), which both the PPO
 * update's module and the fast collection's module hold: plain C, included by the
 * kernels (NVRTC) and by the host. */
#ifndef FOXHUNT_BF16_CONVERT_H
#define FOXHUNT_BF16_CONVERT_H

/* cuBLASLt's Hopper kernels take rows of whole 16-byte words: a bf16 matrix whose rows
 * are not a multiple of 8 elements (the 54-wide state, the curiosity model's 35 inputs)
 * is kept with its rows padded to FH_BF16_LD(cols), the padding zero. */
#define FH_BF16_ROW_ALIGN 8
#define FH_BF16_LD(cols) (((cols) + FH_BF16_ROW_ALIGN - 1) / FH_BF16_ROW_ALIGN * FH_BF16_ROW_ALIGN)

/* to_bf16_kernel (a grid-stride loop over i < n): cols 0: dst[i] = bf16(src[i]); cols > 0:
 * a matrix of n / cols rows, element (r, c) from src[r * src_ld + c] to
 * dst[r * dst_ld + c] (a padded copy; its padding is left as it is). */
typedef struct {
    const float *src;
    unsigned short *dst;
    long long n;
    int cols, src_ld, dst_ld;
} fh_to_bf16_args;

#endif
