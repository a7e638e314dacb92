/* test_fast_plan.c — the fast path's plan (fh_fast_plan_make) and the GPU overrides
 * (overrides.c), on the CPU: no GPU needed.
 *
 * Hand-computed plans first, every number worked out beside it from the layouts
 * (kernels/fast_layout.h, foxhunt/shapes.h) and the plan's rules (fast_plan.c):
 *   the actor's weights in shared memory, FH_FAST_SM_WEIGHTS:
 *     W0T 54*128 = 6912, b0 128, W1T 128*64 = 8192, b1 64, W2T 64*48 = 3072, b2 48
 *     = 18416 floats
 *   per-warp scratch (warp mapping): state 64 + h1 128 + h2 64 + misc 8 + div 48
 *     + table row 256 = 568 floats
 *   per episode, pair kernel: 568 + book 48 + hand-overs 64 + 64 = 744 floats
 *   per episode, block mapping: state 64 + h1 128 + half sums 128 + logits 4*48
 *     + misc 8 + div 48 + book 48 + table row 256 = 872 floats, 5 warps = 160 threads
 *   per block, lane mapping: 2 groups x 64 episodes x (54 + 128 + 64 + 42 + 1 bar)
 *     = 2 * 64 * 289 = 36992 floats, 2 groups x 4 warps = 256 threads;
 *     (18416 + 36992) * 4 = 221632 B: fits the H200's 232448, not 101376 or 167936
 *   critic activations: 2 buffers x 512 floats x 4 B = 4096 B a row
 * then the overrides and the print-out (properties over random problems, devices and
 * overrides: test_fast_plan_random.c; the fixture both share: fast_plan_fixture.h). */
#include "cuda/fast_plan_fixture.h"
#include "foxhunt/precision.h"

/* ---- H200, the default market (20000 bars, horizon 256), L 500, fp32 ---- */

static void test_h200_n128(void)
{
    fh_plan_problem pr = problem(128, 500, FH_ROLLOUT_AUTO);
    fh_fast_plan p;
    if (!make_ok(&H200, &pr, NULL, &p))
        return;
    /* N 128 <= 2 * 132 SMs: block mapping; 128 units over 132 SMs: 1 per SM, 1 a block
     * (fit (232448/4 - 18416)/872 = 39696/872 = 45); grid 128; 160 threads;
     * smem (18416 + 872) * 4 = 77152 */
    check_rollout(&p, FH_ROLLOUT_BLOCK, 0, 1, "ppo_rollout_block_kernel", 1, 160, 128, 77152);
    /* actor table: split rows (block mapping), 20000 bars * 256 floats * 4 B = 20480000 B
     * <= 256 MiB, and 20000 bars <= N*L = 64000: on */
    CHECK(p.actor_table == 1);
    CHECK(p.actor_table_split == 1);
    CHECK(p.actor_table_bytes == 20480000u);
    /* 20000 - 1 - 256 >= 0: K = 500/256 + 2 = 1 + 2 = 3 */
    CHECK(p.k_slots == 3);
    /* 128*500 + 128*3 + 128 = 64000 + 384 + 128 = 64512 */
    CHECK(p.critic_rows == 64512);
    /* min(64512, 2^22) = 64512; memory fit 140e9/4/4096 = 8544921 -> 8544256: no cap */
    CHECK(p.chunk_rows == 64512);
    CHECK(p.in_stride == 56);
    /* fp32, 20000 <= 0.5 * 64512 = 32256, projection 20000*512*4 = 40960000 B <= 1 GiB */
    CHECK(p.critic_factor == 1);
    /* 40960000 > 16 MiB (16777216) -> 2; 20480000 > 16777216 -> 4 (the most) */
    CHECK(p.l0_slices == 4);
    /* 64512 rows < 2^22: no pipeline */
    CHECK(p.pipeline == 0);
    CHECK(p.n_chunks == 0);
    CHECK(p.pipeline_first_rows == 131072); /* 2^17 */
    /* curiosity: ceil(64000 / 128) = 500 blocks, capped at 132 * 2 = 264 */
    CHECK(p.curiosity_grid == 264);
    /* GAE: a row 5 * 500 * 4 = 10000 B; 49152 / 10000 = 4 warps (the most); staged;
     * grid 128 / 4 = 32; smem 4 * 10000 = 40000 */
    CHECK(p.gae_warps == 4);
    CHECK(p.gae_staged == 1);
    CHECK(p.gae_grid == 32);
    CHECK(p.gae_smem == 40000u);
    /* gemm_tune defaults to 1; the diagnostics to 0 */
    CHECK(p.gemm_tune == 1);
    CHECK(p.gemm_tune_candidates >= 1);
    CHECK(p.rollout_clocks == 0);
    CHECK(p.block_shared_barriers == 0);
    CHECK(p.n_options == 2);
    CHECK(strcmp(p.options[0], "-lineinfo") == 0);
    CHECK(strcmp(p.options[1], "-DFH_ACTOR_TABLE=1") == 0);
    /* the inputs are kept */
    CHECK(p.problem.n_episodes == 128 && p.device.sm_count == 132);
}

