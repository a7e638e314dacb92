/* update_summary.cu — what the host reads after an update (a few hundred bytes): the
 * means of the applied steps' records (summed by one warp in a fixed order), the
 * curiosity loss, failures, Adam steps; and the explained variance of the batch's
 * values against its returns (data-parallel: over every rank's batch, in three passes
 * with all-reduces between them; the same arithmetic, so one rank gives one process's
 * bits). */

extern "C" __global__ void __launch_bounds__(1024) explained_variance_kernel(fh_explained_variance_args a)
{
    fh_pdl_wait(); /* pdl.cuh: first, before any read */
    __shared__ double shm[33];
    double *d = a.dist_sums;
    if (d && a.pass == 2) { /* data-parallel: the variances' sums all-reduced */
        if (threadIdx.x == 0)
            a.summary->explained_variance =
                d[2] > 0.0 ? 1.0 - d[3] / d[2] : __longlong_as_double(0x7ff8000000000000LL);
        return;
    }
    double mr, md;
    if (d && a.pass == 1) { /* data-parallel: the means over every rank's samples */
        mr = d[0] / (double)a.n_total;
        md = d[1] / (double)a.n_total;
    } else {
        double sr = 0.0, sd = 0.0;
        for (long long i = threadIdx.x; i < a.n; i += blockDim.x) {
            sr += a.returns[i];
            sd += a.returns[i] - a.values[i];
        }
        sr = fh_block_sum(sr, shm);
        sd = fh_block_sum(sd, shm);
        if (d) { /* pass 0: the sums, all-reduced before pass 1 */
            if (threadIdx.x == 0) {
                d[0] = sr;
                d[1] = sd;
            }
            return;
        }
        mr = sr / (double)a.n;
        md = sd / (double)a.n;
    }
    double vr = 0.0, vd = 0.0;
    for (long long i = threadIdx.x; i < a.n; i += blockDim.x) {
        double r = a.returns[i] - mr, e = (a.returns[i] - a.values[i]) - md;
        vr += r * r;
        vd += e * e;
    }
    vr = fh_block_sum(vr, shm);
    vd = fh_block_sum(vd, shm);
    if (threadIdx.x != 0)
        return;
    if (d) { /* pass 1: the variances' sums, all-reduced before pass 2 */
        d[2] = vr;
        d[3] = vd;
        return;
    }
    a.summary->explained_variance =
        vr > 0.0 ? 1.0 - vd / vr : __longlong_as_double(0x7ff8000000000000LL); /* NaN */
}

extern "C" __global__ void update_summary_kernel(fh_update_summary_args a)
{
    fh_pdl_wait(); /* pdl.cuh: first, before any read */
    if (blockIdx.x != 0 || threadIdx.x >= 32)
        return;
    const fh_update_phase *ph = &a.state->ppo, *cur = &a.state->curiosity;
    fh_update_summary *s = a.summary;
    const int cols[7] = {FH_UREC_POLICY_LOSS, FH_UREC_VALUE_LOSS, FH_UREC_ENTROPY,
                         FH_UREC_APPROX_KL, FH_UREC_OLD_APPROX_KL, FH_UREC_CLIP_FRACTION,
                         FH_UREC_GRAD_NORM};
    int mbs = ph->n_records;
    double sums[7];
    for (int k = 0; k < 7; k++) /* one warp, a fixed order */
        sums[k] = fh_warp_sum_strided(a.records + cols[k], mbs, FH_UREC_COLS);
    if (threadIdx.x != 0)
        return;
    double div = mbs > 0 ? (double)mbs : 1.0;
    s->policy_loss = sums[0] / div;
    s->value_loss = sums[1] / div;
    s->entropy = sums[2] / div;
    s->approx_kl = sums[3] / div;
    s->old_approx_kl = sums[4] / div;
    s->clip_fraction = sums[5] / div;
    s->grad_norm = sums[6] / div;
    s->minibatches = mbs;
    s->epochs_run = mbs > 0 ? (int)a.records[(long long)(mbs - 1) * FH_UREC_COLS + FH_UREC_EPOCH] + 1 : 0;
    s->failed = ph->failed;
    s->failed_epoch = ph->failed_epoch;
    s->failed_minibatch = ph->failed_minibatch;
    s->curiosity_failed = cur->failed;
    s->curiosity_failed_epoch = cur->failed_epoch;
    s->curiosity_failed_minibatch = cur->failed_minibatch;
    s->curiosity_loss = cur->n_records > 0 ? cur->loss_sum / cur->n_records : 0.0;
    s->adam_step = ph->adam_step;
    s->curiosity_adam_step = cur->adam_step;
}
