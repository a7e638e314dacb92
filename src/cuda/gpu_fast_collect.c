/* gpu_fast_collect.c — the fast collection path (issue 7): host side of
 * kernels/ppo_fast_kernels.cu. One stream; the sequence rollout kernel -> batched
 * critic and curiosity (cuBLAS SGEMM, fp32 or TF32) -> truncation values -> GAE is
 * captured once into a CUDA graph and replayed per collection (one launch, no host
 * round trip inside a collection). docs/ARCHITECTURE.md has the napkin math.
 * The critic and curiosity layers are cublasLt matmuls with a bias(+ReLU) epilogue. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>

#include "cuda/critic_chunks.h"
#include "cuda/cuda_check.h"
#include "cuda/gpu_ppo_collector_internal.h"
#include "cuda/kernels/ppo_fast_kernels.cu"

#define FAST_KERNEL_FILE "ppo_fast_kernels.cu"
#define ELEMENTWISE_BLOCK 256
/* critic_layer0_factored_kernel: FH_L0_THREADS a block, cols / 4 threads per row,
 * FH_L0_ROWS_PER_THREAD rows per thread; the output columns in slices whose part of the
 * projection table takes at most L0_SLICE_BYTES (about half an H200's L2: each half of
 * the L2 serves its own SMs), 1, 2 or 4 slices */
#define L0_SLICE_BYTES (16u << 20)
#define L0_BLOCKS_PER_SM 16 /* the factored first layer's grid, per SM, run alone */
/* curiosity_fused_kernel's blocks per SM: as many as its registers let fit (112 a thread
 * with one transition and hidden blocks of 16 or 32, 157 with one block of 64, 200 with
 * two transitions and blocks of 8) */
#define CURIOSITY_BLOCKS_PER_SM(hidden_block, per_thread) \
    ((per_thread) == 2 ? 2 : (hidden_block) == 64 ? 3 : 4)
#define CURIOSITY_HIDDEN_BLOCK 8
#define CURIOSITY_PER_THREAD 2
/* The factored first critic layer pays in fp32 when the market has fewer bars than the
 * critic has rows to value (the projection costs a layer-0 matmul over the bars); its
 * table is capped at 1 GiB. In TF32 the layer-0 matmul is cheaper than the look-up
 * (measured, docs/BENCHMARKS.md). */
#define FACTOR_MAX_BARS_PER_ROW 0.5
#define FACTOR_MAX_TABLE_BYTES (1ull << 30)
/* room for the NVRTC options the fast path passes (nine at most today: -lineinfo, the
 * lane, curiosity (2), clocks, racecheck, warp-episode, actor-table and split options) */
#define FAST_MAX_OPTIONS 16
/* the actor table's cap (1 KB a bar split: 256 Ki bars) */
#define ACTOR_TABLE_MAX_BYTES (256ull << 20)
#define GAE_BLOCK 128 /* 4 warps, 4 episode rows, at most */
#define GAE_SMEM_BYTES (48u << 10) /* a GAE block's shared memory, at most (no opt-in) */
#define BLAS_WORKSPACE_BYTES (32u << 20)
#define GEMM_TUNE_CANDIDATES 8 /* default; FOXHUNT_GEMM_TUNE_CANDIDATES up to the max */
#define GEMM_TUNE_MAX_CANDIDATES 32
#define GEMM_TUNE_REPEATS 4 /* back to back per candidate */
/* auto mapping: block up to this many episodes per SM, lane from this many */
#define FH_ROLLOUT_BLOCK_MAX_EPISODES_PER_SM 2
#define FH_ROLLOUT_LANE_MIN_EPISODES_PER_SM 72
/* critic_in row stride: 54 floats padded to 56 (224 B rows, 16-byte aligned) */
#define FH_CRITIC_IN_STRIDE 56
/* overlap: time segments of the rollout whose critic runs beside it */
#define FH_OVERLAP_SEGMENTS 8
/* pipeline: rows of the critic's first chunk (its first layer is the only one not run
 * beside a matmul), and the growth of the next ones up to chunk_rows */
#define PIPELINE_FIRST_ROWS (1 << 17)
#define PIPELINE_GROWTH 4
/* pipeline: on by default from this many critic rows (N 16384 x L 500, 8.2 M rows:
 * 141.35 -> 140.77 ms; N 1024, 0.5 M rows: 10.50 -> 10.69 ms; docs/BENCHMARKS.md) */
#define PIPELINE_MIN_ROWS (1ll << 22)
#define PIPELINE_MAX_CHUNKS 64
/* pipeline: the factored first layer's blocks per SM (default; it is bound by its
 * writes, and fewer blocks leave room for the matmuls' beside them) */
#define PIPELINE_L0_BLOCKS_PER_SM 2

_Static_assert(sizeof(fh_diversity) <= FH_FAST_SM_DIV_FLOATS * sizeof(float) &&
                   sizeof(fh_diversity) <= FH_LANE_SM_DIV_FLOATS * sizeof(float) &&
                   sizeof(fh_diversity) % 8 == 0,
               "the rollout kernels' shared-memory slots for fh_diversity are too small");
_Static_assert(2 * sizeof(fh_book_record) <= FH_BLOCK_SM_BOOK_FLOATS * sizeof(float) &&
                   FH_BLOCK_SM_BOOK % 2 == 0 && FH_BLOCK_SM_PER_EPISODE % 2 == 0 &&
                   FH_PAIR_SM_BOOK % 2 == 0 && FH_PAIR_SM_PER_EPISODE % 2 == 0,
               "the block mapping's two book record slots are too small or misaligned");

static const int CRITIC_DIMS[FH_CRITIC_N_LAYERS + 1] = {
    FH_STATE_DIM, FH_CRITIC_H1, FH_CRITIC_H2, FH_CRITIC_H3, FH_CRITIC_H4, FH_CRITIC_H5, 1};
static const int CRITIC_W[FH_CRITIC_N_LAYERS] = {FH_CRITIC_OFF_W0, FH_CRITIC_OFF_W1,
                                                 FH_CRITIC_OFF_W2, FH_CRITIC_OFF_W3,
                                                 FH_CRITIC_OFF_W4, FH_CRITIC_OFF_W5};
static const int CRITIC_B[FH_CRITIC_N_LAYERS] = {FH_CRITIC_OFF_B0, FH_CRITIC_OFF_B1,
                                                 FH_CRITIC_OFF_B2, FH_CRITIC_OFF_B3,
                                                 FH_CRITIC_OFF_B4, FH_CRITIC_OFF_B5};

/* Each rollout mapping as the launch shape sees it: its kernel; the episodes in one
 * unit (units are spread over the SMs, then packed into blocks sharing the actor); a
 * unit's threads and shared-memory floats; units per block at most. The lane mapping's
 * threads depend on FH_LANE_PER_LANE and are set at init. */
typedef struct {
    const char *kernel;
    int unit_episodes, unit_threads, unit_floats, max_units;
} rollout_shape;

/* The warp mapping with a book-keeping warp per episode (ppo_rollout_pair_kernel). */
static const rollout_shape PAIR_SHAPE = {"ppo_rollout_pair_kernel", 1, FH_PAIR_THREADS,
                                         FH_PAIR_SM_PER_EPISODE, FH_PAIR_MAX_EPISODES};
#define FH_WARP_BOOK_MAX_EPISODES_PER_SM 8

static const rollout_shape ROLLOUT_SHAPES[] = {
    [FH_ROLLOUT_WARP] = {"ppo_rollout_fast_kernel", 1, 32, FH_FAST_SM_PER_WARP, FH_FAST_MAX_WARPS},
    [FH_ROLLOUT_BLOCK] = {"ppo_rollout_block_kernel", 1, FH_BLOCK_EP_ALL_THREADS,
                          FH_BLOCK_SM_PER_EPISODE, FH_BLOCK_MAX_EPISODES},
    [FH_ROLLOUT_LANE] = {"ppo_rollout_lane_kernel", FH_LANE_BLOCK_EPISODES, 0,
                         FH_LANE_SM_PER_BLOCK, 1},
};

/* 1 when environment variable `name` is set, non-empty and not "0". */
static int env_flag(const char *name)
{
    const char *v = getenv(name);
    return v && v[0] && strcmp(v, "0") != 0;
}

/* *out = the integer in environment variable `name`, dflt when unset; an error naming
 * the variable when it is not an integer in [lo, hi]. */
