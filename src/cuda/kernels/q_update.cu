/* q_update.cu — the DQN/PQN update's NVRTC program (issue 18; gpu_q_update.c):
 * compiled after common_device_functions.cuh, without fused multiply-adds and with
 * IEEE division and square roots (the update follows q_update.c's arithmetic). The
 * Q-networks' layers around their cuBLAS matmuls (update_layers.c), the losses, the
 * targets and the replay ring; the optimiser (adam.cu) and the column sums
 * (layer_elementwise.cu) are the PPO update's, included here unchanged.
 *
 * A PQN update: q_max_kernel over the collection's next states (the network as it is),
 * q_lambda_kernel (the Q(lambda) scan), then epochs of steps
 *
 *   q_gather_kernel -> forward (matmuls, q_hidden_forward_kernel) -> q_loss_kernel ->
 *   backward (q_hidden_backward_kernel, bias_grad_kernel, matmuls) ->
 *   grad_sumsq_kernel -> adam_kernel
 *
 * and a DQN step is q_sample_kernel -> the online and target networks on s' ->
 * q_double_dqn_kernel -> the same forward, loss (Huber), backward and Adam ->
 * q_target_kernel. Steps are captured into CUDA graphs; their position is on the device
 * (q_update_args.h). Row kernels use one warp a row; sums over a row run in double by a
 * fixed butterfly, sums over rows in fixed trees (block_reduce.cuh), so a run is
 * bit-identical to the next on one GPU. */
#include "pdl.cuh"
#include "minibatch_order.cuh"
#include "q_targets.cuh"
#include "update_args.h"
#include "q_update_args.h"
#include "block_reduce.cuh"
#include "layer_elementwise.cu"
#include "adam.cu"

/* One warp a row: lane k holds columns k and k + 32 of a row of 45. */
#define FH_Q_HI (FH_N_ACTIONS - 32)
static_assert(32 < FH_N_ACTIONS && FH_N_ACTIONS <= 64,
              "q_max_kernel, q_loss_kernel, q_double_dqn_kernel: a row of actions in one warp, "
              "two columns a lane");

__device__ __forceinline__ int fh_q_row(void)
{
    return (int)((blockIdx.x * (unsigned)blockDim.x + threadIdx.x) >> 5);
}

/* The step that ran at (epoch, minibatch) is done: note it and move to the next. */
__device__ void fh_q_phase_advance(fh_update_phase *ph, int minibatches_per_epoch)
{
    ph->step_epoch = ph->epoch;
    ph->step_minibatch = ph->minibatch;
    if (++ph->minibatch == minibatches_per_epoch) {
        ph->minibatch = 0;
        ph->epoch++;
    }
}

/* ---- PQN: the targets ---- */

extern "C" __global__ void q_max_kernel(fh_q_max_args a)
{
    fh_pdl_wait(); /* pdl.cuh: first, before any read */
    long long row = (long long)(blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x) >> 5;
    int lane = threadIdx.x & 31;
    if (row >= a.rows)
        return;
    const float *q = a.q + row * FH_N_ACTIONS;
    float v = q[lane];
    if (lane < FH_Q_HI)
        v = fmaxf(v, q[lane + 32]);
    v = fh_warp_max(v);
    if (lane == 0)
        a.out[row] = v;
}

/* fh_q_lambda_returns (dqn_targets.c): one thread a row, the shared scan (q_targets.cuh). */
extern "C" __global__ void q_lambda_kernel(fh_q_lambda_args a)
{
    fh_pdl_wait(); /* pdl.cuh: first, before any read */
    int n = blockIdx.x * blockDim.x + threadIdx.x;
    if (n >= a.n_episodes)
        return;
    const long long row = (long long)n * a.n_steps;
    fh_q_lambda_row(a.out + row, a.rewards + row, a.terminal + row, a.truncated + row,
                    a.next_max + row, a.n_steps, a.gamma, a.lambda);
}

/* ---- a step ---- */

extern "C" __global__ void q_gather_kernel(fh_q_gather_args a)
{
    fh_pdl_wait(); /* pdl.cuh: first, before any read */
    int row = fh_q_row(), lane = threadIdx.x & 31;
    if (row >= a.rows)
        return;
    const fh_update_phase *ph = &a.state->base.ppo;
    long long pos = (long long)ph->minibatch * a.minibatch + row;
    long long r = fh_minibatch_order(a.keys[ph->epoch], a.n, pos);
    const float *s = a.states + r * FH_STATE_DIM;
    for (int k = lane; k < FH_STATE_DIM; k += 32)
        a.mb_states[(long long)row * FH_STATE_DIM + k] = s[k];
    if (lane == 0) {
        a.mb_actions[row] = a.actions[r];
        a.mb_targets[row] = a.returns[r];
    }
}