static void test_h200_n1024(void)
{
    fh_plan_problem pr = problem(1024, 500, FH_ROLLOUT_AUTO);
    fh_fast_plan p;
    if (!make_ok(&H200, &pr, NULL, &p))
        return;
    /* 264 < 1024 < 72 * 132 = 9504: warp; 1024 <= 8 * 132 = 1056: the pair kernel, one
     * episode a warp; ceil(1024/132) = 8 a block (max 8; fit 39696/744 = 53);
     * grid 1024/8 = 128; 8 * 64 = 512 threads; smem (18416 + 8*744) * 4 = 24368 * 4 = 97472 */
    check_rollout(&p, FH_ROLLOUT_WARP, 1, 1, "ppo_rollout_pair_kernel", 8, 512, 128, 97472);
    CHECK(p.actor_table == 1 && p.actor_table_split == 1);
    /* 1024 * (500 + 3 + 1) = 516096 rows, one chunk; 20000 <= 258048: factored; < 2^22 */
    CHECK(p.critic_rows == 516096);
    CHECK(p.chunk_rows == 516096);
    CHECK(p.critic_factor == 1);
    CHECK(p.pipeline == 0);
    /* one episode a warp: no -DFH_WARP_EPISODES */
    CHECK(p.n_options == 2);
    CHECK(!has_option(&p, "-DFH_WARP_EPISODES=2"));
    CHECK(has_option(&p, "-DFH_ACTOR_TABLE=1"));
    /* GAE grid 1024 / 4 = 256 */
    CHECK(p.gae_grid == 256);
}

static void test_h200_n16384(void)
{
    fh_plan_problem pr = problem(16384, 500, FH_ROLLOUT_AUTO);
    fh_fast_plan p;
    if (!make_ok(&H200, &pr, NULL, &p))
        return;
    /* 16384 >= 9504 and 221632 <= 232448: lane; 16384/128 = 128 blocks of 128 episodes,
     * 256 threads, 221632 B */
    check_rollout(&p, FH_ROLLOUT_LANE, 0, 1, "ppo_rollout_lane_kernel", 128, 256, 128,
                  LANE_SMEM);
    /* sequential table rows: 20000 * 128 * 4 = 10240000 B; 20000 <= 8192000: on */
    CHECK(p.actor_table_split == 0);
    CHECK(p.actor_table_bytes == 10240000u);
    CHECK(p.actor_table == 1);
    /* 16384*500 + 16384*3 + 16384 = 8192000 + 49152 + 16384 = 8257536 */
    CHECK(p.critic_rows == 8257536);
    /* min(8257536, 2^22) = 4194304; memory fit 8544256 >= it */
    CHECK(p.chunk_rows == 4194304);
    /* 20000 <= 0.5 * 8257536; slices 4 as at N 128 */
    CHECK(p.critic_factor == 1);
    CHECK(p.l0_slices == 4);
    /* rows >= 2^22; h0 8257536 * 512 * 4 = 16911433728 B <= 140e9/4 = 35e9; chunks
     * 131072, 524288, 2097152, 4194304 (sum 6946816), then the 1310720 left: 5 */
    CHECK(p.pipeline == 1);
    CHECK(p.n_chunks == 5);
    CHECK(fh_critic_chunk_schedule(8257536, 131072, 4194304, 4, NULL) == 5);
    /* curiosity: ceil(8192000/128) = 64000 -> 264; GAE grid 16384/4 = 4096 */
    CHECK(p.curiosity_grid == 264);
    CHECK(p.gae_grid == 4096);
    CHECK(p.n_options == 2);
    CHECK(!has_option(&p, "-DFH_WARP_EPISODES=2"));

    /* TF32: the factored layer does not pay, and without it no automatic pipeline */
    pr.precision = 1;
    if (!make_ok(&H200, &pr, NULL, &p))
        return;
    CHECK(p.critic_factor == 0);
    CHECK(p.l0_slices == 1);
    CHECK(p.pipeline == 0);
    CHECK(p.n_chunks == 0);
    CHECK(p.mapping == FH_ROLLOUT_LANE);
}

/* obs_noise (issue 34 item 3): a state's market features are no longer its bar's, so
 * neither first layer is factored through the market, every mapping; forcing either is
 * refused, naming the override. */
static void test_noisy_obs(void)
{
    const fh_rollout_mapping maps[4] = {FH_ROLLOUT_AUTO, FH_ROLLOUT_WARP, FH_ROLLOUT_BLOCK,
                                        FH_ROLLOUT_LANE};
    for (int m = 0; m < 4; m++) {
        fh_plan_problem pr = problem(16384, 500, maps[m]);
        fh_fast_plan p;
        if (!make_ok(&H200, &pr, NULL, &p))
            return;
        CHECK(p.actor_table == 1 && p.critic_factor == 1); /* the noiseless plan factors */
        pr.noisy_obs = 1;
        if (!make_ok(&H200, &pr, NULL, &p))
            return;
        CHECK(p.actor_table == 0);
        CHECK(!has_option(&p, "-DFH_ACTOR_TABLE=1"));
        CHECK(p.critic_factor == 0);
        CHECK(p.pipeline == 0);
    }
    fh_plan_problem pr = problem(16384, 500, FH_ROLLOUT_AUTO);
    pr.noisy_obs = 1;
    const char *names[2] = {"FOXHUNT_ACTOR_FACTOR", "FOXHUNT_CRITIC_FACTOR"};
    for (int k = 0; k < 2; k++) {
        fh_gpu_overrides ov;
        fh_gpu_overrides_default(&ov);
        if (k == 0)
            ov.actor_table = 1;
        else
            ov.critic_factor = 1;
        fh_fast_plan p;
        fh_error err = {0};
        CHECK(fh_fast_plan_make(&H200, &pr, &ov, &p, &err) == FH_ERR_INPUT);
        CHECK_MSG(strstr(err.message, names[k]) && strstr(err.message, "obs_noise"),
                  "refusal without %s and obs_noise: %s", names[k], err.message);
    }
}

/* ---- a device with 99 KB of shared memory a block ---- */

