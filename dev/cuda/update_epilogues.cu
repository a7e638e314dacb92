/* update_epilogues.cu — can cuBLASLt's fused epilogues replace the PPO update's separate
 * ReLU-mask + bias-gradient kernel in the critic's backward pass?
 *
 * The critic 54 -> 512 -> 384 -> 256 -> 128 -> 64 -> 1 (ReLU hidden), activations row-major
 * (rows, width), W (out, in) row-major; in cuBLAS's column-major terms a row-major (rows, w)
 * matrix is a (w, rows) one, ld w. The product's backward (src/cuda/update_layers.c,
 * fh_device_mlp_backward), per layer l from the last: dW = g^T X (cublasSgemm N,T, in x out
 * x rows), dX = g W (cublasSgemm N,N, in x rows x out), then bias_grad_kernel masks dX by
 * act > 0 in place and writes its column sums, layer l-1's bias gradient (a separate pass
 * over rows x in floats); the last layer's bias gradient: the upstream gradient's sum.
 * Versions (each runs its own forward, timed apart):
 *   1  baseline: forward cublasLt RELU_BIAS (layers 0 and 5, widths not multiples of 4:
 *      cublasSgemm + a bias / ReLU kernel, as the product's dense_any_width); cublasSgemm
 *      dW, dX (bf16: cublasGemmEx, CUBLAS_COMPUTE_32F_FAST_16BF; atomics not allowed) +
 *      bias_grad.cu's v2 (the product's)
 *   2  epilogues: forward RELU_AUX_BIAS (the ReLU bitmask, ld = width rounded up to 128:
 *      64 -> 128); dX by DRELU_BGRAD (masked dX and layer l-1's bias gradient in one
 *      matmul); dW by cublasLt, with BGRADB on the last layer (its bias gradient)
 *   3  cublasLt dX and dW without epilogues + the mask kernel (1 against 3: cuBLAS's
 *      legacy kernels against cublasLt's choice)
 *   4  (extra) dX by DRELU (mask only), every bias gradient by BGRADB on the next dW
 * Precisions: fp32 (CUBLAS_COMPUTE_32F), tf32 (_FAST_TF32), bf16 (_FAST_16BF), data fp32.
 * Each cublasLt matmul is planned once and probed: cublasLtMatmulAlgoGetHeuristic's (up
 * to 8) candidates in order, one launch each until one runs. A refused matmul (no
 * candidate, or every launch NOT_SUPPORTED or another error) is printed by name and runs
 * as cuBLAS + the kernels instead; a refused RELU_AUX_BIAS forward makes the version "not
 * supported" at that precision (nothing to measure without the mask). Neither fails.
 *
 * Check: a float64 CPU reference of the same forward and backward (X U(-1, 1), W and b
 * U(-1/sqrt(in), 1/sqrt(in)), the value's upstream gradient U(-1, 1); common.h's RNG); per
 * tensor (activations, value, every masked gradient g, dW, db) max |got - want| / max |want|
 * <= 1e-4 fp32, 5e-3 tf32, 3e-2 bf16. Where the reference's pre-activation is within a band
 * of zero (1e-5, 4e-3, 3e-2 times the layer's max |z|: the deep layers' z are small, so an
 * absolute band would take half of bf16's masks) the device's activation decides the
 * reference's mask (counted: "borrowed", of which "flipped" where it decided otherwise),
 * as in critic_step_fused.cu. A second forward + backward must be bit-identical.
 * `--cpu-check [rows] [truncate]` (no GPU): the same check of a CPU emulation of each
 * precision (operands rounded to nearest even, or truncated, float64 sums). Rounded, the
 * tolerances and bands admit an honest pass (worst ratios at 512 / 16,384 rows: tf32
 * 9.6e-4 / 1.1e-3, bf16 9.2e-3 / 7.1e-3; without the bands tf32's masked gradients fail
 * at 0.45). Truncated, tf32 still passes (4.1e-3 / 4.0e-3) but bf16 does not (3.8e-2 /
 * 3.5e-2): a device bf16 FAIL near 3e-2 may be conversion by truncation, not a bug.
 *
 * Build: make update_epilogues   (-lcublasLt -lcublas; OpenMP for the reference)
 * Run:   ./update_epilogues [version] [rows] [precision]   (0 / 0 / -1 = all; rows 512 or
 *        16384; precision 0 fp32, 1 tf32, 2 bf16);   ./update_epilogues --cpu-check [rows] [1]
 * Prints per rows, precision and version: the forward's us, each backward iteration's
 * (l: dW_l, dX_l and the mask / bias gradient it feeds) and the whole backward's (median
 * of DEV_RUNS after a warm-up, CUDA events), the worst tensor's error ratio, borrowed /
 * flipped masks, bit-identity, ok / FAIL. Exit status 1 when a check fails. */
#include "common.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <omp.h>

#define DEV_RUNS 21
#define N_LAYERS FH_CRITIC_N_LAYERS
#define N_PREC 3
#define N_VERSIONS 4
#define LT_WORKSPACE_BYTES (32u << 20)
#define CHUNK 64   /* bias_grad_kernel's rows a block */
#define BG_ROWS 8

static const int DIMS[N_LAYERS + 1] = {FH_STATE_DIM, FH_CRITIC_H1, FH_CRITIC_H2, FH_CRITIC_H3,
                                       FH_CRITIC_H4, FH_CRITIC_H5, 1};
static const char *PREC_NAMES[N_PREC] = {"fp32", "tf32", "bf16"};
static const cublasComputeType_t PREC_COMPUTE[N_PREC] = {
    CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_COMPUTE_32F_FAST_16BF};
