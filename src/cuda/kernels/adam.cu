/* adam.cu — the optimiser step of one phase over its flat parameter buffer (params,
 * grads, m, v in one layout: optim.c's fh_adam_update and fh_mlp_clip_grad_norm):
 *
 *   grad_sumsq_kernel: block b sums g^2 over its fixed slice (double);
 *   adam_kernel: every block adds the partial sums in one fixed order (so each gets the
 *     same norm), and, when the phase's step is applied and the norm is finite, scales
 *     the gradient by max_norm / (norm + 1e-6) where that is < 1, then takes the Adam
 *     step with bias correction (with weight_decay > 0 AdamW's: the params first
 *     multiplied by 1 - lr weight_decay, as fh_adam_update), and with params16 (the
 *     bf16 update) the new weights' bf16 copy, and that of the matrices it keeps with
 *     padded rows (fh_bf16_padded). A norm that is not finite
 *     fails the update instead (the step would spread it through every weight). */

#include "bf16_round.cuh" /* the weight copy's rounding */

extern "C" __global__ void grad_sumsq_kernel(fh_grad_sumsq_args a)
{
    fh_pdl_wait(); /* pdl.cuh: first, before any read */
    __shared__ double shm[33];
    long long chunk = (a.n + gridDim.x - 1) / gridDim.x;
    long long begin = (long long)blockIdx.x * chunk;
    long long end = begin + chunk < a.n ? begin + chunk : a.n;
    double s = 0.0;
    for (long long i = begin + threadIdx.x; i < end; i += blockDim.x) {
        double g = a.grads[i];
        s += g * g;
    }
    s = fh_block_sum(s, shm);
    if (threadIdx.x == 0)
        a.partials[blockIdx.x] = s;
}

extern "C" __global__ void adam_kernel(fh_adam_args a)
{
    fh_pdl_wait(); /* pdl.cuh: first, before any read */
    __shared__ double s_norm;
    fh_update_phase *ph = a.curiosity ? &a.state->curiosity : &a.state->ppo;
    if (!ph->apply) /* set by the loss kernel before this launch: uniform */
        return;
    if (threadIdx.x < 32) {
        double ss = fh_warp_sum_strided(a.partials, a.n_partials, 1);
        if (threadIdx.x == 0)
            s_norm = sqrt(ss);
    }
    __syncthreads();
    double norm = s_norm;
    int first = blockIdx.x == 0 && threadIdx.x == 0;
    if (!isfinite(norm)) {
        if (first) { /* the step is undone: not recorded, not counted */
            ph->failed = a.curiosity ? FH_UFAIL_CURIOSITY_GRAD : FH_UFAIL_GRAD_NORM;
            ph->failed_epoch = ph->step_epoch;
            ph->failed_minibatch = ph->step_minibatch;
            ph->n_records--;
            ph->adam_step--;
        }
        return;
    }
    if (first && a.records)
        a.records[(long long)(ph->n_records - 1) * FH_UREC_COLS + FH_UREC_GRAD_NORM] = norm;
    double coef = a.max_norm / (norm + 1e-6);
    int clip = coef < 1.0;
    float cf = (float)coef;
    long long t = ph->adam_step;
    float lr = a.curiosity ? a.state->curiosity_lr : a.state->lr;
    float b1 = a.beta1, b2 = a.beta2;
    double bc1 = 1.0 - pow((double)b1, (double)t);
    double bc2 = 1.0 - pow((double)b2, (double)t);
    float step_size = (float)(lr / bc1);
    float inv_sqrt_bc2 = (float)(1.0 / sqrt(bc2));
    int decays = a.weight_decay > 0.0f; /* 0: plain Adam, not a multiply by 1 */
    float decay = (float)(1.0 - (double)lr * (double)a.weight_decay); /* fh_adam_decay_factor */
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < a.n; i += stride) {
        float gi = a.grads[i];
        if (clip)
            gi *= cf;
        float mi = b1 * a.adam_m[i] + (1.0f - b1) * gi;
        float vi = b2 * a.adam_v[i] + (1.0f - b2) * gi * gi;
        a.adam_m[i] = mi;
        a.adam_v[i] = vi;
        float pi = a.params[i];
        if (decays) /* rounded on its own, as the CPU's pass: never fused into an FMA */
            pi = __fmul_rn(pi, decay);
        pi = pi - step_size * mi / (sqrtf(vi) * inv_sqrt_bc2 + a.eps);
        a.params[i] = pi;
        if (!a.params16)
            continue;
        unsigned short h = fh_float_to_bf16(pi);
        a.params16[i] = h;
        for (int k = 0; k < a.n_padded; k++) { /* a first layer's padded copy */
            const fh_bf16_padded *q = &a.padded[k];
            long long o = i - q->begin;
            if (o >= 0 && o < (long long)q->rows * q->cols)
                q->dst[o / q->cols * q->ld + o % q->cols] = h;
        }
    }
}