static fh_status env_int(const char *name, int dflt, int lo, int hi, int *out, fh_error *err)
{
    const char *v = getenv(name);
    if (!v || !v[0]) {
        *out = dflt;
        return FH_OK;
    }
    char *end = NULL;
    long x = strtol(v, &end, 10);
    if (*end != '\0' || x < lo || x > hi)
        return fh_error_set(err, FH_ERR_INPUT, "%s=%s: expected an integer from %d to %d", name, v,
                            lo, hi);
    *out = (int)x;
    return FH_OK;
}

static size_t rollout_smem_bytes(const rollout_shape *shape, int units)
{
    return (size_t)(FH_FAST_SM_WEIGHTS + units * shape->unit_floats) * sizeof(float);
}

static unsigned elementwise_grid(const fh_gpu_ppo_collector *c, long long total)
{
    long long blocks = (total + ELEMENTWISE_BLOCK - 1) / ELEMENTWISE_BLOCK;
    long long cap = (long long)c->dev.sm_count * 16;
    return (unsigned)(blocks < 1 ? 1 : blocks > cap ? cap : blocks);
}

static fh_status launch_on(cudaStream_t stream, cudaKernel_t k, unsigned grid, unsigned block,
                           size_t smem, void **args, fh_error *err)
{
    dim3 g = {grid, 1, 1}, b = {block, 1, 1};
    CUDA_CHECK(cudaLaunchKernel((const void *)k, g, b, args, smem, stream), err);
    CUDA_CHECK(cudaGetLastError(), err);
    return FH_OK;
fail:
    return err->status;
}

static fh_status launch(fh_gpu_ppo_collector *c, cudaKernel_t k, unsigned grid, unsigned block,
                        size_t smem, void **args, fh_error *err)
{
    return launch_on(c->stream, k, grid, block, smem, args, err);
}

#define LT_CHECK(call, err) CUBLAS_CHECK(call, err)

/* GEMM autotuning (FOXHUNT_GEMM_TUNE, default on): the first time a matmul shape is met
 * outside a graph capture, cublasLt's best f->tune_candidates heuristic candidates
 * are each timed on the real buffers and the fastest is kept for that shape. The fast
 * path runs every shape of a collection once at init (tune_gemms), so the captured
 * graph uses tuned algorithms; a shape first met inside a capture takes the heuristic's
 * first choice. */
/* The largest power of two up to 256 that divides the address. */
static uint32_t pointer_alignment(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    uint32_t align = 256;
    while (align > 4 && a % align != 0)
        align /= 2;
    return align;
}

static const cublasLtMatmulAlgo_t *tuned_algo(const fh_fast_path *f, const gemm_key *key)
{
    for (int i = 0; i < f->n_tuned; i++) {
        const gemm_key *k = &f->tuned[i].key;
        if (k->n_in == key->n_in && k->n_out == key->n_out && k->rows == key->rows &&
            k->relu == key->relu && k->bias == key->bias && k->align_w == key->align_w &&
            k->align_x == key->align_x && k->align_y == key->align_y)
            return &f->tuned[i].algo;
    }
    return NULL;
}

static const cublasLtMatmulAlgo_t *remember_algo(fh_fast_path *f, const gemm_key *key,
                                                 const cublasLtMatmulAlgo_t *algo)
{
    if (f->n_tuned == FH_GEMM_TUNED_MAX) /* full: use it without keeping it */
        return algo;
    f->tuned[f->n_tuned].key = *key;
    f->tuned[f->n_tuned].algo = *algo;
    return &f->tuned[f->n_tuned++].algo;
}

typedef struct {
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc;
    const float *w, *x;
    float *y;
    cudaStream_t stream;
} gemm_call;

/* *best = the index of the fastest of `n` candidates: each runs once to warm up, then
 * GEMM_TUNE_REPEATS times back to back between two events (so that host launch gaps do
 * not count, as in the graph); a candidate that fails to run is skipped. */
static fh_status fastest_algo(fh_gpu_ppo_collector *c, const gemm_call *g,
                              const cublasLtMatmulHeuristicResult_t *cand, int n, int *best,
                              fh_error *err)
{
    fh_fast_path *f = &c->fast;
    const float one = 1.0f, zero = 0.0f;
    cudaEvent_t ev[2] = {NULL, NULL};
    float best_ms = -1.0f;
    CUDA_CHECK(cudaEventCreate(&ev[0]), err);
    CUDA_CHECK(cudaEventCreate(&ev[1]), err);
    for (int k = 0; k < n; k++) {
        if (cublasLtMatmul(f->lt, g->op, &one, g->w, g->la, g->x, g->lb, &zero, g->y, g->lc, g->y,
                           g->lc, &cand[k].algo, f->blas_workspace, BLAS_WORKSPACE_BYTES,
                           g->stream) != CUBLAS_STATUS_SUCCESS)
            continue; /* warm-up; not runnable here */
        CUDA_CHECK(cudaEventRecord(ev[0], g->stream), err);
        for (int r = 0; r < GEMM_TUNE_REPEATS; r++)
            CUBLAS_CHECK(cublasLtMatmul(f->lt, g->op, &one, g->w, g->la, g->x, g->lb, &zero, g->y,
                                        g->lc, g->y, g->lc, &cand[k].algo, f->blas_workspace,
                                        BLAS_WORKSPACE_BYTES, g->stream), err);
        CUDA_CHECK(cudaEventRecord(ev[1], g->stream), err);
        CUDA_CHECK(cudaEventSynchronize(ev[1]), err);
        float ms = 0.0f;
        CUDA_CHECK(cudaEventElapsedTime(&ms, ev[0], ev[1]), err);
        if (best_ms < 0.0f || ms < best_ms) {
            best_ms = ms;
            *best = k;
        }
    }
    cudaEventDestroy(ev[0]);
    cudaEventDestroy(ev[1]);
    return FH_OK;
fail:
    for (int i = 0; i < 2; i++)
        if (ev[i])
            cudaEventDestroy(ev[i]);
    return err->status;
}

/* y (rows, n_out) row-major = act(x (rows, n_in) W^T + b), W (n_out, n_in) row-major:
 * in cuBLAS's column-major terms y^T = W x^T. One cublasLt matmul whose epilogue adds
 * the bias and applies the ReLU, so activations are written once (a separate bias
 * pass cost 39 ms of 217 at N 16384); b NULL: no bias and no ReLU (relu is ignored).
 * Compute type fp32 or TF32 (--precision). */
static fh_status dense(fh_gpu_ppo_collector *c, cudaStream_t stream, float *y, const float *x,
                       const float *w, const float *b, int n_in, int n_out, long long rows,
                       int relu, fh_error *err)
{
    fh_fast_path *f = &c->fast;
    cublasLtMatmulDesc_t op = NULL;
    cublasLtMatrixLayout_t la = NULL, lb = NULL, lc = NULL;
    cublasLtMatmulPreference_t pref = NULL;
    const float one = 1.0f, zero = 0.0f;
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    cublasLtEpilogue_t epilogue = !b ? CUBLASLT_EPILOGUE_DEFAULT
                                  : relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
    size_t ws_bytes = BLAS_WORKSPACE_BYTES;
    cublasLtMatmulHeuristicResult_t heuristics[GEMM_TUNE_MAX_CANDIDATES];
    int found = 0;
    fh_status st = FH_OK;
    /* the operands' alignments, told to cublasLt (it assumes 256 bytes otherwise) and
     * part of the tuning key, so an algorithm is only reused where it may run */
    uint32_t align_w = pointer_alignment(w), align_x = pointer_alignment(x);
    uint32_t align_y = pointer_alignment(y);
    gemm_key key = {n_in, n_out, rows, relu, b != NULL, align_w, align_x, align_y};
    const cublasLtMatmulAlgo_t *algo = tuned_algo(f, &key);
    LT_CHECK(cublasLtMatmulDescCreate(&op, c->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                    : CUBLAS_COMPUTE_32F, CUDA_R_32F), err);
    LT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), err);
    LT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), err);
    LT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                            sizeof epilogue), err);
    if (b)
        LT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &b,
                                                sizeof b), err);
    LT_CHECK(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, n_in, n_out, n_in), err);
    LT_CHECK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, n_in, rows, n_in), err);
    LT_CHECK(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, n_out, rows, n_out), err);
    LT_CHECK(cublasLtMatmulPreferenceCreate(&pref), err);
    LT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                  &ws_bytes, sizeof ws_bytes), err);
    LT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                                                  &align_w, sizeof align_w), err);
    LT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                                                  &align_x, sizeof align_x), err);
    LT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                                                  &align_y, sizeof align_y), err);
    LT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                                                  &align_y, sizeof align_y), err);
    if (!algo) {
        LT_CHECK(cublasLtMatmulAlgoGetHeuristic(f->lt, op, la, lb, lc, lc, pref,
                                                f->tune ? f->tune_candidates : 1, heuristics,
                                                &found), err);
        if (!found) {
            st = fh_error_set(err, FH_ERR_FAILURE, "%s:%d: cublasLt has no algorithm for a %d x "
                              "%lld x %d matmul (%s epilogue)", __FILE__, __LINE__, n_out, rows,
                              n_in, !b ? "no" : relu ? "bias+ReLU" : "bias");
            goto done;
        }
        int best = 0;
        enum cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
        CUDA_CHECK(cudaStreamIsCapturing(stream, &capturing), err);
        if (found > 1 && capturing == cudaStreamCaptureStatusNone) {
            gemm_call call = {op, la, lb, lc, w, x, y, stream};
            if ((st = fastest_algo(c, &call, heuristics, found, &best, err)) != FH_OK)
                goto done;
        }
        algo = remember_algo(f, &key, &heuristics[best].algo);
    }
    LT_CHECK(cublasLtMatmul(f->lt, op, &one, w, la, x, lb, &zero, y, lc, y, lc, algo,
                            f->blas_workspace, BLAS_WORKSPACE_BYTES, stream), err);
    goto done;
