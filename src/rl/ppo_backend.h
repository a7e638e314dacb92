/* ppo_backend.h — PPO's one seam between the CPU and the GPU (issue 33 renamed it from
 * collector.h: it does more than collect): create the collector (and, under --device cuda, the update on the GPU) for the chosen device,
 * collect into t->batch, run the PPO update where the config puts it, expose the
 * episode states (t->episodes points at a host copy that is current after every
 * collection), push restored episode states and networks to the device after a resume,
 * and bring the networks back to the host before a checkpoint. */
#ifndef FOXHUNT_RL_PPO_BACKEND_H
#define FOXHUNT_RL_PPO_BACKEND_H

#include "foxhunt/trainer.h"
#include "rl/iteration_sums.h"

fh_status fh_ppo_backend_create(fh_trainer *t, fh_error *err);
/* The whole batch into t->batch (foxhunt collect). */
fh_status fh_ppo_backend_collect(fh_trainer *t, const fh_collect_params *p, fh_error *err);
/* The trainer's collection and the sums of its metrics: with the GPU update the batch
 * stays on the device and the sums are computed there (nothing else comes back); else
 * the batch lands in t->batch and the host sums it. Either way t's running episode
 * returns and lengths move on (on the device until fh_ppo_backend_sync_host). */
fh_status fh_ppo_backend_collect_for_update(fh_trainer *t, const fh_collect_params *p,
                                          fh_iteration_sums *sums, fh_error *err);
/* One PPO update of t's networks with learning rate lr and entropy coefficient ent_coef
 * (the iteration's: fh_train_config_lr, fh_train_config_ent_coef): on the GPU when
 * t->gpu_update (on the device batch of the last collection, or on t->batch uploaded when
 * batch_from_host), else fh_ppo_update on t->batch. trace: NULL or fh_ppo_trace_init's. */
fh_status fh_ppo_backend_update(fh_trainer *t, fh_ppo_stats *stats, double lr,
                                double ent_coef, fh_ppo_trace *trace, int batch_from_host,
                                fh_error *err);
/* After t->episodes was overwritten (resume): make the collector use it. */
fh_status fh_ppo_backend_set_episodes(fh_trainer *t, fh_error *err);
/* After t's networks, episodes and running returns were set (init, resume): hand them
 * to the GPU update. */
fh_status fh_ppo_backend_set_networks(fh_trainer *t, fh_error *err);
/* Before the host reads t's state (checkpoint, evaluation): the GPU update's networks
 * (params, Adam moments, steps), the episode states and the running returns and
 * lengths brought back. Nothing to do on the CPU path. */
fh_status fh_ppo_backend_sync_host(fh_trainer *t, fh_error *err);
/* The update's device, for messages: "gpu" or "cpu". */
const char *fh_ppo_backend_update_device(const fh_trainer *t);
void fh_ppo_backend_destroy(fh_trainer *t);

#endif
