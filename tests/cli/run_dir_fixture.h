/* run_dir_fixture.h — what test_cli_run_dir.c and test_cli_run_dir_writes.c share: the
 * tiny run's flags, running the binary under limits, and reading a run directory back. */
#ifndef FOXHUNT_TEST_RUN_DIR_FIXTURE_H
#define FOXHUNT_TEST_RUN_DIR_FIXTURE_H

#include "test_proc.h" /* first: it sets _GNU_SOURCE */

#include <dirent.h>
#include <math.h>
#include <string.h>
#include <sys/resource.h>

#include "foxhunt/run_dir.h"
#include "foxhunt/safetensors.h"
#include "foxhunt/train_loop.h"
#include "test_util.h"

/* the test's temporary folder: each test binary has its own (fh_make_temp_dir) */
static char g_dir[256];

/* The tiny run: well under a second. */
static const char *TINY[] = {"--device", "cpu", "--episodes", "4", "--steps", "8",
                             "--epochs", "1", "--minibatch", "32", "--synthetic-bars",
                             "2000", "--threads", "1", "--horizon", "20", "--eval-at-end",
                             "0", NULL};

typedef struct {
    int rc;
    char *out, *err;
} result;

static inline void result_free(result *r)
{
    free(r->out);
    free(r->err);
    memset(r, 0, sizeof *r);
}

/* argv of `foxhunt train [TINY...] extra...` into argv (NULL-terminated). */
static inline void train_argv(char **argv, int tiny, const char *const *extra)
{
    int n = 0;
    argv[n++] = (char *)FH_FOXHUNT_BIN;
    argv[n++] = (char *)"train";
    for (int i = 0; tiny && TINY[i]; i++)
        argv[n++] = (char *)TINY[i];
    for (int i = 0; extra && extra[i] && n < FH_PROC_MAX_ARGS - 1; i++)
        argv[n++] = (char *)extra[i];
    argv[n] = NULL;
}

/* A bound on every command of this test: a hang (a FIFO read) reads as a failure. */
#define COMMAND_SECONDS 120.0

/* fh_proc_spawn with a file size limit (0: none). SIGXFSZ keeps its default action (the
 * binary must ignore it itself, issue 32): set explicitly, as this test's own parent may
 * ignore it and an ignored signal is inherited. */
static inline pid_t spawn_limited(char *const argv[], const char *out, const char *errp,
                           long fsize_limit)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    const char *paths[2] = {out ? out : "/dev/null", errp ? errp : "/dev/null"};
    for (int k = 0; k < 2; k++) {
        int fd = open(paths[k], O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || dup2(fd, k + 1) < 0)
            _exit(126);
        close(fd);
    }
    if (fsize_limit > 0) {
        struct rlimit rl = {(rlim_t)fsize_limit, (rlim_t)fsize_limit};
        signal(SIGXFSZ, SIG_DFL);
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
            _exit(125);
    }
    execv(argv[0], argv);
    _exit(127);
}

/* argv (argv[0] the binary) run to its end or COMMAND_SECONDS (rc -2: killed). */
static inline result run_limited(char *const *argv, long fsize_limit, int keep_stdout)
{
    static int counter = 0;
    char out[512], errp[512];
    snprintf(out, sizeof out, "%s/cmd%02d.out", g_dir, counter);
    snprintf(errp, sizeof errp, "%s/cmd%02d.err", g_dir, counter++);
    result r;
    pid_t pid = spawn_limited(argv, keep_stdout ? out : NULL, errp, fsize_limit);
    r.rc = pid < 0 ? -1 : fh_proc_wait_timeout(pid, COMMAND_SECONDS);
    r.out = keep_stdout ? fh_read_text(out) : NULL;
    r.err = fh_read_text(errp);
    if (!r.out)
        r.out = calloc(1, 1);
    if (!r.err)
        r.err = calloc(1, 1);
    return r;
}

static inline result train_limited(int tiny, const char *const *extra, long fsize_limit, int keep_stdout)
{
    char *argv[FH_PROC_MAX_ARGS];
    train_argv(argv, tiny, extra);
    return run_limited(argv, fsize_limit, keep_stdout);
}