fail:
    st = err->status;
done:
    if (pref)
        cublasLtMatmulPreferenceDestroy(pref);
    if (lc)
        cublasLtMatrixLayoutDestroy(lc);
    if (lb)
        cublasLtMatrixLayoutDestroy(lb);
    if (la)
        cublasLtMatrixLayoutDestroy(la);
    if (op)
        cublasLtMatmulDescDestroy(op);
    return st;
}

void fh_fast_path_free(fh_gpu_ppo_collector *c)
{
    fh_fast_path *f = &c->fast;
    if (f->graph_exec)
        cudaGraphExecDestroy(f->graph_exec);
    if (f->graph)
        cudaGraphDestroy(f->graph);
    if (f->lt)
        cublasLtDestroy(f->lt);
    cudaFree(f->blas_workspace);
    cudaFree(f->critic_in);
    cudaFree(f->critic_w0);
    cudaFree(f->values_all);
    cudaFree(f->trunc_step);
    cudaFree(f->act_a);
    cudaFree(f->act_b);
    cudaFree(f->clocks);
    cudaFree(f->seg_done);
    cudaFree(f->seg_in);
    cudaFree(f->seg_values);
    cudaFree(f->seg_bars);
    cudaFree(f->market_in);
    cudaFree(f->market_proj);
    cudaFree(f->actor_table);
    cudaFree(f->h0);
    for (int k = 0; f->ev_chunk && k < f->n_chunks; k++)
        if (f->ev_chunk[k])
            cudaEventDestroy(f->ev_chunk[k]);
    free(f->ev_chunk);
    free(f->chunk_begin);
    if (f->ev_rollout)
        cudaEventDestroy(f->ev_rollout);
    if (f->ev_fork)
        cudaEventDestroy(f->ev_fork);
    if (f->ev_join)
        cudaEventDestroy(f->ev_join);
    if (f->side)
        cudaStreamDestroy(f->side);
    for (int i = 0; i < 4; i++)
        if (f->ev_phase[i])
            cudaEventDestroy(f->ev_phase[i]);
    fh_cuda_module_free(&f->module);
    memset(f, 0, sizeof *f);
}

static fh_status critic_chain(fh_gpu_ppo_collector *c, cudaStream_t stream, const float *x,
                              const int *bars, long long rows, float *values, int first_layer,
                              fh_error *err);
static fh_status market_projection(fh_gpu_ppo_collector *c, cudaStream_t stream, fh_error *err);
static fh_status pipeline_chunk(fh_gpu_ppo_collector *c, int k, fh_error *err);

/* Every matmul shape a collection uses, run once outside a graph so that dense() tunes
 * each (on the zeroed or unset buffers: only the time matters; the first collection
 * overwrites them). */
static fh_status tune_gemms(fh_gpu_ppo_collector *c, fh_error *err)
{
    fh_fast_path *f = &c->fast;
    long long NL = (long long)c->n_episodes * c->n_steps;
    long long total = f->critic_rows - (f->overlap ? NL : 0); /* rows the main stream values */
    long long sizes[4] = {0, 0, 0, 0}; /* with the pipeline, its schedule's chunks instead */
    if (!f->pipeline) {
        sizes[0] = total < f->chunk_rows ? total : f->chunk_rows;
        sizes[1] = total > f->chunk_rows ? total % f->chunk_rows : 0;
    }
    if (f->overlap) { /* a full time segment and the last one */
        int last = c->n_steps - (f->n_segments - 1) * f->seg_steps;
        sizes[2] = (long long)c->n_episodes * f->seg_steps;
        sizes[3] = last != f->seg_steps ? (long long)c->n_episodes * last : 0;
    }
    fh_status st;
    if (f->factor && (st = market_projection(c, c->stream, err)) != FH_OK)
        return st;
    for (int k = 0; f->pipeline && k < f->n_chunks; k++)
        if ((st = pipeline_chunk(c, k, err)) != FH_OK)
            return st;
    for (int i = 0; i < 4; i++) {
        if (sizes[i] == 0)
            continue;
        /* the main stream's rows start at NL with the overlap: the same offsets (and so
         * the same alignments) as the collection's calls */
        int seg = i >= 2;
        long long r0 = f->overlap && !seg ? NL : 0;
        if ((st = critic_chain(c, c->stream, seg ? f->seg_in : f->critic_in + r0 * f->in_stride,
                               seg ? f->seg_bars : c->out.bars + r0, sizes[i],
                               seg ? f->seg_values : f->values_all + r0, 0, err)) != FH_OK)
            return st;
    }
    CUDA_CHECK(cudaStreamSynchronize(c->stream), err);
    return FH_OK;
fail:
    return err->status;
}