/* The loss of one row (q_update.c's fh_q_minibatch_step): PQN 0.5 d^2 with d = Q - y in
 * float and the gradient d; DQN fh_huber_loss of one element (the loss rounded to
 * float, as it returns it; the gradient clamp(Q - y, -delta, delta)). */
__device__ void fh_q_row_loss(float pred, float y, int huber, float delta, double *loss,
                              float *grad)
{
    if (huber) {
        double gx;
        const double l = fh_q_huber((double)pred - (double)y, (double)delta, &gx);
        *loss = (double)(float)l;
        *grad = (float)gx;
    } else {
        float d = pred - y;
        *loss = 0.5 * (double)d * d;
        *grad = d;
    }
}

extern "C" __global__ void q_loss_kernel(fh_q_loss_args a)
{
    fh_pdl_wait(); /* pdl.cuh: first, before any read */
    __shared__ double rows_stats[FH_Q_ROWS_PER_BLOCK][FH_Q_LOSS_STATS];
    fh_q_state *qs = a.state;
    fh_update_phase *ph = &qs->base.ppo;
    int skip = ph->failed; /* uniform: nobody writes it before the last block */
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int i = blockIdx.x * FH_Q_ROWS_PER_BLOCK + warp;
    double st[FH_Q_LOSS_STATS] = {0.0, 0.0, 0.0};
    if (!skip && i < a.rows) {
        int act = a.actions[i];
        float pred = a.q[(long long)i * FH_N_ACTIONS + act], y = a.targets[i], grad;
        double loss;
        fh_q_row_loss(pred, y, a.huber, a.delta, &loss, &grad);
        float g = grad / (float)a.rows; /* the mean over the minibatch */
        float *dz = a.dq + (long long)i * FH_N_ACTIONS;
        dz[lane] = lane == act ? g : 0.0f;
        if (lane < FH_Q_HI)
            dz[lane + 32] = lane + 32 == act ? g : 0.0f;
        st[0] = loss;
        st[1] = pred;
        st[2] = y;
    }
    if (lane == 0)
        for (int k = 0; k < FH_Q_LOSS_STATS; k++)
            rows_stats[warp][k] = st[k];
    __syncthreads();
    if (threadIdx.x < FH_Q_LOSS_STATS) {
        double t = 0.0;
        for (int w = 0; w < FH_Q_ROWS_PER_BLOCK; w++)
            t += rows_stats[w][threadIdx.x];
        a.partials[(long long)blockIdx.x * FH_Q_LOSS_STATS + threadIdx.x] = t;
    }
    if (!fh_last_block(a.counter, gridDim.x) || threadIdx.x >= 32)
        return;
    double sum[FH_Q_LOSS_STATS];
    for (int k = 0; k < FH_Q_LOSS_STATS; k++)
        sum[k] = fh_warp_sum_strided(a.partials + k, (int)gridDim.x, FH_Q_LOSS_STATS);
    if (threadIdx.x != 0)
        return;
    if (skip) {
        ph->apply = 0;
        fh_q_phase_advance(ph, a.minibatches_per_epoch);
        return;
    }
    const int B = a.rows;
    const double loss = sum[0] / B;
    if (!isfinite(loss)) {
        ph->failed = FH_QFAIL_LOSS;
        ph->failed_epoch = ph->epoch;
        ph->failed_minibatch = ph->minibatch;
        ph->apply = 0;
        fh_q_phase_advance(ph, a.minibatches_per_epoch);
        return;
    }
    double *rec = a.records + (long long)ph->n_records * FH_UREC_COLS;
    for (int k = 0; k < FH_UREC_COLS; k++)
        rec[k] = 0.0;
    rec[FH_QREC_EPOCH] = ph->epoch;
    rec[FH_QREC_MINIBATCH] = ph->minibatch;
    rec[FH_QREC_SAMPLES] = B;
    rec[FH_QREC_MEAN_Q] = sum[1] / B;
    rec[FH_QREC_MEAN_TARGET] = sum[2] / B;
    rec[FH_QREC_LOSS] = loss;
    ph->n_records++;
    ph->adam_step++;
    ph->apply = 1;
    qs->step++;
    qs->grad_steps++;
    fh_q_phase_advance(ph, a.minibatches_per_epoch);
}

