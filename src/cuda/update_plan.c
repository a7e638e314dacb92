/* update_plan.c — see update_plan.h. Each constant names why it is what it is. */
#include "cuda/update_plan.h"

#include <string.h>

#include "cuda/kernels/update_args.h"
#include "foxhunt/shapes.h"
#include "foxhunt/precision.h"

/* ppo_gather_kernel: 8 warps a block, at most GATHER_WAVES blocks an SM (each warp then
 * takes a chunk of consecutive rows: 4 a warp at 16,384 rows on 132 SMs), so that the
 * Feistel order is computed once a row by a lane and the last block sums few partials. */
#define GATHER_THREADS 256
#define GATHER_WAVES 4
/* ppo_loss_kernel: one warp a row, 8 rows a block (= FH_LOSS_ROWS of update_args.h; one
 * block of 1,024 threads over the whole minibatch took 53 us a step at 512 rows, session
 * 9's ncu profile), the grid capped at LOSS_WAVES blocks an SM, a warp taking rows a
 * grid apart (4 a warp at 16,384 rows: 29.6 us a launch against 28.3 uncapped, session
 * 19, 820cb62), so that the value head's block sums (129 a block, reduced by
 * ppo_head_grad_kernel) stay few: uncapped, 2,048 blocks' of them cost the throughput
 * configuration what fusing the head saved (session 21, run 1). mse_loss_kernel stays
 * one block (once a minibatch of the curiosity fit, 32 floats a row). */
#define LOSS_WAVES 4
#define LOSS_ROWS_PER_BLOCK 8
/* ppo_head_grad_kernel: the value head's FH_LOSS_HEAD_SUMS (129) column sums over the
 * loss's blocks, a warp a column. */
#define HEAD_GRAD_THREADS 128
#define MSE_THREADS 1024
/* Partial sums of the squared gradients: 132 SMs, ~383k parameters, ~2.9k each. */
#define SUMSQ_BLOCKS 128
#define REDUCE_THREADS 256
#define ADAM_THREADS 256
/* Programmatic dependent launch: Hopper's (compute capability 9.0) and later. */
#define PDL_MIN_CC_MAJOR 9
/* Each network's parameters start on a 256-byte boundary (update_plan.h). */
#define PARAM_ALIGN_FLOATS 64

static long long ceil_div(long long a, long long b)
{
    return (a + b - 1) / b;
}

/* `blocks`, capped at `waves` blocks an SM (the warps then take rows a grid apart). */
static int capped_grid(long long blocks, int waves, int sm_count)
{
    long long cap = (long long)waves * (sm_count > 0 ? sm_count : 1);
    return (int)(blocks < cap ? blocks : cap);
}

/* ppo_gather_kernel's blocks for `rows` rows: a warp a row up to the cap. */
static int gather_blocks(long long rows, int sm_count)
{
    return capped_grid(ceil_div(rows * 32, GATHER_THREADS), GATHER_WAVES, sm_count);
}

/* ppo_loss_kernel's blocks for `rows` rows: a warp a row up to the cap. */
static int loss_blocks(long long rows, int sm_count)
{
    return capped_grid(ceil_div(rows, LOSS_ROWS_PER_BLOCK), LOSS_WAVES, sm_count);
}

int fh_update_pdl(int cc_major, int plain_launches)
{
    return cc_major >= PDL_MIN_CC_MAJOR && !plain_launches;
}

int fh_update_bias_wide(int rows, int width)
{
    return width % 2 == 0 && rows >= FH_BIAS_WIDE_MIN_ROWS;
}

int fh_update_split_bias(int rows)
{
    return rows < FH_SPLIT_BIAS_MAX_ROWS;
}

