/* dqn_experience_kernel.cu — the DQN/PQN experience collector (issue 18; SPEC §7): one
 * launch collects N episodes x L steps of epsilon-greedy transitions, one thread per
 * episode, with zero host round trips per timestep. NVRTC compiles
 * common_device_functions.cuh followed by this file (source concatenation, as the PPO
 * kernel); the per-episode loop is dqn_rollout_episode in
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
#endif

#endif
