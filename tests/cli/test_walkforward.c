/* test_walkforward.c — `foxhunt walkforward` (issue 20; resume: issue 32, item 7).
 * 1. fh_walkforward_stitch on hand-made folds: times joined on the shared boundary bar,
 *    each step's return and cost share kept, equity compounded across folds, metrics
 *    equal to fh_backtest_metrics_compute over the joined path; folds that are not
 *    consecutive, or that backtested other policies, are refused.
 * 2. The real binary, on the CPU: 2 folds x 2 seeds of a tiny run with model selection;
 *    every fold's run directory, the stitched files, and tests/cli/check_walkforward.py
 *    recomputing the stitching, the stitched metrics and the deflated Sharpe from the
 *    CSVs in plain Python. A second run into the same directory is refused. This run is
 *    the reference of part 3.
 * 3. Resume: the same walk-forward killed with SIGKILL once fold 2's first run has
 *    started (fold 1's runs finished, their records written), then rerun: fold 1's runs are kept (the output says
 *    so; their files keep their bytes and mtimes), fold 2's trained, and the stitched
 *    returns_seed*.csv, eval_seed*.json and walkforward.md are byte-identical to the
 *    uninterrupted run's (walkforward.json too, but for the train_seconds lines). Then,
 *    walkforward.json removed (a kill just before the end): a record with a flipped byte,
 *    a torn one and a forged one (a valid checksum over a wrong returns hash) are not
 *    trusted, their runs retrained, and the result again byte-identical; other settings
 *    (--iterations) or other data (--synthetic-seed) are refused before anything is
 *    trained or moved. (On bcd20a5 the rerun failed: "run directory .../fold1_seed3
 *    already holds a run's files"; with --force it retrained every fold.)
 * Parts 2 and 3 skip without python3. */
#include "test_proc.h" /* first: it sets _GNU_SOURCE */

#include <math.h>
#include <sys/stat.h>
#include <string.h>

#include "cli/walkforward_record.h"
#include "cli/walkforward_stitch.h"
#include "foxhunt/safetensors.h"
#include "test_util.h"

#define RECORD "walkforward_fold.json"

/* A report of n bars, policies greedy and flat, equity from returns r (greedy) and
 * costs c (currency) at each step. */
static void make_fold(fh_eval_report *f, int64_t t0, size_t n, const double *r,
                      const double *c, double e0)
{
    memset(f, 0, sizeof *f);
    f->n_policies = 2;
    f->kinds[0] = FH_POLICY_GREEDY;
    f->kinds[1] = FH_POLICY_FLAT;
    f->bars = n;
    f->periods_per_year = 252;
    f->time = malloc(n * sizeof *f->time);
    f->paths = calloc(2 * 4 * n, sizeof *f->paths);
    for (size_t j = 0; j < n; j++)
        f->time[j] = t0 + (int64_t)j * 86400;
    double *eq = f->paths, *expo = eq + n, *cost = eq + 2 * n, *turn = eq + 3 * n;
    eq[0] = e0;
    for (size_t j = 0; j + 1 < n; j++) {
        eq[j + 1] = eq[j] * (1 + r[j]);
        cost[j] = c[j];
        expo[j] = r[j] > 0 ? 1.0 : -0.5;
        turn[j] = 0.25 * (double)j;
    }
    double *flat = f->paths + 4 * n;
    for (size_t j = 0; j < n; j++)
        flat[j] = e0;
}

