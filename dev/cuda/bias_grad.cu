/* bias_grad.cu — the GPU update's bias-gradient kernel, its versions side by side
 * (issue 17). For a layer's gradient dz (rows, width) and its ReLU output act, the kernel
 * masks dz in place where act is not positive (the ReLU's gradient) and writes db, the
 * column sums of the masked dz (the bias gradient). Versions:
 *   1  blocks of (32 columns, 16 row groups) over all rows: width / 32 blocks, 16 for the
 *      critic's 512 (session 9's first version, never committed: 16 us at 512 rows x 512
 *      on the H200 in ncu, dev/cuda/logs/2026-12-01-s9-run2-update_profile.log)
 *   2  the same blocks over chunks of 64 rows (grid width / 32 x rows / 64); each chunk's
 *      column sums to a partial, the last chunk to finish a column tile adds the tile's
 *      partials in chunk order (a62c83f, the product, src/cuda/kernels/
 *      layer_elementwise.cu: 6.6 us at 512 x 512, run 5's profile)
 * Both keep every sum in a fixed order (bit-identical run to run).
 *
 * Check: float64 CPU reference on random inputs (dz uniform in [-1, 1], act uniform in
 * [-1, 1] so half the units are off): the masked dz exactly, db within 1e-6 + 1e-6 |db|.
 * Sizes: the critic's widths at the update's minibatch (512 rows) and the throughput
 * configuration's (16,384 rows).
 *
 * Build: make bias_grad.   Run: ./bias_grad [version]. Exit status 1 when a check fails. */
#include "common.h"

#define DEV_RUNS 7
#define V1_ROWS 16
#define CHUNK 64
#define V2_ROWS 8

__global__ void bias_grad_v1(float *dz, const float *act, float *db, int rows, int width)
{
    __shared__ double part[V1_ROWS][32];
    int col = blockIdx.x * 32 + threadIdx.x;
    double s = 0.0;
    if (col < width)
        for (int i = threadIdx.y; i < rows; i += V1_ROWS) {
            long long at = (long long)i * width + col;
            float g = act[at] > 0.0f ? dz[at] : 0.0f;
            dz[at] = g;
            s += g;
        }
    part[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && col < width) {
        double t = 0.0;
        for (int y = 0; y < V1_ROWS; y++)
            t += part[y][threadIdx.x];
        db[col] = (float)t;
    }
}

/* fh_last_block of src/cuda/kernels/block_reduce.cuh (2-D blocks) */
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

/* src/cuda/kernels/layer_elementwise.cu's bias_grad_kernel (a62c83f), act always given */
__global__ void bias_grad_v2(float *dz, const float *act, float *db, int rows, int width,
                             double *partials, unsigned *counters)
{
    __shared__ double part[V2_ROWS][32];
    int col = blockIdx.x * 32 + threadIdx.x;
    int begin = blockIdx.y * CHUNK, end = begin + CHUNK < rows ? begin + CHUNK : rows;
    double s = 0.0;
    if (col < width)
        for (int i = begin + threadIdx.y; i < end; i += V2_ROWS) {
            long long at = (long long)i * width + col;
            float g = act[at] > 0.0f ? dz[at] : 0.0f;
            dz[at] = g;
            s += g;
        }
    part[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && col < width) {
        double t = 0.0;
        for (int y = 0; y < V2_ROWS; y++)
            t += part[y][threadIdx.x];
        partials[(long long)blockIdx.y * width + col] = t;
    }
    if (!last_block(&counters[blockIdx.x], gridDim.y))
        return;
    s = 0.0;
    if (col < width)
        for (int c = threadIdx.y; c < (int)gridDim.y; c += V2_ROWS)
            s += partials[(long long)c * width + col];
    __syncthreads();
    part[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && col < width) {
        double t = 0.0;
        for (int y = 0; y < V2_ROWS; y++)
            t += part[y][threadIdx.x];
        db[col] = (float)t;
    }
}

typedef struct {
    int version, rows, width;
    float *dz, *act, *db;
    double *partials;
    unsigned *counters;
} ctx_t;

/* One launch. The mask is idempotent, so repeated timed runs do the same work on the
 * already masked dz (the check runs first, on a fresh copy). */
