/* update_layers.c — see update_layers.h. */
#include "cuda/update_layers.h"

#include <stdint.h>
#include <string.h>

#include "cuda/cuda_check.h"
#include "cuda/pdl_launch.h"
#include "cuda/update_plan.h"
#include "cuda/kernels/q_update_args.h"
#include "cuda/kernels/update_args.h"

#define BLAS_WORKSPACE_BYTES (32u << 20)
#define ELEMENTWISE_THREADS 256
#define ELEMENTWISE_MAX_BLOCKS 1024 /* the elementwise kernels' grid-stride loops */

fh_status fh_update_blas_init(fh_update_blas *b, cudaStream_t stream, int precision,
                              cudaKernel_t bias_grad, cudaKernel_t bias_act, fh_error *err)
{
    memset(b, 0, sizeof *b);
    b->stream = stream;
    b->bias_grad = bias_grad;
    b->bias_act = bias_act;
    fh_status st = fh_gemm_init(&b->lt, precision, 0, 1, NULL, err); /* no timing: determinism */
    if (st != FH_OK) {
        fh_update_blas_free(b);
        return st;
    }
    CUDA_CHECK(cudaMalloc(&b->workspace, BLAS_WORKSPACE_BYTES), err);
    CUBLAS_CHECK(cublasCreate(&b->blas), err);
    CUBLAS_CHECK(cublasSetStream(b->blas, stream), err);
    CUBLAS_CHECK(cublasSetWorkspace(b->blas, b->workspace, BLAS_WORKSPACE_BYTES), err);
    /* every matmul names its compute type (gemm below), so the handle's math mode adds
     * nothing */
    b->compute = fh_gemm_compute_type(precision);
    b->operand = fh_gemm_operand_type(precision);
    CUBLAS_CHECK(cublasSetMathMode(b->blas, CUBLAS_DEFAULT_MATH), err);
    CUBLAS_CHECK(cublasSetAtomicsMode(b->blas, CUBLAS_ATOMICS_NOT_ALLOWED), err);
    return FH_OK;
fail:
    fh_update_blas_free(b);
    return err->status;
}

void fh_update_blas_set_hidden(fh_update_blas *b, cudaKernel_t forward, cudaKernel_t backward)
{
    b->hidden_fwd = forward;
    b->hidden_bwd = backward;
}

void fh_update_blas_set_pdl(fh_update_blas *b, int pdl)
{
    b->pdl = pdl;
}

void fh_update_blas_set_bf16(fh_update_blas *b, cudaKernel_t to_bf16, cudaKernel_t bias_grad16,
                             cudaKernel_t bias_grad16_wide)
{
    b->to_bf16 = to_bf16;
    b->bias_grad16 = bias_grad16;
    b->bias_grad16_wide = bias_grad16_wide;
}

void fh_update_blas_set_split_bias(fh_update_blas *b, cudaKernel_t relu_mask, int split)
{
    b->relu_mask = relu_mask;
    b->split_bias = split && relu_mask;
}

void fh_update_blas_free(fh_update_blas *b)
{
    if (b->blas)
        cublasDestroy(b->blas);
    cudaFree(b->workspace);
    fh_gemm_free(&b->lt);
    memset(b, 0, sizeof *b);
}

/* C (m, n) = op(A) op(B), column-major, A and B of the handle's operand type, C bf16
 * (c_bf16) or fp32, at the handle's precision. */
static cublasStatus_t gemm(const fh_update_blas *b, cublasOperation_t ta, cublasOperation_t tb,
                           int m, int n, int k, const void *A, int lda, const void *B, int ldb,
                           void *C, int ldc, int c_bf16)
{
    const float one = 1.0f, zero = 0.0f;
    return cublasGemmEx(b->blas, ta, tb, m, n, k, &one, A, b->operand, lda, B, b->operand, ldb,
                        &zero, C, c_bf16 ? CUDA_R_16BF : CUDA_R_32F, ldc, b->compute,
                        CUBLAS_GEMM_DEFAULT);
}

/* The same through cublasLt (fh_gemm_matmul, b's own handle and workspace), or through
 * cuBLAS where cublasLt has no algorithm that runs for the shape. */
