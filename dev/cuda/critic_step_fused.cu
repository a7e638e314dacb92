/* critic_step_fused.cu — issue 35's lab question: how fast can ONE minibatch step of the
 * critic be when it is one persistent kernel instead of ~30 dependent launches?
 *
 * One step, on a minibatch of `rows` (default 512, SPEC's) random 54-wide inputs and
 * random value targets, the critic 54 -> 512 -> 384 -> 256 -> 128 -> 64 -> 1 (ReLU
 * hidden; include/foxhunt/shapes.h, weights [out, in] then bias, one flat buffer):
 *   forward through the 6 layers; the gradient of 0.5 * mean((v - target)^2) (a plain
 *   loss: the point is the matmul chain); backward (the input gradients of layers 1..5
 *   counted from 0, the weight and bias gradients of all 6); one Adam step (lr 3e-4,
 *   betas 0.9 / 0.999, eps 1e-5, torch's formula) over all 364,929 parameters.
 * Versions:
 *   1  one kernel per operation, back to back on one stream: a tiled SIMT fp32 matmul per
 *      layer forward, per input gradient and per weight gradient, a bias + ReLU pass, a
 *      ReLU-mask + bias-gradient reduction, the loss gradient, Adam (30 launches): the
 *      shape of the product's path without cuBLAS
 *   2  the same 30 launches captured once in a CUDA graph and replayed
 *   3  ONE cooperative persistent kernel (grid = as many blocks as fit, from the occupancy
 *      query) running 12 phases separated by 11 grid.sync(): each phase's tiles spread
 *      over the blocks, activations in global memory (L2-resident: 512 x 1,344 floats),
 *      bias + ReLU and the ReLU mask in the matmuls' epilogues, the last layer and the
 *      loss gradient one warp a row, the weight gradients split over 128-row chunks of K
 *      whose partials Adam's phase adds (so no atomics: bit-identical run to run)
 *   4  version 3 with TF32 tensor-core tiles (wmma 16x16x8, fp32 accumulation)
 * All versions share the tile code (one 64x64 output tile a block, 256 threads), so they
 * differ in how work is launched, not in how a tile is computed.
 *
 * Phases of versions 3-4 (every read is of data written before the grid.sync preceding
 * it; nothing a phase reads is written in that phase):
 *   P0..P4  act[l+1] = relu(act[l] W_l^T + b_l)                          l = 0..4
 *   P5      value = act5 w5 + b5; dz5 = (value - target) / rows; dz4 = dz5 w5 * (act5 > 0)
 *   P6..P9  dz[l-1] = (dz[l] W_l) * (act[l] > 0) for l = 4..1, and beside it the weight and
 *           bias gradients' partials of layer l (and of layer 5 in P6)
 *   P10     weight and bias gradients' partials of layer 0
 *   P11     Adam: gradient = sum of the partials (in split order), moments, parameters
 *
 * Check: a float64 CPU reference of the same step from the same float inputs; per tensor
 * (every weight and bias gradient, the value column, the parameters' step p_new - p_old,
 * Adam's two moments) the largest |got - want| over the tensor's largest |want| must be
 * <= 1e-4 (fp32) or 5e-3 (TF32); a NaN fails. Where the reference's pre-activation lies
 * within a band of zero (1e-4 fp32, 2e-2 TF32: rounding can put it on either side), the
 * reference's backward takes its ReLU mask from the device's activation (counted and
 * printed), as ppo_loss.cu skips rows at a branch edge. The reference itself is checked
 * by `--cpu-check` (no GPU needed): central differences of the loss on a 6-layer toy
 * (every parameter) and on the full critic (16 parameters a tensor), 4 rows, and Adam
 * against a hand-computed step.
 *
 * Build: make critic_step_fused.
 * Run:   ./critic_step_fused [version] [rows] [blocks_per_sm]   (0 = all / 512 / occupancy)
 *        ./critic_step_fused --cpu-check
 * Prints per version the median us of a whole step (7 runs after a warm-up, CUDA events),
 * the achieved TFLOP/s (6 x the critic's 363,584 MACs x rows), the grid and its syncs for
 * 3-4, every tensor's error, ok or FAIL. Exit status 1 when a check fails. */
#include "common.h"

#include <cooperative_groups.h>
#include <mma.h>

namespace cg = cooperative_groups;

#define DEV_RUNS 7
#define N_LAYERS FH_CRITIC_N_LAYERS
#define N_PARAMS FH_CRITIC_N_PARAMS
#define THREADS 256
#define TILE 64     /* output tile TILE x TILE */
#define TILE_K 16   /* K slab staged in shared memory */
#define TILE_PAD 4  /* row pad: keeps wmma's 32-byte alignment (ldm a multiple of 4 floats) */
#define SPLIT_ROWS 128  /* rows of K per weight-gradient partial (versions 3-4) */
#define ELEMS_PER_TILE 1024 /* element-wise jobs: 4 per thread */
#define HEAD_ROWS (THREADS / 32) /* the last layer: a warp a row */
#define N_PHASES 12
#define MAX_JOBS 24
#define LR 3e-4
#define BETA1 0.9
#define BETA2 0.999
#define ADAM_EPS 1e-5
#define ADAM_STEP 10 /* the step count t after this step: bias corrections != 1 */