static void test_stitch(void)
{
    const double r1[3] = {0.01, -0.02, 0.03}, c1[3] = {1.0, 0.5, 0.0};
    const double r2[2] = {0.05, -0.01}, c2[2] = {2.0, 0.25};
    fh_eval_report f[2], out;
    make_fold(&f[0], 1000000, 4, r1, c1, 100.0);
    make_fold(&f[1], 1000000 + 3 * 86400, 3, r2, c2, 100.0);
    fh_error err;
    CHECK(fh_walkforward_stitch(f, 2, &out, &err) == FH_OK);
    CHECK(out.bars == 6 && out.n_policies == 2 && !strcmp(out.split, "walk-forward"));
    for (size_t t = 0; t < 6; t++)
        CHECK(out.time[t] == 1000000 + (int64_t)t * 86400);
    const double r[5] = {0.01, -0.02, 0.03, 0.05, -0.01};
    const double share[5] = {1.0 / 100, 0.5 / 101, 0, 2.0 / 100, 0.25 / 105};
    double eq = 100.0, equity[6] = {100.0}, cost[5], expo[5], turn[5];
    const double *g = out.paths;
    for (int t = 0; t < 5; t++) {
        cost[t] = share[t] * eq;
        eq *= 1 + r[t];
        equity[t + 1] = eq;
        expo[t] = r[t] > 0 ? 1.0 : -0.5;
        turn[t] = 0.25 * (t < 3 ? t : t - 3);
        CHECK_CLOSE(g[t + 1], equity[t + 1], 0, 1e-14);
        CHECK_CLOSE(g[6 * 2 + t], cost[t], 1e-15, 1e-12);
        CHECK(g[6 + t] == expo[t] && g[6 * 3 + t] == turn[t]);
    }
    fh_backtest_metrics want;
    fh_backtest_metrics_compute(equity, turn, cost, expo, 5, 252, &want);
    CHECK_CLOSE(out.metrics[0].sharpe, want.sharpe, 1e-12, 1e-12);
    CHECK_CLOSE(out.metrics[0].max_drawdown, want.max_drawdown, 1e-15, 1e-12);
    CHECK_CLOSE(out.metrics[0].costs, want.costs, 1e-15, 1e-12);
    CHECK(out.metrics[1].cumulative_return == 0.0); /* flat stays flat */
    free(out.time);
    free(out.paths);

    /* a gap between the folds, other policies: refused */
    f[1].time[0] += 1;
    CHECK(fh_walkforward_stitch(f, 2, &out, &err) == FH_ERR_INPUT);
    CHECK(strstr(err.message, "not consecutive") != NULL);
    f[1].time[0] -= 1;
    f[1].kinds[1] = FH_POLICY_RANDOM;
    CHECK(fh_walkforward_stitch(f, 2, &out, &err) == FH_ERR_INPUT);
    for (int k = 0; k < 2; k++) {
        free(f[k].time);
        free(f[k].paths);
    }
}

/* A tiny walk-forward into OUT: 2 folds x 2 seeds, 6 iterations a run (a fraction of a
 * second each, so that a kill lands in fold 2), model selection on validation. */
#define WF_ARGS(out, iterations, synth_seed)                                                 \
    {"walkforward", "--device", "cpu", "--episodes", "8", "--steps", "32", "--iterations",   \
     iterations, "--epochs", "1", "--minibatch", "64", "--eval-every", "1",                  \
     "--synthetic-bars", "5000", "--synthetic-seed", synth_seed, "--train-fraction", "0.4",  \
     "--walkforward-folds", "2", "--walkforward-seeds", "2", "--seed", "3", "--threads",      \
     "1", "--out", out, NULL}

/* Part 2: the uninterrupted walk-forward, checked, then moved to DIR/ref (1 when it
 * got there: part 3 compares with it). */
