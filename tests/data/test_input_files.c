/* test_input_files.c — input paths that are not regular files (issue 19 item 7): a FIFO,
 * a directory or a device given as the data CSV, a checkpoint or a config file is
 * refused at once with a message naming the path and what it is, never read (a FIFO
 * with no writer used to block the open forever). An alarm fails the test should any
 * reader hang; the CLI runs under `timeout`. */
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "data_fixtures.h"
#include "foxhunt/data.h"
#include "foxhunt/files.h"
#include "foxhunt/safetensors.h"
#include "foxhunt/train_config.h"
#include "test_util.h"

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "FAIL: a reader blocked on a FIFO (alarm after 30 s)\n";
    if (write(2, msg, sizeof msg - 1) < 0) {
        /* nothing more to do */
    }
    _exit(1);
}

static void expect(const char *what, fh_status st, const fh_error *err, const char *path,
                   const char *kind)
{
    CHECK_MSG(st == FH_ERR_INPUT, "%s: status %d, expected FH_ERR_INPUT", what, (int)st);
    CHECK_MSG(strstr(err->message, path) && strstr(err->message, kind) &&
                  strstr(err->message, "not a regular file"),
              "%s: message '%s' should name %s and say it is %s", what, err->message, path,
              kind);
    printf("%s: %s\n", what, err->message);
}

static void check_path(const char *path, const char *kind)
{
    fh_error err;
    char what[128];

    fh_bars bars;
    snprintf(what, sizeof what, "CSV loader on %s", kind);
    expect(what, fh_bars_load_csv(path, &bars, &err), &err, path, kind);
    CHECK(bars.n == 0 && bars.close == NULL && bars.line == NULL);

    fh_st_file f;
    snprintf(what, sizeof what, "safetensors reader on %s", kind);
    expect(what, fh_st_read(&f, path, &err), &err, path, kind);
    CHECK(f.file == NULL && f.n_tensors == 0);

    fh_train_config cfg;
    fh_train_config_default(&cfg);
    snprintf(what, sizeof what, "INI reader on %s", kind);
    expect(what, fh_train_config_load_ini(path, &cfg, &err), &err, path, kind);

    char *buf = (char *)1;
    size_t len = 1;
    snprintf(what, sizeof what, "fh_read_regular_file on %s", kind);
    expect(what, fh_read_regular_file(path, "test file", 0, &buf, &len, &err), &err, path,
           kind);
    CHECK(buf == NULL && len == 0);
}

/* Runs `timeout 30 foxhunt ARGS`; returns the exit status, stderr in *msg. */
static int run_cli(const char *args, char **msg)
{
    char errp[512], cmd[4096];
    fx_path(errp, sizeof errp, "cli_stderr.txt");
    snprintf(cmd, sizeof cmd, "timeout 30 '%s' %s >/dev/null 2>'%s'", FH_FOXHUNT_BIN, args,
             errp);
    int st = system(cmd);
    *msg = fx_read(errp);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void check_cli(const char *fifo)
{
    char run[512], args[2048];
    fx_path(run, sizeof run, "run");
    struct {
        const char *what, *fmt;
    } cases[] = {
        {"train --data FIFO", "train --data '%s' --out '%s' --device cpu"},
        {"train --resume FIFO", "train --resume '%s' --out '%s' --device cpu"},
        {"train --config FIFO", "train --config '%s' --out '%s' --device cpu"},
        {"eval --checkpoint FIFO", "eval --checkpoint '%s' --json '%s.json'"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        snprintf(args, sizeof args, cases[k].fmt, fifo, run);
        char *msg = NULL;
        int rc = run_cli(args, &msg);
        CHECK_MSG(rc != 124, "%s: foxhunt blocked (killed by timeout)", cases[k].what);
        CHECK_MSG(rc == 2, "%s: exit %d, expected 2 (stderr: %s)", cases[k].what, rc,
                  msg ? msg : "");
        CHECK_MSG(msg && strstr(msg, fifo) && strstr(msg, "FIFO"),
                  "%s: stderr does not name the FIFO: %s", cases[k].what, msg ? msg : "");
        free(msg);
    }
}

/* Outputs whose temporary name holds a FIFO (issue 32): refused at once, not written
 * into (bcd20a5's bench and features opened OUT.tmp with fopen and blocked). */
static void check_output_tmp_fifo(void)
{
    struct {
        const char *what, *name, *fmt;
    } cases[] = {
        {"bench --json", "bench.json", "bench --device cpu --episodes 4 --steps 8 --json '%s'"},
        {"features --out", "features.csv", "features --bars 1000 --out '%s'"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char out[512], tmp[600], args[1200];
        fx_path(out, sizeof out, cases[k].name);
        snprintf(tmp, sizeof tmp, "%s.tmp", out);
        CHECK_MSG(mkfifo(tmp, 0600) == 0, "mkfifo %s failed", tmp);
        snprintf(args, sizeof args, cases[k].fmt, out);
        char *msg = NULL;
        int rc = run_cli(args, &msg);
        CHECK_MSG(rc == 2 && msg && strstr(msg, tmp) && strstr(msg, "FIFO"),
                  "%s with a FIFO at %s: exit %d (124: blocked), stderr: %s", cases[k].what,
                  tmp, rc, msg ? msg : "");
        CHECK_MSG(!fx_exists(out), "%s: %s written", cases[k].what, out);
        free(msg);
    }
}

int main(void)
{
    signal(SIGALRM, on_alarm);
    alarm(60);
    fx_make_dir();
    char fifo[512];
    fx_path(fifo, sizeof fifo, "pipe.csv");
    CHECK_MSG(mkfifo(fifo, 0600) == 0, "mkfifo %s failed", fifo);
    check_path(fifo, "a FIFO (named pipe)");
    check_path(fx_dir, "a directory");
    if (fx_exists("/dev/null"))
        check_path("/dev/null", "a character device");
    check_cli(fifo);
    check_output_tmp_fifo();

    /* a regular file is still read whole, its last byte followed by a NUL */
    char path[512];
    fx_path(path, sizeof path, "plain.txt");
    fx_write(path, "abc\ndef");
    char *buf = NULL;
    size_t len = 0;
    fh_error err;
    CHECK_MSG(fh_read_regular_file(path, "test file", 0, &buf, &len, &err) == FH_OK, "%s",
              err.message);
    CHECK(buf && len == 7 && memcmp(buf, "abc\ndef", 8) == 0);
    free(buf);
    CHECK(fh_read_regular_file(path, "test file", 4, &buf, &len, &err) == FH_ERR_INPUT &&
          strstr(err.message, "more than the 4"));
    fx_path(path, sizeof path, "absent.csv");
    CHECK(fh_read_regular_file(path, "test file", 0, &buf, &len, &err) == FH_ERR_INPUT &&
          strstr(err.message, "cannot open"));
    fx_cleanup();
    return fh_test_finish();
}