static void test_99kb(void)
{
    fh_plan_problem pr = problem(16384, 500, FH_ROLLOUT_AUTO);
    fh_fast_plan p;
    if (make_ok(&D99, &pr, NULL, &p)) {
        /* 16384 >= 72 * 128 = 9216 but 221632 > 101376: warp; 16384 > 8 * 128 = 1024: no
         * pair, 2 episodes a warp; 8192 units, ceil(8192/128) = 64 -> max 16, then the fit
         * (101376/4 - 18416) / (2*568) = 6928/1136 = 6; grid ceil(8192/6) = 1366
         * (6*1365 = 8190 < 8192); 12 episodes, 6*32 = 192 threads;
         * smem (18416 + 6*1136) * 4 = 25232 * 4 = 100928 */
        check_rollout(&p, FH_ROLLOUT_WARP, 0, 2, "ppo_rollout_fast_kernel", 12, 192, 1366,
                      100928);
        CHECK(has_option(&p, "-DFH_WARP_EPISODES=2"));
        CHECK(p.actor_table == 1 && p.actor_table_split == 1);
        /* options: -lineinfo, -DFH_WARP_EPISODES=2, -DFH_ACTOR_TABLE=1 in that order */
        CHECK(p.n_options == 3);
        CHECK(strcmp(p.options[0], "-lineinfo") == 0);
        CHECK(strcmp(p.options[1], "-DFH_WARP_EPISODES=2") == 0);
        CHECK(strcmp(p.options[2], "-DFH_ACTOR_TABLE=1") == 0);
        /* 20e9 free: fit 20e9/4/4096 = 1220703 -> 298 * 4096 = 1220608 < 2^22 */
        CHECK(p.chunk_rows == 1220608);
        /* h0 16911433728 B > 20e9/4 = 5e9: no pipeline */
        CHECK(p.critic_factor == 1);
        CHECK(p.pipeline == 0);
        /* curiosity capped at 128 * 2 = 256 */
        CHECK(p.curiosity_grid == 256);
    }

    pr = problem(128, 500, FH_ROLLOUT_AUTO);
    if (make_ok(&D99, &pr, NULL, &p)) /* 128 <= 256: block; fit 6928/872 = 7 >= 1 */
        check_rollout(&p, FH_ROLLOUT_BLOCK, 0, 1, "ppo_rollout_block_kernel", 1, 160, 128, 77152);

    pr = problem(1024, 500, FH_ROLLOUT_AUTO);
    if (make_ok(&D99, &pr, NULL, &p)) /* 1024 <= 8 * 128: pair, 8 a block (fit 6928/744 = 9) */
        check_rollout(&p, FH_ROLLOUT_WARP, 1, 1, "ppo_rollout_pair_kernel", 8, 512, 128, 97472);

    /* the lane mapping forced where it does not fit: a device failure naming the memory */
    pr = problem(16384, 500, FH_ROLLOUT_LANE);
    fh_error err = {0};
    fh_status st = fh_fast_plan_make(&D99, &pr, NULL, &p, &err);
    CHECK(st == FH_ERR_FAILURE);
    CHECK_MSG(strstr(err.message, "shared memory") != NULL, "message: %s", err.message);
    CHECK_MSG(strstr(err.message, "221632") != NULL, "message: %s", err.message);
    /* and so on a 164 KB device (167936 < 221632) */
    fh_plan_device d164 = {"A100-like", 108, 167936, 40000000000ull};
    CHECK(fh_fast_plan_make(&d164, &pr, NULL, &p, &err) == FH_ERR_FAILURE);
}

/* ---- mappings forced by --kernel on the H200 ---- */

static void test_forced_mappings(void)
{
    fh_fast_plan p;
    /* block at N 16384: ceil(16384/132) = 125 a SM -> max 2 a block; grid 8192;
     * 2 * 160 = 320 threads; smem (18416 + 2*872) * 4 = 20160 * 4 = 80640 */
    fh_plan_problem pr = problem(16384, 500, FH_ROLLOUT_BLOCK);
    if (make_ok(&H200, &pr, NULL, &p))
        check_rollout(&p, FH_ROLLOUT_BLOCK, 0, 1, "ppo_rollout_block_kernel", 2, 320, 8192,
                      80640);
    /* warp at N 16384: 16384 > 1056, no pair, 2 a warp; 8192 units, ceil(8192/132) = 63
     * -> max 16 (fit 39696/1136 = 34); grid 8192/16 = 512; 32 episodes, 512 threads;
     * smem (18416 + 16*1136) * 4 = 36592 * 4 = 146368 */
    pr = problem(16384, 500, FH_ROLLOUT_WARP);
    if (make_ok(&H200, &pr, NULL, &p))
        check_rollout(&p, FH_ROLLOUT_WARP, 0, 2, "ppo_rollout_fast_kernel", 32, 512, 512,
                      146368);
    /* lane at N 5: one block of 128 slots */
    pr = problem(5, 500, FH_ROLLOUT_LANE);
    if (make_ok(&H200, &pr, NULL, &p))
        check_rollout(&p, FH_ROLLOUT_LANE, 0, 1, "ppo_rollout_lane_kernel", 128, 256, 1,
                      LANE_SMEM);
}

/* ---- the actor table, the critic's first layer, K and GAE at the edges ---- */

