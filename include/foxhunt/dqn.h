/* dqn.h — DQN and PQN (issue 18; SPEC §7): the collected transitions, the replay ring,
 * the targets (n-step Double DQN, Q(lambda)) and the Huber loss. The collection itself
 * (dqn_experience_kernel, and the CPU path through the same device functions) writes an
 * fh_transition_batch; DQN pushes it into the ring, PQN computes Q(lambda) returns over
 * it in place. */
#ifndef FOXHUNT_DQN_H
#define FOXHUNT_DQN_H

#include <stddef.h>
#include <stdint.h>

#include "foxhunt/env_types.h"
#include "foxhunt/error.h"
#include "foxhunt/nn.h"
#include "foxhunt/train_config.h"

/* One collection of N episodes x L steps, row-major (episode n, step t at n*L + t).
 * next_states holds s_{t+1}: the observation after the step, or, when the step ended
 * the episode (terminal or truncated), the episode's final observation before the
 * reset. terminal: the episode ended by ruin (no bootstrap); truncated: it ended by the
 * horizon or the split's last bar (bootstrap from next_states). */
typedef struct {
    int n_episodes, n_steps;
    float *states;      /* (N*L, 54) */
    float *next_states; /* (N*L, 54) */
    int32_t *actions;   /* (N*L) */
    float *rewards;     /* (N*L) SPEC §3.7, curiosity included */
    uint8_t *terminal;  /* (N*L) */
    uint8_t *truncated; /* (N*L) */
    float *q_taken;     /* (N*L) Q(s_t, a_t) of the acting network (diagnostics) */
    float *exposures;   /* (N*L) exposure after the trade (the curiosity model's input) */
    int32_t *bars;      /* (N*L) bar of s_t in the split (its target: bar + 1's features) */
} fh_transition_batch;

fh_status fh_transition_batch_alloc(fh_transition_batch *b, int n_episodes, int n_steps,
                                    fh_error *err);
void fh_transition_batch_free(fh_transition_batch *b);

/* One collection on the CPU into out (sized N x L by fh_transition_batch_alloc): every
 * episode slot runs dqn_rollout_episode (src/env/dqn_device_functions.cuh), the code
 * dqn_experience_kernel runs per thread: observe, Q forward (qnet_params: FH_NET_QNET's
 * layout, or FH_NET_PQN's with layer_norm), epsilon-greedy, the shared env_step and
 * curiosity bonus, resets. episodes (N) carry on from call to call. */
fh_status fh_dqn_collect_cpu(const float *qnet_params, int layer_norm,
                             const float *curiosity_params, const fh_env_config *cfg,
                             const fh_env_market *market, fh_episode_state *episodes,
                             float epsilon, fh_transition_batch *out, fh_error *err);

/* ---- random numbers for the host side of DQN ----
 * The PCG32 of common_device_functions.cuh (pcg32, rng_seed, rng_uniform_int), callable
 * from code that does not include the .cuh; the same functions underneath, so a replay
 * draw on the host is the draw a kernel would make from the same fh_rng. */

/* rng_seed: seed is the run's seed, stream selects an independent sequence. */
void fh_pcg32_seed(fh_rng *rng, uint64_t seed, uint64_t stream);
/* The next 32-bit output (PCG XSH-RR 64/32). */
uint32_t fh_pcg32_next(fh_rng *rng);
/* rng_uniform_int: an integer in [0, n), n >= 1, by multiply-shift (bias below n / 2^32). */
int fh_pcg32_uniform_int(fh_rng *rng, int n);

/* ---- the replay ring (DQN) ----
 * capacity transitions, each already an n-step transition: state s_t, action a_t, the
 * n-step return G = sum_{j<k} gamma^j r_{t+j}, the bootstrap state s' and its discount
 * d (gamma^k, or 0 when the window ended at a terminal). The 1-step target
 * y = G + d * Q(s', .) is then the same formula for every n, which keeps the update free
 * of the episode structure. A push writes at head and wraps, overwriting the oldest;
 * size grows to capacity and stays there. Slot order: when size < capacity the
 * transitions are in slots 0..size-1, oldest first; once full, the oldest is at head. */