static const double PREC_TOL[N_PREC] = {1e-4, 5e-3, 3e-2};
static const double PREC_BAND[N_PREC] = {1e-5, 4e-3, 3e-2};
static const char *VERSION_NAMES[N_VERSIONS + 1] = {"", "sgemm+mask", "lt epilogues",
                                                    "lt+mask", "lt drelu+bgradb"};

#define cublasCheck(call)                                                                  \
    do {                                                                                   \
        cublasStatus_t s_ = (call);                                                        \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                 \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                  \
                    cublasGetStatusName(s_));                                              \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

static int pad128(int n) { return (n + 127) / 128 * 128; }
static size_t sz(int rows, int width) { return (size_t)rows * width; }

/* ==== the mask + bias-gradient kernel: bias_grad.cu v2 (the product's) ==== */
__device__ int last_block(unsigned *counter, unsigned blocks)
{
    __shared__ int last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        unsigned done = atomicAdd(counter, 1u);
        last = done == blocks - 1;
        if (last)
            *counter = 0;
    }
    __syncthreads();
    if (last)
        __threadfence();
    return last;
}

/* dz (rows, width) masked in place by act > 0 (act NULL: no mask); db its column sums,
 * each in a fixed order (the atomic only elects the last block: bit-identical) */
__global__ void bias_grad_kernel(float *dz, const float *act, float *db, int rows, int width,
                                 double *partials, unsigned *counters)
{
    __shared__ double part[BG_ROWS][32];
    int col = blockIdx.x * 32 + threadIdx.x;
    int begin = blockIdx.y * CHUNK, end = begin + CHUNK < rows ? begin + CHUNK : rows;
    double s = 0.0;
    if (col < width)
        for (int i = begin + threadIdx.y; i < end; i += BG_ROWS) {
            long long at = (long long)i * width + col;
            float g = !act || act[at] > 0.0f ? dz[at] : 0.0f;
            if (act)
                dz[at] = g;
            s += g;
        }
    part[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && col < width) {
        double t = 0.0;
        for (int y = 0; y < BG_ROWS; y++)
            t += part[y][threadIdx.x];
        partials[(long long)blockIdx.y * width + col] = t;
    }
    if (!last_block(&counters[blockIdx.x], gridDim.y))
        return;
    s = 0.0;
    if (col < width)
        for (int c = threadIdx.y; c < (int)gridDim.y; c += BG_ROWS)
            s += partials[(long long)c * width + col];
    __syncthreads();
    part[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && col < width) {
        double t = 0.0;
        for (int y = 0; y < BG_ROWS; y++)
            t += part[y][threadIdx.x];
        db[col] = (float)t;
    }
}

/* ==== one planned cublasLt matmul: D (m x n, col-major) = op(A) op(B) [+ epilogue] ==== */
typedef struct {
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulAlgo_t algo;
    const void *a, *b;
    void *d;
    int ok, candidate; /* candidate: the heuristic's index of the algorithm that ran */
} lt_mm;

static cublasLtHandle_t g_lt;
static cublasHandle_t g_blas;
static void *g_workspace;

static void lt_free(lt_mm *m)
{
    if (m->op) cublasLtMatmulDescDestroy(m->op);
    if (m->la) cublasLtMatrixLayoutDestroy(m->la);
    if (m->lb) cublasLtMatrixLayoutDestroy(m->lb);
    if (m->lc) cublasLtMatrixLayoutDestroy(m->lc);
    memset(m, 0, sizeof *m);
}

static cublasStatus_t lt_run(const lt_mm *m)
{
    const float one = 1.0f, zero = 0.0f;
    return cublasLtMatmul(g_lt, m->op, &one, m->a, m->la, m->b, m->lb, &zero, m->d, m->lc, m->d,
                          m->lc, &m->algo, g_workspace, LT_WORKSPACE_BYTES, 0);
}

#define LT_ATTR(attr, value)                                                               \
    cublasCheck(cublasLtMatmulDescSetAttribute(m->op, attr, &(value), sizeof(value)))
#define LT_CANDIDATES 8

/* Plan and probe: cublasLtMatmulAlgoGetHeuristic's candidates in its order, each tried by
 * one launch until one runs. Returns 1 when one did; otherwise 0 and *why says why not. */
