/* q_backend.h — DQN's and PQN's one seam between the CPU and the GPU (q_backend.c), as
 * ppo_backend.h is PPO's: where the collection, the update and the curiosity fit run, and
 * moving the state between host and device. Every #if of the Q trainer is there. */
#ifndef FOXHUNT_RL_Q_BACKEND_H
#define FOXHUNT_RL_Q_BACKEND_H

#include "foxhunt/q_trainer.h"

/* The GPU collector (t->device.use_gpu), its episodes seeded as the CPU's would be. */
fh_status fh_q_backend_create_collector(fh_q_trainer *t, fh_error *err);
/* The update and the curiosity fit on the device, from the host's weights (fresh or
 * resumed) and (DQN) ring. */
fh_status fh_q_backend_create_update(fh_q_trainer *t, fh_error *err);
/* After a resume overwrote t->episodes: hand them to the GPU collector. */
fh_status fh_q_backend_set_episodes(fh_q_trainer *t, fh_error *err);
/* The collection at epsilon: on the device (only the metrics' rewards, actions and dones
 * come back into t->batch) or on the host. */
fh_status fh_q_backend_collect(fh_q_trainer *t, float epsilon, fh_error *err);
/* The iteration's update where the collection lies. */
fh_status fh_q_backend_update(fh_q_trainer *t, const fh_q_update_config *qc,
                              fh_q_stats *stats, fh_error *err);
/* The curiosity model's fit on the collection (after the update: the same stream order
 * on both paths). */
fh_status fh_q_backend_curiosity_fit(fh_q_trainer *t, double *loss, fh_error *err);
/* The device's networks, episodes and (DQN) ring brought back to the host. */
fh_status fh_q_backend_sync_host(fh_q_trainer *t, fh_error *err);
void fh_q_backend_destroy(fh_q_trainer *t);

/* DQN's host update (q_trainer.c): the collection into the ring, then the gradient
 * steps once it holds learning_starts transitions. */
fh_status fh_q_dqn_iteration(fh_q_trainer *t, const fh_q_update_config *qc, fh_q_stats *stats,
                             fh_error *err);

#endif
