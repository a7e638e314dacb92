/* ppo_experience_kernel.cu — the reference PPO experience collector (design note
 * ../shared/seed/, SPEC §5): one launch collects N episodes x L steps, one thread per
 * episode, with zero host round trips per timestep.
 *
 *   Phase A (rollout): for each step, observe (env_observe_train: with obs_noise, the
 *     noisy features) -> ppo_actor_forward -> softmax_sample ->
 *     ppo_critic_forward -> env_step -> curiosity_inference -> store; on done, the
 *     final observation's value (truncation) and env_episode_reset.
 *   Phase B (GAE): compute_gae_backward over the thread's own row.
 *
 * NVRTC compiles common_device_functions.cuh followed by this file (source
 * concatenation). The PPO device functions it calls (ppo_actor_forward,
 * ppo_critic_forward, softmax_sample, compute_gae_backward, ...) and the output struct
 * fh_ppo_outputs live in src/env/ppo_device_functions.cuh, shared with the CPU path;
 * this file holds only the reference kernel's entry, seen only by CUDA compilers. The
 * fast kernels include this file, and C files still including it get the shared
 * functions through it.
 *
 * It is the GPU's correctness oracle, not its fast path: one thread walks ~390 k
 * multiply-adds per step in local memory (docs/ARCHITECTURE.md has the napkin math). */
#ifndef FOXHUNT_PPO_EXPERIENCE_KERNEL_CU
#define FOXHUNT_PPO_EXPERIENCE_KERNEL_CU

/* NVRTC resolves the embedded header by its base name; the C compiler (and nvcc) by
 * the src/ include path. */
#if defined(__CUDACC_RTC__)
#include "ppo_device_functions.cuh"
#else
#include "env/ppo_device_functions.cuh"
#endif

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)

extern "C" __global__ void ppo_full_experience_kernel(
    const float *__restrict__ actor_w, const float *__restrict__ critic_w,
    const float *__restrict__ curiosity_w, fh_env_config cfg, fh_env_market market,
    fh_episode_state *episodes, int n_episodes, int n_steps, float gamma, float lambda,
    fh_ppo_outputs out)
{
    int n = blockIdx.x * blockDim.x + threadIdx.x;
    if (n >= n_episodes)
        return;
    fh_episode_state ep = episodes[n];
    float state[FH_STATE_DIM];
    float h1[FH_ACTOR_H1], h2[FH_ACTOR_H2], logits[FH_N_ACTIONS];
    float scratch_a[FH_CRITIC_SCRATCH], scratch_b[FH_CRITIC_SCRATCH];
    long long row = (long long)n * n_steps;

    /* Phase A: rollout */
    for (int t = 0; t < n_steps; t++) {
        long long i = row + t;
        env_observe_train(&cfg, &market, &ep, state);
        float *state_out = out.states + i * FH_STATE_DIM;
        for (int j = 0; j < FH_STATE_DIM; j++)
            state_out[j] = state[j];
        ppo_actor_forward(logits, actor_w, state, h1, h2);
        int action;
        float log_prob;
        softmax_sample(&action, &log_prob, logits, FH_N_ACTIONS, gpu_random(&ep.rng));
        float value = ppo_critic_forward(critic_w, state, scratch_a, scratch_b);
        int bar = ep.bar;
        fh_step_result res;
        env_step(&cfg, &market, &ep, action, &res);
        /* the next bar's features: ep.bar moved to bar + 1 (before any reset) */
        float mse = curiosity_inference(curiosity_w, state, action, res.exposure,
                                        market.features + (long long)(bar + 1) * FH_N_MARKET_FEATURES);
        env_add_bonus(&ep, &res, curiosity_bonus(&cfg, mse));
        float trunc_value = 0.0f;
        if (res.done) {
            if (res.truncated) {
                env_observe_train(&cfg, &market, &ep, state);
                trunc_value = ppo_critic_forward(critic_w, state, scratch_a, scratch_b);
            }
            ep.episodes_done++;
            env_episode_reset(&cfg, &market, &ep);
        }
        out.actions[i] = action;
        out.log_probs[i] = log_prob;
        out.values[i] = value;
        out.rewards[i] = res.reward;
        out.dones[i] = res.done;
        out.terminals[i] = res.terminal;
        out.trunc_values[i] = trunc_value;
        out.exposures[i] = res.exposure;
        out.bars[i] = bar;
    }
    env_observe_train(&cfg, &market, &ep, state);
    float last_value = ppo_critic_forward(critic_w, state, scratch_a, scratch_b);
    out.last_values[n] = last_value;
    episodes[n] = ep;

    /* Phase B: GAE backward scan over this thread's row */
    compute_gae_backward(out.advantages + row, out.returns + row, out.rewards + row,
                         out.values + row, out.dones + row, out.terminals + row,
                         out.trunc_values + row, last_value, n_steps, gamma, lambda);
}
#endif

#endif
