/* bf16_round.cuh — float <-> bfloat16 (the top 16 bits of an IEEE float), written once
 * for the C compiler and NVRTC, as the bf16 update (precision.h) stores its weight
 * copies, activations and backward gradients: round to nearest, ties to even (what
 * __float2bfloat16_rn does), NaN kept a quiet NaN of its sign, infinities kept. A bf16
 * is an unsigned short here: no cuda_bf16.h under NVRTC, and the CPU tests
 * (tests/cuda/test_bf16_round.c) run the same text.
 *
 * Included after common_device_functions.cuh (FH_DEVICE). */
#ifndef FOXHUNT_BF16_ROUND_CUH
#define FOXHUNT_BF16_ROUND_CUH

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define FH_FLOAT_BITS(f) __float_as_uint(f)
#define FH_BITS_FLOAT(u) __uint_as_float(u)
#else
#include <string.h>
FH_DEVICE unsigned fh_float_bits_host(float f)
{
    unsigned u;
    memcpy(&u, &f, sizeof u);
    return u;
}
FH_DEVICE float fh_bits_float_host(unsigned u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
#define FH_FLOAT_BITS(f) fh_float_bits_host(f)
#define FH_BITS_FLOAT(u) fh_bits_float_host(u)
#endif

FH_DEVICE unsigned short fh_float_to_bf16(float f)
{
    unsigned u = FH_FLOAT_BITS(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: quiet, sign kept */
        return (unsigned short)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u); /* to nearest, ties to even; overflow gives inf */
    return (unsigned short)(u >> 16);
}

FH_DEVICE float fh_bf16_to_float(unsigned short h)
{
    return FH_BITS_FLOAT((unsigned)h << 16);
}

#endif
