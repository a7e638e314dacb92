/* test_fast_plan_random.c — the fast path's plan (fh_fast_plan_make) over random
 * problems, devices and overrides, on the CPU: the properties every plan must have
 * (split from test_fast_plan.c; the fixture both share: fast_plan_fixture.h). */
#include "cuda/fast_plan_fixture.h"

/* ---- properties over random problems ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t xorshift(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

/* uniform in [lo, hi] */
static long long uniform(long long lo, long long hi)
{
    return lo + (long long)(xorshift() % (uint64_t)(hi - lo + 1));
}

static int random_override(int lo, int hi)
{
    return xorshift() % 3 == 0 ? FH_AUTO : (int)uniform(lo, hi);
}

static int lane_fits_optin(size_t optin)
{
    return LANE_SMEM <= optin;
}

static void test_random_properties(void)
{
    static const size_t optins[] = {101376, 167936, 232448};
    int made = 0, failed_lane = 0, failed_pipeline = 0, failed_bf16 = 0, pipelined = 0;
    int mappings[4] = {0};
    for (int trial = 0; trial < 3000; trial++) {
        fh_plan_device d = {"random", (int)uniform(8, 200), optins[uniform(0, 2)],
                            (size_t)uniform(1000000000ll, 140000000000ll)};
        fh_plan_problem pr = {(int)uniform(1, 70000), (int)uniform(1, 2000),
                              (int)uniform(2, 1000000), (int)uniform(1, 1000),
                              (int)uniform(0, 2), (fh_rollout_mapping)uniform(0, 3), 0};
        fh_gpu_overrides ov;
        fh_gpu_overrides_default(&ov);
        ov.actor_table = random_override(0, 1);
        ov.critic_factor = random_override(0, 1);
        ov.critic_pipeline = random_override(0, 1);
        ov.pipeline_first_rows = random_override(4096, 1 << 24);
        ov.warp_book = random_override(0, 1);
        ov.warp_episodes = random_override(1, 2);
        ov.gemm_tune = (int)uniform(0, 1);
        ov.rollout_clocks = (int)uniform(0, 1);
        ov.block_shared_barriers = (int)uniform(0, 1);

        int N = pr.n_episodes, L = pr.n_steps;
        long long NL = (long long)N * L;
        /* the critic's rows and chunks, computed here to predict the failures */
        int K = pr.n_bars - 1 - pr.horizon >= 0 ? L / pr.horizon + 2 : L;
        if (K > L)
            K = L;
        long long rows = NL + (long long)N * K + N;
        long long want_chunk = rows < (1ll << 22) ? rows : (1ll << 22);
        long long fit = (long long)(d.free_bytes / 4 / 4096) / 4096 * 4096; /* 4096 B a row */
        if (want_chunk > fit)
            want_chunk = fit > 4096 ? fit : 4096;
        long long first = ov.pipeline_first_rows == FH_AUTO ? (1 << 17) : ov.pipeline_first_rows;
        int sched = fh_critic_chunk_schedule(rows, first, want_chunk, 4, NULL);
        int lane_fits = lane_fits_optin(d.shared_mem_per_block_optin);
        int expect_lane_fail = pr.mapping == FH_ROLLOUT_LANE && !lane_fits;
        /* bf16 (precision 2) refuses the forced factor, before the pipeline's check */
        int expect_bf16_fail = !expect_lane_fail && pr.precision == 2 && ov.critic_factor == 1;
        int expect_pipe_fail = !expect_lane_fail && !expect_bf16_fail &&
                               ov.critic_pipeline == 1 && sched > 64;

        fh_fast_plan p;
        fh_error err = {0};
        fh_status st = fh_fast_plan_make(&d, &pr, &ov, &p, &err);
        if (expect_lane_fail) {
            failed_lane++;
            CHECK_MSG(st == FH_ERR_FAILURE, "trial %d: forced lane on %zu B: status %d", trial,
                      d.shared_mem_per_block_optin, (int)st);
            continue;
        }
        if (expect_bf16_fail) {
            failed_bf16++;
            CHECK_MSG(st == FH_ERR_INPUT && strstr(err.message, "FOXHUNT_CRITIC_FACTOR") &&
                          strstr(err.message, "bf16"),
                      "trial %d: bf16 with the factor forced: status %d", trial, (int)st);
            continue;
        }
        if (expect_pipe_fail) {
            failed_pipeline++;
            CHECK_MSG(st == FH_ERR_INPUT && strstr(err.message, "FOXHUNT_CRITIC_PIPELINE"),
                      "trial %d: forced pipeline, %d chunks: status %d", trial, sched, (int)st);
            continue;
        }
        CHECK_MSG(st == FH_OK, "trial %d: N %d L %d bars %d horizon %d: status %d: %s", trial, N,
                  L, pr.n_bars, pr.horizon, (int)st, err.message);
        if (st != FH_OK)
            continue;
        made++;
        mappings[p.mapping]++;

        int ok = 1;
#define PROP(cond)                                                                       \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            ok = 0;                                                                      \
            fprintf(stderr, "trial %d (N %d L %d bars %d horizon %d, %d SMs, %zu B, "    \
                    "%zu free, tf32 %d, mapping %d): %s\n", trial, N, L, pr.n_bars,      \
                    pr.horizon, d.sm_count, d.shared_mem_per_block_optin, d.free_bytes,  \
                    pr.precision, (int)pr.mapping, #cond);                                    \
        }                                                                                \
    } while (0)
        /* rollout */
        PROP(p.rollout_smem <= d.shared_mem_per_block_optin);
        PROP((long long)p.grid * p.episodes_per_block >= N);
        PROP((long long)(p.grid - 1) * p.episodes_per_block < N);
        PROP(p.threads_per_block >= 32 && p.threads_per_block <= 1024 &&
             p.threads_per_block % 32 == 0);
        PROP(p.mapping != FH_ROLLOUT_AUTO);
        if (pr.mapping != FH_ROLLOUT_AUTO)
            PROP(p.mapping == pr.mapping);
        else if (N <= 2 * d.sm_count)
            PROP(p.mapping == FH_ROLLOUT_BLOCK);
        else
            PROP(p.mapping == (N >= 72 * d.sm_count && lane_fits ? FH_ROLLOUT_LANE
                                                                  : FH_ROLLOUT_WARP));
        if (!lane_fits)
            PROP(p.mapping != FH_ROLLOUT_LANE);
        if (p.mapping == FH_ROLLOUT_LANE)
            PROP(strcmp(p.kernel, "ppo_rollout_lane_kernel") == 0 && !p.pair &&
                 p.warp_episodes == 1);
        if (p.mapping == FH_ROLLOUT_BLOCK)
            PROP(strcmp(p.kernel, "ppo_rollout_block_kernel") == 0 && !p.pair &&
                 p.warp_episodes == 1);
        if (p.mapping == FH_ROLLOUT_WARP) {
            PROP(strcmp(p.kernel, p.pair ? "ppo_rollout_pair_kernel"
                                         : "ppo_rollout_fast_kernel") == 0);
            PROP(p.pair == (ov.warp_book == FH_AUTO ? N <= 8 * d.sm_count : ov.warp_book));
            PROP(p.warp_episodes ==
                 (ov.warp_episodes == FH_AUTO ? (p.pair ? 1 : 2) : ov.warp_episodes));
            /* episodes a block: whole warps' worth; threads: 32 (or 64 with the book warp)
             * per unit of warp_episodes episodes */
            PROP(p.episodes_per_block % p.warp_episodes == 0);
            PROP(p.threads_per_block ==
                 p.episodes_per_block / p.warp_episodes * (p.pair ? 64 : 32));
        }
        /* actor table */
        PROP(p.actor_table_split == (p.mapping != FH_ROLLOUT_LANE));
        PROP(p.actor_table_bytes ==
             (size_t)pr.n_bars * 4 * (p.actor_table_split ? 256 : 128));
        if (ov.actor_table == FH_AUTO)
            PROP(p.actor_table ==
                 (p.actor_table_bytes <= 256 * MIB && (long long)pr.n_bars <= NL));
        else
            PROP(p.actor_table == ov.actor_table);
        /* critic */
        PROP(p.k_slots >= 1 && p.k_slots <= L);
        PROP(p.k_slots == K);
        PROP(p.critic_rows == NL + (long long)N * p.k_slots + N);
        PROP(p.chunk_rows >= (p.critic_rows < 4096 ? p.critic_rows : 4096));
        PROP(p.chunk_rows <= p.critic_rows);
        PROP(p.chunk_rows <= (1ll << 22));
        /* the chunk: min(rows, 2^22) when its two activation buffers (4096 B a row) fit
         * in a quarter of the free memory; else the largest multiple of 4096 rows that
         * does, and 4096 at least */
        PROP(p.chunk_rows == want_chunk);
        PROP((unsigned long long)p.chunk_rows * 4096 <= d.free_bytes / 4 ||
             p.chunk_rows == 4096);
        if (p.chunk_rows < (p.critic_rows < (1ll << 22) ? p.critic_rows : (1ll << 22)))
            PROP(p.chunk_rows % 4096 == 0 &&
                 (unsigned long long)(p.chunk_rows + 4096) * 4096 > d.free_bytes / 4);
        if (ov.critic_factor == FH_AUTO)
            PROP(p.critic_factor == (!pr.precision && pr.n_bars <= 0.5 * (double)p.critic_rows &&
                                     (unsigned long long)pr.n_bars * 2048 <= (1ull << 30)));
        else
            PROP(p.critic_factor == ov.critic_factor);
        PROP(p.l0_slices == 1 || p.l0_slices == 2 || p.l0_slices == 4);
        if (!p.critic_factor)
            PROP(p.l0_slices == 1);
        else /* slices of at most 16 MiB, or 4 */
            PROP((unsigned long long)pr.n_bars * 2048 / p.l0_slices <= 16 * MIB ||
                 p.l0_slices == 4);
        PROP(p.pipeline_first_rows == first);
        if (p.pipeline) {
            pipelined++;
            PROP(p.n_chunks >= 1 && p.n_chunks <= 64);
            PROP(p.n_chunks == sched);
        } else {
            PROP(p.n_chunks == 0);
        }
        if (ov.critic_pipeline == FH_AUTO) {
            if (p.pipeline)
                PROP(p.critic_factor && p.critic_rows >= (1ll << 22) &&
                     (unsigned long long)p.critic_rows * 2048 <= d.free_bytes / 4);
            PROP(p.pipeline ==
                 (p.critic_factor && p.critic_rows >= (1ll << 22) &&
                  (unsigned long long)p.critic_rows * 2048 <= d.free_bytes / 4 && sched <= 64));
        } else {
            PROP(p.pipeline == ov.critic_pipeline);
        }
        /* options */
        PROP(p.n_options >= 1 && p.n_options <= FH_PLAN_MAX_OPTIONS);
        PROP(strcmp(p.options[0], "-lineinfo") == 0);
        PROP(has_option(&p, "-DFH_ACTOR_TABLE=1") == (p.actor_table != 0));
        PROP(has_option(&p, "-DFH_WARP_EPISODES=2") ==
             (p.mapping == FH_ROLLOUT_WARP && p.warp_episodes == 2));
        PROP(has_option(&p, "-DFH_ROLLOUT_CLOCKS=1") == ov.rollout_clocks);
        PROP(has_option(&p, "-DFH_BLOCK_SHARED_BARRIERS=1") == ov.block_shared_barriers);
        PROP(p.gemm_tune == ov.gemm_tune);
        /* curiosity and GAE */
        PROP(p.curiosity_grid >= 1 && p.curiosity_grid <= 2 * d.sm_count);
        PROP((long long)p.curiosity_grid * 128 >= NL || p.curiosity_grid == 2 * d.sm_count);
        PROP(p.gae_smem <= 48u * 1024);
        PROP(p.gae_warps >= 1 && p.gae_warps <= 4);
        PROP((long long)p.gae_grid * p.gae_warps >= N &&
             (long long)(p.gae_grid - 1) * p.gae_warps < N);
        PROP(p.gae_smem == (p.gae_staged ? (size_t)p.gae_warps * 5 * L * 4 : 0));
#undef PROP
        CHECK_MSG(ok, "trial %d: a property failed (above)", trial);
    }
    printf("random: %d plans (warp %d, block %d, lane %d; %d pipelined), %d forced-lane, "
           "%d forced-pipeline and %d bf16 forced-factor failures\n", made,
           mappings[FH_ROLLOUT_WARP], mappings[FH_ROLLOUT_BLOCK], mappings[FH_ROLLOUT_LANE],
           pipelined, failed_lane, failed_pipeline, failed_bf16);
    /* the draws reach every branch */
    CHECK_MSG(made > 1500, "%d plans made", made);
    CHECK_MSG(failed_lane > 0 && failed_pipeline > 0 && failed_bf16 > 0 && pipelined > 0,
              "lane failures %d, pipeline failures %d, bf16 failures %d, pipelined %d",
              failed_lane, failed_pipeline, failed_bf16, pipelined);
    CHECK_MSG(mappings[FH_ROLLOUT_WARP] > 0 && mappings[FH_ROLLOUT_BLOCK] > 0 &&
                  mappings[FH_ROLLOUT_LANE] > 0, "warp %d, block %d, lane %d",
              mappings[FH_ROLLOUT_WARP], mappings[FH_ROLLOUT_BLOCK], mappings[FH_ROLLOUT_LANE]);
}

int main(void)
{
    test_random_properties();
    return fh_test_finish();
}
