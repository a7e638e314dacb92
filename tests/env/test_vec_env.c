/* test_vec_env.c — the CPU vectorised environment (issue 3): determinism (same seed,
 * bit-identical trajectories, 1 vs 2 OpenMP threads), auto-reset with the final
 * observation kept, per-episode logs matching a replay of the same episodes with the
 * bare env_step, the curiosity bonus, and input errors; held slots (issue 36:
 * fh_vec_env_step_active, Gymnasium's next-step autoreset) against a replay that steps
 * each slot's own episode only when it is active, with the env's own thread count. */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>

#include "env_fixtures.h"
#include "test_util.h"

#define N_EP 37 /* not a multiple of the thread count */
#define N_BARS 3000
#define N_STEPS 1500

typedef struct {
    float *states;  /* (N_STEPS, N_EP, 54) */
    float *finals;  /* (N_STEPS, N_EP, 54) */
    float *rewards; /* (N_STEPS, N_EP) */
    int *dones;     /* (N_STEPS, N_EP) */
    size_t n_logs;
    double log_return_sum;
} trajectory;

static float g_close[N_BARS], g_sigma[N_BARS], g_features[N_BARS * FH_N_MARKET_FEATURES];
static float g_curiosity[FH_CURIOSITY_N_PARAMS];

static void build_market(fh_env_market *m)
{
    fh_rng rng;
    rng_seed(&rng, 11u, 0u);
    double p = 50.0;
    for (int i = 0; i < N_BARS; i++) {
        g_close[i] = (float)p;
        g_sigma[i] = 0.01f + 0.01f * gpu_random(&rng);
        p *= exp(0.015 * (2.0 * gpu_random(&rng) - 1.0));
        for (int j = 0; j < FH_N_MARKET_FEATURES; j++)
            g_features[i * FH_N_MARKET_FEATURES + j] = 2.0f * gpu_random(&rng) - 1.0f;
    }
    for (int k = 0; k < FH_CURIOSITY_N_PARAMS; k++)
        g_curiosity[k] = 0.2f * (gpu_random(&rng) - 0.5f);
    m->features = g_features;
    m->close = g_close;
    m->sigma = g_sigma;
    m->n_bars = N_BARS;
    m->n_segments = 0;
    m->segment_ends = NULL;
}

static void action_batch(fh_rng *rng, int *actions)
{
    for (int i = 0; i < N_EP; i++)
        actions[i] = rng_uniform_int(rng, FH_N_ACTIONS);
}

static int record(const fh_env_market *m, uint64_t seed, int threads, const float *cur,
                  trajectory *tr)
{
    omp_set_num_threads(threads);
    fh_env_config cfg = fh_env_config_default();
    cfg.horizon = 200;
    fh_vec_env env;
    fh_error err;
    if (fh_vec_env_init_market(&env, N_EP, &cfg, m, seed, &err) != FH_OK) {
        CHECK_MSG(0, "init: %s", err.message);
        return 0;
    }
    float state[N_EP * FH_STATE_DIM];
    int actions[N_EP], terms[N_EP], truncs[N_EP];
    fh_vec_env_reset(&env, state);
    fh_rng arng;
    rng_seed(&arng, seed ^ 0x5eedu, 1u);
    for (int t = 0; t < N_STEPS; t++) {
        action_batch(&arng, actions);
        size_t off = (size_t)t * N_EP;
        if (fh_vec_env_step(&env, actions, cur, tr->states + off * FH_STATE_DIM,
                            tr->rewards + off, tr->dones + off, terms, truncs,
                            tr->finals + off * FH_STATE_DIM, &err) != FH_OK) {
            CHECK_MSG(0, "step: %s", err.message);
            break;
        }
    }
    size_t n;
    const fh_episode_log *logs = fh_vec_env_logs(&env, &n);
    tr->n_logs = n;
    tr->log_return_sum = 0.0;
    for (size_t k = 0; k < n; k++)
        tr->log_return_sum += logs[k].episode_return;
    fh_vec_env_free(&env);
    return 1;
}

