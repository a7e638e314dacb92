/* bias_grad_bf16.cu — the bf16 update's bias-gradient kernel (precision.h, issue 35),
 * its versions side by side with the fp32 one. For a layer's gradient dz (rows, width)
 * in bf16 and its ReLU output act in bf16, the kernel masks dz in place where act is not
 * positive and writes db, the column sums of the masked dz (fp32, summed in double).
 * Versions (grid: column tiles x chunks of 64 rows; the last chunk of a tile adds the
 * partials in chunk order, as the product):
 *   0  the fp32 kernel over fp32 dz and act (bias_grad_kernel: the reference time)
 *   1  bf16, a thread a column, the masked elements stored (a conditional 16-bit store:
 *      077837e's bias_grad_bf16_kernel)
 *   2  bf16, a thread a column, every element stored (as the fp32 kernel)
 *   3  bf16, a thread two adjacent columns (32-bit loads and stores), 64-column tiles
 *   4  bf16, a thread eight adjacent columns (16-byte loads and stores), 256-column
 *      tiles: width a multiple of 8 (every hidden layer's)
 *   5  as 2, a thread's rows of the chunk all loaded before any is stored (restrict
 *      pointers: the loads in flight together), chunks of CHUNK5 rows
 *   6  as 5 with chunks of 4 x CHUNK5 rows (a quarter of the blocks)
 *   7-13 (session 23) vec<VEC, CH>: VEC adjacent columns a thread (VEC x 2-byte loads
 *      and stores as one), chunks of CH rows, each thread's rows loaded BATCH at a time
 *      before any is masked and stored, and the last chunk's sums over the chunks
 *      loaded BATCH at a time; the same order of additions as version 2 (a thread's rows
 *      in order, the chunk's eight row groups in order, the chunks y, y + 8, ... per row
 *      group): 7 <1, 64> (version 2's bits), 8 <2, 64>, 9 <2, 128>, 10 <4, 128>,
 *      11 <8, 128>, 12 <2, 256>, 13 <4, 256>
 * Times: one launch between two events (the first column: a launch's latency included,
 * as before session 23), and LAUNCHES back to back between them, per launch (the second:
 * as in the update's graph, where launches overlap). Under ncu each launch is a row.
 * Session 20's profile (ncu, throughput configuration) had version 1 at 281 us for
 * 16,384 x 512 where the fp32 kernel took 35 us.
 *
 * Check: float64 CPU reference on random inputs (dz, act uniform in [-1, 1], rounded to
 * bf16): the masked dz exactly, db within 1e-6 + 1e-6 |db|.
 *
 * Build: make bias_grad_bf16.   Run: ./bias_grad_bf16 [version|-1] [--quick] (--quick: one
 * timed launch of each, for ncu). Exit 1 when a check fails. */
#include "common.h"

#define DEV_RUNS 7
#define LAUNCHES 20
#define CHUNK 64
#define ROWS 8
#define CHUNK5 64
typedef unsigned short bf16_t;

__host__ __device__ static inline bf16_t to_bf16(float f)
{
#ifdef __CUDA_ARCH__
    unsigned u = __float_as_uint(f);
#else
    unsigned u;
    memcpy(&u, &f, 4);
#endif
    u += 0x7fffu + ((u >> 16) & 1u); /* finite inputs only here */
    return (bf16_t)(u >> 16);
}

__host__ __device__ static inline float from_bf16(bf16_t h)
{
#ifdef __CUDA_ARCH__
    return __uint_as_float((unsigned)h << 16);
#else
    unsigned u = (unsigned)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
#endif
}

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

