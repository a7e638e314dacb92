/* learners.h — the learners foxhunt ships (learners.c's table; learner.h). */
#ifndef FOXHUNT_RL_LEARNERS_H
#define FOXHUNT_RL_LEARNERS_H

#include "foxhunt/learner.h"
#include "foxhunt/trainer.h"

extern const fh_learner_ops fh_learner_ppo;      /* learner_ppo.c */
extern const fh_learner_ops fh_learner_dqn;      /* learner_q.c */
extern const fh_learner_ops fh_learner_pqn;      /* learner_q.c */
extern const fh_learner_ops fh_learner_constant; /* learner_constant.c */

/* PPO's trainer inside l, or NULL when l is another learner. */
fh_trainer *fh_learner_ppo_trainer(const fh_learner *l);

#endif
