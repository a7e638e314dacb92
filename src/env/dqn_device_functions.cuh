/* dqn_device_functions.cuh — the DQN/PQN device functions shared by
 * dqn_experience_kernel (NVRTC) and the CPU collector (gcc) (issue 18; SPEC §7): the
 * Q-network's forward (with LayerNorm for PQN), the epsilon-greedy choice, and one
 * episode's rollout of L steps writing transitions. Conventions of
 * common_device_functions.cuh: FH_DEVICE on every function, the common subset of C11
 * and C++17. The CPU path runs dqn_rollout_episode itself, so CPU and GPU transitions
 * are the same computation (tests/dqn/test_dqn_parity.c compares them). */
#ifndef FOXHUNT_DQN_DEVICE_FUNCTIONS_CUH
#define FOXHUNT_DQN_DEVICE_FUNCTIONS_CUH

#include "common_device_functions.cuh"

#define FH_QNET_LN_EPS 1e-5f

/* Flat parameter layout (src/nn/net_desc.c, docs/CHECKPOINTS.md): per hidden layer l
 * W_l (out x in), b_l, and with LayerNorm gamma_l, beta_l; then the output W, b. */
FH_DEVICE int qnet_hidden_block(int n_out, int n_in, int layer_norm)
{
    return n_out * n_in + n_out + (layer_norm ? 2 * n_out : 0);
}

/* LayerNorm over n features in place (population variance), then LeakyReLU. */
FH_DEVICE void layer_norm_leaky(float *h, const float *gamma, const float *beta, int n,
                                float slope)
{
    float mean = 0.0f;
    for (int i = 0; i < n; i++)
        mean += h[i];
    mean /= (float)n;
    float var = 0.0f;
    for (int i = 0; i < n; i++)
        var += (h[i] - mean) * (h[i] - mean);
    var /= (float)n;
    float inv = 1.0f / sqrtf(var + FH_QNET_LN_EPS);
    for (int i = 0; i < n; i++)
        h[i] = leaky_relu(gamma[i] * (h[i] - mean) * inv + beta[i], slope);
}

/* Q(state, .) (FH_N_ACTIONS) through 54 -> H1 -> H2 -> 45, LeakyReLU hidden; with
 * layer_norm (PQN) LayerNorm before each hidden activation. h1 (FH_QNET_H1) and h2
 * (FH_QNET_H2) are scratch. */
FH_DEVICE void qnet_forward(float *q, const float *w, const float *state, float *h1,
                            float *h2, int layer_norm, float slope)
{
    const float *p = w;
    int act = layer_norm ? FH_MATVEC_LINEAR : FH_MATVEC_LEAKY_RELU;
    matvec_leaky_relu(h1, p, p + FH_QNET_H1 * FH_STATE_DIM, state, FH_QNET_H1, FH_STATE_DIM,
                      act, slope);
    if (layer_norm) {
        const float *g = p + FH_QNET_H1 * FH_STATE_DIM + FH_QNET_H1;
        layer_norm_leaky(h1, g, g + FH_QNET_H1, FH_QNET_H1, slope);
    }
    p += qnet_hidden_block(FH_QNET_H1, FH_STATE_DIM, layer_norm);
    matvec_leaky_relu(h2, p, p + FH_QNET_H2 * FH_QNET_H1, h1, FH_QNET_H2, FH_QNET_H1, act,
                      slope);
    if (layer_norm) {
        const float *g = p + FH_QNET_H2 * FH_QNET_H1 + FH_QNET_H2;
        layer_norm_leaky(h2, g, g + FH_QNET_H2, FH_QNET_H2, slope);
    }
    p += qnet_hidden_block(FH_QNET_H2, FH_QNET_H1, layer_norm);
    matvec_linear(q, p, p + FH_N_ACTIONS * FH_QNET_H2, h2, FH_N_ACTIONS, FH_QNET_H2);
}

/* Epsilon-greedy: one uniform draw decides; exploring draws the action uniformly (a
 * second draw), so the stream advances the same way on every device. */
