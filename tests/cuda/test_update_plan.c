/* test_update_plan.c — the GPU update's plan (src/cuda/update_plan.c), on the CPU:
 *  - hand-computed plans: the SPEC defaults (64,000 samples, minibatch 512: 125 steps an
 *    epoch, graphs of 25 steps launched 5 times, 64 gather blocks of 8 rows) and a
 *    minibatch that does not divide the batch (64,000 / 600: 106 full steps and a tail of
 *    400 rows; 106 = 2 x 53, graphs of 53 steps launched twice);
 *  - 3,000 random problems: the steps cover the batch exactly, every graph holds a whole
 *    number of steps within FH_UPDATE_GRAPH_MAX_STEPS, the gathers cover their rows
 *    within their cap (4 blocks an SM);
 *  - refused problems name the field. */
#define _GNU_SOURCE /* fmemopen */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cuda/kernels/update_args.h"
#include "cuda/update_plan.h"
#include "foxhunt/shapes.h"
#include "test_util.h"

/* p's print-out into buf (n bytes, NUL-terminated); 0 (a failed check) when it cannot. */
static int printed(const fh_update_plan *p, char *buf, size_t n)
{
    memset(buf, 0, n);
    FILE *f = fmemopen(buf, n - 1, "w");
    CHECK(f != NULL);
    if (!f)
        return 0;
    fh_update_plan_print(f, p);
    fclose(f);
    return 1;
}

static fh_update_plan plan_of(long long batch, int minibatch, int epochs, fh_status *st)
{
    fh_update_problem q = {132, batch, minibatch, epochs, 1, 0, 0, 0};
    fh_update_plan p;
    fh_error err;
    *st = fh_update_plan_make(&q, &p, &err);
    return p;
}

static void test_hand_computed(void)
{
    fh_status st;
    fh_update_plan p = plan_of(64000, 512, 10, &st);
    CHECK(st == FH_OK);
    CHECK(p.minibatches_per_epoch == 125 && p.full_steps == 125 && p.tail_rows == 0);
    CHECK(p.graph_steps == 25 && p.graph_launches == 5);   /* 125 = 5 x 25; 25 <= 64 */
    CHECK(p.gather_grid == 64 && p.gather_threads == 256); /* 512 rows x 32 lanes / 256 */
    CHECK(p.loss_grid == 64 && p.loss_threads == 256);     /* a warp a row, 8 a block */
    CHECK(p.loss_threads == FH_LOSS_ROWS * 32);            /* the kernel's own constant */
    /* the value head's gradients: 64 weights, 64 hidden biases, its bias: 129 columns,
     * a warp each, 4 warps a block */
    CHECK(p.head_grad_threads == 128 && p.head_grad_grid == 33);
    CHECK(FH_LOSS_HEAD_SUMS == 129 && FH_LOSS_HEAD_WIDTH == FH_CRITIC_H5);
    /* the critic and each of the buffer's four blocks start 256-byte aligned, with no
     * more padding than that needs */
    CHECK(p.critic_offset >= FH_ACTOR_N_PARAMS && p.critic_offset % 64 == 0 &&
          p.critic_offset - FH_ACTOR_N_PARAMS < 64);
    CHECK(p.ppo_params >= p.critic_offset + FH_CRITIC_N_PARAMS && p.ppo_params % 64 == 0 &&
          p.ppo_params - (p.critic_offset + FH_CRITIC_N_PARAMS) < 64);
    CHECK(p.adam_grid == 4 * 132); /* ~383k params / 256 = 1,497 blocks, capped at 4 waves */
    CHECK(p.curiosity_adam_grid == (FH_CURIOSITY_N_PARAMS + 255) / 256);
    int fmad = 0;
    for (int i = 0; i < p.n_options; i++)
        fmad |= strcmp(p.options[i], "--fmad=false") == 0;
    CHECK_MSG(fmad, "the update's kernels must be compiled without fused multiply-adds");

    p = plan_of(64000, 600, 10, &st);
    CHECK(st == FH_OK);
    CHECK(p.minibatches_per_epoch == 107 && p.full_steps == 106 && p.tail_rows == 400);
    CHECK(p.graph_steps == 53 && p.graph_launches == 2);
    CHECK(p.tail_gather_grid == 50); /* 400 x 32 / 256 */

    p = plan_of(524288, 16384, 2, &st); /* the throughput configuration */
    CHECK(st == FH_OK);
    CHECK(p.full_steps == 32 && p.graph_steps == 32 && p.graph_launches == 1 && !p.tail_rows);
    /* the gather's grid capped at 4 blocks an SM: 4,224 warps, chunks of 4 rows */
    CHECK(p.gather_grid == 4 * 132);
    /* and the loss's: 2,048 blocks of 8 rows capped at 528, a warp taking 4 rows */
    CHECK(p.loss_grid == 4 * 132);
}