__device__ double column_sum(double part[ROWS][32], double s)
{
    __syncthreads();
    part[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    double t = 0.0;
    if (threadIdx.y == 0)
        for (int y = 0; y < ROWS; y++)
            t += part[y][threadIdx.x];
    return t;
}

/* the partials and the last chunk's sums of `per` columns a thread (tile 32 * per) */
template <int per>
__device__ void finish(double part[ROWS][32], const double *s, int col0, int width, float *db,
                       double *partials, unsigned *counters)
{
    for (int k = 0; k < per; k++) {
        double t = column_sum(part, s[k]);
        int col = col0 + k;
        if (threadIdx.y == 0 && col < width)
            partials[(long long)blockIdx.y * width + col] = t;
    }
    if (!last_block(&counters[blockIdx.x], gridDim.y))
        return;
    for (int k = 0; k < per; k++) {
        int col = col0 + k;
        double u = 0.0;
        if (col < width)
            for (int c = threadIdx.y; c < (int)gridDim.y; c += ROWS)
                u += partials[(long long)c * width + col];
        double t = column_sum(part, u);
        if (threadIdx.y == 0 && col < width)
            db[col] = (float)t;
    }
}

__global__ void v0(float *dz, const float *act, float *db, int rows, int width,
                   double *partials, unsigned *counters)
{
    __shared__ double part[ROWS][32];
    int col = blockIdx.x * 32 + threadIdx.x;
    int begin = blockIdx.y * CHUNK, end = begin + CHUNK < rows ? begin + CHUNK : rows;
    double s = 0.0;
    if (col < width)
        for (int i = begin + threadIdx.y; i < end; i += ROWS) {
            long long at = (long long)i * width + col;
            float g = act[at] > 0.0f ? dz[at] : 0.0f;
            dz[at] = g;
            s += g;
        }
    finish<1>(part, &s, col, width, db, partials, counters);
}

template <int store_all>
__global__ void v12(bf16_t *dz, const bf16_t *act, float *db, int rows, int width,
                    double *partials, unsigned *counters)
{
    __shared__ double part[ROWS][32];
    int col = blockIdx.x * 32 + threadIdx.x;
    int begin = blockIdx.y * CHUNK, end = begin + CHUNK < rows ? begin + CHUNK : rows;
    double s = 0.0;
    if (col < width)
        for (int i = begin + threadIdx.y; i < end; i += ROWS) {
            long long at = (long long)i * width + col;
            float g = from_bf16(dz[at]);
            if (store_all) {
                g = from_bf16(act[at]) > 0.0f ? g : 0.0f;
                dz[at] = to_bf16(g);
            } else if (!(from_bf16(act[at]) > 0.0f)) {
                g = 0.0f;
                dz[at] = 0;
            }
            s += g;
        }
    finish<1>(part, &s, col, width, db, partials, counters);
}

/* two columns a thread: width even (the rows stay 4-byte aligned) */
__global__ void v3(bf16_t *dz, const bf16_t *act, float *db, int rows, int width,
                   double *partials, unsigned *counters)
{
    __shared__ double part[ROWS][32];
    int col = blockIdx.x * 64 + 2 * threadIdx.x;
    int begin = blockIdx.y * CHUNK, end = begin + CHUNK < rows ? begin + CHUNK : rows;
    double s[2] = {0.0, 0.0};
    if (col < width)
        for (int i = begin + threadIdx.y; i < end; i += ROWS) {
            long long at = ((long long)i * width + col) / 2;
            unsigned d = ((unsigned *)dz)[at], a = ((const unsigned *)act)[at];
            float g0 = from_bf16((bf16_t)(d & 0xffffu)), g1 = from_bf16((bf16_t)(d >> 16));
            g0 = from_bf16((bf16_t)(a & 0xffffu)) > 0.0f ? g0 : 0.0f;
            g1 = from_bf16((bf16_t)(a >> 16)) > 0.0f ? g1 : 0.0f;
            ((unsigned *)dz)[at] = (unsigned)to_bf16(g0) | (unsigned)to_bf16(g1) << 16;
            s[0] += g0;
            s[1] += g1;
        }
    /* finish's column k of thread x is col0 + k: pairs interleave, so sum per column */
    for (int k = 0; k < 2; k++) {
        double t = column_sum(part, s[k]);
        if (threadIdx.y == 0 && col + k < width)
            partials[(long long)blockIdx.y * width + col + k] = t;
    }
    if (!last_block(&counters[blockIdx.x], gridDim.y))
        return;
    for (int k = 0; k < 2; k++) {
        double u = 0.0;
        if (col + k < width)
            for (int c = threadIdx.y; c < (int)gridDim.y; c += ROWS)
                u += partials[(long long)c * width + col + k];
        double t = column_sum(part, u);
        if (threadIdx.y == 0 && col + k < width)
            db[col + k] = (float)t;
    }
}


/* eight columns a thread: width a multiple of 8 (rows 16-byte aligned) */
__global__ void v4(bf16_t *dz, const bf16_t *act, float *db, int rows, int width,
                   double *partials, unsigned *counters)
{
    __shared__ double part[ROWS][256];
    int col = blockIdx.x * 256 + 8 * threadIdx.x;
    int begin = blockIdx.y * CHUNK, end = begin + CHUNK < rows ? begin + CHUNK : rows;
    double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    if (col < width)
        for (int i = begin + threadIdx.y; i < end; i += ROWS) {
            long long at = ((long long)i * width + col) / 8;
            uint4 d = ((uint4 *)dz)[at], a = ((const uint4 *)act)[at];
            unsigned dw[4] = {d.x, d.y, d.z, d.w}, aw[4] = {a.x, a.y, a.z, a.w}, out[4];
            for (int k = 0; k < 4; k++) {
                float g0 = from_bf16((bf16_t)(dw[k] & 0xffffu)), g1 = from_bf16((bf16_t)(dw[k] >> 16));
                g0 = from_bf16((bf16_t)(aw[k] & 0xffffu)) > 0.0f ? g0 : 0.0f;
                g1 = from_bf16((bf16_t)(aw[k] >> 16)) > 0.0f ? g1 : 0.0f;
                out[k] = (unsigned)to_bf16(g0) | (unsigned)to_bf16(g1) << 16;
                s[2 * k] += g0;
                s[2 * k + 1] += g1;
            }
            ((uint4 *)dz)[at] = make_uint4(out[0], out[1], out[2], out[3]);
        }
    for (int k = 0; k < 8; k++)
        part[threadIdx.y][8 * threadIdx.x + k] = s[k];
    __syncthreads();
    if (threadIdx.y == 0 && col < width)
        for (int k = 0; k < 8; k++) {
            double t = 0.0;
            for (int y = 0; y < ROWS; y++)
                t += part[y][8 * threadIdx.x + k];
            partials[(long long)blockIdx.y * width + col + k] = t;
        }
    if (!last_block(&counters[blockIdx.x], gridDim.y))
        return;
    /* the tile's 256 columns over every chunk: a thread a column (blockDim 256), chunks
     * in order */
    int c = blockIdx.x * 256 + threadIdx.y * 32 + threadIdx.x;
    if (c < width) {
        double u = 0.0;
        for (int k = 0; k < (int)gridDim.y; k++)
            u += partials[(long long)k * width + c];
        db[c] = (float)u;
    }
}

/* as v2, the chunk's loads first (up to 32 rows a thread in registers) */
template <int chunk>
__global__ void v56(bf16_t *__restrict__ dz, const bf16_t *__restrict__ act, float *db, int rows,
                    int width, double *partials, unsigned *counters)
{
    __shared__ double part[ROWS][32];
    const int per = chunk / ROWS;
    int col = blockIdx.x * 32 + threadIdx.x;
    int begin = blockIdx.y * chunk;
    double s = 0.0;
    if (col < width) {
        bf16_t d[per], a[per];
#pragma unroll
        for (int r = 0; r < per; r++) {
            int i = begin + threadIdx.y + r * ROWS;
            long long at = (long long)i * width + col;
            d[r] = i < rows ? dz[at] : 0;
            a[r] = i < rows ? act[at] : 0;
        }
#pragma unroll
        for (int r = 0; r < per; r++) {
            int i = begin + threadIdx.y + r * ROWS;
            float g = from_bf16(a[r]) > 0.0f ? from_bf16(d[r]) : 0.0f;
            if (i < rows)
                dz[(long long)i * width + col] = to_bf16(g);
            s += g;
        }
    }
    finish<1>(part, &s, col, width, db, partials, counters);
}

#define BATCH 4
/* VEC adjacent bf16 as one load or store (VEC * 2 bytes; the row's start aligned to it) */
template <int VEC> struct vec_t;
template <> struct vec_t<1> { typedef unsigned short t; };
template <> struct vec_t<2> { typedef unsigned t; };
template <> struct vec_t<4> { typedef uint2 t; };
template <> struct vec_t<8> { typedef uint4 t; };

template <int VEC>
__device__ void unpack(typename vec_t<VEC>::t v, bf16_t *out)
{
    memcpy(out, &v, sizeof v);
}

template <int VEC>
__device__ typename vec_t<VEC>::t pack(const bf16_t *in)
{
    typename vec_t<VEC>::t v;
    memcpy(&v, in, sizeof v);
    return v;
}

template <int VEC, int CH>
__global__ void vec(bf16_t *__restrict__ dz, const bf16_t *__restrict__ act, float *db, int rows,
                    int width, double *partials, unsigned *counters)
{
    typedef typename vec_t<VEC>::t V;
    __shared__ double part[ROWS][32 * VEC];
    __shared__ int last;
    const int per = CH / ROWS; /* rows a thread */
    int col = (blockIdx.x * 32 + threadIdx.x) * VEC;
    int begin = blockIdx.y * CH;
    double s[VEC];
    for (int k = 0; k < VEC; k++)
        s[k] = 0.0;
    if (col < width) {
        for (int r0 = 0; r0 < per; r0 += BATCH) {
            V d[BATCH], a[BATCH];
#pragma unroll
            for (int r = 0; r < BATCH; r++) {
                int i = begin + threadIdx.y + (r0 + r) * ROWS;
                long long at = ((long long)i * width + col) / VEC;
                d[r] = i < rows ? ((const V *)dz)[at] : V();
                a[r] = i < rows ? ((const V *)act)[at] : V();
            }
#pragma unroll
            for (int r = 0; r < BATCH; r++) {
                int i = begin + threadIdx.y + (r0 + r) * ROWS;
                bf16_t dd[VEC], aa[VEC];
                unpack<VEC>(d[r], dd);
                unpack<VEC>(a[r], aa);
#pragma unroll
                for (int k = 0; k < VEC; k++) {
                    float g = from_bf16(aa[k]) > 0.0f ? from_bf16(dd[k]) : 0.0f;
                    dd[k] = to_bf16(g);
                    s[k] += g;
                }
                if (i < rows)
                    ((V *)dz)[((long long)i * width + col) / VEC] = pack<VEC>(dd);
            }
        }
    }
    /* the chunk's column sums, row groups in order, into partials */
    for (int k = 0; k < VEC; k++)
        part[threadIdx.y][threadIdx.x * VEC + k] = s[k];
    __syncthreads();
    for (int c = threadIdx.y * 32 + threadIdx.x; c < 32 * VEC; c += 32 * ROWS) {
        int gc = blockIdx.x * 32 * VEC + c;
        double t = 0.0;
        for (int y = 0; y < ROWS; y++)
            t += part[y][c];
        if (gc < width)
            partials[(long long)blockIdx.y * width + gc] = t;
    }
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        unsigned done = atomicAdd(&counters[blockIdx.x], 1u);
        last = done == gridDim.y - 1;
        if (last)
            counters[blockIdx.x] = 0;
    }
    __syncthreads();
    if (!last)
        return;
    __threadfence();
    /* the tile's columns over every chunk: row group y takes chunks y, y + 8, ... in
     * order, BATCH loads at a time, then the groups in order */
    for (int k = 0; k < VEC; k++) {
        int gc = col + k;
        double u = 0.0;
        if (col < width && gc < width)
            for (int c0 = threadIdx.y; c0 < (int)gridDim.y; c0 += ROWS * BATCH) {
                double p[BATCH];
#pragma unroll
                for (int b = 0; b < BATCH; b++) {
                    int c = c0 + b * ROWS;
                    p[b] = c < (int)gridDim.y ? partials[(long long)c * width + gc] : 0.0;
                }
#pragma unroll
                for (int b = 0; b < BATCH; b++)
                    u += p[b];
            }
        s[k] = u;
    }
    __syncthreads();
    for (int k = 0; k < VEC; k++)
        part[threadIdx.y][threadIdx.x * VEC + k] = s[k];
    __syncthreads();
    if (threadIdx.y == 0)
        for (int k = 0; k < VEC; k++) {
            double t = 0.0;
            for (int y = 0; y < ROWS; y++)
                t += part[y][threadIdx.x * VEC + k];
            if (col + k < width)
                db[col + k] = (float)t;
        }
}