static const int DIMS[N_LAYERS + 1] = {FH_STATE_DIM, FH_CRITIC_H1, FH_CRITIC_H2, FH_CRITIC_H3,
                                       FH_CRITIC_H4, FH_CRITIC_H5, 1};
static const int OFF_W[N_LAYERS] = {FH_CRITIC_OFF_W0, FH_CRITIC_OFF_W1, FH_CRITIC_OFF_W2,
                                    FH_CRITIC_OFF_W3, FH_CRITIC_OFF_W4, FH_CRITIC_OFF_W5};
static const int OFF_B[N_LAYERS] = {FH_CRITIC_OFF_B0, FH_CRITIC_OFF_B1, FH_CRITIC_OFF_B2,
                                    FH_CRITIC_OFF_B3, FH_CRITIC_OFF_B4, FH_CRITIC_OFF_B5};
static_assert(FH_CRITIC_H5 == 64, "the head job gives each lane of a warp 2 of the 64 inputs");
static_assert(THREADS == 256 && TILE == 64 && TILE_K == 16,
              "the loaders and the 4x4-per-thread / 8-warp wmma maps assume these sizes");

#include "critic_step_reference.h"

/* ==== the device step: jobs of tiles, run one kernel a job (1-2) or all in one (3-4) ==== */
enum job_kind { JOB_GEMM, JOB_BIAS_RELU, JOB_LOSS_GRAD, JOB_HEAD, JOB_BIAS_GRAD, JOB_ADAM };

/* C(m, n) = sum over the split's k of A(m, k) B(k, n), A(m, k) = a[m * a_m + k * a_k],
 * B(k, n) = b[k * b_k + n * b_n]; then + bias[n], relu, * (mask(m, n) > 0); written to
 * c[split * c_split + m * ldc + n]. Tiles: ceil(M / 64) x ceil(N / 64) x splits. */
typedef struct {
    const float *a, *b, *bias, *mask;
    float *c;
    int a_m, a_k, b_k, b_n, ldc, ld_mask, relu;
    int m, n, k, k_split;
    long long c_split;
} gemm_job;

/* element-wise: x[r, n] = relu(x[r, n] + bias[n]) (version 1's forward epilogue) */
typedef struct {
    float *x;
    const float *bias;
    int rows, width;
} bias_relu_job;

/* version 1's last step of the forward: value += b5; dz5 = (value - target) / rows */
typedef struct {
    float *value, *dz5;
    const float *b5, *target;
    int rows;
} loss_grad_job;

/* versions 3-4: the last layer, the loss gradient and dz4, a warp a row */
typedef struct {
    const float *act5, *w5, *b5, *target;
    float *value, *dz5, *dz4;
    int rows;
} head_job;

/* out[split * out_split + n] = sum of dz[r, n] over the split's rows; where mask is given
 * dz is first masked in place by mask > 0 (version 1's ReLU gradient). Tiles: 64 columns
 * x splits. */
typedef struct {
    float *dz, *out;
    const float *mask;
    int rows, width, rows_split;
    long long out_split;
} bias_grad_job;

/* grads = sum of n_splits partials (in order); Adam moments; params */
typedef struct {
    float *params, *grads, *m, *v;
    const float *partials;
    int n, n_splits;
    float step_size, inv_sqrt_bc2; /* lr / (1 - b1^t), 1 / sqrt(1 - b2^t) */
} adam_job;

typedef struct {
    int kind, tiles;
    union {
        gemm_job gemm;
        bias_relu_job bias_relu;
        loss_grad_job loss_grad;
        head_job head;
        bias_grad_job bias_grad;
        adam_job adam;
    } u;
} step_job;

/* versions 3-4: phase p runs jobs [phase_begin[p], phase_begin[p + 1]) */
typedef struct {
    int n_phases, phase_begin[N_PHASES + 1];
    step_job jobs[MAX_JOBS];
} step_plan;
/* a kernel argument: the classic 4 KB limit, kept so that no newer driver is assumed */
static_assert(sizeof(step_plan) <= 4096, "step_plan must fit in a kernel's 4 KB of arguments");

static __host__ __device__ int cdiv(int a, int b) { return (a + b - 1) / b; }

/* Buffers are read with plain loads, never __ldg or const __restrict__: in versions 3-4
 * they are written earlier in the same kernel, and only coherent loads see that after
 * grid.sync(). */
typedef struct {
    float a[TILE_K][TILE + TILE_PAD]; /* A(m, k) at a[k][m]: wmma's col_major A */
    float b[TILE_K][TILE + TILE_PAD]; /* B(k, n) at b[k][n]: wmma's row_major B */
} tile_smem;

/* Stage A(m0.., k0..) and B(k0.., n0..) in shared memory, zero outside the matrix or the
 * split. Consecutive threads read consecutive addresses whichever index is contiguous. */
