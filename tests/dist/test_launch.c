/* test_launch.c — the --gpus launcher (dist/launch.h) with /bin/sh as the ranks: every
 * rank gets `--world K --rank r --rendezvous FILE`; when one fails the others are told
 * (FILE.abort) and those that do not stop are killed after the grace period, the
 * launcher reporting the failing rank's status; SIGINT to the launcher reaches every
 * rank once and is no failure; a launcher killed outright takes its ranks with it. */
#include "test_proc.h" /* first: _GNU_SOURCE */

#include "dist/launch.h"
#include "dist/rendezvous.h"
#include "foxhunt/timing.h"
#include "test_util.h"

#define SH "/bin/sh"

/* The ranks as `sh -c SCRIPT launch-test --world K --rank r --rendezvous FILE`:
 * $2 is K, $4 r, $6 FILE. */
static fh_status run(const char *script, int world, const char *rdv, double grace,
                     fh_launch_result *res)
{
    char *args[] = {"-c", (char *)script, "launch-test"};
    fh_launch_spec spec = {world, SH, args, 3, rdv, grace};
    fh_error err;
    fh_error_clear(&err);
    fh_status st = fh_launch_ranks(&spec, res, &err);
    CHECK_MSG(st == FH_OK, "launch: %s", err.message);
    return st;
}

static void test_success(const char *dir)
{
    char rdv[600], path[700];
    snprintf(rdv, sizeof rdv, "%s/ok.id", dir);
    fh_launch_result res;
    run("printf '%s ' \"$@\" > \"$6.args$4\"", 3, rdv, 1.0, &res);
    CHECK_MSG(res.exit_code == 0 && res.failed_rank == -1 && res.killed == 0,
              "exit %d, failed rank %d, killed %d", res.exit_code, res.failed_rank, res.killed);
    for (int r = 0; r < 3; r++) {
        snprintf(path, sizeof path, "%s.args%d", rdv, r);
        char *text = fh_read_text(path);
        char want[800];
        snprintf(want, sizeof want, "--world 3 --rank %d --rendezvous %s ", r, rdv);
        CHECK_MSG(text && strcmp(text, want) == 0, "rank %d's arguments: '%s', expected '%s'",
                  r, text ? text : "(none)", want);
        free(text);
    }
    char msg[128];
    CHECK(!fh_rendezvous_abort_read(rdv, msg, sizeof msg));
}

static void test_failure(const char *dir)
{
    char rdv[600];
    snprintf(rdv, sizeof rdv, "%s/fail.id", dir);
    /* rank 1 fails; rank 0 watches for the abort file and stops (as a rank's watchdog
     * does); rank 2 never stops and is killed after the grace period */
    const char *script =
        "case $4 in\n"
        "1) sleep 0.2; exit 3;;\n"
        "0) while [ ! -f \"$6.abort\" ]; do sleep 0.05; done; exit 1;;\n"
        "*) exec sleep 30;;\n"
        "esac";
    fh_launch_result res;
    double t0 = fh_clock_seconds();
    run(script, 3, rdv, 1.0, &res);
    double took = fh_clock_seconds() - t0;
    CHECK_MSG(res.failed_rank == 1 && res.exit_code == 3 && res.killed == 1,
              "failed rank %d, exit %d, killed %d (expected 1, 3, 1)", res.failed_rank,
              res.exit_code, res.killed);
    CHECK_MSG(strstr(res.message, "rank 1 failed (exit status 3)"), "message '%s'", res.message);
    CHECK_MSG(took < 5.0, "the failed run took %.1f s (grace 1 s)", took);
    char msg[256];
    CHECK_MSG(fh_rendezvous_abort_read(rdv, msg, sizeof msg) &&
              strstr(msg, "rank 1 failed (exit status 3)"), "abort file: '%s'", msg);

    /* a program that does not exist: rank 0 fails with 127 */
    char *args[] = {"x"};
    fh_launch_spec spec = {2, "/nonexistent/foxhunt", args, 1, rdv, 1.0};
    fh_error err;
    CHECK(fh_launch_ranks(&spec, &res, &err) == FH_OK);
    CHECK_MSG(res.failed_rank >= 0 && res.exit_code == 127, "exec failure: rank %d, exit %d",
              res.failed_rank, res.exit_code);
}

