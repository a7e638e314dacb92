/* test_dqn_cli.c — `foxhunt train --algo dqn|pqn` and `foxhunt eval` of what it wrote
 * (issue 18), through the binary on tiny CPU runs:
 *  - each run exits 0 with metrics rows for every iteration and final.safetensors;
 *  - the checkpoint holds the algorithm's Q-network under its keys (pqn: q_norm_0 too;
 *    dqn: the target network q.target), the curiosity model, and no actor, and its
 *    config says the algorithm;
 *  - eval of that checkpoint prints the greedy row train's end-of-run evaluation wrote
 *    (the same numbers: eval rebuilt the same network and data);
 *  - --resume of it with --iterations 4 into a new directory continues it: exit 0, the
 *    one row of iteration 4, a final checkpoint (bit-identity: test_dqn_resume.c);
 *  - `foxhunt collect --checkpoint` of it writes a Q collection of the checkpoint's N x L
 *    (every tensor's dtype and shape, the metadata); at --epsilon 0 every action is
 *    greedy under the Q-network recomputed here with the batched BLAS network
 *    (fh_mlp_forward, another code path than the collector's device function): Q(s, a)
 *    within 1e-4 of max_a Q(s, .), the argmax itself wherever the top two differ by more,
 *    and q_taken = Q(s, a) to 1e-4; at --epsilon 1 some actions are not greedy;
 *  - `foxhunt bench --train` on the CPU prints a row per algorithm (ppo, pqn, dqn) with a
 *    positive training steps/s, `--algos pqn` the pqn row alone, and a bad --algos list
 *    exits 2 naming it;
 *  - an unknown algorithm is refused. */
#include "test_proc.h" /* first: it sets _GNU_SOURCE */

#include <math.h>
#include <string.h>

#include "foxhunt/checkpoint.h"
#include "foxhunt/nn.h"
#include "foxhunt/safetensors.h"
#include "test_util.h"

#define N_EPISODES 16
#define N_STEPS 32
#define Q_TOL 1e-4f

/* Counts over f's rows: greedy actions under q (within Q_TOL of the max), argmax hits
 * (near ties count as hits), rows with a clear argmax, q_taken equal to Q(s, a). */
static void greedy_counts(const fh_st_file *f, const fh_mlp *q, int *greedy, int *argmax_exact,
                          int *decided, int *q_taken_ok)
{
    const fh_st_tensor *s = fh_st_find(f, "states"), *a = fh_st_find(f, "actions");
    const fh_st_tensor *qt = fh_st_find(f, "q_taken");
    const int rows = N_EPISODES * N_STEPS;
    *greedy = *argmax_exact = *decided = *q_taken_ok = 0;
    fh_mlp_ws ws;
    fh_error err;
    float *out = malloc((size_t)rows * FH_N_ACTIONS * sizeof(float));
    if (!s || !a || !qt || !out || fh_mlp_ws_init(&ws, q, rows, &err) != FH_OK) {
        CHECK_MSG(0, "collection or workspace missing");
        free(out);
        return;
    }
    CHECK(fh_mlp_forward(out, &ws, q, (const float *)s->data, rows, &err) == FH_OK);
    const int32_t *act = (const int32_t *)a->data;
    const float *taken = (const float *)qt->data;
    for (int i = 0; i < rows; i++) {
        const float *row = out + (size_t)i * FH_N_ACTIONS;
        int best = 0;
        for (int k = 1; k < FH_N_ACTIONS; k++)
            if (row[k] > row[best])
                best = k;
        float second = -INFINITY;
        for (int k = 0; k < FH_N_ACTIONS; k++)
            if (k != best && row[k] > second)
                second = row[k];
        int ak = act[i];
        if (ak < 0 || ak >= FH_N_ACTIONS) {
            CHECK_MSG(0, "row %d: action %d", i, ak);
            break;
        }
        *greedy += row[ak] >= row[best] - Q_TOL * (1.0f + fabsf(row[best]));
        if (row[best] - second > Q_TOL * (1.0f + fabsf(row[best]))) {
            (*decided)++;
            *argmax_exact += ak == best;
        } else {
            (*argmax_exact)++; /* a near tie: either action is greedy */
        }
        *q_taken_ok += fabsf(taken[i] - row[ak]) <= Q_TOL * (1.0f + fabsf(row[ak]));
    }
    fh_mlp_ws_free(&ws);
    free(out);
}