static fh_status matmul(fh_update_blas *b, cublasOperation_t ta, cublasOperation_t tb, int m,
                        int n, int k, const void *A, int lda, const void *B, int ldb, void *C,
                        int ldc, int c_bf16, fh_error *err)
{
    int ran = 0;
    fh_status st = fh_gemm_matmul(&b->lt, b->stream, ta, tb, m, n, k, A, lda, B, ldb, C, ldc,
                                  c_bf16, &ran, err);
    if (st != FH_OK || ran)
        return st;
    CUBLAS_CHECK(gemm(b, ta, tb, m, n, k, A, lda, B, ldb, C, ldc, c_bf16), err);
    return FH_OK;
fail:
    return err->status;
}

/* A column sum's scratch for `width` columns of max_rows rows (bias_grad_kernel's). */
static fh_status alloc_column_sums(double **partials, unsigned **counters, int width,
                                   int max_rows, fh_error *err)
{
    size_t chunks = ((size_t)max_rows + FH_BIAS_GRAD_CHUNK - 1) / FH_BIAS_GRAD_CHUNK;
    size_t tiles = ((size_t)width + 31) / 32;
    CUDA_CHECK(cudaMalloc((void **)partials, chunks * width * sizeof(double)), err);
    CUDA_CHECK(cudaMalloc((void **)counters, tiles * sizeof(unsigned)), err);
    CUDA_CHECK(cudaMemset(*counters, 0, tiles * sizeof(unsigned)), err);
    return FH_OK;
fail:
    return err->status;
}

static int has_norm(const fh_net_desc *d, int layer)
{
    return d->layer_norm && layer < d->n_layers - 1;
}

fh_status fh_device_mlp_init(fh_device_mlp *m, fh_net_kind kind, float *params, float *grads,
                             unsigned short *params16, int max_rows, fh_error *err)
{
    memset(m, 0, sizeof *m);
    m->desc = fh_net_desc_get(kind);
    fh_net_tensors(m->tensors, m->desc);
    m->params = params;
    m->grads = grads;
    m->params16 = params16;
    m->max_rows = max_rows;
    m->q_hidden = m->desc->hidden_act == FH_ACT_LEAKY_RELU || m->desc->layer_norm;
    if (params16 && m->q_hidden)
        return fh_error_set(err, FH_ERR_INPUT, "%s: bf16 is the PPO networks' precision (ReLU "
                            "layers); this network takes fp32 or tf32", m->desc->name);
    int L = m->desc->n_layers;
    fh_status st = FH_OK;
    size_t rows16 = (size_t)max_rows * sizeof(unsigned short);
    m->ld16 = FH_BF16_LD(m->desc->dims[0]);
    if (params16) { /* the padding stays zero: every copy writes the first dims[0] only */
        CUDA_CHECK(cudaMalloc((void **)&m->input16, rows16 * m->ld16), err);
        CUDA_CHECK(cudaMemset(m->input16, 0, rows16 * m->ld16), err);
        if (m->ld16 > m->desc->dims[0]) {
            size_t w0 = (size_t)m->desc->dims[1] * m->ld16 * sizeof(unsigned short);
            CUDA_CHECK(cudaMalloc((void **)&m->w0_16, w0), err);
            CUDA_CHECK(cudaMemset(m->w0_16, 0, w0), err);
        }
    }
    for (int l = 0; l < L; l++) {
        int width = m->desc->dims[l + 1], hidden = l < L - 1;
        size_t bytes = (size_t)max_rows * width * sizeof(float);
        if (params16) { /* bf16: the hidden outputs and every pre-activation gradient */
            if (hidden)
                CUDA_CHECK(cudaMalloc((void **)&m->act16[l + 1], rows16 * width), err);
            if (grads)
                CUDA_CHECK(cudaMalloc((void **)&m->g16[l], rows16 * width), err);
        }
        if (!params16 || !hidden)
            CUDA_CHECK(cudaMalloc((void **)&m->act[l + 1], bytes), err);
        if (has_norm(m->desc, l)) {
            CUDA_CHECK(cudaMalloc((void **)&m->norm_in[l], bytes), err);
            CUDA_CHECK(cudaMalloc((void **)&m->norm_mean[l], (size_t)max_rows * sizeof(float)), err);
            CUDA_CHECK(cudaMalloc((void **)&m->norm_rstd[l], (size_t)max_rows * sizeof(float)), err);
        }
        if (!grads)
            continue; /* forward only */
        if (hidden && !params16)
            CUDA_CHECK(cudaMalloc((void **)&m->dz[l], bytes), err);
        if ((st = alloc_column_sums(&m->bias_partials[l], &m->bias_counters[l], width, max_rows,
                                    err)) != FH_OK)
            goto fail_status;
        if (!has_norm(m->desc, l))
            continue;
        CUDA_CHECK(cudaMalloc((void **)&m->dxhat[l], bytes), err);
        CUDA_CHECK(cudaMalloc((void **)&m->dnorm_in[l], bytes), err);
        for (int k = 0; k < 2; k++)
            if ((st = alloc_column_sums(&m->norm_partials[l][k], &m->norm_counters[l][k], width,
                                        max_rows, err)) != FH_OK)
                goto fail_status;
    }
    for (int l = 0; l <= L; l++)
        CUDA_CHECK(cudaEventCreateWithFlags(&m->ev[l], cudaEventDisableTiming), err);
    return FH_OK;
fail:
fail_status:
    fh_device_mlp_free(m);
    return err->status;
}

