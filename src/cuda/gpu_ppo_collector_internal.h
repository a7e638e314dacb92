/* gpu_ppo_collector_internal.h — the collector's state, shared by its two files:
 * gpu_ppo_collector.c (setup, reference kernel, downloads) and gpu_fast_collect.c (the
 * fast path: rollout kernel, batched networks on cuBLAS, GAE; one CUDA graph). */
#ifndef FOXHUNT_GPU_PPO_COLLECTOR_INTERNAL_H
#define FOXHUNT_GPU_PPO_COLLECTOR_INTERNAL_H

#include <stdint.h>

#include <cublasLt.h>

#include "cuda/cuda_module.h"
#include "cuda/gpu_ppo_collector.h"
#include "cuda/gpu_weights.h"
#include "env/common_device_functions.cuh"
#include "cuda/kernels/ppo_experience_kernel.cu"

/* Rows per batched critic GEMM chunk: bounds the activation buffers (2 x rows x 512
 * floats = 17 GB at 2^22 rows; 384 floats with the pipeline) whatever N*L is. 2^22
 * measured 1.2 ms faster than 2^20 at N 16384 (docs/BENCHMARKS.md). */
#define FH_FAST_CHUNK_ROWS (1 << 22)

/* The fast path's rollout mapping ("fast", "fast/warp", "fast/block", "fast/lane"). */
#define FH_ROLLOUT_AUTO 0
#define FH_ROLLOUT_WARP 1  /* one warp per episode */
#define FH_ROLLOUT_BLOCK 2 /* four warps per episode */
#define FH_ROLLOUT_LANE 3  /* one lane per episode, 32 episodes per warp */

/* A matmul shape (gpu_fast_collect.c's dense) and the algorithm tuned for it. */
typedef struct {
    int n_in, n_out;
    long long rows;
    int relu, bias;
    uint32_t align_w, align_x, align_y; /* the operands' address alignments, bytes */
} gemm_key;

#define FH_GEMM_TUNED_MAX 64

typedef struct {
    gemm_key key;
    cublasLtMatmulAlgo_t algo;
} gemm_tuned;

