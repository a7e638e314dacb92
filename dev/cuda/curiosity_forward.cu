/* curiosity_forward.cu — the fused curiosity kernel's versions side by side (issue 16).
 *
 * The product's curiosity_fused_kernel (src/cuda/kernels/ppo_fast_kernels.cu at
 * 135853a) runs the curiosity model over all N*L transitions of a collection: per
 * transition, x = (s[0..31], x(a), u(a), e') (35 floats), h = relu(b0 + W0 x) (64),
 * pred = b1 + W1 h (32), and it adds curiosity_bonus(mean((pred - f(bar + 1)[0..31])^2))
 * to the reward. The weights sit transposed in shared memory and are read as 16-byte
 * broadcasts; the hidden units go in blocks of HB (each block added into the predictions
 * once done, so every sum keeps curiosity_inference's order: bias, then inputs
 * ascending); each thread takes T transitions a grid's stride apart, so each weight read
 * feeds 4 T multiply-adds.
 *
 * Versions (T transitions per thread x HB hidden units per block); the product's
 * CURIOSITY_BLOCKS_PER_SM sets the grid (2 blocks of 128 threads per SM with T = 2, 3
 * with one block of 64, else 4):
 *   1  T 1, HB 64  the first fused kernel (59ec0e5; one block of all 64 hidden units)
 *   2  T 1, HB 16  hidden blocks (084804b; FOXHUNT_CURIOSITY_PER_THREAD=1's default)
 *   3  T 1, HB 32
 *   4  T 1, HB 8
 *   5  T 2, HB 8   the product (4dc7bf1, default since 857fb06)
 *   6  T 2, HB 16
 *   7  T 2, HB 32
 *   8  T 2, HB 64
 *
 * What is the product's code and what is not: fh_lds4, fh_acc4, fh_rows_from_bias,
 * fh_curiosity_forward and the kernel's body are copied from 135853a, with the two
 * build-time options (FH_CUR_PER_THREAD, FH_CUR_HIDDEN_BLOCK, which the host passed to
 * NVRTC) as template parameters. Adapted: the kernel takes the bonus coefficient and
 * the market's features as plain arguments instead of fh_env_config and fh_env_market,
 * and action_to_exposure, action_to_urgency and curiosity_bonus are copied in. The
 * input assembly (32 floats of the state row, 56 floats apart; the action's exposure
 * and urgency; the exposure) and the target (the next bar's features 0..31) are the
 * product's, on random inputs laid out as the rollout writes them.
 *
 * Check: a float64 CPU reference of the same model; every version's rewards within
 * |got - want| <= 1e-6 + 1e-5 |want| (all transitions up to N*L 512,000, every 16th at
 * 8,192,000); the bonus coefficient is 1 here (0.01 in the product) so that the check
 * sees the MSE itself. The versions keep the same order of every sum, so they are also
 * compared bit for bit with version 5 (printed, not a failure: the compiler may contract
 * the MSE's multiply-adds differently per version).
 *
 * Build: make curiosity_forward (nvcc -O3 -arch=sm_90 -lineinfo)
 * Run:   ./curiosity_forward          every version at N*L 64,000, 512,000 and 8,192,000
 *        ./curiosity_forward 5        one version
 *        ./curiosity_forward 5 1024   one version at one N (x L 500)
 * Exit status 1 when a version fails its check. */
#include "common.h"

#define FH_CUR_THREADS 128
#define DEV_CUR_COEF 1.0f  /* the product's cur_coef is 0.01 (env_config.c) */
#define DEV_RUNS 7

/* ---- copied from src/env/common_device_functions.cuh (135853a) ---- */
__host__ __device__ inline float action_to_exposure(int a)
{
    return FH_EXPOSURE_MIN + FH_EXPOSURE_STEP * (float)(a / FH_N_URGENCIES);
}

__host__ __device__ inline float action_to_urgency(int a)
{
    return FH_URGENCY_STEP * (float)(a % FH_N_URGENCIES + 1);
}

__device__ inline float curiosity_bonus(float cur_coef, float mse)
{
    return cur_coef * fminf(mse, FH_CURIOSITY_MSE_CAP);
}

/* ---- copied from src/cuda/kernels/ppo_fast_kernels.cu (135853a) ---- */

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

/* The curiosity model's forward pass for T transitions at once: pred[e] = b1 +
 * W1 relu(b0 + W0 x[e]), with x and pred in registers and the weights transposed in
 * shared memory; the hidden units in blocks of HB (FH_CUR_HIDDEN_BLOCK in the product). */