/* collect from the checkpoint at epsilon 0 and 1; the layout and the greedy actions. */
static void check_collect(const char *dir, const char *ck, const char *algo)
{
    const int rows = N_EPISODES * N_STEPS;
    fh_mlp q;
    fh_error e;
    fh_checkpoint qck;
    memset(&qck, 0, sizeof qck);
    fh_net_kind kind = strcmp(algo, "pqn") == 0 ? FH_NET_PQN : FH_NET_QNET;
    CHECK(fh_mlp_init(&q, kind, &e) == FH_OK);
    qck.nets[kind] = &q;
    CHECK_MSG(fh_checkpoint_load(ck, &qck, NULL, &e) == FH_OK, "%s", e.message);
    const char *eps[2] = {"0", "1"};
    for (int k = 0; k < 2; k++) {
        char out[500], log[64];
        snprintf(out, sizeof out, "%s/%s-collect-%s.safetensors", dir, algo, eps[k]);
        snprintf(log, sizeof log, "%s-collect-%s", algo, eps[k]);
        char *argv[] = {"collect", "--checkpoint", (char *)ck, "--device", "cpu", "--epsilon",
                        (char *)eps[k], "--out", out, NULL};
        char *err = NULL;
        int rc = fh_run_foxhunt(dir, log, argv, NULL, &err);
        CHECK_MSG(rc == 0, "collect %s: exit %d: %s", log, rc, err ? err : "");
        free(err);
        fh_st_file f;
        if (fh_st_read(&f, out, &e) != FH_OK) {
            CHECK_MSG(0, "%s", e.message);
            continue;
        }
        const struct {
            const char *name;
            fh_dtype dtype;
            int rank;
        } want[] = {{"states", FH_DTYPE_F32, 3},   {"next_states", FH_DTYPE_F32, 3},
                    {"actions", FH_DTYPE_I32, 2},  {"rewards", FH_DTYPE_F32, 2},
                    {"terminal", FH_DTYPE_U8, 2},  {"truncated", FH_DTYPE_U8, 2},
                    {"q_taken", FH_DTYPE_F32, 2},  {"exposures", FH_DTYPE_F32, 2},
                    {"bars", FH_DTYPE_I32, 2}};
        CHECK_MSG(f.n_tensors == sizeof want / sizeof want[0], "%s: %zu tensors", log, f.n_tensors);
        for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
            const fh_st_tensor *t = fh_st_find(&f, want[i].name);
            int ok = t && t->dtype == want[i].dtype && t->rank == want[i].rank &&
                     t->shape[0] == N_EPISODES && t->shape[1] == N_STEPS &&
                     (want[i].rank == 2 || t->shape[2] == FH_STATE_DIM);
            CHECK_MSG(ok, "%s: tensor %s missing, or not of its dtype and (%d, %d%s) shape", log,
                      want[i].name, N_EPISODES, N_STEPS, want[i].rank == 3 ? ", FH_STATE_DIM" : "");
        }
        const char *fmt = fh_st_metadata(&f, "format"), *al = fh_st_metadata(&f, "algo");
        const char *ep = fh_st_metadata(&f, "epsilon");
        CHECK_MSG(fmt && !strcmp(fmt, "foxhunt.q_collection") && al && !strcmp(al, algo) && ep &&
                  !strcmp(ep, eps[k]) && fh_st_metadata(&f, "weights.hash") &&
                  fh_st_metadata(&f, "data.hash") && fh_st_metadata(&f, "config"),
                  "%s: metadata format %s, algo %s, epsilon %s", log, fmt ? fmt : "-",
                  al ? al : "-", ep ? ep : "-");
        const fh_st_tensor *term = fh_st_find(&f, "terminal"), *trunc = fh_st_find(&f, "truncated");
        int flags_ok = term && trunc;
        for (int i = 0; flags_ok && i < rows; i++)
            flags_ok = ((const uint8_t *)term->data)[i] <= 1 &&
                       ((const uint8_t *)trunc->data)[i] <= 1;
        CHECK_MSG(flags_ok, "%s: terminal / truncated not 0 or 1", log);
        int greedy, exact, decided, q_ok;
        greedy_counts(&f, &q, &greedy, &exact, &decided, &q_ok);
        if (k == 0) {
            CHECK_MSG(greedy == rows && exact == rows && q_ok == rows,
                      "%s: of %d actions %d greedy, %d the argmax (%d rows decided), %d q_taken",
                      log, rows, greedy, exact, decided, q_ok);
            CHECK_MSG(decided > rows / 2, "%s: only %d of %d rows have a clear argmax", log,
                      decided, rows);
        } else {
            CHECK_MSG(greedy < rows / 2 && q_ok == rows,
                      "%s: epsilon 1, yet %d of %d actions are greedy", log, greedy, rows);
        }
        fh_st_file_free(&f);
    }
    fh_mlp_free(&q);
}