__device__ void gemm_stage(const gemm_job *j, tile_smem *s, int m0, int n0, int k0, int k_end)
{
    for (int q = 0; q < TILE * TILE_K / THREADS; q++) {
        int e = threadIdx.x + q * THREADS, m, k, n;
        if (j->a_k == 1) { m = e / TILE_K; k = e % TILE_K; } else { k = e / TILE; m = e % TILE; }
        int gm = m0 + m, gk = k0 + k;
        s->a[k][m] = gm < j->m && gk < k_end ? j->a[(long long)gm * j->a_m + (long long)gk * j->a_k] : 0.0f;
        if (j->b_n == 1) { k = e / TILE; n = e % TILE; } else { n = e / TILE_K; k = e % TILE_K; }
        int gn = n0 + n;
        gk = k0 + k;
        s->b[k][n] = gk < k_end && gn < j->n ? j->b[(long long)gk * j->b_k + (long long)gn * j->b_n] : 0.0f;
    }
}

__device__ void gemm_store(const gemm_job *j, int split, int gm, int gn, float v)
{
    if (gm >= j->m || gn >= j->n)
        return;
    if (j->bias)
        v += j->bias[gn];
    if (j->relu)
        v = fmaxf(v, 0.0f);
    if (j->mask && !(j->mask[(long long)gm * j->ld_mask + gn] > 0.0f))
        v = 0.0f;
    j->c[split * j->c_split + (long long)gm * j->ldc + gn] = v;
}

/* One 64 x 64 tile of one split: fp32 FMA, each thread a 4 x 4 block strided by 16 (so
 * a warp's shared reads are broadcasts or consecutive), or TF32 wmma (8 warps x two
 * 16 x 16 fragments). Every thread of the block calls this (it holds __syncthreads). */
template <bool TF32>
__device__ void gemm_tile(const gemm_job *j, int tile)
{
    __shared__ __align__(128) tile_smem s;
    int tiles_m = cdiv(j->m, TILE), tiles_n = cdiv(j->n, TILE);
    int split = tile / (tiles_m * tiles_n), rest = tile % (tiles_m * tiles_n);
    int m0 = rest / tiles_n * TILE, n0 = rest % tiles_n * TILE;
    int k_begin = split * j->k_split, k_end = min(j->k, k_begin + j->k_split);
    if constexpr (!TF32) {
        int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
        float acc[4][4] = {};
        for (int k0 = k_begin; k0 < k_end; k0 += TILE_K) {
            gemm_stage(j, &s, m0, n0, k0, k_end);
            __syncthreads();
#pragma unroll
            for (int kk = 0; kk < TILE_K; kk++) {
                float a[4], b[4];
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    a[i] = s.a[kk][ty + 16 * i];
                    b[i] = s.b[kk][tx + 16 * i];
                }
#pragma unroll
                for (int i = 0; i < 4; i++)
#pragma unroll
                    for (int c = 0; c < 4; c++)
                        acc[i][c] = fmaf(a[i], b[c], acc[i][c]);
            }
            __syncthreads();
        }
        for (int i = 0; i < 4; i++)
            for (int c = 0; c < 4; c++)
                gemm_store(j, split, m0 + ty + 16 * i, n0 + tx + 16 * c, acc[i][c]);
    } else {
        using namespace nvcuda;
        __shared__ __align__(128) float out[TILE][TILE + TILE_PAD];
        int warp = threadIdx.x / 32, wm = warp % 4, wn = warp / 4; /* rows 16 wm, cols 32 wn */
        wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc[2];
        wmma::fill_fragment(acc[0], 0.0f);
        wmma::fill_fragment(acc[1], 0.0f);
        for (int k0 = k_begin; k0 < k_end; k0 += TILE_K) {
            gemm_stage(j, &s, m0, n0, k0, k_end);
            __syncthreads();
#pragma unroll
            for (int kk = 0; kk < TILE_K; kk += 8) {
                wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::col_major> fa;
                wmma::load_matrix_sync(fa, &s.a[kk][wm * 16], TILE + TILE_PAD);
                for (int e = 0; e < fa.num_elements; e++)
                    fa.x[e] = wmma::__float_to_tf32(fa.x[e]);
#pragma unroll
                for (int f = 0; f < 2; f++) {
                    wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fb;
                    wmma::load_matrix_sync(fb, &s.b[kk][wn * 32 + f * 16], TILE + TILE_PAD);
                    for (int e = 0; e < fb.num_elements; e++)
                        fb.x[e] = wmma::__float_to_tf32(fb.x[e]);
                    wmma::mma_sync(acc[f], fa, fb, acc[f]);
                }
            }
            __syncthreads();
        }
        for (int f = 0; f < 2; f++)
            wmma::store_matrix_sync(&out[wm * 16][wn * 32 + f * 16], acc[f], TILE + TILE_PAD,
                                    wmma::mem_row_major);
        __syncthreads();
        for (int e = threadIdx.x; e < TILE * TILE; e += THREADS)
            gemm_store(j, split, m0 + e / TILE, n0 + e % TILE, out[e / TILE][e % TILE]);
    }
    __syncthreads(); /* the next tile restages s (and out) */
}

