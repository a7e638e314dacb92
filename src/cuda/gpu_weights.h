/* gpu_weights.h — device copies of the actor, critic and curiosity parameters (design
 * note: gpu_weights). Each network is its one flat buffer (layout in foxhunt/shapes.h),
 * so a sync after every PPO update is three copies. */
#ifndef FOXHUNT_GPU_WEIGHTS_H
#define FOXHUNT_GPU_WEIGHTS_H

#include <cuda_runtime_api.h>

#include "foxhunt/error.h"
#include "foxhunt/nn.h"

typedef struct {
    float *actor;     /* (FH_ACTOR_N_PARAMS) */
    float *critic;    /* (FH_CRITIC_N_PARAMS) */
    float *curiosity; /* (FH_CURIOSITY_N_PARAMS) */
} fh_gpu_weights;

fh_status fh_gpu_weights_alloc(fh_gpu_weights *w, fh_error *err);
/* Copies the three networks' params (stream-ordered; host memory must stay valid
 * until the stream reaches the copy). */
fh_status fh_gpu_weights_sync(fh_gpu_weights *w, const fh_mlp *actor, const fh_mlp *critic,
                              const fh_mlp *curiosity, cudaStream_t stream, fh_error *err);
void fh_gpu_weights_free(fh_gpu_weights *w);

#endif
