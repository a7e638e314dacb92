/* test_obs_noise.c — observation noise (obs_noise, issue 34 item 3): the noise function
 * and the CPU collection that adds it.
 *
 * 1. obs_noise_normal against a float64 reimplementation of its definition (splitmix64's
 *    finaliser over the key, two 24-bit uniforms, Box-Muller's cosine branch):
 *    |a - b| <= 1e-5 + 1e-5|b| (float logf/cosf/sqrtf against double).
 * 2. Its statistics over 2^20 draws (random keys): mean within 0.005 (~5 standard
 *    errors), standard deviation within 0.007 of 1 (~5 standard errors of sqrt(2/n)), the
 *    share of |z| > 1.96 within 0.002 of 0.05, the correlation of neighbouring features
 *    below 0.01; the same key gives the same bits, a key differing in any one field a
 *    different value.
 * 3. A CPU collection with obs_noise 0.5 against one with obs_noise 0, both with an
 *    actor blind to the market features (its first layer's market columns zeroed) and no
 *    curiosity bonus, so the trajectories are the same: over two consecutive collections
 *    actions, rewards, dones, bars, portfolio features and the episodes' random streams
 *    are bit-identical, and every stored market feature differs by obs_noise times the
 *    float64 reference's draw for (seed, the slot's stream, its episode, its step, the
 *    feature), the episode and step counted from the batch's dones
 *    (|d - ref| <= 2e-6 + 1e-5|ref|: the float sum's rounding).
 * 4. obs_noise 0: every stored market feature is its bar's, bit for bit; env_observe_train
 *    equals env_observe bit for bit on random episodes.
 * 5. The settings: obs_noise outside [0, 10] or non-finite is refused by the table,
 *    obs_noise > 0 with algo dqn or pqn by the validation. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env/common_device_functions.cuh"
#include "foxhunt/rollout.h"
#include "foxhunt/run_data.h"
#include "foxhunt/train_config.h"
#include "test_util.h"

#define N_EPISODES 12
#define N_STEPS 96
#define COLLECTIONS 2
#define SEED 7
#define NOISE 0.5f
#define N_DRAWS (1 << 20)

/* ---- the float64 reference of the noise's definition ---- */

static uint64_t ref_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static double ref_normal(uint64_t seed, uint64_t stream, int episode, int step, int feature)
{
    const uint64_t golden = 0x9E3779B97F4A7C15ULL;
    uint64_t h = ref_mix(seed + golden);
    h = ref_mix(h ^ (stream + golden));
    h = ref_mix(h ^ (((uint64_t)(uint32_t)episode << 32) | (uint32_t)step));
    h = ref_mix(h ^ ((uint64_t)(uint32_t)feature + golden));
    double u1 = (double)(((h >> 40) & 0xFFFFFF) + 1) / 16777216.0;
    double u2 = (double)((h >> 8) & 0xFFFFFF) / 16777216.0;
    return sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2);
}

static uint64_t next_u64(uint64_t *s)
{
    *s += 0x9E3779B97F4A7C15ULL;
    return ref_mix(*s);
}

static void test_reference_and_keys(void)
{
    uint64_t s = 42;
    int bad = 0;
    for (int i = 0; i < 100000; i++) {
        uint64_t seed = next_u64(&s), stream = next_u64(&s) | 1ULL;
        int episode = (int)(next_u64(&s) % 100000), step = (int)(next_u64(&s) % 100000);
        int j = (int)(next_u64(&s) % FH_N_MARKET_FEATURES);
        double got = obs_noise_normal(seed, stream, episode, step, j);
        double want = ref_normal(seed, stream, episode, step, j);
        if (!fh_close(got, want, 1e-5, 1e-5) && bad++ == 0)
            fprintf(stderr, "draw %d: obs_noise_normal %.9g, reference %.9g\n", i, got, want);
    }
    CHECK_MSG(bad == 0, "%d of 100000 draws differ from the float64 reference", bad);

    float z = obs_noise_normal(7, 3, 2, 5, 11);
    CHECK(obs_noise_normal(7, 3, 2, 5, 11) == z);
    CHECK(obs_noise_normal(8, 3, 2, 5, 11) != z);
    CHECK(obs_noise_normal(7, 5, 2, 5, 11) != z);
    CHECK(obs_noise_normal(7, 3, 3, 5, 11) != z);
    CHECK(obs_noise_normal(7, 3, 2, 6, 11) != z);
    CHECK(obs_noise_normal(7, 3, 2, 5, 12) != z);
    /* the episode and the step are not interchangeable */
    CHECK(obs_noise_normal(7, 3, 5, 2, 11) != z);
}

