/* ppo_loss.cu — the PPO objective of one minibatch and its gradient with respect to the
 * logits and the values (ppo_loss.c's arithmetic; the sums over actions and rows run
 * in fixed trees instead of serially), one warp a row, and, in the last block to
 * finish, the step's bookkeeping (update_finish.cuh): the sums, the record, the Adam
 * step, target-KL stop, the next position.
 *
 *   ratio = exp(newlogp - oldlogp), A normalised per minibatch (unbiased std, + 1e-8)
 *   pg    = mean max(-A ratio, -A clip(ratio, 1 - c, 1 + c))
 *   v     = 0.5 mean (V - R)^2, or max with the clipped value's when vclip_coef > 0
 *   loss  = pg - ent_coef entropy + vf_coef v
 *
 * ent_coef is read from the update's state (the host writes each update's, annealed
 * with anneal_ent), not from the arguments a captured graph would freeze. */

#include "bf16_round.cuh" /* a bf16 critic's head input and hidden gradient */

__device__ __forceinline__ float fh_clampf(float x, float lo, float hi)
{
    return x < lo ? lo : (x > hi ? hi : x);
}

/* One warp a row: lane k holds logits k and k + 32 (k + 32 < 45), and the value head's
 * inputs k and k + 32 (its width 64). */
#define FH_LOSS_HI (FH_N_ACTIONS - 32)
static_assert(32 < FH_N_ACTIONS && FH_N_ACTIONS <= 64,
              "ppo_loss_kernel: a row of logits in one warp, two columns a lane");
static_assert(FH_LOSS_HEAD_WIDTH == 64, "ppo_loss_kernel: the value head's inputs two a lane");

__device__ __forceinline__ float fh_head_input(const fh_ppo_loss_args *a, long long at)
{
    return a->head_in16 ? fh_bf16_to_float(a->head_in16[at]) : a->head_in[at];
}

/* The value head fused here (session 21): at 512 rows the critic's 1-wide output layer
 * and its backward were five small kernels on the step's critical path (a matmul and a
 * bias pass forward; the bias gradient, the input-gradient matmul and the ReLU mask of
 * the last hidden layer backward). A row's value is a 64-term dot product: one warp's. */