FH_DEVICE int epsilon_greedy(const float *q, int K, float epsilon, fh_rng *rng)
{
    if (gpu_random(rng) < epsilon)
        return rng_uniform_int(rng, K);
    return argmax_first(q, K);
}

/* Transitions of one collection, episode-major (N, L) (include/foxhunt/dqn.h,
 * fh_transition_batch: the same layout). Passed by value to the kernel. */
typedef struct {
    float *states;           /* (N, L, 54) s_t */
    float *next_states;      /* (N, L, 54) s_{t+1}, or the final observation at a done */
    int *actions;            /* (N, L) */
    float *rewards;          /* (N, L) curiosity bonus included */
    unsigned char *terminal; /* (N, L) ruin: no bootstrap */
    unsigned char *truncated;/* (N, L) horizon or the split's end: bootstrap */
    float *q_taken;          /* (N, L) Q(s_t, a_t) of the acting network */
    float *exposures;        /* (N, L) exposure after the trade (curiosity input) */
    int *bars;               /* (N, L) bar of s_t */
} fh_dqn_outputs;

/* One step of an episode slot from its observation `state` (s_t) and the acting
 * network's Q(s_t, .) (q): store s_t, epsilon-greedy, env step, curiosity bonus, store
 * the transition at row i; at a done the final observation is next_states and the
 * episode resets. Leaves in `state` the observation the next step starts from. Shared
 * by dqn_rollout_episode (the network's forward per thread) and dqn_step_kernel (the
 * forward as matmuls over all episodes between launches). */
FH_DEVICE void dqn_step_from_q(const float *q, const float *curiosity_w,
                               const fh_env_config *cfg, const fh_env_market *market,
                               fh_episode_state *ep, float *state, long long i, float epsilon,
                               fh_dqn_outputs out)
{
    float *s = out.states + i * FH_STATE_DIM, *s_next = out.next_states + i * FH_STATE_DIM;
    for (int j = 0; j < FH_STATE_DIM; j++)
        s[j] = state[j];
    int action = epsilon_greedy(q, FH_N_ACTIONS, epsilon, &ep->rng);
    int bar = ep->bar;
    fh_step_result res;
    env_step(cfg, market, ep, action, &res);
    float mse = curiosity_inference(curiosity_w, state, action, res.exposure,
                                    market->features +
                                        (long long)(bar + 1) * FH_N_MARKET_FEATURES);
    env_add_bonus(ep, &res, curiosity_bonus(cfg, mse));
    env_observe(cfg, market, ep, state); /* s_{t+1}, or the final observation */
    for (int j = 0; j < FH_STATE_DIM; j++)
        s_next[j] = state[j];
    if (res.done) {
        ep->episodes_done++;
        env_episode_reset(cfg, market, ep);
        env_observe(cfg, market, ep, state);
    }
    out.actions[i] = action;
    out.rewards[i] = res.reward;
    out.terminal[i] = (unsigned char)(res.terminal != 0);
    out.truncated[i] = (unsigned char)(res.done && !res.terminal);
    out.q_taken[i] = q[action];
    out.exposures[i] = res.exposure;
    out.bars[i] = bar;
}

/* One episode slot's L steps (slot n of N): observe, then per step the Q forward and
 * dqn_step_from_q. ep is updated in place. */
FH_DEVICE void dqn_rollout_episode(const float *qnet_w, const float *curiosity_w,
                                   const fh_env_config *cfg, const fh_env_market *market,
                                   fh_episode_state *ep, int n, int n_steps, float epsilon,
                                   int layer_norm, fh_dqn_outputs out)
{
    float state[FH_STATE_DIM];
    float h1[FH_QNET_H1], h2[FH_QNET_H2], q[FH_N_ACTIONS];
    long long row = (long long)n * n_steps;
    env_observe(cfg, market, ep, state);
    for (int t = 0; t < n_steps; t++) {
        qnet_forward(q, qnet_w, state, h1, h2, layer_norm, FH_QNET_LEAKY_SLOPE);
        dqn_step_from_q(q, curiosity_w, cfg, market, ep, state, row + t, epsilon, out);
    }
}

#endif
