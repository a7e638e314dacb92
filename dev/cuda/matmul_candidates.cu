/* matmul_candidates.cu — the PPO update's matmuls: how much faster than cublasLt's first
 * heuristic choice is the fastest of its candidates?
 *
 * The update (src/cuda/update_layers.c) runs the heuristic's first candidate that runs,
 * untimed, so that every process runs the same algorithm: the forward by
 * fh_gemm_dense_typed (gemm.c), the backward by fh_gemm_matmul (gemm_matmul.c). Here each
 * such matmul, built as the product builds it (row-major (rows, w) is column-major
 * (w, rows), ld w; W (out, in) row-major is column-major (in, out), ld in), has every
 * candidate timed:
 *   fwd  y = act(x W^T + b): (T, N), m = out, n = rows, k = in, A = W (ld in), B = x
 *        (ld in), C = y (ld out); RELU_BIAS epilogue, BIAS for the actor's logits
 *   dW   (N, T), m = in, n = out, k = rows, A = x (ld in), B = g (ld out), C = dW (ld in)
 *   dX   (N, N), m = in, n = rows, k = out, A = W (ld in), B = g (ld out), C (ld in); l >= 1
 * for the critic 54 -> 512 -> 384 -> 256 -> 128 -> 64 (the 64 -> 1 value head is fused
 * into ppo_loss_kernel) and the actor 54 -> 128 -> 64 -> 45, in two configurations:
 *   bf16  16,384 rows: A, B CUDA_R_16BF, CUBLAS_COMPUTE_32F; hidden outputs (and their
 *         biases) and dX bf16, the actor's logits (and bias) and dW fp32
 *   fp32  512 rows: everything fp32, CUBLAS_COMPUTE_32F
 * Per matmul: up to 32 heuristic candidates (workspace 32 MiB, the operands' alignments
 * told as the product does; cudaMalloc'd buffers, 256 bytes); each launched once to warm
 * up (one whose launch returns an error is skipped, counted as refused), then REPS times
 * R_LAUNCHES back-to-back launches between two CUDA events, its time the median's per
 * launch (operands warm in L2). "first": the first candidate that runs (the product's);
 * "best": the fastest. The step's sums count each matmul once (not the update's other
 * kernels, nor its dW stream's overlap).
 *
 * Check: random operands (a matmul's time depends on its shape, types and alignments, not
 * its values): x, g U(-1, 1), W, b U(-1/sqrt(in), 1/sqrt(in)), bf16 ones rounded to nearest
 * even on the host before the upload and the reference. The first and best candidates'
 * outputs (C poisoned with NaN first) against a float64 CPU matmul (rounded to bf16 for a
 * bf16 output): max |got - want| / max |want| <= 1e-4 fp32, 3e-2 bf16; the best run twice
 * bit-identical. `--cpu-check` (no GPU): the reference's four transposes against op(A),
 * op(B) stored into NaN-padded buffers; the reference fed every matmul's own description
 * (transposes, m n k, lds) against row-major loops of y = act(x W^T + b), dW = g^T x,
 * dX = g W; bf16 rounding on known values.
 *
 * Build: make matmul_candidates   (-lcublasLt; OpenMP for the reference)
 * Run:   ./matmul_candidates [bf16|fp32] [rows]   (both by default);   --cpu-check
 * Prints per configuration and matmul: m n k, candidates and refused, the first's and the
 * best's us and indexes, first / best, each one's algorithm id, tile id and split-K ("a21
 * t20 sk1"; split: "sk4r2", r its reduction scheme), error ratios, bit-identity, ok /
 * FAIL; a note where the heuristic asked for one algorithm (as the product's forward asks)
 * answers other than candidate 0; every candidate's us in the heuristic's order (x:
 * refused). Then the step's sums, first choice against best, per network and in all: the
 * headline. Exit status 1 when a check fails. */
#include "common.h"

#include <cublasLt.h>
#include <omp.h>

#define MAX_CANDIDATES 32
#define R_LAUNCHES 50
#define REPS 5
#define LT_WORKSPACE_BYTES (32u << 20)
#define TOL_FP32 1e-4
#define TOL_BF16 3e-2

#define cublasCheck(call)                                                                  \
    do {                                                                                   \
        cublasStatus_t s_ = (call);                                                        \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                 \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                  \
                    cublasLtGetStatusName(s_)); /* only cublasLt is linked */          \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

/* ==== the networks (matmul layers only) ==== */
typedef struct {
    const char *name;
    int n_layers;
    int dims[6];
    int logits; /* 1: the last layer is the output (BIAS, fp32 output); 0: every layer hidden */
} net_desc;