template <int T, int HB>
__device__ __forceinline__ void fh_curiosity_forward(float (*pred)[FH_CURIOSITY_TARGET_DIM],
                                                     const float (*x)[FH_CURIOSITY_INPUT_DIM],
                                                     const float4 *w0t, const float4 *b0,
                                                     const float4 *w1t, const float4 *b1)
{
    constexpr int HQ = FH_CURIOSITY_HIDDEN / 4, PQ = FH_CURIOSITY_TARGET_DIM / 4;
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

/* curiosity_fused_kernel with T = FH_CUR_PER_THREAD and HB = FH_CUR_HIDDEN_BLOCK;
 * features and cur_coef stand for market.features and cfg.cur_coef. */
template <int T, int HB>
__global__ void __launch_bounds__(FH_CUR_THREADS)
curiosity_fused_kernel(float *rewards, const float *__restrict__ states, int in_stride,
                       const int *__restrict__ actions, const float *__restrict__ exposures,
                       const int *__restrict__ bars, const float *__restrict__ cur_w,
                       float cur_coef, const float *__restrict__ features, long long nl)
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
    /* a grid-stride loop over transitions, T at a time (a whole grid's stride apart, so
     * that a warp's loads and stores stay contiguous): the weights are staged once per
     * block; the reads of them are volatile (fh_lds4), or the compiler would hoist all
     * 4,384 out of the loop and spill them */
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
        fh_curiosity_forward<T, HB>(pred, x, w0t, b0, w1t, b1);
#pragma unroll
        for (int e = 0; e < T; e++) {
            long long i = i0 + e * threads;
            if (i >= nl)
                break;
            const float *next = features + (long long)(bars[i] + 1) * FH_N_MARKET_FEATURES;
            float sum = 0.0f;
#pragma unroll
            for (int j = 0; j < FH_CURIOSITY_TARGET_DIM; j++) {
                float d = pred[e][j] - next[j];
                sum += d * d;
            }
            rewards[i] += curiosity_bonus(cur_coef, sum / (float)FH_CURIOSITY_TARGET_DIM);
        }
    }
}

/* ---- versions ---- */
typedef void (*cur_kernel_fn)(float *, const float *, int, const int *, const float *,
                              const int *, const float *, float, const float *, long long);
typedef struct {
    int per_thread, hidden_block;
    cur_kernel_fn kernel;
    const char *what;
} cur_version;

static const cur_version VERSIONS[] = {
    {1, 64, curiosity_fused_kernel<1, 64>, "first fused kernel, one block of 64 (59ec0e5)"},
    {1, 16, curiosity_fused_kernel<1, 16>, "hidden blocks of 16 (084804b)"},
    {1, 32, curiosity_fused_kernel<1, 32>, "hidden blocks of 32 (084804b)"},
    {1, 8, curiosity_fused_kernel<1, 8>, "hidden blocks of 8"},
    {2, 8, curiosity_fused_kernel<2, 8>, "PRODUCT: two per thread, blocks of 8 (4dc7bf1)"},
    {2, 16, curiosity_fused_kernel<2, 16>, "two per thread, blocks of 16"},
    {2, 32, curiosity_fused_kernel<2, 32>, "two per thread, blocks of 32"},
    {2, 64, curiosity_fused_kernel<2, 64>, "two per thread, one block of 64"},
};
#define N_VERSIONS ((int)(sizeof VERSIONS / sizeof VERSIONS[0]))
#define PRODUCT_VERSION 5

/* the product's CURIOSITY_BLOCKS_PER_SM (gpu_fast_collect.c at 135853a) */
static int blocks_per_sm(const cur_version *v)
{
    return v->per_thread == 2 ? 2 : v->hidden_block == 64 ? 3 : 4;
}

/* ---- inputs ---- */
typedef struct {
    long long nl;
    int n_bars;
    float *features; /* (n_bars, 51) */
    float *states;   /* (nl, 56): the bar's 51 features, 3 portfolio floats, 2 zeros */
    int *actions;    /* (nl) */
    float *exposures; /* (nl) */
    int *bars;       /* (nl) */
    float *rewards0; /* (nl) the rewards before the bonus */
    float *cur_w;    /* (4,384) */
} cur_inputs;

/* Random inputs shaped like the product's: features uniform in [-0.5, 0.5] (the model's
 * predictions then stay small and the MSE below its cap of 1, so the check sees the
 * arithmetic, not the cap), weights uniform in +-1/sqrt(fan-in) (PyTorch's default). */
