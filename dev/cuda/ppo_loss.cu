/* ppo_loss.cu — the GPU update's loss kernel, its versions side by side (issue 17).
 *
 * The kernel computes, for a minibatch of B rows, CleanRL's PPO objective (advantages
 * normalised per minibatch, clipped surrogate, clipped value loss, entropy bonus), its
 * gradient with respect to the 45 logits and the value of every row, and the six sums
 * the step's record needs (surrogate, value loss, entropy, approx KL, old approx KL,
 * clipped count). Versions:
 *   1  one block of 1,024 threads over the whole minibatch, each thread a row at a time
 *      with its 45 log-probabilities in a local array; the advantages' mean and std in
 *      the same kernel (session 9's first version, never committed: 53 us a step at 512
 *      rows on the H200 in ncu, dev/cuda/logs/2026-12-01-s9-run2-update_profile.log)
 *   2  a warp a row (lane k holds logits k and k + 32), 8 rows a block; each block's sums
 *      to a partial, the last block to finish adds them in one thread's serial loop
 *      (a62c83f: 15 us a step, run 3's profile)
 *   3  the same, the last block's sums by one warp in a fixed order (34e5223, the
 *      product, src/cuda/kernels/ppo_loss.cu: 9.9 us a step, run 5's profile)
 * Versions 2 and 3 take the advantages' mean and 1/(std + 1e-8) as inputs (in the product
 * ppo_gather_kernel computes them); version 1 computes them itself, so its time includes
 * that work.
 *
 * What is the product's code and what is not: the per-row arithmetic of versions 2 and 3
 * is src/cuda/kernels/ppo_loss.cu's at 34e5223; the product's bookkeeping after the sums
 * (record, Adam step, target KL, position) is left out: the sums go to an array.
 * fh_block_sum, fh_warp_sum, fh_last_block and fh_warp_sum_strided are copied from
 * src/cuda/kernels/block_reduce.cuh.
 *
 * Check: a float64 CPU reference of the same formulas on random inputs (logits N(0, 2),
 * actions uniform, old log-probabilities those of perturbed logits, advantages, values,
 * returns random): every dlogit and dvalue within 1e-7 + 1e-4 |want|, each sum within
 * 1e-5 relative (1e-6 absolute for the surrogate, a mean of terms of either sign).
 *
 * Build: make ppo_loss.   Run: ./ppo_loss [version] [rows]  (rows 512, 4096, 16384 by
 * default). Exit status 1 when a version fails its check. */
#include "common.h"

#define ROWS_PER_BLOCK 8
#define N_STATS 6
#define DEV_RUNS 7
#define CLIP 0.2f
#define VF_COEF 0.5f
#define ENT_COEF 0.01f
#define HI (FH_N_ACTIONS - 32)

typedef struct {
    const float *logits, *values, *old_logp, *adv, *returns, *old_values;
    const int *actions;
    int rows;
    double adv_mean, adv_inv; /* versions 2, 3 */
    float *dlogits, *dvalues;
    double *partials, *stats;
    unsigned *counter;
} loss_args;

/* ---- copied from src/cuda/kernels/block_reduce.cuh (34e5223) ---- */
__device__ double fh_block_sum(double v, double *shm)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, o);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    __syncthreads();
    if (lane == 0)
        shm[warp] = v;
    __syncthreads();
    if (warp == 0) {
        double s = lane < warps ? shm[lane] : 0.0;
        for (int o = 16; o > 0; o >>= 1)
            s += __shfl_down_sync(0xffffffffu, s, o);
        if (lane == 0)
            shm[32] = s;
    }
    __syncthreads();
    return shm[32];
}

