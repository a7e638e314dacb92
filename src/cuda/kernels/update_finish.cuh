/* update_finish.cuh — the bookkeeping that ends a PPO step's reductions, written once
 * for both ways a step can end (issue 22):
 *
 *   one process: the last block of ppo_gather_kernel / ppo_loss_kernel calls these
 *     with its own sums over the step's `rows` rows, as before;
 *   data-parallel: those kernels leave their sums in the update's dist_sums, the ranks
 *     all-reduce them (NCCL, a sum), and adv_finish_kernel / ppo_loss_finish_kernel call
 *     these with the sums over every rank's rows, and `rows` x world rows, so every rank
 *     normalises its advantages by the minibatch's mean and std over all ranks and takes
 *     the same decisions (records, target-KL stop, failure) from the same numbers, as
 *     one GPU with K times the episodes would.
 *
 * Same arithmetic either way, so one rank through NCCL (an all-reduce over one rank
 * changes no bit) gives one process's results bit for bit. FH_DEVICE, so the CPU tests
 * run the same code (tests/dist/test_update_finish.c). */
#ifndef FOXHUNT_UPDATE_FINISH_CUH
#define FOXHUNT_UPDATE_FINISH_CUH

/* The step that ran at (epoch, minibatch) is done: note it and move to the next. */
FH_DEVICE void fh_phase_advance(fh_update_phase *ph, int minibatches_per_epoch)
{
    ph->step_epoch = ph->epoch;
    ph->step_minibatch = ph->minibatch;
    if (++ph->minibatch == minibatches_per_epoch) {
        ph->minibatch = 0;
        ph->epoch++;
    }
}

FH_DEVICE void fh_phase_fail(fh_update_phase *ph, int code)
{
    ph->failed = code;
    ph->failed_epoch = ph->epoch;
    ph->failed_minibatch = ph->minibatch;
    ph->apply = 0;
}

/* The minibatch's advantage mean and 1 / (unbiased std + 1e-8) (ppo_loss.c's
 * normalisation) from the sums s1 of a and s2 of a^2 over its B rows. */
FH_DEVICE void fh_adv_norm_finish(fh_update_state *state, double s1, double s2, long long B)
{
    double mean = s1 / B;
    double var = s2 - s1 * mean; /* sum (a - mean)^2, in double */
    double sd = B > 1 ? sqrt((var > 0.0 ? var : 0.0) / (B - 1)) : 0.0;
    state->adv_mean = mean;
    state->adv_inv = B == 1 ? 1.0 : 1.0 / (sd + 1e-8);
}

/* The PPO step's end from the sums over its B rows (pg, v, entropy, kl, kl_old,
 * clipped: FH_LOSS_STATS): the finiteness checks, the record, the Adam step, target-KL
 * early stop, the next position. skip: the update had stopped or failed before this
 * step (read when the step began). */
FH_DEVICE void fh_ppo_loss_finish(const fh_ppo_loss_args *a, const double *sum, long long B,
                                  int skip)
{
    fh_update_phase *ph = &a->state->ppo;
    if (skip) {
        ph->apply = 0;
        fh_phase_advance(ph, a->minibatches_per_epoch);
        return;
    }
    double pg_loss = (float)(sum[0] / B), v_loss = (float)(0.5 * sum[1] / B);
    double entropy = sum[2] / B, approx_kl = sum[3] / B;
    const double seen[4] = {pg_loss, v_loss, entropy, approx_kl};
    for (int k = 0; k < 4; k++)
        if (!isfinite(seen[k])) {
            fh_phase_fail(ph, FH_UFAIL_POLICY_LOSS + k);
            fh_phase_advance(ph, a->minibatches_per_epoch);
            return;
        }
    double *row = a->records + (long long)ph->n_records * FH_UREC_COLS;
    row[FH_UREC_EPOCH] = ph->epoch;
    row[FH_UREC_MINIBATCH] = ph->minibatch;
    row[FH_UREC_SAMPLES] = (double)B;
    row[FH_UREC_POLICY_LOSS] = pg_loss;
    row[FH_UREC_VALUE_LOSS] = v_loss;
    row[FH_UREC_ENTROPY] = entropy;
    row[FH_UREC_APPROX_KL] = approx_kl;
    row[FH_UREC_OLD_APPROX_KL] = sum[4] / B;
    row[FH_UREC_CLIP_FRACTION] = sum[5] / B;
    row[FH_UREC_GRAD_NORM] = 0.0; /* adam_kernel's */
    row[FH_UREC_LR] = a->state->lr;
    row[FH_UREC_LOSS] = pg_loss - a->state->ent_coef * entropy + a->vf_coef * v_loss;
    ph->n_records++;
    ph->adam_step++;
    ph->apply = 1;
    /* target KL: after the epoch's last step, its mean approximate KL (the steps of an
     * epoch are the last rows: none was skipped, or this one would be) */
    if (a->target_kl > 0.0 && ph->minibatch == a->minibatches_per_epoch - 1) {
        double epoch_kl = 0.0;
        const double *first = a->records + (long long)(ph->n_records - a->minibatches_per_epoch) *
                                               FH_UREC_COLS;
        for (int j = 0; j < a->minibatches_per_epoch; j++)
            epoch_kl += first[(long long)j * FH_UREC_COLS + FH_UREC_APPROX_KL];
        if (epoch_kl / a->minibatches_per_epoch > a->target_kl)
            ph->stopped = 1;
    }
    fh_phase_advance(ph, a->minibatches_per_epoch);
}

#endif
