/* gpu_update_settings.h — the GPU updates' settings of a run's config: the one place the
 * layer above the device (src/rl) narrows fh_train_config to what src/cuda's updates read
 * (cuda/gpu_update_settings.h). */
#ifndef FOXHUNT_RL_GPU_UPDATE_SETTINGS_H
#define FOXHUNT_RL_GPU_UPDATE_SETTINGS_H

#include "cuda/gpu_update_settings.h"
#include "foxhunt/train_config.h"

fh_gpu_ppo_settings fh_gpu_ppo_settings_of(const fh_train_config *cfg);
fh_gpu_q_settings fh_gpu_q_settings_of(const fh_train_config *cfg);
fh_gpu_curiosity_settings fh_gpu_curiosity_settings_of(const fh_train_config *cfg);

#endif
