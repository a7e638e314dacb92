/* collector.h — the trainer's one seam between the CPU collector and the GPU one:
 * create for the chosen device, collect into t->batch, expose the episode states
 * (t->episodes points at a host copy that is current after every collection), and
 * push restored episode states back after a resume. */
#ifndef FOXHUNT_COLLECTOR_H
#define FOXHUNT_COLLECTOR_H

#include "foxhunt/trainer.h"

fh_status fh_collector_create(fh_trainer *t, fh_error *err);
fh_status fh_collector_collect(fh_trainer *t, const fh_collect_params *p, fh_error *err);
/* After t->episodes was overwritten (resume): make the collector use it. */
fh_status fh_collector_set_episodes(fh_trainer *t, fh_error *err);
void fh_collector_destroy(fh_trainer *t);

#endif
