/* vec_env_driver.c — the C side of the Python vector env's tests and benchmark
 * (python/tests/test_vec_env.py, python/bench_vec_env.py; issue 21).
 *
 *   vec_env_driver trace OUT ACTIONS N SEED SPLIT [key=value ...]
 *     Builds the market as `foxhunt train` does from the defaults and the key=value
 *     configuration settings (fh_run_data_load), steps fh_vec_env (env.h) directly,
 *     NOT through the C API the Python package uses, with the actions in ACTIONS (raw
 *     int32, T x N), and writes OUT: the first observation (N, 54) float32, then per
 *     step obs, final_obs (N, 54) float32, rewards (N) float32, terminals and
 *     truncations (N) uint8; then the finished episodes' logs: count (int64), then per
 *     log slot, length (int32), episode_return, final_equity (float64). An independent
 *     path to compare the binding with, bit for bit.
 *
 *   vec_env_driver bench N SECONDS REPEATS [key=value ...]
 *     Times fh_api_vec_env_step (capi.h), the call the Python binding makes, in a C
 *     loop with random actions drawn in C, and prints one line per repeat:
 *     "steps_per_second S" (environment steps: N per call). The binding's overhead is
 *     the Python rate against this one.
 *
 * Exit status 0 on success, 2 on bad arguments or input, 1 on other failures. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "foxhunt/capi.h"
#include "foxhunt/env.h"
#include "foxhunt/run_data.h"
#include "foxhunt/train_config.h"

static int fail(int code, const char *what, const char *msg)
{
    fprintf(stderr, "vec_env_driver: %s: %s\n", what, msg);
    return code;
}

/* key=value arguments onto cfg, with the CLI's checks */
static int apply_settings(fh_train_config *cfg, int argc, char **argv, fh_error *err)
{
    for (int i = 0; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        if (!eq)
            return fh_error_set(err, FH_ERR_INPUT, "\"%s\" is not key=value", argv[i]);
        *eq = '\0';
        const fh_config_field *f = NULL;
        for (int k = 0; k < fh_train_config_n_fields; k++)
            if (strcmp(fh_train_config_fields[k].key, argv[i]) == 0)
                f = &fh_train_config_fields[k];
        if (!f)
            return fh_error_set(err, FH_ERR_INPUT, "unknown key \"%s\"", argv[i]);
        if (fh_config_field_set(f, cfg, eq + 1, err) != FH_OK)
            return err->status;
    }
    return FH_OK;
}

static int write_all(FILE *f, const void *p, size_t bytes)
{
    return fwrite(p, 1, bytes, f) == bytes;
}