/* Programmatic dependent launch from compute capability 9.0 (Hopper) on, not before,
 * and never under the override update_pdl=0 (plain_launches); the printed plan says
 * which. */
static void test_pdl(void)
{
    fh_error err;
    fh_update_plan p;
    const int majors[] = {0, 7, 8, 9, 10, 12};
    for (int plain = 0; plain <= 1; plain++)
        for (int i = 0; i < 6; i++) {
            fh_update_problem q = {132, 64000, 512, 10, 1, 0, majors[i], plain};
            CHECK(fh_update_plan_make(&q, &p, &err) == FH_OK);
            CHECK(p.pdl == (majors[i] >= 9 && !plain));
            char buf[2048];
            if (!printed(&p, buf, sizeof buf))
                continue;
            const char *want = p.pdl ? "programmatic dependent launch"
                               : plain ? "plain (the override update_pdl=0)"
                                       : "plain (before compute capability 9.0)";
            CHECK_MSG(strstr(buf, want) != NULL, "cc %d plain %d: no '%s' in\n%s", majors[i],
                      plain, want, buf);
        }
}

/* The bf16 bias gradient's kernel (fh_update_bias_wide): the wide one for even widths from
 * 8,192 rows; split_bias (fh_update_split_bias) below 8,192 rows, at every precision (the cost model's crossover: chunk / 32 + rows / (32 chunk) round trips,
 * 2 + 4 = 4 + 2 at 8,192), never for odd ones; the plan's minibatch entry follows it, and
 * the bf16 plan prints it. */
static void test_bias_wide(void)
{
    const int rows[] = {1, 511, 512, 2048, 8191, 8192, 8193, 16384, 1 << 20};
    for (int i = 0; i < 9; i++) {
        CHECK_MSG(!fh_update_bias_wide(rows[i], 45), "rows %d width 45", rows[i]);
        int want = rows[i] >= 8192;
        CHECK_MSG(fh_update_bias_wide(rows[i], 512) == want, "rows %d width 512", rows[i]);
        CHECK_MSG(fh_update_split_bias(rows[i]) == !want, "rows %d: split_bias", rows[i]);
        double round_trips64 = 64 / 32.0 + rows[i] / (32.0 * 64),
               round_trips128 = 128 / 32.0 + rows[i] / (32.0 * 128);
        CHECK_MSG(want == (round_trips128 <= round_trips64), "rows %d: the cost model picks %d",
                  rows[i], round_trips128 <= round_trips64 ? 128 : 64);
    }
    fh_error err;
    fh_update_plan p;
    const int mb[] = {512, 16384};
    for (int i = 0; i < 2; i++)
        for (int precision = 0; precision <= 2; precision++) {
            fh_update_problem q = {132, 524288, mb[i], 2, 1, precision, 9, 0};
            CHECK(fh_update_plan_make(&q, &p, &err) == FH_OK);
            CHECK(p.bias_wide == (mb[i] >= 8192));
            /* split_bias: below 8,192 rows, whatever the precision */
            CHECK(p.split_bias == (mb[i] < 8192));
            char buf[2048];
            if (!printed(&p, buf, sizeof buf))
                continue;
            const char *split = "its bias gradients are summed beside its weight gradients";
            CHECK_MSG((strstr(buf, split) != NULL) == (mb[i] < 8192), "minibatch %d:\n%s",
                      mb[i], buf);
            const char *want = p.bias_wide ? "bias grad: bias_grad_bf16_wide_kernel"
                                           : "bias grad: bias_grad_bf16_kernel";
            CHECK_MSG((strstr(buf, want) != NULL) == (precision == 2),
                      "minibatch %d precision %d:\n%s", mb[i], precision, buf);
        }
}