fh_status fh_fast_path_init(fh_gpu_ppo_collector *c, fh_error *err)
{
    fh_fast_path *f = &c->fast;
    int N = c->n_episodes, L = c->n_steps;
    long long NL = (long long)N * L;
    /* Diagnostics (docs/BENCHMARKS.md): FOXHUNT_ROLLOUT_CLOCKS=1 compiles the rollout's
     * cycle counters in (the bench prints them); FOXHUNT_LANE_PER_LANE=1|2|4 sets the
     * lane mapping's episodes per lane (FH_LANE_PER_LANE, default 2). */
    int with_clocks = env_flag("FOXHUNT_ROLLOUT_CLOCKS");
    const char *per_lane_env = getenv("FOXHUNT_LANE_PER_LANE");
    int per_lane = per_lane_env ? atoi(per_lane_env) : FH_LANE_PER_LANE;
    if (per_lane != 1 && per_lane != 2 && per_lane != 4)
        return fh_error_set(err, FH_ERR_INPUT, "FOXHUNT_LANE_PER_LANE=%s: expected 1, 2 or 4",
                            per_lane_env);
    /* FOXHUNT_CRITIC_IN_STRIDE=54|56|64: the critic input's row stride (default
     * FH_CRITIC_IN_STRIDE; 54 is unpadded) */
    const char *stride_env = getenv("FOXHUNT_CRITIC_IN_STRIDE");
    f->in_stride = stride_env ? atoi(stride_env) : FH_CRITIC_IN_STRIDE;
    if (f->in_stride != FH_STATE_DIM && f->in_stride != 56 && f->in_stride != 64)
        return fh_error_set(err, FH_ERR_INPUT, "FOXHUNT_CRITIC_IN_STRIDE=%s: expected 54, 56 or 64",
                            stride_env);
    /* FOXHUNT_BLOCK_SHARED_BARRIERS=1: the block mapping's racecheck build (the kernel
     * file says why) */
    int shared_barriers = env_flag("FOXHUNT_BLOCK_SHARED_BARRIERS");
    /* Rollout mapping (docs/ARCHITECTURE.md; crossovers measured, docs/BENCHMARKS.md).
     * Small N: a step's latency sets the time, so each episode gets four warps (block).
     * Middle: one warp per episode (warp). Large N: the SMs' issue rate sets it, and one
     * lane per episode lets each weight read from shared memory feed 32 episodes (lane). */
    f->mapping = c->rollout_mapping;
    /* the lane mapping's block needs ~217 KB of shared memory: Hopper's opt-in limit,
     * not an A100's or an L40S's, where auto falls back to the warp mapping */
    int lane_fits = rollout_smem_bytes(&ROLLOUT_SHAPES[FH_ROLLOUT_LANE], 1) <=
                    c->dev.shared_mem_per_block_optin;
    if (f->mapping == FH_ROLLOUT_AUTO)
        f->mapping = N <= FH_ROLLOUT_BLOCK_MAX_EPISODES_PER_SM * c->dev.sm_count ? FH_ROLLOUT_BLOCK
                     : N >= FH_ROLLOUT_LANE_MIN_EPISODES_PER_SM * c->dev.sm_count && lane_fits
                         ? FH_ROLLOUT_LANE
                         : FH_ROLLOUT_WARP;
    rollout_shape shape = ROLLOUT_SHAPES[f->mapping];
    if (f->mapping == FH_ROLLOUT_LANE) /* 128 / per_lane episodes per group of four warps */
        shape.unit_threads = FH_LANE_BLOCK_EPISODES / per_lane / FH_WARP * FH_LANE_GROUP_THREADS;
    /* FOXHUNT_WARP_BOOK=0|1: the warp mapping without or with a book-keeping warp per
     * episode (the pair kernel); unset: with it up to FH_WARP_BOOK_MAX_EPISODES_PER_SM,
     * where it measured faster (N 1024: rollout 2.57 against 2.62 ms; N 2048: 5.05
     * against 4.22, the book-keepers' issue slots then cost more than they save) */
    int warp_book = -1, overlap_env = 0, warp_episodes = -1;
    fh_status st;
    if ((st = env_int("FOXHUNT_WARP_BOOK", -1, 0, 1, &warp_book, err)) != FH_OK ||
        (st = env_int("FOXHUNT_ROLLOUT_OVERLAP", 0, 0, 1, &overlap_env, err)) != FH_OK ||
        (st = env_int("FOXHUNT_WARP_EPISODES", -1, 1, 2, &warp_episodes, err)) != FH_OK)
        return st;
    if (warp_book < 0) /* and not with the overlap, which packs 16 warps a block */
        warp_book = N <= FH_WARP_BOOK_MAX_EPISODES_PER_SM * c->dev.sm_count && !overlap_env;
    int pair = f->mapping == FH_ROLLOUT_WARP && warp_book;
    if (pair)
        shape = PAIR_SHAPE;
    /* FOXHUNT_WARP_EPISODES=1|2: episodes per warp in the warp mapping (FH_WARP_EPISODES),
     * each weight read from shared memory feeding that many; unset: 2 where the pair
     * kernel is not used, where it measured faster (rollout N 2048: 3.46 against 4.14
     * ms; N 4096: 5.38 against 8.30), 1 with it (N 1024: 2.52 against 2.96: at eight
     * episodes per SM a step's latency, not shared-memory bandwidth, sets the time) */
    if (warp_episodes < 0)
        warp_episodes = pair ? 1 : 2;
    /* FOXHUNT_PAIR_SPLIT=0|1: the pair kernel's actor over both its warps
     * (pair_split_actor); on unless 0, and only ever in the pair kernel with one episode
     * per pair (other mappings ignore it, as they do the warp mapping's switches) */
    int split_env = -1;
    if ((st = env_int("FOXHUNT_PAIR_SPLIT", -1, 0, 1, &split_env, err)) != FH_OK)
        return st;
    int pair_split = pair && warp_episodes == 1 && split_env != 0;

    if (f->mapping == FH_ROLLOUT_WARP) {
        shape.unit_episodes = warp_episodes;
        shape.unit_floats *= warp_episodes;
    }
    /* FOXHUNT_CURIOSITY_PER_THREAD=1|2: transitions per thread of the curiosity kernel
     * (FH_CUR_PER_THREAD); FOXHUNT_CURIOSITY_HIDDEN_BLOCK=8|16|32|64: its hidden units
     * per block (FH_CUR_HIDDEN_BLOCK; default 16 with one transition, 8 with two; 64 is
     * the one-block form it replaced) */
    if ((st = env_int("FOXHUNT_CURIOSITY_PER_THREAD", CURIOSITY_PER_THREAD, 1, 2,
                      &f->cur_per_thread, err)) != FH_OK ||
        (st = env_int("FOXHUNT_CURIOSITY_HIDDEN_BLOCK", f->cur_per_thread == 2 ? 8 : 16, 8, 64,
                      &f->cur_hidden_block, err)) != FH_OK)
        return st;
    if (f->cur_hidden_block != 8 && f->cur_hidden_block != 16 && f->cur_hidden_block != 32 &&
        f->cur_hidden_block != 64)
        return fh_error_set(err, FH_ERR_INPUT, "FOXHUNT_CURIOSITY_HIDDEN_BLOCK=%d: expected 8, 16, "
                            "32 or 64", f->cur_hidden_block);
    char per_lane_option[40], warp_episodes_option[40], cur_block_option[40],
        cur_per_thread_option[40];
    snprintf(cur_block_option, sizeof cur_block_option, "-DFH_CUR_HIDDEN_BLOCK=%d",
             f->cur_hidden_block);
    snprintf(cur_per_thread_option, sizeof cur_per_thread_option, "-DFH_CUR_PER_THREAD=%d",
             f->cur_per_thread);
    snprintf(per_lane_option, sizeof per_lane_option, "-DFH_LANE_PER_LANE=%d", per_lane);
    snprintf(warp_episodes_option, sizeof warp_episodes_option, "-DFH_WARP_EPISODES=%d",
             warp_episodes);
    /* FOXHUNT_ACTOR_FACTOR=0|1: the actor's first layer factored through the market
     * (FH_ACTOR_TABLE); unset: where its table, made before each rollout, costs less
     * than the per-step sums it replaces and takes at most ACTOR_TABLE_MAX_BYTES */
    int actor_factor_env = -1;
    if ((st = env_int("FOXHUNT_ACTOR_FACTOR", -1, 0, 1, &actor_factor_env, err)) != FH_OK)
        return st;
    f->actor_table_split = f->mapping != FH_ROLLOUT_LANE;
    size_t actor_table_bytes = (size_t)c->d_market.n_bars * sizeof(float) *
                               (f->actor_table_split ? FH_ACTOR_TABLE_SPLIT_ROW
                                                     : FH_ACTOR_TABLE_SEQ_ROW);
    int actor_factor = actor_factor_env >= 0 ? actor_factor_env
                                             : c->d_market.n_bars <= NL &&
                                                   actor_table_bytes <= ACTOR_TABLE_MAX_BYTES;
    const char *options[FAST_MAX_OPTIONS] = {"-lineinfo", per_lane_option};
    int n_options = 2;
    options[n_options++] = cur_block_option;
    options[n_options++] = cur_per_thread_option;
    if (with_clocks)
        options[n_options++] = "-DFH_ROLLOUT_CLOCKS=1";
    if (shared_barriers)
        options[n_options++] = "-DFH_BLOCK_SHARED_BARRIERS=1";
    if (f->mapping == FH_ROLLOUT_WARP && warp_episodes != 1)
        options[n_options++] = warp_episodes_option;
    if (actor_factor)
        options[n_options++] = "-DFH_ACTOR_TABLE=1";
    if (pair_split)
        options[n_options++] = "-DFH_PAIR_SPLIT=1";

    /* Diagnostics (docs/BENCHMARKS.md): FOXHUNT_ROLLOUT_OVERLAP=1 turns on the overlap of
     * the critic with the rollout (default 0: off); FOXHUNT_OVERLAP_SEGMENTS sets
     * its time segments, FOXHUNT_OVERLAP_EXCLUSIVE=0 lets GEMM blocks share the rollout's
     * SMs; FOXHUNT_ROLLOUT_UNITS_PER_BLOCK packs that many units (warps, episodes of the
     * block mapping) into a block (0: chosen from N). */
    int segments_env = FH_OVERLAP_SEGMENTS, per_block_env = 0, exclusive = 1;
    if ((st = env_int("FOXHUNT_OVERLAP_EXCLUSIVE", 1, 0, 1, &exclusive, err)) != FH_OK ||
        (st = env_int("FOXHUNT_OVERLAP_SEGMENTS", FH_OVERLAP_SEGMENTS, 1, 256, &segments_env,
                      err)) != FH_OK ||
        (st = env_int("FOXHUNT_ROLLOUT_UNITS_PER_BLOCK", 0, 0, shape.max_units, &per_block_env,
                      err)) != FH_OK)
        return st;

    /* the launch settings read and checked: the module (compiled, or from the cache) */
    if ((st = fh_cuda_module_load(&f->module, &c->dev, FAST_KERNEL_FILE, options, n_options,
                                  err)) != FH_OK)
        return st;
    struct { cudaKernel_t *k; const char *name; } entries[] = {
        {&f->rollout, shape.kernel},
        {&f->cur_fused, "curiosity_fused_kernel"},
        {&f->scatter, "scatter_trunc_values_kernel"}, {&f->gae, "gae_kernel"},
        {&f->seg_wait, "segment_wait_kernel"}, {&f->seg_gather, "gather_segment_rows_kernel"},
        {&f->seg_scatter, "scatter_segment_values_kernel"},
        {&f->layer0, "critic_layer0_factored_kernel"},
        {&f->actor_table_k, "actor_table_kernel"}};
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++)
        if ((st = fh_cuda_module_kernel(&f->module, entries[i].name, entries[i].k, err)) != FH_OK)
            return st;

    /* Launch shape from the device: spread the units over the SMs first, then pack them
     * into a block, where they share its copy of the actor. With the overlap on SMs of
     * its own, pack them as tightly as the mapping allows instead, so the critic has the
     * other SMs. */
    int units = (N + shape.unit_episodes - 1) / shape.unit_episodes;
    int per_sm = (units + c->dev.sm_count - 1) / c->dev.sm_count;
    int spread = per_sm < 1 ? 1 : per_sm > shape.max_units ? shape.max_units : per_sm;
    /* off unless asked for: with the book-keeping warp the rollout at N 128 is short
     * enough that the overlap no longer pays (2.50 ms with it, 2.39 without;
     * docs/BENCHMARKS.md). With it, the rollout holds about half the SMs. */
    f->overlap = overlap_env > 0;
    int half = c->dev.sm_count / 2 > 0 ? c->dev.sm_count / 2 : 1;
    int packed = (units + half - 1) / half;
    packed = packed > shape.max_units ? shape.max_units : packed;
    int per_block = per_block_env ? per_block_env : f->overlap && exclusive ? packed : spread;
    /* no more units in a block than the device's shared memory holds (a 99 KB opt-in
     * limit fits six warps of two episodes with the actor table's slots); more blocks
     * then, rather than an error, unless the block size was asked for */
    int fit = (int)((c->dev.shared_mem_per_block_optin / sizeof(float) - FH_FAST_SM_WEIGHTS) /
                    (size_t)shape.unit_floats);
    if (!per_block_env && per_block > fit && fit >= 1)
        per_block = fit;
    int grid = (units + per_block - 1) / per_block;
    if (f->overlap && exclusive && grid >= c->dev.sm_count)
        return fh_error_set(err, FH_ERR_INPUT, "FOXHUNT_ROLLOUT_OVERLAP=1: the rollout needs %d "
                            "blocks, each holding an SM alone, and %s has %d SMs; the overlap "
                            "needs fewer (pack more per block, or unset it)", grid, c->dev.name,
                            c->dev.sm_count);
    f->episodes_per_block = per_block * shape.unit_episodes;
    f->threads_per_block = per_block * shape.unit_threads;
    f->rollout_smem = rollout_smem_bytes(&shape, per_block);
    if (f->rollout_smem > c->dev.shared_mem_per_block_optin)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: the fast kernel needs %zu B of shared "
                            "memory per block; %s allows %zu", __FILE__, __LINE__, f->rollout_smem,
                            c->dev.name, c->dev.shared_mem_per_block_optin);
    if (f->overlap && exclusive) /* all of it: no GEMM block fits beside a rollout block */
        f->rollout_smem = c->dev.shared_mem_per_block_optin;
    CUDA_CHECK(cudaKernelSetAttributeForDevice(f->rollout, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               (int)f->rollout_smem, c->dev.device_index), err);
    if (with_clocks)
        CUDA_CHECK(cudaMalloc((void **)&f->clocks, (size_t)N * FH_CLOCK_STRIDE * sizeof(long long)), err);

    /* An episode truncates at most once per horizon (plus one partial episode) when its
     * start leaves a full horizon of data; on shorter data any step may truncate. */
    int horizon = c->cfg.horizon;
    f->k_slots = c->d_market.n_bars - 1 - horizon >= 0 ? L / horizon + 2 : L;
    if (f->k_slots > L)
        f->k_slots = L;
    f->critic_rows = NL + (long long)N * f->k_slots + N;
    /* FOXHUNT_CRITIC_CHUNK_ROWS: rows per critic chunk (default FH_FAST_CHUNK_ROWS; more
     * means fewer, larger matmuls and two (rows, 512) activation buffers of that size) */
    int chunk_env = FH_FAST_CHUNK_ROWS;
    if ((st = env_int("FOXHUNT_CRITIC_CHUNK_ROWS", FH_FAST_CHUNK_ROWS, 1 << 12, 1 << 24,
                      &chunk_env, err)) != FH_OK)
        return st;
    f->chunk_rows = f->critic_rows < chunk_env ? f->critic_rows : chunk_env;
    size_t free_bytes = 0, total_bytes = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes), err);
    { /* the two activation buffers take at most a quarter of the free device memory (in
         * whole 4,096-row steps, so that the chunks keep the alignments tuned for) */
        long long fit = (long long)(free_bytes / 4 / (2 * FH_CRITIC_H1 * sizeof(float)));
        fit = fit / 4096 * 4096;
        if (f->chunk_rows > fit)
            f->chunk_rows = fit > 4096 ? fit : 4096;
    }
    /* every critic row's bar: the states' (written with the other per-step outputs),
     * then the final observations' and s_L's; 0 where a slot stays unused */
    CUDA_CHECK(cudaMalloc((void **)&c->out.bars, (size_t)f->critic_rows * sizeof(int)), err);
    CUDA_CHECK(cudaMemsetAsync(c->out.bars, 0, (size_t)f->critic_rows * sizeof(int), c->stream),
               err);
    /* The first critic layer factored through the market (docs/ARCHITECTURE.md):
     * FOXHUNT_CRITIC_FACTOR=1 always, 0 never, unset: when it pays. */
    int n_bars = c->d_market.n_bars, factor_env = -1;
    if ((st = env_int("FOXHUNT_CRITIC_FACTOR", -1, 0, 1, &factor_env, err)) != FH_OK)
        return st;
    size_t proj_bytes = (size_t)n_bars * FH_CRITIC_H1 * sizeof(float);
    f->factor = factor_env >= 0 ? factor_env
                                : !c->tf32 &&
                                      n_bars <= FACTOR_MAX_BARS_PER_ROW * (double)f->critic_rows &&
                                      proj_bytes <= FACTOR_MAX_TABLE_BYTES;
    if (f->factor) { /* the bars' features, zero-padded like the critic's input rows */
        size_t market_in_bytes = (size_t)n_bars * f->in_stride * sizeof(float);
        CUDA_CHECK(cudaMalloc((void **)&f->market_in, market_in_bytes), err);
        CUDA_CHECK(cudaMemsetAsync(f->market_in, 0, market_in_bytes, c->stream), err);
        CUDA_CHECK(cudaMemcpy2DAsync(f->market_in, (size_t)f->in_stride * sizeof(float),
                                     c->d_features, FH_N_MARKET_FEATURES * sizeof(float),
                                     FH_N_MARKET_FEATURES * sizeof(float), (size_t)n_bars,
                                     cudaMemcpyDeviceToDevice, c->stream), err);
        CUDA_CHECK(cudaMalloc((void **)&f->market_proj, proj_bytes), err);
        for (f->l0_slices = 1; f->l0_slices < 4 && proj_bytes / f->l0_slices > L0_SLICE_BYTES;)
            f->l0_slices *= 2;
        int slices_env = 0; /* FOXHUNT_CRITIC_FACTOR_SLICES=1|2|4 overrides (diagnostic) */
        if ((st = env_int("FOXHUNT_CRITIC_FACTOR_SLICES", 0, 1, 4, &slices_env, err)) != FH_OK)
            return st;
        if (slices_env == 3)
            return fh_error_set(err, FH_ERR_INPUT, "FOXHUNT_CRITIC_FACTOR_SLICES=3: expected 1, 2 "
                                "or 4");
        if (slices_env)
            f->l0_slices = slices_env;
    }
    if (actor_factor)
        CUDA_CHECK(cudaMalloc((void **)&f->actor_table, actor_table_bytes), err);
    /* The pipeline: FOXHUNT_CRITIC_PIPELINE=1 always (not with the overlap: they share the
     * side stream), 0 never, unset: where it pays (docs/BENCHMARKS.md);
     * FOXHUNT_CRITIC_PIPELINE_FIRST: the rows of its first chunk. */
    int pipeline_env = -1, first_rows = PIPELINE_FIRST_ROWS;
    if ((st = env_int("FOXHUNT_CRITIC_PIPELINE", -1, 0, 1, &pipeline_env, err)) != FH_OK ||
        (st = env_int("FOXHUNT_CRITIC_PIPELINE_FIRST", PIPELINE_FIRST_ROWS, 1 << 12, 1 << 24,
                      &first_rows, err)) != FH_OK)
        return st;
    if (pipeline_env == 1 && f->overlap)
        return fh_error_set(err, FH_ERR_INPUT, "FOXHUNT_CRITIC_PIPELINE=1 with "
                            "FOXHUNT_ROLLOUT_OVERLAP=1: both use the side stream; set only one");
    /* (its h0 holds every row's first-layer output: by default only where that takes at
     * most a quarter of the free device memory, beside the activation buffers' quarter,
     * and where the chunks stay few: each is an event and a handful of graph nodes) */
    size_t h0_bytes = (size_t)f->critic_rows * FH_CRITIC_H1 * sizeof(float);
    int n_chunks = fh_critic_chunk_schedule(f->critic_rows, first_rows, f->chunk_rows,
                                            PIPELINE_GROWTH, NULL);
    if (pipeline_env == 1 && n_chunks > PIPELINE_MAX_CHUNKS)
        return fh_error_set(err, FH_ERR_INPUT, "FOXHUNT_CRITIC_PIPELINE=1: %lld critic rows in "
                            "chunks of at most %lld make %d chunks, more than %d; raise "
                            "FOXHUNT_CRITIC_CHUNK_ROWS or FOXHUNT_CRITIC_PIPELINE_FIRST",
                            f->critic_rows, f->chunk_rows, n_chunks, PIPELINE_MAX_CHUNKS);
    f->pipeline = pipeline_env >= 0 ? pipeline_env
                                    : !f->overlap && f->factor &&
                                          f->critic_rows >= PIPELINE_MIN_ROWS &&
                                          h0_bytes <= free_bytes / 4 &&
                                          n_chunks <= PIPELINE_MAX_CHUNKS;
    if ((st = env_int("FOXHUNT_PIPELINE_L0_BLOCKS", PIPELINE_L0_BLOCKS_PER_SM, 1, 16,
                      &f->l0_blocks_per_sm, err)) != FH_OK)
        return st;
    if (f->pipeline) {
        f->n_chunks = n_chunks;
        f->chunk_begin = malloc((size_t)(f->n_chunks + 1) * sizeof *f->chunk_begin);
        f->ev_chunk = calloc((size_t)f->n_chunks, sizeof *f->ev_chunk);
        if (!f->chunk_begin || !f->ev_chunk)
            return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of host memory", __FILE__,
                                __LINE__);
        fh_critic_chunk_schedule(f->critic_rows, first_rows, f->chunk_rows, PIPELINE_GROWTH,
                                 f->chunk_begin);
        for (int k = 0; k < f->n_chunks; k++)
            CUDA_CHECK(cudaEventCreateWithFlags(&f->ev_chunk[k], cudaEventDisableTiming), err);
        CUDA_CHECK(cudaEventCreateWithFlags(&f->ev_rollout, cudaEventDisableTiming), err);
        if (f->factor)
            CUDA_CHECK(cudaMalloc((void **)&f->h0,
                                  (size_t)f->critic_rows * FH_CRITIC_H1 * sizeof(float)), err);
    }
    size_t in_bytes = (size_t)f->critic_rows * f->in_stride * sizeof(float);
    CUDA_CHECK(cudaMalloc((void **)&f->critic_in, in_bytes), err);
    CUDA_CHECK(cudaMemsetAsync(f->critic_in, 0, in_bytes, c->stream), err); /* padding stays 0 */
    if (f->in_stride != FH_STATE_DIM) {
        size_t w0_bytes = (size_t)FH_CRITIC_H1 * f->in_stride * sizeof(float);
        CUDA_CHECK(cudaMalloc((void **)&f->critic_w0, w0_bytes), err);
        CUDA_CHECK(cudaMemsetAsync(f->critic_w0, 0, w0_bytes, c->stream), err);
    }
    CUDA_CHECK(cudaMalloc((void **)&f->values_all, (size_t)f->critic_rows * sizeof(float)), err);
    CUDA_CHECK(cudaMalloc((void **)&f->trunc_step, (size_t)N * f->k_slots * sizeof(int)), err);
    size_t act_bytes = (size_t)f->chunk_rows * (f->h0 ? FH_CRITIC_H2 : FH_CRITIC_H1) * sizeof(float);
    CUDA_CHECK(cudaMalloc((void **)&f->act_a, act_bytes), err);
    CUDA_CHECK(cudaMalloc((void **)&f->act_b, act_bytes), err);
    CUDA_CHECK(cudaMalloc(&f->blas_workspace, BLAS_WORKSPACE_BYTES), err);
    if (f->overlap) {
        /* equal time segments, each at most one GEMM chunk of rows */
        f->seg_steps = (L + segments_env - 1) / segments_env;
        if ((long long)N * f->seg_steps > f->chunk_rows)
            f->seg_steps = (int)(f->chunk_rows / N);
        f->n_segments = (L + f->seg_steps - 1) / f->seg_steps;
        long long seg_rows = (long long)N * f->seg_steps;
        CUDA_CHECK(cudaMalloc((void **)&f->seg_done, (size_t)(f->n_segments + 1) * sizeof(int)), err);
        CUDA_CHECK(cudaMalloc((void **)&f->seg_in, (size_t)seg_rows * f->in_stride * sizeof(float)), err);
        CUDA_CHECK(cudaMalloc((void **)&f->seg_values, (size_t)seg_rows * sizeof(float)), err);
        CUDA_CHECK(cudaMalloc((void **)&f->seg_bars, (size_t)seg_rows * sizeof(int)), err);
    }
    if (f->overlap || f->pipeline) { /* the pipeline forks at ev_rollout instead */
        CUDA_CHECK(cudaStreamCreateWithFlags(&f->side, cudaStreamNonBlocking), err);
        CUDA_CHECK(cudaEventCreateWithFlags(&f->ev_join, cudaEventDisableTiming), err);
    }
    if (f->overlap)
        CUDA_CHECK(cudaEventCreateWithFlags(&f->ev_fork, cudaEventDisableTiming), err);
    for (int i = 0; i < 4; i++)
        CUDA_CHECK(cudaEventCreate(&f->ev_phase[i]), err);
    CUBLAS_CHECK(cublasLtCreate(&f->lt), err);
    if ((st = env_int("FOXHUNT_GEMM_TUNE", 1, 0, 1, &f->tune, err)) != FH_OK ||
        (st = env_int("FOXHUNT_GEMM_TUNE_CANDIDATES", GEMM_TUNE_CANDIDATES, 1,
                      GEMM_TUNE_MAX_CANDIDATES, &f->tune_candidates, err)) != FH_OK ||
        (f->tune && (st = tune_gemms(c, err)) != FH_OK))
        return st;
    c->out.states = f->critic_in;
    c->states_pitch = f->in_stride;
    c->out.values = f->values_all;
    c->out.last_values = f->values_all + NL + (long long)N * f->k_slots;
    return FH_OK;