static const net_desc NETS[2] = {
    {"critic", 5, {FH_STATE_DIM, FH_CRITIC_H1, FH_CRITIC_H2, FH_CRITIC_H3, FH_CRITIC_H4,
                   FH_CRITIC_H5}, 0},
    {"actor", 3, {FH_STATE_DIM, FH_ACTOR_H1, FH_ACTOR_H2, FH_N_ACTIONS}, 1},
};

/* ==== bf16 on the host: round to nearest even (finite values) ==== */
static uint16_t bf16_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static float bf16_float(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    return *(float *)memcpy(&f, &u, 4);
}

static float round_bf16(float f) { return bf16_float(bf16_bits(f)); }

/* ==== one layer's operands and the matmuls on them ==== */
typedef struct {
    int rows, in, out, bf16, hidden;
    float *x, *w, *b, *g; /* host, row-major: x (rows, in), W (out, in), b (out), g (rows, out) */
    void *dx, *dw, *db, *dg;   /* device copies (operand type; b: the forward output's type) */
    void *y, *dwt, *dxg;       /* device outputs: y (rows, out), dW (out, in) fp32, dX (rows, in) */
} layer_data;

enum { OP_FWD, OP_DW, OP_DX };
static const char *OP_NAMES[3] = {"fwd", "dW", "dX"};

/* C (m x n, column-major, ld ldc) = op(A) op(B) [+ bias, ReLU] */
typedef struct {
    char name[32];
    int op;
    cublasOperation_t ta, tb;
    int m, n, k, lda, ldb, ldc;
    int ab_bf16, c_bf16;
    cublasLtEpilogue_t epi;
    const float *ha, *hb, *hbias; /* host operands */
    size_t na, nb, nc;            /* A's, B's and C's buffers, elements */
    const void *a, *b, *bias;     /* device operands (NULL in --cpu-check) */
    void *c;
} matmul;

static void fill(float *v, size_t n, dev_rng *rng, float a, int bf16)
{
    for (size_t i = 0; i < n; i++) {
        float f = dev_rng_uniform(rng, -a, a);
        v[i] = bf16 ? round_bf16(f) : f;
    }
}

/* Host operands of `net`'s layer l at `rows` (seeded by configuration, net and layer). */
static void layer_make(layer_data *d, const net_desc *net, int l, int rows, int bf16)
{
    memset(d, 0, sizeof *d);
    d->rows = rows, d->in = net->dims[l], d->out = net->dims[l + 1], d->bf16 = bf16;
    d->hidden = !(net->logits && l == net->n_layers - 1);
    dev_rng rng = {20261203ull + 1000ull * (uint64_t)rows + 100ull * (net == &NETS[1]) + l};
    float a = 1.0f / sqrtf((float)d->in);
    size_t n[4] = {(size_t)rows * d->in, (size_t)d->out * d->in, (size_t)d->out,
                   (size_t)rows * d->out};
    float **v[4] = {&d->x, &d->w, &d->b, &d->g}, scale[4] = {1.0f, a, a, 1.0f};
    for (int t = 0; t < 4; t++) { /* the bias has the forward output's type */
        *v[t] = (float *)host_alloc(n[t] * 4);
        fill(*v[t], n[t], &rng, scale[t], t == 2 ? bf16 && d->hidden : bf16);
    }
}

static void *upload(const float *h, size_t n, int bf16)
{
    void *d;
    uint16_t *t = bf16 ? (uint16_t *)host_alloc(n * 2) : NULL;
    for (size_t i = 0; t && i < n; i++)
        t[i] = bf16_bits(h[i]);
    cudaCheck(cudaMalloc(&d, n * (bf16 ? 2 : 4)));
    cudaCheck(cudaMemcpy(d, t ? (const void *)t : h, n * (bf16 ? 2 : 4), cudaMemcpyHostToDevice));
    free(t);
    return d;
}

static void layer_upload(layer_data *d, int has_dx)
{
    size_t rows = (size_t)d->rows;
    int y_bf16 = d->bf16 && d->hidden;
    d->dx = upload(d->x, rows * d->in, d->bf16);
    d->dw = upload(d->w, (size_t)d->out * d->in, d->bf16);
    d->db = upload(d->b, (size_t)d->out, y_bf16);
    d->dg = upload(d->g, rows * d->out, d->bf16);
    cudaCheck(cudaMalloc(&d->y, rows * d->out * (y_bf16 ? 2 : 4)));
    cudaCheck(cudaMalloc(&d->dwt, (size_t)d->out * d->in * 4));
    if (has_dx)
        cudaCheck(cudaMalloc(&d->dxg, rows * d->in * (d->bf16 ? 2 : 4)));
}