/* ---- the Q-networks' hidden layers (update_layers.c) ---- */

extern "C" __global__ void q_hidden_forward_kernel(fh_q_hidden_args a)
{
    fh_pdl_wait(); /* pdl.cuh: first, before any read */
    int row = fh_q_row(), lane = threadIdx.x & 31;
    if (row >= a.rows)
        return;
    const int W = a.width;
    const float *x = a.x + (long long)row * W;
    float *y = a.y + (long long)row * W;
    if (!a.layer_norm) {
        for (int k = lane; k < W; k += 32) {
            float v = x[k];
            y[k] = v > 0.0f ? v : a.slope * v;
        }
        return;
    }
    /* fh_layer_norm_forward: mean and population variance in double, two passes */
    double s = 0.0;
    for (int k = lane; k < W; k += 32)
        s += x[k];
    const double mu = fh_warp_sum(s) / W;
    double ss = 0.0;
    for (int k = lane; k < W; k += 32) {
        double e = x[k] - mu;
        ss += e * e;
    }
    ss = fh_warp_sum(ss);
    const float m = (float)mu, r = (float)(1.0 / sqrt(ss / W + (double)a.eps));
    if (lane == 0) {
        a.mean[row] = m;
        a.rstd[row] = r;
    }
    for (int k = lane; k < W; k += 32) {
        float v = a.gamma[k] * ((x[k] - m) * r) + a.beta[k];
        y[k] = v > 0.0f ? v : a.slope * v;
    }
}

extern "C" __global__ void q_hidden_backward_kernel(fh_q_hidden_grad_args a)
{
    fh_pdl_wait(); /* pdl.cuh: first, before any read */
    int row = fh_q_row(), lane = threadIdx.x & 31;
    if (row >= a.rows)
        return;
    const int W = a.width;
    const long long at = (long long)row * W;
    float *g = a.g + at;
    const float *y = a.y + at;
    if (!a.layer_norm) {
        for (int k = lane; k < W; k += 32)
            g[k] = y[k] > 0.0f ? g[k] : a.slope * g[k];
        return;
    }
    /* fh_layer_norm_backward with dy the LeakyReLU's gradient */
    const float *x = a.x + at;
    const float m = a.mean[row], r = a.rstd[row];
    double s1 = 0.0, s2 = 0.0;
    for (int k = lane; k < W; k += 32) {
        float dy = y[k] > 0.0f ? g[k] : a.slope * g[k];
        float xh = (x[k] - m) * r, gg = dy * a.gamma[k];
        g[k] = dy;
        a.dxhat[at + k] = dy * xh;
        s1 += gg;
        s2 += (double)gg * xh;
    }
    const float c1 = (float)(fh_warp_sum(s1) / W), c2 = (float)(fh_warp_sum(s2) / W);
    for (int k = lane; k < W; k += 32) {
        float xh = (x[k] - m) * r, gg = g[k] * a.gamma[k];
        a.dx[at + k] = r * (gg - c1 - xh * c2);
    }
}

/* ---- DQN: the ring, sampling, targets ---- */

extern "C" __global__ void replay_push_kernel(fh_replay_push_args a)
{
    fh_pdl_wait(); /* pdl.cuh: first, before any read */
    long long w = (long long)(blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x) >> 5;
    int lane = threadIdx.x & 31;
    long long i = a.first + w;
    if (i >= a.n)
        return;
    const int L = a.n_steps;
    const long long row = i / L * L;
    const int t = (int)(i - row);
    double d;
    int last;
    double g = fh_q_n_step_window(a.rewards + row, a.terminal + row, a.truncated + row, L, t,
                                  a.n_step, (double)a.gamma, &d, &last);
    const long long slot = ((long long)a.head + i) % a.ring.capacity;
    const float *s = a.states + i * FH_STATE_DIM, *s2 = a.next_states + (row + last) * FH_STATE_DIM;
    for (int k = lane; k < FH_STATE_DIM; k += 32) {
        a.ring.states[slot * FH_STATE_DIM + k] = s[k];
        a.ring.next_states[slot * FH_STATE_DIM + k] = s2[k];
    }
    if (lane == 0) {
        a.ring.actions[slot] = a.actions[i];
        a.ring.returns[slot] = (float)g;
        a.ring.discounts[slot] = (float)d;
    }
}