/* The line of the first table that starts with "greedy " (the metrics row). */
static void greedy_row(const char *text, char *row, size_t size)
{
    row[0] = '\0';
    const char *p = text ? strstr(text, "\ngreedy ") : NULL;
    if (!p)
        return;
    p++;
    const char *end = strchr(p, '\n');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    snprintf(row, size, "%.*s", (int)(n < size ? n : size - 1), p);
}

static void check_algo(const char *dir, const char *algo)
{
    char out_dir[400], ck[500], path[600];
    snprintf(out_dir, sizeof out_dir, "%s/%s", dir, algo);
    char *train[] = {"train", "--algo", (char *)algo, "--device", "cpu", "--episodes", "16",
                     "--steps", "32", /* N_EPISODES x N_STEPS */ "--iterations", "3", "--minibatch", "128", "--epochs",
                     "1", "--learning-starts", "256", "--replay-ratio", "0.03125",
                     "--synthetic-bars", "3000", "--threads", "1", "--out", out_dir, NULL};
    char *out = NULL, *err = NULL;
    int rc = fh_run_foxhunt(dir, algo, train, &out, &err);
    CHECK_MSG(rc == 0, "train --algo %s exited %d: %s", algo, rc, err ? err : "");
    snprintf(ck, sizeof ck, "%s/final.safetensors", out_dir);
    snprintf(path, sizeof path, "%s/metrics.csv", out_dir);
    char *csv = fh_read_text(path);
    CHECK_MSG(csv && fh_count_lines(csv) == 4, "%s: metrics.csv should have a header and 3 rows",
              algo);
    free(csv);
    fh_st_file f;
    fh_error e;
    memset(&f, 0, sizeof f);
    CHECK_MSG(fh_st_read(&f, ck, &e) == FH_OK, "%s: %s", algo, e.message);
    int pqn = strcmp(algo, "pqn") == 0;
    CHECK(fh_st_find(&f, "q_layer_0.weight") && fh_st_find(&f, "q_output.bias") &&
          fh_st_find(&f, "fc1.weight"));
    CHECK(!fh_st_find(&f, "policy_layer_0.weight"));
    CHECK_MSG((fh_st_find(&f, "q_norm_0.weight") != NULL) == pqn, "%s: LayerNorm keys", algo);
    CHECK_MSG((fh_st_find(&f, "q.target") != NULL) == !pqn, "%s: target network", algo);
    const char *config = fh_st_metadata(&f, "config");
    char want[32];
    snprintf(want, sizeof want, "\"algo\":\t\"%s\"", algo);
    CHECK_MSG(config && strstr(config, want), "%s: the config does not record the algorithm",
              algo);
    fh_st_file_free(&f);

    char train_row[256], eval_row[256];
    greedy_row(out, train_row, sizeof train_row);
    char *eval[] = {"eval", "--checkpoint", ck, NULL};
    char *eout = NULL;
    CHECK_MSG(fh_run_foxhunt(dir, "eval", eval, &eout, NULL) == 0, "eval of the %s checkpoint failed", algo);
    greedy_row(eout, eval_row, sizeof eval_row);
    CHECK_MSG(train_row[0] && strcmp(train_row, eval_row) == 0,
              "%s: eval's greedy row differs from train's:\n%s\n%s", algo, train_row, eval_row);
    free(out);
    free(err);
    free(eout);

    char again[400];
    snprintf(again, sizeof again, "%s/%s-resume", dir, algo);
    char *resume[] = {"train", "--resume", ck, "--iterations", "4", "--out", again, NULL};
    err = NULL;
    rc = fh_run_foxhunt(dir, "resume", resume, NULL, &err);
    CHECK_MSG(rc == 0, "%s: --resume exited %d: %s", algo, rc, err ? err : "");
    free(err);
    snprintf(path, sizeof path, "%s/metrics.csv", again);
    csv = fh_read_text(path);
    CHECK_MSG(csv && fh_count_lines(csv) == 2 && strstr(csv, "\n4,"),
              "%s: the resumed run's metrics.csv should hold the row of iteration 4 alone", algo);
    free(csv);
    snprintf(path, sizeof path, "%s/final.safetensors", again);
    CHECK_MSG(fh_file_exists(path), "%s: the resumed run wrote no %s", algo, path);
    check_collect(dir, ck, algo);
}

/* The row of bench's output whose first field is algo, or NULL; its last field's value. */
static const char *bench_row(const char *text, const char *algo, double *steps_per_second)
{
    char start[16];
    snprintf(start, sizeof start, "\n%s ", algo);
    const char *p = text ? strstr(text, start) : NULL;
    if (!p)
        return NULL;
    p++;
    const char *end = strchr(p, '\n');
    const char *last = end ? end : p + strlen(p);
    while (last > p && last[-1] == ' ')
        last--;
    const char *field = last;
    while (field > p && field[-1] != ' ')
        field--;
    *steps_per_second = strtod(field, NULL);
    return p;
}