fail:
    return err->status;
}

/* The first critic layer's weights over the padded rows: zero-padded, or W0 itself. */
static const float *critic_w0_padded(const fh_gpu_ppo_collector *c)
{
    return c->fast.critic_w0 ? c->fast.critic_w0 : c->weights.critic + FH_CRITIC_OFF_W0;
}

/* This collection's market projection (factored first layer): market_proj (n_bars, 512)
 * = the bars' features (zero-padded to in_stride) times W0's market columns. */
static fh_status market_projection(fh_gpu_ppo_collector *c, cudaStream_t stream, fh_error *err)
{
    fh_fast_path *f = &c->fast;
    return dense(c, stream, f->market_proj, f->market_in, critic_w0_padded(c), NULL,
                 f->in_stride, FH_CRITIC_H1, c->d_market.n_bars, 0, err);
}

/* The first critic layer factored through the market (critic_layer0_factored_kernel)
 * into y for `rows` (<= chunk_rows) rows x at bars `bars`: one launch per column slice. */
static fh_status critic_layer0_factored(fh_gpu_ppo_collector *c, cudaStream_t stream, float *y,
                                        const float *x, const int *bars, long long rows,
                                        int blocks_per_sm, fh_error *err)
{
    fh_fast_path *f = &c->fast;
    const float *w0 = c->weights.critic + FH_CRITIC_OFF_W0;
    const float *b0 = c->weights.critic + FH_CRITIC_OFF_B0;
    int w0_stride = FH_STATE_DIM, n_bars = c->d_market.n_bars;
    int cols = FH_CRITIC_H1 / f->l0_slices;
    long long rows_per_block = (long long)FH_L0_THREADS / (cols / 4) * FH_L0_ROWS_PER_THREAD;
    long long blocks = (rows + rows_per_block - 1) / rows_per_block;
    long long cap = (long long)c->dev.sm_count * blocks_per_sm;
    for (int col0 = 0; col0 < FH_CRITIC_H1; col0 += cols) {
        void *args[] = {&y, &f->market_proj, &bars, &x, &f->in_stride, &w0, &w0_stride,
                        &b0, &n_bars, &rows, &col0, &cols};
        fh_status st = launch_on(stream, f->layer0, (unsigned)(blocks < cap ? blocks : cap),
                                 FH_L0_THREADS, 0, args, err);
        if (st != FH_OK)
            return st;
    }
    return FH_OK;
}