static int test_cli(const char *dir)
{
    char out[400], cmd[1200], path[600];
    snprintf(out, sizeof out, "%s/wf", dir);
    char *argv[] = WF_ARGS(out, "6", "42");
    CHECK_MSG(fh_run_foxhunt(dir, "wf", argv, NULL, NULL) == 0, "foxhunt walkforward failed (see %s/wf.err)", dir);
    const char *files[] = {"walkforward.json", "walkforward.md", "returns_seed3.csv",
                           "eval_seed4.json", "fold1_seed3/best.safetensors",
                           "fold2_seed4/validation.csv", "fold2_seed4/returns.csv",
                           "fold2_seed4/" RECORD};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", out, files[i]);
        CHECK_MSG(fh_file_exists(path), "missing %s", path);
    }
    snprintf(cmd, sizeof cmd, "python3 '%s/tests/cli/check_walkforward.py' '%s' 2 2 3",
             FH_SOURCE_DIR, out);
    fflush(stdout);
    int rc = system(cmd);
    CHECK_MSG(rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0,
              "check_walkforward.py disagrees");
    /* --algo dqn, pqn and constant train what they say (bcd20a5 trained PPO under the
     * label): each fold run's config, metrics columns and chosen model are the learner's */
    const char *algos[] = {"dqn", "pqn", "constant"};
    const char *own_column[] = {"td_loss", "td_loss", "best_action"};
    const char *policy_key[] = {"q_output.weight", "q_output.weight", "policy_output.weight"};
    for (int a = 0; a < 3; a++) {
        char q_out[500], algo_json[64];
        snprintf(q_out, sizeof q_out, "%s/wf_%s", dir, algos[a]);
        char *q_argv[] = WF_ARGS(q_out, "3", "42");
        char *with_algo[64];
        int n = 0;
        for (; q_argv[n]; n++)
            with_algo[n] = q_argv[n];
        with_algo[n++] = (char *)"--algo";
        with_algo[n++] = (char *)algos[a];
        if (a == 0) { /* DQN: its ring fills and it learns within the tiny run */
            with_algo[n++] = (char *)"--learning-starts";
            with_algo[n++] = (char *)"128";
        }
        with_algo[n] = NULL;
        CHECK_MSG(fh_run_foxhunt(dir, "algo", with_algo, NULL, NULL) == 0,
                  "walkforward --algo %s failed (see %s/algo.err)", algos[a], dir);
        snprintf(path, sizeof path, "%s/fold2_seed4/config.json", q_out);
        char *text = fh_read_text(path);
        snprintf(algo_json, sizeof algo_json, "\"%s\"", algos[a]);
        const char *key = text ? strstr(text, "\"algo\":") : NULL;
        if (key)
            key += strspn(key + 7, " \t") + 7; /* the value after "algo": */
        CHECK_MSG(key && strncmp(key, algo_json, strlen(algo_json)) == 0,
                  "--algo %s: %s does not say algo %s", algos[a], path, algo_json);
        free(text);
        snprintf(path, sizeof path, "%s/fold2_seed4/metrics.csv", q_out);
        text = fh_read_text(path);
        CHECK_MSG(text && strstr(text, own_column[a]) && !strstr(text, "policy_loss"),
                  "--algo %s: %s has not the learner's own columns", algos[a], path);
        free(text);
        snprintf(path, sizeof path, "%s/fold1_seed3/best.safetensors", q_out);
        fh_st_file f;
        memset(&f, 0, sizeof f);
        fh_error err;
        CHECK_MSG(fh_st_read(&f, path, &err) == FH_OK && fh_st_find(&f, policy_key[a]),
                  "--algo %s: %s holds no %s", algos[a], path, policy_key[a]);
        fh_st_file_free(&f);
        snprintf(path, sizeof path, "%s/walkforward.json", q_out);
        CHECK_MSG(fh_file_exists(path), "--algo %s: no %s", algos[a], path);
    }
    /* the deployment gate (issue 34): at 0.5 some runs of these seeds clear it and some
     * do not, at 0 every run trades (the deployed path is greedy's); check_walkforward.py
     * recomputes each seed's deployed path from the folds' returns */
    const char *bars[] = {"0.5", "0"};
    for (int g = 0; g < 2; g++) {
        char g_out[500];
        snprintf(g_out, sizeof g_out, "%s/wf_gate%d", dir, g);
        char *g_argv[] = WF_ARGS(g_out, "3", "42");
        char *with_gate[64];
        int n = 0;
        for (; g_argv[n]; n++)
            with_gate[n] = g_argv[n];
        with_gate[n++] = (char *)"--deploy-min-psr";
        with_gate[n++] = (char *)bars[g];
        with_gate[n] = NULL;
        CHECK_MSG(fh_run_foxhunt(dir, "gate", with_gate, NULL, NULL) == 0,
                  "walkforward --deploy-min-psr %s failed (see %s/gate.err)", bars[g], dir);
        snprintf(cmd, sizeof cmd, "python3 '%s/tests/cli/check_walkforward.py' '%s' 2 2 3",
                 FH_SOURCE_DIR, g_out);
        fflush(stdout);
        rc = system(cmd);
        CHECK_MSG(rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0,
                  "check_walkforward.py disagrees on the gate at %s", bars[g]);
    }
    /* a second walk-forward into the same directory is refused */
    CHECK(fh_run_foxhunt(dir, "again", argv, NULL, NULL) == 2);
    char *err_text = NULL;
    snprintf(path, sizeof path, "%s/again.err", dir);
    err_text = fh_read_text(path);
    CHECK_MSG(err_text && strstr(err_text, "holds a walk-forward already"), "%s",
              err_text ? err_text : "");
    free(err_text);
    snprintf(path, sizeof path, "%s/ref", dir);
    int moved = rename(out, path) == 0;
    CHECK(moved);
    return moved;
}