__device__ void head_tile(const head_job *j, int tile)
{
    int lane = threadIdx.x % 32, r = tile * HEAD_ROWS + threadIdx.x / 32;
    if (r >= j->rows)
        return; /* no barrier in this job */
    const float *a = j->act5 + (long long)r * FH_CRITIC_H5;
    float a0 = a[lane], a1 = a[lane + 32];
    float s = a0 * j->w5[lane] + a1 * j->w5[lane + 32];
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, o);
    float value = s + j->b5[0], d = (value - j->target[r]) / (float)j->rows;
    if (lane == 0) {
        j->value[r] = value;
        j->dz5[r] = d;
    }
    float *dz4 = j->dz4 + (long long)r * FH_CRITIC_H5;
    dz4[lane] = a0 > 0.0f ? d * j->w5[lane] : 0.0f;
    dz4[lane + 32] = a1 > 0.0f ? d * j->w5[lane + 32] : 0.0f;
}

/* 64 columns x 4 row groups; the 4 partial sums added in a fixed order */
__device__ void bias_grad_tile(const bias_grad_job *j, int tile)
{
    __shared__ float part[THREADS / 64][64];
    int tiles_n = cdiv(j->width, 64), split = tile / tiles_n;
    int col = tile % tiles_n * 64 + threadIdx.x % 64, group = threadIdx.x / 64;
    int r_end = min(j->rows, (split + 1) * j->rows_split);
    float s = 0.0f;
    if (col < j->width)
        for (int r = split * j->rows_split + group; r < r_end; r += THREADS / 64) {
            long long at = (long long)r * j->width + col;
            float g = j->dz[at];
            if (j->mask) {
                g = j->mask[at] > 0.0f ? g : 0.0f;
                j->dz[at] = g;
            }
            s += g;
        }
    part[group][threadIdx.x % 64] = s;
    __syncthreads();
    if (group == 0 && col < j->width)
        j->out[split * j->out_split + col] = ((part[0][col % 64] + part[1][col % 64]) +
                                              part[2][col % 64]) + part[3][col % 64];
    __syncthreads();
}

__device__ void adam_tile(const adam_job *j, int tile)
{
    for (int q = 0; q < ELEMS_PER_TILE / THREADS; q++) {
        int i = tile * ELEMS_PER_TILE + q * THREADS + threadIdx.x;
        if (i >= j->n)
            return; /* no barrier in this job */
        float g = 0.0f;
        for (int s = 0; s < j->n_splits; s++)
            g += j->partials[(long long)s * N_PARAMS + i];
        float m = (float)BETA1 * j->m[i] + (float)(1.0 - BETA1) * g;
        float v = (float)BETA2 * j->v[i] + (float)(1.0 - BETA2) * g * g;
        j->grads[i] = g;
        j->m[i] = m;
        j->v[i] = v;
        j->params[i] -= j->step_size * m / (sqrtf(v) * j->inv_sqrt_bc2 + (float)ADAM_EPS);
    }
}

template <bool TF32>
__device__ void job_tile(const step_job *job, int tile)
{
    switch (job->kind) {
    case JOB_GEMM: gemm_tile<TF32>(&job->u.gemm, tile); break;
    case JOB_HEAD: head_tile(&job->u.head, tile); break;
    case JOB_BIAS_GRAD: bias_grad_tile(&job->u.bias_grad, tile); break;
    case JOB_ADAM: adam_tile(&job->u.adam, tile); break;
    case JOB_BIAS_RELU: {
        const bias_relu_job *j = &job->u.bias_relu;
        for (int q = 0; q < ELEMS_PER_TILE / THREADS; q++) {
            long long i = (long long)tile * ELEMS_PER_TILE + q * THREADS + threadIdx.x;
            if (i < (long long)j->rows * j->width)
                j->x[i] = fmaxf(j->x[i] + j->bias[i % j->width], 0.0f);
        }
        break;
    }
    case JOB_LOSS_GRAD: {
        const loss_grad_job *j = &job->u.loss_grad;
        for (int r = tile * THREADS + threadIdx.x; r < min(j->rows, (tile + 1) * THREADS); r += THREADS) {
            float value = j->value[r] + j->b5[0];
            j->value[r] = value;
            j->dz5[r] = (value - j->target[r]) / (float)j->rows;
        }
        break;
    }
    }
}

/* versions 1-2: one launch per job, a block per tile */
__global__ void __launch_bounds__(THREADS) job_kernel(const __grid_constant__ step_job job)
{
    job_tile<false>(&job, blockIdx.x);
}

/* versions 3-4: the whole step. Each phase's tiles (over all its jobs) go to blocks
 * round-robin; grid.sync() between phases is the only ordering, so no block relies on
 * having computed anything itself in an earlier phase. */
template <bool TF32>
__global__ void __launch_bounds__(THREADS) critic_step_kernel(const __grid_constant__ step_plan plan)
{
    cg::grid_group grid = cg::this_grid();
    for (int p = 0; p < plan.n_phases; p++) {
        int first = plan.phase_begin[p], last = plan.phase_begin[p + 1], total = 0;
        for (int k = first; k < last; k++)
            total += plan.jobs[k].tiles;
        for (int t = blockIdx.x; t < total; t += gridDim.x) {
            int k = first, local = t;
            while (local >= plan.jobs[k].tiles) {
                local -= plan.jobs[k].tiles;
                k++;
            }
            job_tile<TF32>(&plan.jobs[k], local);
        }
        if (p + 1 < plan.n_phases)
            grid.sync();
    }
}