static void run(void *p)
{
    ctx_t *c = (ctx_t *)p;
    dim3 tiles((c->width + 31) / 32);
    if (c->version == 1) {
        bias_grad_v1<<<tiles, dim3(32, V1_ROWS)>>>(c->dz, c->act, c->db, c->rows, c->width);
    } else {
        dim3 grid(tiles.x, (c->rows + CHUNK - 1) / CHUNK);
        bias_grad_v2<<<grid, dim3(32, V2_ROWS)>>>(c->dz, c->act, c->db, c->rows, c->width,
                                                  c->partials, c->counters);
    }
    cudaCheckLaunch();
}

int main(int argc, char **argv)
{
    int only = argc > 1 ? atoi(argv[1]) : 0;
    const int rows_list[2] = {512, 16384}, widths[4] = {512, 384, 256, 64};
    dev_print_device();
    int failed = 0;
    for (int ri = 0; ri < 2; ri++)
        for (int wi = 0; wi < 4; wi++) {
            int rows = rows_list[ri], width = widths[wi];
            size_t n = (size_t)rows * width;
            dev_rng rng = {777 + n};
            float *dz = (float *)host_alloc(n * 4), *act = (float *)host_alloc(n * 4);
            float *got = (float *)host_alloc(n * 4), *got_db = (float *)host_alloc(width * 4);
            double *want_db = (double *)host_alloc(width * 8);
            for (size_t i = 0; i < n; i++) {
                dz[i] = dev_rng_uniform(&rng, -1.0f, 1.0f);
                act[i] = dev_rng_uniform(&rng, -1.0f, 1.0f);
            }
            for (int c = 0; c < width; c++) {
                double s = 0;
                for (int i = 0; i < rows; i++)
                    s += act[(size_t)i * width + c] > 0.0f ? dz[(size_t)i * width + c] : 0.0;
                want_db[c] = s;
            }
            ctx_t c;
            memset(&c, 0, sizeof c);
            c.rows = rows;
            c.width = width;
            float *d_dz0;
            cudaCheck(cudaMalloc((void **)&d_dz0, n * 4));
            cudaCheck(cudaMalloc((void **)&c.dz, n * 4));
            cudaCheck(cudaMalloc((void **)&c.act, n * 4));
            cudaCheck(cudaMalloc((void **)&c.db, width * 4));
            cudaCheck(cudaMalloc((void **)&c.partials, (size_t)((rows + CHUNK - 1) / CHUNK) * width * 8));
            cudaCheck(cudaMalloc((void **)&c.counters, (size_t)(width + 31) / 32 * 4));
            cudaCheck(cudaMemset(c.counters, 0, (size_t)(width + 31) / 32 * 4));
            cudaCheck(cudaMemcpy(d_dz0, dz, n * 4, cudaMemcpyHostToDevice));
            cudaCheck(cudaMemcpy(c.act, act, n * 4, cudaMemcpyHostToDevice));
            for (int v = 1; v <= 2; v++) {
                if (only && v != only)
                    continue;
                c.version = v;
                cudaCheck(cudaMemcpy(c.dz, d_dz0, n * 4, cudaMemcpyDeviceToDevice));
                run(&c);
                cudaCheck(cudaDeviceSynchronize());
                cudaCheck(cudaMemcpy(got, c.dz, n * 4, cudaMemcpyDeviceToHost));
                cudaCheck(cudaMemcpy(got_db, c.db, width * 4, cudaMemcpyDeviceToHost));
                dev_check chk;
                dev_check_init(&chk);
                for (size_t i = 0; i < n; i++)
                    dev_check_one(&chk, (long long)i, got[i], act[i] > 0.0f ? dz[i] : 0.0f, 0.0, 0.0);
                for (int k = 0; k < width; k++)
                    dev_check_one(&chk, (long long)(n + k), got_db[k], want_db[k], 1e-6, 1e-6);
                float ms = dev_time_median_ms(run, &c, DEV_RUNS);
                failed |= chk.failed != 0;
                printf("rows %6d width %4d  v%d  %8.4f ms  max |err| %.2e  %s\n", rows, width, v,
                       ms, chk.max_abs, chk.failed ? "FAIL" : "ok");
            }
            cudaFree(d_dz0); cudaFree(c.dz); cudaFree(c.act); cudaFree(c.db);
            cudaFree(c.partials); cudaFree(c.counters);
            free(dz); free(act); free(got); free(got_db); free(want_db);
        }
    return failed;
}