static void test_tables_and_edges(void)
{
    fh_fast_plan p;
    /* 300000 bars: lane rows 300000*128*4 = 153600000 B <= 268435456: on; the warp
     * mapping's split rows 307200000 B > 256 MiB: off */
    fh_plan_problem pr = problem(16384, 500, FH_ROLLOUT_AUTO);
    pr.n_bars = 300000;
    if (make_ok(&H200, &pr, NULL, &p)) {
        CHECK(p.mapping == FH_ROLLOUT_LANE);
        CHECK(p.actor_table_bytes == 153600000u);
        CHECK(p.actor_table == 1);
        /* projection 300000*2048 = 614400000 B <= 1 GiB, 300000 <= 4128768: factored,
         * 614400000 / 4 = 153600000 > 16 MiB still, but 4 slices at most */
        CHECK(p.critic_factor == 1 && p.l0_slices == 4);
    }
    pr.mapping = FH_ROLLOUT_WARP;
    if (make_ok(&H200, &pr, NULL, &p)) {
        CHECK(p.actor_table_bytes == 307200000u);
        CHECK(p.actor_table == 0);
        CHECK(!has_option(&p, "-DFH_ACTOR_TABLE=1"));
    }
    /* 600000 bars: projection 600000*2048 = 1228800000 B > 1 GiB: not factored, so no
     * pipeline; lane table 307200000 B > 256 MiB: off */
    pr = problem(16384, 500, FH_ROLLOUT_AUTO);
    pr.n_bars = 600000;
    if (make_ok(&H200, &pr, NULL, &p)) {
        CHECK(p.critic_factor == 0 && p.l0_slices == 1);
        CHECK(p.pipeline == 0);
        CHECK(p.actor_table == 0);
    }
    /* more bars than N*L: N 128, L 100: 20000 > 12800: no table; 20000 > 0.5 * 128*(100 +
     * 2 + 1) = 6592: not factored. K: 100/256 + 2 = 2, rows 128*103 = 13184 */
    pr = problem(128, 100, FH_ROLLOUT_AUTO);
    if (make_ok(&H200, &pr, NULL, &p)) {
        CHECK(p.actor_table == 0);
        CHECK(p.k_slots == 2);
        CHECK(p.critic_rows == 13184);
        CHECK(p.critic_factor == 0);
        /* curiosity: 12800 / 128 = 100 blocks, under the cap */
        CHECK(p.curiosity_grid == 100);
        CHECK(p.n_options == 1);
    }
    /* slices: 10000 bars, projection 20480000 B > 16 MiB -> 2, 10240000 <= 16 MiB;
     * 8192 bars, projection exactly 16777216 B: 1 */
    pr = problem(1024, 500, FH_ROLLOUT_AUTO);
    pr.n_bars = 10000;
    if (make_ok(&H200, &pr, NULL, &p))
        CHECK(p.critic_factor == 1 && p.l0_slices == 2);
    pr.n_bars = 8192;
    if (make_ok(&H200, &pr, NULL, &p))
        CHECK(p.critic_factor == 1 && p.l0_slices == 1);
    /* short data: 200 bars, horizon 256: 200 - 1 - 256 < 0, any step may truncate:
     * K = L = 500; rows 128 * (500 + 500 + 1) = 128128 */
    pr = problem(128, 500, FH_ROLLOUT_AUTO);
    pr.n_bars = 200;
    if (make_ok(&H200, &pr, NULL, &p)) {
        CHECK(p.k_slots == 500);
        CHECK(p.critic_rows == 128128);
        /* 200*2048 = 409600 B: one slice */
        CHECK(p.critic_factor == 1 && p.l0_slices == 1);
    }
    /* exactly a horizon of data: 257 - 1 - 256 = 0: K = 500/256 + 2 = 3 */
    pr.n_bars = 257;
    if (make_ok(&H200, &pr, NULL, &p))
        CHECK(p.k_slots == 3);
    /* K capped at L: L 1, horizon 1: 1/1 + 2 = 3 -> 1; rows 7*(1 + 1 + 1) = 21 */
    pr = problem(7, 1, FH_ROLLOUT_AUTO);
    pr.horizon = 1;
    if (make_ok(&H200, &pr, NULL, &p)) {
        CHECK(p.k_slots == 1);
        CHECK(p.critic_rows == 21);
        CHECK(p.chunk_rows == 21);
        CHECK(p.curiosity_grid == 1);
        /* GAE row 5*1*4 = 20 B: 2457 warps -> 4; grid ceil(7/4) = 2; smem 80 */
        CHECK(p.gae_warps == 4 && p.gae_grid == 2 && p.gae_smem == 80u);
    }
    /* GAE rows too long to stage: L 2500, 5*2500*4 = 50000 B > 49152: 4 warps, no smem;
     * L 2000: 40000 B, one warp staged, grid 128 */
    pr = problem(128, 2500, FH_ROLLOUT_AUTO);
    if (make_ok(&H200, &pr, NULL, &p))
        CHECK(p.gae_staged == 0 && p.gae_warps == 4 && p.gae_grid == 32 && p.gae_smem == 0);
    pr.n_steps = 2000;
    if (make_ok(&H200, &pr, NULL, &p))
        CHECK(p.gae_staged == 1 && p.gae_warps == 1 && p.gae_grid == 128 &&
              p.gae_smem == 40000u);
}

/* ---- overrides carried into the plan ---- */

