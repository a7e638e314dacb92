/* ppo_device_functions.cuh — the PPO device functions shared by the GPU kernels and
 * the CPU path (SPEC §5; issue 16): the actor and critic forwards, the categorical
 * sample, the GAE terms and scan, and the output buffers' struct.
 *
 * Written once for the C compiler and NVRTC, with the conventions of
 * common_device_functions.cuh (FH_DEVICE on every function, the common subset of C11
 * and C++17). gcc includes it as "env/ppo_device_functions.cuh" (src/rl/collect_cpu.c,
 * src/rl/evaluate.c), so the CPU collector samples and scans with the same code;
 * NVRTC gets it as the embedded header "ppo_device_functions.cuh" (registered under its
 * base name), included by ppo_experience_kernel.cu and by fast_kernels.cu.
 * It includes the common header itself, by base name: the directory of this file for
 * the C compiler, the embedded header for NVRTC (where the common header's guard is
 * already set, since the program text starts with it). */
#ifndef FOXHUNT_PPO_DEVICE_FUNCTIONS_CUH
#define FOXHUNT_PPO_DEVICE_FUNCTIONS_CUH

#include "common_device_functions.cuh"

/* Critic ping-pong scratch: the widest hidden layer. */
#define FH_CRITIC_SCRATCH FH_CRITIC_H1

/* Actor 54 -> 128 -> 64 -> 45: raw logits (FH_N_ACTIONS). weights: flat, FH_ACTOR_OFF_*. */
FH_DEVICE void ppo_actor_forward(float *logits, const float *weights, const float *state,
                                 float *h1, float *h2)
{
    matvec_leaky_relu(h1, weights + FH_ACTOR_OFF_W0, weights + FH_ACTOR_OFF_B0, state,
                      FH_ACTOR_H1, FH_STATE_DIM, FH_MATVEC_RELU, 0.0f);
    matvec_leaky_relu(h2, weights + FH_ACTOR_OFF_W1, weights + FH_ACTOR_OFF_B1, h1,
                      FH_ACTOR_H2, FH_ACTOR_H1, FH_MATVEC_RELU, 0.0f);
    matvec_linear(logits, weights + FH_ACTOR_OFF_W2, weights + FH_ACTOR_OFF_B2, h2,
                  FH_N_ACTIONS, FH_ACTOR_H2);
}

/* Critic 54 -> 512 -> 384 -> 256 -> 128 -> 64 -> 1 with two ping-pong buffers of
 * FH_CRITIC_SCRATCH floats. Returns V(state). */
FH_DEVICE float ppo_critic_forward(const float *weights, const float *state, float *a,
                                   float *b)
{
    float value;
    matvec_leaky_relu(a, weights + FH_CRITIC_OFF_W0, weights + FH_CRITIC_OFF_B0, state,
                      FH_CRITIC_H1, FH_STATE_DIM, FH_MATVEC_RELU, 0.0f);
    matvec_leaky_relu(b, weights + FH_CRITIC_OFF_W1, weights + FH_CRITIC_OFF_B1, a,
                      FH_CRITIC_H2, FH_CRITIC_H1, FH_MATVEC_RELU, 0.0f);
    matvec_leaky_relu(a, weights + FH_CRITIC_OFF_W2, weights + FH_CRITIC_OFF_B2, b,
                      FH_CRITIC_H3, FH_CRITIC_H2, FH_MATVEC_RELU, 0.0f);
    matvec_leaky_relu(b, weights + FH_CRITIC_OFF_W3, weights + FH_CRITIC_OFF_B3, a,
                      FH_CRITIC_H4, FH_CRITIC_H3, FH_MATVEC_RELU, 0.0f);
    matvec_leaky_relu(a, weights + FH_CRITIC_OFF_W4, weights + FH_CRITIC_OFF_B4, b,
                      FH_CRITIC_H5, FH_CRITIC_H4, FH_MATVEC_RELU, 0.0f);
    matvec_linear(&value, weights + FH_CRITIC_OFF_W5, weights + FH_CRITIC_OFF_B5, a, 1,
                  FH_CRITIC_H5);
    return value;
}

