/* gemm.h — dense layers as cublasLt matmuls with a bias(+ReLU) epilogue, each shape's
 * algorithm timed once at start-up (the fast path's batched critic and market
 * projection). */
#ifndef FOXHUNT_CUDA_GEMM_H
#define FOXHUNT_CUDA_GEMM_H

#include <stdint.h>

#include <cublasLt.h>

#include "cuda/gemm_cache.h"
#include "foxhunt/error.h"
#include "foxhunt/precision.h"

#define FH_GEMM_TUNED_MAX 64
#define FH_GEMM_MAX_CANDIDATES 32
#define FH_GEMM_WORKSPACE_BYTES (32u << 20)

/* A matmul shape and its operands' address alignments (bytes): an algorithm is reused
 * only where it may run. */
typedef struct {
    int n_in, n_out;
    long long rows;
    int relu, bias;
    uint32_t align_w, align_x, align_y;
    int y_bf16; /* the output in bf16 (a bf16 gemm's hidden layers), else fp32 */
} fh_gemm_key;

/* A general matmul's shape (fh_gemm_matmul): operations, sizes, leading dimensions and
 * the operands' address alignments. */
typedef struct {
    int ta, tb, m, n, k, lda, ldb, ldc;
    uint32_t align_a, align_b, align_c;
    int c_bf16; /* C in bf16, else fp32 */
} fh_gemm_matmul_key;

typedef struct {
    cublasLtHandle_t lt;
    void *workspace;
    int precision;  /* fh_precision: fh_gemm_compute_type's compute type */
    int tune;       /* time the candidates of a shape first met outside a graph capture */
    int candidates; /* how many */
    int n_tuned;
    struct {
        fh_gemm_key key;
        cublasLtMatmulAlgo_t algo;
    } tuned[FH_GEMM_TUNED_MAX];
    /* with tuning: the algorithms timed by earlier processes on this GPU model
     * (gemm_cache.h), used before timing; each newly timed one is added to the file */
    char cache_path[1024];
    fh_gemm_cache_entry *disk;
    int n_disk;
    int n_from_disk, n_timed; /* shapes taken from the file, timed here */
    int warned;               /* the file could not be updated: said once, not tried again */
    int n_matmuls;            /* fh_gemm_matmul's shapes met, each with its algorithm */
    struct {
        fh_gemm_matmul_key key;
        cublasLtMatmulAlgo_t algo;
    } matmuls[FH_GEMM_TUNED_MAX];
} fh_gemm;

/* cuBLAS's compute type for a precision code (precision.h): CUBLAS_COMPUTE_32F or
 * CUBLAS_COMPUTE_32F_FAST_TF32 (fp32 operands and accumulation; the tensor cores'
 * inputs rounded to TF32). */
cublasComputeType_t fh_gemm_compute_type(int precision);
/* The element type of a matmul's A and B at a precision: bf16 for FH_PRECISION_BF16,
 * else fp32. */
cudaDataType_t fh_gemm_operand_type(int precision);

/* tune: time the candidates of a shape (else the heuristic's first); cache_path: the
 * algorithm file (gemm_cache.h) to read and extend when tuning, NULL or "" for none. */
fh_status fh_gemm_init(fh_gemm *g, int precision, int tune, int candidates, const char *cache_path,
                       fh_error *err);
void fh_gemm_free(fh_gemm *g);
/* y (rows, n_out) row-major = act(x (rows, n_in) W^T + b), W (n_out, n_in) row-major; b
 * NULL: no bias and no ReLU. Only one stream at a time may use g (one workspace). */
fh_status fh_gemm_dense(fh_gemm *g, cudaStream_t stream, float *y, const float *x,
                        const float *w, const float *b, int n_in, int n_out, long long rows,
                        int relu, fh_error *err);
/* The same with x and w of g's operand type (fh_gemm_operand_type: bf16 in a bf16 gemm)
 * and y in bf16 (y_bf16) or fp32; b is of y's type. */
fh_status fh_gemm_dense_typed(fh_gemm *g, cudaStream_t stream, void *y, int y_bf16,
                              const void *x, const void *w, const void *b, int n_in, int n_out,
                              long long rows, int relu, fh_error *err);

/* C (m, n) = op(A) op(B), column-major (cuBLAS's gemm terms, alpha 1, beta 0), A and B
 * of g's operand type, C in bf16 (c_bf16) or fp32, at g's precision, no epilogue: the heuristic's first algorithm that runs,
 * kept per shape (no timing). *ran = 0 when cublasLt has no algorithm that runs for the
 * shape (nothing was launched: the caller takes another path); FH_ERR_FAILURE on any
 * other failure. Only one stream at a time may use g. */
fh_status fh_gemm_matmul(fh_gemm *g, cudaStream_t stream, cublasOperation_t ta,
                         cublasOperation_t tb, int m, int n, int k, const void *A, int lda,
                         const void *B, int ldb, void *C, int ldc, int c_bf16, int *ran,
                         fh_error *err);
/* Destroys a matmul's descriptors (each NULL or created). */
void fh_gemm_release(cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t la,
                     cublasLtMatrixLayout_t lb, cublasLtMatrixLayout_t lc,
                     cublasLtMatmulPreference_t pref);
/* The largest power of two up to 256 that divides the address (at least 2: a bf16
 * element's size; an fp32 operand's address always gives at least 4). */
uint32_t fh_gemm_pointer_alignment(const void *p);

#endif
