/* ppo_experience_kernel.cu — the reference PPO experience collector (design note
 * ../shared/seed/, SPEC §5): one launch collects N episodes x L steps, one thread per
 * episode, with zero host round trips per timestep.
 *
 *   Phase A (rollout): for each step, observe -> ppo_actor_forward -> softmax_sample ->
 *     ppo_critic_forward -> env_step -> curiosity_inference -> store; on done, the
 *     final observation's value (truncation) and env_episode_reset.
 *   Phase B (GAE): compute_gae_backward over the thread's own row.
 *
 * This file is compiled two ways. NVRTC compiles common_device_functions.cuh followed
 * by this file (source concatenation) with the kernel entry. The C compiler includes
 * it after the common header for the PPO device functions alone (softmax_sample,
 * compute_gae_backward, ...), so the CPU collector samples and scans with the same
 * code; the entry point is only seen by CUDA compilers.
 *
 * It is the GPU's correctness oracle, not its fast path: one thread walks ~390 k
 * multiply-adds per step in local memory (docs/ARCHITECTURE.md has the napkin math). */
#ifndef FOXHUNT_PPO_EXPERIENCE_KERNEL_CU
#define FOXHUNT_PPO_EXPERIENCE_KERNEL_CU

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
        env_observe(&cfg, &market, &ep, state);
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
                env_observe(&cfg, &market, &ep, state);
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
    env_observe(&cfg, &market, &ep, state);
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