typedef struct {
    int capacity;       /* C, fixed at init */
    int size;           /* filled slots, <= capacity */
    int head;           /* the next slot written; the oldest once size == capacity */
    int64_t n_pushed;   /* transitions pushed since init (diagnostics, never wraps) */
    float *states;      /* (C, 54) s_t */
    int32_t *actions;   /* (C) a_t */
    float *returns;     /* (C) the n-step return G */
    float *next_states; /* (C, 54) the bootstrap state s' */
    float *discounts;   /* (C) d = gamma^k, 0 after a terminal */
} fh_replay;

/* Allocates an empty ring of capacity >= 1 transitions (about 444 bytes each). */
fh_status fh_replay_init(fh_replay *r, int capacity, fh_error *err);
/* Frees the ring and zeroes it (a zeroed or freed ring may be freed again). */
void fh_replay_free(fh_replay *r);

/* Turns each (episode n, step t) of b into an n-step transition and pushes all N*L of
 * them, in the batch's order (n*L + t), starting at head. The window for step t takes
 * the rewards r_t, r_{t+1}, ... along row n and stops after the first of:
 *   - n_step rewards: s' = next_states[t+n_step-1] (= s_{t+n_step}), d = gamma^n_step;
 *   - a terminal step u (ruin): s' = next_states[u] (unused), d = 0;
 *   - a truncated step u (horizon, split end): s' = next_states[u], the episode's final
 *     observation, d = gamma^(u-t+1): the episode was cut, not finished;
 *   - the row's last step L-1 (the collection stopped mid-episode): s' =
 *     next_states[L-1], d = gamma^(L-t).
 * G is summed in double. A step flagged both terminal and truncated counts as terminal.
 * When N*L > capacity only the last capacity transitions remain (as if each had been
 * written in turn). n_step >= 1, gamma in [0, 1]. */
fh_status fh_replay_push_batch(fh_replay *r, const fh_transition_batch *b, int n_step,
                               float gamma, fh_error *err);

/* Draws batch_size slot indices uniformly from [0, size), with replacement, each by
 * fh_pcg32_uniform_int(rng, size), in order; rng advances by batch_size outputs.
 * Fails on an empty ring. */
fh_status fh_replay_sample(const fh_replay *r, fh_rng *rng, int batch_size,
                           int32_t *out_indices, fh_error *err);

/* A contiguous minibatch gathered from the ring, row i from slot indices[i]. */
typedef struct {
    int capacity;       /* rows allocated */
    int size;           /* rows filled by the last gather */
    float *states;      /* (capacity, 54) */
    int32_t *actions;   /* (capacity) */
    float *returns;     /* (capacity) */
    float *next_states; /* (capacity, 54) */
    float *discounts;   /* (capacity) */
} fh_replay_minibatch;

fh_status fh_replay_minibatch_alloc(fh_replay_minibatch *mb, int capacity, fh_error *err);
void fh_replay_minibatch_free(fh_replay_minibatch *mb);
/* Copies slots indices[0..n-1] into rows 0..n-1 of mb (n <= mb->capacity); every index
 * must lie in [0, size). */
fh_status fh_replay_gather(const fh_replay *r, const int32_t *indices, int n,
                           fh_replay_minibatch *mb, fh_error *err);

/* ---- targets ---- */

/* n-step Double DQN (van Hasselt et al. 2016): the online network picks the action, the
 * target network values it, which removes max-operator overestimation:
 *   a*_i = argmax_a q_online_next[i, a]   (the lowest index among ties),
 *   y_i  = G_i + d_i * q_target_next[i, a*_i],
 * q_*_next (B, 45) row-major, evaluated at the ring's s'; computed in double. */
void fh_double_dqn_targets(const float *G, const float *d, const float *q_online_next,
                           const float *q_target_next, int B, float *y_out);

