/* dqn_experience_kernel.cu — the DQN/PQN experience collector (issue 18; SPEC §7), in
 * two mappings (the plan, fast_plan.h's fh_dqn_plan_make, picks one):
 *
 * - plain (the reference): one launch of dqn_experience_kernel collects N episodes x L
 *   steps, one thread per episode, each thread running the whole Q-network per step;
 * - stepped: per step, the Q-network's forward over all N episodes as matmuls
 *   (update_layers.c, the update's own layers), then dqn_step_kernel, one thread per
 *   episode, for the rest of the step; the L steps are one CUDA graph, so there is still
 *   no host round trip per timestep. The weights are read once per step for all
 *   episodes instead of once per episode.
 *
 * NVRTC compiles common_device_functions.cuh followed by this file (source
 * concatenation, as the PPO kernel); the step after the forward is dqn_step_from_q in
 * src/env/dqn_device_functions.cuh, which the CPU collector runs too. */
#ifndef FOXHUNT_DQN_EXPERIENCE_KERNEL_CU
#define FOXHUNT_DQN_EXPERIENCE_KERNEL_CU

#if defined(__CUDACC_RTC__)
#include "dqn_device_functions.cuh"
#else
#include "env/dqn_device_functions.cuh"
#endif

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)

extern "C" __global__ void dqn_experience_kernel(
    const float *__restrict__ qnet_w, const float *__restrict__ curiosity_w,
    fh_env_config cfg, fh_env_market market, fh_episode_state *episodes, int n_episodes,
    int n_steps, float epsilon, int layer_norm, fh_dqn_outputs out)
{
    int n = blockIdx.x * blockDim.x + threadIdx.x;
    if (n >= n_episodes)
        return;
    fh_episode_state ep = episodes[n];
    dqn_rollout_episode(qnet_w, curiosity_w, &cfg, &market, &ep, n, n_steps, epsilon,
                        layer_norm, out);
    episodes[n] = ep;
}

/* The stepped mapping's start: each episode's observation into x (N, 54), row n. */
extern "C" __global__ void dqn_observe_kernel(fh_env_config cfg, fh_env_market market,
                                              const fh_episode_state *episodes, int n_episodes,
                                              float *x)
{
    int n = blockIdx.x * blockDim.x + threadIdx.x;
    if (n >= n_episodes)
        return;
    fh_episode_state ep = episodes[n];
    env_observe(&cfg, &market, &ep, x + (long long)n * FH_STATE_DIM);
}

/* The stepped mapping's step t after the forward: q (N, 45) = Q(x), x (N, 54) the
 * observations; each episode's step from its row (dqn_step_from_q), which leaves the
 * next step's observation in x. epsilon is read from the device (one graph serves every
 * collection). */
extern "C" __global__ void dqn_step_kernel(const float *__restrict__ q,
                                           const float *__restrict__ curiosity_w,
                                           fh_env_config cfg, fh_env_market market,
                                           fh_episode_state *episodes, int n_episodes,
                                           int n_steps, int t, const float *epsilon,
                                           float *x, fh_dqn_outputs out)
{
    int n = blockIdx.x * blockDim.x + threadIdx.x;
    if (n >= n_episodes)
        return;
    fh_episode_state ep = episodes[n];
    float state[FH_STATE_DIM];
    float *row = x + (long long)n * FH_STATE_DIM;
    for (int j = 0; j < FH_STATE_DIM; j++)
        state[j] = row[j];
    dqn_step_from_q(q + (long long)n * FH_N_ACTIONS, curiosity_w, &cfg, &market, &ep, state,
                    (long long)n * n_steps + t, *epsilon, out);
    for (int j = 0; j < FH_STATE_DIM; j++)
        row[j] = state[j];
    episodes[n] = ep;
}
#endif

#endif
