/* q_trainer_resume.h — `foxhunt train --algo dqn|pqn --resume CKPT` (issue 18): the two
 * halves fh_q_trainer_init calls (q_trainer_resume.c). A checkpoint is untrusted input:
 * every value that sizes or indexes memory is checked before it does
 * (docs/CHECKPOINTS.md, "What a resume checks"; docs/DQN.md, "Resume"). */
#ifndef FOXHUNT_RL_Q_TRAINER_RESUME_H
#define FOXHUNT_RL_Q_TRAINER_RESUME_H

#include "foxhunt/q_trainer.h"

/* q.replay.state: I64 [Q_RING_STATE_LEN] */
enum {
    Q_RING_CAPACITY,  /* the ring's capacity when saved */
    Q_RING_SIZE,      /* filled slots (0 .. size-1 in the file) */
    Q_RING_HEAD,      /* next slot written */
    Q_RING_N_PUSHED,  /* transitions pushed since the run began */
    Q_RING_SAVED,     /* 1: the filled slots are in the file; 0: too large, not saved */
    Q_RING_STATE_LEN
};

/* Bytes one ring transition takes in memory and in a checkpoint: s, s' (54 floats each),
 * action, return, discount. */
#define Q_RING_BYTES_PER_TRANSITION ((int64_t)(2 * FH_STATE_DIM + 3) * 4)

/* What the resume needs before the trainer allocates: read by fh_q_resume_prepare. */
typedef struct {
    fh_feature_norm norm;           /* the data is normalised with the checkpoint's */
    int64_t ring[Q_RING_STATE_LEN]; /* DQN: q.replay.state, checked against cfg */
} fh_q_resume_plan;

/* Reads cfg->resume's config, normalisation and (DQN) ring state: refuses a checkpoint of
 * another algorithm (ppo, or pqn given to --algo dqn and the reverse), one without a
 * config, and a ring state that does not fit cfg (capacity, size, head). */
fh_status fh_q_resume_prepare(const fh_train_config *cfg, fh_q_resume_plan *plan,
                              fh_error *err);

/* Loads cfg->resume into the built trainer t (its update_rng freshly seeded): the
 * Q-network and curiosity model with Adam state, the target network, the ring, the
 * episodes, the update stream, the running returns, grad_steps and the iteration; checks
 * them all; uploads the episodes to the GPU collector when there is one. On failure t is
 * to be freed (nothing outside it was touched). */
fh_status fh_q_resume_load(fh_q_trainer *t, const fh_q_resume_plan *plan, fh_error *err);

#endif
