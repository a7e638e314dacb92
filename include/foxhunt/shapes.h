/* shapes.h — every size in foxhunt, defined once (SPEC §3, §4, §5).
 *
 * This header is compiled three ways: by the C compiler, by nvcc, and by NVRTC at run
 * time (it is embedded in the binary and handed to NVRTC as the include
 * "foxhunt/shapes.h"). So it holds only preprocessor constants: no includes, no types.
 *
 * Network parameter layout (the contract between src/nn, the checkpoint and the GPU
 * kernels): one flat float buffer per network; for each layer in order, the weight
 * [out, in] row-major, then the bias [out]. The FH_*_OFF_* offsets below index that
 * buffer; tests assert that src/nn's tensor table matches them.
 *
 * Only the counts are literals; every size that is a formula of others is written as
 * that formula. What the kernels assume of these sizes (an odd feature count, 32 <
 * actions <= 64, ...) is stated by static asserts where the code relies on it and, for
 * builds without CUDA, in src/env/size_checks.c (docs/ARCHITECTURE.md, "Sizes"). */
#ifndef FOXHUNT_SHAPES_H
#define FOXHUNT_SHAPES_H

/* ---- state and actions (SPEC §3) ---- */
#define FH_N_MARKET_FEATURES 51    /* causal market features per bar */
#define FH_N_PORTFOLIO_FEATURES 3  /* equity/initial-1, exposure, spread */
#define FH_STATE_DIM (FH_N_MARKET_FEATURES + FH_N_PORTFOLIO_FEATURES) /* 54 */
#define FH_N_EXPOSURES 9           /* targets -1, -0.75, ..., +1 */
#define FH_N_URGENCIES 5           /* 0.2, 0.4, ..., 1.0 */
#define FH_N_ACTIONS (FH_N_EXPOSURES * FH_N_URGENCIES) /* 45; a = FH_N_URGENCIES * e + k */
#define FH_BARRIER_STATE_DIM 5     /* entry, upper, lower, entry step, direction */
#define FH_DIVERSITY_WINDOW 100    /* ring of the last W actions */
#define FH_DIVERSITY_MIN_FILL 20   /* penalty only once this many actions are in it */

/* ---- curiosity model (SPEC §3.5, §4) ---- */
#define FH_CURIOSITY_TARGET_DIM 32 /* predicts next state's features 0..31 */
#define FH_CURIOSITY_ACTION_INPUTS 3 /* x(a), u(a), e' after the target features */
#define FH_CURIOSITY_INPUT_DIM (FH_CURIOSITY_TARGET_DIM + FH_CURIOSITY_ACTION_INPUTS) /* 35 */
#define FH_CURIOSITY_HIDDEN 64

/* ---- actor 54 -> 128 -> 64 -> 45 (ReLU hidden, raw logits) ---- */
#define FH_ACTOR_H1 128
#define FH_ACTOR_H2 64
#define FH_ACTOR_N_LAYERS 3
#define FH_ACTOR_OFF_W0 0
#define FH_ACTOR_OFF_B0 (FH_ACTOR_OFF_W0 + FH_ACTOR_H1 * FH_STATE_DIM)
#define FH_ACTOR_OFF_W1 (FH_ACTOR_OFF_B0 + FH_ACTOR_H1)
#define FH_ACTOR_OFF_B1 (FH_ACTOR_OFF_W1 + FH_ACTOR_H2 * FH_ACTOR_H1)
#define FH_ACTOR_OFF_W2 (FH_ACTOR_OFF_B1 + FH_ACTOR_H2)
#define FH_ACTOR_OFF_B2 (FH_ACTOR_OFF_W2 + FH_N_ACTIONS * FH_ACTOR_H2)
#define FH_ACTOR_N_PARAMS (FH_ACTOR_OFF_B2 + FH_N_ACTIONS) /* 18,221 */

/* ---- critic 54 -> 512 -> 384 -> 256 -> 128 -> 64 -> 1 (ReLU hidden) ---- */
#define FH_CRITIC_H1 512
#define FH_CRITIC_H2 384
#define FH_CRITIC_H3 256
#define FH_CRITIC_H4 128
#define FH_CRITIC_H5 64
#define FH_CRITIC_N_LAYERS 6
#define FH_CRITIC_OFF_W0 0
#define FH_CRITIC_OFF_B0 (FH_CRITIC_OFF_W0 + FH_CRITIC_H1 * FH_STATE_DIM)
#define FH_CRITIC_OFF_W1 (FH_CRITIC_OFF_B0 + FH_CRITIC_H1)
#define FH_CRITIC_OFF_B1 (FH_CRITIC_OFF_W1 + FH_CRITIC_H2 * FH_CRITIC_H1)
#define FH_CRITIC_OFF_W2 (FH_CRITIC_OFF_B1 + FH_CRITIC_H2)
#define FH_CRITIC_OFF_B2 (FH_CRITIC_OFF_W2 + FH_CRITIC_H3 * FH_CRITIC_H2)
#define FH_CRITIC_OFF_W3 (FH_CRITIC_OFF_B2 + FH_CRITIC_H3)
#define FH_CRITIC_OFF_B3 (FH_CRITIC_OFF_W3 + FH_CRITIC_H4 * FH_CRITIC_H3)
#define FH_CRITIC_OFF_W4 (FH_CRITIC_OFF_B3 + FH_CRITIC_H4)
#define FH_CRITIC_OFF_B4 (FH_CRITIC_OFF_W4 + FH_CRITIC_H5 * FH_CRITIC_H4)
#define FH_CRITIC_OFF_W5 (FH_CRITIC_OFF_B4 + FH_CRITIC_H5)
#define FH_CRITIC_OFF_B5 (FH_CRITIC_OFF_W5 + 1 * FH_CRITIC_H5)
#define FH_CRITIC_N_PARAMS (FH_CRITIC_OFF_B5 + 1) /* 364,929 */

/* ---- curiosity 35 -> 64 -> 32 (ReLU hidden) ---- */
#define FH_CURIOSITY_N_LAYERS 2
#define FH_CURIOSITY_OFF_W0 0
#define FH_CURIOSITY_OFF_B0 (FH_CURIOSITY_OFF_W0 + FH_CURIOSITY_HIDDEN * FH_CURIOSITY_INPUT_DIM)
#define FH_CURIOSITY_OFF_W1 (FH_CURIOSITY_OFF_B0 + FH_CURIOSITY_HIDDEN)
#define FH_CURIOSITY_OFF_B1 (FH_CURIOSITY_OFF_W1 + FH_CURIOSITY_TARGET_DIM * FH_CURIOSITY_HIDDEN)
#define FH_CURIOSITY_N_PARAMS (FH_CURIOSITY_OFF_B1 + FH_CURIOSITY_TARGET_DIM) /* 4,384 */

/* ---- DQN Q-network 54 -> 256 -> 128 -> 45 (LeakyReLU hidden), reserved (SPEC §7) ---- */
#define FH_QNET_H1 256
#define FH_QNET_H2 128
#define FH_QNET_LEAKY_SLOPE 0.01f /* also in nn.h, the same text */

/* ---- collection defaults (SPEC §5) ---- */
#define FH_DEFAULT_EPISODES 128
#define FH_DEFAULT_STEPS 500

#endif