/* ==== host: buffers, the jobs of each version, the check, the timer ==== */
typedef struct {
    int rows;
    float *act[N_LAYERS];  /* act[0] = x (rows, 54); act[l] (rows, DIMS[l]) = relu(z[l-1]) */
    float *dz[N_LAYERS];   /* dz[l] (rows, DIMS[l+1]): the loss gradient at z[l] */
    float *value, *target; /* (rows) */
    float *params, *grads, *m, *v; /* (N_PARAMS) each, shapes.h's layout */
    float *partials;       /* (splits, N_PARAMS): weight and bias gradients by K chunk */
} dev_bufs;

static step_job job_of(int kind, int tiles)
{
    step_job j;
    memset(&j, 0, sizeof j);
    j.kind = kind;
    j.tiles = tiles;
    return j;
}

static step_job gemm_of(gemm_job g)
{
    int splits = cdiv(g.k, g.k_split);
    step_job j = job_of(JOB_GEMM, cdiv(g.m, TILE) * cdiv(g.n, TILE) * splits);
    j.u.gemm = g;
    return j;
}

/* z[l] = act[l] W_l^T into out: A(r, i) = act[l][r, i], B(i, o) = W_l[o, i] */
static step_job forward_job(const dev_bufs *b, int l, float *out, int epilogue)
{
    gemm_job g;
    memset(&g, 0, sizeof g);
    g.a = b->act[l]; g.a_m = DIMS[l]; g.a_k = 1;
    g.b = b->params + OFF_W[l]; g.b_k = 1; g.b_n = DIMS[l];
    g.c = out; g.ldc = DIMS[l + 1];
    g.m = b->rows; g.n = DIMS[l + 1]; g.k = DIMS[l]; g.k_split = DIMS[l];
    if (epilogue) {
        g.bias = b->params + OFF_B[l];
        g.relu = 1;
    }
    return gemm_of(g);
}

/* dz[l-1] = dz[l] W_l (masked by act[l] > 0 when mask): A(r, o) = dz[l], B(o, i) = W_l */
static step_job input_grad_job(const dev_bufs *b, int l, int mask)
{
    gemm_job g;
    memset(&g, 0, sizeof g);
    g.a = b->dz[l]; g.a_m = DIMS[l + 1]; g.a_k = 1;
    g.b = b->params + OFF_W[l]; g.b_k = DIMS[l]; g.b_n = 1;
    g.c = b->dz[l - 1]; g.ldc = DIMS[l];
    g.m = b->rows; g.n = DIMS[l]; g.k = DIMS[l + 1]; g.k_split = DIMS[l + 1];
    if (mask) {
        g.mask = b->act[l];
        g.ld_mask = DIMS[l];
    }
    return gemm_of(g);
}

/* partials[s] of dW_l = dz[l]^T act[l] over rows chunk s: A(o, r) = dz[l][r, o],
 * B(r, i) = act[l][r, i] */
static step_job weight_grad_job(const dev_bufs *b, int l, int rows_split)
{
    gemm_job g;
    memset(&g, 0, sizeof g);
    g.a = b->dz[l]; g.a_m = 1; g.a_k = DIMS[l + 1];
    g.b = b->act[l]; g.b_k = DIMS[l]; g.b_n = 1;
    g.c = b->partials + OFF_W[l]; g.ldc = DIMS[l]; g.c_split = N_PARAMS;
    g.m = DIMS[l + 1]; g.n = DIMS[l]; g.k = b->rows; g.k_split = rows_split;
    return gemm_of(g);
}

/* partials[s] of db_l = column sums of dz[l] (masked in place by act[l+1] when mask) */
static step_job bias_grad_job_of(const dev_bufs *b, int l, int rows_split, int mask)
{
    step_job j = job_of(JOB_BIAS_GRAD, cdiv(DIMS[l + 1], 64) * cdiv(b->rows, rows_split));
    bias_grad_job *g = &j.u.bias_grad;
    g->dz = b->dz[l];
    g->mask = mask ? b->act[l + 1] : NULL;
    g->out = b->partials + OFF_B[l];
    g->out_split = N_PARAMS;
    g->rows = b->rows;
    g->width = DIMS[l + 1];
    g->rows_split = rows_split;
    return j;
}

static step_job adam_job_of(const dev_bufs *b, int n_splits)
{
    step_job j = job_of(JOB_ADAM, cdiv(N_PARAMS, ELEMS_PER_TILE));
    adam_job *a = &j.u.adam;
    a->params = b->params; a->grads = b->grads; a->m = b->m; a->v = b->v;
    a->partials = b->partials;
    a->n = N_PARAMS;
    a->n_splits = n_splits;
    a->step_size = (float)(LR / (1.0 - pow(BETA1, ADAM_STEP)));
    a->inv_sqrt_bc2 = (float)(1.0 / sqrt(1.0 - pow(BETA2, ADAM_STEP)));
    return j;
}

