/* q_trainer.h — DQN's and PQN's state (issue 18; SPEC §7): one iteration collects and
 * updates, as trainer.h does for PPO; the DQN and PQN learners (src/rl/learner_q.c) run
 * it in the training loop (train_loop.h).
 *
 * Each iteration collects N x L epsilon-greedy transitions (dqn_experience_kernel on
 * the GPU, the same device function per episode on the CPU; epsilon from the linear
 * schedule of [q]), then
 *  - pqn: Q(lambda) returns over the collection and [ppo] epochs of minibatches in
 *    PPO's keyed order (minibatch_order.cuh) of MSE steps on the Q-network with LayerNorm (FH_NET_PQN);
 *  - dqn: the collection's n-step transitions into the replay ring, then, once the ring
 *    holds learning_starts transitions, replay_ratio * N * L gradient steps of Double
 *    DQN with the Huber loss on FH_NET_QNET, the target network copied every
 *    target_update_every steps (or Polyak with tau);
 * then the curiosity model's fit on the collection. With cfg.device on the GPU all of
 * it runs there (gpu_dqn_collector, gpu_q_update, gpu_curiosity: the networks and DQN's
 * ring live on the device, only actions, rewards and done flags come back per
 * iteration); on the CPU the same steps run on the host (the reference).
 *
 * metrics.csv / .jsonl have the common columns and the learner's own (learner_q.c):
 * td_loss, grad_norm (the Q-network's mean pre-clip norm), grad_steps (this iteration's),
 * epsilon and curiosity_loss.
 * Checkpoints hold the Q-network under its keys (docs/CHECKPOINTS.md), the curiosity
 * model, the normalisation, the config (its algo says which network), the data
 * identity, and (dqn) the target network as the extra tensor "q.target" and the replay
 * ring's filled slots (q.replay.*, up to FH_Q_RING_SAVE_MAX_BYTES). `--resume` restores
 * all of it, checked first (q_trainer_resume.c; docs/DQN.md, "Resume"): PQN, and DQN
 * whose ring was saved, continue bit-identically. */
#ifndef FOXHUNT_Q_TRAINER_H
#define FOXHUNT_Q_TRAINER_H

#include "foxhunt/checkpoint.h"
#include "foxhunt/device.h"
#include "foxhunt/dqn.h"
#include "foxhunt/iteration_metrics.h"
#include "foxhunt/ppo.h"
#include "foxhunt/run_data.h"
#include "foxhunt/train_config.h"

struct fh_gpu_dqn_collector;
struct fh_gpu_q_update;
struct fh_gpu_curiosity;

/* A DQN checkpoint holds the ring's filled slots when they take at most this many bytes
 * (444 per transition: the default capacity 1,048,576 fits); a larger ring is not saved,
 * and a resume of that checkpoint starts an empty ring (not bit-identical). */
#define FH_Q_RING_SAVE_MAX_BYTES ((int64_t)512 << 20)

typedef struct {
    fh_train_config cfg;
    int pqn;                          /* 1: PQN, 0: DQN */
    fh_net_kind net;                  /* FH_NET_PQN or FH_NET_QNET */
    fh_run_data data;
    fh_market_view train_view;
    fh_env_market train_market;
    fh_mlp q, target, curiosity;      /* target: DQN only */
    fh_device_info device;
    struct fh_gpu_dqn_collector *gpu; /* NULL: collection on the CPU */
    struct fh_gpu_q_update *gpu_update; /* with gpu: the update on the device, whose
                                         * weights (and DQN's ring) are the live ones;
                                         * t->q, t->target and t->ring are refreshed
                                         * from it when a checkpoint is written */
    struct fh_gpu_curiosity *gpu_curiosity; /* with gpu: the curiosity model's live copy
                                             * and its fit on the device */
    fh_episode_state *episodes;       /* (N) the CPU collector's (the GPU's live there) */
    fh_transition_batch batch;
    fh_q_workspace ws;
    fh_ppo_workspace curiosity_ws;    /* the curiosity fit's buffers */
    fh_replay ring;                   /* DQN */
    fh_replay_minibatch mb;           /* DQN */
    fh_rng update_rng;
    int64_t iteration;
    int64_t grad_steps;               /* DQN gradient steps so far (target copies) */
    double *episode_return;           /* (N) running return of each slot's episode */
    int32_t *episode_length;          /* (N) */
    fh_data_identity data_identity;
    char *config_json;
    double epsilon;                   /* the last collection's */
    double curiosity_loss;            /* the last curiosity fit's */
    /* resume (as fh_trainer's): no data identity in the checkpoint; other data allowed by
     * cfg.allow_other_data (episodes restarted, ring emptied); the checkpoint held no
     * ring (above ring_save_max), so the ring restarted empty. The library does not
     * print: the caller may say so. */
    int data_identity_unchecked, data_other, ring_restarted;
    int64_t ring_save_max;            /* save: the ring cap, FH_Q_RING_SAVE_MAX_BYTES */
} fh_q_trainer;

fh_status fh_q_trainer_init(fh_q_trainer *t, const fh_train_config *cfg, fh_error *err);
void fh_q_trainer_free(fh_q_trainer *t);

/* One iteration `it`: epsilon from the schedule, collect, update, the curiosity fit; m's
 * common metrics and collect_seconds filled (with learning rate m->lr), the update's in
 * *qs; t->iteration = it on success. */
fh_status fh_q_trainer_iterate(fh_q_trainer *t, int64_t it, fh_iteration_metrics *m,
                               fh_q_stats *qs, fh_error *err);
/* The device's networks, episodes and (DQN) ring brought back to the host. */
fh_status fh_q_trainer_sync(fh_q_trainer *t, fh_error *err);
/* A checkpoint of the host's state (sync first) with __metadata__ strings (n_meta 0:
 * none). */
fh_status fh_q_trainer_save(const fh_q_trainer *t, const char *path,
                            const char *const *meta_keys, const char *const *meta_values,
                            int n_meta, fh_error *err);

/* The Q-network a checkpoint's config names (dqn: FH_NET_QNET, pqn: FH_NET_PQN); -1 for
 * ppo. */
int fh_q_net_of_algo(const char *algo);

#endif
