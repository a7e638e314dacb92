/* rollout_overlap.cu — the critic overlapped with the rollout, kept for reference
 * (issue 16: dropped from src/ with FOXHUNT_ROLLOUT_OVERLAP, FOXHUNT_OVERLAP_SEGMENTS,
 * FOXHUNT_OVERLAP_EXCLUSIVE and FOXHUNT_ROLLOUT_UNITS_PER_BLOCK).
 *
 * What it was (commit 135853a and before; docs/ARCHITECTURE.md "Overlap"): the rollout
 * counted, per time segment (L / 8 steps by default), the episodes whose state rows of
 * that segment were written (fast_warp_segment_done: the row's bar stored first, a
 * fence, then atomicAdd on seg_done[segment]); a second stream, forked and joined inside
 * the collection's CUDA graph, ran for each segment segment_wait_kernel (one thread
 * polling the counter, giving up after 20 s with a flag the host turned into an error,
 * should the two kernels ever be serialized), gather_segment_rows_kernel (the segment's
 * rows, episode-major, into one contiguous block), the critic's six layers on it, and
 * scatter_segment_values_kernel (the values back to the episode-major rows). Rollout
 * blocks asked for all of an SM's shared memory, so that the critic's GEMM blocks ran on
 * the SMs the rollout left free.
 *
 * Why it is gone: measured at every stage of the rollout and it never paid once the
 * rollout got faster (docs/BENCHMARKS.md; dev/cuda/HISTORY.md for the full runs):
 * 769b186 (co-resident, N 128) 3.645 -> 4.484 ms; 7ccb809 runs 1-6 (SMs of its own) paid
 * 4% at one intermediate state (run 2: 2.731 -> 2.625 ms) and lost since (run 6: 2.388
 * without, 2.504 with; N 200 3.089 / 3.422); fa979e7 N 1024 10.709 off / 11.238 own SMs /
 * 10.818 co-resident; 9f2f4b0 N 1024 10.512 off / 10.63-10.76 on. Packing two episodes
 * on an SM slows the actor, the rollout runs more cycles per step beside the GEMMs, and
 * the critic on the SMs left takes about as long as the rollout.
 *
 * This program: the three kernels and the rollout's signal, copied from
 * src/cuda/kernels/ppo_fast_kernels.cu at 135853a (segment_wait_kernel takes its time-out
 * as an argument here instead of FH_SEGMENT_WAIT_NS; the product's value is 20 s), around
 * a stand-in rollout (one warp per episode writing rows, with a sleep per step standing
 * for the ~4 us step) and a stand-in critic (one dot product per row). It checks that
 * every value lands in its episode-major row (against a float64 CPU reference, |got -
 * want| <= 5e-5 + 1e-5 |want|: 55 fp32 terms of up to 1.5), that no wait timed out, and that a wait whose segment
 * never finishes times out and sets the flag. It prints the toy's times, sequential and
 * overlapped, which say only that the mechanism overlaps; they are not the product's.
 *
 * Build: make rollout_overlap (nvcc -O3 -arch=sm_90 -lineinfo)
 * Run:   ./rollout_overlap   (exit status 1 when a check fails) */
#include "common.h"

#define FH_WARP 32
#define FH_OVERLAP_SEGMENTS 8
#define ELEMENTWISE_BLOCK 256
#define DEV_EPISODES_TOY 128
#define DEV_STEP_NS 2000 /* the stand-in rollout's sleep per step */
#define DEV_WAIT_NS 20000000000ull /* FH_SEGMENT_WAIT_NS: 20 s */

/* ---- copied from src/cuda/kernels/ppo_fast_kernels.cu (135853a) ---- */

/* Overlap of the critic with the rollout (gpu_fast_collect.c): the rollout counts each
 * episode into seg_done[t / seg_steps] once its state row t, the last of a time segment,
 * and that row's bar are written, so the critic of that segment can start
 * (segment_wait_kernel) while the rollout goes on. Every thread that wrote part of the
 * row calls this (fenced first); seg_done NULL: no overlap. */