extern "C" __global__ void q_sample_kernel(fh_q_sample_args a)
{
    fh_pdl_wait(); /* pdl.cuh: first, before any read */
    int row = fh_q_row(), lane = threadIdx.x & 31;
    if (row >= a.rows)
        return;
    const fh_q_state *qs = a.state;
    fh_rng rng;
    rng.state = qs->rng_state;
    rng.inc = qs->rng_inc;
    fh_pcg32_advance(&rng, (unsigned long long)(qs->step * a.rows + row));
    const long long slot = rng_uniform_int(&rng, qs->ring_size);
    for (int k = lane; k < FH_STATE_DIM; k += 32) {
        a.states[(long long)row * FH_STATE_DIM + k] = a.ring.states[slot * FH_STATE_DIM + k];
        a.next_states[(long long)row * FH_STATE_DIM + k] =
            a.ring.next_states[slot * FH_STATE_DIM + k];
    }
    if (lane == 0) {
        a.actions[row] = a.ring.actions[slot];
        a.returns[row] = a.ring.returns[slot];
        a.discounts[row] = a.ring.discounts[slot];
        a.slots[row] = (int)slot;
    }
}

/* fh_double_dqn_targets: a* = argmax of the online Q at s' (the lowest index among
 * ties: the larger value wins, an equal one the lower index; argmax_first's choice by a
 * warp's reduction), y = fh_q_double_dqn_target (q_targets.cuh). */
extern "C" __global__ void q_double_dqn_kernel(fh_q_double_dqn_args a)
{
    fh_pdl_wait(); /* pdl.cuh: first, before any read */
    int row = fh_q_row(), lane = threadIdx.x & 31;
    if (row >= a.rows)
        return;
    const float *qo = a.q_online + (long long)row * FH_N_ACTIONS;
    float v = qo[lane];
    int best = lane;
    if (lane < FH_Q_HI && qo[lane + 32] > v) {
        v = qo[lane + 32];
        best = lane + 32;
    }
    for (int o = 16; o > 0; o >>= 1) {
        float ov = __shfl_xor_sync(0xffffffffu, v, o);
        int ob = __shfl_xor_sync(0xffffffffu, best, o);
        if (ov > v || (ov == v && ob < best)) {
            v = ov;
            best = ob;
        }
    }
    if (lane == 0)
        a.targets[row] = fh_q_double_dqn_target(a.returns[row], a.discounts[row],
                                                a.q_target[(long long)row * FH_N_ACTIONS + best]);
}

extern "C" __global__ void q_target_kernel(fh_q_target_args a)
{
    fh_pdl_wait(); /* pdl.cuh: first, before any read */
    const fh_update_phase *ph = &a.state->base.ppo;
    if (!ph->apply || ph->failed)
        return;
    const int copy = a.every > 0;
    if (copy && a.state->grad_steps % a.every != 0)
        return;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < a.n; i += stride)
        a.target[i] = copy ? a.params[i] : a.tau * a.params[i] + (1.0f - a.tau) * a.target[i];
}

/* ---- the summary ---- */

extern "C" __global__ void q_summary_kernel(fh_q_summary_args a)
{
    fh_pdl_wait(); /* pdl.cuh: first, before any read */
    if (blockIdx.x != 0 || threadIdx.x >= 32)
        return;
    const fh_update_phase *ph = &a.state->base.ppo;
    const int cols[4] = {FH_QREC_LOSS, FH_QREC_MEAN_Q, FH_QREC_MEAN_TARGET, FH_QREC_GRAD_NORM};
    const int n = ph->n_records;
    double sums[4];
    for (int k = 0; k < 4; k++) /* one warp, a fixed order */
        sums[k] = fh_warp_sum_strided(a.records + cols[k], n, FH_UREC_COLS);
    if (threadIdx.x != 0)
        return;
    const double div = n > 0 ? (double)n : 1.0;
    fh_q_summary *s = a.summary;
    s->loss = sums[0] / div;
    s->mean_q = sums[1] / div;
    s->mean_target = sums[2] / div;
    s->grad_norm = sums[3] / div;
    s->minibatches = n;
    s->failed = ph->failed;
    s->failed_epoch = ph->failed_epoch;
    s->failed_minibatch = ph->failed_minibatch;
    s->adam_step = ph->adam_step;
    s->grad_steps = a.state->grad_steps;
}