/* Version 1's 30 operations in order; returns their count. */
static int baseline_jobs(const dev_bufs *b, step_job *jobs)
{
    int n = 0;
    for (int l = 0; l + 1 < N_LAYERS; l++) {
        jobs[n++] = forward_job(b, l, b->act[l + 1], 0);
        step_job br = job_of(JOB_BIAS_RELU, cdiv(b->rows * DIMS[l + 1], ELEMS_PER_TILE));
        br.u.bias_relu.x = b->act[l + 1];
        br.u.bias_relu.bias = b->params + OFF_B[l];
        br.u.bias_relu.rows = b->rows;
        br.u.bias_relu.width = DIMS[l + 1];
        jobs[n++] = br;
    }
    jobs[n++] = forward_job(b, N_LAYERS - 1, b->value, 0);
    step_job lg = job_of(JOB_LOSS_GRAD, cdiv(b->rows, THREADS));
    lg.u.loss_grad.value = b->value;
    lg.u.loss_grad.dz5 = b->dz[N_LAYERS - 1];
    lg.u.loss_grad.b5 = b->params + OFF_B[N_LAYERS - 1];
    lg.u.loss_grad.target = b->target;
    lg.u.loss_grad.rows = b->rows;
    jobs[n++] = lg;
    jobs[n++] = bias_grad_job_of(b, N_LAYERS - 1, b->rows, 0);
    for (int l = N_LAYERS - 1; l >= 1; l--) {
        jobs[n++] = input_grad_job(b, l, 0);
        jobs[n++] = bias_grad_job_of(b, l - 1, b->rows, 1);
        jobs[n++] = weight_grad_job(b, l, b->rows);
    }
    jobs[n++] = weight_grad_job(b, 0, b->rows);
    jobs[n++] = adam_job_of(b, 1);
    return n;
}

/* Versions 3-4's 12 phases (the file's header lists them). */
static void fused_plan(const dev_bufs *b, step_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    int n = 0, p = 0, last = N_LAYERS - 1;
    for (int l = 0; l < last; l++) {
        plan->phase_begin[p++] = n;
        plan->jobs[n++] = forward_job(b, l, b->act[l + 1], 1);
    }
    plan->phase_begin[p++] = n;
    step_job h = job_of(JOB_HEAD, cdiv(b->rows, HEAD_ROWS));
    h.u.head.act5 = b->act[last];
    h.u.head.w5 = b->params + OFF_W[last];
    h.u.head.b5 = b->params + OFF_B[last];
    h.u.head.target = b->target;
    h.u.head.value = b->value;
    h.u.head.dz5 = b->dz[last];
    h.u.head.dz4 = b->dz[last - 1];
    h.u.head.rows = b->rows;
    plan->jobs[n++] = h;
    for (int l = last - 1; l >= 1; l--) {
        plan->phase_begin[p++] = n;
        plan->jobs[n++] = input_grad_job(b, l, 1);
        plan->jobs[n++] = weight_grad_job(b, l, SPLIT_ROWS);
        plan->jobs[n++] = bias_grad_job_of(b, l, SPLIT_ROWS, 0);
        if (l == last - 1) {
            plan->jobs[n++] = weight_grad_job(b, last, SPLIT_ROWS);
            plan->jobs[n++] = bias_grad_job_of(b, last, SPLIT_ROWS, 0);
        }
    }
    plan->phase_begin[p++] = n;
    plan->jobs[n++] = weight_grad_job(b, 0, SPLIT_ROWS);
    plan->jobs[n++] = bias_grad_job_of(b, 0, SPLIT_ROWS, 0);
    plan->phase_begin[p++] = n;
    plan->jobs[n++] = adam_job_of(b, cdiv(b->rows, SPLIT_ROWS));
    plan->phase_begin[p] = n;
    plan->n_phases = p;
    if (p != N_PHASES || n > MAX_JOBS) {
        fprintf(stderr, "%s:%d: the plan has %d phases and %d jobs (expected %d, at most %d)\n",
                __FILE__, __LINE__, p, n, N_PHASES, MAX_JOBS);
        exit(1);
    }
}

typedef struct {
    int version, n_jobs, blocks;
    step_job jobs[MAX_JOBS + 8];
    step_plan plan;
    cudaStream_t stream;
    cudaGraphExec_t graph;
} runner;

static void run_step(void *p)
{
    runner *r = (runner *)p;
    if (r->version == 1) {
        for (int k = 0; k < r->n_jobs; k++) {
            job_kernel<<<r->jobs[k].tiles, THREADS, 0, r->stream>>>(r->jobs[k]);
            cudaCheckLaunch();
        }
    } else if (r->version == 2) {
        cudaCheck(cudaGraphLaunch(r->graph, r->stream));
    } else {
        void *args[] = {&r->plan};
        const void *kernel = r->version == 3 ? (const void *)critic_step_kernel<false>
                                             : (const void *)critic_step_kernel<true>;
        cudaCheck(cudaLaunchCooperativeKernel(kernel, dim3(r->blocks), dim3(THREADS), args, 0,
                                              r->stream));
    }
}