extern "C" __global__ void ppo_loss_kernel(fh_ppo_loss_args a)
{
    fh_pdl_wait(); /* pdl.cuh: first, before any read */
    __shared__ double rows_stats[FH_LOSS_ROWS][FH_LOSS_STATS];
    __shared__ double head_sums[FH_LOSS_ROWS][FH_LOSS_HEAD_SUMS];
    fh_update_phase *ph = &a.state->ppo;
    int skip = ph->failed || ph->stopped; /* uniform: nobody writes before the last block */
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    double st[FH_LOSS_STATS] = {0, 0, 0, 0, 0, 0}; /* pg, v, entropy, kl, kl_old, clipped */
    double dw0 = 0.0, dw1 = 0.0, db0 = 0.0, db1 = 0.0, dbh = 0.0; /* this lane's columns */
    const float w0 = a.head_w[lane], w1 = a.head_w[lane + 32], bh = a.head_b[0];
    const int B = a.rows;
    const long long stride = (long long)gridDim.x * FH_LOSS_ROWS;
    for (long long i = (long long)blockIdx.x * FH_LOSS_ROWS + warp; !skip && i < B;
         i += stride) {
        /* the value: the head's dot product, its sum in double */
        const long long hat = i * FH_LOSS_HEAD_WIDTH;
        float h0 = fh_head_input(&a, hat + lane), h1 = fh_head_input(&a, hat + lane + 32);
        float v = (float)fh_warp_sum((double)h0 * w0 + (double)h1 * w1) + bh;
        const float *z = a.logits + i * FH_N_ACTIONS;
        int has_hi = lane < FH_LOSS_HI;
        float z0 = z[lane], z1 = has_hi ? z[lane + 32] : -__int_as_float(0x7f800000); /* -inf */
        float m = fh_warp_max(fmaxf(z0, z1));
        double se = fh_warp_sum(exp((double)(z0 - m)) + (has_hi ? exp((double)(z1 - m)) : 0.0));
        float lse = m + (float)log(se);
        float lp0 = z0 - lse, lp1 = z1 - lse;
        float p0 = expf(lp0), p1 = has_hi ? expf(lp1) : 0.0f;
        int act = a.actions[i];
        float newlp = __shfl_sync(0xffffffffu, act < 32 ? lp0 : lp1, act & 31);
        double h = -fh_warp_sum((double)p0 * lp0 + (has_hi ? (double)p1 * lp1 : 0.0));
        float adv = a.norm_adv ? (float)((a.adv[i] - a.state->adv_mean) * a.state->adv_inv)
                               : a.adv[i];
        float old = a.old_logp[i];
        double lrd = (double)newlp - old;
        double rd = exp(lrd);
        float r = expf(newlp - old);
        float l1 = -adv * r, l2 = -adv * fh_clampf(r, 1.0f - a.clip_coef, 1.0f + a.clip_coef);
        float c = 1.0f / (float)B, dent = -a.state->ent_coef / (float)B;
        float dnewlp = l1 >= l2 ? c * (-adv * r) : 0.0f;
        /* d/dlogp: the log-prob's (at the action) plus the entropy bonus's; then the
         * log-softmax's backward */
        float t0 = dent * (-p0 * (lp0 + 1.0f)), t1 = dent * (-p1 * (lp1 + 1.0f));
        float g0 = act == lane ? dnewlp + t0 : t0;
        float g1 = has_hi ? (act == lane + 32 ? dnewlp + t1 : t1) : 0.0f;
        float gs = (float)fh_warp_sum((double)g0 + (double)g1);
        float *dz = a.dlogits + i * FH_N_ACTIONS;
        dz[lane] = g0 - p0 * gs;
        if (has_hi)
            dz[lane + 32] = g1 - p1 * gs;
        /* the value loss and its gradient */
        float ret = a.returns[i], cv = a.vf_coef / (float)B;
        float e = v - ret, sq = e * e, dv, vterm;
        if (a.vclip_coef > 0.0f) {
            float dvo = v - a.old_values[i];
            float vc = a.old_values[i] + fh_clampf(dvo, -a.vclip_coef, a.vclip_coef);
            float ec = vc - ret, sqc = ec * ec;
            vterm = sq > sqc ? sq : sqc;
            dv = sq >= sqc ? cv * e
                 : (dvo >= -a.vclip_coef && dvo <= a.vclip_coef) ? cv * ec : 0.0f;
        } else {
            vterm = sq;
            dv = cv * e;
        }
        /* the head's backward: dW += dv h, db += dv; the hidden layer's gradient dv w
         * where its ReLU output was positive, and that layer's bias gradient */
        float g_0 = h0 > 0.0f ? dv * w0 : 0.0f, g_1 = h1 > 0.0f ? dv * w1 : 0.0f;
        if (a.hidden_dz16) {
            a.hidden_dz16[hat + lane] = fh_float_to_bf16(g_0);
            a.hidden_dz16[hat + lane + 32] = fh_float_to_bf16(g_1);
        } else {
            a.hidden_dz[hat + lane] = g_0;
            a.hidden_dz[hat + lane + 32] = g_1;
        }
        dw0 += (double)dv * h0;
        dw1 += (double)dv * h1;
        db0 += g_0;
        db1 += g_1;
        if (lane == 0) {
            dbh += dv;
            a.values[i] = v;
            st[0] += l1 > l2 ? l1 : l2;
            st[1] += vterm;
            st[2] += (float)h;
            st[3] += (rd - 1.0) - lrd;
            st[4] += -lrd;
            st[5] += fabs(rd - 1.0) > a.clip_coef ? 1.0 : 0.0;
        }
    }
    /* the block's sums, warps in order; the last block adds the loss's over the blocks
     * in order, ppo_head_grad_kernel the head's */
    if (lane == 0)
        for (int k = 0; k < FH_LOSS_STATS; k++)
            rows_stats[warp][k] = st[k];
    double *hs = head_sums[warp];
    hs[lane] = dw0;
    hs[lane + 32] = dw1;
    hs[FH_LOSS_HEAD_WIDTH + lane] = db0;
    hs[FH_LOSS_HEAD_WIDTH + lane + 32] = db1;
    if (lane == 0)
        hs[2 * FH_LOSS_HEAD_WIDTH] = dbh;
    __syncthreads();
    if (threadIdx.x < FH_LOSS_STATS) {
        double t = 0.0;
        for (int w = 0; w < FH_LOSS_ROWS; w++)
            t += rows_stats[w][threadIdx.x];
        a.partials[(long long)blockIdx.x * FH_LOSS_STATS + threadIdx.x] = t;
    }
    for (int k = threadIdx.x; k < FH_LOSS_HEAD_SUMS; k += blockDim.x) {
        double t = 0.0;
        for (int w = 0; w < FH_LOSS_ROWS; w++)
            t += head_sums[w][k];
        a.head_partials[(long long)k * gridDim.x + blockIdx.x] = t; /* a column's blocks
                                                                     side by side */
    }
    if (!fh_last_block(a.counter, gridDim.x) || threadIdx.x >= 32)
        return;
    double sum[FH_LOSS_STATS];
    for (int k = 0; k < FH_LOSS_STATS; k++)
        sum[k] = fh_warp_sum_strided(a.partials + k, (int)gridDim.x, FH_LOSS_STATS);
    if (threadIdx.x != 0)
        return;
    if (a.dist_sums) { /* data-parallel: all-reduced, then ppo_loss_finish_kernel */
        for (int k = 0; k < FH_LOSS_STATS; k++)
            a.dist_sums[k] = sum[k];
        return;
    }
    fh_ppo_loss_finish(&a, sum, a.rows, skip);
}