void fh_device_mlp_free(fh_device_mlp *m)
{
    cudaFree(m->input16);
    cudaFree(m->w0_16);
    for (int l = 0; l <= FH_NN_MAX_LAYERS; l++) {
        cudaFree(m->act[l]);
        cudaFree(m->act16[l]);
        if (l < FH_NN_MAX_LAYERS) {
            cudaFree(m->dz[l]);
            cudaFree(m->g16[l]);
            cudaFree(m->bias_partials[l]);
            cudaFree(m->bias_counters[l]);
            void *norm[] = {m->norm_in[l], m->norm_mean[l], m->norm_rstd[l], m->dxhat[l],
                            m->dnorm_in[l], m->norm_partials[l][0], m->norm_partials[l][1],
                            m->norm_counters[l][0], m->norm_counters[l][1]};
            for (size_t k = 0; k < sizeof norm / sizeof norm[0]; k++)
                cudaFree(norm[k]);
        }
        if (m->ev[l])
            cudaEventDestroy(m->ev[l]);
    }
    memset(m, 0, sizeof *m);
}

static fh_status check_rows(const fh_device_mlp *m, int rows, fh_error *err)
{
    if (rows < 1 || rows > m->max_rows)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: %s: %d rows, sized for %d", __FILE__,
                            __LINE__, m->desc->name, rows, m->max_rows);
    return FH_OK;
}

/* An elementwise kernel (a grid-stride loop over `items`) on b's stream: a thread an
 * item, at most ELEMENTWISE_MAX_BLOCKS blocks. */
static fh_status launch_flat(fh_update_blas *b, cudaKernel_t kernel, void *args, long long items,
                             fh_error *err)
{
    void *params[] = {args};
    long long blocks = (items + ELEMENTWISE_THREADS - 1) / ELEMENTWISE_THREADS;
    dim3 grid = {(unsigned)(blocks < ELEMENTWISE_MAX_BLOCKS ? blocks : ELEMENTWISE_MAX_BLOCKS), 1, 1};
    dim3 block = {ELEMENTWISE_THREADS, 1, 1};
    CUDA_CHECK(fh_pdl_launch((const void *)kernel, grid, block, params, b->stream, b->pdl), err);
    CUDA_CHECK(cudaGetLastError(), err);
    return FH_OK;
fail:
    return err->status;
}

/* y (rows, out) = act(x (rows, in) W^T + b) through cuBLAS and bias_act_kernel, for a
 * shape cublasLt refuses: y^T = W x^T is gemm(T, N, out, rows, in). (Widths that are not
 * multiples of 4 floats, 54 inputs, 45 or 1 outputs, went this way until session 19;
 * cublasLt runs them: dev/cuda/update_epilogues.) */
