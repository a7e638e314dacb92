/* fuzz_batch.c — libFuzzer harness: an arbitrary file given as `foxhunt update --batch`
 * (src/rl/batch_file.c, include/foxhunt/batch_file.h; issue 32). The input is read with
 * fh_batch_file_read, as cmd_update.c does, against a training split of MARKET_BARS bars:
 *  1. for a run configured as 2 episodes x 4 steps (the seeds' size: other sizes are
 *     refused naming both);
 *  2. when the file's "states" is (N, L, 54) with N x L small, for a run configured as
 *     N x L, so that the checks behind the size check meet every size a file can claim.
 * Properties (batch_file.h), beyond "no crash, no leak, no undefined behaviour":
 *  - a refusal is FH_ERR_INPUT (FH_ERR_FAILURE only for memory) with a message naming the
 *    file, and the batch is left freed (no pointer kept);
 *  - an accepted batch is N x L; every float finite; log_probs <= 0; actions in
 *    [0, 45); dones and terminals 0 or 1; bars such that bar and bar + 1 lie in the
 *    market; the metadata strings NUL-terminated within their fields; a data identity
 *    read has n_bars >= 0. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "foxhunt/batch_file.h"
#include "foxhunt/safetensors.h"
#include "fuzz_util.h"

#define MARKET_BARS 16000 /* the synthetic market's training split (20000 bars, 0.8) */
#define MAX_STEPS 4096   /* N x L of stage 2 at most */

static void check_floats(const char *name, const float *x, int64_t n)
{
    for (int64_t j = 0; j < n; j++)
        FUZZ_REQUIRE(isfinite(x[j]), "accepted: %s[%lld] = %g", name, (long long)j,
                     (double)x[j]);
}

static void read_as(const char *path, int N, int L, const fh_env_market *market)
{
    fh_trajectory_batch b;
    fh_batch_file_info info;
    fh_error err;
    fh_error_clear(&err);
    memset(&b, 0xA5, sizeof b); /* the reader must not rely on a cleared batch */
    fh_status st = fh_batch_file_read(&b, &info, path, N, L, "the fuzz harness", market, &err);
    if (st != FH_OK) {
        FUZZ_REQUIRE(st == FH_ERR_INPUT || st == FH_ERR_FAILURE, "status %d", (int)st);
        FUZZ_REQUIRE(strstr(err.message, path) != NULL,
                     "the message does not name the file: %s", err.message);
        FUZZ_REQUIRE(b.mem == NULL && b.imem == NULL && b.states == NULL,
                     "a refused batch kept its memory");
        return;
    }
    int64_t nl = (int64_t)N * L;
    FUZZ_REQUIRE(b.n_episodes == N && b.n_steps == L, "accepted as %d x %d, asked %d x %d",
                 b.n_episodes, b.n_steps, N, L);
    check_floats("states", b.states, nl * FH_STATE_DIM);
    check_floats("values", b.values, nl);
    check_floats("rewards", b.rewards, nl);
    check_floats("advantages", b.advantages, nl);
    check_floats("returns", b.returns, nl);
    check_floats("trunc_values", b.trunc_values, nl);
    check_floats("exposures", b.exposures, nl);
    check_floats("last_values", b.last_values, N);
    for (int64_t j = 0; j < nl; j++) {
        FUZZ_REQUIRE(isfinite(b.log_probs[j]) && b.log_probs[j] <= 0.0f,
                     "accepted: log_probs[%lld] = %g", (long long)j, (double)b.log_probs[j]);
        FUZZ_REQUIRE(b.actions[j] >= 0 && b.actions[j] < FH_N_ACTIONS,
                     "accepted: actions[%lld] = %d", (long long)j, (int)b.actions[j]);
        FUZZ_REQUIRE(b.dones[j] == 0 || b.dones[j] == 1, "accepted: dones[%lld] = %d",
                     (long long)j, (int)b.dones[j]);
        FUZZ_REQUIRE(b.terminals[j] == 0 || b.terminals[j] == 1,
                     "accepted: terminals[%lld] = %d", (long long)j, (int)b.terminals[j]);
        FUZZ_REQUIRE(b.bars[j] >= 0 && (int64_t)b.bars[j] + 1 < market->n_bars,
                     "accepted: bars[%lld] = %d with %d bars", (long long)j, (int)b.bars[j],
                     market->n_bars);
    }
    FUZZ_REQUIRE(memchr(info.device, '\0', sizeof info.device) &&
                     memchr(info.weights, '\0', sizeof info.weights) &&
                     memchr(info.data.source, '\0', sizeof info.data.source),
                 "a metadata string without its NUL");
    FUZZ_REQUIRE(!info.data_present || info.data.n_bars >= 0, "data.bars %lld",
                 (long long)info.data.n_bars);
    fh_trajectory_batch_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_scratch("batch", ".safetensors", data, size);
    fh_env_market market = {NULL, NULL, NULL, MARKET_BARS, 0, NULL}; /* the reader reads n_bars only */
    read_as(path, 2, 4, &market);

    fh_st_file f;
    fh_error err;
    if (fh_st_read(&f, path, &err) != FH_OK)
        return 0;
    const fh_st_tensor *states = fh_st_find(&f, "states");
    int64_t N = 0, L = 0;
    if (states && states->rank == 3 && states->shape[2] == FH_STATE_DIM) {
        N = states->shape[0];
        L = states->shape[1];
    }
    fh_st_file_free(&f);
    if (N >= 1 && L >= 1 && N <= MAX_STEPS && L <= MAX_STEPS && N * L <= MAX_STEPS &&
        !(N == 2 && L == 4))
        read_as(path, (int)N, (int)L, &market);
    return 0;
}