/* PQN's Q(lambda) returns (Gallici et al. 2024), a backward scan over each row of a
 * collection, with no target network. q_next_max[i] = max_a Q(next_states[i], a). For
 * row n, from t = L-1 down to 0, with i = n*L + t, in double:
 *   terminal[i]:                    G_t = r_t
 *   truncated[i] (not terminal):    G_t = r_t + gamma * q_next_max[i]
 *   t = L-1 (neither):              G_t = r_t + gamma * q_next_max[i]
 *   otherwise:                      G_t = r_t + gamma * ((1 - lambda) * q_next_max[i]
 *                                                        + lambda * G_{t+1})
 * A terminal or truncated step ends its episode, so G_{t+1} of the next episode never
 * leaks into it. This is the lambda-return: the (1 - lambda) lambda^(k-1)-weighted mix
 * of the k-step returns bootstrapped with max Q, the remaining weight on the return to
 * the episode's end (or the row's). lambda = 0 gives one-step Q-learning targets,
 * lambda = 1 Monte-Carlo returns bootstrapped at truncations and the row's end.
 * Arrays (N*L) laid out as fh_transition_batch. out may be rewards or q_next_max itself
 * (in place: each element is read before it is written, and never again). */
void fh_q_lambda_returns(const float *rewards, const uint8_t *terminal,
                         const uint8_t *truncated, const float *q_next_max, int N, int L,
                         float gamma, float lambda, float *out);

/* ---- loss and exploration ---- */

#define FH_HUBER_DELTA_DEFAULT 1.0f

/* Huber loss, mean over n elements, x_i = pred_i - target_i:
 *   l(x) = 0.5 x^2 for |x| <= delta, delta (|x| - 0.5 delta) beyond:
 * quadratic near the target, linear far from it, so one large TD error cannot dominate
 * the gradient. Returns the mean (summed in double); grad_out (may be NULL) receives
 * d(mean)/d(pred_i) = clamp(x_i, -delta, delta) / n. Returns NaN when n < 1 or
 * delta <= 0 (a caller's bug, made loud). */
float fh_huber_loss(const float *pred, const float *target, int n, float delta,
                    float *grad_out);

/* epsilon-greedy's epsilon at a step (CleanRL's linear_schedule): linear from eps_start
 * at step 0 to eps_end at step fraction * total_steps, then eps_end. A zero-length
 * schedule (fraction or total_steps <= 0) is eps_end throughout. */
float fh_epsilon_at(int64_t step, int64_t total_steps, float eps_start, float eps_end,
                    float fraction);

/* ---- the updates (q_update.c) ----
 * One gradient step on a minibatch of (s, a, y): Q(s, .) forward with the activation
 * cache, the loss on Q(s, a) only (PQN: 0.5 (Q - y)^2; DQN: Huber with delta), its
 * gradient through the network, the global gradient-norm clip (max_grad_norm > 0),
 * one Adam step. A non-finite loss or gradient stops before the step, the weights
 * unchanged (FH_ERR_FAILURE naming the quantity). */
#define FH_Q_CHUNK 4096 /* rows of the no-gradient passes over next states */

typedef struct {
    int minibatch;
    fh_mlp_ws ws;          /* minibatch rows: the online network's cache */
    fh_mlp_ws chunk_ws;    /* FH_Q_CHUNK rows: next-state passes (online and target) */
    float *mb_states;      /* (M, 54) */
    int32_t *mb_actions;   /* (M) */
    float *mb_targets;     /* (M) */
    float *mb_q;           /* (M, 45) */
    float *mb_dq;          /* (M, 45) */
    float *chunk_q;        /* (FH_Q_CHUNK, 45) */
    float *chunk_q2;       /* (FH_Q_CHUNK, 45) */
    float *returns;        /* (N*L) PQN's Q(lambda) returns */
    float *next_max;       /* (N*L) max_a Q(s', a) */
    int64_t *perm;         /* (N*L) */
    int64_t batch_size;
} fh_q_workspace;