static int lt_plan(lt_mm *m, int prec, cublasOperation_t ta, cublasOperation_t tb, int M, int N,
                   int K, const float *a, int lda, const float *b, int ldb, float *d, int ldd,
                   cublasLtEpilogue_t epi, float *bias, void *aux, int aux_ld, const char **why)
{
    memset(m, 0, sizeof *m);
    m->a = a;
    m->b = b;
    m->d = d;
    int64_t ld = aux_ld;
    size_t ws = LT_WORKSPACE_BYTES;
    cublasCheck(cublasLtMatmulDescCreate(&m->op, PREC_COMPUTE[prec], CUDA_R_32F));
    LT_ATTR(CUBLASLT_MATMUL_DESC_TRANSA, ta);
    LT_ATTR(CUBLASLT_MATMUL_DESC_TRANSB, tb);
    LT_ATTR(CUBLASLT_MATMUL_DESC_EPILOGUE, epi);
    if (bias)
        LT_ATTR(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
    if (aux) {
        LT_ATTR(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, aux);
        LT_ATTR(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, ld);
    }
    cublasCheck(cublasLtMatrixLayoutCreate(&m->la, CUDA_R_32F, ta == CUBLAS_OP_N ? M : K,
                                           ta == CUBLAS_OP_N ? K : M, lda));
    cublasCheck(cublasLtMatrixLayoutCreate(&m->lb, CUDA_R_32F, tb == CUBLAS_OP_N ? K : N,
                                           tb == CUBLAS_OP_N ? N : K, ldb));
    cublasCheck(cublasLtMatrixLayoutCreate(&m->lc, CUDA_R_32F, M, N, ldd));
    cublasLtMatmulPreference_t pref;
    cublasCheck(cublasLtMatmulPreferenceCreate(&pref));
    cublasCheck(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                     &ws, sizeof ws));
    cublasLtMatmulHeuristicResult_t h[LT_CANDIDATES];
    int found = 0;
    cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(g_lt, m->op, m->la, m->lb, m->lc, m->lc,
                                                       pref, LT_CANDIDATES, h, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    *why = st == CUBLAS_STATUS_SUCCESS || st == CUBLAS_STATUS_NOT_SUPPORTED
               ? "no algorithm" : cublasGetStatusName(st);
    for (int i = 0; st == CUBLAS_STATUS_SUCCESS && i < found; i++) {
        m->algo = h[i].algo;
        cublasStatus_t run = lt_run(m);
        if (run == CUBLAS_STATUS_SUCCESS) {
            cudaCheck(cudaDeviceSynchronize());
            m->ok = 1;
            m->candidate = i;
            return 1;
        }
        *why = run == CUBLAS_STATUS_NOT_SUPPORTED ? "every launch NOT_SUPPORTED"
                                                  : cublasGetStatusName(run);
    }
    lt_free(m);
    return 0;
}

/* ==== the network on the device ==== */
typedef struct {
    int rows;
    float *w[N_LAYERS], *b[N_LAYERS];    /* parameters */
    float *act[N_LAYERS + 1];            /* act[0] = X, act[1..5] hidden, act[6] = value */
    float *g[N_LAYERS];                  /* g[l]: gradient at layer l's pre-activation */
    float *dw[N_LAYERS], *db[N_LAYERS];
    void *mask[N_LAYERS - 1];            /* ReLU bitmask of act[l + 1], ld pad128(width) */
    double *partials;
    unsigned *counters;
} dev_net;

/* one version x precision: its planned matmuls and what is timed */
typedef struct {
    int version, prec, ok;      /* ok 0: a forward that must write the aux was refused */
    char refused[320];          /* "op (why); ..." for every refused cublasLt matmul */
    dev_net *n;
    lt_mm fwd[N_LAYERS], dx[N_LAYERS], dw[N_LAYERS];
    int layer; /* the backward iteration timed, -1 the whole backward, -2 the forward */
} runner;

/* y (rows, width) += bias, then ReLU: the forward's fallback where cublasLt refuses a
 * layer that writes no aux (the product's dense_any_width does the same) */
__global__ void bias_act_kernel(float *y, const float *b, long long n, int width, int relu)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        float v = y[i] + b[i % width];
        y[i] = relu && v < 0.0f ? 0.0f : v;
    }
}

static void mask_bias_grad(dev_net *n, float *dz, const float *act, float *db, int width)
{
    dim3 grid((width + 31) / 32, (n->rows + CHUNK - 1) / CHUNK);
    bias_grad_kernel<<<grid, dim3(32, BG_ROWS)>>>(dz, act, db, n->rows, width, n->partials,
                                                  n->counters);
    cudaCheckLaunch();
}

static void legacy_gemm(int prec, cublasOperation_t ta, cublasOperation_t tb, int m, int nn, int k,
                        const float *a, int lda, const float *b, int ldb, float *c, int ldc)
{
    const float one = 1.0f, zero = 0.0f;
    if (prec == 2)
        cublasCheck(cublasGemmEx(g_blas, ta, tb, m, nn, k, &one, a, CUDA_R_32F, lda, b, CUDA_R_32F,
                                 ldb, &zero, c, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F_FAST_16BF,
                                 CUBLAS_GEMM_DEFAULT));
    else
        cublasCheck(cublasSgemm(g_blas, ta, tb, m, nn, k, &one, a, lda, b, ldb, &zero, c, ldc));
}

/* Each operation: its cublasLt matmul where planned, else cuBLAS + the kernels (version 1
 * always; versions 2-4 where cublasLt refused). Versions 2 and 4 compute bias gradients in
 * the epilogues; their fallbacks compute them with the mask kernel instead. */
static void fwd_op(runner *r, int l)
{
    dev_net *n = r->n;
    int in = DIMS[l], out = DIMS[l + 1];
    if (r->fwd[l].ok) {
        cublasCheck(lt_run(&r->fwd[l]));
        return;
    }
    legacy_gemm(r->prec, CUBLAS_OP_T, CUBLAS_OP_N, out, n->rows, in, n->w[l], in, n->act[l], in,
                n->act[l + 1], out);
    bias_act_kernel<<<4 * 132, 256>>>(n->act[l + 1], n->b[l], (long long)sz(n->rows, out), out,
                                      l < N_LAYERS - 1);
    cudaCheckLaunch();
}

static void dw_op(runner *r, int l)
{
    dev_net *n = r->n;
    int in = DIMS[l], out = DIMS[l + 1];
    int bgradb = r->version == 4 || (r->version == 2 && l == N_LAYERS - 1);
    if (r->version != 1 && r->dw[l].ok) {
        cublasCheck(lt_run(&r->dw[l]));
        return;
    }
    if (bgradb || l == N_LAYERS - 1) /* the last layer's bias gradient: g's column sums */
        mask_bias_grad(n, n->g[l], NULL, n->db[l], out);
    legacy_gemm(r->prec, CUBLAS_OP_N, CUBLAS_OP_T, in, out, n->rows, n->act[l], in, n->g[l], out,
                n->dw[l], in);
}

