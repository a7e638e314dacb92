/* update_layers.c — see update_layers.h. */
#include "cuda/update_layers.h"

#include <string.h>

#include "cuda/cuda_check.h"
#include "cuda/kernels/update_args.h"

#define BLAS_WORKSPACE_BYTES (32u << 20)
#define ELEMENTWISE_THREADS 256

fh_status fh_update_blas_init(fh_update_blas *b, cudaStream_t stream, int tf32,
                              cudaKernel_t bias_grad, cudaKernel_t bias_act, fh_error *err)
{
    memset(b, 0, sizeof *b);
    b->stream = stream;
    b->bias_grad = bias_grad;
    b->bias_act = bias_act;
    fh_status st = fh_gemm_init(&b->lt, tf32, 0, 1, err); /* no timing: determinism */
    if (st != FH_OK) {
        fh_update_blas_free(b);
        return st;
    }
    CUDA_CHECK(cudaMalloc(&b->workspace, BLAS_WORKSPACE_BYTES), err);
    CUBLAS_CHECK(cublasCreate(&b->blas), err);
    CUBLAS_CHECK(cublasSetStream(b->blas, stream), err);
    CUBLAS_CHECK(cublasSetWorkspace(b->blas, b->workspace, BLAS_WORKSPACE_BYTES), err);
    CUBLAS_CHECK(cublasSetMathMode(b->blas, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH
                                                 : CUBLAS_DEFAULT_MATH), err);
    CUBLAS_CHECK(cublasSetAtomicsMode(b->blas, CUBLAS_ATOMICS_NOT_ALLOWED), err);
    return FH_OK;
fail:
    fh_update_blas_free(b);
    return err->status;
}

void fh_update_blas_free(fh_update_blas *b)
{
    if (b->blas)
        cublasDestroy(b->blas);
    cudaFree(b->workspace);
    fh_gemm_free(&b->lt);
    memset(b, 0, sizeof *b);
}

fh_status fh_device_mlp_init(fh_device_mlp *m, fh_net_kind kind, float *params, float *grads,
                             int max_rows, fh_error *err)
{
    memset(m, 0, sizeof *m);
    m->desc = fh_net_desc_get(kind);
    fh_net_tensors(m->tensors, m->desc);
    m->params = params;
    m->grads = grads;
    m->max_rows = max_rows;
    int L = m->desc->n_layers;
    size_t chunks = ((size_t)max_rows + FH_BIAS_GRAD_CHUNK - 1) / FH_BIAS_GRAD_CHUNK;
    for (int l = 0; l < L; l++) {
        int width = m->desc->dims[l + 1];
        size_t bytes = (size_t)max_rows * width * sizeof(float);
        CUDA_CHECK(cudaMalloc((void **)&m->act[l + 1], bytes), err);
        if (l < L - 1)
            CUDA_CHECK(cudaMalloc((void **)&m->dz[l], bytes), err);
        size_t tiles = ((size_t)width + 31) / 32;
        CUDA_CHECK(cudaMalloc((void **)&m->bias_partials[l], chunks * width * sizeof(double)), err);
        CUDA_CHECK(cudaMalloc((void **)&m->bias_counters[l], tiles * sizeof(unsigned)), err);
        CUDA_CHECK(cudaMemset(m->bias_counters[l], 0, tiles * sizeof(unsigned)), err);
    }
    for (int l = 0; l <= L; l++)
        CUDA_CHECK(cudaEventCreateWithFlags(&m->ev[l], cudaEventDisableTiming), err);
    return FH_OK;
fail:
    fh_device_mlp_free(m);
    return err->status;
}

