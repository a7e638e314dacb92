/* critic_layer0_factored.cu — the critic's first layer looked up through the market,
 * its launch shapes side by side (issue 16).
 *
 * A critic input row's first 51 floats are its bar's market features, so the first
 * layer (54 -> 512, bias, ReLU) is W0 s = proj[bar] + W0[:, 51..53] s[51..53] with
 * proj = features W0[:, :51]^T made once per collection over the market's bars (the
 * product makes it with one cublasLt matmul, market_projection in gpu_fast_collect.c).
 * critic_layer0_factored_kernel (src/cuda/kernels/ppo_fast_kernels.cu at 135853a,
 * copied unchanged here) writes y[r] = relu(proj[bar[r]] + b0 + W0[:, 51..53] s[r][51..53])
 * for each row: cols / 4 threads per row, four outputs (a float4) each, four rows per
 * thread, the thread's portfolio weights and biases in registers. It is bound by
 * writing its output: 2 KB a row, 17 GB at N 16384 x L 500.
 *
 * Versions (launch shapes of the same kernel, as the host chose them at 135853a):
 *   column slices: the 512 outputs in 1, 2 or 4 launches whose part of the table fits
 *     in L2 (the host's automatic choice: the fewest slices whose part of the table
 *     takes at most 16 MiB; 2 for this market's 15,840 bars, 32.4 MB);
 *     FOXHUNT_CRITIC_FACTOR_SLICES forced 1, 2 or 4;
 *   blocks per SM: 16 where the layer runs alone (L0_BLOCKS_PER_SM) and 2 in the
 *     pipeline, beside the matmuls (PIPELINE_L0_BLOCKS_PER_SM; FOXHUNT_PIPELINE_L0_BLOCKS).
 *     Alone, as here, 2 blocks per SM is expected to be slower: it was chosen for the
 *     pipeline, where the matmuls' blocks share the SMs, which this program does not
 *     reproduce.
 *   1  1 slice,  16 blocks/SM     4  1 slice,  2 blocks/SM
 *   2  2 slices, 16 blocks/SM (PRODUCT, alone)   5  2 slices, 2 blocks/SM (PRODUCT, pipeline)
 *   3  4 slices, 16 blocks/SM     6  4 slices, 2 blocks/SM
 * Rows go in chunks of at most 2^22 (the product's FOXHUNT_CRITIC_CHUNK_ROWS default),
 * one launch per chunk and slice, as critic_chain did.
 *
 * Inputs: random features in [-1.5, 1.5), portfolio floats, weights uniform in
 * +-1/sqrt(54); rows' bars as the rollout writes them (episode n's row t at start_n + t),
 * every 4,099th row's bar -1 (a row the rollout did not write: the kernel writes NaN).
 * The table is made here on the CPU in float64 and rounded to float (standing in for the
 * product's fp32 matmul).
 *
 * Check: a float64 CPU reference of the whole layer (the 51 market inputs' sums in
 * float64 per bar, not the float table the kernel reads; the bias and the 3 portfolio
 * inputs per row), |got - want| <= 1e-5 + 1e-5 |want|, NaN exactly where the bar is out
 * of range, the output poisoned before each launch; every row up to N*L 512,000, every
 * 16th row beyond (copied back from the device as a strided 2D copy, chunk by chunk).
 *
 * Build: make critic_layer0_factored (nvcc -O3 -arch=sm_90 -lineinfo)
 * Run:   ./critic_layer0_factored          every version at N*L 64,000, 512,000 and 8,192,000
 *        ./critic_layer0_factored 2        one version
 *        ./critic_layer0_factored 2 1024   one version at one N (x L 500)
 * Exit status 1 when a version fails its check. */
#include "common.h"

#define FH_L0_THREADS 256
#define FH_L0_ROWS_PER_THREAD 4
#define L0_SLICE_BYTES (16u << 20) /* gpu_fast_collect.c: about half an H200's L2 */
#define DEV_CHUNK_ROWS (1ll << 22) /* FOXHUNT_CRITIC_CHUNK_ROWS's default */
#define DEV_RUNS 7
#define DEV_UNWRITTEN_EVERY 4099  /* rows whose bar is -1 */