static void layer_free(layer_data *d)
{
    void *dev[7] = {d->dx, d->dw, d->db, d->dg, d->y, d->dwt, d->dxg};
    float *host[4] = {d->x, d->w, d->b, d->g};
    for (int i = 0; i < 7; i++)
        if (dev[i]) /* none in --cpu-check: no CUDA call there */
            cudaFree(dev[i]);
    for (int i = 0; i < 4; i++)
        free(host[i]);
}

static void set_mm(matmul *p, const char *net, int l, int op, cublasOperation_t ta,
                   cublasOperation_t tb, int m, int n, int k, int lda, int ldb, int ldc)
{
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s L%d %s", net, l, OP_NAMES[op]);
    p->op = op, p->ta = ta, p->tb = tb, p->epi = CUBLASLT_EPILOGUE_DEFAULT;
    p->m = m, p->n = n, p->k = k, p->lda = lda, p->ldb = ldb, p->ldc = ldc;
}

/* Layer l's matmuls as the product runs them: the forward, dW, and dX where l >= 1.
 * Returns how many (2 or 3). */
static int layer_matmuls(const layer_data *d, const char *net, int l, matmul *mm)
{
    int rows = d->rows, in = d->in, out = d->out;
    matmul *p = &mm[0]; /* fh_gemm_dense_typed: y^T = W x^T */
    set_mm(p, net, l, OP_FWD, CUBLAS_OP_T, CUBLAS_OP_N, out, rows, in, in, in, out);
    p->ab_bf16 = d->bf16;
    p->c_bf16 = d->bf16 && d->hidden;
    p->epi = d->hidden ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
    p->ha = d->w, p->hb = d->x, p->hbias = d->b;
    p->na = (size_t)out * in, p->nb = (size_t)rows * in, p->nc = (size_t)rows * out;
    p->a = d->dw, p->b = d->dx, p->bias = d->db, p->c = d->y;
    p = &mm[1]; /* backward_from: dW^T = X^T g, always fp32 */
    set_mm(p, net, l, OP_DW, CUBLAS_OP_N, CUBLAS_OP_T, in, out, rows, in, out, in);
    p->ab_bf16 = d->bf16;
    p->ha = d->x, p->hb = d->g;
    p->na = (size_t)rows * in, p->nb = (size_t)rows * out, p->nc = (size_t)out * in;
    p->a = d->dx, p->b = d->dg, p->c = d->dwt;
    if (l == 0)
        return 2;
    p = &mm[2]; /* dX^T = W^T g^T, of the operand type */
    set_mm(p, net, l, OP_DX, CUBLAS_OP_N, CUBLAS_OP_N, in, rows, out, in, out, in);
    p->ab_bf16 = p->c_bf16 = d->bf16;
    p->ha = d->w, p->hb = d->g;
    p->na = (size_t)out * in, p->nb = (size_t)rows * out, p->nc = (size_t)rows * in;
    p->a = d->dw, p->b = d->dg, p->c = d->dxg;
    return 3;
}

/* ==== the float64 reference: C = op(A) op(B) (+ bias, ReLU), column-major ==== */
/* 1 when A, B and C lie inside their buffers as described, each ld at least its matrix's
 * stored rows (cublasLt's rule): the reference reads nothing else */
static int mm_fits(const matmul *p)
{
    int ar = p->ta == CUBLAS_OP_N ? p->m : p->k, ac = p->ta == CUBLAS_OP_N ? p->k : p->m;
    int br = p->tb == CUBLAS_OP_N ? p->k : p->n, bc = p->tb == CUBLAS_OP_N ? p->n : p->k;
    return p->m > 0 && p->n > 0 && p->k > 0 && p->lda >= ar && p->ldb >= br &&
           p->ldc >= p->m && (size_t)p->lda * (ac - 1) + ar <= p->na &&
           (size_t)p->ldb * (bc - 1) + br <= p->nb && (size_t)p->ldc * (p->n - 1) + p->m <= p->nc;
}