static void dx_op(runner *r, int l)
{
    dev_net *n = r->n;
    int in = DIMS[l], out = DIMS[l + 1];
    if (r->version != 1 && r->dx[l].ok) {
        cublasCheck(lt_run(&r->dx[l]));
        if (r->version == 3)
            mask_bias_grad(n, n->g[l - 1], n->act[l], n->db[l - 1], in);
        return;
    }
    legacy_gemm(r->prec, CUBLAS_OP_N, CUBLAS_OP_N, in, n->rows, out, n->w[l], in, n->g[l], out,
                n->g[l - 1], in);
    mask_bias_grad(n, n->g[l - 1], n->act[l], n->db[l - 1], in);
}

static void backward_layer(runner *r, int l)
{
    if (r->version == 3 && l == N_LAYERS - 1 && r->dw[l].ok)
        mask_bias_grad(r->n, r->n->g[l], NULL, r->n->db[l], DIMS[l + 1]);
    dw_op(r, l);
    if (l > 0)
        dx_op(r, l);
}

static void run_forward(runner *r)
{
    for (int l = 0; l < N_LAYERS; l++)
        fwd_op(r, l);
}

static void run_timed(void *p)
{
    runner *r = (runner *)p;
    if (r->layer == -2)
        run_forward(r);
    else if (r->layer >= 0)
        backward_layer(r, r->layer);
    else
        for (int l = N_LAYERS - 1; l >= 0; l--)
            backward_layer(r, l);
}

static void note_refused(runner *r, const char *op, int l, const char *epi, const char *why)
{
    size_t used = strlen(r->refused);
    snprintf(r->refused + used, sizeof r->refused - used, "%s%s l%d %s (%s)", used ? "; " : "",
             op, l, epi, why);
}

/* Plan every cublasLt matmul of the version in forward then backward order, each probed
 * by one launch (or its fallback run), so that every operand holds data when its consumer
 * is planned. Version 1 plans only the forward. */
static void plan_runner(runner *r, dev_net *n, int version, int prec)
{
    memset(r, 0, sizeof *r);
    r->version = version;
    r->prec = prec;
    r->n = n;
    r->ok = 1;
    const char *why = "";
    int rows = n->rows, aux_fwd = version == 2 || version == 4;
    for (int l = 0; l < N_LAYERS; l++) {
        int in = DIMS[l], out = DIMS[l + 1], hidden = l < N_LAYERS - 1, aux = hidden && aux_fwd;
        cublasLtEpilogue_t epi = !hidden ? CUBLASLT_EPILOGUE_BIAS
                                 : aux   ? CUBLASLT_EPILOGUE_RELU_AUX_BIAS
                                         : CUBLASLT_EPILOGUE_RELU_BIAS;
        if (version == 1 && (in % 4 || out % 4)) { /* the product's dense_any_width */
            fwd_op(r, l);
            continue;
        }
        if (!lt_plan(&r->fwd[l], prec, CUBLAS_OP_T, CUBLAS_OP_N, out, rows, in, n->w[l], in,
                     n->act[l], in, n->act[l + 1], out, epi, n->b[l], aux ? n->mask[l] : NULL,
                     pad128(out), &why)) {
            note_refused(r, "fwd", l, !hidden ? "BIAS" : aux ? "RELU_AUX_BIAS" : "RELU_BIAS", why);
            if (aux) { /* no mask for the backward's epilogue: nothing to measure */
                r->ok = 0;
                return;
            }
            fwd_op(r, l);
        }
    }
    for (int l = N_LAYERS - 1; l >= 0 && version != 1; l--) {
        int in = DIMS[l], out = DIMS[l + 1];
        int bgradb = version == 4 || (version == 2 && l == N_LAYERS - 1);
        cublasLtEpilogue_t epi = bgradb ? CUBLASLT_EPILOGUE_BGRADB : CUBLASLT_EPILOGUE_DEFAULT;
        if (version == 3 && l == N_LAYERS - 1)
            mask_bias_grad(n, n->g[l], NULL, n->db[l], out);
        if (!lt_plan(&r->dw[l], prec, CUBLAS_OP_N, CUBLAS_OP_T, in, out, rows, n->act[l], in,
                     n->g[l], out, n->dw[l], in, epi, bgradb ? n->db[l] : NULL, NULL, 0, &why)) {
            note_refused(r, "dW", l, bgradb ? "BGRADB" : "DEFAULT", why);
            dw_op(r, l);
        }
        if (l == 0)
            break;
        epi = version == 2 ? CUBLASLT_EPILOGUE_DRELU_BGRAD
              : version == 4 ? CUBLASLT_EPILOGUE_DRELU : CUBLASLT_EPILOGUE_DEFAULT;
        if (!lt_plan(&r->dx[l], prec, CUBLAS_OP_N, CUBLAS_OP_N, in, rows, out, n->w[l], in,
                     n->g[l], out, n->g[l - 1], in, epi, version == 2 ? n->db[l - 1] : NULL,
                     aux_fwd ? n->mask[l - 1] : NULL, pad128(in), &why)) {
            note_refused(r, "dX", l,
                         version == 2 ? "DRELU_BGRAD" : version == 4 ? "DRELU" : "DEFAULT", why);
            r->dx[l].ok = 0;
            dx_op(r, l);
        } else if (version == 3) {
            mask_bias_grad(n, n->g[l - 1], n->act[l], n->db[l - 1], in);
        }
    }
    cudaCheck(cudaDeviceSynchronize());
}

static void free_runner(runner *r)
{
    for (int l = 0; l < N_LAYERS; l++) {
        lt_free(&r->fwd[l]);
        lt_free(&r->dx[l]);
        lt_free(&r->dw[l]);
    }
}