/* The critic's layers from first_layer (0 or 1) over `rows` (<= chunk_rows) input rows
 * x at bars `bars`, into values, on `stream`. From layer 0, x is critic input rows
 * (in_stride floats apart) and the first layer is the factored kernel when f->factor
 * (the market projection made this collection), else a matmul; from layer 1, x is the
 * first layer's output (512 floats a row, the pipeline's h0). */
static fh_status critic_chain(fh_gpu_ppo_collector *c, cudaStream_t stream, const float *x,
                              const int *bars, long long rows, float *values, int first_layer,
                              fh_error *err)
{
    fh_fast_path *f = &c->fast;
    if (f->h0 && first_layer == 0) /* the activation buffers are 384 wide with h0 */
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: the critic from its first layer with "
                            "the pipeline's h0 (an internal error)", __FILE__, __LINE__);
    for (int l = first_layer; l < FH_CRITIC_N_LAYERS; l++) {
        int last = l == FH_CRITIC_N_LAYERS - 1;
        float *y = last ? values : (l % 2 == 0 ? f->act_a : f->act_b);
        fh_status st;
        if (l == 0 && f->factor) {
            if ((st = critic_layer0_factored(c, stream, y, x, bars, rows, L0_BLOCKS_PER_SM,
                                             err)) != FH_OK)
                return st;
            x = y;
            continue;
        }
        /* layer 0 reads the padded rows with the zero-padded weights */
        const float *w = l == 0 ? critic_w0_padded(c) : c->weights.critic + CRITIC_W[l];
        int n_in = l == 0 ? f->in_stride : CRITIC_DIMS[l];
        st = dense(c, stream, y, x, w, c->weights.critic + CRITIC_B[l], n_in,
                   CRITIC_DIMS[l + 1], rows, !last, err);
        if (st != FH_OK)
            return st;
        x = y;
    }
    return FH_OK;
}