static inline result train(int tiny, const char *const *extra)
{
    return train_limited(tiny, extra, 0, 1);
}

static inline void in_dir(char *out, size_t size, const char *dir, const char *file)
{
    snprintf(out, size, "%s/%s", dir, file);
}

/* Whole file (binary) into a malloc'd buffer; NULL when unreadable. */
static inline unsigned char *read_bytes(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    *len = 0;
    if (!f)
        return NULL;
    size_t cap = 1 << 16;
    unsigned char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + *len, 1, cap - *len, f)) > 0) {
        *len += got;
        if (*len == cap) {
            unsigned char *grown = realloc(buf, cap *= 2);
            if (!grown)
                free(buf);
            buf = grown;
        }
    }
    fclose(f);
    return buf;
}

typedef struct {
    unsigned char *bytes;
    size_t len;
} snapshot;

static inline snapshot snap(const char *path)
{
    snapshot s;
    s.bytes = read_bytes(path, &s.len);
    return s;
}

/* path holds exactly the snapshot's bytes. */
static inline int same_as(const char *path, const snapshot *s)
{
    size_t len;
    unsigned char *now = read_bytes(path, &len);
    int same = now && s->bytes && len == s->len && memcmp(now, s->bytes, len) == 0;
    free(now);
    return same;
}

static inline int csv_rows(const char *dir)
{
    char path[512];
    in_dir(path, sizeof path, dir, "metrics.csv");
    char *t = fh_read_text(path);
    int n = t ? fh_count_lines(t) - 1 : -1;
    free(t);
    return n;
}

/* The single OUT/superseded-* directory into out; returns how many there are. */
static inline int superseded_dir(const char *dir, char *out, size_t size)
{
    DIR *d = opendir(dir);
    int n = 0;
    out[0] = '\0';
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strncmp(e->d_name, "superseded-", 11) == 0 && n++ == 0 &&
            snprintf(out, size, "%s/%s", dir, e->d_name) >= (int)size)
            out[0] = '\0'; /* too long for out: the test's own paths never are */
    if (d)
        closedir(d);
    return n;
}

static inline long long checkpoint_iteration(const char *path)
{
    fh_st_file f;
    fh_error err;
    memset(&f, 0, sizeof f);
    long long it = -1;
    if (fh_st_read(&f, path, &err) == FH_OK) {
        const fh_st_tensor *x = fh_st_find(&f, "run.iteration");
        if (x && x->nbytes == sizeof(int64_t)) {
            int64_t v;
            memcpy(&v, x->data, sizeof v);
            it = v;
        }
    }
    fh_st_file_free(&f);
    return it;
}

/* Starts a long run of tiny iterations (slow: of about a second each) into dir; waits
 * for its first metrics row. */
static inline pid_t start_long_run(const char *dir, const char *tag, int slow)
{
    char *argv[FH_PROC_MAX_ARGS], out[512], errp[512];
    const char *extra[] = {"--iterations", "100000", "--checkpoint-every", "0", "--out", dir,
                           NULL};
    const char *slow_extra[] = {"--device", "cpu", "--epochs", "1", "--synthetic-bars", "2000",
                                "--threads", "1", "--horizon", "20", "--episodes", "32",
                                "--steps", "4096", "--minibatch", "4096", "--iterations",
                                "100000", "--checkpoint-every", "0", "--out", dir, NULL};
    train_argv(argv, !slow, slow ? slow_extra : extra);
    snprintf(out, sizeof out, "%s/%s.out", g_dir, tag);
    snprintf(errp, sizeof errp, "%s/%s.err", g_dir, tag);
    pid_t pid = fh_proc_spawn(argv, out, errp);
    if (pid <= 0)
        return pid;
    double t0 = fh_now_seconds();
    while (csv_rows(dir) < 1 && fh_now_seconds() - t0 < 60.0 && waitpid(pid, NULL, WNOHANG) == 0)
        usleep(10000);
    if (csv_rows(dir) < 1) {
        CHECK_MSG(0, "%s: no metrics row within 60 s", tag);
        kill(pid, SIGKILL);
        fh_proc_wait(pid);
        return -1;
    }
    return pid;
}

#endif