/* ==== the float64 reference (and, for --cpu-check, its tf32 / bf16 emulation) ==== */
typedef struct {
    int rows;
    float *x, *w[N_LAYERS], *b[N_LAYERS], *gv; /* inputs (make_inputs; emu borrows ref's) */
    double *z[N_LAYERS];     /* pre-activations */
    double *act[N_LAYERS + 1]; /* act[0] = X, act[l + 1] = relu(z[l]) (hidden), act[6] = value */
    double *g[N_LAYERS], *dw[N_LAYERS], *db[N_LAYERS];
    unsigned char *m[N_LAYERS - 1]; /* masks used by the last backward (act[l + 1] > 0) */
    double zmax[N_LAYERS];          /* max |z[l]|: the scale of the masks' band */
    int have_backward;
} ref_net;

/* host copies of what the device wrote: the same tensors as ref_net's */
typedef struct {
    float *act[N_LAYERS + 1], *g[N_LAYERS], *dw[N_LAYERS], *db[N_LAYERS];
} host_out;

/* The checked tensors of a net (dev_net, ref_net, host_out) as one list, t = 0..N_T-1:
 * act[1..6], g[0..4], dw[0..5], db[0..5]; TENSOR_AT is the pointer's lvalue. */
#define N_T (4 * N_LAYERS - 1)
#define TENSOR_AT(net, t)                                                                  \
    (*((t) < N_LAYERS ? &(net)->act[(t) + 1]                                               \
       : (t) < 2 * N_LAYERS - 1 ? &(net)->g[(t) - N_LAYERS]                                \
       : (t) < 3 * N_LAYERS - 1 ? &(net)->dw[(t) - 2 * N_LAYERS + 1]                       \
                                : &(net)->db[(t) - 3 * N_LAYERS + 1]))
static size_t tensor_size(int t, int rows, const char **kind, int *l)
{
    static const char *kinds[4] = {"act", "g", "dW", "db"};
    int k = t < N_LAYERS ? 0 : t < 2 * N_LAYERS - 1 ? 1 : t < 3 * N_LAYERS - 1 ? 2 : 3;
    int i = t - (k == 0 ? -1 : k == 1 ? N_LAYERS : k == 2 ? 2 * N_LAYERS - 1 : 3 * N_LAYERS - 1);
    if (kind) {
        *kind = kinds[k];
        *l = i;
    }
    return k == 0 ? sz(rows, DIMS[i]) : k == 1 ? sz(rows, DIMS[i + 1])
           : k == 2 ? sz(DIMS[i + 1], DIMS[i]) : (size_t)DIMS[i + 1];
}

static int g_truncate; /* --cpu-check's third argument: emulate truncation, not rounding */

static double round_prec(double v, int prec)
{
    if (prec == 0)
        return v;
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    int drop = prec == 1 ? 13 : 16; /* tf32 keeps 10 mantissa bits, bf16 7 */
    if ((u & 0x7f800000u) != 0x7f800000u) {
        uint32_t half = 1u << (drop - 1), lsb = (u >> drop) & 1u;
        u = (g_truncate ? u : u + half - 1 + lsb) & ~((1u << drop) - 1);
    }
    memcpy(&f, &u, 4);
    return f;
}


static long long n_units(int rows)
{
    long long n = 0;
    for (int l = 1; l < N_LAYERS; l++)
        n += (long long)rows * DIMS[l];
    return n;
}

static void ref_alloc(ref_net *r, int rows)
{
    memset(r, 0, sizeof *r);
    r->rows = rows;
    for (int t = 0; t < N_T; t++)
        TENSOR_AT(r, t) = (double *)host_alloc(tensor_size(t, rows, NULL, NULL) * 8);
    r->act[0] = (double *)host_alloc(sz(rows, DIMS[0]) * 8);
    r->g[N_LAYERS - 1] = (double *)host_alloc(sz(rows, 1) * 8);
    for (int l = 0; l < N_LAYERS; l++) {
        r->z[l] = (double *)host_alloc(sz(rows, DIMS[l + 1]) * 8);
        if (l < N_LAYERS - 1)
            r->m[l] = (unsigned char *)host_alloc(sz(rows, DIMS[l + 1]));
    }
}

static void ref_free(ref_net *r)
{
    for (int t = 0; t < N_T; t++)
        free(TENSOR_AT(r, t));
    free(r->act[0]);
    free(r->g[N_LAYERS - 1]);
    for (int l = 0; l < N_LAYERS; l++) {
        free(r->z[l]);
        if (l < N_LAYERS - 1)
            free(r->m[l]);
    }
}

/* Forward. prec > 0 emulates: operands rounded, outputs stored as float. */
static void ref_forward(ref_net *r, int prec)
{
    int rows = r->rows;
    for (size_t i = 0; i < sz(rows, DIMS[0]); i++)
        r->act[0][i] = r->x[i];
    for (int l = 0; l < N_LAYERS; l++) {
        int in = DIMS[l], out = DIMS[l + 1];
        const double *h = r->act[l];
#pragma omp parallel for schedule(static)
        for (int i = 0; i < rows; i++)
            for (int o = 0; o < out; o++) {
                double s = 0;
                for (int k = 0; k < in; k++)
                    s += round_prec(h[(size_t)i * in + k], prec) *
                         round_prec(r->w[l][(size_t)o * in + k], prec);
                s += r->b[l][o];
                if (prec)
                    s = (float)s;
                r->z[l][(size_t)i * out + o] = s;
                r->act[l + 1][(size_t)i * out + o] = l < N_LAYERS - 1 && s < 0 ? 0.0 : s;
            }
        r->zmax[l] = 0.0;
        for (size_t i = 0; i < sz(rows, out); i++)
            r->zmax[l] = fmax(r->zmax[l], fabs(r->z[l][i]));
    }
}

/* The mask of act[l + 1]: the reference's z > 0, except where |z| < band x the layer's
 * max |z|: there the device's activation decides (dev NULL: never). Returns the borrowed
 * count; *flipped counts those where the device decided otherwise than the reference. */
