/* fast_args.h — the host/device contract of the fast path: one argument struct per
 * kernel, passed by value (the host launches with `void *args[] = {&a}`), and the
 * shared-memory record the block and pair mappings hand over. Plain C, included by the
 * kernels (NVRTC) and by the host after the environment's headers
 * (common_device_functions.cuh, ppo_device_functions.cuh), whose types it uses. */
#ifndef FOXHUNT_FAST_ARGS_H
#define FOXHUNT_FAST_ARGS_H

/* The block mapping's hand-off from the warp that moves the portfolio (warp 0) to the
 * one that keeps the books (warp FH_BLOCK_BOOK_WARP): step t's env_step_move result in
 * slot t & 1 of a two-record ring in shared memory. Warp 0 writes it at the end of step
 * t; the book-keeper reads it after the observation barrier of step t + 1, which all
 * five warps pass, and is done with it before it passes that of step t + 2, after which
 * warp 0 overwrites the slot. Only whole-barrier waits (bar.sync), no arrive/wait pairs. */
typedef struct {
    fh_step_move mv;
    int action;
} fh_book_record;

/* The rollout kernels' (every mapping's) arguments. critic_in holds N*L + N*K + N rows,
 * in_stride floats apart (the padding stays zero): the states, the truncation final
 * observations (slot j of episode n at row N*L + n*K + j, its step in
 * trunc_step[n*K + j], -1 unused) and s_L. */
typedef struct {
    const float *actor_w;       /* the actor's flat weights (FH_ACTOR_OFF_*) */
    const float *actor_table;   /* (n_bars, row) from actor_table_kernel, or NULL */
    fh_env_config cfg;
    fh_env_market market;
    fh_episode_state *episodes; /* (N), carried from collection to collection */
    int n_episodes, n_steps, k_slots, in_stride;
    float *critic_in;
    int *trunc_step;            /* (N, K) */
    fh_ppo_outputs out;
    long long *clocks;          /* (N, FH_CLOCK_STRIDE) under FH_ROLLOUT_CLOCKS, or NULL */
} fh_rollout_args;

/* actor_table_kernel: table (n_bars, 256 split or 128) from the features (n_bars, 51). */
typedef struct {
    float *table;
    const float *features;
    const float *actor_w;
    int n_bars, split;
} fh_actor_table_args;

/* critic_layer0_factored_kernel: y (rows, 512) for output columns [col0, col0 + cols). */
typedef struct {
    float *y;
    const float *proj;    /* (n_bars, 512) the market's projection */
    const int *bars;      /* (rows) each row's bar */
    const float *states;  /* (rows, in_stride) */
    int in_stride;
    const float *w0;      /* (512, w0_stride) */
    int w0_stride;
    const float *b0;
    int n_bars;
    long long rows;
    int col0, cols;
} fh_critic_layer0_args;

/* curiosity_fused_kernel: the bonus of n transitions added to rewards. */
typedef struct {
    float *rewards;
    const float *states;  /* (n, in_stride) */
    int in_stride;
    const int *actions;
    const float *exposures;
    const int *bars;
    const float *weights; /* the curiosity model's flat weights */
    fh_env_config cfg;
    fh_env_market market;
    long long n;
} fh_curiosity_args;

/* scatter_trunc_values_kernel and gae_kernel. */
typedef struct {
    float *trunc_values;
    const float *slot_values; /* (N, K) the final observations' values */
    const int *trunc_step;    /* (N, K) */
    int n_episodes, n_steps, k_slots;
} fh_trunc_values_args;

typedef struct {
    fh_ppo_outputs out;
    int n_episodes, n_steps;
    float gamma, lambda;
    int staged; /* each warp's row through shared memory */
} fh_gae_args;

#endif
