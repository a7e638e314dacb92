/* gpu_ppo_update_internal.h — the PPO update's state, shared by its files:
 * gpu_ppo_update.c (create, the steps, the update) and gpu_ppo_iteration.c (the
 * iteration's metrics on the device, a host batch uploaded). Not for other callers. */
#ifndef FOXHUNT_CUDA_GPU_PPO_UPDATE_INTERNAL_H
#define FOXHUNT_CUDA_GPU_PPO_UPDATE_INTERNAL_H

#include "cuda/cuda_check.h"
#include "cuda/gpu_ppo_update.h"
#include "cuda/gpu_update_engine.h"
#include "cuda/update_layers.h"

#define UPDATE_KERNEL_FILE "update_kernels.cu"

_Static_assert(FH_CURIOSITY_TARGET_DIM == 32, "curiosity_gather_kernel: one lane a target");
_Static_assert(FH_UREC_COLS == FH_PPO_TRACE_COLS && FH_UREC_GRAD_NORM == FH_PPO_TRACE_GRAD_NORM &&
                   FH_UREC_LOSS == FH_PPO_TRACE_LOSS && FH_UREC_EPOCH == FH_PPO_TRACE_EPOCH,
               "the device record's columns are the trace's");

typedef enum {
    K_PPO_GATHER, K_CUR_GATHER, K_PPO_LOSS, K_MSE_LOSS, K_BIAS_GRAD, K_BIAS_ACT, K_SUMSQ,
    K_ADAM, K_EXPLAINED_VARIANCE, K_SUMMARY, K_METRICS, K_ADV_FINISH, K_LOSS_FINISH,
    K_TO_BF16, K_BIAS_GRAD_BF16, K_BIAS_GRAD_BF16_WIDE, K_HEAD_GRAD, K_RELU_MASK, K_COUNT
} kernel_id;

static const char *const kernel_names[K_COUNT] = {
    "ppo_gather_kernel", "curiosity_gather_kernel", "ppo_loss_kernel", "mse_loss_kernel",
    "bias_grad_kernel", "bias_act_kernel", "grad_sumsq_kernel", "adam_kernel",
    "explained_variance_kernel", "update_summary_kernel", "iteration_metrics_kernel",
    "adv_finish_kernel", "ppo_loss_finish_kernel", "to_bf16_kernel", "bias_grad_bf16_kernel",
    "bias_grad_bf16_wide_kernel", "ppo_head_grad_kernel", "relu_mask_kernel"};

/* The data-parallel sums' buffer (doubles): the advantages' (2), the loss's
 * (FH_LOSS_STATS), the explained variance's (4). */
#define DIST_ADV 0
#define DIST_LOSS 2
#define DIST_EV (DIST_LOSS + FH_LOSS_STATS)
#define DIST_SUMS (DIST_EV + 4)

#define METRICS_THREADS 128

struct fh_gpu_ppo_update {
    fh_device_info dev;
    fh_update_plan plan;
    fh_gpu_ppo_settings cfg;   /* the losses' and optimiser's settings (baked into graphs) */
    fh_update_engine eng;      /* the module, its kernels, the main stream, the graphs */
    fh_update_blas blas;       /* the main stream: gather, critic, losses, optimiser */
    fh_update_blas blas_actor; /* a second stream: the actor's forward and backward */
    fh_update_blas blas_dw;    /* a third: the critic's weight gradients */
    cudaStream_t side[2];
    cudaEvent_t ev_fork, ev_actor_fwd, ev_loss, ev_actor_bwd;
    float *ppo_mem;            /* (4, P): params | grads | m | v, actor then critic */
    float *cur_mem;            /* (4, C) the curiosity model's */
    unsigned short *ppo16, *cur16; /* bf16 (precision.h): the params' copies (P, C), written
                                      at each update's start and by every Adam step; NULL
                                      otherwise */
    fh_device_mlp actor, critic, curiosity;
    /* bf16: the first layers' padded weight copies (fh_device_mlp_padded_w0), which Adam
       and the refresh keep current: the actor's and the critic's, the curiosity model's */
    fh_bf16_padded ppo_padded[FH_ADAM_PADDED], cur_padded[1];
    int n_ppo_padded, n_cur_padded;
    int64_t adam_step, curiosity_adam_step; /* the device's, mirrored */
    /* one minibatch (plan.problem.minibatch rows) */
    float *mb_states, *mb_old_logp, *mb_adv, *mb_returns, *mb_old_values;
    unsigned short *mb_states16; /* bf16: the states' copy instead (rows of FH_BF16_LD(54)),
                                    the actor's and the critic's input; NULL otherwise */
    int *mb_actions;
    float *dlogits, *cur_in, *cur_target, *cur_dpred;
    double *partials, *records;
    double *gather_partials, *loss_partials; /* the last-block reductions' */
    double *head_partials;     /* the loss's block sums of the value head's gradients */
    unsigned *counters;        /* [0] the gather's, [1] the loss's */
    fh_update_state *state;
    unsigned long long *keys;  /* (epochs + curiosity_epochs) */
    fh_update_summary *summary;
    /* page-locked host side of the small transfers */
    fh_update_state *h_state;
    unsigned long long *h_keys;
    fh_update_summary *h_summary;
    /* the binding of eng's graphs (G_*: its pointers are baked in) */
    fh_device_batch bound;
    const float *bound_features;
    /* the iteration's metrics (fh_gpu_ppo_update_set_episodes) */
    int n_episodes;
    double *episode_return, *totals, *metric_partials;
    int *episode_length;
    long long *int_totals;
    unsigned *metric_counter;
    fh_iteration_sums *sums, *h_sums;
    /* data parallelism (fh_gpu_ppo_update_set_reducer): reducer.allreduce NULL when none */
    fh_update_reducer reducer;
    double *dist_sums;                /* (DIST_SUMS) */
    cudaEvent_t *reduce_events;       /* without graphs: pairs around each reduction */
    int reduce_capacity, reduce_used;
    float reduce_ms;
};

#endif