static long long ref_masks(ref_net *r, const host_out *dev, double band, int *changed,
                           long long *flipped)
{
    long long borrowed = 0;
    *changed = !r->have_backward;
    *flipped = 0;
    for (int l = 0; l < N_LAYERS - 1; l++) {
        size_t n = sz(r->rows, DIMS[l + 1]);
        for (size_t i = 0; i < n; i++) {
            double z = r->z[l][i];
            unsigned char m = z > 0.0;
            if (dev && fabs(z) < band * r->zmax[l]) {
                unsigned char d = dev->act[l + 1][i] > 0.0f;
                *flipped += d != m;
                m = d;
                borrowed++;
            }
            if (m != r->m[l][i]) {
                r->m[l][i] = m;
                *changed = 1;
            }
        }
    }
    return borrowed;
}

static void ref_backward(ref_net *r, int prec)
{
    int rows = r->rows;
    for (int i = 0; i < rows; i++)
        r->g[N_LAYERS - 1][i] = r->gv[i];
    for (int l = N_LAYERS - 1; l >= 0; l--) {
        int in = DIMS[l], out = DIMS[l + 1];
        const double *g = r->g[l], *h = r->act[l];
        for (int o = 0; o < out; o++) {
            double s = 0;
            for (int i = 0; i < rows; i++)
                s += g[(size_t)i * out + o];
            r->db[l][o] = s;
        }
#pragma omp parallel for schedule(static)
        for (int o = 0; o < out; o++) {
            double *acc = r->dw[l] + (size_t)o * in;
            for (int k = 0; k < in; k++)
                acc[k] = 0.0;
            for (int i = 0; i < rows; i++) {
                double gi = round_prec(g[(size_t)i * out + o], prec);
                if (gi != 0.0)
                    for (int k = 0; k < in; k++)
                        acc[k] += gi * round_prec(h[(size_t)i * in + k], prec);
            }
        }
        if (l == 0)
            break;
        double *gin = r->g[l - 1];
        const unsigned char *m = r->m[l - 1];
#pragma omp parallel for schedule(static)
        for (int i = 0; i < rows; i++) {
            double *acc = gin + (size_t)i * in;
            for (int k = 0; k < in; k++)
                acc[k] = 0.0;
            for (int o = 0; o < out; o++) {
                double go = round_prec(g[(size_t)i * out + o], prec);
                if (go != 0.0)
                    for (int k = 0; k < in; k++)
                        acc[k] += go * round_prec(r->w[l][(size_t)o * in + k], prec);
            }
            for (int k = 0; k < in; k++)
                acc[k] = !m[(size_t)i * in + k] ? 0.0 : prec ? (double)(float)acc[k] : acc[k];
        }
    }
    r->have_backward = 1;
}

/* ==== the check: per tensor max |got - want| / max |want| ==== */
typedef struct {
    double worst;
    const char *worst_name;
    char name_buf[32];
    int failed;
} tensor_check;

static void check_tensor(tensor_check *c, const char *kind, int l, const float *got,
                         const double *want, size_t n, double tol)
{
    double max_err = 0, max_want = 0;
    int nan = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(got[i]))
            nan = 1;
        double e = fabs((double)got[i] - want[i]);
        if (e > max_err)
            max_err = e;
        if (fabs(want[i]) > max_want)
            max_want = fabs(want[i]);
    }
    double ratio = nan ? INFINITY : max_err / (max_want > 0 ? max_want : 1.0);
    if (ratio > tol && !c->failed) {
        printf("    FAIL %s%d: max |err| %.3e, max |want| %.3e, ratio %.3e > %.0e\n", kind, l,
               max_err, max_want, ratio, tol);
        c->failed = 1;
    }
    if (ratio >= c->worst) {
        c->worst = ratio;
        snprintf(c->name_buf, sizeof c->name_buf, "%s%d", kind, l);
        c->worst_name = c->name_buf;
    }
}

static void check_all(tensor_check *c, ref_net *r, host_out *o, double tol)
{
    memset(c, 0, sizeof *c);
    c->worst_name = "-";
    const char *kind;
    int l;
    for (int t = 0; t < N_T; t++) {
        size_t n = tensor_size(t, r->rows, &kind, &l);
        check_tensor(c, kind, l, TENSOR_AT(o, t), TENSOR_AT(r, t), n, tol);
    }
}

static void host_out_alloc(host_out *o, int rows)
{
    memset(o, 0, sizeof *o);
    for (int t = 0; t < N_T; t++)
        TENSOR_AT(o, t) = (float *)host_alloc(tensor_size(t, rows, NULL, NULL) * 4);
}

static void host_out_free(host_out *o)
{
    for (int t = 0; t < N_T; t++)
        free(TENSOR_AT(o, t));
}

/* 1 when every tensor of a and b is bit-identical */
static int host_out_same(host_out *a, host_out *b, int rows)
{
    int same = 1;
    for (int t = 0; t < N_T; t++)
        same &= !memcmp(TENSOR_AT(a, t), TENSOR_AT(b, t), tensor_size(t, rows, NULL, NULL) * 4);
    return same;
}