static void test_plan_overrides(void)
{
    fh_gpu_overrides ov;
    fh_fast_plan p;
    fh_error err = {0};

    /* warp_book 0 at H200 N 1024: the fast kernel, 2 episodes a warp; 512 units,
     * ceil(512/132) = 4 a block (fit 34); grid 128; 8 episodes, 128 threads;
     * smem (18416 + 4*1136) * 4 = 22960 * 4 = 91840 */
    fh_gpu_overrides_default(&ov);
    ov.warp_book = 0;
    fh_plan_problem pr = problem(1024, 500, FH_ROLLOUT_AUTO);
    if (make_ok(&H200, &pr, &ov, &p)) {
        check_rollout(&p, FH_ROLLOUT_WARP, 0, 2, "ppo_rollout_fast_kernel", 8, 128, 128, 91840);
        CHECK(has_option(&p, "-DFH_WARP_EPISODES=2"));
    }
    /* and warp_episodes 1 beside it: 1024 units, 8 a block, grid 128, 256 threads,
     * smem (18416 + 8*568) * 4 = 22960 * 4 = 91840 */
    ov.warp_episodes = 1;
    if (make_ok(&H200, &pr, &ov, &p)) {
        check_rollout(&p, FH_ROLLOUT_WARP, 0, 1, "ppo_rollout_fast_kernel", 8, 256, 128, 91840);
        CHECK(!has_option(&p, "-DFH_WARP_EPISODES=2"));
    }
    /* warp_book 1 and 2 a warp at N 1024: the pair kernel with 2 episodes a warp;
     * 512 units, 4 a block; 8 episodes, 4*64 = 256 threads; grid 128;
     * smem (18416 + 4*2*744) * 4 = 24368 * 4 = 97472 */
    fh_gpu_overrides_default(&ov);
    ov.warp_book = 1;
    ov.warp_episodes = 2;
    if (make_ok(&H200, &pr, &ov, &p)) {
        check_rollout(&p, FH_ROLLOUT_WARP, 1, 2, "ppo_rollout_pair_kernel", 8, 256, 128, 97472);
        CHECK(has_option(&p, "-DFH_WARP_EPISODES=2"));
    }

    /* actor_table 0: no table, no option */
    fh_gpu_overrides_default(&ov);
    ov.actor_table = 0;
    pr = problem(128, 500, FH_ROLLOUT_AUTO);
    if (make_ok(&H200, &pr, &ov, &p)) {
        CHECK(p.actor_table == 0);
        CHECK(!has_option(&p, "-DFH_ACTOR_TABLE=1"));
        CHECK(p.n_options == 1);
    }
    /* actor_table 1 where the plan would not (20000 bars > 128*100) */
    ov.actor_table = 1;
    pr = problem(128, 100, FH_ROLLOUT_AUTO);
    if (make_ok(&H200, &pr, &ov, &p))
        CHECK(p.actor_table == 1 && has_option(&p, "-DFH_ACTOR_TABLE=1"));

    /* critic_pipeline 1, first chunk 4096, at N 301 L 64 (5000 bars, horizon 40):
     * K = 64/40 + 2 = 3; rows 301*64 + 301*3 + 301 = 19264 + 903 + 301 = 20468; one chunk
     * of rows (< 2^22); schedule 4096, then 16384 > 16372 left: 2 chunks */
    fh_gpu_overrides_default(&ov);
    ov.critic_pipeline = 1;
    ov.pipeline_first_rows = 4096;
    pr = problem(301, 64, FH_ROLLOUT_AUTO);
    pr.n_bars = 5000;
    pr.horizon = 40;
    if (make_ok(&H200, &pr, &ov, &p)) {
        CHECK(p.k_slots == 3);
        CHECK(p.critic_rows == 20468);
        CHECK(p.chunk_rows == 20468);
        CHECK(p.pipeline == 1);
        CHECK(p.pipeline_first_rows == 4096);
        CHECK(p.n_chunks == 2);
        CHECK(fh_critic_chunk_schedule(20468, 4096, 20468, 4, NULL) == 2);
    }
    /* the same at N 1024 L 500: 516096 rows; 4096, 16384, 65536, 262144 (348160), then
     * 167936: 5 chunks */
    pr = problem(1024, 500, FH_ROLLOUT_AUTO);
    if (make_ok(&H200, &pr, &ov, &p))
        CHECK(p.pipeline == 1 && p.n_chunks == 5);
    /* critic_pipeline 0 at N 16384: off although the plan would pipeline */
    fh_gpu_overrides_default(&ov);
    ov.critic_pipeline = 0;
    pr = problem(16384, 500, FH_ROLLOUT_AUTO);
    if (make_ok(&H200, &pr, &ov, &p))
        CHECK(p.pipeline == 0 && p.n_chunks == 0 && p.critic_factor == 1);
    /* critic_factor 0 at N 16384: no factor, so no automatic pipeline */
    fh_gpu_overrides_default(&ov);
    ov.critic_factor = 0;
    if (make_ok(&H200, &pr, &ov, &p))
        CHECK(p.critic_factor == 0 && p.l0_slices == 1 && p.pipeline == 0);
    /* critic_factor 1 in TF32: forced on, slices as in fp32 */
    ov.critic_factor = 1;
    pr.precision = 1;
    if (make_ok(&H200, &pr, &ov, &p))
        CHECK(p.critic_factor == 1 && p.l0_slices == 4 && p.pipeline == 1 && p.n_chunks == 5);

    /* a forced pipeline with more than 64 chunks: 50 MB free, fit 50e6/4/4096 = 3051 ->
     * 0 multiples of 4096 -> the 4096 floor; 516096 rows / 4096 = 126 chunks > 64 */
    fh_plan_device small = H200;
    small.free_bytes = 50000000ull;
    fh_gpu_overrides_default(&ov);
    ov.critic_pipeline = 1;
    pr = problem(1024, 500, FH_ROLLOUT_AUTO);
    fh_status st = fh_fast_plan_make(&small, &pr, &ov, &p, &err);
    CHECK(st == FH_ERR_INPUT);
    CHECK_MSG(strstr(err.message, "FOXHUNT_CRITIC_PIPELINE") != NULL, "message: %s", err.message);
    CHECK_MSG(strstr(err.message, "126") != NULL, "message: %s", err.message);
    /* automatic there: no error, no pipeline, chunks of 4096 */
    if (make_ok(&small, &pr, NULL, &p))
        CHECK(p.chunk_rows == 4096 && p.pipeline == 0);

    /* 1 GB free at N 16384: fit 1e9/4/4096 = 61035 -> 14 * 4096 = 57344 rows a chunk;
     * h0 16911433728 B > 1e9/4: no pipeline */
    small.free_bytes = 1000000000ull;
    pr = problem(16384, 500, FH_ROLLOUT_AUTO);
    if (make_ok(&small, &pr, NULL, &p)) {
        CHECK(p.chunk_rows == 57344);
        CHECK(p.critic_factor == 1);
        CHECK(p.pipeline == 0 && p.n_chunks == 0);
    }

    /* the diagnostics and gemm_tune: options in order, -lineinfo first */
    fh_gpu_overrides_default(&ov);
    ov.rollout_clocks = 1;
    ov.block_shared_barriers = 1;
    ov.gemm_tune = 0;
    if (make_ok(&D99, &pr, &ov, &p)) {
        CHECK(p.rollout_clocks == 1 && p.block_shared_barriers == 1 && p.gemm_tune == 0);
        CHECK(p.n_options == 5);
        CHECK(strcmp(p.options[0], "-lineinfo") == 0);
        CHECK(strcmp(p.options[1], "-DFH_ROLLOUT_CLOCKS=1") == 0);
        CHECK(strcmp(p.options[2], "-DFH_BLOCK_SHARED_BARRIERS=1") == 0);
        CHECK(strcmp(p.options[3], "-DFH_WARP_EPISODES=2") == 0);
        CHECK(strcmp(p.options[4], "-DFH_ACTOR_TABLE=1") == 0);
    }
}

