/* bf16_convert.cu — to_bf16_kernel: a bf16 copy of a float array (precision.h), rounded
 * to nearest even (bf16_round.cuh). The PPO update copies its weights at an update's
 * start and a network's input; the bf16 collection copies the critic's weights and each
 * chunk of its input rows. Included by update_kernels.cu and fast_kernels.cu. */
#include "bf16_convert.h"
#include "bf16_round.cuh"
#include "pdl.cuh"

extern "C" __global__ void to_bf16_kernel(fh_to_bf16_args a)
{
    fh_pdl_wait(); /* pdl.cuh: first, before any read (a no-op without programmatic launch) */
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < a.n; i += stride) {
        if (a.cols <= 0) {
            a.dst[i] = fh_float_to_bf16(a.src[i]);
            continue;
        }
        long long r = i / a.cols, c = i - r * a.cols;
        a.dst[r * a.dst_ld + c] = fh_float_to_bf16(a.src[r * a.src_ld + c]);
    }
}
