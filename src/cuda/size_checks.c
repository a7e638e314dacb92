/* size_checks.c — what the kernels assume of foxhunt/shapes.h's sizes, checked by the
 * C compiler on every build, with or without the CUDA toolkit (docs/ARCHITECTURE.md,
 * "Sizes"). Each assumption is also stated by a static_assert where the kernel code
 * makes it, which NVRTC checks at run time (and tests/cuda/test_kernel_sources.c on
 * any machine with the toolkit); this file keeps a CI without CUDA honest. Each message
 * names the code that relies on the size. Nothing here is compiled into code. */
#include "cuda/kernels/fast_layout.h"
#include "foxhunt/env_types.h"
#include "foxhunt/shapes.h"

/* ---- the state and the actions ---- */
_Static_assert(FH_STATE_DIM % 2 == 0,
               "actor.cuh (fast_actor, block_actor, pair_split_actor): layer 0 reads the "
               "state two inputs at a time (even and odd sums)");
_Static_assert(FH_N_MARKET_FEATURES % 2 == 1 && FH_N_PORTFOLIO_FEATURES == 3,
               "actor.cuh with FH_ACTOR_TABLE: the three portfolio inputs join the table's "
               "split sums as odd, even, odd (an odd market feature count)");
_Static_assert(32 < FH_N_MARKET_FEATURES && FH_N_MARKET_FEATURES <= 2 * 32,
               "rollout_step.cuh (fast_load_bar, fast_observe): a bar's features two per "
               "lane of a warp");
_Static_assert(FH_FAST_LANE_SIGMA < FH_WARP,
               "rollout_step.cuh (fast_load_bar): the price lanes must be lanes whose second "
               "feature slot is free");
_Static_assert(32 < FH_N_ACTIONS && FH_N_ACTIONS <= 2 * 32,
               "ppo_loss.cu, q_update.cu (q_max, q_loss, q_double_dqn), rollout_step.cuh "
               "(fast_softmax_sample), actor.cuh: one warp a row, lane k holds actions k "
               "and k + 32");
_Static_assert(FH_N_ACTIONS <= 256 && FH_DIVERSITY_WINDOW <= 255 &&
                   FH_DIVERSITY_MIN_FILL <= FH_DIVERSITY_WINDOW,
               "env_types.h fh_diversity: actions and counts are unsigned char");

/* ---- the actor in the fast path (actor.cuh, fast_layout.h) ---- */
_Static_assert(FH_ACTOR_H1 == 4 * FH_WARP,
               "actor.cuh fast_actor: layer 0 gives each lane a float4 of h1");
_Static_assert(FH_ACTOR_H2 == 2 * FH_WARP,
               "actor.cuh fast_actor, pair_split_actor: layer 1 gives each lane a float2 "
               "of h2");
_Static_assert(FH_BLOCK_EP_THREADS == FH_ACTOR_H1 && FH_BLOCK_EP_THREADS == 2 * FH_ACTOR_H2 &&
                   FH_ACTOR_H2 % (4 * FH_BLOCK_EP_WARPS) == 0,
               "actor.cuh block_actor: one h1 output a thread, layer 1 in two halves, the "
               "output layer in four quarters");
_Static_assert(FH_ACTOR_H1 % 4 == 0 && (FH_ACTOR_H2 / 2) % 4 == 0,
               "actor.cuh: layers 1 and 2 read their inputs as float4s");
_Static_assert(FH_N_ACTIONS <= FH_FAST_OUT_PAD && FH_FAST_OUT_PAD <= 2 * FH_WARP &&
                   FH_FAST_OUT_PAD <= FH_ACTOR_H1,
               "actor.cuh, rollout_lane.cu: logits padded to FH_FAST_OUT_PAD, two per lane, "
               "in h1's spent scratch");
_Static_assert(FH_ACTOR_H1 % FH_LANE_OUT_BLOCK == 0 && FH_ACTOR_H2 % FH_LANE_OUT_BLOCK == 0 &&
                   FH_FAST_OUT_PAD % FH_LANE_OUT_BLOCK == 0 && FH_LANE_OUT_BLOCK % 4 == 0,
               "actor.cuh lane_dense: outputs in blocks of FH_LANE_OUT_BLOCK float4s");
_Static_assert(FH_LANE_BLOCK_EPISODES % FH_LANE_GROUP_EPISODES == 0,
               "rollout_lane.cu: a block holds whole groups of episodes");
_Static_assert(FH_STATE_DIM <= FH_FAST_SM_H1 && FH_FAST_SM_H1 % 4 == 0,
               "fast_layout.h: the state's shared-memory slot (before h1) holds the state");
_Static_assert(sizeof(fh_diversity) <= FH_FAST_SM_DIV_FLOATS * sizeof(float) &&
                   sizeof(fh_diversity) <= FH_LANE_SM_DIV_FLOATS * sizeof(float) &&
                   sizeof(fh_diversity) % 8 == 0,
               "fast_layout.h: the rollout kernels' shared-memory slots for fh_diversity");
/* static shared memory of one block is at most 48 KiB */
_Static_assert((FH_ACTOR_TABLE_BARS * FH_N_MARKET_FEATURES + FH_ACTOR_H1 * FH_STATE_DIM) *
                       sizeof(float) <= 48 * 1024,
               "actor_table.cu: the bars' features and W0 in static shared memory");

/* ---- the critic and the curiosity model ---- */
_Static_assert(FH_CRITIC_H1 % 16 == 0 && FH_L0_THREADS % (FH_CRITIC_H1 / 4) == 0,
               "critic_layer0.cu, fast_networks.c: four outputs a thread, in 1, 2 or 4 column "
               "slices, whole rows a block");

/* ---- launch shapes (fast_layout.h, fast_plan.c) ---- */
_Static_assert(FH_FAST_MAX_WARPS * FH_WARP <= 1024 && FH_LANE_BLOCK_THREADS <= 1024 &&
                   FH_BLOCK_MAX_EPISODES * FH_BLOCK_EP_ALL_THREADS <= 1024,
               "rollout_warp.cu, rollout_lane.cu, rollout_block.cu: at most 1024 threads a "
               "block");
_Static_assert(1 + 2 * FH_BLOCK_MAX_EPISODES <= 16 && 1 + FH_PAIR_MAX_EPISODES <= 16,
               "rollout_block.cu, rollout_warp.cu: named barriers 1..15 (0 is __syncthreads)");
_Static_assert(FH_CURIOSITY_TARGET_DIM <= FH_N_MARKET_FEATURES,
               "curiosity_inference, curiosity.cu: the model predicts market features "
               "0..FH_CURIOSITY_TARGET_DIM-1 from the state's");
_Static_assert(FH_CURIOSITY_TARGET_DIM == 32,
               "gpu_curiosity.c curiosity_gather_kernel: one lane a target");
_Static_assert(FH_CURIOSITY_ACTION_INPUTS == 3,
               "curiosity_inference, curiosity.cu: inputs x(a), u(a), e' after the targets");
_Static_assert(FH_CURIOSITY_HIDDEN % 4 == 0 && FH_CURIOSITY_TARGET_DIM % 4 == 0 &&
                   FH_CURIOSITY_INPUT_DIM * FH_CURIOSITY_HIDDEN % 4 == 0,
               "curiosity.cu: the weights are read from shared memory as float4s");
_Static_assert(FH_CURIOSITY_N_PARAMS * sizeof(float) <= 48 * 1024,
               "curiosity.cu: the model's weights in static shared memory");