static void make_inputs(cur_inputs *in, int n_episodes, uint64_t seed)
{
    dev_rng r = {seed};
    in->nl = (long long)n_episodes * DEV_STEPS;
    in->n_bars = DEV_N_BARS;
    in->features = (float *)host_alloc((size_t)in->n_bars * FH_N_MARKET_FEATURES * sizeof(float));
    for (long long i = 0; i < (long long)in->n_bars * FH_N_MARKET_FEATURES; i++)
        in->features[i] = dev_rng_uniform(&r, -0.5f, 0.5f);
    in->bars = (int *)host_alloc((size_t)in->nl * sizeof(int));
    dev_episode_bars(in->bars, n_episodes, DEV_STEPS, in->n_bars, &r);
    in->states = (float *)host_alloc((size_t)in->nl * FH_CRITIC_IN_STRIDE * sizeof(float));
    in->actions = (int *)host_alloc((size_t)in->nl * sizeof(int));
    in->exposures = (float *)host_alloc((size_t)in->nl * sizeof(float));
    in->rewards0 = (float *)host_alloc((size_t)in->nl * sizeof(float));
    for (long long i = 0; i < in->nl; i++) {
        float *s = in->states + i * FH_CRITIC_IN_STRIDE;
        memcpy(s, in->features + (long long)in->bars[i] * FH_N_MARKET_FEATURES,
               FH_N_MARKET_FEATURES * sizeof(float));
        s[FH_N_MARKET_FEATURES] = dev_rng_uniform(&r, -0.2f, 0.2f);
        s[FH_N_MARKET_FEATURES + 1] = dev_rng_uniform(&r, -1.0f, 1.0f);
        s[FH_N_MARKET_FEATURES + 2] = dev_rng_uniform(&r, 0.0f, 0.01f);
        for (int k = FH_STATE_DIM; k < FH_CRITIC_IN_STRIDE; k++)
            s[k] = 0.0f; /* the padding */
        in->actions[i] = dev_rng_int(&r, FH_N_ACTIONS);
        in->exposures[i] = dev_rng_uniform(&r, -1.0f, 1.0f);
        in->rewards0[i] = dev_rng_uniform(&r, -0.01f, 0.01f);
    }
    in->cur_w = (float *)host_alloc(FH_CURIOSITY_N_PARAMS * sizeof(float));
    float a0 = 1.0f / sqrtf((float)FH_CURIOSITY_INPUT_DIM), a1 = 1.0f / sqrtf((float)FH_CURIOSITY_HIDDEN);
    for (int i = FH_CURIOSITY_OFF_W0; i < FH_CURIOSITY_OFF_W1; i++)
        in->cur_w[i] = dev_rng_uniform(&r, -a0, a0);
    for (int i = FH_CURIOSITY_OFF_W1; i < FH_CURIOSITY_N_PARAMS; i++)
        in->cur_w[i] = dev_rng_uniform(&r, -a1, a1);
}

static void free_inputs(cur_inputs *in)
{
    free(in->features);
    free(in->states);
    free(in->actions);
    free(in->exposures);
    free(in->bars);
    free(in->rewards0);
    free(in->cur_w);
}

/* ---- the float64 CPU reference: rewards0[i] + coef * min(mse, 1) ---- */
static double reference_reward(const cur_inputs *in, long long i)
{
    const float *w = in->cur_w, *s = in->states + i * FH_CRITIC_IN_STRIDE;
    double x[FH_CURIOSITY_INPUT_DIM], h[FH_CURIOSITY_HIDDEN];
    for (int k = 0; k < FH_CURIOSITY_TARGET_DIM; k++)
        x[k] = s[k];
    int a = in->actions[i];
    x[FH_CURIOSITY_TARGET_DIM] = -1.0 + 0.25 * (double)(a / FH_N_URGENCIES);
    x[FH_CURIOSITY_TARGET_DIM + 1] = 0.2 * (double)(a % FH_N_URGENCIES + 1);
    x[FH_CURIOSITY_TARGET_DIM + 2] = in->exposures[i];
    for (int o = 0; o < FH_CURIOSITY_HIDDEN; o++) {
        double acc = w[FH_CURIOSITY_OFF_B0 + o];
        for (int k = 0; k < FH_CURIOSITY_INPUT_DIM; k++)
            acc += (double)w[FH_CURIOSITY_OFF_W0 + o * FH_CURIOSITY_INPUT_DIM + k] * x[k];
        h[o] = acc > 0.0 ? acc : 0.0;
    }
    const float *next = in->features + (long long)(in->bars[i] + 1) * FH_N_MARKET_FEATURES;
    double sum = 0.0;
    for (int j = 0; j < FH_CURIOSITY_TARGET_DIM; j++) {
        double p = w[FH_CURIOSITY_OFF_B1 + j];
        for (int o = 0; o < FH_CURIOSITY_HIDDEN; o++)
            p += (double)w[FH_CURIOSITY_OFF_W1 + j * FH_CURIOSITY_HIDDEN + o] * h[o];
        double d = p - next[j];
        sum += d * d;
    }
    double mse = sum / FH_CURIOSITY_TARGET_DIM;
    return (double)in->rewards0[i] + (double)DEV_CUR_COEF * (mse < 1.0 ? mse : 1.0);
}

