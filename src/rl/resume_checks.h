/* resume_checks.h — the checks PPO's resume (trainer.c) and the Q-trainers' resume
 * (q_trainer_resume.c) share: a checkpoint is untrusted input, so the Adam second
 * moments, every loaded episode and the data's identity are checked before the run uses
 * any of them (docs/CHECKPOINTS.md, "What a resume checks"). Each check's message names
 * the file and the first bad value. */
#ifndef FOXHUNT_RL_RESUME_CHECKS_H
#define FOXHUNT_RL_RESUME_CHECKS_H

#include <stdint.h>

#include "foxhunt/checkpoint.h"
#include "foxhunt/env.h"
#include "foxhunt/error.h"
#include "foxhunt/nn.h"
#include "foxhunt/train_config.h"

/* The per-episode state a resume loads, PPO's and the Q-trainers' alike (views into the
 * trainer). */
typedef struct {
    const fh_train_config *cfg;   /* episodes (N), env, seed, allow_other_data */
    const fh_env_market *market;  /* the training split the episodes run on */
    fh_episode_state *episodes;   /* (N) */
    double *episode_return;       /* (N) running returns */
    int32_t *episode_length;      /* (N) running lengths */
} fh_resume_episodes;

/* Every element of the n_nets networks' Adam second moments is >= 0 (the loader checked
 * that they are finite). */
fh_status fh_resume_check_second_moments(const fh_mlp *const *nets, int n_nets,
                                         const char *path, fh_error *err);

/* Each episode in range (fh_episode_state_validate), on its slot's stream, equal to its
 * copy in rng (N, 2) (rng.episodes), with a finite running return and a running length
 * equal to its step. */
fh_status fh_resume_check_episodes(const fh_resume_episodes *e, const uint64_t *rng,
                                   const char *path, fh_error *err);

/* The data's identity: saved (NULL: the checkpoint records none, written before it was)
 * against now. No identity sets *unchecked; other data is refused unless
 * cfg->allow_other_data, in which case *other is set and the episodes restart as a fresh
 * run's (running returns and lengths 0). also_restarts ends the refusal's "its episodes
 * then restart" (e.g. " and its replay ring starts empty"; "" for none). */
fh_status fh_resume_check_data(const fh_resume_episodes *e, const fh_data_identity *saved,
                               const fh_data_identity *now, const char *also_restarts,
                               int *unchecked, int *other, const char *path, fh_error *err);

#endif
