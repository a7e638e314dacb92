/* test_dqn_cli.c — `foxhunt train --algo dqn|pqn` and `foxhunt eval` of what it wrote
 * (issue 18), through the binary on tiny CPU runs:
 *  - each run exits 0 with metrics rows for every iteration and final.safetensors;
 *  - the checkpoint holds the algorithm's Q-network under its keys (pqn: q_norm_0 too;
 *    dqn: the target network q.target), the curiosity model, and no actor, and its
 *    config says the algorithm;
 *  - eval of that checkpoint prints the greedy row train's end-of-run evaluation wrote
 *    (the same numbers: eval rebuilt the same network and data);
 *  - --resume of it is refused, saying resume is not implemented for DQN/PQN;
 *  - an unknown algorithm is refused. */
#include "test_proc.h" /* first: it sets _GNU_SOURCE */

#include <string.h>

#include "foxhunt/safetensors.h"
#include "test_util.h"

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
                     "--steps", "32", "--iterations", "3", "--minibatch", "128", "--epochs",
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
    char *resume[] = {"train", "--resume", ck, "--out", again, NULL};
    err = NULL;
    rc = fh_run_foxhunt(dir, "resume", resume, NULL, &err);
    CHECK_MSG(rc == 2 && err && strstr(err, "not implemented"),
              "%s: --resume should be refused: exit %d: %s", algo, rc, err ? err : "");
    free(err);
}

int main(void)
{
    char dir[256];
    CHECK(fh_make_temp_dir(dir, sizeof dir, "fh_dqn_cli"));
    check_algo(dir, "pqn");
    check_algo(dir, "dqn");
    char *bad[] = {"train", "--algo", "sarsa", "--out", "/tmp/never", NULL};
    char *err = NULL;
    CHECK(fh_run_foxhunt(dir, "bad", bad, NULL, &err) == 2);
    CHECK(err && strstr(err, "ppo|dqn|pqn"));
    free(err);
    return fh_test_finish();
}
