/* gpu_ppo_collector_internal.h — the collector's state, shared by its files:
 * gpu_ppo_collector.c (setup, the reference kernel, downloads), fast_collect.c (the fast
 * path: its plan carried out, one CUDA graph) and fast_networks.c (the batched critic
 * and curiosity model). */
#ifndef FOXHUNT_GPU_PPO_COLLECTOR_INTERNAL_H
#define FOXHUNT_GPU_PPO_COLLECTOR_INTERNAL_H

#include "cuda/cuda_check.h"
#include "cuda/cuda_module.h"
#include "cuda/fast_plan.h"
#include "cuda/gemm.h"
#include "cuda/gpu_ppo_collector.h"
#include "cuda/gpu_weights.h"
#include "cuda/overrides.h"
#include "env/common_device_functions.cuh"
#include "env/ppo_device_functions.cuh"
#include "cuda/kernels/fast_layout.h"
#include "cuda/kernels/fast_args.h"

/* The fast path: its plan and what carrying it out needs. */
typedef struct {
    fh_fast_plan plan;
    fh_cuda_module module;
    cudaKernel_t rollout, actor_table_k, layer0, curiosity, scatter, gae, to_bf16;
    fh_gemm gemm;
    float *actor_table;    /* (n_bars, 256 split or 128) with plan.actor_table, else NULL */
    long long *clocks;     /* (N, FH_CLOCK_STRIDE) with plan.rollout_clocks, else NULL */
    float *critic_in;      /* (critic_rows, in_stride); rows [0, N*L) are the states */
    float *critic_w0;      /* (512, in_stride) the first critic layer, zero-padded */
    /* bf16 (precision.h): the critic's parameters and critic_w0 in bf16, copied at each
     * collection; the input rows' copy and the activations live in act_b / act_a */
    unsigned short *critic16, *critic_w0_16;
    float *market_in;      /* with the factor: (n_bars, in_stride) the bars' features */
    float *market_proj;    /* with the factor: (n_bars, 512) market_in times W0's columns */
    float *values_all;     /* (critic_rows) */
    int *trunc_step;       /* (N, K) */
    float *act_a, *act_b;  /* (chunk_rows, 512; 384 with h0) ping-pong activations */
    float *h0;             /* pipeline with the factor: (critic_rows, 512) first layer out */
    long long *chunk_begin; /* pipeline: host (n_chunks + 1) row offsets */
    cudaEvent_t *ev_chunk;  /* pipeline: (n_chunks) chunk k's first layer written */
    cudaEvent_t ev_rollout, ev_join;
    cudaStream_t side;      /* the pipeline's second stream */
    cudaGraph_t graph;
    cudaGraphExec_t graph_exec;
    float graph_gamma, graph_lambda;
    cudaEvent_t ev_phase[4]; /* profiling: rollout | networks | GAE */
} fh_fast_path;

struct fh_gpu_ppo_collector {
    fh_device_info dev;
    int n_episodes, n_steps;
    fh_env_config cfg;
    int use_fast;
    fh_rollout_mapping rollout_mapping; /* forced by --kernel fast/..., or AUTO */
    int precision;
    fh_gpu_overrides overrides;
    int profile;            /* 1: run the fast path eagerly with phase events */
    cudaStream_t stream;
    cudaEvent_t ev_begin, ev_kernel_begin, ev_kernel_end, ev_end;
    fh_cuda_module module;
    cudaKernel_t reference;
    float *d_features, *d_close, *d_sigma;
    fh_env_market d_market;
    fh_episode_state *d_episodes;
    fh_episode_state *h_episodes;
    fh_gpu_weights weights;
    int external_weights;   /* 1: weights point at the device update's params (not ours) */
    fh_ppo_outputs out;     /* device pointers; in fast mode states/values/last_values
                               point into fast.critic_in / fast.values_all */
    int states_pitch;       /* floats between rows of out.states (54, or in_stride) */
    fh_fast_path fast;
    fh_gpu_collect_timing timing;
    /* the host batch last downloaded into, page-locked (cudaHostRegister) so the
     * download runs at full PCIe speed; unregistered on destroy */
    void *pinned[2];
};

/* Plans (fh_fast_plan_make on this device and problem), compiles and allocates. */
fh_status fh_fast_path_init(fh_gpu_ppo_collector *c, fh_error *err);
/* Runs the whole fast collection on c->stream (as one graph unless c->profile). */
fh_status fh_fast_path_run(fh_gpu_ppo_collector *c, const fh_collect_params *p, fh_error *err);
void fh_fast_path_free(fh_gpu_ppo_collector *c);

/* fast_networks.c: the critic over every critic row and the curiosity bonus, after the
 * rollout, on c->stream (and the pipeline's side stream, joined before returning). */
fh_status fh_fast_networks(fh_gpu_ppo_collector *c, fh_error *err);
/* Every matmul shape a collection uses, once outside a graph, so each is tuned. */
fh_status fh_fast_tune_gemms(fh_gpu_ppo_collector *c, fh_error *err);

/* One kernel launch with its typed argument struct (fast_args.h) on `stream`. */
static inline fh_status fh_fast_launch(cudaStream_t stream, cudaKernel_t k, unsigned grid,
                                       unsigned block, size_t smem, void *args,
                                       fh_error *err)
{
    void *params[] = {args};
    dim3 g = {grid, 1, 1}, b = {block, 1, 1};
    CUDA_CHECK(cudaLaunchKernel((const void *)k, g, b, params, smem, stream), err);
    CUDA_CHECK(cudaGetLastError(), err);
    return FH_OK;
fail:
    return err->status;
}

#endif