/* The critic over critic_in rows [r_begin, r_end), in chunks, on c->stream. */
static fh_status critic_rows(fh_gpu_ppo_collector *c, long long r_begin, long long r_end,
                             fh_error *err)
{
    fh_fast_path *f = &c->fast;
    for (long long r0 = r_begin; r0 < r_end; r0 += f->chunk_rows) {
        long long rows = r_end - r0 < f->chunk_rows ? r_end - r0 : f->chunk_rows;
        fh_status st = critic_chain(c, c->stream, f->critic_in + r0 * f->in_stride,
                                    c->out.bars + r0, rows, f->values_all + r0, 0, err);
        if (st != FH_OK)
            return st;
    }
    return FH_OK;
}

/* Overlap, on the side stream while the rollout runs: for each time segment, wait until
 * every episode has written its rows (segment_wait_kernel), gather them into one
 * contiguous block, run the critic, scatter the values back. The rollout kernel holds
 * its SMs alone (its shared-memory request leaves no room for a GEMM block), so the
 * GEMMs run on the SMs it leaves free and do not slow its dependent chain. */
static fh_status side_segments(fh_gpu_ppo_collector *c, fh_error *err)
{
    fh_fast_path *f = &c->fast;
    int N = c->n_episodes, L = c->n_steps;
    int *timed_out = f->seg_done + f->n_segments;
    fh_status st;
    for (int k = 0; k < f->n_segments; k++) {
        int t0 = k * f->seg_steps;
        int seg_len = L - t0 < f->seg_steps ? L - t0 : f->seg_steps;
        long long rows = (long long)N * seg_len;
        void *w_args[] = {&f->seg_done, &k, &N, &timed_out};
        void *g_args[] = {&f->seg_in, &f->seg_bars, &f->critic_in, &c->out.bars, &f->in_stride,
                          &N, &L, &t0, &seg_len};
        void *s_args[] = {&f->values_all, &f->seg_values, &N, &L, &t0, &seg_len};
        if ((st = launch_on(f->side, f->seg_wait, 1, 32, 0, w_args, err)) != FH_OK ||
            (st = launch_on(f->side, f->seg_gather, elementwise_grid(c, rows * f->in_stride),
                            ELEMENTWISE_BLOCK, 0, g_args, err)) != FH_OK ||
            (st = critic_chain(c, f->side, f->seg_in, f->seg_bars, rows, f->seg_values, 0,
                               err)) != FH_OK ||
            (st = launch_on(f->side, f->seg_scatter, elementwise_grid(c, rows), ELEMENTWISE_BLOCK,
                            0, s_args, err)) != FH_OK)
            return st;
    }
    return FH_OK;
}

/* The curiosity model over the N*L transitions, its bonus added to the rewards, on
 * `stream`: one fused kernel in fp32 whatever the precision (it is latency- and
 * FMA-bound, not a matmul: two matmuls and two element-wise passes took 0.35 ms at
 * N 1024). */
static fh_status curiosity(fh_gpu_ppo_collector *c, cudaStream_t stream, fh_error *err)
{
    fh_fast_path *f = &c->fast;
    long long NL = (long long)c->n_episodes * c->n_steps;
    void *args[] = {&c->out.rewards, &f->critic_in, &f->in_stride, &c->out.actions,
                    &c->out.exposures, &c->out.bars, &c->weights.curiosity, &c->cfg,
                    &c->d_market, &NL};
    long long blocks = (NL + FH_CUR_THREADS - 1) / FH_CUR_THREADS;
    long long cap = (long long)c->dev.sm_count * CURIOSITY_BLOCKS_PER_SM(f->cur_hidden_block, f->cur_per_thread);
    return launch_on(stream, f->cur_fused, (unsigned)(blocks < cap ? blocks : cap),
                     FH_CUR_THREADS, 0, args, err);
}

/* Phase 2 after the rollout: the critic over the rows the side stream did not value
 * (all of them without overlap; else the final observations and s_L), then the
 * curiosity model over the N*L transitions, whose bonus joins the rewards. */
static fh_status batched_networks(fh_gpu_ppo_collector *c, fh_error *err)
{
    fh_fast_path *f = &c->fast;
    long long NL = (long long)c->n_episodes * c->n_steps;
    fh_status st;
    if (f->factor && !f->overlap && (st = market_projection(c, c->stream, err)) != FH_OK)
        return st;
    if ((st = critic_rows(c, f->overlap ? NL : 0, f->critic_rows, err)) != FH_OK)
        return st;
    return curiosity(c, c->stream, err);
}

/* The pipeline's chunk k on c->stream: with the factor, layers 1-5 over its rows of h0;
 * without, all six over its critic input rows. */
static fh_status pipeline_chunk(fh_gpu_ppo_collector *c, int k, fh_error *err)
{
    fh_fast_path *f = &c->fast;
    long long r0 = f->chunk_begin[k], rows = f->chunk_begin[k + 1] - r0;
    const float *x = f->factor ? f->h0 + r0 * FH_CRITIC_H1 : f->critic_in + r0 * f->in_stride;
    return critic_chain(c, c->stream, x, c->out.bars + r0, rows, f->values_all + r0, f->factor,
                        err);
}

/* The pipeline's networks after the rollout: the side stream forks, makes the market
 * projection (beside the rollout it slowed the rollout at N 128: 1.20 -> 1.38 ms), each
 * chunk's factored first layer into h0, then the curiosity model; on c->stream each chunk's other layers once its
 * first is written, so that the first layer's writes and the curiosity model run beside
 * the matmuls; then c->stream joins the side stream. Without the factor the side
 * stream runs the curiosity model only. */
