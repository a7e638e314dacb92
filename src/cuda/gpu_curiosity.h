/* gpu_curiosity.h — the curiosity model's fit on the GPU for the DQN/PQN trainer (issue
 * 18): fh_curiosity_fit (ppo_update.c) on a collection that lies on the device, so an
 * iteration downloads nothing but a summary. The model lives on the device between fits
 * (params, grads, Adam m and v in nn.h's layout, one buffer); the collector reads its
 * params in place (fh_gpu_dqn_collect_resident with fh_gpu_curiosity_params).
 *
 * The fit is the PPO update's curiosity phase, its kernels reused as they are
 * (update_kernels.cu: curiosity_gather_kernel, mse_loss_kernel, the layers' kernels,
 * grad_sumsq_kernel, adam_kernel with curiosity = 1): the collection's columns are
 * viewed as an fh_device_batch (states, actions, exposures and bars have the same
 * layouts in both collectors). Semantics are the CPU's, for the same update stream:
 * s.curiosity_epochs keys drawn from rng before the first epoch (fh_minibatch_key,
 * as draw_epoch_keys does), each epoch's minibatches of s.minibatch rows in the keyed
 * order of minibatch_order.cuh (the last one short when it does not divide n), the MSE
 * against the next bar's features 0..31, Adam (curiosity_lr, 0.9, 0.999, 1e-8, no
 * clipping), and the same failures: a loss or gradient that is not finite stops the fit
 * before that step, naming it, its epoch and minibatch (the steps before it stay
 * applied, as on the CPU). Sums run in other orders and the matmuls are cuBLAS's, so
 * results agree with the CPU within tests/dqn/test_gpu_curiosity.c's tolerances; on one
 * GPU a fit is bit-identical to the next. Tensor-core matmuls only when the run's precision
 * is "tf32". Steps are captured into CUDA graphs (one of graph_steps full steps, one tail
 * step) and replayed, their position on the device (update_args.h). Available when
 * FH_HAVE_CUDA. */
#ifndef FOXHUNT_CUDA_GPU_CURIOSITY_H
#define FOXHUNT_CUDA_GPU_CURIOSITY_H

#include <stdint.h>

#include "cuda/gpu_update_settings.h"
#include "foxhunt/device.h"
#include "foxhunt/env_types.h" /* fh_rng */
#include "foxhunt/nn.h"

/* The NVRTC program the fit loads (with update_plan.c's options) and the entry points it
 * launches, for the compile tests (tests/dqn/test_gpu_curiosity.c). */
#define FH_GPU_CURIOSITY_KERNEL_FILE "update_kernels.cu"
#define FH_GPU_CURIOSITY_ENTRIES                                                            \
    {"curiosity_gather_kernel", "mse_loss_kernel", "bias_grad_kernel", "bias_act_kernel",  \
     "grad_sumsq_kernel", "adam_kernel"}

typedef struct fh_gpu_curiosity fh_gpu_curiosity;

/* A fit over collections of at most max_rows rows, minibatches of s.minibatch rows
 * (fewer when the collection is smaller), s.curiosity_epochs epochs at s.curiosity_lr,
 * Matmuls at s.precision (precision.h). */
fh_status fh_gpu_curiosity_create(fh_gpu_curiosity **out, const fh_device_info *dev,
                                  int64_t max_rows, fh_gpu_curiosity_settings s, fh_error *err);
void fh_gpu_curiosity_destroy(fh_gpu_curiosity *c);

/* The model's params, Adam moments and step, host -> device (start, resume) and back
 * (checkpoints, the end of a run; the host copy is then checked for NaN and
 * infinities). */
fh_status fh_gpu_curiosity_upload(fh_gpu_curiosity *c, const fh_mlp *curiosity, fh_error *err);
fh_status fh_gpu_curiosity_download(fh_gpu_curiosity *c, fh_mlp *curiosity, fh_error *err);
/* The params on the device (FH_NET_CURIOSITY's layout, FH_CURIOSITY_N_PARAMS floats): the
 * collector's curiosity bonus reads them in place. Stable for the object's life. */
const float *fh_gpu_curiosity_params(const fh_gpu_curiosity *c);

/* fh_curiosity_fit on n rows on the device: d_states (n, 54), d_actions, d_exposures,
 * d_bars (n) (fh_dqn_device_batch's columns), d_market_features the training split's
 * (n_bars, 51) (fh_gpu_dqn_collector_market_features). rng: the update stream, advanced
 * by the epochs' keys as the CPU's fit advances it (also when the fit fails).
 * *loss_out: the mean of the minibatch losses. Returns when the fit is done (the
 * collector may then overwrite the rows). The captured graphs are kept while the same
 * pointers and n come back. */
fh_status fh_gpu_curiosity_fit(fh_gpu_curiosity *c, const float *d_states, const int *d_actions,
                               const float *d_exposures, const int *d_bars,
                               const float *d_market_features, int64_t n, fh_rng *rng,
                               double *loss_out, fh_error *err);
/* Device milliseconds of the last fit (events around it). */
float fh_gpu_curiosity_last_ms(const fh_gpu_curiosity *c);

#endif