static int trace(int argc, char **argv)
{
    if (argc < 5)
        return fail(2, "trace", "usage: trace OUT ACTIONS N SEED SPLIT [key=value ...]");
    const char *out_path = argv[0], *actions_path = argv[1], *split_name = argv[4];
    int n = atoi(argv[2]);
    uint64_t seed = strtoull(argv[3], NULL, 10);
    fh_train_config cfg;
    fh_train_config_default(&cfg);
    fh_error err;
    fh_error_clear(&err);
    if (n < 1 || apply_settings(&cfg, argc - 5, argv + 5, &err) != FH_OK)
        return fail(2, "trace", n < 1 ? "N must be >= 1" : err.message);
    fh_split split = !strcmp(split_name, "train") ? FH_SPLIT_TRAIN
                   : !strcmp(split_name, "validation") ? FH_SPLIT_VALIDATION
                   : !strcmp(split_name, "test") ? FH_SPLIT_TEST : FH_SPLIT_ALL;

    FILE *fa = fopen(actions_path, "rb");
    if (!fa)
        return fail(2, actions_path, "cannot open");
    fseek(fa, 0, SEEK_END);
    long bytes = ftell(fa);
    fseek(fa, 0, SEEK_SET);
    size_t steps = (size_t)bytes / ((size_t)n * sizeof(int));
    int *actions = malloc(steps * (size_t)n * sizeof(int) + 1);
    int ok = actions && fread(actions, sizeof(int), steps * (size_t)n, fa) == steps * (size_t)n;
    fclose(fa);
    if (!ok)
        return fail(2, actions_path, "cannot read the actions");

    fh_run_data data;
    fh_vec_env env;
    memset(&env, 0, sizeof env);
    if (fh_run_data_load(&data, &cfg, NULL, &err) != FH_OK)
        return fail(2, "market", err.message);
    fh_market_view view = fh_market_view_of(&data.market, split);
    if (fh_vec_env_init(&env, n, &cfg.env, &view, seed, &err) != FH_OK)
        return fail(2, "vec env", err.message);
    size_t s54 = (size_t)n * FH_STATE_DIM;
    float *obs = malloc(s54 * sizeof *obs), *final = malloc(s54 * sizeof *final);
    float *rewards = malloc((size_t)n * sizeof *rewards);
    int *flags = malloc(3 * (size_t)n * sizeof *flags);
    unsigned char *bytes8 = malloc((size_t)n);
    FILE *fo = fopen(out_path, "wb");
    if (!obs || !final || !rewards || !flags || !bytes8 || !fo)
        return fail(1, out_path, "cannot allocate or create");
    fh_vec_env_observe(&env, obs);
    ok = write_all(fo, obs, s54 * sizeof *obs);
    for (size_t t = 0; ok && t < steps; t++) {
        if (fh_vec_env_step(&env, actions + t * (size_t)n, NULL, obs, rewards, flags,
                            flags + n, flags + 2 * n, final, &err) != FH_OK)
            return fail(2, "step", err.message);
        ok = write_all(fo, obs, s54 * sizeof *obs) && write_all(fo, final, s54 * sizeof *final) &&
             write_all(fo, rewards, (size_t)n * sizeof *rewards);
        for (int k = 1; ok && k <= 2; k++) {
            for (int i = 0; i < n; i++)
                bytes8[i] = (unsigned char)(flags[k * n + i] != 0);
            ok = write_all(fo, bytes8, (size_t)n);
        }
    }
    size_t n_logs;
    const fh_episode_log *logs = fh_vec_env_logs(&env, &n_logs);
    int64_t count = (int64_t)n_logs;
    ok = ok && write_all(fo, &count, sizeof count);
    for (size_t i = 0; ok && i < n_logs; i++) {
        int32_t ints[2] = {logs[i].slot, logs[i].length};
        double dbl[2] = {logs[i].episode_return, logs[i].final_equity};
        ok = write_all(fo, ints, sizeof ints) && write_all(fo, dbl, sizeof dbl);
    }
    ok = (fclose(fo) == 0) && ok;
    fh_vec_env_free(&env);
    fh_run_data_free(&data);
    free(actions), free(obs), free(final), free(rewards), free(flags), free(bytes8);
    return ok ? 0 : fail(1, out_path, "write failed");
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int bench(int argc, char **argv)
{
    if (argc < 3)
        return fail(2, "bench", "usage: bench N SECONDS REPEATS [threads=K] [key=value ...]");
    int n = atoi(argv[0]), repeats = atoi(argv[2]);
    double seconds = atof(argv[1]);
    char err[1024];
    fh_api_config *cfg = fh_api_config_new(err, sizeof err);
    if (!cfg)
        return fail(1, "config", err);
    int threads = 1; /* the vec env's own default */
    for (int i = 3; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        if (!eq)
            return fail(2, argv[i], "not key=value");
        *eq = '\0';
        if (strcmp(argv[i], "threads") == 0) { /* the env's, not the config's key */
            threads = atoi(eq + 1);
            continue;
        }
        if (fh_api_config_set(cfg, argv[i], eq + 1) != FH_API_OK)
            return fail(2, argv[i], fh_api_last_error(cfg));
    }
    fh_api_market *m = fh_api_market_load(cfg, NULL, NULL, err, sizeof err);
    fh_api_vec_env *e = m ? fh_api_vec_env_create(m, NULL, "train", n, 1, err, sizeof err) : NULL;
    if (!e)
        return fail(2, "vec env", err);
    if (fh_api_vec_env_set_threads(e, threads) != FH_API_OK)
        return fail(2, "threads", fh_api_last_error(e));
    size_t s54 = (size_t)n * FH_API_STATE_DIM;
    float *obs = malloc(s54 * sizeof *obs), *final = malloc(s54 * sizeof *final);
    float *rewards = malloc((size_t)n * sizeof *rewards);
    uint8_t *term = malloc((size_t)n), *trunc = malloc((size_t)n);
    int32_t *actions = malloc((size_t)n * sizeof *actions);
    fh_api_episode_log *logs = malloc((size_t)n * sizeof *logs);
    if (!obs || !final || !rewards || !term || !trunc || !actions || !logs)
        return fail(1, "bench", "out of memory");
    uint64_t x = 0x9E3779B97F4A7C15ULL; /* xorshift64: actions uniform on [0, 45) */
    for (int r = 0; r < repeats; r++) {
        long calls = 0;
        double t0 = now_seconds(), t1 = t0;
        while (t1 - t0 < seconds) {
            for (int i = 0; i < n; i++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                actions[i] = (int32_t)(x % FH_API_N_ACTIONS);
            }
            if (fh_api_vec_env_step(e, actions, obs, rewards, term, trunc, final) != FH_API_OK)
                return fail(1, "step", fh_api_last_error(e));
            fh_api_vec_env_take_logs(e, logs, n); /* as the binding does every step */
            calls++;
            t1 = now_seconds();
        }
        printf("steps_per_second %.1f\n", (double)calls * n / (t1 - t0));
    }
    fh_api_vec_env_free(e);
    fh_api_market_free(m);
    fh_api_config_free(cfg);
    free(obs), free(final), free(rewards), free(term), free(trunc), free(actions), free(logs);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "trace") == 0)
        return trace(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "bench") == 0)
        return bench(argc - 2, argv + 2);
    return fail(2, "usage", "vec_env_driver trace|bench ... (see the file's comment)");
}
