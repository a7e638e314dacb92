/* gpu_update_settings.h — the few settings the GPU updates read when they are created
 * (issue 33). The device layer never sees the run's whole fh_train_config (its paths, the
 * NCCL library, the other commands' keys): src/rl/gpu_update_settings.c builds these from
 * it. Pure C, no CUDA header: the builder compiles in every build. Each field keeps the
 * config key's name and type, so the update computes exactly what it did from the config. */
#ifndef FOXHUNT_CUDA_GPU_UPDATE_SETTINGS_H
#define FOXHUNT_CUDA_GPU_UPDATE_SETTINGS_H

/* fh_gpu_ppo_update_create's: the minibatches, the losses' and optimiser's coefficients
 * (baked into its graphs; not ent_coef, which is annealed: each update's is an argument
 * of fh_gpu_ppo_update_run) and the curiosity fit's epochs and rate. */
typedef struct {
    int minibatch, epochs;
    double clip, vf_coef, max_grad_norm, target_kl, adam_eps, weight_decay;
    int clip_vloss, norm_adv;
    int curiosity_epochs;
    double curiosity_lr;
} fh_gpu_ppo_settings;

/* fh_gpu_q_update_create's: PQN's minibatches and epochs, DQN's ring, n-step returns,
 * replay ratio and target schedule; precision: the config's, as a code (precision.h). */
typedef struct {
    int minibatch, epochs, precision;
    int n_step, replay_capacity, learning_starts, target_update_every;
    double gamma, replay_ratio, tau;
} fh_gpu_q_settings;

/* fh_gpu_curiosity_create's: the config's minibatch, curiosity_epochs and curiosity_lr;
 * precision as above. */
typedef struct {
    int minibatch, curiosity_epochs, precision;
    double curiosity_lr;
} fh_gpu_curiosity_settings;

#endif
