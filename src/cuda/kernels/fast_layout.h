/* fast_layout.h — the fast path's shared-memory layouts and launch shapes, in floats:
 * defines only, included by the kernels (NVRTC) and by the host's plan (C), so both
 * size the same blocks. Needs foxhunt/shapes.h first. The -D options the plan passes
 * to NVRTC (FH_ACTOR_TABLE, FH_WARP_EPISODES, FH_ROLLOUT_CLOCKS,
 * FH_BLOCK_SHARED_BARRIERS) default here to the product's build. */
#ifndef FOXHUNT_FAST_LAYOUT_H
#define FOXHUNT_FAST_LAYOUT_H
#define FH_WARP 32
#define FH_FULL_MASK 0xffffffffu
/* The actor in shared memory, transposed: W0T (54, 128), b0, W1T (128, 64), b1,
 * W2T (64, 48) with outputs padded to 48, b2 (48). */
#define FH_FAST_OUT_PAD 48
#define FH_FAST_SM_W0 0
#define FH_FAST_SM_B0 (FH_FAST_SM_W0 + FH_STATE_DIM * FH_ACTOR_H1)
#define FH_FAST_SM_W1 (FH_FAST_SM_B0 + FH_ACTOR_H1)
#define FH_FAST_SM_B1 (FH_FAST_SM_W1 + FH_ACTOR_H1 * FH_ACTOR_H2)
#define FH_FAST_SM_W2 (FH_FAST_SM_B1 + FH_ACTOR_H2)
#define FH_FAST_SM_B2 (FH_FAST_SM_W2 + FH_ACTOR_H2 * FH_FAST_OUT_PAD)
#define FH_FAST_SM_WEIGHTS (FH_FAST_SM_B2 + FH_FAST_OUT_PAD)
/* Per-episode scratch after the weights (floats). Both mappings use the state (padded
 * to 64) and a misc area (the bar after a reset); the warp mapping keeps h1 and h2,
 * the block mapping h1, the two halves of layer 1's sums and the four warps' partial
 * logits. */
#define FH_FAST_SM_STATE 0
#define FH_FAST_SM_H1 64
#define FH_FAST_SM_H2 (FH_FAST_SM_H1 + FH_ACTOR_H1)
#define FH_FAST_SM_MISC (FH_FAST_SM_H2 + FH_ACTOR_H2)
/* the episode's diversity window (fh_diversity, 168 B; offsets stay even, so its double
 * is 8-byte aligned): in shared memory, nothing of the episode's state that lane 0
 * carries is indexed at run time, and it stays in registers instead of local memory */
#define FH_FAST_SM_DIV_FLOATS 48
#define FH_FAST_SM_DIV (FH_FAST_SM_MISC + 8)
/* the actor table's row of the bar observed next (FH_ACTOR_TABLE; 16-byte aligned) */
#define FH_FAST_SM_TABLE (FH_FAST_SM_DIV + FH_FAST_SM_DIV_FLOATS)
#define FH_FAST_SM_PER_WARP (FH_FAST_SM_TABLE + FH_ACTOR_TABLE_SPLIT_ROW)
#define FH_FAST_MAX_WARPS 16
/* The actor's first layer factored through the market (FH_ACTOR_TABLE=1, the plan's
 * actor_table): a state's first 51 floats are its bar's features, so the
 * layer's sums over them are a table over the bars, made once per collection
 * (actor_table_kernel) in the order each mapping sums, and a step adds only the 3
 * portfolio inputs, bit for bit the sums it replaces. Rows: the even and the odd
 * inputs' sums apart (fast_actor, block_actor, pair_split_actor: 2 x 128 floats), or
 * one sum in input order (lane_dense: 128). */
