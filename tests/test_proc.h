/* test_proc.h — running the foxhunt binary from a test: spawn with fork/exec (no shell),
 * stdout and stderr captured to files, the exit status returned; a temporary directory
 * per test, removed when the test passes (kept, and named, when it fails). */
#ifndef FOXHUNT_TEST_PROC_H
#define FOXHUNT_TEST_PROC_H

/* Include it first: nftw's flags need _GNU_SOURCE before any system header. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test_util.h"

#define FH_PROC_MAX_ARGS 64

/* Starts argv (argv[0] a path, NULL-terminated) with stdout/stderr to the given files
 * (NULL: /dev/null). Returns the pid, or -1. */
static inline pid_t fh_proc_spawn(char *const argv[], const char *stdout_path,
                                  const char *stderr_path)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    const char *paths[2] = {stdout_path ? stdout_path : "/dev/null",
                            stderr_path ? stderr_path : "/dev/null"};
    for (int k = 0; k < 2; k++) {
        int fd = open(paths[k], O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || dup2(fd, k + 1) < 0)
            _exit(126);
        close(fd);
    }
    execv(argv[0], argv);
    _exit(127);
}

/* Exit status of pid (128 + signal when killed), -1 on a wait error. */
static inline int fh_proc_wait(pid_t pid)
{
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return -1;
}

/* Exit status of pid as fh_proc_wait, waiting at most seconds: past that the process is
 * killed (SIGKILL) and -2 returned, so that a hang reads as a failure, not a stuck
 * test. */
static inline int fh_proc_wait_timeout(pid_t pid, double seconds)
{
    struct timespec t0, now, nap = {0, 10 * 1000 * 1000};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        int status;
        pid_t got = waitpid(pid, &status, WNOHANG);
        if (got == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status)
                   : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
        if (got < 0 && errno != EINTR)
            return -1;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((double)(now.tv_sec - t0.tv_sec) + 1e-9 * (double)(now.tv_nsec - t0.tv_nsec) >
            seconds) {
            kill(pid, SIGKILL);
            fh_proc_wait(pid);
            return -2;
        }
        nanosleep(&nap, NULL);
    }
}

/* Runs argv to completion; returns its exit status. */
static inline int fh_proc_run(char *const argv[], const char *stdout_path,
                              const char *stderr_path)
{
    pid_t pid = fh_proc_spawn(argv, stdout_path, stderr_path);
    return pid < 0 ? -1 : fh_proc_wait(pid);
}

/* Whole file as a NUL-terminated malloc'd string (NULL if unreadable). */
static inline char *fh_read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        if (cap - len - 1 == 0) {
            char *bigger = realloc(buf, cap * 2);
            if (!bigger) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = bigger;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf)
        buf[len] = '\0';
    return buf;
}

/* A command's exit status and its captured output (never NULL). */
typedef struct {
    int rc;
    char *out; /* captured stdout */
    char *err; /* captured stderr */
} fh_cmd_result;

static inline void fh_cmd_result_free(fh_cmd_result *r)
{
    free(r->out);
    free(r->err);
    memset(r, 0, sizeof *r);
}

/* Runs argv, its stdout and stderr captured into DIR/cmdNN.out and .err (NN from
 * *counter, which it advances), waiting at most timeout_s seconds when > 0 (rc -2:
 * killed, fh_proc_wait_timeout), else until it ends. */
static inline fh_cmd_result fh_cmd_run_captured(char *const argv[], const char *dir,
                                                int *counter, double timeout_s)
{
    char out[512], err[512];
    snprintf(out, sizeof out, "%s/cmd%02d.out", dir, *counter);
    snprintf(err, sizeof err, "%s/cmd%02d.err", dir, (*counter)++);
    fh_cmd_result r;
    pid_t pid = fh_proc_spawn(argv, out, err);
    r.rc = pid < 0 ? -1 : timeout_s > 0 ? fh_proc_wait_timeout(pid, timeout_s) : fh_proc_wait(pid);
    r.out = fh_read_text(out);
    r.err = fh_read_text(err);
    if (!r.out)
        r.out = calloc(1, 1);
    if (!r.err)
        r.err = calloc(1, 1);
    return r;
}


static inline int fh_file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static inline int fh_write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return 0;
    int ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok;
}

/* Lines in a text (a last line without '\n' counts). */
static inline int fh_count_lines(const char *text)
{
    int n = 0;
    for (const char *p = text; *p; p++)
        if (*p == '\n' || p[1] == '\0')
            n++;
    return n;
}

static inline int fh_rm_entry(const char *path, const struct stat *sb, int flag,
                              struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* rm -rf path */
static inline void fh_remove_tree(const char *path)
{
    nftw(path, fh_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* The end of a test that wrote into dir: removed when no check failed, else kept to look
 * at (its path on stderr). */
static inline void fh_test_tidy(const char *dir)
{
    if (fh_test_failed == 0)
        fh_remove_tree(dir);
    else
        fprintf(stderr, "files kept in %s\n", dir);
}

/* A fresh directory /tmp/NAME.XXXXXX written into out (size >= 64). */
static inline int fh_make_temp_dir(char *out, size_t size, const char *name)
{
    const char *base = getenv("TMPDIR");
    snprintf(out, size, "%s/%s.XXXXXX", base && base[0] ? base : "/tmp", name);
    return mkdtemp(out) != NULL;
}

#ifdef FH_FOXHUNT_BIN
/* argv: the foxhunt binary under test, then argv_tail (NULL-terminated), cut to
 * FH_PROC_MAX_ARGS - 1. */
static inline void fh_foxhunt_argv(char *argv[FH_PROC_MAX_ARGS], const char *const *argv_tail)
{
    int n = 0;
    argv[n++] = (char *)FH_FOXHUNT_BIN;
    for (int i = 0; argv_tail[i] && n < FH_PROC_MAX_ARGS - 1; i++)
        argv[n++] = (char *)argv_tail[i];
    argv[n] = NULL;
}

/* fh_cmd_run_captured of the foxhunt binary with the arguments argv_tail. */
static inline fh_cmd_result fh_foxhunt_captured(const char *const *argv_tail, const char *dir,
                                                int *counter, double timeout_s)
{
    char *argv[FH_PROC_MAX_ARGS];
    fh_foxhunt_argv(argv, argv_tail);
    return fh_cmd_run_captured(argv, dir, counter, timeout_s);
}

/* Runs the foxhunt binary with argv_tail (NULL-terminated), its output in DIR/LOG.out and
 * DIR/LOG.err; *out (may be NULL) gets stdout, *err_text (may be NULL) stderr (the
 * caller frees them). Returns the exit status. */
static inline int fh_run_foxhunt(const char *dir, const char *log, char **argv_tail,
                                 char **out, char **err_text)
{
    char *argv[FH_PROC_MAX_ARGS];
    fh_foxhunt_argv(argv, (const char *const *)argv_tail);
    char o[512], e[512];
    snprintf(o, sizeof o, "%s/%s.out", dir, log);
    snprintf(e, sizeof e, "%s/%s.err", dir, log);
    int rc = fh_proc_run(argv, o, e);
    if (out)
        *out = fh_read_text(o);
    if (err_text)
        *err_text = fh_read_text(e);
    return rc;
}
#endif

static inline double fh_now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
