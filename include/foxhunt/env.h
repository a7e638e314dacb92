/* env.h — the trading environment on the CPU (SPEC §3; docs/ENVIRONMENT.md).
 *
 * The plain types (fh_env_config, fh_episode_state, fh_step_result, ...) are in
 * foxhunt/env_types.h, which the GPU kernels compile too; the per-episode math over them
 * (src/env/common_device_functions.cuh) is internal to the library. This header adds
 * the host side: the configuration defaults and a vectorised environment that steps N
 * episodes with OpenMP (one episode per iteration, each with its own random stream, so
 * results do not depend on the number of threads). Batch arrays are owned by the caller. */
#ifndef FOXHUNT_ENV_H
#define FOXHUNT_ENV_H

#include <stddef.h>
#include <stdint.h>

#include "foxhunt/data.h"
#include "foxhunt/env_types.h"
#include "foxhunt/error.h"
#include "foxhunt/shapes.h"

/* SPEC §3 defaults: half_spread 1e-4, impact 5e-4, pt 2, sl 1, max_hold 50, pt_bonus 0.5,
 * sl_scale 0.5, div_coef 0.01, cur_coef 0.01, risk_coef 1, reward_scale 100, ruin 0.5,
 * horizon 256, initial_equity 10000. */
fh_env_config fh_env_config_default(void);
/* FH_ERR_INPUT naming the first coefficient out of range. */
fh_status fh_env_config_validate(const fh_env_config *cfg, fh_error *err);

/* The device-compatible view of a data split (pointers are shared, not copied). */
fh_env_market fh_env_market_from_view(const fh_market_view *view);
/* FH_ERR_INPUT unless n_bars >= 2, arrays present, closes > 0 and finite, sigma >= 0
 * and finite, features finite. */
fh_status fh_env_market_validate(const fh_env_market *market, fh_error *err);

/* Checks every field of an episode state that is about to be stepped on market m (a
 * checkpoint's states are untrusted input: the diversity window's head, ring and fill,
 * the bar and the barrier's entry step are used as array indices). A state passes
 * exactly when it is one that env_step and env_episode_reset can produce on m:
 *   rng.inc odd; 0 <= start_bar <= bar <= n_bars - 2 (a step reads bar + 1);
 *   step = bar - start_bar; cash, units finite; equity, initial_equity finite and > 0,
 *   equity / initial_equity - 1 and the exposure within a float's range (the
 *   observation's features);
 *   equity = cash + units * close[bar] and exposure = units * close[bar] / equity (to
 *   1e-9 relative: the exposure is the drifted one, not the action grid's [-1, 1]);
 *   the logs finite, costs and turnovers >= 0, counters in [0, step] (reversals,
 *   barrier hits, [FH_BARRIER_NONE] = 0), lifetime counters >= the episode's,
 *   episodes_done >= 0; the barrier: direction in {-1, 0, +1} and equal to the sign of
 *   units; inactive: all five fields 0; active: entry_step an integer in [0, step),
 *   entry = close[start_bar + entry_step] exactly, lower <= entry <= upper, all finite;
 *   the diversity window: ring entries < FH_N_ACTIONS, fill = min(step, W),
 *   head = step mod W, counts[a] = occurrences of a in the filled part, clogc = the sum
 *   of c ln c over counts (1e-5 relative); padding fields 0.
 * The coefficients are not compared with cfg's (a resume may change them); cfg must pass
 * fh_env_config_validate. Returns 1 when valid; else 0 with why (n bytes, may be NULL)
 * naming the first bad field and its value, e.g. "diversity.head = 1000000000 is
 * outside [0, 100)". */
int fh_episode_state_validate(const fh_env_config *cfg, const fh_env_market *m,
                              const fh_episode_state *ep, char *why, size_t n);

/* One finished episode. */
typedef struct {
    int slot;             /* episode index in the vec env */
    int start_bar;
    int length;           /* steps */
    int terminal;         /* 1: ruin */
    int truncated;        /* 1: horizon or end of data */
    int reversals;
    int barrier_hits[FH_BARRIER_N_KINDS]; /* by FH_BARRIER_*; [FH_BARRIER_NONE] unused */
    double episode_return; /* sum of rewards (curiosity included when it was computed) */
    double log_growth;    /* ln(final equity / initial equity) */
    double final_equity;
    double costs;         /* cash paid in transaction costs */
    double turnover;
} fh_episode_log;