static fh_status pipelined_networks(fh_gpu_ppo_collector *c, fh_error *err)
{
    fh_fast_path *f = &c->fast;
    fh_status st;
    CUDA_CHECK(cudaEventRecord(f->ev_rollout, c->stream), err);
    CUDA_CHECK(cudaStreamWaitEvent(f->side, f->ev_rollout, 0), err);
    /* the side stream's one matmul shares blas_workspace with the main stream's: safe
     * because every main-stream matmul here waits for ev_chunk[0], recorded after it;
     * another matmul on the side stream would need a workspace of its own */
    if (f->factor && (st = market_projection(c, f->side, err)) != FH_OK)
        return st;
    for (int k = 0; f->factor && k < f->n_chunks; k++) {
        long long r0 = f->chunk_begin[k], rows = f->chunk_begin[k + 1] - r0;
        if ((st = critic_layer0_factored(c, f->side, f->h0 + r0 * FH_CRITIC_H1,
                                         f->critic_in + r0 * f->in_stride, c->out.bars + r0,
                                         rows, f->l0_blocks_per_sm, err)) != FH_OK)
            return st;
        CUDA_CHECK(cudaEventRecord(f->ev_chunk[k], f->side), err);
    }
    if ((st = curiosity(c, f->side, err)) != FH_OK)
        return st;
    CUDA_CHECK(cudaEventRecord(f->ev_join, f->side), err);
    for (int k = 0; k < f->n_chunks; k++) {
        if (f->factor)
            CUDA_CHECK(cudaStreamWaitEvent(c->stream, f->ev_chunk[k], 0), err);
        if ((st = pipeline_chunk(c, k, err)) != FH_OK)
            return st;
    }
    CUDA_CHECK(cudaStreamWaitEvent(c->stream, f->ev_join, 0), err);
    return FH_OK;
fail:
    return err->status;
}

/* The whole collection on c->stream (with overlap, forking the side stream at the start
 * and joining it after the rollout); with_events records the phase events: rollout
 * (with overlap: and the critic of the segments it hid), networks (what remains of the
 * critic and curiosity), GAE. */
static fh_status fast_sequence(fh_gpu_ppo_collector *c, float gamma, float lambda,
                               int with_events, fh_error *err)
{
    fh_fast_path *f = &c->fast;
    int N = c->n_episodes, L = c->n_steps, K = f->k_slots;
    long long NL = (long long)N * L;
    fh_status st;
    if (with_events)
        CUDA_CHECK(cudaEventRecord(f->ev_phase[0], c->stream), err);
    if (f->critic_w0) /* this collection's first critic layer, into the padded rows */
        CUDA_CHECK(cudaMemcpy2DAsync(f->critic_w0, (size_t)f->in_stride * sizeof(float),
                                     c->weights.critic + FH_CRITIC_OFF_W0,
                                     FH_STATE_DIM * sizeof(float), FH_STATE_DIM * sizeof(float),
                                     FH_CRITIC_H1, cudaMemcpyDeviceToDevice, c->stream), err);
    if (f->overlap && f->factor && (st = market_projection(c, c->stream, err)) != FH_OK)
        return st;

    if (f->overlap) { /* counters and the time-out flag zeroed, then the side stream forks */
        CUDA_CHECK(cudaMemsetAsync(f->seg_done, 0, (size_t)(f->n_segments + 1) * sizeof(int),
                                   c->stream), err);
        CUDA_CHECK(cudaEventRecord(f->ev_fork, c->stream), err);
        CUDA_CHECK(cudaStreamWaitEvent(f->side, f->ev_fork, 0), err);
        if ((st = side_segments(c, err)) != FH_OK)
            return st;
        CUDA_CHECK(cudaEventRecord(f->ev_join, f->side), err);
    }
    const float *actor = c->weights.actor;
    if (f->actor_table) { /* this collection's actor table (part of the rollout's phase) */
        int n_bars = c->d_market.n_bars;
        void *args[] = {&f->actor_table, &c->d_features, &actor, &n_bars, &f->actor_table_split};
        if ((st = launch(c, f->actor_table_k,
                         (unsigned)((n_bars + FH_ACTOR_TABLE_BARS - 1) / FH_ACTOR_TABLE_BARS),
                         FH_ACTOR_H1, 0, args, err)) != FH_OK)
            return st;
    }
    {
        int *seg_done = f->overlap ? f->seg_done : NULL;
        void *args[] = {&actor, &c->cfg, &c->d_market, &c->d_episodes, &N, &L, &K,
                        &f->critic_in, &f->in_stride, &f->trunc_step, &c->out, &f->clocks,
                        &seg_done, &f->seg_steps, &f->actor_table};
        unsigned grid = (unsigned)((N + f->episodes_per_block - 1) / f->episodes_per_block);
        if ((st = launch(c, f->rollout, grid, (unsigned)f->threads_per_block, f->rollout_smem,
                         args, err)) != FH_OK)
            return st;
    }
    if (f->overlap)
        CUDA_CHECK(cudaStreamWaitEvent(c->stream, f->ev_join, 0), err);
    if (with_events)
        CUDA_CHECK(cudaEventRecord(f->ev_phase[1], c->stream), err);
    if ((st = f->pipeline ? pipelined_networks(c, err) : batched_networks(c, err)) != FH_OK)
        return st;
    if (with_events)
        CUDA_CHECK(cudaEventRecord(f->ev_phase[2], c->stream), err);
    {
        float *slot_values = f->values_all + NL;
        void *s_args[] = {&c->out.trunc_values, &slot_values, &f->trunc_step, &N, &L, &K};
        if ((st = launch(c, f->scatter, elementwise_grid(c, (long long)N * K), ELEMENTWISE_BLOCK,
                         0, s_args, err)) != FH_OK)
            return st;
        /* one warp per episode row, its row staged in shared memory (5 words a step) when
         * one warp's fits in the default 48 KB, as many warps a block as fit, up to 4 */
        size_t row_bytes = (size_t)5 * L * sizeof(float);
        int warps = (int)(GAE_SMEM_BYTES / row_bytes);
        int staged = warps > 0;
        warps = warps < 1 ? GAE_BLOCK / 32 : warps > GAE_BLOCK / 32 ? GAE_BLOCK / 32 : warps;
        void *g_args[] = {&c->out, &N, &L, &gamma, &lambda, &staged};
        unsigned gae_blocks = (unsigned)((N + warps - 1) / warps);
        if ((st = launch(c, f->gae, gae_blocks, (unsigned)(warps * 32),
                         staged ? (size_t)warps * row_bytes : 0, g_args, err)) != FH_OK)
            return st;
    }
    if (with_events)
        CUDA_CHECK(cudaEventRecord(f->ev_phase[3], c->stream), err);
    return FH_OK;
fail:
    return err->status;
}

fh_status fh_fast_path_run(fh_gpu_ppo_collector *c, const fh_collect_params *p, fh_error *err)
{
    fh_fast_path *f = &c->fast;
    if (c->profile)
        return fast_sequence(c, p->gamma, p->gae_lambda, 1, err);
    if (!f->graph_exec || f->graph_gamma != p->gamma || f->graph_lambda != p->gae_lambda) {
        if (f->graph_exec) {
            cudaGraphExecDestroy(f->graph_exec);
            cudaGraphDestroy(f->graph);
            f->graph_exec = NULL;
            f->graph = NULL;
        }
        CUDA_CHECK(cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal), err);
        fh_status st = fast_sequence(c, p->gamma, p->gae_lambda, 0, err);
        cudaGraph_t graph = NULL;
        cudaError_t end = cudaStreamEndCapture(c->stream, &graph);
        if (st != FH_OK) {
            if (graph)
                cudaGraphDestroy(graph);
            return st;
        }
        CUDA_CHECK(end, err);
        f->graph = graph;
        CUDA_CHECK(cudaGraphInstantiate(&f->graph_exec, f->graph, 0), err);
        f->graph_gamma = p->gamma;
        f->graph_lambda = p->gae_lambda;
    }
    CUDA_CHECK(cudaGraphLaunch(f->graph_exec, c->stream), err);
    return FH_OK;
fail:
    return err->status;
}

fh_status fh_fast_path_check(fh_gpu_ppo_collector *c, fh_error *err)
{
    fh_fast_path *f = &c->fast;
    if (!f->overlap)
        return FH_OK;
    int timed_out = 0;
    CUDA_CHECK(cudaMemcpy(&timed_out, f->seg_done + f->n_segments, sizeof timed_out,
                          cudaMemcpyDeviceToHost), err);
    if (timed_out)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: the critic's side stream waited %llu s "
                            "for a rollout segment and gave up (were the kernels serialized, as "
                            "under a debugger?); its values are not set. Rerun with "
                            "FOXHUNT_ROLLOUT_OVERLAP=0", __FILE__, __LINE__,
                            FH_SEGMENT_WAIT_NS / 1000000000ull);
    return FH_OK;
fail:
    return err->status;
}