/* ---- device side ---- */
typedef struct {
    const cur_version *v;
    unsigned grid;
    long long nl;
    float *rewards, *states, *exposures, *cur_w, *features;
    int *actions, *bars;
} cur_launch;

static void launch(void *ctx)
{
    cur_launch *l = (cur_launch *)ctx;
    l->v->kernel<<<l->grid, FH_CUR_THREADS>>>(l->rewards, l->states, FH_CRITIC_IN_STRIDE,
                                              l->actions, l->exposures, l->bars, l->cur_w,
                                              DEV_CUR_COEF, l->features, l->nl);
    cudaCheckLaunch();
}

static int run_size(int n_episodes, int only_version, int sm_count)
{
    cur_inputs in;
    make_inputs(&in, n_episodes, 0x5eed0000ull + (uint64_t)n_episodes);
    long long nl = in.nl;
    /* the reference over every transition up to 512,000, every 16th beyond */
    long long check_stride = nl > 512000 ? 16 : 1;
    long long n_check = (nl + check_stride - 1) / check_stride;
    double *want = (double *)host_alloc((size_t)n_check * sizeof(double));
    for (long long c = 0; c < n_check; c++)
        want[c] = reference_reward(&in, c * check_stride);

    cur_launch l;
    memset(&l, 0, sizeof l);
    l.nl = nl;
    size_t states_bytes = (size_t)nl * FH_CRITIC_IN_STRIDE * sizeof(float);
    cudaCheck(cudaMalloc((void **)&l.rewards, (size_t)nl * sizeof(float)));
    cudaCheck(cudaMalloc((void **)&l.states, states_bytes));
    cudaCheck(cudaMalloc((void **)&l.exposures, (size_t)nl * sizeof(float)));
    cudaCheck(cudaMalloc((void **)&l.actions, (size_t)nl * sizeof(int)));
    cudaCheck(cudaMalloc((void **)&l.bars, (size_t)nl * sizeof(int)));
    cudaCheck(cudaMalloc((void **)&l.cur_w, FH_CURIOSITY_N_PARAMS * sizeof(float)));
    cudaCheck(cudaMalloc((void **)&l.features,
                         (size_t)in.n_bars * FH_N_MARKET_FEATURES * sizeof(float)));
    cudaCheck(cudaMemcpy(l.states, in.states, states_bytes, cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(l.exposures, in.exposures, (size_t)nl * sizeof(float), cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(l.actions, in.actions, (size_t)nl * sizeof(int), cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(l.bars, in.bars, (size_t)nl * sizeof(int), cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(l.cur_w, in.cur_w, FH_CURIOSITY_N_PARAMS * sizeof(float), cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(l.features, in.features,
                         (size_t)in.n_bars * FH_N_MARKET_FEATURES * sizeof(float),
                         cudaMemcpyHostToDevice));

    float *got = (float *)host_alloc((size_t)nl * sizeof(float));
    float *product = (float *)host_alloc((size_t)nl * sizeof(float));
    int have_product = 0, failures = 0;
    /* the product version first, so the others can be compared with it bit for bit */
    int order[N_VERSIONS];
    order[0] = PRODUCT_VERSION - 1;
    for (int i = 0, k = 1; i < N_VERSIONS; i++)
        if (i != PRODUCT_VERSION - 1)
            order[k++] = i;
    printf("\nN %d x L %d = %lld transitions (reference on %lld of them)\n", n_episodes,
           DEV_STEPS, nl, n_check);
    printf("%-3s %-2s %-3s %-5s %-4s %-10s %-11s %-9s %-8s %s\n", "ver", "T", "HB", "regs",
           "grid", "median ms", "max |err|", "check", "=v5", "what");
    for (int oi = 0; oi < N_VERSIONS; oi++) {
        int vi = order[oi];
        if (only_version && vi != only_version - 1)
            continue;
        const cur_version *v = &VERSIONS[vi];
        cudaFuncAttributes attr;
        cudaCheck(cudaFuncGetAttributes(&attr, (const void *)v->kernel));
        long long blocks = (nl + FH_CUR_THREADS - 1) / FH_CUR_THREADS;
        long long cap = (long long)sm_count * blocks_per_sm(v);
        l.v = v;
        l.grid = (unsigned)(blocks < cap ? blocks : cap);

        /* validate: fresh rewards, one launch */
        cudaCheck(cudaMemcpy(l.rewards, in.rewards0, (size_t)nl * sizeof(float), cudaMemcpyHostToDevice));
        launch(&l);
        cudaCheck(cudaDeviceSynchronize());
        cudaCheck(cudaMemcpy(got, l.rewards, (size_t)nl * sizeof(float), cudaMemcpyDeviceToHost));
        dev_check chk;
        dev_check_init(&chk);
        for (long long c = 0; c < n_check; c++)
            dev_check_one(&chk, c * check_stride, got[c * check_stride], want[c], 1e-6, 1e-5);
        const char *same = "-";
        if (vi == PRODUCT_VERSION - 1) {
            memcpy(product, got, (size_t)nl * sizeof(float));
            have_product = 1;
        } else if (have_product) {
            same = memcmp(product, got, (size_t)nl * sizeof(float)) == 0 ? "bitwise" : "differs";
        }
        /* time: the rewards accumulate over the runs; only the time matters now */
        float ms = dev_time_median_ms(launch, &l, DEV_RUNS);
        printf("%-3d %-2d %-3d %-5d %-4u %-10.4f %-11.3e %-9s %-8s %s\n", vi + 1, v->per_thread,
               v->hidden_block, attr.numRegs, l.grid, ms, chk.max_abs,
               chk.failed ? "FAIL" : "ok", same, v->what);
        if (chk.failed) {
            failures++;
            printf("    first mismatch at transition %lld: got %.9g, want %.9g (%lld of %lld "
                   "outside 1e-6 + 1e-5 |want|)\n", chk.first_bad, chk.first_got,
                   chk.first_want, chk.failed, chk.checked);
        }
    }
    cudaCheck(cudaFree(l.rewards));
    cudaCheck(cudaFree(l.states));
    cudaCheck(cudaFree(l.exposures));
    cudaCheck(cudaFree(l.actions));
    cudaCheck(cudaFree(l.bars));
    cudaCheck(cudaFree(l.cur_w));
    cudaCheck(cudaFree(l.features));
    free(got);
    free(product);
    free(want);
    free_inputs(&in);
    return failures;
}

int main(int argc, char **argv)
{
    int only_version = argc > 1 ? atoi(argv[1]) : 0;
    int only_n = argc > 2 ? atoi(argv[2]) : 0;
    if (argc > 3 || only_version < 0 || only_version > N_VERSIONS || only_n < 0 ||
        (only_n > 0 && only_n * (long long)DEV_STEPS > (1ll << 31) - 1)) {
        fprintf(stderr, "usage: %s [version 1-%d] [N episodes (x L %d)]\n", argv[0], N_VERSIONS,
                DEV_STEPS);
        return 2;
    }
    dev_print_device();
    int sm_count = dev_sm_count();
    printf("curiosity_fused_kernel: %d threads a block, grid min(N*L/%d, SMs x blocks per SM); "
           "median of %d runs after a warm-up; %d FMAs per transition\n", FH_CUR_THREADS,
           FH_CUR_THREADS, DEV_RUNS,
           FH_CURIOSITY_INPUT_DIM * FH_CURIOSITY_HIDDEN + FH_CURIOSITY_HIDDEN * FH_CURIOSITY_TARGET_DIM);
    int failures = 0;
    for (int s = 0; s < 3; s++)
        if (!only_n || only_n == DEV_EPISODES[s])
            failures += run_size(DEV_EPISODES[s], only_version, sm_count);
    if (only_n && only_n != DEV_EPISODES[0] && only_n != DEV_EPISODES[1] &&
        only_n != DEV_EPISODES[2])
        failures += run_size(only_n, only_version, sm_count);
    if (failures) {
        printf("\nFAIL: %d version(s) outside tolerance\n", failures);
        return 1;
    }
    printf("\nall versions within tolerance\n");
    return 0;
}