/* ---- copied from src/cuda/kernels/ppo_fast_kernels.cu (135853a) ---- */

/* acc + w * x per component (four fmaf, in x, y, z, w order) */
__device__ __forceinline__ float4 fh_fma4(float4 w, float x, float4 acc)
{
    acc.x = fmaf(w.x, x, acc.x);
    acc.y = fmaf(w.y, x, acc.y);
    acc.z = fmaf(w.z, x, acc.z);
    acc.w = fmaf(w.w, x, acc.w);
    return acc;
}

/* The critic's first layer through the market projection (gpu_fast_collect.c). A state's
 * first 51 entries are its bar's features, so W0 s = proj[bar] + W0[:, 51..53] s[51..53]
 * with proj = features W0[:, :51]^T computed once per collection over the market's bars:
 * y[r][j] = relu(proj[bars[r]][j] + b0[j] + sum_k w0[j][51 + k] s[r][51 + k]) for rows r
 * of states (in_stride floats apart; w0 rows w0_stride apart), y rows 512 apart, and
 * output columns j in [col0, col0 + cols): the host splits the columns into slices
 * whose part of the table fits in L2, where a whole 16,000-bar table (33 MB) kept
 * missing. A bar out of range (a row the rollout did not write) gives NaN, as its state
 * would. cols / 4 threads per row, four outputs each, and four rows per thread; the
 * thread's portfolio weights and biases in registers. */