template <int VEC, int CH>
static void launch_vec(bf16_t *dz, const bf16_t *act, float *db, int rows, int width,
                       double *partials, unsigned *counters)
{
    dim3 grid((width + 32 * VEC - 1) / (32 * VEC), (rows + CH - 1) / CH), block(32, ROWS);
    vec<VEC, CH><<<grid, block>>>(dz, act, db, rows, width, partials, counters);
}

typedef struct {
    int version, rows, width, launches;
    float *dz32, *act32, *db;
    bf16_t *dz16, *act16;
    double *partials;
    unsigned *counters;
} ctx_t;

static void run_once(ctx_t *c)
{
    int chunks = (c->rows + CHUNK - 1) / CHUNK;
    dim3 block(32, ROWS);
    bf16_t *d = c->dz16;
    const bf16_t *a = c->act16;
    if (c->version == 7)
        launch_vec<1, 64>(d, a, c->db, c->rows, c->width, c->partials, c->counters);
    else if (c->version == 8)
        launch_vec<2, 64>(d, a, c->db, c->rows, c->width, c->partials, c->counters);
    else if (c->version == 9)
        launch_vec<2, 128>(d, a, c->db, c->rows, c->width, c->partials, c->counters);
    else if (c->version == 10)
        launch_vec<4, 128>(d, a, c->db, c->rows, c->width, c->partials, c->counters);
    else if (c->version == 11)
        launch_vec<8, 128>(d, a, c->db, c->rows, c->width, c->partials, c->counters);
    else if (c->version == 12)
        launch_vec<2, 256>(d, a, c->db, c->rows, c->width, c->partials, c->counters);
    else if (c->version == 13)
        launch_vec<4, 256>(d, a, c->db, c->rows, c->width, c->partials, c->counters);
    else if (c->version == 0)
        v0<<<dim3((c->width + 31) / 32, chunks), block>>>(c->dz32, c->act32, c->db, c->rows,
                                                          c->width, c->partials, c->counters);
    else if (c->version == 1)
        v12<0><<<dim3((c->width + 31) / 32, chunks), block>>>(c->dz16, c->act16, c->db, c->rows,
                                                              c->width, c->partials, c->counters);
    else if (c->version == 2)
        v12<1><<<dim3((c->width + 31) / 32, chunks), block>>>(c->dz16, c->act16, c->db, c->rows,
                                                              c->width, c->partials, c->counters);
    else if (c->version == 5)
        v56<CHUNK5><<<dim3((c->width + 31) / 32, (c->rows + CHUNK5 - 1) / CHUNK5), block>>>(
            c->dz16, c->act16, c->db, c->rows, c->width, c->partials, c->counters);
    else if (c->version == 6)
        v56<4 * CHUNK5><<<dim3((c->width + 31) / 32, (c->rows + 4 * CHUNK5 - 1) / (4 * CHUNK5)),
                          block>>>(c->dz16, c->act16, c->db, c->rows, c->width, c->partials,
                                   c->counters);
    else if (c->version == 3)
        v3<<<dim3((c->width + 63) / 64, chunks), block>>>(c->dz16, c->act16, c->db, c->rows,
                                                          c->width, c->partials, c->counters);
    else
        v4<<<dim3((c->width + 255) / 256, chunks), block>>>(c->dz16, c->act16, c->db, c->rows,
                                                            c->width, c->partials, c->counters);
    cudaCheckLaunch();
}