static void test_statistics(void)
{
    uint64_t s = 9;
    double sum = 0, sq = 0, cross = 0;
    long tails = 0;
    for (int i = 0; i < N_DRAWS; i += 2) {
        uint64_t seed = next_u64(&s) % 4, stream = (next_u64(&s) % 64) * 2 + 1;
        int episode = (int)(next_u64(&s) % 1000), step = (int)(next_u64(&s) % 256);
        int j = (int)(next_u64(&s) % (FH_N_MARKET_FEATURES - 1));
        double a = obs_noise_normal(seed, stream, episode, step, j);
        double b = obs_noise_normal(seed, stream, episode, step, j + 1);
        sum += a + b;
        sq += a * a + b * b;
        cross += a * b;
        tails += (fabs(a) > 1.96) + (fabs(b) > 1.96);
    }
    double mean = sum / N_DRAWS, sd = sqrt(sq / N_DRAWS - mean * mean);
    double corr = cross / (N_DRAWS / 2);
    printf("noise over %d draws: mean %.5f, sd %.5f, P(|z| > 1.96) %.5f, neighbour corr %.5f\n",
           N_DRAWS, mean, sd, (double)tails / N_DRAWS, corr);
    CHECK_CLOSE(mean, 0.0, 0.005, 0);
    CHECK_CLOSE(sd, 1.0, 0.007, 0);
    CHECK_CLOSE((double)tails / N_DRAWS, 0.05, 0.002, 0);
    CHECK_CLOSE(corr, 0.0, 0.01, 0);
}

/* ---- the CPU collection ---- */

typedef struct {
    fh_train_config cfg;
    fh_run_data data;
    fh_market_view view;
    fh_env_market market;
    fh_mlp actor, critic, curiosity;
} fixture;

static void fixture_init(fixture *f)
{
    memset(f, 0, sizeof *f);
    fh_error err;
    fh_train_config_default(&f->cfg);
    f->cfg.synthetic_bars = 3000;
    f->cfg.env.horizon = 40;    /* several episodes, truncations, per row */
    f->cfg.env.cur_coef = 0.0f; /* the curiosity bonus reads the (noisy) states */
    if (fh_run_data_load(&f->data, &f->cfg, NULL, &err) != FH_OK ||
        fh_mlp_init(&f->actor, FH_NET_ACTOR, &err) != FH_OK ||
        fh_mlp_init(&f->critic, FH_NET_CRITIC, &err) != FH_OK ||
        fh_mlp_init(&f->curiosity, FH_NET_CURIOSITY, &err) != FH_OK) {
        fprintf(stderr, "setup: %s\n", err.message);
        exit(1);
    }
    f->view = fh_market_view_of(&f->data.market, FH_SPLIT_TRAIN);
    f->market = fh_env_market_from_view(&f->view);
    fh_mlp_init_orthogonal(&f->actor, 11);
    fh_mlp_init_orthogonal(&f->critic, 12);
    fh_mlp_init_orthogonal(&f->curiosity, 13);
    /* the actor blind to the market: W0 (128, 54) row-major, its market columns zeroed,
     * so the noise cannot change an action */
    const fh_tensor_desc *t0 = &f->actor.tensors[0];
    if (t0->rank != 2 || t0->shape[0] != FH_ACTOR_H1 || t0->shape[1] != FH_STATE_DIM) {
        fprintf(stderr, "setup: the actor's first tensor %s is not W0 (%d, %d)\n", t0->name,
                FH_ACTOR_H1, FH_STATE_DIM);
        exit(1);
    }
    float *w0 = f->actor.params + t0->offset;
    for (int o = 0; o < FH_ACTOR_H1; o++)
        for (int j = 0; j < FH_N_MARKET_FEATURES; j++)
            w0[o * FH_STATE_DIM + j] = 0.0f;
}

static void fixture_free(fixture *f)
{
    fh_mlp_free(&f->actor);
    fh_mlp_free(&f->critic);
    fh_mlp_free(&f->curiosity);
    fh_run_data_free(&f->data);
}

/* COLLECTIONS consecutive collections with obs_noise `noise`: batches[k] (allocated
 * here), the slots' (episodes_done, step) before each in keys[k][n], the final episode
 * states in last (N_EPISODES). */
