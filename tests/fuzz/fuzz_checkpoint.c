/* fuzz_checkpoint.c — libFuzzer harness: an arbitrary file given as `--resume` or
 * `eval --checkpoint` (issue 19: a checkpoint is untrusted input).
 *
 * The input is a checkpoint file. Its networks are 4.6 MB of floats that mutations would
 * mostly land in, so the seed corpus holds checkpoints of a tiny run stripped of the
 * network tensors (tests/fuzz/make_corpus.sh): the header, config, normalisation and
 * every per-episode state stay, which is where a hostile edit does harm. Stages, each on
 * the same input:
 *  1. fh_checkpoint_read_config: the file read and validated, its config JSON parsed
 *     (fh_train_config_from_json), what `train --resume` and `eval` do first;
 *  2. fh_checkpoint_load of the normalisation only (what data loading on resume takes);
 *  3. fh_checkpoint_load of every trainer tensor but the networks (seed, iteration,
 *     episode streams and states, update stream, running returns), shaped by the
 *     config's episode count as the trainer asks for them.
 *  4. each loaded episode state that fh_episode_state_validate accepts (against the
 *     config's environment and its synthetic market's training split, as the trainer's
 *     resume checks it) is stepped 40 times: observations, rewards and returns must stay
 *     finite and the state valid; a state that would index out of range or divide by
 *     zero shows up here under ASan/UBSan. (Resuming a whole trainer per input was
 *     tried: initialising the critic costs about a second per input under the
 *     sanitizers, too slow to fuzz.)
 * Properties: a refusal is FH_ERR_INPUT (FH_ERR_FAILURE only for memory) with a message
 * naming the file; a failed load leaves the caller's buffers untouched. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <math.h>

#include "env/common_device_functions.cuh"
#include "foxhunt/checkpoint.h"
#include "foxhunt/env.h"
#include "foxhunt/run_data.h"
#include "foxhunt/safetensors.h"
#include "foxhunt/trainer.h" /* fh_checkpoint_read_config */
#include "fuzz_util.h"

#define MAX_EPISODES 4096 /* stage 3 */
#define MAX_SYNTHETIC_BARS 2000 /* stage 4: markets are rebuilt when a mutation changes them */
#define STEPS 40

/* Stage 4's market: the synthetic one of the last config, kept while its settings stay. */
static fh_run_data g_data;
static int g_have_data = 0;
static int g_bars = -1;
static uint64_t g_seed;
static double g_fraction;

static const fh_env_market *market_for(const fh_train_config *cfg, fh_env_market *out)
{
    if (cfg->data[0] || cfg->synthetic_bars > MAX_SYNTHETIC_BARS)
        return NULL; /* a CSV path from the file is never opened by the harness */
    if (!g_have_data || g_bars != cfg->synthetic_bars || g_seed != cfg->synthetic_seed ||
        g_fraction != cfg->train_fraction) {
        if (g_have_data)
            fh_run_data_free(&g_data);
        g_have_data = 0;
        fh_error err;
        memset(&g_data, 0, sizeof g_data);
        if (fh_run_data_load(&g_data, cfg, NULL, &err) != FH_OK) {
            fh_run_data_free(&g_data);
            return NULL;
        }
        g_have_data = 1;
        g_bars = cfg->synthetic_bars;
        g_seed = cfg->synthetic_seed;
        g_fraction = cfg->train_fraction;
    }
    fh_market_view view = fh_market_view_of(&g_data.market, FH_SPLIT_TRAIN);
    *out = fh_env_market_from_view(&view);
    return out->n_bars >= 2 ? out : NULL;
}

/* Stage 4: accepted states step safely. */
static void step_accepted(const fh_train_config *cfg, fh_episode_state *episodes, int N)
{
    fh_error err;
    if (fh_env_config_validate(&cfg->env, &err) != FH_OK)
        return;
    fh_env_market storage;
    const fh_env_market *m = market_for(cfg, &storage);
    if (!m)
        return;
    char why[512];
    float obs[FH_STATE_DIM];
    for (int n = 0; n < N; n++) {
        fh_episode_state ep = episodes[n];
        if (!fh_episode_state_validate(&cfg->env, m, &ep, why, sizeof why))
            continue;
        fh_rng actions;
        rng_seed(&actions, (unsigned long long)n, 11u);
        for (int s = 0; s < STEPS; s++) {
            env_observe(&cfg->env, m, &ep, obs);
            for (int j = 0; j < FH_STATE_DIM; j++)
                FUZZ_REQUIRE(isfinite(obs[j]), "episode %d step %d: observation[%d] = %g", n, s,
                             j, (double)obs[j]);
            fh_step_result r;
            env_step(&cfg->env, m, &ep, rng_uniform_int(&actions, FH_N_ACTIONS), &r);
            FUZZ_REQUIRE(isfinite(r.reward) && isfinite(r.pnl), "episode %d step %d: reward %g "
                         "pnl %g", n, s, (double)r.reward, r.pnl);
            if (r.done)
                env_episode_reset(&cfg->env, m, &ep);
            FUZZ_REQUIRE(fh_episode_state_validate(&cfg->env, m, &ep, why, sizeof why),
                         "episode %d: an accepted state stepped into %s", n, why);
        }
    }
}