static const char *VERSION_NAMES[5] = {"", "kernels", "graph", "coop fp32", "coop tf32"};

static void dev_bufs_alloc(dev_bufs *b, int rows)
{
    memset(b, 0, sizeof *b);
    b->rows = rows;
    for (int l = 0; l < N_LAYERS; l++) {
        cudaCheck(cudaMalloc((void **)&b->act[l], sizeof(float) * rows * DIMS[l]));
        cudaCheck(cudaMalloc((void **)&b->dz[l], sizeof(float) * rows * DIMS[l + 1]));
    }
    cudaCheck(cudaMalloc((void **)&b->value, sizeof(float) * rows));
    cudaCheck(cudaMalloc((void **)&b->target, sizeof(float) * rows));
    float **state[4] = {&b->params, &b->grads, &b->m, &b->v};
    for (int k = 0; k < 4; k++)
        cudaCheck(cudaMalloc((void **)state[k], sizeof(float) * N_PARAMS));
    cudaCheck(cudaMalloc((void **)&b->partials,
                         sizeof(float) * N_PARAMS * (size_t)cdiv(rows, SPLIT_ROWS)));
}

static void dev_bufs_free(dev_bufs *b)
{
    for (int l = 0; l < N_LAYERS; l++) {
        cudaCheck(cudaFree(b->act[l]));
        cudaCheck(cudaFree(b->dz[l]));
    }
    cudaCheck(cudaFree(b->value)); cudaCheck(cudaFree(b->target));
    cudaCheck(cudaFree(b->params)); cudaCheck(cudaFree(b->grads));
    cudaCheck(cudaFree(b->m)); cudaCheck(cudaFree(b->v)); cudaCheck(cudaFree(b->partials));
}

/* Set up version v's launches; returns a line describing them. */
static void runner_init(runner *r, int version, const dev_bufs *b, int blocks_per_sm,
                        char *line, size_t line_size)
{
    r->version = version;
    cudaCheck(cudaStreamCreate(&r->stream));
    if (version <= 2) {
        r->n_jobs = baseline_jobs(b, r->jobs);
        snprintf(line, line_size, "%d launches", r->n_jobs);
    }
    if (version == 2) {
        cudaGraph_t graph;
        cudaCheck(cudaStreamBeginCapture(r->stream, cudaStreamCaptureModeThreadLocal));
        r->version = 1;
        run_step(r);
        r->version = 2;
        cudaCheck(cudaStreamEndCapture(r->stream, &graph));
        cudaCheck(cudaGraphInstantiate(&r->graph, graph, 0));
        cudaCheck(cudaGraphDestroy(graph));
        snprintf(line, line_size, "%d graph nodes", r->n_jobs);
    }
    if (version >= 3) {
        fused_plan(b, &r->plan);
        const void *kernel = version == 3 ? (const void *)critic_step_kernel<false>
                                          : (const void *)critic_step_kernel<true>;
        int fit = 0;
        cudaCheck(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, kernel, THREADS, 0));
        if (fit < 1 || blocks_per_sm > fit) {
            fprintf(stderr, "%s:%d: %d blocks of %d threads fit on an SM (%d asked): the "
                    "cooperative grid must be co-resident; ask for fewer blocks per SM\n",
                    __FILE__, __LINE__, fit, THREADS, blocks_per_sm);
            exit(1);
        }
        int per_sm = blocks_per_sm ? blocks_per_sm : fit;
        r->blocks = per_sm * dev_sm_count();
        int most = 0;
        for (int p = 0; p < r->plan.n_phases; p++) {
            int t = 0;
            for (int k = r->plan.phase_begin[p]; k < r->plan.phase_begin[p + 1]; k++)
                t += r->plan.jobs[k].tiles;
            most = t > most ? t : most;
        }
        snprintf(line, line_size, "1 launch, %d phases, %d grid syncs, grid %d blocks (%d/SM, "
                 "%d fit), most tiles in a phase %d", r->plan.n_phases, r->plan.n_phases - 1,
                 r->blocks, per_sm, fit, most);
    }
}

