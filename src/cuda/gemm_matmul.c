/* gemm_matmul.c — C = op(A) op(B) through cublasLt, no epilogue (gemm.h's
 * fh_gemm_matmul): the update's backward matmuls. cublasLt's own choice ran the
 * critic's backward 5-20% faster than legacy cuBLAS's (dev/cuda/update_epilogues,
 * version 3 against 1, session 19). The algorithm is the heuristic's first that runs,
 * kept per shape, so every replay and every process on one GPU runs the same one. */
#include "cuda/gemm.h"

#include <string.h>

#include "cuda/cuda_check.h"

#define LT_CHECK(call, err) CUBLAS_CHECK(call, err)

static int same_matmul(const fh_gemm_matmul_key *a, const fh_gemm_matmul_key *b)
{
    return memcmp(a, b, sizeof *a) == 0;
}

static const cublasLtMatmulAlgo_t *known_algo(const fh_gemm *g, const fh_gemm_matmul_key *key)
{
    for (int i = 0; i < g->n_matmuls; i++)
        if (same_matmul(&g->matmuls[i].key, key))
            return &g->matmuls[i].algo;
    return NULL;
}

static void keep_algo(fh_gemm *g, const fh_gemm_matmul_key *key, const cublasLtMatmulAlgo_t *algo)
{
    if (g->n_matmuls == FH_GEMM_TUNED_MAX) /* full: the next call asks the heuristic again */
        return;
    g->matmuls[g->n_matmuls].key = *key;
    g->matmuls[g->n_matmuls++].algo = *algo;
}

fh_status fh_gemm_matmul(fh_gemm *g, cudaStream_t stream, cublasOperation_t ta,
                         cublasOperation_t tb, int m, int n, int k, const void *A, int lda,
                         const void *B, int ldb, void *C, int ldc, int c_bf16, int *ran,
                         fh_error *err)
{
    cublasLtMatmulDesc_t op = NULL;
    cublasLtMatrixLayout_t la = NULL, lb = NULL, lc = NULL;
    cublasLtMatmulPreference_t pref = NULL;
    const float one = 1.0f, zero = 0.0f;
    size_t ws_bytes = FH_GEMM_WORKSPACE_BYTES;
    fh_gemm_matmul_key key;
    memset(&key, 0, sizeof key); /* compared with memcmp */
    key.ta = (int)ta;
    key.tb = (int)tb;
    key.m = m;
    key.n = n;
    key.k = k;
    key.lda = lda;
    key.ldb = ldb;
    key.ldc = ldc;
    key.align_a = fh_gemm_pointer_alignment(A);
    key.align_b = fh_gemm_pointer_alignment(B);
    key.align_c = fh_gemm_pointer_alignment(C);
    key.c_bf16 = c_bf16;
    cudaDataType_t ab = fh_gemm_operand_type(g->precision), ct = c_bf16 ? CUDA_R_16BF : CUDA_R_32F;
    *ran = 0;
    fh_status st = FH_OK;
    LT_CHECK(cublasLtMatmulDescCreate(&op, fh_gemm_compute_type(g->precision), CUDA_R_32F), err);
    LT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), err);
    LT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), err);
    LT_CHECK(cublasLtMatrixLayoutCreate(&la, ab, ta == CUBLAS_OP_N ? m : k,
                                        ta == CUBLAS_OP_N ? k : m, lda), err);
    LT_CHECK(cublasLtMatrixLayoutCreate(&lb, ab, tb == CUBLAS_OP_N ? k : n,
                                        tb == CUBLAS_OP_N ? n : k, ldb), err);
    LT_CHECK(cublasLtMatrixLayoutCreate(&lc, ct, m, n, ldc), err);
    const cublasLtMatmulAlgo_t *algo = known_algo(g, &key);
    if (algo) {
        cublasStatus_t run = cublasLtMatmul(g->lt, op, &one, A, la, B, lb, &zero, C, lc, C, lc,
                                            algo, g->workspace, FH_GEMM_WORKSPACE_BYTES, stream);
        if (run != CUBLAS_STATUS_SUCCESS) {
            st = fh_error_set(err, FH_ERR_FAILURE, "%s:%d: cublasLtMatmul (%d x %d x %d) failed: "
                              "%s", __FILE__, __LINE__, m, n, k, cublasGetStatusString(run));
            goto done;
        }
        *ran = 1;
        goto done;
    }
    LT_CHECK(cublasLtMatmulPreferenceCreate(&pref), err);
    LT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                  &ws_bytes, sizeof ws_bytes), err);
    uint32_t align[4] = {key.align_a, key.align_b, key.align_c, key.align_c};
    const cublasLtMatmulPreferenceAttributes_t which[4] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    for (int i = 0; i < 4; i++)
        LT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, which[i], &align[i], sizeof align[i]),
                 err);
    cublasLtMatmulHeuristicResult_t cand[FH_GEMM_MAX_CANDIDATES];
    int found = 0;
    cublasStatus_t h = cublasLtMatmulAlgoGetHeuristic(g->lt, op, la, lb, lc, lc, pref,
                                                      FH_GEMM_MAX_CANDIDATES, cand, &found);
    if (h != CUBLAS_STATUS_SUCCESS && h != CUBLAS_STATUS_NOT_SUPPORTED) {
        st = fh_error_set(err, FH_ERR_FAILURE, "%s:%d: cublasLtMatmulAlgoGetHeuristic (%d x %d x "
                          "%d): %s", __FILE__, __LINE__, m, n, k, cublasGetStatusString(h));
        goto done;
    }
    /* the heuristic's candidates in its order: the first that runs is kept (a refusal
     * launches nothing, so a graph being captured is unharmed) */
    for (int i = 0; h == CUBLAS_STATUS_SUCCESS && i < found && !*ran; i++) {
        cublasStatus_t run = cublasLtMatmul(g->lt, op, &one, A, la, B, lb, &zero, C, lc, C, lc,
                                            &cand[i].algo, g->workspace, FH_GEMM_WORKSPACE_BYTES,
                                            stream);
        if (run == CUBLAS_STATUS_SUCCESS) {
            keep_algo(g, &key, &cand[i].algo);
            *ran = 1;
        } else if (run != CUBLAS_STATUS_NOT_SUPPORTED) {
            st = fh_error_set(err, FH_ERR_FAILURE, "%s:%d: cublasLtMatmul (%d x %d x %d) failed: "
                              "%s", __FILE__, __LINE__, m, n, k, cublasGetStatusString(run));
            goto done;
        }
    }
    goto done;
fail:
    st = err->status;
done:
    fh_gemm_release(op, la, lb, lc, pref);
    return st;
}
