/* curiosity.cu — the curiosity model over all N*L transitions, its bonus added to the
 * rewards (curiosity_fused_kernel). */
#ifndef FOXHUNT_CURIOSITY_CU
#define FOXHUNT_CURIOSITY_CU

/* The curiosity model over all N*L transitions, fused: one thread per transition runs
 * curiosity_inference's arithmetic in its order (bias, then the inputs ascending; SPEC
 * §3.5) and adds curiosity_bonus(MSE against the next bar's features 0..31) to
 * rewards[i]. The weights sit transposed in shared memory, so each float4 read (the same
 * address across the warp: a broadcast) feeds four outputs' multiply-adds; inputs,
 * hidden units and predictions stay in registers. States rows are in_stride apart. */
/* One 16-byte shared-memory read (NVVM splits float4 reads of shared memory into four,
 * which would make the kernel bound by shared-memory instructions, not multiply-adds). */
__device__ __forceinline__ float4 fh_lds4(const float4 *p)
{
    float4 v;
    unsigned a = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "r"(a));
    return v;
}
#define FH_CUR_SM_W0T 0 /* (35, 64) */
#define FH_CUR_SM_B0 (FH_CUR_SM_W0T + FH_CURIOSITY_INPUT_DIM * FH_CURIOSITY_HIDDEN)
#define FH_CUR_SM_W1T (FH_CUR_SM_B0 + FH_CURIOSITY_HIDDEN) /* (64, 32) */
#define FH_CUR_SM_B1 (FH_CUR_SM_W1T + FH_CURIOSITY_HIDDEN * FH_CURIOSITY_TARGET_DIM)
#define FH_CUR_SM_FLOATS (FH_CUR_SM_B1 + FH_CURIOSITY_TARGET_DIM)
static_assert(FH_CURIOSITY_HIDDEN % 4 == 0 && FH_CURIOSITY_TARGET_DIM % 4 == 0 &&
                  FH_CUR_SM_FLOATS % 4 == 0 && FH_CUR_SM_FLOATS * sizeof(float) <= 48 * 1024,
              "curiosity_fused_kernel: the weights as float4s in static shared memory");
static_assert(FH_CURIOSITY_TARGET_DIM <= FH_N_MARKET_FEATURES &&
                  FH_CURIOSITY_ACTION_INPUTS == 3,
              "curiosity_fused_kernel: inputs s[0..T-1] (market features), x(a), u(a), e'");
/* The curiosity model's forward pass for T transitions at once: pred[e] = b1 +
 * W1 relu(b0 + W0 x[e]), with x and pred in registers and the weights transposed in
 * shared memory (w0t[k]: the 64 hidden units' weights of input k, w1t[o]: the 32
 * predictions' weights of hidden unit o, as float4s): each weight read feeds 4 T
 * multiply-adds. The hidden units run in blocks of FH_CUR_HIDDEN_BLOCK, each added into
 * the predictions once done: every sum keeps curiosity_inference's order (bias, then
 * inputs ascending), and a thread holds one block of hidden units instead of all 64
 * (fewer registers, more warps an SM). */
/* 8 hidden units a block, 2 transitions a thread: the fastest of 1-2 x 8-64
 * (dev/cuda/curiosity_forward.cu) */
#define FH_CUR_HIDDEN_BLOCK 8
#define FH_CUR_PER_THREAD 2
/* y[0..3] += w * x, one fmaf per component (x, y, z, w order) */
__device__ __forceinline__ void fh_acc4(float *y, float4 w, float x)
{
    y[0] = fmaf(w.x, x, y[0]);
    y[1] = fmaf(w.y, x, y[1]);
    y[2] = fmaf(w.z, x, y[2]);
    y[3] = fmaf(w.w, x, y[3]);
}

/* y[e][4q..4q+3] = b[q] for each of the T rows, b read once as a float4 */
template <int T, int W>
__device__ __forceinline__ void fh_rows_from_bias(float (*y)[W], const float4 *b)
{
#pragma unroll
    for (int q = 0; q < W / 4; q++) {
        float4 bq = fh_lds4(b + q);
#pragma unroll
        for (int e = 0; e < T; e++) {
            y[e][4 * q] = bq.x;
            y[e][4 * q + 1] = bq.y;
            y[e][4 * q + 2] = bq.z;
            y[e][4 * q + 3] = bq.w;
        }
    }
}

template <int T>
__device__ __forceinline__ void fh_curiosity_forward(float (*pred)[FH_CURIOSITY_TARGET_DIM],
                                                     const float (*x)[FH_CURIOSITY_INPUT_DIM],
                                                     const float4 *w0t, const float4 *b0,
                                                     const float4 *w1t, const float4 *b1)
{
    constexpr int HB = FH_CUR_HIDDEN_BLOCK, HQ = FH_CURIOSITY_HIDDEN / 4,
                  PQ = FH_CURIOSITY_TARGET_DIM / 4;
    static_assert(FH_CURIOSITY_HIDDEN % HB == 0 && HB % 4 == 0, "hidden blocks of float4s");
    fh_rows_from_bias<T>(pred, b1);
#pragma unroll 1
    for (int o0 = 0; o0 < FH_CURIOSITY_HIDDEN; o0 += HB) {
        float h[T][HB];
        fh_rows_from_bias<T>(h, b0 + o0 / 4);
#pragma unroll
        for (int k = 0; k < FH_CURIOSITY_INPUT_DIM; k++) {
#pragma unroll
            for (int q = 0; q < HB / 4; q++) {
                float4 wv = fh_lds4(w0t + k * HQ + o0 / 4 + q);
#pragma unroll
                for (int e = 0; e < T; e++)
                    fh_acc4(&h[e][4 * q], wv, x[e][k]);
            }
        }
#pragma unroll
        for (int o = 0; o < HB; o++) {
#pragma unroll
            for (int q = 0; q < PQ; q++) {
                float4 wv = fh_lds4(w1t + (o0 + o) * PQ + q);
#pragma unroll
                for (int e = 0; e < T; e++)
                    fh_acc4(&pred[e][4 * q], wv, h[e][o] > 0.0f ? h[e][o] : 0.0f);
            }
        }
    }
}