/* Categorical sample from raw logits (K) with one uniform draw u in [0, 1): stable
 * softmax (max subtracted), then the first k whose running sum of exp exceeds
 * u * total (no division, so CPU and GPU compare the same quantities). Writes the
 * action and its log-probability (logit - max - ln total). */
FH_DEVICE void softmax_sample(int *action, float *log_prob, const float *logits, int K,
                              float u)
{
    float max_logit = logits[0];
    for (int k = 1; k < K; k++)
        max_logit = fmaxf(max_logit, logits[k]);
    float total = 0.0f;
    for (int k = 0; k < K; k++)
        total += expf(logits[k] - max_logit);
    float threshold = u * total;
    float running = 0.0f;
    int chosen = K - 1; /* rounding can leave the threshold past the last partial sum */
    for (int k = 0; k < K; k++) {
        running += expf(logits[k] - max_logit);
        if (running > threshold) {
            chosen = k;
            break;
        }
    }
    *action = chosen;
    *log_prob = logits[chosen] - max_logit - logf(total);
}

/* One GAE step's terms (SPEC §5): A_t = delta_t + carry_t * A_{t+1}, with
 *   V_next = values[t+1] inside an episode, trunc_values[t] when step t truncated,
 *            last_value = V(s_L) for t = L-1 when the row ends mid-episode;
 *   delta_t = r_t + gamma V_next (1 - terminal_t) - V_t;  carry_t = gamma lambda (1 - done_t).
 * Shared by the sequential scan below and the fast path's warp scan. */
FH_DEVICE void gae_step_terms(float *delta, float *carry, const float *rewards,
                              const float *values, const int *dones, const int *terminals,
                              const float *trunc_values, float last_value, int L, int t,
                              float gamma, float lambda)
{
    float not_done = dones[t] ? 0.0f : 1.0f;
    float not_terminal = terminals[t] ? 0.0f : 1.0f;
    float next_value;
    if (dones[t])
        next_value = terminals[t] ? 0.0f : trunc_values[t];
    else
        next_value = t == L - 1 ? last_value : values[t + 1];
    *delta = rewards[t] + gamma * next_value * not_terminal - values[t];
    *carry = gamma * lambda * not_done;
}

/* GAE over one episode's row of L steps, backwards: A_t = delta_t + carry_t A_{t+1},
 * R_t = A_t + V_t (gae_step_terms). Row arrays are contiguous (episode-major [N x L]). */
FH_DEVICE void compute_gae_backward(float *advantages, float *returns, const float *rewards,
                                    const float *values, const int *dones,
                                    const int *terminals, const float *trunc_values,
                                    float last_value, int L, float gamma, float lambda)
{
    float next_advantage = 0.0f;
    for (int t = L - 1; t >= 0; t--) {
        float delta, carry;
        gae_step_terms(&delta, &carry, rewards, values, dones, terminals, trunc_values,
                       last_value, L, t, gamma, lambda);
        float advantage = delta + carry * next_advantage;
        advantages[t] = advantage;
        returns[t] = advantage + values[t];
        next_advantage = advantage;
    }
}

/* Device output buffers, episode-major (N, L) (meanings: include/foxhunt/rollout.h).
 * Passed by value to the kernel; the host collector fills the same struct. */
typedef struct {
    float *states;        /* (N, L, 54) */
    int *actions;         /* (N, L) */
    float *log_probs;     /* (N, L) */
    float *values;        /* (N, L) stays on the device */
    float *rewards;       /* (N, L) curiosity bonus included */
    int *dones;           /* (N, L) */
    int *terminals;       /* (N, L) */
    float *trunc_values;  /* (N, L) V(final observation) where truncated, else 0 */
    float *advantages;    /* (N, L) */
    float *returns;       /* (N, L) */
    float *exposures;     /* (N, L) e' after the trade (curiosity input) */
    int *bars;            /* (N, L) bar index of the state; in the fast path followed by
                             the bars of the final-observation and s_L critic rows */
    float *last_values;   /* (N) V(s_L) */
} fh_ppo_outputs;

#endif
