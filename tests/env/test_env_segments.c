/* test_env_segments.c — a market of several assets' training splits laid end to end
 * (issue 34): the start sampler and the truncation keep every episode inside one
 * segment. Checked over 200,000 draws on three segments (one shorter than the horizon)
 * against the valid starts counted by hand: every start valid and its segment_end
 * right, every valid start of every segment reachable, each segment drawn in proportion
 * to its valid starts within 5 binomial standard errors; random-action episodes never
 * step past their segment's last bar and truncate there or at the horizon; and a
 * one-segment market draws exactly the pre-segment formula (uniform in
 * [0, n_bars - 1 - horizon]) with segment_end 0. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "env/common_device_functions.cuh"
#include "foxhunt/env.h"
#include "test_util.h"

#define N_BARS 700
#define HORIZON 64
#define N_DRAWS 200000

static float close_[N_BARS], sigma_[N_BARS], features_[N_BARS * FH_N_MARKET_FEATURES];
/* segments [0, 300), [300, 340) (shorter than the horizon), [340, 700) */
static const int ends_[3] = {300, 340, 700};
/* valid starts by hand: 300 - 1 - 64 + 1 = 236 (0..235); the short one 40 - 1 = 39
 * (300..338, the segment's end truncates); 360 - 64 = 296 (340..635) */
static const int first_[3] = {0, 300, 340}, count_[3] = {236, 39, 296};

static void build(fh_env_market *m, fh_env_config *cfg)
{
    fh_rng rng;
    rng_seed(&rng, 99u, 1u);
    double price = 100.0;
    for (int i = 0; i < N_BARS; i++) {
        price *= exp(0.01 * (2.0 * (double)gpu_random(&rng) - 1.0));
        close_[i] = (float)price;
        sigma_[i] = 0.01f;
    }
    for (int k = 0; k < N_BARS * FH_N_MARKET_FEATURES; k++)
        features_[k] = gpu_random(&rng) - 0.5f;
    fh_env_market mm = {features_, close_, sigma_, N_BARS, 3, ends_};
    *m = mm;
    *cfg = fh_env_config_default();
    cfg->horizon = HORIZON;
}

static void test_starts(const fh_env_market *m, const fh_env_config *cfg)
{
    static int hits[N_BARS];
    memset(hits, 0, sizeof hits);
    int per_segment[3] = {0, 0, 0}, bad = 0;
    fh_episode_state ep;
    env_episode_init(cfg, m, &ep, 5u, 0u);
    for (int d = 0; d < N_DRAWS; d++) {
        env_episode_reset(cfg, m, &ep);
        int s = ep.start_bar, k = -1;
        for (int j = 0; j < 3; j++)
            if (s >= first_[j] && s < first_[j] + count_[j])
                k = j;
        if (k < 0 || ep.segment_end != ends_[k] || ep.bar != s) {
            if (bad++ == 0)
                fprintf(stderr, "draw %d: start %d (segment_end %d) is not a valid start\n", d,
                        s, ep.segment_end);
            continue;
        }
        hits[s]++;
        per_segment[k]++;
    }
    CHECK_MSG(bad == 0, "%d of %d draws started outside the valid starts", bad, N_DRAWS);
    int unreached = 0;
    for (int j = 0; j < 3; j++)
        for (int s = first_[j]; s < first_[j] + count_[j]; s++)
            unreached += hits[s] == 0;
    CHECK_MSG(unreached == 0, "%d valid starts never drawn in %d draws (expected ~%d each)",
              unreached, N_DRAWS, N_DRAWS / 571);
    const double total = 236.0 + 39.0 + 296.0;
    for (int j = 0; j < 3; j++) {
        double p = count_[j] / total, want = p * N_DRAWS;
        double se = sqrt(N_DRAWS * p * (1.0 - p));
        CHECK_MSG(fabs(per_segment[j] - want) <= 5.0 * se,
                  "segment %d drawn %d times, expected %.0f +- %.0f (5 se)", j,
                  per_segment[j], want, 5.0 * se);
    }
}

static void test_episodes_stay_inside(const fh_env_market *m, const fh_env_config *cfg)
{
    fh_episode_state ep;
    env_episode_init(cfg, m, &ep, 17u, 3u);
    fh_rng actions;
    rng_seed(&actions, 4u, 4u);
    int crossed = 0, bad_trunc = 0, invalid = 0, ends_at_segment = 0, done = 0;
    char why[256];
    for (int t = 0; t < 100000; t++) {
        int seg_end = ep.segment_end;
        fh_step_result r;
        env_step(cfg, m, &ep, rng_uniform_int(&actions, FH_N_ACTIONS), &r);
        crossed += ep.bar > seg_end - 1;
        if (r.done) {
            int at_end = ep.bar == seg_end - 1, at_horizon = ep.step == cfg->horizon;
            bad_trunc += r.truncated && !at_end && !at_horizon;
            ends_at_segment += r.truncated && at_end && !at_horizon;
            done++;
            env_episode_reset(cfg, m, &ep);
        } else {
            bad_trunc += ep.bar >= seg_end - 1; /* should have truncated */
        }
        if (!fh_episode_state_validate(cfg, m, &ep, why, sizeof why) && invalid++ == 0)
            fprintf(stderr, "step %d: %s\n", t, why);
    }
    CHECK_MSG(crossed == 0, "%d steps went past their segment's last bar", crossed);
    CHECK_MSG(bad_trunc == 0, "%d steps truncated (or failed to) away from the segment end "
              "and the horizon", bad_trunc);
    CHECK_MSG(invalid == 0, "%d states failed fh_episode_state_validate", invalid);
    CHECK_MSG(done > 1000 && ends_at_segment > 0,
              "%d episodes, %d truncated by a segment's end: the test exercised too little",
              done, ends_at_segment);
}

static void test_one_segment_unchanged(const fh_env_config *cfg)
{
    fh_env_market one = {features_, close_, sigma_, N_BARS, 1, NULL};
    fh_rng a, b;
    rng_seed(&a, 8u, 2u);
    b = a;
    int differ = 0;
    for (int d = 0; d < 10000; d++) {
        int got = env_sample_start_bar(cfg, &one, &a);
        /* the pre-segment formula, by hand: uniform in [0, n_bars - 1 - horizon] */
        int want = (int)(((unsigned long long)pcg32(&b) * (unsigned long long)(N_BARS - HORIZON))
                         >> 32);
        differ += got != want;
    }
    CHECK_MSG(differ == 0, "%d of 10000 one-segment draws differ from the old formula",
              differ);
    fh_episode_state ep;
    env_episode_init(cfg, &one, &ep, 1u, 0u);
    CHECK_MSG(ep.segment_end == 0, "one segment: segment_end %d, expected 0", ep.segment_end);
}

int main(void)
{
    fh_env_market m;
    fh_env_config cfg;
    build(&m, &cfg);
    fh_error err;
    CHECK(fh_env_market_validate(&m, &err) == FH_OK);
    fh_env_market broken = m;
    static const int bad_ends[3] = {300, 301, 700}; /* a one-bar segment */
    broken.segment_ends = bad_ends;
    CHECK(fh_env_market_validate(&broken, &err) == FH_ERR_INPUT &&
          strstr(err.message, "segment 1") != NULL);
    test_starts(&m, &cfg);
    test_episodes_stay_inside(&m, &cfg);
    test_one_segment_unchanged(&cfg);
    return fh_test_finish();
}