static void trajectory_alloc(trajectory *tr)
{
    size_t steps = (size_t)N_STEPS * N_EP;
    tr->states = calloc(steps * FH_STATE_DIM, sizeof(float));
    tr->finals = calloc(steps * FH_STATE_DIM, sizeof(float));
    tr->rewards = calloc(steps, sizeof(float));
    tr->dones = calloc(steps, sizeof(int));
    if (!tr->states || !tr->finals || !tr->rewards || !tr->dones) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
}

static void trajectory_free(trajectory *tr)
{
    free(tr->states);
    free(tr->finals);
    free(tr->rewards);
    free(tr->dones);
}

static int same(const trajectory *a, const trajectory *b)
{
    size_t steps = (size_t)N_STEPS * N_EP;
    for (size_t k = 0; k < steps; k++) {
        if (memcmp(a->states + k * FH_STATE_DIM, b->states + k * FH_STATE_DIM,
                   sizeof(float) * FH_STATE_DIM) != 0 ||
            memcmp(&a->rewards[k], &b->rewards[k], sizeof(float)) != 0 ||
            a->dones[k] != b->dones[k]) {
            fprintf(stderr, "first difference at step %zu episode %zu\n", k / N_EP, k % N_EP);
            return 0;
        }
    }
    return memcmp(a->finals, b->finals, steps * FH_STATE_DIM * sizeof(float)) == 0 &&
           a->n_logs == b->n_logs;
}

static void test_determinism(const fh_env_market *m)
{
    trajectory a, b, c;
    trajectory_alloc(&a);
    trajectory_alloc(&b);
    trajectory_alloc(&c);
    for (int pass = 0; pass < 2; pass++) {
        const float *cur = pass ? g_curiosity : NULL;
        record(m, 99u, 1, cur, &a);
        record(m, 99u, 2, cur, &b);
        CHECK_MSG(same(&a, &b), "1 vs 2 threads differ (curiosity %d)", pass);
        record(m, 99u, 2, cur, &b);
        CHECK_MSG(same(&a, &b), "two 2-thread runs differ (curiosity %d)", pass);
        record(m, 100u, 2, cur, &c);
        CHECK_MSG(memcmp(a.rewards, c.rewards, sizeof(float) * N_STEPS * N_EP) != 0,
                  "another seed should give another trajectory");
        CHECK(a.n_logs > (size_t)N_EP); /* episodes finished and were logged */
    }
    /* the curiosity bonus changes rewards: cur_coef * min(mse, 1) > 0 each step */
    record(m, 99u, 2, NULL, &a);
    record(m, 99u, 2, g_curiosity, &b);
    int all_higher = 1;
    for (size_t k = 0; k < (size_t)N_STEPS * N_EP; k++)
        all_higher &= b.rewards[k] > a.rewards[k];
    CHECK_MSG(all_higher, "curiosity bonus should raise every reward");
    trajectory_free(&a);
    trajectory_free(&b);
    trajectory_free(&c);
}

/* Replays slot 0 with the bare per-episode functions, checking auto-reset, the final
 * observation and the logs the vec env kept. */
