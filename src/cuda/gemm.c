/* gemm.c — cublasLt dense layers with algorithm tuning (gemm.h). */
#include "cuda/gemm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_check.h"

#define BLAS_WORKSPACE_BYTES FH_GEMM_WORKSPACE_BYTES
#define GEMM_TUNE_REPEATS 4 /* back to back per candidate */
#define LT_CHECK(call, err) CUBLAS_CHECK(call, err)

cublasComputeType_t fh_gemm_compute_type(int precision)
{
    return precision == FH_PRECISION_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

cudaDataType_t fh_gemm_operand_type(int precision)
{
    return precision == FH_PRECISION_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

fh_status fh_gemm_init(fh_gemm *g, int precision, int tune, int candidates, const char *cache_path,
                       fh_error *err)
{
    memset(g, 0, sizeof *g);
    g->precision = precision;
    g->tune = tune;
    g->candidates = candidates < 1 ? 1 : candidates > FH_GEMM_MAX_CANDIDATES
                                             ? FH_GEMM_MAX_CANDIDATES : candidates;
    CUDA_CHECK(cudaMalloc(&g->workspace, BLAS_WORKSPACE_BYTES), err);
    CUBLAS_CHECK(cublasLtCreate(&g->lt), err);
    if (tune && cache_path && cache_path[0] &&
        strlen(cache_path) < sizeof g->cache_path) {
        snprintf(g->cache_path, sizeof g->cache_path, "%s", cache_path);
        if (!(g->disk = malloc(FH_GEMM_CACHE_MAX * sizeof *g->disk)))
            return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__,
                                __LINE__);
        g->n_disk = fh_gemm_cache_read(g->cache_path, g->disk, FH_GEMM_CACHE_MAX, NULL, 0);
    }
    return FH_OK;
fail:
    return err->status;
}

void fh_gemm_free(fh_gemm *g)
{
    if (g->lt)
        cublasLtDestroy(g->lt);
    cudaFree(g->workspace);
    free(g->disk);
    memset(g, 0, sizeof *g);
}

/* Tuning (on unless the override gemm_tune is 0): the first time a matmul shape is met
 * outside a graph capture, cublasLt's best g->candidates heuristic candidates are each
 * timed on the real buffers and the fastest is kept for that shape, and written to the
 * algorithm file (gemm_cache.h), whose choice later processes take instead of timing. The fast path runs
 * every shape of a collection once at init (fh_fast_tune_gemms), so the captured graph
 * uses tuned algorithms; a shape first met inside a capture takes the heuristic's first
 * choice. */
void fh_gemm_release(cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t la,
                     cublasLtMatrixLayout_t lb, cublasLtMatrixLayout_t lc,
                     cublasLtMatmulPreference_t pref)
{
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
}

uint32_t fh_gemm_pointer_alignment(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    uint32_t align = 256;
    while (align > 2 && a % align != 0) /* 2: a bf16 operand's least (fp32's is 4) */
        align /= 2;
    return align;
}

static int same_key(const fh_gemm_key *k, const fh_gemm_key *key)
{
    return k->n_in == key->n_in && k->n_out == key->n_out && k->rows == key->rows &&
           k->relu == key->relu && k->bias == key->bias && k->align_w == key->align_w &&
           k->align_x == key->align_x && k->align_y == key->align_y && k->y_bf16 == key->y_bf16;
}

static const cublasLtMatmulAlgo_t *tuned_algo(const fh_gemm *f, const fh_gemm_key *key)
{
    for (int i = 0; i < f->n_tuned; i++)
        if (same_key(&f->tuned[i].key, key))
            return &f->tuned[i].algo;
    return NULL;
}

static const cublasLtMatmulAlgo_t *remember_algo(fh_gemm *f, const fh_gemm_key *key,
                                                 const cublasLtMatmulAlgo_t *algo)
{
    for (int i = 0; i < f->n_tuned; i++) /* a replacement (see fh_gemm_dense) */
        if (same_key(&f->tuned[i].key, key)) {
            f->tuned[i].algo = *algo;
            return &f->tuned[i].algo;
        }
    if (f->n_tuned == FH_GEMM_TUNED_MAX) /* full: use it without keeping it */
        return algo;
    f->tuned[f->n_tuned].key = *key;
    f->tuned[f->n_tuned].algo = *algo;
    return &f->tuned[f->n_tuned++].algo;
}

typedef struct {
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc;
    const void *w, *x;
    void *y;
    cudaStream_t stream;
} gemm_call;

/* *best = the index of the fastest of `n` candidates: each runs once to warm up, then
 * GEMM_TUNE_REPEATS times back to back between two events (so that host launch gaps do
 * not count, as in the graph); a candidate that fails to run is skipped. */
static fh_status fastest_algo(fh_gemm *f, const gemm_call *g,
                              const cublasLtMatmulHeuristicResult_t *cand, int n, int *best,
                              fh_error *err)
{
    const float one = 1.0f, zero = 0.0f;
    cudaEvent_t ev[2] = {NULL, NULL};
    float best_ms = -1.0f;
    CUDA_CHECK(cudaEventCreate(&ev[0]), err);
    CUDA_CHECK(cudaEventCreate(&ev[1]), err);
    for (int k = 0; k < n; k++) {
        if (cublasLtMatmul(f->lt, g->op, &one, g->w, g->la, g->x, g->lb, &zero, g->y, g->lc, g->y,
                           g->lc, &cand[k].algo, f->workspace, BLAS_WORKSPACE_BYTES,
                           g->stream) != CUBLAS_STATUS_SUCCESS)
            continue; /* warm-up; not runnable here */
        CUDA_CHECK(cudaEventRecord(ev[0], g->stream), err);
        for (int r = 0; r < GEMM_TUNE_REPEATS; r++)
            CUBLAS_CHECK(cublasLtMatmul(f->lt, g->op, &one, g->w, g->la, g->x, g->lb, &zero, g->y,
                                        g->lc, g->y, g->lc, &cand[k].algo, f->workspace,
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

/* The algorithm file's entry for key at f's precision. */
static fh_gemm_cache_entry cache_entry(const fh_gemm *f, const fh_gemm_key *key,
                                       const cublasLtMatmulAlgo_t *algo)
{
    fh_gemm_cache_entry e;
    memset(&e, 0, sizeof e);
    e.n_in = key->n_in;
    e.n_out = key->n_out;
    e.rows = key->rows;
    e.relu = key->relu;
    e.bias = key->bias;
    e.precision = f->precision;
    e.y_bf16 = key->y_bf16;
    e.align_w = key->align_w;
    e.align_x = key->align_x;
    e.align_y = key->align_y;
    if (algo)
        memcpy(e.algo, algo->data, sizeof e.algo);
    return e;
}

/* 1 when cublasLt accepts algo for this matmul within the workspace
 * (cublasLtMatmulAlgoCheck launches nothing, so a graph capture may be under way). */
static int algo_usable(const fh_gemm *f, cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t la,
                       cublasLtMatrixLayout_t lb, cublasLtMatrixLayout_t lc,
                       const cublasLtMatmulAlgo_t *algo)
{
    cublasLtMatmulHeuristicResult_t check;
    return cublasLtMatmulAlgoCheck(f->lt, op, la, lb, lc, lc, algo, &check) ==
               CUBLAS_STATUS_SUCCESS &&
           check.workspaceSize <= BLAS_WORKSPACE_BYTES;
}

/* The file's algorithm for key (copied into *slot, the caller's) when cublasLt accepts
 * it; NULL otherwise, and when the file has one that cublasLt refuses, *refused = 1 and
 * its bytes in refused_algo (the shape is timed and the entry replaced). */
static const cublasLtMatmulAlgo_t *algo_from_disk(fh_gemm *f, const fh_gemm_key *key,
                                                  cublasLtMatmulDesc_t op,
                                                  cublasLtMatrixLayout_t la,
                                                  cublasLtMatrixLayout_t lb,
                                                  cublasLtMatrixLayout_t lc,
                                                  cublasLtMatmulAlgo_t *slot,
                                                  uint64_t refused_algo[8], int *refused)
{
    fh_gemm_cache_entry want = cache_entry(f, key, NULL);
    for (int i = 0; i < f->n_disk; i++) {
        if (!fh_gemm_cache_same_shape(&f->disk[i], &want))
            continue;
        memcpy(slot->data, f->disk[i].algo, sizeof slot->data);
        if (!algo_usable(f, op, la, lb, lc, slot)) {
            memcpy(refused_algo, f->disk[i].algo, sizeof f->disk[i].algo);
            *refused = 1;
            return NULL;
        }
        f->n_from_disk++;
        return remember_algo(f, key, slot);
    }
    return NULL;
}

/* After this process timed `timed` for key: the algorithm to run, agreed through the
 * file with every other process (gemm_cache.h: the first to settle a shape wins), into
 * *out; the timed one when the file cannot be updated (said once on stderr, and not
 * tried again by this gemm: each try may wait FH_GEMM_CACHE_LOCK_SECONDS on a lock that
 * another process keeps). */
static void settle_algo(fh_gemm *f, const fh_gemm_key *key, cublasLtMatmulDesc_t op,
                        cublasLtMatrixLayout_t la, cublasLtMatrixLayout_t lb,
                        cublasLtMatrixLayout_t lc, const cublasLtMatmulAlgo_t *timed,
                        const uint64_t *refused_algo, cublasLtMatmulAlgo_t *out)
{
    *out = *timed;
    if (f->warned)
        return;
    fh_gemm_cache_entry e = cache_entry(f, key, timed);
    if (!fh_gemm_cache_settle(f->cache_path, &e, refused_algo)) {
        fprintf(stderr, "foxhunt: note: the matmul algorithm file %s could not be "
                "updated (not writable, or its lock held by another process past %.0f s); "
                "processes started later may time other algorithms and sum in another order "
                "(last bits of the critic's values)\n", f->cache_path,
                FH_GEMM_CACHE_LOCK_SECONDS);
        f->warned = 1;
        return;
    }
    cublasLtMatmulAlgo_t agreed;
    memcpy(agreed.data, e.algo, sizeof agreed.data);
    if (memcmp(agreed.data, timed->data, sizeof agreed.data) != 0 &&
        algo_usable(f, op, la, lb, lc, &agreed))
        *out = agreed; /* another process settled this shape first: run its choice */
}

/* y (rows, n_out) row-major = act(x (rows, n_in) W^T + b), W (n_out, n_in) row-major:
 * in cuBLAS's column-major terms y^T = W x^T. One cublasLt matmul whose epilogue adds
 * the bias and applies the ReLU, so activations are written once (a separate bias
 * pass cost 39 ms of 217 at N 16384); b NULL: no bias and no ReLU (relu is ignored).
 * Compute type fh_gemm_compute_type's (--precision). */
fh_status fh_gemm_dense(fh_gemm *f, cudaStream_t stream, float *y, const float *x,
                        const float *w, const float *b, int n_in, int n_out, long long rows,
                        int relu, fh_error *err)
{
    return fh_gemm_dense_typed(f, stream, y, 0, x, w, b, n_in, n_out, rows, relu, err);
}

fh_status fh_gemm_dense_typed(fh_gemm *f, cudaStream_t stream, void *y, int y_bf16,
                              const void *x, const void *w, const void *b, int n_in, int n_out,
                              long long rows, int relu, fh_error *err)
{
    cublasLtMatmulDesc_t op = NULL;
    cublasLtMatrixLayout_t la = NULL, lb = NULL, lc = NULL;
    cublasLtMatmulPreference_t pref = NULL;
    const float one = 1.0f, zero = 0.0f;
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    cublasLtEpilogue_t epilogue = !b ? CUBLASLT_EPILOGUE_DEFAULT
                                  : relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
    size_t ws_bytes = BLAS_WORKSPACE_BYTES;
    cublasLtMatmulHeuristicResult_t heuristics[FH_GEMM_MAX_CANDIDATES];
    int found = 0;
    fh_status st = FH_OK;
    /* the operands' alignments, told to cublasLt (it assumes 256 bytes otherwise) and
     * part of the tuning key, so an algorithm is only reused where it may run */
    uint32_t align_w = fh_gemm_pointer_alignment(w), align_x = fh_gemm_pointer_alignment(x);
    uint32_t align_y = fh_gemm_pointer_alignment(y);
    fh_gemm_key key = {n_in, n_out, rows, relu, b != NULL, align_w, align_x, align_y, y_bf16};
    cudaDataType_t ab = fh_gemm_operand_type(f->precision), yt = y_bf16 ? CUDA_R_16BF : CUDA_R_32F;
    const cublasLtMatmulAlgo_t *algo = tuned_algo(f, &key);
    LT_CHECK(cublasLtMatmulDescCreate(&op, fh_gemm_compute_type(f->precision), CUDA_R_32F), err);
    LT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), err);
    LT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), err);
    LT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                            sizeof epilogue), err);
    if (b)
        LT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &b,
                                                sizeof b), err);
    LT_CHECK(cublasLtMatrixLayoutCreate(&la, ab, n_in, n_out, n_in), err);
    LT_CHECK(cublasLtMatrixLayoutCreate(&lb, ab, n_in, rows, n_in), err);
    LT_CHECK(cublasLtMatrixLayoutCreate(&lc, yt, n_out, rows, n_out), err);
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
    /* algorithms that must outlive the branch below: cublasLtMatmul reads them */
    cublasLtMatmulAlgo_t from_disk, settled;
    uint64_t refused_algo[8];
    int refused = 0;
    if (!algo && f->n_disk)
        algo = algo_from_disk(f, &key, op, la, lb, lc, &from_disk, refused_algo, &refused);
    if (!algo) {
        LT_CHECK(cublasLtMatmulAlgoGetHeuristic(f->lt, op, la, lb, lc, lc, pref,
                                                f->tune ? f->candidates : 1, heuristics,
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
            if ((st = fastest_algo(f, &call, heuristics, found, &best, err)) != FH_OK)
                goto done;
            f->n_timed++;
            if (f->cache_path[0]) {
                settle_algo(f, &key, op, la, lb, lc, &heuristics[best].algo,
                            refused ? refused_algo : NULL, &settled);
                heuristics[best].algo = settled;
            }
        }
        algo = remember_algo(f, &key, &heuristics[best].algo);
    }
    cublasStatus_t run = cublasLtMatmul(f->lt, op, &one, w, la, x, lb, &zero, y, lc, y, lc, algo,
                                        f->workspace, BLAS_WORKSPACE_BYTES, stream);
    if (run == CUBLAS_STATUS_NOT_SUPPORTED) {
        /* cublasLt refuses some of its own heuristic's algorithms when they are run (a TF32
         * 512 x 536,576 x 56 matmul in a captured collection, session 9): the others, in
         * the heuristic's order, and the first that runs is kept for the shape. A refusal
         * launches nothing, so a graph being captured is unharmed. */
        LT_CHECK(cublasLtMatmulAlgoGetHeuristic(f->lt, op, la, lb, lc, lc, pref,
                                                FH_GEMM_MAX_CANDIDATES, heuristics, &found), err);
        for (int k = 0; k < found && run == CUBLAS_STATUS_NOT_SUPPORTED; k++) {
            run = cublasLtMatmul(f->lt, op, &one, w, la, x, lb, &zero, y, lc, y, lc,
                                 &heuristics[k].algo, f->workspace, BLAS_WORKSPACE_BYTES, stream);
            if (run == CUBLAS_STATUS_SUCCESS)
                remember_algo(f, &key, &heuristics[k].algo);
        }
    }
    if (run != CUBLAS_STATUS_SUCCESS)
        st = fh_error_set(err, FH_ERR_FAILURE, "%s:%d: cublasLtMatmul of a %d x %lld x %d matmul "
                          "(%s, %s epilogue, alignments w %u x %u y %u) failed: %s", __FILE__,
                          __LINE__, n_out, rows, n_in, fh_precision_name(f->precision),
                          !b ? "no" : relu ? "bias+ReLU" : "bias", align_w, align_x, align_y,
                          cublasGetStatusString(run));
    goto done;
fail:
    st = err->status;
done:
    fh_gemm_release(op, la, lb, lc, pref);
    return st;
}