typedef struct {
    double loss;        /* mean over the minibatches */
    double mean_q;      /* mean Q(s, a) of the minibatches */
    double mean_target; /* mean y */
    double grad_norm;   /* mean pre-clip norm */
    int minibatches;
} fh_q_stats;

/* net: FH_NET_QNET or FH_NET_PQN; batch_size: N*L (PQN) or 0 (DQN: no Q(lambda)). */
fh_status fh_q_workspace_init(fh_q_workspace *w, fh_net_kind net, int minibatch,
                              int64_t batch_size, fh_error *err);
void fh_q_workspace_free(fh_q_workspace *w);

typedef struct {
    float gamma, lambda;    /* PQN: Q(lambda) */
    int epochs, minibatch;  /* PQN: epochs of minibatches over N*L (keyed order) */
    double max_grad_norm;   /* 0: no clip */
    float huber_delta;      /* DQN; PQN with pqn_huber */
    int pqn_huber;          /* PQN: Huber instead of the squared loss */
    fh_adam_config adam;    /* lr already this iteration's */
} fh_q_update_config;

/* The update's settings of a run's config at learning rate lr (the iteration's). */
fh_q_update_config fh_q_update_config_of(const fh_train_config *cfg, double lr);

/* One minibatch step on w->mb_states / mb_actions / mb_targets (M rows). */
fh_status fh_q_minibatch_step(fh_mlp *q, fh_q_workspace *w, int M, int huber,
                              const fh_q_update_config *cfg, fh_q_stats *acc, fh_error *err);

/* PQN (Gallici et al. 2024): max_a Q(s', a) over the batch's next states with the
 * network as it is, Q(lambda) returns by the backward scan (fh_q_lambda_returns), then
 * cfg->epochs passes of minibatches in PPO's keyed order (minibatch_order.cuh: every
 * epoch's key drawn from rng first) of MSE steps (Huber steps with cfg->pqn_huber).
 * No replay, no target network. */
fh_status fh_pqn_update(fh_q_stats *stats, fh_mlp *q, fh_q_workspace *w,
                        const fh_transition_batch *b, const fh_q_update_config *cfg,
                        fh_rng *rng, fh_error *err);

/* DQN: n_steps gradient steps, each on a uniform sample of the ring: Double DQN
 * targets (the online network picks a', the target network values it), Huber loss.
 * The caller updates the target network (fh_q_target_update). */
fh_status fh_dqn_update(fh_q_stats *stats, fh_mlp *q, const fh_mlp *target, fh_q_workspace *w,
                        const fh_replay *ring, fh_replay_minibatch *mb, int n_steps,
                        const fh_q_update_config *cfg, fh_rng *rng, fh_error *err);

/* tau 1: a hard copy of the params; 0 < tau < 1: Polyak, target = tau q + (1-tau) target. */
void fh_q_target_update(fh_mlp *target, const fh_mlp *q, float tau);

/* DQN's gradient steps of an iteration with the target network's schedule, the CPU
 * reference of the device's fh_gpu_dqn_steps and the Q trainer's host path: `steps`
 * fh_dqn_update steps, in chunks that end at each hard copy when target_update_every > 0
 * (the target copied whenever *grad_steps reaches a multiple of target_update_every: the
 * count carries across calls and resumes), else one step at a time, each followed by a
 * Polyak step of rate tau. *grad_steps advances by every step taken. stats: the means of
 * loss, Q, target and gradient norm over all the steps (zero when steps is 0, or on an
 * error, which leaves the steps already taken in place). */
fh_status fh_dqn_steps(fh_q_stats *stats, fh_mlp *q, fh_mlp *target, fh_q_workspace *w,
                       const fh_replay *ring, fh_replay_minibatch *mb, int64_t steps,
                       int target_update_every, float tau, int64_t *grad_steps,
                       const fh_q_update_config *cfg, fh_rng *rng, fh_error *err);

#endif