static void collect(const fixture *f, float noise, fh_trajectory_batch *batches,
                    int keys[COLLECTIONS][N_EPISODES][2], fh_episode_state *last)
{
    fh_env_config env = f->cfg.env;
    env.obs_noise = noise;
    fh_error err;
    fh_cpu_collector c;
    if (fh_cpu_collector_init(&c, N_EPISODES, N_STEPS, &env, &f->view, SEED, &err) != FH_OK) {
        fprintf(stderr, "collector: %s\n", err.message);
        exit(1);
    }
    fh_collect_params p = {&f->actor, &f->critic, &f->curiosity, 0.99f, 0.95f};
    for (int k = 0; k < COLLECTIONS; k++) {
        for (int n = 0; n < N_EPISODES; n++) {
            keys[k][n][0] = c.episodes[n].episodes_done;
            keys[k][n][1] = c.episodes[n].step;
        }
        if (fh_trajectory_batch_alloc(&batches[k], N_EPISODES, N_STEPS, &err) != FH_OK ||
            fh_cpu_collect_rollouts(&c, &p, &batches[k], &err) != FH_OK) {
            fprintf(stderr, "collect: %s\n", err.message);
            exit(1);
        }
    }
    memcpy(last, c.episodes, N_EPISODES * sizeof *last);
    fh_cpu_collector_free(&c);
}

static int same_ints(const int32_t *a, const int32_t *b, size_t n)
{
    return memcmp(a, b, n * sizeof *a) == 0;
}

static int same_floats(const float *a, const float *b, size_t n)
{
    return memcmp(a, b, n * sizeof *a) == 0;
}

static void test_collection(const fixture *f)
{
    fh_trajectory_batch clean[COLLECTIONS], noisy[COLLECTIONS];
    int clean_keys[COLLECTIONS][N_EPISODES][2], noisy_keys[COLLECTIONS][N_EPISODES][2];
    fh_episode_state clean_last[N_EPISODES], noisy_last[N_EPISODES];
    collect(f, 0.0f, clean, clean_keys, clean_last);
    collect(f, NOISE, noisy, noisy_keys, noisy_last);
    const size_t nl = (size_t)N_EPISODES * N_STEPS;
    long compared = 0, episodes_seen = 0, bad = 0;
    double max_err = 0;
    for (int k = 0; k < COLLECTIONS; k++) {
        const fh_trajectory_batch *c = &clean[k], *g = &noisy[k];
        CHECK_MSG(same_ints(c->actions, g->actions, nl) && same_ints(c->dones, g->dones, nl) &&
                      same_ints(c->terminals, g->terminals, nl) &&
                      same_ints(c->bars, g->bars, nl),
                  "collection %d: the noise changed the trajectory of a market-blind actor", k);
        CHECK_MSG(same_floats(c->rewards, g->rewards, nl) &&
                      same_floats(c->log_probs, g->log_probs, nl),
                  "collection %d: rewards or log-probs differ", k);
        for (int n = 0; n < N_EPISODES; n++) {
            int episode = noisy_keys[k][n][0], step = noisy_keys[k][n][1];
            for (int t = 0; t < N_STEPS; t++) {
                size_t i = (size_t)n * N_STEPS + t;
                const float *sc = c->states + i * FH_STATE_DIM, *sg = g->states + i * FH_STATE_DIM;
                const float *bar = f->market.features + (size_t)c->bars[i] * FH_N_MARKET_FEATURES;
                CHECK_MSG(same_floats(sc, bar, FH_N_MARKET_FEATURES),
                          "collection %d episode %d step %d: obs_noise 0 stored other features "
                          "than its bar's", k, n, t);
                if (!same_floats(sc + FH_N_MARKET_FEATURES, sg + FH_N_MARKET_FEATURES,
                                 FH_N_PORTFOLIO_FEATURES) && bad++ == 0)
                    fprintf(stderr, "collection %d episode %d step %d: portfolio features "
                            "differ\n", k, n, t);
                uint64_t stream = ((uint64_t)n << 1) | 1ULL;
                for (int j = 0; j < FH_N_MARKET_FEATURES; j++) {
                    double d = (double)sg[j] - (double)sc[j];
                    double want = (double)NOISE * ref_normal(SEED, stream, episode, step, j);
                    double e = fabs(d - want);
                    max_err = e > max_err ? e : max_err;
                    if (!fh_close(d, want, 2e-6, 1e-5) && bad++ == 0)
                        fprintf(stderr, "collection %d episode %d step %d (its episode %d, step "
                                "%d) feature %d: noise %.9g, reference %.9g\n", k, n, t, episode,
                                step, j, d, want);
                    compared++;
                }
                if (c->dones[i]) {
                    episode++;
                    step = 0;
                    episodes_seen++;
                } else {
                    step++;
                }
            }
            CHECK_MSG(noisy_keys[k][n][0] == clean_keys[k][n][0] &&
                          noisy_keys[k][n][1] == clean_keys[k][n][1],
                      "collection %d slot %d: the episode counts differ", k, n);
        }
    }
    CHECK_MSG(bad == 0, "%ld mismatches (the first printed above)", bad);
    CHECK_MSG(episodes_seen >= N_EPISODES * COLLECTIONS, "only %ld episodes ended: the key's "
              "episode count is barely exercised", episodes_seen);
    for (int n = 0; n < N_EPISODES; n++)
        CHECK_MSG(noisy_last[n].rng.state == clean_last[n].rng.state &&
                      noisy_last[n].rng.inc == clean_last[n].rng.inc &&
                      noisy_last[n].bar == clean_last[n].bar,
                  "slot %d: the noise moved the sampling stream", n);
    printf("collection: %ld market features compared, %ld episodes ended, max |noise - ref| "
           "%.2e\n", compared, episodes_seen, max_err);
    for (int k = 0; k < COLLECTIONS; k++) {
        fh_trajectory_batch_free(&clean[k]);
        fh_trajectory_batch_free(&noisy[k]);
    }
}