static void test_invalid_problems(void)
{
    fh_fast_plan p;
    fh_error err = {0};
    fh_plan_problem pr = problem(0, 500, FH_ROLLOUT_AUTO);
    CHECK(fh_fast_plan_make(&H200, &pr, NULL, &p, &err) == FH_ERR_INPUT);
    CHECK(err.message[0] != '\0');
    pr = problem(128, 500, FH_ROLLOUT_AUTO);
    pr.n_bars = 1;
    CHECK(fh_fast_plan_make(&H200, &pr, NULL, &p, &err) == FH_ERR_INPUT);
    pr = problem(128, 0, FH_ROLLOUT_AUTO);
    CHECK(fh_fast_plan_make(&H200, &pr, NULL, &p, &err) == FH_ERR_INPUT);
    pr = problem(128, 500, FH_ROLLOUT_AUTO);
    pr.horizon = 0;
    CHECK(fh_fast_plan_make(&H200, &pr, NULL, &p, &err) == FH_ERR_INPUT);
    pr = problem(-5, 500, FH_ROLLOUT_AUTO);
    CHECK(fh_fast_plan_make(&H200, &pr, NULL, &p, &err) == FH_ERR_INPUT);
    fh_plan_device none = H200;
    none.sm_count = 0;
    pr = problem(128, 500, FH_ROLLOUT_AUTO);
    CHECK(fh_fast_plan_make(&none, &pr, NULL, &p, &err) == FH_ERR_INPUT);
}

/* ---- overrides.c ---- */

