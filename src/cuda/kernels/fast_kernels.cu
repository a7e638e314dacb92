/* fast_kernels.cu — the fast PPO collection path's NVRTC program (issue 7;
 * docs/ARCHITECTURE.md): the kernels, one concern a file, included here in dependency
 * order. NVRTC compiles common_device_functions.cuh followed by this file, with the
 * -D options of the host's plan (fast_plan.c); fast_collect.c launches them.
 *
 * The work is split by what is sequential in time and what is not, all captured into
 * one CUDA graph per collector (one launch per collection, no host round trip inside):
 *
 *   1. actor_table_kernel (actor_table.cu), where the plan chooses the table; then the
 *      rollout, the only sequential part — observe, actor forward, sample, env_step —
 *      in one of three mappings (rollout_block.cu, rollout_warp.cu, rollout_lane.cu),
 *      the actor's weights in shared memory (actor.cuh). It writes every state the
 *      critic must value into one buffer: the N*L states, the final observations of
 *      truncated episodes (K slots per episode) and s_L.
 *   2. the critic over all those rows at once (cublasLt matmuls with a bias+ReLU
 *      epilogue; the first layer factored through the market in fp32,
 *      critic_layer0.cu; under bf16 the weights and rows copied by to_bf16_kernel,
 *      bf16_convert.cu), and the curiosity model over the N*L transitions
 *      (curiosity.cu), which adds the bonus;
 *   3. scatter_trunc_values_kernel and gae_kernel (gae.cu).
 *
 * The environment and sampling arithmetic are the shared device functions
 * (src/env/common_device_functions.cuh, ppo_device_functions.cuh); only the
 * matrix-vector products and the softmax reductions are spread over lanes, so sums are
 * ordered differently from the reference kernel and results agree within SPEC §9's
 * tolerances (sampled actions identical except at CDF boundaries). */
#include "ppo_device_functions.cuh"
#include "fast_layout.h"
#include "fast_args.h"
#include "device_util.cuh"
#include "actor.cuh"
#include "rollout_step.cuh"
#include "rollout_warp.cu"
#include "rollout_block.cu"
#include "rollout_lane.cu"
#include "actor_table.cu"
#include "critic_layer0.cu"
#include "curiosity.cu"
#include "gae.cu"
#include "bf16_convert.cu"