/* env_observe_train with obs_noise 0 is env_observe, bit for bit (any noise_seed). */
static void test_zero_is_plain(const fixture *f)
{
    fh_env_config env = f->cfg.env;
    env.noise_seed = 1234;
    int differ = 0;
    for (int n = 0; n < 64; n++) {
        fh_episode_state ep;
        memset(&ep, 0, sizeof ep);
        env_episode_init(&env, &f->market, &ep, 99, (unsigned long long)n);
        for (int t = 0; t < 50; t++) {
            float a[FH_STATE_DIM], b[FH_STATE_DIM];
            env_observe(&env, &f->market, &ep, a);
            env_observe_train(&env, &f->market, &ep, b);
            differ += memcmp(a, b, sizeof a) != 0;
            fh_step_result res;
            env_step(&env, &f->market, &ep, (n + t) % FH_N_ACTIONS, &res);
            if (res.done) {
                ep.episodes_done++;
                env_episode_reset(&env, &f->market, &ep);
            }
        }
    }
    CHECK_MSG(differ == 0, "%d observations differ with obs_noise 0", differ);
}

static void test_settings(void)
{
    const fh_config_field *field = fh_config_field_find("obs_noise");
    CHECK(field != NULL);
    if (!field)
        return;
    fh_train_config cfg;
    fh_train_config_default(&cfg);
    CHECK(cfg.env.obs_noise == 0.0f);
    fh_error err;
    const char *bad[] = {"-0.1", "10.5", "nan", "inf", "x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_MSG(fh_config_field_set(field, &cfg, bad[i], &err) == FH_ERR_INPUT,
                  "obs_noise = %s accepted", bad[i]);
        CHECK_MSG(strstr(err.message, "obs_noise") != NULL, "error without the key: %s",
                  err.message);
    }
    CHECK(fh_config_field_set(field, &cfg, "0.25", &err) == FH_OK && cfg.env.obs_noise == 0.25f);
    CHECK(fh_train_config_validate(&cfg, &err) == FH_OK);
    const char *refused[] = {"dqn", "pqn"};
    for (int i = 0; i < 2; i++) {
        strcpy(cfg.algo, refused[i]);
        CHECK_MSG(fh_train_config_validate(&cfg, &err) == FH_ERR_INPUT &&
                      strstr(err.message, "obs_noise") != NULL,
                  "algo %s with obs_noise 0.25 not refused", refused[i]);
    }
    cfg.env.obs_noise = -1.0f; /* set past the table: the environment's own check */
    strcpy(cfg.algo, "ppo");
    CHECK(fh_env_config_validate(&cfg.env, &err) == FH_ERR_INPUT);
    cfg.env.obs_noise = NAN;
    CHECK(fh_env_config_validate(&cfg.env, &err) == FH_ERR_INPUT);
}

int main(void)
{
    test_reference_and_keys();
    test_statistics();
    test_settings();
    fixture f;
    fixture_init(&f);
    test_zero_is_plain(&f);
    test_collection(&f);
    fixture_free(&f);
    return fh_test_finish();
}
