/* test_update_finish.c — the end of a data-parallel PPO step on the CPU
 * (src/cuda/kernels/update_finish.cuh, the code the GPU runs, compiled as C): from the
 * sums every rank leaves, added as the all-reduce adds them, and the rows of all ranks,
 * the minibatch's advantage normalisation and the step's record and decisions are those
 * of one GPU holding every row: checked against a two-pass float64 reference and
 * hand-computed values; the row count matters (one rank's rows alone give other
 * numbers); target-KL early stop, a skipped step and a non-finite loss behave as one
 * GPU's. */
#include <math.h>
#include <string.h>

#include "env/common_device_functions.cuh"
#include "cuda/kernels/update_args.h"
#include "cuda/kernels/update_finish.cuh"
#include "test_util.h"

#define RANKS 2
#define ROWS 4 /* a rank's rows of the step */

static void test_advantages(void)
{
    const double adv[RANKS][ROWS] = {{0.5, -1.25, 2.0, 3.5}, {-0.75, 1.0, 4.25, -2.0}};
    /* each rank's sums (the gather kernel's), then the all-reduce's sum */
    double s1 = 0.0, s2 = 0.0;
    for (int r = 0; r < RANKS; r++) {
        double a = 0.0, b = 0.0;
        for (int i = 0; i < ROWS; i++) {
            a += adv[r][i];
            b += adv[r][i] * adv[r][i];
        }
        s1 += a;
        s2 += b;
    }
    fh_update_state st;
    memset(&st, 0, sizeof st);
    fh_adv_norm_finish(&st, s1, s2, RANKS * ROWS);
    /* reference: two passes over all 8 advantages, long double */
    long double mean = 0.0L, ss = 0.0L;
    for (int r = 0; r < RANKS; r++)
        for (int i = 0; i < ROWS; i++)
            mean += adv[r][i];
    mean /= RANKS * ROWS;
    for (int r = 0; r < RANKS; r++)
        for (int i = 0; i < ROWS; i++)
            ss += (adv[r][i] - mean) * (adv[r][i] - mean);
    double sd = (double)sqrtl(ss / (RANKS * ROWS - 1));
    CHECK_CLOSE(st.adv_mean, 0.90625, 0.0, 1e-15); /* 7.25 / 8, by hand */
    CHECK_CLOSE(st.adv_mean, (double)mean, 0.0, 1e-15);
    CHECK_CLOSE(st.adv_inv, 1.0 / (sd + 1e-8), 0.0, 1e-12);
    CHECK_CLOSE(sd, 2.239808266666719, 0.0, 1e-12); /* sqrt(35.1171875 / 7) */
    /* one rank's rows alone: another mean (rank 0: 4.75 / 4) */
    fh_update_state one;
    memset(&one, 0, sizeof one);
    fh_adv_norm_finish(&one, 4.75, 0.25 + 1.5625 + 4.0 + 12.25, ROWS);
    CHECK_CLOSE(one.adv_mean, 1.1875, 0.0, 1e-15);
    CHECK(fabs(one.adv_inv - st.adv_inv) > 1e-3);
    /* one row in all: no normalisation by a std of one sample */
    fh_adv_norm_finish(&one, 3.0, 9.0, 1);
    CHECK(one.adv_mean == 3.0 && one.adv_inv == 1.0);
}

/* The record row of the last applied step. */
static const double *last_row(const double *records, const fh_update_state *st)
{
    return records + (long long)(st->ppo.n_records - 1) * FH_UREC_COLS;
}