static fh_status dense_any_width(fh_update_blas *b, void *y, int y_bf16, const void *x,
                                 const void *w, const float *bias, int in, int out, int rows,
                                 int relu, fh_error *err)
{
    CUBLAS_CHECK(gemm(b, CUBLAS_OP_T, CUBLAS_OP_N, out, rows, in, w, in, x, in, y, out, y_bf16),
                 err);
    fh_bias_act_args a = {.y = y_bf16 ? NULL : y, .y16 = y_bf16 ? y : NULL, .b = bias,
                          .rows = rows, .width = out, .relu = relu};
    return launch_flat(b, b->bias_act, &a, (long long)rows * out, err);
fail:
    return err->status;
}

/* Layer l's tensor `k` of params or grads (0 weight, 1 bias, 2 gamma, 3 beta):
 * fh_net_layer_tensor's index, as the PQN layout interleaves the norms' tensors. */
static float *layer_tensor(const fh_device_mlp *m, float *buffer, int layer, int k)
{
    return buffer + m->tensors[fh_net_layer_tensor(m->desc, layer) + k].offset;
}

/* The same tensor in the bf16 copy. */
static unsigned short *layer_tensor16(const fh_device_mlp *m, int layer, int k)
{
    return m->params16 + m->tensors[fh_net_layer_tensor(m->desc, layer) + k].offset;
}

/* dst = bf16(src) (to_bf16_kernel): rows x cols, src's rows cols apart, dst's ld. */
static fh_status to_bf16(fh_update_blas *b, unsigned short *dst, const float *src, int rows,
                         int cols, int ld, fh_error *err)
{
    long long n = (long long)rows * cols;
    fh_to_bf16_args a = {.src = src, .dst = dst, .n = n, .cols = cols, .src_ld = cols,
                         .dst_ld = ld};
    return launch_flat(b, b->to_bf16, &a, n, err);
}

static fh_status launch_rows(fh_update_blas *b, cudaKernel_t kernel, void *args, int rows,
                             fh_error *err)
{
    void *params[] = {args};
    dim3 grid = {(unsigned)((rows + FH_Q_ROWS_PER_BLOCK - 1) / FH_Q_ROWS_PER_BLOCK), 1, 1};
    dim3 block = {32 * FH_Q_ROWS_PER_BLOCK, 1, 1};
    CUDA_CHECK(fh_pdl_launch((const void *)kernel, grid, block, params, b->stream, b->pdl), err);
    CUDA_CHECK(cudaGetLastError(), err);
    return FH_OK;
fail:
    return err->status;
}

/* A Q-network's hidden layer l after its matmul: y = leaky_relu([LN](z)), z the linear
 * output (m->norm_in[l] with LayerNorm, else act[l + 1] itself, in place). */
static fh_status hidden_forward(fh_update_blas *b, fh_device_mlp *m, int l, int rows,
                                fh_error *err)
{
    const fh_net_desc *d = m->desc;
    int ln = has_norm(d, l);
    fh_q_hidden_args a = {
        .x = ln ? m->norm_in[l] : m->act[l + 1], .y = m->act[l + 1],
        .mean = m->norm_mean[l], .rstd = m->norm_rstd[l],
        .gamma = ln ? layer_tensor(m, m->params, l, 2) : NULL,
        .beta = ln ? layer_tensor(m, m->params, l, 3) : NULL,
        .rows = rows, .width = d->dims[l + 1], .layer_norm = ln, .slope = d->leaky_slope,
        .eps = d->norm_eps};
    return launch_rows(b, b->hidden_fwd, &a, rows, err);
}