__device__ __forceinline__ double fh_warp_sum(double v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float fh_warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__device__ double fh_warp_sum_strided(const double *p, int n, int stride)
{
    double s = 0.0;
    for (int i = threadIdx.x & 31; i < n; i += 32)
        s += p[(long long)i * stride];
    return fh_warp_sum(s);
}

__device__ int fh_last_block(unsigned *counter, unsigned blocks)
{
    __shared__ int last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
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

__device__ __forceinline__ float clampf(float x, float lo, float hi)
{
    return x < lo ? lo : (x > hi ? hi : x);
}

/* The value loss term and its gradient, as both kernels compute them. */
__device__ __forceinline__ float value_term(float v, float old_v, float ret, float cv, float *dv)
{
    float e = v - ret, sq = e * e;
    float dvo = v - old_v, vc = old_v + clampf(dvo, -CLIP, CLIP), ec = vc - ret, sqc = ec * ec;
    *dv = sq >= sqc ? cv * e : (dvo >= -CLIP && dvo <= CLIP) ? cv * ec : 0.0f;
    return sq > sqc ? sq : sqc;
}

/* ---- version 1: one block, a thread a row ---- */
__global__ void __launch_bounds__(1024) loss_v1(loss_args a)
{
    __shared__ double shm[33];
    int B = a.rows;
    double s = 0.0;
    for (int i = threadIdx.x; i < B; i += blockDim.x)
        s += a.adv[i];
    double mean = fh_block_sum(s, shm) / B, q = 0.0;
    for (int i = threadIdx.x; i < B; i += blockDim.x)
        q += (a.adv[i] - mean) * (a.adv[i] - mean);
    double var = fh_block_sum(q, shm);
    double inv = 1.0 / (sqrt(var / (B - 1)) + 1e-8);
    float c = 1.0f / (float)B, dent = -ENT_COEF / (float)B, cv = VF_COEF / (float)B;
    double st[N_STATS] = {0, 0, 0, 0, 0, 0};
    for (int i = threadIdx.x; i < B; i += blockDim.x) {
        const float *z = a.logits + (long long)i * FH_N_ACTIONS;
        float lp[FH_N_ACTIONS];
        float m = z[0];
        for (int k = 1; k < FH_N_ACTIONS; k++)
            m = z[k] > m ? z[k] : m;
        double se = 0.0;
        for (int k = 0; k < FH_N_ACTIONS; k++)
            se += exp((double)(z[k] - m));
        float lse = m + (float)log(se);
        for (int k = 0; k < FH_N_ACTIONS; k++)
            lp[k] = z[k] - lse;
        int act = a.actions[i];
        float newlp = lp[act];
        double h = 0.0;
        for (int k = 0; k < FH_N_ACTIONS; k++)
            h -= (double)expf(lp[k]) * lp[k];
        float adv = (float)((a.adv[i] - mean) * inv);
        double lrd = (double)newlp - a.old_logp[i], rd = exp(lrd);
        float r = expf(newlp - a.old_logp[i]);
        float l1 = -adv * r, l2 = -adv * clampf(r, 1.0f - CLIP, 1.0f + CLIP);
        float dnewlp = l1 >= l2 ? c * (-adv * r) : 0.0f;
        float g[FH_N_ACTIONS];
        double gs = 0.0;
        for (int k = 0; k < FH_N_ACTIONS; k++) {
            float term = dent * (-expf(lp[k]) * (lp[k] + 1.0f));
            g[k] = k == act ? dnewlp + term : term;
            gs += g[k];
        }
        for (int k = 0; k < FH_N_ACTIONS; k++)
            a.dlogits[(long long)i * FH_N_ACTIONS + k] = g[k] - expf(lp[k]) * (float)gs;
        float dv;
        st[1] += value_term(a.values[i], a.old_values[i], a.returns[i], cv, &dv);
        a.dvalues[i] = dv;
        st[0] += l1 > l2 ? l1 : l2;
        st[2] += (float)h;
        st[3] += (rd - 1.0) - lrd;
        st[4] += -lrd;
        st[5] += fabs(rd - 1.0) > CLIP ? 1.0 : 0.0;
    }
    for (int k = 0; k < N_STATS; k++) {
        double t = fh_block_sum(st[k], shm);
        if (threadIdx.x == 0)
            a.stats[k] = t;
    }
}

/* ---- versions 2 and 3: a warp a row (the product's per-row code) ---- */
template <int WARP_FINAL>
__global__ void loss_warp(loss_args a)
{
    __shared__ double rows_stats[ROWS_PER_BLOCK][N_STATS];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int i = blockIdx.x * ROWS_PER_BLOCK + warp;
    double st[N_STATS] = {0, 0, 0, 0, 0, 0};
    if (i < a.rows) {
        int B = a.rows;
        const float *z = a.logits + (long long)i * FH_N_ACTIONS;
        int has_hi = lane < HI;
        float z0 = z[lane], z1 = has_hi ? z[lane + 32] : -__int_as_float(0x7f800000);
        float m = fh_warp_max(fmaxf(z0, z1));
        double se = fh_warp_sum(exp((double)(z0 - m)) + (has_hi ? exp((double)(z1 - m)) : 0.0));
        float lse = m + (float)log(se);
        float lp0 = z0 - lse, lp1 = z1 - lse;
        float p0 = expf(lp0), p1 = has_hi ? expf(lp1) : 0.0f;
        int act = a.actions[i];
        float newlp = __shfl_sync(0xffffffffu, act < 32 ? lp0 : lp1, act & 31);
        double h = -fh_warp_sum((double)p0 * lp0 + (has_hi ? (double)p1 * lp1 : 0.0));
        float adv = (float)((a.adv[i] - a.adv_mean) * a.adv_inv);
        float old = a.old_logp[i];
        double lrd = (double)newlp - old, rd = exp(lrd);
        float r = expf(newlp - old);
        float l1 = -adv * r, l2 = -adv * clampf(r, 1.0f - CLIP, 1.0f + CLIP);
        float c = 1.0f / (float)B, dent = -ENT_COEF / (float)B;
        float dnewlp = l1 >= l2 ? c * (-adv * r) : 0.0f;
        float t0 = dent * (-p0 * (lp0 + 1.0f)), t1 = dent * (-p1 * (lp1 + 1.0f));
        float g0 = act == lane ? dnewlp + t0 : t0;
        float g1 = has_hi ? (act == lane + 32 ? dnewlp + t1 : t1) : 0.0f;
        float gs = (float)fh_warp_sum((double)g0 + (double)g1);
        float *dz = a.dlogits + (long long)i * FH_N_ACTIONS;
        dz[lane] = g0 - p0 * gs;
        if (has_hi)
            dz[lane + 32] = g1 - p1 * gs;
        float dv;
        float vterm = value_term(a.values[i], a.old_values[i], a.returns[i], VF_COEF / (float)B, &dv);
        if (lane == 0) {
            a.dvalues[i] = dv;
            st[0] = l1 > l2 ? l1 : l2;
            st[1] = vterm;
            st[2] = (float)h;
            st[3] = (rd - 1.0) - lrd;
            st[4] = -lrd;
            st[5] = fabs(rd - 1.0) > CLIP ? 1.0 : 0.0;
        }
    }
    if (lane == 0)
        for (int k = 0; k < N_STATS; k++)
            rows_stats[warp][k] = st[k];
    __syncthreads();
    if (threadIdx.x < N_STATS) {
        double t = 0.0;
        for (int w = 0; w < ROWS_PER_BLOCK; w++)
            t += rows_stats[w][threadIdx.x];
        a.partials[(long long)blockIdx.x * N_STATS + threadIdx.x] = t;
    }
    if (!fh_last_block(a.counter, gridDim.x))
        return;
    if (WARP_FINAL) {
        if (threadIdx.x >= 32)
            return;
        for (int k = 0; k < N_STATS; k++) {
            double t = fh_warp_sum_strided(a.partials + k, (int)gridDim.x, N_STATS);
            if (threadIdx.x == 0)
                a.stats[k] = t;
        }
    } else if (threadIdx.x == 0) {
        double sum[N_STATS] = {0, 0, 0, 0, 0, 0};
        for (unsigned b = 0; b < gridDim.x; b++)
            for (int k = 0; k < N_STATS; k++)
                sum[k] += a.partials[(long long)b * N_STATS + k];
        for (int k = 0; k < N_STATS; k++)
            a.stats[k] = sum[k];
    }
}

/* ---- the float64 reference ---- */
/* ambiguous[i]: row i lies within rounding of a branch (a ratio at the clip band's edge,
 * a clipped value error equal to the unclipped one, a value change at the clip): float32 and
 * float64 may take different branches there, so its gradient is not checked (counted). */
static void reference(const float *logits, const int *actions, const float *old_logp,
                      const float *adv_in, const float *values, const float *old_values,
                      const float *returns, int B, double *dlogits, double *dvalues,
                      double *stats, double *mean_out, double *inv_out, char *ambiguous)
{
    double mean = 0, var = 0;
    for (int i = 0; i < B; i++)
        mean += adv_in[i];
    mean /= B;
    for (int i = 0; i < B; i++)
        var += (adv_in[i] - mean) * (adv_in[i] - mean);
    double inv = 1.0 / (sqrt(var / (B - 1)) + 1e-8);
    *mean_out = mean;
    *inv_out = inv;
    memset(stats, 0, N_STATS * sizeof(double));
    for (int i = 0; i < B; i++) {
        const float *z = logits + (size_t)i * FH_N_ACTIONS;
        double m = z[0], se = 0, lp[FH_N_ACTIONS], h = 0;
        for (int k = 1; k < FH_N_ACTIONS; k++)
            m = z[k] > m ? z[k] : m;
        for (int k = 0; k < FH_N_ACTIONS; k++)
            se += exp(z[k] - m);
        for (int k = 0; k < FH_N_ACTIONS; k++) {
            lp[k] = z[k] - m - log(se);
            h -= exp(lp[k]) * lp[k];
        }
        int act = actions[i];
        double adv = (adv_in[i] - mean) * inv, lr = lp[act] - old_logp[i], r = exp(lr);
        double l1 = -adv * r, l2 = -adv * fmin(fmax(r, 1.0 - CLIP), 1.0 + CLIP);
        double dnewlp = l1 >= l2 ? -adv * r / B : 0.0, dent = -ENT_COEF / B, g[FH_N_ACTIONS], gs = 0;
        for (int k = 0; k < FH_N_ACTIONS; k++) {
            g[k] = (k == act ? dnewlp : 0.0) + dent * (-exp(lp[k]) * (lp[k] + 1.0));
            gs += g[k];
        }
        for (int k = 0; k < FH_N_ACTIONS; k++)
            dlogits[(size_t)i * FH_N_ACTIONS + k] = g[k] - exp(lp[k]) * gs;
        double v = values[i], e = v - returns[i], dvo = v - old_values[i];
        double vc = old_values[i] + fmin(fmax(dvo, -CLIP), CLIP), ec = vc - returns[i];
        double cv = VF_COEF / B;
        dvalues[i] = e * e >= ec * ec ? cv * e : (fabs(dvo) <= CLIP ? cv * ec : 0.0);
        ambiguous[i] = fabs(r - (1.0 + CLIP)) < 1e-5 || fabs(r - (1.0 - CLIP)) < 1e-5 ||
                       (fabs(dvo) > CLIP && fabs(e * e - ec * ec) < 1e-6) ||
                       fabs(fabs(dvo) - CLIP) < 1e-6;
        stats[0] += l1 > l2 ? l1 : l2;
        stats[1] += fmax(e * e, ec * ec);
        stats[2] += h;
        stats[3] += (r - 1.0) - lr;
        stats[4] += -lr;
        stats[5] += fabs(r - 1.0) > CLIP ? 1.0 : 0.0;
    }
}

typedef struct {
    int version, blocks;
    loss_args a;
} run_ctx;

static void run(void *p)
{
    run_ctx *r = (run_ctx *)p;
    if (r->version == 1)
        loss_v1<<<1, 1024>>>(r->a);
    else if (r->version == 2)
        loss_warp<0><<<r->blocks, ROWS_PER_BLOCK * 32>>>(r->a);
    else
        loss_warp<1><<<r->blocks, ROWS_PER_BLOCK * 32>>>(r->a);
    cudaCheckLaunch();
}

int main(int argc, char **argv)
{
    int only = argc > 1 ? atoi(argv[1]) : 0;
    int sizes[3] = {512, 4096, 16384}, n_sizes = 3;
    if (argc > 2) {
        sizes[0] = atoi(argv[2]);
        n_sizes = 1;
    }
    dev_print_device();
    int failed = 0;
    for (int si = 0; si < n_sizes; si++) {
        int B = sizes[si];
        dev_rng rng = {12345 + (uint64_t)B};
        size_t nz = (size_t)B * FH_N_ACTIONS;
        float *logits = (float *)host_alloc(nz * 4), *old_logp = (float *)host_alloc(B * 4);
        float *adv = (float *)host_alloc(B * 4), *values = (float *)host_alloc(B * 4);
        float *old_values = (float *)host_alloc(B * 4), *returns = (float *)host_alloc(B * 4);
        int *actions = (int *)host_alloc(B * 4);
        for (size_t i = 0; i < nz; i++)
            logits[i] = dev_rng_uniform(&rng, -2.0f, 2.0f);
        for (int i = 0; i < B; i++) {
            actions[i] = dev_rng_int(&rng, FH_N_ACTIONS);
            /* the old policy: these logits perturbed, so ratios spread around 1 */
            double m = -1e30, se = 0, zk[FH_N_ACTIONS];
            for (int k = 0; k < FH_N_ACTIONS; k++) {
                zk[k] = logits[(size_t)i * FH_N_ACTIONS + k] + dev_rng_uniform(&rng, -0.3f, 0.3f);
                m = zk[k] > m ? zk[k] : m;
            }
            for (int k = 0; k < FH_N_ACTIONS; k++)
                se += exp(zk[k] - m);
            old_logp[i] = (float)(zk[actions[i]] - m - log(se));
            adv[i] = dev_rng_uniform(&rng, -1.0f, 1.5f);
            values[i] = dev_rng_uniform(&rng, -1.0f, 1.0f);
            old_values[i] = values[i] + dev_rng_uniform(&rng, -0.4f, 0.4f);
            returns[i] = dev_rng_uniform(&rng, -1.0f, 1.0f);
        }
        double *rd = (double *)host_alloc(nz * 8), *rv = (double *)host_alloc(B * 8), rs[N_STATS];
        double mean, inv;
        char *ambiguous = (char *)host_alloc(B);
        reference(logits, actions, old_logp, adv, values, old_values, returns, B, rd, rv, rs,
                  &mean, &inv, ambiguous);
        int n_ambiguous = 0;
        for (int i = 0; i < B; i++)
            n_ambiguous += ambiguous[i];
        int blocks = (B + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK;
        loss_args a;
        memset(&a, 0, sizeof a);
        float *d[8];
        const float *src[6] = {logits, values, old_logp, adv, returns, old_values};
        for (int k = 0; k < 6; k++) {
            size_t n = k == 0 ? nz : (size_t)B;
            cudaCheck(cudaMalloc((void **)&d[k], n * 4));
            cudaCheck(cudaMemcpy(d[k], src[k], n * 4, cudaMemcpyHostToDevice));
        }
        int *d_actions;
        cudaCheck(cudaMalloc((void **)&d_actions, B * 4));
        cudaCheck(cudaMemcpy(d_actions, actions, B * 4, cudaMemcpyHostToDevice));
        cudaCheck(cudaMalloc((void **)&d[6], nz * 4));
        cudaCheck(cudaMalloc((void **)&d[7], B * 4));
        double *d_partials, *d_stats;
        unsigned *d_counter;
        cudaCheck(cudaMalloc((void **)&d_partials, (size_t)blocks * N_STATS * 8));
        cudaCheck(cudaMalloc((void **)&d_stats, N_STATS * 8));
        cudaCheck(cudaMalloc((void **)&d_counter, 4));
        cudaCheck(cudaMemset(d_counter, 0, 4));
        a.logits = d[0];
        a.values = d[1];
        a.old_logp = d[2];
        a.adv = d[3];
        a.returns = d[4];
        a.old_values = d[5];
        a.actions = d_actions;
        a.rows = B;
        a.adv_mean = mean;
        a.adv_inv = inv;
        a.dlogits = d[6];
        a.dvalues = d[7];
        a.partials = d_partials;
        a.stats = d_stats;
        a.counter = d_counter;
        float *got_dz = (float *)host_alloc(nz * 4), *got_dv = (float *)host_alloc(B * 4);
        for (int v = 1; v <= 3; v++) {
            if (only && v != only)
                continue;
            run_ctx ctx;
            ctx.version = v;
            ctx.blocks = blocks;
            ctx.a = a;
            cudaCheck(cudaMemset(d[6], 0xFF, nz * 4)); /* NaN: a row not written shows */
            run(&ctx);
            cudaCheck(cudaDeviceSynchronize());
            double gs[N_STATS];
            cudaCheck(cudaMemcpy(got_dz, d[6], nz * 4, cudaMemcpyDeviceToHost));
            cudaCheck(cudaMemcpy(got_dv, d[7], B * 4, cudaMemcpyDeviceToHost));
            cudaCheck(cudaMemcpy(gs, d_stats, sizeof gs, cudaMemcpyDeviceToHost));
            dev_check chk;
            dev_check_init(&chk);
            for (size_t i = 0; i < nz; i++)
                if (!ambiguous[i / FH_N_ACTIONS])
                    dev_check_one(&chk, (long long)i, got_dz[i], rd[i], 1e-7, 1e-4);
            for (int i = 0; i < B; i++)
                if (!ambiguous[i])
                    dev_check_one(&chk, (long long)(nz + i), got_dv[i], rv[i], 1e-7, 1e-4);
            int stats_ok = fabs(gs[0] - rs[0]) / B <= 1e-6 + (double)n_ambiguous / B;
            for (int k = 1; k < 5; k++)
                stats_ok &= fabs(gs[k] - rs[k]) <= 1e-5 * fmax(fabs(rs[k]), 1.0) + n_ambiguous;
            stats_ok &= fabs(gs[5] - rs[5]) <= n_ambiguous; /* clipped rows: a count */
            float ms = dev_time_median_ms(run, &ctx, DEV_RUNS);
            int ok = chk.failed == 0 && stats_ok;
            failed |= !ok;
            printf("rows %6d  v%d  %8.4f ms  max |err| %.2e (%d rows at a branch edge not "
                   "checked)  stats %s  %s", B, v, ms, chk.max_abs, n_ambiguous,
                   stats_ok ? "ok" : "differ", ok ? "ok\n" : "FAIL");
            if (chk.failed)
                printf(" (first at %lld: %g, want %g)", chk.first_bad, chk.first_got, chk.first_want);
            if (!ok)
                printf("\n");
        }
        for (int k = 0; k < 8; k++)
            cudaFree(d[k]);
        cudaFree(d_actions);
        cudaFree(d_partials);
        cudaFree(d_stats);
        cudaFree(d_counter);
        free(logits); free(old_logp); free(adv); free(values); free(old_values); free(returns);
        free(actions); free(rd); free(rv); free(got_dz); free(got_dv); free(ambiguous);
    }
    return failed;
}
