/* dqn_collect.c — the DQN/PQN collection on the CPU (include/foxhunt/dqn.h): each
 * episode slot runs dqn_rollout_episode, the very function dqn_experience_kernel runs
 * on the GPU (src/env/dqn_device_functions.cuh), so the two give the same transitions
 * for a seed; slots are independent, so OpenMP spreads them over the cores. */
#include "foxhunt/dqn.h"

#include "env/dqn_device_functions.cuh"

fh_status fh_dqn_collect_cpu(const float *qnet_params, int layer_norm,
                             const float *curiosity_params, const fh_env_config *cfg,
                             const fh_env_market *market, fh_episode_state *episodes,
                             float epsilon, fh_transition_batch *out, fh_error *err)
{
    if (!(epsilon >= 0.0f && epsilon <= 1.0f))
        return fh_error_set(err, FH_ERR_INPUT, "epsilon %g is outside [0, 1]", (double)epsilon);
    const int N = out->n_episodes, L = out->n_steps;
    fh_dqn_outputs o = {out->states,   out->next_states, out->actions,   out->rewards,
                        out->terminal, out->truncated,   out->q_taken,   out->exposures,
                        out->bars};
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++)
        dqn_rollout_episode(qnet_params, curiosity_params, cfg, market, &episodes[n], n, L,
                            epsilon, layer_norm, o);
    return FH_OK;
}