/* act[n_run] = the first n_run layers of the network on x. */
static fh_status forward_layers(fh_update_blas *b, fh_device_mlp *m, const float *x, int rows,
                                int n_run, fh_error *err)
{
    fh_status st = check_rows(m, rows, err);
    if (st != FH_OK)
        return st;
    const fh_net_desc *d = m->desc;
    if (m->q_hidden && (!b->hidden_fwd || !b->hidden_bwd))
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: %s: the Q-network's layer kernels "
                            "were not set (fh_update_blas_set_hidden)", __FILE__, __LINE__,
                            d->name);
    int bf16 = m->params16 != NULL;
    if (bf16 && (!b->to_bf16 || !b->bias_grad16 || !b->bias_grad16_wide ||
                 b->operand != CUDA_R_16BF))
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: %s: a bf16 network on engines that are "
                            "not bf16 (fh_update_blas_set_bf16, precision bf16)", __FILE__,
                            __LINE__, d->name);
    if (!bf16 && b->operand != CUDA_R_32F)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: %s: an fp32 network (no bf16 weight "
                            "copy) on bf16 engines", __FILE__, __LINE__, d->name);
    m->input = x;
    m->x16 = m->input16_ext ? m->input16_ext : m->input16;
    if (bf16 && !m->input16_ext &&
        (st = to_bf16(b, m->input16, x, rows, d->dims[0], m->ld16, err)) != FH_OK)
        return st;
    const void *in = bf16 ? (const void *)m->x16 : (const void *)x;
    for (int l = 0; l < n_run; l++) {
        int hidden = l < d->n_layers - 1, n_in = d->dims[l], n_out = d->dims[l + 1];
        if (bf16 && l == 0)
            n_in = m->ld16; /* the padded input and weights: the zeros add nothing */
        /* bf16: the weights' copy; a hidden layer's output (and so its bias, of the
         * output's type) bf16, the output layer's fp32 */
        int y_bf16 = bf16 && hidden;
        const void *w = bf16 ? (l == 0 && m->w0_16 ? (const void *)m->w0_16
                                                   : (const void *)layer_tensor16(m, l, 0))
                             : (const void *)layer_tensor(m, m->params, l, 0);
        const float *bias = layer_tensor(m, m->params, l, 1);
        const void *lt_bias = y_bf16 ? (const void *)layer_tensor16(m, l, 1) : (const void *)bias;
        /* the PPO networks' ReLU is the epilogue's; a Q-network's activation (and norm)
         * follows as a kernel */
        int relu = hidden && !m->q_hidden;
        void *y = has_norm(d, l) ? (void *)m->norm_in[l]
                  : y_bf16       ? (void *)m->act16[l + 1]
                                 : (void *)m->act[l + 1];
        if (!m->any_width[l]) {
            /* cublasLt refuses some shapes at run time (it did a TF32 one at 16,384 rows):
             * such a layer goes through cuBLAS from then on (the refusal launches nothing,
             * so a graph being captured is unharmed) */
            fh_error lt_err;
            if (fh_gemm_dense_typed(&b->lt, b->stream, y, y_bf16, in, w, lt_bias, n_in, n_out,
                                    rows, relu, &lt_err) != FH_OK)
                m->any_width[l] = 1;
        }
        if (m->any_width[l] && (st = dense_any_width(b, y, y_bf16, in, w, bias, n_in, n_out,
                                                     rows, relu, err)) != FH_OK)
            return st;
        if (hidden && m->q_hidden && (st = hidden_forward(b, m, l, rows, err)) != FH_OK)
            return st;
        in = y_bf16 ? (const void *)m->act16[l + 1] : (const void *)m->act[l + 1];
    }
    return FH_OK;
}

void fh_device_mlp_set_input16(fh_device_mlp *m, const unsigned short *x16)
{
    m->input16_ext = x16;
}

int fh_device_mlp_padded_w0(const fh_device_mlp *m, const float *base, fh_bf16_padded *out)
{
    if (!m->w0_16)
        return 0;
    fh_bf16_padded q = {.begin = layer_tensor(m, m->params, 0, 0) - base,
                        .rows = m->desc->dims[1], .cols = m->desc->dims[0], .ld = m->ld16,
                        .dst = m->w0_16};
    *out = q;
    return 1;
}

fh_status fh_device_mlp_forward(fh_update_blas *b, fh_device_mlp *m, const float *x, int rows,
                                fh_error *err)
{
    return forward_layers(b, m, x, rows, m->desc->n_layers, err);
}

fh_status fh_device_mlp_forward_hidden(fh_update_blas *b, fh_device_mlp *m, const float *x,
                                       int rows, fh_error *err)
{
    return forward_layers(b, m, x, rows, m->desc->n_layers - 1, err);
}