__device__ __forceinline__ int fast_segment_ends(const int *seg_done, int t, int seg_steps,
                                                 int n_steps)
{
    return seg_done && ((t + 1) % seg_steps == 0 || t + 1 == n_steps);
}

__device__ __forceinline__ void fast_warp_segment_done(int *seg_done, int t, int seg_steps,
                                                       int n_steps, int *bar_dst, int bar,
                                                       int lane)
{
    if (!fast_segment_ends(seg_done, t, seg_steps, n_steps))
        return;
    if (lane == 0) /* the row's bar too (the factored first layer reads it), ahead of the
                      step's other outputs, which store it again */
        *bar_dst = bar;
    __threadfence();
    __syncwarp();
    if (lane == 0)
        atomicAdd(&seg_done[t / seg_steps], 1);
}

/* The side stream's gate for time segment `segment` (overlap, gpu_fast_collect.c): one
 * thread waits until all `target` episodes have counted their state rows of the segment
 * in seg_done, so the critic kernels after it read finished rows. The rollout never
 * waits on the critic, so this ends as long as the rollout runs beside it; should the
 * two ever be serialized (a tool that serializes kernels), it gives up after
 * FH_SEGMENT_WAIT_NS (here: wait_ns) and sets *timed_out, which the host reports as an
 * error. */
__device__ __forceinline__ unsigned long long fh_globaltimer(void)
{
    unsigned long long ns;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
    return ns;
}

extern "C" __global__ void segment_wait_kernel(const int *seg_done, int segment, int target,
                                               int *timed_out, unsigned long long wait_ns)
{
    if (threadIdx.x != 0 || blockIdx.x != 0)
        return;
    const volatile int *count = seg_done + segment;
    const volatile int *gave_up = timed_out;
    unsigned long long start = fh_globaltimer();
    while (*count < target && !*gave_up) { /* after one time-out the others do not wait */
        if (fh_globaltimer() - start > wait_ns) {
            atomicExch(timed_out, 1);
            break;
        }
        __nanosleep(256);
    }
    __threadfence();
}

/* dst (n_episodes * seg_len rows, episode-major) = critic_in rows n * n_steps + t for
 * t in [t0, t0 + seg_len): one time segment's states, contiguous for the GEMMs. */
extern "C" __global__ void gather_segment_rows_kernel(float *dst, int *dst_bars,
                                                      const float *__restrict__ critic_in,
                                                      const int *__restrict__ bars,
                                                      int in_stride, int n_episodes, int n_steps,
                                                      int t0, int seg_len)
{
    long long total = (long long)n_episodes * seg_len * in_stride;
    for (long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x; idx < total;
         idx += (long long)gridDim.x * blockDim.x) {
        long long r = idx / in_stride;
        int col = (int)(idx % in_stride);
        long long n = r / seg_len;
        int t = t0 + (int)(r % seg_len);
        dst[idx] = critic_in[(n * n_steps + t) * in_stride + col];
        if (col == 0)
            dst_bars[r] = bars[n * n_steps + t];
    }
}

/* values[n * n_steps + t0 + j] = seg_values[n * seg_len + j]: the segment's values back
 * into the episode-major rows. */
extern "C" __global__ void scatter_segment_values_kernel(float *values,
                                                         const float *__restrict__ seg_values,
                                                         int n_episodes, int n_steps, int t0,
                                                         int seg_len)
{
    long long total = (long long)n_episodes * seg_len;
    for (long long r = blockIdx.x * (long long)blockDim.x + threadIdx.x; r < total;
         r += (long long)gridDim.x * blockDim.x)
        values[(r / seg_len) * n_steps + t0 + r % seg_len] = seg_values[r];
}

/* ---- stand-ins (not the product's code) ---- */

/* the row episode n writes at step t: a hash of (n, t, column) in [-1, 1) */
__host__ __device__ inline float toy_state(int n, int t, int col)
{
    unsigned h = (unsigned)n * 2654435761u ^ (unsigned)t * 2246822519u ^ (unsigned)col * 3266489917u;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    return (float)(h >> 8) * (2.0f / 16777216.0f) - 1.0f;
}

__host__ __device__ inline int toy_bar(int n, int t)
{
    return (n * 37) % 1000 + t;
}