#ifndef FH_ACTOR_TABLE
#define FH_ACTOR_TABLE 0
#endif
#define FH_ACTOR_TABLE_SPLIT_ROW (2 * FH_ACTOR_H1)
#define FH_ACTOR_TABLE_SEQ_ROW FH_ACTOR_H1
#define FH_BLOCK_EP_WARPS 4                          /* actor warps per episode, block mapping */
#define FH_BLOCK_EP_THREADS (FH_BLOCK_EP_WARPS * FH_WARP)
#define FH_BLOCK_BOOK_WARP FH_BLOCK_EP_WARPS         /* and a fifth that keeps the books */
#define FH_BLOCK_EP_ALL_THREADS (FH_BLOCK_EP_THREADS + FH_WARP)
#define FH_BLOCK_SM_P1 (FH_FAST_SM_H1 + FH_ACTOR_H1) /* (2, 64) layer-1 half sums */
#define FH_BLOCK_SM_P2 (FH_BLOCK_SM_P1 + 2 * FH_ACTOR_H2) /* (4, 48) partial logits */
#define FH_BLOCK_SM_MISC (FH_BLOCK_SM_P2 + FH_BLOCK_EP_WARPS * FH_FAST_OUT_PAD)
#define FH_BLOCK_SM_DIV (FH_BLOCK_SM_MISC + 8)
#define FH_BLOCK_SM_BOOK (FH_BLOCK_SM_DIV + FH_FAST_SM_DIV_FLOATS) /* fh_book_record */
#define FH_BLOCK_SM_BOOK_FLOATS 48 /* two fh_book_record slots of 24 floats */
#define FH_BLOCK_SM_TABLE (FH_BLOCK_SM_BOOK + FH_BLOCK_SM_BOOK_FLOATS) /* as FH_FAST_SM_TABLE */
#define FH_BLOCK_SM_PER_EPISODE (FH_BLOCK_SM_TABLE + FH_ACTOR_TABLE_SPLIT_ROW)
#define FH_BLOCK_MAX_EPISODES 2 /* named barriers 1..4: two per episode */
/* The warp mapping with a book-keeping warp ("pair"): two warps per episode; the warp
 * mapping's scratch, then the two book record slots. */
#define FH_PAIR_SM_BOOK FH_FAST_SM_PER_WARP
/* the split actor's hand-overs (pair_split_actor): layer-1 partial sums, partial logits */
#define FH_PAIR_SM_XCH1 (FH_PAIR_SM_BOOK + FH_BLOCK_SM_BOOK_FLOATS)
#define FH_PAIR_SM_XCH2 (FH_PAIR_SM_XCH1 + FH_ACTOR_H2)
#define FH_PAIR_SM_PER_EPISODE (FH_PAIR_SM_XCH2 + FH_ACTOR_H2)
#define FH_PAIR_THREADS (2 * FH_WARP)
/* Episodes per warp in the warp and pair kernels (the plan's warp_episodes):
 * each weight read from shared memory then feeds that many episodes. */
#ifndef FH_WARP_EPISODES
#define FH_WARP_EPISODES 1
#endif
#define FH_PAIR_MAX_EPISODES (FH_FAST_MAX_WARPS / 2) /* named barriers 1..8 */
/* The racecheck build (-DFH_BLOCK_SHARED_BARRIERS; the override block_shared_barriers):
 * the book-keeping warp also meets the actor warps at the actor's barriers, all under one
 * barrier id, which puts its work back on the chain but keeps every hand-off
 * as it is. compute-sanitizer's racecheck flags the book record's hand-off between the
 * usual build's two barrier ids although the observation barrier orders it; with one id
 * it reports nothing (dev/cuda/README.md). */
#ifdef FH_BLOCK_SHARED_BARRIERS
#define FH_BLOCK_ACTOR_THREADS FH_BLOCK_EP_ALL_THREADS
#define FH_BLOCK_ACTOR_BARRIER(group) (1 + FH_BLOCK_MAX_EPISODES + (group))
#else
#define FH_BLOCK_ACTOR_THREADS FH_BLOCK_EP_THREADS
#define FH_BLOCK_ACTOR_BARRIER(group) (1 + (group))
#endif
/* Lane mapping (large N): a block holds 128 episodes in groups; a group is
 * FH_LANE_PER_LANE x 32 episodes, one per thread of its first warps for observing,
 * sampling and env_step, and four warps for the layers, where lane j takes episodes
 * j, j + 32, ... (FH_LANE_PER_LANE of them). Per group, k-major scratch (element k of
 * episode j at k * FH_LANE_GROUP_EPISODES + j, so a warp's accesses hit 32 banks): the
 * state (54), h1 (128; later the logits, 48) and h2 (64). FH_LANE_PER_LANE trades
 * shared-memory traffic (each broadcast weight feeds 32 x FH_LANE_PER_LANE
 * multiply-adds) against warps per SM (512 / FH_LANE_PER_LANE threads per block). */