static void test_auto_reset_and_logs(const fh_env_market *m)
{
    fh_env_config cfg = fh_env_config_default();
    cfg.horizon = 40;
    fh_vec_env env;
    fh_error err;
    CHECK(fh_vec_env_init_market(&env, 3, &cfg, m, 5u, &err) == FH_OK);
    fh_episode_state ref;
    env_episode_init(&cfg, m, &ref, 5u, 0u);
    float states[3 * FH_STATE_DIM], finals[3 * FH_STATE_DIM], rewards[3];
    float ref_state[FH_STATE_DIM];
    int dones[3], terms[3], truncs[3], actions[3];
    fh_vec_env_reset(&env, states);
    env_episode_reset(&cfg, m, &ref); /* vec reset draws a new start too */
    env_observe(&cfg, m, &ref, ref_state);
    CHECK(memcmp(states, ref_state, sizeof ref_state) == 0);
    fh_rng arng;
    rng_seed(&arng, 3u, 3u);
    int n_done = 0, mismatches = 0;
    double ref_return = 0.0, ref_cost = 0.0;
    for (int t = 0; t < 200; t++) {
        for (int i = 0; i < 3; i++)
            actions[i] = rng_uniform_int(&arng, FH_N_ACTIONS);
        CHECK(fh_vec_env_step(&env, actions, NULL, states, rewards, dones, terms, truncs,
                              finals, &err) == FH_OK);
        fh_step_result r;
        env_step(&cfg, m, &ref, actions[0], &r);
        ref_return += r.reward;
        ref_cost += r.cost;
        env_observe(&cfg, m, &ref, ref_state);
        mismatches += memcmp(finals, ref_state, sizeof ref_state) != 0;
        mismatches += rewards[0] != r.reward || dones[0] != r.done || truncs[0] != r.truncated;
        if (r.done) {
            size_t n;
            const fh_episode_log *logs = fh_vec_env_logs(&env, &n);
            const fh_episode_log *last = NULL;
            for (size_t k = 0; k < n; k++)
                if (logs[k].slot == 0)
                    last = &logs[k];
            CHECK(last != NULL);
            if (last) {
                CHECK(last->length == cfg.horizon && last->truncated == 1 && !last->terminal);
                CHECK_CLOSE(last->episode_return, ref_return, 1e-9, 1e-9);
                CHECK_CLOSE(last->costs, ref_cost, 1e-9, 1e-9);
                CHECK_CLOSE(last->final_equity, ref.equity, 0, 1e-12);
            }
            ref_return = 0.0;
            ref_cost = 0.0;
            env_episode_reset(&cfg, m, &ref);
            env_observe(&cfg, m, &ref, ref_state);
            n_done++;
        }
        mismatches += memcmp(states, ref_state, sizeof ref_state) != 0;
    }
    CHECK_MSG(mismatches == 0, "%d mismatches against the replay", mismatches);
    CHECK(n_done == 200 / 40);
    fh_episode_summary s;
    fh_vec_env_summary(&env, &s);
    CHECK(s.n_episodes == 3 * n_done && s.n_truncated == s.n_episodes);
    CHECK_CLOSE(s.mean_length, 40.0, 0, 0);
    /* action out of range: error, nothing stepped */
    actions[1] = FH_N_ACTIONS;
    int step_before = env.episodes[0].step;
    CHECK(fh_vec_env_step(&env, actions, NULL, states, rewards, dones, terms, truncs, NULL,
                          &err) == FH_ERR_INPUT);
    CHECK(env.episodes[0].step == step_before);
    fh_vec_env_clear_logs(&env);
    size_t n;
    fh_vec_env_logs(&env, &n);
    CHECK(n == 0);
    fh_vec_env_free(&env);
    fh_vec_env_free(&env); /* safe twice */

    /* bad inputs */
    fh_env_config bad = fh_env_config_default();
    bad.ruin = 1.5f;
    CHECK(fh_vec_env_init_market(&env, 4, &bad, m, 1u, &err) == FH_ERR_INPUT);
    fh_vec_env_free(&env);
    fh_env_market tiny = *m;
    tiny.n_bars = 1;
    CHECK(fh_vec_env_init_market(&env, 4, &cfg, &tiny, 1u, &err) == FH_ERR_INPUT);
    fh_vec_env_free(&env);
    CHECK(fh_vec_env_init_market(&env, 0, &cfg, m, 1u, &err) == FH_ERR_INPUT);
    fh_vec_env_free(&env);
}