/* One warp per episode: each step writes its state row (54 floats, 2 zeros) and bar,
 * sleeps for the step's time and, at a segment's end, signals it as the product's warp
 * mapping did (fast_warp_segment_done). */
__global__ void toy_rollout_kernel(float *critic_in, int *bars, int in_stride, int n_episodes,
                                   int n_steps, int *seg_done, int seg_steps)
{
    int n = blockIdx.x, lane = threadIdx.x;
    if (n >= n_episodes)
        return;
    for (int t = 0; t < n_steps; t++) {
        long long row = (long long)n * n_steps + t;
        for (int col = lane; col < in_stride; col += FH_WARP)
            critic_in[row * in_stride + col] = col < FH_STATE_DIM ? toy_state(n, t, col) : 0.0f;
        __nanosleep(DEV_STEP_NS);
        fast_warp_segment_done(seg_done, t, seg_steps, n_steps, bars + row, toy_bar(n, t), lane);
        if (lane == 0)
            bars[row] = toy_bar(n, t);
    }
}

/* values[r] = v . x[r] + 0.001 bar[r], standing in for the critic's six layers */
__global__ void toy_critic_kernel(float *values, const float *__restrict__ x,
                                  const int *__restrict__ bars, const float *__restrict__ v,
                                  int in_stride, long long rows)
{
    for (long long r = blockIdx.x * (long long)blockDim.x + threadIdx.x; r < rows;
         r += (long long)gridDim.x * blockDim.x) {
        float acc = 0.001f * (float)bars[r];
        for (int k = 0; k < FH_STATE_DIM; k++)
            acc = fmaf(v[k], x[r * in_stride + k], acc);
        values[r] = acc;
    }
}

/* ---- the host side, as side_segments in gpu_fast_collect.c at 135853a ---- */
typedef struct {
    int n, l, in_stride, seg_steps, n_segments;
    float *critic_in, *values, *seg_in, *seg_values, *v;
    int *bars, *seg_bars, *seg_done; /* seg_done[n_segments] is the time-out flag */
    cudaStream_t main, side;
    cudaEvent_t fork, join;
    int overlap;
} toy;

static unsigned grid_for(long long elements)
{
    long long g = (elements + ELEMENTWISE_BLOCK - 1) / ELEMENTWISE_BLOCK;
    return (unsigned)(g < 1 ? 1 : g > 65535 ? 65535 : g);
}

static void side_segment(toy *c, int k, cudaStream_t s)
{
    int t0 = k * c->seg_steps;
    int seg_len = c->l - t0 < c->seg_steps ? c->l - t0 : c->seg_steps;
    long long rows = (long long)c->n * seg_len;
    if (c->overlap) {
        segment_wait_kernel<<<1, 32, 0, s>>>(c->seg_done, k, c->n, c->seg_done + c->n_segments,
                                             DEV_WAIT_NS);
        cudaCheckLaunch();
    }
    gather_segment_rows_kernel<<<grid_for(rows * c->in_stride), ELEMENTWISE_BLOCK, 0, s>>>(
        c->seg_in, c->seg_bars, c->critic_in, c->bars, c->in_stride, c->n, c->l, t0, seg_len);
    cudaCheckLaunch();
    toy_critic_kernel<<<grid_for(rows), ELEMENTWISE_BLOCK, 0, s>>>(c->seg_values, c->seg_in,
                                                                   c->seg_bars, c->v,
                                                                   c->in_stride, rows);
    cudaCheckLaunch();
    scatter_segment_values_kernel<<<grid_for(rows), ELEMENTWISE_BLOCK, 0, s>>>(
        c->values, c->seg_values, c->n, c->l, t0, seg_len);
    cudaCheckLaunch();
}

/* one collection: with the overlap, the side stream forks before the rollout and runs
 * the segments as they finish; without, the same kernels after the rollout */