__device__ __forceinline__ void curiosity_fused_kernel_body(
    float *rewards, const float *__restrict__ states, int in_stride,
    const int *__restrict__ actions, const float *__restrict__ exposures,
    const int *__restrict__ bars, const float *__restrict__ cur_w, fh_env_config cfg,
    fh_env_market market, long long nl)
{
    __shared__ float4 w4[FH_CUR_SM_FLOATS / 4]; /* float4-typed: read as vectors */
    float *w = reinterpret_cast<float *>(w4);
    for (int idx = threadIdx.x; idx < FH_CURIOSITY_INPUT_DIM * FH_CURIOSITY_HIDDEN;
         idx += blockDim.x) {
        int k = idx / FH_CURIOSITY_HIDDEN, o = idx % FH_CURIOSITY_HIDDEN;
        w[FH_CUR_SM_W0T + idx] = cur_w[FH_CURIOSITY_OFF_W0 + o * FH_CURIOSITY_INPUT_DIM + k];
    }
    for (int idx = threadIdx.x; idx < FH_CURIOSITY_HIDDEN * FH_CURIOSITY_TARGET_DIM;
         idx += blockDim.x) {
        int o = idx / FH_CURIOSITY_TARGET_DIM, j = idx % FH_CURIOSITY_TARGET_DIM;
        w[FH_CUR_SM_W1T + idx] = cur_w[FH_CURIOSITY_OFF_W1 + j * FH_CURIOSITY_HIDDEN + o];
    }
    for (int o = threadIdx.x; o < FH_CURIOSITY_HIDDEN; o += blockDim.x)
        w[FH_CUR_SM_B0 + o] = cur_w[FH_CURIOSITY_OFF_B0 + o];
    for (int j = threadIdx.x; j < FH_CURIOSITY_TARGET_DIM; j += blockDim.x)
        w[FH_CUR_SM_B1 + j] = cur_w[FH_CURIOSITY_OFF_B1 + j];
    __syncthreads();
    const float4 *w0t = w4 + FH_CUR_SM_W0T / 4, *b0 = w4 + FH_CUR_SM_B0 / 4;
    const float4 *w1t = w4 + FH_CUR_SM_W1T / 4, *b1 = w4 + FH_CUR_SM_B1 / 4;
    /* a grid-stride loop over transitions, FH_CUR_PER_THREAD at a time (a whole grid's
     * stride apart, so that a warp's loads and stores stay contiguous): the weights are
     * staged once per block; the reads of them are volatile (fh_lds4), or the compiler
     * would hoist all 4,384 out of the loop and spill them */
    constexpr int T = FH_CUR_PER_THREAD;
    long long threads = (long long)gridDim.x * blockDim.x;
    for (long long i0 = blockIdx.x * (long long)blockDim.x + threadIdx.x; i0 < nl;
         i0 += T * threads) {
        float x[T][FH_CURIOSITY_INPUT_DIM];
#pragma unroll
        for (int e = 0; e < T; e++) {
            long long i = i0 + e * threads < nl ? i0 + e * threads : i0; /* a spare: i0 again */
            const float *s = states + i * in_stride;
#pragma unroll
            for (int k = 0; k < FH_CURIOSITY_TARGET_DIM; k++)
                x[e][k] = s[k];
            int a = actions[i];
            x[e][FH_CURIOSITY_TARGET_DIM] = action_to_exposure(a);
            x[e][FH_CURIOSITY_TARGET_DIM + 1] = action_to_urgency(a);
            x[e][FH_CURIOSITY_TARGET_DIM + 2] = exposures[i];
        }
        float pred[T][FH_CURIOSITY_TARGET_DIM];
        fh_curiosity_forward<T>(pred, x, w0t, b0, w1t, b1);
#pragma unroll
        for (int e = 0; e < T; e++) {
            long long i = i0 + e * threads;
            if (i >= nl)
                break;
            const float *next = market.features + (long long)(bars[i] + 1) * FH_N_MARKET_FEATURES;
            float sum = 0.0f;
#pragma unroll
            for (int j = 0; j < FH_CURIOSITY_TARGET_DIM; j++) {
                float d = pred[e][j] - next[j];
                sum += d * d;
            }
            rewards[i] += curiosity_bonus(&cfg, sum / (float)FH_CURIOSITY_TARGET_DIM);
        }
    }
}

extern "C" __global__ void __launch_bounds__(FH_CUR_THREADS)
curiosity_fused_kernel(const fh_curiosity_args a)
{
    curiosity_fused_kernel_body(a.rewards, a.states, a.in_stride, a.actions, a.exposures,
                                a.bars, a.weights, a.cfg, a.market, a.n);
}

#endif