extern "C" __global__ void __launch_bounds__(FH_L0_THREADS)
critic_layer0_factored_kernel(float *y, const float *__restrict__ proj,
                              const int *__restrict__ bars, const float *__restrict__ states,
                              int in_stride, const float *__restrict__ w0, int w0_stride,
                              const float *__restrict__ b0, int n_bars, long long rows, int col0,
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

/* ---- versions ---- */
typedef struct {
    int slices, blocks_per_sm;
    const char *what;
} l0_version;

static const l0_version VERSIONS[] = {
    {1, 16, "1 slice, alone (59ec0e5's '1 slice')"},
    {2, 16, "PRODUCT alone: 2 slices (auto for 15,840 bars), 16 blocks/SM"},
    {4, 16, "4 slices, alone"},
    {1, 2, "1 slice, the pipeline's grid"},
    {2, 2, "PRODUCT in the pipeline: 2 slices, 2 blocks/SM"},
    {4, 2, "4 slices, the pipeline's grid"},
};
#define N_VERSIONS ((int)(sizeof VERSIONS / sizeof VERSIONS[0]))

/* the host's automatic choice (gpu_fast_collect.c at 135853a) */
static int auto_slices(int n_bars)
{
    size_t proj_bytes = (size_t)n_bars * FH_CRITIC_H1 * sizeof(float);
    int s = 1;
    while (s < 4 && proj_bytes / s > L0_SLICE_BYTES)
        s *= 2;
    return s;
}

/* ---- inputs ---- */
typedef struct {
    long long rows;
    int n_bars;
    float *features; /* (n_bars, 51) */
    float *states;   /* (rows, 56): only the portfolio floats 51..53 are read */
    int *bars;       /* (rows) */
    float *w0;       /* (512, 54) as the critic stores it */
    float *b0;       /* (512) */
    float *proj;     /* (n_bars, 512) features W0[:, :51]^T, no bias: what the kernel reads */
    double *proj_ref; /* the same sums in float64, for the reference */
} l0_inputs;

static void make_inputs(l0_inputs *in, int n_episodes, uint64_t seed)
{
    dev_rng r = {seed};
    in->rows = (long long)n_episodes * DEV_STEPS;
    in->n_bars = DEV_N_BARS;
    in->features = (float *)host_alloc((size_t)in->n_bars * FH_N_MARKET_FEATURES * sizeof(float));
    for (long long i = 0; i < (long long)in->n_bars * FH_N_MARKET_FEATURES; i++)
        in->features[i] = dev_rng_uniform(&r, -1.5f, 1.5f);
    in->bars = (int *)host_alloc((size_t)in->rows * sizeof(int));
    dev_episode_bars(in->bars, n_episodes, DEV_STEPS, in->n_bars, &r);
    for (long long i = DEV_UNWRITTEN_EVERY / 2; i < in->rows; i += DEV_UNWRITTEN_EVERY)
        in->bars[i] = -1;
    in->states = (float *)host_alloc((size_t)in->rows * FH_CRITIC_IN_STRIDE * sizeof(float));
    for (long long i = 0; i < in->rows; i++) {
        float *s = in->states + i * FH_CRITIC_IN_STRIDE;
        int bar = in->bars[i] >= 0 ? in->bars[i] : 0;
        memcpy(s, in->features + (long long)bar * FH_N_MARKET_FEATURES,
               FH_N_MARKET_FEATURES * sizeof(float));
        s[FH_N_MARKET_FEATURES] = dev_rng_uniform(&r, -0.3f, 0.3f);
        s[FH_N_MARKET_FEATURES + 1] = dev_rng_uniform(&r, -1.0f, 1.0f);
        s[FH_N_MARKET_FEATURES + 2] = dev_rng_uniform(&r, 0.0f, 0.01f);
        for (int k = FH_STATE_DIM; k < FH_CRITIC_IN_STRIDE; k++)
            s[k] = 0.0f; /* the padding */
    }
    float a = 1.0f / sqrtf((float)FH_STATE_DIM);
    in->w0 = (float *)host_alloc((size_t)FH_CRITIC_H1 * FH_STATE_DIM * sizeof(float));
    in->b0 = (float *)host_alloc(FH_CRITIC_H1 * sizeof(float));
    for (int i = 0; i < FH_CRITIC_H1 * FH_STATE_DIM; i++)
        in->w0[i] = dev_rng_uniform(&r, -a, a);
    for (int j = 0; j < FH_CRITIC_H1; j++)
        in->b0[j] = dev_rng_uniform(&r, -a, a);
    in->proj = (float *)host_alloc((size_t)in->n_bars * FH_CRITIC_H1 * sizeof(float));
    in->proj_ref = (double *)host_alloc((size_t)in->n_bars * FH_CRITIC_H1 * sizeof(double));
    for (int b = 0; b < in->n_bars; b++)
        for (int j = 0; j < FH_CRITIC_H1; j++) {
            double acc = 0.0;
            for (int k = 0; k < FH_N_MARKET_FEATURES; k++)
                acc += (double)in->w0[j * FH_STATE_DIM + k] *
                       in->features[(long long)b * FH_N_MARKET_FEATURES + k];
            in->proj_ref[(long long)b * FH_CRITIC_H1 + j] = acc;
            in->proj[(long long)b * FH_CRITIC_H1 + j] = (float)acc;
        }
}

static void free_inputs(l0_inputs *in)
{
    free(in->features);
    free(in->states);
    free(in->bars);
    free(in->w0);
    free(in->b0);
    free(in->proj);
    free(in->proj_ref);
}

/* the float64 reference of row r's 512 outputs: b0 + the market inputs' sum (in
 * float64, once per bar: not the float table the kernel reads) + the portfolio inputs,
 * ReLU; NaN where the row's bar is out of range */
static void reference_row(const l0_inputs *in, long long r, double *y)
{
    int bar = in->bars[r];
    if (bar < 0 || bar >= in->n_bars) {
        for (int j = 0; j < FH_CRITIC_H1; j++)
            y[j] = NAN;
        return;
    }
    const double *market = in->proj_ref + (long long)bar * FH_CRITIC_H1;
    const float *s = in->states + r * FH_CRITIC_IN_STRIDE;
    for (int j = 0; j < FH_CRITIC_H1; j++) {
        const float *w = in->w0 + j * FH_STATE_DIM;
        double acc = (double)in->b0[j] + market[j];
        for (int k = 0; k < FH_N_PORTFOLIO_FEATURES; k++)
            acc += (double)w[FH_N_MARKET_FEATURES + k] * s[FH_N_MARKET_FEATURES + k];
        y[j] = acc > 0.0 ? acc : 0.0;
    }
}

/* ---- device side ---- */
typedef struct {
    const l0_version *v;
    int sm_count, n_bars;
    long long rows, chunk_begin, chunk_rows; /* one chunk, or all rows chunk by chunk */
    int whole;
    float *y, *proj, *states, *w0, *b0;
    int *bars;
} l0_launch;

/* the layer over rows [r0, r0 + rows): one launch per column slice (critic_layer0_factored
 * in gpu_fast_collect.c at 135853a) */
static void launch_chunk(const l0_launch *l, long long r0, long long rows)
{
    int cols = FH_CRITIC_H1 / l->v->slices;
    long long rows_per_block = (long long)FH_L0_THREADS / (cols / 4) * FH_L0_ROWS_PER_THREAD;
    long long blocks = (rows + rows_per_block - 1) / rows_per_block;
    long long cap = (long long)l->sm_count * l->v->blocks_per_sm;
    unsigned grid = (unsigned)(blocks < cap ? blocks : cap);
    for (int col0 = 0; col0 < FH_CRITIC_H1; col0 += cols) {
        critic_layer0_factored_kernel<<<grid, FH_L0_THREADS>>>(
            l->y, l->proj, l->bars + r0, l->states + r0 * FH_CRITIC_IN_STRIDE,
            FH_CRITIC_IN_STRIDE, l->w0, FH_STATE_DIM, l->b0, l->n_bars, rows, col0, cols);
        cudaCheckLaunch();
    }
}

/* all rows, chunk by chunk into the same output buffer (the product's act_a) */
static void launch_all(void *ctx)
{
    const l0_launch *l = (const l0_launch *)ctx;
    for (long long r0 = 0; r0 < l->rows; r0 += DEV_CHUNK_ROWS)
        launch_chunk(l, r0, l->rows - r0 < DEV_CHUNK_ROWS ? l->rows - r0 : DEV_CHUNK_ROWS);
}

static int run_size(int n_episodes, int only_version, int sm_count)
{
    l0_inputs in;
    make_inputs(&in, n_episodes, 0x1a7e0000ull + (uint64_t)n_episodes);
    long long rows = in.rows;
    long long chunk = rows < DEV_CHUNK_ROWS ? rows : DEV_CHUNK_ROWS;
    long long check_stride = rows > 512000 ? 16 : 1;

    l0_launch l;
    memset(&l, 0, sizeof l);
    l.sm_count = sm_count;
    l.n_bars = in.n_bars;
    l.rows = rows;
    size_t y_bytes = (size_t)chunk * FH_CRITIC_H1 * sizeof(float);
    size_t states_bytes = (size_t)rows * FH_CRITIC_IN_STRIDE * sizeof(float);
    size_t proj_bytes = (size_t)in.n_bars * FH_CRITIC_H1 * sizeof(float);
    cudaCheck(cudaMalloc((void **)&l.y, y_bytes));
    cudaCheck(cudaMalloc((void **)&l.proj, proj_bytes));
    cudaCheck(cudaMalloc((void **)&l.states, states_bytes));
    cudaCheck(cudaMalloc((void **)&l.bars, (size_t)rows * sizeof(int)));
    cudaCheck(cudaMalloc((void **)&l.w0, (size_t)FH_CRITIC_H1 * FH_STATE_DIM * sizeof(float)));
    cudaCheck(cudaMalloc((void **)&l.b0, FH_CRITIC_H1 * sizeof(float)));
    cudaCheck(cudaMemcpy(l.proj, in.proj, proj_bytes, cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(l.states, in.states, states_bytes, cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(l.bars, in.bars, (size_t)rows * sizeof(int), cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(l.w0, in.w0, (size_t)FH_CRITIC_H1 * FH_STATE_DIM * sizeof(float),
                         cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(l.b0, in.b0, FH_CRITIC_H1 * sizeof(float), cudaMemcpyHostToDevice));

    long long max_checked_per_chunk = (chunk + check_stride - 1) / check_stride;
    float *got = (float *)host_alloc((size_t)max_checked_per_chunk * FH_CRITIC_H1 * sizeof(float));
    double want[FH_CRITIC_H1];
    int failures = 0;
    double gbytes = (double)rows * FH_CRITIC_H1 * sizeof(float) / 1e9;
    printf("\nN %d x L %d = %lld rows, %d bars (auto slices %d), output %.2f GB in chunks of "
           "%lld rows; reference on every %lld-th row\n", n_episodes, DEV_STEPS, rows,
           in.n_bars, auto_slices(in.n_bars), gbytes, chunk, check_stride);
    printf("%-3s %-6s %-6s %-10s %-13s %-11s %-6s %s\n", "ver", "slices", "blk/SM", "median ms",
           "output TB/s", "max |err|", "check", "what");
    for (int vi = 0; vi < N_VERSIONS; vi++) {
        if (only_version && vi != only_version - 1)
            continue;
        l.v = &VERSIONS[vi];
        /* validate chunk by chunk: launch, copy back every check_stride-th row, compare */
        dev_check chk;
        dev_check_init(&chk);
        for (long long r0 = 0; r0 < rows; r0 += DEV_CHUNK_ROWS) {
            long long n = rows - r0 < DEV_CHUNK_ROWS ? rows - r0 : DEV_CHUNK_ROWS;
            /* poisoned with 3.4e38 (bytes 0x7f): an output left unwritten fails, NaN rows too */
            cudaCheck(cudaMemset(l.y, 0x7f, (size_t)n * FH_CRITIC_H1 * sizeof(float)));
            launch_chunk(&l, r0, n);
            cudaCheck(cudaDeviceSynchronize());
            long long first = (r0 + check_stride - 1) / check_stride * check_stride - r0;
            long long count = first < n ? (n - first + check_stride - 1) / check_stride : 0;
            if (count)
                cudaCheck(cudaMemcpy2D(got, FH_CRITIC_H1 * sizeof(float),
                                       l.y + first * FH_CRITIC_H1,
                                       (size_t)check_stride * FH_CRITIC_H1 * sizeof(float),
                                       FH_CRITIC_H1 * sizeof(float), (size_t)count,
                                       cudaMemcpyDeviceToHost));
            for (long long c = 0; c < count; c++) {
                long long r = r0 + first + c * check_stride;
                reference_row(&in, r, want);
                for (int j = 0; j < FH_CRITIC_H1; j++)
                    dev_check_one(&chk, r * FH_CRITIC_H1 + j, got[c * FH_CRITIC_H1 + j], want[j],
                                  1e-5, 1e-5);
            }
        }
        float ms = dev_time_median_ms(launch_all, &l, DEV_RUNS);
        printf("%-3d %-6d %-6d %-10.4f %-13.3f %-11.3e %-6s %s\n", vi + 1, l.v->slices,
               l.v->blocks_per_sm, ms, gbytes / ms, chk.max_abs, chk.failed ? "FAIL" : "ok",
               l.v->what);
        if (chk.failed) {
            failures++;
            printf("    first mismatch at row %lld column %lld: got %.9g, want %.9g (%lld of "
                   "%lld outside 1e-5 + 1e-5 |want|)\n", chk.first_bad / FH_CRITIC_H1,
                   chk.first_bad % FH_CRITIC_H1, chk.first_got, chk.first_want, chk.failed,
                   chk.checked);
        }
    }
    cudaCheck(cudaFree(l.y));
    cudaCheck(cudaFree(l.proj));
    cudaCheck(cudaFree(l.states));
    cudaCheck(cudaFree(l.bars));
    cudaCheck(cudaFree(l.w0));
    cudaCheck(cudaFree(l.b0));
    free(got);
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
    printf("critic_layer0_factored_kernel: %d threads a block, %d rows a thread; median of %d "
           "runs after a warm-up; output TB/s = rows x 2 KB / time\n", FH_L0_THREADS,
           FH_L0_ROWS_PER_THREAD, DEV_RUNS);
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