static void collect(void *ctx)
{
    toy *c = (toy *)ctx;
    cudaCheck(cudaMemsetAsync(c->seg_done, 0, (size_t)(c->n_segments + 1) * sizeof(int), c->main));
    if (c->overlap) {
        cudaCheck(cudaEventRecord(c->fork, c->main));
        cudaCheck(cudaStreamWaitEvent(c->side, c->fork, 0));
        for (int k = 0; k < c->n_segments; k++)
            side_segment(c, k, c->side);
        cudaCheck(cudaEventRecord(c->join, c->side));
    }
    toy_rollout_kernel<<<c->n, FH_WARP, 0, c->main>>>(c->critic_in, c->bars, c->in_stride, c->n,
                                                      c->l, c->overlap ? c->seg_done : NULL,
                                                      c->seg_steps);
    cudaCheckLaunch();
    if (c->overlap)
        cudaCheck(cudaStreamWaitEvent(c->main, c->join, 0));
    else
        for (int k = 0; k < c->n_segments; k++)
            side_segment(c, k, c->main);
}

/* the timer on the main stream (common.h's times the legacy stream) */
static float time_collect(toy *c, int runs)
{
    float ms[DEV_MAX_RUNS];
    cudaEvent_t a, b;
    cudaCheck(cudaEventCreate(&a));
    cudaCheck(cudaEventCreate(&b));
    collect(c);
    cudaCheck(cudaStreamSynchronize(c->main));
    for (int i = 0; i < runs; i++) {
        cudaCheck(cudaEventRecord(a, c->main));
        collect(c);
        cudaCheck(cudaEventRecord(b, c->main));
        cudaCheck(cudaEventSynchronize(b));
        cudaCheck(cudaEventElapsedTime(&ms[i], a, b));
    }
    cudaCheck(cudaEventDestroy(a));
    cudaCheck(cudaEventDestroy(b));
    qsort(ms, (size_t)runs, sizeof ms[0], dev_cmp_float);
    return ms[runs / 2];
}

static int check_values(toy *c, const float *v_host, const char *label)
{
    long long nl = (long long)c->n * c->l;
    float *got = (float *)host_alloc((size_t)nl * sizeof(float));
    int timed_out = 0;
    cudaCheck(cudaMemcpy(got, c->values, (size_t)nl * sizeof(float), cudaMemcpyDeviceToHost));
    cudaCheck(cudaMemcpy(&timed_out, c->seg_done + c->n_segments, sizeof timed_out,
                         cudaMemcpyDeviceToHost));
    dev_check chk;
    dev_check_init(&chk);
    for (int n = 0; n < c->n; n++)
        for (int t = 0; t < c->l; t++) {
            double want = 0.001 * (double)toy_bar(n, t);
            for (int k = 0; k < FH_STATE_DIM; k++)
                want += (double)v_host[k] * toy_state(n, t, k);
            dev_check_one(&chk, (long long)n * c->l + t, got[(long long)n * c->l + t], want,
                          5e-5, 1e-5);
        }
    free(got);
    printf("%-12s values %s (max |err| %.3e)%s\n", label, chk.failed ? "FAIL" : "ok",
           chk.max_abs, timed_out ? ", a wait TIMED OUT" : "");
    if (chk.failed)
        printf("    first mismatch at row %lld (episode %lld, step %lld): got %.9g, want %.9g\n",
               chk.first_bad, chk.first_bad / c->l, chk.first_bad % c->l, chk.first_got,
               chk.first_want);
    return chk.failed || timed_out;
}

