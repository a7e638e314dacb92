/* update_kernels.cu — the PPO update's NVRTC program (issue 17; docs/ARCHITECTURE.md):
 * compiled after common_device_functions.cuh, without fast math (the update follows
 * the CPU's arithmetic), launched by gpu_ppo_update.c. One step of the update is:
 *
 *   ppo_gather_kernel -> the actor's forward and the critic's up to its last hidden
 *   layer (cublasLt, bias+ReLU epilogues) -> ppo_loss_kernel (the critic's value head
 *   forward and backward beside the loss) -> per layer, top down: the weight gradient
 *   and the input gradient (cublasLt), bias_grad_kernel (ReLU gradient and bias
 *   gradient) -> grad_sumsq_kernel -> adam_kernel
 *
 * and the curiosity fit's step the same with curiosity_gather_kernel and
 * mse_loss_kernel; steps are captured into CUDA graphs and replayed, their position on
 * the device (update_args.h), then update_summary_kernel. iteration_metrics_kernel
 * computes the iteration's metrics from the collection where it lies. Data-parallel
 * (issue 22), the gather's and the loss's sums are all-reduced across the ranks and
 * adv_finish_kernel and ppo_loss_finish_kernel end the step from them, and the
 * gradients are averaged before grad_sumsq_kernel (gpu_ppo_update.c). */
#include "pdl.cuh"
#include "minibatch_order.cuh"
#include "update_args.h"
#include "block_reduce.cuh"
#include "update_finish.cuh"
#include "update_gather.cu"
#include "ppo_loss.cu"
#include "layer_elementwise.cu"
#include "bf16_convert.cu"
#include "adam.cu"
#include "update_summary.cu"
#include "iteration_metrics.cu"
