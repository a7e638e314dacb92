/* launch.h — `foxhunt train --gpus K` on one host (issue 22): K ranks of a program
 * started and watched, one process a rank (as torchrun does; one process a GPU keeps
 * each rank's CUDA state its own). Plain POSIX, no CUDA: tests/dist/test_launch.c runs
 * it with /bin/sh.
 *
 * Rank r runs `exe args... --world K --rank r --rendezvous FILE`, in a process group of
 * its own (the terminal's Ctrl-C reaches the launcher alone, which forwards SIGINT and
 * SIGTERM to every rank once: a second one stops them at once, as for one process), and
 * dies with the launcher (PR_SET_PDEATHSIG). When a rank fails (a non-zero exit, or a
 * signal), the launcher writes FILE.abort (rendezvous.h: every rank's watchdog aborts
 * NCCL on it), gives the others grace_s seconds to stop and kills those left: no rank
 * outlives a failed run. Signals are taken with sigtimedwait, so no handler and no
 * file-scope state. */
#ifndef FOXHUNT_DIST_LAUNCH_H
#define FOXHUNT_DIST_LAUNCH_H

#include "foxhunt/error.h"

typedef struct {
    int world;
    const char *exe;         /* the program each rank runs (execv: a path) */
    char *const *args;       /* its arguments before the rank's own, n_args of them */
    int n_args;
    const char *rendezvous;  /* FILE */
    double grace_s;          /* after a failure, before SIGKILL */
} fh_launch_spec;

typedef struct {
    int exit_code;           /* what the launcher exits with: 0, the failing rank's status
                                (128 + signal when killed), or rank 0's after a stop */
    int failed_rank;         /* the first rank to fail, or -1 */
    int stop_signal;         /* SIGINT or SIGTERM forwarded to the ranks, or 0 */
    int killed;              /* ranks killed after the grace period */
    char message[512];       /* the failure in words ("" when none) */
} fh_launch_result;

/* Runs the ranks to their end. FH_OK whenever they ran (the outcome is in r);
 * FH_ERR_FAILURE when they could not be started (fork, or a too-long command). */
fh_status fh_launch_ranks(const fh_launch_spec *s, fh_launch_result *r, fh_error *err);

#endif