int main(void)
{
    dev_print_device();
    toy c;
    memset(&c, 0, sizeof c);
    c.n = DEV_EPISODES_TOY;
    c.l = DEV_STEPS;
    c.in_stride = FH_CRITIC_IN_STRIDE;
    c.seg_steps = (c.l + FH_OVERLAP_SEGMENTS - 1) / FH_OVERLAP_SEGMENTS; /* as the host did */
    c.n_segments = (c.l + c.seg_steps - 1) / c.seg_steps;
    long long nl = (long long)c.n * c.l, seg_rows = (long long)c.n * c.seg_steps;
    cudaCheck(cudaMalloc((void **)&c.critic_in, (size_t)nl * c.in_stride * sizeof(float)));
    cudaCheck(cudaMalloc((void **)&c.bars, (size_t)nl * sizeof(int)));
    cudaCheck(cudaMalloc((void **)&c.values, (size_t)nl * sizeof(float)));
    cudaCheck(cudaMalloc((void **)&c.seg_in, (size_t)seg_rows * c.in_stride * sizeof(float)));
    cudaCheck(cudaMalloc((void **)&c.seg_bars, (size_t)seg_rows * sizeof(int)));
    cudaCheck(cudaMalloc((void **)&c.seg_values, (size_t)seg_rows * sizeof(float)));
    cudaCheck(cudaMalloc((void **)&c.seg_done, (size_t)(c.n_segments + 1) * sizeof(int)));
    cudaCheck(cudaMalloc((void **)&c.v, FH_STATE_DIM * sizeof(float)));
    float v_host[FH_STATE_DIM];
    dev_rng r = {0x0e71a9ull};
    for (int k = 0; k < FH_STATE_DIM; k++)
        v_host[k] = dev_rng_uniform(&r, -0.5f, 0.5f);
    cudaCheck(cudaMemcpy(c.v, v_host, sizeof v_host, cudaMemcpyHostToDevice));
    cudaCheck(cudaStreamCreateWithFlags(&c.main, cudaStreamNonBlocking));
    cudaCheck(cudaStreamCreateWithFlags(&c.side, cudaStreamNonBlocking));
    cudaCheck(cudaEventCreateWithFlags(&c.fork, cudaEventDisableTiming));
    cudaCheck(cudaEventCreateWithFlags(&c.join, cudaEventDisableTiming));
    printf("toy: N %d x L %d, %d segments of %d steps, %d ns sleep per step\n", c.n, c.l,
           c.n_segments, c.seg_steps, DEV_STEP_NS);

    int failures = 0;
    for (c.overlap = 0; c.overlap <= 1; c.overlap++) {
        /* NaN, on the stream the collection runs on (non-blocking streams do not wait for
         * the legacy stream) */
        cudaCheck(cudaMemsetAsync(c.values, 0xff, (size_t)nl * sizeof(float), c.main));
        collect(&c);
        cudaCheck(cudaStreamSynchronize(c.main));
        failures += check_values(&c, v_host, c.overlap ? "overlapped" : "sequential");
    }
    for (c.overlap = 0; c.overlap <= 1; c.overlap++)
        printf("%-12s toy collection %.3f ms (median of 5; not the product's figure)\n",
               c.overlap ? "overlapped" : "sequential", time_collect(&c, 5));

    /* the time-out: a segment that never finishes (target above the episodes) */
    cudaCheck(cudaMemsetAsync(c.seg_done, 0, (size_t)(c.n_segments + 1) * sizeof(int), c.side));
    segment_wait_kernel<<<1, 32, 0, c.side>>>(c.seg_done, 0, c.n + 1, c.seg_done + c.n_segments,
                                              1000000ull /* 1 ms */);
    cudaCheckLaunch();
    cudaCheck(cudaStreamSynchronize(c.side));
    int timed_out = 0;
    cudaCheck(cudaMemcpy(&timed_out, c.seg_done + c.n_segments, sizeof timed_out,
                         cudaMemcpyDeviceToHost));
    printf("time-out     %s (a wait for a segment that never ends set the flag: %d)\n",
           timed_out ? "ok" : "FAIL", timed_out);
    failures += !timed_out;

    cudaCheck(cudaFree(c.critic_in));
    cudaCheck(cudaFree(c.bars));
    cudaCheck(cudaFree(c.values));
    cudaCheck(cudaFree(c.seg_in));
    cudaCheck(cudaFree(c.seg_bars));
    cudaCheck(cudaFree(c.seg_values));
    cudaCheck(cudaFree(c.seg_done));
    cudaCheck(cudaFree(c.v));
    cudaCheck(cudaStreamDestroy(c.main));
    cudaCheck(cudaStreamDestroy(c.side));
    cudaCheck(cudaEventDestroy(c.fork));
    cudaCheck(cudaEventDestroy(c.join));
    if (failures) {
        printf("\nFAIL: %d check(s)\n", failures);
        return 1;
    }
    printf("\nall checks passed\n");
    return 0;
}