static void ref_matmul(const matmul *p, double *c)
{
    /* column-major: op(A)(i, q) = A[i + q lda] (N) or A[q + i lda] (T); op(B)(q, j) likewise */
    size_t ai = p->ta == CUBLAS_OP_N ? 1 : p->lda, aq = p->ta == CUBLAS_OP_N ? p->lda : 1;
    size_t bq = p->tb == CUBLAS_OP_N ? 1 : p->ldb, bj = p->tb == CUBLAS_OP_N ? p->ldb : 1;
#pragma omp parallel for schedule(dynamic, 16)
    for (int j = 0; j < p->n; j++) {
        double *cj = c + (size_t)j * p->ldc;
        for (int i = 0; i < p->m; i++)
            cj[i] = 0.0;
        for (int q = 0; q < p->k; q++) { /* column j += op(A)'s column q x op(B)(q, j) */
            double b = p->hb[q * bq + j * bj];
            const float *a = p->ha + q * aq;
            for (int i = 0; i < p->m; i++)
                cj[i] += a[i * ai] * b;
        }
        if (p->epi != CUBLASLT_EPILOGUE_DEFAULT)
            for (int i = 0; i < p->m; i++) {
                double v = cj[i] + p->hbias[i];
                cj[i] = p->epi == CUBLASLT_EPILOGUE_RELU_BIAS && v < 0.0 ? 0.0 : v;
            }
    }
}

/* max |got - want| / max |want| over C; got raw fp32 or bf16, want rounded to bf16 for a
 * bf16 output; NaN anywhere: infinity */
static double out_ratio(const matmul *p, const void *raw, const double *want)
{
    double max_err = 0.0, max_want = 0.0;
    for (int j = 0; j < p->n; j++)
        for (int i = 0; i < p->m; i++) {
            size_t at = i + (size_t)j * p->ldc;
            double got = p->c_bf16 ? bf16_float(((const uint16_t *)raw)[at])
                                   : ((const float *)raw)[at];
            double w = p->c_bf16 ? round_bf16((float)want[at]) : want[at];
            if (isnan(got))
                return INFINITY;
            max_err = fmax(max_err, fabs(got - w));
            max_want = fmax(max_want, fabs(w));
        }
    return max_err / (max_want > 0.0 ? max_want : 1.0);
}

/* ==== --cpu-check: the reference's layouts against row-major loops ==== */
static int cpu_check_layer(const net_desc *net, int l, int rows, int bf16)
{
    layer_data d;
    matmul mm[3];
    layer_make(&d, net, l, rows, bf16);
    int n_mm = layer_matmuls(&d, net->name, l, mm), failed = 0;
    for (int t = 0; t < n_mm; t++) {
        const matmul *p = &mm[t];
        int in = d.in, out = d.out;
        /* the row-major result: (rows, out), (out, in) or (rows, in) */
        int n_r = p->op == OP_DW ? out : rows, n_c = p->op == OP_FWD ? out : in;
        if (!mm_fits(p) || p->nc != (size_t)n_r * n_c) {
            printf("cpu-check %s (%s): operands outside their buffers  FAIL\n", p->name,
                   bf16 ? "bf16" : "fp32");
            failed = 1;
            continue;
        }
        double *c = (double *)host_alloc(p->nc * 8);
        ref_matmul(p, c);
        double max_err = 0.0, max_want = 0.0;
        for (int r = 0; r < n_r; r++)
            for (int q = 0; q < n_c; q++) {
                double s = 0.0;
                if (p->op == OP_FWD) { /* y[r][q] = act(sum_k x[r][k] W[q][k] + b[q]) */
                    for (int k = 0; k < in; k++)
                        s += (double)d.x[(size_t)r * in + k] * d.w[(size_t)q * in + k];
                    s += d.b[q];
                    s = d.hidden && s < 0.0 ? 0.0 : s;
                } else if (p->op == OP_DW) { /* dW[r][q] = sum_i g[i][r] x[i][q] */
                    for (int i = 0; i < rows; i++)
                        s += (double)d.g[(size_t)i * out + r] * d.x[(size_t)i * in + q];
                } else { /* dX[r][q] = sum_o g[r][o] W[o][q] */
                    for (int o = 0; o < out; o++)
                        s += (double)d.g[(size_t)r * out + o] * d.w[(size_t)o * in + q];
                }
                /* row-major (n_r, n_c) is column-major (n_c, n_r), ld n_c: C's layout */
                max_err = fmax(max_err, fabs(c[q + (size_t)r * n_c] - s));
                max_want = fmax(max_want, fabs(s));
            }
        double ratio = max_err / (max_want > 0.0 ? max_want : 1.0);
        int bad = !(ratio <= 1e-12) || max_want == 0.0;
        failed |= bad;
        printf("cpu-check %-16s %s  %s %s  m %4d n %4d k %4d  ld %4d %4d %4d  rows %2d  "
               "err %.1e  %s\n", p->name, bf16 ? "bf16" : "fp32", p->ta == CUBLAS_OP_T ? "T" : "N",
               p->tb == CUBLAS_OP_T ? "T" : "N", p->m, p->n, p->k, p->lda, p->ldb, p->ldc, rows,
               ratio, bad ? "FAIL" : "ok");
        free(c);
    }
    layer_free(&d);
    return failed;
}