/* Random slots held at random steps: the active ones step as their own episodes replayed
 * with the bare env_step (auto-reset included), the held ones observe, get reward 0 and
 * no flags, and move nothing (an out-of-range action in a held slot is not read). */
static void test_held_slots(const fh_env_market *m, int threads)
{
    enum { N = 5, T = 300 };
    fh_env_config cfg = fh_env_config_default();
    cfg.horizon = 30;
    fh_vec_env env;
    fh_error err;
    CHECK(fh_vec_env_init_market(&env, N, &cfg, m, 9u, &err) == FH_OK);
    fh_vec_env_set_threads(&env, threads);
    fh_episode_state ref[N];
    float states[N * FH_STATE_DIM], finals[N * FH_STATE_DIM], rewards[N], want[FH_STATE_DIM];
    int dones[N], terms[N], truncs[N], actions[N];
    uint8_t active[N];
    for (int i = 0; i < N; i++)
        env_episode_init(&cfg, m, &ref[i], 9u, (uint64_t)i);
    fh_vec_env_observe(&env, states);
    int mismatches = 0, held = 0, finished = 0;
    for (int i = 0; i < N; i++) {
        env_observe(&cfg, m, &ref[i], want);
        mismatches += memcmp(states + i * FH_STATE_DIM, want, sizeof want) != 0;
    }
    fh_rng arng;
    rng_seed(&arng, 4u, 4u);
    for (int t = 0; t < T && mismatches == 0; t++) {
        for (int i = 0; i < N; i++) {
            active[i] = rng_uniform_int(&arng, 10) < 7;
            actions[i] = active[i] ? rng_uniform_int(&arng, FH_N_ACTIONS) : -1;
        }
        CHECK(fh_vec_env_step_active(&env, actions, active, NULL, states, rewards, dones, terms,
                                     truncs, finals, &err) == FH_OK);
        for (int i = 0; i < N; i++) {
            fh_step_result r = {0};
            if (active[i]) {
                env_step(&cfg, m, &ref[i], actions[i], &r);
                env_observe(&cfg, m, &ref[i], want);
                mismatches += memcmp(finals + i * FH_STATE_DIM, want, sizeof want) != 0;
                if (r.done) {
                    env_episode_reset(&cfg, m, &ref[i]);
                    env_observe(&cfg, m, &ref[i], want);
                    finished++;
                }
            } else {
                env_observe(&cfg, m, &ref[i], want);
                held++;
            }
            mismatches += memcmp(states + i * FH_STATE_DIM, want, sizeof want) != 0;
            mismatches += rewards[i] != (active[i] ? r.reward : 0.0f) || dones[i] != r.done ||
                          terms[i] != r.terminal || truncs[i] != r.truncated;
            if (mismatches)
                fprintf(stderr, "held slots: first mismatch at step %d, slot %d (%s)\n", t, i,
                        active[i] ? "active" : "held");
            if (mismatches)
                break;
        }
    }
    CHECK_MSG(mismatches == 0 && held > 100 && finished > 10, "threads %d: %d mismatches, "
              "%d held, %d finished", threads, mismatches, held, finished);
    size_t n_logs;
    fh_vec_env_logs(&env, &n_logs);
    CHECK_MSG((int)n_logs == finished, "%zu logs, %d episodes finished", n_logs, finished);
    /* an out-of-range action in an active slot is still refused */
    actions[0] = FH_N_ACTIONS;
    active[0] = 1;
    CHECK(fh_vec_env_step_active(&env, actions, active, NULL, states, rewards, dones, terms,
                                 truncs, NULL, &err) == FH_ERR_INPUT);
    fh_vec_env_free(&env);
}

int main(void)
{
    fh_env_market m;
    build_market(&m);
    test_determinism(&m);
    test_auto_reset_and_logs(&m);
    test_held_slots(&m, 1);
    test_held_slots(&m, 2);
    return fh_test_finish();
}
