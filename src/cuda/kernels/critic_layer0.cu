/* critic_layer0.cu — the batched critic's first layer factored through the market
 * (critic_layer0_factored_kernel; the other layers are cublasLt matmuls). */
#ifndef FOXHUNT_CRITIC_LAYER0_CU
#define FOXHUNT_CRITIC_LAYER0_CU

/* The critic's first layer through the market projection (fast_networks.c). A state's
 * first 51 entries are its bar's features, so W0 s = proj[bar] + W0[:, 51..53] s[51..53]
 * with proj = features W0[:, :51]^T computed once per collection over the market's bars:
 * y[r][j] = relu(proj[bars[r]][j] + b0[j] + sum_k w0[j][51 + k] s[r][51 + k]) for rows r
 * of states (in_stride floats apart; w0 rows w0_stride apart), y rows 512 apart, and
 * output columns j in [col0, col0 + cols): the host splits the columns into slices
 * whose part of the table fits in L2, where a whole 16,000-bar table (33 MB) kept
 * missing. A bar out of range (a row the rollout did not write) gives NaN, as its state
 * would. cols / 4 threads per row, four outputs each, and four rows per thread; the
 * thread's portfolio weights and biases in registers. */
static_assert(FH_CRITIC_H1 % 4 == 0, "critic_layer0: four outputs a thread (float4s)");
__device__ __forceinline__ void critic_layer0_factored_kernel_body(
    float *y, const float *__restrict__ proj, const int *__restrict__ bars,
    const float *__restrict__ states, int in_stride, const float *__restrict__ w0,
    int w0_stride, const float *__restrict__ b0, int n_bars, long long rows, int col0,
    int cols)
{
    int row_threads = cols / 4;
    int q = col0 / 4 + threadIdx.x % row_threads; /* this thread's float4 of the row */
    /* the thread's columns never change: their portfolio weights and biases stay in
     * registers (no shared memory, so its blocks fit beside the matmuls' on an SM) */
    float4 w[FH_N_PORTFOLIO_FEATURES];
#pragma unroll
    for (int k = 0; k < FH_N_PORTFOLIO_FEATURES; k++) {
        const float *col = w0 + FH_N_MARKET_FEATURES + k;
        w[k] = make_float4(col[(4 * q) * w0_stride], col[(4 * q + 1) * w0_stride],
                           col[(4 * q + 2) * w0_stride], col[(4 * q + 3) * w0_stride]);
    }
    const float4 bias = make_float4(b0[4 * q], b0[4 * q + 1], b0[4 * q + 2], b0[4 * q + 3]);
    /* each thread takes FH_L0_ROWS_PER_THREAD rows at once: their loads in flight together */
    long long stride = (long long)blockDim.x / row_threads;
    long long per_block = stride * FH_L0_ROWS_PER_THREAD;
    for (long long r0 = blockIdx.x * per_block + threadIdx.x / row_threads; r0 < rows;
         r0 += (long long)gridDim.x * per_block) {
        int bar[FH_L0_ROWS_PER_THREAD];
        float4 v[FH_L0_ROWS_PER_THREAD], p[FH_L0_ROWS_PER_THREAD];
#pragma unroll
        for (int u = 0; u < FH_L0_ROWS_PER_THREAD; u++) {
            long long r = r0 + u * stride;
            bar[u] = r < rows ? bars[r] : -1;
            v[u] = bias;
            if (r >= rows)
                continue;
            const float *s = states + r * in_stride + FH_N_MARKET_FEATURES;
#pragma unroll
            for (int k = 0; k < FH_N_PORTFOLIO_FEATURES; k++)
                v[u] = fh_fma4(w[k], s[k], v[u]);
        }
#pragma unroll
        for (int u = 0; u < FH_L0_ROWS_PER_THREAD; u++) {
            if (bar[u] >= 0 && bar[u] < n_bars) {
                const float4 *table_row =
                    reinterpret_cast<const float4 *>(proj + (long long)bar[u] * FH_CRITIC_H1);
                p[u] = __ldg(table_row + q);
            } else {
                float nan = __int_as_float(0x7fffffff);
                p[u] = make_float4(nan, nan, nan, nan);
            }
        }
#pragma unroll
        for (int u = 0; u < FH_L0_ROWS_PER_THREAD; u++) {
            long long r = r0 + u * stride;
            if (r >= rows)
                break;
            float4 o; /* ReLU that keeps a NaN (fmaxf would turn it into 0) */
            o.x = v[u].x + p[u].x < 0.0f ? 0.0f : v[u].x + p[u].x;
            o.y = v[u].y + p[u].y < 0.0f ? 0.0f : v[u].y + p[u].y;
            o.z = v[u].z + p[u].z < 0.0f ? 0.0f : v[u].z + p[u].z;
            o.w = v[u].w + p[u].w < 0.0f ? 0.0f : v[u].w + p[u].w;
            __stcs(reinterpret_cast<float4 *>(y + r * FH_CRITIC_H1) + q, o);
        }
    }
}

extern "C" __global__ void __launch_bounds__(FH_L0_THREADS)
critic_layer0_factored_kernel(const fh_critic_layer0_args a)
{
    critic_layer0_factored_kernel_body(a.y, a.proj, a.bars, a.states, a.in_stride, a.w0,
                                       a.w0_stride, a.b0, a.n_bars, a.rows, a.col0, a.cols);
}

#endif