typedef struct {
    fh_cuda_module module;
    cudaKernel_t rollout, cur_fused, scatter, gae;
    cudaKernel_t seg_wait, seg_gather, seg_scatter; /* overlap */
    cudaKernel_t layer0;   /* critic_layer0_factored_kernel */
    cudaKernel_t actor_table_k; /* actor_table_kernel */
    /* The actor's first layer factored through the market (FH_ACTOR_TABLE): the sums
     * over a state's 51 market features looked up per bar in actor_table, made before
     * each rollout from that collection's actor (docs/ARCHITECTURE.md); on
     * (FOXHUNT_ACTOR_FACTOR, or where it pays) exactly when actor_table is set. */
    int actor_table_split; /* 1: even and odd inputs' sums apart (warp, block), 0: one */
    float *actor_table;    /* (n_bars, 256 split or 128), or NULL */
    cublasLtHandle_t lt;
    void *blas_workspace;
    int tune;              /* 1: time cublasLt's candidates per matmul shape (FOXHUNT_GEMM_TUNE) */
    int tune_candidates;   /* how many (FOXHUNT_GEMM_TUNE_CANDIDATES) */
    int n_tuned;
    gemm_tuned tuned[FH_GEMM_TUNED_MAX];
    int mapping;           /* FH_ROLLOUT_WARP, _BLOCK or _LANE (never _AUTO) */
    int episodes_per_block;
    int threads_per_block;
    size_t rollout_smem;
    long long *clocks;     /* (N, FH_CLOCK_STRIDE) rollout cycle counters, or NULL */
    int k_slots;           /* truncation final-observation slots per episode */
    long long critic_rows; /* N*L + N*K + N */
    long long chunk_rows;
    int in_stride;         /* floats between critic_in rows: 54 padded with zeros so the
                              first critic layer's K is a multiple of 8 (aligned rows) */
    float *critic_in;      /* (critic_rows, in_stride); rows [0, N*L) are the states */
    float *critic_w0;      /* (512, in_stride) the first critic layer, zero-padded, or
                              NULL when in_stride is 54 */
    /* The first critic layer factored through the market: a state's first 51 floats are
     * its bar's features, so their product with W0 is looked up per bar in market_proj,
     * made once per collection, and only the 3 portfolio columns are multiplied per row
     * (critic_layer0_factored_kernel; the bars in out.bars). */
    int factor;            /* 1: on (FOXHUNT_CRITIC_FACTOR, or when it pays) */
    float *market_in;      /* (n_bars, in_stride) the bars' features, zero-padded */
    float *market_proj;    /* (n_bars, 512) market_in times W0's market columns */
    int l0_slices;         /* the factored layer's output columns in 1, 2 or 4 slices */
    float *values_all;     /* (critic_rows) */
    int *trunc_step;       /* (N, K) */
    float *act_a, *act_b;  /* (chunk_rows, 512; 384 with the pipeline's h0) ping-pong
                              activations */
    /* Overlap of the critic with the rollout (small N): the rollout counts finished time
     * segments in seg_done; a side stream, forked and joined inside the graph, values
     * each segment's states while the rollout goes on. */
    int overlap;           /* 1: on */
    int n_segments, seg_steps;
    int *seg_done;         /* (n_segments + 1): episodes done per segment, then the
                              segment_wait_kernel time-out flag */
    float *seg_in;         /* (N * seg_steps, in_stride) one segment's states */
    float *seg_values;     /* (N * seg_steps) */
    int *seg_bars;         /* (N * seg_steps) their bars */
    /* Pipeline (the default where it pays; docs/ARCHITECTURE.md): after the rollout the
     * side stream runs the factored first layer chunk by chunk into h0, each chunk ahead
     * of the matmuls that read it, then the curiosity model, both beside the main
     * stream's matmuls (the market projection first). */
    int pipeline;          /* 1: on */
    int n_chunks;          /* the critic's row chunks, growing from the first */
    long long *chunk_begin; /* host (n_chunks + 1): row offsets */
    float *h0;             /* (critic_rows, 512) the first layer's output, with the factor */
    cudaEvent_t *ev_chunk; /* (n_chunks) side stream: chunk k's first layer written */
    cudaEvent_t ev_rollout; /* main stream: the rollout done */
    int l0_blocks_per_sm;  /* the side stream's first-layer grid per SM */
    int cur_hidden_block;  /* the curiosity kernel's hidden units per block (8 to 64) */
    int cur_per_thread;    /* and its transitions per thread (1, 2) */
    cudaStream_t side;     /* the overlap's or the pipeline's second stream */
    cudaEvent_t ev_fork, ev_join;
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
    int rollout_mapping;    /* fast path: FH_ROLLOUT_AUTO, _WARP, _BLOCK or _LANE */
    int tf32;
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
    fh_ppo_outputs out;     /* device pointers; in fast mode states/values/last_values
                               point into fast.critic_in / fast.values_all */
    int states_pitch;       /* floats between rows of out.states (54, or in_stride) */
    fh_fast_path fast;
    fh_gpu_collect_timing timing;
    /* the host batch last downloaded into, page-locked (cudaHostRegister) so the
     * download runs at full PCIe speed; unregistered on destroy */
    void *pinned[2];
};

fh_status fh_fast_path_init(fh_gpu_ppo_collector *c, fh_error *err);
/* Runs the whole fast collection on c->stream (as one graph unless c->profile). */
fh_status fh_fast_path_run(fh_gpu_ppo_collector *c, const fh_collect_params *p, fh_error *err);
/* After a collection has finished: an error if the overlap's side stream gave up waiting
 * for the rollout (segment_wait_kernel's time-out), which would leave values unset. */
fh_status fh_fast_path_check(fh_gpu_ppo_collector *c, fh_error *err);
void fh_fast_path_free(fh_gpu_ppo_collector *c);

#endif
