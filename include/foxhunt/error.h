/* error.h — how every foxhunt library call reports failure.
 *
 * Library code never prints and never exits: it fills an fh_error and returns its
 * status. Only the CLI decides what to print and which exit code to use
 * (SPEC §10: 2 for usage/input errors, 1 for any other failure). */
#ifndef FOXHUNT_ERROR_H
#define FOXHUNT_ERROR_H

typedef enum {
    FH_OK = 0,
    FH_ERR_FAILURE = 1, /* internal / system / device failure: exit status 1 */
    FH_ERR_INPUT = 2    /* bad user input (file, flag, value): exit status 2 */
} fh_status;

#define FH_ERROR_MESSAGE_MAX 1024

typedef struct {
    fh_status status;
    char message[FH_ERROR_MESSAGE_MAX];
} fh_error;

/* Records status and a printf-style message; returns status so callers can write
 * `return fh_error_set(err, FH_ERR_INPUT, "...")`. err may be NULL. */
fh_status fh_error_set(fh_error *err, fh_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Clears err to FH_OK with an empty message. err may be NULL. */
void fh_error_clear(fh_error *err);

/* Prefixes the existing message with more context ("loading x.csv: " + old). */
void fh_error_prefix(fh_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* What to do about a failed write's errno, to follow strerror(e) in a message: for EFBIG
 * (a file size limit, `ulimit -f`; the CLI ignores SIGXFSZ so that such a write fails
 * instead of killing the process, issue 32) and ENOSPC (a full disk); "" otherwise. */
const char *fh_write_error_hint(int e);

#endif