static void test_overrides(void)
{
    fh_gpu_overrides o;
    fh_error err = {0};
    char buf[256];
    fh_gpu_overrides_default(&o);
    CHECK(o.actor_table == FH_AUTO && o.critic_factor == FH_AUTO &&
          o.critic_pipeline == FH_AUTO && o.pipeline_first_rows == FH_AUTO &&
          o.warp_book == FH_AUTO && o.warp_episodes == FH_AUTO);
    CHECK(o.gemm_tune == 1 && o.rollout_clocks == 0 && o.block_shared_barriers == 0);
    fh_gpu_overrides_describe(&o, buf, sizeof buf);
    CHECK_MSG(strcmp(buf, "none") == 0, "describe: %s", buf);

    /* by table name and by environment name */
    CHECK(fh_gpu_overrides_parse(&o, "warp_book=0", &err) == FH_OK);
    CHECK(o.warp_book == 0);
    CHECK(fh_gpu_overrides_parse(&o, "FOXHUNT_WARP_EPISODES=2", &err) == FH_OK);
    CHECK(o.warp_episodes == 2);
    CHECK(fh_gpu_overrides_set(&o, "FOXHUNT_CRITIC_PIPELINE_FIRST", "4096", &err) == FH_OK);
    CHECK(o.pipeline_first_rows == 4096);
    CHECK(fh_gpu_overrides_set(&o, "FOXHUNT_ACTOR_FACTOR", "1", &err) == FH_OK);
    CHECK(o.actor_table == 1);
    fh_gpu_overrides_describe(&o, buf, sizeof buf);
    CHECK_MSG(strcmp(buf, "actor_table=1 pipeline_first_rows=4096 warp_book=0 warp_episodes=2") ==
                  0, "describe: %s", buf);
    /* "auto" restores the default: FH_AUTO, or gemm_tune's 1 */
    CHECK(fh_gpu_overrides_parse(&o, "warp_book=auto", &err) == FH_OK);
    CHECK(o.warp_book == FH_AUTO);
    CHECK(fh_gpu_overrides_parse(&o, "gemm_tune=0", &err) == FH_OK);
    CHECK(o.gemm_tune == 0);
    fh_gpu_overrides_describe(&o, buf, sizeof buf);
    CHECK_MSG(strcmp(buf, "actor_table=1 pipeline_first_rows=4096 warp_episodes=2 gemm_tune=0") ==
                  0, "describe: %s", buf);
    CHECK(fh_gpu_overrides_parse(&o, "gemm_tune=auto", &err) == FH_OK);
    CHECK(o.gemm_tune == 1);
    /* a default value set explicitly is not listed */
    CHECK(fh_gpu_overrides_parse(&o, "rollout_clocks=0", &err) == FH_OK);
    fh_gpu_overrides_describe(&o, buf, sizeof buf);
    CHECK_MSG(strstr(buf, "rollout_clocks") == NULL && strstr(buf, "gemm_tune") == NULL,
              "describe: %s", buf);

    /* errors: FH_ERR_INPUT, the value left as it was */
    fh_gpu_overrides_default(&o);
    CHECK(fh_gpu_overrides_parse(&o, "warp_bok=1", &err) == FH_ERR_INPUT);
    CHECK_MSG(strstr(err.message, "warp_bok") != NULL, "message: %s", err.message);
    CHECK(fh_gpu_overrides_parse(&o, "warp_episodes=3", &err) == FH_ERR_INPUT);
    CHECK_MSG(strstr(err.message, "FOXHUNT_WARP_EPISODES=3") != NULL &&
                  strstr(err.message, "1 to 2") != NULL, "message: %s", err.message);
    CHECK(o.warp_episodes == FH_AUTO);
    CHECK(fh_gpu_overrides_parse(&o, "warp_episodes=0", &err) == FH_ERR_INPUT);
    CHECK(fh_gpu_overrides_parse(&o, "pipeline_first_rows=4095", &err) == FH_ERR_INPUT);
    CHECK(fh_gpu_overrides_parse(&o, "pipeline_first_rows=16777217", &err) == FH_ERR_INPUT);
    CHECK(fh_gpu_overrides_parse(&o, "pipeline_first_rows=16777216", &err) == FH_OK);
    CHECK(fh_gpu_overrides_parse(&o, "warp_book=1x", &err) == FH_ERR_INPUT);
    CHECK(fh_gpu_overrides_parse(&o, "warp_book=abc", &err) == FH_ERR_INPUT);
    CHECK(fh_gpu_overrides_parse(&o, "warp_book=", &err) == FH_ERR_INPUT);
    CHECK(fh_gpu_overrides_parse(&o, "warp_book=1.0", &err) == FH_ERR_INPUT);
    CHECK(fh_gpu_overrides_parse(&o, "warp_book=99999999999999999999", &err) == FH_ERR_INPUT);
    CHECK(o.warp_book == FH_AUTO);
    CHECK(fh_gpu_overrides_parse(&o, "warp_book", &err) == FH_ERR_INPUT);
    CHECK_MSG(strstr(err.message, "name=value") != NULL, "message: %s", err.message);
    CHECK(fh_gpu_overrides_parse(&o, "=1", &err) == FH_ERR_INPUT);
    CHECK(fh_gpu_overrides_parse(&o, "", &err) == FH_ERR_INPUT);
    char long_name[100];
    memset(long_name, 'x', 80);
    strcpy(long_name + 80, "=1");
    CHECK(fh_gpu_overrides_parse(&o, long_name, &err) == FH_ERR_INPUT);
    fh_gpu_overrides_default(&o);
    /* update_pdl takes only 0 (plain launches) or auto */
    CHECK(o.update_pdl == FH_AUTO);
    CHECK(fh_gpu_overrides_parse(&o, "FOXHUNT_UPDATE_PDL=1", &err) == FH_ERR_INPUT);
    CHECK_MSG(strstr(err.message, "0 to 0") != NULL, "message: %s", err.message);
    CHECK(fh_gpu_overrides_parse(&o, "update_pdl=0", &err) == FH_OK && o.update_pdl == 0);
    fh_gpu_overrides_describe(&o, buf, sizeof buf);
    CHECK_MSG(strcmp(buf, "update_pdl=0") == 0, "describe: %s", buf);
    /* the product's path (NULL) reads the environment; a caller's values are copied */
    fh_gpu_overrides got;
    CHECK(fh_gpu_overrides_or_env(&o, &got, &err) == FH_OK && got.update_pdl == 0);

    /* the environment: set and non-empty variables only */
    setenv("FOXHUNT_WARP_BOOK", "0", 1);
    setenv("FOXHUNT_ROLLOUT_CLOCKS", "", 1);
    CHECK(fh_gpu_overrides_from_env(&o, &err) == FH_OK);
    CHECK(o.warp_book == 0 && o.rollout_clocks == 0);
    setenv("FOXHUNT_WARP_EPISODES", "7", 1);
    CHECK(fh_gpu_overrides_from_env(&o, &err) == FH_ERR_INPUT);
    unsetenv("FOXHUNT_WARP_BOOK");
    unsetenv("FOXHUNT_ROLLOUT_CLOCKS");
    unsetenv("FOXHUNT_WARP_EPISODES");
}

/* ---- the print-out ---- */

static void test_print(void)
{
    fh_plan_problem pr = problem(16384, 500, FH_ROLLOUT_AUTO);
    fh_fast_plan p;
    if (!make_ok(&H200, &pr, NULL, &p))
        return;
    FILE *f = tmpfile();
    CHECK(f != NULL);
    if (!f)
        return;
    fh_fast_plan_print(f, &p);
    long n = ftell(f);
    rewind(f);
    char buf[4096] = {0};
    size_t got = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    CHECK(n > 0 && (size_t)n == got);
    CHECK_MSG(strstr(buf, "ppo_rollout_lane_kernel") != NULL, "print-out:\n%s", buf);
    CHECK_MSG(strstr(buf, "lane") != NULL && strstr(buf, "H200") != NULL, "print-out:\n%s", buf);
    CHECK_MSG(strstr(buf, "8257536") != NULL, "print-out:\n%s", buf);
    CHECK_MSG(strstr(buf, "5 chunks") != NULL, "print-out:\n%s", buf);
    CHECK_MSG(strstr(buf, "-DFH_ACTOR_TABLE=1") != NULL, "print-out:\n%s", buf);
    CHECK(strcmp(fh_rollout_mapping_name(FH_ROLLOUT_WARP), "warp") == 0);
    CHECK(strcmp(fh_rollout_mapping_name(FH_ROLLOUT_AUTO), "auto") == 0);
}

/* bf16 (session 23): the critic's first layer a matmul over a bf16 copy of the rows at
 * every size (the factored look-up writes fp32), so no automatic pipeline; forcing the
 * factor is refused, naming the override and the precision; a forced pipeline runs
 * without the factor; the print-out says what is copied. */
