/* update_gather.cu — a step's minibatch gathered from the batch on the device, in the
 * order of minibatch_order.cuh (the CPU update's order, position for position). Each
 * warp takes `chunk` consecutive rows at a time (the plan's grid is capped, so a
 * minibatch of 16,384 rows is 8 rows a warp): lane j computes row j's sample (the
 * Feistel order, ~30 64-bit mixes: once a row, not once a lane), then the lanes copy
 * the chunk's rows column by column. The position (epoch, minibatch) is the phase's,
 * on the device. A capped grid also keeps the last block's sum short (session 19's
 * profile: 35 us a step at 2,048 blocks of 16,384 rows). */

#include "bf16_round.cuh" /* the bf16 networks' input */

extern "C" __global__ void ppo_gather_kernel(fh_ppo_gather_args a)
{
    fh_pdl_wait(); /* pdl.cuh: first, before any read */
    __shared__ double sums[2][32];
    const unsigned full = 0xffffffffu;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (int)(blockDim.x >> 5);
    long long n_warps = (long long)gridDim.x * warps;
    long long warp_id = (long long)blockIdx.x * warps + warp;
    long long chunk = (a.rows + n_warps - 1) / n_warps;
    if (chunk > 32)
        chunk = 32;
    const fh_update_phase *ph = &a.state->ppo;
    const unsigned long long key = a.keys[ph->epoch];
    const long long first = (long long)ph->minibatch * a.minibatch;
    double s1 = 0.0, s2 = 0.0; /* this lane's rows' advantages: sum, sum of squares */
    for (long long base = warp_id * chunk; base < a.rows; base += n_warps * chunk) {
        long long row = base + lane, r = 0;
        int count = (int)(a.rows - base < chunk ? a.rows - base : chunk);
        if (lane < count) {
            r = fh_minibatch_order(key, a.batch.n, first + row);
            double adv = a.batch.advantages[r];
            a.actions[row] = a.batch.actions[r];
            a.old_logp[row] = a.batch.log_probs[r];
            a.adv[row] = (float)adv;
            a.returns[row] = a.batch.returns[r];
            a.old_values[row] = a.batch.values[r];
            s1 += adv;
            s2 += adv * adv;
        }
        for (int j = 0; j < count; j++) { /* warp-uniform */
            long long rj = __shfl_sync(full, r, j);
            const float *src = a.batch.states + rj * a.batch.states_pitch;
            if (a.states16) { /* the bf16 networks' input, rows padded for cuBLASLt */
                unsigned short *dst = a.states16 + (base + j) * FH_BF16_LD(FH_STATE_DIM);
                for (int k = lane; k < FH_STATE_DIM; k += 32)
                    dst[k] = fh_float_to_bf16(src[k]);
                continue;
            }
            float *dst = a.states + (base + j) * FH_STATE_DIM;
            for (int k = lane; k < FH_STATE_DIM; k += 32)
                dst[k] = src[k];
        }
    }
    if (!a.norm_adv)
        return;
    /* the minibatch's advantage mean and unbiased std (ppo_loss.c's normalisation):
     * sums of a and a^2 in double, by warp, block, then the last block in a fixed order */
    s1 = fh_warp_sum(s1);
    s2 = fh_warp_sum(s2);
    if (lane == 0) {
        sums[0][warp] = s1;
        sums[1][warp] = s2;
    }
    __syncthreads();
    if (threadIdx.x < 2) {
        double t = 0.0;
        for (int w = 0; w < warps; w++)
            t += sums[threadIdx.x][w];
        a.partials[2 * blockIdx.x + threadIdx.x] = t;
    }
    if (!fh_last_block(a.counter, gridDim.x))
        return;
    if (threadIdx.x < 32) {
        double t1 = fh_warp_sum_strided(a.partials, (int)gridDim.x, 2);
        double t2 = fh_warp_sum_strided(a.partials + 1, (int)gridDim.x, 2);
        if (threadIdx.x != 0)
            return;
        if (a.dist_sums) { /* data-parallel: all-reduced, then adv_finish_kernel */
            a.dist_sums[0] = t1;
            a.dist_sums[1] = t2;
            return;
        }
        fh_adv_norm_finish(a.state, t1, t2, a.rows);
    }
}

/* Data-parallel: the normalisation from the all-reduced sums over every rank's rows
 * (update_finish.cuh). One thread. */
extern "C" __global__ void adv_finish_kernel(fh_adv_finish_args a)
{
    fh_pdl_wait(); /* pdl.cuh: first, before any read */
    if (blockIdx.x == 0 && threadIdx.x == 0)
        fh_adv_norm_finish(a.state, a.sums[0], a.sums[1], a.rows);
}

/* The curiosity model's input (state features 0..31, the action's exposure and
 * urgency, the exposure held) and its target (the next bar's features 0..31), as
 * ppo_update.c's fit_curiosity builds them. */
extern "C" __global__ void curiosity_gather_kernel(fh_curiosity_gather_args a)
{
    fh_pdl_wait(); /* pdl.cuh: first, before any read */
    int row = (int)((blockIdx.x * (unsigned)blockDim.x + threadIdx.x) >> 5);
    int lane = threadIdx.x & 31;
    if (row >= a.rows)
        return;
    const fh_update_phase *ph = &a.state->curiosity;
    long long pos = (long long)ph->minibatch * a.minibatch + row;
    long long r = fh_minibatch_order(a.keys[ph->epoch], a.batch.n, pos);
    const float *s = a.batch.states + r * a.batch.states_pitch;
    const float *next = a.features + (long long)(a.batch.bars[r] + 1) * FH_N_MARKET_FEATURES;
    float *in = a.inputs + (long long)row * FH_CURIOSITY_INPUT_DIM;
    float *target = a.targets + (long long)row * FH_CURIOSITY_TARGET_DIM;
    in[lane] = s[lane]; /* FH_CURIOSITY_TARGET_DIM == 32 lanes */
    target[lane] = next[lane];
    if (lane == 0) {
        int act = a.batch.actions[r];
        in[FH_CURIOSITY_TARGET_DIM] = action_to_exposure(act);
        in[FH_CURIOSITY_TARGET_DIM + 1] = action_to_urgency(act);
        in[FH_CURIOSITY_TARGET_DIM + 2] = a.batch.exposures[r];
    }
}