/* The launcher in a process of its own (it blocks signals and reaps its ranks). */
static pid_t launcher_process(const char *script, int world, const char *rdv)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    char *args[] = {"-c", (char *)script, "launch-test"};
    fh_launch_spec spec = {world, SH, args, 3, rdv, 2.0};
    fh_launch_result res;
    fh_error err;
    if (fh_launch_ranks(&spec, &res, &err) != FH_OK)
        _exit(98);
    /* a stop: no failure, the ranks' status, the signal noted */
    _exit(res.failed_rank == -1 && res.stop_signal == SIGINT ? res.exit_code : 99);
}

static void test_sigint(const char *dir)
{
    char rdv[600];
    snprintf(rdv, sizeof rdv, "%s/sigint.id", dir);
    const char *script = "trap 'exit 130' INT; echo $$ > \"$6.pid$4\"; "
                         "while :; do sleep 0.05; done";
    pid_t launcher = launcher_process(script, 2, rdv);
    char path[700];
    for (int tries = 0; tries < 100; tries++) { /* both ranks started */
        snprintf(path, sizeof path, "%s.pid1", rdv);
        int ok = fh_file_exists(path);
        snprintf(path, sizeof path, "%s.pid0", rdv);
        if (ok && fh_file_exists(path))
            break;
        struct timespec ts = {0, 50000000};
        nanosleep(&ts, NULL);
    }
    kill(launcher, SIGINT);
    int rc = fh_proc_wait(launcher);
    CHECK_MSG(rc == 130, "after SIGINT the launcher exited %d (expected the ranks' 130)", rc);
}

static int alive(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    char *stat = fh_read_text(path);
    int live = stat != NULL;
    if (stat) { /* a zombie has ended */
        const char *close = strrchr(stat, ')');
        live = !(close && close[1] == ' ' && close[2] == 'Z');
        free(stat);
    }
    return live;
}

static void test_launcher_killed(const char *dir)
{
    char rdv[600];
    snprintf(rdv, sizeof rdv, "%s/orphans.id", dir);
    pid_t launcher = launcher_process("echo $$ > \"$6.pid$4\"; exec sleep 30", 2, rdv);
    pid_t ranks[2] = {0, 0};
    for (int tries = 0; tries < 100 && (!ranks[0] || !ranks[1]); tries++) {
        for (int r = 0; r < 2; r++) {
            char path[700];
            snprintf(path, sizeof path, "%s.pid%d", rdv, r);
            char *text = fh_read_text(path);
            if (text && atoi(text) > 0)
                ranks[r] = (pid_t)atoi(text);
            free(text);
        }
        struct timespec ts = {0, 50000000};
        nanosleep(&ts, NULL);
    }
    CHECK_MSG(ranks[0] > 0 && ranks[1] > 0, "the ranks did not start");
    kill(launcher, SIGKILL);
    fh_proc_wait(launcher);
    double t0 = fh_clock_seconds();
    while ((alive(ranks[0]) || alive(ranks[1])) && fh_clock_seconds() - t0 < 5.0) {
        struct timespec ts = {0, 50000000};
        nanosleep(&ts, NULL);
    }
    CHECK_MSG(!alive(ranks[0]) && !alive(ranks[1]), "ranks %d, %d outlived their launcher",
              (int)ranks[0], (int)ranks[1]);
    for (int r = 0; r < 2; r++)
        if (ranks[r] > 0 && alive(ranks[r]))
            kill(ranks[r], SIGKILL);
}

int main(void)
{
    if (access(SH, X_OK) != 0)
        fh_test_skip("no /bin/sh");
    char dir[512];
    if (!fh_make_temp_dir(dir, sizeof dir, "test_launch"))
        fh_test_skip("cannot make a temporary directory");
    test_success(dir);
    test_failure(dir);
    test_sigint(dir);
#ifdef __linux__
    test_launcher_killed(dir);
#endif
    fh_test_tidy(dir);
    return fh_test_finish();
}