static void run(void *p)
{
    ctx_t *c = (ctx_t *)p;
    for (int k = 0; k < c->launches; k++)
        run_once(c);
}

int main(int argc, char **argv)
{
    int only = argc > 1 ? atoi(argv[1]) : -1;
    /* --quick: one timed launch each (under ncu, which times every launch itself) */
    int quick = argc > 2 && strcmp(argv[2], "--quick") == 0;
    const int rows_list[2] = {512, 16384}, widths[6] = {512, 384, 256, 128, 64, 32};
    const int n_versions = 14;
    dev_print_device();
    int failed = 0;
    for (int ri = 0; ri < 2; ri++)
        for (int wi = 0; wi < 6; wi++) {
            int rows = rows_list[ri], width = widths[wi];
            size_t n = (size_t)rows * width;
            dev_rng rng = {777 + n};
            float *dz = (float *)host_alloc(n * 4), *act = (float *)host_alloc(n * 4);
            bf16_t *dz16 = (bf16_t *)host_alloc(n * 2), *act16 = (bf16_t *)host_alloc(n * 2);
            bf16_t *got16 = (bf16_t *)host_alloc(n * 2);
            float *got = (float *)host_alloc(n * 4), *got_db = (float *)host_alloc(width * 4);
            double *want_db = (double *)host_alloc(width * 8);
            for (size_t i = 0; i < n; i++) { /* bf16-exact values: one reference for both */
                dz16[i] = to_bf16(dev_rng_uniform(&rng, -1.0f, 1.0f));
                act16[i] = to_bf16(dev_rng_uniform(&rng, -1.0f, 1.0f));
                dz[i] = from_bf16(dz16[i]);
                act[i] = from_bf16(act16[i]);
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
            cudaCheck(cudaMalloc((void **)&c.dz32, n * 4));
            cudaCheck(cudaMalloc((void **)&c.act32, n * 4));
            cudaCheck(cudaMalloc((void **)&c.dz16, n * 2));
            cudaCheck(cudaMalloc((void **)&c.act16, n * 2));
            cudaCheck(cudaMalloc((void **)&c.db, width * 4));
            cudaCheck(cudaMalloc((void **)&c.partials, (size_t)((rows + CHUNK - 1) / CHUNK) * width * 8));
            cudaCheck(cudaMalloc((void **)&c.counters, (size_t)(width + 31) / 32 * 4));
            cudaCheck(cudaMemset(c.counters, 0, (size_t)(width + 31) / 32 * 4));
            /* (versions 3 and 4 use fewer column tiles: their counters are a prefix) */
            cudaCheck(cudaMemcpy(c.act32, act, n * 4, cudaMemcpyHostToDevice));
            cudaCheck(cudaMemcpy(c.act16, act16, n * 2, cudaMemcpyHostToDevice));
            for (int v = 0; v < n_versions; v++) {
                if (only >= 0 && v != only)
                    continue;
                c.version = v;
                c.launches = 1;
                cudaCheck(cudaMemcpy(c.dz32, dz, n * 4, cudaMemcpyHostToDevice));
                cudaCheck(cudaMemcpy(c.dz16, dz16, n * 2, cudaMemcpyHostToDevice));
                run(&c);
                cudaCheck(cudaDeviceSynchronize());
                if (v == 0) {
                    cudaCheck(cudaMemcpy(got, c.dz32, n * 4, cudaMemcpyDeviceToHost));
                } else {
                    cudaCheck(cudaMemcpy(got16, c.dz16, n * 2, cudaMemcpyDeviceToHost));
                    for (size_t i = 0; i < n; i++)
                        got[i] = from_bf16(got16[i]);
                }
                cudaCheck(cudaMemcpy(got_db, c.db, width * 4, cudaMemcpyDeviceToHost));
                dev_check chk;
                dev_check_init(&chk);
                for (size_t i = 0; i < n; i++)
                    dev_check_one(&chk, (long long)i, got[i], act[i] > 0.0f ? dz[i] : 0.0f, 0.0, 0.0);
                for (int k = 0; k < width; k++)
                    dev_check_one(&chk, (long long)(n + k), got_db[k], want_db[k], 1e-6, 1e-6);
                float ms = dev_time_median_ms(run, &c, quick ? 1 : DEV_RUNS);
                c.launches = quick ? 1 : LAUNCHES;
                float batch = dev_time_median_ms(run, &c, quick ? 1 : DEV_RUNS) / c.launches;
                failed |= chk.failed != 0;
                printf("rows %6d width %4d  v%-2d  %8.4f ms  %8.4f ms/launch in %d  max |err| %.2e  %s\n",
                       rows, width, v, ms, batch, LAUNCHES, chk.max_abs, chk.failed ? "FAIL" : "ok");
            }
            cudaFree(c.dz32); cudaFree(c.act32); cudaFree(c.dz16); cudaFree(c.act16);
            cudaFree(c.db); cudaFree(c.partials); cudaFree(c.counters);
            free(dz); free(act); free(dz16); free(act16); free(got16); free(got); free(got_db);
            free(want_db);
        }
    return failed;
}
