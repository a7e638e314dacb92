/* collector.h — the trainer's one seam between the CPU and the GPU: create the
 * collector (and, under --device cuda, the update on the GPU) for the chosen device,
 * collect into t->batch, run the PPO update where the config puts it, expose the
 * episode states (t->episodes points at a host copy that is current after every
 * collection), push restored episode states and networks to the device after a resume,
 * and bring the networks back to the host before a checkpoint. */
#ifndef FOXHUNT_COLLECTOR_H
#define FOXHUNT_COLLECTOR_H

#include "foxhunt/trainer.h"

fh_status fh_collector_create(fh_trainer *t, fh_error *err);
/* The whole batch into t->batch (foxhunt collect). */
fh_status fh_collector_collect(fh_trainer *t, const fh_collect_params *p, fh_error *err);
/* The trainer's collection: with the GPU update the batch stays on the device and only
 * rewards, actions and dones (the metrics') reach t->batch. */
fh_status fh_collector_collect_for_update(fh_trainer *t, const fh_collect_params *p,
                                          fh_error *err);
/* One PPO update of t's networks with learning rate lr: on the GPU when t->gpu_update
 * (on the device batch of the last collection, or on t->batch uploaded when
 * batch_from_host), else fh_ppo_update on t->batch. trace: NULL or fh_ppo_trace_init's. */
fh_status fh_collector_update(fh_trainer *t, fh_ppo_stats *stats, double lr,
                              fh_ppo_trace *trace, int batch_from_host, fh_error *err);
/* After t->episodes was overwritten (resume): make the collector use it. */
fh_status fh_collector_set_episodes(fh_trainer *t, fh_error *err);
/* After t's networks were set (init, resume): hand them to the GPU update. */
fh_status fh_collector_set_networks(fh_trainer *t, fh_error *err);
/* Before the host reads t's networks (checkpoint, evaluation): the GPU update's copies
 * (params, Adam moments, steps) brought back. Nothing to do on the CPU path. */
fh_status fh_collector_sync_networks(fh_trainer *t, fh_error *err);
/* The update's device, for messages: "gpu" or "cpu". */
const char *fh_collector_update_device(const fh_trainer *t);
void fh_collector_destroy(fh_trainer *t);

#endif