/* One step from the problem's parameters and moments, finished. */
static void step_from_start(runner *r, dev_bufs *b, const problem *pr)
{
    cudaCheck(cudaMemcpy(b->params, pr->params, sizeof(float) * N_PARAMS, cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(b->m, pr->m, sizeof(float) * N_PARAMS, cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(b->v, pr->v, sizeof(float) * N_PARAMS, cudaMemcpyHostToDevice));
    cudaCheck(cudaMemset(b->grads, 0xFF, sizeof(float) * N_PARAMS)); /* NaN: unwritten shows */
    run_step(r);
    cudaCheck(cudaStreamSynchronize(r->stream));
}

static void runner_free(runner *r)
{
    if (r->version == 2)
        cudaCheck(cudaGraphExecDestroy(r->graph));
    cudaCheck(cudaStreamDestroy(r->stream));
}

static int parse_int(const char *text, const char *what, int lo, int hi)
{
    char *end;
    long v = strtol(text, &end, 10);
    if (*text == '\0' || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "%s must be an integer in [%d, %d], got '%s'\nusage: critic_step_fused "
                "[version 0-4] [rows] [blocks_per_sm] | --cpu-check\n", what, lo, hi, text);
        exit(1);
    }
    return (int)v;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--cpu-check") == 0)
        return cpu_check(); /* no CUDA call on this path */
    int only = argc > 1 ? parse_int(argv[1], "version", 0, 4) : 0;
    int rows = argc > 2 ? parse_int(argv[2], "rows", 1, 65536) : 512;
    int blocks_per_sm = argc > 3 ? parse_int(argv[3], "blocks_per_sm", 0, 32) : 0;
    ref_net net = ref_net_make(DIMS, N_LAYERS);
    for (int l = 0; l < N_LAYERS; l++)
        if (net.off_w[l] != OFF_W[l] || net.off_b[l] != OFF_B[l] || net.n_params != N_PARAMS) {
            fprintf(stderr, "%s:%d: the reference's layout differs from shapes.h at layer %d\n",
                    __FILE__, __LINE__, l);
            return 1;
        }
    dev_print_device();
    int dev = 0, coop = 0;
    cudaCheck(cudaGetDevice(&dev));
    cudaCheck(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
    if (!coop && (only == 0 || only >= 3)) {
        fprintf(stderr, "%s:%d: device %d cannot launch cooperative kernels "
                "(cudaDevAttrCooperativeLaunch 0): versions 3-4 need it; run 1 or 2\n",
                __FILE__, __LINE__, dev);
        return 1;
    }
    double macs = 0.0;
    for (int l = 0; l < N_LAYERS; l++)
        macs += (double)DIMS[l] * DIMS[l + 1];
    double flop = 6.0 * macs * rows;
    problem pr = problem_make(&net, rows, 2026);
    dev_bufs b;
    dev_bufs_alloc(&b, rows);
    cudaCheck(cudaMemcpy(b.act[0], pr.x, sizeof(float) * rows * FH_STATE_DIM, cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(b.target, pr.target, sizeof(float) * rows, cudaMemcpyHostToDevice));

    /* the reference's forward, once */
    double *x = to_double(pr.x, (long)rows * FH_STATE_DIM), *t = to_double(pr.target, rows);
    double *p0 = to_double(pr.params, N_PARAMS);
    ref_ws ws = ref_ws_alloc(&net, rows);
    ref_forward(&net, rows, x, t, p0, ws.z, ws.h);
    step_result got = step_result_alloc(&net, rows);
    float *again = (float *)host_alloc(sizeof(float) * N_PARAMS);

    printf("critic step: rows %d, %.3f GFLOP (6 x %.0f MACs x rows), Adam over %d parameters\n",
           rows, flop * 1e-9, macs, N_PARAMS);
    int failed = 0;
    for (int v = 1; v <= 4; v++) {
        if (only && v != only)
            continue;
        runner r;
        memset(&r, 0, sizeof r);
        char line[256];
        runner_init(&r, v, &b, blocks_per_sm, line, sizeof line);
        step_from_start(&r, &b, &pr); /* checked below */
        float *from[4] = {b.grads, b.params, b.m, b.v}, *to[4] = {got.grads, got.params, got.m, got.v};
        for (int k = 0; k < 4; k++)
            cudaCheck(cudaMemcpy(to[k], from[k], sizeof(float) * N_PARAMS, cudaMemcpyDeviceToHost));
        cudaCheck(cudaMemcpy(got.value, b.value, sizeof(float) * rows, cudaMemcpyDeviceToHost));
        for (int l = 0; l + 1 < N_LAYERS; l++)
            cudaCheck(cudaMemcpy(got.act[l], b.act[l + 1], sizeof(float) * rows * DIMS[l + 1],
                                 cudaMemcpyDeviceToHost));
        /* the same step again: no atomics, every sum in a fixed order, so bit for bit */
        step_from_start(&r, &b, &pr);
        cudaCheck(cudaMemcpy(again, b.params, sizeof(float) * N_PARAMS, cudaMemcpyDeviceToHost));
        int repeat_ok = memcmp(again, got.params, sizeof(float) * N_PARAMS) == 0;
        double tol = v == 4 ? 5e-3 : 1e-4, band = v == 4 ? 2e-2 : 1e-4;
        float ms = dev_time_median_ms(run_step, &r, DEV_RUNS);
        int ok = check_step(&net, &pr, &ws, t, p0, &got, tol, band) && repeat_ok;
        printf("   a second step from the same state: %s\n",
               repeat_ok ? "bit-identical parameters" : "parameters DIFFER");
        failed |= !ok;
        printf("v%d %-9s %9.2f us  %6.2f TFLOP/s  %s  %s\n", v, VERSION_NAMES[v], ms * 1e3,
               flop / (ms * 1e-3) * 1e-12, line, ok ? "ok" : "FAIL");
        runner_free(&r);
    }
    dev_bufs_free(&b);
    ref_ws_free(&net, &ws);
    problem_free(&pr);
    free(x); free(t); free(p0);
    step_result_free(&net, &got);
    free(again);
    return failed;
}