static void test_bf16(void)
{
    fh_plan_problem pr = problem(16384, 500, FH_ROLLOUT_AUTO);
    pr.precision = FH_PRECISION_BF16;
    fh_fast_plan p;
    int sizes[3] = {128, 4096, 16384};
    for (int i = 0; i < 3; i++) {
        pr.n_episodes = sizes[i];
        if (make_ok(&H200, &pr, NULL, &p))
            CHECK_MSG(p.critic_factor == 0 && p.l0_slices == 1 && p.pipeline == 0 &&
                          p.n_chunks == 0 && p.in_stride == 56,
                      "bf16 N %d: factor %d slices %d pipeline %d chunks %d stride %d",
                      sizes[i], p.critic_factor, p.l0_slices, p.pipeline, p.n_chunks,
                      p.in_stride);
    }
    fh_gpu_overrides ov;
    fh_gpu_overrides_default(&ov);
    ov.critic_factor = 1;
    fh_error err = {0};
    CHECK(fh_fast_plan_make(&H200, &pr, &ov, &p, &err) == FH_ERR_INPUT);
    CHECK_MSG(strstr(err.message, "FOXHUNT_CRITIC_FACTOR") && strstr(err.message, "bf16"),
              "message: %s", err.message);
    fh_gpu_overrides_default(&ov);
    ov.critic_pipeline = 1;
    if (make_ok(&H200, &pr, &ov, &p))
        CHECK(p.pipeline == 1 && p.critic_factor == 0 && p.n_chunks == 5);
    FILE *f = tmpfile();
    CHECK(f != NULL);
    if (!f || !make_ok(&H200, &pr, NULL, &p)) {
        if (f)
            fclose(f);
        return;
    }
    fh_fast_plan_print(f, &p);
    rewind(f);
    char buf[4096] = {0};
    CHECK(fread(buf, 1, sizeof buf - 1, f) > 0);
    fclose(f);
    CHECK_MSG(strstr(buf, "matmuls:   bf16 (the critic's weights and input rows copied to bf16"),
              "print-out:\n%s", buf);
    CHECK_MSG(strstr(buf, "first layer a matmul"), "print-out:\n%s", buf);
}

/* ---- the DQN/PQN collection's plan (fh_dqn_plan_make) ----
 * threads a block: ceil(ceil(N / SMs) / 32) * 32, clamped to [32, 128]; grid ceil(N / it):
 *   H200 (132 SMs), N 4096: 4096/132 = 31.03 -> 32 a SM -> 32 threads, 128 blocks
 *   N 20000: 151.5 -> 152 -> 160 -> clamped 128 threads, ceil(20000/128) = 157 blocks
 *   N 5: 1 -> 32 threads, 1 block; N 4225 = 132*32 + 1: 33 -> 64 threads, 67 blocks */
static void check_dqn_plan(int n, int reference, fh_dqn_mapping m, int threads, int grid)
{
    fh_dqn_plan p;
    fh_error err = {0};
    CHECK_MSG(fh_dqn_plan_make(&H200, n, 128, reference, &p, &err) == FH_OK, "N %d: %s", n,
              err.message);
    CHECK_MSG(p.mapping == m, "N %d reference %d: mapping %s", n, reference,
              fh_dqn_mapping_name(p.mapping));
    CHECK_MSG(p.threads_per_block == threads && p.grid == grid,
              "N %d: %d blocks x %d threads, expected %d x %d", n, p.grid, p.threads_per_block,
              grid, threads);
}

static void test_dqn_plan(void)
{
    check_dqn_plan(4096, 0, FH_DQN_STEPPED, 32, 128);
    check_dqn_plan(4096, 1, FH_DQN_PLAIN, 32, 128);
    check_dqn_plan(20000, 0, FH_DQN_STEPPED, 128, 157);
    check_dqn_plan(5, 1, FH_DQN_PLAIN, 32, 1);
    check_dqn_plan(4225, 0, FH_DQN_STEPPED, 64, 67);
    fh_dqn_plan p;
    fh_error err = {0};
    CHECK(fh_dqn_plan_make(&H200, 0, 128, 0, &p, &err) == FH_ERR_INPUT);
    CHECK(fh_dqn_plan_make(&H200, 64, 0, 0, &p, &err) == FH_ERR_INPUT);
    fh_plan_device none = {"none", 0, 0, 0};
    CHECK(fh_dqn_plan_make(&none, 64, 8, 0, &p, &err) == FH_ERR_INPUT);
    /* every N covered by the launch, blocks whole warps within bounds */
    uint64_t s = 99;
    for (int i = 0; i < 500; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        int n = 1 + (int)((s >> 33) % 200000);
        fh_plan_device d = {"random", 1 + (int)((s >> 20) % 200), 0, 0};
        CHECK(fh_dqn_plan_make(&d, n, 1 + (int)(s % 1000), (int)(s >> 63), &p, &err) == FH_OK);
        CHECK_MSG((long long)p.grid * p.threads_per_block >= n &&
                      (long long)(p.grid - 1) * p.threads_per_block < n &&
                      p.threads_per_block % 32 == 0 && p.threads_per_block >= 32 &&
                      p.threads_per_block <= 128,
                  "N %d on %d SMs: %d x %d", n, d.sm_count, p.grid, p.threads_per_block);
    }
    /* the print-out names the mapping */
    char buf[1024];
    FILE *f = fmemopen(buf, sizeof buf, "w");
    CHECK(f != NULL);
    if (f) {
        CHECK(fh_dqn_plan_make(&H200, 4096, 128, 0, &p, &err) == FH_OK);
        fh_dqn_plan_print(f, &p);
        fclose(f);
        CHECK_MSG(strstr(buf, "stepped mapping") && strstr(buf, "128 blocks x 32 threads"),
                  "print-out:\n%s", buf);
    }
}

int main(void)
{
    test_dqn_plan();
    test_h200_n128();
    test_h200_n1024();
    test_h200_n16384();
    test_noisy_obs();
    test_99kb();
    test_forced_mappings();
    test_tables_and_edges();
    test_plan_overrides();
    test_invalid_problems();
    test_overrides();
    test_print();
    test_bf16();
    return fh_test_finish();
}