/* ref_matmul's four transposes, padded leading dimensions: op(A) and op(B) drawn first,
 * then stored by the layout into buffers of NaN (a read of the padding poisons C) */
static int cpu_check_transposes(void)
{
    enum { M = 4, N = 5, K = 3, PAD = 2, MAXLD = 5 + PAD };
    dev_rng rng = {20261204ull};
    int failed = 0;
    for (int t = 0; t < 4; t++) {
        matmul p;
        float a[MAXLD * MAXLD], b[MAXLD * MAXLD], bias[M], oa[M][K], ob[K][N];
        double c[(M + PAD) * N];
        set_mm(&p, "op", t, OP_FWD, t & 1 ? CUBLAS_OP_T : CUBLAS_OP_N,
               t & 2 ? CUBLAS_OP_T : CUBLAS_OP_N, M, N, K, 0, 0, M + PAD);
        p.lda = (p.ta == CUBLAS_OP_N ? M : K) + PAD, p.ldb = (p.tb == CUBLAS_OP_N ? K : N) + PAD;
        p.na = p.nb = MAXLD * MAXLD, p.nc = (M + PAD) * N, p.epi = CUBLASLT_EPILOGUE_RELU_BIAS;
        p.ha = a, p.hb = b, p.hbias = bias;
        for (int i = 0; i < MAXLD * MAXLD; i++)
            a[i] = b[i] = NAN;
        fill(bias, M, &rng, 1.0f, 0);
        fill(&oa[0][0], M * K, &rng, 1.0f, 0);
        fill(&ob[0][0], K * N, &rng, 1.0f, 0);
        for (int i = 0; i < M; i++) /* A is op(A) (ta N) or its transpose, column-major */
            for (int q = 0; q < K; q++)
                a[p.ta == CUBLAS_OP_N ? i + q * p.lda : q + i * p.lda] = oa[i][q];
        for (int q = 0; q < K; q++)
            for (int j = 0; j < N; j++)
                b[p.tb == CUBLAS_OP_N ? q + j * p.ldb : j + q * p.ldb] = ob[q][j];
        int fits = mm_fits(&p);
        double max_err = fits ? 0.0 : INFINITY;
        if (fits)
            ref_matmul(&p, c);
        for (int i = 0; i < M && fits; i++)
            for (int j = 0; j < N; j++) {
                double s = bias[i];
                for (int q = 0; q < K; q++)
                    s += (double)oa[i][q] * ob[q][j];
                double e = fabs(c[i + j * p.ldc] - (s < 0.0 ? 0.0 : s));
                max_err = fmax(max_err, isnan(e) ? INFINITY : e);
            }
        failed |= !(max_err <= 1e-12);
        printf("cpu-check reference %s %s, lds padded: err %.1e  %s\n", t & 1 ? "T" : "N",
               t & 2 ? "T" : "N", max_err, max_err <= 1e-12 ? "ok" : "FAIL");
    }
    return failed;
}

static int cpu_check(void)
{
    /* bf16 rounding: ties to even, above half up, the sign kept */
    const float h = 1.0f / 256.0f; /* half of bf16's ulp at 1 */
    const float in[5] = {1.0f, 1.0f + h, 1.0f + 3 * h, 1.0f + h + 1.0f / 1048576.0f,
                         -(1.0f + 3 * h)};
    const float want[5] = {1.0f, 1.0f, 1.0f + 4 * h, 1.0f + 2 * h, -(1.0f + 4 * h)};
    int failed = 0;
    for (int i = 0; i < 5; i++)
        failed |= round_bf16(in[i]) != want[i];
    printf("cpu-check bf16 rounding on 5 values  %s\n", failed ? "FAIL" : "ok");
    failed |= cpu_check_transposes();
    static const net_desc small = {"small", 2, {5, 7, 3}, 1};
    for (int bf16 = 0; bf16 < 2; bf16++) {
        for (int l = 0; l < small.n_layers; l++)
            failed |= cpu_check_layer(&small, l, 11, bf16);
        for (int ni = 0; ni < 2; ni++)
            for (int l = 0; l < NETS[ni].n_layers; l++)
                failed |= cpu_check_layer(&NETS[ni], l, 13, bf16);
    }
    printf("cpu-check: %s\n", failed ? "FAIL" : "ok");
    return failed;
}

/* ==== cublasLt: one matmul's descriptors, candidates, launches ==== */
static cublasLtHandle_t g_lt;
static void *g_workspace;
static cudaEvent_t g_ev[2];

typedef struct {
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc;
} lt_plan;

/* the largest power of two (<= 256) dividing the address (gemm.c's
 * fh_gemm_pointer_alignment) */
