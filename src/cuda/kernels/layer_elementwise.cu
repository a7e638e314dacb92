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
 *   bias_grad_bf16_wide_kernel: the same, two columns a thread in chunks of 128 rows,
 *     for even widths at many rows (update_plan.h's fh_update_bias_wide);
 *   relu_mask_kernel: the ReLU gradient alone, in place, 16 bytes a thread: where the
 *     bias gradient goes beside the weight gradients instead (update_plan.h's
 *     split_bias), it is the chain's only step between two input-gradient matmuls;
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

/* bias_grad_bf16_wide_kernel's element access: the two adjacent columns at element `at`
 * as one 4-byte access of bf16 or one 8-byte access of fp32 */
__device__ __forceinline__ void fh_load_bf16_pair(const unsigned short *p, long long at,
                                                  float *out)
{
    unsigned u = *(const unsigned *)(p + at);
    out[0] = fh_bf16_to_float((unsigned short)(u & 0xffffu));
    out[1] = fh_bf16_to_float((unsigned short)(u >> 16));
}

__device__ __forceinline__ void fh_load_float_pair(const float *p, long long at, float *out)
{
    float2 v = *(const float2 *)(p + at);
    out[0] = v.x;
    out[1] = v.y;
}

__device__ __forceinline__ void fh_store_bf16_pair(unsigned short *p, long long at,
                                                   const float *g)
{
    *(unsigned *)(p + at) = (unsigned)fh_float_to_bf16(g[0]) |
                            (unsigned)fh_float_to_bf16(g[1]) << 16;
}

/* One block of bias_grad_bf16_wide_kernel: VEC (2) adjacent columns a thread (a tile of
 * 32 * VEC), a chunk of FH_BIAS_GRAD_CHUNK2 rows, FH_BIAS_GRAD_ROWS row groups; each
 * thread's rows loaded FH_BIAS_GRAD_BATCH at a time before any is masked and stored (the
 * loads in flight together), then, as bias_grad_kernel, the chunk's column sums into partials and the
 * last chunk of the tile adding them in chunk order (loads batched likewise). A thread
 * adds its rows in order, a chunk its row groups in order, the last chunk each row
 * group's chunks in order, then the groups: bias_grad_bf16_kernel's order over other
 * chunks, so the two agree to rounding, not bit for bit (each is deterministic). */
__device__ void fh_bias_grad_bf16_tile(const fh_bias_grad_bf16_args &a)
{
    const int VEC = 2, CHUNK = FH_BIAS_GRAD_CHUNK2;
    __shared__ double part[FH_BIAS_GRAD_ROWS][32 * VEC];
    __shared__ int last;
    const int B = FH_BIAS_GRAD_BATCH;
    int col = (blockIdx.x * 32 + threadIdx.x) * VEC;
    int begin = blockIdx.y * CHUNK;
    double s[VEC];
    for (int k = 0; k < VEC; k++)
        s[k] = 0.0;
    if (col < a.width) {
        for (int r0 = 0; r0 < CHUNK / FH_BIAS_GRAD_ROWS; r0 += B) {
            float g[B][VEC], act[B][VEC];
#pragma unroll
            for (int r = 0; r < B; r++) {
                int i = begin + threadIdx.y + (r0 + r) * FH_BIAS_GRAD_ROWS;
                long long at = (long long)i * a.width + col;
                for (int k = 0; k < VEC; k++)
                    g[r][k] = act[r][k] = 0.0f;
                if (i < a.rows) {
                    if (a.dz32)
                        fh_load_float_pair(a.dz32, at, g[r]);
                    else
                        fh_load_bf16_pair(a.dz16, at, g[r]);
                    if (a.act16)
                        fh_load_bf16_pair(a.act16, at, act[r]);
                }
            }
#pragma unroll
            for (int r = 0; r < B; r++) {
                int i = begin + threadIdx.y + (r0 + r) * FH_BIAS_GRAD_ROWS;
                for (int k = 0; k < VEC; k++) {
                    if (a.act16)
                        g[r][k] = act[r][k] > 0.0f ? g[r][k] : 0.0f;
                    s[k] += g[r][k];
                }
                /* every element stored, not only the masked ones: the partial 16-bit
                 * stores ran 2.7x slower at 16,384 x 512 (dev/cuda/bias_grad_bf16, session 20) */
                if (i < a.rows && (a.act16 || a.dz32))
                    fh_store_bf16_pair(a.dz16, (long long)i * a.width + col, g[r]);
            }
        }
    }
    /* the chunk's column sums, row groups in order, into partials */
    for (int k = 0; k < VEC; k++)
        part[threadIdx.y][threadIdx.x * VEC + k] = s[k];
    __syncthreads();
    for (int c = threadIdx.y * 32 + threadIdx.x; c < 32 * VEC; c += 32 * FH_BIAS_GRAD_ROWS) {
        int gc = blockIdx.x * 32 * VEC + c;
        double t = 0.0;
        for (int y = 0; y < FH_BIAS_GRAD_ROWS; y++)
            t += part[y][c];
        if (gc < a.width)
            a.partials[(long long)blockIdx.y * a.width + gc] = t;
    }
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        unsigned done = atomicAdd(&a.counters[blockIdx.x], 1u);
        last = done == gridDim.y - 1;
        if (last)
            a.counters[blockIdx.x] = 0; /* ready for the next launch */
    }
    __syncthreads();
    if (!last)
        return;
    __threadfence();
    for (int k = 0; k < VEC; k++) {
        double u = 0.0;
        if (col + k < a.width)
            for (int c0 = threadIdx.y; c0 < (int)gridDim.y; c0 += FH_BIAS_GRAD_ROWS * B) {
                double p[B];
#pragma unroll
                for (int b = 0; b < B; b++) {
                    int c = c0 + b * FH_BIAS_GRAD_ROWS;
                    p[b] = c < (int)gridDim.y ? a.partials[(long long)c * a.width + col + k] : 0.0;
                }
#pragma unroll
                for (int b = 0; b < B; b++)
                    u += p[b];
            }
        s[k] = u;
    }
    __syncthreads(); /* part may still be read */
    for (int k = 0; k < VEC; k++)
        part[threadIdx.y][threadIdx.x * VEC + k] = s[k];
    __syncthreads();
    if (threadIdx.y == 0)
        for (int k = 0; k < VEC; k++) {
            double t = 0.0;
            for (int y = 0; y < FH_BIAS_GRAD_ROWS; y++)
                t += part[y][threadIdx.x * VEC + k];
            if (col + k < a.width)
                a.db[col + k] = (float)t;
        }
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

/* bias_grad_bf16_wide_kernel: the same over an even width at many rows (the update
 * plan's fh_update_bias_wide): two columns a thread, chunks of FH_BIAS_GRAD_CHUNK2 rows
 * (session 23: at 16,384 rows the update 26.63 -> 26.17 ms in bf16; its own kernel, as
 * one kernel holding both forms ran both slower, run 4) */
extern "C" __global__ void bias_grad_bf16_wide_kernel(fh_bias_grad_bf16_args a)
{
    fh_pdl_wait(); /* pdl.cuh: first, before any read */
    fh_bias_grad_bf16_tile(a);
}

/* One bf16 of a gradient kept where act is positive, else +0: the stores of
 * bias_grad_bf16_kernel, bit for bit. */
__device__ __forceinline__ unsigned fh_mask_bf16(unsigned g, unsigned act)
{
    float a = fh_bf16_to_float((unsigned short)act);
    return a > 0.0f ? fh_float_to_bf16(fh_bf16_to_float((unsigned short)g)) : 0u;
}

/* Two packed bf16 of a gradient by two of act. */
__device__ __forceinline__ unsigned fh_mask_bf16_pair(unsigned g, unsigned act)
{
    return fh_mask_bf16(g & 0xffffu, act & 0xffffu) |
           fh_mask_bf16(g >> 16, act >> 16) << 16;
}

extern "C" __global__ void relu_mask_kernel(fh_relu_mask_args a)
{
    fh_pdl_wait(); /* pdl.cuh: first, before any read */
    long long stride = (long long)gridDim.x * blockDim.x;
    long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    int per = a.dz16 ? 8 : 4; /* elements in 16 bytes */
    long long nv = a.n / per;
    for (long long i = first; i < nv; i += stride) {
        if (a.dz16) {
            uint4 g = ((uint4 *)a.dz16)[i], act = ((const uint4 *)a.act16)[i];
            g.x = fh_mask_bf16_pair(g.x, act.x);
            g.y = fh_mask_bf16_pair(g.y, act.y);
            g.z = fh_mask_bf16_pair(g.z, act.z);
            g.w = fh_mask_bf16_pair(g.w, act.w);
            ((uint4 *)a.dz16)[i] = g;
        } else {
            float4 g = ((float4 *)a.dz)[i], act = ((const float4 *)a.act)[i];
            g.x = act.x > 0.0f ? g.x : 0.0f;
            g.y = act.y > 0.0f ? g.y : 0.0f;
            g.z = act.z > 0.0f ? g.z : 0.0f;
            g.w = act.w > 0.0f ? g.w : 0.0f;
            ((float4 *)a.dz)[i] = g;
        }
    }
    for (long long i = nv * per + first; i < a.n; i += stride) { /* the last n % per */
        if (a.dz16)
            a.dz16[i] = (unsigned short)fh_mask_bf16(a.dz16[i], a.act16[i]);
        else
            a.dz[i] = a.act[i] > 0.0f ? a.dz[i] : 0.0f;
    }
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
