/* test_walkforward.c — `foxhunt walkforward` (issue 20).
 * 1. fh_walkforward_stitch on hand-made folds: times joined on the shared boundary bar,
 *    each step's return and cost share kept, equity compounded across folds, metrics
 *    equal to fh_backtest_metrics_compute over the joined path; folds that are not
 *    consecutive, or that backtested other policies, are refused.
 * 2. The real binary, on the CPU: 2 folds x 2 seeds of a tiny run with model selection;
 *    every fold's run directory, the stitched files, and tests/cli/check_walkforward.py
 *    recomputing the stitching, the stitched metrics and the deflated Sharpe from the
 *    CSVs in plain Python. A second run into the same directory is refused. Part 2 skips
 *    (77) without python3. */
#include "test_proc.h" /* first: it sets _GNU_SOURCE */

#include <math.h>
#include <string.h>

#include "cli/walkforward_stitch.h"
#include "test_util.h"

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

static void test_cli(void)
{
    if (system("python3 -c 'import csv, json, statistics' >/dev/null 2>&1") != 0) {
        printf("SKIP part 2: python3 is not available\n");
        return;
    }
    char dir[256], out[400], cmd[1200], path[600];
    CHECK(fh_make_temp_dir(dir, sizeof dir, "fh_walkforward"));
    snprintf(out, sizeof out, "%s/wf", dir);
    char *argv[] = {"walkforward", "--device", "cpu", "--episodes", "8", "--steps", "32",
                    "--iterations", "2", "--epochs", "1", "--minibatch", "64", "--eval-every", "1",
                    "--synthetic-bars", "5000", "--train-fraction", "0.4",
                    "--walkforward-folds", "2", "--walkforward-seeds", "2", "--seed", "3",
                    "--threads", "1", "--out", out, NULL};
    CHECK_MSG(fh_run_foxhunt(dir, "wf", argv, NULL, NULL) == 0, "foxhunt walkforward failed (see %s/wf.err)", dir);
    const char *files[] = {"walkforward.json", "walkforward.md", "returns_seed3.csv",
                           "eval_seed4.json", "fold1_seed3/best.safetensors",
                           "fold2_seed4/validation.csv", "fold2_seed4/returns.csv"};
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
    /* a second walk-forward into the same directory is refused */
    CHECK(fh_run_foxhunt(dir, "again", argv, NULL, NULL) == 2);
    char *err_text = NULL;
    snprintf(path, sizeof path, "%s/again.err", dir);
    err_text = fh_read_text(path);
    CHECK_MSG(err_text && strstr(err_text, "holds a walk-forward already"), "%s",
              err_text ? err_text : "");
    free(err_text);
}

int main(void)
{
    test_stitch();
    test_cli();
    return fh_test_finish();
}
