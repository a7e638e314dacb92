/* layer_elementwise.cu — a dense layer's elementwise parts around its cuBLAS matmuls
 * (update_layers.c):
 *
 *   bias_grad_kernel: the backward pass's ReLU gradient (dz masked in place where the
 *     layer's output act was not positive) and the bias gradient (db = the column sums
 *     of dz), in one pass. Block (32, FH_BIAS_GRAD_ROWS): 32 adjacent columns
 *     (coalesced) of a chunk of FH_BIAS_GRAD_CHUNK rows; each column's chunk sums go to
 *     partials, and the last chunk to finish a column tile adds them in chunk order;
 *   bias_grad_bf16_kernel: the same for the bf16 update (precision.h): dz in bf16
 *     (masked in place by the bf16 act), or an fp32 dz (the loss's gradient at the
 *     output layer) whose bf16 copy it writes for the layer's matmuls;
 *   bias_act_kernel: the forward pass's bias and ReLU, for the layers whose widths
 *     cublasLt's bias epilogue cannot take (fp32, or bf16 y).
 * (to_bf16_kernel, the bf16 copies, is in bf16_convert.cu.) */
#include "bf16_round.cuh"

/* The sum over threadIdx.y of each column's s, in row-group order, to the threads of
 * row group 0 (the others get 0). */
__device__ double fh_column_sum(double part[FH_BIAS_GRAD_ROWS][32], double s)
{
    __syncthreads(); /* part may still be read */
    part[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    double t = 0.0;
    if (threadIdx.y == 0)
        for (int y = 0; y < FH_BIAS_GRAD_ROWS; y++)
            t += part[y][threadIdx.x];
    return t;
}

/* A chunk's column sum s (thread (col, y)) into partials; the last chunk of the column
 * tile adds the tile's columns over every chunk, FH_BIAS_GRAD_ROWS threads a column,
 * each taking every FH_BIAS_GRAD_ROWS-th chunk in order, then in thread order, into db. */
__device__ void fh_bias_grad_finish(double part[FH_BIAS_GRAD_ROWS][32], double s, int col,
                                    int width, float *db, double *partials, unsigned *counters)
{
    double t = fh_column_sum(part, s);
    if (threadIdx.y == 0 && col < width)
        partials[(long long)blockIdx.y * width + col] = t;
    if (!fh_last_block(&counters[blockIdx.x], gridDim.y))
        return;
    s = 0.0;
    if (col < width)
        for (int c = threadIdx.y; c < (int)gridDim.y; c += FH_BIAS_GRAD_ROWS)
            s += partials[(long long)c * width + col];
    t = fh_column_sum(part, s);
    if (threadIdx.y == 0 && col < width)
        db[col] = (float)t;
}

extern "C" __global__ void bias_grad_kernel(fh_bias_grad_args a)
{
    fh_pdl_wait(); /* pdl.cuh: first, before any read */
    __shared__ double part[FH_BIAS_GRAD_ROWS][32];
    int col = blockIdx.x * 32 + threadIdx.x;
    int begin = blockIdx.y * FH_BIAS_GRAD_CHUNK;
    int end = begin + FH_BIAS_GRAD_CHUNK < a.rows ? begin + FH_BIAS_GRAD_CHUNK : a.rows;
    double s = 0.0;
    if (col < a.width) {
        for (int i = begin + threadIdx.y; i < end; i += FH_BIAS_GRAD_ROWS) {
            long long at = (long long)i * a.width + col;
            float g = a.dz[at];
            if (a.act) {
                g = a.act[at] > 0.0f ? g : 0.0f;
                a.dz[at] = g;
            }
            s += g;
        }
    }
    fh_bias_grad_finish(part, s, col, a.width, a.db, a.partials, a.counters);
}

extern "C" __global__ void bias_grad_bf16_kernel(fh_bias_grad_bf16_args a)
{
    fh_pdl_wait(); /* pdl.cuh: first, before any read */
    __shared__ double part[FH_BIAS_GRAD_ROWS][32];
    int col = blockIdx.x * 32 + threadIdx.x;
    int begin = blockIdx.y * FH_BIAS_GRAD_CHUNK;
    int end = begin + FH_BIAS_GRAD_CHUNK < a.rows ? begin + FH_BIAS_GRAD_CHUNK : a.rows;
    double s = 0.0;
    if (col < a.width) {
        for (int i = begin + threadIdx.y; i < end; i += FH_BIAS_GRAD_ROWS) {
            long long at = (long long)i * a.width + col;
            float g = a.dz32 ? a.dz32[at] : fh_bf16_to_float(a.dz16[at]);
            if (a.act16)
                g = fh_bf16_to_float(a.act16[at]) > 0.0f ? g : 0.0f;
            /* every element stored, not only the masked ones: the partial 16-bit stores
             * ran 2.7x slower at 16,384 x 512 (dev/cuda/bias_grad_bf16, session 20) */
            if (a.act16 || a.dz32)
                a.dz16[at] = fh_float_to_bf16(g);
            s += g;
        }
    }
    fh_bias_grad_finish(part, s, col, a.width, a.db, a.partials, a.counters);
}

extern "C" __global__ void bias_act_kernel(fh_bias_act_args a)
{
    fh_pdl_wait(); /* pdl.cuh: first, before any read */
    long long n = a.rows * a.width;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float v = (a.y16 ? fh_bf16_to_float(a.y16[i]) : a.y[i]) + a.b[i % a.width];
        v = a.relu && !(v > 0.0f) ? 0.0f : v;
        if (a.y16)
            a.y16[i] = fh_float_to_bf16(v);
        else
            a.y[i] = v;
    }
}