/* Occurrences of needle in text. */
static int count(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; p && (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* text without the lines that hold drop (malloc'd). */
static char *without_lines(const char *text, const char *drop)
{
    char *out = malloc(strlen(text) + 1), *o = out;
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p + 1) : strlen(p);
        char line[4096];
        snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), p);
        if (!strstr(line, drop)) {
            memcpy(o, p, len);
            o += len;
        }
        p += len;
    }
    *o = '\0';
    return out;
}

/* DIR/wf's stitched outputs against DIR/ref's, byte for byte. */
static void check_same_result(const char *dir, const char *when)
{
    const char *names[] = {"returns_seed3.csv", "returns_seed4.csv", "eval_seed3.json",
                           "eval_seed4.json", "walkforward.md", "walkforward.json"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char a[600], b[600];
        snprintf(a, sizeof a, "%s/ref/%s", dir, names[i]);
        snprintf(b, sizeof b, "%s/wf/%s", dir, names[i]);
        char *ta = fh_read_text(a), *tb = fh_read_text(b);
        CHECK_MSG(ta && tb, "%s: cannot read %s or %s", when, a, b);
        if (ta && tb && strcmp(names[i], "walkforward.json") == 0) {
            /* the kept runs' train_seconds are the killed run's */
            char *xa = without_lines(ta, "\"train_seconds\""), *xb = without_lines(tb, "\"train_seconds\"");
            free(ta);
            free(tb);
            ta = xa;
            tb = xb;
        }
        if (ta && tb) {
            size_t k = 0;
            while (ta[k] && ta[k] == tb[k])
                k++;
            CHECK_MSG(ta[k] == tb[k], "%s: %s differs from the uninterrupted run's at byte %zu",
                      when, b, k);
        }
        free(ta);
        free(tb);
    }
}

typedef struct {
    struct timespec mtime;
    char *bytes;
    size_t len;
} file_state;

static void snapshot(const char *path, file_state *f)
{
    struct stat sb;
    memset(f, 0, sizeof *f);
    if (stat(path, &sb) == 0)
        f->mtime = sb.st_mtim;
    f->bytes = fh_test_read_file(path, &f->len); /* binary: models hold NUL bytes */
}

static int same_bytes(const file_state *a, const file_state *b)
{
    return a->bytes && b->bytes && a->len == b->len && memcmp(a->bytes, b->bytes, a->len) == 0;
}