#define FH_LANE_PER_LANE 2 /* 1 and 4 measured slower (dev/cuda/README.md) */
#define FH_LANE_BLOCK_EPISODES 128
#define FH_LANE_GROUP_EPISODES (FH_LANE_PER_LANE * FH_WARP)
#define FH_LANE_GROUP_WARPS 4
#define FH_LANE_GROUP_THREADS (FH_LANE_GROUP_WARPS * FH_WARP)
#define FH_LANE_GROUPS (FH_LANE_BLOCK_EPISODES / FH_LANE_GROUP_EPISODES)
#define FH_LANE_BLOCK_THREADS (FH_LANE_GROUPS * FH_LANE_GROUP_THREADS)
#define FH_LANE_SM_STATE 0
#define FH_LANE_SM_H1 (FH_STATE_DIM * FH_LANE_GROUP_EPISODES)
#define FH_LANE_SM_H2 (FH_LANE_SM_H1 + FH_ACTOR_H1 * FH_LANE_GROUP_EPISODES)
#define FH_LANE_SM_DIV (FH_LANE_SM_H2 + FH_ACTOR_H2 * FH_LANE_GROUP_EPISODES)
#define FH_LANE_SM_DIV_FLOATS 42 /* one fh_diversity (168 B, a multiple of 8) per episode */
#define FH_LANE_SM_BARS (FH_LANE_SM_DIV + FH_LANE_SM_DIV_FLOATS * FH_LANE_GROUP_EPISODES)
#define FH_LANE_SM_PER_GROUP (FH_LANE_SM_BARS + FH_LANE_GROUP_EPISODES) /* the bars (int) */
#define FH_LANE_SM_PER_BLOCK (FH_LANE_GROUPS * FH_LANE_SM_PER_GROUP)
#define FH_LANE_OUT_BLOCK 16 /* outputs accumulated in registers at once */
/* Lanes whose second feature slot is free (51 features = 32 + 19) load the bar's
 * prices for env_step_at: close, next close, sigma (lanes 19, 20, 21). */
#define FH_FAST_LANE_CLOSE (FH_N_MARKET_FEATURES - FH_WARP)
#define FH_FAST_LANE_NEXT_CLOSE (FH_FAST_LANE_CLOSE + 1)
#define FH_FAST_LANE_SIGMA (FH_FAST_LANE_CLOSE + 2)
/* Rollout clock counters (compiled in with -DFH_ROLLOUT_CLOCKS; the override
 * rollout_clocks): cycles per episode in each part of a step, on its first lane. */
#define FH_CLOCK_OBSERVE 0 /* observation written (block mapping: and the barrier) */
#define FH_CLOCK_ACTOR 1   /* the three layers (block mapping: with their barriers) */
#define FH_CLOCK_SAMPLE 2  /* softmax and the draw */
#define FH_CLOCK_ENV 3     /* env_step and the step's outputs */
#define FH_CLOCK_TAIL 4    /* truncation observation, reset, next bar */
#define FH_CLOCK_PARTS 5
#define FH_CLOCK_STRIDE 8  /* counters per episode in the clocks buffer */
/* Block shapes of the batched kernels the host launches (launch bounds here):
 * critic_layer0_factored_kernel's threads and rows per thread, curiosity_fused_kernel's
 * threads. */
#define FH_L0_THREADS 256
#define FH_L0_ROWS_PER_THREAD 4
#define FH_CUR_THREADS 128
#define FH_ACTOR_TABLE_BARS 32 /* actor_table_kernel: bars per block (FH_ACTOR_H1 threads) */

#endif