static void test_random(void)
{
    uint64_t s = 12345;
    for (int i = 0; i < 3000; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        long long batch = 1 + (long long)((s >> 33) % 2000000);
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        int minibatch = 1 + (int)((s >> 33) % (unsigned long long)(batch < 40000 ? batch : 40000));
        fh_status st;
        fh_update_plan p = plan_of(batch, minibatch, 3, &st);
        CHECK_MSG(st == FH_OK, "batch %lld minibatch %d refused", batch, minibatch);
        if (st != FH_OK)
            continue;
        CHECK_MSG((long long)p.full_steps * minibatch + p.tail_rows == batch,
                  "batch %lld minibatch %d: steps do not cover it", batch, minibatch);
        CHECK(p.minibatches_per_epoch == p.full_steps + (p.tail_rows > 0));
        CHECK(p.tail_rows >= 0 && p.tail_rows < minibatch);
        CHECK(p.graph_steps >= 1 && p.graph_steps <= FH_UPDATE_GRAPH_MAX_STEPS);
        CHECK(p.full_steps == 0 || p.graph_steps * p.graph_launches == p.full_steps);
        /* a warp takes chunks of at most 32 rows: its lanes compute their rows' order */
        CHECK(p.gather_grid >= 1 && p.gather_grid <= 4 * 132 && p.gather_threads % 32 == 0);
        CHECK((long long)p.gather_grid * p.gather_threads >= minibatch);
        CHECK(p.tail_gather_grid <= 4 * 132 &&
              (long long)p.tail_gather_grid * p.gather_threads >= p.tail_rows);
        CHECK((p.tail_rows == 0) == (p.tail_gather_grid == 0));
        CHECK(p.loss_threads % 32 == 0 && p.loss_threads <= 1024 && p.mse_threads <= 1024);
        /* a warp a row up to 4 blocks an SM, then rows a grid apart */
        CHECK(p.loss_grid >= 1 && p.loss_grid <= 4 * 132);
        CHECK((long long)p.loss_grid * (p.loss_threads / 32) >= minibatch ||
              p.loss_grid == 4 * 132);
        CHECK(p.tail_loss_grid <= p.loss_grid && (p.tail_rows == 0) == (p.tail_loss_grid == 0));
        CHECK((long long)p.tail_loss_grid * (p.loss_threads / 32) >= p.tail_rows ||
              p.tail_loss_grid == 4 * 132);
        CHECK(p.reduce_threads % 32 == 0 && p.sumsq_blocks >= 1);
    }
}

static void test_refused(void)
{
    fh_update_problem q = {132, 1000, 0, 10, 1, 0, 0, 0};
    fh_update_plan p;
    fh_error err;
    CHECK(fh_update_plan_make(&q, &p, &err) == FH_ERR_INPUT && strstr(err.message, "minibatch"));
    q.minibatch = 1001;
    CHECK(fh_update_plan_make(&q, &p, &err) == FH_ERR_INPUT && strstr(err.message, "minibatch"));
    q.minibatch = 100;
    q.epochs = 0;
    CHECK(fh_update_plan_make(&q, &p, &err) == FH_ERR_INPUT && strstr(err.message, "epochs"));
    q.epochs = 1;
    q.batch = 0;
    CHECK(fh_update_plan_make(&q, &p, &err) == FH_ERR_INPUT && strstr(err.message, "batch"));
}

int main(void)
{
    test_hand_computed();
    test_pdl();
    test_bias_wide();
    test_random();
    test_refused();
    return fh_test_finish();
}