static uint32_t pointer_alignment(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    uint32_t align = 256;
    while (align > 2 && a % align != 0)
        align /= 2;
    return align;
}

#define DESC_ATTR(attr, value)                                                             \
    cublasCheck(cublasLtMatmulDescSetAttribute(pl->op, attr, &(value), sizeof(value)))

/* The descriptors as the product builds them, and the heuristic's candidates; *one_differs:
 * asked for one algorithm (as the product's forward asks), it answers other than h[0]. */
static int lt_candidates(const matmul *p, lt_plan *pl, cublasLtMatmulHeuristicResult_t *h,
                         int *one_differs)
{
    cudaDataType_t ab = p->ab_bf16 ? CUDA_R_16BF : CUDA_R_32F;
    cudaDataType_t ct = p->c_bf16 ? CUDA_R_16BF : CUDA_R_32F;
    cublasCheck(cublasLtMatmulDescCreate(&pl->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    DESC_ATTR(CUBLASLT_MATMUL_DESC_TRANSA, p->ta);
    DESC_ATTR(CUBLASLT_MATMUL_DESC_TRANSB, p->tb);
    if (p->epi != CUBLASLT_EPILOGUE_DEFAULT) {
        DESC_ATTR(CUBLASLT_MATMUL_DESC_EPILOGUE, p->epi);
        DESC_ATTR(CUBLASLT_MATMUL_DESC_BIAS_POINTER, p->bias);
    }
    int a_rows = p->ta == CUBLAS_OP_N ? p->m : p->k, a_cols = p->ta == CUBLAS_OP_N ? p->k : p->m;
    int b_rows = p->tb == CUBLAS_OP_N ? p->k : p->n, b_cols = p->tb == CUBLAS_OP_N ? p->n : p->k;
    cublasCheck(cublasLtMatrixLayoutCreate(&pl->la, ab, a_rows, a_cols, p->lda));
    cublasCheck(cublasLtMatrixLayoutCreate(&pl->lb, ab, b_rows, b_cols, p->ldb));
    cublasCheck(cublasLtMatrixLayoutCreate(&pl->lc, ct, p->m, p->n, p->ldc));
    cublasLtMatmulPreference_t pref;
    size_t ws = LT_WORKSPACE_BYTES;
    cublasCheck(cublasLtMatmulPreferenceCreate(&pref));
    cublasCheck(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                     &ws, sizeof ws));
    uint32_t align[4] = {pointer_alignment(p->a), pointer_alignment(p->b),
                         pointer_alignment(p->c), pointer_alignment(p->c)};
    const cublasLtMatmulPreferenceAttributes_t which[4] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    for (int i = 0; i < 4; i++)
        cublasCheck(cublasLtMatmulPreferenceSetAttribute(pref, which[i], &align[i],
                                                         sizeof align[i]));
    int found = 0, n1 = 0;
    cublasLtMatmulHeuristicResult_t one;
    cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(g_lt, pl->op, pl->la, pl->lb, pl->lc,
                                                       pl->lc, pref, MAX_CANDIDATES, h, &found);
    if (st != CUBLAS_STATUS_NOT_SUPPORTED)
        cublasCheck(st);
    found = st == CUBLAS_STATUS_SUCCESS ? found : 0;
    *one_differs = found > 0 &&
                   (cublasLtMatmulAlgoGetHeuristic(g_lt, pl->op, pl->la, pl->lb, pl->lc, pl->lc,
                                                   pref, 1, &one, &n1) != CUBLAS_STATUS_SUCCESS ||
                    n1 != 1 || memcmp(&one.algo, &h[0].algo, sizeof one.algo) != 0);
    cublasLtMatmulPreferenceDestroy(pref);
    return found;
}

static void lt_plan_free(lt_plan *pl)
{
    cublasLtMatrixLayoutDestroy(pl->lc);
    cublasLtMatrixLayoutDestroy(pl->lb);
    cublasLtMatrixLayoutDestroy(pl->la);
    cublasLtMatmulDescDestroy(pl->op);
}

static cublasStatus_t lt_launch(const matmul *p, const lt_plan *pl,
                                const cublasLtMatmulAlgo_t *algo)
{
    const float one = 1.0f, zero = 0.0f;
    return cublasLtMatmul(g_lt, pl->op, &one, p->a, pl->la, p->b, pl->lb, &zero, p->c, pl->lc,
                          p->c, pl->lc, algo, g_workspace, LT_WORKSPACE_BYTES, 0);
}

/* A candidate's median us per launch; -1 when its warm-up launch returns an error. */
static float time_candidate(const matmul *p, const lt_plan *pl, const cublasLtMatmulAlgo_t *algo)
{
    float us[REPS];
    if (lt_launch(p, pl, algo) != CUBLAS_STATUS_SUCCESS)
        return -1.0f;
    cudaCheck(cudaDeviceSynchronize());
    for (int r = 0; r < REPS; r++) {
        cudaCheck(cudaEventRecord(g_ev[0]));
        for (int i = 0; i < R_LAUNCHES; i++)
            cublasCheck(lt_launch(p, pl, algo));
        cudaCheck(cudaEventRecord(g_ev[1]));
        cudaCheck(cudaEventSynchronize(g_ev[1]));
        float ms = 0.0f;
        cudaCheck(cudaEventElapsedTime(&ms, g_ev[0], g_ev[1]));
        us[r] = 1e3f * ms / R_LAUNCHES;
    }
    qsort(us, REPS, sizeof us[0], dev_cmp_float);
    return us[REPS / 2];
}

/* One launch on C poisoned with NaN; C's bytes into raw. */
static void run_once(const matmul *p, const lt_plan *pl, const cublasLtMatmulAlgo_t *algo,
                     void *raw, size_t bytes)
{
    cudaCheck(cudaMemset(p->c, 0xff, bytes));
    cublasCheck(lt_launch(p, pl, algo));
    cudaCheck(cudaMemcpy(raw, p->c, bytes, cudaMemcpyDeviceToHost));
}

/* "a<algo id> t<tile id> sk<split-K>" (tile: cublasLt.h's cublasLtMatmulTile_t, e.g. 20
 * 128x128), "r<reduction scheme>" after a split */
static void algo_desc(const cublasLtMatmulAlgo_t *a, char *buf, size_t n)
{
    const cublasLtMatmulAlgoConfigAttributes_t which[4] = {
        CUBLASLT_ALGO_CONFIG_ID, CUBLASLT_ALGO_CONFIG_TILE_ID, CUBLASLT_ALGO_CONFIG_SPLITK_NUM,
        CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME}; /* int32, uint32, int32, uint32 */
    int32_t v[4] = {0, 0, 1, 0};
    size_t w;
    for (int i = 0; i < 4; i++)
        cublasCheck(cublasLtMatmulAlgoConfigGetAttribute(a, which[i], &v[i], sizeof v[i], &w));
    if (v[2] > 1)
        snprintf(buf, n, "a%d t%d sk%dr%d", v[0], v[1], v[2], v[3]);
    else
        snprintf(buf, n, "a%d t%d sk1", v[0], v[1]);
}

/* ==== one matmul measured and checked ==== */
typedef struct {
    double first_us[2], best_us[2]; /* per network */
    int n_mm[2], missing, failed;
} step_sums;

static void measure(const matmul *p, int net, step_sums *s)
{
    lt_plan pl;
    cublasLtMatmulHeuristicResult_t h[MAX_CANDIDATES];
    int one_differs, refused = 0, first = -1, best = -1;
    int found = lt_candidates(p, &pl, h, &one_differs);
    float us[MAX_CANDIDATES];
    for (int c = 0; c < found; c++) {
        us[c] = time_candidate(p, &pl, &h[c].algo);
        if (us[c] < 0.0f) {
            refused++;
            continue;
        }
        if (first < 0)
            first = c;
        if (best < 0 || us[c] < us[best])
            best = c;
    }
    if (first < 0) {
        printf("%-16s %5d %6d %6d %4d %3d  no candidate ran (the product falls back to "
               "cuBLAS)\n", p->name, p->m, p->n, p->k, found, refused);
        s->missing++;
        lt_plan_free(&pl);
        return;
    }
    size_t bytes = p->nc * (p->c_bf16 ? 2 : 4);
    void *raw1 = host_alloc(bytes), *raw2 = host_alloc(bytes);
    double *want = (double *)host_alloc(p->nc * 8);
    ref_matmul(p, want);
    run_once(p, &pl, &h[first].algo, raw1, bytes);
    double err_first = out_ratio(p, raw1, want);
    run_once(p, &pl, &h[best].algo, raw1, bytes);
    double err_best = out_ratio(p, raw1, want);
    run_once(p, &pl, &h[best].algo, raw2, bytes);
    int same = !memcmp(raw1, raw2, bytes);
    double tol = p->ab_bf16 ? TOL_BF16 : TOL_FP32;
    int ok = err_first <= tol && err_best <= tol && same;
    char fd[40], bd[40];
    algo_desc(&h[first].algo, fd, sizeof fd);
    algo_desc(&h[best].algo, bd, sizeof bd);
    printf("%-16s %5d %6d %6d %4d %3d %8.2f %2d %8.2f %2d %6.3f  %-18s %-18s %8.1e %8.1e %4s "
           "%s\n", p->name, p->m, p->n, p->k, found, refused, us[first], first, us[best], best,
           us[first] / us[best], fd, bd, err_first, err_best, same ? "yes" : "NO",
           ok ? "ok" : "FAIL");
    if (one_differs) /* the product's forward asks for one: not the first of 32 */
        printf("    (asked for one algorithm, the heuristic answers other than candidate 0)\n");
    printf("    us:");
    for (int c = 0; c < found; c++)
        if (us[c] < 0.0f)
            printf(" x");
        else
            printf(" %.2f", us[c]);
    printf("\n");
    s->first_us[net] += us[first];
    s->best_us[net] += us[best];
    s->n_mm[net]++;
    s->failed |= !ok;
    free(raw1);
    free(raw2);
    free(want);
    lt_plan_free(&pl);
}

/* Every matmul of one configuration; returns 1 when a check failed. */
static int run_config(int bf16, int rows)
{
    step_sums s;
    memset(&s, 0, sizeof s);
    printf("\n%s, %d rows (%s)\n", bf16 ? "bf16" : "fp32", rows,
           bf16 ? "A, B bf16; hidden outputs and dX bf16; logits and dW fp32; compute 32F"
                : "everything fp32; compute 32F");
    printf("%-16s %5s %6s %6s %4s %3s %8s %2s %8s %2s %6s  %-18s %-18s %8s %8s %4s %s\n",
           "matmul", "m", "n", "k", "cand", "ref", "first us", "#", "best us", "#", "f/b",
           "first algo", "best algo", "err f", "err b", "same", "check");
    for (int ni = 0; ni < 2; ni++)
        for (int l = 0; l < NETS[ni].n_layers; l++) {
            layer_data d;
            matmul mm[3];
            layer_make(&d, &NETS[ni], l, rows, bf16);
            layer_upload(&d, l > 0);
            int n_mm = layer_matmuls(&d, NETS[ni].name, l, mm);
            for (int t = 0; t < n_mm; t++)
                measure(&mm[t], ni, &s);
            layer_free(&d);
        }
    double f = s.first_us[0] + s.first_us[1], b = s.best_us[0] + s.best_us[1];
    printf("%s, %d rows: the step's %d matmuls, each once: first choice %.1f us, best %.1f us, "
           "first / best %.3f (%.1f us, %.1f%% of the first choice's time)\n",
           bf16 ? "bf16" : "fp32", rows, s.n_mm[0] + s.n_mm[1], f, b, b > 0 ? f / b : 0.0, f - b,
           f > 0 ? 100.0 * (f - b) / f : 0.0);
    for (int ni = 0; ni < 2; ni++)
        printf("    %-6s %2d matmuls: first %.1f us, best %.1f us, first / best %.3f\n",
               NETS[ni].name, s.n_mm[ni], s.first_us[ni], s.best_us[ni],
               s.best_us[ni] > 0 ? s.first_us[ni] / s.best_us[ni] : 0.0);
    if (s.missing)
        printf("    %d matmul(s) with no candidate that ran: left out of the sums\n", s.missing);
    return s.failed;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--cpu-check"))
        return cpu_check();
    int only = 0; /* 1 bf16, 2 fp32 */
    if (argc > 1) {
        only = !strcmp(argv[1], "bf16") ? 1 : !strcmp(argv[1], "fp32") ? 2 : -1;
        if (only < 0) {
            fprintf(stderr, "usage: %s [bf16|fp32] [rows] | --cpu-check\n", argv[0]);
            return 2;
        }
    }
    int rows_arg = argc > 2 ? atoi(argv[2]) : 0;
    dev_print_device();
    printf("cublasLt %d, %d CPU threads for the reference; us: median of %d runs of %d "
           "back-to-back launches, per launch, after a warm-up; up to %d candidates\n",
           (int)cublasLtGetVersion(), omp_get_max_threads(), REPS, R_LAUNCHES, MAX_CANDIDATES);
    cublasCheck(cublasLtCreate(&g_lt));
    cudaCheck(cudaMalloc(&g_workspace, LT_WORKSPACE_BYTES));
    cudaCheck(cudaEventCreate(&g_ev[0]));
    cudaCheck(cudaEventCreate(&g_ev[1]));
    int failed = 0;
    if (only != 2)
        failed |= run_config(1, rows_arg > 0 ? rows_arg : 16384);
    if (only != 1)
        failed |= run_config(0, rows_arg > 0 ? rows_arg : 512);
    cudaFree(g_workspace);
    cublasLtDestroy(g_lt);
    return failed;
}