static void test_resume(const char *dir)
{
    char out[400], path[700], rec[700];
    snprintf(out, sizeof out, "%s/wf", dir);
    char *argv[] = WF_ARGS(out, "6", "42");
    /* killed with SIGKILL once fold 2's first run has opened its directory: fold 1's
     * runs are finished then (their records written), fold 2's are not */
    char *full[FH_PROC_MAX_ARGS];
    int n = 0;
    full[n++] = (char *)FH_FOXHUNT_BIN;
    for (int i = 0; argv[i]; i++)
        full[n++] = argv[i];
    full[n] = NULL;
    char o[600], e[600], started[700];
    snprintf(o, sizeof o, "%s/killed.out", dir);
    snprintf(e, sizeof e, "%s/killed.err", dir);
    snprintf(started, sizeof started, "%s/fold2_seed3/config.json", out);
    pid_t pid = fh_proc_spawn(full, o, e);
    CHECK(pid > 0);
    double t0 = fh_now_seconds();
    int status = 0, ended = 0;
    while (!fh_file_exists(started) && fh_now_seconds() - t0 < 120) {
        if (waitpid(pid, &status, WNOHANG) == pid) {
            ended = 1;
            break;
        }
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    if (!ended) {
        kill(pid, SIGKILL);
        CHECK(fh_proc_wait(pid) == 128 + SIGKILL);
    }
    CHECK_MSG(!ended, "the walk-forward ended (status %d) before fold 2 started: see %s",
              status, e);
    for (int seed = 3; seed <= 4; seed++) {
        snprintf(rec, sizeof rec, "%s/fold1_seed%d/" RECORD, out, seed);
        CHECK_MSG(fh_file_exists(rec), "fold 1 finished without its record %s", rec);
    }
    snprintf(path, sizeof path, "%s/fold2_seed4/" RECORD, out);
    CHECK_MSG(!fh_file_exists(path), "the kill did not land in fold 2: %s exists", path);
    const char *kept_files[] = {RECORD, "best.safetensors", "returns.csv", "eval.json",
                                "metrics.csv", "final.safetensors"};
    enum { KEPT = 2 * 6 };
    file_state before[KEPT];
    for (int i = 0; i < KEPT; i++) {
        snprintf(path, sizeof path, "%s/fold1_seed%d/%s", out, 3 + i / 6, kept_files[i % 6]);
        snapshot(path, &before[i]);
        CHECK_MSG(before[i].bytes, "missing %s after the kill", path);
    }

    /* rerun: fold 1 kept, fold 2 trained, the same result */
    char *text = NULL, *err_text = NULL;
    CHECK_MSG(fh_run_foxhunt(dir, "resumed", argv, &text, &err_text) == 0,
              "the rerun after the kill failed: %s", err_text ? err_text : "");
    free(err_text);
    CHECK_MSG(count(text, "kept: finished before") == 2 && count(text, ": trained, ") == 2 &&
              strstr(text, "4 runs (2 kept from before, 2 trained)"),
              "the rerun did not keep fold 1 and train fold 2: see %s/resumed.out", dir);
    free(text);
    for (int i = 0; i < KEPT; i++) {
        snprintf(path, sizeof path, "%s/fold1_seed%d/%s", out, 3 + i / 6, kept_files[i % 6]);
        file_state now;
        snapshot(path, &now);
        CHECK_MSG(same_bytes(&now, &before[i]) &&
                  now.mtime.tv_sec == before[i].mtime.tv_sec &&
                  now.mtime.tv_nsec == before[i].mtime.tv_nsec,
                  "%s was rewritten by the rerun", path);
        free(now.bytes);
        free(before[i].bytes);
    }
    check_same_result(dir, "after the kill");

    /* the last file gone (a kill just before it): a corrupted, a torn and a forged record */
    snprintf(path, sizeof path, "%s/walkforward.json", out);
    CHECK(remove(path) == 0);
    snprintf(path, sizeof path, "%s/fold1_seed3/" RECORD, out);
    char *r = fh_read_text(path);
    CHECK(r && strstr(r, "\"returns_hash\""));
    if (r) {
        char *h = strstr(r, "\"returns_hash\"") + strlen("\"returns_hash\":\t\"");
        *h = *h == '0' ? '1' : '0'; /* one byte flipped: the checksum no longer matches */
        CHECK(fh_write_text(path, r));
    }
    free(r);
    snprintf(path, sizeof path, "%s/fold2_seed3/" RECORD, out);
    r = fh_read_text(path);
    CHECK(r);
    if (r) {
        r[strlen(r) / 2] = '\0'; /* torn */
        CHECK(fh_write_text(path, r));
    }
    free(r);
    snprintf(path, sizeof path, "%s/fold1_seed4/" RECORD, out);
    fh_walkforward_record forged;
    char why[1100];
    CHECK(fh_walkforward_record_read(path, 1, 4, &forged, why, sizeof why) ==
          FH_WALKFORWARD_RECORD_OK);
    fh_walkforward_record_free(&forged);
    CHECK(fh_walkforward_record_read(path, 2, 4, &forged, why, sizeof why) ==
          FH_WALKFORWARD_RECORD_INVALID); /* another fold's */
    CHECK(fh_walkforward_record_read(path, 1, 4, &forged, why, sizeof why) ==
          FH_WALKFORWARD_RECORD_OK);
    forged.returns_hash ^= 1; /* a valid checksum over a wrong hash */
    fh_error err;
    CHECK(fh_walkforward_record_write(path, &forged, &err) == FH_OK);
    fh_walkforward_record_free(&forged);
    CHECK_MSG(fh_run_foxhunt(dir, "corrupted", argv, &text, NULL) == 0,
              "the rerun over bad records failed (see %s/corrupted.err)", dir);
    CHECK_MSG(count(text, "is not trusted (its checksum") == 1 &&
              count(text, "is not trusted (not a JSON object") == 1 &&
              count(text, "not kept: backtested again") == 1 &&
              count(text, "kept: finished before") == 1 && count(text, ": trained, ") == 3,
              "bad records were trusted, or good ones not kept: see %s/corrupted.out", dir);
    free(text);
    check_same_result(dir, "after bad records");

    /* other settings, other data: refused, nothing moved */
    snprintf(path, sizeof path, "%s/walkforward.json", out);
    CHECK(remove(path) == 0);
    snprintf(path, sizeof path, "%s/fold2_seed4/" RECORD, out);
    file_state record;
    snapshot(path, &record);
    char *other_iterations[] = WF_ARGS(out, "7", "42");
    char *other_data[] = WF_ARGS(out, "6", "43");
    char **variants[2] = {other_iterations, other_data};
    const char *says[2] = {"iterations 6, now 7", "other data: "};
    for (int v = 0; v < 2; v++) {
        char *err_text = NULL;
        CHECK(fh_run_foxhunt(dir, "changed", variants[v], NULL, &err_text) == 2);
        CHECK_MSG(err_text && strstr(err_text, "finished with other settings or data") &&
                  strstr(err_text, says[v]) && strstr(err_text, "--force"),
                  "changed settings not refused as expected: %s", err_text ? err_text : "");
        free(err_text);
    }
    file_state now;
    snapshot(path, &now);
    CHECK_MSG(same_bytes(&now, &record) &&
              now.mtime.tv_nsec == record.mtime.tv_nsec, "a refused rerun changed %s", path);
    free(now.bytes);
    free(record.bytes);
}

/* A FIFO left at the record's PATH.tmp (a name a fresh fold run does not clear) is
 * refused, not waited on after the whole fold has trained; the record round-trips. */
static void test_record_tmp_fifo(void)
{
    char dir[256], path[400], tmp[420];
    CHECK(fh_make_temp_dir(dir, sizeof dir, "fh_wf_record"));
    snprintf(path, sizeof path, "%s/walkforward_fold.json", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    fh_walkforward_record rec;
    memset(&rec, 0, sizeof rec);
    rec.fold = 2;
    rec.seed = 7;
    snprintf(rec.version, sizeof rec.version, "test");
    rec.config_json = (char *)"{\"seed\": 7}";
    snprintf(rec.model, sizeof rec.model, "final.safetensors");
    rec.model_hash = 0x0123456789abcdefULL;
    rec.returns_hash = 42;
    rec.train_seconds = 1.5;
    CHECK(mkfifo(tmp, 0644) == 0);
    alarm(30); /* bcd20a5's successor opened it with fopen and blocked here */
    fh_error err;
    fh_error_clear(&err);
    fh_status st = fh_walkforward_record_write(path, &rec, &err);
    alarm(0);
    CHECK_MSG(st != FH_OK && strstr(err.message, tmp) && strstr(err.message, "FIFO"),
              "a FIFO at the record's .tmp: status %d, '%s'", (int)st, err.message);
    CHECK(unlink(tmp) == 0);
    fh_error_clear(&err);
    CHECK_MSG(fh_walkforward_record_write(path, &rec, &err) == FH_OK, "%s", err.message);
    fh_walkforward_record back;
    char why[300];
    CHECK_MSG(fh_walkforward_record_read(path, 2, 7, &back, why, sizeof why) ==
                  FH_WALKFORWARD_RECORD_OK && back.model_hash == rec.model_hash &&
                  back.returns_hash == 42,
              "the record read back: %s", why);
    fh_walkforward_record_free(&back);
    fh_test_tidy(dir);
}

int main(void)
{
    test_stitch();
    test_record_tmp_fifo();
    if (system("python3 -c 'import csv, json, statistics' >/dev/null 2>&1") != 0) {
        printf("SKIP parts 2 and 3: python3 is not available\n");
        return fh_test_finish();
    }
    char dir[256];
    CHECK(fh_make_temp_dir(dir, sizeof dir, "fh_walkforward"));
    if (test_cli(dir))
        test_resume(dir);
    fh_test_tidy(dir);
    return fh_test_finish();
}