static void test_loss(void)
{
    double records[4 * FH_UREC_COLS];
    fh_update_state st;
    memset(&st, 0, sizeof st);
    memset(records, 0, sizeof records);
    st.lr = 2.5e-4f;
    st.ppo.adam_step = 10;
    fh_ppo_loss_args a;
    memset(&a, 0, sizeof a);
    a.state = &st;
    a.records = records;
    a.minibatches_per_epoch = 2;
    st.ent_coef = 0.01f;
    a.vf_coef = 0.5f;
    a.target_kl = 0.02;
    /* each rank's sums over its 4 rows (pg, v, entropy, kl, kl_old, clipped), added */
    const double rank_sums[RANKS][FH_LOSS_STATS] = {{0.4, 1.2, 14.0, 0.02, -0.01, 1.0},
                                                    {-0.2, 2.0, 14.8, 0.06, 0.03, 2.0}};
    double sum[FH_LOSS_STATS];
    for (int k = 0; k < FH_LOSS_STATS; k++)
        sum[k] = rank_sums[0][k] + rank_sums[1][k];
    fh_ppo_loss_finish(&a, sum, RANKS * ROWS, 0);
    const double *row = last_row(records, &st);
    CHECK(st.ppo.n_records == 1 && st.ppo.adam_step == 11 && st.ppo.apply == 1);
    CHECK(row[FH_UREC_EPOCH] == 0 && row[FH_UREC_MINIBATCH] == 0 && row[FH_UREC_SAMPLES] == 8);
    CHECK_MSG(row[FH_UREC_POLICY_LOSS] == (double)(float)(0.2 / 8), "policy loss %.17g",
              row[FH_UREC_POLICY_LOSS]); /* rounded to float, as the CPU's */
    CHECK(row[FH_UREC_VALUE_LOSS] == (double)(float)(0.5 * 3.2 / 8));
    CHECK_CLOSE(row[FH_UREC_ENTROPY], 28.8 / 8, 0.0, 1e-15);
    CHECK_CLOSE(row[FH_UREC_APPROX_KL], 0.01, 0.0, 1e-14);
    CHECK_CLOSE(row[FH_UREC_OLD_APPROX_KL], 0.0025, 0.0, 1e-14);
    CHECK_CLOSE(row[FH_UREC_CLIP_FRACTION], 0.375, 0.0, 1e-15);
    CHECK(row[FH_UREC_LR] == (double)2.5e-4f);
    CHECK_CLOSE(row[FH_UREC_LOSS], (float)(0.025) - 0.01f * 3.6 + 0.5f * (float)(0.2), 0.0, 1e-12);
    CHECK(st.ppo.minibatch == 1 && st.ppo.epoch == 0 && !st.ppo.stopped);

    /* the epoch's second step: its mean KL (0.01, 0.05) / 2 = 0.03 > 0.02 stops the epochs */
    double sum2[FH_LOSS_STATS] = {0.0, 1.0, 28.0, 0.40, 0.0, 0.0};
    fh_ppo_loss_finish(&a, sum2, RANKS * ROWS, 0);
    CHECK_CLOSE(last_row(records, &st)[FH_UREC_APPROX_KL], 0.05, 0.0, 1e-14);
    CHECK(st.ppo.stopped == 1 && st.ppo.epoch == 1 && st.ppo.minibatch == 0);
    CHECK(st.ppo.n_records == 2 && st.ppo.adam_step == 12);
    /* the next step is skipped: not applied, not recorded, the position moves on */
    fh_ppo_loss_finish(&a, sum2, RANKS * ROWS, st.ppo.failed || st.ppo.stopped);
    CHECK(st.ppo.apply == 0 && st.ppo.n_records == 2 && st.ppo.adam_step == 12);
    CHECK(st.ppo.step_epoch == 1 && st.ppo.step_minibatch == 0 && st.ppo.minibatch == 1);

    /* the same sums over one rank's rows give another record: the row count matters */
    memset(&st, 0, sizeof st);
    fh_ppo_loss_finish(&a, sum, ROWS, 0);
    CHECK(last_row(records, &st)[FH_UREC_SAMPLES] == 4);
    CHECK_CLOSE(last_row(records, &st)[FH_UREC_ENTROPY], 28.8 / 4, 0.0, 1e-15);

    /* a value loss that is not finite on any rank is not finite in the sum: every rank
     * fails the step the same way */
    memset(&st, 0, sizeof st);
    st.ppo.epoch = 3;
    st.ppo.minibatch = 1;
    double bad[FH_LOSS_STATS] = {0.1, NAN, 1.0, 0.0, 0.0, 0.0};
    fh_ppo_loss_finish(&a, bad, RANKS * ROWS, 0);
    CHECK(st.ppo.failed == FH_UFAIL_VALUE_LOSS && st.ppo.failed_epoch == 3 &&
          st.ppo.failed_minibatch == 1 && st.ppo.apply == 0 && st.ppo.n_records == 0);
}

int main(void)
{
    test_advantages();
    test_loss();
    return fh_test_finish();
}