/* The value head's gradients from ppo_loss_kernel's block sums (its head_partials),
 * one warp a column, the blocks in a fixed order: the head's weights (columns 0..63),
 * the last hidden layer's bias (64..127), the head's bias (128). Off the step's
 * critical path: on the weight gradients' stream, beside the chain of input gradients. */
extern "C" __global__ void ppo_head_grad_kernel(fh_ppo_head_grad_args a)
{
    fh_pdl_wait(); /* pdl.cuh: first, before any read */
    int k = (int)((blockIdx.x * blockDim.x + threadIdx.x) >> 5);
    if (k >= FH_LOSS_HEAD_SUMS)
        return;
    double t = fh_warp_sum_strided(a.partials + (long long)k * a.blocks, a.blocks, 1);
    if ((threadIdx.x & 31) != 0)
        return;
    float *out = k < FH_LOSS_HEAD_WIDTH       ? a.head_dw + k
                 : k < 2 * FH_LOSS_HEAD_WIDTH ? a.hidden_db + (k - FH_LOSS_HEAD_WIDTH)
                                              : a.head_db;
    *out = (float)t;
}

/* Data-parallel: the step's end from the all-reduced sums over every rank's rows
 * (update_finish.cuh); skip as ppo_loss_kernel read it (nothing changed the phase
 * since). One thread. */
extern "C" __global__ void ppo_loss_finish_kernel(fh_ppo_loss_args a)
{
    fh_pdl_wait(); /* pdl.cuh: first, before any read */
    if (blockIdx.x != 0 || threadIdx.x != 0)
        return;
    const fh_update_phase *ph = &a.state->ppo;
    fh_ppo_loss_finish(&a, a.dist_sums, a.total_rows, ph->failed || ph->stopped);
}

/* The curiosity model's loss: mean squared error over every element (fh_mse_forward /
 * fh_mse_backward), its gradient, and the phase's bookkeeping. */
extern "C" __global__ void __launch_bounds__(1024) mse_loss_kernel(fh_mse_loss_args a)
{
    fh_pdl_wait(); /* pdl.cuh: first, before any read */
    __shared__ double shm[33];
    fh_update_phase *ph = &a.state->curiosity;
    int skip = ph->failed || a.state->ppo.failed; /* the CPU's update returns first */
    __syncthreads();
    if (skip) {
        if (threadIdx.x == 0) {
            ph->apply = 0;
            fh_phase_advance(ph, a.minibatches_per_epoch);
        }
        return;
    }
    long long n = (long long)a.rows * FH_CURIOSITY_TARGET_DIM;
    float c = 2.0f / (float)n;
    double s = 0.0;
    for (long long i = threadIdx.x; i < n; i += blockDim.x) {
        double e = (double)a.pred[i] - a.target[i];
        s += e * e;
        a.dpred[i] = c * (a.pred[i] - a.target[i]);
    }
    s = fh_block_sum(s, shm);
    if (threadIdx.x != 0)
        return;
    float loss = (float)(s / (double)n);
    if (!isfinite(loss)) {
        fh_phase_fail(ph, FH_UFAIL_CURIOSITY_LOSS);
    } else {
        ph->loss_sum += loss;
        ph->n_records++;
        ph->adam_step++;
        ph->apply = 1;
    }
    fh_phase_advance(ph, a.minibatches_per_epoch);
}
