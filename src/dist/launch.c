/* launch.c — see launch.h. */
#include "dist/launch.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "dist/rendezvous.h"
#include "foxhunt/timing.h"

#define RANK_ARGS 6      /* --world K --rank r --rendezvous FILE */
#define POLL_SECONDS 0.5 /* the longest a wait lasts without a signal */

typedef struct {
    pid_t pid;
    int done, status; /* status: the exit code, or 128 + signal */
} rank_proc;

/* In the child, before exec: its own process group, death with the launcher, the
 * launcher's signal mask undone. Never returns. */
static void exec_rank(char **argv, const sigset_t *old_mask, pid_t launcher)
{
    setpgid(0, 0);
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
    if (getppid() != launcher) /* the launcher died before the line above */
        _exit(127);
    sigprocmask(SIG_SETMASK, old_mask, NULL);
    execv(argv[0], argv);
    fprintf(stderr, "foxhunt train --gpus: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

static int status_code(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return 1;
}

/* A rank's end that is no failure: success, or the stop the launcher forwarded. */
static int normal_end(int code, int stop_signal)
{
    return code == 0 || (stop_signal && (code == 128 + SIGINT || code == 128 + SIGTERM));
}

static void signal_alive(rank_proc *p, int world, int sig)
{
    for (int r = 0; r < world; r++)
        if (!p[r].done)
            kill(p[r].pid, sig);
}

fh_status fh_launch_ranks(const fh_launch_spec *s, fh_launch_result *res, fh_error *err)
{
    memset(res, 0, sizeof *res);
    res->failed_rank = -1;
    if (s->world < 1 || s->n_args < 0)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: %d ranks", __FILE__, __LINE__,
                            s->world);
    int argc = 1 + s->n_args + RANK_ARGS;
    char **argv = calloc((size_t)argc + 1, sizeof *argv);
    rank_proc *p = calloc((size_t)s->world, sizeof *p);
    char world_text[16], rank_text[16];
    if (!argv || !p) {
        free(argv);
        free(p);
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
    }
    snprintf(world_text, sizeof world_text, "%d", s->world);
    argv[0] = (char *)s->exe;
    for (int i = 0; i < s->n_args; i++)
        argv[1 + i] = s->args[i];
    char **tail = argv + 1 + s->n_args;
    tail[0] = "--world";
    tail[1] = world_text;
    tail[2] = "--rank";
    tail[3] = rank_text;
    tail[4] = "--rendezvous";
    tail[5] = (char *)s->rendezvous;

    sigset_t set, old_mask;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigprocmask(SIG_BLOCK, &set, &old_mask);
    fflush(NULL); /* nothing buffered is written twice */
    pid_t launcher = getpid();
    fh_status st = FH_OK;
    int started = 0;
    for (int r = 0; r < s->world; r++) {
        snprintf(rank_text, sizeof rank_text, "%d", r);
        pid_t pid = fork();
        if (pid == 0)
            exec_rank(argv, &old_mask, launcher);
        if (pid < 0) {
            st = fh_error_set(err, FH_ERR_FAILURE, "starting rank %d: fork failed: %s", r,
                              strerror(errno));
            break;
        }
        p[r].pid = pid;
        started++;
    }
    if (st != FH_OK) { /* the ranks started cannot form a run: stop them */
        for (int r = 0; r < started; r++) {
            kill(p[r].pid, SIGKILL);
            waitpid(p[r].pid, NULL, 0);
        }
        sigprocmask(SIG_SETMASK, &old_mask, NULL);
        free(argv);
        free(p);
        return st;
    }

    int alive = s->world;
    double deadline = 0.0; /* after a failure: when the ranks left are killed */
    while (alive > 0) {
        double wait = POLL_SECONDS;
        if (deadline > 0.0) {
            double left = deadline - fh_clock_seconds();
            wait = left < wait ? (left > 0.0 ? left : 0.0) : wait;
        }
        struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
        siginfo_t info;
        int sig = sigtimedwait(&set, &info, &ts);
        if ((sig == SIGINT || sig == SIGTERM) && res->failed_rank < 0) {
            res->stop_signal = sig;
            signal_alive(p, s->world, sig);
        }
        for (int r = 0; r < s->world; r++) {
            int status;
            if (p[r].done || waitpid(p[r].pid, &status, WNOHANG) != p[r].pid)
                continue;
            p[r].done = 1;
            p[r].status = status_code(status);
            alive--;
            if (res->failed_rank >= 0 || normal_end(p[r].status, res->stop_signal))
                continue;
            res->failed_rank = r;
            res->exit_code = p[r].status;
            if (WIFSIGNALED(status))
                snprintf(res->message, sizeof res->message, "rank %d was killed by signal %d "
                         "(%s)", r, WTERMSIG(status), strsignal(WTERMSIG(status)));
            else
                snprintf(res->message, sizeof res->message, "rank %d failed (exit status %d)",
                         r, p[r].status);
            fh_error ignored;
            fh_rendezvous_abort_write(s->rendezvous, res->message, &ignored);
            deadline = fh_clock_seconds() + s->grace_s;
        }
        if (alive > 0 && deadline > 0.0 && fh_clock_seconds() >= deadline) {
            for (int r = 0; r < s->world; r++)
                res->killed += !p[r].done;
            signal_alive(p, s->world, SIGKILL);
            deadline = fh_clock_seconds() + 3600.0; /* reaped as they die */
        }
    }
    if (res->failed_rank < 0)
        res->exit_code = p[0].status;
    sigprocmask(SIG_SETMASK, &old_mask, NULL);
    free(argv);
    free(p);
    return FH_OK;
}