/* ==== inputs: X U(-1, 1), W and b U(-1/sqrt(in), 1/sqrt(in)), the value's gradient U(-1, 1) */
static void make_inputs(ref_net *r)
{
    dev_rng rng = {20261202ull + (uint64_t)r->rows};
    r->x = (float *)host_alloc(sz(r->rows, DIMS[0]) * 4);
    r->gv = (float *)host_alloc(sz(r->rows, 1) * 4);
    for (size_t i = 0; i < sz(r->rows, DIMS[0]); i++)
        r->x[i] = dev_rng_uniform(&rng, -1.0f, 1.0f);
    for (int l = 0; l < N_LAYERS; l++) {
        float a = 1.0f / sqrtf((float)DIMS[l]);
        r->w[l] = (float *)host_alloc(sz(DIMS[l + 1], DIMS[l]) * 4);
        r->b[l] = (float *)host_alloc((size_t)DIMS[l + 1] * 4);
        for (size_t i = 0; i < sz(DIMS[l + 1], DIMS[l]); i++)
            r->w[l][i] = dev_rng_uniform(&rng, -a, a);
        for (int i = 0; i < DIMS[l + 1]; i++)
            r->b[l][i] = dev_rng_uniform(&rng, -a, a);
    }
    for (int i = 0; i < r->rows; i++)
        r->gv[i] = dev_rng_uniform(&rng, -1.0f, 1.0f);
}

static void free_inputs(ref_net *r)
{
    free(r->x);
    free(r->gv);
    for (int l = 0; l < N_LAYERS; l++) {
        free(r->w[l]);
        free(r->b[l]);
    }
}

/* ==== --cpu-check: the tolerances against an emulated tf32 / bf16 pass ==== */
static int cpu_check(int rows)
{
    ref_net ref, emu;
    ref_alloc(&ref, rows);
    ref_alloc(&emu, rows);
    make_inputs(&ref);
    emu.x = ref.x;
    emu.gv = ref.gv;
    memcpy(emu.w, ref.w, sizeof ref.w);
    memcpy(emu.b, ref.b, sizeof ref.b);
    ref_forward(&ref, 0);
    host_out o;
    host_out_alloc(&o, rows);
    int failed = 0, changed;
    for (int prec = 0; prec < N_PREC; prec++) {
        ref_forward(&emu, prec);
        long long flipped;
        ref_masks(&emu, NULL, 0.0, &changed, &flipped);
        ref_backward(&emu, prec);
        for (int t = 0; t < N_T; t++)
            for (size_t i = 0; i < tensor_size(t, rows, NULL, NULL); i++)
                TENSOR_AT(&o, t)[i] = (float)TENSOR_AT(&emu, t)[i];
        long long borrowed = ref_masks(&ref, &o, PREC_BAND[prec], &changed, &flipped);
        ref_backward(&ref, 0);
        tensor_check c;
        check_all(&c, &ref, &o, PREC_TOL[prec]);
        failed |= c.failed;
        printf("cpu-check %s emulation (%s), %d rows: worst %s %.2e (tolerance %.0e), %lld of %lld "
               "masks within %.0e x max |z| of zero borrowed (%lld flipped)  %s\n",
               PREC_NAMES[prec], g_truncate ? "truncated" : "rounded", rows, c.worst_name,
               c.worst, PREC_TOL[prec], borrowed,
               n_units(rows), PREC_BAND[prec], flipped, c.failed ? "FAIL" : "ok");
    }
    host_out_free(&o);
    free_inputs(&ref);
    ref_free(&ref);
    ref_free(&emu);
    return failed;
}

/* ==== main ==== */
static void dev_net_alloc(dev_net *n, const ref_net *in)
{
    int rows = in->rows;
    memset(n, 0, sizeof *n);
    n->rows = rows;
    for (int t = 0; t < N_T; t++)
        cudaCheck(cudaMalloc((void **)&TENSOR_AT(n, t), tensor_size(t, rows, NULL, NULL) * 4));
    cudaCheck(cudaMalloc((void **)&n->act[0], sz(rows, DIMS[0]) * 4));
    cudaCheck(cudaMalloc((void **)&n->g[N_LAYERS - 1], sz(rows, 1) * 4));
    cudaCheck(cudaMemcpy(n->act[0], in->x, sz(rows, DIMS[0]) * 4, cudaMemcpyHostToDevice));
    for (int l = 0; l < N_LAYERS; l++) {
        cudaCheck(cudaMalloc((void **)&n->w[l], sz(DIMS[l + 1], DIMS[l]) * 4));
        cudaCheck(cudaMalloc((void **)&n->b[l], (size_t)DIMS[l + 1] * 4));
        cudaCheck(cudaMemcpy(n->w[l], in->w[l], sz(DIMS[l + 1], DIMS[l]) * 4,
                             cudaMemcpyHostToDevice));
        cudaCheck(cudaMemcpy(n->b[l], in->b[l], (size_t)DIMS[l + 1] * 4, cudaMemcpyHostToDevice));
        if (l < N_LAYERS - 1) /* bits: ld pad128(width) a row */
            cudaCheck(cudaMalloc(&n->mask[l], sz(rows, pad128(DIMS[l + 1])) / 8));
    }
    cudaCheck(cudaMalloc((void **)&n->partials, sz((rows + CHUNK - 1) / CHUNK, FH_CRITIC_H1) * 8));
    cudaCheck(cudaMalloc((void **)&n->counters, FH_CRITIC_H1 / 32 * 4));
    cudaCheck(cudaMemset(n->counters, 0, FH_CRITIC_H1 / 32 * 4));
}

/* every output poisoned (NaN), the upstream gradient (of the value) into g[5] */
static void dev_net_reset(dev_net *n, const ref_net *in)
{
    for (int t = 0; t < N_T; t++)
        cudaCheck(cudaMemset(TENSOR_AT(n, t), 0xff, tensor_size(t, n->rows, NULL, NULL) * 4));
    cudaCheck(cudaMemcpy(n->g[N_LAYERS - 1], in->gv, sz(n->rows, 1) * 4, cudaMemcpyHostToDevice));
}