static void check_refusal(fh_status st, const fh_error *err, const char *path, const char *what)
{
    FUZZ_REQUIRE(st == FH_ERR_INPUT || st == FH_ERR_FAILURE, "%s: status %d", what, (int)st);
    FUZZ_REQUIRE(strstr(err->message, path) != NULL, "%s: the message does not name the file: %s",
                 what, err->message);
}

/* Stage 3: everything the trainer restores but the networks. */
static void load_trainer_tensors(const char *path, const fh_train_config *cfg, int N)
{
    size_t n = (size_t)N;
    uint64_t seed = 0x5EED, *rng = calloc(n * 2, sizeof *rng);
    int64_t iteration = -7;
    fh_episode_state *episodes = calloc(n, sizeof *episodes);
    double *ret = calloc(n, sizeof *ret);
    int32_t *len = calloc(n, sizeof *len);
    uint64_t update_rng[2] = {1, 2};
    FUZZ_REQUIRE(rng && episodes && ret && len, "out of memory");
    fh_checkpoint ck;
    memset(&ck, 0, sizeof ck);
    fh_checkpoint_extra e[4] = {
        {"env.episodes", FH_DTYPE_U8, 2, {N, (int64_t)sizeof(fh_episode_state)}, episodes, 0, 0},
        {"ppo.update_rng", FH_DTYPE_U64, 1, {2}, update_rng, 0, 0},
        {"trainer.episode_return", FH_DTYPE_F64, 1, {N}, ret, 0, 0},
        {"trainer.episode_length", FH_DTYPE_I32, 1, {N}, len, 0, 0}};
    ck.seed = &seed;
    ck.iteration = &iteration;
    ck.rng_state = rng;
    ck.rng_rows = n;
    ck.rng_cols = 2;
    ck.extras = e;
    ck.n_extras = 4;
    fh_error err;
    fh_status st = fh_checkpoint_load(path, &ck, NULL, &err);
    if (st == FH_OK && cfg)
        step_accepted(cfg, episodes, N);
    if (st != FH_OK) {
        check_refusal(st, &err, path, "trainer tensors");
        /* untouched on failure */
        FUZZ_REQUIRE(seed == 0x5EED && iteration == -7 && update_rng[0] == 1 &&
                         update_rng[1] == 2,
                     "a failed load changed the caller's values");
        for (size_t i = 0; i < n; i++) {
            static const fh_episode_state zero;
            FUZZ_REQUIRE(ret[i] == 0 && len[i] == 0 && rng[2 * i] == 0 && rng[2 * i + 1] == 0 &&
                             memcmp(&episodes[i], &zero, sizeof zero) == 0,
                         "a failed load changed the caller's buffers");
        }
    }
    free(rng);
    free(episodes);
    free(ret);
    free(len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_scratch("ck", ".safetensors", data, size);
    fh_error err;
    fh_error_clear(&err);

    /* 1: the file and its config */
    fh_train_config cfg;
    fh_train_config_default(&cfg);
    fh_status st = fh_checkpoint_read_config(path, &cfg, &err);
    int have_config = st == FH_OK;
    if (!have_config)
        check_refusal(st, &err, path, "config");

    /* 2: the normalisation alone */
    fh_feature_norm norm;
    memset(&norm, 0x7f, sizeof norm);
    fh_feature_norm untouched = norm;
    fh_checkpoint ck;
    memset(&ck, 0, sizeof ck);
    ck.norm = &norm;
    st = fh_checkpoint_load(path, &ck, NULL, &err);
    if (st != FH_OK) {
        check_refusal(st, &err, path, "norm");
        FUZZ_REQUIRE(memcmp(&norm, &untouched, sizeof norm) == 0,
                     "a failed load changed the caller's normalisation");
    }

    /* 3: the trainer's tensors, shaped by the config (or by a small default) */
    int N = have_config && cfg.episodes >= 1 && cfg.episodes <= MAX_EPISODES ? cfg.episodes : 4;
    load_trainer_tensors(path, have_config ? &cfg : NULL, N);
    return 0;
}