/* The ppo row's upd TFLOP/s against the hand count (issue 35): the actor's
 * 54x128 + 128x64 + 64x45 = 17,984 and the critic's 54x512 + 512x384 + 384x256 + 256x128
 * + 128x64 + 64x1 = 363,584 multiply-accumulates a sample,
 * 6 FLOP each (forward 2, backward 4), 1 epoch over N x L = 128 samples, over the row's
 * update ms (the CPU has no device time). Printed to 4 significant digits, the update
 * time to 0.01 ms: 1% covers both roundings. */
static void check_bench_flops(const char *out)
{
    double sps = 0;
    const char *row = bench_row(out, "ppo", &sps);
    CHECK_MSG(row != NULL, "no ppo row:\n%s", out ? out : "");
    if (!row)
        return;
    char f[16][32];
    int n = sscanf(row, "%31s %31s %31s %31s %31s %31s %31s %31s %31s %31s %31s %31s %31s %31s",
                   f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], f[9], f[10], f[11],
                   f[12], f[13]);
    CHECK_MSG(n == 14, "the ppo row has %d fields, expected 15", n + 1);
    if (n != 14)
        return;
    double update_ms = strtod(f[10], NULL), tflops = strtod(f[12], NULL);
    double expected = 6.0 * (17984.0 + 363584.0) * 1 * 128 / (update_ms * 1e-3) / 1e12;
    CHECK_MSG(update_ms > 0 && fabs(tflops - expected) <= 0.01 * expected,
              "ppo row: upd TFLOP/s %g, expected %g from update ms %g", tflops, expected,
              update_ms);
    CHECK_MSG(strcmp(f[13], "-") == 0, "ppo cpu row: %% ceil '%s', expected '-'", f[13]);
}

static void check_bench(const char *dir)
{
    char *all[] = {"bench", "--train", "--device", "cpu", "--episodes", "8", "--steps", "16",
                   "--repeats", "1", "--threads", "1", "--epochs", "1", "--minibatch", "64",
                   NULL};
    char *out = NULL, *err = NULL;
    int rc = fh_run_foxhunt(dir, "bench", all, &out, &err);
    CHECK_MSG(rc == 0, "bench --train exited %d: %s", rc, err ? err : "");
    const char *algos[3] = {"ppo", "pqn", "dqn"};
    for (int k = 0; k < 3; k++) {
        double sps = 0;
        const char *row = bench_row(out, algos[k], &sps);
        CHECK_MSG(row && strncmp(row + 5, "cpu", 3) == 0 && sps > 0,
                  "bench --train: no cpu row for %s with a positive steps/s:\n%s", algos[k],
                  out ? out : "");
    }
    check_bench_flops(out);
    double sps = 0;
    CHECK_MSG(out && strstr(out, "rr 0.01562"), "the dqn row does not print its replay ratio");
    free(out);
    free(err);
    char *one[] = {"bench", "--train", "--device", "cpu", "--episodes", "8", "--steps", "16",
                   "--repeats", "1", "--threads", "1", "--epochs", "1", "--minibatch", "64",
                   "--algos", "pqn", NULL};
    out = err = NULL;
    rc = fh_run_foxhunt(dir, "bench-pqn", one, &out, &err);
    CHECK_MSG(rc == 0 && bench_row(out, "pqn", &sps) && !bench_row(out, "ppo", &sps) &&
              !bench_row(out, "dqn", &sps), "bench --algos pqn: exit %d:\n%s", rc,
              out ? out : "");
    free(out);
    free(err);
    char *bad[] = {"bench", "--train", "--device", "cpu", "--algos", "ppo,sarsa", NULL};
    err = NULL;
    rc = fh_run_foxhunt(dir, "bench-bad", bad, NULL, &err);
    CHECK_MSG(rc == 2 && err && strstr(err, "--algos 'ppo,sarsa'"), "bench --algos ppo,sarsa: "
              "exit %d: %s", rc, err ? err : "");
    free(err);
}

int main(void)
{
    char dir[256];
    CHECK(fh_make_temp_dir(dir, sizeof dir, "fh_dqn_cli"));
    check_algo(dir, "pqn");
    check_algo(dir, "dqn");
    check_bench(dir);
    char *bad[] = {"train", "--algo", "sarsa", "--out", "/tmp/never", NULL};
    char *err = NULL;
    CHECK(fh_run_foxhunt(dir, "bad", bad, NULL, &err) == 2);
    CHECK(err && strstr(err, "ppo|dqn|pqn"));
    free(err);
    if (fh_test_failed == 0)
        fh_remove_tree(dir);
    else
        fprintf(stderr, "outputs kept in %s\n", dir);
    return fh_test_finish();
}