static void download(host_out *o, dev_net *n)
{
    cudaCheck(cudaDeviceSynchronize());
    for (int t = 0; t < N_T; t++)
        cudaCheck(cudaMemcpy(TENSOR_AT(o, t), TENSOR_AT(n, t),
                             tensor_size(t, n->rows, NULL, NULL) * 4, cudaMemcpyDeviceToHost));
}

static void dev_net_free(dev_net *n)
{
    for (int t = 0; t < N_T; t++)
        cudaFree(TENSOR_AT(n, t));
    cudaFree(n->act[0]);
    cudaFree(n->g[N_LAYERS - 1]);
    for (int l = 0; l < N_LAYERS; l++) {
        cudaFree(n->w[l]);
        cudaFree(n->b[l]);
        if (l < N_LAYERS - 1)
            cudaFree(n->mask[l]);
    }
    cudaFree(n->partials);
    cudaFree(n->counters);
}

static void full_pass(runner *r)
{
    run_forward(r);
    for (int l = N_LAYERS - 1; l >= 0; l--)
        backward_layer(r, l);
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--cpu-check")) {
        g_truncate = argc > 3 && atoi(argv[3]);
        return cpu_check(argc > 2 ? atoi(argv[2]) : 512);
    }
    int only_v = argc > 1 ? atoi(argv[1]) : 0, only_rows = argc > 2 ? atoi(argv[2]) : 0;
    int only_p = argc > 3 ? atoi(argv[3]) : -1;
    const int rows_list[2] = {512, 16384};
    dev_print_device();
    int lt_ver = (int)cublasLtGetVersion();
    printf("cublasLt %d, %d CPU threads for the reference; us: median of %d after a warm-up\n",
           lt_ver, omp_get_max_threads(), DEV_RUNS);
    cublasCheck(cublasLtCreate(&g_lt));
    cublasCheck(cublasCreate(&g_blas));
    cublasCheck(cublasSetAtomicsMode(g_blas, CUBLAS_ATOMICS_NOT_ALLOWED));
    cudaCheck(cudaMalloc(&g_workspace, LT_WORKSPACE_BYTES));
    int failed = 0;
    for (int ri = 0; ri < 2; ri++) {
        int rows = rows_list[ri];
        if (only_rows && rows != only_rows)
            continue;
        ref_net ref;
        ref_alloc(&ref, rows);
        make_inputs(&ref);
        ref_forward(&ref, 0);
        dev_net n;
        dev_net_alloc(&n, &ref);
        host_out o1, o2;
        host_out_alloc(&o1, rows);
        host_out_alloc(&o2, rows);
        printf("\nrows %d\n%-16s %-4s %8s | %8s %8s %8s %8s %8s %8s | %9s | %-9s %9s %16s %4s %s\n",
               rows, "version", "prec", "fwd us", "bwd l5", "l4", "l3", "l2", "l1", "l0",
               "bwd total", "worst", "err", "borrowed/flipped", "same", "result");
        for (int prec = 0; prec < N_PREC; prec++) {
            if (only_p >= 0 && prec != only_p)
                continue;
            cublasCheck(cublasSetMathMode(g_blas, prec == 1 ? CUBLAS_TF32_TENSOR_OP_MATH
                                                            : CUBLAS_DEFAULT_MATH));
            for (int v = 1; v <= N_VERSIONS; v++) {
                if (only_v && v != only_v)
                    continue;
                runner r;
                dev_net_reset(&n, &ref);
                plan_runner(&r, &n, v, prec);
                if (!r.ok) {
                    printf("%-16s %-4s not supported: %s\n", VERSION_NAMES[v], PREC_NAMES[prec],
                           r.refused);
                    free_runner(&r);
                    continue;
                }
                dev_net_reset(&n, &ref);
                full_pass(&r);
                download(&o1, &n);
                full_pass(&r);
                download(&o2, &n);
                int same = host_out_same(&o1, &o2, rows);
                int changed;
                long long flipped;
                long long borrowed = ref_masks(&ref, &o1, PREC_BAND[prec], &changed, &flipped);
                if (changed)
                    ref_backward(&ref, 0);
                tensor_check c;
                check_all(&c, &ref, &o1, PREC_TOL[prec]);
                float us[N_LAYERS], fwd, total;
                r.layer = -2;
                fwd = 1e3f * dev_time_median_ms(run_timed, &r, DEV_RUNS);
                for (int l = N_LAYERS - 1; l >= 0; l--) {
                    r.layer = l;
                    us[l] = 1e3f * dev_time_median_ms(run_timed, &r, DEV_RUNS);
                }
                r.layer = -1;
                total = 1e3f * dev_time_median_ms(run_timed, &r, DEV_RUNS);
                int ok = !c.failed && same;
                failed |= !ok;
                printf("%-16s %-4s %8.1f | %8.1f %8.1f %8.1f %8.1f %8.1f %8.1f | %9.1f | %-9s "
                       "%9.2e %9lld/%lld %4s %s\n", VERSION_NAMES[v], PREC_NAMES[prec], fwd, us[5],
                       us[4], us[3], us[2], us[1], us[0], total, c.worst_name, c.worst, borrowed,
                       flipped, same ? "yes" : "NO", ok ? "ok" : "FAIL");
                if (r.refused[0]) /* those ran through cuBLAS + the kernels instead */
                    printf("    (%s %s) refused by cublasLt, ran as cuBLAS + kernels: %s\n",
                           VERSION_NAMES[v], PREC_NAMES[prec], r.refused);
                free_runner(&r);
            }
        }
        host_out_free(&o1);
        host_out_free(&o2);
        dev_net_free(&n);
        free_inputs(&ref);
        ref_free(&ref);
    }
    cudaFree(g_workspace);
    cublasDestroy(g_blas);
    cublasLtDestroy(g_lt);
    return failed;
}