fh_status fh_update_plan_make(const fh_update_problem *prob, fh_update_plan *out,
                              fh_error *err)
{
    memset(out, 0, sizeof *out);
    out->problem = *prob;
    if (prob->batch < 1)
        return fh_error_set(err, FH_ERR_INPUT, "update plan: a batch of %lld samples",
                            prob->batch);
    if (prob->minibatch < 1 || prob->minibatch > prob->batch)
        return fh_error_set(err, FH_ERR_INPUT, "update plan: minibatch %d outside [1, %lld] "
                            "(the batch N*L)", prob->minibatch, prob->batch);
    if (prob->epochs < 1 || prob->curiosity_epochs < 0)
        return fh_error_set(err, FH_ERR_INPUT, "update plan: %d epochs, %d curiosity epochs",
                            prob->epochs, prob->curiosity_epochs);
    if (ceil_div(prob->batch, prob->minibatch) > (1LL << 30))
        return fh_error_set(err, FH_ERR_INPUT, "update plan: %lld minibatches an epoch",
                            ceil_div(prob->batch, prob->minibatch));
    out->minibatches_per_epoch = (int)ceil_div(prob->batch, prob->minibatch);
    out->full_steps = (int)(prob->batch / prob->minibatch);
    out->tail_rows = (int)(prob->batch % prob->minibatch);
    out->graph_steps = 1;
    for (int s = FH_UPDATE_GRAPH_MAX_STEPS; s >= 1; s--)
        if (out->full_steps % s == 0) {
            out->graph_steps = s;
            break;
        }
    out->graph_launches = out->full_steps / out->graph_steps;
    out->gather_threads = GATHER_THREADS;
    out->gather_grid = gather_blocks(prob->minibatch, prob->sm_count);
    out->tail_gather_grid = out->tail_rows ? gather_blocks(out->tail_rows, prob->sm_count) : 0;
    out->loss_threads = LOSS_ROWS_PER_BLOCK * 32;
    out->loss_grid = loss_blocks(prob->minibatch, prob->sm_count);
    out->tail_loss_grid = out->tail_rows ? loss_blocks(out->tail_rows, prob->sm_count) : 0;
    out->head_grad_threads = HEAD_GRAD_THREADS;
    out->head_grad_grid = (int)ceil_div(FH_LOSS_HEAD_SUMS * 32LL, HEAD_GRAD_THREADS);
    out->mse_threads = MSE_THREADS;
    out->sumsq_blocks = SUMSQ_BLOCKS;
    out->reduce_threads = REDUCE_THREADS;
    out->critic_offset = ceil_div(FH_ACTOR_N_PARAMS, PARAM_ALIGN_FLOATS) * PARAM_ALIGN_FLOATS;
    out->ppo_params = out->critic_offset +
                      ceil_div(FH_CRITIC_N_PARAMS, PARAM_ALIGN_FLOATS) * PARAM_ALIGN_FLOATS;
    out->curiosity_params = FH_CURIOSITY_N_PARAMS;
    out->adam_threads = ADAM_THREADS;
    out->pdl = fh_update_pdl(prob->cc_major, prob->plain_launches);
    out->bias_wide = fh_update_bias_wide(prob->minibatch, 2); /* for the even widths */
    out->split_bias = fh_update_split_bias(prob->minibatch);
    int waves = prob->sm_count > 0 ? prob->sm_count : 1;
    long long ppo_blocks = ceil_div(out->ppo_params, ADAM_THREADS);
    long long cur_blocks = ceil_div(out->curiosity_params, ADAM_THREADS);
    out->adam_grid = (int)(ppo_blocks < 4LL * waves ? ppo_blocks : 4LL * waves);
    out->curiosity_adam_grid = (int)cur_blocks;
    /* the update follows the CPU's arithmetic: no fused multiply-adds, IEEE division
     * and square roots (NVRTC's defaults, stated) */
    out->options[out->n_options++] = "--fmad=false";
    out->options[out->n_options++] = "--prec-div=true";
    out->options[out->n_options++] = "--prec-sqrt=true";
    return FH_OK;
}

void fh_update_plan_print(FILE *f, const fh_update_plan *p)
{
    const fh_update_problem *q = &p->problem;
    fprintf(f, "update plan: %lld samples, %d epochs x %d minibatches of %d%s, %d curiosity "
            "epochs, %s\n", q->batch, q->epochs, p->minibatches_per_epoch, q->minibatch,
            p->tail_rows ? " (the last short)" : "", q->curiosity_epochs,
            fh_precision_name(q->precision));
    fprintf(f, "  graphs:    %d steps a graph, %d launches an epoch%s\n", p->graph_steps,
            p->graph_launches, p->tail_rows ? " and a tail step" : "");
    fprintf(f, "  kernels:   gather %d x %d, loss %d x %d (with the value head; its "
            "gradients %d x %d), norm %d blocks, Adam %d x %d (curiosity %d)\n",
            p->gather_grid, p->gather_threads, p->loss_grid, p->loss_threads,
            p->head_grad_grid, p->head_grad_threads, p->sumsq_blocks, p->adam_grid,
            p->adam_threads, p->curiosity_adam_grid);
    fprintf(f, "  launches:  %s\n", p->pdl ? "programmatic dependent launch (each of our "
            "kernels scheduled while the one before it finishes)"
            : q->plain_launches ? "plain (the override update_pdl=0)"
                                : "plain (before compute capability 9.0)");
    if (q->precision == FH_PRECISION_BF16)
        fprintf(f, "  bias grad: %s\n", p->bias_wide
                ? "bias_grad_bf16_wide_kernel (two columns a thread, chunks of 128 rows) for "
                  "the even widths of a full minibatch; bias_grad_bf16_kernel for the odd "
                  "ones and a tail under 8,192 rows"
                : "bias_grad_bf16_kernel (a column a thread, chunks of 64 rows)");
    fprintf(f, "  backward:  %s\n", p->split_bias
            ? "the critic's chain masks each hidden gradient (relu_mask_kernel); its bias "
              "gradients are summed beside its weight gradients"
            : "the critic's chain masks and sums each hidden gradient (one kernel a layer)");
    fprintf(f, "  buffer:    %lld floats a block (actor at 0, critic at %lld, 256-byte "
            "aligned)\n", p->ppo_params, p->critic_offset);
    fprintf(f, "  NVRTC:    ");
    for (int i = 0; i < p->n_options; i++)
        fprintf(f, " %s", p->options[i]);
    fprintf(f, "\n");
}
