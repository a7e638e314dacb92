/* gpu_update_settings.c — see gpu_update_settings.h. */
#include "rl/gpu_update_settings.h"

#include <string.h>
#include "foxhunt/precision.h"

/* the config's precision as a code (fh_precision; the config checked it) */
static int precision_of(const fh_train_config *cfg)
{
    int p = fh_precision_parse(cfg->precision);
    return p < 0 ? FH_PRECISION_FP32 : p;
}

fh_gpu_ppo_settings fh_gpu_ppo_settings_of(const fh_train_config *cfg)
{
    return (fh_gpu_ppo_settings){
        .minibatch = cfg->minibatch, .epochs = cfg->epochs, .clip = cfg->clip,
        .vf_coef = cfg->vf_coef, .max_grad_norm = cfg->max_grad_norm,
        .target_kl = cfg->target_kl, .adam_eps = cfg->adam_eps,
        .weight_decay = cfg->weight_decay, .clip_vloss = cfg->clip_vloss,
        .norm_adv = cfg->norm_adv,
        .curiosity_epochs = cfg->curiosity_epochs, .curiosity_lr = cfg->curiosity_lr};
}

fh_gpu_q_settings fh_gpu_q_settings_of(const fh_train_config *cfg)
{
    return (fh_gpu_q_settings){
        .minibatch = cfg->minibatch, .epochs = cfg->epochs, .precision = precision_of(cfg),
        .n_step = cfg->n_step, .replay_capacity = cfg->replay_capacity,
        .learning_starts = cfg->learning_starts,
        .target_update_every = cfg->target_update_every, .gamma = cfg->gamma,
        .replay_ratio = cfg->replay_ratio, .tau = cfg->tau};
}

fh_gpu_curiosity_settings fh_gpu_curiosity_settings_of(const fh_train_config *cfg)
{
    return (fh_gpu_curiosity_settings){.minibatch = cfg->minibatch,
                                       .curiosity_epochs = cfg->curiosity_epochs,
                                       .precision = precision_of(cfg),
                                       .curiosity_lr = cfg->curiosity_lr};
}
