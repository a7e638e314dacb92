/* test_eval_returns.c — `foxhunt eval --returns` and the evaluation's report (issue 20),
 * through the real binary: a tiny CPU run (16 x 32, 2 iterations, 3,000 synthetic bars)
 * writes returns.csv beside eval.json in its directory; `foxhunt eval --returns --json`
 * on the test split and on the training split. Each CSV is recomputed independently by
 * tests/cli/check_returns.py (plain Python: Sharpe, cumulative return, drawdown,
 * turnover, costs, time in market, round trips against eval.json to 1e-9). The printed
 * report carries the split's dates, the Sharpe's standard error, the positions table and
 * the verdict against buy-and-hold; the training split is bannered IN-SAMPLE (in the
 * table and the JSON), the test split is not; --periods-per-year sets the
 * annualisation. Skips (77) without python3. */
#include "test_proc.h" /* first: it sets _GNU_SOURCE */

#include <string.h>

#include "test_util.h"

/* fh_run_foxhunt, with stderr shown when the command fails */
static int run(const char *dir, const char *log, char **argv_tail, char **out)
{
    char *err = NULL;
    int rc = fh_run_foxhunt(dir, log, argv_tail, out, &err);
    if (rc != 0)
        fprintf(stderr, "foxhunt (%s) exited %d: %s\n", log, rc, err ? err : "");
    free(err);
    return rc;
}

static int check(const char *csv, const char *json)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "python3 '%s/tests/cli/check_returns.py' '%s' '%s'", FH_SOURCE_DIR,
             csv, json);
    fflush(stdout);
    int rc = system(cmd);
    return rc != -1 && WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

int main(void)
{
    if (system("python3 -c 'import csv, json' >/dev/null 2>&1") != 0)
        fh_test_skip("python3 is not available");
    char dir[256], run_dir[400], ck[500], path[600], json[600];
    CHECK(fh_make_temp_dir(dir, sizeof dir, "fh_eval_returns"));
    snprintf(run_dir, sizeof run_dir, "%s/run", dir);
    char *train[] = {"train", "--device", "cpu", "--episodes", "16", "--steps", "32",
                     "--iterations", "2", "--epochs", "1", "--synthetic-bars", "3000",
                     "--threads", "1", "--out", run_dir, NULL};
    char *out = NULL;
    CHECK_MSG(run(dir, "train", train, &out) == 0, "the tiny run failed");
    CHECK_MSG(out && strstr(out, "verdict: the greedy policy") && strstr(out, "returns.csv"),
              "train's report lacks the verdict or the returns file: %s", out ? out : "");
    free(out);
    snprintf(path, sizeof path, "%s/returns.csv", run_dir);
    snprintf(json, sizeof json, "%s/eval.json", run_dir);
    CHECK_MSG(fh_file_exists(path), "no returns.csv in the run directory");
    CHECK_MSG(check(path, json) == 0, "the run directory's returns.csv disagrees with eval.json");

    snprintf(ck, sizeof ck, "%s/final.safetensors", run_dir);
    const char *splits[2] = {"test", "train"};
    for (int s = 0; s < 2; s++) {
        snprintf(path, sizeof path, "%s/%s.csv", dir, splits[s]);
        snprintf(json, sizeof json, "%s/%s.json", dir, splits[s]);
        char *eval[] = {"eval", "--checkpoint", ck, "--split", (char *)splits[s], "--returns",
                        path, "--json", json, NULL};
        out = NULL;
        CHECK_MSG(run(dir, splits[s], eval, &out) == 0, "eval --split %s failed", splits[s]);
        const char *o = out ? out : "";
        CHECK_MSG(strstr(o, " bars from 20") && strstr(o, "+-se") && strstr(o, "round trips") &&
                      strstr(o, "verdict: the greedy policy"),
                  "eval --split %s: dates, standard error, positions or verdict missing:\n%s",
                  splits[s], o);
        int banner = strstr(o, "IN-SAMPLE") != NULL;
        CHECK_MSG(banner == (s == 1), "eval --split %s: the IN-SAMPLE banner is %s", splits[s],
                  banner ? "there" : "missing");
        char *j = fh_read_text(json);
        CHECK_MSG(j && strstr(j, s == 1 ? "\"in_sample\":\ttrue" : "\"in_sample\":\tfalse") &&
                      strstr(j, "\"verdict\"") && strstr(j, "\"sharpe_se\""),
                  "%s lacks in_sample, verdict or sharpe_se", json);
        free(j);
        free(out);
        CHECK_MSG(check(path, json) == 0, "eval --split %s: returns CSV disagrees with the JSON",
                  splits[s]);
    }
    /* --periods-per-year: the annualisation the user gives (hourly equity bars that trade
     * 6.5 hours a day are 1,638 a year, not 8,760), used by the table and the CSV check */
    snprintf(path, sizeof path, "%s/ppy.csv", dir);
    snprintf(json, sizeof json, "%s/ppy.json", dir);
    char *ppy[] = {"eval", "--checkpoint", ck, "--periods-per-year", "1638", "--returns", path,
                   "--json", json, NULL};
    out = NULL;
    CHECK_MSG(run(dir, "ppy", ppy, &out) == 0, "eval --periods-per-year failed");
    CHECK_MSG(out && strstr(out, "1638 periods/year"), "the table does not use 1638: %s",
              out ? out : "");
    free(out);
    char *j = fh_read_text(json);
    CHECK_MSG(j && strstr(j, "\"periods_per_year\":\t1638"), "%s: periods_per_year not 1638", json);
    free(j);
    CHECK_MSG(check(path, json) == 0, "--periods-per-year: returns CSV disagrees with the JSON");
    fh_test_tidy(dir);
    return fh_test_finish();
}