fh_device_mlp_head fh_device_mlp_head_view(const fh_device_mlp *m)
{
    int L = m->desc->n_layers;
    fh_device_mlp_head h = {
        .in = m->act[L - 1], .in16 = m->act16[L - 1],
        .w = layer_tensor(m, m->params, L - 1, 0), .b = layer_tensor(m, m->params, L - 1, 1),
        .dw = layer_tensor(m, m->grads, L - 1, 0), .db = layer_tensor(m, m->grads, L - 1, 1),
        .hidden_dz = m->dz[L - 2], .hidden_dz16 = m->g16[L - 2],
        .hidden_db = layer_tensor(m, m->grads, L - 2, 1), .values = m->act[L]};
    if (m->params16) { /* bf16: the hidden layers' fp32 buffers are not used */
        h.in = NULL;
        h.hidden_dz = NULL;
    } else {
        h.in16 = NULL;
        h.hidden_dz16 = NULL;
    }
    return h;
}

/* The column-sum kernels' grid: tiles of 32 * vec columns, chunks of `chunk` rows. */
static fh_status launch_column_sums(fh_update_blas *b, cudaKernel_t kernel, void *args,
                                    int rows, int width, int vec, int chunk, fh_error *err)
{
    void *params[] = {args};
    dim3 grid = {(unsigned)((width + 32 * vec - 1) / (32 * vec)),
                 (unsigned)((rows + chunk - 1) / chunk), 1};
    dim3 block = {32, FH_BIAS_GRAD_ROWS, 1};
    CUDA_CHECK(fh_pdl_launch((const void *)kernel, grid, block, params, b->stream, b->pdl), err);
    CUDA_CHECK(cudaGetLastError(), err);
    return FH_OK;
fail:
    return err->status;
}

/* db = column sums of dz (rows, width), dz first masked by act > 0 when act != NULL,
 * with the given scratch (bias_grad_kernel). */
static fh_status column_sums(fh_update_blas *b, float *db, float *dz, const float *act,
                             int rows, int width, double *partials, unsigned *counters,
                             fh_error *err)
{
    fh_bias_grad_args a = {.dz = dz, .act = act, .db = db, .rows = rows, .width = width,
                           .partials = partials, .counters = counters};
    return launch_column_sums(b, b->bias_grad, &a, rows, width, 1, FH_BIAS_GRAD_CHUNK, err);
}

/* The bias gradient of `layer` from dz (masked by act > 0 first when act != NULL). */
static fh_status bias_grad(fh_update_blas *b, const fh_device_mlp *m, int layer, float *dz,
                           const float *act, int rows, fh_error *err)
{
    return column_sums(b, layer_tensor(m, m->grads, layer, 1), dz, act, rows,
                       m->desc->dims[layer + 1], m->bias_partials[layer],
                       m->bias_counters[layer], err);
}

/* The bf16 network's bias gradient of `layer` (bias_grad_bf16_kernel): from dz32 (fp32,
 * whose bf16 copy goes to dz16) or from dz16 in place, masked by act16 > 0 first when
 * act16 != NULL. */
static fh_status bias_grad16(fh_update_blas *b, const fh_device_mlp *m, int layer,
                             const float *dz32, unsigned short *dz16,
                             const unsigned short *act16, int rows, fh_error *err)
{
    int width = m->desc->dims[layer + 1];
    /* the wide kernel where the plan's rule says so and every row's pairs are whole 4-byte
     * (8 for fp32) words */
    int wide = fh_update_bias_wide(rows, width) &&
               (uintptr_t)dz16 % 4 == 0 && (uintptr_t)act16 % 4 == 0 && (uintptr_t)dz32 % 8 == 0;
    fh_bias_grad_bf16_args a = {.dz32 = dz32, .dz16 = dz16, .act16 = act16,
                                .db = layer_tensor(m, m->grads, layer, 1), .rows = rows,
                                .width = width, .partials = m->bias_partials[layer],
                                .counters = m->bias_counters[layer]};
    return wide ? launch_column_sums(b, b->bias_grad16_wide, &a, rows, width, 2,
                                     FH_BIAS_GRAD_CHUNK2, err)
                : launch_column_sums(b, b->bias_grad16, &a, rows, width, 1, FH_BIAS_GRAD_CHUNK,
                                     err);
}