/* Means over finished episodes (counts are totals). */
typedef struct {
    long n_episodes;
    long n_terminal;
    long n_truncated;
    double mean_return;
    double mean_length;
    double mean_log_growth;
    double mean_costs;
    double mean_reversals;
    long barrier_hits[FH_BARRIER_N_KINDS];
} fh_episode_summary;

typedef struct {
    int n_episodes;
    fh_env_config cfg;
    fh_env_market market;
    fh_episode_state *episodes; /* (N) */
    fh_episode_log *pending;    /* (N) log of the episode that just ended in each slot */
    fh_episode_log *logs;       /* finished episodes, in (step call, slot) order */
    size_t n_logs;
    size_t cap_logs;
    uint64_t total_steps;
    int n_threads;              /* OpenMP threads of a step; 0: OpenMP's default (the
                                   process's omp_set_num_threads or OMP_NUM_THREADS) */
} fh_vec_env;

/* Seeds slot i's stream with (seed, i) and resets every episode. The market's arrays
 * must outlive env. On error env is left freeable. */
fh_status fh_vec_env_init(fh_vec_env *env, int n_episodes, const fh_env_config *cfg,
                          const fh_market_view *market, uint64_t seed, fh_error *err);
/* Same with an fh_env_market (tests and benches that build their own arrays). */
fh_status fh_vec_env_init_market(fh_vec_env *env, int n_episodes, const fh_env_config *cfg,
                                 const fh_env_market *market, uint64_t seed, fh_error *err);
/* Safe on a zeroed or half-built env. */
void fh_vec_env_free(fh_vec_env *env);

/* Writes the current observation of every episode: states (N, 54). Does not reset. */
void fh_vec_env_observe(const fh_vec_env *env, float *states);
/* Resets every episode (new start bars from each slot's stream) and observes. */
void fh_vec_env_reset(fh_vec_env *env, float *states);

/* Steps every episode with actions (N) in [0, 45). curiosity_weights (FH_CURIOSITY_N_PARAMS)
 * or NULL: when given, each reward gets curiosity_bonus of the model's MSE on
 * (s, a, next bar's features 0..31). Outputs (N): rewards, dones, terminals,
 * truncations; states_out (N, 54) the observation to act on next (after the auto-reset
 * of finished episodes); final_states (N, 54) or NULL: the observation before the
 * reset (rows of episodes not done hold the same as states_out). FH_ERR_INPUT for an
 * action out of range (nothing is stepped); FH_ERR_FAILURE if the log list cannot grow. */
fh_status fh_vec_env_step(fh_vec_env *env, const int *actions, const float *curiosity_weights,
                          float *states_out, float *rewards, int *dones, int *terminals,
                          int *truncations, float *final_states, fh_error *err);

/* The OpenMP threads each fh_vec_env_step uses: n >= 1, or 0 for OpenMP's default
 * (what the trainer sets process-wide). Init leaves 0. Results do not depend on it. */
void fh_vec_env_set_threads(fh_vec_env *env, int n_threads);

/* The same, stepping only the slots whose active[i] is non-zero (active (N) or NULL: all):
 * a held slot is observed into states_out (and final_states), gets reward 0 and no done
 * flag, and its episode, random stream and logs are untouched; its action is not read.
 * Gymnasium's next-step autoreset holds a finished slot for one step (the Python env). */
fh_status fh_vec_env_step_active(fh_vec_env *env, const int *actions, const uint8_t *active,
                                 const float *curiosity_weights, float *states_out,
                                 float *rewards, int *dones, int *terminals, int *truncations,
                                 float *final_states, fh_error *err);

/* Finished-episode logs (owned by env) and their summary; clear empties the list. */
const fh_episode_log *fh_vec_env_logs(const fh_vec_env *env, size_t *n);
void fh_vec_env_summary(const fh_vec_env *env, fh_episode_summary *summary);
void fh_vec_env_clear_logs(fh_vec_env *env);

#endif