void fh_device_mlp_free(fh_device_mlp *m)
{
    for (int l = 0; l <= FH_NN_MAX_LAYERS; l++) {
        cudaFree(m->act[l]);
        if (l < FH_NN_MAX_LAYERS) {
            cudaFree(m->dz[l]);
            cudaFree(m->bias_partials[l]);
            cudaFree(m->bias_counters[l]);
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

/* y (rows, out) = act(x (rows, in) W^T + b) through cuBLAS and bias_act_kernel, for
 * widths cublasLt's kernels cannot take: y^T = W x^T is gemm(T, N, out, rows, in). */
static fh_status dense_any_width(fh_update_blas *b, float *y, const float *x, const float *w,
                                 const float *bias, int in, int out, int rows, int relu,
                                 fh_error *err)
{
    const float one = 1.0f, zero = 0.0f;
    CUBLAS_CHECK(cublasSgemm(b->blas, CUBLAS_OP_T, CUBLAS_OP_N, out, rows, in, &one, w, in, x,
                             in, &zero, y, out), err);
    fh_bias_act_args a = {.y = y, .b = bias, .rows = rows, .width = out, .relu = relu};
    void *params[] = {&a};
    long long n = (long long)rows * out;
    long long blocks = (n + ELEMENTWISE_THREADS - 1) / ELEMENTWISE_THREADS;
    dim3 grid = {(unsigned)(blocks < 1024 ? blocks : 1024), 1, 1}, block = {ELEMENTWISE_THREADS, 1, 1};
    CUDA_CHECK(cudaLaunchKernel((const void *)b->bias_act, grid, block, params, 0, b->stream), err);
    CUDA_CHECK(cudaGetLastError(), err);
    return FH_OK;
fail:
    return err->status;
}

fh_status fh_device_mlp_forward(fh_update_blas *b, fh_device_mlp *m, const float *x, int rows,
                                fh_error *err)
{
    fh_status st = check_rows(m, rows, err);
    if (st != FH_OK)
        return st;
    const fh_net_desc *d = m->desc;
    m->input = x;
    const float *in = x;
    for (int l = 0; l < d->n_layers; l++) {
        const float *w = m->params + m->tensors[2 * l].offset;
        const float *bias = m->params + m->tensors[2 * l + 1].offset;
        int relu = l < d->n_layers - 1, n_in = d->dims[l], n_out = d->dims[l + 1];
        if (n_in % 4 != 0 || n_out % 4 != 0)
            m->any_width[l] = 1;
        if (!m->any_width[l]) {
            /* cublasLt refuses some shapes at run time (it did a TF32 one at 16,384 rows):
             * such a layer goes through cuBLAS from then on (the refusal launches nothing,
             * so a graph being captured is unharmed) */
            fh_error lt_err;
            if (fh_gemm_dense(&b->lt, b->stream, m->act[l + 1], in, w, bias, n_in, n_out, rows,
                              relu, &lt_err) != FH_OK)
                m->any_width[l] = 1;
        }
        if (m->any_width[l] &&
            (st = dense_any_width(b, m->act[l + 1], in, w, bias, n_in, n_out, rows, relu,
                                  err)) != FH_OK)
            return st;
        in = m->act[l + 1];
    }
    return FH_OK;
}

/* db = column sums of dz (rows, width), dz first masked by act > 0 when act != NULL;
 * layer: whose bias (its partial sums and counters). */
static fh_status bias_grad(fh_update_blas *b, const fh_device_mlp *m, int layer, float *dz,
                           const float *act, int rows, fh_error *err)
{
    int width = m->desc->dims[layer + 1];
    fh_bias_grad_args a = {.dz = dz, .act = act,
                           .db = m->grads + m->tensors[2 * layer + 1].offset,
                           .rows = rows, .width = width, .partials = m->bias_partials[layer],
                           .counters = m->bias_counters[layer]};
    void *params[] = {&a};
    dim3 grid = {(unsigned)((width + 31) / 32),
                 (unsigned)((rows + FH_BIAS_GRAD_CHUNK - 1) / FH_BIAS_GRAD_CHUNK), 1};
    dim3 block = {32, FH_BIAS_GRAD_ROWS, 1};
    CUDA_CHECK(cudaLaunchKernel((const void *)b->bias_grad, grid, block, params, 0, b->stream), err);
    CUDA_CHECK(cudaGetLastError(), err);
    return FH_OK;
fail:
    return err->status;
}

/* Row-major operands in cuBLAS's column-major terms (X (rows, in), g (rows, out),
 * W (out, in)):  dW (out, in) = g^T X  is  dW^T = X^T g :  gemm(N, T, in, out, rows);
 *                dX (rows, in) = g W   is  dX^T = W^T g^T: gemm(N, N, in, rows, out). */
fh_status fh_device_mlp_backward(fh_update_blas *b, fh_update_blas *dw, fh_device_mlp *m,
                                 float *dout, int rows, fh_error *err)
{
    fh_status st = check_rows(m, rows, err);
    if (st != FH_OK)
        return st;
    const fh_net_desc *d = m->desc;
    const float one = 1.0f, zero = 0.0f;
    fh_update_blas *wb = dw ? dw : b;
    float *g = dout;
    for (int l = d->n_layers - 1; l >= 0; l--) {
        int in = d->dims[l], out = d->dims[l + 1];
        const float *x = l == 0 ? m->input : m->act[l];
        const float *w = m->params + m->tensors[2 * l].offset;
        float *dwt = m->grads + m->tensors[2 * l].offset;
        if (l == d->n_layers - 1 && (st = bias_grad(b, m, l, g, NULL, rows, err)) != FH_OK)
            return st;
        if (dw) { /* g is ready on b's stream */
            CUDA_CHECK(cudaEventRecord(m->ev[l], b->stream), err);
            CUDA_CHECK(cudaStreamWaitEvent(dw->stream, m->ev[l], 0), err);
        }
        CUBLAS_CHECK(cublasSgemm(wb->blas, CUBLAS_OP_N, CUBLAS_OP_T, in, out, rows, &one, x, in,
                                 g, out, &zero, dwt, in), err);
        if (l == 0)
            break;
        float *gin = m->dz[l - 1];
        CUBLAS_CHECK(cublasSgemm(b->blas, CUBLAS_OP_N, CUBLAS_OP_N, in, rows, out, &one, w, in,
                                 g, out, &zero, gin, in), err);
        /* act[l] is layer l-1's ReLU output: its gradient, and layer l-1's bias's */
        if ((st = bias_grad(b, m, l - 1, gin, m->act[l], rows, err)) != FH_OK)
            return st;
        g = gin;
    }
    if (dw) {
        CUDA_CHECK(cudaEventRecord(m->ev[d->n_layers], dw->stream), err);
        CUDA_CHECK(cudaStreamWaitEvent(b->stream, m->ev[d->n_layers], 0), err);
    }
    return FH_OK;
fail:
    return err->status;
}