/* The ReLU gradient alone (relu_mask_kernel): dz (fp32) or dz16 (bf16) of `layer`'s
 * output zeroed in place where act / act16 was not positive; its bias gradient is
 * then split_bias's, beside the weight gradients. */
static fh_status relu_mask(fh_update_blas *b, const fh_device_mlp *m, int layer, float *dz,
                           unsigned short *dz16, int rows, fh_error *err)
{
    long long n = (long long)rows * m->desc->dims[layer + 1];
    fh_relu_mask_args a = {.dz = dz16 ? NULL : dz, .act = dz16 ? NULL : m->act[layer + 1],
                           .dz16 = dz16, .act16 = dz16 ? m->act16[layer + 1] : NULL, .n = n};
    return launch_flat(b, b->relu_mask, &a, (n + 3) / 4, err); /* 4 or 8 elements a thread */
}

/* A Q-network's hidden layer l backward, from g (rows, dims[l + 1]) = d loss / d act[l + 1]
 * (overwritten): the LeakyReLU's and LayerNorm's gradients (q_hidden_backward_kernel),
 * then the column sums: beta's and gamma's gradients and the bias's. *gz receives the
 * gradient at the linear output (g itself without LayerNorm). */
static fh_status hidden_backward(fh_update_blas *b, fh_device_mlp *m, int l, float *g,
                                 int rows, float **gz, fh_error *err)
{
    const fh_net_desc *d = m->desc;
    int ln = has_norm(d, l), width = d->dims[l + 1];
    fh_q_hidden_grad_args a = {
        .g = g, .y = m->act[l + 1], .x = m->norm_in[l], .mean = m->norm_mean[l],
        .rstd = m->norm_rstd[l], .gamma = ln ? layer_tensor(m, m->params, l, 2) : NULL,
        .dxhat = m->dxhat[l], .dx = m->dnorm_in[l], .rows = rows, .width = width,
        .layer_norm = ln, .slope = d->leaky_slope};
    fh_status st = launch_rows(b, b->hidden_bwd, &a, rows, err);
    if (st != FH_OK)
        return st;
    *gz = g;
    if (ln) {
        if ((st = column_sums(b, layer_tensor(m, m->grads, l, 3), g, NULL, rows, width,
                              m->norm_partials[l][0], m->norm_counters[l][0], err)) != FH_OK ||
            (st = column_sums(b, layer_tensor(m, m->grads, l, 2), m->dxhat[l], NULL, rows,
                              width, m->norm_partials[l][1], m->norm_counters[l][1],
                              err)) != FH_OK)
            return st;
        *gz = m->dnorm_in[l];
    }
    return bias_grad(b, m, l, *gz, NULL, rows, err);
}

/* Row-major operands in cuBLAS's column-major terms (X (rows, in), g (rows, out),
 * W (out, in)):  dW (out, in) = g^T X  is  dW^T = X^T g :  gemm(N, T, in, out, rows);
 *                dX (rows, in) = g W   is  dX^T = W^T g^T: gemm(N, N, in, rows, out).
 * From layer `top` down: g (fp32; bf16: m->g16[top]) is the gradient at its output's
 * pre-activation, already masked by its ReLU, its bias gradient already written.
 * split_bias (with dw): below `top`, the chain masks each gradient (relu_mask) and the
 * weight-gradient stream sums it into the bias gradient before the weight gradient. */
static fh_status backward_from(fh_update_blas *b, fh_update_blas *dw, fh_device_mlp *m,
                               int top, float *g, int rows, fh_error *err)
{
    const fh_net_desc *d = m->desc;
    fh_update_blas *wb = dw ? dw : b;
    int bf16 = m->params16 != NULL, L = d->n_layers;
    int split = dw && b->split_bias && !m->q_hidden;
    fh_status st;
    for (int l = top; l >= 0; l--) {
        int in = d->dims[l], out = d->dims[l + 1];
        int ldx = bf16 && l == 0 ? m->ld16 : in; /* the bf16 input's rows are padded */
        const void *x = bf16 ? (l == 0 ? (const void *)m->x16 : (const void *)m->act16[l])
                             : (l == 0 ? (const void *)m->input : (const void *)m->act[l]);
        const void *w = bf16 ? (const void *)layer_tensor16(m, l, 0)
                             : (const void *)layer_tensor(m, m->params, l, 0);
        float *dwt = layer_tensor(m, m->grads, l, 0);
        const void *gl = bf16 ? (const void *)m->g16[l] : (const void *)g;
        if (dw) { /* the gradient is ready on b's stream */
            CUDA_CHECK(cudaEventRecord(m->ev[l], b->stream), err);
            CUDA_CHECK(cudaStreamWaitEvent(dw->stream, m->ev[l], 0), err);
        }
        if (split && l < top && /* the masked gradient's column sums: its bias's */
            (st = bf16 ? bias_grad16(wb, m, l, NULL, m->g16[l], NULL, rows, err)
                       : bias_grad(wb, m, l, g, NULL, rows, err)) != FH_OK)
            return st;
        if ((st = matmul(wb, CUBLAS_OP_N, CUBLAS_OP_T, in, out, rows, x, ldx, gl, out, dwt, in,
                         0, err)) != FH_OK)
            return st;
        if (l == 0)
            break;
        void *gin = bf16 ? (void *)m->g16[l - 1] : (void *)m->dz[l - 1];
        if ((st = matmul(b, CUBLAS_OP_N, CUBLAS_OP_N, in, rows, out, w, in, gl, out, gin, in,
                         bf16, err)) != FH_OK)
            return st;
        if (m->q_hidden) {
            if ((st = hidden_backward(b, m, l - 1, gin, rows, &g, err)) != FH_OK)
                return st;
            continue;
        }
        /* act[l] is layer l-1's ReLU output: its gradient, and (not split) layer l-1's
         * bias's */
        if (split)
            st = relu_mask(b, m, l - 1, bf16 ? NULL : gin, bf16 ? gin : NULL, rows, err);
        else
            st = bf16 ? bias_grad16(b, m, l - 1, NULL, gin, m->act16[l], rows, err)
                      : bias_grad(b, m, l - 1, gin, m->act[l], rows, err);
        if (st != FH_OK)
            return st;
        g = gin;
    }
    if (dw) {
        CUDA_CHECK(cudaEventRecord(m->ev[L], dw->stream), err);
        CUDA_CHECK(cudaStreamWaitEvent(b->stream, m->ev[L], 0), err);
    }
    return FH_OK;
fail:
    return err->status;
}

static fh_status check_backward(const fh_device_mlp *m, int rows, fh_error *err)
{
    fh_status st = check_rows(m, rows, err);
    if (st == FH_OK && !m->grads)
        st = fh_error_set(err, FH_ERR_FAILURE, "%s:%d: %s: a backward pass through a "
                          "forward-only network", __FILE__, __LINE__, m->desc->name);
    return st;
}

fh_status fh_device_mlp_backward(fh_update_blas *b, fh_update_blas *dw, fh_device_mlp *m,
                                 float *dout, int rows, fh_error *err)
{
    fh_status st = check_backward(m, rows, err);
    if (st != FH_OK)
        return st;
    int L = m->desc->n_layers;
    if ((st = m->params16 ? bias_grad16(b, m, L - 1, dout, m->g16[L - 1], NULL, rows, err)
                          : bias_grad(b, m, L - 1, dout, NULL, rows, err)) != FH_OK)
        return st;
    return backward_from(b, dw, m, L - 1, dout, rows, err);
}

fh_status fh_device_mlp_backward_hidden(fh_update_blas *b, fh_update_blas *dw,
                                        fh_device_mlp *m, int rows, fh_error *err)
{
    fh_status st = check_backward(m, rows, err);
    if (st != FH_OK)
        return st;
    int L = m->desc->n_layers;
    if (L < 2 || m->q_hidden)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: %s: no fused output layer (a PPO "
                            "network of 2 layers or more)", __FILE__, __LINE__, m->desc->name);
    return backward_from(b, dw, m, L - 2, m->dz[L - 2], rows, err);
}
